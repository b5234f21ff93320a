"""Row-structured losses with torch.nn.functional semantics, forward and backward:
``CosineEmbeddingLossPlan``, ``MultiMarginLossPlan``, ``MultilabelMarginLossPlan``,
``TripletMarginLossPlan`` and their ``*BackwardPlan``s.

Every loss reads ``n`` rows of length ``d`` (``c`` classes), any (row, column) strides, and makes
one loss per row (one CTA per row, loop mode: any row length):

* cosine_embedding: ``cos = x1·x2 / sqrt((|x1|²+1e-12)(|x2|²+1e-12))``; loss = 1 − cos for
  target 1, max(0, cos − margin) for target −1, 0 for other target values (target: x's dtype).
* multi_margin: ``Σ_{i≠y} max(0, margin − x[y] + x[i])^p · w[y] / c``, p ∈ {1, 2}; target int64
  (wrapped once Python-style; a target outside [−c, c) gives loss 0 and sets ``status``).
* multilabel_margin: target (n, c) int64 class indices up to the first negative value;
  ``Σ_j Σ_{i ∉ targets} max(0, 1 − (x[y_j] − x[i])) / c`` (a target ≥ c ends the list and sets
  ``status``).
* triplet_margin: ``max(0, margin + ‖a−p+eps‖_p − ‖a−n+eps‖_p)``, with ``swap`` the negative
  distance is ``min(‖a−n+eps‖_p, ‖p−n+eps‖_p)``; any p > 0.

Reductions: ``none`` (out shape (n,)), ``sum`` / ``mean`` (out shape ()): per-row losses in the
compute type go to the workspace, then one CTA sums them in a fixed order (deterministic); mean
of an empty batch is NaN, sum 0.  Dtypes f32, f16, bf16, f64: math in f32 (f64 for f64).
Backward plans take ``dloss`` (shape (n,) for none, () otherwise, loss dtype) and write the input
gradients torch's autograd gives (cosine: x1 and x2; triplet: anchor, positive, negative; the
margin losses: input), each optional where there are several.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...dtypes import FP4, DType, int32, int64, uint8
from ...errors import InvalidProblemError, UnsupportedError
from ...plan import Plan, align_up, check_dtype, check_finite, check_writable_no_overlap, view_arg
from ._common import (check_exact_descriptor, check_int, check_reduction, loss_ct,
                      loss_out_shape, loss_sku)
from .specs import loss_row as spec


# ------------------------------------------------------------------------------ descriptors
@dataclass(frozen=True)
class CosineEmbeddingLossDescriptor:
    """``n`` rows of length ``d``; ``margin``; ``reduction`` none / mean / sum."""

    n: int
    d: int
    dtype: DType
    margin: float = 0.0
    reduction: str = "mean"

    def __post_init__(self):
        _check_row_desc(self, "CosineEmbeddingLoss", "d")
        object.__setattr__(self, "margin", check_finite(self.margin, "margin"))


@dataclass(frozen=True)
class MultiMarginLossDescriptor:
    """``n`` rows of ``c`` class scores; ``p`` ∈ {1, 2}; ``margin``; ``has_weight`` (class
    weights of length c, x's dtype); ``reduction``."""

    n: int
    c: int
    dtype: DType
    p: int = 1
    margin: float = 1.0
    has_weight: bool = False
    reduction: str = "mean"

    def __post_init__(self):
        _check_row_desc(self, "MultiMarginLoss", "c", lo=1)
        if self.p not in (1, 2) or isinstance(self.p, bool):
            raise UnsupportedError(f"MultiMarginLoss: p={self.p!r} is not wired; wired: 1, 2")
        object.__setattr__(self, "p", int(self.p))
        object.__setattr__(self, "margin", check_finite(self.margin, "margin"))
        object.__setattr__(self, "has_weight", bool(self.has_weight))


@dataclass(frozen=True)
class MultilabelMarginLossDescriptor:
    """``n`` rows of ``c`` class scores, target (n, c) int64; ``reduction``."""

    n: int
    c: int
    dtype: DType
    reduction: str = "mean"

    def __post_init__(self):
        _check_row_desc(self, "MultilabelMarginLoss", "c", lo=1)


@dataclass(frozen=True)
class TripletMarginLossDescriptor:
    """``n`` rows of length ``d``; ``margin``, norm degree ``p`` > 0, ``eps``, ``swap``."""

    n: int
    d: int
    dtype: DType
    margin: float = 1.0
    p: float = 2.0
    eps: float = 1e-6
    swap: bool = False
    reduction: str = "mean"

    def __post_init__(self):
        _check_row_desc(self, "TripletMarginLoss", "d")
        for f in ("margin", "p", "eps"):
            object.__setattr__(self, f, check_finite(getattr(self, f), f))
        if self.p <= 0:
            raise InvalidProblemError(f"TripletMarginLoss: p must be > 0, got {self.p}")
        object.__setattr__(self, "swap", bool(self.swap))


def _check_row_desc(desc, who, dim, lo=0):
    """The checks every row-loss descriptor shares: ``n`` and the row length ``dim`` (>= ``lo``)
    below 2^31, a wired dtype (resolved in place), a valid reduction."""
    check_int(desc.n, "n", who)
    check_int(getattr(desc, dim), dim, who, lo)
    if getattr(desc, dim) >= 2 ** 31 or desc.n >= 2 ** 31:
        raise UnsupportedError(f"{who}: n and the row length must be < 2^31")
    object.__setattr__(desc, "dtype", check_dtype(desc.dtype, FP4, who))
    check_reduction(desc.reduction, who)


# backward descriptors: the same fields (a distinct type per plan)
@dataclass(frozen=True)
class CosineEmbeddingLossBackwardDescriptor(CosineEmbeddingLossDescriptor):
    """As :class:`CosineEmbeddingLossDescriptor`."""


@dataclass(frozen=True)
class MultiMarginLossBackwardDescriptor(MultiMarginLossDescriptor):
    """As :class:`MultiMarginLossDescriptor`."""


@dataclass(frozen=True)
class MultilabelMarginLossBackwardDescriptor(MultilabelMarginLossDescriptor):
    """As :class:`MultilabelMarginLossDescriptor`."""


@dataclass(frozen=True)
class TripletMarginLossBackwardDescriptor(TripletMarginLossDescriptor):
    """As :class:`TripletMarginLossDescriptor`."""


# ------------------------------------------------------------------------------------ args
@dataclass
class CosineEmbeddingLossArgs:
    """x1, x2: (n, d); target: (n,) of x's dtype (1 / −1); out: (n,) or ()."""

    x1: object
    x2: object
    target: object
    out: object


@dataclass
class MultiMarginLossArgs:
    """input (n, c); target (n,) int64; out (n,) or (); weight (c,) when has_weight; status:
    optional int32 word set to 1 on a target outside [−c, c)."""

    input: object
    target: object
    out: object
    weight: object = None
    status: object = None


@dataclass
class MultilabelMarginLossArgs:
    """input (n, c); target (n, c) int64; out (n,) or (); status: optional int32 word set to 1
    on a target ≥ c or < −1."""

    input: object
    target: object
    out: object
    status: object = None


@dataclass
class TripletMarginLossArgs:
    """anchor, positive, negative: (n, d); out (n,) or ()."""

    anchor: object
    positive: object
    negative: object
    out: object


@dataclass
class CosineEmbeddingLossBackwardArgs:
    """dloss ((n,) or ()), x1, x2, target; outputs dx1, dx2 (n, d), each optional."""

    dloss: object
    x1: object
    x2: object
    target: object
    dx1: object = None
    dx2: object = None


@dataclass
class MultiMarginLossBackwardArgs:
    """dloss, input, target, output dinput (n, c); weight when has_weight."""

    dloss: object
    input: object
    target: object
    dinput: object
    weight: object = None


@dataclass
class MultilabelMarginLossBackwardArgs:
    """dloss, input, target (n, c) int64, output dinput (n, c).  Workspace: n·c bytes."""

    dloss: object
    input: object
    target: object
    dinput: object


@dataclass
class TripletMarginLossBackwardArgs:
    """dloss, anchor, positive, negative; outputs danchor, dpositive, dnegative, each optional."""

    dloss: object
    anchor: object
    positive: object
    negative: object
    danchor: object = None
    dpositive: object = None
    dnegative: object = None


# ----------------------------------------------------------------------------------- plans
class _RowLoss(Plan):
    """What every row-loss plan shares: the SKU choice and the views.  A per-loss mixin
    (:class:`_Cos`, :class:`_MultiMargin`, :class:`_Multilabel`, :class:`_Triplet`) gives the
    kernel op, its scalars and the Args' views; :class:`_RowLossFW` / :class:`_RowLossBW` bind
    the Args and launch."""

    _backward = False
    #: the loss's forward Args carry an optional ``status`` word
    _has_status = False

    def _plan(self) -> None:
        check_exact_descriptor(self)
        d = self.desc
        self._op = self._op_of(d)
        self._len = d.d if hasattr(d, "d") else d.c
        self._knobs = spec.LossRowKnobs(dtype=d.dtype.short, op=self._op,
                                        tpr=spec.tpr_for(self._len))
        tmpl = spec.LOSS_ROW_BW if self._backward else spec.LOSS_ROW_FW
        self._sku = loss_sku(d, self._arch, self._op + ("_bw" if self._backward else ""), tmpl,
                             self._knobs)

    def _op_of(self, desc) -> str:
        raise NotImplementedError

    def _scalars(self):
        """(margin, p, eps, extra flags)."""
        return 0.0, 0.0, 0.0, 0

    def _inputs(self, args):
        """(dloss, a, b, c, t, w): the views of the loss's inputs (None where it has none) and,
        in the backward, of ``dloss`` (checked right after the first input)."""
        raise NotImplementedError

    def _dloss(self, args, dev):
        raise NotImplementedError

    def _row_view(self, obj, name, dev=None, dtype=None, optional=False):
        d = self.desc
        return view_arg(obj, name, shape=(d.n, self._len), dtype=dtype or d.dtype, device=dev,
                        optional=optional)

    def _vec_view(self, obj, name, dev, dtype=None):
        return view_arg(obj, name, shape=(self.desc.n,), dtype=dtype or self.desc.dtype,
                        device=dev)


# per-loss pieces shared by the forward and the backward plan of each loss
class _Cos:
    """cosine_embedding: rows x1, x2; target (n,) in the loss dtype; grads dx1, dx2."""

    def _op_of(self, desc):
        return "cos"

    def _scalars(self):
        return self.desc.margin, 0.0, 0.0, 0

    def _inputs(self, args):
        a = self._row_view(args.x1, "x1")
        dl = self._dloss(args, a.device)
        b = self._row_view(args.x2, "x2", a.device)
        t = self._vec_view(args.target, "target", a.device)
        return dl, a, b, None, t, None

    def _grads(self, args, dev):
        return self._grad(args.dx1, "dx1", dev), self._grad(args.dx2, "dx2", dev), None


class _ClassScores:
    """The margin losses over rows of class scores: ``input`` (n, c), an int64 target, a
    status word in the forward, one (required) gradient ``dinput``."""

    _has_status = True

    def _grads(self, args, dev):
        return self._grad(args.dinput, "dinput", dev, optional=False), None, None


class _MultiMargin(_ClassScores):
    """multi_margin: target (n,) int64, optional class weights (c,)."""

    def _op_of(self, desc):
        return f"mm{desc.p}"

    def _scalars(self):
        return self.desc.margin, float(self.desc.p), 0.0, 0

    def _inputs(self, args):
        d = self.desc
        a = self._row_view(args.input, "input")
        dl = self._dloss(args, a.device)
        t = self._vec_view(args.target, "target", a.device, dtype=int64)
        w = None
        if d.has_weight:
            w = view_arg(args.weight, "weight", shape=(d.c,), dtype=d.dtype, device=a.device)
        elif args.weight is not None:
            raise InvalidProblemError("MultiMarginLoss: weight given but has_weight=False")
        return dl, a, None, None, t, w


class _Multilabel(_ClassScores):
    """multilabel_margin: target (n, c) int64."""

    def _op_of(self, desc):
        return "mlm"

    def _inputs(self, args):
        a = self._row_view(args.input, "input")
        dl = self._dloss(args, a.device)
        t = self._row_view(args.target, "target", a.device, dtype=int64)
        return dl, a, None, None, t, None


class _Triplet:
    """triplet_margin: rows anchor, positive, negative; grads danchor, dpositive, dnegative."""

    def _op_of(self, desc):
        return "trip"

    def _scalars(self):
        d = self.desc
        return d.margin, d.p, d.eps, spec.SWAP if d.swap else 0

    def _inputs(self, args):
        a = self._row_view(args.anchor, "anchor")
        dl = self._dloss(args, a.device)
        b = self._row_view(args.positive, "positive", a.device)
        c = self._row_view(args.negative, "negative", a.device)
        return dl, a, b, c, None, None

    def _grads(self, args, dev):
        return (self._grad(args.danchor, "danchor", dev),
                self._grad(args.dpositive, "dpositive", dev),
                self._grad(args.dnegative, "dnegative", dev))


def _s(v, i):
    """Stride ``i`` of view ``v``; 0 for an absent view or dim."""
    return v.strides[i] if v is not None and i < len(v.strides) else 0


def _p(v):
    return v.ptr if v is not None else 0


class _RowLossFW(_RowLoss):
    """Forward: ``loss_row_fw`` writes the per-row losses (reduction none) or their compute-type
    values into the workspace, which ``loss_finalize`` sums (sum / mean)."""

    def _plan(self) -> None:
        super()._plan()
        self._final_knobs = spec.LossFinalizeKnobs(dtype=self.desc.dtype.short)

    def workspace_size(self) -> int:
        d = self.desc
        if d.reduction == "none":
            return 0
        return align_up(max(d.n, 1) * loss_ct(d.dtype).itemsize)

    def is_empty(self) -> bool:
        return self.desc.n == 0 and self.desc.reduction == "none"

    def _dloss(self, args, dev):
        return None

    def _bind(self, args):
        """(a, b, c, t, w, out, status) views of the Args."""
        _, a, b, c, t, w = self._inputs(args)
        out = view_arg(args.out, "out", shape=loss_out_shape(self.desc), dtype=self.desc.dtype,
                       device=a.device)
        check_writable_no_overlap(out, "out")
        stv = None
        if self._has_status:
            stv = view_arg(args.status, "status", shape=(1,), dtype=int32, device=a.device,
                           optional=True)
        return a, b, c, t, w, out, stv

    def _launch(self, bound, stream, ws) -> None:
        a, b, c, t, w, out, stv = bound
        d = self.desc
        dev = a.device
        margin, p, eps, fl = self._scalars()
        red = d.reduction
        flags = fl | (spec.WRITE_OUT if red == "none" else spec.WRITE_PART)
        if w is not None:
            flags |= spec.HAS_W
        if d.n:
            lk = self._kernel(spec.LOSS_ROW_FW, self._knobs, dev)
            lk.launch((d.n, 1, 1), [
                a.ptr, _p(b), _p(c), _p(t), _p(w), out.ptr, ws.ptr if red != "none" else 0,
                _p(stv), 1 if stv is not None else 0, d.n, self._len, a.strides[0], a.strides[1],
                _s(b, 0), _s(b, 1), _s(c, 0), _s(c, 1), _s(t, 0), _s(t, 1), _s(w, 0),
                out.strides[0] if red == "none" else 0, margin, p, eps, flags], stream)
        if red != "none":
            # an empty batch sums nothing: sum → 0, mean → 0 · nan = nan
            scale = 1.0 if red == "sum" else (1.0 / d.n if d.n else math.nan)
            lk = self._kernel(spec.LOSS_FINALIZE, self._final_knobs, dev)
            lk.launch((1, 1, 1), [ws.ptr, out.ptr, d.n, scale], stream)


class _RowLossBW(_RowLoss):
    """Backward: one ``loss_row_bw`` launch writes the requested input gradients."""

    _backward = True

    def is_empty(self) -> bool:
        return self.desc.n == 0 or self._len == 0

    def _dloss(self, args, dev):
        return view_arg(args.dloss, "dloss", shape=loss_out_shape(self.desc),
                        dtype=self.desc.dtype, device=dev)

    def _grad(self, obj, name, dev, optional=True):
        v = self._row_view(obj, name, dev, optional=optional)
        if v is not None:
            check_writable_no_overlap(v, name)
        return v

    def _grads(self, args, dev):
        """(da, db, dc): the gradient views (None where absent or not asked for)."""
        raise NotImplementedError

    def _bind(self, args):
        """(dl, a, b, c, t, w, da, db, dc) views of the Args."""
        dl, a, b, c, t, w = self._inputs(args)
        return (dl, a, b, c, t, w) + tuple(self._grads(args, a.device))

    def _launch(self, bound, stream, ws) -> None:
        dl, a, b, c, t, w, da, db, dc = bound
        if da is None and db is None and dc is None:
            return
        d = self.desc
        margin, p, eps, fl = self._scalars()
        scale = 1.0 if d.reduction != "mean" else 1.0 / d.n
        flags = (fl | (spec.WANT_A if da is not None else 0) | (spec.WANT_B if db is not None else 0)
                 | (spec.WANT_C if dc is not None else 0) | (spec.HAS_W if w is not None else 0))
        lk = self._kernel(spec.LOSS_ROW_BW, self._knobs, a.device)
        lk.launch((d.n, 1, 1), [
            dl.ptr, a.ptr, _p(b), _p(c), _p(t), _p(w), _p(da), _p(db), _p(dc), ws.ptr, d.n,
            self._len, a.strides[0], a.strides[1], _s(b, 0), _s(b, 1), _s(c, 0), _s(c, 1),
            _s(t, 0), _s(t, 1), _s(w, 0), _s(da, 0), _s(da, 1), _s(db, 0), _s(db, 1), _s(dc, 0),
            _s(dc, 1), dl.strides[0] if d.reduction == "none" else 0, scale, margin, p, eps,
            flags], stream)


# ----------------------------------------------------------------------------- public plans
class CosineEmbeddingLossPlan(_Cos, _RowLossFW):
    """torch.nn.functional.cosine_embedding_loss (see the module docstring)."""

    descriptor = CosineEmbeddingLossDescriptor


class MultiMarginLossPlan(_MultiMargin, _RowLossFW):
    """torch.nn.functional.multi_margin_loss, p ∈ {1, 2} (see the module docstring)."""

    descriptor = MultiMarginLossDescriptor


class MultilabelMarginLossPlan(_Multilabel, _RowLossFW):
    """torch.nn.functional.multilabel_margin_loss (see the module docstring)."""

    descriptor = MultilabelMarginLossDescriptor


class TripletMarginLossPlan(_Triplet, _RowLossFW):
    """torch.nn.functional.triplet_margin_loss (see the module docstring)."""

    descriptor = TripletMarginLossDescriptor


class CosineEmbeddingLossBackwardPlan(_Cos, _RowLossBW):
    """Gradients of cosine_embedding_loss with respect to x1 and x2 (each optional)."""

    descriptor = CosineEmbeddingLossBackwardDescriptor


class MultiMarginLossBackwardPlan(_MultiMargin, _RowLossBW):
    """Gradient of multi_margin_loss with respect to the input."""

    descriptor = MultiMarginLossBackwardDescriptor


class MultilabelMarginLossBackwardPlan(_Multilabel, _RowLossBW):
    """Gradient of multilabel_margin_loss with respect to the input.  Workspace: n·c bytes (the
    per-row "is a target" flags)."""

    descriptor = MultilabelMarginLossBackwardDescriptor

    def workspace_size(self) -> int:
        return align_up(self.desc.n * self.desc.c * uint8.itemsize)


class TripletMarginLossBackwardPlan(_Triplet, _RowLossBW):
    """Gradients of triplet_margin_loss with respect to anchor, positive and negative (each
    optional)."""

    descriptor = TripletMarginLossBackwardDescriptor
