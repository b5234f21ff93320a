"""The elementwise family: Every unary / binary / ternary element-wise op of the array API and the
ML activations, casts, forward and backward, on one kernel template."""

from .elementwise import (ElementwiseArgs, ElementwiseDescriptor, ElementwisePlan, broadcast_shapes,
                          wired_dtypes)
from .families import (AffineBackwardPlan, AffinePlan, BinaryBackwardPlan, BinaryCmpPlan,
                       BinaryParamPlan, BinaryPlan, CastPlan, ElementwiseBackwardArgs,
                       ElementwiseBackwardDescriptor, ElementwiseBackwardPlan,
                       GatedActivationBackwardPlan, GatedActivationPlan, PReluBackwardPlan,
                       PReluPlan, TernaryBackwardPlan, TernaryPlan, UnaryBackwardPlan,
                       UnaryParamBackwardPlan, UnaryParamPlan, UnaryPlan, WhereBackwardPlan,
                       WherePlan, cast_backward)

__all__ = [
    "ElementwiseArgs", "ElementwiseDescriptor", "ElementwisePlan", "broadcast_shapes",
    "wired_dtypes", "AffineBackwardPlan", "AffinePlan", "BinaryBackwardPlan", "BinaryCmpPlan",
    "BinaryParamPlan", "BinaryPlan", "CastPlan", "ElementwiseBackwardArgs",
    "ElementwiseBackwardDescriptor", "ElementwiseBackwardPlan", "GatedActivationBackwardPlan",
    "GatedActivationPlan", "PReluBackwardPlan", "PReluPlan", "TernaryBackwardPlan", "TernaryPlan",
    "UnaryBackwardPlan", "UnaryParamBackwardPlan", "UnaryParamPlan", "UnaryPlan",
    "WhereBackwardPlan", "WherePlan", "cast_backward"
]
