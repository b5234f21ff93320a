"""The segment family: Embeddings and segment reductions (embedding, embedding_bag, segment
sum/mean/max/min/prod, index_add), deterministic sort-based backward."""

from .embedding import (EmbeddingArgs, EmbeddingBackwardArgs, EmbeddingBackwardPlan,
                        EmbeddingBagArgs, EmbeddingBagBackwardArgs, EmbeddingBagBackwardPlan,
                        EmbeddingBagDescriptor, EmbeddingBagPlan, EmbeddingDescriptor,
                        EmbeddingPlan)
from .segment import (IndexAddArgs, IndexAddDescriptor, IndexAddPlan, SegmentArgs,
                      SegmentBackwardArgs, SegmentBackwardPlan, SegmentDescriptor, SegmentPlan)

__all__ = [
    "EmbeddingArgs", "EmbeddingBackwardArgs", "EmbeddingBackwardPlan", "EmbeddingBagArgs",
    "EmbeddingBagBackwardArgs", "EmbeddingBagBackwardPlan", "EmbeddingBagDescriptor",
    "EmbeddingBagPlan", "EmbeddingDescriptor", "EmbeddingPlan", "IndexAddArgs",
    "IndexAddDescriptor", "IndexAddPlan", "SegmentArgs", "SegmentBackwardArgs",
    "SegmentBackwardPlan", "SegmentDescriptor", "SegmentPlan"
]
