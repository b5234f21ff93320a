"""The reduction family's share of the default prebuild set (:mod:`baracuda_dsl.jit.tiers`):
integer and bool data only for sums, maxima / minima and arg-reductions; integer products
compile on first use."""

from ...jit.tiers import core_rule


@core_rule("axis_reduce")
def axis_reduce_core(knobs, arch: str) -> bool:
    """See the module docstring."""
    return knobs.dtype not in ("i32", "i64", "bool") or knobs.op != "prod"
