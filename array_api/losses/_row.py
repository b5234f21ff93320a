"""Row-structured losses of ``xp.losses`` with torch.nn.functional names, keywords and semantics
(forward only; the backward plans live in :mod:`baracuda_dsl.ops.losses.loss_row` /
:mod:`baracuda_dsl.ops.losses.ctc`): ``cosine_embedding_loss``, ``multi_margin_loss``,
``multilabel_margin_loss``, ``triplet_margin_loss``, ``ctc_loss``.

Float inputs f32 / f16 / bf16 / f64 (math in f32, f64 for f64), reductions ``none`` / ``mean`` /
``sum`` (deterministic).  Integer targets of any integer dtype (converted to int64).  A class
index out of range raises IndexError (multi_margin: outside [−C, C); multilabel: ≥ C; ctc: a
label outside [0, C)), an invalid CTC length ValueError — after the launch (one 4-byte read).
"""

from __future__ import annotations

from baracuda_dsl.ops.losses import ctc as _ctc
from baracuda_dsl.ops.losses import loss_row as _lr

from .. import _dtypes as _dt
from .. import _plans
from .._array_object import Array
from .._creation_functions import asarray
from .._data_type_functions import astype
from .._manipulation_functions import reshape

__all__ = ["cosine_embedding_loss", "multi_margin_loss", "multilabel_margin_loss",
           "triplet_margin_loss", "ctc_loss"]

_FLOATS = (_dt.float32, _dt.float16, _dt.bfloat16, _dt.float64)


def _astype(x, dtype):
    if x.dtype == dtype:
        return x
    return astype(x, dtype)


def _float(x, name, who):
    _plans.check_array(x, name)
    if x.dtype not in _FLOATS:
        raise TypeError(f"{who}: {name} must be float32 / float16 / bfloat16 / float64, got "
                        f"{x.dtype.name}")


def _int(x, name):
    _plans.check_index_array(x, name)
    return _astype(x, _dt.int64)


def _reduction(r, who):
    if r not in ("none", "mean", "sum"):
        raise ValueError(f"{who}: {r!r} is not a valid value for reduction")


def _rows(x, who, what="input"):
    """(x as (n, d), batched?) for a 1-D or 2-D input."""
    if x.ndim == 1:
        return reshape(x, (1, x.shape[0])), False
    if x.ndim != 2:
        raise ValueError(f"{who}: {what} must be 1-D or 2-D, got shape {x.shape}")
    return x, True


def _out(n, batched, dtype, device, reduction):
    if reduction != "none":
        return Array._empty((), dtype, device), None
    full = Array._empty((n,), dtype, device)
    return (full, None) if batched else (full, ())


def _finish(out, shape):
    return out if shape is None else reshape(out, shape)


def cosine_embedding_loss(input1: Array, input2: Array, target: Array, margin: float = 0.0,
                          reduction: str = "mean") -> Array:
    """torch.nn.functional.cosine_embedding_loss: 1 − cos(x1, x2) where target = 1,
    max(0, cos − margin) where target = −1 (cos with 1e-12 added to each squared norm)."""
    who = "cosine_embedding_loss"
    _float(input1, "input1", who)
    _float(input2, "input2", who)
    _plans.check_array(target, "target")
    _reduction(reduction, who)
    if input1.dtype != input2.dtype or input1.shape != input2.shape:
        raise ValueError(f"{who}: input1 and input2 must have the same shape and dtype")
    x1, batched = _rows(input1, who)
    x2, _ = _rows(input2, who)
    n, d = x1.shape
    if target.shape != ((n,) if batched else ()):
        raise ValueError(f"{who}: target shape {target.shape} does not match the inputs")
    t = reshape(_astype(target, input1.dtype), (n,))
    out, shp = _out(n, batched, input1.dtype, input1.device, reduction)
    plan = _plans.select(_lr.CosineEmbeddingLossPlan, _lr.CosineEmbeddingLossDescriptor(
        n, d, input1.dtype, float(margin), reduction))
    _plans.run(plan, _lr.CosineEmbeddingLossArgs(x1, x2, t, out), input1.device)
    return _finish(out, shp)


def multi_margin_loss(input: Array, target: Array, p: int = 1, margin: float = 1.0,
                      weight: Array = None, reduction: str = "mean") -> Array:
    """torch.nn.functional.multi_margin_loss (p = 1 or 2):
    Σ_{i≠y} max(0, margin − x[y] + x[i])^p · weight[y] / C per sample."""
    who = "multi_margin_loss"
    _float(input, "input", who)
    _reduction(reduction, who)
    if p not in (1, 2):
        raise ValueError(f"{who}: only p == 1 and p == 2 supported")
    x, batched = _rows(input, who)
    n, c = x.shape
    if c == 0:
        raise ValueError(f"{who}: input must have at least one class")
    tg = _int(target, "target")
    if tg.shape != ((n,) if batched else ()):
        raise ValueError(f"{who}: target shape {tg.shape} does not match input {input.shape}")
    tg = reshape(tg, (n,))
    w = None
    if weight is not None:
        _float(weight, "weight", who)
        if weight.shape != (c,):
            raise ValueError(f"{who}: weight must have shape ({c},), got {weight.shape}")
        w = _astype(weight, input.dtype)
    out, shp = _out(n, batched, input.dtype, input.device, reduction)
    plan = _plans.select(_lr.MultiMarginLossPlan, _lr.MultiMarginLossDescriptor(
        n, c, input.dtype, int(p), float(margin), w is not None, reduction))
    _plans.run_checked(plan, lambda st: _lr.MultiMarginLossArgs(x, tg, out, w, st),
                       input.device, who)
    return _finish(out, shp)


def multilabel_margin_loss(input: Array, target: Array, reduction: str = "mean") -> Array:
    """torch.nn.functional.multilabel_margin_loss: target rows hold class indices up to the first
    negative value; Σ_j Σ_{i ∉ targets} max(0, 1 − (x[y_j] − x[i])) / C per sample."""
    who = "multilabel_margin_loss"
    _float(input, "input", who)
    _reduction(reduction, who)
    x, batched = _rows(input, who)
    n, c = x.shape
    if c == 0:
        raise ValueError(f"{who}: input must have at least one class")
    tg = _int(target, "target")
    if tg.shape != input.shape:
        raise ValueError(f"{who}: target shape {tg.shape} must equal input shape {input.shape}")
    tg, _ = _rows(tg, who, "target")
    out, shp = _out(n, batched, input.dtype, input.device, reduction)
    plan = _plans.select(_lr.MultilabelMarginLossPlan, _lr.MultilabelMarginLossDescriptor(
        n, c, input.dtype, reduction))
    _plans.run_checked(plan, lambda st: _lr.MultilabelMarginLossArgs(x, tg, out, st),
                       input.device, who)
    return _finish(out, shp)


def triplet_margin_loss(anchor: Array, positive: Array, negative: Array, margin: float = 1.0,
                        p: float = 2, eps: float = 1e-6, swap: bool = False,
                        reduction: str = "mean") -> Array:
    """torch.nn.functional.triplet_margin_loss: max(0, margin + ‖a − p + eps‖_p − ‖a − n + eps‖_p)
    (with ``swap`` the negative distance is the smaller of ‖a−n+eps‖_p and ‖p−n+eps‖_p)."""
    who = "triplet_margin_loss"
    for nm, v in (("anchor", anchor), ("positive", positive), ("negative", negative)):
        _float(v, nm, who)
    _reduction(reduction, who)
    if not (anchor.shape == positive.shape == negative.shape
            and anchor.dtype == positive.dtype == negative.dtype):
        raise ValueError(f"{who}: anchor, positive and negative must have the same shape and "
                         f"dtype")
    if not float(p) > 0:
        raise ValueError(f"{who}: p must be > 0")
    a, batched = _rows(anchor, who, "anchor")
    b, _ = _rows(positive, who, "positive")
    c, _ = _rows(negative, who, "negative")
    n, d = a.shape
    out, shp = _out(n, batched, anchor.dtype, anchor.device, reduction)
    plan = _plans.select(_lr.TripletMarginLossPlan, _lr.TripletMarginLossDescriptor(
        n, d, anchor.dtype, float(margin), float(p), float(eps), bool(swap), reduction))
    _plans.run(plan, _lr.TripletMarginLossArgs(a, b, c, out), anchor.device)
    return _finish(out, shp)


def _lengths(v, n, name, device):
    """(int64 device array (n,), host list or None)."""
    if isinstance(v, Array):
        arr = _int(v, name)
        if arr.shape != (n,):
            raise ValueError(f"ctc_loss: {name} must have shape ({n},), got {arr.shape}")
        return arr, None
    host = [int(i) for i in v]
    if len(host) != n:
        raise ValueError(f"ctc_loss: {name} must have {n} entries, got {len(host)}")
    return asarray(host, dtype=_dt.int64, device=device), host


def ctc_loss(log_probs: Array, targets: Array, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Array:
    """torch.nn.functional.ctc_loss: log_probs (T, N, C) or (T, C); targets padded (N, S) (or
    (S,) unbatched) or concatenated 1-D; lengths as int arrays or sequences of ints.  mean
    divides each loss by its target length (at least 1), then averages over the batch."""
    who = "ctc_loss"
    _float(log_probs, "log_probs", who)
    _reduction(reduction, who)
    batched = log_probs.ndim == 3
    if log_probs.ndim == 2:
        lp = reshape(log_probs, (log_probs.shape[0], 1, log_probs.shape[1]))
    elif batched:
        lp = log_probs
    else:
        raise ValueError(f"{who}: log_probs must be (T, N, C) or (T, C), got {log_probs.shape}")
    T, n, C = lp.shape
    if not 0 <= int(blank) < C:
        raise ValueError(f"{who}: blank must be in [0, {C})")
    tg = _int(targets, "targets")
    if not batched and not isinstance(input_lengths, Array):
        input_lengths = [int(input_lengths)] if not hasattr(input_lengths, "__len__") else \
            input_lengths
    if not batched and not isinstance(target_lengths, Array):
        target_lengths = [int(target_lengths)] if not hasattr(target_lengths, "__len__") else \
            target_lengths
    if not batched and isinstance(input_lengths, Array) and input_lengths.ndim == 0:
        input_lengths = reshape(input_lengths, (1,))
    if not batched and isinstance(target_lengths, Array) and target_lengths.ndim == 0:
        target_lengths = reshape(target_lengths, (1,))
    il, il_host = _lengths(input_lengths, n, "input_lengths", lp.device)
    tl, tl_host = _lengths(target_lengths, n, "target_lengths", lp.device)
    if il_host is not None and any(not 0 <= v <= T for v in il_host):
        raise ValueError(f"{who}: input_lengths must be in [0, {T}]")
    if not batched and tg.ndim == 1:
        tg = reshape(tg, (1, tg.shape[0]))  # unbatched (S,) targets are one padded row
    concatenated = tg.ndim == 1
    if tg.ndim not in (1, 2) or (tg.ndim == 2 and tg.shape[0] != n):
        raise ValueError(f"{who}: targets must be (N, S) or 1-D, got {tg.shape}")
    if concatenated:
        host = tl_host if tl_host is not None else [int(v) for v in tl.to_numpy().reshape(-1)]
        if any(v < 0 for v in host) or sum(host) > tg.shape[0]:
            raise ValueError(f"{who}: target_lengths do not fit the concatenated targets")
        s, total = max(host, default=0), tg.shape[0]
    else:
        s, total = tg.shape[1], 0
        if tl_host is not None and any(not 0 <= v <= s for v in tl_host):
            raise ValueError(f"{who}: target_lengths must be in [0, {s}]")
    out, shp = _out(n, batched, log_probs.dtype, log_probs.device, reduction)
    plan = _plans.select(_ctc.CTCLossPlan, _ctc.CTCLossDescriptor(
        T, n, C, log_probs.dtype, s, concatenated, total, int(blank), reduction,
        bool(zero_infinity)))
    st = _plans.status_word(lp.device)
    _plans.run(plan, _ctc.CTCLossArgs(lp, tg, il, tl, out, st), lp.device)
    if st is not None and int(st.to_numpy().reshape(-1)[0]):
        raise ValueError(f"{who}: a target label is outside [0, {C}) or a length is invalid")
    return _finish(out, shp)
