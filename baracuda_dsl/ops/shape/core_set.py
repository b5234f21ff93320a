"""The shape family's share of the default prebuild set (:mod:`baracuda_dsl.jit.tiers`): the
64-bit-index ("wide") pad / triangle variants for tensors past 2³¹ elements and 16-byte
elements (complex128) compile on first use."""

from ...jit.tiers import core_rule


@core_rule("pad_remap", "tri_mask")
def remap_core(knobs, arch: str) -> bool:
    """See the module docstring."""
    return not getattr(knobs, "wide", 0) and getattr(knobs, "itemsize", 0) != 16
