"""The segment family's share of the default prebuild set (:mod:`baracuda_dsl.jit.tiers`): the
sum / mean / max reductions of embedding bags and scatter-reduce, with int64 segment ids (the
frameworks' index type); int32 ids and min / prod compile on first use."""

from ...jit.tiers import core_rule


@core_rule("segment_reduce")
def segment_reduce_core(knobs, arch: str) -> bool:
    """See the module docstring."""
    return knobs.op in ("sum", "mean", "max") and knobs.index == "i64"
