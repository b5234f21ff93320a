"""Statistical and reduction functions of the standard — ``sum prod max min mean var std`` — the
searching reductions ``argmax argmin count_nonzero``, the utility ``all any diff`` and the
extensions ``logsumexp`` and ``trace``.

Device reductions through ``ReducePlan`` / ``ArgReducePlan`` (any axes, deterministic fixed-order
combines; half types accumulate in float32); ``var``/``std``/``logsumexp`` through the composite
``StatReducePlan`` (computed in float32 for half inputs).  ``all``/``any``/``count_nonzero``
reduce ``x != 0`` (NaN is non-zero); complex ``sum``/``mean`` reduce the array viewed as real
pairs.  Results are new arrays; no host synchronisation.

Dtypes per the standard: ``sum``/``prod`` of signed integers and bool default to int64, unsigned
to uint64, floats and complex keep theirs (``dtype=`` overrides: a float dtype converts the input
first, an integer dtype converts the result); ``max``/``min`` of an empty reduction raise
ValueError; ``mean``/``var``/``std`` need a floating input.
"""

from __future__ import annotations

import builtins
import functools

from baracuda_dsl.errors import UnsupportedError
from baracuda_dsl.ops.reduction.reductions import (ArgReducePlan, ReduceArgs, ReduceDescriptor,
                                                   ReducePlan)

from . import _dtypes as _dt
from ._array_object import Array
from ._dispatch import _view, cast

__all__ = ["sum", "prod", "max", "min", "mean", "var", "std", "argmax", "argmin",
           "count_nonzero", "all", "any", "diff", "logsumexp", "trace"]


def _check(x, fn):
    if not isinstance(x, Array):
        raise TypeError(f"{fn}: expected an array_api Array, got {type(x).__name__}")


def _axes(axis, ndim: int):
    """Normalised, sorted axes (None → all), validated like array-api-strict."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if isinstance(a, builtins.bool) or not isinstance(a, int):
            raise TypeError(f"axis must be an int or a tuple of ints, got {axis!r}")
        if not -builtins.max(ndim, 1) <= a < builtins.max(ndim, 1):
            raise IndexError(f"axis {a} is out of bounds for a {ndim}-D array")
        out.append(a % builtins.max(ndim, 1))
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis!r}")
    return tuple(sorted(a for a in out if a < builtins.max(ndim, 1)))


def _keep_shape(shape, axes):
    return tuple(1 if d in axes else n for d, n in enumerate(shape))


@functools.lru_cache(maxsize=1024)
def _plan(cls, desc):
    return cls.select(desc)


def _run(x: Array, axes, op: str, keep_dtype: bool = False, correction: float = 0.0) -> Array:
    """One ReducePlan / ArgReducePlan launch; the kept-dims result (keepdims not applied)."""
    from ._extensions import _workspace
    from ._manipulation_functions import ascontiguousarray

    arg = op in ("argmax", "argmin")
    desc = ReduceDescriptor(x.shape, axes, op, x.dtype, keep_dtype, float(correction))
    plan = _plan(ArgReducePlan if arg else ReducePlan, desc)
    out = Array._empty(desc.out_shape, desc.out_dtype, x.device)
    if out.size == 0:
        return out
    ws, _keep = _workspace(plan, x)

    def go(src):
        a = ReduceArgs(_view(src), None if arg else _view(out), _view(out) if arg else None)
        plan.run(a, workspace=ws)

    try:
        go(x)
    except UnsupportedError:
        go(ascontiguousarray(x))  # a strided layout the kernel cannot walk: dense copy first
    return out


def _finish(res: Array, x: Array, axes, keepdims: bool) -> Array:
    if keepdims:
        from ._manipulation_functions import reshape

        return reshape(res, _keep_shape(x.shape, axes))
    return res


def _as_pairs(x: Array) -> Array:
    """A complex array viewed as real (…, 2) pairs."""
    rt = _dt.float32 if x.dtype == _dt.complex64 else _dt.float64
    return Array._new(x._ptr, x.shape + (2,), tuple(2 * s for s in x.strides) + (1,), rt,
                      x.device, x._owner)


def _complex_from_pairs(r: Array, ct) -> Array:
    return Array._new(r._ptr, r.shape[:-1], tuple(s // 2 for s in r.strides[:-1]), ct, r.device,
                      r._owner)


def _is_complex(dt) -> builtins.bool:
    return dt in (_dt.complex64, _dt.complex128)


def _sum_prod(op: str, x, axis, dtype, keepdims):
    _check(x, op)
    axes = _axes(axis, x.ndim)
    if dtype is not None and dtype != x.dtype and _dt.isdtype(dtype, ("real floating",
                                                                       "complex floating")):
        x = cast(x, dtype)
        dtype = None
    if _is_complex(x.dtype):
        if op == "prod":
            raise UnsupportedError("prod of complex arrays is not wired; wired: bool, integer "
                                   "and real floating dtypes")
        r = _run(_as_pairs(x), axes, "sum")
        return _finish(_complex_from_pairs(r, x.dtype), x, axes, keepdims)
    keep = dtype is not None and dtype == x.dtype and x.dtype != _dt.bool
    res = _run(x, axes, op, keep_dtype=keep)
    if dtype is not None and res.dtype != dtype:
        res = cast(res, dtype)
    return _finish(res, x, axes, keepdims)


def sum(x: Array, /, *, axis=None, dtype=None, keepdims: builtins.bool = False) -> Array:  # noqa: A001
    """Σ over ``axis`` (None: all).  Integers/bool → int64 (unsigned → uint64) unless ``dtype``;
    floats and complex keep their dtype (f16/bf16 accumulate in f32)."""
    return _sum_prod("sum", x, axis, dtype, keepdims)


def prod(x: Array, /, *, axis=None, dtype=None, keepdims: builtins.bool = False) -> Array:
    """Π over ``axis``; dtype rules as :func:`sum` (complex not wired)."""
    return _sum_prod("prod", x, axis, dtype, keepdims)


def _extreme(op, x, axis, keepdims):
    _check(x, op)
    if _is_complex(x.dtype):
        raise TypeError(f"{op}: complex arrays have no order")
    axes = _axes(axis, x.ndim)
    if builtins.any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"{op}: zero-size reduction has no identity")
    return _finish(_run(x, axes, op), x, axes, keepdims)


def max(x: Array, /, *, axis=None, keepdims: builtins.bool = False) -> Array:  # noqa: A001
    """Maximum over ``axis`` (NaN propagates); x's dtype; ValueError on an empty reduction."""
    return _extreme("max", x, axis, keepdims)


def min(x: Array, /, *, axis=None, keepdims: builtins.bool = False) -> Array:  # noqa: A001
    """Minimum over ``axis`` (NaN propagates); x's dtype; ValueError on an empty reduction."""
    return _extreme("min", x, axis, keepdims)


def _floating(x, fn):
    _check(x, fn)
    if not _dt.isdtype(x.dtype, ("real floating", "complex floating")):
        raise TypeError(f"{fn}: needs a floating-point array, got {x.dtype}")


def mean(x: Array, /, *, axis=None, keepdims: builtins.bool = False) -> Array:
    """Arithmetic mean over ``axis`` (NaN for an empty reduction); floating dtypes."""
    _floating(x, "mean")
    axes = _axes(axis, x.ndim)
    if _is_complex(x.dtype):
        r = _run(_as_pairs(x), axes, "mean")
        return _finish(_complex_from_pairs(r, x.dtype), x, axes, keepdims)
    return _finish(_run(x, axes, "mean"), x, axes, keepdims)


def _stat(op, x, axis, keepdims, correction=0.0):
    _floating(x, op)
    if _is_complex(x.dtype):
        raise UnsupportedError(f"{op} of complex arrays is not wired; wired: real floating dtypes")
    axes = _axes(axis, x.ndim)
    return _finish(_run(x, axes, op, correction=correction), x, axes, keepdims)


def var(x: Array, /, *, axis=None, correction=0.0, keepdims: builtins.bool = False) -> Array:
    """Σ (x − mean)² / (N − correction) over ``axis`` (NaN when N − correction ≤ 0); real
    floating dtypes; half inputs compute in float32 (StatReducePlan)."""
    return _stat("var", x, axis, keepdims, correction)


def std(x: Array, /, *, axis=None, correction=0.0, keepdims: builtins.bool = False) -> Array:
    """√var(x) (see :func:`var`)."""
    return _stat("std", x, axis, keepdims, correction)


def logsumexp(x: Array, /, *, axis=None, keepdims: builtins.bool = False) -> Array:
    """log Σ exp(x) over ``axis``, stabilised by the max (extension; real floating dtypes;
    −inf for an empty reduction; half inputs compute in float32; StatReducePlan)."""
    return _stat("logsumexp", x, axis, keepdims)


# ------------------------------------------------------------------------------ searching
def _arg(op, x, axis, keepdims):
    _check(x, op)
    if _is_complex(x.dtype) or x.dtype == _dt.bool:
        raise TypeError(f"{op}: needs a real numeric array, got {x.dtype}")
    if axis is not None and not isinstance(axis, int):
        raise TypeError(f"{op}: axis must be an int or None")
    axes = _axes(axis, x.ndim)
    if x.size == 0 or builtins.any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"{op}: zero-size reduction")
    if not axes:  # 0-d input
        from ._creation_functions import zeros

        return zeros(x.shape, dtype=_dt.int64, device=x.device)
    src = x
    if axis is None and x.ndim > 1:
        from ._manipulation_functions import reshape

        src, axes = reshape(x, (-1,)), (0,)
    res = _run(src, axes, op)
    if keepdims:
        from ._manipulation_functions import reshape

        return reshape(res, _keep_shape(x.shape, _axes(axis, x.ndim)))
    return res


def argmax(x: Array, /, *, axis=None, keepdims: builtins.bool = False) -> Array:
    """Index (int64) of the first maximum along ``axis`` (None: of the flattened array); NaN
    counts as the maximum."""
    return _arg("argmax", x, axis, keepdims)


def argmin(x: Array, /, *, axis=None, keepdims: builtins.bool = False) -> Array:
    """Index (int64) of the first minimum along ``axis`` (None: of the flattened array); NaN
    counts as the minimum."""
    return _arg("argmin", x, axis, keepdims)


def _nonzero_mask(x: Array) -> Array:
    from ._dispatch import apply

    if x.dtype == _dt.bool:
        return x
    return apply("not_equal", [x, 0], x.dtype)[0]


def count_nonzero(x: Array, /, *, axis=None, keepdims: builtins.bool = False) -> Array:
    """Number (int64) of non-zero elements over ``axis`` (NaN is non-zero)."""
    _check(x, "count_nonzero")
    axes = _axes(axis, x.ndim)
    return _finish(_run(_nonzero_mask(x), axes, "sum"), x, axes, keepdims)


# -------------------------------------------------------------------------------- utility
def _bool_reduce(op, x, axis, keepdims, empty_value):
    _check(x, "all" if op == "min" else "any")
    axes = _axes(axis, x.ndim)
    if builtins.any(x.shape[a] == 0 for a in axes):
        from ._creation_functions import full

        r = full(tuple(n for d, n in enumerate(x.shape) if d not in axes), empty_value,
                 dtype=_dt.bool, device=x.device)
        return _finish(r, x, axes, keepdims)
    return _finish(_run(_nonzero_mask(x), axes, op), x, axes, keepdims)


def all(x: Array, /, *, axis=None, keepdims: builtins.bool = False) -> Array:  # noqa: A001
    """Logical AND over ``axis``: True where every element is non-zero (NaN is non-zero);
    True for an empty reduction."""
    return _bool_reduce("min", x, axis, keepdims, True)


def any(x: Array, /, *, axis=None, keepdims: builtins.bool = False) -> Array:  # noqa: A001
    """Logical OR over ``axis``: True where some element is non-zero; False when empty."""
    return _bool_reduce("max", x, axis, keepdims, False)


def diff(x: Array, /, *, axis: int = -1, n: int = 1, prepend: Array = None,
         append: Array = None) -> Array:
    """n-th forward difference along ``axis`` (x[1:] − x[:-1], repeated n times; ``!=`` for
    bool), after concatenating ``prepend`` / ``append`` along that axis."""
    from ._dispatch import copy_into
    from ._elementwise_functions import not_equal, subtract

    _check(x, "diff")
    if x.ndim == 0:
        raise ValueError("diff: x must have at least one dimension")
    if isinstance(n, builtins.bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"diff: n must be a non-negative int, got {n!r}")
    ax = _axes(axis, x.ndim)[0]
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        for p in parts:
            _check(p, "diff")
            if p.ndim != x.ndim or builtins.any(p.shape[d] != x.shape[d] for d in range(x.ndim)
                                       if d != ax):
                raise ValueError("diff: prepend/append must match x except along axis")
        from ._data_type_functions import result_type

        dt = result_type(*parts)
        shape = list(x.shape)
        shape[ax] = builtins.sum(p.shape[ax] for p in parts)
        y = Array._empty(tuple(shape), dt, x.device)
        start = 0
        for p in parts:
            idx = tuple(slice(start, start + p.shape[ax]) if d == ax else slice(None)
                        for d in range(x.ndim))
            copy_into(p, y[idx])
            start += p.shape[ax]
        x = y
    for _ in range(n):
        if x.shape[ax] == 0:
            break
        hi = tuple(slice(1, None) if d == ax else slice(None) for d in range(x.ndim))
        lo = tuple(slice(None, -1) if d == ax else slice(None) for d in range(x.ndim))
        x = not_equal(x[hi], x[lo]) if x.dtype == _dt.bool else subtract(x[hi], x[lo])
    return x


def trace(x: Array, /, *, offset: int = 0, dtype=None) -> Array:
    """Σ of the ``offset`` diagonal over the last two axes (batched; array API linalg.trace):
    a strided diagonal view reduced by ReducePlan.  dtype rules as :func:`sum`."""
    _check(x, "trace")
    if x.ndim < 2:
        raise ValueError("trace: x must have at least two dimensions")
    r, c = x.shape[-2:]
    sr, sc = x.strides[-2:]
    off = int(offset)
    i0, j0 = (0, off) if off >= 0 else (-off, 0)
    k = builtins.max(0, builtins.min(r - i0, c - j0))
    start = (i0 * sr + j0 * sc) if k else 0
    diag = x._view(start, x.shape[:-2] + (k,), x.strides[:-2] + (sr + sc,))
    return sum(diag, axis=-1, dtype=dtype)
