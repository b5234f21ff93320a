"""Template spec of the pointwise losses: one CuTe DSL kernel for every loss whose value is a sum
(or mean) of independent per-element terms, forward and backward — an op table of formulas
(:mod:`baracuda_dsl.ops.losses.kernels.loss_pointwise` / ``loss_pointwise_bw``), not a kernel per loss.

A SKU is ``(op, dtype, mode)``:

``op``     a name of :data:`OPS` (``mse``, ``bce_logits``, ``gaussian_nll`` ...; variants selected
           at trace time: ``kl_div`` / ``kl_div_log``, ``poisson_nll`` / ``poisson_nll_log``)
``dtype``  f32, f16, bf16, f64 (half types compute in f32, f64 in f64)
``mode``   ``none``:   o0[i] = loss term i (the input dtype; ``multilabel_soft_margin`` writes the
                       compute type: the plan row-reduces it);
           ``reduce``: one compute-typed partial Σ of the CTA's loss terms → part[blockIdx]
                       (warp shuffles + one shared slot per warp, fixed order);
           ``bw``:     o_k[i] = g_i · scale · ∂loss_i/∂operand_k for the op's differentiable
                       operands (o1, o2 written when flags bit 2 / bit 4 is set; g is one scalar
                       when flags bit 3 is set);
           ``fin`` (op ``fin`` only): o0[0] = scale · Σ_p part[p] over the n partials (one CTA,
                       fixed order) — the second pass of a sum / mean.

Operands are dense flat arrays of n elements, 16-byte aligned (the plans densify anything else):
``a b c`` the loss's inputs in its order, ``w`` an optional weight (flags bit 0), ``pw`` an optional
pos_weight (flags bit 1), ``g`` the upstream gradient.  ``p0 p1`` the float parameters
(delta, beta, margin, eps, full), ``scale`` the reduction factor (1, 1/n, 1/batch, 1/C ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from ....jit import KernelTemplate, LaunchGeometry, params, register

THREADS = 256
WARPS = THREADS // 32
ILP = 4  # 16-byte vectors per thread and operand
DTYPES = ("f32", "f16", "bf16", "f64")
MODES = ("none", "reduce", "bw")
ITEMSIZE = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8}

# flags bits
HAS_W, HAS_PW, HAS_O1, G_SCALAR, HAS_O2 = 1, 2, 4, 8, 16


@dataclass(frozen=True)
class LossOp:
    """One pointwise loss: ``nin`` array inputs (2 or 3), the float parameters it reads
    (``params``: names of p0, p1), whether it takes a ``weight`` / ``pos_weight``, and the
    operands (indices into its inputs) the backward mode differentiates, in output order."""

    name: str
    nin: int = 2
    params: Tuple[str, ...] = ()
    weight: bool = False
    pos_weight: bool = False
    grads: Tuple[int, ...] = (0,)


OPS = {o.name: o for o in (
    LossOp("mse", grads=(0, 1)),
    LossOp("l1", grads=(0, 1)),
    LossOp("huber", params=("delta",), grads=(0, 1)),
    LossOp("smooth_l1", params=("beta",), grads=(0, 1)),
    LossOp("soft_margin"),
    LossOp("bce", weight=True),
    LossOp("bce_logits", weight=True, pos_weight=True),
    LossOp("kl_div", grads=(0, 1)),
    LossOp("kl_div_log", grads=(0, 1)),
    LossOp("poisson_nll", params=("eps", "full")),
    LossOp("poisson_nll_log", params=("eps", "full")),
    LossOp("gaussian_nll", nin=3, params=("eps", "full"), grads=(0, 1, 2)),
    LossOp("hinge_embedding", params=("margin",)),
    LossOp("margin_ranking", nin=3, params=("margin",), grads=(0, 1)),
    LossOp("multilabel_soft_margin", weight=True),
)}


def vec_width(dtype: str) -> int:
    """Elements per 16-byte vector."""
    return 16 // ITEMSIZE[dtype]


def per_block(dtype: str) -> int:
    """Elements one CTA covers (one partial per CTA in ``reduce`` mode)."""
    return THREADS * ILP * vec_width(dtype)


@dataclass(frozen=True)
class LossPointwiseKnobs:
    """A SKU of ``loss_pointwise``: ``op`` (a name of :data:`OPS`, or ``fin``), ``dtype``
    (:data:`DTYPES`), ``mode`` (:data:`MODES`, or ``fin`` with op ``fin``)."""

    op: str
    dtype: str
    mode: str


def finish_knobs(dtype: str) -> LossPointwiseKnobs:
    """The SKU that adds the per-CTA partials of a sum / mean (op and mode ``fin``)."""
    return LossPointwiseKnobs(op="fin", dtype=dtype, mode="fin")


def _space():
    for op in OPS:
        for dt in DTYPES:
            for mode in MODES:
                yield LossPointwiseKnobs(op=op, dtype=dt, mode=mode)
    for dt in DTYPES:
        yield finish_knobs(dt)


LOSS_POINTWISE = register(KernelTemplate(
    name="loss_pointwise",
    family="losses",
    module="baracuda_dsl.ops.losses.kernels.loss_pointwise",
    params=params("o0:ptr o1:ptr o2:ptr a:ptr b:ptr c:ptr w:ptr pw:ptr g:ptr part:ptr "
                  "n:i64 flags:i32 p0:f64 p1:f64 scale:f64"),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=WARPS * 8 + 64),
    knobs=LossPointwiseKnobs,
))
