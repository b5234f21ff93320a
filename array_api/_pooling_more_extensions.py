"""More pooling extensions (torch.nn.functional semantics): ``fractional_max_pool2d`` /
``fractional_max_pool3d``, ``lp_pool`` (1-3 spatial dims) and ``max_unpool`` (1-3 spatial dims),
with their backward functions, dispatching to :mod:`baracuda_dsl.ops.pooling` (fractional, lp,
unpool).

``x`` is (N, C, *spatial), any strides; results are new dense (row-major) arrays.  Dtypes:
float16, bfloat16, float32, float64 (half types compute in float32); other dtypes are a
``TypeError``.  Indices are int64 positions in the flattened spatial plane (torch's convention).
"""

from __future__ import annotations

from . import _dispatch
from . import _dtypes as _dt
from . import _elementwise_functions as _ef
from . import _plans
from ._array_object import Array

_CAT = "real floating-point"

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool_backward",
           "lp_pool", "lp_pool_backward", "max_unpool", "max_unpool_backward"]


def _check_x(x, name, ranks=(1, 2, 3)) -> int:
    _plans.check_array(x, "x")
    _ef.check_dtype(x.dtype, _CAT, name)
    k = x.ndim - 2
    if k not in ranks:
        raise ValueError(f"{name}: expected an (N, C, *spatial) array with "
                         f"{' or '.join(map(str, ranks))} spatial dims, got shape {tuple(x.shape)}")
    return k


def _int64(indices, name="indices"):
    _plans.check_index_array(indices, name)
    return indices if indices.dtype == _dt.int64 else _dispatch.cast(indices, _dt.int64)


def _fractional(name, k, x, kernel_size, output_size, output_ratio, return_indices,
                _random_samples, mode, generator):
    from baracuda_dsl.ops.pooling.fractional import (FractionalMaxPoolArgs,
                                                     FractionalMaxPoolDescriptor,
                                                     FractionalMaxPoolPlan)
    from ._random_extensions import resolve_generator

    _check_x(x, name, (k,))
    desc = FractionalMaxPoolDescriptor(k, tuple(x.shape), kernel_size, output_size, output_ratio,
                                       mode, x.dtype)
    u = _random_samples
    if u is None:
        u = resolve_generator(generator).random(size=desc.samples_shape, dtype=_dt.float32)
    else:
        _plans.check_array(u, "_random_samples")
        if tuple(u.shape) != desc.samples_shape:
            raise ValueError(f"{name}: _random_samples has shape {tuple(u.shape)}, expected "
                             f"{desc.samples_shape}")
        if u.dtype != _dt.float32:
            u = _dispatch.cast(u, _dt.float32)
    plan = _plans.select(FractionalMaxPoolPlan, desc)
    y = Array._empty(desc.out_shape, x.dtype, x.device)
    idx = Array._empty(desc.out_shape, _dt.int64, x.device) if return_indices else None
    _plans.run(plan, FractionalMaxPoolArgs(x, u, y, idx), x)
    return (y, idx) if return_indices else y


def fractional_max_pool2d(x, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples=None, mode: str = "torch",
                          *, generator=None):
    """torch.nn.functional.fractional_max_pool2d: ``_random_samples`` (N, C, 2) in [0, 1)
    (converted to float32; torch's column order: (W, H)), or drawn as float32 uniforms from
    ``generator`` (an array_api.random.Generator; default the module's).  ``mode="torch"``
    reproduces torch's windows for the same samples; ``"seed"`` the evenly-spaced rule (see
    baracuda_dsl.ops.pooling.fractional)."""
    return _fractional("fractional_max_pool2d", 2, x, kernel_size, output_size, output_ratio,
                       return_indices, _random_samples, mode, generator)


def fractional_max_pool3d(x, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples=None, mode: str = "torch",
                          *, generator=None):
    """torch.nn.functional.fractional_max_pool3d (samples (N, C, 3): columns (D, H, W))."""
    return _fractional("fractional_max_pool3d", 3, x, kernel_size, output_size, output_ratio,
                       return_indices, _random_samples, mode, generator)


def fractional_max_pool_backward(grad, x_shape, indices, kernel_size,
                                 deterministic: bool = True) -> Array:
    """Gradient of fractional max pooling: ``dx[i] = Σ grad[o]`` over the outputs whose saved
    index is ``i`` (gather form, bit-reproducible; ``deterministic=False``: atomic scatter)."""
    from baracuda_dsl.ops.pooling.fractional import (FractionalMaxPoolBackwardArgs,
                                                     FractionalMaxPoolBackwardPlan,
                                                     FractionalMaxPoolDescriptor)

    name = "fractional_max_pool_backward"
    k = _check_x(grad, name, (2, 3))
    x_shape = tuple(int(s) for s in x_shape)
    desc = FractionalMaxPoolDescriptor(k, x_shape, kernel_size, tuple(grad.shape[2:]),
                                       dtype=grad.dtype, deterministic=deterministic)
    if tuple(grad.shape) != desc.out_shape:
        raise ValueError(f"{name}: grad has shape {tuple(grad.shape)}, expected "
                         f"{desc.out_shape} for x of shape {x_shape}")
    indices = _int64(indices)
    plan = _plans.select(FractionalMaxPoolBackwardPlan, desc)
    dx = Array._empty(x_shape, grad.dtype, grad.device)
    _plans.run(plan, FractionalMaxPoolBackwardArgs(grad, indices, dx), grad)
    return dx


def lp_pool(x, norm_type, kernel_size, stride=None, ceil_mode: bool = False) -> Array:
    """torch.nn.functional.lp_pool{1,2,3}d (spatial rank ``x.ndim − 2``):
    ``(Σ_window x^p / cnt · K)^(1/p)``; ``norm_type`` finite and > 0."""
    from baracuda_dsl.ops.pooling.lp import LPPoolArgs, LPPoolDescriptor, LPPoolPlan

    k = _check_x(x, "lp_pool")
    desc = LPPoolDescriptor(k, tuple(x.shape), norm_type, kernel_size, stride, ceil_mode,
                            x.dtype)
    plan = _plans.select(LPPoolPlan, desc)
    y = Array._empty(desc.out_shape, x.dtype, x.device)
    _plans.run(plan, LPPoolArgs(x, y), x)
    return y


def lp_pool_backward(grad, x, norm_type, kernel_size, stride=None,
                     ceil_mode: bool = False) -> Array:
    """Gradient of :func:`lp_pool` with respect to ``x`` (deterministic gather; a workspace of
    one float32 (float64) per output from the pool)."""
    from baracuda_dsl.ops.pooling.lp import LPPoolBackwardArgs, LPPoolBackwardPlan, LPPoolDescriptor

    k = _check_x(x, "lp_pool_backward")
    _plans.check_array(grad, "grad")
    desc = LPPoolDescriptor(k, tuple(x.shape), norm_type, kernel_size, stride, ceil_mode,
                            x.dtype)
    if tuple(grad.shape) != desc.out_shape or grad.dtype != x.dtype:
        raise ValueError(f"lp_pool_backward: grad must be {desc.out_shape} {x.dtype}, got "
                         f"{tuple(grad.shape)} {grad.dtype}")
    plan = _plans.select(LPPoolBackwardPlan, desc)
    dx = Array._empty(tuple(x.shape), x.dtype, x.device)
    _plans.run(plan, LPPoolBackwardArgs(x, grad, dx), x)
    return dx


def max_unpool(x, indices, kernel_size, stride=None, padding=0, output_size=None) -> Array:
    """torch.nn.functional.max_unpool{1,2,3}d: zeros with ``x`` placed at ``indices`` (int64
    positions in the flattened output plane).  An out-of-range index raises IndexError (after
    the run); duplicate indices keep one of their values."""
    from baracuda_dsl.ops.pooling.unpool import MaxUnpoolArgs, MaxUnpoolDescriptor, MaxUnpoolPlan

    k = _check_x(x, "max_unpool")
    indices = _int64(indices)
    if tuple(indices.shape) != tuple(x.shape):
        raise ValueError(f"max_unpool: indices shape {tuple(indices.shape)} != x shape "
                         f"{tuple(x.shape)}")
    desc = MaxUnpoolDescriptor(k, tuple(x.shape), kernel_size, stride, padding, output_size,
                               x.dtype)
    plan = _plans.select(MaxUnpoolPlan, desc)
    y = Array._empty(desc.out_shape, x.dtype, x.device)
    _plans.run_checked(plan, lambda st: MaxUnpoolArgs(x, indices, y, st), x.device,
                       "max_unpool")
    return y


def max_unpool_backward(grad, indices, kernel_size, stride=None, padding=0) -> Array:
    """Gradient of :func:`max_unpool`: ``grad`` gathered at ``indices`` (shape of the pooled
    input; ``grad``'s spatial extents are the unpooled output size)."""
    from baracuda_dsl.ops.pooling.unpool import (MaxUnpoolBackwardArgs, MaxUnpoolBackwardPlan,
                                                 MaxUnpoolDescriptor)

    k = _check_x(grad, "max_unpool_backward")
    indices = _int64(indices)
    if indices.ndim != grad.ndim or tuple(indices.shape[:2]) != tuple(grad.shape[:2]):
        raise ValueError(f"max_unpool_backward: indices shape {tuple(indices.shape)} does not "
                         f"match grad shape {tuple(grad.shape)}")
    desc = MaxUnpoolDescriptor(k, tuple(indices.shape), kernel_size, stride, padding,
                               tuple(grad.shape), grad.dtype)
    plan = _plans.select(MaxUnpoolBackwardPlan, desc)
    dx = Array._empty(tuple(indices.shape), grad.dtype, grad.device)
    _plans.run_checked(plan, lambda st: MaxUnpoolBackwardArgs(grad, indices, dx, st),
                       grad.device, "max_unpool_backward")
    return dx
