"""Flash attention plans: ``FlashAttentionPlan`` (forward, output and log-sum-exp) and
``FlashAttentionBackwardPlan`` (dq, dk, dv).

    s_ij = scale·q_i·k_j            (scale default 1/√D)
    s_ij = c·tanh(s_ij / c)         (softcap c > 0)
    s_ij −= slope·|i + off − j|     (ALiBi; slopes (Hq,) or (B, Hq), f32)
    s_ij = −∞ unless  i + off − left <= j <= i + off + right   (causal: right = 0; −1 = open)
    o_i = Σ_j softmax_j(s_i)·v_j,   lse_i = log Σ_j exp(s_ij)   (natural log, f32)

``off`` = Sk − Sq for ``align="bottom_right"`` (flash-attn's convention, the default) and 0 for
``"top_left"`` (torch SDPA's ``is_causal``).  A row that sees no key gets o = 0, lse = −∞.

Layouts (flash-attn's): q (B, Sq, Hq, D), k / v (B, Sk, Hk, D), o like q, lse (B, Hq, Sq);
variable-length batches (``varlen=True``): q (Tq, Hq, D), k / v (Tk, Hk, D), lse (Hq, Tq) and
``cu_seqlens_q`` / ``cu_seqlens_k`` (B + 1,) int32 row offsets (``seqlen_q`` / ``seqlen_k`` are
then the longest sequence; a zero-length sequence is fine).  GQA / MQA: Hq % Hk == 0, query
head h reads kv head h // (Hq / Hk).  Any strides with unit stride along D, strides multiples of
8 elements and 16-byte aligned pointers (a packed qkv tensor's views qualify); other layouts,
f32 / f64, other head dims and arbitrary masks go to ``SdpaPlan`` (UnsupportedError says so).

dtypes f16 / bf16 with f32 accumulation and softmax; head dims 64, 96, 128, 192, 256.  Kernels:
forward ``flash_fwd_sm90`` (sm90a: a cp.async producer warpgroup and two wgmma consumer
warpgroups, P fed from registers) and ``flash_fwd`` (``mma.sync`` + ``cp.async``: sm80 / sm89, and
sm90a when :class:`FlashTuning` asks for it); backward ``flash_bwd_pre`` (delta = rowsum(dO∘O)),
then on sm90a at head dims 64 / 128 the one-pass ``flash_bwd_sm90`` (dQ summed with f32 atomics,
``flash_bwd_post`` converts it) unless ``deterministic=True``, else ``flash_bwd_dkdv`` (one CTA
per key tile and kv head: dK, dV summed over the query heads of the group) and ``flash_bwd_dq``
(one CTA per query tile), with no atomics: bit-identical reruns.  The forward is deterministic.

Attention dropout (``dropout_p`` > 0, the ``dropout`` SKUs): P's element (b, h, i, j) is kept iff
word e mod 4 of Philox4x32-10 block e div 4 of the stream (``dropout_seed``, ``dropout_offset``)
is >= round(p·2³²), e = ((b·Hq + h)·seqlen_q + i)·seqlen_k + j (i, j within the sequence) — the
project's generator convention (``blocks/philox.py``); kept elements are scaled by
1 / (1 − p); the lse is that of the undropped scores; the backward regenerates the same mask.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Tuple

from ...dtypes import DType, bfloat16, float16, float32, float64, int32
from ...errors import InvalidProblemError, UnsupportedError, WorkspaceTooSmallError
from ...jit import freeze_knobs
from ...runtime.memory import memset
from ...plan import Plan, align_up, check_dtype, check_finite, check_writable_no_overlap, view_arg
from ...vocabulary import (ArchSku, BackendKind, KernelSku, OpCategory, PrecisionGuarantee,
                           Workspace)
from ..random.random import keep_threshold, offset_word, seed_word
from .checks import check_disjoint, check_extent, check_int
from .specs import flash as spec
from .specs import flash_bwd as bwd_spec
from .specs import flash_bwd_sm90 as sm90_bwd

DTYPES = (float16, bfloat16)
#: accepted by the descriptor only to name the path that takes them (SdpaPlan)
_OTHER = (float32, float64)
_GRID_YZ = 65535
ALIGNS = ("bottom_right", "top_left")
ALIBI_MODES = ("none", "heads", "batch_heads")


# ================================================================================ tuning
@dataclass(frozen=True)
class FlashTuning:
    """Kernel choice of the forward (``PlanPreference(tuning=(FlashTuning(...),))``):
    ``kernel`` ``"auto"`` (sm90a: the wgmma kernel ``flash_fwd_sm90``; sm80 / sm89: the
    ``mma.sync`` kernel ``flash_fwd``), ``"wgmma"`` (sm90a only) or ``"mma"`` (any arch)."""

    kernel: str = "auto"

    def __post_init__(self):
        if self.kernel not in ("auto", "wgmma", "mma"):
            raise InvalidProblemError(f"FlashTuning.kernel must be 'auto', 'wgmma' or 'mma', "
                                      f"got {self.kernel!r}")


# ============================================================================ descriptors
@dataclass(frozen=True)
class FlashAttentionDescriptor:
    """One attention problem (see the module docstring for the formula and layouts).

    ``batch``, ``seqlen_q``, ``seqlen_k`` (the longest sequences when ``varlen``), ``heads_q``,
    ``heads_k``, ``head_dim``; ``dtype`` f16 / bf16; ``causal``; ``window`` (left, right), −1 =
    unbounded; ``align`` ``"bottom_right"`` | ``"top_left"``; ``softcap`` (0 = off); ``scale``
    (None = 1/√head_dim); ``alibi`` ``"none"`` | ``"heads"`` (slopes (Hq,)) | ``"batch_heads"``
    ((B, Hq)); ``varlen`` with ``total_q`` / ``total_k`` packed rows; ``dropout_p`` in [0, 1)
    (the seed and offset of the draw are run-time Args)."""

    batch: int
    seqlen_q: int
    seqlen_k: int
    heads_q: int
    heads_k: int
    head_dim: int
    dtype: DType = bfloat16
    causal: bool = False
    window: Tuple[int, int] = (-1, -1)
    align: str = "bottom_right"
    softcap: float = 0.0
    scale: Optional[float] = None
    alibi: str = "none"
    varlen: bool = False
    total_q: int = 0
    total_k: int = 0
    dropout_p: float = 0.0

    def __post_init__(self):
        _validate(self, type(self).__name__)

    # -- derived ---------------------------------------------------------------------------
    @property
    def softmax_scale(self) -> float:
        """The scale applied to q·k (1/√head_dim unless given)."""
        return 1.0 / math.sqrt(self.head_dim) if self.scale is None else float(self.scale)

    @property
    def bounds(self) -> Tuple[int, int]:
        """(left, right) window bounds after folding ``causal`` in (right <= 0); −1 = open."""
        left, right = self.window
        if self.causal:
            right = 0 if right < 0 else min(right, 0)
        return left, right

    def q_shape(self) -> Tuple[int, ...]:
        if self.varlen:
            return (self.total_q, self.heads_q, self.head_dim)
        return (self.batch, self.seqlen_q, self.heads_q, self.head_dim)

    def kv_shape(self) -> Tuple[int, ...]:
        if self.varlen:
            return (self.total_k, self.heads_k, self.head_dim)
        return (self.batch, self.seqlen_k, self.heads_k, self.head_dim)

    def lse_shape(self) -> Tuple[int, ...]:
        if self.varlen:
            return (self.heads_q, self.total_q)
        return (self.batch, self.heads_q, self.seqlen_q)

    def slopes_shape(self) -> Optional[Tuple[int, ...]]:
        return {"none": None, "heads": (self.heads_q,),
                "batch_heads": (self.batch, self.heads_q)}[self.alibi]


@dataclass(frozen=True)
class FlashAttentionBackwardDescriptor(FlashAttentionDescriptor):
    """The backward of :class:`FlashAttentionDescriptor`'s problem: the same fields, plus
    ``deterministic``: True takes the kernels with no atomics (bit-identical reruns; dQ by its
    own kernel); False (the default) lets sm90a at head dims 64 / 128 take the one-pass wgmma
    kernel, whose dQ is summed with f32 atomics (run-to-run differences of a few ulps)."""

    deterministic: bool = False


def _validate(d, what: str) -> None:
    for f in ("batch", "seqlen_q", "seqlen_k", "heads_q", "heads_k", "total_q", "total_k"):
        check_extent(getattr(d, f), f"{what}.{f}")
    check_int(d.head_dim, f"{what}.head_dim", 1)
    object.__setattr__(d, "dtype", check_dtype(d.dtype, DTYPES + _OTHER, what))
    if d.dtype not in DTYPES:
        raise UnsupportedError(f"{what}: dtype {d.dtype.name} — the flash kernels take f16 / "
                               f"bf16; SdpaPlan takes f32 / f64")
    if d.head_dim not in spec.HEAD_DIMS:
        raise UnsupportedError(f"{what}: head_dim {d.head_dim} — the flash kernels take "
                               f"{', '.join(map(str, spec.HEAD_DIMS))}; SdpaPlan takes any")
    if d.heads_k == 0 or d.heads_q % d.heads_k:
        if d.heads_q or d.heads_k:
            raise InvalidProblemError(f"{what}: heads_q {d.heads_q} is not a multiple of "
                                      f"heads_k {d.heads_k}")
    if d.heads_q > _GRID_YZ or d.batch > _GRID_YZ:
        raise UnsupportedError(f"{what}: at most {_GRID_YZ} heads and batch entries a launch")
    w = tuple(d.window)
    if len(w) != 2:
        raise InvalidProblemError(f"{what}.window must be (left, right), got {d.window!r}")
    for x in w:
        check_int(x, f"{what}.window", -1)
    object.__setattr__(d, "window", w)
    object.__setattr__(d, "causal", bool(d.causal))
    object.__setattr__(d, "varlen", bool(d.varlen))
    if d.align not in ALIGNS:
        raise InvalidProblemError(f"{what}.align must be one of {ALIGNS}, got {d.align!r}")
    if d.alibi not in ALIBI_MODES:
        raise InvalidProblemError(f"{what}.alibi must be one of {ALIBI_MODES}, got {d.alibi!r}")
    cap = check_finite(d.softcap, f"{what}.softcap")
    if cap < 0:
        raise InvalidProblemError(f"{what}.softcap must be >= 0, got {cap}")
    object.__setattr__(d, "softcap", float(cap))
    if d.scale is not None:
        object.__setattr__(d, "scale", check_finite(d.scale, f"{what}.scale"))
    p = check_finite(d.dropout_p, f"{what}.dropout_p")
    if not 0.0 <= p < 1.0:
        raise InvalidProblemError(f"{what}.dropout_p must be in [0, 1), got {p}")
    object.__setattr__(d, "dropout_p", float(p))
    if not d.varlen and (d.total_q or d.total_k):
        raise InvalidProblemError(f"{what}: total_q / total_k are for varlen=True")


# ================================================================================== args
@dataclass
class FlashAttentionArgs:
    """q, k, v (inputs), out (output, q's shape and dtype), lse (output, f32: (B, Hq, Sq), or
    (Hq, Tq) when varlen; None: the plan's workspace holds it), cu_seqlens_q / cu_seqlens_k
    ((B + 1,) int32, varlen only), alibi_slopes (f32, (Hq,) or (B, Hq)), dropout_seed
    (0 <= seed < 2⁶⁴) / dropout_offset (Philox block offset, 0 <= offset < 2⁶²) of the dropout
    draw (read when the descriptor's dropout_p > 0; the backward must get the same pair)."""

    q: object
    k: object
    v: object
    out: object
    lse: object = None
    cu_seqlens_q: object = None
    cu_seqlens_k: object = None
    alibi_slopes: object = None
    dropout_seed: int = 0
    dropout_offset: int = 0


@dataclass
class FlashAttentionBackwardArgs:
    """q, k, v, out, dout (dO, out's shape), lse (the forward's), cu_seqlens_q / cu_seqlens_k,
    alibi_slopes, dropout_seed / dropout_offset as the forward; dq, dk, dv (outputs, the shapes
    of q, k, v)."""

    q: object
    k: object
    v: object
    out: object
    dout: object
    lse: object
    dq: object
    dk: object
    dv: object
    cu_seqlens_q: object = None
    cu_seqlens_k: object = None
    alibi_slopes: object = None
    dropout_seed: int = 0
    dropout_offset: int = 0


# ================================================================================ helpers
def _mma_operand(v, name: str) -> None:
    """The flash kernels' layout contract: unit stride along D, every other stride a multiple of
    8 elements, 16-byte aligned pointer."""
    if not v.numel:
        return
    if v.strides[-1] != 1:
        raise UnsupportedError(f"{name}: the head dim must have unit stride (strides "
                               f"{tuple(v.strides)}); SdpaPlan takes any strides")
    if any(s % 8 for s in v.strides[:-1]):
        raise UnsupportedError(f"{name}: strides {tuple(v.strides)} must be multiples of 8 "
                               f"elements for the flash kernels; SdpaPlan takes any strides")
    if v.ptr % 16:
        raise UnsupportedError(f"{name}: pointer {v.ptr:#x} is not 16-byte aligned; the flash "
                               f"kernels need it (SdpaPlan does not)")


def _strides(v, varlen: bool):
    """(batch, seq, head) element strides of a (B, S, H, D) or varlen (T, H, D) view."""
    if v is None:
        return (0, 0, 0)
    st = tuple(v.strides)
    if varlen:
        return (0, st[0], st[1])
    return st[:3]


def _sku(op: str, dt: DType, arch: ArchSku, template: str, knobs,
         deterministic: bool = True) -> KernelSku:
    return KernelSku(OpCategory.ATTENTION, op, dt, arch, BackendKind.CUTE_DSL,
                     PrecisionGuarantee(float32, float32,
                                        bit_stable_on_same_hardware=deterministic,
                                        deterministic=deterministic),
                     aux_element=float32, template=template, knobs=freeze_knobs(knobs))


class _FlashCommon(Plan):
    """Validation and the argument packing the forward and backward share."""

    def _plan(self) -> None:
        d = self.desc
        self._knobs = spec.FlashKnobs(dtype=d.dtype.short, head_dim=d.head_dim,
                                      dropout=d.dropout_p > 0)
        self._plain = spec.FlashKnobs(dtype=d.dtype.short, head_dim=d.head_dim)
        self._thr = keep_threshold(d.dropout_p)
        self._left, self._right = d.bounds
        flags = 0
        if d.varlen:
            flags |= spec.VARLEN
        if d.alibi != "none":
            flags |= spec.ALIBI
        if d.align == "bottom_right":
            flags |= spec.BOTTOM_RIGHT
        if d.softcap > 0:
            flags |= spec.SOFTCAP
        self._flags = flags
        self._set_sku()

    def is_empty(self) -> bool:
        d = self.desc
        rows = d.total_q if d.varlen else d.batch * d.seqlen_q
        return rows == 0 or d.heads_q == 0

    def _common_views(self, args):
        """Checked views of q, k, v, the varlen offsets and the slopes."""
        d = self.desc
        q = view_arg(args.q, "q", shape=d.q_shape(), dtype=d.dtype)
        dev = q.device
        k = view_arg(args.k, "k", shape=d.kv_shape(), dtype=d.dtype, device=dev)
        v = view_arg(args.v, "v", shape=d.kv_shape(), dtype=d.dtype, device=dev)
        for x, n in ((q, "q"), (k, "k"), (v, "v")):
            _mma_operand(x, n)
        cuq = cuk = None
        if d.varlen:
            cuq = view_arg(args.cu_seqlens_q, "cu_seqlens_q", shape=(d.batch + 1,), dtype=int32,
                           device=dev)
            cuk = view_arg(args.cu_seqlens_k, "cu_seqlens_k", shape=(d.batch + 1,), dtype=int32,
                           device=dev)
            for c, n in ((cuq, "cu_seqlens_q"), (cuk, "cu_seqlens_k")):
                if d.batch and c.strides[0] != 1:
                    raise UnsupportedError(f"{n} must be contiguous")
        elif args.cu_seqlens_q is not None or args.cu_seqlens_k is not None:
            raise InvalidProblemError("cu_seqlens_q / cu_seqlens_k are for varlen=True")
        sl = None
        if d.alibi != "none":
            sl = view_arg(args.alibi_slopes, "alibi_slopes", shape=d.slopes_shape(),
                          dtype=float32, device=dev)
        elif args.alibi_slopes is not None:
            raise InvalidProblemError("alibi_slopes given but the descriptor says alibi='none'")
        return q, k, v, cuq, cuk, sl

    def _lse_view(self, lse, name, dev):
        v = view_arg(lse, name, shape=self.desc.lse_shape(), dtype=float32, device=dev)
        if v.numel and v.strides[-1] != 1:
            raise UnsupportedError(f"{name}: the sequence dim must have unit stride")
        return v

    def _lse_strides(self, v):
        """(lb, lh): lse element (b, h, row) sits at b·lb + h·lh + row (+ the varlen offset)."""
        if self.desc.varlen:
            return (0, v.strides[0] if v is not None else self.desc.total_q)
        if v is None:
            d = self.desc
            return (d.heads_q * d.seqlen_q, d.seqlen_q)
        return (v.strides[0], v.strides[1])

    def _tail_ptrs(self, cuq, cuk, sl):
        return (cuq.ptr if cuq is not None else 0, cuk.ptr if cuk is not None else 0,
                sl.ptr if sl is not None else 0)

    def _slope_strides(self, sl):
        if sl is None:
            return (0, 0)
        if self.desc.alibi == "heads":
            return (0, sl.strides[0])
        return (sl.strides[0], sl.strides[1])

    def _dropout_tail(self, args):
        """(seed as a signed 64-bit value, offset, threshold) of the dropout draw: the random
        family's words (``random.seed_word`` / ``offset_word``), the seed in [0, 2⁶⁴)."""
        seed = args.dropout_seed
        if isinstance(seed, int) and not isinstance(seed, bool) and seed < 0:
            raise InvalidProblemError(f"dropout_seed must be in [0, 2**64), got {seed}")
        return (seed_word(seed), offset_word(args.dropout_offset), self._thr)

    def _scalars(self):
        d = self.desc
        return (d.softmax_scale, d.softcap if d.softcap > 0 else 1.0, self._left, self._right,
                self._flags)


# ================================================================================ forward
class FlashAttentionPlan(_FlashCommon):
    """Flash attention forward: out (q's dtype) and lse (f32).  f16 / bf16, f32 accumulation
    and softmax (base-2 exponentials, ex2.approx), head dims 64 / 96 / 128 / 192 / 256.
    Workspace: the lse (B·Hq·Sq·4 bytes, 256-aligned) when ``args.lse`` is None, else 0 — pass
    ``lse`` to avoid it.  Deterministic, no atomics.  FLOPs 4·B·Hq·Sq·Sk·D (halved by causal)."""

    descriptor = FlashAttentionDescriptor

    def _set_sku(self) -> None:
        kernel = self.pref.tuning_for(FlashTuning).kernel
        if kernel == "wgmma" and self._arch is not ArchSku.SM90A:
            raise UnsupportedError(f"FlashTuning(kernel='wgmma') needs sm90a, the plan is for "
                                   f"{self._arch.value}")
        d = self.desc.head_dim
        if self._arch is ArchSku.SM90A and kernel != "mma":
            self._template, self._bm = spec.FLASH_FWD_SM90, spec.SM90_TILES[d][0]
        else:
            self._template, self._bm = spec.FLASH_FWD, spec.FWD_TILES[d][0]
        self._sku = _sku("flash_attention", self.desc.dtype, self._arch, self._template.name,
                         self._knobs)

    def lse_bytes(self) -> int:
        d = self.desc
        return 4 * (d.heads_q * d.total_q if d.varlen else d.batch * d.heads_q * d.seqlen_q)

    def workspace_size(self) -> int:
        """Bytes for the lse when the caller passes none (the plan cannot know yet: run with
        ``lse=None`` needs this much; with an lse, any workspace or none is fine)."""
        return align_up(self.lse_bytes())

    def check_workspace(self, workspace) -> Workspace:
        # the lse-less form needs the workspace; checked in _bind where Args are known
        if workspace is None:
            return Workspace.none()
        return super().check_workspace(workspace)

    def _bind(self, args):
        q, k, v, cuq, cuk, sl = self._common_views(args)
        d = self.desc
        o = view_arg(args.out, "out", shape=d.q_shape(), dtype=d.dtype, device=q.device)
        check_writable_no_overlap(o, "out")
        _mma_operand(o, "out")
        lse = None
        if args.lse is not None:
            lse = self._lse_view(args.lse, "lse", q.device)
            check_writable_no_overlap(lse, "lse")
        ins = (("q", q), ("k", k), ("v", v), ("cu_seqlens_q", cuq), ("cu_seqlens_k", cuk),
               ("alibi_slopes", sl))
        check_disjoint(o, "out", ins)
        check_disjoint(lse, "lse", ins + (("out", o),))
        return q, k, v, o, lse, cuq, cuk, sl, self._dropout_tail(args)

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        q, k, v, o, lse, cuq, cuk, sl, drop = bound
        d = self.desc
        if lse is None:
            if ws.nbytes < self.lse_bytes():
                raise WorkspaceTooSmallError(self.workspace_size(), ws.nbytes)
            lse_ptr = ws.ptr
        else:
            lse_ptr = lse.ptr
        kern = self._kernel(self._template, self._knobs, q.device)
        grid = ((d.seqlen_q + self._bm - 1) // self._bm, d.heads_q, d.batch)
        if grid[0] == 0:
            return
        vl = d.varlen
        vals = ((q.ptr, k.ptr, v.ptr, o.ptr, lse_ptr) + self._tail_ptrs(cuq, cuk, sl)
                + (d.seqlen_q, d.seqlen_k, d.heads_q // d.heads_k)
                + _strides(q, vl) + _strides(k, vl) + _strides(v, vl) + _strides(o, vl)
                + self._lse_strides(lse) + self._slope_strides(sl) + self._scalars() + drop)
        kern.launch(grid, vals, stream)


# =============================================================================== backward
class FlashAttentionBackwardPlan(_FlashCommon):
    """Flash attention backward: dq, dk, dv (the input dtype) from q, k, v, out, dout and the
    forward's lse; f32 accumulation.  First delta = rowsum(dO∘O) (f32, into the workspace), then

    * fast path (sm90a, head dims 64 / 128, ``deterministic=False``): ``flash_bwd_sm90`` — one
      pass per key tile (wgmma), dK / dV in registers summed over the GQA group, dQ added to an
      f32 accumulator in the workspace with atomics — and ``flash_bwd_post`` (dq = scale ·
      acc).  Workspace: delta + B·Sq·Hq·D·4 bytes.  Not bit-stable (atomic order).
    * deterministic path (everything else): ``flash_bwd_dkdv`` (per key tile) and
      ``flash_bwd_dq`` (per query tile; S and dP recomputed), no atomics, bit-identical reruns.
      Workspace: delta, B·Hq·Sq·4 bytes (256-aligned).

    FLOPs are reported as the usual 2.5 × the forward's (the split path executes 3.5 ×)."""

    descriptor = FlashAttentionBackwardDescriptor

    def _set_sku(self) -> None:
        d = self.desc
        self._fast = (not d.deterministic and self._arch is ArchSku.SM90A
                      and d.head_dim in sm90_bwd.SM90_BWD_DIMS)
        name = (sm90_bwd.FLASH_BWD_SM90 if self._fast else bwd_spec.FLASH_BWD_DKDV).name
        self._sku = _sku("flash_attention_backward", d.dtype, self._arch, name, self._knobs,
                         deterministic=not self._fast)

    def _rows(self) -> int:
        d = self.desc
        return d.heads_q * d.total_q if d.varlen else d.batch * d.heads_q * d.seqlen_q

    def _delta_bytes(self) -> int:
        return align_up(4 * self._rows())

    def workspace_size(self) -> int:
        """delta (f32 per query row and head), plus the f32 dQ accumulator on the fast path."""
        n = self._delta_bytes()
        if self._fast:
            n += align_up(4 * self._rows() * self.desc.head_dim)
        return n

    def _bind(self, args):
        q, k, v, cuq, cuk, sl = self._common_views(args)
        d = self.desc
        dev = q.device
        o = view_arg(args.out, "out", shape=d.q_shape(), dtype=d.dtype, device=dev)
        do = view_arg(args.dout, "dout", shape=d.q_shape(), dtype=d.dtype, device=dev)
        lse = self._lse_view(args.lse, "lse", dev)
        dq = view_arg(args.dq, "dq", shape=d.q_shape(), dtype=d.dtype, device=dev)
        dk = view_arg(args.dk, "dk", shape=d.kv_shape(), dtype=d.dtype, device=dev)
        dv = view_arg(args.dv, "dv", shape=d.kv_shape(), dtype=d.dtype, device=dev)
        for x, n in ((o, "out"), (do, "dout"), (dq, "dq"), (dk, "dk"), (dv, "dv")):
            _mma_operand(x, n)
        for x, n in ((dq, "dq"), (dk, "dk"), (dv, "dv")):
            check_writable_no_overlap(x, n)
        ins = (("q", q), ("k", k), ("v", v), ("out", o), ("dout", do), ("lse", lse),
               ("cu_seqlens_q", cuq), ("cu_seqlens_k", cuk), ("alibi_slopes", sl))
        check_disjoint(dq, "dq", ins)
        check_disjoint(dk, "dk", ins + (("dq", dq),))
        check_disjoint(dv, "dv", ins + (("dq", dq), ("dk", dk)))
        return q, k, v, o, do, lse, dq, dk, dv, cuq, cuk, sl, self._dropout_tail(args)

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        q, k, v, o, do, lse, dq, dk, dv, cuq, cuk, sl, drop = bound
        d = self.desc
        vl = d.varlen
        cu_q, cu_k, slp = self._tail_ptrs(cuq, cuk, sl)
        lb, lh = self._lse_strides(lse)
        # delta shares lse's layout: the workspace is laid out like a contiguous lse
        if vl:
            gb, gh = 0, d.total_q
        else:
            gb, gh = d.heads_q * d.seqlen_q, d.seqlen_q
        if (lb, lh) != (gb, gh):
            raise UnsupportedError(f"lse must be contiguous {d.lse_shape()} (strides "
                                   f"{(lb, lh)}): delta is laid out like it")
        pre = self._kernel(bwd_spec.FLASH_BWD_PRE, self._plain, q.device)
        rows = bwd_spec.PRE_ROWS
        grid = ((d.seqlen_q + rows - 1) // rows, d.heads_q, d.batch)
        if grid[0]:
            pre.launch(grid, (o.ptr, do.ptr, ws.ptr, cu_q, d.seqlen_q) + _strides(o, vl)
                       + _strides(do, vl) + (lb, lh, self._flags), stream)
        common = (d.seqlen_q, d.seqlen_k, d.heads_q // d.heads_k) + _strides(q, vl) + \
            _strides(k, vl) + _strides(v, vl) + _strides(do, vl)
        tail = (lb, lh) + self._slope_strides(sl) + self._scalars() + drop
        if self._fast:
            self._launch_fast(q, k, v, do, lse, dq, dk, dv, cu_q, cu_k, slp, common, tail,
                              ws, stream)
            return
        _, bn = bwd_spec.BWD_TILES[d.head_dim][:2]
        kgrid = ((d.seqlen_k + bn - 1) // bn, d.heads_k, d.batch)
        if kgrid[0]:
            dkdv = self._kernel(bwd_spec.FLASH_BWD_DKDV, self._knobs, q.device)
            dkdv.launch(kgrid, (q.ptr, k.ptr, v.ptr, do.ptr, lse.ptr, ws.ptr, dk.ptr, dv.ptr,
                                cu_q, cu_k, slp) + common + _strides(dk, vl) + _strides(dv, vl)
                        + tail, stream)
        bm = bwd_spec.BWD_TILES[d.head_dim][0]
        qgrid = ((d.seqlen_q + bm - 1) // bm, d.heads_q, d.batch)
        if qgrid[0]:
            dqk = self._kernel(bwd_spec.FLASH_BWD_DQ, self._knobs, q.device)
            dqk.launch(qgrid, (q.ptr, k.ptr, v.ptr, do.ptr, lse.ptr, ws.ptr, dq.ptr, cu_q, cu_k,
                               slp) + common + _strides(dq, vl) + tail, stream)


    def _launch_fast(self, q, k, v, do, lse, dq, dk, dv, cu_q, cu_k, slp, common, tail, ws,
                     stream) -> None:
        """flash_bwd_sm90 into the zeroed f32 dQ accumulator (the workspace after delta, laid
        out like a contiguous q), then flash_bwd_post."""
        d = self.desc
        acc = ws.ptr + self._delta_bytes()
        n_acc = self._rows() * d.head_dim
        memset(4, acc, 0, n_acc, stream)
        D = d.head_dim
        astr = (0, d.heads_q * D, D) if d.varlen else (d.seqlen_q * d.heads_q * D,
                                                       d.heads_q * D, D)
        bn = sm90_bwd.SM90_BWD_TILES[D][0]
        grid = ((d.seqlen_k + bn - 1) // bn, d.heads_k, d.batch)
        if grid[0]:
            kern = self._kernel(sm90_bwd.FLASH_BWD_SM90, self._knobs, q.device)
            kern.launch(grid, (q.ptr, k.ptr, v.ptr, do.ptr, lse.ptr, ws.ptr, dk.ptr, dv.ptr,
                               acc, cu_q, cu_k, slp) + common + _strides(dk, d.varlen)
                        + _strides(dv, d.varlen) + astr + tail, stream)
        rows = sm90_bwd.POST_ROWS
        pgrid = ((d.seqlen_q + rows - 1) // rows, d.heads_q, d.batch)
        post = self._kernel(sm90_bwd.FLASH_BWD_POST, self._plain, q.device)
        post.launch(pgrid, (acc, dq.ptr, cu_q, d.seqlen_q) + astr + _strides(dq, d.varlen)
                    + (d.softmax_scale, self._flags), stream)


__all__ = ["FlashTuning", "FlashAttentionDescriptor", "FlashAttentionArgs", "FlashAttentionPlan",
           "FlashAttentionBackwardDescriptor", "FlashAttentionBackwardArgs",
           "FlashAttentionBackwardPlan"]
