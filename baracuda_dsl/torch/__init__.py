"""PyTorch adapters: the library's Plans as ``torch.library`` custom ops (``torch.ops.baracuda.*``)
with autograd and fake kernels — eager, autograd and ``torch.compile(fullgraph=True)`` — running
on torch's current stream with workspaces from torch's caching allocator, and drop-in
``torch.nn`` modules.  Wired (forward and backward): RMSNorm, LayerNorm, softmax / log_softmax,
class-index cross-entropy, fused linear cross-entropy, linear (bias fused), embedding, the SwiGLU
gate, rotary embeddings, dropout and flash attention (GQA).  Needs torch >= 2.4; importing this
package without torch is an ImportError naming the install."""

import importlib.util

if importlib.util.find_spec("torch") is None:               # pragma: no cover - depends on env
    raise ImportError("baracuda_dsl.torch needs PyTorch >= 2.4 (pip install torch)")

from .attention import flash_attention
from .dropout import dropout
from .layers import embedding, swiglu
from .linear import linear
from .losses import linear_cross_entropy
from .modules import (Attention, CrossEntropyLoss, Dropout, Embedding, LayerNorm, Linear,
                      LinearCrossEntropyLoss, RMSNorm, SwiGLU)
from .norms import layer_norm, rms_norm
from .rope import rope, rope_tables
from .softmax import cross_entropy, log_softmax, softmax

__all__ = ["rms_norm", "layer_norm", "softmax", "log_softmax", "cross_entropy",
           "linear_cross_entropy", "linear", "embedding", "swiglu", "rope", "rope_tables",
           "dropout", "flash_attention", "RMSNorm", "LayerNorm", "CrossEntropyLoss",
           "LinearCrossEntropyLoss", "Linear", "Embedding", "SwiGLU", "Attention", "Dropout"]
