"""Segment reductions (jax.ops.segment_* / torch segment_reduce / torch_scatter), their
backward, and index_add — all deterministic (sort-based, fixed summation order, no atomics).

``SegmentPlan``: for data of shape (N, *rest) and ids (N,) in [0, num_segments),

    out[s, ...] = ⊕_{k : ids[k] = s} data[k, ...]        ⊕ = sum | mean | max | min | prod

rows folded in increasing k (bit-identical reruns).  Empty segments: 0 (sum, mean), 1 (prod),
for max / min the lowest / highest value of the dtype (−inf / +inf for floats, like
jax.ops.segment_max; int32 / int64 limits).  max / min propagate NaN.  f32 f16 bf16 f64
(halves accumulate in float32, f64 in float64) and int32 / int64 (int64 accumulation, the
result wrapped to the output dtype; mean: floats only).  ``argmax`` (optional Args field, int64,
out's shape): for max / min the data row of the first extreme (−1 for an empty segment).

Index policy: an id in [−num_segments, 0) is wrapped once (+num_segments); any other bad id is
skipped (the row contributes nothing) and ``status[0]`` (optional int32 device word) is set
to 1.  ``sorted=False``: ids → int32 keys (bad → num_segments) → stable radix sort (SortPlan:
sorted keys + permutation) → segment offsets (a binary search per segment) → the reduction over
the permutation.  ``sorted=True`` skips the sort: the offsets come from the ids as given; ids that are
not non-decreasing (bad ids counting as num_segments, i.e. allowed only at the end) give an
unspecified result (each segment receives a subset of its rows) but never an out-of-bounds access
— every offset is clamped and each row is checked against its segment.

``SegmentBackwardPlan``: dx given dy (out's shape): sum → dx[k] = dy[ids[k]]; mean → dy[ids[k]]
/ count; max / min → dy[s] flows only to the first-occurrence extreme row of each (segment,
column) (the Args' ``argmax`` from the forward, else recomputed; torch segment_reduce splits
ties evenly and jax gives every tied row the gradient — here the first row gets all); rows
with a bad id get 0.  prod → exact and zero-safe like torch (prod / scatter_reduce backward):
with z_s the number of zeros and p_s the product of the non-zero rows of segment s (per
column), dx[k] = dy[s]·p_s / x[k] if z_s = 0; dy[s]·p_s if z_s = 1 and x[k] = 0; else 0.  It is
a composite of existing kernels (no prod-specific kernel): mask = (x == 0); a = where(mask, 1,
x) and b = mask in the accumulator dtype; z + 1 = segment sum of b, plus 1; q = dy · (segment
prod of a); per row (the sum backward's gather, 0 for a bad id) g_z and g_q; dx = where(g_z
== b + 1, g_q / a, 0) (the test is false for bad-id rows, whose gathered z + 1 is 0).  f16 /
bf16 are computed in float32 (one rounding at the end), f64 in float64.

``IndexAddPlan``: out[o, index[i], r] += alpha · src[o, i, r] (torch.index_add_) along ``axis``;
sort-based segment sum of src rows accumulated into out (each out row read and written once).

Workspace (``workspace_size()``): int32 keys (and sorted keys), int64 permutation, int64
offsets (num_segments + 1), the sort's scratch and, for the backward of max / min without a
saved ``argmax``, an out-sized temporary and an int64 argmax; for the prod backward a bool
data-sized mask, three data-sized and two (halves: three) out-sized accumulator-dtype
temporaries (see ``SegmentBackwardPlan``).  Segment balance: one thread group
per segment, so a single huge segment runs serially (correct but slow).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from ...dtypes import DType, bool_ as bool_dt, dtype as as_dtype, float32, int32, int64
from ...errors import InvalidProblemError, UnsupportedError
from ...plan import check_dtype, check_finite, collapse_dims, norm_axis, prod, view_arg
from ...tensor import TensorView, check_shape
from ...vocabulary import OpCategory
from .pipeline import (MAX_ROWS, MAX_SEGMENTS, SegmentPipeline, acc_dtype, check_count,
                       check_flag, check_out, choose_tps, dense_argmax_view, reduce_knobs,
                       rows_cols, segment_sku, status_view)
from .specs import segment as spec

_DTYPES = tuple(as_dtype(s) for s in spec.DTYPES)
_FLOATS = tuple(as_dtype(s) for s in spec.FLOAT_DTYPES)


# ====================================================================================== forward
@dataclass(frozen=True)
class SegmentDescriptor:
    """data of ``shape`` = (N, *rest) reduced along axis 0 into ``num_segments`` segments by ids
    (N,) of dtype ``index``; ``op`` sum / mean / max / min / prod; ``sorted``: the ids are
    non-decreasing (no sort pass)."""

    shape: Tuple[int, ...]
    num_segments: int
    op: str = "sum"
    dtype: DType = float32
    index: DType = int64
    sorted: bool = False

    def __post_init__(self):
        shape = check_shape(tuple(self.shape), "Segment")
        if len(shape) < 1:
            raise InvalidProblemError("Segment: data needs rank >= 1 (rows along axis 0)")
        if shape[0] > MAX_ROWS:
            raise UnsupportedError(f"Segment: {shape[0]} rows exceed the wired maximum {MAX_ROWS}")
        object.__setattr__(self, "shape", shape)
        check_count(self.num_segments, "num_segments", "Segment", MAX_SEGMENTS)
        if self.op not in spec.OPS:
            raise UnsupportedError(f"Segment: op {self.op!r} is not wired; wired: "
                                   f"{', '.join(spec.OPS)}")
        allowed = _FLOATS if self.op == "mean" else _DTYPES
        object.__setattr__(self, "dtype", check_dtype(self.dtype, allowed, f"Segment {self.op}"))
        object.__setattr__(self, "index", check_dtype(self.index, (int32, int64),
                                                      "Segment index"))
        check_flag(self.sorted, "sorted", "Segment")

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return (self.num_segments,) + self.shape[1:]


@dataclass
class SegmentArgs:
    """data (N, *rest) any strides (trailing dims must merge into one strided dim); ids (N,)
    any stride; out (num_segments, *rest); argmax: optional int64 out-shaped, dense (max / min
    only); status: optional int32 word set to 1 on a bad id."""

    data: object
    ids: object
    out: object
    status: object = None
    argmax: object = None


class SegmentPlan(SegmentPipeline):
    """out[s] = op over rows k with ids[k] = s (see the module doc)."""

    descriptor = SegmentDescriptor

    def _plan(self) -> None:
        d = self.desc
        self._pipeline_slots(d.shape[0], d.num_segments, not d.sorted)
        self._finish_workspace()
        self._sku = segment_sku(self, OpCategory.SEGMENT, f"segment_{d.op}", spec.SEGMENT_REDUCE,
                                reduce_knobs(d.op, d.dtype, prod(d.shape[1:])))

    def is_empty(self) -> bool:
        return prod(self.desc.out_shape) == 0

    def _ids(self, args):
        """The ids view and its device."""
        ids = view_arg(args.ids, "ids", shape=(self.desc.shape[0],), dtype=self.desc.index)
        return ids, ids.device

    def _bind(self, args):
        d = self.desc
        ids, dev = self._ids(args)
        data = view_arg(args.data, "data", shape=d.shape, dtype=d.dtype, device=dev)
        out = view_arg(args.out, "out", shape=d.out_shape, dtype=d.dtype, device=dev)
        check_out(out, "out")
        arg = dense_argmax_view(args.argmax, d.out_shape, dev, "argmax", d.op in ("max", "min"),
                                "only for op max / min")
        st = status_view(args.status, dev)
        rows_cols(data, "data")
        rows_cols(out, "out")
        return data, ids, out, arg, st

    def _launch(self, bound, st: int, ws) -> None:
        data, ids, out, arg, status = bound
        self._forward(data, ids, out, arg, status, ws, st)

    def _forward(self, data, ids, out, arg, status, ws, st, keys=None):
        """Run the pipeline; returns (keys, offsets) views (for the backward)."""
        d = self.desc
        n, S = d.shape[0], d.num_segments
        if keys is None:
            keys = self._run_keys(ids, n, S, status, ws, st)
        skeys, pptr, flags = self._run_sorted(keys, n, ws, st)
        off = self._run_offsets(skeys, n, S, ws, st)
        srs, scs = rows_cols(data, "data")
        ors, ocs = rows_cols(out, "out")
        if arg is not None:
            flags |= spec.F_ARGOUT
        self._run_reduce(d.op, d.dtype, "i64", src=data.ptr, srs=srs, scs=scs, sbs=0,
                         out=out.ptr, ors=ors, ocs=ocs, obs=0, C=prod(d.shape[1:]), nseg=S,
                         nofs=S + 1, n=n, m=n, B=1, off=off.ptr, os=1, flags=flags, st=st,
                         dev=ids.device, perm=pptr, ps=1, keys=skeys.ptr,
                         arg=arg.ptr if arg is not None else 0)
        return keys, off


# ===================================================================================== backward
@dataclass
class SegmentBackwardArgs:
    """data, ids, out: the forward's operands (out is optional and only shape-checked; data is
    needed by prod and by max / min, which recompute the argmax unless the forward's ``argmax``
    is given);
    dy: out's shape; dx: data's shape (any strides, written fully); status: optional bad-id
    word."""

    data: object
    ids: object
    out: object
    dy: object
    dx: object
    argmax: object = None
    status: object = None


class SegmentBackwardPlan(SegmentPlan):
    """dx of a SegmentPlan forward (see the module doc): sum / mean / max / min through the
    ``segment_bw`` gather kernel; prod as a composite (float dtypes only):

        mask = (x == 0)                              elementwise equal → bool
        a    = where(mask, 1, x)                     (x cast to the accumulator dtype first)
        b    = mask as the accumulator dtype          elementwise cast
        z1   = segment_sum(b) + 1,  q = dy · segment_prod(a)     (segment_reduce, per segment)
        dx   = where(gather(z1) == b + 1, gather(q) / a, 0)     (segment_bw sum gather per row)

    i.e. dy·p/x without zeros in the (segment, column), dy·p (p: product of the non-zero rows)
    for the single zero, 0 elsewhere and for rows with a bad id.  Workspace (prod): the id
    pipeline (keys, sort, offsets) + a bool mask, three data-sized and two (f16 / bf16: three)
    out-sized accumulator-dtype temporaries.  Precision: float32 for f16 / bf16 / f32, float64
    for f64; deterministic."""

    def _plan(self) -> None:
        d = self.desc
        if d.dtype not in _FLOATS:
            raise UnsupportedError(f"SegmentBackward: dtype {d.dtype.name} is not wired; "
                                   f"wired: float32, float16, bfloat16, float64")
        n, S = d.shape[0], d.num_segments
        ext = d.op in ("max", "min")
        if d.op != "sum":
            self._pipeline_slots(n, S, not d.sorted)
        else:
            self._slot("keys", n * 4)
            self._sortp = None
        if ext:
            self._slot("tout", prod(d.out_shape) * d.dtype.itemsize)
            self._slot("targ", prod(d.out_shape) * 8)
        ct = acc_dtype(d.dtype)
        if d.op == "prod":
            E, F = prod(d.shape), prod(d.out_shape)
            self._slot("pmask", E)
            for name in ("pa", "pb", "pg"):
                self._slot(name, E * ct.itemsize)
            self._slot("pz", F * ct.itemsize)
            self._slot("pp", F * ct.itemsize)
            if d.dtype is not ct:
                self._slot("pq", F * ct.itemsize)
        self._finish_workspace()
        if d.op == "prod":   # the per-row gather (accumulator dtype) of the composite
            knobs = spec.SegmentBwKnobs(op="sum", dtype=ct.short)
        else:
            knobs = spec.SegmentBwKnobs(op="arg" if ext else d.op, dtype=d.dtype.short)
        self._sku = segment_sku(self, OpCategory.SEGMENT, f"segment_{d.op}_bw", spec.SEGMENT_BW,
                                knobs)

    def is_empty(self) -> bool:
        return prod(self.desc.shape) == 0

    def _bind(self, args):
        d = self.desc
        ids, dev = self._ids(args)
        data = view_arg(args.data, "data", shape=d.shape, dtype=d.dtype, device=dev,
                        optional=d.op not in ("max", "min", "prod"))
        view_arg(args.out, "out", shape=d.out_shape, dtype=d.dtype, device=dev, optional=True)
        dy = view_arg(args.dy, "dy", shape=d.out_shape, dtype=d.dtype, device=dev)
        dx = view_arg(args.dx, "dx", shape=d.shape, dtype=d.dtype, device=dev)
        check_out(dx, "dx")
        arg = dense_argmax_view(args.argmax, d.out_shape, dev)
        st = status_view(args.status, dev)
        rows_cols(dy, "dy")
        rows_cols(dx, "dx")
        if data is not None:
            rows_cols(data, "data")
        return data, ids, dy, dx, arg, st

    def _launch(self, bound, st: int, ws) -> None:
        data, ids, dy, dx, arg, status = bound
        d = self.desc
        n, S = d.shape[0], d.num_segments
        dev = ids.device
        keys = self._run_keys(ids, n, S, status, ws, st)
        if d.op == "prod":
            self._run_prod(data, dy, dx, keys, ws, st)
            return
        off_ptr, arg_ptr = 0, 0
        if d.op in ("max", "min"):
            if arg is None:
                tout = self._tmp(ws, "tout", d.out_shape, d.dtype, dev)
                targ = self._tmp(ws, "targ", d.out_shape, int64, dev)
                self._forward(data, ids, tout, targ, None, ws, st, keys=keys)
                arg = targ
            arg_ptr = arg.ptr
            bop = "arg"
        elif d.op == "mean":
            skeys, _, _ = self._run_sorted(keys, n, ws, st)
            off_ptr = self._run_offsets(skeys, n, S, ws, st).ptr
            bop = "mean"
        else:
            bop = "sum"
        dyrs, dycs = rows_cols(dy, "dy")
        dxrs, dxcs = rows_cols(dx, "dx")
        self._run_bw(bop, d.dtype, dy=dy.ptr, keys=keys.ptr, off=off_ptr, arg=arg_ptr, dx=dx.ptr,
                     n=n, nseg=S, C=prod(d.shape[1:]), dyrs=dyrs, dycs=dycs, dybs=0, dxrs=dxrs,
                     dxcs=dxcs, dxbs=0, B=1, st=st, dev=dev)

    def _run_prod(self, x, dy, dx, keys, ws, st) -> None:
        """The prod backward composite (see the class doc); ``keys`` from _run_keys."""
        d = self.desc
        n, S = d.shape[0], d.num_segments
        shp, oshp, C = d.shape, d.out_shape, prod(d.shape[1:])
        dev, dt = keys.device, d.dtype
        ct = acc_dtype(dt)
        skeys, pptr, flags = self._run_sorted(keys, n, ws, st)
        off = self._run_offsets(skeys, n, S, ws, st)
        mask = self._tmp(ws, "pmask", shp, bool_dt, dev)
        a = self._tmp(ws, "pa", shp, ct, dev)
        b = self._tmp(ws, "pb", shp, ct, dev)
        g = self._tmp(ws, "pg", shp, ct, dev)
        pz = self._tmp(ws, "pz", oshp, ct, dev)
        pp = self._tmp(ws, "pp", oshp, ct, dev)
        self._ew("equal", [x, 0.0], mask, dt, st)
        if dt is ct:
            self._ew("where", [mask, 1.0, x], a, ct, st)
        else:
            self._ew("cast", [x], a, dt, st, out_dtype=ct)
            self._ew("where", [mask, 1.0, a], a, ct, st)
        self._ew("cast", [mask], b, bool_dt, st, out_dtype=ct)
        red = dict(srs=C, scs=1, sbs=0, ors=C, ocs=1, obs=0, C=C, nseg=S, nofs=S + 1, n=n, m=n,
                   B=1, off=off.ptr, os=1, flags=flags, st=st, dev=dev, perm=pptr, ps=1,
                   keys=skeys.ptr)
        self._run_reduce("sum", ct, "i64", src=b.ptr, out=pz.ptr, **red)
        self._run_reduce("prod", ct, "i64", src=a.ptr, out=pp.ptr, **red)
        self._ew("add", [pz, 1.0], pz, ct, st)             # z + 1 (a gathered 0: bad id)
        if dt is ct:
            self._ew("multiply", [pp, dy], pp, ct, st)
        else:
            q = self._tmp(ws, "pq", oshp, ct, dev)
            self._ew("cast", [dy], q, dt, st, out_dtype=ct)
            self._ew("multiply", [pp, q], pp, ct, st)
        self._ew("add", [b, 1.0], b, ct, st)
        gat = dict(keys=keys.ptr, off=0, arg=0, n=n, nseg=S, C=C, dyrs=C, dycs=1, dybs=0,
                   dxrs=C, dxcs=1, dxbs=0, B=1, st=st, dev=dev)
        self._run_bw("sum", ct, dy=pz.ptr, dx=g.ptr, **gat)
        self._ew("equal", [g, b], mask, ct, st)            # z == 0, or z == 1 and x == 0
        self._run_bw("sum", ct, dy=pp.ptr, dx=g.ptr, **gat)
        self._ew("divide", [g, a], g, ct, st)
        if dt is ct:
            self._ew("where", [mask, g, 0.0], dx, ct, st)
        else:
            self._ew("where", [mask, g, 0.0], g, ct, st)
            self._ew("cast", [g], dx, ct, st, out_dtype=dt)


# ==================================================================================== index_add
@dataclass(frozen=True)
class IndexAddDescriptor:
    """out of ``shape`` gets ``alpha · src`` rows added along ``axis`` at ``n_index`` indices
    (src: ``shape`` with ``shape[axis]`` replaced by n_index); ``deterministic`` (True: the
    sort-based path; False is accepted and currently runs the same deterministic kernels)."""

    shape: Tuple[int, ...]
    axis: int
    n_index: int
    dtype: DType = float32
    index: DType = int64
    deterministic: bool = True

    def __post_init__(self):
        shape = check_shape(tuple(self.shape), "IndexAdd")
        if not shape:
            shape = (1,)
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "axis", norm_axis(self.axis, len(shape), "IndexAdd"))
        check_count(self.n_index, "n_index", "IndexAdd", MAX_ROWS)
        if shape[self.axis] > MAX_SEGMENTS:
            raise UnsupportedError("IndexAdd: the indexed dim is too long")
        object.__setattr__(self, "dtype", check_dtype(self.dtype, _DTYPES, "IndexAdd"))
        object.__setattr__(self, "index", check_dtype(self.index, (int32, int64),
                                                      "IndexAdd index"))
        check_flag(self.deterministic, "deterministic", "IndexAdd")

    @property
    def src_shape(self) -> Tuple[int, ...]:
        s = list(self.shape)
        s[self.axis] = self.n_index
        return tuple(s)


@dataclass
class IndexAddArgs:
    """out (in/out, ``shape``), index (n_index,), src (src_shape), alpha (Python number; an int
    for integer dtypes), status: optional bad-index word (bad indices are skipped)."""

    out: object
    index: object
    src: object
    alpha: object = 1
    status: object = None


def _three(v: TensorView, axis: int, name: str) -> Tuple[int, int, int]:
    """(batch stride, row stride, column stride) of a view split around ``axis``."""
    def one(shp, st, what, default):
        cs = collapse_dims(shp, st)
        if len(cs[0]) > 1:
            raise UnsupportedError(f"{name}: the {what} dims {tuple(shp)} with strides "
                                   f"{tuple(st)} do not merge into one strided dim; wired: "
                                   f"mergeable (e.g. contiguous) layouts")
        return cs[1][0] if cs[0] else default

    shp, st = v.shape, v.strides
    return (one(shp[:axis], st[:axis], "outer", 0), st[axis],
            one(shp[axis + 1:], st[axis + 1:], "inner", 1))


class IndexAddPlan(SegmentPipeline):
    """out[o, index[i], r] += alpha · src[o, i, r] — deterministic (see the module doc)."""

    descriptor = IndexAddDescriptor

    def _plan(self) -> None:
        d = self.desc
        M = d.shape[d.axis]
        self._pipeline_slots(d.n_index, M, True)
        self._finish_workspace()
        self._O = prod(d.shape[:d.axis])
        self._R = prod(d.shape[d.axis + 1:])
        self._sku = segment_sku(self, OpCategory.SEGMENT, "index_add", spec.SEGMENT_REDUCE,
                                reduce_knobs("sum", d.dtype, self._R))

    def is_empty(self) -> bool:
        return prod(self.desc.src_shape) == 0 or prod(self.desc.shape) == 0

    def _bind(self, args):
        d = self.desc
        idx = view_arg(args.index, "index", shape=(d.n_index,), dtype=d.index)
        dev = idx.device
        out = view_arg(args.out, "out", shape=d.shape, dtype=d.dtype, device=dev)
        src = view_arg(args.src, "src", shape=d.src_shape, dtype=d.dtype, device=dev)
        check_out(out, "out")
        a = args.alpha
        if d.dtype in _FLOATS:
            if not isinstance(a, bool):
                check_finite(a, "alpha")
        elif isinstance(a, bool) or not isinstance(a, int):
            raise InvalidProblemError(f"IndexAdd: alpha must be an int for {d.dtype.name}, got "
                                      f"{a!r}")
        st = status_view(args.status, dev)
        return out, idx, src, st, _three(out, d.axis, "out"), _three(src, d.axis, "src"), a

    def _launch(self, bound, st: int, ws) -> None:
        out, idx, src, status, (obs, ors, ocs), (sbs, srs, scs), alpha = bound
        d = self.desc
        n, M = d.n_index, d.shape[d.axis]
        keys = self._run_keys(idx, n, M, status, ws, st)
        skeys, perm = self._run_sort(keys, n, ws, st)
        off = self._run_offsets(skeys, n, M, ws, st)
        self._run_reduce("sum", d.dtype, "i64", src=src.ptr, srs=srs, scs=scs, sbs=sbs,
                         out=out.ptr, ors=ors, ocs=ocs, obs=obs, C=self._R, nseg=M, nofs=M + 1,
                         n=n, m=n, B=self._O, off=off.ptr, os=1,
                         flags=spec.F_PERM | spec.F_KEYS | spec.F_ACC, st=st, dev=idx.device,
                         perm=perm.ptr, ps=1, keys=skeys.ptr, alpha=float(alpha))


__all__ = ["SegmentDescriptor", "SegmentArgs", "SegmentPlan", "SegmentBackwardArgs",
           "SegmentBackwardPlan", "IndexAddDescriptor", "IndexAddArgs", "IndexAddPlan",
           "acc_dtype", "choose_tps", "reduce_knobs", "check_out"]
