"""The attention family: flash attention (forward and backward), decoding over a (paged) KV
cache, general scaled-dot-product attention, rotary embeddings, ALiBi and the KV-cache append."""

from .alibi import (AlibiArgs, AlibiBackwardArgs, AlibiBackwardDescriptor, AlibiBackwardPlan,
                    AlibiDescriptor, AlibiPlan, alibi_slopes)
from .decode import (DecodeTuning, FlashDecodeArgs, FlashDecodeDescriptor,
                     FlashDecodePlan)
from .flash import (FlashAttentionArgs, FlashAttentionBackwardArgs,
                    FlashAttentionBackwardDescriptor, FlashAttentionBackwardPlan,
                    FlashAttentionDescriptor, FlashAttentionPlan, FlashTuning)
from .kv_cache import KvCacheAppendArgs, KvCacheAppendDescriptor, KvCacheAppendPlan
from .rope import (RopeArgs, RopeBackwardArgs, RopeBackwardDescriptor, RopeBackwardPlan,
                   RopeDescriptor, RopePlan, RopeScaling, rope_cos_sin)
from .sdpa import (SdpaArgs, SdpaBackwardArgs, SdpaBackwardDescriptor, SdpaBackwardPlan,
                   SdpaDescriptor, SdpaPlan)

__all__ = [
    "AlibiArgs", "AlibiBackwardArgs", "AlibiBackwardDescriptor", "AlibiBackwardPlan",
    "AlibiDescriptor", "AlibiPlan", "alibi_slopes",
    "DecodeTuning", "FlashDecodeArgs", "FlashDecodeDescriptor", "FlashDecodePlan",
    "FlashAttentionArgs", "FlashAttentionBackwardArgs", "FlashAttentionBackwardDescriptor",
    "FlashAttentionBackwardPlan", "FlashAttentionDescriptor", "FlashAttentionPlan", "FlashTuning",
    "KvCacheAppendArgs", "KvCacheAppendDescriptor", "KvCacheAppendPlan",
    "RopeArgs", "RopeBackwardArgs", "RopeBackwardDescriptor", "RopeBackwardPlan",
    "RopeDescriptor", "RopePlan", "RopeScaling", "rope_cos_sin",
    "SdpaArgs", "SdpaBackwardArgs", "SdpaBackwardDescriptor", "SdpaBackwardPlan",
    "SdpaDescriptor", "SdpaPlan",
]
