"""The losses family: Losses with none / mean / sum and backward: cross-entropy, NLL, fused linear
cross-entropy, pointwise losses, row losses, CTC."""

from .cross_entropy import (CrossEntropyArgs, CrossEntropyBackwardArgs,
                            CrossEntropyBackwardDescriptor, CrossEntropyBackwardPlan,
                            CrossEntropyDescriptor, CrossEntropyPlan, CrossEntropyTuning,
                            NLLLossArgs, NLLLossBackwardArgs, NLLLossBackwardDescriptor,
                            NLLLossBackwardPlan, NLLLossDescriptor, NLLLossPlan)
from .ctc import (CTCLossArgs, CTCLossBackwardArgs, CTCLossBackwardDescriptor, CTCLossBackwardPlan,
                  CTCLossDescriptor, CTCLossPlan)
from .linear_cross_entropy import (LinearCrossEntropyArgs, LinearCrossEntropyBackwardArgs,
                                   LinearCrossEntropyBackwardDescriptor,
                                   LinearCrossEntropyBackwardPlan, LinearCrossEntropyDescriptor,
                                   LinearCrossEntropyPlan)
from .loss_pointwise import (PointwiseLossArgs, PointwiseLossBackwardArgs,
                             PointwiseLossBackwardDescriptor, PointwiseLossBackwardPlan,
                             PointwiseLossDescriptor, PointwiseLossPlan)
from .loss_row import (CosineEmbeddingLossArgs, CosineEmbeddingLossBackwardArgs,
                       CosineEmbeddingLossBackwardDescriptor, CosineEmbeddingLossBackwardPlan,
                       CosineEmbeddingLossDescriptor, CosineEmbeddingLossPlan, MultiMarginLossArgs,
                       MultiMarginLossBackwardArgs, MultiMarginLossBackwardDescriptor,
                       MultiMarginLossBackwardPlan, MultiMarginLossDescriptor, MultiMarginLossPlan,
                       MultilabelMarginLossArgs, MultilabelMarginLossBackwardArgs,
                       MultilabelMarginLossBackwardDescriptor, MultilabelMarginLossBackwardPlan,
                       MultilabelMarginLossDescriptor, MultilabelMarginLossPlan,
                       TripletMarginLossArgs, TripletMarginLossBackwardArgs,
                       TripletMarginLossBackwardDescriptor, TripletMarginLossBackwardPlan,
                       TripletMarginLossDescriptor, TripletMarginLossPlan)

__all__ = [
    "CrossEntropyArgs", "CrossEntropyBackwardArgs", "CrossEntropyBackwardDescriptor",
    "CrossEntropyBackwardPlan", "CrossEntropyDescriptor", "CrossEntropyPlan", "NLLLossArgs",
    "NLLLossBackwardArgs", "NLLLossBackwardDescriptor", "NLLLossBackwardPlan", "NLLLossDescriptor",
    "CrossEntropyTuning",
    "NLLLossPlan", "CTCLossArgs", "CTCLossBackwardArgs", "CTCLossBackwardDescriptor",
    "CTCLossBackwardPlan", "CTCLossDescriptor", "CTCLossPlan", "LinearCrossEntropyArgs",
    "LinearCrossEntropyBackwardArgs", "LinearCrossEntropyBackwardDescriptor",
    "LinearCrossEntropyBackwardPlan", "LinearCrossEntropyDescriptor", "LinearCrossEntropyPlan",
    "PointwiseLossArgs", "PointwiseLossBackwardArgs", "PointwiseLossBackwardDescriptor",
    "PointwiseLossBackwardPlan", "PointwiseLossDescriptor", "PointwiseLossPlan",
    "CosineEmbeddingLossArgs", "CosineEmbeddingLossBackwardArgs",
    "CosineEmbeddingLossBackwardDescriptor", "CosineEmbeddingLossBackwardPlan",
    "CosineEmbeddingLossDescriptor", "CosineEmbeddingLossPlan", "MultiMarginLossArgs",
    "MultiMarginLossBackwardArgs", "MultiMarginLossBackwardDescriptor",
    "MultiMarginLossBackwardPlan", "MultiMarginLossDescriptor", "MultiMarginLossPlan",
    "MultilabelMarginLossArgs", "MultilabelMarginLossBackwardArgs",
    "MultilabelMarginLossBackwardDescriptor", "MultilabelMarginLossBackwardPlan",
    "MultilabelMarginLossDescriptor", "MultilabelMarginLossPlan", "TripletMarginLossArgs",
    "TripletMarginLossBackwardArgs", "TripletMarginLossBackwardDescriptor",
    "TripletMarginLossBackwardPlan", "TripletMarginLossDescriptor", "TripletMarginLossPlan"
]
