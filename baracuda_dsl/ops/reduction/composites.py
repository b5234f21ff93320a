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
from ...plan import Plan, align_up, check_dtype, plan_arch, prod, resolve_pref, view_arg
from ...tensor import TensorView, check_shape, contiguous_strides
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace
from ..elementwise.elementwise import ElementwiseArgs, ElementwiseDescriptor, ElementwisePlan
from .reductions import ReduceArgs, ReduceDescriptor, ReducePlan, norm_axes, reduce_views

STAT_OPS = ("norm2", "logsumexp", "var", "std")



class CompositePlan(Plan):
    """Shared helpers: workspace slices, cached elementwise plans, keepdims views."""

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

    def _ew(self, op: str, ins, out: TensorView, dt: DType, st: int, out_dtype=None) -> None:
        shapes = tuple(tuple(i.shape) if isinstance(i, TensorView) else None for i in ins)
        key = (op, shapes, tuple(out.shape), dt, out_dtype)
        memo = self.__dict__.setdefault("_ew_plans", {})
        p = memo.get(key)
        if p is None:
            p = memo[key] = ElementwisePlan.select(ElementwiseDescriptor(
                op, shapes, dt, out_dtype, (), tuple(out.shape)), self.pref)
        p.run(ElementwiseArgs(list(ins), [out]), st)

    def workspace_size(self) -> int:
        return self._ws

    def _sub_ws(self, ws: Workspace) -> Workspace:
        return Workspace(ws.ptr + self._off, ws.nbytes - self._off, None)

    def is_empty(self) -> bool:
        return prod(self.desc.out_shape) == 0

    def _views(self, args):
        return reduce_views(self.desc, args.x, args.out, "out", self.desc.out_dtype)

    def can_implement(self, args) -> None:
        self._views(args)

    def _begin(self, args, stream, workspace):
        """(x, out, workspace, raw stream) after every check, or None for an empty problem."""
        from ...runtime.stream import stream_handle

        x, o = self._views(args)
        ws = self.check_workspace(workspace)
        if self.is_empty():
            return None
        return x, o, ws, stream_handle(stream)


class StatReducePlan(CompositePlan):
    """norm2 / logsumexp / var / std over axes (see the module doc); returned by
    ``ReducePlan.select`` for those ops."""

    @classmethod
    def select(cls, desc: ReduceDescriptor, pref=None) -> "StatReducePlan":
        pref = resolve_pref(pref)
        arch = plan_arch(pref)
        plan = cls(desc, pref, None)
        plan._arch = arch
        dt = desc.dtype
        ct = float64 if dt is float64 else float32
        plan._ct, plan._n = ct, prod(desc.shape)
        plan._N = prod(desc.shape[a] for a in desc.axes)
        nk = prod(desc.out_shape)
        plan._slot("t", plan._n * ct.itemsize)       # x in the compute type, then the terms
        plan._slot("k", nk * ct.itemsize)            # kept-shape mean / max / sum
        plan._slot("k2", nk * ct.itemsize)
        red = {}
        ops = (("sum", "mean") if desc.op in ("var", "std") else
               ("sum", "max") if desc.op == "logsumexp" and plan._N else ("sum",))
        for op in ops:
            red[op] = ReducePlan.select(ReduceDescriptor(desc.shape, desc.axes, op, ct), pref)
        plan._red = red
        plan._ws = plan._off + max(r.workspace_size() for r in red.values())
        pg = PrecisionGuarantee(math_precision=ct, accumulator=ct)
        plan._sku = KernelSku(OpCategory.REDUCTION, desc.op, dt, arch, BackendKind.CUTE_DSL, pg,
                              template="composite")
        return plan

    def run(self, args, stream=None, workspace=None) -> None:
        b = self._begin(args, stream, workspace)
        if b is None:
            return
        x, o, ws, st = b
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

    _ops = ("all", "any")

    @classmethod
    def select(cls, desc: BoolReduceDescriptor, pref=None):
        pref = resolve_pref(pref)
        if not isinstance(desc, BoolReduceDescriptor) or desc.op not in cls._ops:
            raise InvalidProblemError(f"{cls.__name__} takes a BoolReduceDescriptor with op in "
                                      f"{cls._ops}")
        arch = plan_arch(pref)
        plan = cls(desc, pref, None)
        plan._arch = arch
        plan._n = prod(desc.shape)
        plan._N = prod(desc.shape[a] for a in desc.axes)
        kop = {"all": "min", "any": "max", "count_nonzero": "sum"}[desc.op]
        plan._slot("mask", plan._n)
        plan._red = None if plan._N == 0 else ReducePlan.select(
            ReduceDescriptor(desc.shape, desc.axes, kop, bool_dt), pref)
        plan._ws = plan._off + (0 if plan._red is None else plan._red.workspace_size())
        pg = PrecisionGuarantee(math_precision=desc.out_dtype, accumulator=desc.out_dtype)
        plan._sku = KernelSku(OpCategory.REDUCTION, desc.op, desc.dtype, arch,
                              BackendKind.CUTE_DSL, pg, template="composite")
        return plan

    def run(self, args, stream=None, workspace=None) -> None:
        b = self._begin(args, stream, workspace)
        if b is None:
            return
        x, o, ws, st = b
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
    """Batched trace: a strided diagonal view (stride s[-2] + s[-1]) summed by ReducePlan."""

    @classmethod
    def select(cls, desc: TraceDescriptor, pref=None) -> "TracePlan":
        pref = resolve_pref(pref)
        if not isinstance(desc, TraceDescriptor):
            raise InvalidProblemError(f"TracePlan needs a TraceDescriptor, got "
                                      f"{type(desc).__name__}")
        plan = cls(desc, pref, None)
        dshape = desc.shape[:-2] + (desc.diag_len,)
        plan._dshape = dshape
        plan._red = ReducePlan.select(ReduceDescriptor(dshape, (len(dshape) - 1,), "sum",
                                                       desc.dtype), pref)
        plan._sku = plan._red.sku()
        return plan

    def workspace_size(self) -> int:
        return self._red.workspace_size()

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

    def can_implement(self, args) -> None:
        self._red.can_implement(ReduceArgs(self._diag(args), args.out))

    def run(self, args, stream=None, workspace=None) -> None:
        self._red.run(ReduceArgs(self._diag(args), args.out), stream, workspace)
