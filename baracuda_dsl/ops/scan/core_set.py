"""The scan family's share of the default prebuild set (:mod:`baracuda_dsl.jit.tiers`): integer
and bool inputs only for cumulative sums (offsets, counts); their products, maxima and minima
compile on first use."""

from ...jit.tiers import core_rule


@core_rule("scan")
def scan_core(knobs, arch: str) -> bool:
    """See the module docstring."""
    return knobs.dtype not in ("i32", "i64", "bool") or knobs.op == "sum"
