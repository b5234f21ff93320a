"""Pointwise losses with torch.nn.functional names, keywords and semantics (forward only; the
backward is ``PointwiseLossBackwardPlan``): ``mse_loss``, ``l1_loss``, ``huber_loss``,
``smooth_l1_loss``, ``soft_margin_loss``, ``binary_cross_entropy``,
``binary_cross_entropy_with_logits``, ``kl_div``, ``poisson_nll_loss``, ``gaussian_nll_loss``,
``hinge_embedding_loss``, ``margin_ranking_loss``, ``multilabel_soft_margin_loss``.

Operands: Arrays of one real floating dtype (float32, float16, bfloat16, float64; half types
compute in float32); they broadcast by torch's rules (bce / bce_with_logits need equal input and
target shapes).  ``reduction``: ``'none'`` (a new dense array), ``'mean'`` / ``'sum'`` (a 0-D
array; deterministic fixed-order sums), kl_div also ``'batchmean'``.  The legacy
``size_average`` / ``reduce`` keywords map to a reduction as in torch.  Strided or broadcast
operands are made dense by the plan (copies from the stream-ordered pool).
"""

from __future__ import annotations

from baracuda_dsl.ops.losses.loss_pointwise import (PointwiseLossArgs, PointwiseLossDescriptor,
                                                    PointwiseLossPlan)

from .. import _dtypes as _dt
from .. import _plans
from .._array_object import Array
from .._creation_functions import full as _full
from ._common import legacy_reduction as _legacy

__all__ = [
    "mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss", "soft_margin_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
    "gaussian_nll_loss", "hinge_embedding_loss", "margin_ranking_loss",
    "multilabel_soft_margin_loss",
]


def _check(name: str, arrays, names):
    dt = None
    for a, nm in zip(arrays, names):
        if not isinstance(a, Array):
            raise TypeError(f"{name}: {nm} must be an array_api Array, got {type(a).__name__}")
        if a.dtype not in _dt.REAL_FLOATING_DTYPES:
            raise TypeError(f"{name}: {nm} must have a real floating dtype, got {a.dtype.name}")
        if dt is None:
            dt = a.dtype
        elif a.dtype != dt:
            raise TypeError(f"{name}: {nm} has dtype {a.dtype.name}, expected {dt.name} (all "
                            f"operands must share one dtype)")
    return dt


def _loss(name, arrays, names, reduction, weight=None, pos_weight=None, **params) -> Array:
    extra = [(weight, "weight"), (pos_weight, "pos_weight")]
    present = [(a, n) for a, n in extra if a is not None]
    dt = _check(name, list(arrays) + [a for a, _ in present],
                list(names) + [n for _, n in present])
    if not isinstance(reduction, str):
        raise ValueError(f"{name}: reduction must be a string, got {reduction!r}")
    desc = PointwiseLossDescriptor(
        name, tuple(tuple(a.shape) for a in arrays), dt, reduction,
        None if weight is None else tuple(weight.shape),
        None if pos_weight is None else tuple(pos_weight.shape), **params)
    plan = _plans.select(PointwiseLossPlan, desc)
    out = Array._empty(desc.out_shape, dt, arrays[0].device)
    _plans.run(plan, PointwiseLossArgs(list(arrays), out, weight, pos_weight), arrays[0])
    return out


def mse_loss(input, target, size_average=None, reduce=None, reduction: str = "mean") -> Array:
    """(input − target)², reduced."""
    return _loss("mse_loss", (input, target), ("input", "target"),
                 _legacy(size_average, reduce, reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean") -> Array:
    """|input − target|, reduced."""
    return _loss("l1_loss", (input, target), ("input", "target"),
                 _legacy(size_average, reduce, reduction))


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0) -> Array:
    """½d² where |d| < delta, else delta·(|d| − ½delta) (d = input − target; delta > 0)."""
    return _loss("huber_loss", (input, target), ("input", "target"), reduction, delta=delta)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean",
                   beta: float = 1.0) -> Array:
    """½d²/beta where |d| < beta, else |d| − ½beta (beta ≥ 0; beta = 0 is l1_loss)."""
    return _loss("smooth_l1_loss", (input, target), ("input", "target"),
                 _legacy(size_average, reduce, reduction), beta=beta)


def soft_margin_loss(input, target, size_average=None, reduce=None,
                     reduction: str = "mean") -> Array:
    """log(1 + exp(−target·input)) (stable softplus), reduced."""
    return _loss("soft_margin_loss", (input, target), ("input", "target"),
                 _legacy(size_average, reduce, reduction))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction: str = "mean") -> Array:
    """−weight·[t·log x + (1 − t)·log(1 − x)] with each log clamped at −100 (input in [0, 1],
    not checked)."""
    return _loss("binary_cross_entropy", (input, target), ("input", "target"),
                 _legacy(size_average, reduce, reduction), weight=weight)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction: str = "mean", pos_weight=None) -> Array:
    """weight·[(1 − t)·x + (1 + (pos_weight − 1)·t)·softplus(−x)] (stable form); pos_weight
    broadcasts against the input (usually one value per class along the last dim)."""
    return _loss("binary_cross_entropy_with_logits", (input, target), ("input", "target"),
                 _legacy(size_average, reduce, reduction), weight=weight, pos_weight=pos_weight)


def kl_div(input, target, size_average=None, reduce=None, reduction: str = "mean",
           log_target: bool = False) -> Array:
    """xlogy(t, t) − t·input (``log_target``: exp(t)·(t − input)); reductions also
    ``'batchmean'`` (sum / input.shape[0])."""
    return _loss("kl_div", (input, target), ("input", "target"),
                 _legacy(size_average, reduce, reduction), log_target=log_target)


def poisson_nll_loss(input, target, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None,
                     reduction: str = "mean") -> Array:
    """exp(x) − t·x (``log_input``) or x − t·log(x + eps); ``full`` adds the Stirling term
    t·log t − t + ½log(2πt) where t > 1."""
    return _loss("poisson_nll_loss", (input, target), ("input", "target"),
                 _legacy(size_average, reduce, reduction), log_input=log_input, full=full,
                 eps=eps)


def gaussian_nll_loss(input, target, var, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Array:
    """½·(log v + (input − target)²/v) (+ ½log 2π when ``full``), v = max(var, eps).  var has
    the input's shape, or that shape without its last dim, or with a last dim of 1; a Python
    float var is one variance for every element.  Negative var entries are not checked."""
    if isinstance(var, (int, float)) and not isinstance(var, bool) and isinstance(input, Array):
        var = _full(tuple(input.shape), float(var), dtype=input.dtype, device=input.device)
    return _loss("gaussian_nll_loss", (input, target, var), ("input", "target", "var"),
                 reduction, full=full, eps=eps)


def hinge_embedding_loss(input, target, margin: float = 1.0, size_average=None, reduce=None,
                         reduction: str = "mean") -> Array:
    """input where target ≠ −1, plus max(0, margin − input) where target ≠ 1."""
    return _loss("hinge_embedding_loss", (input, target), ("input", "target"),
                 _legacy(size_average, reduce, reduction), margin=margin)


def margin_ranking_loss(input1, input2, target, margin: float = 0.0, size_average=None,
                        reduce=None, reduction: str = "mean") -> Array:
    """max(0, −target·(input1 − input2) + margin) (the three operands need equal ranks)."""
    return _loss("margin_ranking_loss", (input1, input2, target),
                 ("input1", "input2", "target"), _legacy(size_average, reduce, reduction),
                 margin=margin)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction: str = "mean") -> Array:
    """Per row: −(1/C)·Σ_c weight_c·[t·logσ(x) + (1 − t)·logσ(−x)] over the last (class) dim;
    then the batch reduction (``'none'``: one value per row)."""
    return _loss("multilabel_soft_margin_loss", (input, target), ("input", "target"),
                 _legacy(size_average, reduce, reduction), weight=weight)
