"""``linear(x, weight, bias)`` (``torch.nn.functional.linear``: ``y = x @ weightᵀ + bias``) and
``matmul(a, b)`` for 2-d operands, for JAX on the GEMM family's ``GemmPlan``, with
``jax.custom_vjp`` rules.

Forward: one GEMM over x's leading dims folded into M, ``weightᵀ`` read as a transposed view of
the (out, in) buffer (no copy), the bias fused in the epilogue.  Backward: ``dx = dy @ w`` and
``dw = dyᵀ @ x`` (two GEMMs, ``dyᵀ`` a transposed view), ``db = Σ dy`` over the rows (a
jax.numpy sum).  dtypes float16 / bfloat16 (tensor cores, float32 accumulate), float32 (strict
IEEE), float64.  ``jax.jit`` (Plans selected at trace time), ``jax.grad`` and ``jax.vmap`` (one
GEMM per batch element) work; higher-order derivatives do not.  Empty problems (M, N or K = 0)
need no kernel.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..ops.gemm.gemm import GemmArgs, GemmDescriptor, GemmPlan
from ..plan import prod
from . import _core

SDS = jax.ShapeDtypeStruct


def _mat(v, rows: int, cols: int, transposed: bool = False):
    """A dense row-major buffer as a (rows, cols) matrix; ``transposed``: the buffer holds the
    (cols, rows) matrix and this is its transposed view."""
    return v.with_shape((rows, cols), (1, rows) if transposed else (cols, 1))


def _nt_build(desc, vi, vo):          # c = a @ bᵀ (+ bias): a (m, k), b stored (n, k)
    m, n, k = desc.m, desc.n, desc.k
    bias = vi[2] if desc.epilogue == "bias" else None
    return GemmArgs(_mat(vi[0], m, k), _mat(vi[1], k, n, True), _mat(vo[0], m, n), bias=bias)


def _nn_build(desc, vi, vo):          # c = a @ b: a (m, k), b (k, n)
    m, n, k = desc.m, desc.n, desc.k
    return GemmArgs(_mat(vi[0], m, k), _mat(vi[1], k, n), _mat(vo[0], m, n))


def _tn_build(desc, vi, vo):          # c = aᵀ @ b: a stored (k, m), b (k, n)
    m, n, k = desc.m, desc.n, desc.k
    return GemmArgs(_mat(vi[0], m, k, True), _mat(vi[1], k, n), _mat(vo[0], m, n))


_BUILDS = {"nt": _nt_build, "nn": _nn_build, "tn": _tn_build}


def gemm(a, b, m: int, n: int, k: int, layout: str = "nn", bias=None):
    """The (m, n) product of two dense operands, one GemmPlan run: ``layout`` ``"nn"``:
    a (m, k) @ b (k, n); ``"nt"``: a (m, k) @ bᵀ with b stored (n, k); ``"tn"``: aᵀ @ b with
    a stored (k, m).  ``bias`` (n,) is fused (``"nt"`` only).  Any leading dims of the operands
    are folded (they must hold the elements of the stated matrices)."""
    if bias is not None and layout != "nt":
        raise ValueError("gemm: a fused bias is wired for the 'nt' layout only")
    p = _core.plan(GemmPlan, GemmDescriptor(int(m), int(n), int(k), _core.bdtype(a.dtype),
                                            epilogue="bias" if bias is not None else "identity"))
    if m == 0 or n == 0 or k == 0:
        c = jnp.zeros((m, n), a.dtype)
        return c + bias.astype(a.dtype) if bias is not None else c
    ins = (a, b) + (() if bias is None else (bias,))
    return _core.call(p, _BUILDS[layout], (SDS((m, n), a.dtype),), *ins)[0]


@jax.custom_vjp
def _linear(x, weight, bias):
    return _linear_f(x, weight, bias)[0]


def _linear_f(x, weight, bias):
    n_out, n_in = weight.shape
    m = prod(x.shape[:-1])
    y = gemm(x, weight, m, n_out, n_in, "nt", bias)
    return y.reshape(tuple(x.shape[:-1]) + (n_out,)), (x, weight, bias)


def _linear_b(res, dy):
    x, weight, bias = res
    n_out, n_in = weight.shape
    m = prod(x.shape[:-1])
    dy = dy.astype(x.dtype)
    dx = gemm(dy, weight, m, n_in, n_out, "nn").reshape(x.shape)
    dw = gemm(dy, x, n_out, n_in, m, "tn")
    db = None
    if bias is not None:
        db = jnp.sum(dy.reshape(m, n_out).astype(jnp.float32 if x.dtype != jnp.float64
                                                 else jnp.float64), axis=0).astype(bias.dtype)
    return dx, dw, db


_linear.defvjp(_linear_f, _linear_b)


def linear(x, weight, bias=None):
    """``torch.nn.functional.linear`` on the baracuda GEMM kernels, differentiable: x
    (..., in), weight (out, in), bias (out,) → (..., out)."""
    if x.ndim < 1 or weight.ndim != 2 or x.shape[-1] != weight.shape[1]:
        raise ValueError(f"linear: x {tuple(x.shape)} and weight {tuple(weight.shape)} do not "
                         f"match (weight must be (out, in) with in = x.shape[-1])")
    return _linear(x, weight, bias)


@jax.custom_vjp
def _matmul(a, b):
    return gemm(a, b, a.shape[0], b.shape[1], a.shape[1], "nn")


def _matmul_f(a, b):
    return _matmul(a, b), (a, b)


def _matmul_b(res, dc):
    a, b = res
    m, k = a.shape
    n = b.shape[1]
    dc = dc.astype(a.dtype)
    return gemm(dc, b, m, k, n, "nt"), gemm(a, dc, k, n, m, "tn")


_matmul.defvjp(_matmul_f, _matmul_b)


def matmul(a, b):
    """``a @ b`` for 2-d ``a`` (m, k) and ``b`` (k, n) of one dtype on the baracuda GEMM
    kernels, differentiable."""
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} are not "
                         f"(m, k) and (k, n)")
    return _matmul(a, b)


__all__ = ["linear", "matmul", "gemm"]
