"""Cross-entropy losses with torch.nn.functional names, keywords and semantics (forward only;
the backward is ``CrossEntropyBackwardPlan`` / ``NLLLossBackwardPlan`` /
``LinearCrossEntropyBackwardPlan``): ``cross_entropy``, ``nll_loss`` and the fused
``linear_cross_entropy``.

Input: (C,), (N, C) or (N, C, d1, ...) of float32 / float16 / bfloat16 / float64; K-dim inputs
are rearranged (copy) so the class dim is last.  Targets: integer class indices (shape of the
input without C; converted to int64 when not int32 / int64) or, for ``cross_entropy``, class
probabilities of the input's shape and dtype.  ``reduction``: ``'none'`` (per-sample losses),
``'mean'`` (torch's weighted mean: Σ loss / Σ w[target]), ``'sum'`` (0-D arrays;
deterministic fixed-order sums).  A class index outside [0, C) that is not ``ignore_index``
raises IndexError (the kernels never read out of bounds; one 4-byte device read per call).
"""

from __future__ import annotations

from .. import _dtypes as _dt
from .. import _plans
from .._array_object import Array
from .._manipulation_functions import ascontiguousarray, permute_dims, reshape
from ._common import legacy_reduction as _legacy

__all__ = ["cross_entropy", "nll_loss", "linear_cross_entropy"]


def _check_reduction(name: str, reduction: str) -> None:
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{name}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")


def _class_last(x: Array) -> Array:
    """(N, C, d1, ...) → dense (N·d1·…, C); (N, C) → itself when the class stride is 1."""
    if x.ndim > 2:
        axes = (0,) + tuple(range(2, x.ndim)) + (1,)
        x = ascontiguousarray(permute_dims(x, axes))
        return reshape(x, (-1, x.shape[-1]))
    if x.shape[1] > 1 and x.strides[1] != 1:
        x = ascontiguousarray(x)
    return x


def _prepare(name: str, input: Array, target: Array, weight, allow_prob: bool):
    _plans.check_array(input, "input")
    _plans.check_array(target, "target")
    if input.dtype not in _dt.REAL_FLOATING_DTYPES:
        raise TypeError(f"{name}: input must have a real floating dtype, got {input.dtype.name}")
    if input.ndim == 0:
        raise ValueError(f"{name}: input must have at least one dimension (classes)")
    unbatched = input.ndim == 1
    x = reshape(input, (1, input.shape[0])) if unbatched else input
    c = x.shape[1]
    prob = allow_prob and _dt.isdtype(target.dtype, "real floating")
    if prob:
        if tuple(target.shape) != tuple(input.shape):
            raise ValueError(f"{name}: probability targets must have the input's shape "
                             f"{input.shape}, got {target.shape}")
        if target.dtype != input.dtype:
            raise TypeError(f"{name}: probability targets must have the input dtype "
                            f"{input.dtype.name}, got {target.dtype.name}")
        t = reshape(target, (1, c)) if unbatched else target
        t = _class_last(t)
    else:
        if not _dt.isdtype(target.dtype, "integral"):
            raise TypeError(f"{name}: target must hold class indices (integer dtype)"
                            + (" or class probabilities (the input dtype)" if allow_prob else "")
                            + f", got {target.dtype.name}")
        want = (x.shape[0],) + tuple(x.shape[2:])
        tshape = (1,) if unbatched and target.ndim == 0 else tuple(target.shape)
        if tshape != want:
            raise ValueError(f"{name}: target shape {tuple(target.shape)} does not match input "
                             f"shape {tuple(input.shape)} (expected {want})")
        t = reshape(_plans.index_dtype_array(target), (-1,))
        t = ascontiguousarray(t)
    if weight is not None:
        _plans.check_array(weight, "weight")
        if weight.ndim != 1 or weight.shape[0] != c:
            raise ValueError(f"{name}: weight must be a 1-D array of C={c} class weights, got "
                             f"shape {weight.shape}")
        if weight.dtype != input.dtype:
            raise TypeError(f"{name}: weight dtype {weight.dtype.name} != input dtype "
                            f"{input.dtype.name}")
    out_shape = (() if unbatched else (x.shape[0],) + tuple(x.shape[2:]))
    return _class_last(x), t, prob, out_shape


def _finish(loss: Array, reduction: str, out_shape) -> Array:
    if reduction != "none":
        return loss
    return reshape(loss, out_shape)


def cross_entropy(input: Array, target: Array, weight: Array = None, size_average=None,
                  ignore_index: int = -100, reduce=None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Array:
    """torch.nn.functional.cross_entropy: log-softmax over the class dim (dim 1, or 0 for an
    unbatched (C,) input) and the NLL of the targets, with class ``weight``, ``ignore_index``
    (index targets; with probability targets a non-negative ``ignore_index`` raises
    UnsupportedError as torch rejects it, a negative one is ignored), ``label_smoothing``
    ε ∈ [0, 1] (loss = (1 − ε)·nll + ε·smoothed term, torch's definition) and soft (probability)
    targets.  CrossEntropyPlan."""
    from baracuda_dsl.ops.losses.cross_entropy import (CrossEntropyArgs, CrossEntropyDescriptor,
                                                       CrossEntropyPlan)

    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction("cross_entropy", reduction)
    ls = float(label_smoothing)
    if not 0.0 <= ls <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {ls}")
    x, t, prob, out_shape = _prepare("cross_entropy", input, target, weight, True)
    n, c = x.shape
    loss = Array._empty((n,) if reduction == "none" else (), x.dtype, x.device)
    desc = CrossEntropyDescriptor(n, c, x.dtype, "prob" if prob else "index", reduction,
                                  int(ignore_index), ls, weight is not None,
                                  _dt.int64 if prob else t.dtype)
    plan = _plans.select(CrossEntropyPlan, desc)
    if prob:
        _plans.run(plan, CrossEntropyArgs(x, t, loss, weight), x.device)
    else:
        _plans.run_checked(plan, lambda st: CrossEntropyArgs(x, t, loss, weight, status=st),
                           x.device, "cross_entropy")
    return _finish(loss, reduction, out_shape)


def nll_loss(input: Array, target: Array, weight: Array = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Array:
    """torch.nn.functional.nll_loss: loss = −weight[t]·input[t] of log-probabilities over the
    class dim, ``ignore_index``, reductions none / mean (weighted) / sum.  NLLLossPlan."""
    from baracuda_dsl.ops.losses.cross_entropy import NLLLossArgs, NLLLossDescriptor, NLLLossPlan

    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction("nll_loss", reduction)
    x, t, _, out_shape = _prepare("nll_loss", input, target, weight, False)
    n, c = x.shape
    loss = Array._empty((n,) if reduction == "none" else (), x.dtype, x.device)
    plan = _plans.select(NLLLossPlan, NLLLossDescriptor(n, c, x.dtype, reduction,
                                                        int(ignore_index), weight is not None,
                                                        t.dtype))
    _plans.run_checked(plan, lambda st: NLLLossArgs(x, t, loss, weight, status=st), x.device,
                       "nll_loss")
    return _finish(loss, reduction, out_shape)


def linear_cross_entropy(input: Array, weight: Array, target: Array, ignore_index: int = -100,
                         reduction: str = "mean", chunk: int = 4096) -> Array:
    """Fused ``cross_entropy(input @ weight.T, target)`` for input (N, K), weight (V, K) and
    class indices (N,), chunked over the vocabulary (``chunk`` columns at a time) so the (N, V)
    logits never exist; ``ignore_index``; reductions none / mean / sum
    (LinearCrossEntropyPlan)."""
    from baracuda_dsl.ops.losses.linear_cross_entropy import (LinearCrossEntropyArgs,
                                                              LinearCrossEntropyDescriptor,
                                                              LinearCrossEntropyPlan)

    _check_reduction("linear_cross_entropy", reduction)
    for a, nm in ((input, "input"), (weight, "weight"), (target, "target")):
        _plans.check_array(a, nm)
    if input.ndim != 2 or weight.ndim != 2 or input.shape[1] != weight.shape[1]:
        raise ValueError(f"linear_cross_entropy: needs input (N, K) and weight (V, K), got "
                         f"{input.shape} and {weight.shape}")
    if input.dtype not in _dt.REAL_FLOATING_DTYPES or weight.dtype != input.dtype:
        raise TypeError("linear_cross_entropy: input and weight must share a real floating dtype")
    if not _dt.isdtype(target.dtype, "integral") or tuple(target.shape) != (input.shape[0],):
        raise ValueError("linear_cross_entropy: target must be (N,) integer class indices")
    t = ascontiguousarray(_plans.index_dtype_array(target))
    w = weight if weight.shape[1] <= 1 or weight.strides[1] == 1 else ascontiguousarray(weight)
    n, k = input.shape
    v = w.shape[0]
    loss = Array._empty((n,) if reduction == "none" else (), input.dtype, input.device)
    plan = _plans.select(LinearCrossEntropyPlan, LinearCrossEntropyDescriptor(
        n, k, v, input.dtype, reduction, int(ignore_index), t.dtype, int(chunk)))
    _plans.run_checked(plan, lambda st: LinearCrossEntropyArgs(input, w, t, loss, status=st),
                       input.device, "linear_cross_entropy")
    return loss
