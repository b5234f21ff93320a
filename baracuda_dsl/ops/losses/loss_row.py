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

from ...dtypes import FP4, DType, int64, uint8
from ...errors import InvalidProblemError, UnsupportedError
from ...plan import (Plan, align_up, check_dtype, check_finite, check_writable_no_overlap,
                     plan_arch, view_arg)
from .specs import loss_row as spec
from . import _common as _loss_common
from ._common import begin_loss_select, loss_ct, loss_out_shape, loss_sku
from ._common import check_int as _check_int
from ._common import check_reduction as _check_reduction

REDUCTIONS = _loss_common.REDUCTIONS


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
        _common(self, "CosineEmbeddingLoss", "d")
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
        _common(self, "MultiMarginLoss", "c", lo=1)
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
        _common(self, "MultilabelMarginLoss", "c", lo=1)


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
        _common(self, "TripletMarginLoss", "d")
        for f in ("margin", "p", "eps"):
            object.__setattr__(self, f, check_finite(getattr(self, f), f))
        if self.p <= 0:
            raise InvalidProblemError(f"TripletMarginLoss: p must be > 0, got {self.p}")
        object.__setattr__(self, "swap", bool(self.swap))


def _common(desc, who, dim, lo=0):
    _check_int(desc.n, "n", who)
    _check_int(getattr(desc, dim), dim, who, lo)
    if getattr(desc, dim) >= 2 ** 31 or desc.n >= 2 ** 31:
        raise UnsupportedError(f"{who}: n and the row length must be < 2^31")
    object.__setattr__(desc, "dtype", check_dtype(desc.dtype, FP4, who))
    _check_reduction(desc.reduction, who)


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
    _desc_type = None
    _backward = False

    @classmethod
    def select(cls, desc, pref=None):
        plan = begin_loss_select(cls, desc, pref, plan_arch)
        plan._op = plan._op_of(desc)
        plan._len = plan._row_len()
        plan._knobs = dict(dtype=desc.dtype.short, op=plan._op, tpr=spec.tpr_for(plan._len))
        plan._fknobs = dict(dtype=desc.dtype.short)
        tmpl = spec.LOSS_ROW_BW if cls._backward else spec.LOSS_ROW_FW
        plan._sku = loss_sku(desc, plan._arch, plan._op + ("_bw" if cls._backward else ""),
                             tmpl, plan._knobs)
        return plan

    def _op_of(self, desc):
        raise NotImplementedError

    def _scalars(self):
        """(margin, p, eps, extra flags)."""
        return 0.0, 0.0, 0.0, 0

    def can_implement(self, args) -> None:
        self._views(args)

    def _row_len(self):
        d = self.desc
        return d.d if hasattr(d, "d") else d.c

    def _out_shape(self):
        return loss_out_shape(self.desc)

    def is_empty(self) -> bool:
        if self._backward:
            return self.desc.n == 0 or self._len == 0
        return self.desc.n == 0 and self.desc.reduction == "none"

    def _row_view(self, obj, name, dev=None, dtype=None, optional=False):
        d = self.desc
        return view_arg(obj, name, shape=(d.n, self._len), dtype=dtype or d.dtype, device=dev,
                        optional=optional)

    def _vec_view(self, obj, name, dev, dtype=None, optional=False):
        return view_arg(obj, name, shape=(self.desc.n,), dtype=dtype or self.desc.dtype,
                        device=dev, optional=optional)

    def _out_view(self, obj, dev):
        out = view_arg(obj, "out", shape=self._out_shape(), dtype=self.desc.dtype, device=dev)
        check_writable_no_overlap(out, "out")
        return out

    def _status_view(self, obj, dev):
        return view_arg(obj, "status", shape=(1,), dtype=_int32(), device=dev, optional=True)


# per-loss pieces shared by the forward and the backward plan of each loss
class _Cos:
    def _op_of(self, desc):
        return "cos"

    def _scalars(self):
        return self.desc.margin, 0.0, 0.0, 0


class _MultiMargin:
    def _op_of(self, desc):
        return f"mm{desc.p}"

    def _scalars(self):
        return self.desc.margin, float(self.desc.p), 0.0, 0

    def _weight_view(self, args, dev):
        d = self.desc
        if d.has_weight:
            return view_arg(args.weight, "weight", shape=(d.c,), dtype=d.dtype, device=dev)
        if args.weight is not None:
            raise InvalidProblemError("MultiMarginLoss: weight given but has_weight=False")
        return None


class _Multilabel:
    def _op_of(self, desc):
        return "mlm"


class _Triplet:
    def _op_of(self, desc):
        return "trip"

    def _scalars(self):
        d = self.desc
        return d.margin, d.p, d.eps, spec.SWAP if d.swap else 0


def _s(v, i):
    return v.strides[i] if v is not None else 0


def _p(v):
    return v.ptr if v is not None else 0


class _RowLossFW(_RowLoss):
    def workspace_size(self) -> int:
        d = self.desc
        if d.reduction == "none":
            return 0
        return align_up(max(d.n, 1) * loss_ct(d.dtype).itemsize)

    def _views(self, args):
        """(a, b, c, t, w, out, status) views of the Args."""
        raise NotImplementedError

    def _launch(self, args, stream, ws) -> None:
        a, b, c, t, w, out, stv = self._views(args)
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
                a.ptr, _p(b), _p(c), t.ptr if t is not None else 0, _p(w), out.ptr,
                ws.ptr if red != "none" else 0, _p(stv), 1 if stv is not None else 0, d.n,
                self._len, a.strides[0], a.strides[1], _s(b, 0), _s(b, 1), _s(c, 0), _s(c, 1),
                _s(t, 0), _s(t, 1) if (t is not None and len(t.shape) > 1) else 0, _s(w, 0),
                out.strides[0] if red == "none" else 0, margin, p, eps, flags], stream)
        if red != "none":
            # an empty batch sums nothing: sum → 0, mean → 0 · nan = nan
            scale = 1.0 if red == "sum" else (1.0 / d.n if d.n else math.nan)
            lk = self._kernel(spec.LOSS_FINALIZE, self._fknobs, dev)
            lk.launch((1, 1, 1), [ws.ptr, out.ptr, d.n, scale], stream)


class CosineEmbeddingLossPlan(_Cos, _RowLossFW):
    """torch.nn.functional.cosine_embedding_loss (see the module docstring)."""

    _desc_type = CosineEmbeddingLossDescriptor

    def _views(self, args):
        a = self._row_view(args.x1, "x1")
        b = self._row_view(args.x2, "x2", a.device)
        t = self._vec_view(args.target, "target", a.device)
        out = self._out_view(args.out, a.device)
        return a, b, None, t, None, out, None


class MultiMarginLossPlan(_MultiMargin, _RowLossFW):
    """torch.nn.functional.multi_margin_loss, p ∈ {1, 2} (see the module docstring)."""

    _desc_type = MultiMarginLossDescriptor

    def _views(self, args):
        a = self._row_view(args.input, "input")
        t = self._vec_view(args.target, "target", a.device, dtype=int64)
        w = self._weight_view(args, a.device)
        out = self._out_view(args.out, a.device)
        stv = self._status_view(args.status, a.device)
        return a, None, None, t, w, out, stv


class MultilabelMarginLossPlan(_Multilabel, _RowLossFW):
    """torch.nn.functional.multilabel_margin_loss (see the module docstring)."""

    _desc_type = MultilabelMarginLossDescriptor

    def _views(self, args):
        a = self._row_view(args.input, "input")
        t = self._row_view(args.target, "target", a.device, dtype=int64)
        out = self._out_view(args.out, a.device)
        stv = self._status_view(args.status, a.device)
        return a, None, None, t, None, out, stv


class TripletMarginLossPlan(_Triplet, _RowLossFW):
    """torch.nn.functional.triplet_margin_loss (see the module docstring)."""

    _desc_type = TripletMarginLossDescriptor

    def _views(self, args):
        a = self._row_view(args.anchor, "anchor")
        b = self._row_view(args.positive, "positive", a.device)
        c = self._row_view(args.negative, "negative", a.device)
        out = self._out_view(args.out, a.device)
        return a, b, c, None, None, out, None


def _int32():
    from ...dtypes import int32

    return int32


# -------------------------------------------------------------------------------- backward
class _RowLossBW(_RowLoss):
    _backward = True

    def _dloss(self, obj, dev):
        v = view_arg(obj, "dloss", shape=self._out_shape(), dtype=self.desc.dtype, device=dev)
        return v

    def _grad(self, obj, name, dev, optional=True):
        v = self._row_view(obj, name, dev, optional=optional)
        if v is not None:
            check_writable_no_overlap(v, name)
        return v

    def _launch(self, args, stream, ws) -> None:
        dl, a, b, c, t, w, da, db, dc = self._views(args)
        d = self.desc
        margin, p, eps, fl = self._scalars()
        none = d.reduction == "none"
        scale = 1.0 if d.reduction != "mean" else 1.0 / d.n
        flags = (fl | (spec.WANT_A if da is not None else 0) | (spec.WANT_B if db is not None else 0)
                 | (spec.WANT_C if dc is not None else 0) | (spec.HAS_W if w is not None else 0))
        if da is None and db is None and dc is None:
            return
        lk = self._kernel(spec.LOSS_ROW_BW, self._knobs, a.device)
        lk.launch((d.n, 1, 1), [
            dl.ptr, a.ptr, _p(b), _p(c), _p(t), _p(w), _p(da), _p(db), _p(dc), ws.ptr, d.n,
            self._len, a.strides[0], a.strides[1], _s(b, 0), _s(b, 1), _s(c, 0), _s(c, 1),
            _s(t, 0), _s(t, 1) if (t is not None and len(t.shape) > 1) else 0, _s(w, 0),
            _s(da, 0), _s(da, 1), _s(db, 0), _s(db, 1), _s(dc, 0), _s(dc, 1),
            dl.strides[0] if none else 0, scale, margin, p, eps, flags], stream)


class CosineEmbeddingLossBackwardPlan(_Cos, _RowLossBW):
    """Gradients of cosine_embedding_loss with respect to x1 and x2 (each optional)."""

    _desc_type = CosineEmbeddingLossBackwardDescriptor

    def _views(self, args):
        a = self._row_view(args.x1, "x1")
        dl = self._dloss(args.dloss, a.device)
        b = self._row_view(args.x2, "x2", a.device)
        t = self._vec_view(args.target, "target", a.device)
        da = self._grad(args.dx1, "dx1", a.device)
        db = self._grad(args.dx2, "dx2", a.device)
        return dl, a, b, None, t, None, da, db, None


class MultiMarginLossBackwardPlan(_MultiMargin, _RowLossBW):
    """Gradient of multi_margin_loss with respect to the input."""

    _desc_type = MultiMarginLossBackwardDescriptor

    def _views(self, args):
        a = self._row_view(args.input, "input")
        dl = self._dloss(args.dloss, a.device)
        t = self._vec_view(args.target, "target", a.device, dtype=int64)
        w = self._weight_view(args, a.device)
        da = self._grad(args.dinput, "dinput", a.device, optional=False)
        return dl, a, None, None, t, w, da, None, None


class MultilabelMarginLossBackwardPlan(_Multilabel, _RowLossBW):
    """Gradient of multilabel_margin_loss with respect to the input.  Workspace: n·c bytes (the
    per-row "is a target" flags)."""

    _desc_type = MultilabelMarginLossBackwardDescriptor

    def workspace_size(self) -> int:
        return align_up(self.desc.n * self.desc.c * uint8.itemsize)

    def _views(self, args):
        a = self._row_view(args.input, "input")
        dl = self._dloss(args.dloss, a.device)
        t = self._row_view(args.target, "target", a.device, dtype=int64)
        da = self._grad(args.dinput, "dinput", a.device, optional=False)
        return dl, a, None, None, t, None, da, None, None


class TripletMarginLossBackwardPlan(_Triplet, _RowLossBW):
    """Gradients of triplet_margin_loss with respect to anchor, positive and negative (each
    optional)."""

    _desc_type = TripletMarginLossBackwardDescriptor

    def _views(self, args):
        a = self._row_view(args.anchor, "anchor")
        dl = self._dloss(args.dloss, a.device)
        b = self._row_view(args.positive, "positive", a.device)
        c = self._row_view(args.negative, "negative", a.device)
        da = self._grad(args.danchor, "danchor", a.device)
        db = self._grad(args.dpositive, "dpositive", a.device)
        dc = self._grad(args.dnegative, "dnegative", a.device)
        return dl, a, b, c, None, None, da, db, dc


