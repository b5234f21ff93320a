"""Pooling extensions (torch.nn.functional semantics, 1-3 spatial dims): ``max_pool``,
``avg_pool``, ``adaptive_max_pool``, ``adaptive_avg_pool`` and their backward functions,
dispatching to :mod:`baracuda_dsl.ops.pooling.pool`.

``x`` is (N, C, *spatial) with 1, 2 or 3 spatial dims (the spatial rank is ``x.ndim − 2``), any
strides; results are new dense (row-major) arrays.  Dtypes: float16, bfloat16, float32, float64
(half types accumulate in float32); other dtypes are a ``TypeError``.  Max pooling's indices are
int64 positions in the flattened spatial input (torch's convention); a NaN in a window wins.
The backward functions take the output gradient, the input's shape (and max's indices) and return
``dx``, summed in a fixed order (deterministic, no atomics).
"""

from __future__ import annotations

from . import _dispatch
from . import _dtypes as _dt
from . import _elementwise_functions as _ef
from . import _plans
from ._array_object import Array

_CAT = "real floating-point"


def _spatial(shape, name: str) -> int:
    k = len(shape) - 2
    if k not in (1, 2, 3):
        raise ValueError(f"{name}: expected an (N, C, *spatial) array with 1-3 spatial dims, got "
                         f"shape {tuple(shape)}")
    return k


def _forward(name, x, plan_cls, desc, want_idx):
    from baracuda_dsl.ops.pooling.pool import PoolArgs

    plan = _plans.select(plan_cls, desc)
    y = Array._empty(desc.out_shape, x.dtype, x.device)
    idx = Array._empty(desc.out_shape, _dt.int64, x.device) if want_idx else None
    _plans.run(plan, PoolArgs(x, y, idx), x)
    return (y, idx) if want_idx else y


def _backward(name, grad, x_shape, indices, plan_cls, make_desc):
    from baracuda_dsl.ops.pooling.pool import PoolBackwardArgs

    _plans.check_array(grad, "grad")
    _ef.check_dtype(grad.dtype, _CAT, name)
    x_shape = tuple(int(s) for s in x_shape)
    desc = make_desc(_spatial(x_shape, name), x_shape, grad.dtype)
    if tuple(grad.shape) != desc.out_shape:
        raise ValueError(f"{name}: grad has shape {tuple(grad.shape)}, the pooling output of "
                         f"{x_shape} is {desc.out_shape}")
    if indices is not None:
        _plans.check_index_array(indices, "indices")
        if indices.dtype != _dt.int64:
            indices = _dispatch.cast(indices, _dt.int64)
    plan = _plans.select(plan_cls, desc)
    dx = Array._empty(x_shape, grad.dtype, grad.device)
    _plans.run(plan, PoolBackwardArgs(grad, dx, indices), grad)
    return dx


def _check_x(x, name):
    _plans.check_array(x, "x")
    _ef.check_dtype(x.dtype, _CAT, name)
    return _spatial(x.shape, name)


def max_pool(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
             return_indices: bool = False):
    """torch.nn.functional.max_pool{1,2,3}d; with ``return_indices`` also the int64 argmax
    indices into the flattened spatial input."""
    from baracuda_dsl.ops.pooling.pool import PoolDescriptor, PoolPlan

    k = _check_x(x, "max_pool")
    desc = PoolDescriptor(k, tuple(x.shape), kernel_size, stride, padding, dilation, ceil_mode,
                          "max", dtype=x.dtype)
    return _forward("max_pool", x, PoolPlan, desc, return_indices)


def avg_pool(x, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
             count_include_pad: bool = True, divisor_override=None) -> Array:
    """torch.nn.functional.avg_pool{1,2,3}d."""
    from baracuda_dsl.ops.pooling.pool import PoolDescriptor, PoolPlan

    k = _check_x(x, "avg_pool")
    desc = PoolDescriptor(k, tuple(x.shape), kernel_size, stride, padding, 1, ceil_mode, "avg",
                          count_include_pad, divisor_override, x.dtype)
    return _forward("avg_pool", x, PoolPlan, desc, False)


def adaptive_max_pool(x, output_size, return_indices: bool = False):
    """torch.nn.functional.adaptive_max_pool{1,2,3}d (``output_size``: an int or one per spatial
    dim; None keeps the input extent)."""
    from baracuda_dsl.ops.pooling.pool import AdaptivePoolDescriptor, AdaptivePoolPlan

    k = _check_x(x, "adaptive_max_pool")
    desc = AdaptivePoolDescriptor(k, tuple(x.shape), output_size, "max", x.dtype)
    return _forward("adaptive_max_pool", x, AdaptivePoolPlan, desc, return_indices)


def adaptive_avg_pool(x, output_size) -> Array:
    """torch.nn.functional.adaptive_avg_pool{1,2,3}d."""
    from baracuda_dsl.ops.pooling.pool import AdaptivePoolDescriptor, AdaptivePoolPlan

    k = _check_x(x, "adaptive_avg_pool")
    desc = AdaptivePoolDescriptor(k, tuple(x.shape), output_size, "avg", x.dtype)
    return _forward("adaptive_avg_pool", x, AdaptivePoolPlan, desc, False)


def max_pool_backward(grad, x_shape, indices, kernel_size, stride=None, padding=0, dilation=1,
                      ceil_mode: bool = False) -> Array:
    """Gradient of :func:`max_pool`: ``dx[i] = Σ grad[o]`` over the outputs whose saved index
    is ``i``."""
    from baracuda_dsl.ops.pooling.pool import PoolBackwardPlan, PoolDescriptor

    _plans.check_index_array(indices, "indices")
    return _backward("max_pool_backward", grad, x_shape, indices, PoolBackwardPlan,
                     lambda k, s, dt: PoolDescriptor(k, s, kernel_size, stride, padding,
                                                     dilation, ceil_mode, "max", dtype=dt))


def avg_pool_backward(grad, x_shape, kernel_size, stride=None, padding=0,
                      ceil_mode: bool = False, count_include_pad: bool = True,
                      divisor_override=None) -> Array:
    """Gradient of :func:`avg_pool`: ``dx[i] = Σ grad[o] / divisor(o)`` over the windows
    covering ``i``."""
    from baracuda_dsl.ops.pooling.pool import PoolBackwardPlan, PoolDescriptor

    return _backward("avg_pool_backward", grad, x_shape, None, PoolBackwardPlan,
                     lambda k, s, dt: PoolDescriptor(k, s, kernel_size, stride, padding, 1,
                                                     ceil_mode, "avg", count_include_pad,
                                                     divisor_override, dt))


def adaptive_max_pool_backward(grad, x_shape, indices) -> Array:
    """Gradient of :func:`adaptive_max_pool` (output size = ``grad``'s spatial extents)."""
    from baracuda_dsl.ops.pooling.pool import AdaptivePoolBackwardPlan, AdaptivePoolDescriptor

    _plans.check_index_array(indices, "indices")
    out = tuple(grad.shape[2:]) if isinstance(grad, Array) else None
    return _backward("adaptive_max_pool_backward", grad, x_shape, indices,
                     AdaptivePoolBackwardPlan,
                     lambda k, s, dt: AdaptivePoolDescriptor(k, s, out, "max", dt))


def adaptive_avg_pool_backward(grad, x_shape) -> Array:
    """Gradient of :func:`adaptive_avg_pool` (output size = ``grad``'s spatial extents)."""
    from baracuda_dsl.ops.pooling.pool import AdaptivePoolBackwardPlan, AdaptivePoolDescriptor

    out = tuple(grad.shape[2:]) if isinstance(grad, Array) else None
    return _backward("adaptive_avg_pool_backward", grad, x_shape, None, AdaptivePoolBackwardPlan,
                     lambda k, s, dt: AdaptivePoolDescriptor(k, s, out, "avg", dt))


__all__ = ["max_pool", "avg_pool", "adaptive_max_pool", "adaptive_avg_pool", "max_pool_backward",
           "avg_pool_backward", "adaptive_max_pool_backward", "adaptive_avg_pool_backward"]
