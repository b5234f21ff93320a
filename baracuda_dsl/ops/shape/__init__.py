"""The shape family: Copies and layout: repeat, strided copy, permute, contiguize, concat, flip,
fill, write-slice, pad, roll, triu / tril, forward and backward."""

from .layout import (ConcatArgs, ConcatBackwardArgs, ConcatBackwardPlan, ConcatDescriptor,
                     ConcatPlan, ContiguizeArgs, ContiguizeDescriptor, ContiguizePlan, FillArgs,
                     FillDescriptor, FillPlan, FlipArgs, FlipBackwardArgs, FlipBackwardPlan,
                     FlipDescriptor, FlipPlan, PermuteArgs, PermuteBackwardArgs,
                     PermuteBackwardPlan, PermuteDescriptor, PermutePlan, WriteSliceArgs,
                     WriteSliceDescriptor, WriteSlicePlan, contiguize)
from .pad import (PadArgs, PadBackwardArgs, PadBackwardPlan, PadDescriptor, PadPlan, PadTuning,
                  RollArgs, RollBackwardArgs, RollBackwardPlan, RollDescriptor, RollPlan, TriArgs,
                  TriBackwardArgs, TriBackwardPlan, TriDescriptor, TriPlan, TrilPlan, TriuPlan)
from .repeat import (RepeatArgs, RepeatBackwardArgs, RepeatBackwardDescriptor, RepeatBackwardPlan,
                     RepeatDescriptor, RepeatPlan, StridedCopyArgs, StridedCopyDescriptor,
                     StridedCopyPlan, repeat_out_shape, strided_copy)

__all__ = [
    "ConcatArgs", "ConcatBackwardArgs", "ConcatBackwardPlan", "ConcatDescriptor", "ConcatPlan",
    "ContiguizeArgs", "ContiguizeDescriptor", "ContiguizePlan", "FillArgs", "FillDescriptor",
    "FillPlan", "FlipArgs", "FlipBackwardArgs", "FlipBackwardPlan", "FlipDescriptor", "FlipPlan",
    "PermuteArgs", "PermuteBackwardArgs", "PermuteBackwardPlan", "PermuteDescriptor",
    "PermutePlan", "WriteSliceArgs", "WriteSliceDescriptor", "WriteSlicePlan", "contiguize",
    "PadArgs", "PadBackwardArgs", "PadBackwardPlan", "PadDescriptor", "PadPlan", "PadTuning",
    "RollArgs",
    "RollBackwardArgs", "RollBackwardPlan", "RollDescriptor", "RollPlan", "TriArgs",
    "TriBackwardArgs", "TriBackwardPlan", "TriDescriptor", "TriPlan", "TrilPlan", "TriuPlan",
    "RepeatArgs", "RepeatBackwardArgs", "RepeatBackwardDescriptor", "RepeatBackwardPlan",
    "RepeatDescriptor", "RepeatPlan", "StridedCopyArgs", "StridedCopyDescriptor",
    "StridedCopyPlan", "repeat_out_shape", "strided_copy"
]
