"""Convolution extensions of the namespace (``torch.nn.functional`` names and semantics), on the
conv family's cuDNN Plans (``baracuda_dsl.ops.conv``): ``conv``, ``conv_transpose`` and
``conv_backward``.

The rank of ``x`` picks the spatial dims: (N, C, L) → 1-D, (N, C, H, W) → 2-D, (N, C, D, H, W)
→ 3-D.  Weights are torch's: (K, C/groups, *kernel) for ``conv``, (C, K/groups, *kernel) for
``conv_transpose``.  dtypes: float16, bfloat16, float32 (strict float32 math), float64; x and
weight must share one.

Layout: when ``x`` is channels-last (the strides of torch's ``channels_last`` /
``channels_last_3d``: channels innermost) the plans run NHWC — cuDNN's fast layout for half
precision — and the result is channels-last too; otherwise everything runs NCHW and the result
is dense row-major.  Operands in any other layout (the weight, a sliced x) are copied into the
chosen layout first.
"""

from __future__ import annotations

import math

from baracuda_dsl.ops.conv import (ConvArgs, ConvBackwardDataArgs, ConvBackwardDataPlan,
                                   ConvBackwardFilterArgs, ConvBackwardFilterPlan,
                                   ConvDescriptor, ConvPlan)
from baracuda_dsl.ops.conv.conv import layout_strides
from baracuda_dsl.tensor import contiguous_strides

from . import _copy
from . import _dtypes as _dt
from . import _plans
from ._array_object import Array

__all__ = ["conv", "conv_transpose", "conv_backward"]

_FLOATS = (_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64)


# ----------------------------------------------------------------------------------- helpers
def _spatial(x, fn: str) -> int:
    if x.ndim not in (3, 4, 5):
        raise ValueError(f"{fn}: x must be (N, C, *spatial) with 1 to 3 spatial dims, got shape "
                         f"{x.shape}")
    return x.ndim - 2


def _check_dtypes(fn: str, *arrays) -> None:
    dt = arrays[0].dtype
    for a in arrays:
        if a.dtype not in _FLOATS:
            raise TypeError(f"{fn}: operands must be float16, bfloat16, float32 or float64, got "
                            f"{a.dtype.name}")
        if a.dtype != dt:
            raise TypeError(f"{fn}: operands must share one dtype, got {dt.name} and "
                            f"{a.dtype.name}")


def _tuple(v, sp: int, name: str, fn: str):
    if isinstance(v, int) and not isinstance(v, bool):
        return (v,) * sp
    t = tuple(v)
    if len(t) == 1:
        t = t * sp
    if len(t) != sp or not all(isinstance(i, int) and not isinstance(i, bool) for i in t):
        raise ValueError(f"{fn}: {name} must be an int or {sp} ints, got {v!r}")
    return t


def _matches(a: Array, strides) -> bool:
    return a.size == 0 or all(n == 1 or s == e for n, s, e in zip(a.shape, a.strides, strides))


def _layout_of(*arrays) -> str:
    """NHWC when every array is channels-last (and not merely dense), else NCHW."""
    for a in arrays:
        if _matches(a, contiguous_strides(a.shape)) or \
                not _matches(a, layout_strides(a.shape, "NHWC")):
            return "NCHW"
    return "NHWC"


def _in_layout(a: Array, layout: str) -> Array:
    """``a`` itself when it has ``layout``'s strides, else a copy laid out so."""
    want = layout_strides(a.shape, layout)
    if _matches(a, want):
        return a
    if layout == "NCHW":
        return _copy.contiguous_copy(a)
    perm = (0,) + tuple(range(2, a.ndim)) + (1,)          # physical order N, *spatial, C
    phys_shape = tuple(a.shape[p] for p in perm)
    phys = Array._empty(phys_shape, a.dtype, a.device)
    _copy.copy_strided(a._ptr, phys_shape, tuple(a.strides[p] for p in perm), a.dtype,
                       a.device.ordinal, a, phys._ptr)
    return phys._view(0, a.shape, want)


def _empty(shape, dt, layout: str, device) -> Array:
    if layout == "NCHW":
        return Array._empty(shape, dt, device)
    perm = (0,) + tuple(range(2, len(shape))) + (1,)
    phys = Array._empty(tuple(shape[p] for p in perm), dt, device)
    return phys._view(0, tuple(shape), layout_strides(shape, layout))


def _padding(padding, sp, kernel, stride, dilation, fn):
    """(padding, padding_end) from an int / tuple / "same" / "valid"."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * sp, None
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{fn}: padding='same' is not supported for strided "
                                 f"convolutions")
            total = [d * (k - 1) for d, k in zip(dilation, kernel)]
            lo = tuple(t // 2 for t in total)
            return lo, tuple(t - l for t, l in zip(total, lo))
        raise ValueError(f"{fn}: padding must be an int, a tuple, 'same' or 'valid', got "
                         f"{padding!r}")
    return _tuple(padding, sp, "padding", fn), None


def _bias(bias, k: int, dt, fn: str):
    if bias is None:
        return None
    _plans.check_array(bias, "bias")
    if tuple(bias.shape) != (k,):
        raise ValueError(f"{fn}: bias must have shape ({k},), got {bias.shape}")
    if bias.dtype != dt:
        raise TypeError(f"{fn}: bias has dtype {bias.dtype.name}, expected {dt.name}")
    return bias if k == 1 or bias.strides[0] == 1 else _copy.contiguous_copy(bias)


def _same_device(fn: str, *arrays) -> None:
    for a in arrays[1:]:
        if a is not None and a.device != arrays[0].device:
            from baracuda_dsl.errors import DeviceMismatchError

            raise DeviceMismatchError(f"{fn}: operands on {arrays[0].device} and {a.device}")


def _descriptor(fn, x_shape, w_shape, dt, layout, *, transposed, stride, padding, dilation,
                groups, output_padding=0, bias=False):
    sp = len(x_shape) - 2
    kernel = tuple(w_shape[2:])
    stride = _tuple(stride, sp, "stride", fn)
    dilation = _tuple(dilation, sp, "dilation", fn)
    if transposed and isinstance(padding, str):
        raise ValueError(f"{fn}: string padding is not supported for transposed convolutions")
    pad, pad_end = _padding(padding, sp, kernel, stride, dilation, fn)
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"{fn}: groups must be a positive int, got {groups!r}")
    c = x_shape[1]
    if transposed:
        if w_shape[0] != c:
            raise ValueError(f"{fn}: weight {w_shape} needs {c} input channels in dim 0 (x "
                             f"{x_shape})")
        k = w_shape[1] * groups
    else:
        if w_shape[1] * groups != c:
            raise ValueError(f"{fn}: weight {w_shape} with groups={groups} expects "
                             f"{w_shape[1] * groups} input channels, x {x_shape} has {c}")
        k = w_shape[0]
    return ConvDescriptor(sp, x_shape[0], c, k, tuple(x_shape[2:]), kernel, stride, pad,
                          dilation, groups, dt, layout, transposed,
                          _tuple(output_padding, sp, "output_padding", fn), bias, None, pad_end)


# --------------------------------------------------------------------------------- functions
def conv(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Array:
    """``torch.nn.functional.conv1d / conv2d / conv3d`` (by the rank of x): cross-correlation of
    x (N, C, *in) with weight (K, C/groups, *kernel), plus bias (K,) when given.  ``padding``:
    an int, one per spatial dim, ``"valid"`` (0) or ``"same"`` (stride 1; asymmetric for even
    kernels, extra padding at the end, as torch).  cuDNN (bias fused when cuDNN can)."""
    return _forward("conv", x, weight, bias, transposed=False, stride=stride, padding=padding,
                    dilation=dilation, groups=groups)


def conv_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                   dilation=1) -> Array:
    """``torch.nn.functional.conv_transpose1d / 2d / 3d``: x (N, C, *in), weight
    (C, K/groups, *kernel), bias (K,); output (N, K, *out) with
    ``out = (in − 1)·stride − 2·padding + dilation·(kernel − 1) + output_padding + 1``.  cuDNN's
    data-gradient graph (the bias is added after it)."""
    return _forward("conv_transpose", x, weight, bias, transposed=True, stride=stride,
                    padding=padding, dilation=dilation, groups=groups,
                    output_padding=output_padding)


def _forward(fn: str, x, weight, bias, **geometry) -> Array:
    """The body of ``conv`` / ``conv_transpose``: checks, the descriptor (``geometry``:
    transposed, stride, padding, dilation, groups[, output_padding]), the output in x's layout
    and one ConvPlan run (none for an empty output)."""
    _plans.check_operand(x, fn)
    _plans.check_array(weight, "weight")
    _spatial(x, fn)
    if weight.ndim != x.ndim:
        raise ValueError(f"{fn}: weight must have rank {x.ndim}, got shape {weight.shape}")
    _check_dtypes(fn, x, weight)
    _same_device(fn, x, weight, bias)
    layout = _layout_of(x)
    desc = _descriptor(fn, tuple(x.shape), tuple(weight.shape), x.dtype, layout,
                       bias=bias is not None, **geometry)
    b = _bias(bias, desc.k, x.dtype, fn)
    xv, wv = _in_layout(x, layout), _in_layout(weight, layout)
    y = _empty(desc.y_shape, x.dtype, layout, x.device)
    if y.size:
        _plans.run(_plans.select(ConvPlan, desc), ConvArgs(xv, wv, y, b), x)
    return y


def conv_backward(grad_y, x, weight, stride=1, padding=0, dilation=1, groups=1, *,
                  transposed=False, output_padding=0, output_mask=(True, True, True)):
    """The gradients ``(grad_x, grad_w, grad_b)`` of ``y = conv(x, weight, bias, ...)`` (or of
    ``conv_transpose`` with ``transposed=True``) given ``grad_y``; ``output_mask`` (three bools,
    as torch's ``convolution_backward``) says which to compute (None for the others).
    ``grad_b`` is grad_y summed over the batch and spatial dims.  cuDNN's data- and
    filter-gradient graphs (a transposed convolution's data gradient is a forward
    convolution)."""
    fn = "conv_backward"
    _plans.check_operand(grad_y, fn)
    _plans.check_array(x, "x")
    _plans.check_array(weight, "weight")
    sp = _spatial(x, fn)
    if weight.ndim != x.ndim or grad_y.ndim != x.ndim:
        raise ValueError(f"{fn}: x {x.shape}, weight {weight.shape} and grad_y {grad_y.shape} "
                         f"must have one rank")
    _check_dtypes(fn, grad_y, x, weight)
    _same_device(fn, grad_y, x, weight)
    mask = tuple(bool(m) for m in output_mask)
    if len(mask) != 3:
        raise ValueError(f"{fn}: output_mask must be three bools, got {output_mask!r}")
    layout = _layout_of(x, grad_y)
    desc = _descriptor(fn, tuple(x.shape), tuple(weight.shape), x.dtype, layout,
                       transposed=bool(transposed), stride=stride, padding=padding,
                       dilation=dilation, groups=groups, output_padding=output_padding)
    if tuple(grad_y.shape) != desc.y_shape:
        raise ValueError(f"{fn}: grad_y has shape {grad_y.shape}, the convolution's output is "
                         f"{desc.y_shape}")
    gy = _in_layout(grad_y, layout)
    gx = gw = gb = None
    if mask[0]:
        wv = _in_layout(weight, layout)
        gx = _empty(desc.x_shape, x.dtype, layout, x.device)
        if gx.size:
            _plans.run(_plans.select(ConvBackwardDataPlan, desc),
                       ConvBackwardDataArgs(gy, wv, gx), x)
    if mask[1]:
        xv = _in_layout(x, layout)
        gw = _empty(desc.w_shape, x.dtype, layout, x.device)
        _plans.run(_plans.select(ConvBackwardFilterPlan, desc),
                   ConvBackwardFilterArgs(xv, gy, gw), x)
    if mask[2]:
        from ._statistical_functions import sum as _sum

        axes = (0,) + tuple(range(2, 2 + sp))
        if math.prod(grad_y.shape):
            gb = _sum(grad_y, axis=axes)
        else:
            from ._creation_functions import zeros

            gb = zeros((desc.k,), dtype=x.dtype, device=x.device)
    return gx, gw, gb
