"""Plan families. Each module holds one family's Descriptors, Args and Plans (FW and BW)."""

from .normalization import (LayerNormArgs, LayerNormBackwardArgs, LayerNormBackwardDescriptor,
                            LayerNormBackwardPlan, LayerNormDescriptor, LayerNormPlan,
                            RMSNormArgs, RMSNormBackwardArgs, RMSNormBackwardDescriptor,
                            RMSNormBackwardPlan, RMSNormDescriptor, RMSNormPlan)

__all__ = [
    "RMSNormDescriptor", "RMSNormArgs", "RMSNormPlan",
    "RMSNormBackwardDescriptor", "RMSNormBackwardArgs", "RMSNormBackwardPlan",
    "LayerNormDescriptor", "LayerNormArgs", "LayerNormPlan",
    "LayerNormBackwardDescriptor", "LayerNormBackwardArgs", "LayerNormBackwardPlan",
]
