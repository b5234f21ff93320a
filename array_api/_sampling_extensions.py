"""Sampling extensions (torch.nn.functional semantics): ``grid_sample`` / ``affine_grid`` and
their backward functions, dispatching to :mod:`baracuda_dsl.ops.image.sampling`.

``input`` is (N, C, H, W) or (N, C, D, H, W), ``grid`` (N, Ho, Wo, 2) or (N, Do, Ho, Wo, 3) of the
same dtype (float16, bfloat16, float32, float64; half types compute in float32; other dtypes are
a ``TypeError``), any strides; results are new dense (row-major) arrays.  ``grid_sample_backward``
adds ``grad_input`` with float atomics (non-deterministic: reruns may differ in the last bits);
``grad_grid`` and ``affine_grid_backward`` are deterministic.
"""

from __future__ import annotations

from . import _elementwise_functions as _ef
from . import _plans
from ._array_object import Array

_CAT = "real floating-point"


def _check(x, name: str, fn: str) -> None:
    _plans.check_array(x, name)
    _ef.check_dtype(x.dtype, _CAT, fn)


def _same_dtype(fn: str, *arrays) -> None:
    dts = {a.dtype for a in arrays}
    if len(dts) > 1:
        raise TypeError(f"{fn}: operands must have one dtype, got "
                        f"{', '.join(sorted(d.name for d in dts))}")


def grid_sample(input, grid, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool = False) -> Array:
    """torch.nn.functional.grid_sample: sample ``input`` at the normalised ``grid`` points
    (mode bilinear / nearest / bicubic (2-D), padding_mode zeros / border / reflection)."""
    from baracuda_dsl.ops.image.sampling import (GridSampleArgs, GridSampleDescriptor,
                                                 GridSamplePlan)

    _check(input, "input", "grid_sample")
    _check(grid, "grid", "grid_sample")
    _same_dtype("grid_sample", input, grid)
    desc = GridSampleDescriptor(tuple(input.shape), tuple(grid.shape), mode, padding_mode,
                                align_corners, input.dtype)
    plan = _plans.select(GridSamplePlan, desc)
    out = Array._empty(desc.out_shape, input.dtype, input.device)
    _plans.run(plan, GridSampleArgs(input, grid, out), input)
    return out


def grid_sample_backward(grad, input, grid, mode: str = "bilinear",
                         padding_mode: str = "zeros", align_corners: bool = False,
                         input_requires_grad: bool = True, grid_requires_grad: bool = True):
    """Gradient of :func:`grid_sample`: ``(grad_input, grad_grid)``, each None when not
    requested (torch's output_mask).  grad_input is scattered with atomics
    (non-deterministic); grad_grid is zeros for ``nearest``."""
    from baracuda_dsl.ops.image.sampling import (GridSampleBackwardArgs,
                                                 GridSampleBackwardPlan, GridSampleDescriptor)

    for a, n in ((grad, "grad"), (input, "input"), (grid, "grid")):
        _check(a, n, "grid_sample_backward")
    _same_dtype("grid_sample_backward", grad, input, grid)
    desc = GridSampleDescriptor(tuple(input.shape), tuple(grid.shape), mode, padding_mode,
                                align_corners, input.dtype, bool(input_requires_grad),
                                bool(grid_requires_grad))
    if tuple(grad.shape) != desc.out_shape:
        raise ValueError(f"grid_sample_backward: grad has shape {tuple(grad.shape)}, the "
                         f"output is {desc.out_shape}")
    plan = _plans.select(GridSampleBackwardPlan, desc)
    gi = Array._empty(desc.input_shape, input.dtype, input.device) if input_requires_grad \
        else None
    gg = Array._empty(desc.grid_shape, input.dtype, input.device) if grid_requires_grad \
        else None
    _plans.run(plan, GridSampleBackwardArgs(grad, input, grid, gi, gg), input)
    return gi, gg


def affine_grid(theta, size, align_corners: bool = False) -> Array:
    """torch.nn.functional.affine_grid: the (N, H, W, 2) / (N, D, H, W, 3) sampling grid of the
    affine maps ``theta`` (N, 2, 3) / (N, 3, 4) for an output of ``size``."""
    from baracuda_dsl.ops.image.sampling import (AffineGridArgs, AffineGridDescriptor,
                                                 AffineGridPlan)

    _check(theta, "theta", "affine_grid")
    desc = AffineGridDescriptor(tuple(int(s) for s in size), align_corners, theta.dtype)
    if tuple(theta.shape) != desc.theta_shape:
        raise ValueError(f"affine_grid: theta has shape {tuple(theta.shape)}, size {desc.size} "
                         f"needs {desc.theta_shape}")
    plan = _plans.select(AffineGridPlan, desc)
    out = Array._empty(desc.grid_shape, theta.dtype, theta.device)
    _plans.run(plan, AffineGridArgs(theta, out), theta)
    return out


def affine_grid_backward(grad, size, align_corners: bool = False) -> Array:
    """Gradient of :func:`affine_grid` with respect to theta (deterministic)."""
    from baracuda_dsl.ops.image.sampling import (AffineGridBackwardArgs, AffineGridBackwardPlan,
                                                 AffineGridDescriptor)

    _check(grad, "grad", "affine_grid_backward")
    desc = AffineGridDescriptor(tuple(int(s) for s in size), align_corners, grad.dtype)
    if tuple(grad.shape) != desc.grid_shape:
        raise ValueError(f"affine_grid_backward: grad has shape {tuple(grad.shape)}, size "
                         f"{desc.size} gives a grid of {desc.grid_shape}")
    plan = _plans.select(AffineGridBackwardPlan, desc)
    out = Array._empty(desc.theta_shape, grad.dtype, grad.device)
    _plans.run(plan, AffineGridBackwardArgs(grad, out), grad)
    return out


__all__ = ["grid_sample", "grid_sample_backward", "affine_grid", "affine_grid_backward"]
