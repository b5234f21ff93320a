"""Softmax / log-softmax and cross-entropy as PyTorch custom ops (``torch.ops.baracuda.softmax``,
``cross_entropy`` and their ``*_backward``), with autograd and fake kernels.

- ``softmax(x, log)`` → y over the last dim; backward from (dy, y) (the softmax family's row
  Plans); the public functions move another ``dim`` last around the op (torch's movedim).
- ``cross_entropy(logits (n, c), target (n,) int64 / int32, weight (c,) or None, reduction,
  ignore_index, label_smoothing)`` → (loss, lse, total_weight): loss (n,) for ``"none"`` else a
  0-d tensor; ``lse`` (n,) and ``total_weight`` (1,; 0 for ``"none"``) in float32 (float64 for
  float64) are what the backward needs.  torch.nn.functional.cross_entropy semantics for
  class-index targets.
dtypes float32, float16, bfloat16, float64 (half types compute in float32).
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from ..ops.losses.cross_entropy import (CrossEntropyArgs, CrossEntropyBackwardArgs,
                                        CrossEntropyBackwardDescriptor,
                                        CrossEntropyBackwardPlan, CrossEntropyDescriptor,
                                        CrossEntropyPlan)
from ..ops.softmax.softmax import (SoftmaxArgs, SoftmaxBackwardArgs, SoftmaxBackwardDescriptor,
                                   SoftmaxBackwardPlan, SoftmaxDescriptor, SoftmaxPlan)
from . import _core


# ------------------------------------------------------------------------------------ softmax
def _sm_fw(x: Tensor, log: bool) -> Tensor:
    """softmax (``log=False``) or log_softmax of ``x`` along its last dim."""
    x = x.contiguous()
    y = torch.empty_like(x)
    p = _core.plan(SoftmaxPlan, SoftmaxDescriptor(tuple(x.shape), x.dtype, -1, log))
    _core.run(p, SoftmaxArgs(x, y), x.device)
    return y


def _sm_fw_fake(x, log):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _sm_bw(dy: Tensor, y: Tensor, log: bool) -> Tensor:
    """dx of :func:`softmax_op` from the output ``y``."""
    dy, y = dy.contiguous(), y.contiguous()
    dx = torch.empty_like(y)
    p = _core.plan(SoftmaxBackwardPlan, SoftmaxBackwardDescriptor(tuple(y.shape), y.dtype, -1,
                                                                  log))
    _core.run(p, SoftmaxBackwardArgs(dy, y, dx), y.device)
    return dx


def _sm_bw_fake(dy, y, log):
    return torch.empty_like(y, memory_format=torch.contiguous_format)


def _sm_setup(ctx, inputs, output):
    ctx.save_for_backward(output)
    ctx.log = inputs[1]


def _sm_backward(ctx, bw, dy):
    (y,) = ctx.saved_tensors
    return bw(dy, y, ctx.log), None


_softmax, softmax_op, softmax_backward_op = _core.autograd_pair(
    "softmax", _sm_fw, _sm_fw_fake, _sm_bw, _sm_bw_fake, _sm_setup, _sm_backward)


def _along(x: Tensor, dim: int, log: bool) -> Tensor:
    last = x.dim() - 1
    dim = dim % max(x.dim(), 1)
    if dim == last:
        return _softmax(x, log)
    return _softmax(x.movedim(dim, -1), log).movedim(-1, dim)


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    """``torch.softmax(x, dim)`` on the baracuda kernels."""
    return _along(x, dim, False)


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    """``torch.log_softmax(x, dim)`` on the baracuda kernels."""
    return _along(x, dim, True)


# ------------------------------------------------------------------------------ cross entropy
def _ce_desc(cls, logits, target, weight, reduction, ignore_index, label_smoothing):
    n, c = logits.shape
    return cls(int(n), int(c), logits.dtype, "index", reduction, int(ignore_index),
               float(label_smoothing), weight is not None, target.dtype)


def _loss_shape(n: int, reduction: str):
    return (n,) if reduction == "none" else ()


def _ce_fw(logits: Tensor, target: Tensor, weight: Optional[Tensor], reduction: str,
                     ignore_index: int, label_smoothing: float) -> Tuple[Tensor, Tensor, Tensor]:
    """(loss, lse, total_weight) of class-index cross-entropy over logits (n, c)."""
    logits = logits.contiguous()
    n = logits.shape[0]
    st = _core.stats_dtype(logits)
    loss = logits.new_empty(_loss_shape(n, reduction))
    lse = logits.new_empty((n,), dtype=st)
    tw = logits.new_empty((1,), dtype=st)
    p = _core.plan(CrossEntropyPlan, _ce_desc(CrossEntropyDescriptor, logits, target, weight,
                                              reduction, ignore_index, label_smoothing))
    if reduction == "none":
        tw.zero_()                                  # no total for reduction "none"
    _core.run(p, CrossEntropyArgs(logits, target, loss, weight=weight, lse=lse,
                                  total_weight=None if reduction == "none" else tw),
              logits.device)
    return loss, lse, tw


def _ce_fw_fake(logits, target, weight, reduction, ignore_index, label_smoothing):
    st = _core.stats_dtype(logits)
    n = logits.shape[0]
    return (logits.new_empty(_loss_shape(n, reduction)), logits.new_empty((n,), dtype=st),
            logits.new_empty((1,), dtype=st))


def _ce_bw(grad_loss: Tensor, logits: Tensor, target: Tensor,
                              weight: Optional[Tensor], lse: Tensor, total_weight: Tensor,
                              reduction: str, ignore_index: int,
                              label_smoothing: float) -> Tensor:
    """d logits of :func:`cross_entropy_op`."""
    logits = logits.contiguous()
    dx = torch.empty_like(logits)
    g = grad_loss.reshape(grad_loss.shape if reduction == "none" else (1,)).contiguous()
    p = _core.plan(CrossEntropyBackwardPlan, _ce_desc(CrossEntropyBackwardDescriptor, logits,
                                                      target, weight, reduction, ignore_index,
                                                      label_smoothing))
    _core.run(p, CrossEntropyBackwardArgs(
        logits, target, lse, g, dx, weight=weight,
        total_weight=None if reduction == "none" else total_weight), logits.device)
    return dx


def _ce_bw_fake(grad_loss, logits, target, weight, lse, total_weight, reduction, ignore_index,
                label_smoothing):
    return torch.empty_like(logits, memory_format=torch.contiguous_format)


def _ce_setup(ctx, inputs, output):
    logits, target, weight, reduction, ignore_index, label_smoothing = inputs
    ctx.save_for_backward(logits, target, weight, output[1], output[2])
    ctx.args = (reduction, ignore_index, label_smoothing)


def _ce_backward(ctx, bw, dloss, _dlse, _dtw):
    logits, target, weight, lse, tw = ctx.saved_tensors
    dx = bw(dloss, logits, target, weight, lse, tw, *ctx.args)
    return dx, None, None, None, None, None


_cross_entropy, cross_entropy_op, cross_entropy_backward_op = _core.autograd_pair(
    "cross_entropy", _ce_fw, _ce_fw_fake, _ce_bw, _ce_bw_fake, _ce_setup, _ce_backward)


def cross_entropy(logits: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                  ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """``torch.nn.functional.cross_entropy`` for (n, c) logits and (n,) class indices."""
    return _cross_entropy(logits, target, weight, reduction, ignore_index, label_smoothing)[0]


__all__ = ["softmax", "log_softmax", "cross_entropy", "softmax_op", "softmax_backward_op",
           "cross_entropy_op", "cross_entropy_backward_op"]
