"""Unfold / fold extensions (torch.nn.functional.unfold / fold semantics, generalised to 1-3
spatial dims), dispatching to :mod:`baracuda_dsl.ops.conv.im2col`.

``unfold(x, kernel_size, dilation=1, padding=0, stride=1)``: ``x`` is (N, C, *spatial) with 1, 2
or 3 spatial dims (the spatial rank is ``x.ndim − 2``; torch's unfold is the 4-D case), any
strides; the result is a new dense (N, C·Π kernel_size, L) array, L = the number of sliding
blocks, ``cols[n, c·KK + κ, λ] = x[n, c, λ·stride − padding + κ·dilation]`` (0 in the padding).

``fold(x, output_size, kernel_size, dilation=1, padding=0, stride=1)``: ``x`` is
(N, C·Π kernel_size, L); ``output_size`` an int (2-D, like torch) or a sequence of 1-3 ints (its
length is the spatial rank); the result is a new dense (N, C, *output_size) array summing every
column entry onto its image element, in a fixed order (deterministic, no atomics).

Each is the other's gradient: ``unfold``'s backward is ``fold`` with the input's spatial size as
``output_size``; ``fold``'s backward is ``unfold``.  Dtypes float16, bfloat16, float32, float64
(fold accumulates in float32, float64 for float64); other dtypes are a ``TypeError``.  Unbatched
inputs are not taken (add a leading size-1 dim).  Bad geometry is ``ValueError``
(``InvalidProblemError``).
"""

from __future__ import annotations

from . import _elementwise_functions as _ef
from . import _plans
from ._array_object import Array

_CAT = "real floating-point"


def unfold(x, kernel_size, dilation=1, padding=0, stride=1) -> Array:
    """torch.nn.functional.unfold (im2col) over 1-3 spatial dims (``x.ndim − 2``)."""
    from baracuda_dsl.ops.conv.im2col import Im2ColArgs, Im2ColDescriptor, Im2ColPlan

    _plans.check_array(x, "x")
    _ef.check_dtype(x.dtype, _CAT, "unfold")
    k = x.ndim - 2
    if k not in (1, 2, 3):
        raise ValueError(f"unfold: expected an (N, C, *spatial) array with 1-3 spatial dims, got "
                         f"shape {tuple(x.shape)}")
    desc = Im2ColDescriptor(k, tuple(x.shape), kernel_size, dilation, padding, stride, x.dtype)
    plan = _plans.select(Im2ColPlan, desc)
    cols = Array._empty(desc.out_shape, x.dtype, x.device)
    _plans.run(plan, Im2ColArgs(x, cols), x)
    return cols


def fold(x, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Array:
    """torch.nn.functional.fold (col2im); ``output_size``: an int (2-D) or 1-3 ints."""
    from baracuda_dsl.ops.conv.im2col import Col2ImArgs, Col2ImDescriptor, Col2ImPlan

    _plans.check_array(x, "x")
    _ef.check_dtype(x.dtype, _CAT, "fold")
    if x.ndim != 3:
        raise ValueError(f"fold: expected an (N, C·prod(kernel_size), L) array, got shape "
                         f"{tuple(x.shape)}")
    if isinstance(output_size, int) and not isinstance(output_size, bool):
        k = 2
    else:
        try:
            k = len(output_size)
        except TypeError:
            raise ValueError(f"fold: output_size must be an int or 1-3 ints, got "
                             f"{output_size!r}") from None
    if k not in (1, 2, 3):
        raise ValueError(f"fold: output_size must have 1-3 entries, got {output_size!r}")
    desc = Col2ImDescriptor(k, tuple(x.shape), output_size, kernel_size, dilation, padding,
                            stride, x.dtype)
    plan = _plans.select(Col2ImPlan, desc)
    y = Array._empty(desc.out_shape, x.dtype, x.device)
    _plans.run(plan, Col2ImArgs(x, y), x)
    return y


__all__ = ["unfold", "fold"]
