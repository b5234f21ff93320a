"""Dropout as PyTorch custom ops (``torch.ops.baracuda.dropout`` and ``dropout_backward``), with
autograd and fake kernels.

``dropout(x, p, seed)`` → ``y = x · keep / (1 − p)``, ``keep`` drawn from the random family's
counter-based Philox stream at ``seed`` (a one-element int64 CPU tensor); the backward
``dx = dy · keep / (1 − p)`` regenerates ``keep`` from the saved seed, so no mask is stored
(torch keeps a bool mask: n bytes per call).  The public :func:`dropout` draws the seed from
torch's default CPU generator, so ``torch.manual_seed`` makes runs repeatable (the masks differ
from torch's own dropout: another generator).  dtypes float32 / float16 / bfloat16 / float64;
``0 <= p <= 1`` (p = 1 gives zeros); one read and one write per element.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..ops.random.random import (DropoutArgs, DropoutBackwardArgs, DropoutBackwardDescriptor,
                                 DropoutBackwardPlan, DropoutDescriptor, DropoutPlan)
from . import _core

_SEED_HIGH = 2**62


def _run(plan_cls, desc_cls, args_cls, x: Tensor, p: float, seed: Tensor) -> Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    if y.numel():
        plan = _core.plan(plan_cls, desc_cls(tuple(x.shape), x.dtype, float(p)))
        _core.run(plan, args_cls(x, y, seed=int(seed.item()), offset=0), x.device)
    return y


def _dropout_fw(x: Tensor, p: float, seed: Tensor) -> Tensor:
    """``x · keep / (1 − p)`` with ``keep`` from the Philox stream at ``seed``."""
    return _run(DropoutPlan, DropoutDescriptor, DropoutArgs, x, p, seed)


def _dropout_bw(dy: Tensor, p: float, seed: Tensor) -> Tensor:
    """dx of :func:`dropout_op` (the same ``keep`` regenerated from ``seed``)."""
    return _run(DropoutBackwardPlan, DropoutBackwardDescriptor, DropoutBackwardArgs, dy, p, seed)


def _dropout_fake(dy, p, seed):
    return torch.empty_like(dy, memory_format=torch.contiguous_format)


def _dropout_setup(ctx, inputs, output):
    _x, p, seed = inputs
    ctx.save_for_backward(seed)
    ctx.p = p


def _dropout_backward(ctx, bw, dy):
    (seed,) = ctx.saved_tensors
    return bw(dy, ctx.p, seed), None, None


_dropout, dropout_op, dropout_backward_op = _core.autograd_pair(
    "dropout", _dropout_fw, _dropout_fake, _dropout_bw, _dropout_fake, _dropout_setup,
    _dropout_backward)


def new_seed() -> Tensor:
    """A fresh one-element int64 CPU seed tensor from torch's default generator."""
    return torch.randint(0, _SEED_HIGH, (1,), dtype=torch.int64)


def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """``torch.nn.functional.dropout`` on the baracuda kernel (identity when not training or
    ``p == 0``)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return x
    return _dropout(x, float(p), new_seed())


__all__ = ["dropout", "new_seed", "dropout_op", "dropout_backward_op"]
