"""Utility functions of the standard: ``all`` and ``any``.

Interim implementation: the reduction runs on the host (one device → host copy of ``x`` and a
one-element upload), because device reductions arrive with the reductions issue.  Results are
exact; the cost is a synchronising copy, so avoid them in hot loops until then.
"""

from __future__ import annotations

import numpy as np

from . import _dtypes as _dt
from ._array_object import Array


def _axis(axis, ndim: int):
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not isinstance(a, int) or isinstance(a, bool):
            raise TypeError(f"axis must be an int or a tuple of ints, got {axis!r}")
        if not -ndim <= a < max(ndim, 1):
            raise IndexError(f"axis {a} is out of bounds for a {ndim}-D array")
        out.append(a % max(ndim, 1))
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis!r}")
    return tuple(out)


def _reduce(fn, x: Array, axis, keepdims: bool) -> Array:
    if not isinstance(x, Array):
        raise TypeError(f"expected an array_api Array, got {type(x).__name__}")
    ax = _axis(axis, x.ndim)
    if x.dtype in (_dt.bfloat16, _dt.float8_e4m3, _dt.float8_e5m2):
        bits = x.to_numpy(raw=True)  # types numpy lacks: non-zero = any bit but the sign set
        nonzero = (bits & ~np.array(1 << (8 * x.dtype.itemsize - 1), bits.dtype)) != 0
    else:
        nonzero = x.to_numpy() != 0
    res = fn(nonzero, axis=ax, keepdims=keepdims)
    from ._creation_functions import asarray

    return asarray(np.asarray(res, dtype=np.bool_), device=x.device)


def all(x: Array, /, *, axis=None, keepdims: bool = False) -> Array:  # noqa: A001
    """Logical AND over ``axis`` (all axes when None): True where every element is non-zero
    (NaN counts as non-zero).  Result dtype bool."""
    return _reduce(np.all, x, axis, keepdims)


def any(x: Array, /, *, axis=None, keepdims: bool = False) -> Array:  # noqa: A001
    """Logical OR over ``axis`` (all axes when None): True where some element is non-zero.
    Result dtype bool."""
    return _reduce(np.any, x, axis, keepdims)
