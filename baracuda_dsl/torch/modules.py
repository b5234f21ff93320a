"""Drop-in ``torch.nn`` modules on the baracuda custom ops (parameters and ``forward``
signatures as torch's)."""

from __future__ import annotations

import torch

from .attention import flash_attention
from .dropout import dropout
from .layers import embedding, swiglu
from .linear import linear
from .losses import linear_cross_entropy
from .norms import layer_norm, rms_norm
from .rope import rope, rope_tables
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


class LinearCrossEntropyLoss(torch.nn.Module):
    """Fused ``CrossEntropyLoss()(F.linear(x, weight), target)``: ``forward(x (..., k), weight
    (v, k), target)`` never materialises the logits (the weight is an argument, so a tied
    embedding table can serve as the output projection); ``chunk`` vocabulary columns per GEMM."""

    def __init__(self, ignore_index: int = -100, reduction: str = "mean", chunk: int = 4096):
        super().__init__()
        self.ignore_index, self.reduction, self.chunk = ignore_index, reduction, chunk

    def forward(self, x, weight, target):
        return linear_cross_entropy(x, weight, target, self.ignore_index, self.reduction,
                                    self.chunk)


class Dropout(torch.nn.Module):
    """``torch.nn.Dropout`` on the baracuda Philox kernel (the backward regenerates the mask from
    a saved seed instead of storing it)."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, x):
        return dropout(x, self.p, self.training)


class Attention(torch.nn.Module):
    """Llama-style self-attention: one fused QKV projection (``qkv``: dim → (H + 2·H_kv)·D),
    rotary embeddings on q and k (tables for ``max_seq_len`` positions, base ``rope_base``, "half"
    layout), flash attention (causal by default; GQA when ``n_kv_heads`` < ``n_heads``) and the
    output projection ``o`` — every step a baracuda kernel.  x (B, S, dim) → (B, S, dim);
    dtypes float16 / bfloat16 (flash attention's); head dim 64–256."""

    def __init__(self, dim: int, n_heads: int, n_kv_heads=None, max_seq_len: int = 4096,
                 rope_base: float = 10000.0, bias: bool = False, device=None, dtype=None):
        super().__init__()
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        if dim % n_heads or n_heads % n_kv_heads:
            raise ValueError(f"Attention: dim {dim} must divide by n_heads {n_heads}, and "
                             f"n_heads by n_kv_heads {n_kv_heads}")
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, dim // n_heads
        kw = dict(bias=bias, device=device, dtype=dtype)
        self.qkv = Linear(dim, (n_heads + 2 * n_kv_heads) * self.head_dim, **kw)
        self.o = Linear(n_heads * self.head_dim, dim, **kw)
        cos, sin = rope_tables(max_seq_len, self.head_dim, rope_base, device=device)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, x, causal: bool = True):
        b, s, _ = x.shape
        h, hk, d = self.n_heads, self.n_kv_heads, self.head_dim
        # split, not three slices: its backward is one concatenation of the three gradients
        q, k, v = self.qkv(x).view(b, s, h + 2 * hk, d).split((h, hk, hk), dim=2)
        o = flash_attention(rope(q, self.cos, self.sin), rope(k, self.cos, self.sin), v, causal)
        return self.o(o.reshape(b, s, h * d))


__all__ = ["RMSNorm", "LayerNorm", "CrossEntropyLoss", "LinearCrossEntropyLoss", "Linear",
           "Embedding", "SwiGLU", "Attention", "Dropout"]
