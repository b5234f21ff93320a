"""Cross-entropy and NLL loss plans, forward and backward (torch.nn.functional semantics).

Logits (n, c): unit stride along the c classes, any row stride.  dtypes f32, f16, bf16, f64
(half types compute in f32, f64 in f64).  Per row, with lse = logsumexp(x), w ≡ 1 without class
weights and ε = ``label_smoothing``:

    index targets: loss = (1 − ε)·w[t]·(lse − x[t]) + (ε/c)·Σ_j w_j·(lse − x_j),  den = w[t]
    prob targets:  loss = −Σ_j w_j·((1 − ε)·p_j + ε/c)·(x_j − lse),                den = 1
    NLL:           loss = −w[t]·x[t]  (x already holds log-probabilities),         den = w[t]

Rows whose target equals ``ignore_index`` give loss 0 and den 0 (index targets; with
probability targets a negative ``ignore_index`` is accepted and has no effect, a non-negative one
raises UnsupportedError at select time, as torch rejects it).  Reductions: ``none`` (the (n,)
row losses, logits dtype), ``sum`` (Σ loss) and ``mean`` (Σ loss / Σ den: torch's weighted mean;
prob targets divide by n).  Sums run in a fixed order (per-row values in the workspace, then one
CTA adds them in a fixed order): deterministic and bit-stable.  The optional ``total_weight``
output (Σ den, compute dtype) is what the backward's mean needs; ``lse`` (compute dtype, one per
row) is what the cross-entropy backward reads.

Huge logits: the forward subtracts the row max before adding log Σexp ((max − x[t]) + log Σ), so
losses stay exact however large the logits.  The backward reads the saved lse = max + log Σ in
the compute dtype: when |max| exceeds ~2²⁴ (f32; 2⁵³ f64) times log Σ, the log-sum is below lse's
rounding and the backward's probabilities lose accuracy (as for any saved-lse backward).

Bad targets: class indices are NOT wrapped (as torch); an index outside [0, c) that is not
``ignore_index`` reads nothing, counts as ignored (loss 0, den 0, dx 0) and stores 1 into the
optional int32 ``status`` word (zero it first).

Kernel choice (forward, the row engine of ``specs/cross_entropy.py`` under
:class:`CrossEntropyTuning`): rows up to 32768 elements (16384 for f64) stay in registers
(bucket SKU, x read once); on sm90a longer rows up to ``loop_above`` (65536) are split over a
thread-block cluster; longer rows run the loop SKU (one online max / sum-exp pass, any length —
measured faster than the 8-CTA clusters).  Operands that are not 16-byte aligned (or c / the row
stride not a multiple of the vector width) take the generic element-wise loop SKU.  The
backward streams each row once (x read, dx written).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ...common.rows import Ladder, RowPolicy, ladder_of
from ...common.status import status_view
from ...dtypes import FP4, DType, float32, float64, int32, int64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import (Plan, align_up, check_dtype, check_finite, check_writable_no_overlap,
                     view_arg)
from .specs import cross_entropy as spec
from ...vocabulary import ArchSku, BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace

_I32_MAX = 2**31 - 1
REDUCTIONS = ("none", "mean", "sum")
TARGETS = ("index", "prob")


def stats_dtype(dt: DType) -> DType:
    """dtype of the saved lse / total weight: f64 for f64 logits, f32 otherwise."""
    return float64 if dt == float64 else float32


def _precision(dt: DType) -> PrecisionGuarantee:
    ct = stats_dtype(dt)
    return PrecisionGuarantee(math_precision=ct, accumulator=ct,
                              bit_stable_on_same_hardware=True, deterministic=True)


def cross_entropy_sku(op: str, dt: DType, arch, template: str, knobs) -> KernelSku:
    """The LOSS KernelSku of a cross-entropy plan (math, accumulator and saved statistics in
    :func:`stats_dtype`; deterministic)."""
    return KernelSku(OpCategory.LOSS, op, dt, arch, BackendKind.CUTE_DSL, _precision(dt),
                     aux_element=stats_dtype(dt), template=template, knobs=freeze_knobs(knobs))


@dataclass(frozen=True)
class CrossEntropyTuning:
    """Cross-entropy forward kernel choice (``PlanPreference(tuning=CrossEntropyTuning(...))``).

    ``ladder``                sm90a cluster rungs (CTAs, half-size slices?) for rows beyond one
                              CTA's register bucket, among the built cluster SKUs;
    ``loop_above``            such rows longer than this skip the ladder for the vectorised loop
                              (one online pass, x read once).  Sweep of 2026-11-23 on the H100
                              (benchmarks/sweep_cross_entropy.py, fraction of copy): bf16 64K —
                              cluster-4 0.97, loop 0.96; 128K — loop 1.00, cluster-8 0.92;
                              256K — loop 1.00, cluster-8 0.85; f32 128K — loop 1.03, cluster-8
                              0.94;
    ``prefer_cluster_above``  (sm90a; None = off) rows longer than this take the ladder even
                              when one CTA's register bucket would hold them (two 512-thread CTAs
                              per SM instead of one of 1024 threads);
    ``wide_half_above``       (f16 / bf16; None = off) rows longer than this take the "wide"
                              SKUs (half the threads per row, twice the elements per thread;
                              beyond one CTA, clusters of 512-thread × 32K-element slices).
    The SKU space is the same whatever the tuning."""

    ladder: Ladder = ((2, True), (4, True), (8, True), (8, False))
    loop_above: Optional[int] = 65536
    prefer_cluster_above: Optional[int] = None
    wide_half_above: Optional[int] = None

    def __post_init__(self):
        object.__setattr__(self, "ladder", ladder_of(self.ladder))

    def policy(self) -> RowPolicy:
        """The row-engine policy of the forward kernel."""
        return RowPolicy(ladder=self.ladder, cluster_above=self.prefer_cluster_above,
                         loop_above=self.loop_above, wide_above=self.wide_half_above)


def fw_knobs(dt: DType, mode: str, c: int, arch: ArchSku,
             tuning: CrossEntropyTuning) -> spec.CrossEntropyKnobs:
    """Forward SKU for rows of ``c`` classes: the smallest register bucket that holds the row,
    then (sm90a, rows ≤ ``tuning.loop_above``) a cluster of slices, then the vectorised loop
    (``wide_half_above`` and ``prefer_cluster_above`` switch to the alternatives); NLL reads one
    element a row (one thread per row)."""
    if mode == "nll":
        return spec.CrossEntropyKnobs.of(spec.NLL_FW_GEO, dtype=dt.short, mode=mode)
    g = spec.FW_ROWS.choose(dt.short, c, arch is ArchSku.SM90A, tuning.policy())
    return spec.CrossEntropyKnobs.of(g, dtype=dt.short, mode=mode)


def bw_knobs(dt: DType, mode: str, c: int, arch: ArchSku) -> spec.CrossEntropyKnobs:
    """Backward SKU: the register bucket geometry for short rows (one batch per thread), the
    vectorised loop beyond (the backward has no cluster SKUs)."""
    g = spec.BW_ROWS.choose(dt.short, c, arch is ArchSku.SM90A)
    return spec.CrossEntropyKnobs.of(g, dtype=dt.short, mode=mode)


def generic_knobs(dt: DType, mode: str, c: int) -> spec.CrossEntropyKnobs:
    """The element-wise loop SKU for misaligned operands (a warp per row for short rows)."""
    return spec.CrossEntropyKnobs.of(spec.FW_ROWS.generic(c), dtype=dt.short, mode=mode)


def check_size(v, what: str, lo: int = 0) -> int:
    """``v`` as an int in [lo, 2^31): InvalidProblemError for a non-int (or bool) or below
    ``lo``, UnsupportedError from 2^31 on."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise InvalidProblemError(f"{what} must be an int, got {v!r}")
    if v < lo:
        raise InvalidProblemError(f"{what} must be >= {lo}, got {v}")
    if v > _I32_MAX:
        raise UnsupportedError(f"{what} = {v}: must be < 2^31")
    return int(v)


def _check_common(self, who: str, with_target_kind: bool = True) -> None:
    object.__setattr__(self, "n", check_size(self.n, f"{who}: n"))
    object.__setattr__(self, "c", check_size(self.c, f"{who}: c", 1))
    object.__setattr__(self, "dtype", check_dtype(self.dtype, FP4, who))
    if self.reduction not in REDUCTIONS:
        raise InvalidProblemError(f"{who}: reduction must be one of {REDUCTIONS}, got "
                                  f"{self.reduction!r}")
    if isinstance(self.ignore_index, bool) or not isinstance(self.ignore_index, int):
        raise InvalidProblemError(f"{who}: ignore_index must be an int, got {self.ignore_index!r}")
    if not -2**63 <= self.ignore_index < 2**63:
        raise InvalidProblemError(f"{who}: ignore_index out of the int64 range")
    object.__setattr__(self, "has_weight", bool(self.has_weight))
    target = getattr(self, "target", "index")
    if with_target_kind and target not in TARGETS:
        raise InvalidProblemError(f"{who}: target must be 'index' or 'prob', got {target!r}")
    if target == "prob" and self.ignore_index >= 0:
        raise UnsupportedError(f"{who}: ignore_index = {self.ignore_index} with probability "
                               "targets (as torch, only a negative ignore_index is accepted with "
                               "soft targets, and it is ignored; wired: index targets)")
    if target == "index":
        object.__setattr__(self, "index_dtype",
                           check_dtype(self.index_dtype, (int32, int64), f"{who} targets"))
    ls = getattr(self, "label_smoothing", None)
    if ls is not None:
        ls = check_finite(ls, f"{who}: label_smoothing")
        if not 0.0 <= ls <= 1.0:
            raise InvalidProblemError(f"{who}: label_smoothing must be in [0, 1], got {ls}")
        object.__setattr__(self, "label_smoothing", ls)


# ================================================================================ descriptors
@dataclass(frozen=True)
class CrossEntropyDescriptor:
    """Cross-entropy of logits (n, c): class-index targets (``index``, int32/int64 ``index_dtype``,
    with ``ignore_index`` and ``label_smoothing``) or soft targets (``prob``: an (n, c) tensor of
    the logits dtype); optional class weights (c,); reduction none / mean / sum."""

    n: int
    c: int
    dtype: DType = float32
    target: str = "index"
    reduction: str = "mean"
    ignore_index: int = -100
    label_smoothing: float = 0.0
    has_weight: bool = False
    index_dtype: DType = int64

    def __post_init__(self):
        _check_common(self, "CrossEntropy")

    @property
    def mode(self) -> str:
        if self.target == "prob":
            return "prob"
        return "smooth" if self.label_smoothing > 0 else "plain"


@dataclass(frozen=True)
class CrossEntropyBackwardDescriptor(CrossEntropyDescriptor):
    """Gradient of :class:`CrossEntropyDescriptor`'s loss w.r.t. the logits (same fields)."""


@dataclass(frozen=True)
class NLLLossDescriptor:
    """Negative log-likelihood of log-probabilities (n, c): loss = −w[t]·x[t]; class-index
    targets (int32/int64), ``ignore_index``, optional class weights, reduction none/mean/sum."""

    n: int
    c: int
    dtype: DType = float32
    reduction: str = "mean"
    ignore_index: int = -100
    has_weight: bool = False
    index_dtype: DType = int64

    def __post_init__(self):
        _check_common(self, "NLLLoss", with_target_kind=False)

    target = "index"
    label_smoothing = 0.0

    @property
    def mode(self) -> str:
        return "nll"


@dataclass(frozen=True)
class NLLLossBackwardDescriptor(NLLLossDescriptor):
    """Gradient of :class:`NLLLossDescriptor`'s loss: dx = −w[t]·g at the target, 0 elsewhere."""


# ======================================================================================= args
@dataclass
class CrossEntropyArgs:
    """logits (n, c); target (n,) class indices or (n, c) probabilities; loss: (n,) for
    reduction none, else a single element (shape () or (1,)), logits dtype; weight (c,) logits
    dtype; lse / total_weight: optional outputs ((n,) / one element, f32 or f64 for f64);
    status: optional int32 word set to 1 on a bad target."""

    logits: object
    target: object
    loss: object
    weight: object = None
    lse: object = None
    total_weight: object = None
    status: object = None


@dataclass
class NLLLossArgs:
    """input (n, c) log-probabilities; target (n,); loss as :class:`CrossEntropyArgs`."""

    input: object
    target: object
    loss: object
    weight: object = None
    total_weight: object = None
    status: object = None


@dataclass
class CrossEntropyBackwardArgs:
    """logits, target, weight as the forward; lse (n,) saved by the forward; grad_loss: (n,)
    for reduction none, one element otherwise (logits dtype); total_weight: the forward's
    (required for mean); dx (n, c) output (unit class stride)."""

    logits: object
    target: object
    lse: object
    grad_loss: object
    dx: object
    weight: object = None
    total_weight: object = None
    status: object = None


@dataclass
class NLLLossBackwardArgs:
    """target, weight, grad_loss, total_weight as :class:`CrossEntropyBackwardArgs`; dx (n, c)."""

    target: object
    grad_loss: object
    dx: object
    weight: object = None
    total_weight: object = None
    status: object = None


# ================================================================================== helpers
def _row_view(obj, name, desc, dev=None):
    v = view_arg(obj, name, shape=(desc.n, desc.c), dtype=desc.dtype, device=dev)
    if desc.c > 1 and desc.n > 0 and v.strides[1] != 1:
        raise UnsupportedError(f"{name}: the class dim must have unit stride, got strides "
                               f"{v.strides} (make it contiguous first)")
    return v


def _row_stride(v) -> int:
    return v.strides[0] if v.shape[0] > 1 else v.shape[1]


def _target_view(obj, desc, dev):
    if desc.target == "prob":
        return _row_view(obj, "target", desc, dev)
    v = view_arg(obj, "target", shape=(desc.n,), device=dev)
    if v.dtype not in (int32, int64):
        raise UnsupportedError(f"target: class indices must be int32 or int64, got {v.dtype.name}")
    if v.dtype != desc.index_dtype:
        raise UnsupportedError(f"target: dtype {v.dtype.name} != descriptor index_dtype "
                               f"{desc.index_dtype.name}")
    if desc.n > 1 and v.strides[0] != 1:
        raise UnsupportedError("target: class indices must be contiguous")
    return v


def _weight_view(obj, desc, dev):
    w = view_arg(obj, "weight", optional=True, dtype=desc.dtype, device=dev)
    if desc.has_weight and w is None:
        raise InvalidProblemError("weight is required: the descriptor says has_weight=True")
    if not desc.has_weight and w is not None:
        raise InvalidProblemError("weight given but the descriptor says has_weight=False")
    if w is not None and (w.numel != desc.c or (desc.c > 1 and not w.is_contiguous())):
        raise InvalidProblemError(f"weight: must be a contiguous vector of c={desc.c} classes, "
                                  f"got shape {w.shape} strides {w.strides}")
    return w


def scalar_view(obj, name, dt, dev, optional=False):
    """A one-element view (a scalar loss / gradient / total weight); InvalidProblemError
    otherwise."""
    v = view_arg(obj, name, optional=optional, dtype=dt, device=dev)
    if v is not None and v.numel != 1:
        raise InvalidProblemError(f"{name}: must hold exactly one element, got shape {v.shape}")
    return v


def vector_view(obj, name, n, dt, dev, optional=True):
    """A dense vector view of ``n`` values (per-row losses, lse, upstream gradients)."""
    v = view_arg(obj, name, optional=optional, dtype=dt, device=dev)
    if v is not None and (v.numel != n or (n > 1 and not v.is_contiguous())):
        raise InvalidProblemError(f"{name}: must be a dense vector of n={n} values, got shape "
                                  f"{v.shape} strides {v.strides}")
    return v


def ptr_of(v) -> int:
    """The view's device pointer, 0 for an absent operand."""
    return 0 if v is None else v.ptr


def _aligned(vec: int, views_strides) -> bool:
    return all(p % 16 == 0 and s % vec == 0 for p, s in views_strides)


# ================================================================================== forward
class _LossForward(Plan):
    _op = "cross_entropy"
    _input = "logits"  # the Args field of the (n, c) input

    def _plan(self) -> None:
        d = self.desc
        tuning = self.pref.tuning_for(CrossEntropyTuning)
        self._knobs = fw_knobs(d.dtype, d.mode, d.c, self._arch, tuning)
        self._generic = generic_knobs(d.dtype, d.mode, d.c) if d.mode != "nll" else self._knobs
        self._red = spec.LossReduceKnobs(d.dtype.short)
        self._sku = cross_entropy_sku(self._op, d.dtype, self._arch, spec.CROSS_ENTROPY_FW.name,
                                      self._knobs)
        self._ct = ct = stats_dtype(d.dtype)
        self._ws = 0 if d.reduction == "none" else 2 * align_up(max(d.n, 1) * ct.itemsize)

    def workspace_size(self) -> int:
        return self._ws

    def is_empty(self) -> bool:
        return self.desc.n == 0 and self.desc.reduction == "none"

    def _bind(self, args):
        d = self.desc
        x = _row_view(getattr(args, self._input), self._input, d)
        dev = x.device
        t = _target_view(args.target, d, dev)
        w = _weight_view(args.weight, d, dev)
        if d.reduction == "none":
            loss = vector_view(args.loss, "loss", d.n, d.dtype, dev, optional=False)
        else:
            loss = scalar_view(args.loss, "loss", d.dtype, dev)
        check_writable_no_overlap(loss, "loss")
        lse = vector_view(getattr(args, "lse", None), "lse", d.n, self._ct, dev)
        tw = scalar_view(args.total_weight, "total_weight", self._ct, dev, optional=True)
        if tw is not None and d.reduction == "none":
            raise InvalidProblemError("total_weight is an output of the mean / sum reductions "
                                      "only (reduction='none' gives no total)")
        st = status_view(args.status, dev)
        return x, t, w, loss, lse, tw, st

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        x, t, w, loss, lse, tw, st = bound
        d = self.desc
        dev = x.device
        k = self._knobs
        prob = d.target == "prob"
        xs = _row_stride(x)
        ps = _row_stride(t) if prob else 0
        checks = [(x.ptr, xs)]
        if prob:
            checks.append((t.ptr, ps))
        if w is not None and d.mode in ("smooth", "prob"):
            checks.append((w.ptr, 0))
        if d.mode != "nll" and not (d.c % k.vec == 0 and _aligned(k.vec, checks)):
            k = self._generic
        flags = ((spec.HAS_W if w is not None else 0) | (spec.HAS_STATUS if st is not None else 0)
                 | (spec.WRITE_LSE if lse is not None else 0))
        rl = den = 0
        if d.reduction == "none":
            flags |= spec.WRITE_LOSS
        else:
            flags |= spec.WRITE_ROWS
            rl = ws.ptr
            den = ws.ptr + self._ws // 2
        ts = 2 if (not prob and t.dtype == int64) else 1
        if d.n > 0:
            kern = self._kernel(spec.CROSS_ENTROPY_FW, k, dev)
            kern.launch((k.blocks(d.n), 1, 1),
                        (x.ptr, 0 if prob else t.ptr, ptr_of(w), t.ptr if prob else 0,
                         ptr_of(loss) if d.reduction == "none" else 0, rl, den, ptr_of(lse),
                         ptr_of(st), d.n, d.c, xs, ps, ts, int(d.ignore_index),
                         float(d.label_smoothing), flags), stream)
        if d.reduction != "none":
            rflags = (spec.RED_MEAN if d.reduction == "mean" else 0) | (
                spec.RED_TW if tw is not None else 0)
            rk = self._kernel(spec.LOSS_REDUCE, self._red, dev)
            rk.launch((1, 1, 1), (rl, den, loss.ptr, ptr_of(tw), d.n, 1, rflags), stream)


class CrossEntropyPlan(_LossForward):
    """Cross-entropy forward (see the module docstring for the formulas).  dtypes f32/f16/bf16/
    f64; workspace 2 vectors of n compute-type values for mean / sum (none: 0); deterministic.
    Bandwidth: x is read once (register / cluster SKUs)."""

    descriptor = CrossEntropyDescriptor
    _op = "cross_entropy"


class NLLLossPlan(_LossForward):
    """NLL forward: loss = −w[t]·x[t] per row (x: log-probabilities (n, c), any row stride);
    reductions none / mean (Σ loss / Σ w[t]) / sum; workspace as :class:`CrossEntropyPlan`."""

    descriptor = NLLLossDescriptor
    _op = "nll_loss"
    _input = "input"


# ================================================================================= backward
class _LossBackward(Plan):
    _nll = False

    def _plan(self) -> None:
        d = self.desc
        mode = "nll" if self._nll else d.mode
        self._knobs = bw_knobs(d.dtype, mode, d.c, self._arch)
        self._generic = generic_knobs(d.dtype, mode, d.c)
        self._ct = stats_dtype(d.dtype)
        self._sku = cross_entropy_sku(self._op, d.dtype, self._arch, spec.CROSS_ENTROPY_BW.name,
                                      self._knobs)

    def is_empty(self) -> bool:
        return self.desc.n == 0

    def _bind(self, args):
        d = self.desc
        x = lse = None
        if self._nll:
            dx = _row_view(args.dx, "dx", d)
            dev = dx.device
        else:
            x = _row_view(args.logits, "logits", d)
            dev = x.device
            dx = _row_view(args.dx, "dx", d, dev)
            lse = vector_view(args.lse, "lse", d.n, self._ct, dev, optional=False)
        check_writable_no_overlap(dx, "dx")
        t = _target_view(args.target, d, dev)
        w = _weight_view(args.weight, d, dev)
        if d.reduction == "none":
            g = vector_view(args.grad_loss, "grad_loss", d.n, d.dtype, dev, optional=False)
        else:
            g = scalar_view(args.grad_loss, "grad_loss", d.dtype, dev)
        tw = scalar_view(args.total_weight, "total_weight", self._ct, dev,
                         optional=d.reduction != "mean")
        st = status_view(args.status, dev)
        return x, t, w, lse, g, tw, dx, st

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        x, t, w, lse, g, tw, dx, st = bound
        d = self.desc
        k = self._knobs
        prob = d.target == "prob"
        xs = _row_stride(x) if x is not None else 0
        ds = _row_stride(dx)
        ps = _row_stride(t) if prob else 0
        checks = [(dx.ptr, ds)]
        if x is not None:
            checks.append((x.ptr, xs))
        if prob:
            checks.append((t.ptr, ps))
        if w is not None and d.mode in ("smooth", "prob"):
            checks.append((w.ptr, 0))
        if not (d.c % k.vec == 0 and _aligned(k.vec, checks)):
            k = self._generic
        flags = ((spec.HAS_W if w is not None else 0) | (spec.HAS_STATUS if st is not None else 0)
                 | (spec.G_ROW if d.reduction == "none" else 0)
                 | (spec.G_MEAN if d.reduction == "mean" else 0))
        ts = 2 if (not prob and t.dtype == int64) else 1
        kern = self._kernel(spec.CROSS_ENTROPY_BW, k, dx.device)
        kern.launch((k.blocks(d.n), 1, 1),
                    (ptr_of(x), 0 if prob else t.ptr, ptr_of(w), t.ptr if prob else 0,
                     ptr_of(lse), g.ptr, ptr_of(tw), dx.ptr, ptr_of(st), d.n, d.c, xs, ps, ds, ts,
                     int(d.ignore_index), float(d.label_smoothing), flags), stream)


class CrossEntropyBackwardPlan(_LossBackward):
    """dlogits = g·(B·softmax(x) − a) with the forward's saved lse (module docstring of
    :mod:`baracuda_dsl.ops.losses.kernels.cross_entropy_bw`): x read once, dx written once; no workspace."""

    descriptor = CrossEntropyBackwardDescriptor
    _op = "cross_entropy_bw"


class NLLLossBackwardPlan(_LossBackward):
    """NLL backward: dx = −w[t]·g at the target class, 0 elsewhere (every element of dx is
    written); no workspace."""

    descriptor = NLLLossBackwardDescriptor
    _op = "nll_loss_bw"
    _nll = True


__all__ = [
    "CrossEntropyDescriptor", "CrossEntropyArgs", "CrossEntropyPlan",
    "CrossEntropyBackwardDescriptor", "CrossEntropyBackwardArgs", "CrossEntropyBackwardPlan",
    "NLLLossDescriptor", "NLLLossArgs", "NLLLossPlan",
    "NLLLossBackwardDescriptor", "NLLLossBackwardArgs", "NLLLossBackwardPlan",
    "CrossEntropyTuning",
]

