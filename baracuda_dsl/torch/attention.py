"""Flash attention as PyTorch custom ops (``torch.ops.baracuda.flash_attention`` and
``flash_attention_backward``), with autograd and fake kernels.

``flash_attention(q (B, Sq, Hq, D), k (B, Sk, Hk, D), v (B, Sk, Hk, D), causal, scale)`` →
``(out (B, Sq, Hq, D), lse (B, Hq, Sq) float32)``: ``softmax(q·kᵀ·scale [+ causal mask])·v`` per
head, GQA / MQA when ``Hk`` divides ``Hq``; ``scale`` None → ``1/sqrt(D)``; the causal mask is
torch's ``is_causal`` (top-left aligned).  float16 / bfloat16, head dims 64–256 (the attention
family's kernels: wgmma on sm90a).  The backward (dq, dk, dv) is the family's default (dQ summed
with float32 atomics: reruns may differ by a few ulps).
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from ..ops.attention.flash import (FlashAttentionArgs, FlashAttentionBackwardArgs,
                                   FlashAttentionBackwardDescriptor, FlashAttentionBackwardPlan,
                                   FlashAttentionDescriptor, FlashAttentionPlan)
from . import _core


def _desc(cls, q: Tensor, k: Tensor, causal: bool, scale: Optional[float]):
    b, sq, hq, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    return cls(int(b), int(sq), int(sk), int(hq), int(hk), int(d), q.dtype, bool(causal),
               align="top_left", scale=None if scale is None else float(scale))


def _fa_fw(q: Tensor, k: Tensor, v: Tensor, causal: bool,
           scale: Optional[float]) -> Tuple[Tensor, Tensor]:
    """(out, lse) of attention over (B, S, H, D) tensors."""
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    out = torch.empty_like(q)
    lse = q.new_empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32)
    p = _core.plan(FlashAttentionPlan, _desc(FlashAttentionDescriptor, q, k, causal, scale))
    _core.run(p, FlashAttentionArgs(q, k, v, out, lse=lse), q.device)
    return out, lse


def _fa_fw_fake(q, k, v, causal, scale):
    return (torch.empty_like(q, memory_format=torch.contiguous_format),
            q.new_empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32))


def _fa_bw(dout: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor,
           causal: bool, scale: Optional[float]) -> Tuple[Tensor, Tensor, Tensor]:
    """(dq, dk, dv) of :func:`flash_attention_op`."""
    dout, q, k, v, out = (t.contiguous() for t in (dout, q, k, v, out))
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    p = _core.plan(FlashAttentionBackwardPlan,
                   _desc(FlashAttentionBackwardDescriptor, q, k, causal, scale))
    _core.run(p, FlashAttentionBackwardArgs(q, k, v, out, dout, lse, dq, dk, dv), q.device)
    return dq, dk, dv


def _fa_bw_fake(dout, q, k, v, out, lse, causal, scale):
    return tuple(torch.empty_like(t, memory_format=torch.contiguous_format) for t in (q, k, v))


def _fa_setup(ctx, inputs, output):
    q, k, v, causal, scale = inputs
    ctx.save_for_backward(q, k, v, output[0], output[1])
    ctx.causal, ctx.scale = causal, scale


def _fa_backward(ctx, bw, dout, _dlse):
    q, k, v, out, lse = ctx.saved_tensors
    dq, dk, dv = bw(dout, q, k, v, out, lse, ctx.causal, ctx.scale)
    return dq, dk, dv, None, None


_flash_attention, flash_attention_op, flash_attention_backward_op = _core.autograd_pair(
    "flash_attention", _fa_fw, _fa_fw_fake, _fa_bw, _fa_bw_fake, _fa_setup, _fa_backward)


def flash_attention(q: Tensor, k: Tensor, v: Tensor, causal: bool = False,
                    scale: Optional[float] = None) -> Tensor:
    """Attention output of (B, S, H, D) q / k / v (GQA when k / v have fewer heads)."""
    return _flash_attention(q, k, v, causal, scale)[0]


__all__ = ["flash_attention", "flash_attention_op", "flash_attention_backward_op"]
