"""Select scaffolding shared by the loss plans (:mod:`.loss_row`, :mod:`.ctc`,
:mod:`.loss_pointwise`)."""

from __future__ import annotations

from ...dtypes import DType, float32, float64
from ...errors import InvalidProblemError
from ...plan import new_plan, resolve_pref
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


def loss_ct(dt: DType) -> DType:
    """The compute type of a loss in ``dt``: f64 for f64, f32 otherwise."""
    return float64 if dt is float64 else float32


def begin_loss_select(cls, desc, pref, arch_of):
    """The bare plan a loss ``select`` fills in; ``desc`` must be exactly ``cls._desc_type``
    (a subclass — e.g. the backward descriptor — is refused, InvalidProblemError)."""
    pref = resolve_pref(pref)
    if type(desc) is not cls._desc_type:
        raise InvalidProblemError(f"{cls.__name__} needs a {cls._desc_type.__name__}, got "
                                  f"{type(desc).__name__}")
    return new_plan(cls, desc, pref, arch_of)


def loss_sku(desc, arch, op: str, template, knobs: dict, **extra) -> KernelSku:
    """The LOSS KernelSku of ``op`` on ``template`` with ``knobs`` (math and accumulation in
    :func:`loss_ct`)."""
    ct = loss_ct(desc.dtype)
    pg = PrecisionGuarantee(math_precision=ct, accumulator=ct)
    return KernelSku(OpCategory.LOSS, op, desc.dtype, arch, BackendKind.CUTE_DSL, pg,
                     template=template.name, knobs=tuple(sorted(knobs.items())), **extra)


def loss_out_shape(desc) -> tuple:
    """(n,) for reduction none, () otherwise."""
    return (desc.n,) if desc.reduction == "none" else ()
