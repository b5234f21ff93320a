"""The elementwise template's share of the default prebuild set (:mod:`baracuda_dsl.jit.tiers`):
the ML ops on contiguous operands, their strided / broadcast path for ops of two or more inputs
and for copies / casts, backward ops of the activations and of the broadcasting arithmetic.
Everything else compiles on first use."""

from ...jit.tiers import core_rule
from .specs.elementwise import OPS

#: forward ops of the core set: arithmetic, comparisons and logic, the exp / log family and the
#: activations of ML models
CORE_OPS = frozenset("""
    add subtract multiply divide negative abs square sqrt reciprocal pow maximum minimum clip where
    lerp fma addcmul addcdiv affine equal not_equal greater greater_equal less less_equal
    logical_and logical_or logical_not isfinite isnan isinf exp log log1p expm1 tanh sigmoid erf
    relu gelu gelu_tanh silu swiglu geglu glu reglu softplus leaky_relu elu mish hardswish
    hardsigmoid relu6 hardtanh prelu copy cast""".split())
#: core backward ops: the activations' and the broadcasting arithmetic's (others differentiate
#: through forward ops in the frameworks and compile on first use here)
CORE_BACKWARD = frozenset(f"{n}_bw" for n in """
    add multiply tanh sigmoid relu gelu gelu_tanh silu swiglu geglu glu reglu softplus leaky_relu
    elu mish hardswish hardsigmoid relu6 hardtanh prelu""".split())
#: ops that also run on int32 / int64 / bool data in the core set (index arithmetic, masks)
CORE_INT_OPS = frozenset("add subtract multiply maximum minimum equal not_equal greater "
                         "greater_equal less less_equal where copy cast".split())


@core_rule("elementwise")
def elementwise_core(knobs, arch: str) -> bool:
    """See the module docstring."""
    op = knobs.op
    if not (op in CORE_OPS or op in CORE_BACKWARD):
        return False
    base = op[:-3] if op.endswith("_bw") else op
    if {knobs.dtype, knobs.out} & {"i32", "i64", "bool"} and base not in CORE_INT_OPS \
            and not base.startswith("logical_"):
        return False
    return not (knobs.path == "s4" and OPS[base].nin < 2 and base not in ("copy", "cast"))
