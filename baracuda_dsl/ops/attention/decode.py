"""Decode attention over a KV cache: ``FlashDecodePlan`` (split-KV "flash decoding").

A few query tokens per sequence (``Sq`` = 1..16: generation, speculative decoding) attend to a
long cache of keys / values:

    L_b   = cache_seqlens[b]                   (valid keys of sequence b; the Sq new tokens are
                                                already appended: query t sits at L_b − Sq + t)
    s_tj  = scale·q[b, t, h]·k[b, j, h // G]   (scale default 1/√D; G = Hq / Hk)
    s_tj  = c·tanh(s_tj / c)                   (softcap c > 0)
    keep  j < L_b, and j <= L_b − Sq + t (causal: bottom-right aligned), and
          j >= L_b − Sq + t − left             (window_left >= 0)
    out[b, t, h] = Σ_j softmax_j(s_t)·v[b, j, h // G],   lse[b, h, t] = log Σ_j exp(s_tj)

exactly ``tests/_attention_ref.attention(q, k[:, :L_b], v[:, :L_b], align="bottom_right")`` per
sequence.  A query that sees no key (L_b = 0, or L_b < Sq under causal) gets out = 0 and
lse = −∞.

Caches: contiguous ``k_cache`` / ``v_cache`` (B, S_max, Hk, D), or paged (``paged=True``):
(num_pages, page_size, Hk, D) with ``block_table`` (B, pages_per_seq) int32 — key p of sequence
b is row ``p % page_size`` of page ``block_table[b, p // page_size]``; page sizes are multiples
of 16.  Only pages holding keys the plan reads are looked up (entries past L_b may hold
anything).  Layout contract of q, the caches and out: unit stride along D, every other stride a
multiple of 8 elements (extents of 1 excepted), 16-byte aligned pointers — views of a packed
qkv tensor qualify; other layouts raise UnsupportedError / MisalignedOperandError naming
``SdpaPlan``.  ``cache_seqlens`` (B,) int32 and the block table's rows must be contiguous.
Each L_b is clamped to [0, capacity] on the device (capacity = S_max, or pages_per_seq ·
page_size): keys past the cache are never read; ``max_seqlen_k`` (the longest L_b the caller
promises) only sizes the splits — a longer sequence is still computed exactly.

Kernels (``specs/decode.py``): ``attn_decode`` — one CTA per (KV split × query-row group, kv
head, sequence) holding all G·Sq query rows of the kv head ("GQA packing": 8 rows, or 16 for
head dims <= 128, per CTA — each KV byte is read once when G·Sq fits, else once per row group),
``mma.sync`` on 16-key steps read straight from global memory with 16-byte loads; and, with
more than one split, ``attn_decode_combine`` (log-sum-exp weighted merge of the partials).
The split count comes from :class:`DecodeTuning` (forced) or :func:`choose_num_splits` (the
grid filled to whole waves of the device's SMs).  Workspace (splits > 1 only): the partial
outputs (f32, splits × B·Hq·Sq × D) and their lse (f32), each 256-byte aligned.

dtypes f16 / bf16, f32 math (Q·K and P·V on tensor cores with f32 accumulation, P rounded to
the input dtype for P·V as in flash-attention, base-2 exponentials, the accurate tanh);
head dims 64, 96, 128, 192, 256 with Dv = D.  Deterministic and bit-stable (fixed merge orders,
no atomics).  Sq > 16 → ``FlashAttentionPlan``; f32 / f64, other head dims or Dv != D →
``SdpaPlan``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Tuple

from ...dtypes import DType, bfloat16, float16, float32, float64, int32
from ...errors import (InvalidProblemError, MisalignedOperandError, UnsupportedError)
from ...jit import freeze_knobs
from ...plan import Plan, align_up, check_dtype, check_finite, check_writable_no_overlap, view_arg
from ...vocabulary import (ArchSku, BackendKind, KernelSku, OpCategory, PrecisionGuarantee,
                           Workspace)
from .checks import I32_MAX, check_disjoint, check_extent, check_int
from .specs import decode as spec

DTYPES = (float16, bfloat16)
#: accepted by the descriptor only to name the path that takes them
_OTHER = (float32, float64)
#: the most query tokens a decode step takes (more: FlashAttentionPlan)
MAX_SEQLEN_Q = 16
_GRID_YZ = 65535
#: SMs assumed when no GPU is visible (plans selected for another arch): A100, a mid-size Ada
#: part, H100 SXM
DEFAULT_SMS = {ArchSku.SM80: 108, ArchSku.SM89: 84, ArchSku.SM90A: 132}


# ================================================================================= tuning
@dataclass(frozen=True)
class DecodeTuning:
    """Split-KV choice of :class:`FlashDecodePlan` (``PlanPreference(tuning=DecodeTuning(...))``).

    ``num_splits`` > 0 forces the split count (each sequence's keys are cut into that many
    16-aligned ranges of equal size); ``tokens_per_split`` > 0 forces the keys per split
    (rounded up to a multiple of 16; the count is then ⌈keys / tokens_per_split⌉) — at most
    one of the two.  Otherwise :func:`choose_num_splits` picks the count with ``max_splits``,
    ``min_tokens_per_split`` (no split shorter than this when the heuristic splits) and
    ``wave_efficiency``.  ``sm_count`` > 0 overrides the SM count the heuristic fills (default:
    the current device's, or :data:`DEFAULT_SMS` of the plan's arch without a GPU)."""

    num_splits: int = 0
    tokens_per_split: int = 0
    max_splits: int = 64
    min_tokens_per_split: int = 256
    wave_efficiency: float = 0.9
    sm_count: int = 0

    def __post_init__(self):
        for f in ("num_splits", "tokens_per_split", "max_splits", "min_tokens_per_split",
                  "sm_count"):
            check_int(getattr(self, f), f"DecodeTuning.{f}")
        if self.num_splits and self.tokens_per_split:
            raise InvalidProblemError("DecodeTuning: force num_splits or tokens_per_split, "
                                      "not both")
        if self.max_splits < 1 or self.min_tokens_per_split < 1:
            raise InvalidProblemError("DecodeTuning: max_splits and min_tokens_per_split must "
                                      "be >= 1")
        eff = check_finite(self.wave_efficiency, "DecodeTuning.wave_efficiency")
        if not 0.0 < eff <= 1.0:
            raise InvalidProblemError(f"DecodeTuning.wave_efficiency must be in (0, 1], got {eff}")
        object.__setattr__(self, "wave_efficiency", eff)


def choose_num_splits(ctas: int, keys: int, slots: int, tuning: DecodeTuning) -> int:
    """Splits of the KV range for a grid of ``ctas`` CTAs per split (sequences × kv heads × row
    groups) whose CTAs read at most ``keys`` keys each, on a device with ``slots`` resident
    CTAs (SMs × CTAs an SM holds).  With s splits the grid is ``ctas·s / slots`` waves; its
    efficiency ``waves / ⌈waves⌉`` (below one wave: the fraction of slots busy).  The answer is
    the smallest s (1 <= s <= min(max_splits, keys // min_tokens_per_split)) whose efficiency is
    within ``wave_efficiency`` of the best — the fewest partials that keep every SM busy."""
    if ctas <= 0 or keys <= 0 or slots <= 0:
        return 1
    cap = max(1, min(tuning.max_splits, keys // tuning.min_tokens_per_split))
    eff = []
    for s in range(1, cap + 1):
        waves = ctas * s / slots
        eff.append(waves / math.ceil(waves))
    best = max(eff)
    for s, e in enumerate(eff, 1):
        if e >= tuning.wave_efficiency * best:
            return s
    return cap  # pragma: no cover - the best one always qualifies


def device_sm_count(arch: ArchSku, tuning: DecodeTuning) -> int:
    """SMs the split heuristic fills: the tuning's override, the current device's, or
    :data:`DEFAULT_SMS` of ``arch`` when no GPU is visible."""
    if tuning.sm_count:
        return tuning.sm_count
    try:
        from ...runtime.device import current_device_ordinal, has_gpu, sm_count

        if has_gpu():
            return sm_count(current_device_ordinal())
    except Exception:  # no driver / no cuda.core: selecting for another machine
        pass
    return DEFAULT_SMS.get(arch, 132)


# ============================================================================= descriptor
@dataclass(frozen=True)
class FlashDecodeDescriptor:
    """One decode problem (formula, layouts and contract: the module docstring).

    ``batch`` (B), ``seqlen_q`` (Sq, 0..16), ``heads_q`` (Hq), ``heads_k`` (Hk, Hq % Hk == 0),
    ``head_dim`` (D), ``max_seqlen_k`` (the longest cache_seqlens value the caller promises:
    sizes the splits; must fit the cache); ``dtype`` f16 / bf16; ``causal`` (bottom-right
    aligned); ``window_left`` (−1 = none); ``softcap`` (0 = off); ``scale`` (None = 1/√D).
    Contiguous caches: ``cache_seqlen`` = S_max (0: max_seqlen_k).  Paged (``paged=True``):
    ``num_pages``, ``page_size`` (a multiple of 16) and ``pages_per_seq`` (the block table's
    columns).  ``head_dim_v`` (None = D) must equal D."""

    batch: int
    seqlen_q: int
    heads_q: int
    heads_k: int
    head_dim: int
    max_seqlen_k: int
    dtype: DType = bfloat16
    causal: bool = True
    window_left: int = -1
    softcap: float = 0.0
    scale: Optional[float] = None
    paged: bool = False
    cache_seqlen: int = 0
    num_pages: int = 0
    page_size: int = 0
    pages_per_seq: int = 0
    head_dim_v: Optional[int] = None

    def __post_init__(self):
        what = "FlashDecode"
        for f in ("batch", "seqlen_q", "heads_q", "heads_k", "max_seqlen_k", "cache_seqlen",
                  "num_pages", "page_size", "pages_per_seq"):
            check_extent(getattr(self, f), f"{what}.{f}")
        check_int(self.head_dim, f"{what}.head_dim", 1)
        check_int(self.window_left, f"{what}.window_left", -1)
        object.__setattr__(self, "dtype", check_dtype(self.dtype, DTYPES + _OTHER, what))
        object.__setattr__(self, "causal", bool(self.causal))
        object.__setattr__(self, "paged", bool(self.paged))
        if self.seqlen_q > MAX_SEQLEN_Q:
            raise UnsupportedError(f"{what}: seqlen_q {self.seqlen_q} — decode takes at most "
                                   f"{MAX_SEQLEN_Q} query tokens a sequence; "
                                   f"FlashAttentionPlan takes any")
        if self.dtype not in DTYPES:
            raise UnsupportedError(f"{what}: dtype {self.dtype.name} — the decode kernels take "
                                   f"f16 / bf16; SdpaPlan takes f32 / f64")
        if self.head_dim not in spec.HEAD_DIMS:
            raise UnsupportedError(f"{what}: head_dim {self.head_dim} — the decode kernels take "
                                   f"{', '.join(map(str, spec.HEAD_DIMS))}; SdpaPlan takes any")
        if self.head_dim_v is not None:
            check_int(self.head_dim_v, f"{what}.head_dim_v", 1)
            if self.head_dim_v != self.head_dim:
                raise UnsupportedError(f"{what}: head_dim_v {self.head_dim_v} != head_dim "
                                       f"{self.head_dim} — the decode kernels take Dv = D; "
                                       f"SdpaPlan takes any")
        if self.heads_k == 0 or self.heads_q % self.heads_k:
            if self.heads_q or self.heads_k:
                raise InvalidProblemError(f"{what}: heads_q {self.heads_q} is not a multiple "
                                          f"of heads_k {self.heads_k}")
        if self.heads_k > _GRID_YZ or self.batch > _GRID_YZ:
            raise UnsupportedError(f"{what}: at most {_GRID_YZ} kv heads and sequences a launch")
        if self.batch * self.heads_q * self.seqlen_q > I32_MAX:
            raise UnsupportedError(f"{what}: batch · heads_q · seqlen_q must be < 2^31")
        cap = check_finite(self.softcap, f"{what}.softcap")
        if cap < 0:
            raise InvalidProblemError(f"{what}.softcap must be >= 0, got {cap}")
        object.__setattr__(self, "softcap", float(cap))
        if self.scale is not None:
            object.__setattr__(self, "scale", check_finite(self.scale, f"{what}.scale"))
        if self.paged:
            if self.cache_seqlen:
                raise InvalidProblemError(f"{what}: cache_seqlen is for contiguous caches; a "
                                          f"paged cache holds pages_per_seq · page_size keys")
            if self.page_size == 0:
                raise InvalidProblemError(f"{what}: a paged cache needs page_size > 0")
            if self.page_size % spec.STEP:
                raise UnsupportedError(f"{what}: page_size {self.page_size} — page sizes that "
                                       f"are multiples of {spec.STEP} are wired")
            if self.batch and self.max_seqlen_k and not (self.num_pages and self.pages_per_seq):
                raise InvalidProblemError(f"{what}: a paged cache needs num_pages and "
                                          f"pages_per_seq > 0")
        else:
            if self.num_pages or self.page_size or self.pages_per_seq:
                raise InvalidProblemError(f"{what}: num_pages / page_size / pages_per_seq are "
                                          f"for paged=True")
            if self.cache_seqlen == 0:
                object.__setattr__(self, "cache_seqlen", self.max_seqlen_k)
        if self.max_seqlen_k > self.capacity:
            raise InvalidProblemError(f"{what}: max_seqlen_k {self.max_seqlen_k} exceeds the "
                                      f"cache's capacity of {self.capacity} keys a sequence")

    # -- derived ---------------------------------------------------------------------------
    @property
    def softmax_scale(self) -> float:
        """The scale applied to q·k (1/√head_dim unless given)."""
        return 1.0 / math.sqrt(self.head_dim) if self.scale is None else float(self.scale)

    @property
    def group(self) -> int:
        """Query heads per kv head (G = Hq / Hk; 0 for an empty problem)."""
        return self.heads_q // self.heads_k if self.heads_k else 0

    @property
    def rows(self) -> int:
        """Query rows of one kv head: G·Sq."""
        return self.group * self.seqlen_q

    @property
    def capacity(self) -> int:
        """Keys one sequence's cache can hold."""
        return self.pages_per_seq * self.page_size if self.paged else self.cache_seqlen

    @property
    def window_keys(self) -> int:
        """The most keys one CTA's range can span: max_seqlen_k, or with a window the window
        plus the query tokens (its start is rounded down to 16)."""
        if self.window_left < 0:
            return self.max_seqlen_k
        return min(self.max_seqlen_k, self.window_left + self.seqlen_q + spec.STEP - 1)

    def q_shape(self) -> Tuple[int, ...]:
        return (self.batch, self.seqlen_q, self.heads_q, self.head_dim)

    def kv_shape(self) -> Tuple[int, ...]:
        if self.paged:
            return (self.num_pages, self.page_size, self.heads_k, self.head_dim)
        return (self.batch, self.cache_seqlen, self.heads_k, self.head_dim)

    def lse_shape(self) -> Tuple[int, ...]:
        return (self.batch, self.heads_q, self.seqlen_q)

    def table_shape(self) -> Optional[Tuple[int, ...]]:
        return (self.batch, self.pages_per_seq) if self.paged else None


# =================================================================================== args
@dataclass
class FlashDecodeArgs:
    """q (B, Sq, Hq, D); k_cache / v_cache ((B, S_max, Hk, D), or paged (num_pages, page_size,
    Hk, D)); cache_seqlens (B,) int32; out (output, q's shape and dtype); lse (optional output,
    (B, Hq, Sq) f32, any strides); block_table ((B, pages_per_seq) int32, paged only)."""

    q: object
    k_cache: object
    v_cache: object
    cache_seqlens: object
    out: object
    lse: object = None
    block_table: object = None


# ================================================================================== plan
def _mma_strides(v, name: str) -> Tuple[int, ...]:
    """The kernels' layout contract (unit stride along D, other strides multiples of 8
    elements, a 16-byte aligned pointer); returns the strides with those of extent-1 dims
    zeroed (never used)."""
    st = tuple(0 if n == 1 else s for n, s in zip(v.shape, v.strides))
    if not v.numel:
        return st
    if v.shape[-1] > 1 and st[-1] != 1:
        raise UnsupportedError(f"{name}: the head dim must have unit stride (strides "
                               f"{tuple(v.strides)}); SdpaPlan takes any strides")
    if any(s % 8 for s in st[:-1]):
        raise UnsupportedError(f"{name}: strides {tuple(v.strides)} must be multiples of 8 "
                               f"elements for the decode kernels; SdpaPlan takes any strides")
    if v.ptr % 16:
        raise MisalignedOperandError(f"{name}: pointer {v.ptr:#x} is not 16-byte aligned; the "
                                     f"decode kernels need it (SdpaPlan does not)")
    return st


def _precision() -> PrecisionGuarantee:
    return PrecisionGuarantee(float32, float32, bit_stable_on_same_hardware=True,
                              deterministic=True)


class FlashDecodePlan(Plan):
    """Split-KV decode attention (module docstring).  ``sku()`` is the ``attn_decode`` SKU
    (dtype, head dim, rows 8 | 16); ``num_splits`` / ``row_groups`` the grid it launches;
    ``workspace_size()`` the split partials (0 with one split).  Traffic: the K and V rows of
    every sequence's [max(0, L_b − Sq − window_left) rounded down to 16, L_b) once per row
    group, plus (splits > 1) B·Hq·Sq·(D + 1)·4 bytes written and read per split."""

    descriptor = FlashDecodeDescriptor

    def _plan(self) -> None:
        d = self.desc
        rows = d.rows
        wide = rows > 8 and d.head_dim <= spec.WIDE_MAX_D
        self._knobs = spec.DecodeKnobs(dtype=d.dtype.short, head_dim=d.head_dim,
                                       rows=16 if wide else 8)
        self._combine = spec.DecodeCombineKnobs(dtype=d.dtype.short)
        self.row_groups = max(1, -(-rows // self._knobs.rows))
        tuning = self.pref.tuning_for(DecodeTuning)
        self.num_splits, self._tps = self._splits(tuning)
        flags = 0
        if d.causal:
            flags |= spec.CAUSAL
        if d.softcap > 0:
            flags |= spec.SOFTCAP
        if d.paged:
            flags |= spec.PAGED
        if self.num_splits == 1:
            flags |= spec.DIRECT
        self._flags = flags
        scale = d.softmax_scale
        if d.softcap > 0:
            self._smul, self._cmul = scale / d.softcap, d.softcap * math.log2(math.e)
        else:
            self._smul, self._cmul = scale * math.log2(math.e), 1.0
        self._sku = KernelSku(OpCategory.ATTENTION, "flash_decode", d.dtype, self._arch,
                              BackendKind.CUTE_DSL, _precision(), aux_element=float32,
                              template=spec.ATTN_DECODE.name, knobs=freeze_knobs(self._knobs))

    def _splits(self, tuning: DecodeTuning) -> Tuple[int, int]:
        """(splits, forced keys per split or 0)."""
        d = self.desc
        keys = d.window_keys
        cap = self.pref.max_workspace_bytes
        if tuning.tokens_per_split:
            tps = -(-tuning.tokens_per_split // spec.STEP) * spec.STEP
            n = max(1, -(-keys // tps))
            self._check_forced(n, cap)
            return n, tps
        if tuning.num_splits:
            self._check_forced(tuning.num_splits, cap)
            return tuning.num_splits, 0
        ctas = d.batch * d.heads_k * self.row_groups
        slots = device_sm_count(self._arch, tuning) * spec.ctas_per_sm(self._knobs)
        n = choose_num_splits(ctas, keys, slots, tuning)
        while n > 1 and cap is not None and self.workspace_bytes(n) > cap:
            n -= 1
        return n, 0

    def _check_forced(self, n: int, cap) -> None:
        if cap is not None and self.workspace_bytes(n) > cap:
            raise UnsupportedError(f"FlashDecode: {n} splits need {self.workspace_bytes(n)} "
                                   f"bytes of workspace > max_workspace_bytes={cap}")

    def workspace_bytes(self, splits: int) -> int:
        """Workspace of ``splits`` splits: partial outputs (f32) then their lse (f32), each
        256-byte aligned; 0 for one split."""
        if splits <= 1:
            return 0
        d = self.desc
        n = splits * d.batch * d.heads_q * d.seqlen_q
        return align_up(n * d.head_dim * 4) + align_up(n * 4)

    def workspace_size(self) -> int:
        """Bytes of scratch ``run`` needs: :meth:`workspace_bytes` of the chosen split count."""
        return self.workspace_bytes(self.num_splits)

    def is_empty(self) -> bool:
        d = self.desc
        return d.batch == 0 or d.seqlen_q == 0 or d.heads_q == 0

    def _bind(self, args):
        d = self.desc
        q = view_arg(args.q, "q", shape=d.q_shape(), dtype=d.dtype)
        dev = q.device
        k = view_arg(args.k_cache, "k_cache", shape=d.kv_shape(), dtype=d.dtype, device=dev)
        v = view_arg(args.v_cache, "v_cache", shape=d.kv_shape(), dtype=d.dtype, device=dev)
        seq = view_arg(args.cache_seqlens, "cache_seqlens", shape=(d.batch,), dtype=int32,
                       device=dev)
        if d.batch > 1 and seq.strides[0] != 1:
            raise UnsupportedError("cache_seqlens must be contiguous")
        tab = None
        if d.paged:
            tab = view_arg(args.block_table, "block_table", shape=d.table_shape(), dtype=int32,
                           device=dev)
            if d.pages_per_seq > 1 and tab.strides[1] != 1:
                raise UnsupportedError("block_table: each sequence's row must be contiguous")
        elif args.block_table is not None:
            raise InvalidProblemError("block_table is for a paged cache (paged=True)")
        o = view_arg(args.out, "out", shape=d.q_shape(), dtype=d.dtype, device=dev)
        check_writable_no_overlap(o, "out")
        strides = tuple(_mma_strides(x, n) for x, n in ((q, "q"), (k, "k_cache"),
                                                        (v, "v_cache"), (o, "out")))
        lse = None
        if args.lse is not None:
            lse = view_arg(args.lse, "lse", shape=d.lse_shape(), dtype=float32, device=dev)
            check_writable_no_overlap(lse, "lse")
        ins = (("q", q), ("k_cache", k), ("v_cache", v), ("cache_seqlens", seq),
               ("block_table", tab))
        check_disjoint(o, "out", ins)
        check_disjoint(lse, "lse", ins + (("out", o),))
        return q, k, v, seq, tab, o, lse, strides

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        q, k, v, seq, tab, o, lse, strides = bound
        d = self.desc
        (qb, qs, qh, _), (kb, ks, kh, _), (vb, vs, vh, _), (ob, os, oh, _) = strides
        lb = lh = lt = 0
        flags = self._flags
        if lse is not None:
            lb, lh, lt = lse.strides
            flags |= spec.HAS_LSE
        n = self.num_splits
        rows_total = d.batch * d.heads_k * d.rows
        part_o = part_l = 0
        if n > 1:
            if ws.ptr % 16:
                raise MisalignedOperandError(f"workspace: pointer {ws.ptr:#x} is not 16-byte "
                                             f"aligned")
            part_o = ws.ptr
            part_l = ws.ptr + align_up(n * rows_total * d.head_dim * 4)
        kern = self._kernel(spec.ATTN_DECODE, self._knobs, q.device)
        kern.launch((n * self.row_groups, d.heads_k, d.batch),
                    (q.ptr, k.ptr, v.ptr, o.ptr, lse.ptr if lse is not None else 0, seq.ptr,
                     tab.ptr if tab is not None else 0, part_o, part_l,
                     d.seqlen_q, d.group, d.rows, self.row_groups, d.heads_k, n, self._tps,
                     d.page_size if d.paged else 0, d.capacity,
                     qb, qs, qh, kb, ks, kh, vb, vs, vh,
                     tab.strides[0] if tab is not None else 0, ob, os, oh, lb, lh, lt,
                     self._smul, self._cmul, d.window_left, flags), stream)
        if n > 1:
            comb = self._kernel(spec.ATTN_DECODE_COMBINE, self._combine, q.device)
            comb.launch((-(-rows_total // spec.COMBINE_WARPS), 1, 1),
                        (part_o, part_l, o.ptr, lse.ptr if lse is not None else 0, rows_total,
                         n, d.head_dim, d.rows, d.heads_k, d.group, ob, os, oh, lb, lh, lt,
                         flags & spec.HAS_LSE), stream)


__all__ = ["FlashDecodeDescriptor", "FlashDecodeArgs", "FlashDecodePlan", "DecodeTuning",
           "choose_num_splits", "device_sm_count", "MAX_SEQLEN_Q", "DEFAULT_SMS"]
