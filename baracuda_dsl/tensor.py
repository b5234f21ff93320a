"""Device tensor views: pointer + shape + strides (in elements) + dtype + device.

A :class:`TensorView` is what every plan's ``Args`` hold.  It can be built from any
``__cuda_array_interface__`` or DLPack producer (torch, cupy, jax, our own ``array_api.Array``)
with :func:`as_view`; the producer is kept alive by the view.  Rank is limited to 8, a stride of
0 broadcasts, negative strides are allowed (views that walk backwards).
"""

from __future__ import annotations

from typing import Optional, Tuple

from . import dtypes as _dt
from .dlpack import KDL_CUDA, KDL_CUDA_MANAGED, capsule_tensor
from .dtypes import DType
from .errors import (DeviceMismatchError, InvalidProblemError, MisalignedOperandError,
                     UnsupportedError)

MAX_RANK = 8


def contiguous_strides(shape) -> Tuple[int, ...]:
    """Row-major (C order) strides in elements for ``shape``."""
    strides = []
    acc = 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(int(n), 1)
    return tuple(reversed(strides))


def check_shape(shape, what: str = "tensor") -> Tuple[int, ...]:
    """Validate rank <= 8 and non-negative integer extents; returns the shape as a tuple."""
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise InvalidProblemError(f"{what}: shape must be a sequence of ints, got {shape!r}") from None
    if len(shape) > MAX_RANK:
        raise InvalidProblemError(f"{what}: rank {len(shape)} > {MAX_RANK} is not supported")
    if any(s < 0 for s in shape):
        raise InvalidProblemError(f"{what}: negative extent in shape {shape}")
    return shape


_set = object.__setattr__


class TensorView:
    """A strided view of device memory. ``ptr`` is the address of element [0,...,0];
    ``strides`` are in elements (0 broadcasts, negative walks backwards); ``device`` is the CUDA
    ordinal; ``capacity_bytes`` (optional) is how many bytes the underlying allocation holds, used
    for BufferTooSmallError checks; ``owner`` keeps the producer alive.  Immutable and hashable on
    (ptr, shape, strides, dtype, device)."""

    __slots__ = ("ptr", "shape", "strides", "dtype", "device", "capacity_bytes", "owner")

    def __init__(self, ptr: int, shape, strides, dtype: DType, device: int = 0,
                 capacity_bytes: Optional[int] = None, owner: object = None):
        shape = check_shape(shape, "TensorView")
        try:
            strides = tuple(int(x) for x in strides)
        except TypeError:
            raise InvalidProblemError(f"TensorView: strides must be ints, got {strides!r}") from None
        if len(strides) != len(shape):
            raise InvalidProblemError(
                f"TensorView: {len(strides)} strides for rank-{len(shape)} shape")
        if not isinstance(dtype, DType):
            dtype = _dt.dtype(dtype)
        _set(self, "ptr", int(ptr))
        _set(self, "shape", shape)
        _set(self, "strides", strides)
        _set(self, "dtype", dtype)
        _set(self, "device", int(device))
        _set(self, "capacity_bytes", capacity_bytes)
        _set(self, "owner", owner)

    @classmethod
    def _trusted(cls, ptr: int, shape: tuple, strides: tuple, dtype: DType, device: int,
                 owner: object) -> "TensorView":
        """Construct without re-validating (for producers whose metadata is already valid);
        only the rank limit is checked."""
        if len(shape) > MAX_RANK:
            raise InvalidProblemError(f"tensor: rank {len(shape)} > {MAX_RANK} is not supported")
        v = object.__new__(cls)
        _set(v, "ptr", ptr)
        _set(v, "shape", shape)
        _set(v, "strides", strides)
        _set(v, "dtype", dtype)
        _set(v, "device", device)
        _set(v, "capacity_bytes", None)
        _set(v, "owner", owner)
        return v

    def __setattr__(self, name, value):
        raise AttributeError("TensorView is immutable")

    def _key(self):
        return (self.ptr, self.shape, self.strides, self.dtype, self.device)

    def __eq__(self, other):
        return isinstance(other, TensorView) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"TensorView(ptr={self.ptr:#x}, shape={self.shape}, strides={self.strides}, "
                f"dtype={self.dtype.name}, device={self.device})")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def is_contiguous(self) -> bool:
        """True when the view is dense row-major (extents of 1 may have any stride; an empty
        view is contiguous)."""
        if self.numel == 0:
            return True
        expect = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n != 1 and s != expect:
                return False
            expect *= n
        return True

    def span_elements(self) -> Tuple[int, int]:
        """(lowest, highest) element offsets touched relative to ``ptr`` (empty view → (0, -1))."""
        if self.numel == 0:
            return (0, -1)
        lo = hi = 0
        for n, s in zip(self.shape, self.strides):
            if s > 0:
                hi += (n - 1) * s
            else:
                lo += (n - 1) * s
        return lo, hi

    def required_bytes(self) -> int:
        lo, hi = self.span_elements()
        return (hi - lo + 1) * self.itemsize if hi >= lo else 0

    def with_shape(self, shape, strides) -> "TensorView":
        return TensorView(self.ptr, tuple(shape), tuple(strides), self.dtype, self.device,
                          self.capacity_bytes, self.owner)


# ----------------------------------------------------------------------------- DLPack parsing
def _view_from_capsule(capsule, owner) -> TensorView:
    dl = capsule_tensor(capsule)
    if dl is None:
        raise InvalidProblemError("object's __dlpack__ did not return a DLPack capsule")
    if dl.device.device_type not in (KDL_CUDA, KDL_CUDA_MANAGED):
        raise DeviceMismatchError(
            f"operand is on DLPack device type {dl.device.device_type}, not a CUDA GPU "
            f"(host arrays must be copied to the device first, e.g. with array_api.asarray)")
    dt = _dt.from_dlpack_code(dl.dtype.code, dl.dtype.bits, dl.dtype.lanes)
    shape = tuple(dl.shape[i] for i in range(dl.ndim))
    if dl.strides:
        strides = tuple(dl.strides[i] for i in range(dl.ndim))
    else:
        strides = contiguous_strides(shape)
    ptr = (dl.data or 0) + dl.byte_offset
    # keep the capsule (whose destructor frees the producer's reference) alive with the view
    return TensorView(ptr, shape, strides, dt, int(dl.device.device_id), None, (owner, capsule))


def as_view(obj, *, stream: Optional[int] = None) -> TensorView:
    """Build a :class:`TensorView` over ``obj``: a TensorView (returned as is), anything with
    ``__baracuda_view__`` (our Array), ``__cuda_array_interface__`` (cupy, torch except bf16,
    numba) or ``__dlpack__`` (torch, jax, cupy).  Host arrays raise DeviceMismatchError."""
    tp = type(obj)
    if tp is TensorView:
        return obj
    if tp in _TORCH_TYPES:  # checked first: a missing attribute on a torch tensor is slow
        return _view_from_torch(obj)
    if isinstance(obj, TensorView):
        return obj
    own = getattr(obj, "__baracuda_view__", None)
    if own is not None:
        return own()
    if tp.__module__.startswith("torch") and hasattr(obj, "data_ptr"):
        _TORCH_TYPES.add(tp)
        return _view_from_torch(obj)
    cai = None
    try:
        cai = obj.__cuda_array_interface__
    except (AttributeError, TypeError, ValueError, RuntimeError):
        cai = None
    if cai is not None:
        try:
            dt = _dt.from_typestr(cai["typestr"])
        except UnsupportedError:
            dt = None
        if dt is not None:
            shape = tuple(int(s) for s in cai["shape"])
            st = cai.get("strides")
            if st is not None and any(int(s) % dt.itemsize for s in st):
                raise MisalignedOperandError(
                    f"byte strides {tuple(st)} are not multiples of the {dt.name} element size")
            strides = (tuple(int(s) // dt.itemsize for s in st) if st is not None
                       else contiguous_strides(shape))
            ptr = int(cai["data"][0])
            dev = _device_of_pointer(ptr, obj)
            return TensorView(ptr, shape, strides, dt, dev, None, obj)
    if hasattr(obj, "__dlpack__"):
        dev = None
        if hasattr(obj, "__dlpack_device__"):
            dev = obj.__dlpack_device__()
            if int(dev[0]) not in (KDL_CUDA, KDL_CUDA_MANAGED):
                raise DeviceMismatchError(
                    f"operand of type {type(obj).__name__} lives on DLPack device {tuple(dev)}, not a "
                    f"CUDA GPU; copy it to the device first (array_api.asarray)")
        try:
            cap = obj.__dlpack__(stream=stream if stream is not None else None)
        except TypeError:
            cap = obj.__dlpack__()
        return _view_from_capsule(cap, obj)
    if hasattr(obj, "__array_interface__") or hasattr(obj, "__array__"):
        raise DeviceMismatchError(
            f"operand of type {type(obj).__name__} is a host array; kernels need device memory "
            f"(copy it first, e.g. array_api.asarray(x))")
    raise InvalidProblemError(
        f"cannot view an object of type {type(obj).__name__} as a device tensor: it has neither "
        f"__cuda_array_interface__ nor __dlpack__")


_TORCH_DTYPE_NAMES = {
    "float32": _dt.float32, "float16": _dt.float16, "bfloat16": _dt.bfloat16,
    "float64": _dt.float64, "int8": _dt.int8, "int16": _dt.int16, "int32": _dt.int32,
    "int64": _dt.int64, "uint8": _dt.uint8, "uint16": _dt.uint16, "uint32": _dt.uint32,
    "uint64": _dt.uint64, "bool": _dt.bool_, "complex64": _dt.complex64,
    "complex128": _dt.complex128, "float8_e4m3fn": _dt.float8_e4m3, "float8_e5m2": _dt.float8_e5m2,
}
_TORCH_DTYPES: dict = {}  # torch.dtype -> DType, filled on first use (torch is optional)
_TORCH_TYPES: set = set()  # torch tensor classes seen so far


def _torch_dtype(tdt) -> DType:
    d = _TORCH_DTYPES.get(tdt)
    if d is None:
        d = _TORCH_DTYPE_NAMES.get(str(tdt).replace("torch.", ""))
        if d is None:
            raise UnsupportedError(f"torch dtype {tdt} has no baracuda dtype")
        _TORCH_DTYPES[tdt] = d
    return d


def _view_from_torch(t) -> TensorView:
    """Fast path for torch tensors: reads pointer, shape, strides and dtype directly (torch's
    ``__cuda_array_interface__`` costs ~10 µs a call and does not cover bf16)."""
    if not t.is_cuda:
        raise DeviceMismatchError(f"torch tensor on {t.device}, kernels need a CUDA tensor "
                                  f"(use .cuda() or array_api.asarray)")
    return TensorView._trusted(t.data_ptr(), tuple(t.shape), t.stride(), _torch_dtype(t.dtype),
                               t.get_device(), t)


def _device_of_pointer(ptr: int, obj) -> int:
    dev = getattr(obj, "device", None)
    idx = getattr(dev, "index", None)  # torch.device
    if isinstance(idx, int):
        return idx
    did = getattr(dev, "id", None)  # cupy.cuda.Device
    if isinstance(did, int):
        return did
    return 0
