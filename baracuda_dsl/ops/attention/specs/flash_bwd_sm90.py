"""Template specs of the Hopper flash-attention backward (``FlashAttentionBackwardPlan``'s fast
path on sm90a, ``deterministic=False``):

``flash_bwd_sm90``  one CTA of 384 threads per (key tile of 128 rows, kv head, batch entry): a
                    cp.async producer warpgroup streams the Q / dO tiles of every query head of
                    the GQA group, two wgmma consumer warpgroups of 64 key rows compute Sᵀ, dPᵀ,
                    dV, dK and dQ partials, the latter added to an f32 accumulator (``red.add``);
``flash_bwd_post``  dq = scale · dq_acc in the input dtype.

Knobs: the forward's :class:`~.flash.FlashKnobs`; the sm90 kernel exists for head dims 64 and
128 (:data:`SM90_BWD_DIMS`; the other head dims take the deterministic mma.sync kernels).
"""

from __future__ import annotations

from ....jit import KernelTemplate, LaunchGeometry, params, register
from .flash import DROPOUT_PARAMS, FlashKnobs, dropout_space, plain_space

SM90_BWD_DIMS = (64, 128)
#: head dim -> (key rows of the CTA, query rows of a step)
SM90_BWD_TILES = {64: (128, 64), 128: (128, 64)}
SM90_BWD_THREADS = 384
#: ``flash_bwd_post``: rows a CTA (one warp a row, 128 threads)
POST_ROWS = 4


def sm90_bwd_smem(d: int) -> int:
    """Shared bytes: K, V (bN × d), two stages of Q and dO (bM × d), dS (bM × bN), 16-bit."""
    bn, bm = SM90_BWD_TILES[d]
    return (2 * bn * d + 4 * bm * d + bm * bn) * 2 + 2 * 1024


def _space():
    return dropout_space(SM90_BWD_DIMS)


_STRIDES = ("qb:i64 qs:i64 qh:i64 kb:i64 ks:i64 kh:i64 vb:i64 vs:i64 vh:i64 gb:i64 gs:i64 "
            "gh:i64 ")

FLASH_BWD_SM90 = register(KernelTemplate(
    name="flash_bwd_sm90",
    family="attention",
    module="baracuda_dsl.ops.attention.kernels.flash_bwd_sm90",
    params=params(
        "q:ptr k:ptr v:ptr do:ptr lse:ptr delta:ptr dk:ptr dv:ptr dqa:ptr cu_q:ptr cu_k:ptr "
        "slopes:ptr sq:i32 sk:i32 ratio:i32 " + _STRIDES
        + "dkb:i64 dks:i64 dkh:i64 dvb:i64 dvs:i64 dvh:i64 ab:i64 as:i64 ah:i64 "
        "lb:i64 lh:i64 slb:i64 slh:i64 scale:f32 softcap:f32 left:i32 right:i32 flags:i32 "
        + DROPOUT_PARAMS),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=SM90_BWD_THREADS,
                                      smem_bytes=sm90_bwd_smem(k.head_dim)),
    knobs=FlashKnobs,
    arch_ok=lambda k, arch: arch == "sm90a",
))

FLASH_BWD_POST = register(KernelTemplate(
    name="flash_bwd_post",
    family="attention",
    module="baracuda_dsl.ops.attention.kernels.flash_bwd_post",
    params=params("dqa:ptr dq:ptr cu_q:ptr sq:i32 ab:i64 as:i64 ah:i64 qb:i64 qs:i64 qh:i64 "
                  "scale:f32 flags:i32"),
    space=plain_space,
    geometry=lambda k: LaunchGeometry(threads=128),
    knobs=FlashKnobs,
))
