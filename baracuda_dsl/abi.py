"""Kernel parameter ABI, the compiled-artifact record and the low-overhead argument packer.

A leaf module (standard library only): the JIT cache, the compiler and the runtime's module
loader all speak these types, and none of them has to import another to do so.

Every kernel entry in this package takes only scalars: device pointers (``ptr``, 8 bytes) and
numbers (``i32``, ``i64``, ``f32``, ``f64``) — plus, for TMA kernels (sm90a), ``tmap``: a
128-byte CUtensorMap passed by value (``.param .align 64 .b8 name[128]``; the value is a
128-byte ``bytes`` object encoded on the host, e.g. by ``ops.gemm.tensor_maps``).
Tensors are rebuilt inside the kernel from pointer + shape/stride scalars, so the entry's
parameter list is exactly the declared :class:`Param` tuple.  The compiler checks that against the PTX entry signature before caching a SKU.

:class:`ArgPack` keeps one ctypes slot per parameter and a ``void*[]`` pointing at them, so a launch
rewrites a few slots and hands one address to ``cuLaunchKernel``.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from typing import Dict, Sequence, Tuple

_CTYPE = {
    "ptr": ctypes.c_uint64,
    "i32": ctypes.c_int32,
    "i64": ctypes.c_int64,
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
    "tmap": ctypes.c_uint8 * 128,
}
# how each kind appears in a PTX ``.entry`` parameter list
_PTX = {"ptr": ("u64", "b64", "s64"), "i32": ("u32", "s32", "b32"), "i64": ("u64", "s64", "b64"),
        "f32": ("f32",), "f64": ("f64",), "tmap": ("b8[128]",)}


@dataclass(frozen=True)
class Param:
    """One kernel parameter: ``name`` and ``kind`` (ptr | i32 | i64 | f32 | f64 | tmap)."""

    name: str
    kind: str

    def __post_init__(self):
        if self.kind not in _CTYPE:
            raise ValueError(f"unknown param kind {self.kind!r}")


def params(spec: str) -> Tuple[Param, ...]:
    """Parse ``"x:ptr y:ptr n:i32 eps:f32"`` into a Param tuple."""
    out = []
    for tok in spec.split():
        name, kind = tok.split(":")
        out.append(Param(name, kind))
    return tuple(out)


def ptx_entry_params(ptx: str, entry: str) -> Tuple[str, ...]:
    """PTX types (u64, u32, f32, ...) of the parameters of ``.entry entry(...)``; a byte-array
    parameter (``.param .align 64 .b8 name[128]``) reads as ``b8[128]``."""
    m = re.search(r"\.entry\s+" + re.escape(entry) + r"\s*\((.*?)\)", ptx, re.S)
    if m is None:
        raise ValueError(f"entry {entry} not found in PTX")
    body = m.group(1).strip()
    if not body:
        return ()
    types = []
    for decl in body.split(","):
        tm = re.search(r"\.param\s+(?:\.align\s+\d+\s+)?\.(\w+)", decl)
        if tm is None:
            raise ValueError(f"cannot parse PTX param {decl!r}")
        am = re.search(r"\[(\d+)\]\s*$", decl.strip())
        types.append(tm.group(1) if am is None else f"{tm.group(1)}[{am.group(1)}]")
    return tuple(types)


def check_abi(declared: Sequence[Param], ptx_types: Sequence[str]) -> None:
    """Raise ValueError if the compiled entry's parameters do not match the declared ABI."""
    if len(declared) != len(ptx_types):
        raise ValueError(f"ABI mismatch: declared {len(declared)} params, PTX entry has "
                         f"{len(ptx_types)}: {list(ptx_types)}")
    for p, t in zip(declared, ptx_types):
        if t not in _PTX[p.kind]:
            raise ValueError(f"ABI mismatch for param {p.name}: declared {p.kind}, PTX has .{t}")


_STRUCT = {"ptr": "Q", "i32": "i4x", "i64": "q", "f32": "f4x", "f64": "d"}
#: bytes of one ``tmap`` slot and its alignment (CUtensorMap: 128 bytes, 64-byte aligned)
TMAP_BYTES = 128
TMAP_ALIGN = 64


class ArgPack:
    """Pre-allocated kernel argument storage for one kernel ABI: one 8-byte slot per scalar
    parameter (a 64-byte-aligned 128-byte slot per ``tmap``) in a single buffer, and a
    ``void*[]`` pointing at the slots.  ``set`` writes every value with one
    ``struct.pack_into`` call (``tmap`` values are 128-byte ``bytes``).  Not thread-safe: each
    thread uses its own pack."""

    __slots__ = ("_buf", "_cbuf", "_array", "address", "_fmt", "_n", "_base")

    def __init__(self, abi: Sequence[Param]):
        import struct

        self._n = len(abi)
        fmt, offs, off = "<", [], 0
        for p in abi:
            if p.kind == "tmap":
                pad = (-off) % TMAP_ALIGN
                fmt += f"{pad}x" if pad else ""
                off += pad
                offs.append(off)
                fmt += f"{TMAP_BYTES}s"
                off += TMAP_BYTES
            else:
                pad = (-off) % 8
                fmt += f"{pad}x" if pad else ""
                off += pad
                offs.append(off)
                fmt += _STRUCT[p.kind]
                off += 8
        self._fmt = struct.Struct(fmt)
        size = max(off, 8)
        has_tmap = any(p.kind == "tmap" for p in abi)
        slack = TMAP_ALIGN if has_tmap else 0
        self._buf = bytearray(size + slack)
        self._cbuf = (ctypes.c_char * len(self._buf)).from_buffer(self._buf)
        addr = ctypes.addressof(self._cbuf)
        self._base = (-addr) % TMAP_ALIGN if has_tmap else 0   # the bytearray never moves
        base = addr + self._base
        self._array = (ctypes.c_void_p * max(len(abi), 1))(*[base + o for o in offs])
        self.address = ctypes.addressof(self._array)

    def set(self, values: Sequence) -> int:
        """Write ``values`` (one per parameter, in ABI order) and return the ``void**`` address."""
        if len(values) != self._n:
            raise ValueError(f"kernel takes {self._n} arguments, got {len(values)}")
        self._fmt.pack_into(self._buf, self._base, *values)
        return self.address


@dataclass(frozen=True)
class Artifact:
    """A compiled SKU: the cubin bytes and its metadata (entry name, parameter ABI, threads,
    dynamic shared memory, arch, DSL version, template source hash, compile seconds)."""

    cubin: bytes
    meta: Dict

    @property
    def entry(self) -> str:
        return self.meta["entry"]

    @property
    def threads(self) -> int:
        return int(self.meta["threads"])

    @property
    def smem_bytes(self) -> int:
        return int(self.meta["smem_bytes"])
