"""Creation functions of the standard (2024.12): ``asarray``, ``from_dlpack``, ``empty``,
``zeros``, ``ones``, ``full`` and the ``*_like`` forms, ``arange``, ``linspace``, ``eye``,
``meshgrid``, ``tril``, ``triu``.

Every argument is validated before any device work.  Defaults: bool, int64, float32, complex64.
Fills use cuMemsetD8/D16/D32Async (the current stream) when the element's byte pattern allows,
an elementwise fill kernel (or a host upload for small arrays) otherwise.  ``arange`` and
``linspace`` values are computed on the host by numpy in float64 / complex128 (int64 for integer
``arange``) and uploaded; bfloat16 targets are rounded (to nearest even) from float32 by
``_dtypes.host_encode``.  ``eye`` is a zero memset plus a fill of the diagonal view.
"""

from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from baracuda_dsl import dtypes as _d
from baracuda_dsl.dlpack import KDL_CPU, KDL_CUDA_HOST
from baracuda_dsl.dtypes import DType
from baracuda_dsl.errors import UnsupportedError
from baracuda_dsl.tensor import MAX_RANK, as_view

from . import _copy
from . import _device as _dev
from . import _dispatch
from . import _dtypes as _dt
from . import _plans
from ._array_object import Array
from ._device import Device, as_device
from ._dlpack import host_array
from ._promotion import check_scalar_range, result_type

_PY_SCALARS = (builtins.bool, builtins.int, builtins.float, builtins.complex)


# ------------------------------------------------------------------------------ validation
def _resolve_dtype(dtype, default: DType) -> DType:
    return default if dtype is None else _dt.as_dtype(dtype)


def _shape_tuple(shape) -> tuple:
    """``shape`` (an int or a sequence of ints) as a tuple; TypeError for non-integers,
    ValueError for negative extents or rank > 8."""
    if not isinstance(shape, (tuple, list)):
        shape = (shape,)
    try:
        out = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"shape must be an int or a sequence of ints, got {shape!r}") from None
    if any(s < 0 for s in out):
        raise ValueError(f"negative dimension in shape {out}")
    if len(out) > MAX_RANK:
        raise ValueError(f"rank {len(out)} > {MAX_RANK} is not supported")
    return out


def _py_scalar(value):
    """A Python scalar from a Python / numpy scalar or a 0-D Array (TypeError otherwise)."""
    if isinstance(value, Array):
        if value.ndim != 0:
            raise TypeError(f"fill value must be a scalar or a 0-D array (shape {value.shape})")
        return value.to_numpy()[()].item()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, _PY_SCALARS):
        return value
    raise TypeError(f"fill value must be a Python scalar, got {type(value).__name__}")


def _default_dtype_for(value) -> DType:
    if isinstance(value, builtins.bool):
        return _dt.bool
    if isinstance(value, builtins.int):
        return _dt.int64
    if isinstance(value, builtins.float):
        return _dt.float32
    return _dt.complex64


_VALUE_KINDS = {builtins.bool: "b", builtins.int: "iufc", builtins.float: "fc",
                builtins.complex: "c"}


def _check_fill(value, dt: DType, fn: str) -> None:
    """TypeError when the fill value's kind does not fit ``dt`` (bool only into bool, int into
    numbers, float into floating, complex into complex); OverflowError for ints out of range."""
    if dt.kind not in _VALUE_KINDS[type(value)]:
        raise TypeError(f"{fn}: a Python {type(value).__name__} fill value ({value!r}) does not "
                        f"fit dtype {dt.name}")
    check_scalar_range(value, dt)


# ------------------------------------------------------------------------------ fills
def empty(shape, *, dtype=None, device=None) -> Array:
    """Uninitialised dense array (default dtype float32)."""
    shape = _shape_tuple(shape)
    dt = _resolve_dtype(dtype, _dt.float32)
    return Array._empty(shape, dt, as_device(device))


def _filled(shape, value, dt: DType, device) -> Array:
    x = Array._empty(_shape_tuple(shape), dt, as_device(device))
    _copy.fill(x, value)
    return x


def full(shape, fill_value, *, dtype=None, device=None) -> Array:
    """Dense array of ``shape`` filled with ``fill_value`` (a Python scalar or a 0-D Array).
    dtype when not given: a 0-D Array's dtype, else bool / int64 / float32 / complex64 from the
    scalar's type.  TypeError when the value's kind does not fit ``dtype`` (``full(s, 1.5,
    dtype=int32)``, a bool into a number, complex into real), OverflowError for out-of-range
    ints."""
    shape = _shape_tuple(shape)
    arr_dt = fill_value.dtype if isinstance(fill_value, Array) else None
    if dtype is not None:
        dt = _dt.as_dtype(dtype)
    value = _py_scalar(fill_value)
    if dtype is None:
        dt = arr_dt or _default_dtype_for(value)
    _check_fill(value, dt, "full")
    return _filled(shape, value, dt, device)


def zeros(shape, *, dtype=None, device=None) -> Array:
    """Dense array of zeros (default dtype float32; every dtype)."""
    dt = _resolve_dtype(dtype, _dt.float32)
    return _filled(shape, False if dt.kind == "b" else 0, dt, device)


def ones(shape, *, dtype=None, device=None) -> Array:
    """Dense array of ones (default dtype float32; bool ones are True)."""
    dt = _resolve_dtype(dtype, _dt.float32)
    return _filled(shape, True if dt.kind == "b" else 1, dt, device)


def _like(x, dtype, device):
    if not isinstance(x, Array):
        raise TypeError(f"expected an array_api Array, got {type(x).__name__}")
    return (x.dtype if dtype is None else _dt.as_dtype(dtype),
            x.device if device is None else device)


def empty_like(x: Array, /, *, dtype=None, device=None) -> Array:
    """``empty(x.shape)`` with x's dtype and device unless given."""
    dt, dev = _like(x, dtype, device)
    return empty(x.shape, dtype=dt, device=dev)


def zeros_like(x: Array, /, *, dtype=None, device=None) -> Array:
    """``zeros(x.shape)`` with x's dtype and device unless given."""
    dt, dev = _like(x, dtype, device)
    return zeros(x.shape, dtype=dt, device=dev)


def ones_like(x: Array, /, *, dtype=None, device=None) -> Array:
    """``ones(x.shape)`` with x's dtype and device unless given."""
    dt, dev = _like(x, dtype, device)
    return ones(x.shape, dtype=dt, device=dev)


def full_like(x: Array, /, fill_value, *, dtype=None, device=None) -> Array:
    """``full(x.shape, fill_value)`` with x's dtype and device unless given."""
    dt, dev = _like(x, dtype, device)
    return full(x.shape, fill_value, dtype=dt, device=dev)


# ------------------------------------------------------------------------------ ranges
def _real_arg(v, name: str):
    if isinstance(v, Array):
        v = _py_scalar(v)
    elif isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, builtins.bool) or not isinstance(v, (builtins.int, builtins.float)):
        raise TypeError(f"{name} must be a real Python number (int or float), got {v!r}")
    return v


def _upload(a: np.ndarray, dt: DType, device: Device) -> Array:
    """A new device array holding host array ``a`` converted to ``dt``."""
    host = _dt.host_encode(a, dt)
    x = Array._empty(a.shape, dt, device)
    _dev.htod(x._ptr, host)
    return x


def arange(start, /, stop=None, step=1, *, dtype=None, device=None) -> Array:
    """Values ``start + i·step`` for ``0 ≤ i < ceil((stop - start) / step)`` (0 when that is
    negative); ``arange(n)`` counts from 0.  dtype: int64 when all arguments are ints, float32
    when any is a float; integer dtypes need integer arguments (exact int64 arithmetic), float
    values are computed in float64 and rounded once to the target.  ValueError for ``step == 0``,
    TypeError for bool dtypes or non-real arguments, OverflowError when the values do not fit."""
    if stop is None:
        start, stop = 0, start
    start, stop, step = (_real_arg(v, n) for v, n in ((start, "start"), (stop, "stop"),
                                                      (step, "step")))
    if step == 0:
        raise ValueError("arange: step must not be zero")
    all_int = all(isinstance(v, builtins.int) for v in (start, stop, step))
    dt = _resolve_dtype(dtype, _dt.int64 if all_int else _dt.float32)
    if dt.kind == "b":
        raise TypeError("arange: bool dtypes are not supported")
    if dt.kind in "iu" and not all_int:
        raise TypeError(f"arange: float arguments with integer dtype {dt.name}")
    if all_int:
        n = max(0, -((start - stop) // step))
    else:
        n = max(0, math.ceil((stop - start) / step))
    if dt.kind in "iu":
        if n:
            check_scalar_range(start, dt)
            check_scalar_range(start + (n - 1) * step, dt)
        last = start + (n - 1) * step
        if n and max(start, last) >= 2**63:  # uint64 values beyond int64: exact, element-wise
            a = np.array([start + i * step for i in range(n)], np.uint64)
        else:
            a = np.arange(n, dtype=np.int64) * step + start
    else:
        a = start + np.arange(n, dtype=np.float64) * step
    return _upload(a, dt, as_device(device))


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True) -> Array:
    """``num`` evenly spaced values from ``start`` to ``stop`` (``stop`` excluded when
    ``endpoint=False``), computed in float64 / complex128 on the host and rounded once to the
    target.  dtype: complex64 when start or stop is complex, else float32; it must be a floating
    dtype (TypeError otherwise, and for complex bounds with a real dtype).  ValueError for
    ``num < 0``."""
    vals = []
    for v, n in ((start, "start"), (stop, "stop")):
        v = _py_scalar(v) if isinstance(v, (Array, np.generic)) else v
        if isinstance(v, builtins.bool) or not isinstance(v, (builtins.int, builtins.float,
                                                              builtins.complex)):
            raise TypeError(f"linspace: {n} must be a Python number, got {v!r}")
        vals.append(v)
    try:
        num = operator.index(num)
    except TypeError:
        raise TypeError(f"linspace: num must be an int, got {num!r}") from None
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, got {num}")
    is_c = any(isinstance(v, builtins.complex) for v in vals)
    dt = _resolve_dtype(dtype, _dt.complex64 if is_c else _dt.float32)
    if dt.kind not in "fc":
        raise TypeError(f"linspace: dtype must be floating, got {dt.name}")
    if is_c and dt.kind != "c":
        raise TypeError(f"linspace: complex bounds need a complex dtype, got {dt.name}")
    if not isinstance(endpoint, builtins.bool):
        raise TypeError(f"linspace: endpoint must be a bool, got {endpoint!r}")
    a = np.linspace(vals[0], vals[1], num, endpoint=endpoint,
                    dtype=np.complex128 if dt.kind == "c" else np.float64)
    return _upload(a, dt, as_device(device))


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None) -> Array:
    """2-D array with ones on diagonal ``k`` (k > 0 above the main one, k < 0 below) and zeros
    elsewhere; shape (n_rows, n_cols or n_rows), default dtype float32."""
    try:
        n = operator.index(n_rows)
        m = n if n_cols is None else operator.index(n_cols)
        k = operator.index(k)
    except TypeError:
        raise TypeError("eye: n_rows, n_cols and k must be ints") from None
    if n < 0 or m < 0:
        raise ValueError(f"eye: negative dimension ({n}, {m})")
    dt = _resolve_dtype(dtype, _dt.float32)
    x = zeros((n, m), dtype=dt, device=device)
    length = max(0, min(n, m - k) if k >= 0 else min(n + k, m))
    if length:
        off = k if k >= 0 else -k * m
        _dispatch.fill(x._view(off, (length,), (m + 1,)), True if dt.kind == "b" else 1)
    return x


# ------------------------------------------------------------------------------ grids, triangles
def meshgrid(*arrays, indexing: str = "xy") -> list:
    """Coordinate grids from 1-D arrays of one dtype and device: output ``i`` repeats
    ``arrays[i]`` along every other axis.  Shape (N0, N1, ...) for ``indexing='ij'``; ``'xy'``
    swaps the first two axes.  Returns a list of new dense arrays (copies, writable, no aliasing
    of the inputs)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    for a in arrays:
        if not isinstance(a, Array):
            raise TypeError(f"meshgrid: expected array_api Arrays, got {type(a).__name__}")
        if a.ndim != 1:
            raise ValueError(f"meshgrid: inputs must be 1-D (got shape {a.shape})")
    if len({a.dtype for a in arrays}) > 1:
        raise ValueError("meshgrid: inputs must all have the same dtype")
    if len({a.device for a in arrays}) > 1:
        raise ValueError("meshgrid: inputs must all be on the same device")
    if len(arrays) > MAX_RANK:
        raise ValueError(f"meshgrid: at most {MAX_RANK} inputs (rank limit)")
    axes = list(range(len(arrays)))
    if indexing == "xy" and len(arrays) >= 2:
        axes[0], axes[1] = 1, 0
    shape = [0] * len(arrays)
    for a, ax in zip(arrays, axes):
        shape[ax] = a.shape[0]
    out = []
    for a, ax in zip(arrays, axes):
        strides = [0] * len(arrays)
        strides[ax] = a.strides[0]
        out.append(_copy.contiguous_copy(a._view(0, tuple(shape), tuple(strides))))
    return out


def _triangle(x, k, fn: str, lower: bool) -> Array:
    _plans.check_operand(x, fn)
    if x.ndim < 2:
        raise ValueError(f"{fn}: x must be at least 2-D (shape {x.shape})")
    try:
        k = operator.index(k)
    except TypeError:
        raise TypeError(f"{fn}: k must be an int, got {k!r}") from None
    from baracuda_dsl.ops.shape.pad import TriArgs, TriDescriptor, TriPlan

    out = Array._empty(x.shape, x.dtype, x.device)
    if out.size:
        plan = _plans.select(TriPlan, TriDescriptor(x.shape, k, not lower, x.dtype))
        plan.run(TriArgs(x, out))
    return out


def tril(x: Array, /, *, k: int = 0) -> Array:
    """Lower triangle of the last two axes of ``x`` (elements with ``j <= i + k`` kept, others
    zero), batched over leading axes; a new array of x's dtype."""
    return _triangle(x, k, "tril", True)


def triu(x: Array, /, *, k: int = 0) -> Array:
    """Upper triangle of the last two axes of ``x`` (elements with ``j >= i + k`` kept, others
    zero), batched over leading axes; a new array of x's dtype."""
    return _triangle(x, k, "triu", False)


# ------------------------------------------------------------------------------ interchange
def _dlpack_device(obj):
    try:
        return tuple(int(v) for v in obj.__dlpack_device__())
    except Exception:
        return None


def _is_device_object(obj) -> builtins.bool:
    """True for producers of CUDA memory (torch CUDA tensors, cupy, jax on GPU, numba)."""
    if isinstance(obj, (np.ndarray, np.generic)):
        return False
    if type(obj).__module__.startswith("torch") and hasattr(obj, "is_cuda"):
        return builtins.bool(obj.is_cuda)
    if hasattr(obj, "__dlpack_device__"):
        dev = _dlpack_device(obj)
        return dev is not None and dev[0] not in (KDL_CPU, KDL_CUDA_HOST)
    return hasattr(obj, "__cuda_array_interface__")


def _is_host_dlpack(obj) -> builtins.bool:
    if isinstance(obj, (np.ndarray, np.generic)) or not hasattr(obj, "__dlpack__"):
        return False
    dev = _dlpack_device(obj)
    return dev is not None and dev[0] in (KDL_CPU, KDL_CUDA_HOST)


def _move(arr: Array, target, copy, err) -> Array:
    """Apply a device request and the copy flag to an Array that already holds the data."""
    if target is not None and target != arr.device:
        if copy is False:
            raise err(f"moving an array from {arr.device} to {target} needs a copy "
                      f"(copy=False given)")
        raise UnsupportedError(f"cross-device copies are not wired ({arr.device} → {target})")
    if copy:
        return _copy.contiguous_copy(arr)
    return arr


def from_dlpack(x, /, *, device=None, copy=None) -> Array:
    """Array from a DLPack producer.  CUDA producers (torch, cupy, jax, numba, our Arrays) are
    viewed zero-copy (the producer stays alive while the Array or a view of it lives) unless
    ``copy=True``; host producers (numpy, CPU torch) are copied to the device (``copy=False`` →
    BufferError).  ``device='cpu'`` (or any host device) raises BufferError: this namespace
    holds CUDA arrays only, which the standard allows (use ``np.from_dlpack(x, device='cpu')``
    for a host copy)."""
    if device is not None and _dev.is_host_request(device):
        raise BufferError(f"from_dlpack: device={device!r} asks for host memory; this namespace "
                          f"holds CUDA arrays only (np.from_dlpack(x, device='cpu') copies to "
                          f"the host)")
    if copy not in (None, True, False):
        raise TypeError(f"from_dlpack: copy must be None or a bool, got {copy!r}")
    if not (hasattr(x, "__dlpack__") or hasattr(x, "__cuda_array_interface__")):
        raise TypeError(f"from_dlpack: {type(x).__name__} has no __dlpack__ method")
    target = None if device is None else as_device(device)
    if isinstance(x, Array):
        return _move(x, target, copy, BufferError)
    if not _is_device_object(x):
        if copy is False:
            raise BufferError("from_dlpack: a host producer must be copied to the device "
                              "(copy=False given)")
        raw, dt = host_array(x)
        return _upload_raw(raw, dt, target or as_device(None))
    v = as_view(x)
    arr = Array._new(v.ptr, v.shape, v.strides, v.dtype, Device(v.device), v)
    return _move(arr, target, copy, BufferError)


def _upload_raw(raw: np.ndarray, dt: DType, device: Device) -> Array:
    """A new device array from host raw storage already in ``dt``'s device layout."""
    x = Array._empty(raw.shape, dt, device)
    _dev.htod(x._ptr, np.ascontiguousarray(raw))
    return x


def asarray(obj, /, *, dtype=None, device=None, copy=None) -> Array:
    """Array from an Array, a CUDA producer (torch / cupy / jax: zero copy), or host data (numpy
    arrays and scalars keep their dtype; Python scalars and nested sequences — which may hold
    0-D Arrays — take bool / int64 / float32 / complex64, or the promoted dtype of the Arrays
    they hold; host DLPack producers keep theirs).  ``copy=None`` copies only when needed
    (host data, a dtype change: a device cast), ``copy=True`` always, ``copy=False`` never
    (ValueError when a copy is needed).  OverflowError for Python ints out of the target's
    range (int64 by default)."""
    dt = None if dtype is None else _dt.as_dtype(dtype)
    if copy not in (None, True, False):
        raise TypeError(f"asarray: copy must be None or a bool, got {copy!r}")
    if isinstance(obj, Array) or _is_device_object(obj):
        arr = obj if isinstance(obj, Array) else from_dlpack(obj)
        target = None if device is None else as_device(device)
        if dt is not None and dt != arr.dtype:
            if copy is False:
                raise ValueError(f"asarray: {arr.dtype.name} → {dt.name} needs a copy "
                                 f"(copy=False given)")
            return _dispatch.cast(_move(arr, target, None, ValueError), dt)
        return _move(arr, target, copy, ValueError)
    if copy is False:
        raise ValueError("asarray: host data must be copied to the device (copy=False given)")
    if _is_host_dlpack(obj) and not isinstance(obj, (list, tuple)):
        raw, src = host_array(obj)
        if dt is None or dt == src:
            return _upload_raw(raw, src, as_device(device))
        a = _dt.host_decode(raw, src)
    else:
        a, src = _host_data(obj, dt)
    target = dt or src
    return _upload(_host_cast(a, target), target, as_device(device))


def _host_data(obj, dt):
    """(numpy array, source dtype) of host data; Python data resolved to default dtypes."""
    if isinstance(obj, (np.ndarray, np.generic)) or (
            not isinstance(obj, _PY_SCALARS + (list, tuple)) and hasattr(obj, "__array__")):
        a = np.asarray(obj)
        if a.dtype.name == "bfloat16":
            return a, _dt.bfloat16
        try:
            return a, _d.dtype(a.dtype)
        except (UnsupportedError, TypeError):
            raise TypeError(f"asarray: numpy dtype {a.dtype} has no array_api dtype") from None
    if not isinstance(obj, _PY_SCALARS + (list, tuple)):
        try:
            memoryview(obj)
        except TypeError:
            raise TypeError(f"asarray: cannot convert {type(obj).__name__} to an array") from None
        return _host_data(np.asarray(obj), dt)
    leaves, arr_dts = _leaves(obj)
    flat = list(_flat(leaves))
    if dt is not None and dt.kind in "iu":
        _check_ints(flat, dt)
    big = [v for v in flat if type(v) is builtins.int and not -2**63 <= v < 2**63]
    inexact = any(isinstance(v, (builtins.float, builtins.complex)) for v in flat)
    if big and dt is None and not inexact:
        raise OverflowError(f"asarray: Python int {big[0]} does not fit the default integer "
                            f"dtype int64 (pass dtype=)")
    if big:
        cplx = any(isinstance(v, builtins.complex) for v in flat) or (dt and dt.kind == "c")
        host = (np.dtype(dt.numpy) if dt is not None and dt.kind in "iu"
                else np.complex128 if cplx else np.float64)
        a = np.asarray(leaves, dtype=host)
    else:
        a = np.asarray(leaves)
    if a.dtype == object:
        raise ValueError("asarray: ragged nested sequence (arrays of mismatched shapes)")
    if arr_dts:
        return a, result_type(*arr_dts, *[v for v in flat if isinstance(v, _PY_SCALARS)])
    default = {"b": _dt.bool, "i": _dt.int64, "u": _dt.int64, "f": _dt.float32,
               "c": _dt.complex64}.get(a.dtype.kind)
    if default is None:
        raise TypeError(f"asarray: cannot convert {type(obj).__name__} (numpy dtype {a.dtype}) "
                        f"to an array")
    return a, default


def _leaves(obj):
    """``obj`` with every Array replaced by a host numpy copy, and the Arrays' dtypes."""
    dts = []

    def walk(o):
        if isinstance(o, Array):
            dts.append(o.dtype)
            return o.to_numpy()
        if isinstance(o, (list, tuple)):
            return [walk(v) for v in o]
        return o

    return walk(obj), dts


def _flat(o):
    if isinstance(o, list):
        for v in o:
            yield from _flat(v)
    else:
        yield o


def _check_ints(leaves, dt: DType) -> None:
    for v in _flat(leaves):
        if isinstance(v, builtins.int) and not isinstance(v, builtins.bool):
            check_scalar_range(v, dt)


def _host_cast(a: np.ndarray, dt: DType) -> np.ndarray:
    """Host conversion before upload (numpy casting; non-finite floats → integers refused)."""
    if dt.numpy is not None and a.dtype != np.dtype(dt.numpy):
        if dt.kind in "iu" and a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
            raise ValueError(f"cannot convert non-finite values to {dt.name}")
        if dt.kind != "c" and a.dtype.kind == "c":
            raise TypeError(f"cannot convert complex values to {dt.name}")
        return a.astype(np.dtype(dt.numpy))
    return a
