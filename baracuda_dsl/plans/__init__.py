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
from .compaction import CompactArgs, CompactDescriptor, CompactPlan
from .scan import (ScanArgs, ScanBackwardArgs, ScanBackwardDescriptor, ScanBackwardPlan,
                   ScanDescriptor, ScanPlan)
from .searchsorted import SearchsortedArgs, SearchsortedDescriptor, SearchsortedPlan
from .sort import (ArgsortArgs, ArgsortDescriptor, ArgsortPlan, KthvalueArgs, KthvalueDescriptor,
                   KthvaluePlan, MsortArgs, MsortDescriptor, MsortPlan, SortArgs, SortDescriptor,
                   SortPlan, TopkArgs, TopkDescriptor, TopkPlan)
from .sort_bw import (KthvalueBackwardArgs, KthvalueBackwardDescriptor, KthvalueBackwardPlan,
                      SortBackwardArgs, SortBackwardDescriptor, SortBackwardPlan,
                      TopkBackwardArgs, TopkBackwardDescriptor, TopkBackwardPlan)
from .reductions import (ArgReducePlan, ReduceArgs, ReduceDescriptor, ReducePlan,
                         ReduceToDescriptor, ReduceToPlan)
from .reduction_composites import (BoolReduceDescriptor, BoolReducePlan, CountReducePlan,
                                   StatReducePlan, TraceDescriptor, TracePlan)
from .reductions_bw import (ReduceBackwardArgs, ReduceBackwardDescriptor,
                            ReduceBackwardPlan)
from .unique import UniqueArgs, UniqueConsecutivePlan, UniqueDescriptor, UniquePlan

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
    "CompactArgs", "CompactDescriptor", "CompactPlan",
    "ScanArgs", "ScanBackwardArgs", "ScanBackwardDescriptor", "ScanBackwardPlan",
    "ScanDescriptor", "ScanPlan",
    "SearchsortedArgs", "SearchsortedDescriptor", "SearchsortedPlan",
    "ArgsortArgs", "ArgsortDescriptor", "ArgsortPlan", "KthvalueArgs", "KthvalueDescriptor",
    "KthvaluePlan", "MsortArgs", "MsortDescriptor", "MsortPlan", "SortArgs", "SortDescriptor",
    "SortPlan", "TopkArgs", "TopkDescriptor", "TopkPlan",
    "KthvalueBackwardArgs", "KthvalueBackwardDescriptor", "KthvalueBackwardPlan",
    "SortBackwardArgs", "SortBackwardDescriptor", "SortBackwardPlan",
    "TopkBackwardArgs", "TopkBackwardDescriptor", "TopkBackwardPlan",
    "UniqueArgs", "UniqueConsecutivePlan", "UniqueDescriptor", "UniquePlan",
    "ArgReducePlan", "ReduceArgs", "ReduceDescriptor", "ReducePlan", "ReduceToDescriptor",
    "ReduceToPlan", "BoolReduceDescriptor", "BoolReducePlan", "CountReducePlan",
    "StatReducePlan", "TraceDescriptor", "TracePlan", "ReduceBackwardArgs", "ReduceBackwardDescriptor", "ReduceBackwardPlan",
] + list(_channel_norm.__all__) + list(_ew_families.__all__)

# layout, indexing, embedding and segment families: every public Descriptor / Args / Plan class
# defined in these modules is exported by name
from . import embedding as _embedding, indexing as _indexing, layout as _layout  # noqa: E402
from . import pad as _pad, segment as _segment  # noqa: E402
from . import random as _random  # noqa: E402
from . import ctc as _ctc, loss_row as _loss_row  # noqa: E402
from . import gemm as _gemm, loss_pointwise as _loss_pointwise  # noqa: E402
from . import cross_entropy as _cross_entropy  # noqa: E402
from . import linear_cross_entropy as _linear_cross_entropy  # noqa: E402
from . import softmax as _softmax  # noqa: E402
from . import gemm_batched as _gemm_batched  # noqa: E402
from . import gemm_int as _gemm_int  # noqa: E402
from . import gemm_fp8 as _gemm_fp8  # noqa: E402


def _export(*modules) -> None:
    for m in modules:
        for name, obj in sorted(vars(m).items()):
            if (isinstance(obj, type) and obj.__module__ == m.__name__ and not name.startswith("_")
                    and name.endswith(("Plan", "Descriptor", "Args"))):
                globals()[name] = obj
                __all__.append(name)


_export(_layout, _pad, _indexing, _embedding, _segment, _random, _loss_row, _ctc, _gemm, _loss_pointwise, _cross_entropy,
        _linear_cross_entropy, _softmax, _gemm_batched, _gemm_int, _gemm_fp8)
__all__ += ["contiguize"]
from .layout import contiguize  # noqa: E402,F401
