"""The pooling family: max / average / adaptive pooling over 1-3 spatial dims, forward and
deterministic (gather-form) backward."""

from .pool import (AdaptivePoolBackwardPlan, AdaptivePoolDescriptor, AdaptivePoolPlan,
                   PoolArgs, PoolBackwardArgs, PoolBackwardPlan, PoolDescriptor, PoolPlan,
                   adaptive_pool_windows, pool_dense_strides, pool_output_size)

__all__ = [
    "PoolDescriptor", "PoolArgs", "PoolBackwardArgs", "PoolPlan", "PoolBackwardPlan",
    "AdaptivePoolDescriptor", "AdaptivePoolPlan", "AdaptivePoolBackwardPlan",
    "pool_output_size", "adaptive_pool_windows", "pool_dense_strides",
]
