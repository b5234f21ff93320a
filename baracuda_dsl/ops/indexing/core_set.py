"""The indexing family's share of the default prebuild set (:mod:`baracuda_dsl.jit.tiers`): the
64-bit-index ("wide") gather / scatter variants for tensors past 2³¹ elements and 16-byte
elements (complex128) compile on first use."""

from ...jit.tiers import core_rule


@core_rule("gather_axis")
def gather_axis_core(knobs, arch: str) -> bool:
    """See the module docstring."""
    return not knobs.wide and knobs.itemsize != 16
