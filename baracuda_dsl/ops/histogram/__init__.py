"""The histogram family: Counting: bincount and histogram."""

from .histogram import (BincountDescriptor, BincountPlan, CountArgs, HistogramDescriptor,
                        HistogramPlan)

__all__ = [
    "BincountDescriptor", "BincountPlan", "CountArgs", "HistogramDescriptor", "HistogramPlan"
]
