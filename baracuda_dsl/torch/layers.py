"""Embedding and the SwiGLU gate as PyTorch custom ops (``torch.ops.baracuda.embedding``,
``swiglu`` and their ``*_backward``), with autograd and fake kernels.

- ``embedding(weight (V, D), ids (any shape, int64 / int32), padding_idx)`` → ``weight[ids]``;
  backward ``dweight`` = the rows of dy summed per id (the segment family's deterministic
  sort-based backward; the ``padding_idx`` row gets no gradient, as torch's).  An id outside
  ``[0, V)`` is an IndexError after the launch (the plans' status word), not a wrong answer.
- ``swiglu(gate, up)`` → ``silu(gate) · up`` (the Llama MLP's gate); backward (dgate, dup) (the
  elementwise family's gated activation and its backward kernel).
dtypes float32, float16, bfloat16, float64.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from ..ops.elementwise.elementwise import ElementwiseArgs, ElementwiseDescriptor
from ..ops.elementwise.families import (ElementwiseBackwardArgs, ElementwiseBackwardDescriptor,
                                        ElementwiseBackwardPlan, GatedActivationPlan)
from ..ops.segment.embedding import (EmbeddingArgs, EmbeddingBackwardArgs,
                                     EmbeddingBackwardPlan, EmbeddingDescriptor, EmbeddingPlan)
from . import _core


def _check_status(status: Tensor, what: str) -> None:
    if int(status.item()) != 0:
        raise IndexError(f"{what}: an index is out of range for the embedding table")


def _emb_desc(weight: Tensor, ids: Tensor, padding_idx: Optional[int]) -> EmbeddingDescriptor:
    v, d = weight.shape
    return EmbeddingDescriptor(int(v), int(d), int(ids.numel()), weight.dtype, ids.dtype,
                               padding_idx)


# ---------------------------------------------------------------------------------- embedding
def _emb_fw(weight: Tensor, ids: Tensor, padding_idx: Optional[int]) -> Tensor:
    """``weight[ids]`` of shape ``ids.shape + (D,)``."""
    flat = ids.reshape(-1).contiguous()
    out = weight.new_empty((flat.numel(), weight.shape[1]))
    if out.numel():
        status = torch.zeros(1, dtype=torch.int32, device=weight.device)
        p = _core.plan(EmbeddingPlan, _emb_desc(weight, flat, padding_idx))
        _core.run(p, EmbeddingArgs(weight, flat, out, status), weight.device)
        _check_status(status, "embedding")
    return out.reshape(tuple(ids.shape) + (weight.shape[1],))


def _emb_fw_fake(weight, ids, padding_idx):
    return weight.new_empty(tuple(ids.shape) + (weight.shape[1],))


def _emb_bw(dy: Tensor, ids: Tensor, num_embeddings: int,
            padding_idx: Optional[int]) -> Tensor:
    """dweight (V, D): the rows of dy summed per id (deterministic)."""
    d = dy.shape[-1]
    flat = ids.reshape(-1).contiguous()
    dy2 = dy.reshape(-1, d).contiguous()
    dw = dy.new_empty((num_embeddings, d))
    if flat.numel() == 0:
        return dw.zero_()
    status = torch.zeros(1, dtype=torch.int32, device=dy.device)
    desc = EmbeddingDescriptor(int(num_embeddings), int(d), int(flat.numel()), dy.dtype,
                               flat.dtype, padding_idx)
    p = _core.plan(EmbeddingBackwardPlan, desc)
    _core.run(p, EmbeddingBackwardArgs(dy2, flat, dw, status), dy.device)
    _check_status(status, "embedding_backward")
    return dw


def _emb_bw_fake(dy, ids, num_embeddings, padding_idx):
    return dy.new_empty((num_embeddings, dy.shape[-1]))


def _emb_setup(ctx, inputs, output):
    weight, ids, padding_idx = inputs
    ctx.save_for_backward(ids)
    ctx.num_embeddings = weight.shape[0]
    ctx.padding_idx = padding_idx


def _emb_backward(ctx, bw, dy):
    (ids,) = ctx.saved_tensors
    return bw(dy, ids, ctx.num_embeddings, ctx.padding_idx), None, None


_embedding, embedding_op, embedding_backward_op = _core.autograd_pair(
    "embedding", _emb_fw, _emb_fw_fake, _emb_bw, _emb_bw_fake, _emb_setup, _emb_backward)


def embedding(ids: Tensor, weight: Tensor, padding_idx: Optional[int] = None) -> Tensor:
    """``torch.nn.functional.embedding(ids, weight, padding_idx)`` on the baracuda kernels."""
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return _embedding(weight, ids, padding_idx)


# ------------------------------------------------------------------------------------ swiglu
def _sw_fw(gate: Tensor, up: Tensor) -> Tensor:
    """``silu(gate) · up`` (same shapes)."""
    gate, up = gate.contiguous(), up.contiguous()
    y = torch.empty_like(gate)
    if y.numel():
        shape = tuple(gate.shape)
        p = _core.plan(GatedActivationPlan, ElementwiseDescriptor("swiglu", (shape, shape),
                                                                  gate.dtype))
        _core.run(p, ElementwiseArgs([gate, up], [y]), gate.device)
    return y


def _sw_fw_fake(gate, up):
    return torch.empty_like(gate, memory_format=torch.contiguous_format)


def _sw_bw(dy: Tensor, gate: Tensor, up: Tensor) -> Tuple[Tensor, Tensor]:
    """(dgate, dup) of :func:`swiglu_op`."""
    dy, gate, up = dy.contiguous(), gate.contiguous(), up.contiguous()
    dg, du = torch.empty_like(gate), torch.empty_like(up)
    if dg.numel():
        shape = tuple(gate.shape)
        p = _core.plan(ElementwiseBackwardPlan, ElementwiseBackwardDescriptor(
            "swiglu", (shape, shape), gate.dtype))
        _core.run(p, ElementwiseBackwardArgs(dy, [gate, up], [dg, du]), gate.device)
    return dg, du


def _sw_bw_fake(dy, gate, up):
    return (torch.empty_like(gate, memory_format=torch.contiguous_format),
            torch.empty_like(up, memory_format=torch.contiguous_format))


def _sw_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _sw_backward(ctx, bw, dy):
    gate, up = ctx.saved_tensors
    return bw(dy, gate, up)


_swiglu, swiglu_op, swiglu_backward_op = _core.autograd_pair(
    "swiglu", _sw_fw, _sw_fw_fake, _sw_bw, _sw_bw_fake, _sw_setup, _sw_backward)


def swiglu(gate: Tensor, up: Tensor) -> Tensor:
    """``F.silu(gate) * up`` on one baracuda kernel (and one for its backward)."""
    return _swiglu(gate, up)


__all__ = ["embedding", "swiglu", "embedding_op", "embedding_backward_op", "swiglu_op",
           "swiglu_backward_op"]
