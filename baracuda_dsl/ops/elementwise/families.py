"""baracuda's elementwise plan families: thin, op-restricted front ends of
:class:`~baracuda_dsl.ops.elementwise.elementwise.ElementwisePlan` (one template, one op table), and the
backward plans, which reduce gradients over broadcast dimensions.

Forward families (descriptor → the generic ``ElementwiseDescriptor``):

=====================  =====================================================================
``UnaryPlan``          ``y = f(x)``: the standard's unary math / bitwise / logical ops and the
                       parameter-free activations
``UnaryParamPlan``     ``y = f(x; p)``: softplus, hardtanh, elu, leaky_relu, logit, hardshrink,
                       softshrink, threshold
``BinaryPlan``         ``y = f(a, b)`` with broadcasting (arithmetic, bitwise, atan2, pow, ...)
``BinaryParamPlan``    ``y = f(a, b; p)`` (reserved for parameterised binary ops: none yet
                       beyond those of TernaryPlan)
``BinaryCmpPlan``      ``y = a ⋈ b`` → bool (equal ... less_equal, logical_and/or/xor)
``TernaryPlan``        clip, lerp, addcmul, addcdiv, fma
``WherePlan``          ``y = where(cond, a, b)``
``CastPlan``           ``y = x`` converted to another dtype (every pair of 17 dtypes)
``AffinePlan``         ``y = alpha·x + beta``
``GatedActivationPlan`` ``y = a ⊙ act(b)`` / ``act(a) ⊙ b``: glu, reglu, swiglu, geglu
``PReluPlan``          ``y = x if x > 0 else w·x`` (w broadcast)
=====================  =====================================================================

Backward plans take ``dy`` plus the forward inputs and produce one gradient per input of that
input's shape (sums over the broadcast dims, deterministic, f32 accumulation for half types).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from ... import dtypes as _dt
from ...dtypes import DType
from ...errors import InvalidProblemError, UnsupportedError
from ...plan import Plan, prod
from ...tensor import TensorView, as_view, contiguous_strides
from ...vocabulary import BackendKind, KernelSku, OpCategory, PlanPreference
from .elementwise import (ElementwiseArgs, ElementwiseDescriptor, ElementwisePlan, broadcast_shapes,
                          check_family, precision_of)
from .specs import elementwise as spec

UNARY_PARAM_OPS = frozenset(n for n, s in spec.OPS.items()
                            if s.nin == 1 and s.nparams and not n.endswith("_bw")
                            and n != "affine")
UNARY_OPS = frozenset(n for n, s in spec.OPS.items()
                      if s.nin == 1 and not s.nparams and not n.endswith("_bw")
                      and n not in ("cast", "copy"))
CMP_OPS = frozenset(("equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
                     "logical_and", "logical_or", "logical_xor"))
GATED_OPS = frozenset(("glu", "reglu", "swiglu", "geglu"))
BINARY_OPS = frozenset(n for n, s in spec.OPS.items()
                       if s.nin == 2 and not n.endswith("_bw")) - CMP_OPS - GATED_OPS - {"prelu"}
TERNARY_OPS = frozenset(("clip", "lerp", "addcmul", "addcdiv", "fma"))


def family_plan(base: type, name: str, ops: frozenset, doc: str) -> type:
    """A plan class ``name`` of ``base`` (ElementwisePlan, ElementwiseBackwardPlan) that accepts
    only the ops ``ops`` (UnsupportedError naming them otherwise)."""
    return type(name, (base,), {"OPS": ops, "__doc__": doc, "__module__": __name__,
                                "__qualname__": name})


UnaryPlan = family_plan(ElementwisePlan, "UnaryPlan", UNARY_OPS,
                        "y = f(x) for the unary ops of the op table.")
UnaryParamPlan = family_plan(ElementwisePlan, "UnaryParamPlan", UNARY_PARAM_OPS,
                             "y = f(x; params) (softplus, hardtanh, elu, leaky_relu, ...).")
BinaryPlan = family_plan(ElementwisePlan, "BinaryPlan", BINARY_OPS,
                         "y = f(a, b) with broadcasting.")
BinaryParamPlan = family_plan(ElementwisePlan, "BinaryParamPlan", frozenset(
    n for n in BINARY_OPS if spec.OPS[n].nparams), "y = f(a, b; params).")
BinaryCmpPlan = family_plan(ElementwisePlan, "BinaryCmpPlan", CMP_OPS,
                            "y = a ⋈ b → bool, with broadcasting.")
TernaryPlan = family_plan(ElementwisePlan, "TernaryPlan", TERNARY_OPS,
                          "clip, lerp, addcmul, addcdiv, fma.")
WherePlan = family_plan(ElementwisePlan, "WherePlan", frozenset({"where"}),
                        "y = where(cond, a, b).")
CastPlan = family_plan(ElementwisePlan, "CastPlan", frozenset({"cast", "copy"}),
                       "y = x converted to out_dtype.")
AffinePlan = family_plan(ElementwisePlan, "AffinePlan", frozenset({"affine"}),
                         "y = alpha·x + beta (params).")
GatedActivationPlan = family_plan(ElementwisePlan, "GatedActivationPlan", GATED_OPS,
                                  "glu(a,b)=a·σ(b); reglu=relu(a)·b; swiglu=silu(a)·b; "
                                  "geglu=gelu(a)·b.")
PReluPlan = family_plan(ElementwisePlan, "PReluPlan", frozenset({"prelu"}),
                        "y = x if x > 0 else w·x.")


# ================================================================================ backward
@dataclass(frozen=True)
class ElementwiseBackwardDescriptor:
    """Gradient of forward op ``op`` (a differentiable op of the table) with forward input
    ``shapes`` (None for scalar inputs, which get no gradient), value ``dtype`` (f32, f16,
    bf16, f64) and the forward ``params``."""

    op: str
    shapes: Tuple[Optional[Tuple[int, ...]], ...]
    dtype: DType = _dt.float32
    params: Tuple[float, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "dtype", _dt.dtype(self.dtype))
        object.__setattr__(self, "shapes", tuple(None if s is None else tuple(int(v) for v in s)
                                                 for s in self.shapes))
        object.__setattr__(self, "params", tuple(float(p) for p in self.params))
        if self.op not in spec.OPS or spec.OPS[self.op].grad is None:
            wired = sorted(n for n, s in spec.OPS.items() if s.grad)
            raise UnsupportedError(f"no backward for {self.op!r}; wired: {', '.join(wired)}")

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return broadcast_shapes(*(s for s in self.shapes if s is not None))


@dataclass
class ElementwiseBackwardArgs:
    """``dy`` (the forward output's shape), the forward ``inputs`` (views / the same scalars),
    ``grads``: one view (input's shape, dense) or None per input (None: not wanted; always None
    for scalar inputs).  For ``where`` the inputs are (cond, a, b) and grads (None, da, db)."""

    dy: object
    inputs: Sequence
    grads: Sequence


class ElementwiseBackwardPlan(Plan):
    """dX_k = Σ_{broadcast dims} dy · ∂f/∂x_k for every array input of a forward elementwise op.
    One kernel computes all gradients at the broadcast shape; gradients of broadcast inputs are
    then summed over the broadcast dims by ReduceToPlan (deterministic, f32/f64 accumulation).
    Temporaries come from the stream-ordered pool; no workspace."""

    descriptor = ElementwiseBackwardDescriptor
    category = OpCategory.ELEMENTWISE
    #: the forward ops whose gradients this plan accepts (None: every differentiable op)
    OPS: Optional[frozenset] = None

    def _plan(self) -> None:
        d = self.desc
        check_family(type(self).__name__, d.op, None if self.OPS is None else frozenset(
            o for o in self.OPS if spec.OPS[o].grad))
        fw = spec.OPS[d.op]
        bw = spec.OPS[fw.grad]
        if len(d.shapes) != fw.nin:
            raise InvalidProblemError(f"{d.op}: {fw.nin} forward inputs expected")
        if d.dtype.short not in bw.dtypes:
            raise UnsupportedError(f"{d.op} backward: dtype {d.dtype.name} is not wired; "
                                   f"wired: {', '.join(bw.dtypes)}")
        out_shape = d.out_shape
        self._out_shape = out_shape
        self._n = prod(out_shape)
        # the backward kernel's inputs: dy then the forward inputs (where: dy, cond)
        kshapes = (out_shape,) + ((d.shapes[0],) if d.op == "where" else d.shapes)
        self._inner = ElementwisePlan.select(
            ElementwiseDescriptor(fw.grad, kshapes, d.dtype, None, d.params), self.pref)
        self._sku = KernelSku(self.category, fw.grad, d.dtype, self._arch, BackendKind.CUTE_DSL,
                              precision_of(d.dtype), template=spec.ELEMENTWISE.name,
                              knobs=self._inner.sku().knobs)

    def is_empty(self) -> bool:
        """Nothing to do: no broadcast element and no input element (an empty broadcast of a
        non-empty input still zeroes that input's gradient)."""
        return self._n == 0 and all(s is None or prod(s) == 0 for s in self.desc.shapes)

    def _bind(self, args):
        """(dy, the forward inputs, the gradient views or None) of checked Args."""
        d = self.desc
        dy = as_view(args.dy)
        if dy.shape != self._out_shape or dy.dtype != d.dtype:
            raise InvalidProblemError(f"dy: {dy.shape}/{dy.dtype.name}, expected "
                                      f"{self._out_shape}/{d.dtype.name}")
        if len(args.inputs) != len(d.shapes) or len(args.grads) != len(d.shapes):
            raise InvalidProblemError(f"{d.op} backward: {len(d.shapes)} inputs and grads "
                                      f"expected")
        grads = []
        for k, (g, shp) in enumerate(zip(args.grads, d.shapes)):
            if g is None:
                grads.append(None)
                continue
            if shp is None or (d.op == "where" and k == 0):
                raise InvalidProblemError(f"{d.op} backward: input {k} has no gradient")
            v = as_view(g)
            if v.shape != shp or v.dtype != d.dtype:
                raise InvalidProblemError(f"grad {k}: {v.shape}/{v.dtype.name}, expected "
                                          f"{shp}/{d.dtype.name}")
            if v.numel and not v.is_contiguous():
                raise UnsupportedError(f"grad {k}: gradients must be dense row-major")
            grads.append(v)
        return dy, list(args.inputs), grads

    def _launch(self, bound, stream: int, ws) -> None:
        dy, ins, grads = bound
        if self._n == 0:
            for g in grads:  # empty broadcast: gradients of non-empty inputs are zeros
                if g is not None and g.numel:
                    _zero(g, stream)
            return
        from ...runtime.memory import allocate, as_core_stream

        d = self.desc
        dev = dy.device
        where = d.op == "where"
        kin = [dy] + ([ins[0]] if where else list(ins))
        kgrads = grads[1:] if where else grads
        kshapes = d.shapes[1:] if where else d.shapes
        outs, reduce, bufs = [], [], []
        dense = contiguous_strides(self._out_shape)
        try:
            for g, shp in zip(kgrads, kshapes):
                if g is not None and shp == self._out_shape:
                    outs.append(g)
                    continue
                b = allocate(self._n * d.dtype.itemsize, stream, dev)
                bufs.append(b)
                t = TensorView._trusted(int(b.handle), self._out_shape, dense, d.dtype, dev, b)
                outs.append(t)
                if g is not None:
                    reduce.append((t, g))
            self._inner.run(ElementwiseArgs(kin, outs), stream=stream)
            for t, g in reduce:
                _sum_to_shape(t, g, stream, self._arch, bufs)
        finally:
            if bufs:
                cs = as_core_stream(stream, dev)
                for b in bufs:
                    b.close(stream=cs)


def _zero(v: TensorView, stream: int) -> None:
    from ...runtime.memory import memset_d8

    memset_d8(v.ptr, 0, v.numel * v.itemsize, stream)


@functools.lru_cache(maxsize=512)
def _reduce_to_plan(shape, target, dt, arch):
    from ..reduction.reductions import ReduceToDescriptor, ReduceToPlan

    return ReduceToPlan.select(ReduceToDescriptor(shape, target, dt), PlanPreference(arch=arch))


def _sum_to_shape(full: TensorView, g: TensorView, stream: int, arch, bufs) -> None:
    """g = full summed over the dims where g broadcasts (ReduceToPlan: deterministic, half
    types accumulate in f32; its workspace comes from the stream-ordered pool)."""
    from ...runtime.memory import allocate
    from ...vocabulary import Workspace
    from ..reduction.reductions import ReduceArgs

    plan = _reduce_to_plan(tuple(full.shape), tuple(g.shape), full.dtype, arch)
    ws = None
    n = plan.workspace_size()
    if n:
        b = allocate(n, stream, full.device)
        bufs.append(b)
        ws = Workspace(int(b.handle), n, b)
    plan.run(ReduceArgs(full, g), stream, ws)


def backward_plan(forward: type) -> type:
    """The backward plan class of the forward family plan ``forward`` (same ops)."""
    name = forward.__name__[:-len("Plan")] + "BackwardPlan"
    return family_plan(ElementwiseBackwardPlan, name, forward.OPS,
                       f"Backward of {forward.__name__}.")


UnaryBackwardPlan = backward_plan(UnaryPlan)
UnaryParamBackwardPlan = backward_plan(UnaryParamPlan)
BinaryBackwardPlan = backward_plan(BinaryPlan)
TernaryBackwardPlan = backward_plan(TernaryPlan)
WhereBackwardPlan = backward_plan(WherePlan)
AffineBackwardPlan = backward_plan(AffinePlan)
GatedActivationBackwardPlan = backward_plan(GatedActivationPlan)
PReluBackwardPlan = backward_plan(PReluPlan)


def cast_backward(dy, dx, stream=None) -> None:
    """CastBackward: ``dx = dy`` converted back to the input's dtype (a cast)."""
    a, b = as_view(dy), as_view(dx)
    ElementwisePlan.select(ElementwiseDescriptor("cast", (a.shape,), a.dtype, b.dtype)).run(
        ElementwiseArgs([a], [b]), stream=stream)


__all__ = [
    "UnaryPlan", "UnaryParamPlan", "BinaryPlan", "BinaryParamPlan", "BinaryCmpPlan",
    "TernaryPlan", "WherePlan", "CastPlan", "AffinePlan", "GatedActivationPlan", "PReluPlan",
    "ElementwiseBackwardDescriptor", "ElementwiseBackwardArgs", "ElementwiseBackwardPlan",
    "UnaryBackwardPlan", "UnaryParamBackwardPlan", "BinaryBackwardPlan", "TernaryBackwardPlan",
    "WhereBackwardPlan", "AffineBackwardPlan", "GatedActivationBackwardPlan",
    "PReluBackwardPlan", "cast_backward",
]
