"""Embedding lookups and bags (torch.nn.functional.embedding / embedding_bag) and their weight
gradients — deterministic (sort-based, fixed summation order, no atomics).

``EmbeddingPlan``: out[t] = weight[ids[t]] for the ``n_tokens`` ids (the caller flattens ids of
any shape); an IndexSelectPlan along axis 0 (bad ids: zero row, status word 1).  padding_idx does
not change the forward (as in torch).

``EmbeddingBackwardPlan``: dweight[v] = Σ_{t : ids[t] = v} dy[t] for every v < num_embeddings
(dense; zero rows for unused ids, the padding_idx row stays zero), summed in increasing t
(float32 accumulation for halves, float64 for f64).  ids → int32 keys → stable radix sort →
per-row offsets → one segment-sum pass that writes every dweight row (no memset pass).
Bad ids (outside [−V, V) after one wrap) are skipped and reported in ``status``.

``EmbeddingBagPlan`` (the 1-D indices + offsets form): bag b covers positions
[offsets[b], offsets[b+1]) (the last bag ends at n_indices unless include_last_offset);
out[b] = sum / mean / max over its positions k of weight[indices[k]] (· per_sample_weights[k]
for sum).  padding_idx entries are excluded (mean divides by the non-padding count); an empty
bag gives 0 (also for max).  max writes ``max_indices`` (int64 (n_bags, dim): the weight row of
the first maximum, −1 for an empty bag) when given.  Offsets are not validated: each bag's range
is clamped into [0, n_indices] and a decreasing pair gives an empty bag.  Bad indices: skipped,
status word 1.

``EmbeddingBagBackwardPlan``: dweight[v] = Σ over positions k with indices[k] = v of
dy[bag(k)] · psw[k] (sum) or / count[bag(k)] (mean); max: dy[b, c] flows to max_indices[b, c]
(from the forward; a row counted once per bag).  Same sorted pipeline as the embedding backward
(plus a bag-map pass); deterministic.  Workspace: ``workspace_size()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ...dtypes import DType, dtype as as_dtype, float32, int32, int64
from ...errors import InvalidProblemError, UnsupportedError
from ...plan import Plan, check_dtype, view_arg
from ...vocabulary import OpCategory
from ..indexing.indexing import IndexSelectArgs, IndexSelectDescriptor, IndexSelectPlan
from .pipeline import (MAX_ROWS, MAX_SEGMENTS, SegmentPipeline, acc_dtype, check_count,
                       check_flag, check_out, dense_argmax_view, reduce_knobs, rows_cols,
                       segment_sku, status_view)
from .specs import segment as spec

_FLOATS = tuple(as_dtype(s) for s in spec.FLOAT_DTYPES)


def _norm_pad(pad, V: int, what: str) -> Optional[int]:
    if pad is None:
        return None
    if isinstance(pad, bool) or not isinstance(pad, int) or not -V <= pad < V:
        raise InvalidProblemError(f"{what}: padding_idx must be None or an int in [{-V}, {V}), "
                                  f"got {pad!r}")
    return pad % V


def _reduce_sku(plan, op: str, reduce: str, index: str):
    """The segment_reduce SKU of ``plan`` (``desc.dtype`` / ``desc.index`` / ``desc.dim``) for
    the ``reduce`` op over ``index``-typed keys."""
    d = plan.desc
    return segment_sku(plan, OpCategory.EMBEDDING, op, spec.SEGMENT_REDUCE,
                       reduce_knobs(reduce, d.dtype, d.dim, index))


def _dweight_view(d, args, dev: int):
    """The (num_embeddings, dim) ``dweight`` output of a backward plan's Args."""
    dw = view_arg(args.dweight, "dweight", shape=(d.num_embeddings, d.dim), dtype=d.dtype,
                  device=dev)
    check_out(dw, "dweight")
    return dw


class _EmbeddingBase(SegmentPipeline):
    """Shared helpers of the embedding backward / bag plans."""

    def _kernel_of_bag(self, index: str, acc: str, dev: int):
        """``kind -> loaded segment_bag kernel`` (``count`` / ``map``) for these dtypes."""
        return lambda kind: self._kernel(spec.SEGMENT_BAG, self._knob(
            spec.SegmentBagKnobs, kind=kind, index=index, acc=acc), dev)

    def _stage_weights(self, p, tmp, acc: DType, st: int) -> None:
        """Copy (or cast) the per-sample weights ``p`` into the ``acc``-typed ``tmp``."""
        if acc == self.desc.dtype:
            self._ew("copy", [p], tmp, acc, st)
        else:
            self._ew("cast", [p], tmp, self.desc.dtype, st, out_dtype=acc)


# ===================================================================================== embedding
@dataclass(frozen=True)
class EmbeddingDescriptor:
    """A (num_embeddings, dim) weight looked up by ``n_tokens`` ids of dtype ``index``;
    ``padding_idx`` (None or in [−V, V)) only matters for the backward."""

    num_embeddings: int
    dim: int
    n_tokens: int
    dtype: DType = float32
    index: DType = int64
    padding_idx: Optional[int] = None

    def __post_init__(self):
        check_count(self.num_embeddings, "num_embeddings", "Embedding", MAX_SEGMENTS)
        check_count(self.dim, "dim", "Embedding")
        check_count(self.n_tokens, "n_tokens", "Embedding", MAX_ROWS)
        object.__setattr__(self, "dtype", check_dtype(self.dtype, _FLOATS, "Embedding"))
        object.__setattr__(self, "index", check_dtype(self.index, (int32, int64),
                                                      "Embedding index"))
        object.__setattr__(self, "padding_idx",
                           _norm_pad(self.padding_idx, self.num_embeddings, "Embedding"))


@dataclass
class EmbeddingArgs:
    """weight (V, dim), ids (n_tokens,), out (n_tokens, dim); status: optional int32 word."""

    weight: object
    ids: object
    out: object
    status: object = None


class EmbeddingPlan(Plan):
    """out[t] = weight[ids[t]]: an IndexSelectPlan along axis 0 of the weight (bad ids → zero
    row, status 1); no workspace; deterministic."""

    descriptor = EmbeddingDescriptor

    def _plan(self) -> None:
        d = self.desc
        self._inner = IndexSelectPlan.select(IndexSelectDescriptor(
            (d.num_embeddings, d.dim), 0, d.n_tokens, d.dtype, d.index), self.pref)
        self._sku = self._inner.sku()

    def is_empty(self) -> bool:
        return self._inner.is_empty()

    def _bind(self, args):
        return self._inner._bind(IndexSelectArgs(args.weight, args.ids, args.out, args.status))

    def _launch(self, bound, stream: int, ws) -> None:
        self._inner._launch(bound, stream, ws)


@dataclass
class EmbeddingBackwardArgs:
    """dy (n_tokens, dim), ids (n_tokens,), dweight (V, dim) written densely; status optional."""

    dy: object
    ids: object
    dweight: object
    status: object = None


class EmbeddingBackwardPlan(_EmbeddingBase):
    """dweight = dense Σ of dy rows per id (see the module doc)."""

    descriptor = EmbeddingDescriptor

    def _plan(self) -> None:
        d = self.desc
        self._pipeline_slots(d.n_tokens, d.num_embeddings, True)
        self._finish_workspace()
        self._sku = _reduce_sku(self, "embedding_bw", "sum", "i64")

    def is_empty(self) -> bool:
        return self.desc.num_embeddings * self.desc.dim == 0

    def _bind(self, args):
        d = self.desc
        ids = view_arg(args.ids, "ids", shape=(d.n_tokens,), dtype=d.index)
        dev = ids.device
        dy = view_arg(args.dy, "dy", shape=(d.n_tokens, d.dim), dtype=d.dtype, device=dev)
        dw = _dweight_view(d, args, dev)
        return dy, ids, dw, status_view(args.status, dev)

    def _launch(self, bound, st: int, ws) -> None:
        dy, ids, dw, status = bound
        d = self.desc
        n, V = d.n_tokens, d.num_embeddings
        keys = self._run_keys(ids, n, V, status, ws, st)
        skeys, perm = self._run_sort(keys, n, ws, st)
        off = self._run_offsets(skeys, n, V, ws, st)
        flags = spec.F_PERM | spec.F_KEYS
        if d.padding_idx is not None:
            flags |= spec.F_PAD_SEG
        self._run_reduce("sum", d.dtype, "i64", src=dy.ptr, srs=dy.strides[0],
                         scs=dy.strides[1], sbs=0, out=dw.ptr, ors=dw.strides[0],
                         ocs=dw.strides[1], obs=0, C=d.dim, nseg=V, nofs=V + 1, n=n, m=n, B=1,
                         off=off.ptr, os=1, flags=flags, st=st, dev=ids.device, perm=perm.ptr,
                         ps=1, keys=skeys.ptr,
                         pad=-1 if d.padding_idx is None else d.padding_idx)


# ================================================================================= embedding_bag
_BAG_MODES = ("sum", "mean", "max")


@dataclass(frozen=True)
class EmbeddingBagDescriptor:
    """torch embedding_bag (1-D indices + offsets): a (num_embeddings, dim) weight, n_indices
    indices, n_bags bags (offsets has n_bags entries, n_bags + 1 with include_last_offset),
    mode sum / mean / max, padding_idx, per_sample_weights (sum only)."""

    num_embeddings: int
    dim: int
    n_indices: int
    n_bags: int
    mode: str = "sum"
    dtype: DType = float32
    index: DType = int64
    padding_idx: Optional[int] = None
    per_sample_weights: bool = False
    include_last_offset: bool = False

    def __post_init__(self):
        check_count(self.num_embeddings, "num_embeddings", "EmbeddingBag", MAX_SEGMENTS)
        check_count(self.dim, "dim", "EmbeddingBag")
        check_count(self.n_indices, "n_indices", "EmbeddingBag", MAX_ROWS)
        check_count(self.n_bags, "n_bags", "EmbeddingBag", MAX_SEGMENTS)
        if self.mode not in _BAG_MODES:
            raise UnsupportedError(f"EmbeddingBag: mode {self.mode!r} is not wired; wired: "
                                   f"{', '.join(_BAG_MODES)}")
        object.__setattr__(self, "dtype", check_dtype(self.dtype, _FLOATS, "EmbeddingBag"))
        object.__setattr__(self, "index", check_dtype(self.index, (int32, int64),
                                                      "EmbeddingBag index"))
        object.__setattr__(self, "padding_idx",
                           _norm_pad(self.padding_idx, self.num_embeddings, "EmbeddingBag"))
        check_flag(self.per_sample_weights, "per_sample_weights", "EmbeddingBag")
        check_flag(self.include_last_offset, "include_last_offset", "EmbeddingBag")
        if self.per_sample_weights and self.mode != "sum":
            raise InvalidProblemError("EmbeddingBag: per_sample_weights needs mode='sum' (torch)")

    @property
    def n_offsets(self) -> int:
        return self.n_bags + (1 if self.include_last_offset else 0)


@dataclass
class EmbeddingBagArgs:
    """weight (V, dim), indices (n_indices,), offsets (n_offsets,) of the index dtype, out
    (n_bags, dim); per_sample_weights (n_indices,) weight dtype when the descriptor says so;
    max_indices: optional int64 (n_bags, dim) dense (mode max); status optional."""

    weight: object
    indices: object
    offsets: object
    out: object
    per_sample_weights: object = None
    status: object = None
    max_indices: object = None


def _bag_common_views(d, indices, offsets, psw):
    """The (indices, offsets, per_sample_weights or None) views of an embedding_bag's Args."""
    idx = view_arg(indices, "indices", shape=(d.n_indices,), dtype=d.index)
    dev = idx.device
    ofs = view_arg(offsets, "offsets", shape=(d.n_offsets,), dtype=d.index, device=dev)
    p = view_arg(psw, "per_sample_weights", shape=(d.n_indices,), dtype=d.dtype, device=dev,
                 optional=True)
    if d.per_sample_weights and p is None:
        raise InvalidProblemError("EmbeddingBag: per_sample_weights=True needs the tensor")
    if p is not None and not d.per_sample_weights:
        raise InvalidProblemError("EmbeddingBag: per_sample_weights given but the descriptor "
                                  "says per_sample_weights=False")
    if d.n_offsets == 0 and d.n_bags:
        raise InvalidProblemError("EmbeddingBag: offsets is empty")
    return idx, ofs, p


class EmbeddingBagPlan(_EmbeddingBase):
    """out[b] = sum / mean / max of the bag's weight rows (see the module doc)."""

    descriptor = EmbeddingBagDescriptor

    def _plan(self) -> None:
        d = self.desc
        if d.per_sample_weights:
            self._slot("w", d.n_indices * acc_dtype(d.dtype).itemsize)
        self._sortp = None
        self._finish_workspace()
        self._sku = _reduce_sku(self, f"embedding_bag_{d.mode}", d.mode, d.index.short)

    def is_empty(self) -> bool:
        return self.desc.n_bags * self.desc.dim == 0

    def _bind(self, args):
        d = self.desc
        idx, ofs, p = _bag_common_views(d, args.indices, args.offsets, args.per_sample_weights)
        dev = idx.device
        w = view_arg(args.weight, "weight", shape=(d.num_embeddings, d.dim), dtype=d.dtype,
                     device=dev)
        out = view_arg(args.out, "out", shape=(d.n_bags, d.dim), dtype=d.dtype, device=dev)
        check_out(out, "out")
        mi = dense_argmax_view(args.max_indices, (d.n_bags, d.dim), dev, "max_indices",
                               d.mode == "max", "only for mode='max'")
        return w, idx, ofs, out, p, mi, status_view(args.status, dev)

    def _launch(self, bound, st: int, ws) -> None:
        w, idx, ofs, out, p, mi, status = bound
        d = self.desc
        dev = idx.device
        flags = spec.F_PERM | spec.F_WRAP
        if status is not None:
            flags |= spec.F_STATUS
        if d.padding_idx is not None:
            flags |= spec.F_PAD_ROW
        wptr = 0
        if p is not None:
            A = acc_dtype(d.dtype)
            tw = self._tmp(ws, "w", (d.n_indices,), A, dev)
            if d.n_indices:
                self._stage_weights(p, tw, A, st)
            wptr = tw.ptr
            flags |= spec.F_W
        if d.mode == "max":
            flags |= spec.F_ZERO_EMPTY
            if mi is not None:
                flags |= spec.F_ARGOUT
        self._run_reduce(d.mode, d.dtype, d.index.short, src=w.ptr, srs=w.strides[0],
                         scs=w.strides[1], sbs=0, out=out.ptr, ors=out.strides[0],
                         ocs=out.strides[1], obs=0, C=d.dim, nseg=d.n_bags, nofs=d.n_offsets,
                         n=d.n_indices, m=d.num_embeddings, B=1, off=ofs.ptr, os=ofs.strides[0],
                         flags=flags, st=st, dev=dev, perm=idx.ptr, ps=idx.strides[0], w=wptr,
                         wsd=1, arg=mi.ptr if mi is not None else 0,
                         status=status.ptr if status is not None else 0,
                         pad=-1 if d.padding_idx is None else d.padding_idx)


@dataclass
class EmbeddingBagBackwardArgs:
    """dy (n_bags, dim), indices, offsets, dweight (V, dim) written densely;
    per_sample_weights as in the forward; max_indices: the forward's (mode max, required);
    status optional."""

    dy: object
    indices: object
    offsets: object
    dweight: object
    per_sample_weights: object = None
    max_indices: object = None
    status: object = None


class EmbeddingBagBackwardPlan(_EmbeddingBase):
    """dweight of an embedding_bag (see the module doc): sorted, deterministic."""

    descriptor = EmbeddingBagDescriptor

    def _plan(self) -> None:
        d = self.desc
        n, V = d.n_indices, d.num_embeddings
        A = acc_dtype(d.dtype)
        self._pipeline_slots(n, V, True)
        self._slot("rows", n * 8)
        self._slot("w", n * A.itemsize)
        self._slot("psw", n * A.itemsize)
        self._slot("inv", d.n_bags * A.itemsize)
        self._finish_workspace()
        self._sku = _reduce_sku(self, f"embedding_bag_{d.mode}_bw", "sum", "i64")

    def is_empty(self) -> bool:
        return self.desc.num_embeddings * self.desc.dim == 0

    def _bind(self, args):
        d = self.desc
        idx, ofs, p = _bag_common_views(d, args.indices, args.offsets, args.per_sample_weights)
        dev = idx.device
        dy = view_arg(args.dy, "dy", shape=(d.n_bags, d.dim), dtype=d.dtype, device=dev)
        dw = _dweight_view(d, args, dev)
        mi = dense_argmax_view(args.max_indices, (d.n_bags, d.dim), dev, "max_indices")
        if d.mode == "max" and mi is None:
            raise InvalidProblemError("EmbeddingBagBackward: mode='max' needs max_indices "
                                      "from the forward")
        rows_cols(dy, "dy")
        return dy, idx, ofs, dw, p, mi, status_view(args.status, dev)

    def _launch(self, bound, st: int, ws) -> None:
        dy, idx, ofs, dw, p, mi, status = bound
        d = self.desc
        dev = idx.device
        n, V, B = d.n_indices, d.num_embeddings, d.n_bags
        A = acc_dtype(d.dtype)
        keys = self._run_keys(idx, n, V, status, ws, st)
        skeys, perm = self._run_sort(keys, n, ws, st)
        off = self._run_offsets(skeys, n, V, ws, st)
        rows = self._tmp(ws, "rows", (n,), int64, dev)
        wv = self._tmp(ws, "w", (n,), A, dev)
        inv = self._tmp(ws, "inv", (B,), A, dev)
        pad = -1 if d.padding_idx is None else d.padding_idx
        bflags = 0
        pswp = 0
        if p is not None and n:
            tp = self._tmp(ws, "psw", (n,), A, dev)
            self._stage_weights(p, tp, A, st)
            pswp = tp.ptr
            bflags |= 1
        bag = self._kernel_of_bag(d.index.short, A.short, dev)
        if d.mode == "mean" and B:
            bag("count").launch((-(-B // spec.PREP_THREADS), 1, 1),
                                [0, ofs.ptr, idx.ptr, 0, inv.ptr, 0, 0, n, d.n_offsets, B,
                                 ofs.strides[0], idx.strides[0], 0, pad, V, 0], st)
            bflags |= 2
        if n:
            bag("map").launch((-(-n // spec.PREP_THREADS), 1, 1),
                              [perm.ptr, ofs.ptr, idx.ptr, pswp, inv.ptr, rows.ptr, wv.ptr, n,
                               d.n_offsets, B, ofs.strides[0], idx.strides[0], 1, pad, V,
                               bflags], st)
        flags = spec.F_PERM | spec.F_KEYS
        if pad >= 0:
            flags |= spec.F_PAD_SEG
        if bflags:
            flags |= spec.F_W
        argp = 0
        if d.mode == "max":
            flags |= spec.F_ARGIN
            argp = mi.ptr
        dyrs, dycs = rows_cols(dy, "dy")
        self._run_reduce("sum", d.dtype, "i64", src=dy.ptr, srs=dyrs, scs=dycs, sbs=0,
                         out=dw.ptr, ors=dw.strides[0], ocs=dw.strides[1], obs=0, C=d.dim,
                         nseg=V, nofs=V + 1, n=n, m=B, B=1, off=off.ptr, os=1, flags=flags,
                         st=st, dev=dev, perm=rows.ptr, ps=1, keys=skeys.ptr, w=wv.ptr, wsd=1,
                         arg=argp, pad=pad)


__all__ = ["EmbeddingDescriptor", "EmbeddingArgs", "EmbeddingPlan", "EmbeddingBackwardArgs",
           "EmbeddingBackwardPlan", "EmbeddingBagDescriptor", "EmbeddingBagArgs",
           "EmbeddingBagPlan", "EmbeddingBagBackwardArgs", "EmbeddingBagBackwardPlan"]
