"""Interpolation extensions (torch.nn.functional.interpolate semantics, 1-3 spatial dims):
``interpolate`` and its gradient ``interpolate_backward``, dispatching to
:mod:`baracuda_dsl.ops.image.interpolate`.

``x`` is (N, C, *spatial) with 1, 2 or 3 spatial dims, any strides; results are new dense
(row-major) arrays.  Modes: nearest, nearest-exact, linear (1-D), bilinear / bicubic (2-D),
trilinear (3-D), area; ``antialias`` for bilinear / bicubic.  Dtypes: float16, bfloat16, float32,
float64 (half types compute in float32); other dtypes are a ``TypeError``.  The backward is the
forward's exact adjoint, gathered in a fixed order (deterministic, no atomics).
"""

from __future__ import annotations

from . import _elementwise_functions as _ef
from . import _plans
from ._array_object import Array

_CAT = "real floating-point"


def _desc(name, shape, dtype, size, scale_factor, mode, align_corners, recompute_scale_factor,
          antialias):
    from baracuda_dsl.ops.image.interpolate import InterpolateDescriptor

    if len(shape) - 2 not in (1, 2, 3):
        raise ValueError(f"{name}: expected an (N, C, *spatial) array with 1-3 spatial dims, got "
                         f"shape {tuple(shape)}")
    return InterpolateDescriptor(tuple(int(s) for s in shape), size, scale_factor, mode,
                                 align_corners, recompute_scale_factor, antialias, dtype)


def interpolate(x, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                recompute_scale_factor=None, antialias: bool = False) -> Array:
    """torch.nn.functional.interpolate: resample ``x`` (N, C, *spatial) to ``size`` or by
    ``scale_factor`` (see :mod:`baracuda_dsl.ops.image.interpolate` for every mode's map)."""
    from baracuda_dsl.ops.image.interpolate import InterpolateArgs, InterpolatePlan

    _plans.check_array(x, "x")
    _ef.check_dtype(x.dtype, _CAT, "interpolate")
    desc = _desc("interpolate", x.shape, x.dtype, size, scale_factor, mode, align_corners,
                 recompute_scale_factor, antialias)
    plan = _plans.select(InterpolatePlan, desc)
    y = Array._empty(desc.out_shape, x.dtype, x.device)
    _plans.run(plan, InterpolateArgs(x, y), x)
    return y


def interpolate_backward(grad, x_shape, size=None, scale_factor=None, mode: str = "nearest",
                         align_corners=None, recompute_scale_factor=None,
                         antialias: bool = False, deterministic: bool = True) -> Array:
    """Gradient of :func:`interpolate` w.r.t. its input of shape ``x_shape``: ``dx[i] =
    Σ_o W(o, i)·grad[o]`` with the forward's weights — a deterministic gather, or with
    ``deterministic=False`` (nearest / linear / bicubic modes) torch's atomic scatter: faster,
    not bit-reproducible."""
    from baracuda_dsl import PlanPreference
    from baracuda_dsl.ops.image.interpolate import (InterpolateBackwardArgs,
                                                    InterpolateBackwardPlan, InterpolateTuning)

    _plans.check_array(grad, "grad")
    _ef.check_dtype(grad.dtype, _CAT, "interpolate_backward")
    x_shape = tuple(int(s) for s in x_shape)
    desc = _desc("interpolate_backward", x_shape, grad.dtype, size, scale_factor, mode,
                 align_corners, recompute_scale_factor, antialias)
    if tuple(grad.shape) != desc.out_shape:
        raise ValueError(f"interpolate_backward: grad has shape {tuple(grad.shape)}, the "
                         f"interpolation output of {x_shape} is {desc.out_shape}")
    if deterministic:
        plan = _plans.select(InterpolateBackwardPlan, desc)
    else:
        plan = InterpolateBackwardPlan.select(
            desc, PlanPreference(tuning=InterpolateTuning(deterministic=False)))
    dx = Array._empty(x_shape, grad.dtype, grad.device)
    _plans.run(plan, InterpolateBackwardArgs(grad, dx), grad)
    return dx


__all__ = ["interpolate", "interpolate_backward"]
