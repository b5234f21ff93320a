"""Flash attention for JAX on the attention family's ``FlashAttentionPlan`` /
``FlashAttentionBackwardPlan``, with a ``jax.custom_vjp`` rule.

``flash_attention(q (B, Sq, Hq, D), k (B, Sk, Hk, D), v (B, Sk, Hk, D), causal=False,
scale=None)`` → out (B, Sq, Hq, D): ``softmax(q·kᵀ·scale [+ causal mask])·v`` per head, GQA /
MQA when ``Hk`` divides ``Hq``; ``scale`` None → ``1/sqrt(D)``; the causal mask is top-left
aligned (torch's ``is_causal``, ``jax.nn.dot_product_attention(is_causal=True)``).  float16 /
bfloat16, the head dims the flash kernels take (others raise UnsupportedError at trace time).
The forward saves ``lse`` (B, Hq, Sq) float32 and its output for the backward (dq, dk, dv; dQ
summed with float32 atomics on sm90a: reruns may differ by a few ulps).  ``jax.jit``,
``jax.grad`` and ``jax.vmap`` (one run per batch element) work; higher-order derivatives do not.
"""

from __future__ import annotations

import functools
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..ops.attention.flash import (FlashAttentionArgs, FlashAttentionBackwardArgs,
                                   FlashAttentionBackwardDescriptor, FlashAttentionBackwardPlan,
                                   FlashAttentionDescriptor, FlashAttentionPlan)
from ..plan import prod
from . import _core

SDS = jax.ShapeDtypeStruct


def _desc(cls, q, k, causal: bool, scale: Optional[float]):
    b, sq, hq, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    return cls(int(b), int(sq), int(sk), int(hq), int(hk), int(d), _core.bdtype(q.dtype),
               bool(causal), align="top_left", scale=None if scale is None else float(scale))


def _fa_build(desc, vi, vo):
    return FlashAttentionArgs(vi[0], vi[1], vi[2], vo[0], lse=vo[1])


def _fa_bw_build(desc, vi, vo):
    q, k, v, out, dout, lse = vi
    return FlashAttentionBackwardArgs(q, k, v, out, dout, lse, vo[0], vo[1], vo[2])


def flash_attention_fwd(q, k, v, causal: bool, scale: Optional[float]):
    """(out, lse) of attention over (B, S, H, D) arrays (one Plan run)."""
    p = _core.plan(FlashAttentionPlan, _desc(FlashAttentionDescriptor, q, k, causal, scale))
    outs = (SDS(q.shape, q.dtype), SDS((q.shape[0], q.shape[2], q.shape[1]), np.float32))
    if prod(q.shape) == 0:
        return jnp.zeros(outs[0].shape, q.dtype), jnp.zeros(outs[1].shape, np.float32)
    out, lse = _core.call(p, _fa_build, outs, q, k, v)
    return out, lse


def flash_attention_bwd(dout, q, k, v, out, lse, causal: bool, scale: Optional[float]):
    """(dq, dk, dv) of :func:`flash_attention_fwd`."""
    p = _core.plan(FlashAttentionBackwardPlan,
                   _desc(FlashAttentionBackwardDescriptor, q, k, causal, scale))
    outs = tuple(SDS(t.shape, t.dtype) for t in (q, k, v))
    if prod(q.shape) == 0 or prod(k.shape) == 0:
        return tuple(jnp.zeros(o.shape, o.dtype) for o in outs)
    dq, dk, dv = _core.call(p, _fa_bw_build, outs, q, k, v, out, dout.astype(q.dtype), lse)
    return dq, dk, dv


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4))
def _fa(q, k, v, causal, scale):
    return flash_attention_fwd(q, k, v, causal, scale)[0]


def _fa_f(q, k, v, causal, scale):
    out, lse = flash_attention_fwd(q, k, v, causal, scale)
    return out, (q, k, v, out, lse)


def _fa_b(causal, scale, res, dout):
    q, k, v, out, lse = res
    return flash_attention_bwd(dout, q, k, v, out, lse, causal, scale)


_fa.defvjp(_fa_f, _fa_b)


def flash_attention(q, k, v, causal: bool = False, scale: Optional[float] = None):
    """Attention output of (B, S, H, D) q / k / v (GQA when k / v have fewer heads), on the
    baracuda flash kernels, differentiable in q, k and v."""
    if q.ndim != 4 or k.ndim != 4 or v.shape != k.shape:
        raise ValueError(f"flash_attention: q {tuple(q.shape)}, k {tuple(k.shape)}, v "
                         f"{tuple(v.shape)} must be (B, S, H, D) with v shaped like k")
    return _fa(q, k, v, bool(causal), None if scale is None else float(scale))


__all__ = ["flash_attention", "flash_attention_fwd", "flash_attention_bwd"]
