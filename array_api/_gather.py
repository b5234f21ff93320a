"""Internal 1-D gather / scatter over Arrays (GatherPlan / ScatterPlan), used by the set and
counting functions."""

from __future__ import annotations

import functools

from baracuda_dsl.plans.gather import (GatherPlan, IndexCopyArgs, IndexCopyDescriptor,
                                       ScatterPlan)

from ._array_object import Array
from ._dispatch import _view


@functools.lru_cache(maxsize=512)
def _plan(cls, n: int, m: int, dt, ix):
    return cls.select(IndexCopyDescriptor(n, m, dt, ix))


def take_flat(src: Array, idx: Array) -> Array:
    """``src[idx]`` for 1-D ``src`` and int32/int64 1-D ``idx`` (indices assumed in range)."""
    out = Array._empty((idx.size,), src.dtype, src.device)
    if idx.size:
        _plan(GatherPlan, idx.size, src.size, src.dtype, idx.dtype).run(
            IndexCopyArgs(_view(src), _view(idx), _view(out)))
    return out


def scatter_flat(dst: Array, idx: Array, src: Array) -> None:
    """``dst[idx] = src`` for 1-D operands (distinct in-range indices)."""
    if idx.size:
        _plan(ScatterPlan, idx.size, dst.size, dst.dtype, idx.dtype).run(
            IndexCopyArgs(_view(src), _view(idx), _view(dst)))
