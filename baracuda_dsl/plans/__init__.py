"""Plan families. Each module holds one family's Descriptors, Args and Plans (FW and BW)."""

from . import channel_norm as _channel_norm
from .channel_norm import *  # noqa: F401,F403
from .repeat import (RepeatArgs, RepeatBackwardArgs, RepeatBackwardDescriptor, RepeatBackwardPlan,
                     RepeatDescriptor, RepeatPlan, StridedCopyArgs, StridedCopyDescriptor,
                     StridedCopyPlan, repeat_out_shape, strided_copy)

from . import elementwise_families as _ew_families
from .elementwise import (ElementwiseArgs, ElementwiseDescriptor, ElementwisePlan,
                          broadcast_shapes, wired_dtypes)
from .elementwise_families import *  # noqa: F401,F403
from .normalization import (LayerNormArgs, LayerNormBackwardArgs, LayerNormBackwardDescriptor,
                            LayerNormBackwardPlan, LayerNormDescriptor, LayerNormPlan,
                            RMSNormArgs, RMSNormBackwardArgs, RMSNormBackwardDescriptor,
                            RMSNormBackwardPlan, RMSNormDescriptor, RMSNormPlan)
from .gather import GatherPlan, IndexCopyArgs, IndexCopyDescriptor, ScatterPlan
from .histogram import (BincountDescriptor, BincountPlan, CountArgs, HistogramDescriptor,
                        HistogramPlan)

__all__ = [
    "RMSNormDescriptor", "RMSNormArgs", "RMSNormPlan",
    "RMSNormBackwardDescriptor", "RMSNormBackwardArgs", "RMSNormBackwardPlan",
    "LayerNormDescriptor", "LayerNormArgs", "LayerNormPlan",
    "LayerNormBackwardDescriptor", "LayerNormBackwardArgs", "LayerNormBackwardPlan",
    "RepeatDescriptor", "RepeatArgs", "RepeatPlan",
    "RepeatBackwardDescriptor", "RepeatBackwardArgs", "RepeatBackwardPlan",
    "StridedCopyDescriptor", "StridedCopyArgs", "StridedCopyPlan", "strided_copy",
    "repeat_out_shape",
    "ElementwiseDescriptor", "ElementwiseArgs", "ElementwisePlan", "broadcast_shapes",
    "wired_dtypes",
    "GatherPlan", "ScatterPlan", "IndexCopyDescriptor", "IndexCopyArgs",
    "BincountDescriptor", "BincountPlan", "HistogramDescriptor", "HistogramPlan", "CountArgs",
] + list(_channel_norm.__all__) + list(_ew_families.__all__)
