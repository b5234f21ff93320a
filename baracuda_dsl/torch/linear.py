"""``torch.nn.functional.linear`` as PyTorch custom ops (``torch.ops.baracuda.linear`` and
``linear_backward``) on the GEMM family's Plans, with autograd and fake kernels.

Forward: ``y = x @ wᵀ (+ bias)`` — one GEMM over x's leading dims folded into M, the bias fused
in the epilogue.  Backward: ``dx = dy @ w`` and ``dw = dyᵀ @ x`` (two GEMMs on transposed views,
no copies); ``db = Σ dy`` over the rows (torch's sum for now).  dtypes float16 / bfloat16 (tensor
cores, float32 accumulate), float32 (strict IEEE, like torch's default without TF32), float64.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from ..ops.gemm.gemm import GemmArgs, GemmDescriptor, GemmPlan
from . import _core


def _gemm(a: Tensor, b: Tensor, c: Tensor, bias: Optional[Tensor] = None) -> None:
    """c = a @ b (+ bias): a (m, k), b (k, n), c (m, n), any strides."""
    m, k = a.shape
    n = b.shape[1]
    if m == 0 or n == 0:
        return
    if k == 0:
        c.zero_()
        if bias is not None:
            c.add_(bias)
        return
    epi = "bias" if bias is not None else "identity"
    p = _core.plan_by_key(("gemm", m, n, k, a.dtype, epi), GemmPlan,
                          lambda: GemmDescriptor(int(m), int(n), int(k), a.dtype, epilogue=epi))
    _core.run(p, GemmArgs(a, b, c, bias=bias), a.device)


def _lin_fw(x: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
    """``x @ weightᵀ + bias`` over x's last dim (x (..., in), weight (out, in), bias (out,))."""
    x2 = x.reshape(-1, x.shape[-1])
    y = x.new_empty(tuple(x.shape[:-1]) + (weight.shape[0],))
    _gemm(x2, weight.t(), y.view(-1, weight.shape[0]), bias)
    return y


def _lin_fw_fake(x, weight, bias):
    return x.new_empty(tuple(x.shape[:-1]) + (weight.shape[0],))


def _lin_bw(dy: Tensor, x: Tensor, weight: Tensor,
            has_bias: bool) -> Tuple[Tensor, Tensor, Tensor]:
    """(dx, dweight, dbias) of :func:`linear_op` (dbias empty without a bias)."""
    n_out, n_in = weight.shape
    dy2 = dy.reshape(-1, n_out)
    x2 = x.reshape(-1, n_in)
    dx = x.new_empty(x.shape)
    dw = torch.empty_like(weight)
    _gemm(dy2, weight, dx.view(-1, n_in))
    _gemm(dy2.t(), x2, dw)
    db = dy2.sum(0) if has_bias else dy.new_empty([0])
    return dx, dw, db


def _lin_bw_fake(dy, x, weight, has_bias):
    return (x.new_empty(x.shape), torch.empty_like(weight),
            dy.new_empty((weight.shape[0],)) if has_bias else dy.new_empty([0]))


def _lin_setup(ctx, inputs, output):
    x, weight, bias = inputs
    ctx.save_for_backward(x, weight)
    ctx.has_bias = bias is not None


def _lin_backward(ctx, bw, dy):
    x, weight = ctx.saved_tensors
    dx, dw, db = bw(dy.contiguous(), x, weight, ctx.has_bias)
    return dx, dw, (db if ctx.has_bias else None)


_linear, linear_op, linear_backward_op = _core.autograd_pair(
    "linear", _lin_fw, _lin_fw_fake, _lin_bw, _lin_bw_fake, _lin_setup, _lin_backward)


def linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """``torch.nn.functional.linear`` on the baracuda GEMM kernels."""
    return _linear(x, weight, bias)


__all__ = ["linear", "linear_op", "linear_backward_op"]
