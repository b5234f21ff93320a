"""The ``axis_reduce`` kernel's plan: ``AxisReducePlan`` (sum, prod, max, min, mean; argmax /
argmin with ``_arg``) over any set of axes, with its descriptor, Args and host geometry.  The
public plans are in :mod:`.reductions` (``ReducePlan`` hands norm2 / logsumexp / var / std to the
composite ``StatReducePlan``) and :mod:`.composites`.

Canonical form: the kept dims and the reduced dims of the input view are each collapsed
(``collapse_dims``) into at most two strided dims — no copy while the strides allow; otherwise the
view is first copied dense into the workspace (kept dims first) by StridedCopyPlan.  The
``axis_reduce`` kernel then runs with one thread per output (reduced stride ≠ 1 and a unit kept
stride: loads coalesce across outputs), a warp per output or a CTA per output (long reduced runs).
When the outputs alone cannot fill the GPU (a full reduction, a few long rows) the reduced range is
split into segments: pass 1 writes one accumulator-typed partial per (segment, output) into the
workspace, pass 2 reduces the partials in segment order.  Every combine order is fixed: results
are bit-identical run to run (no atomics).

dtypes (input → output):  sum: bool/ints → int64 (signed, bool) / uint64 (unsigned), or the input
dtype (``keep_dtype=True``, wrapping like numpy); f32/f16/bf16/f64 → same (f16/bf16 accumulate in
f32).  prod: ints and floats, same rules.  max/min: bool, ints, floats → same (NaN propagates).
mean: floats → same (sum in the accumulator, × 1/N before the store).  argmax/argmin: ints and
floats → int64 (first occurrence; NaN is the extreme).  Empty reductions: sum 0, prod 1, mean NaN;
max, min, argmax, argmin raise InvalidProblemError at select.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from ...dtypes import DType, dtype as as_dtype, int64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, align_up, collapse_dims, norm_axes, prod, view_arg
from ...tensor import TensorView, check_shape, contiguous_strides
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace
from .specs import axis_reduce as spec
from .specs.axis_reduce import AxisReduceKnobs

REDUCE_OPS = ("sum", "prod", "max", "min", "mean")
STAT_OPS = ("norm2", "logsumexp", "var", "std")  # StatReducePlan (composites.py)
_SHORT = {d: as_dtype(d) for d in ("bool",) + spec.INTS + spec.FLOATS}
_FILL_THREADS = 132 * 2048  # threads that keep an H100 busy (132 SMs × 2048)


def out_dtype_of(op: str, dt: DType, keep_dtype: bool = False) -> DType:
    """Output dtype of ``op`` over ``dt`` (see the module doc)."""
    if op in ("argmax", "argmin"):
        return int64
    if op in ("sum", "prod") and not keep_dtype and dt.kind in ("b", "i", "u"):
        return _SHORT[spec.acc_of(op, dt.short)]
    return dt


def reduce_views(desc, x_obj, o_obj, name: str, out_dtype: DType):
    """(x, out) views of a reduction's Args: x of ``desc.shape`` / ``desc.dtype`` (any strides),
    the output of ``desc.out_shape`` / ``out_dtype``, dense row-major."""
    x = view_arg(x_obj, "x", shape=desc.shape, dtype=desc.dtype)
    o = view_arg(o_obj, name, shape=desc.out_shape, dtype=out_dtype, device=x.device)
    if o.numel > 1 and tuple(o.strides) != contiguous_strides(o.shape):
        raise UnsupportedError(f"{name}: a reduction output must be dense row-major")
    return x, o


class _Pass:
    """One launch of axis_reduce: knobs + the 10 int64 problem scalars + grid."""

    __slots__ = ("knobs", "dims", "grid")

    def __init__(self, knobs, dims, grid):
        self.knobs, self.dims, self.grid = knobs, dims, grid


def _tpo_for(R: int, n_out: int, ks1: int, rs_inner: int) -> int:
    if rs_inner != 1 and ks1 == 1 and n_out >= 32:
        return 1
    return 32 if R <= 8192 else 256


def max_segments(n_out: int, R: int) -> int:
    """Upper bound on the segments of a split reduction (sizes the partials workspace)."""
    if R < 1024 or n_out == 0:
        return 1
    return min(-(-4 * _FILL_THREADS // n_out), max(R // 256, 1), 65536)


def _grid(items: int, tpo: int) -> int:
    per = spec.THREADS // tpo
    return (items + per - 1) // per


class _Geometry:
    """Host plan of one reduction: optional dense copy, pass 1, optional pass 2."""

    def __init__(self, op: str, dt: DType, od: DType, kshape, kstr, rshape, rstr,
                 ptr_mod: int = 0):
        n_out, R = prod(kshape), prod(rshape)
        k1, ks1 = (kshape[-1], kstr[-1]) if kshape else (1, 0)
        ks0 = kstr[-2] if len(kshape) == 2 else 0
        if len(rshape) == 2:
            r1, rs1, rs0 = rshape[-1], rstr[-1], rstr[-2]
        else:  # one reduced dim: r1 = 1 selects the kernel's division-free r · rs1 offsets
            r1, rs1, rs0 = 1, (rstr[-1] if rshape else 0), 0
        arg = op in spec.ARG_OPS
        kop = "sum" if op == "mean" else op
        acc = _SHORT[spec.acc_of(kop, dt.short)] if not arg else dt
        tpo = _tpo_for(R, n_out, ks1 if kshape else 1, rs1)
        threads = n_out * tpo
        nseg = 1
        # thread-per-output walks are latency-bound: ask for 4x the threads of the other paths
        fill = _FILL_THREADS * (4 if tpo == 1 else 1)
        if R >= 1024 and threads < fill:
            nseg = min(-(-fill // threads), max_segments(n_out, R))
        # 16-byte vector loads: float input, unit reduced stride, aligned rows / pointer
        V = 16 // dt.itemsize if dt.short in spec.ITEMSIZE else 1
        if tpo > 1:  # vectors along the unit-stride reduced run
            vec = (V > 1 and len(rshape) <= 1 and rs1 == 1 and ptr_mod % 16 == 0
                   and ks0 % V == 0 and ks1 % V == 0)
        else:  # vectors across V adjacent outputs of the unit-stride kept dim
            vec = (V > 1 and not arg and bool(kshape) and ks1 == 1 and k1 % V == 0
                   and ks0 % V == 0 and rs0 % V == 0 and rs1 % V == 0 and ptr_mod % 16 == 0)
        per_item = V if (vec and tpo == 1) else 1  # outputs one tpo-1 thread covers
        seg = -(-R // nseg) if nseg else R
        if vec and nseg > 1:
            seg = -(-seg // V) * V
        nseg = -(-R // seg) if R else 1
        self.n_out, self.R, self.nseg, self.acc = n_out, R, nseg, acc
        if nseg == 1:
            k = AxisReduceKnobs(kop, dt.short, (dt if arg else od).short, tpo, 0, V if vec else 1)
            self.p1 = _Pass(k, (n_out, R, k1, ks0, ks1, r1, rs0, rs1, max(R, 1), 1),
                            _grid(n_out // per_item, tpo))
            self.p2 = None
        else:
            part = dt if arg else acc
            k = AxisReduceKnobs(kop, dt.short, part.short, tpo, 0, V if vec else 1)
            self.p1 = _Pass(k, (n_out, R, k1, ks0, ks1, r1, rs0, rs1, seg, nseg),
                            _grid(n_out // per_item * nseg, tpo))
            tpo2 = 1 if n_out >= 1024 else (32 if nseg <= 8192 else 256)
            k2 = AxisReduceKnobs(kop, part.short, (part if arg else od).short, tpo2,
                                 1 if arg else 0, 1)
            self.p2 = _Pass(k2, (n_out, nseg, n_out, 0, 1, 1, 0, n_out, nseg, 1),
                            _grid(n_out, tpo2))
        # partial scratch sized for the most segments any layout of this problem may use
        ms = max_segments(n_out, R)
        self.part_bytes = 0 if ms == 1 else align_up(n_out * ms * (dt if arg else acc).itemsize)
        self.idx_bytes = 0 if ms == 1 or not arg else align_up(n_out * ms * 8)


@dataclass(frozen=True)
class ReduceDescriptor:
    """``op`` over ``axes`` (None = all; ints may be negative) of an input of ``shape`` (rank ≤ 8)
    and ``dtype``; the output has the kept dims (keepdims is a reshape of the caller's).
    ``keep_dtype``: sum/prod of integers in the input dtype instead of int64/uint64;
    ``correction``: the N − c divisor of var / std."""

    shape: Tuple[int, ...]
    axes: Optional[Tuple[int, ...]] = None
    op: str = "sum"
    dtype: DType = _SHORT["f32"]
    keep_dtype: bool = False
    correction: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "shape", check_shape(self.shape, "Reduce"))
        if self.op not in REDUCE_OPS + STAT_OPS + spec.ARG_OPS:
            raise InvalidProblemError(f"Reduce: unknown op {self.op!r}; wired: "
                                      f"{', '.join(REDUCE_OPS + STAT_OPS + spec.ARG_OPS)}")
        dt = as_dtype(self.dtype)
        kop = "sum" if self.op == "mean" else self.op
        allowed = (spec.FLOATS if self.op in ("mean",) + STAT_OPS else spec.dtypes_of(kop))
        if dt.short not in allowed:
            raise UnsupportedError(f"Reduce {self.op} of {dt.name}: wired dtypes "
                                   f"{', '.join(allowed)}")
        object.__setattr__(self, "dtype", dt)
        object.__setattr__(self, "axes", norm_axes(self.axes, len(self.shape), "Reduce"))

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return tuple(n for d, n in enumerate(self.shape) if d not in self.axes)

    @property
    def out_dtype(self) -> DType:
        return out_dtype_of(self.op, self.dtype, self.keep_dtype)


@dataclass
class ReduceArgs:
    """x: input (any strides); out: dense output of ``desc.out_shape`` and ``desc.out_dtype``;
    indices: the int64 output of ArgReducePlan (``out`` unused there)."""

    x: object
    out: object = None
    indices: object = None


class AxisReducePlan(Plan):
    """sum / prod / max / min / mean over axes by the ``axis_reduce`` kernel (argmax / argmin
    when ``_arg``); see the module doc.  Workspace: partials of a split reduction and, for views
    whose dims do not collapse, a dense copy of the input."""

    descriptor = ReduceDescriptor
    _arg = False  # ArgReducePlan: int64 indices out, values to workspace scratch

    def _reduce_desc(self) -> ReduceDescriptor:
        """The reduction this plan runs (ReduceToPlan derives it from its own descriptor)."""
        return self.desc

    def _plan(self) -> None:
        d = self._rd = self._reduce_desc()
        arg = d.op in spec.ARG_OPS
        if d.op in STAT_OPS or arg != self._arg:
            raise InvalidProblemError(f"{type(self).__name__}: op {d.op!r} belongs to "
                                      f"{'ArgReducePlan' if arg else 'ReducePlan'}")
        R = prod(d.shape[a] for a in d.axes)
        if R == 0 and d.op in ("max", "min", "argmax", "argmin"):
            raise InvalidProblemError(f"Reduce {d.op}: empty reduction (a reduced extent "
                                      f"is 0) has no identity")
        self._n_out, self._R = prod(d.out_shape), R
        # the dense-input geometry sizes the workspace (a strided view needs at most that plus
        # the dense copy)
        dense = self._geometry(d.shape, contiguous_strides(d.shape))
        # a dense input whose kept or reduced dims do not collapse to two is copied (kept dims
        # first) into the workspace; other layouts are reduced in place
        self._copy_bytes = 0 if dense is not None else align_up(prod(d.shape) * d.dtype.itemsize)
        self._dense = dense if dense is not None else self._dense_perm(
            tuple(d.shape[i] for i in range(len(d.shape)) if i not in d.axes) +
            tuple(d.shape[i] for i in d.axes))
        acc = self._dense.acc
        pg = PrecisionGuarantee(math_precision=acc, accumulator=acc)
        self._sku = KernelSku(OpCategory.REDUCTION, d.op, d.dtype, self._arch,
                              BackendKind.CUTE_DSL, pg, aux_element=d.out_dtype,
                              template=spec.AXIS_REDUCE.name,
                              knobs=freeze_knobs(self._dense.p1.knobs))

    def workspace_size(self) -> int:
        g = self._dense
        return self._copy_bytes + g.part_bytes + g.idx_bytes

    def is_empty(self) -> bool:
        return self._n_out == 0

    def _geometry(self, shape, strides, ptr_mod: int = 0) -> Optional[_Geometry]:
        """The launch geometry for one layout of the input, memoised per (shape, strides,
        16-byte alignment class): a repeated call with the same layout skips the dim collapse
        and the pass planning (the host cost of a small reduction)."""
        memo = self.__dict__.setdefault("_geometries", {})
        key = (tuple(shape), tuple(strides), ptr_mod)
        hit = memo.get(key, memo)
        if hit is not memo:
            return hit
        if len(memo) >= 64:   # a plan seeing many layouts: keep the memo bounded
            memo.clear()
        memo[key] = g = self._plan_geometry(shape, strides, ptr_mod)
        return g

    def _plan_geometry(self, shape, strides, ptr_mod: int = 0) -> Optional[_Geometry]:
        d = self._rd
        kept = [i for i in range(len(shape)) if i not in d.axes]
        ks, kst = collapse_dims([shape[i] for i in kept], [strides[i] for i in kept])
        rs, rst = collapse_dims([shape[i] for i in d.axes], [strides[i] for i in d.axes])
        if len(ks) > 2 or len(rs) > 2:
            return None
        return _Geometry(d.op, d.dtype, d.out_dtype, ks, kst, rs, rst, ptr_mod)

    def _bind(self, args):
        if self._arg:
            return reduce_views(self._rd, args.x, args.indices, "indices", int64)
        return reduce_views(self._rd, args.x, args.out, "out", self._rd.out_dtype)

    def _launch(self, bound, st: int, ws: Workspace) -> None:
        x, o = bound
        d = self._rd
        if self._R == 0:
            self._fill_identity(o, st)
            return
        x, g, off = self._prepare(x, ws, st)
        part = ws.ptr + off
        pidx = part + g.part_bytes
        if self._arg:  # the values go to scratch, the indices to the output
            vals, idx = pidx + g.idx_bytes, o.ptr
        else:
            vals = idx = o.ptr
        lk = self._kernel_for(g.p1.knobs, x.device)
        scale = 1.0 / self._R if d.op == "mean" else 1.0
        if g.p2 is None:
            lk.launch((g.p1.grid, 1, 1), [x.ptr, x.ptr, vals, idx, *g.p1.dims, scale], st)
        else:
            lk.launch((g.p1.grid, 1, 1), [x.ptr, x.ptr, part, pidx, *g.p1.dims, 1.0], st)
            lk2 = self._kernel_for(g.p2.knobs, x.device)
            lk2.launch((g.p2.grid, 1, 1), [part, pidx, vals, idx, *g.p2.dims, scale], st)

    def _prepare(self, x: TensorView, ws: Workspace, st: int):
        """(input view, geometry, workspace offset past the copy) for this call: the view as it
        is when its dims collapse, else a dense kept-dims-first copy in the workspace."""
        d = self._rd
        g = self._geometry(x.shape, x.strides, x.ptr % 16)
        if g is not None:
            return x, g, 0
        if not self._copy_bytes:
            raise UnsupportedError("Reduce: the kept or reduced dims of this strided view do not "
                                   "collapse to two strided dims; pass a dense copy")
        from ..shape.repeat import StridedCopyArgs, StridedCopyDescriptor, StridedCopyPlan

        kept = [i for i in range(len(d.shape)) if i not in d.axes]
        perm = kept + list(d.axes)
        pv = TensorView._trusted(x.ptr, tuple(x.shape[i] for i in perm),
                                 tuple(x.strides[i] for i in perm), x.dtype, x.device, None)
        dense = TensorView._trusted(ws.ptr, pv.shape, contiguous_strides(pv.shape), x.dtype,
                                    x.device, None)
        StridedCopyPlan.select(StridedCopyDescriptor(pv.shape, x.dtype), self.pref).run(
            StridedCopyArgs(pv, dense), st)
        return dense, self._dense_perm(pv.shape, ws.ptr % 16), self._copy_bytes

    def _dense_perm(self, pshape, ptr_mod: int = 0):
        d = self._rd
        nk = len(d.shape) - len(d.axes)
        K, R = prod(pshape[:nk]), prod(pshape[nk:])
        return _Geometry(d.op, d.dtype, d.out_dtype, (K,), (R,), (R,), (1,), ptr_mod)

    def _kernel_for(self, knobs: AxisReduceKnobs, dev: int):
        """The kernel of ``knobs``."""
        return self._kernel(spec.AXIS_REDUCE, knobs, dev)

    def _fill_identity(self, o: TensorView, st: int) -> None:
        from ..elementwise.elementwise import (ElementwiseArgs, ElementwiseDescriptor,
                                               ElementwisePlan)

        v = {"sum": 0, "prod": 1, "mean": float("nan")}[self._rd.op]
        ElementwisePlan.select(ElementwiseDescriptor("copy", (None,), o.dtype, None, (),
                                                     o.shape), self.pref).run(
            ElementwiseArgs([v], [o]), st)
