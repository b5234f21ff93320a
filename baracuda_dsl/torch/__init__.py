"""PyTorch adapters (issue 22, in progress): the library's Plans as ``torch.library`` custom ops
(``torch.ops.baracuda.*``) with autograd and fake kernels — eager, autograd and
``torch.compile(fullgraph=True)`` — and drop-in ``torch.nn`` modules.  Wired so far: RMSNorm,
LayerNorm, softmax / log_softmax, class-index cross-entropy, linear, embedding, the SwiGLU gate and
flash attention (forward and backward).  Needs torch >= 2.4; importing this package without torch is an
ImportError naming the install."""

import importlib.util

if importlib.util.find_spec("torch") is None:               # pragma: no cover - depends on env
    raise ImportError("baracuda_dsl.torch needs PyTorch >= 2.4 (pip install torch)")

from .attention import flash_attention
from .layers import embedding, swiglu
from .linear import linear
from .modules import CrossEntropyLoss, Embedding, LayerNorm, Linear, RMSNorm, SwiGLU
from .norms import layer_norm, rms_norm
from .softmax import cross_entropy, log_softmax, softmax

__all__ = ["rms_norm", "layer_norm", "softmax", "log_softmax", "cross_entropy", "linear",
           "embedding", "swiglu", "flash_attention", "RMSNorm", "LayerNorm", "CrossEntropyLoss", "Linear",
           "Embedding", "SwiGLU"]
