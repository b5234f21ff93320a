"""The reduction family: Axis reductions (sum prod max min mean, argmax / argmin, norm2 logsumexp
var std, all / any / count_nonzero, trace, reduce-to) and their backward."""

from .composites import (BoolReduceDescriptor, BoolReducePlan, CountReducePlan, StatReducePlan,
                         TraceDescriptor, TracePlan)
from .reductions import (ArgReducePlan, ReduceArgs, ReduceDescriptor, ReducePlan,
                         ReduceToDescriptor, ReduceToPlan)
from .reductions_bw import (ReduceBackwardArgs, ReduceBackwardDescriptor, ReduceBackwardPlan)

__all__ = [
    "BoolReduceDescriptor", "BoolReducePlan", "CountReducePlan", "StatReducePlan",
    "TraceDescriptor", "TracePlan", "ArgReducePlan", "ReduceArgs", "ReduceDescriptor",
    "ReducePlan", "ReduceToDescriptor", "ReduceToPlan", "ReduceBackwardArgs",
    "ReduceBackwardDescriptor", "ReduceBackwardPlan"
]
