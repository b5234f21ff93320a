"""Rotary position embeddings as PyTorch custom ops (``torch.ops.baracuda.rope`` and
``rope_backward``), with autograd and fake kernels.

``rope(x (B, S, H, D), cos (S_tab, r/2), sin (S_tab, r/2), position_ids (B, S) / (1, S) or None,
interleaved)`` rotates the first ``r = 2·cos.shape[1]`` features of every head by the angle of its
position (``s`` when ``position_ids`` is None), the pairs ``(i, i + r/2)`` (``interleaved=False``:
GPT-NeoX / Llama "rotate half") or ``(2i, 2i + 1)`` (GPT-J); features from ``r`` on pass through.
The backward is the rotation by the opposite angle (no saved activations; the tables and positions
are not differentiated).  x any strides with a unit-stride last dim (a view of a fused QKV
projection needs no copy); the output is dense.  dtypes float16 / bfloat16 / float32 / float64
(float32 math, float64 for float64); tables float32 (float64 for float64 x) or x's dtype — build
them with :func:`rope_tables`.  Kernels: the attention family's RopePlan / RopeBackwardPlan.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from ..ops.attention.rope import (RopeArgs, RopeBackwardArgs, RopeBackwardDescriptor,
                                  RopeBackwardPlan, RopeDescriptor, RopePlan, rope_cos_sin)
from . import _core


def rope_tables(seq_len: int, rotary_dim: int, base: float = 10000.0, device=None,
                dtype=torch.float32) -> Tuple[Tensor, Tensor]:
    """(cos, sin), each (seq_len, rotary_dim / 2) of ``dtype`` on ``device``: ``angle[p, i] =
    p · base^(−2i / rotary_dim)`` computed in float64 and rounded once."""
    cos, sin = rope_cos_sin(int(seq_len), int(rotary_dim), float(base))
    return (torch.as_tensor(cos, device=device).to(dtype),
            torch.as_tensor(sin, device=device).to(dtype))


def _unit_last(t: Tensor) -> Tensor:
    return t if t.stride(-1) == 1 else t.contiguous()


def _rope(plan_cls, desc_cls, args_cls, x: Tensor, cos: Tensor, sin: Tensor,
          position_ids: Optional[Tensor], interleaved: bool) -> Tensor:
    x = _unit_last(x)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if out.numel():
        shape, r = tuple(x.shape), 2 * int(cos.shape[1])
        layout = "interleaved" if interleaved else "half"
        p = _core.plan_by_key((plan_cls, shape, x.dtype, r, layout, cos.dtype), plan_cls,
                              lambda: desc_cls(shape, x.dtype, r, layout, cos.dtype))
        _core.run(p, args_cls(x, cos, sin, out, position_ids=position_ids), x.device)
    return out


def _rope_fw(x: Tensor, cos: Tensor, sin: Tensor, position_ids: Optional[Tensor],
             interleaved: bool) -> Tensor:
    """The rotated x (dense, x's shape and dtype)."""
    return _rope(RopePlan, RopeDescriptor, RopeArgs, x, cos, sin, position_ids, interleaved)


def _rope_fake(x, cos, sin, position_ids, interleaved):
    return x.new_empty(x.shape)


def _rope_bw(dy: Tensor, cos: Tensor, sin: Tensor, position_ids: Optional[Tensor],
             interleaved: bool) -> Tensor:
    """dx of :func:`rope_op`: dy rotated by the opposite angle."""
    return _rope(RopeBackwardPlan, RopeBackwardDescriptor, RopeBackwardArgs, dy, cos, sin,
                 position_ids, interleaved)


def _rope_setup(ctx, inputs, output):
    _x, cos, sin, position_ids, interleaved = inputs
    ctx.save_for_backward(cos, sin, position_ids)
    ctx.interleaved = interleaved


def _rope_backward(ctx, bw, dy):
    cos, sin, position_ids = ctx.saved_tensors
    return bw(dy, cos, sin, position_ids, ctx.interleaved), None, None, None, None


_rope_call, rope_op, rope_backward_op = _core.autograd_pair(
    "rope", _rope_fw, _rope_fake, _rope_bw, _rope_fake, _rope_setup, _rope_backward)


def rope(x: Tensor, cos: Tensor, sin: Tensor, position_ids: Optional[Tensor] = None,
         interleaved: bool = False) -> Tensor:
    """Rotary embedding of x (B, S, H, D) with tables (S_tab, r/2) (see the module docstring)."""
    return _rope_call(x, cos, sin, position_ids, interleaved)


__all__ = ["rope", "rope_tables", "rope_op", "rope_backward_op"]
