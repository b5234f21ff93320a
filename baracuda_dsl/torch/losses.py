"""Fused linear + cross-entropy as PyTorch custom ops (``torch.ops.baracuda.linear_cross_entropy``
and ``linear_cross_entropy_backward``), with autograd and fake kernels.

``linear_cross_entropy(x (..., k), weight (v, k), target (...,) int64 / int32, reduction,
ignore_index, chunk)`` = ``cross_entropy(x @ weightᵀ, target)`` without the (n, v) logits: the
losses family's LinearCrossEntropyPlan walks the vocabulary in chunks of ``chunk`` columns (a GEMM
into an f32 workspace chunk + a row-statistics kernel), and the backward recomputes each chunk's
logits and forms dx (f32 accumulator) and dweight chunk by chunk.  Saved: x, weight, target and
the per-row ``lse`` (float32; float64 for float64).  Workspace (from torch's allocator):
n·chunk·4 bytes forward, about twice that plus n·k·4 backward — with n = 8192 tokens, v = 32000,
bf16 the unfused logits and their gradient take 1 GB, the fused chunks 134 MB.  Reductions
``"mean"`` (over the non-ignored rows) / ``"sum"`` / ``"none"``; dtypes float16 / bfloat16
(tensor-core GEMM, f32 logits), float32, float64; deterministic.
"""

from __future__ import annotations

from typing import Tuple

import torch
from torch import Tensor

from ..ops.losses.linear_cross_entropy import (DEFAULT_CHUNK, LinearCrossEntropyArgs,
                                               LinearCrossEntropyBackwardArgs,
                                               LinearCrossEntropyBackwardDescriptor,
                                               LinearCrossEntropyBackwardPlan,
                                               LinearCrossEntropyDescriptor,
                                               LinearCrossEntropyPlan)
from . import _core


def _desc(cls, x2: Tensor, weight: Tensor, target: Tensor, reduction: str, ignore_index: int,
          chunk: int):
    n, k = x2.shape
    return cls(int(n), int(k), int(weight.shape[0]), x2.dtype, reduction, int(ignore_index),
               target.dtype, int(chunk))


def _loss_shape(x: Tensor, reduction: str):
    return tuple(x.shape[:-1]) if reduction == "none" else ()


def _flat(x: Tensor, target: Tensor):
    return x.reshape(-1, x.shape[-1]), target.reshape(-1).contiguous()


def _lce_fw(x: Tensor, weight: Tensor, target: Tensor, reduction: str, ignore_index: int,
            chunk: int) -> Tuple[Tensor, Tensor, Tensor]:
    """(loss, lse, total_weight): loss of x's dtype ((...,) for ``"none"``, else 0-d); lse (n,)
    and total_weight (1,; 0 for ``"none"``) in float32 (float64 for float64)."""
    x2, t = _flat(x, target)
    st = _core.stats_dtype(x)
    loss = x.new_empty(_loss_shape(x, reduction))
    lse = x.new_empty((x2.shape[0],), dtype=st)
    tw = x.new_zeros((1,), dtype=st)
    p = _core.plan(LinearCrossEntropyPlan, _desc(LinearCrossEntropyDescriptor, x2, weight, t,
                                                 reduction, ignore_index, chunk))
    _core.run(p, LinearCrossEntropyArgs(x2, weight, t, loss, lse=lse,
                                        total_weight=None if reduction == "none" else tw),
              x.device)
    return loss, lse, tw


def _lce_fw_fake(x, weight, target, reduction, ignore_index, chunk):
    st = _core.stats_dtype(x)
    n = _core.rows_of(x.shape, 1)
    return (x.new_empty(_loss_shape(x, reduction)), x.new_empty((n,), dtype=st),
            x.new_empty((1,), dtype=st))


def _lce_bw(grad_loss: Tensor, x: Tensor, weight: Tensor, target: Tensor, lse: Tensor,
            total_weight: Tensor, reduction: str, ignore_index: int,
            chunk: int) -> Tuple[Tensor, Tensor]:
    """(dx, dweight) of :func:`linear_cross_entropy_op`."""
    x2, t = _flat(x, target)
    dx = x.new_empty(x.shape)
    dw = torch.empty_like(weight, memory_format=torch.contiguous_format)
    g = grad_loss.reshape(-1 if reduction == "none" else 1).contiguous()
    p = _core.plan(LinearCrossEntropyBackwardPlan, _desc(LinearCrossEntropyBackwardDescriptor,
                                                         x2, weight, t, reduction, ignore_index,
                                                         chunk))
    _core.run(p, LinearCrossEntropyBackwardArgs(
        x2, weight, t, lse, g, dx.view(x2.shape), dw,
        total_weight=None if reduction == "none" else total_weight), x.device)
    return dx, dw


def _lce_bw_fake(grad_loss, x, weight, target, lse, total_weight, reduction, ignore_index,
                 chunk):
    return x.new_empty(x.shape), torch.empty_like(weight, memory_format=torch.contiguous_format)


def _lce_setup(ctx, inputs, output):
    x, weight, target, reduction, ignore_index, chunk = inputs
    ctx.save_for_backward(x, weight, target, output[1], output[2])
    ctx.args = (reduction, ignore_index, chunk)


def _lce_backward(ctx, bw, dloss, _dlse, _dtw):
    x, weight, target, lse, tw = ctx.saved_tensors
    dx, dw = bw(dloss, x, weight, target, lse, tw, *ctx.args)
    return dx, dw, None, None, None, None


_linear_cross_entropy, linear_cross_entropy_op, linear_cross_entropy_backward_op = \
    _core.autograd_pair("linear_cross_entropy", _lce_fw, _lce_fw_fake, _lce_bw, _lce_bw_fake,
                        _lce_setup, _lce_backward)


def linear_cross_entropy(x: Tensor, weight: Tensor, target: Tensor, ignore_index: int = -100,
                         reduction: str = "mean", chunk: int = DEFAULT_CHUNK) -> Tensor:
    """``F.cross_entropy(F.linear(x, weight), target, ignore_index=…, reduction=…)`` fused
    (x (..., k), weight (v, k), target x's leading shape); see the module docstring."""
    return _linear_cross_entropy(x, weight, target, reduction, int(ignore_index),
                                 int(chunk))[0]


__all__ = ["linear_cross_entropy", "linear_cross_entropy_op", "linear_cross_entropy_backward_op"]
