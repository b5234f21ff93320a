"""The normalization family: RMSNorm and LayerNorm (row norms), BatchNorm, GroupNorm and
InstanceNorm (channel norms), forward and backward."""

from .channel_norm import (BatchNormArgs, BatchNormBackwardArgs, BatchNormBackwardDescriptor,
                           BatchNormBackwardPlan, BatchNormDescriptor, BatchNormPlan,
                           ChannelNormTuning, GroupNormArgs,
                           GroupNormBackwardArgs, GroupNormBackwardDescriptor,
                           GroupNormBackwardPlan, GroupNormDescriptor, GroupNormPlan,
                           InstanceNormArgs, InstanceNormBackwardArgs,
                           InstanceNormBackwardDescriptor, InstanceNormBackwardPlan,
                           InstanceNormDescriptor, InstanceNormPlan)
from .row_norm import (LayerNormArgs, LayerNormBackwardArgs, LayerNormBackwardDescriptor,
                       LayerNormBackwardPlan, LayerNormDescriptor, LayerNormPlan, RMSNormArgs,
                       RMSNormBackwardArgs, RMSNormBackwardDescriptor, RMSNormBackwardPlan,
                       RMSNormDescriptor, RMSNormPlan, RowNormTuning)

__all__ = [
    "BatchNormArgs", "BatchNormBackwardArgs", "BatchNormBackwardDescriptor",
    "BatchNormBackwardPlan", "BatchNormDescriptor", "BatchNormPlan", "ChannelNormTuning",
    "GroupNormArgs",
    "GroupNormBackwardArgs", "GroupNormBackwardDescriptor", "GroupNormBackwardPlan",
    "GroupNormDescriptor", "GroupNormPlan", "InstanceNormArgs", "InstanceNormBackwardArgs",
    "InstanceNormBackwardDescriptor", "InstanceNormBackwardPlan", "InstanceNormDescriptor",
    "InstanceNormPlan", "LayerNormArgs", "LayerNormBackwardArgs", "LayerNormBackwardDescriptor",
    "LayerNormBackwardPlan", "LayerNormDescriptor", "LayerNormPlan", "RMSNormArgs",
    "RMSNormBackwardArgs", "RMSNormBackwardDescriptor", "RMSNormBackwardPlan", "RMSNormDescriptor",
    "RMSNormPlan", "RowNormTuning"
]
