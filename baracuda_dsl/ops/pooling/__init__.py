"""The pooling family: max / average / adaptive pooling over 1-3 spatial dims, forward and
deterministic (gather-form) backward; fractional max pooling (2-/3-D), LP pooling and max_unpool
(1-3-D), forward and backward."""

from .fractional import (FractionalMaxPoolArgs, FractionalMaxPoolBackwardArgs,
                         FractionalMaxPoolBackwardPlan, FractionalMaxPoolDescriptor,
                         FractionalMaxPoolPlan, fractional_starts)
from .lp import LPPoolArgs, LPPoolBackwardArgs, LPPoolBackwardPlan, LPPoolDescriptor, LPPoolPlan
from .pool import (AdaptivePoolBackwardPlan, AdaptivePoolDescriptor, AdaptivePoolPlan,
                   PoolArgs, PoolBackwardArgs, PoolBackwardPlan, PoolDescriptor, PoolPlan,
                   adaptive_pool_windows, pool_dense_strides, pool_output_size)
from .unpool import (MaxUnpoolArgs, MaxUnpoolBackwardArgs, MaxUnpoolBackwardPlan,
                     MaxUnpoolDescriptor, MaxUnpoolPlan, unpool_output_size)

__all__ = [
    "PoolDescriptor", "PoolArgs", "PoolBackwardArgs", "PoolPlan", "PoolBackwardPlan",
    "AdaptivePoolDescriptor", "AdaptivePoolPlan", "AdaptivePoolBackwardPlan",
    "pool_output_size", "adaptive_pool_windows", "pool_dense_strides",
    "FractionalMaxPoolDescriptor", "FractionalMaxPoolArgs", "FractionalMaxPoolBackwardArgs",
    "FractionalMaxPoolPlan", "FractionalMaxPoolBackwardPlan", "fractional_starts",
    "LPPoolDescriptor", "LPPoolArgs", "LPPoolBackwardArgs", "LPPoolPlan", "LPPoolBackwardPlan",
    "MaxUnpoolDescriptor", "MaxUnpoolArgs", "MaxUnpoolBackwardArgs", "MaxUnpoolPlan",
    "MaxUnpoolBackwardPlan", "unpool_output_size",
]
