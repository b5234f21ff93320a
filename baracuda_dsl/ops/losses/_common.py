"""What the loss plans of :mod:`.loss_row`, :mod:`.ctc` and :mod:`.loss_pointwise` share: the
descriptor checks, the exact-descriptor rule their ``_plan`` opens with, the compute type and
the SKU record."""

from __future__ import annotations

from ...dtypes import DType, float32, float64
from ...errors import InvalidProblemError
from ...jit import freeze_knobs
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee

REDUCTIONS = ("none", "mean", "sum")


def check_int(v, name, who, lo=0):
    """InvalidProblemError unless ``v`` is an int (not a bool) >= ``lo``."""
    if not isinstance(v, int) or isinstance(v, bool) or v < lo:
        raise InvalidProblemError(f"{who}: {name} must be an int >= {lo}, got {v!r}")


def check_reduction(r, who):
    """InvalidProblemError unless ``r`` is one of :data:`REDUCTIONS`."""
    if r not in REDUCTIONS:
        raise InvalidProblemError(f"{who}: reduction must be one of {REDUCTIONS}, got {r!r}")


def check_exact_descriptor(plan) -> None:
    """InvalidProblemError unless ``plan.desc`` is exactly ``plan.descriptor``.  A loss's backward
    descriptor subclasses its forward one (same fields), so ``Plan.select``'s isinstance check
    alone would let a forward plan take a backward descriptor."""
    if type(plan.desc) is not plan.descriptor:
        raise InvalidProblemError(f"{type(plan).__name__} needs a {plan.descriptor.__name__}, "
                                  f"got {type(plan.desc).__name__}")


def loss_ct(dt: DType) -> DType:
    """The compute type of a loss in ``dt``: f64 for f64, f32 otherwise."""
    return float64 if dt is float64 else float32


def loss_sku(desc, arch, op: str, template, knobs, **extra) -> KernelSku:
    """The LOSS KernelSku of ``op`` on ``template`` with the knobs object ``knobs`` (math and
    accumulation in :func:`loss_ct`)."""
    ct = loss_ct(desc.dtype)
    pg = PrecisionGuarantee(math_precision=ct, accumulator=ct)
    return KernelSku(OpCategory.LOSS, op, desc.dtype, arch, BackendKind.CUTE_DSL, pg,
                     template=template.name, knobs=freeze_knobs(knobs), **extra)


def loss_out_shape(desc) -> tuple:
    """(n,) for reduction none, () otherwise."""
    return (desc.n,) if desc.reduction == "none" else ()
