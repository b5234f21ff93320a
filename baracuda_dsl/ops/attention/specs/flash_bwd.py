"""Template specs of the flash-attention backward kernels (``FlashAttentionBackwardPlan``).

With t_ij the forward's score in base-2 units (``specs/flash.py``: scale, softcap, ALiBi, masks),
P_ij = exp2(t_ij − lse_i·log2 e) recomputed from the forward's natural-log lse, and

    delta_i = Σ_d dO_id·O_id            dP = dO·Vᵀ          dS_ij = P_ij·(dP_ij − delta_i)
    (softcap c: dS_ij ·= 1 − tanh²(s_ij / c))
    dV_j = Σ_i P_ij·dO_i      dK_j = scale·Σ_i dS_ij·Q_i      dQ_i = scale·Σ_j dS_ij·K_j

three kernels run in order, all deterministic (no atomics):

``flash_bwd_pre``   delta (f32, laid out like the lse: element (b, h, row) at
                    b·lb + h·lh + q_start + row), one CTA per :data:`PRE_ROWS` query rows of a
                    head, :data:`PRE_THREADS` threads (4 a row, 16-byte loads).
``flash_bwd_dkdv``  one CTA per (key tile of bN rows, kv head, batch entry): its K / V tile
                    stays in shared memory while the query tiles of every query head of the GQA
                    group that can see it stream through (``cp.async``, double-buffered where
                    shared memory allows: :data:`DKDV_STAGES`); S = Q·Kᵀ and dP = dO·Vᵀ
                    (``mma.sync``), P and dS written to shared memory in the input dtype, then
                    dV += Pᵀ·dO and dK += dSᵀ·Q (``ldmatrix.trans``) in f32 registers.
``flash_bwd_dq``    one CTA per (query tile of bM rows, query head, batch entry), the forward's
                    loop over the visible key tiles: S, dP, dS in registers, dQ += dS·K.

Tiles (:data:`DKDV_TILES`, :data:`DQ_TILES`) fit every arch's shared memory (sm89: 99 KB a
CTA); :data:`BWD_TILES` gives the grid tiles the plan needs: (query rows of a ``flash_bwd_dq``
CTA, key rows of a ``flash_bwd_dkdv`` CTA).  Knobs and space are the forward's
(:class:`~.flash.FlashKnobs`: f16 / bf16 × head dims 64, 96, 128, 192, 256): 10 SKUs a template.
Run-time flags are the forward's (VARLEN, ALIBI, BOTTOM_RIGHT, SOFTCAP).
"""

from __future__ import annotations

from ....jit import KernelTemplate, LaunchGeometry, params, register
from .flash import DROPOUT_PARAMS, FLASH_FWD, HEAD_DIMS, FlashKnobs, plain_space

#: ``flash_bwd_pre``: query rows a CTA, threads a CTA (4 threads a row)
PRE_ROWS = 32
PRE_THREADS = 128

#: ``flash_bwd_dkdv``: head dim -> (query rows bM of a step, key rows bN of the CTA); 8 warps
DKDV_TILES = {64: (64, 64), 96: (64, 64), 128: (64, 64), 192: (32, 64), 256: (32, 32)}
DKDV_THREADS = 256
#: ``flash_bwd_dkdv``: head dim -> Q / dO buffers (2: the next query tile loads while this one
#: computes, where shared memory allows it)
DKDV_STAGES = {64: 2, 96: 2, 128: 1, 192: 1, 256: 1}

#: ``flash_bwd_dq``: head dim -> (query rows bM of the CTA, key rows bN of a step); 4 warps
#: split the query rows (16 each), as in the forward
DQ_TILES = {64: (64, 64), 96: (64, 64), 128: (64, 64), 192: (64, 32), 256: (64, 32)}
DQ_THREADS = 128

#: head dim -> (query rows of a ``flash_bwd_dq`` CTA, key rows of a ``flash_bwd_dkdv`` CTA):
#: the grid tiles, ``grid = (ceil(sq / bM), Hq, B)`` and ``(ceil(sk / bN), Hk, B)``
BWD_TILES = {d: (DQ_TILES[d][0], DKDV_TILES[d][1]) for d in HEAD_DIMS}

#: slack for the 1024-byte alignment of the shared-memory struct's base
_ALIGN_SLACK = 1024


def dkdv_smem(d: int) -> int:
    """Shared bytes of ``flash_bwd_dkdv``: K, V (bN × d), Q, dO (bM × d, per stage), P, dS
    (bM × bN), 16-bit."""
    bm, bn = DKDV_TILES[d]
    return (2 * bn * d + 2 * DKDV_STAGES[d] * bm * d + 2 * bm * bn) * 2 + _ALIGN_SLACK


def dq_smem(d: int) -> int:
    """Shared bytes of ``flash_bwd_dq``: Q, dO (bM × d), K, V (bN × d), 16-bit."""
    bm, bn = DQ_TILES[d]
    return (2 * bm * d + 2 * bn * d) * 2 + _ALIGN_SLACK


FLASH_BWD_PRE = register(KernelTemplate(
    name="flash_bwd_pre",
    family="attention",
    module="baracuda_dsl.ops.attention.kernels.flash_bwd_pre",
    params=params(
        "o:ptr do:ptr delta:ptr cu_q:ptr sq:i32 ob:i64 os:i64 oh:i64 gb:i64 gs:i64 gh:i64 "
        "lb:i64 lh:i64 flags:i32"),
    space=plain_space,
    geometry=lambda k: LaunchGeometry(threads=PRE_THREADS),
    knobs=FlashKnobs,
))

_TAIL = ("lb:i64 lh:i64 slb:i64 slh:i64 scale:f32 softcap:f32 left:i32 right:i32 flags:i32 "
         + DROPOUT_PARAMS)
_STRIDES = "qb:i64 qs:i64 qh:i64 kb:i64 ks:i64 kh:i64 vb:i64 vs:i64 vh:i64 gb:i64 gs:i64 gh:i64 "

FLASH_BWD_DKDV = register(KernelTemplate(
    name="flash_bwd_dkdv",
    family="attention",
    module="baracuda_dsl.ops.attention.kernels.flash_bwd_dkdv",
    params=params(
        "q:ptr k:ptr v:ptr do:ptr lse:ptr delta:ptr dk:ptr dv:ptr cu_q:ptr cu_k:ptr slopes:ptr "
        "sq:i32 sk:i32 ratio:i32 " + _STRIDES
        + "dkb:i64 dks:i64 dkh:i64 dvb:i64 dvs:i64 dvh:i64 " + _TAIL),
    space=FLASH_FWD.space,
    geometry=lambda k: LaunchGeometry(threads=DKDV_THREADS, smem_bytes=dkdv_smem(k.head_dim)),
    knobs=FlashKnobs,
))

FLASH_BWD_DQ = register(KernelTemplate(
    name="flash_bwd_dq",
    family="attention",
    module="baracuda_dsl.ops.attention.kernels.flash_bwd_dq",
    params=params(
        "q:ptr k:ptr v:ptr do:ptr lse:ptr delta:ptr dq:ptr cu_q:ptr cu_k:ptr slopes:ptr "
        "sq:i32 sk:i32 ratio:i32 " + _STRIDES + "dqb:i64 dqs:i64 dqh:i64 " + _TAIL),
    space=FLASH_FWD.space,
    geometry=lambda k: LaunchGeometry(threads=DQ_THREADS, smem_bytes=dq_smem(k.head_dim)),
    knobs=FlashKnobs,
))
