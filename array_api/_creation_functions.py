"""Creation functions: ``asarray``, ``from_dlpack``, ``empty``/``zeros``/``ones``/``full`` and the
``*_like`` variants.  Fills use cuMemsetD8/D16/D32Async on the legacy default stream when the
element's byte pattern allows, a host upload otherwise; host data goes through numpy."""

from __future__ import annotations

import builtins

import numpy as np

from baracuda_dsl.dtypes import DType
from baracuda_dsl.errors import UnsupportedError
from baracuda_dsl.tensor import as_view

from . import _device as _dev
from . import _dtypes as _dt
from ._array_object import Array
from ._device import Device, as_device

_KDL_CPU = 1


def _default_dtype_for(value) -> DType:
    if isinstance(value, (builtins.bool, np.bool_)):
        return _dt.bool
    if isinstance(value, (builtins.int, np.integer)):
        return _dt.int64
    if isinstance(value, (builtins.float, np.floating)):
        return _dt.float32
    if isinstance(value, (builtins.complex, np.complexfloating)):
        return _dt.complex64
    raise TypeError(f"cannot infer a dtype for fill value {value!r}")


def _resolve_dtype(dtype, default: DType) -> DType:
    return default if dtype is None else _dt._as_dtype(dtype)


def _shape_tuple(shape):
    if isinstance(shape, (builtins.int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def _fill(x: Array, value) -> None:
    """Fill the dense array ``x`` with ``value`` (converted to x's dtype)."""
    n = x.size
    if n == 0:
        return
    one = _dt.host_encode(np.asarray(value).reshape(1), x.dtype)
    if not _dev.memset(x._ptr, one.tobytes(), n):
        _dev.htod(x._ptr, np.ascontiguousarray(np.broadcast_to(one, (n,))))


def empty(shape, *, dtype=None, device=None) -> Array:
    """Uninitialised dense array (default dtype float32)."""
    return Array._empty(_shape_tuple(shape), _resolve_dtype(dtype, _dt.float32), as_device(device))


def full(shape, fill_value, *, dtype=None, device=None) -> Array:
    """Dense array filled with ``fill_value`` (dtype inferred from it when not given)."""
    if isinstance(fill_value, Array):
        fill_value = fill_value._scalar()
    dt = _resolve_dtype(dtype, _default_dtype_for(fill_value))
    if _dt.isdtype(dt, "integral") and isinstance(fill_value, (builtins.float, np.floating)):
        raise TypeError(f"full: float fill value {fill_value!r} for integer dtype {dt}")
    x = Array._empty(_shape_tuple(shape), dt, as_device(device))
    _fill(x, fill_value)
    return x


def zeros(shape, *, dtype=None, device=None) -> Array:
    return full(shape, 0, dtype=_resolve_dtype(dtype, _dt.float32), device=device)


def ones(shape, *, dtype=None, device=None) -> Array:
    return full(shape, 1, dtype=_resolve_dtype(dtype, _dt.float32), device=device)


def empty_like(x: Array, /, *, dtype=None, device=None) -> Array:
    return empty(x.shape, dtype=dtype or x.dtype, device=device or x.device)


def zeros_like(x: Array, /, *, dtype=None, device=None) -> Array:
    return zeros(x.shape, dtype=dtype or x.dtype, device=device or x.device)


def ones_like(x: Array, /, *, dtype=None, device=None) -> Array:
    return ones(x.shape, dtype=dtype or x.dtype, device=device or x.device)


def full_like(x: Array, /, fill_value, *, dtype=None, device=None) -> Array:
    return full(x.shape, fill_value, dtype=dtype or x.dtype, device=device or x.device)


def _upload(a: np.ndarray, dt: DType, device: Device) -> Array:
    host = _dt.host_encode(a, dt)
    x = Array._empty(a.shape, dt, device)
    _dev.htod(x._ptr, host)
    return x


def _is_device_object(obj) -> builtins.bool:
    if isinstance(obj, np.ndarray):
        return False
    mod = type(obj).__module__
    if mod.startswith("torch") and hasattr(obj, "is_cuda"):
        return builtins.bool(obj.is_cuda)
    if hasattr(obj, "__cuda_array_interface__"):
        return True
    if hasattr(obj, "__dlpack_device__"):
        try:
            return int(obj.__dlpack_device__()[0]) != _KDL_CPU
        except Exception:
            return False
    return False


def from_dlpack(x, /, *, device=None, copy=None) -> Array:
    """Zero-copy Array over a DLPack / CUDA-array-interface producer's device memory (torch,
    cupy, ...); the producer stays alive while the Array (or a view of it) lives.  Host producers
    are copied to the device unless ``copy=False``."""
    if isinstance(x, Array):
        return asarray(x, device=device, copy=copy)
    if not _is_device_object(x):
        if copy is False:
            raise BufferError("from_dlpack: a host producer cannot be used without a copy")
        return asarray(np.from_dlpack(x), device=device)
    v = as_view(x)
    arr = Array._new(v.ptr, v.shape, v.strides, v.dtype, Device(v.device), v)
    if device is not None and as_device(device) != arr.device:
        raise UnsupportedError(f"from_dlpack: producer is on {arr.device}, cross-device copies "
                               f"are not wired")
    if copy:
        from ._manipulation_functions import _contiguous_copy

        arr = _contiguous_copy(arr)
    return arr


def asarray(obj, /, *, dtype=None, device=None, copy=None) -> Array:
    """Array from an Array, a device producer (torch/cupy, zero copy), or host data (numpy arrays,
    nested sequences, scalars: copied).  Python floats default to float32, ints to int64, complex
    to complex64.  A dtype change of device data goes through the host (exact, slow)."""
    dt = None if dtype is None else _dt._as_dtype(dtype)
    if isinstance(obj, Array) or _is_device_object(obj):
        arr = obj if isinstance(obj, Array) else from_dlpack(obj)
        if device is not None and as_device(device) != arr.device:
            raise UnsupportedError(f"asarray: cross-device copies are not wired ({arr.device} → "
                                   f"{as_device(device)})")
        if dt is not None and dt != arr.dtype:
            if copy is False:
                raise ValueError("asarray: a dtype change needs a copy (copy=False given)")
            return _upload(_host_cast(arr.to_numpy(), arr.dtype, dt), dt, arr.device)
        if copy:
            from ._manipulation_functions import _contiguous_copy

            return _contiguous_copy(arr)
        return arr
    if copy is False:
        raise ValueError("asarray: host data must be copied to the device (copy=False given)")
    dev = as_device(device)
    if isinstance(obj, (np.ndarray, np.generic)):
        a = np.asarray(obj)
        src_dt = _dt.bfloat16 if a.dtype.name == "bfloat16" else _dt._d.dtype(a.dtype)
        target = dt or src_dt
    else:
        a = np.asarray(obj)
        if a.dtype == np.float64:
            default = _dt.float32
        elif a.dtype == np.complex128:
            default = _dt.complex64
        elif a.dtype.kind in "iu":
            default = _dt.int64 if a.dtype.kind == "i" else _dt._d.dtype(a.dtype)
        elif a.dtype.kind == "b":
            default = _dt.bool
        else:
            raise TypeError(f"asarray: cannot convert {type(obj).__name__} (numpy dtype "
                            f"{a.dtype}) to a device array")
        target = dt or default
    return _upload(_host_cast(a, None, target), target, dev)


def _host_cast(a: np.ndarray, src, dt: DType) -> np.ndarray:
    if dt.numpy is not None and a.dtype != np.dtype(dt.numpy):
        if dt.kind in "iu" and a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            raise ValueError(f"cannot convert non-finite values to {dt.name}")
        return a.astype(np.dtype(dt.numpy))
    return a

