"""Drop-in ``torch.nn`` modules on the baracuda custom ops (parameters and ``forward``
signatures as torch's)."""

from __future__ import annotations

import torch

from .layers import embedding, swiglu
from .linear import linear
from .norms import layer_norm, rms_norm
from .softmax import cross_entropy


class RMSNorm(torch.nn.Module):
    """``torch.nn.RMSNorm`` (``elementwise_affine`` → a weight of ``normalized_shape``, ones)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine: bool = True, device=None,
                 dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(
            normalized_shape)
        self.normalized_shape = shape
        self.eps = eps
        self.weight = (torch.nn.Parameter(torch.ones(shape, device=device, dtype=dtype))
                       if elementwise_affine else None)

    def forward(self, x):
        return rms_norm(x, self.normalized_shape, self.weight, self.eps)


class LayerNorm(torch.nn.Module):
    """``torch.nn.LayerNorm`` (weight ones, bias zeros when ``elementwise_affine``)."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(
            normalized_shape)
        self.normalized_shape = shape
        self.eps = eps
        kw = dict(device=device, dtype=dtype)
        self.weight = torch.nn.Parameter(torch.ones(shape, **kw)) if elementwise_affine else None
        self.bias = (torch.nn.Parameter(torch.zeros(shape, **kw))
                     if elementwise_affine and bias else None)

    def forward(self, x):
        return layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class CrossEntropyLoss(torch.nn.Module):
    """``torch.nn.CrossEntropyLoss`` for (n, c) logits and (n,) class indices."""

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean",
                 label_smoothing: float = 0.0):
        super().__init__()
        self.register_buffer("weight", weight)
        self.ignore_index, self.reduction = ignore_index, reduction
        self.label_smoothing = label_smoothing

    def forward(self, logits, target):
        return cross_entropy(logits, target, self.weight, self.ignore_index, self.reduction,
                             self.label_smoothing)


class Linear(torch.nn.Linear):
    """``torch.nn.Linear`` (same parameters and initialisation) whose forward is the baracuda
    GEMM."""

    def forward(self, x):
        return linear(x, self.weight, self.bias)


class Embedding(torch.nn.Embedding):
    """``torch.nn.Embedding`` (same parameters and initialisation; max_norm / sparse are not
    wired) whose forward and backward are the baracuda kernels."""

    def forward(self, ids):
        if self.max_norm is not None or self.sparse:
            raise NotImplementedError("baracuda_dsl.torch.Embedding: max_norm and sparse are "
                                      "not wired; wired: the dense lookup with padding_idx")
        return embedding(ids, self.weight, self.padding_idx)


class SwiGLU(torch.nn.Module):
    """The Llama MLP: ``down(silu(gate(x)) · up(x))`` with bias-free projections
    (``dim`` → ``hidden`` → ``dim``), on the baracuda GEMM and gate kernels."""

    def __init__(self, dim: int, hidden: int, device=None, dtype=None):
        super().__init__()
        kw = dict(bias=False, device=device, dtype=dtype)
        self.gate = Linear(dim, hidden, **kw)
        self.up = Linear(dim, hidden, **kw)
        self.down = Linear(hidden, dim, **kw)

    def forward(self, x):
        return self.down(swiglu(self.gate(x), self.up(x)))


__all__ = ["RMSNorm", "LayerNorm", "CrossEntropyLoss", "Linear", "Embedding", "SwiGLU"]
