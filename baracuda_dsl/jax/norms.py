"""RMSNorm and LayerNorm for JAX on the normalization family's row-norm Plans, with
``jax.custom_vjp`` rules (deterministic backward Plans), so they work eagerly, under
``jax.jit``, ``jax.grad`` / ``jax.vjp`` and ``jax.vmap``.

Semantics: ``torch.nn.functional.rms_norm`` / ``layer_norm`` over the trailing
``len(normalized_shape)`` dims (``normalized_shape`` an int or a tuple; only its length is
used: the trailing dims of ``x`` are normalized and ``weight`` / ``bias`` must have their
shape); dtypes float32, float16, bfloat16, float64 (half types compute in float32).  The forward
saves the row statistics (``rstd``; LayerNorm also ``mean``: float32, float64 for float64
inputs) as residuals for the backward.  Gradients flow to ``x``, ``weight`` and ``bias``.

- ``jax.jit``: the Plans are selected at trace time (typed errors from
  ``baracuda_dsl.errors`` are raised there), the kernels run inside the compiled program on
  XLA's stream (``_core.call``).
- ``jax.vmap``: supported; the kernel runs once per batch element (sequential), so fold the
  batch into the leading dims instead where speed matters.
- Higher-order derivatives (grad of grad) are not supported (the backward is a kernel without
  its own rule).
- Empty inputs need no kernel: the results (and zero parameter gradients) are built directly.
"""

from __future__ import annotations

import functools
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..ops.normalization.row_norm import (LayerNormArgs, LayerNormBackwardArgs,
                                          LayerNormBackwardDescriptor, LayerNormBackwardPlan,
                                          LayerNormDescriptor, LayerNormPlan, RMSNormArgs,
                                          RMSNormBackwardArgs, RMSNormBackwardDescriptor,
                                          RMSNormBackwardPlan, RMSNormDescriptor, RMSNormPlan)
from ..plan import prod
from . import _core

SDS = jax.ShapeDtypeStruct


def _ndim_of(normalized_shape) -> int:
    return 1 if isinstance(normalized_shape, (int, np.integer)) else len(tuple(normalized_shape))


def _stats(x, k: int):
    return SDS((_core.rows_of(x.shape, k),), _core.stats_dtype(x.dtype))


# ------------------------------------------------------------------------------------ RMSNorm
def _rms_build(desc, vi, vo):
    x, w = vi[0], (vi[1] if desc.has_weight else None)
    return RMSNormArgs(x, vo[0], weight=w, rstd=vo[1])


def _rms_bw_build(desc, vi, vo):
    dy, x, rstd = vi[:3]
    w = vi[3] if desc.has_weight else None
    return RMSNormBackwardArgs(dy, x, rstd, vo[0], weight=w,
                               dweight=vo[1] if desc.has_weight else None)


def rms_norm_fwd(x, weight, normalized_ndim: int, eps: float):
    """(y, rstd): ``y = x · rstd · weight``, ``rstd = 1/sqrt(mean(x²) + eps)`` per row (one
    Plan run; no autodiff rule of its own — :func:`rms_norm` has it)."""
    p = _core.plan(RMSNormPlan, RMSNormDescriptor(tuple(x.shape), normalized_ndim,
                                                  _core.bdtype(x.dtype), float(eps),
                                                  weight is not None))
    outs = (SDS(x.shape, x.dtype), _stats(x, normalized_ndim))
    if prod(x.shape) == 0:
        return tuple(jnp.zeros(o.shape, o.dtype) for o in outs)
    ins = (x,) if weight is None else (x, weight)
    y, rstd = _core.call(p, _rms_build, outs, *ins)
    return y, rstd


def rms_norm_bwd(dy, x, rstd, weight, normalized_ndim: int):
    """(dx, dweight) of :func:`rms_norm_fwd` (dweight None without a weight)."""
    p = _core.plan(RMSNormBackwardPlan, RMSNormBackwardDescriptor(
        tuple(x.shape), normalized_ndim, _core.bdtype(x.dtype), weight is not None))
    outs = [SDS(x.shape, x.dtype)]
    if weight is not None:
        outs.append(SDS(weight.shape, weight.dtype))
    if prod(x.shape) == 0:
        res = [jnp.zeros(o.shape, o.dtype) for o in outs]
    else:
        ins = (dy.astype(x.dtype), x, rstd) + (() if weight is None else (weight,))
        res = _core.call(p, _rms_bw_build, outs, *ins)
    return res[0], (res[1] if weight is not None else None)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def _rms(x, weight, k, eps):
    return rms_norm_fwd(x, weight, k, eps)[0]


def _rms_f(x, weight, k, eps):
    y, rstd = rms_norm_fwd(x, weight, k, eps)
    return y, (x, weight, rstd)


def _rms_b(k, eps, res, dy):
    x, weight, rstd = res
    return rms_norm_bwd(dy, x, rstd, weight, k)


_rms.defvjp(_rms_f, _rms_b)


def rms_norm(x, normalized_shape, weight=None, eps: Optional[float] = None):
    """``torch.nn.functional.rms_norm`` on the baracuda kernels, differentiable (``eps=None``:
    the dtype's machine epsilon, as torch)."""
    k = _ndim_of(normalized_shape)
    if eps is None:     # a non-float dtype gets the Plan's UnsupportedError, not finfo's
        eps = float(jnp.finfo(x.dtype).eps) if jnp.issubdtype(x.dtype, jnp.floating) else 0.0
    return _rms(x, weight, k, float(eps))


# ---------------------------------------------------------------------------------- LayerNorm
def _ln_build(desc, vi, vo):
    it = iter(vi[1:])
    w = next(it) if desc.has_weight else None
    b = next(it) if desc.has_bias else None
    return LayerNormArgs(vi[0], vo[0], weight=w, bias=b, mean=vo[1], rstd=vo[2])


def _ln_bw_build(desc, vi, vo):
    dy, x, mean, rstd = vi[:4]
    w = vi[4] if desc.has_weight else None
    it = iter(vo[1:])
    dw = next(it) if desc.has_weight else None
    db = next(it) if desc.has_bias else None
    return LayerNormBackwardArgs(dy, x, mean, rstd, vo[0], weight=w, dweight=dw, dbias=db)


def layer_norm_fwd(x, weight, bias, normalized_ndim: int, eps: float):
    """(y, mean, rstd): ``y = (x − mean) · rstd · weight + bias`` per row (biased variance)."""
    p = _core.plan(LayerNormPlan, LayerNormDescriptor(tuple(x.shape), normalized_ndim,
                                                      _core.bdtype(x.dtype), float(eps),
                                                      weight is not None, bias is not None))
    st = _stats(x, normalized_ndim)
    outs = (SDS(x.shape, x.dtype), st, st)
    if prod(x.shape) == 0:
        return tuple(jnp.zeros(o.shape, o.dtype) for o in outs)
    ins = (x,) + tuple(t for t in (weight, bias) if t is not None)
    y, mean, rstd = _core.call(p, _ln_build, outs, *ins)
    return y, mean, rstd


def layer_norm_bwd(dy, x, mean, rstd, weight, bias, normalized_ndim: int):
    """(dx, dweight, dbias) of :func:`layer_norm_fwd` (None for an absent parameter; ``bias``
    only says whether there was one)."""
    has_b = bias is not None
    p = _core.plan(LayerNormBackwardPlan, LayerNormBackwardDescriptor(
        tuple(x.shape), normalized_ndim, _core.bdtype(x.dtype), weight is not None, has_b))
    outs = [SDS(x.shape, x.dtype)]
    for t in (weight, bias):
        if t is not None:
            outs.append(SDS(t.shape, t.dtype))
    if prod(x.shape) == 0:
        res = [jnp.zeros(o.shape, o.dtype) for o in outs]
    else:
        ins = (dy.astype(x.dtype), x, mean, rstd) + (() if weight is None else (weight,))
        res = _core.call(p, _ln_bw_build, outs, *ins)
    it = iter(res[1:])
    dw = next(it) if weight is not None else None
    db = next(it) if has_b else None
    return res[0], dw, db


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4))
def _ln(x, weight, bias, k, eps):
    return layer_norm_fwd(x, weight, bias, k, eps)[0]


def _ln_f(x, weight, bias, k, eps):
    y, mean, rstd = layer_norm_fwd(x, weight, bias, k, eps)
    return y, (x, weight, bias, mean, rstd)


def _ln_b(k, eps, res, dy):
    x, weight, bias, mean, rstd = res
    return layer_norm_bwd(dy, x, mean, rstd, weight, bias, k)


_ln.defvjp(_ln_f, _ln_b)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """``torch.nn.functional.layer_norm`` on the baracuda kernels, differentiable."""
    return _ln(x, weight, bias, _ndim_of(normalized_shape), float(eps))


__all__ = ["rms_norm", "layer_norm", "rms_norm_fwd", "rms_norm_bwd", "layer_norm_fwd",
           "layer_norm_bwd"]
