"""JAX adapters: the library's Plans as differentiable JAX functions.

Each op is a ``jax.custom_vjp`` function whose forward and backward each run a Plan inside the
traced program through ``jax.experimental.buffer_callback``: XLA hands the callback its device
buffers and CUDA stream, the Plan runs on them with no copy (``_core.py``).  So the ops work
eagerly, under ``jax.jit`` (Plans selected — and unsupported problems raised as the typed errors
of ``baracuda_dsl.errors`` — at trace time), ``jax.grad`` / ``jax.vjp`` and ``jax.vmap`` (one
kernel run per batch element).  Arrays must live on a CUDA device.  Wired (forward and
backward): RMSNorm, LayerNorm, softmax / log_softmax, class-index cross-entropy, linear and
2-d matmul (GEMM), flash attention (GQA, causal).

Needs jax >= 0.7 with a CUDA plugin (``jax.experimental.buffer_callback``); importing this package
without jax is an ImportError naming the install.  ``use_preference(PlanPreference(...))`` sets
the PlanPreference used while tracing (e.g. an arch override to trace or lower without a GPU).
"""

import importlib.util

if importlib.util.find_spec("jax") is None:                 # pragma: no cover - depends on env
    raise ImportError("baracuda_dsl.jax needs JAX with its CUDA plugin "
                      "(pip install 'jax[cuda13]', or 'jax[cuda12]')")

from ._core import preference, use_preference
from .attention import flash_attention
from .linear import linear, matmul
from .norms import layer_norm, rms_norm
from .softmax import cross_entropy, log_softmax, softmax

__all__ = ["rms_norm", "layer_norm", "softmax", "log_softmax", "cross_entropy", "linear",
           "matmul", "flash_attention", "preference", "use_preference"]
