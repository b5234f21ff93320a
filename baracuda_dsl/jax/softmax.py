"""Softmax / log-softmax and class-index cross-entropy for JAX on the softmax and losses
families' row Plans, with ``jax.custom_vjp`` rules.

- ``softmax(x, axis=-1)`` / ``log_softmax(x, axis=-1)``: ``jax.nn.softmax`` / ``log_softmax``
  over one axis; the backward runs from the saved output ``y`` (``dx = y·(dy − Σ dy·y)``,
  log: ``dx = dy − exp(y)·Σ dy``).  An axis other than the last is moved last around the op.
- ``cross_entropy(logits (n, c), target (n,) int32 / int64, weight (c,) or None,
  ignore_index=-100, reduction="mean", label_smoothing=0.0)``:
  ``torch.nn.functional.cross_entropy`` for class-index targets; the loss is (n,) for
  ``"none"``, else 0-d, in the logits dtype.  The forward saves ``lse`` (n,) and the total
  weight (float32; float64 for float64) for the backward.  Gradients flow to ``logits`` only:
  ``target`` is integer (a float0 cotangent) and the class ``weight`` is a constant
  (``jax.lax.stop_gradient``).  A target outside [0, c) other than ``ignore_index`` cannot be
  reported from inside a compiled program: what it yields is unspecified (check targets first).

dtypes float32, float16, bfloat16, float64 (half types compute in float32).  ``jax.jit`` (Plans
selected at trace time, typed errors there), ``jax.grad`` and ``jax.vmap`` (one kernel run per
batch element) work; higher-order derivatives do not.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ..ops.losses.cross_entropy import (CrossEntropyArgs, CrossEntropyBackwardArgs,
                                        CrossEntropyBackwardDescriptor,
                                        CrossEntropyBackwardPlan, CrossEntropyDescriptor,
                                        CrossEntropyPlan)
from ..ops.softmax.softmax import (SoftmaxArgs, SoftmaxBackwardArgs, SoftmaxBackwardDescriptor,
                                   SoftmaxBackwardPlan, SoftmaxDescriptor, SoftmaxPlan)
from ..plan import prod
from . import _core

SDS = jax.ShapeDtypeStruct


# ------------------------------------------------------------------------------------ softmax
def _sm_build(desc, vi, vo):
    return SoftmaxArgs(vi[0], vo[0])


def _sm_bw_build(desc, vi, vo):
    return SoftmaxBackwardArgs(vi[0], vi[1], vo[0])


def softmax_fwd(x, log: bool):
    """softmax (``log=False``) or log_softmax of ``x`` along its last dim (one Plan run)."""
    p = _core.plan(SoftmaxPlan, SoftmaxDescriptor(tuple(x.shape), _core.bdtype(x.dtype), -1,
                                                  bool(log)))
    if prod(x.shape) == 0:
        return jnp.zeros(x.shape, x.dtype)
    return _core.call(p, _sm_build, (SDS(x.shape, x.dtype),), x)[0]


def softmax_bwd(dy, y, log: bool):
    """dx of :func:`softmax_fwd` from its output ``y``."""
    p = _core.plan(SoftmaxBackwardPlan, SoftmaxBackwardDescriptor(
        tuple(y.shape), _core.bdtype(y.dtype), -1, bool(log)))
    if prod(y.shape) == 0:
        return jnp.zeros(y.shape, y.dtype)
    return _core.call(p, _sm_bw_build, (SDS(y.shape, y.dtype),), dy.astype(y.dtype), y)[0]


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def _sm(x, log):
    return softmax_fwd(x, log)


def _sm_f(x, log):
    y = softmax_fwd(x, log)
    return y, y


def _sm_b(log, y, dy):
    return (softmax_bwd(dy, y, log),)


_sm.defvjp(_sm_f, _sm_b)


def _along(x, axis: int, log: bool):
    nd = x.ndim
    if nd == 0:
        return _sm(x.reshape(1), log).reshape(())
    axis = int(axis) % nd
    if axis == nd - 1:
        return _sm(x, log)
    return jnp.moveaxis(_sm(jnp.moveaxis(x, axis, -1), log), -1, axis)


def softmax(x, axis: int = -1):
    """``jax.nn.softmax(x, axis)`` (one axis) on the baracuda kernels, differentiable."""
    return _along(x, axis, False)


def log_softmax(x, axis: int = -1):
    """``jax.nn.log_softmax(x, axis)`` (one axis) on the baracuda kernels, differentiable."""
    return _along(x, axis, True)


# ------------------------------------------------------------------------------ cross entropy
def _ce_desc(cls, logits, target, has_weight, reduction, ignore_index, label_smoothing):
    n, c = logits.shape
    return cls(int(n), int(c), _core.bdtype(logits.dtype), "index", reduction,
               int(ignore_index), float(label_smoothing), bool(has_weight),
               _core.bdtype(target.dtype))


def _ce_build(desc, vi, vo):
    w = vi[2] if desc.has_weight else None
    return CrossEntropyArgs(vi[0], vi[1], vo[0], weight=w, lse=vo[1],
                            total_weight=vo[2] if desc.reduction != "none" else None)


def _ce_bw_build(desc, vi, vo):
    logits, target, lse, g = vi[:4]
    rest = iter(vi[4:])
    w = next(rest) if desc.has_weight else None
    tw = next(rest) if desc.reduction != "none" else None
    return CrossEntropyBackwardArgs(logits, target, lse, g, vo[0], weight=w, total_weight=tw)


def cross_entropy_fwd(logits, target, weight, reduction: str, ignore_index: int,
                      label_smoothing: float):
    """(loss, lse, total_weight) of class-index cross-entropy over logits (n, c) (one Plan
    run); ``total_weight`` is a (1,) array, zero for reduction ``"none"``."""
    p = _core.plan(CrossEntropyPlan, _ce_desc(CrossEntropyDescriptor, logits, target,
                                              weight is not None, reduction, ignore_index,
                                              label_smoothing))
    n = int(logits.shape[0])
    st = _core.stats_dtype(logits.dtype)
    loss_t = SDS((n,) if reduction == "none" else (), logits.dtype)
    if n == 0:           # torch: "none" → empty, "sum" → 0, "mean" → nan (0 / 0)
        fill = np.nan if reduction == "mean" else 0.0
        return (jnp.full(loss_t.shape, fill, loss_t.dtype), jnp.zeros((0,), st),
                jnp.zeros((1,), st))
    outs = [loss_t, SDS((n,), st)]
    if reduction != "none":
        outs.append(SDS((1,), st))
    ins = (logits, target) + (() if weight is None else (weight,))
    res = _core.call(p, _ce_build, outs, *ins)
    tw = res[2] if reduction != "none" else jnp.zeros((1,), st)
    return res[0], res[1], tw


def cross_entropy_bwd(grad_loss, logits, target, weight, lse, total_weight, reduction: str,
                      ignore_index: int, label_smoothing: float):
    """d logits of :func:`cross_entropy_fwd`."""
    p = _core.plan(CrossEntropyBackwardPlan, _ce_desc(CrossEntropyBackwardDescriptor, logits,
                                                      target, weight is not None, reduction,
                                                      ignore_index, label_smoothing))
    if prod(logits.shape) == 0:
        return jnp.zeros(logits.shape, logits.dtype)
    g = grad_loss.astype(logits.dtype).reshape(grad_loss.shape if reduction == "none" else (1,))
    ins = [logits, target, lse, g]
    if weight is not None:
        ins.append(weight)
    if reduction != "none":
        ins.append(total_weight)
    return _core.call(p, _ce_bw_build, (SDS(logits.shape, logits.dtype),), *ins)[0]


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5))
def _ce(logits, target, weight, reduction, ignore_index, label_smoothing):
    return cross_entropy_fwd(logits, target, weight, reduction, ignore_index,
                             label_smoothing)[0]


def _ce_f(logits, target, weight, reduction, ignore_index, label_smoothing):
    loss, lse, tw = cross_entropy_fwd(logits, target, weight, reduction, ignore_index,
                                      label_smoothing)
    return loss, (logits, target, weight, lse, tw)


def _ce_b(reduction, ignore_index, label_smoothing, res, dloss):
    logits, target, weight, lse, tw = res
    dx = cross_entropy_bwd(dloss, logits, target, weight, lse, tw, reduction, ignore_index,
                           label_smoothing)
    dt = np.zeros(target.shape, dtype=jax.dtypes.float0)
    dw = None if weight is None else jnp.zeros(weight.shape, weight.dtype)
    return dx, dt, dw


_ce.defvjp(_ce_f, _ce_b)


def cross_entropy(logits, target, weight=None, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0):
    """``torch.nn.functional.cross_entropy`` for (n, c) logits and (n,) class indices, on the
    baracuda kernels, differentiable in ``logits`` (``weight`` is held constant)."""
    if weight is not None:
        weight = jax.lax.stop_gradient(weight)
    return _ce(logits, target, weight, str(reduction), int(ignore_index),
               float(label_smoothing))


__all__ = ["softmax", "log_softmax", "cross_entropy", "softmax_fwd", "softmax_bwd",
           "cross_entropy_fwd", "cross_entropy_bwd"]
