"""The sort-based segment pipeline shared by the segment reductions (segment.py) and the
embedding plans (embedding.py): descriptor checks, the accumulator / precision contract, the
``segment_reduce`` knob choice, Args view helpers and :class:`SegmentPipeline`, the plan base
that lays out the pipeline's workspace and launches its kernels:

    ids → int32 keys (segment_keys: wrapped once, bad → m, status word) → stable radix sort
    (SortPlan: sorted keys + int64 permutation) → int64 offsets (segment_offsets) →
    segment_reduce over the permutation / segment_bw gathers.

Accumulation: float32 for f16 / bf16 / f32, float64 for f64, int64 for int32 / int64; every
kernel sums in a fixed order (deterministic, bit-stable, no atomics).
"""

from __future__ import annotations

from typing import Optional, Tuple

from ...dtypes import DType, dtype as as_dtype, int32, int64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, collapse_dims, view_arg
from ...tensor import TensorView
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee
from ..reduction.composites import CompositePlan
from .specs import segment as spec

#: most data rows / indices a segment plan takes (Int32 row math with headroom)
MAX_ROWS = 2**31 - 1 - 8192
#: most segments (num_segments, num_embeddings, bags)
MAX_SEGMENTS = 2**31 - 2
_GRID_Z = 65535
_GRID_Y = 65535
_TARGET_CTAS = 16384   # column chunks spread over grid y only while the segments give fewer CTAs


def check_count(v, name: str, what: str, hi: Optional[int] = None) -> int:
    """``v`` if it is an int in [0, hi] (InvalidProblemError "``what``: ``name`` must be ...")."""
    if not isinstance(v, int) or isinstance(v, bool) or v < 0 or (hi is not None and v > hi):
        lim = f" and <= {hi}" if hi is not None else ""
        raise InvalidProblemError(f"{what}: {name} must be an int >= 0{lim}, got {v!r}")
    return v


def check_flag(v, name: str, what: str) -> bool:
    """``v`` if it is a bool (InvalidProblemError otherwise)."""
    if not isinstance(v, bool):
        raise InvalidProblemError(f"{what}: {name} must be a bool, got {v!r}")
    return v


def acc_dtype(dt: DType) -> DType:
    """The accumulator dtype: float32 for f16 / bf16 / f32, float64 for f64, int64 for ints."""
    return as_dtype(spec.acc_of(dt.short))


def segment_precision(dt: DType, deterministic: bool = True) -> PrecisionGuarantee:
    """Precision contract of a segment plan over ``dt``: math and accumulation in
    :func:`acc_dtype`, deterministic and bit-stable."""
    return PrecisionGuarantee(math_precision=acc_dtype(dt), accumulator=acc_dtype(dt),
                              bit_stable_on_same_hardware=deterministic,
                              deterministic=deterministic)


def segment_sku(plan: Plan, category: OpCategory, op: str, template, knobs) -> KernelSku:
    """The KernelSku of a segment / embedding plan (``plan.desc.dtype``, index dtype
    ``plan.desc.index``)."""
    d = plan.desc
    return KernelSku(category, op, d.dtype, plan._arch, BackendKind.CUTE_DSL,
                     segment_precision(d.dtype), aux_element=d.index, template=template.name,
                     knobs=freeze_knobs(knobs))


def choose_tps(C: int, vec: int) -> int:
    """Threads per segment for rows of C columns read ``vec`` at a time: the largest of
    1, 4, 16, 32, 128 not above the number of column vectors (no idle lanes but the tail)."""
    cv = -(-C // vec) if C else 1
    return max(t for t in spec.TPS if t <= max(cv, 1))


def reduce_knobs(op: str, dt: DType, C: int, index: str = "i64") -> spec.SegmentReduceKnobs:
    """``segment_reduce`` knobs a plan reports at select time for rows of ``C`` columns: the
    dtype's vector width when it divides C (else 1) and ``choose_tps`` for it (the launch
    re-checks strides and alignment at run time)."""
    vec = spec.vec_of(dt.short)
    vec = vec if C % vec == 0 else 1
    return spec.SegmentReduceKnobs(op=op, dtype=dt.short, index=index, vec=vec,
                                   tps=choose_tps(C, vec))


def check_out(v, name: str) -> None:
    """An output view may not broadcast (a zero stride over an extent > 1)."""
    if v.numel > 1 and any(s == 0 and e > 1 for e, s in zip(v.shape, v.strides)):
        raise InvalidProblemError(f"{name}: an output may not have a zero (broadcast) stride")


def rows_cols(v: TensorView, name: str, lead: int = 1) -> Tuple[int, ...]:
    """Strides (lead dims..., column) of a view whose trailing dims collapse into one strided
    column dim (UnsupportedError otherwise)."""
    rest = v.shape[lead:]
    shp, st = collapse_dims(rest, v.strides[lead:])
    if len(shp) > 1:
        raise UnsupportedError(f"{name}: the trailing dims {rest} with strides "
                               f"{v.strides[lead:]} do not collapse into one strided dim; pass a "
                               f"contiguous view (wired: trailing dims that merge)")
    cs = st[0] if shp else 1
    return tuple(v.strides[:lead]) + (cs,)


def status_view(obj, device):
    """The optional int32 status word (any shape with one element)."""
    s = view_arg(obj, "status", dtype=int32, device=device, optional=True)
    if s is not None and s.numel != 1:
        raise InvalidProblemError(f"status: must hold exactly one int32, got shape {s.shape}")
    return s


def dense_argmax_view(obj, shape, device, what: str = "argmax", wanted: bool = True,
                      unwanted: str = ""):
    """The optional int64 arg-extreme view of ``shape`` (dense row-major; None when absent);
    InvalidProblemError "``what``: ``unwanted``" when given but not ``wanted``."""
    v = view_arg(obj, what, shape=shape, dtype=int64, device=device, optional=True)
    if v is not None:
        if not wanted:
            raise InvalidProblemError(f"{what}: {unwanted}")
        if not v.is_contiguous():
            raise UnsupportedError(f"{what}: must be dense row-major")
    return v


class SegmentPipeline(CompositePlan):
    """Base of the sort-based segment plans: workspace slots of the id pipeline
    (:meth:`_pipeline_slots`) and the launches of its kernels (``_run_keys``, ``_run_sort``,
    ``_run_offsets``, ``_run_reduce``, ``_run_bw``).  Subclasses set ``descriptor`` and
    implement ``_plan`` / ``_bind`` / ``_launch`` / ``is_empty``."""

    def _knob(self, knobs_type, **fields):
        """The knobs ``knobs_type(**fields)``."""
        return knobs_type(**fields)

    def _pipeline_slots(self, n: int, nseg: int, sort: bool) -> None:
        """Workspace slots of ids → keys (→ sort) → offsets; records the sort plan."""
        from ..sorting.sort import SortDescriptor, SortPlan

        self._slot("keys", n * 4)
        self._sortp = None
        if sort:
            self._slot("skeys", n * 4)
            self._slot("perm", n * 8)
            self._sortp = SortPlan.select(SortDescriptor((n,), 0, int32), self.pref)
        self._slot("off", (nseg + 1) * 8)

    def _finish_workspace(self) -> None:
        """``workspace_size()``: the slots, then the sort's scratch."""
        sub = 0 if self._sortp is None else self._sortp.workspace_size()
        self._ws = self.__dict__.get("_off", 0) + sub

    # ---------------------------------------------------------------- launches
    def _run_keys(self, ids: TensorView, n: int, m: int, status, ws, st) -> TensorView:
        keys = self._tmp(ws, "keys", (n,), int32, ids.device)
        if n:
            kn = self._knob(spec.SegmentKeysKnobs, kind="keys", index=ids.dtype.short)
            lk = self._kernel(spec.SEGMENT_KEYS, kn, ids.device)
            lk.launch((-(-n // spec.PREP_THREADS), 1, 1),
                      [ids.ptr, keys.ptr, status.ptr if status is not None else 0, n, m,
                       ids.strides[0], int(status is not None)], st)
        return keys

    def _run_sort(self, keys: TensorView, n: int, ws, st):
        from ..sorting.sort import SortArgs

        dev = keys.device
        skeys = self._tmp(ws, "skeys", (n,), int32, dev)
        perm = self._tmp(ws, "perm", (n,), int64, dev)
        if n:
            self._sortp.run(SortArgs(keys, skeys, perm), st, self._sub_ws(ws))
        return skeys, perm

    def _run_sorted(self, keys: TensorView, n: int, ws, st):
        """(sorted keys, permutation pointer, F_KEYS [| F_PERM]) of ``keys``: through the sort
        when the plan sorts, else ``keys`` as they are (sorted ids) and no permutation."""
        if self._sortp is None:
            return keys, 0, spec.F_KEYS
        skeys, perm = self._run_sort(keys, n, ws, st)
        return skeys, perm.ptr, spec.F_KEYS | spec.F_PERM

    def _run_offsets(self, skeys: TensorView, n: int, nseg: int, ws, st) -> TensorView:
        off = self._tmp(ws, "off", (nseg + 1,), int64, skeys.device)
        lk = self._kernel(spec.SEGMENT_OFFSETS, self._knob(spec.SegmentOffsetsKnobs,
                                                           kind="offsets"), skeys.device)
        lk.launch((nseg // spec.PREP_THREADS + 1, 1, 1), [skeys.ptr, off.ptr, n, nseg], st)
        return off

    def _run_reduce(self, op: str, dt: DType, ix: str, *, src, srs, scs, sbs, out, ors, ocs, obs,
                    C, nseg, nofs, n, m, B, off, os, flags, st, dev, perm=0, ps=0, keys=0, w=0,
                    wsd=0, arg=0, status=0, pad=-1, alpha=1.0) -> None:
        if nseg == 0 or B == 0 or C == 0:
            return
        V = spec.vec_of(dt.short)
        vec = V if (C % V == 0 and scs == 1 and ocs == 1 and srs % V == 0 and ors % V == 0
                    and sbs % V == 0 and obs % V == 0 and src % 16 == 0 and out % 16 == 0) else 1
        tps = choose_tps(C, vec)
        kn = self._knob(spec.SegmentReduceKnobs, op=op, dtype=dt.short, index=ix, vec=vec,
                        tps=tps)
        lk = self._kernel(spec.SEGMENT_REDUCE, kn, dev)
        spc = spec.THREADS // tps
        nch = -(-(-(-C // vec)) // tps)
        gy = min(nch, _GRID_Y, max(1, -(-_TARGET_CTAS // -(-nseg // spc))))
        for b0 in range(0, B, _GRID_Z):
            lk.launch((-(-nseg // spc), gy, min(_GRID_Z, B - b0)),
                      [src, perm, keys, off, w, out, arg, status, nseg, nofs, n, m, C, srs, scs,
                       sbs, ors, ocs, obs, ps, os, wsd, pad, b0, float(alpha), int(flags)], st)

    def _run_bw(self, op: str, dt: DType, *, dy, keys, off, arg, dx, n, nseg, C, dyrs, dycs,
                dybs, dxrs, dxcs, dxbs, B, st, dev) -> None:
        if n == 0 or C == 0 or B == 0:
            return
        lk = self._kernel(spec.SEGMENT_BW, self._knob(spec.SegmentBwKnobs, op=op, dtype=dt.short),
                          dev)
        gy = min(-(-C // spec.THREADS), _GRID_Y)
        for b0 in range(0, B, _GRID_Z):
            lk.launch((n, gy, min(_GRID_Z, B - b0)),
                      [dy, keys, off, arg, dx, n, nseg, C, dyrs, dycs, dybs, dxrs, dxcs, dxbs,
                       b0], st)
