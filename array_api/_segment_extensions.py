"""Segment and embedding extensions (torch / jax semantics, not in the standard): ``embedding
embedding_bag`` (``baracuda_dsl.ops.segment.embedding``), ``segment_sum segment_mean segment_max
segment_min segment_prod`` and ``index_add`` (``baracuda_dsl.ops.segment.segment``).  Every
function returns a new array.  Integer indices of any integer dtype (int32 / int64 are read
directly); negative indices wrap once; out-of-range indices raise IndexError after the launch (see
``_plans``).  Sums over repeated indices are deterministic (sort-based, fixed order)."""

from __future__ import annotations

import builtins
import operator

from . import _copy
from . import _plans
from ._array_object import Array
from ._data_type_functions import astype
from ._indexing_functions import flat_index
from ._manipulation_functions import normalize_axis, reshape
from ._statistical_functions import max as amax

__all__ = ["embedding", "embedding_bag", "segment_sum", "segment_mean", "segment_max",
           "segment_min", "segment_prod", "index_add"]


def embedding(indices: Array, weight: Array, padding_idx=None) -> Array:
    """torch.nn.functional.embedding: ``weight[indices]`` of shape ``indices.shape + (dim,)``
    (EmbeddingPlan; ``padding_idx`` only matters for the backward)."""
    from baracuda_dsl.ops.segment.embedding import EmbeddingArgs, EmbeddingDescriptor, EmbeddingPlan

    _plans.check_array(weight, "weight")
    if weight.ndim != 2:
        raise ValueError(f"embedding: weight must be 2-D, got shape {weight.shape}")
    ids = flat_index(indices, "indices")
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
    ids = flat_index(indices, "indices")
    offs = flat_index(offsets, "offsets")
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
    ids = flat_index(segment_ids, "segment_ids")
    if ids.shape[0] != data.shape[0]:
        raise ValueError(f"segment_{op}: {ids.shape[0]} ids for {data.shape[0]} rows")
    if num_segments is None:
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



def index_add(x: Array, axis: int, index: Array, source: Array, *, alpha=1) -> Array:
    """torch.index_add (functional): ``out[.., index[i], ..] += alpha · source[.., i, ..]`` on a
    copy of ``x``; deterministic (sort-based, fixed summation order; IndexAddPlan)."""
    from baracuda_dsl.ops.segment.segment import IndexAddArgs, IndexAddDescriptor, IndexAddPlan

    _plans.check_array(x, "x")
    _plans.check_array(source, "source")
    a = normalize_axis(axis, x.ndim)
    idx = flat_index(index, "index")
    if source.dtype != x.dtype:
        source = astype(source, x.dtype)
    want = x.shape[:a] + (idx.shape[0],) + x.shape[a + 1:]
    if source.shape != want:
        raise ValueError(f"index_add: source shape {source.shape} != {want}")
    out = _copy.contiguous_copy(x)
    if source.size == 0:
        return out
    plan = _plans.select(IndexAddPlan, IndexAddDescriptor(x.shape, a, idx.shape[0], x.dtype,
                                                          idx.dtype))
    _plans.run_checked(plan, lambda st: IndexAddArgs(out, idx, source, alpha, st), x.device,
                       "index_add")
    return out
