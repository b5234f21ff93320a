"""Indexing, embedding and segment extensions (not in the standard), with torch / jax
semantics: ``index_select gather scatter scatter_add index_add masked_fill one_hot embedding
embedding_bag segment_sum segment_mean segment_max segment_min segment_prod``.  Every function
returns a new array (functional forms of torch's in-place ops).  Integer indices of any integer
dtype (int32 / int64 are read directly); negative indices wrap once; out-of-range indices raise
IndexError after the launch (see ``_plans``).  Sums over repeated indices: ``index_add`` and the
segment / embedding reductions are deterministic (sort-based, fixed order); ``scatter_add``
accumulates with atomics (not bit-reproducible for floats)."""

from __future__ import annotations

import builtins
import operator

from . import _dtypes as _dt
from . import _plans
from ._array_object import Array


def _flat_index(idx: Array, what: str) -> Array:
    from ._manipulation_functions import ascontiguousarray, reshape

    _plans.check_index_array(idx, what)
    return _plans.index_dtype_array(reshape(ascontiguousarray(idx), (-1,)))


def _axis(axis, ndim):
    from ._manipulation_functions import _axis as ax

    return ax(axis, ndim)


def index_select(x: Array, axis: int, index: Array) -> Array:
    """torch.index_select: ``x`` along ``axis`` at the 1-D ``index`` (IndexSelectPlan)."""
    from ._indexing_functions import _index_select

    _plans.check_array(x, "x")
    _plans.check_index_array(index, "index")
    if index.ndim > 1:
        raise ValueError(f"index_select: index must be 0-D or 1-D, got shape {index.shape}")
    return _index_select(x, _flat_index(index, "index"), _axis(axis, x.ndim), "index_select")


def gather(x: Array, axis: int, index: Array) -> Array:
    """torch.gather: ``out[c] = x[c with c[axis] = index[c]]``; ``index`` has x's rank and is no
    larger than x off ``axis`` (GatherAxisPlan)."""
    from baracuda_dsl.ops.indexing.indexing import (GatherAxisArgs, GatherAxisDescriptor,
                                                    GatherAxisPlan)

    _plans.check_array(x, "x")
    _plans.check_index_array(index, "index")
    a = _axis(axis, x.ndim)
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

    from ._creation_functions import full
    from ._data_type_functions import astype
    from ._manipulation_functions import _contiguous_copy

    _plans.check_array(x, "x")
    _plans.check_index_array(index, "index")
    a = _axis(axis, x.ndim)
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
    out = _contiguous_copy(x)
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


def index_add(x: Array, axis: int, index: Array, source: Array, *, alpha=1) -> Array:
    """torch.index_add (functional): ``out[.., index[i], ..] += alpha · source[.., i, ..]`` on a
    copy of ``x``; deterministic (sort-based, fixed summation order; IndexAddPlan)."""
    from baracuda_dsl.ops.segment.segment import IndexAddArgs, IndexAddDescriptor, IndexAddPlan

    from ._data_type_functions import astype
    from ._manipulation_functions import _contiguous_copy

    _plans.check_array(x, "x")
    _plans.check_array(source, "source")
    a = _axis(axis, x.ndim)
    idx = _flat_index(index, "index")
    if source.dtype != x.dtype:
        source = astype(source, x.dtype)
    want = x.shape[:a] + (idx.shape[0],) + x.shape[a + 1:]
    if source.shape != want:
        raise ValueError(f"index_add: source shape {source.shape} != {want}")
    out = _contiguous_copy(x)
    if source.size == 0:
        return out
    plan = _plans.select(IndexAddPlan, IndexAddDescriptor(x.shape, a, idx.shape[0], x.dtype,
                                                          idx.dtype))
    _plans.run_checked(plan, lambda st: IndexAddArgs(out, idx, source, alpha, st), x.device,
                       "index_add")
    return out


def masked_fill(x: Array, mask: Array, value) -> Array:
    """torch.masked_fill (functional): ``where(mask, value, x)`` with ``mask`` (bool) broadcast
    to x's shape; ``value`` a scalar or 0-D array converted to x's dtype."""
    from ._searching_functions import where

    _plans.check_array(x, "x")
    _plans.check_array(mask, "mask")
    if mask.dtype != _dt.bool:
        raise TypeError(f"masked_fill: mask must be bool, got {mask.dtype.name}")
    if isinstance(value, Array):
        from ._data_type_functions import astype

        value = astype(value, x.dtype)
    from ._elementwise_functions import convert_scalar, is_scalar
    from ._manipulation_functions import broadcast_to

    if is_scalar(value):
        value = convert_scalar(value, x.dtype)
    return where(broadcast_to(mask, x.shape), value, x)  # value has x's dtype: so has the result


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
        from ._statistical_functions import max as amax

        c = builtins.int(amax(x)) + 1 if x.size else 0
    if c < 0:
        raise ValueError(f"one_hot: num_classes must be >= 0 or -1, got {c}")
    out = Array._empty(x.shape + (c,), dt, x.device)
    if out.size == 0:
        return out
    plan = _plans.select(OneHotPlan, OneHotDescriptor(x.shape, c, x.dtype, dt))
    _plans.run_checked(plan, lambda st: OneHotArgs(x, out, st), x.device, "one_hot")
    return out


# ------------------------------------------------------------------------------ embeddings
def embedding(indices: Array, weight: Array, padding_idx=None) -> Array:
    """torch.nn.functional.embedding: ``weight[indices]`` of shape ``indices.shape + (dim,)``
    (EmbeddingPlan; ``padding_idx`` only matters for the backward)."""
    from baracuda_dsl.ops.segment.embedding import EmbeddingArgs, EmbeddingDescriptor, EmbeddingPlan

    from ._manipulation_functions import reshape

    _plans.check_array(weight, "weight")
    if weight.ndim != 2:
        raise ValueError(f"embedding: weight must be 2-D, got shape {weight.shape}")
    ids = _flat_index(indices, "indices")
    v, d = weight.shape
    out = Array._empty((ids.shape[0], d), weight.dtype, weight.device)
    if out.size:
        plan = _plans.select(EmbeddingPlan, EmbeddingDescriptor(v, d, ids.shape[0], weight.dtype,
                                                                ids.dtype, padding_idx))
        _plans.run_checked(plan, lambda st: EmbeddingArgs(weight, ids, out, st), weight.device,
                           "embedding")
    return reshape(out, indices.shape + (d,))


def embedding_bag(indices: Array, weight: Array, offsets: Array, mode: str = "mean",
                  per_sample_weights: Array = None, padding_idx=None,
                  include_last_offset: builtins.bool = False) -> Array:
    """torch.nn.functional.embedding_bag (1-D ``indices`` + ``offsets`` form): bag b reduces
    (``sum`` / ``mean`` / ``max``) the rows ``weight[indices[k]]`` for k in
    ``[offsets[b], offsets[b+1])`` (optionally times ``per_sample_weights[k]``, sum only);
    padding entries are skipped; empty bags give zeros (EmbeddingBagPlan)."""
    from baracuda_dsl.ops.segment.embedding import (EmbeddingBagArgs, EmbeddingBagDescriptor,
                                                    EmbeddingBagPlan)

    _plans.check_array(weight, "weight")
    if weight.ndim != 2 or indices.ndim != 1 or offsets.ndim != 1:
        raise ValueError("embedding_bag: needs 2-D weight, 1-D indices and 1-D offsets")
    ids = _flat_index(indices, "indices")
    offs = _flat_index(offsets, "offsets")
    nb = offs.shape[0] - 1 if include_last_offset else offs.shape[0]
    v, d = weight.shape
    out = Array._empty((max(nb, 0), d), weight.dtype, weight.device)
    if out.size == 0:
        return out
    plan = _plans.select(EmbeddingBagPlan, EmbeddingBagDescriptor(
        v, d, ids.shape[0], nb, mode, weight.dtype, ids.dtype, padding_idx,
        per_sample_weights is not None, include_last_offset))
    _plans.run_checked(plan, lambda st: EmbeddingBagArgs(weight, ids, offs, out,
                                                         per_sample_weights, st),
                       weight.device, "embedding_bag")
    return out


# -------------------------------------------------------------------------------- segments
def _segment(op: str, data: Array, segment_ids: Array, num_segments, indices_are_sorted):
    from baracuda_dsl.ops.segment.segment import SegmentArgs, SegmentDescriptor, SegmentPlan

    _plans.check_array(data, "data")
    if data.ndim == 0:
        raise ValueError(f"segment_{op}: data must have at least one dimension")
    ids = _flat_index(segment_ids, "segment_ids")
    if ids.shape[0] != data.shape[0]:
        raise ValueError(f"segment_{op}: {ids.shape[0]} ids for {data.shape[0]} rows")
    if num_segments is None:
        from ._statistical_functions import max as amax

        num_segments = builtins.int(amax(ids)) + 1 if ids.size else 0
    ns = operator.index(num_segments)
    out = Array._empty((ns,) + data.shape[1:], data.dtype, data.device)
    if out.size == 0:
        return out
    plan = _plans.select(SegmentPlan, SegmentDescriptor(data.shape, ns, op, data.dtype,
                                                        ids.dtype,
                                                        builtins.bool(indices_are_sorted)))
    _plans.run_checked(plan, lambda st: SegmentArgs(data, ids, out, st), data.device,
                       f"segment_{op}")
    return out


def segment_sum(data, segment_ids, num_segments=None, *, indices_are_sorted=False):
    """jax.ops.segment_sum: ``out[s] = Σ data[k]`` over rows with ``segment_ids[k] == s``
    (deterministic; empty segments 0; ids outside [0, num_segments) raise IndexError)."""
    return _segment("sum", data, segment_ids, num_segments, indices_are_sorted)


def segment_mean(data, segment_ids, num_segments=None, *, indices_are_sorted=False):
    """Segment mean (empty segments 0)."""
    return _segment("mean", data, segment_ids, num_segments, indices_are_sorted)


def segment_max(data, segment_ids, num_segments=None, *, indices_are_sorted=False):
    """jax.ops.segment_max (empty segments: the dtype's lowest value / -inf)."""
    return _segment("max", data, segment_ids, num_segments, indices_are_sorted)


def segment_min(data, segment_ids, num_segments=None, *, indices_are_sorted=False):
    """jax.ops.segment_min (empty segments: the dtype's highest value / +inf)."""
    return _segment("min", data, segment_ids, num_segments, indices_are_sorted)


def segment_prod(data, segment_ids, num_segments=None, *, indices_are_sorted=False):
    """jax.ops.segment_prod (empty segments 1)."""
    return _segment("prod", data, segment_ids, num_segments, indices_are_sorted)


__all__ = ["index_select", "gather", "scatter", "scatter_add", "index_add", "masked_fill",
           "one_hot", "embedding", "embedding_bag", "segment_sum", "segment_mean", "segment_max",
           "segment_min", "segment_prod"]
