"""Pointwise losses, forward and backward, with torch.nn.functional semantics.

    desc = PointwiseLossDescriptor("huber_loss", shapes=((64, 1000), (64, 1000)), dtype="bf16",
                                   reduction="mean", delta=0.5)
    plan = PointwiseLossPlan.select(desc)
    ws = plan.workspace_size()
    plan.run(PointwiseLossArgs(inputs=(x, y), out=loss), workspace=ws_buffer)

Losses (``loss``, the torch.nn.functional name; ``shapes`` = the array operands in torch's
order), per-element term ℓ with d = x − y:

* mse_loss (input, target): d²
* l1_loss (input, target): |d|
* huber_loss (input, target; delta > 0): ½d² if |d| < δ else δ(|d| − ½δ)
* smooth_l1_loss (input, target; beta ≥ 0): ½d²/β if |d| < β else |d| − ½β (β = 0: l1)
* soft_margin_loss (input, target): log(1 + exp(−y·x)) (stable softplus)
* binary_cross_entropy (input, target; weight):
  −w[y·max(log x, −100) + (1−y)·max(log1p(−x), −100)]
* binary_cross_entropy_with_logits (input, target; weight, pos_weight):
  w[(1−y)x + (1 + (pw−1)y)·softplus(−x)]
* kl_div (input, target; log_target): xlogy(y, y) − y·x, or exp(y)(y − x)
* poisson_nll_loss (input, target; log_input, full, eps): exp(x) − y·x, or x − y·log(x + eps);
  full adds y log y − y + ½log(2πy) where y > 1
* gaussian_nll_loss (input, target, var; full, eps): ½(log v + d²/v) (+ ½log 2π when full),
  v = max(var, eps)
* hinge_embedding_loss (input, target; margin): [y≠1]·max(0, m − x) + [y≠−1]·x
* margin_ranking_loss (input1, input2, target; margin): max(0, −y(x1 − x2) + m)
* multilabel_soft_margin_loss (input, target; weight): per row
  (1/C)·Σ_c w_c[y·softplus(−x) + (1−y)·softplus(x)] over the last (class) dim

Reductions: ``none`` (the broadcast shape; multilabel: the input shape without its last dim),
``mean`` (over every element; multilabel: over rows), ``sum``; kl_div also ``batchmean``
(sum / input.shape[0]).  Empty inputs follow torch: mean → NaN, sum → 0.

Shapes: operands broadcast (torch rules); bce / bce_with_logits need target.shape == input.shape,
margin_ranking needs equal ranks, gaussian var must equal the input shape, or the input shape
without its last dim, or with a last dim of 1; weight (and pos_weight) broadcast to the input.

Kernel (``loss_pointwise`` template): dense flat operands, 16-byte vector loads.  Operands that are
broadcast, strided or misaligned are first copied into dense temporaries from the stream-ordered
pool (StridedCopy); ``none`` outputs that are not dense are written through a dense temporary.
sum / mean: one compute-typed partial per CTA (in the workspace), then one CTA adds the partials
in a fixed order and scales — deterministic, bit-identical reruns, no atomics.  Half types
compute in f32, f64 in f64.

Backward (``PointwiseLossBackwardPlan``): grads of the differentiable operands (``grad_names(loss)``: input
and target for mse / l1 / huber / smooth_l1 / kl_div; input, target and var for gaussian_nll;
input1 and input2 for margin_ranking; input otherwise) = dloss · scale · ∂ℓ/∂operand, with dloss a
scalar device value (mean / sum / batchmean: scale 1/n, 1, 1/batch) or a tensor of the ``none``
output shape.  A grad whose operand was broadcast is summed back to the operand's shape
(ReduceToPlan).  Unchecked (as torch's CUDA asserts): bce input outside [0, 1], negative var.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from ...dtypes import DType, FP4, float32
from ...errors import InvalidProblemError, UnsupportedError
from ...plan import Plan, align_up, check_dtype, prod, view_arg
from ...tensor import TensorView, check_shape, contiguous_strides
from ...vocabulary import Workspace
from ..elementwise.elementwise import broadcast_shapes, broadcast_strides
from ._common import REDUCTIONS, check_exact_descriptor, loss_ct, loss_sku
from .specs import loss_pointwise as spec

# torch name -> operand names (torch order)
LOSSES = {
    "mse_loss": ("input", "target"),
    "l1_loss": ("input", "target"),
    "huber_loss": ("input", "target"),
    "smooth_l1_loss": ("input", "target"),
    "soft_margin_loss": ("input", "target"),
    "binary_cross_entropy": ("input", "target"),
    "binary_cross_entropy_with_logits": ("input", "target"),
    "kl_div": ("input", "target"),
    "poisson_nll_loss": ("input", "target"),
    "gaussian_nll_loss": ("input", "target", "var"),
    "hinge_embedding_loss": ("input", "target"),
    "margin_ranking_loss": ("input1", "input2", "target"),
    "multilabel_soft_margin_loss": ("input", "target"),
}
_OP = {"mse_loss": "mse", "l1_loss": "l1", "huber_loss": "huber", "smooth_l1_loss": "smooth_l1",
       "soft_margin_loss": "soft_margin", "binary_cross_entropy": "bce",
       "binary_cross_entropy_with_logits": "bce_logits", "gaussian_nll_loss": "gaussian_nll",
       "hinge_embedding_loss": "hinge_embedding", "margin_ranking_loss": "margin_ranking",
       "multilabel_soft_margin_loss": "multilabel_soft_margin"}
_WEIGHTED = ("binary_cross_entropy", "binary_cross_entropy_with_logits",
             "multilabel_soft_margin_loss")


def template_op(desc) -> str:
    """The loss_pointwise op a descriptor runs (variants resolved)."""
    if desc.loss == "kl_div":
        return "kl_div_log" if desc.log_target else "kl_div"
    if desc.loss == "poisson_nll_loss":
        return "poisson_nll_log" if desc.log_input else "poisson_nll"
    if desc.loss == "smooth_l1_loss" and desc.beta == 0.0:
        return "l1"
    return _OP[desc.loss]


def grad_names(loss: str) -> Tuple[str, ...]:
    """Names of the operands the backward plan differentiates, in ``grads`` order."""
    op = spec.OPS["kl_div" if loss == "kl_div" else "poisson_nll" if loss == "poisson_nll_loss"
                  else _OP[loss]]
    return tuple(LOSSES[loss][k] for k in op.grads)


def loss_params(desc) -> Tuple[float, float]:
    """The kernel's float parameters (p0, p1) of a descriptor: p0 = delta (huber), beta
    (smooth_l1), margin (hinge, margin_ranking), eps (poisson, gaussian), else 0; p1 = full."""
    p0 = {"huber_loss": desc.delta, "smooth_l1_loss": desc.beta,
          "hinge_embedding_loss": desc.margin, "margin_ranking_loss": desc.margin,
          "poisson_nll_loss": desc.eps, "gaussian_nll_loss": desc.eps}.get(desc.loss, 0.0)
    return p0, 1.0 if desc.full else 0.0


def _num(v, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InvalidProblemError(f"{what} must be a real number, got {v!r}")
    v = float(v)
    if math.isnan(v):
        raise InvalidProblemError(f"{what} must not be NaN")
    return v


@dataclass(frozen=True)
class PointwiseLossDescriptor:
    """``loss`` (a torch.nn.functional name of :data:`LOSSES`), ``shapes`` (one shape per array
    operand, in torch's order), ``dtype`` (f32 f16 bf16 f64), ``reduction`` (none / mean / sum;
    kl_div also batchmean), ``weight_shape`` / ``pos_weight_shape`` (None = absent), and the
    loss's parameters: ``delta`` (huber), ``beta`` (smooth_l1), ``margin`` (hinge: default 1,
    margin_ranking: default 0), ``eps`` (poisson: 1e-8, gaussian: 1e-6), ``full`` (poisson,
    gaussian), ``log_input`` (poisson), ``log_target`` (kl_div)."""

    loss: str
    shapes: Tuple[Tuple[int, ...], ...]
    dtype: DType = float32
    reduction: str = "mean"
    weight_shape: Optional[Tuple[int, ...]] = None
    pos_weight_shape: Optional[Tuple[int, ...]] = None
    delta: float = 1.0
    beta: float = 1.0
    margin: Optional[float] = None
    eps: Optional[float] = None
    full: bool = False
    log_input: bool = True
    log_target: bool = False

    def __post_init__(self):
        if self.loss not in LOSSES:
            raise UnsupportedError(f"pointwise loss {self.loss!r} is not wired; wired: "
                                   f"{', '.join(LOSSES)}")
        names = LOSSES[self.loss]
        shapes = tuple(self.shapes)
        if len(shapes) != len(names):
            raise InvalidProblemError(f"{self.loss}: {len(names)} operand shapes expected "
                                      f"({', '.join(names)}), got {len(shapes)}")
        shapes = tuple(check_shape(s, f"{self.loss} {n}") for s, n in zip(shapes, names))
        object.__setattr__(self, "shapes", shapes)
        object.__setattr__(self, "dtype", check_dtype(self.dtype, FP4, self.loss))
        allowed = REDUCTIONS + (("batchmean",) if self.loss == "kl_div" else ())
        if self.reduction not in allowed:
            raise InvalidProblemError(f"{self.loss}: {self.reduction!r} is not a valid value "
                                      f"for reduction; valid: {', '.join(allowed)}")
        for f in ("weight_shape", "pos_weight_shape"):
            v = getattr(self, f)
            if v is not None:
                object.__setattr__(self, f, check_shape(v, f"{self.loss} {f}"))
        if self.weight_shape is not None and self.loss not in _WEIGHTED:
            raise InvalidProblemError(f"{self.loss} takes no weight")
        if self.pos_weight_shape is not None and self.loss != "binary_cross_entropy_with_logits":
            raise InvalidProblemError(f"{self.loss} takes no pos_weight")
        for f in ("delta", "beta"):
            object.__setattr__(self, f, _num(getattr(self, f), f"{self.loss} {f}"))
        for f in ("full", "log_input", "log_target"):
            object.__setattr__(self, f, bool(getattr(self, f)))
        if self.loss == "huber_loss" and not self.delta > 0:
            raise InvalidProblemError("huber_loss does not support non-positive values for delta")
        if self.loss == "smooth_l1_loss" and self.beta < 0:
            raise InvalidProblemError("smooth_l1_loss does not support negative values for beta")
        m = self.margin
        if m is None:
            m = 1.0 if self.loss == "hinge_embedding_loss" else 0.0
        object.__setattr__(self, "margin", _num(m, f"{self.loss} margin"))
        e = self.eps
        if e is None:
            e = 1e-6 if self.loss == "gaussian_nll_loss" else 1e-8
        object.__setattr__(self, "eps", _num(e, f"{self.loss} eps"))
        self._check_shapes()

    # -- shapes ------------------------------------------------------------------------
    def _check_shapes(self) -> None:
        s = self.shapes
        if self.loss in ("binary_cross_entropy", "binary_cross_entropy_with_logits"):
            if s[1] != s[0]:
                raise InvalidProblemError(f"{self.loss}: target size {s[1]} must be the same as "
                                          f"input size {s[0]}")
        if self.loss == "margin_ranking_loss" and not len(s[0]) == len(s[1]) == len(s[2]):
            raise InvalidProblemError(f"margin_ranking_loss: all input tensors should have the "
                                      f"same dimension, got {s}")
        if self.loss == "multilabel_soft_margin_loss" and len(s[0]) == 0:
            raise InvalidProblemError("multilabel_soft_margin_loss: input needs a class dim")
        full = broadcast_shapes(*self.operand_shapes())
        for extra in (self.weight_shape, self.pos_weight_shape):
            if extra is not None and broadcast_shapes(full, extra) != full:
                raise InvalidProblemError(f"{self.loss}: weight shape {extra} does not broadcast "
                                          f"to {full}")
        if self.loss in ("binary_cross_entropy", "binary_cross_entropy_with_logits",
                         "multilabel_soft_margin_loss") and full != s[0]:
            raise InvalidProblemError(f"{self.loss}: operands broadcast to {full}, not to the "
                                      f"input shape {s[0]}")

    def operand_shapes(self) -> Tuple[Tuple[int, ...], ...]:
        """The operands' shapes as broadcast (gaussian var adjusted per torch's rules)."""
        s = self.shapes
        if self.loss != "gaussian_nll_loss":
            return s
        x, var = s[0], s[2]
        if var == x:
            return s
        if len(x) >= 1 and var == x[:-1]:
            return (s[0], s[1], var + (1,))
        if len(x) >= 1 and len(var) == len(x) and var[:-1] == x[:-1] and var[-1] == 1:
            return s
        raise InvalidProblemError(f"gaussian_nll_loss: var is of incorrect size {var} "
                                  f"(input {x})")

    @property
    def full_shape(self) -> Tuple[int, ...]:
        """The broadcast shape of the per-element terms."""
        return broadcast_shapes(*self.operand_shapes())

    @property
    def out_shape(self) -> Tuple[int, ...]:
        if self.reduction != "none":
            return ()
        f = self.full_shape
        return f[:-1] if self.loss == "multilabel_soft_margin_loss" else f


@dataclass(frozen=True)
class PointwiseLossBackwardDescriptor(PointwiseLossDescriptor):
    """Same fields as :class:`PointwiseLossDescriptor`; the backward plan's problem."""


@dataclass
class PointwiseLossArgs:
    """``inputs``: one device view per descriptor shape; ``out``: the loss (``desc.out_shape``,
    the dtype); ``weight`` / ``pos_weight`` when the descriptor has their shapes."""

    inputs: Sequence
    out: object
    weight: object = None
    pos_weight: object = None


@dataclass
class PointwiseLossBackwardArgs:
    """``dloss``: upstream gradient (``desc.out_shape``: a 0-d scalar for mean / sum /
    batchmean); ``inputs`` as forward; ``grads``: one view or None per ``grad_names(loss)``
    (each of its operand's shape and the dtype)."""

    dloss: object
    inputs: Sequence
    grads: Sequence
    weight: object = None
    pos_weight: object = None


def _check_no_broadcast(v: TensorView, msg: str) -> None:
    """InvalidProblemError(``msg``) when output view ``v`` (more than one element) has a zero
    stride along an extent > 1."""
    if v.numel > 1:
        for n_, s_ in zip(v.shape, v.strides):
            if s_ == 0 and n_ > 1:
                raise InvalidProblemError(msg)


class _Scratch:
    """The dense temporaries of one run, from the stream-ordered pool of device ``dev``; given
    back (ordered on ``stream``) by :meth:`release` once everything that reads them is
    enqueued."""

    def __init__(self, stream: int, dev: int):
        self.stream, self.dev, self._bufs = stream, dev, []

    def view(self, dt: DType, shape) -> TensorView:
        """A new dense ``shape`` temporary of ``dt``."""
        from ...runtime.memory import allocate

        b = allocate(prod(shape) * dt.itemsize, self.stream, self.dev)
        self._bufs.append(b)
        return TensorView._trusted(int(b.handle), shape, contiguous_strides(shape), dt, self.dev,
                                   b)

    def release(self) -> None:
        if self._bufs:
            from ...runtime.memory import as_core_stream

            for b in self._bufs:
                b.close(stream=as_core_stream(self.stream, self.dev))


def _copy_into(src: TensorView, out: TensorView, stream: int, pref) -> None:
    """out (any non-broadcast strides) = src, cast to out's dtype when they differ."""
    from ..elementwise.elementwise import ElementwiseArgs, ElementwiseDescriptor, ElementwisePlan

    op = "copy" if src.dtype is out.dtype else "cast"
    p = ElementwisePlan.select(ElementwiseDescriptor(
        op, (tuple(src.shape),), src.dtype, None if op == "copy" else out.dtype), pref)
    p.run(ElementwiseArgs([src], [out]), stream)


class _LossBase(Plan):
    """What both pointwise-loss plans share: the SKU choice, the views of the inputs, the
    densified operands and the ``loss_pointwise`` launch.  ``_bind`` returns views ending with
    the device ordinal; ``_launch`` hands them to ``_enqueue`` with the run's :class:`_Scratch`."""

    def _plan(self) -> None:
        check_exact_descriptor(self)
        d = self.desc
        self._op = template_op(d)
        self._spec = spec.OPS[self._op]
        self._full = d.full_shape
        self._n = prod(self._full)
        self._ct = loss_ct(d.dtype)
        ml = d.loss == "multilabel_soft_margin_loss"
        self._C = self._full[-1] if ml else 1
        self._rows = prod(self._full[:-1]) if ml else self._n
        self._params = loss_params(d)
        self._knobs = {mode: spec.LossPointwiseKnobs(op=self._op, dtype=d.dtype.short, mode=mode)
                       for mode in spec.MODES}
        self._knobs["fin"] = spec.finish_knobs(d.dtype.short)
        self._ws = 0

    def _scale(self) -> float:
        """Factor applied to the summed terms (and to the upstream gradient in backward)."""
        d = self.desc
        C, rows, n = self._C, self._rows, self._n
        inv_c = (1.0 / C) if C else float("nan")
        if d.reduction == "mean":
            return 1.0 / n if n else float("nan")
        if d.reduction == "batchmean":
            b = d.shapes[0][0] if d.shapes[0] else 1
            return 1.0 / b if b else float("nan")
        if d.loss == "multilabel_soft_margin_loss":
            return inv_c if rows else 0.0
        return 1.0

    def _make_sku(self, mode: str):
        return loss_sku(self.desc, self._arch, self.desc.loss, spec.LOSS_POINTWISE,
                        self._knobs[mode])

    def workspace_size(self) -> int:
        return self._ws

    def _launch(self, bound, stream, ws) -> None:
        scratch = _Scratch(stream, bound[-1])
        try:
            self._enqueue(*bound[:-1], ws, scratch)
        finally:
            scratch.release()

    def _in_views(self, args):
        d = self.desc
        names = LOSSES[d.loss]
        if len(args.inputs) != len(names):
            raise InvalidProblemError(f"{d.loss}: {len(names)} inputs expected "
                                      f"({', '.join(names)}), got {len(args.inputs)}")
        ins, dev = [], None
        for x, shp, nm in zip(args.inputs, d.shapes, names):
            v = view_arg(x, nm, shape=shp, dtype=d.dtype, device=dev)
            dev = v.device
            ins.append(v)
        w = pw = None
        if d.weight_shape is not None:
            w = view_arg(args.weight, "weight", shape=d.weight_shape, dtype=d.dtype, device=dev)
        elif args.weight is not None:
            raise InvalidProblemError(f"{d.loss}: weight given but the descriptor has no "
                                      f"weight_shape")
        if d.pos_weight_shape is not None:
            pw = view_arg(args.pos_weight, "pos_weight", shape=d.pos_weight_shape,
                          dtype=d.dtype, device=dev)
        elif args.pos_weight is not None:
            raise InvalidProblemError(f"{d.loss}: pos_weight given but the descriptor has no "
                                      f"pos_weight_shape")
        return ins, w, pw, dev

    # -- densify ---------------------------------------------------------------------------
    def _dense(self, v: TensorView, scratch: _Scratch, adjusted=None) -> int:
        """Pointer of a dense, 16-byte aligned copy of ``v`` broadcast to ``self._full``
        (``v`` itself when it already is one).  ``adjusted``: v's shape as broadcast."""
        full = self._full
        if v.shape == full and v.is_contiguous() and v.ptr % 16 == 0:
            return v.ptr
        from ..shape.repeat import strided_copy

        vs, vst = tuple(v.shape), tuple(v.strides)
        if adjusted is not None and adjusted != vs:  # gaussian var (…,) -> (…, 1)
            vs, vst = adjusted, vst + (0,)
        t = scratch.view(v.dtype, full)
        src = TensorView._trusted(v.ptr, full, broadcast_strides(vs, vst, full), v.dtype,
                                  scratch.dev, v)
        strided_copy(src, t, scratch.stream)
        return t.ptr

    def _operand_ptrs(self, ins, w, pw, scratch: _Scratch):
        adj = self.desc.operand_shapes()
        ptrs = [self._dense(v, scratch, adj[k]) for k, v in enumerate(ins)]
        ptrs += [0] * (3 - len(ptrs))
        wp = 0 if w is None else self._dense(w, scratch)
        pwp = 0 if pw is None else self._dense(pw, scratch)
        flags = (spec.HAS_W if w is not None else 0) | (spec.HAS_PW if pw is not None else 0)
        return ptrs, wp, pwp, flags

    def _launch_k(self, mode, dev, grid, outs, ptrs, wp, pwp, g, part, n, flags, scale, stream):
        """One ``loss_pointwise`` launch of ``mode`` (nothing for an empty grid)."""
        if grid == 0:
            return
        lk = self._kernel(spec.LOSS_POINTWISE, self._knobs[mode], dev)
        p0, p1 = self._params
        lk.launch((grid, 1, 1), list(outs) + list(ptrs) + [wp, pwp, g, part, n, flags, p0, p1,
                                                           scale], stream)

    def _grid(self) -> int:
        per = spec.per_block(self.desc.dtype.short)
        return (self._n + per - 1) // per


class PointwiseLossPlan(_LossBase):
    """Forward of one pointwise loss (see the module docstring).  Workspace: one compute-typed
    partial per CTA for mean / sum (``ceil(n / (256·4·VEC))`` values), plus, for
    multilabel_soft_margin with ``none``, the per-element terms and the row-mean plan's scratch."""

    descriptor = PointwiseLossDescriptor

    def _plan(self) -> None:
        super()._plan()
        desc, ct = self.desc, self._ct
        self._ml_none = desc.reduction == "none" and desc.loss == "multilabel_soft_margin_loss"
        self._inner = None
        if self._ml_none:
            from ..reduction.reductions import ReduceDescriptor, ReducePlan

            self._t_bytes = align_up(self._n * ct.itemsize)
            self._r_bytes = align_up(self._rows * ct.itemsize)
            self._inner = ReducePlan.select(ReduceDescriptor(self._full, (-1,), "mean", ct),
                                            self.pref)
            self._ws = self._t_bytes + self._r_bytes + self._inner.workspace_size()
            mode = "none"
        elif desc.reduction == "none":
            mode = "none"
        else:
            self._ws = align_up(max(self._grid(), 1) * ct.itemsize)
            mode = "reduce"
        self._sku = self._make_sku(mode)

    def is_empty(self) -> bool:
        return self.desc.reduction == "none" and prod(self.desc.out_shape) == 0

    def _bind(self, args):
        """(inputs, weight, pos_weight, out, device) views of the Args."""
        d = self.desc
        ins, w, pw, dev = self._in_views(args)
        out = view_arg(args.out, "out", shape=d.out_shape, dtype=d.dtype, device=dev)
        _check_no_broadcast(out, "out may not have a zero (broadcast) stride")
        return ins, w, pw, out, dev

    def _enqueue(self, ins, w, pw, out, ws: Workspace, scratch: _Scratch) -> None:
        d = self.desc
        n, dev, st = self._n, scratch.dev, scratch.stream
        if d.reduction != "none":
            grid = self._grid()
            if n:
                ptrs, wp, pwp, flags = self._operand_ptrs(ins, w, pw, scratch)
                self._launch_k("reduce", dev, grid, (0, 0, 0), ptrs, wp, pwp, 0, ws.ptr, n,
                               flags, 1.0, st)
            self._launch_k("fin", dev, 1, (out.ptr, 0, 0), (0, 0, 0), 0, 0, 0, ws.ptr, grid,
                           0, self._scale(), st)
            return
        ptrs, wp, pwp, flags = self._operand_ptrs(ins, w, pw, scratch)
        if self._ml_none:
            from ..reduction.reductions import ReduceArgs

            ct = self._ct
            terms = TensorView._trusted(ws.ptr, self._full, contiguous_strides(self._full), ct,
                                        dev, None)
            self._launch_k("none", dev, self._grid(), (terms.ptr, 0, 0), ptrs, wp, pwp, 0, 0, n,
                           flags, 1.0, st)
            rshape = self._full[:-1]
            if d.dtype is ct and out.is_contiguous():
                red_out = out
            else:
                red_out = TensorView._trusted(ws.ptr + self._t_bytes, rshape,
                                              contiguous_strides(rshape), ct, dev, None)
            inner_ws = Workspace(ws.ptr + self._t_bytes + self._r_bytes,
                                 ws.nbytes - self._t_bytes - self._r_bytes, None)
            self._inner.run(ReduceArgs(terms, red_out), st,
                            inner_ws if self._inner.workspace_size() else None)
            if red_out is not out:
                _copy_into(red_out, out, st, self.pref)
            return
        if out.is_contiguous() and out.ptr % 16 == 0:
            self._launch_k("none", dev, self._grid(), (out.ptr, 0, 0), ptrs, wp, pwp, 0, 0, n,
                           flags, 1.0, st)
            return
        t = scratch.view(d.dtype, self._full)
        self._launch_k("none", dev, self._grid(), (t.ptr, 0, 0), ptrs, wp, pwp, 0, 0, n, flags,
                       1.0, st)
        _copy_into(t, out, st, self.pref)


class PointwiseLossBackwardPlan(_LossBase):
    """Backward of one pointwise loss: the grads named by :func:`grad_names` (any subset; None
    skips one) = dloss · scale · ∂ℓ/∂operand.  Workspace: the ReduceTo scratch when an operand
    was broadcast (its grad is summed back to its shape)."""

    descriptor = PointwiseLossBackwardDescriptor

    def _plan(self) -> None:
        super()._plan()
        desc = self.desc
        self._names = grad_names(desc.loss)
        adj = desc.operand_shapes()
        #: grad index -> (ReduceToPlan summing the full-shape grad back, the operand's shape)
        self._reduce_to = {}
        ws = 0
        for k, opi in enumerate(self._spec.grads):
            shp = desc.shapes[opi]
            if adj[opi] != self._full or shp != self._full:
                from ..reduction.reductions import ReduceToDescriptor, ReduceToPlan

                tgt = adj[opi]
                rp = ReduceToPlan.select(ReduceToDescriptor(self._full, tgt, desc.dtype),
                                         self.pref)
                self._reduce_to[k] = (rp, tgt)
                ws = max(ws, rp.workspace_size())
        self._ws = ws
        self._sku = self._make_sku("bw")

    def is_empty(self) -> bool:
        return self._n == 0

    def _bind(self, args):
        """(inputs, weight, pos_weight, dloss, grads, device) views of the Args."""
        d = self.desc
        ins, w, pw, dev = self._in_views(args)
        dl = view_arg(args.dloss, "dloss", shape=d.out_shape, dtype=d.dtype, device=dev)
        if len(args.grads) != len(self._names):
            raise InvalidProblemError(f"{d.loss}: grads must hold {len(self._names)} entries "
                                      f"({', '.join(self._names)}), got {len(args.grads)}")
        grads = []
        for k, (gv, nm) in enumerate(zip(args.grads, self._names)):
            opi = self._spec.grads[k]
            v = view_arg(gv, f"grad_{nm}", shape=d.shapes[opi], dtype=d.dtype, device=dev,
                         optional=True)
            if v is not None and v.numel > 1:
                _check_no_broadcast(v, f"grad_{nm} may not have a zero stride")
                if k in self._reduce_to and not v.is_contiguous():
                    raise UnsupportedError(f"grad_{nm}: a broadcast operand's grad must be dense")
            grads.append(v)
        return ins, w, pw, dl, grads, dev

    def _enqueue(self, ins, w, pw, dl, grads, ws, scratch: _Scratch) -> None:
        if all(g is None for g in grads):
            return
        from ..reduction.reductions import ReduceArgs

        d = self.desc
        dev, st = scratch.dev, scratch.stream
        ptrs, wp, pwp, flags = self._operand_ptrs(ins, w, pw, scratch)
        scale = 1.0
        if d.reduction == "none":
            if d.loss == "multilabel_soft_margin_loss":
                scale = 1.0 / self._C
                gp = self._dense(dl, scratch, tuple(dl.shape) + (1,))
            else:
                gp = self._dense(dl, scratch)
        else:
            scale = self._scale()
            flags |= spec.G_SCALAR
            gp = dl.ptr
        outs, finish = [], []
        for k, gv in enumerate(grads):
            if gv is None:
                if k == 0:  # the kernel always writes o0
                    outs.append(scratch.view(d.dtype, self._full).ptr)
                else:
                    outs.append(0)
                continue
            flags |= (0, spec.HAS_O1, spec.HAS_O2)[k]
            if k not in self._reduce_to and gv.is_contiguous() and gv.ptr % 16 == 0:
                outs.append(gv.ptr)
                continue
            t = scratch.view(d.dtype, self._full)
            outs.append(t.ptr)
            finish.append((k, t, gv))
        outs += [0] * (3 - len(outs))
        self._launch_k("bw", dev, self._grid(), outs, ptrs, wp, pwp, gp, 0, self._n, flags,
                       scale, st)
        for k, t, gv in finish:
            if k not in self._reduce_to:
                _copy_into(t, gv, st, self.pref)
                continue
            rp, tgt = self._reduce_to[k]
            if tuple(gv.shape) != tgt:  # gaussian var (…,) seen as (…, 1): same memory
                gv = TensorView._trusted(gv.ptr, tgt, contiguous_strides(tgt), gv.dtype, dev, gv)
            rp.run(ReduceArgs(t, gv), st, ws if rp.workspace_size() else None)
