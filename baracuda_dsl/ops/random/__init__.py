"""The random family: Counter-based random numbers (Philox4x32-10: uniform, normal, gumbel,
bernoulli, randint, bits) and dropout."""

from .random import (DropoutArgs, DropoutBackwardArgs, DropoutBackwardDescriptor,
                     DropoutBackwardPlan, DropoutDescriptor, DropoutPlan, GumbelSoftmaxArgs,
                     GumbelSoftmaxBackwardArgs, GumbelSoftmaxBackwardDescriptor,
                     GumbelSoftmaxBackwardPlan, GumbelSoftmaxDescriptor, GumbelSoftmaxPlan,
                     RandomArgs, RandomDescriptor, RandomPlan)

__all__ = [
    "DropoutArgs", "DropoutBackwardArgs", "DropoutBackwardDescriptor", "DropoutBackwardPlan",
    "DropoutDescriptor", "DropoutPlan", "GumbelSoftmaxArgs", "GumbelSoftmaxBackwardArgs",
    "GumbelSoftmaxBackwardDescriptor", "GumbelSoftmaxBackwardPlan", "GumbelSoftmaxDescriptor",
    "GumbelSoftmaxPlan", "RandomArgs", "RandomDescriptor", "RandomPlan"
]
