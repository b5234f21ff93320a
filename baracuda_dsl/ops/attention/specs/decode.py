"""Template specs of the decode kernels (``ops/attention/decode.py``: FlashDecodePlan).

``attn_decode`` — one CTA per (KV split × query-row group, kv head, sequence).  The CTA's query
rows are the ``G·Sq`` rows of one kv head (its ``G = Hq / Hk`` query heads times the ``Sq``
query tokens, row ``ρ = t·G + g``: "GQA packing"), ``rows`` of them at a time (8 or 16 — one or
two ``n8`` tiles of the MMA); the split is a range of 16-aligned key positions.  4 warps take
16-token steps of the split in turn.  A step computes ``Sᵀ = K·Qᵀ`` with ``mma.sync``
m16n8k16 (keys are the M side, query rows the N side: "swap AB", so a handful of query rows
wastes no more than one 8-column tile), the base-2 online softmax per (row, warp), converts P to
the input dtype, transposes it in registers (``movmatrix``) and accumulates ``Oᵀ += Vᵀ·Pᵀ``
(m16n8k16 again, V's 16-bit pairs re-paired with ``prmt``).  K and V rows are read straight
from global memory into the MMA fragments with 16-byte loads (no shared-memory staging: the d
order inside a thread's fragment is a permutation the Q fragments share, so every load is a
16-byte vector of one key row).  At the end the warps' (max, sum, O) partials meet in shared
memory; the CTA writes either the final ``out`` (input dtype) and ``lse`` (``DIRECT``: one
split) or its split's normalised partial ``o`` (f32) and base-2 ``lse`` to the workspace.

``attn_decode_combine`` — one warp per query row: merges the splits' partials
(``o = Σ_s 2^(lse_s − lse)·o_s``, ``lse = log2 Σ_s 2^lse_s``; an empty split has
``lse_s = −∞`` and weight 0) and writes ``out`` and ``lse`` (natural log).

Knobs: ``attn_decode`` (:class:`DecodeKnobs`) the input ``dtype`` (f16 / bf16), ``head_dim``
(64, 96, 128, 192, 256; Dv = D) and ``rows`` (8, or 16 for head dims <= 128);
``attn_decode_combine`` (:class:`DecodeCombineKnobs`) the output ``dtype`` (the head dim is a
run-time parameter).  Everything else — batch, heads, GQA ratio, query tokens, split count and
size, strides, paged or contiguous cache (``PAGED``), page size, causal, window, softcap,
scale — is a run-time parameter: 2 × (5 + 3) + 2 = 18 SKUs per arch (sm80, sm89, sm90a).
"""

from __future__ import annotations

from dataclasses import dataclass

from ....jit import KernelTemplate, LaunchGeometry, params, register

DTYPES = ("f16", "bf16")
HEAD_DIMS = (64, 96, 128, 192, 256)
#: query rows a CTA holds: one or two n8 tiles of the MMA
ROWS = (8, 16)
#: 16 query rows only up to this head dim (the Oᵀ accumulators take D/2 registers a thread)
WIDE_MAX_D = 128
WARPS = 4
THREADS = 32 * WARPS
#: keys a warp takes per step (the MMA's M); split starts, split sizes and the window's start
#: are multiples of it, so a step never crosses a page (page sizes are multiples of 16)
STEP = 16
#: combine kernel: one warp per query row
COMBINE_WARPS = 4
COMBINE_THREADS = 32 * COMBINE_WARPS

#: run-time flag bits of ``attn_decode`` (``HAS_LSE`` also of the combine kernel)
CAUSAL = 1      # key j is visible to query token t when j <= L − Sq + t (bottom-right aligned)
SOFTCAP = 2     # s = softcap·tanh(s / softcap)
PAGED = 4       # keys live in pages: block_table[b, p // page] row p % page
DIRECT = 8      # a single split: write out / lse (not the workspace partials)
HAS_LSE = 16    # write lse


@dataclass(frozen=True)
class DecodeKnobs:
    """One ``attn_decode`` SKU: input ``dtype`` (f16 / bf16), ``head_dim`` and the query
    ``rows`` a CTA holds (8 or 16)."""

    dtype: str
    head_dim: int
    rows: int = 8


@dataclass(frozen=True)
class DecodeCombineKnobs:
    """One ``attn_decode_combine`` SKU: the output ``dtype`` (f16 / bf16)."""

    dtype: str


def _space():
    for dt in DTYPES:
        for d in HEAD_DIMS:
            for r in ROWS:
                if r == 8 or d <= WIDE_MAX_D:
                    yield DecodeKnobs(dtype=dt, head_dim=d, rows=r)


def _combine_space():
    return (DecodeCombineKnobs(dtype=dt) for dt in DTYPES)


def smem_bytes(knobs: DecodeKnobs) -> int:
    """Shared memory of ``attn_decode``: each warp's Oᵀ partial (rows × head_dim f32) and its
    per-row (max, sum) pairs, plus alignment slack."""
    return WARPS * knobs.rows * knobs.head_dim * 4 + 2 * WARPS * knobs.rows * 4 + 128


def ctas_per_sm(knobs: DecodeKnobs) -> int:
    """Resident CTAs an SM holds (registers are the limit: :data:`REGISTERS`, rounded up to the
    allocation unit of 8), the split heuristic's notion of one wave."""
    regs = -(-REGISTERS[(knobs.rows, knobs.head_dim)] // 8) * 8
    return max(1, 65536 // (regs * THREADS))


#: registers a thread of ``attn_decode`` takes per (rows, head_dim): the sm90a bf16 cubins of
#: DSL 4.8.1 (no spills; f16 and the other arches within a few registers)
REGISTERS = {(8, 64): 112, (8, 96): 120, (8, 128): 162, (8, 192): 202, (8, 256): 244,
             (16, 64): 156, (16, 96): 196, (16, 128): 244}


ATTN_DECODE = register(KernelTemplate(
    name="attn_decode",
    family="attention",
    module="baracuda_dsl.ops.attention.kernels.decode",
    params=params(
        "q:ptr k:ptr v:ptr out:ptr lse:ptr seqlens:ptr table:ptr part_o:ptr part_lse:ptr "
        "sq:i32 ratio:i32 nrows:i32 nrg:i32 heads_k:i32 nsplit:i32 tps:i32 page:i32 cap:i32 "
        "qb:i64 qs:i64 qh:i64 kb:i64 ks:i64 kh:i64 vb:i64 vs:i64 vh:i64 tb:i64 "
        "ob:i64 os:i64 oh:i64 lb:i64 lh:i64 lt:i64 smul:f32 cmul:f32 left:i32 flags:i32"),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=smem_bytes(k)),
    knobs=DecodeKnobs,
))

ATTN_DECODE_COMBINE = register(KernelTemplate(
    name="attn_decode_combine",
    family="attention",
    module="baracuda_dsl.ops.attention.kernels.decode_combine",
    params=params("part_o:ptr part_lse:ptr out:ptr lse:ptr rows:i32 nsplit:i32 hd:i32 nrows:i32 "
                  "heads_k:i32 ratio:i32 ob:i64 os:i64 oh:i64 lb:i64 lh:i64 lt:i64 flags:i32"),
    space=_combine_space,
    geometry=lambda k: LaunchGeometry(threads=COMBINE_THREADS, smem_bytes=0),
    knobs=DecodeCombineKnobs,
))
