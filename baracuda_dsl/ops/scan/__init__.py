"""The scan family: Scans (cumsum cumprod cummax cummin logcumsumexp; exclusive, reverse) with
backward, and stream compaction (nonzero)."""

from .compaction import (CompactArgs, CompactDescriptor, CompactPlan)
from .scan import (ScanArgs, ScanBackwardArgs, ScanBackwardDescriptor, ScanBackwardPlan,
                   ScanDescriptor, ScanPlan)

__all__ = [
    "CompactArgs", "CompactDescriptor", "CompactPlan", "ScanArgs", "ScanBackwardArgs",
    "ScanBackwardDescriptor", "ScanBackwardPlan", "ScanDescriptor", "ScanPlan"
]
