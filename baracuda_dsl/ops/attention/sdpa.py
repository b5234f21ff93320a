"""General scaled-dot-product attention: ``SdpaPlan`` (forward: output and log-sum-exp) and
``SdpaBackwardPlan`` (dq, dk, dv) — the "correct before fast" path for every problem the flash
kernels do not take: any strides (views of a packed qkv tensor, transposes, negative strides)
and pointers aligned only to their element size, f32 and f64 as well as f16 / bf16, any head
dims (``head_dim_v != head_dim`` too) and an arbitrary boolean or additive mask tensor.

    s_ij = scale·q_i·k_j                      (scale default 1/√head_dim)
    s_ij = c·tanh(s_ij / c)                   (softcap c > 0)
    s_ij = −∞  where j > i + off              (causal; off = Sk − Sq for align="bottom_right",
                                               0 for "top_left", torch SDPA's is_causal)
    s_ij = −∞  where mask[b, h, i, j] is False    (bool mask: True keeps, torch's meaning)
    s_ij += mask[b, h, i, j]                  (additive mask; an entry of −∞ masks)
    o_i = Σ_j softmax_j(s_i)·v_j,   lse_i = log Σ_j exp(s_ij)   (natural log)

exactly the formula of ``tests/_attention_ref.attention`` / ``attention_backward``.  A row that
sees no key (Sk = 0, the causal rule, every mask entry False / −∞) gets o = 0 and lse = −∞ —
flash-attn's result; torch's SDPA gives NaN there — and zero gradients.

Layouts (flash-attn's): q (B, Sq, Hq, D), k (B, Sk, Hk, D), v (B, Sk, Hk, Dv), out (B, Sq, Hq,
Dv), lse (B, Hq, Sq); gradients shaped like q, k, v.  Every operand may have any element
strides.  GQA / MQA: Hq % Hk == 0, query head h reads kv head h // (Hq / Hk); dk / dv sum over
the query heads of each kv head.  The mask (``mask_dtype`` bool, or the input dtype / f32 for an
additive mask) has any shape of rank <= 4 that broadcasts to (B, Hq, Sq, Sk) like torch's
(right-aligned; extents 1 broadcast) and any strides.

Precision: f16 / bf16 / f32 compute and accumulate in f32, f64 in f64 (accurate exp / log /
tanh); lse is f32 (f64 for f64 inputs); every output element is rounded once.  Deterministic
and bit-stable: fixed summation orders, no atomics.  Dropout is not wired.

Kernels (``specs/sdpa.py``; SKU = dtype, 4 per template, 12 per arch — masks, causal, softcap
and every shape are run-time parameters): ``sdpa_fwd`` (one CTA per (query row, head, batch):
a (max, Σexp) pass over the keys, then o feature block by feature block with the scores
recomputed: no workspace), ``sdpa_bwd_dq`` (one CTA per query row: delta_i = dO_i·O_i into
the workspace, dq_i = scale·Σ_j dS_ij k_j) and ``sdpa_bwd_dkdv`` (one CTA per (key, kv head,
batch): dv_j = Σ_{h,i} P_ij dO_i, dk_j = scale·Σ_{h,i} dS_ij q_i).  Work: the forward evaluates
every score 1 + ⌈Dv/128⌉ times, the backward evaluates P and dS ⌈D/128⌉ + ⌈max(D, Dv)/128⌉
times, all with scalar loads — a reference-speed path, not a flash kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Tuple

from ...dtypes import DType, bfloat16, bool_, dtype as as_dtype, float16, float32, float64
from ...errors import InvalidProblemError, MisalignedOperandError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, align_up, check_dtype, check_finite, view_arg
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace
from ..shape.layout import check_no_self_overlap
from .checks import check_disjoint, check_extent
from .specs import sdpa as spec

__all__ = ["SdpaDescriptor", "SdpaArgs", "SdpaPlan", "SdpaBackwardDescriptor",
           "SdpaBackwardArgs", "SdpaBackwardPlan", "mask_strides"]

DTYPES = (float16, bfloat16, float32, float64)
ALIGNS = ("bottom_right", "top_left")
_GRID_YZ = spec.GRID_YZ


def compute_dtype(dt: DType) -> DType:
    """Math / accumulation dtype (and the lse's): f64 for f64 inputs, f32 otherwise."""
    return float64 if dt == float64 else float32


# ============================================================================ descriptors
@dataclass(frozen=True)
class SdpaDescriptor:
    """One scaled-dot-product attention problem (the module docstring has the formula).

    ``batch`` B, ``seqlen_q`` Sq, ``seqlen_k`` Sk, ``heads_q`` Hq, ``heads_k`` Hk (Hq % Hk == 0;
    Hk = 0 only with Hq = 0), ``head_dim`` D >= 1, ``head_dim_v`` Dv >= 1 (None: D); ``dtype``
    of q / k / v / out (f16, bf16, f32, f64); ``causal`` with ``align`` ``"bottom_right"``
    (off = Sk − Sq, flash-attn's) or ``"top_left"`` (off = 0, torch SDPA's ``is_causal``);
    ``scale`` (None: 1/√D); ``softcap`` (0: off); ``mask_dtype`` None (no mask), ``bool``
    (True keeps) or a float dtype — the input dtype or f32 — for an additive mask, with
    ``mask_shape`` (rank <= 4, broadcastable to (B, Hq, Sq, Sk); None: exactly that shape);
    ``dropout_p`` (must be 0: not wired).  Extents past 2^31 − 1 raise UnsupportedError."""

    batch: int
    seqlen_q: int
    seqlen_k: int
    heads_q: int
    heads_k: int
    head_dim: int
    head_dim_v: Optional[int] = None
    dtype: DType = float32
    causal: bool = False
    align: str = "bottom_right"
    scale: Optional[float] = None
    softcap: float = 0.0
    mask_dtype: Optional[DType] = None
    mask_shape: Optional[Tuple[int, ...]] = None
    dropout_p: float = 0.0

    def __post_init__(self):
        _validate(self, type(self).__name__)

    # -- derived ---------------------------------------------------------------------------
    @property
    def softmax_scale(self) -> float:
        """The scale applied to q·k (1/√head_dim unless given)."""
        return 1.0 / math.sqrt(self.head_dim) if self.scale is None else float(self.scale)

    @property
    def mask_kind(self) -> str:
        """``"none"``, ``"bool"`` or ``"additive"``."""
        if self.mask_dtype is None:
            return "none"
        return "bool" if self.mask_dtype == bool_ else "additive"

    @property
    def lse_dtype(self) -> DType:
        """dtype of the log-sum-exp: f32, f64 for f64 inputs."""
        return compute_dtype(self.dtype)

    def q_shape(self) -> Tuple[int, ...]:
        return (self.batch, self.seqlen_q, self.heads_q, self.head_dim)

    def k_shape(self) -> Tuple[int, ...]:
        return (self.batch, self.seqlen_k, self.heads_k, self.head_dim)

    def v_shape(self) -> Tuple[int, ...]:
        return (self.batch, self.seqlen_k, self.heads_k, self.head_dim_v)

    def out_shape(self) -> Tuple[int, ...]:
        return (self.batch, self.seqlen_q, self.heads_q, self.head_dim_v)

    def lse_shape(self) -> Tuple[int, ...]:
        return (self.batch, self.heads_q, self.seqlen_q)

    def scores_shape(self) -> Tuple[int, ...]:
        """(B, Hq, Sq, Sk): the shape the mask broadcasts to."""
        return (self.batch, self.heads_q, self.seqlen_q, self.seqlen_k)


@dataclass(frozen=True)
class SdpaBackwardDescriptor(SdpaDescriptor):
    """The backward of :class:`SdpaDescriptor`'s problem (the same fields): dq, dk, dv for the
    loss Σ out·dout, given the forward's out and lse."""


def _validate(d, what: str) -> None:
    for f in ("batch", "seqlen_q", "seqlen_k", "heads_q", "heads_k"):
        check_extent(getattr(d, f), f"{what}.{f}")
    check_extent(d.head_dim, f"{what}.head_dim", 1)
    if d.head_dim_v is None:
        object.__setattr__(d, "head_dim_v", d.head_dim)
    check_extent(d.head_dim_v, f"{what}.head_dim_v", 1)
    object.__setattr__(d, "dtype", check_dtype(d.dtype, DTYPES, what))
    if d.heads_k == 0:
        if d.heads_q:
            raise InvalidProblemError(f"{what}: heads_k = 0 needs heads_q = 0, got "
                                      f"heads_q = {d.heads_q}")
    elif d.heads_q % d.heads_k:
        raise InvalidProblemError(f"{what}: heads_q {d.heads_q} is not a multiple of heads_k "
                                  f"{d.heads_k}")
    object.__setattr__(d, "causal", bool(d.causal))
    if d.align not in ALIGNS:
        raise InvalidProblemError(f"{what}.align must be one of {ALIGNS}, got {d.align!r}")
    cap = check_finite(d.softcap, f"{what}.softcap")
    if cap < 0:
        raise InvalidProblemError(f"{what}.softcap must be >= 0, got {cap}")
    object.__setattr__(d, "softcap", cap)
    if d.scale is not None:
        object.__setattr__(d, "scale", check_finite(d.scale, f"{what}.scale"))
    p = check_finite(d.dropout_p, f"{what}.dropout_p")
    if not 0.0 <= p < 1.0:
        raise InvalidProblemError(f"{what}.dropout_p must be in [0, 1), got {p}")
    if p > 0:
        raise UnsupportedError(f"{what}: dropout is not wired in the sdpa kernels (dropout_p = 0 "
                               f"is)")
    _validate_mask(d, what)


def _validate_mask(d, what: str) -> None:
    if d.mask_dtype is None:
        if d.mask_shape is not None:
            raise InvalidProblemError(f"{what}: mask_shape given without a mask_dtype")
        return
    mdt = as_dtype(d.mask_dtype)
    if mdt != bool_ and mdt not in (d.dtype, float32):
        wired = ["bool", d.dtype.name] + (["float32"] if d.dtype != float32 else [])
        raise UnsupportedError(f"{what}: mask dtype {mdt.name} is not wired for {d.dtype.name} "
                               f"inputs; wired: {', '.join(wired)}")
    object.__setattr__(d, "mask_dtype", mdt)
    target = d.scores_shape()
    shape = target if d.mask_shape is None else d.mask_shape
    try:
        shape = tuple(shape)
    except TypeError:
        raise InvalidProblemError(f"{what}.mask_shape must be a tuple of ints, got "
                                  f"{d.mask_shape!r}") from None
    for n in shape:
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InvalidProblemError(f"{what}.mask_shape must be non-negative ints, got {shape}")
    if len(shape) > 4:
        raise InvalidProblemError(f"{what}: mask of rank {len(shape)} > 4 (it broadcasts to "
                                  f"(B, Hq, Sq, Sk))")
    for n, t in zip(shape[::-1], target[::-1]):
        if n != t and n != 1:
            raise InvalidProblemError(f"{what}: mask shape {shape} does not broadcast to "
                                      f"(B, Hq, Sq, Sk) = {target}")
    object.__setattr__(d, "mask_shape", shape)


def mask_strides(shape: Tuple[int, ...], strides: Tuple[int, ...]) -> Tuple[int, int, int, int]:
    """Element strides (b, h, i, j) of a mask of ``shape`` (rank <= 4, right-aligned to
    (B, Hq, Sq, Sk)) and ``strides``: missing and extent-1 dims broadcast (stride 0)."""
    out = [0, 0, 0, 0]
    r = len(shape)
    for k in range(r):
        if shape[k] != 1:
            out[4 - r + k] = int(strides[k])
    return tuple(out)


# ================================================================================== args
@dataclass
class SdpaArgs:
    """q (B, Sq, Hq, D), k (B, Sk, Hk, D), v (B, Sk, Hk, Dv) (inputs, the descriptor's dtype),
    out (output, (B, Sq, Hq, Dv), that dtype), lse (output, (B, Hq, Sq), f32 — f64 for f64
    inputs — or None: not written), mask (the descriptor's ``mask_shape`` and ``mask_dtype``;
    None iff the descriptor has no mask)."""

    q: object
    k: object
    v: object
    out: object
    lse: object = None
    mask: object = None


@dataclass
class SdpaBackwardArgs:
    """q, k, v, mask as the forward; out and lse (the forward's outputs: lse required), dout
    (out's shape and dtype); dq, dk, dv (outputs, the shapes and dtype of q, k, v)."""

    q: object
    k: object
    v: object
    out: object
    dout: object
    lse: object
    dq: object
    dk: object
    dv: object
    mask: object = None


# ================================================================================ helpers
def _precision(dt: DType) -> PrecisionGuarantee:
    ct = compute_dtype(dt)
    return PrecisionGuarantee(math_precision=ct, accumulator=ct,
                              bit_stable_on_same_hardware=True, deterministic=True)


def _st4(v) -> Tuple[int, int, int, int]:
    return tuple(v.strides) if v is not None else (0, 0, 0, 0)


class _SdpaCommon(Plan):
    """Validation, flags and the operand checks the forward and backward share."""

    _op = "sdpa"
    _template = spec.SDPA_FWD

    def _plan(self) -> None:
        d = self.desc
        self._knobs = spec.SdpaKnobs(dtype=d.dtype.short)
        self._ct = compute_dtype(d.dtype)
        flags = 0
        if d.causal:
            flags |= spec.CAUSAL
        if d.align == "bottom_right":
            flags |= spec.BOTTOM_RIGHT
        if d.softcap > 0:
            flags |= spec.SOFTCAP
        if d.mask_kind == "bool":
            flags |= spec.MASK_BOOL
        elif d.mask_kind == "additive":
            flags |= spec.MASK_ADD if d.mask_dtype == d.dtype else spec.MASK_F32
        self._flags = flags
        self._ratio = d.heads_q // d.heads_k if d.heads_k else 0
        self._sku = KernelSku(OpCategory.ATTENTION, self._op, d.dtype, self._arch,
                              BackendKind.CUTE_DSL, _precision(d.dtype), aux_element=self._ct,
                              template=self._template.name, knobs=freeze_knobs(self._knobs))

    def _inputs(self, args):
        """Checked views of q, k, v and the mask (None when the descriptor has none)."""
        d = self.desc
        q = view_arg(args.q, "q", shape=d.q_shape(), dtype=d.dtype)
        dev = q.device
        k = view_arg(args.k, "k", shape=d.k_shape(), dtype=d.dtype, device=dev)
        v = view_arg(args.v, "v", shape=d.v_shape(), dtype=d.dtype, device=dev)
        m = None
        if d.mask_dtype is not None:
            if args.mask is None:
                raise InvalidProblemError(f"the descriptor has a {d.mask_kind} mask of shape "
                                          f"{d.mask_shape}: pass it as Args.mask")
            m = view_arg(args.mask, "mask", shape=d.mask_shape, dtype=d.mask_dtype, device=dev)
        elif args.mask is not None:
            raise InvalidProblemError("mask given but the descriptor has none (set mask_dtype "
                                      "and mask_shape)")
        return q, k, v, m

    def _output(self, obj, name: str, shape, dtype, dev):
        v = view_arg(obj, name, shape=shape, dtype=dtype, device=dev)
        check_no_self_overlap(v, name)
        return v

    def _lse(self, obj, name: str, dev, output: bool):
        d = self.desc
        v = view_arg(obj, name, shape=d.lse_shape(), dtype=d.lse_dtype, device=dev)
        if output:
            check_no_self_overlap(v, name)
        return v

    def _grid(self, rows: int, heads: int) -> Tuple[int, int, int]:
        return (rows, min(heads, _GRID_YZ), min(self.desc.batch, _GRID_YZ))

    def _dims(self, heads: int) -> Tuple[int, ...]:
        d = self.desc
        return (d.batch, heads, d.seqlen_q, d.seqlen_k, self._ratio, d.head_dim, d.head_dim_v)

    def _tail(self) -> Tuple[float, float, int]:
        d = self.desc
        return (d.softmax_scale, d.softcap, self._flags)

    def _mask_args(self, m):
        if m is None:
            return 0, (0, 0, 0, 0)
        return m.ptr, mask_strides(tuple(m.shape), tuple(m.strides))


# ================================================================================ forward
class SdpaPlan(_SdpaCommon):
    """Scaled-dot-product attention forward: out (the input dtype) and, when ``args.lse`` is
    given, lse (f32; f64 for f64 inputs).  Any strides, f16 / bf16 / f32 / f64, any D and Dv,
    bool / additive masks (broadcast), causal in both alignments, softcap.  No workspace.
    One launch of ``sdpa_fwd`` over a (Sq, min(Hq, 65535), min(B, 65535)) grid; empty
    problems (B, Hq or Sq zero) return without launching; Sk = 0 writes out = 0, lse = −∞.
    Deterministic, bit-stable."""

    descriptor = SdpaDescriptor
    _op = "sdpa"
    _template = spec.SDPA_FWD

    def is_empty(self) -> bool:
        d = self.desc
        return d.batch * d.seqlen_q * d.heads_q == 0

    def _bind(self, args):
        d = self.desc
        q, k, v, m = self._inputs(args)
        dev = q.device
        o = self._output(args.out, "out", d.out_shape(), d.dtype, dev)
        lse = None
        if args.lse is not None:
            lse = self._lse(args.lse, "lse", dev, output=True)
        ins = (("q", q), ("k", k), ("v", v), ("mask", m))
        check_disjoint(o, "out", ins)
        check_disjoint(lse, "lse", ins + (("out", o),))
        return q, k, v, m, o, lse

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        q, k, v, m, o, lse = bound
        d = self.desc
        mptr, mst = self._mask_args(m)
        flags = self._flags | (spec.WRITE_LSE if lse is not None else 0)
        vals = ((q.ptr, k.ptr, v.ptr, mptr, o.ptr, lse.ptr if lse is not None else 0)
                + self._dims(d.heads_q)
                + _st4(q) + _st4(k) + _st4(v) + mst + _st4(o)
                + (tuple(lse.strides) if lse is not None else (0, 0, 0))
                + (d.softmax_scale, d.softcap, flags))
        kern = self._kernel(spec.SDPA_FWD, self._knobs, q.device)
        kern.launch(self._grid(d.seqlen_q, d.heads_q), vals, stream)


# =============================================================================== backward
class SdpaBackwardPlan(_SdpaCommon):
    """Scaled-dot-product attention backward: dq, dk, dv (the input dtype) from q, k, v, the
    mask, the forward's out and lse, and dout::

        P = exp(s − lse),  dP = dO·Vᵀ,  delta_i = dO_i·O_i,  dS = P∘(dP − delta)[∘(1 − tanh²)]
        dV = Pᵀ·dO,  dQ = scale·dS·K,  dK = scale·dSᵀ·Q      (dK, dV summed over a GQA group)

    (the softcap factor is the chain rule through s = c·tanh(raw / c)).  Two launches on the
    stream: ``sdpa_bwd_dq`` (grid (Sq, Hq, B); also stores delta) then ``sdpa_bwd_dkdv`` (grid
    (Sk, Hk, B)).  Workspace: delta, exactly ``align_up(B·Hq·Sq·c)`` bytes with c = 4 (8 for
    f64 inputs), 256-byte multiple, 0 when B·Hq·Sq = 0; WorkspaceTooSmallError below that.  A
    row with lse = −∞ contributes nothing; Sq = 0 writes dk = dv = 0, Sk = 0 writes dq = 0.
    Deterministic, bit-stable (fixed orders, no atomics)."""

    descriptor = SdpaBackwardDescriptor
    _op = "sdpa_backward"
    _template = spec.SDPA_BWD_DKDV

    def _plan(self) -> None:
        super()._plan()
        cap = self.pref.max_workspace_bytes
        if cap is not None and self.workspace_size() > cap:
            raise UnsupportedError(f"SdpaBackward: needs {self.workspace_size()} workspace bytes "
                                   f"> the preference's max_workspace_bytes={cap}")

    def workspace_size(self) -> int:
        """Bytes of the delta rows: ``align_up(B·Hq·Sq·itemsize(compute dtype))``."""
        d = self.desc
        return align_up(d.batch * d.heads_q * d.seqlen_q * self._ct.itemsize)

    def is_empty(self) -> bool:
        d = self.desc
        return d.batch * d.seqlen_q * d.heads_q == 0 and d.batch * d.seqlen_k * d.heads_k == 0

    def check_workspace(self, workspace) -> Workspace:
        ws = super().check_workspace(workspace)
        if ws.ptr % self._ct.itemsize:
            raise MisalignedOperandError(f"workspace: pointer {ws.ptr:#x} is not aligned to "
                                         f"{self._ct.itemsize} bytes")
        return ws

    def _bind(self, args):
        d = self.desc
        q, k, v, m = self._inputs(args)
        dev = q.device
        o = view_arg(args.out, "out", shape=d.out_shape(), dtype=d.dtype, device=dev)
        do = view_arg(args.dout, "dout", shape=d.out_shape(), dtype=d.dtype, device=dev)
        lse = self._lse(args.lse, "lse", dev, output=False)
        dq = self._output(args.dq, "dq", d.q_shape(), d.dtype, dev)
        dk = self._output(args.dk, "dk", d.k_shape(), d.dtype, dev)
        dv = self._output(args.dv, "dv", d.v_shape(), d.dtype, dev)
        ins = (("q", q), ("k", k), ("v", v), ("out", o), ("dout", do), ("lse", lse),
               ("mask", m))
        check_disjoint(dq, "dq", ins)
        check_disjoint(dk, "dk", ins + (("dq", dq),))
        check_disjoint(dv, "dv", ins + (("dq", dq), ("dk", dk)))
        return q, k, v, m, o, do, lse, dq, dk, dv

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        q, k, v, m, o, do, lse, dq, dk, dv = bound
        d = self.desc
        mptr, mst = self._mask_args(m)
        tail = self._tail()
        lst = tuple(lse.strides)
        if d.batch * d.seqlen_q * d.heads_q:
            kern = self._kernel(spec.SDPA_BWD_DQ, self._knobs, q.device)
            vals = ((q.ptr, k.ptr, v.ptr, o.ptr, do.ptr, lse.ptr, mptr, dq.ptr, ws.ptr)
                    + self._dims(d.heads_q)
                    + _st4(q) + _st4(k) + _st4(v) + _st4(o) + _st4(do) + lst + mst + _st4(dq)
                    + tail)
            kern.launch(self._grid(d.seqlen_q, d.heads_q), vals, stream)
        if d.batch * d.seqlen_k * d.heads_k:
            kern = self._kernel(spec.SDPA_BWD_DKDV, self._knobs, q.device)
            vals = ((q.ptr, k.ptr, v.ptr, do.ptr, lse.ptr, ws.ptr, mptr, dk.ptr, dv.ptr)
                    + self._dims(d.heads_k)
                    + _st4(q) + _st4(k) + _st4(v) + _st4(do) + lst + mst + _st4(dk) + _st4(dv)
                    + tail)
            kern.launch(self._grid(d.seqlen_k, d.heads_k), vals, stream)
