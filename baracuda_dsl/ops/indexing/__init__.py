"""The indexing family: Index copies: gather / scatter, index_select, gather / scatter along an
axis, masked_fill, one_hot, nonzero, with backward."""

from .gather import (GatherPlan, IndexCopyArgs, IndexCopyDescriptor, ScatterPlan)
from .indexing import (GatherAxisArgs, GatherAxisBackwardArgs, GatherAxisBackwardPlan,
                       GatherAxisDescriptor, GatherAxisPlan, IndexSelectArgs, IndexSelectDescriptor,
                       IndexSelectPlan, MaskedFillArgs, MaskedFillBackwardArgs,
                       MaskedFillBackwardPlan, MaskedFillDescriptor, MaskedFillPlan, NonzeroPlan,
                       OneHotArgs, OneHotDescriptor, OneHotPlan, ScatterAddPlan, ScatterAxisArgs,
                       ScatterAxisBackwardArgs, ScatterAxisBackwardPlan, ScatterAxisDescriptor,
                       ScatterAxisPlan)

__all__ = [
    "GatherPlan", "IndexCopyArgs", "IndexCopyDescriptor", "ScatterPlan", "GatherAxisArgs",
    "GatherAxisBackwardArgs", "GatherAxisBackwardPlan", "GatherAxisDescriptor", "GatherAxisPlan",
    "IndexSelectArgs", "IndexSelectDescriptor", "IndexSelectPlan", "MaskedFillArgs",
    "MaskedFillBackwardArgs", "MaskedFillBackwardPlan", "MaskedFillDescriptor", "MaskedFillPlan",
    "NonzeroPlan", "OneHotArgs", "OneHotDescriptor", "OneHotPlan", "ScatterAddPlan",
    "ScatterAxisArgs", "ScatterAxisBackwardArgs", "ScatterAxisBackwardPlan",
    "ScatterAxisDescriptor", "ScatterAxisPlan"
]
