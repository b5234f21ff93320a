"""The softmax family: softmax, log_softmax, sparsemax, gumbel-softmax, forward and backward."""

from .softmax import (SoftmaxArgs, SoftmaxBackwardArgs, SoftmaxBackwardDescriptor,
                      SoftmaxBackwardPlan, SoftmaxDescriptor, SoftmaxPlan, SoftmaxTuning,
                      SparsemaxArgs, SparsemaxBackwardArgs, SparsemaxBackwardDescriptor,
                      SparsemaxBackwardPlan, SparsemaxDescriptor, SparsemaxPlan)

__all__ = [
    "SoftmaxArgs", "SoftmaxBackwardArgs", "SoftmaxBackwardDescriptor", "SoftmaxBackwardPlan",
    "SoftmaxDescriptor", "SoftmaxPlan", "SoftmaxTuning", "SparsemaxArgs", "SparsemaxBackwardArgs",
    "SparsemaxBackwardDescriptor", "SparsemaxBackwardPlan", "SparsemaxDescriptor", "SparsemaxPlan"
]
