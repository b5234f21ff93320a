"""``nonzero`` (array API 2024.12): the indices of the non-zero elements, one int64 array per
dimension, in row-major order.  Also ``flatnonzero`` (extension: flat row-major indices).

On ``baracuda_dsl.ops.scan.compaction.CompactPlan``: a count pass, one device → host read of the
count (the only sync: the result size depends on the data), then the scatter of the coordinates
into a ``(ndim, count)`` array whose rows are returned.  Every dtype except complex128; -0.0 is
zero, NaN is non-zero.  0-d input raises ValueError, as the standard specifies.
"""

from __future__ import annotations

import functools

from . import _dtypes as _dt
from ._array_object import Array

__all__ = ["nonzero", "flatnonzero"]


@functools.lru_cache(maxsize=256)
def _plan(shape, dtype, mode):
    from baracuda_dsl.ops.scan.compaction import CompactDescriptor, CompactPlan

    return CompactPlan.select(CompactDescriptor(shape, dtype, mode))


def _compact(x: Array, mode: str) -> Array:
    from baracuda_dsl.ops.scan.compaction import CompactArgs

    from ._extensions import _workspace

    plan = _plan(tuple(x.shape), x.dtype, mode)
    ws, _keep = _workspace(plan, x)
    cnt = Array._empty((1,), _dt.int64, x.device)
    plan.run_count(CompactArgs(x, cnt), workspace=ws)
    n = int(cnt.to_numpy()[0])
    shape = (n,) if mode == "flat" else (x.ndim, n)
    out = Array._empty(shape, _dt.int64, x.device)
    if n:
        plan.run_scatter(CompactArgs(x, cnt, out), workspace=ws)
    return out


def nonzero(x: Array, /) -> tuple:
    """Tuple of ``x.ndim`` int64 arrays (one per dimension) with the coordinates of the non-zero
    elements of ``x``, in row-major order.  ValueError for 0-d input."""
    if not isinstance(x, Array):
        raise TypeError(f"nonzero: expected an array_api Array, got {type(x).__name__}")
    if x.ndim == 0:
        raise ValueError("nonzero: 0-d arrays are not allowed (array API); use reshape(x, (1,))")
    coords = _compact(x, "coords")
    return tuple(coords[d] for d in range(x.ndim))


def flatnonzero(x: Array, /) -> Array:
    """Flat row-major int64 indices of the non-zero elements of ``x`` (any rank)."""
    if not isinstance(x, Array):
        raise TypeError(f"flatnonzero: expected an array_api Array, got {type(x).__name__}")
    return _compact(x, "flat")
