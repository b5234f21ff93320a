"""RMSNorm and LayerNorm as PyTorch custom ops (``torch.ops.baracuda.rms_norm`` /
``layer_norm`` and their ``*_backward``), with autograd and fake (meta) kernels, so they run in
eager mode, under autograd and inside ``torch.compile`` without graph breaks.

Forward ops return the output and the statistics the backward needs (``rstd``; LayerNorm also
``mean``: one per row, float32 — float64 for float64 inputs); the backward ops return ``dx`` and
the parameter gradients (``dweight`` / ``dbias``; empty tensors when the forward had none).
Semantics: ``torch.nn.functional.rms_norm`` / ``layer_norm`` over the trailing
``normalized_ndim`` dims; dtypes float32, float16, bfloat16, float64 (half types compute in
float32).  Kernels: the normalization family's row-norm Plans (deterministic backward), on
torch's current stream, workspaces from torch's caching allocator.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import torch
from torch import Tensor

from ..ops.normalization.row_norm import (LayerNormArgs, LayerNormBackwardArgs,
                                          LayerNormBackwardDescriptor, LayerNormBackwardPlan,
                                          LayerNormDescriptor, LayerNormPlan, RMSNormArgs,
                                          RMSNormBackwardArgs, RMSNormBackwardDescriptor,
                                          RMSNormBackwardPlan, RMSNormDescriptor, RMSNormPlan)
from . import _core

_EMPTY: List[int] = [0]


def _param_grad(p: Optional[Tensor], like: Tensor) -> Tensor:
    return torch.empty_like(p) if p is not None else like.new_empty(_EMPTY)


# ------------------------------------------------------------------------------------ RMSNorm
def _rms_fw(x: Tensor, weight: Optional[Tensor], normalized_ndim: int,
                eps: float) -> Tuple[Tensor, Tensor]:
    """(y, rstd): ``y = x · rstd · weight``, ``rstd = 1/sqrt(mean(x²) + eps)`` per row."""
    x = x.contiguous()
    y = torch.empty_like(x)
    rstd = x.new_empty((_core.rows_of(x.shape, normalized_ndim),), dtype=_core.stats_dtype(x))
    shape, hw = tuple(x.shape), weight is not None
    p = _core.plan_by_key(("rms", shape, normalized_ndim, x.dtype, eps, hw), RMSNormPlan,
                          lambda: RMSNormDescriptor(shape, normalized_ndim, x.dtype, float(eps),
                                                    hw))
    _core.run(p, RMSNormArgs(x, y, weight=weight, rstd=rstd), x.device)
    return y, rstd


def _rms_fw_fake(x, weight, normalized_ndim, eps):
    return (torch.empty_like(x, memory_format=torch.contiguous_format),
            x.new_empty((_core.rows_of(x.shape, normalized_ndim),), dtype=_core.stats_dtype(x)))


def _rms_bw(dy: Tensor, x: Tensor, rstd: Tensor, weight: Optional[Tensor],
            normalized_ndim: int) -> Tuple[Tensor, Tensor]:
    """(dx, dweight) of :func:`rms_norm_op` (dweight empty without a weight)."""
    dy, x = dy.contiguous(), x.contiguous()
    dx = torch.empty_like(x)
    dw = _param_grad(weight, x)
    shape, hw = tuple(x.shape), weight is not None
    p = _core.plan_by_key(("rms_bw", shape, normalized_ndim, x.dtype, hw), RMSNormBackwardPlan,
                          lambda: RMSNormBackwardDescriptor(shape, normalized_ndim, x.dtype, hw))
    if x.numel() == 0:
        dw.zero_()
    _core.run(p, RMSNormBackwardArgs(dy, x, rstd, dx, weight=weight,
                                     dweight=dw if weight is not None else None), x.device)
    return dx, dw


def _rms_bw_fake(dy, x, rstd, weight, normalized_ndim):
    return (torch.empty_like(x, memory_format=torch.contiguous_format),
            _param_grad(weight, x))


def _rms_setup(ctx, inputs, output):
    x, weight, normalized_ndim, _eps = inputs
    ctx.save_for_backward(x, weight, output[1])
    ctx.normalized_ndim = normalized_ndim


def _rms_backward(ctx, bw, dy, _drstd):
    x, weight, rstd = ctx.saved_tensors
    dx, dw = bw(dy, x, rstd, weight, ctx.normalized_ndim)
    return dx, (dw if weight is not None else None), None, None


_rms_norm, rms_norm_op, rms_norm_backward_op = _core.autograd_pair(
    "rms_norm", _rms_fw, _rms_fw_fake, _rms_bw, _rms_bw_fake, _rms_setup, _rms_backward)


def rms_norm(x: Tensor, normalized_shape, weight: Optional[Tensor] = None,
             eps: Optional[float] = None) -> Tensor:
    """``torch.nn.functional.rms_norm`` on the baracuda kernels (``eps=None``: the dtype's
    machine epsilon, as torch)."""
    k = 1 if isinstance(normalized_shape, int) else len(tuple(normalized_shape))
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    return _rms_norm(x, weight, k, float(eps))[0]


# ---------------------------------------------------------------------------------- LayerNorm
def _ln_fw(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
                  normalized_ndim: int, eps: float) -> Tuple[Tensor, Tensor, Tensor]:
    """(y, mean, rstd): ``y = (x − mean) · rstd · weight + bias`` per row (biased variance)."""
    x = x.contiguous()
    y = torch.empty_like(x)
    m = _core.rows_of(x.shape, normalized_ndim)
    mean = x.new_empty((m,), dtype=_core.stats_dtype(x))
    rstd = x.new_empty((m,), dtype=_core.stats_dtype(x))
    p = _core.plan(LayerNormPlan, LayerNormDescriptor(tuple(x.shape), normalized_ndim, x.dtype,
                                                      float(eps), weight is not None,
                                                      bias is not None))
    _core.run(p, LayerNormArgs(x, y, weight=weight, bias=bias, mean=mean, rstd=rstd), x.device)
    return y, mean, rstd


def _ln_fw_fake(x, weight, bias, normalized_ndim, eps):
    m = _core.rows_of(x.shape, normalized_ndim)
    return (torch.empty_like(x, memory_format=torch.contiguous_format),
            x.new_empty((m,), dtype=_core.stats_dtype(x)),
            x.new_empty((m,), dtype=_core.stats_dtype(x)))


def _ln_bw(dy: Tensor, x: Tensor, mean: Tensor, rstd: Tensor,
                           weight: Optional[Tensor], has_bias: bool,
                           normalized_ndim: int) -> Tuple[Tensor, Tensor, Tensor]:
    """(dx, dweight, dbias) of :func:`layer_norm_op` (parameter gradients empty when absent)."""
    dy, x = dy.contiguous(), x.contiguous()
    dx = torch.empty_like(x)
    pshape = tuple(x.shape[len(x.shape) - normalized_ndim:])
    dw = _param_grad(weight, x)
    db = x.new_empty(pshape) if has_bias else x.new_empty(_EMPTY)
    p = _core.plan(LayerNormBackwardPlan, LayerNormBackwardDescriptor(
        tuple(x.shape), normalized_ndim, x.dtype, weight is not None, has_bias))
    if x.numel() == 0:
        dw.zero_()
        db.zero_()
    _core.run(p, LayerNormBackwardArgs(dy, x, mean, rstd, dx, weight=weight,
                                       dweight=dw if weight is not None else None,
                                       dbias=db if has_bias else None), x.device)
    return dx, dw, db


def _ln_bw_fake(dy, x, mean, rstd, weight, has_bias, normalized_ndim):
    pshape = tuple(x.shape[len(x.shape) - normalized_ndim:])
    return (torch.empty_like(x, memory_format=torch.contiguous_format), _param_grad(weight, x),
            x.new_empty(pshape) if has_bias else x.new_empty(_EMPTY))


def _ln_setup(ctx, inputs, output):
    x, weight, bias, normalized_ndim, _eps = inputs
    ctx.save_for_backward(x, weight, output[1], output[2])
    ctx.has_bias = bias is not None
    ctx.normalized_ndim = normalized_ndim


def _ln_backward(ctx, bw, dy, _dmean, _drstd):
    x, weight, mean, rstd = ctx.saved_tensors
    dx, dw, db = bw(dy, x, mean, rstd, weight, ctx.has_bias, ctx.normalized_ndim)
    return (dx, dw if weight is not None else None, db if ctx.has_bias else None, None, None)


_layer_norm, layer_norm_op, layer_norm_backward_op = _core.autograd_pair(
    "layer_norm", _ln_fw, _ln_fw_fake, _ln_bw, _ln_bw_fake, _ln_setup, _ln_backward)


def layer_norm(x: Tensor, normalized_shape, weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """``torch.nn.functional.layer_norm`` on the baracuda kernels."""
    k = 1 if isinstance(normalized_shape, int) else len(tuple(normalized_shape))
    return _layer_norm(x, weight, bias, k, float(eps))[0]


__all__ = ["rms_norm", "layer_norm", "rms_norm_op", "rms_norm_backward_op", "layer_norm_op",
           "layer_norm_backward_op"]
