"""The loss family's share of the default prebuild set (:mod:`baracuda_dsl.jit.tiers`): cross
entropy over class indices (plain, label smoothing, NLL) and the common pointwise losses; soft
targets (class probabilities) and the rarer pointwise losses compile on first use."""

from ...jit.tiers import core_rule

#: pointwise losses of the core set (``fin`` adds the per-CTA partials of a sum / mean)
CORE_POINTWISE = frozenset(("mse", "l1", "huber", "smooth_l1", "bce", "bce_logits", "kl_div",
                            "kl_div_log", "fin"))


@core_rule("loss_pointwise")
def pointwise_core(knobs, arch: str) -> bool:
    """See :data:`CORE_POINTWISE`."""
    return knobs.op in CORE_POINTWISE


@core_rule("cross_entropy_fw", "cross_entropy_bw")
def cross_entropy_core(knobs, arch: str) -> bool:
    """Class-index targets; soft targets (mode ``prob``) on first use."""
    return knobs.mode != "prob"
