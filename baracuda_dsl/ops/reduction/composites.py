"""Reductions built from the axis-reduction kernel and elementwise launches:

``StatReducePlan`` (what ``ReducePlan.select`` returns for these ops) — over any axes,
f32 f16 bf16 f64, computed in float32 for half inputs (float64 for f64):

    norm2      √Σ x²                          (0 for an empty reduction)
    logsumexp  m + log Σ exp(x − m), m = max   (m taken as 0 where it is ±inf; −inf when empty)
    var        Σ (x − mean)² / (N − c)         (two passes over x; NaN when N − c ≤ 0)
    std        √var

``BoolReducePlan`` — all / any of ``x != 0`` (NaN is non-zero; any dtype but complex128),
bool out; ``CountReducePlan`` — count_nonzero, int64 out; ``TracePlan`` — Σ of the ``offset``
diagonal over the last two dims (batched; a strided diagonal view summed by ReducePlan).

Workspace: ``workspace_size()`` bytes — x-sized temporaries in the compute type (stats), a bool
mask (bool/count reductions), plus the inner ReducePlans' scratch.  Deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from ...dtypes import (ALL_DTYPES, DType, bool_ as bool_dt, dtype as as_dtype, float32, float64,
                       int64)
from ...errors import InvalidProblemError
from ...plan import Plan, align_up, check_dtype, norm_axes, prod, view_arg
from ...tensor import TensorView, check_shape, contiguous_strides
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace
from ..elementwise.elementwise import ElementwiseArgs, ElementwiseDescriptor, ElementwisePlan
from .axis_reduce import STAT_OPS, AxisReducePlan, ReduceArgs, ReduceDescriptor, reduce_views


class CompositePlan(Plan):
    """Base of plans composed of other plans' launches (here and in other families): workspace
    slots (``_slot`` / ``_tmp``, ``workspace_size()`` = ``self._ws``, the sub-plans' scratch
    past them by ``_sub_ws``), cached elementwise plans (``_ew``), keepdims views (``_keep``).
    Its defaults serve a reduction problem (``desc.out_shape``; Args ``x`` → dense ``out``):
    plans over other descriptors set ``descriptor`` and override ``_bind`` / ``is_empty``."""

    descriptor = ReduceDescriptor

    def _slot(self, name: str, nbytes: int) -> None:
        lay = self.__dict__.setdefault("_lay", {})
        lay[name] = self.__dict__.get("_off", 0)
        self._off = lay[name] + align_up(nbytes)

    def _tmp(self, ws: Workspace, name: str, shape, dt: DType, dev: int) -> TensorView:
        return TensorView._trusted(ws.ptr + self._lay[name], tuple(shape),
                                   contiguous_strides(shape), dt, dev, None)

    def _keep(self, v: TensorView, shape, axes) -> TensorView:
        it = iter(v.strides)
        st = tuple(0 if d in axes else next(it) for d in range(len(shape)))
        ks = tuple(1 if d in axes else n for d, n in enumerate(shape))
        return TensorView._trusted(v.ptr, ks, st, v.dtype, v.device, None)

    def _ew(self, op: str, ins, out: TensorView, dt: DType, st: int, out_dtype=None,
            params=()) -> None:
        shapes = tuple(tuple(i.shape) if isinstance(i, TensorView) else None for i in ins)
        key = (op, shapes, tuple(out.shape), dt, out_dtype, params)
        memo = self.__dict__.setdefault("_ew_plans", {})
        p = memo.get(key)
        if p is None:
            p = memo[key] = ElementwisePlan.select(ElementwiseDescriptor(
                op, shapes, dt, out_dtype, params, tuple(out.shape)), self.pref)
        p.run(ElementwiseArgs(list(ins), [out]), st)

    def workspace_size(self) -> int:
        return self._ws

    def _sub_ws(self, ws: Workspace) -> Workspace:
        return Workspace(ws.ptr + self._off, ws.nbytes - self._off, None)

    def is_empty(self) -> bool:
        return prod(self.desc.out_shape) == 0

    def _bind(self, args):
        return reduce_views(self.desc, args.x, args.out, "out", self.desc.out_dtype)

    def _composite_sku(self, op: str, math: DType, acc: DType) -> KernelSku:
        """The SKU a composite reduction reports: ``op`` over the input dtype, template
        ``composite``, the given math / accumulator precision."""
        return KernelSku(OpCategory.REDUCTION, op, self.desc.dtype, self._arch,
                         BackendKind.CUTE_DSL,
                         PrecisionGuarantee(math_precision=math, accumulator=acc),
                         template="composite")


class StatReducePlan(CompositePlan):
    """norm2 / logsumexp / var / std over axes (see the module doc); what ``ReducePlan.select``
    returns for those ops."""

    def _plan(self) -> None:
        desc = self.desc
        if desc.op not in STAT_OPS:
            raise InvalidProblemError(f"StatReducePlan: op {desc.op!r} is not one of "
                                      f"{', '.join(STAT_OPS)} (ReducePlan serves it)")
        dt = desc.dtype
        ct = float64 if dt is float64 else float32
        self._ct, self._n = ct, prod(desc.shape)
        self._N = prod(desc.shape[a] for a in desc.axes)
        nk = prod(desc.out_shape)
        self._slot("t", self._n * ct.itemsize)       # x in the compute type, then the terms
        self._slot("k", nk * ct.itemsize)            # kept-shape mean / max / sum
        self._slot("k2", nk * ct.itemsize)
        ops = (("sum", "mean") if desc.op in ("var", "std") else
               ("sum", "max") if desc.op == "logsumexp" and self._N else ("sum",))
        self._red = {op: AxisReducePlan.select(ReduceDescriptor(desc.shape, desc.axes, op, ct),
                                               self.pref) for op in ops}
        self._ws = self._off + max(r.workspace_size() for r in self._red.values())
        self._sku = self._composite_sku(desc.op, ct, ct)

    def _launch(self, bound, st: int, ws: Workspace) -> None:
        x, o = bound
        d, ct, dev = self.desc, self._ct, x.device
        sub = self._sub_ws(ws)
        shape, axes = d.shape, d.axes
        t = self._tmp(ws, "t", shape, ct, dev)
        k = self._tmp(ws, "k", d.out_shape, ct, dev)
        k2 = self._tmp(ws, "k2", d.out_shape, ct, dev)
        kb = self._keep(k, shape, axes)
        if x.dtype is ct and tuple(x.strides) == contiguous_strides(x.shape):
            src = x  # read x itself: no compute-type copy
        else:
            self._ew("cast" if x.dtype is not ct else "copy", [x], t, x.dtype, st,
                     out_dtype=ct if x.dtype is not ct else None)
            src = t
        if d.op == "norm2":
            self._ew("multiply", [src, src], t, ct, st)
            self._red["sum"].run(ReduceArgs(t, k), st, sub)
            self._ew("sqrt", [k], k, ct, st)
        elif d.op == "logsumexp":
            if self._N == 0:
                self._ew("copy", [float("-inf")], k, ct, st)
            else:
                self._red["max"].run(ReduceArgs(src, k), st, sub)
                fin = self._tmp(ws, "k2", d.out_shape, bool_dt, dev)  # k2 reused as a mask
                self._ew("isfinite", [k], fin, ct, st)
                self._ew("where", [fin, k, 0.0], k, ct, st)
                self._ew("subtract", [src, kb], t, ct, st)
                self._ew("exp", [t], t, ct, st)
                self._red["sum"].run(ReduceArgs(t, k2), st, sub)
                self._ew("log", [k2], k2, ct, st)
                self._ew("add", [k2, k], k, ct, st)
        else:  # var, std
            dof = self._N - float(d.correction)
            self._red["mean"].run(ReduceArgs(src, k), st, sub)
            self._ew("subtract", [src, kb], t, ct, st)
            self._ew("multiply", [t, t], t, ct, st)
            self._red["sum"].run(ReduceArgs(t, k), st, sub)
            self._ew("multiply", [k, 1.0 / dof if dof > 0 else float("nan")], k, ct, st)
            if d.op == "std":
                self._ew("sqrt", [k], k, ct, st)
        self._ew("cast" if o.dtype is not ct else "copy", [k], o, ct, st,
                 out_dtype=o.dtype if o.dtype is not ct else None)


# ------------------------------------------------------------------------ bool / count
@dataclass(frozen=True)
class BoolReduceDescriptor:
    """``op`` (all / any / count_nonzero) of ``x != 0`` over ``axes`` (None = all) of an input of
    ``shape`` and ``dtype``."""

    shape: Tuple[int, ...]
    axes: Tuple[int, ...] = None
    op: str = "any"
    dtype: DType = bool_dt

    def __post_init__(self):
        object.__setattr__(self, "shape", check_shape(self.shape, "BoolReduce"))
        if self.op not in ("all", "any", "count_nonzero"):
            raise InvalidProblemError(f"BoolReduce: op must be all, any or count_nonzero, got "
                                      f"{self.op!r}")
        wired = tuple(d for d in ALL_DTYPES if d.name != "complex128")
        object.__setattr__(self, "dtype", check_dtype(as_dtype(self.dtype), wired, "BoolReduce"))
        object.__setattr__(self, "axes", norm_axes(self.axes, len(self.shape), "BoolReduce"))

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return tuple(n for d, n in enumerate(self.shape) if d not in self.axes)

    @property
    def out_dtype(self) -> DType:
        return int64 if self.op == "count_nonzero" else bool_dt


class BoolReducePlan(CompositePlan):
    """all / any (bool out; True / False for an empty reduction) of ``x != 0``."""

    descriptor = BoolReduceDescriptor
    _ops = ("all", "any")

    def _plan(self) -> None:
        desc = self.desc
        if desc.op not in self._ops:
            raise InvalidProblemError(f"{type(self).__name__} takes a BoolReduceDescriptor with "
                                      f"op in {self._ops}")
        self._n = prod(desc.shape)
        self._N = prod(desc.shape[a] for a in desc.axes)
        kop = {"all": "min", "any": "max", "count_nonzero": "sum"}[desc.op]
        self._slot("mask", self._n)
        self._red = None if self._N == 0 else AxisReducePlan.select(
            ReduceDescriptor(desc.shape, desc.axes, kop, bool_dt), self.pref)
        self._ws = self._off + (0 if self._red is None else self._red.workspace_size())
        self._sku = self._composite_sku(desc.op, desc.out_dtype, desc.out_dtype)

    def _launch(self, bound, st: int, ws: Workspace) -> None:
        x, o = bound
        d = self.desc
        if self._red is None:  # empty reduction: the identity
            v = {"all": True, "any": False, "count_nonzero": 0}[d.op]
            self._ew("copy", [v], o, o.dtype, st)
            return
        mask = self._tmp(ws, "mask", d.shape, bool_dt, x.device)
        self._ew("not_equal", [x, 0], mask, x.dtype, st)
        self._red.run(ReduceArgs(mask, o), st, self._sub_ws(ws))


class CountReducePlan(BoolReducePlan):
    """count_nonzero: the number (int64) of elements with ``x != 0`` over the axes."""

    _ops = ("count_nonzero",)


# ------------------------------------------------------------------------------ trace
@dataclass(frozen=True)
class TraceDescriptor:
    """Σ of the ``offset`` diagonal over the last two dims of ``shape`` (rank ≥ 2), batched over
    the leading dims; ``dtype`` as ReducePlan sum (ints → int64)."""

    shape: Tuple[int, ...]
    offset: int = 0
    dtype: DType = float32

    def __post_init__(self):
        object.__setattr__(self, "shape", check_shape(self.shape, "Trace"))
        if len(self.shape) < 2:
            raise InvalidProblemError("Trace: needs at least two dims")
        if isinstance(self.offset, bool) or not isinstance(self.offset, int):
            raise InvalidProblemError(f"Trace: offset must be an int, got {self.offset!r}")
        object.__setattr__(self, "dtype", as_dtype(self.dtype))

    @property
    def diag_len(self) -> int:
        r, c = self.shape[-2:]
        i0, j0 = (0, self.offset) if self.offset >= 0 else (-self.offset, 0)
        return max(0, min(r - i0, c - j0))


class TracePlan(Plan):
    """Batched trace: a strided diagonal view (stride s[-2] + s[-1]) summed by the axis
    reduction (its SKU, workspace and checks)."""

    descriptor = TraceDescriptor

    def _plan(self) -> None:
        desc = self.desc
        self._dshape = dshape = desc.shape[:-2] + (desc.diag_len,)
        self._red = AxisReducePlan.select(ReduceDescriptor(dshape, (len(dshape) - 1,), "sum",
                                                           desc.dtype), self.pref)
        self._sku = self._red.sku()

    def workspace_size(self) -> int:
        return self._red.workspace_size()

    def is_empty(self) -> bool:
        return self._red.is_empty()

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return self.desc.shape[:-2]

    @property
    def out_dtype(self) -> DType:
        return self._red.desc.out_dtype

    def _diag(self, args) -> TensorView:
        d = self.desc
        x = view_arg(args.x, "x", shape=d.shape, dtype=d.dtype)
        sr, sc = x.strides[-2:]
        i0, j0 = (0, d.offset) if d.offset >= 0 else (-d.offset, 0)
        start = (i0 * sr + j0 * sc) * x.itemsize if d.diag_len else 0
        return TensorView._trusted(x.ptr + start, self._dshape, tuple(x.strides[:-2]) + (sr + sc,),
                                   x.dtype, x.device, None)

    def _bind(self, args):
        return self._red._bind(ReduceArgs(self._diag(args), args.out))

    def _launch(self, bound, st: int, ws: Workspace) -> None:
        self._red._launch(bound, st, ws)
