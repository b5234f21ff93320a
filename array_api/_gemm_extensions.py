"""GEMM extensions (not in the standard): ``linear`` — torch.nn.functional.linear with an
activation fused into the GEMM epilogue, on :class:`~baracuda_dsl.ops.gemm.gemm.GemmPlan`
through the driver in ``_gemm`` (one launch; dtypes and precision as ``matmul``'s real floating
path)."""

from __future__ import annotations

from baracuda_dsl.errors import UnsupportedError
from baracuda_dsl.plan import prod

from ._array_object import Array
from ._creation_functions import zeros
from ._gemm import (COMPLEX_PART, GEMM_FLOAT_DTYPES, as_matrix, check_arrays, convert, gemm,
                    numeric_dtype, tensor_core_ready)
from ._linear_algebra_functions import matrix_transpose
from ._records import recorded

__all__ = ["linear"]

#: ``linear`` activations → GemmPlan bias epilogues
ACTIVATIONS = {None: "bias", "relu": "bias_relu", "gelu": "bias_gelu", "silu": "bias_silu"}


@recorded
def linear(x, w, bias=None, activation=None) -> Array:
    """``act(x @ wᵀ + bias)`` (torch.nn.functional.linear + a fused activation; extension):
    x (..., in), w (out, in), bias (out,) or None; ``activation`` None, "relu", "gelu" (erf
    form) or "silu", applied in the GEMM epilogue (one launch).  Real floating dtypes
    (float16 / bfloat16 on tensor cores with f32 accumulate, f32, f64); result dtype by
    promotion of x, w (and bias).  x's leading dims are folded into M (a view when they merge,
    else a dense copy)."""
    if activation not in ACTIVATIONS:
        raise UnsupportedError(f"linear: activation {activation!r} is not wired; wired: None, "
                               f"'relu', 'gelu', 'silu'")
    arrays = (x, w) if bias is None else (x, w, bias)
    check_arrays("linear", *arrays)
    dt = numeric_dtype("linear", *arrays)
    if dt in COMPLEX_PART:
        raise UnsupportedError("linear: complex dtypes are not wired; wired: float16, bfloat16, "
                               "float32, float64 (use matmul for complex)")
    if dt not in GEMM_FLOAT_DTYPES:
        raise TypeError(f"linear: only real floating-point dtypes are allowed, got {dt.name}")
    if w.ndim != 2:
        raise ValueError(f"linear: w must be 2-D (out, in), got shape {w.shape}")
    if x.ndim == 0:
        raise ValueError("linear: x must have at least one dimension")
    n_out, n_in = w.shape
    if x.shape[-1] != n_in:
        raise ValueError(f"linear: x's last dim {x.shape[-1]} != w's in-features {n_in}")
    if bias is not None and tuple(bias.shape) != (n_out,):
        raise ValueError(f"linear: bias must have shape ({n_out},), got {bias.shape}")
    lead = tuple(x.shape[:-1])
    out = Array._empty(lead + (n_out,), dt, x.device)
    if out.size == 0:
        return out
    a = tensor_core_ready(convert(as_matrix(x, list(range(x.ndim - 1)), [x.ndim - 1]), dt))
    b = tensor_core_ready(convert(matrix_transpose(w), dt))
    epi = ACTIVATIONS[activation]
    if bias is None and activation is None:
        epi, bv = "identity", None
    elif bias is None:
        bv = zeros((n_out,), dtype=dt, device=x.device)
    else:
        bv = convert(bias, dt)
    c = out._view(0, (prod(lead), n_out), (n_out, 1))
    gemm(a, b, c, epilogue=epi, bias=bv)
    return out
