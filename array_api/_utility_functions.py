"""Utility functions of the standard (2024.12): ``all``, ``any``, ``diff``.

``all`` / ``any`` reduce ``x != 0`` (NaN is non-zero) with ``ReducePlan`` min / max (see
``_reduce``); an empty reduction gives True / False.  ``diff`` is ``subtract`` (``not_equal`` for
bool) of shifted views, after ``prepend`` / ``append`` are copied around ``x`` along the axis.
"""

from __future__ import annotations

import builtins

from . import _dispatch
from . import _dtypes as _dt
from . import _plans
from ._array_object import Array
from ._creation_functions import full
from ._data_type_functions import result_type
from ._elementwise_functions import not_equal, subtract
from ._reduce import finish, nonzero_mask, reduce, reduction_axes

__all__ = ["all", "any", "diff"]


def _bool_reduce(op, x, axis, keepdims, empty_value):
    _plans.check_operand(x, "all" if op == "min" else "any")
    axes = reduction_axes(axis, x.ndim)
    if builtins.any(x.shape[a] == 0 for a in axes):
        r = full(tuple(n for d, n in enumerate(x.shape) if d not in axes), empty_value,
                 dtype=_dt.bool, device=x.device)
        return finish(r, x, axes, keepdims)
    return finish(reduce(nonzero_mask(x), axes, op), x, axes, keepdims)


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
    _plans.check_operand(x, "diff")
    if x.ndim == 0:
        raise ValueError("diff: x must have at least one dimension")
    if isinstance(n, builtins.bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"diff: n must be a non-negative int, got {n!r}")
    ax = reduction_axes(axis, x.ndim)[0]
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        for p in parts:
            _plans.check_operand(p, "diff")
            if p.ndim != x.ndim or builtins.any(p.shape[d] != x.shape[d] for d in range(x.ndim)
                                                if d != ax):
                raise ValueError("diff: prepend/append must match x except along axis")
        dt = result_type(*parts)
        shape = list(x.shape)
        shape[ax] = builtins.sum(p.shape[ax] for p in parts)
        y = Array._empty(tuple(shape), dt, x.device)
        start = 0
        for p in parts:
            idx = tuple(slice(start, start + p.shape[ax]) if d == ax else slice(None)
                        for d in range(x.ndim))
            _dispatch.copy_into(p, y[idx])
            start += p.shape[ax]
        x = y
    for _ in range(n):
        if x.shape[ax] == 0:
            break
        hi = tuple(slice(1, None) if d == ax else slice(None) for d in range(x.ndim))
        lo = tuple(slice(None, -1) if d == ax else slice(None) for d in range(x.ndim))
        x = not_equal(x[hi], x[lo]) if x.dtype == _dt.bool else subtract(x[hi], x[lo])
    return x
