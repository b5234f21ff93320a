"""Template specs of the flash-attention kernels (``FlashAttentionPlan`` and its backward).

``flash_fwd`` — o = softmax(s)·v with s = scale·q·kᵀ (+ softcap, ALiBi, causal / window masks),
one CTA per (query tile, query head, batch entry), f16 / bf16 inputs with f32 accumulation:
Ampere ``mma.sync`` m16n8k16 atoms, ``ldmatrix`` shared → register loads, a ``cp.async``
global → shared pipeline over the key / value tiles (the V tile of block j loads while
S = Q·Kᵀ of block j runs, the K tile of block j − 1 while the softmax and O += P·V of block j
run) and the online softmax in registers (base-2 exponentials, running max / sum per row).
It runs on sm80, sm89 and sm90a.  Writes o (input dtype) and the natural-log log-sum-exp of
every row (f32).

The backward templates live in ``specs/flash_bwd.py`` (deterministic: ``flash_bwd_pre``,
``flash_bwd_dkdv``, ``flash_bwd_dq``) and ``specs/flash_bwd_sm90.py`` (sm90a one-pass wgmma
kernel with an atomic f32 dQ accumulator, and ``flash_bwd_post``); ``flash_fwd_sm90`` below is
the Hopper forward.

Knobs: ``dtype`` (f16 / bf16), ``head_dim`` (64, 96, 128, 192, 256; q / k / v share it) and
Tiles per head dim (:data:`FWD_TILES`) fit every arch's shared memory (sm89: 99 KB a CTA).
``dropout`` (bool) makes the SKUs that draw the attention-dropout mask.  Everything else —
sequence lengths, strides, heads, GQA ratio, the variable-length offsets, scale, softcap, ALiBi,
the window, the dropout seed / offset / rate — is a run-time parameter, so the space is
2 × 5 × 2 SKUs per template.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....jit import KernelTemplate, LaunchGeometry, params, register

DTYPES = ("f16", "bf16")
HEAD_DIMS = (64, 96, 128, 192, 256)
#: head dim -> (query rows, key rows) of the forward CTA tile; 4 warps split the query rows
FWD_TILES = {64: (128, 128), 96: (128, 64), 128: (128, 64), 192: (64, 64), 256: (64, 64)}
FWD_THREADS = 128

#: run-time flag bits of the forward / backward kernels
VARLEN = 1          # cu_seqlens_q / cu_seqlens_k give each batch entry's rows
ALIBI = 2           # slopes read per (batch, head)
BOTTOM_RIGHT = 4    # causal / window aligned to the bottom-right corner (off = Sk − Sq)
SOFTCAP = 8         # s = softcap · tanh(s / softcap)

#: the dropout parameters every flash kernel that sees P takes last: Philox seed and block offset
#: of the draw, and the drop threshold round(p·2³²) (a word below it drops its element)
DROPOUT_PARAMS = "dseed:i64 doff:i64 dthr:i64"


@dataclass(frozen=True)
class FlashKnobs:
    """Knobs of the flash templates: input ``dtype`` (f16 / bf16), ``head_dim`` and ``dropout``
    (the attention-dropout SKUs: Philox draws in the softmax; the others carry no RNG code)."""

    dtype: str
    head_dim: int
    dropout: bool = False


def plain_space(dims=HEAD_DIMS):
    """dtype × head dim, no dropout (kernels that never see P)."""
    for dt in DTYPES:
        for d in dims:
            yield FlashKnobs(dtype=dt, head_dim=d)


def dropout_space(dims=HEAD_DIMS):
    """dtype × head dim × dropout."""
    for k in plain_space(dims):
        yield k
        yield FlashKnobs(dtype=k.dtype, head_dim=k.head_dim, dropout=True)


def _space():
    return dropout_space()


def fwd_smem(d: int) -> int:
    """Shared bytes of the forward kernel: Q (bM × d) + K and V (bN × d) tiles, 16-bit."""
    bm, bn = FWD_TILES[d]
    return (bm + 2 * bn) * d * 2 + 3 * 1024


FLASH_FWD = register(KernelTemplate(
    name="flash_fwd",
    family="attention",
    module="baracuda_dsl.ops.attention.kernels.flash_fwd",
    params=params(
        "q:ptr k:ptr v:ptr o:ptr lse:ptr cu_q:ptr cu_k:ptr slopes:ptr "
        "sq:i32 sk:i32 ratio:i32 "
        "qb:i64 qs:i64 qh:i64 kb:i64 ks:i64 kh:i64 vb:i64 vs:i64 vh:i64 ob:i64 os:i64 oh:i64 "
        "lb:i64 lh:i64 slb:i64 slh:i64 scale:f32 softcap:f32 left:i32 right:i32 flags:i32 "
        + DROPOUT_PARAMS),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=FWD_THREADS, smem_bytes=fwd_smem(k.head_dim)),
    knobs=FlashKnobs,
))

#: ``flash_fwd_sm90`` (sm90a only): head dim -> (query rows, key rows); two warpgroups of 64 rows
SM90_TILES = {64: (128, 128), 96: (128, 128), 128: (128, 128), 192: (128, 64), 256: (128, 64)}
SM90_THREADS = 384


def sm90_smem(d: int) -> int:
    """Shared bytes of ``flash_fwd_sm90``: Q (bM × d) + two stages each of K and V (bN × d)."""
    bm, bn = SM90_TILES[d]
    return (bm + 4 * bn) * d * 2 + 3 * 1024


FLASH_FWD_SM90 = register(KernelTemplate(
    name="flash_fwd_sm90",
    family="attention",
    module="baracuda_dsl.ops.attention.kernels.flash_fwd_sm90",
    params=FLASH_FWD.params,
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=SM90_THREADS, smem_bytes=sm90_smem(k.head_dim)),
    knobs=FlashKnobs,
    arch_ok=lambda k, arch: arch == "sm90a",
))
