"""Indexing extensions (torch semantics, not in the standard): ``index_select gather scatter
scatter_add one_hot`` on the indexing Plans (``baracuda_dsl.ops.indexing.indexing``).  Every
function returns a new array (functional forms of torch's in-place ops).  Integer indices of any
integer dtype (int32 / int64 are read directly); negative indices wrap once; out-of-range indices
raise IndexError after the launch (see ``_plans``).  ``scatter`` with repeated targets: one write
wins (unspecified which); ``scatter_add`` accumulates with atomics (not bit-reproducible for
floats)."""

from __future__ import annotations

import builtins
import operator

from . import _copy
from . import _dtypes as _dt
from . import _plans
from ._array_object import Array
from ._creation_functions import full
from ._data_type_functions import astype
from ._indexing_functions import flat_index, select_along_axis
from ._manipulation_functions import normalize_axis
from ._statistical_functions import max as amax

__all__ = ["index_select", "gather", "scatter", "scatter_add", "one_hot"]


def index_select(x: Array, axis: int, index: Array) -> Array:
    """torch.index_select: ``x`` along ``axis`` at the 1-D ``index`` (IndexSelectPlan)."""
    _plans.check_array(x, "x")
    _plans.check_index_array(index, "index")
    if index.ndim > 1:
        raise ValueError(f"index_select: index must be 0-D or 1-D, got shape {index.shape}")
    return select_along_axis(x, flat_index(index, "index"), normalize_axis(axis, x.ndim),
                             "index_select")


def gather(x: Array, axis: int, index: Array) -> Array:
    """torch.gather: ``out[c] = x[c with c[axis] = index[c]]``; ``index`` has x's rank and is no
    larger than x off ``axis`` (GatherAxisPlan)."""
    from baracuda_dsl.ops.indexing.indexing import (GatherAxisArgs, GatherAxisDescriptor,
                                                    GatherAxisPlan)

    _plans.check_array(x, "x")
    _plans.check_index_array(index, "index")
    a = normalize_axis(axis, x.ndim)
    index = _plans.index_dtype_array(index)
    out = Array._empty(index.shape, x.dtype, x.device)
    if out.size == 0:
        return out
    plan = _plans.select(GatherAxisPlan, GatherAxisDescriptor(x.shape, index.shape, a, x.dtype,
                                                              index.dtype))
    _plans.run_checked(plan, lambda st: GatherAxisArgs(x, index, out, st), x.device, "gather")
    return out


def _scatter(x: Array, axis: int, index: Array, src, reduce: str, what: str) -> Array:
    from baracuda_dsl.ops.indexing.indexing import (ScatterAxisArgs, ScatterAxisDescriptor,
                                                    ScatterAxisPlan)

    _plans.check_array(x, "x")
    _plans.check_index_array(index, "index")
    a = normalize_axis(axis, x.ndim)
    index = _plans.index_dtype_array(index)
    if not isinstance(src, Array):
        src = full(index.shape, src, dtype=x.dtype, device=x.device)
    else:
        if src.dtype != x.dtype:
            src = astype(src, x.dtype)
        if src.ndim != index.ndim or any(a < b for a, b in zip(src.shape, index.shape)):
            raise ValueError(f"{what}: src of shape {src.shape} is smaller than index "
                             f"{index.shape}")
        src = src[tuple(slice(0, n) for n in index.shape)]  # torch reads src's leading block
    out = _copy.contiguous_copy(x)
    if index.size == 0:
        return out
    plan = _plans.select(ScatterAxisPlan, ScatterAxisDescriptor(x.shape, index.shape, a,
                                                                x.dtype, index.dtype, reduce))
    _plans.run_checked(plan, lambda st: ScatterAxisArgs(index, src, out, st), x.device, what)
    return out


def scatter(x: Array, axis: int, index: Array, src) -> Array:
    """torch.scatter (functional): a copy of ``x`` with ``out[c with c[axis] = index[c]] =
    src[c]`` (``src`` an array or a scalar); repeated targets: one write wins (unspecified)."""
    return _scatter(x, axis, index, src, "assign", "scatter")


def scatter_add(x: Array, axis: int, index: Array, src: Array) -> Array:
    """torch.scatter_add (functional): ``out[c with c[axis] = index[c]] += src[c]`` on a copy of
    ``x`` (atomics: float sums are not bit-reproducible across runs)."""
    return _scatter(x, axis, index, src, "add", "scatter_add")


def one_hot(x: Array, num_classes: int = -1, *, dtype=None) -> Array:
    """torch.nn.functional.one_hot: ``out[..., c] = (x[...] == c)`` of shape ``x.shape +
    (num_classes,)`` (``-1``: ``max(x) + 1``, one host read); dtype default int64 (OneHotPlan).
    Indices outside [0, num_classes) raise IndexError."""
    from baracuda_dsl.ops.indexing.indexing import OneHotArgs, OneHotDescriptor, OneHotPlan

    _plans.check_index_array(x, "x")
    x = _plans.index_dtype_array(x)
    dt = _dt.int64 if dtype is None else dtype
    c = operator.index(num_classes)
    if c == -1:
        c = builtins.int(amax(x)) + 1 if x.size else 0
    if c < 0:
        raise ValueError(f"one_hot: num_classes must be >= 0 or -1, got {c}")
    out = Array._empty(x.shape + (c,), dt, x.device)
    if out.size == 0:
        return out
    plan = _plans.select(OneHotPlan, OneHotDescriptor(x.shape, c, x.dtype, dt))
    _plans.run_checked(plan, lambda st: OneHotArgs(x, out, st), x.device, "one_hot")
    return out
