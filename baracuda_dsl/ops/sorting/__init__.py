"""The sorting family: Sort, argsort, msort, top-k, kthvalue (with backward), searchsorted and the
sort-based set functions (unique)."""

from .searchsorted import (SearchsortedArgs, SearchsortedDescriptor, SearchsortedPlan)
from .sort import (ArgsortArgs, ArgsortDescriptor, ArgsortPlan, KthvalueArgs, KthvalueDescriptor,
                   KthvaluePlan, MsortArgs, MsortDescriptor, MsortPlan, SortArgs, SortDescriptor,
                   SortPlan, TopkArgs, TopkDescriptor, TopkPlan)
from .sort_bw import (KthvalueBackwardArgs, KthvalueBackwardDescriptor, KthvalueBackwardPlan,
                      SortBackwardArgs, SortBackwardDescriptor, SortBackwardPlan, TopkBackwardArgs,
                      TopkBackwardDescriptor, TopkBackwardPlan)
from .unique import (UniqueArgs, UniqueConsecutivePlan, UniqueDescriptor, UniquePlan)

__all__ = [
    "SearchsortedArgs", "SearchsortedDescriptor", "SearchsortedPlan", "ArgsortArgs",
    "ArgsortDescriptor", "ArgsortPlan", "KthvalueArgs", "KthvalueDescriptor", "KthvaluePlan",
    "MsortArgs", "MsortDescriptor", "MsortPlan", "SortArgs", "SortDescriptor", "SortPlan",
    "TopkArgs", "TopkDescriptor", "TopkPlan", "KthvalueBackwardArgs", "KthvalueBackwardDescriptor",
    "KthvalueBackwardPlan", "SortBackwardArgs", "SortBackwardDescriptor", "SortBackwardPlan",
    "TopkBackwardArgs", "TopkBackwardDescriptor", "TopkBackwardPlan", "UniqueArgs",
    "UniqueConsecutivePlan", "UniqueDescriptor", "UniquePlan"
]
