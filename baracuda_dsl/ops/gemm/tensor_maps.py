"""TMA descriptors (CUtensorMap, 128 bytes) from the driver, cached per layout.

A kernel that loads through TMA takes one CUtensorMap per operand, by value.  Everything in it
but the base address is fixed by the operand's *layout* (:class:`TensorMapLayout`: element type,
global dims and strides, box, element strides, interleave, swizzle, L2 promotion, OOB fill), so
the descriptor is encoded once per layout with ``cuTensorMapEncodeTiled`` (cuda.bindings) and
each call only patches the base address into a copy of those bytes.

Where the driver keeps the address is not documented (the descriptor is opaque), so it is
*probed*, once per process (:func:`probe_address_offset`): one fixed layout is encoded at two
base addresses; the field is accepted only if the two encodings differ in exactly one 8-byte
window that holds each address as a little-endian u64, and a third encode at a third address
equals the first one with that window patched, bit for bit.  Every new layout is checked once
more when it is first encoded (the window must hold the address it was encoded at).  If the
probe or that check fails, the layout falls back to a full driver encode per call — correct,
just a few microseconds slower.  On an H100 with driver 580 the probe finds the address as the
u64 at offset 0.

The driver encode needs a current CUDA context (the kernel's, which the plan has made current by
loading it); it runs on a layout's first use only.  cuda.core 1.2 also wraps tensor maps
(``TensorMapDescriptor``, public only through ``StridedMemoryView.as_tensor_map`` on a DLPack /
CUDA-array-interface object, with ``replace_address``), but plans hold raw pointers and pack the
128 bytes themselves, so the driver binding is used directly.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple

from ...errors import DriverError, InvalidProblemError, MisalignedOperandError
from ...runtime import trace

#: bytes of a CUtensorMap
TENSOR_MAP_BYTES = 128
#: the base address must be this aligned (TMA's rule for the non-interleaved layouts used here)
ADDRESS_ALIGN = 16
#: element type names (``CU_TENSOR_MAP_DATA_TYPE_<name>``) of the dtype short names
DATA_TYPES = {"u8": "UINT8", "e4m3": "UINT8", "e5m2": "UINT8", "f16": "FLOAT16",
              "bf16": "BFLOAT16", "f32": "FLOAT32", "f64": "FLOAT64", "i32": "INT32",
              "i64": "INT64"}
INTERLEAVES = ("NONE", "16B", "32B")
SWIZZLES = ("NONE", "32B", "64B", "128B")
L2_PROMOTIONS = ("NONE", "L2_64B", "L2_128B", "L2_256B")
OOB_FILLS = ("NONE", "NAN_REQUEST_ZERO_FMA")


@dataclass(frozen=True)
class TensorMapLayout:
    """Everything of a tiled CUtensorMap but its base address (the cache key).

    ``dtype``: a :data:`DATA_TYPES` key; ``dims``: global extents in elements, innermost
    (contiguous) dim first; ``strides``: byte strides of dims 1.. (multiples of 16); ``box``:
    the box (shared-memory tile) extents, innermost first; ``element_strides`` (None = all 1);
    ``interleave`` / ``swizzle`` / ``l2_promotion`` / ``oob_fill``: the driver enum names
    (without their ``CU_TENSOR_MAP_*_`` prefix)."""

    dtype: str
    dims: Tuple[int, ...]
    strides: Tuple[int, ...]
    box: Tuple[int, ...]
    element_strides: Optional[Tuple[int, ...]] = None
    interleave: str = "NONE"
    swizzle: str = "NONE"
    l2_promotion: str = "NONE"
    oob_fill: str = "NONE"

    def __post_init__(self):
        rank = len(self.dims)
        if not 1 <= rank <= 5:
            raise InvalidProblemError(f"TensorMapLayout: rank {rank} not in 1..5")
        es = self.element_strides if self.element_strides is not None else (1,) * rank
        if len(self.strides) != rank - 1 or len(self.box) != rank or len(es) != rank:
            raise InvalidProblemError(f"TensorMapLayout: dims {self.dims}, strides "
                                      f"{self.strides}, box {self.box} and element strides "
                                      f"{es} disagree on the rank")
        for name, value, allowed in (("dtype", self.dtype, tuple(DATA_TYPES)),
                                     ("interleave", self.interleave, INTERLEAVES),
                                     ("swizzle", self.swizzle, SWIZZLES),
                                     ("l2_promotion", self.l2_promotion, L2_PROMOTIONS),
                                     ("oob_fill", self.oob_fill, OOB_FILLS)):
            if value not in allowed:
                raise InvalidProblemError(f"TensorMapLayout: {name} {value!r} not in {allowed}")

    @property
    def rank(self) -> int:
        return len(self.dims)


#: encode(layout, address) -> the 128 descriptor bytes
Encoder = Callable[[TensorMapLayout, int], bytes]


def driver_encode(layout: TensorMapLayout, address: int) -> bytes:
    """The CUtensorMap of ``layout`` at ``address``: ``cuTensorMapEncodeTiled`` (needs a
    current context); DriverError if the driver refuses the layout."""
    import ctypes

    from cuda.bindings import driver as drv

    u64, u32 = drv.cuuint64_t, drv.cuuint32_t
    es = layout.element_strides or (1,) * layout.rank
    err, tmap = drv.cuTensorMapEncodeTiled(
        getattr(drv.CUtensorMapDataType,
                f"CU_TENSOR_MAP_DATA_TYPE_{DATA_TYPES[layout.dtype]}"),
        layout.rank, address, [u64(d) for d in layout.dims], [u64(s) for s in layout.strides],
        [u32(b) for b in layout.box], [u32(e) for e in es],
        getattr(drv.CUtensorMapInterleave, f"CU_TENSOR_MAP_INTERLEAVE_{layout.interleave}"),
        getattr(drv.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{layout.swizzle}"),
        getattr(drv.CUtensorMapL2promotion, f"CU_TENSOR_MAP_L2_PROMOTION_{layout.l2_promotion}"),
        getattr(drv.CUtensorMapFloatOOBfill, f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{layout.oob_fill}"))
    if int(err) != 0:
        raise DriverError(f"cuTensorMapEncodeTiled({layout})", err)
    return ctypes.string_at(tmap.getPtr(), TENSOR_MAP_BYTES)


#: the layout and the three base addresses of the probe (16-byte aligned, differing in every
#: byte the address can occupy below 2**48)
PROBE_LAYOUT = TensorMapLayout("u8", (256, 256), (256,), (64, 64), swizzle="128B",
                               l2_promotion="L2_128B")
PROBE_ADDRESSES = (0x7F12_3456_7890, 0x0A5C_DEF0_1230, 0x5571_AA2B_5550)


def _u64(raw: bytes, off: int) -> int:
    return int.from_bytes(raw[off:off + 8], "little")


def patch_address(raw: bytes, offset: int, address: int) -> bytes:
    """``raw`` with the little-endian u64 at ``offset`` replaced by ``address``."""
    return raw[:offset] + address.to_bytes(8, "little") + raw[offset + 8:]


def probe_address_offset(encode: Encoder = driver_encode) -> Optional[int]:
    """Byte offset of the base address in ``encode``'s descriptors, or None when the address is
    not stored as one plain little-endian u64 (see the module docstring: two encodes and a
    diff, then a third encode to verify)."""
    a1, a2, a3 = PROBE_ADDRESSES
    d1, d2 = encode(PROBE_LAYOUT, a1), encode(PROBE_LAYOUT, a2)
    if len(d1) != TENSOR_MAP_BYTES or len(d2) != TENSOR_MAP_BYTES:
        return None
    diff = [i for i in range(TENSOR_MAP_BYTES) if d1[i] != d2[i]]
    if not diff or diff[-1] - diff[0] >= 8:
        return None
    for off in range(max(0, diff[-1] - 7), min(diff[0], TENSOR_MAP_BYTES - 8) + 1):
        if _u64(d1, off) == a1 and _u64(d2, off) == a2:
            if encode(PROBE_LAYOUT, a3) == patch_address(d1, off, a3):
                return off
            return None
    return None


class TensorMap:
    """The descriptors of one layout: :meth:`at` gives the 128 bytes for a base address (the
    cached encoding with the address patched in, or a fresh driver encode when the address field
    is unknown)."""

    __slots__ = ("layout", "_cache", "_head", "_tail", "_per_call")

    def __init__(self, layout: TensorMapLayout, cache: "TensorMapCache"):
        self.layout = layout
        self._cache = cache
        self._head = self._tail = None
        self._per_call = False

    def at(self, address: int) -> bytes:
        """The CUtensorMap of this layout at ``address`` (16-byte aligned)."""
        if address % ADDRESS_ALIGN:
            raise MisalignedOperandError(f"TMA base address {address:#x} is not "
                                         f"{ADDRESS_ALIGN}-byte aligned")
        head = self._head
        if head is not None:
            raw = head + address.to_bytes(8, "little") + self._tail
            tr = trace.active()
            if tr is not None:
                tr.tmap(raw, len(head), address)
            return raw
        if self._per_call:
            trace.refuse("a TMA descriptor encoded per call")
            return self._cache.encode(self.layout, address)
        off = self._cache.address_offset()
        raw = self._cache.encode(self.layout, address)
        if off is not None and _u64(raw, off) == address:
            self._tail = raw[off + 8:]
            self._head = raw[:off]
            tr = trace.active()
            if tr is not None:
                tr.tmap(raw, off, address)
        else:
            self._per_call = True
            trace.refuse("a TMA descriptor encoded per call")
        return raw

    @property
    def patched(self) -> bool:
        """True once this layout's descriptors are patched copies (no driver call per use)."""
        return self._head is not None


_UNPROBED = -1


class TensorMapCache:
    """Per-layout :class:`TensorMap` entries over one encoder (default: the driver's), the
    address field probed on first use.  ``capacity`` bounds the entries kept (the oldest half
    is dropped past it; entries already handed out keep working)."""

    def __init__(self, encode: Encoder = driver_encode, capacity: int = 4096):
        self.encode = encode
        self.capacity = capacity
        self._offset = _UNPROBED
        self._maps: Dict[TensorMapLayout, TensorMap] = {}
        self._lock = threading.Lock()

    def address_offset(self) -> Optional[int]:
        """Where the encoder stores the base address (probed once), None if not one u64."""
        if self._offset == _UNPROBED:
            with self._lock:
                if self._offset == _UNPROBED:
                    self._offset = probe_address_offset(self.encode)
        return self._offset

    def get(self, layout: TensorMapLayout) -> TensorMap:
        """The (memoised) TensorMap of ``layout``."""
        tm = self._maps.get(layout)
        if tm is None:
            with self._lock:
                tm = self._maps.get(layout)
                if tm is None:
                    if len(self._maps) >= self.capacity:
                        for old in list(self._maps)[:len(self._maps) // 2]:
                            del self._maps[old]
                    tm = self._maps[layout] = TensorMap(layout, self)
        return tm

    def descriptor(self, layout: TensorMapLayout, address: int) -> bytes:
        """The 128-byte CUtensorMap of ``layout`` at ``address``."""
        return self.get(layout).at(address)


#: the process-wide cache the plans use
TENSOR_MAPS = TensorMapCache()
