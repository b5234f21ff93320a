"""Searching functions of the standard (2024.12): ``argmax``, ``argmin``, ``count_nonzero``,
``nonzero``, ``searchsorted``, ``where``.

``argmax`` / ``argmin`` / ``count_nonzero`` are reductions (``ArgReducePlan`` / ``ReducePlan``,
see ``_reduce``; ``count_nonzero`` sums ``x != 0``, NaN is non-zero).  ``nonzero`` runs on
``CompactPlan`` (see ``_scan``: one device → host read of the count, the result size depends on
the data; every dtype except complex128; -0.0 is zero, NaN is not; 0-d input raises ValueError
as the standard specifies).  ``searchsorted`` runs on ``SearchsortedPlan`` (NaN sorts last, as
numpy).  ``where`` is one elementwise kernel.
"""

from __future__ import annotations

import builtins

from baracuda_dsl import dtypes as _d
from baracuda_dsl.errors import InvalidProblemError

from . import _dispatch
from . import _dtypes as _dt
from . import _plans
from . import _promotion
from ._array_object import Array
from ._creation_functions import asarray, zeros
from ._data_type_functions import astype
from ._elementwise_functions import convert_scalar, is_scalar
from ._manipulation_functions import reshape
from ._reduce import finish, is_complex, keepdims_shape, nonzero_mask, reduce, reduction_axes
from ._scan import compact_nonzero
from ._records import recorded

__all__ = ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"]


# ------------------------------------------------------------------------------ reductions
def _arg(op, x, axis, keepdims):
    _plans.check_operand(x, op)
    if is_complex(x.dtype) or x.dtype == _dt.bool:
        raise TypeError(f"{op}: needs a real numeric array, got {x.dtype}")
    if axis is not None and not isinstance(axis, int):
        raise TypeError(f"{op}: axis must be an int or None")
    axes = reduction_axes(axis, x.ndim)
    if x.size == 0 or builtins.any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"{op}: zero-size reduction")
    if not axes:  # 0-d input
        return zeros(x.shape, dtype=_dt.int64, device=x.device)
    src = x
    if axis is None and x.ndim > 1:
        src, axes = reshape(x, (-1,)), (0,)
    res = reduce(src, axes, op)
    if keepdims:
        return reshape(res, keepdims_shape(x.shape, reduction_axes(axis, x.ndim)))
    return res


@recorded
def argmax(x: Array, /, *, axis=None, keepdims: builtins.bool = False) -> Array:
    """Index (int64) of the first maximum along ``axis`` (None: of the flattened array); NaN
    counts as the maximum."""
    return _arg("argmax", x, axis, keepdims)


@recorded
def argmin(x: Array, /, *, axis=None, keepdims: builtins.bool = False) -> Array:
    """Index (int64) of the first minimum along ``axis`` (None: of the flattened array); NaN
    counts as the minimum."""
    return _arg("argmin", x, axis, keepdims)


def count_nonzero(x: Array, /, *, axis=None, keepdims: builtins.bool = False) -> Array:
    """Number (int64) of non-zero elements over ``axis`` (NaN is non-zero)."""
    _plans.check_operand(x, "count_nonzero")
    axes = reduction_axes(axis, x.ndim)
    return finish(reduce(nonzero_mask(x), axes, "sum"), x, axes, keepdims)


# ------------------------------------------------------------------------------ nonzero
def nonzero(x: Array, /) -> tuple:
    """Tuple of ``x.ndim`` int64 arrays (one per dimension) with the coordinates of the non-zero
    elements of ``x``, in row-major order.  ValueError for 0-d input."""
    _plans.check_operand(x, "nonzero")
    if x.ndim == 0:
        raise ValueError("nonzero: 0-d arrays are not allowed (array API); use reshape(x, (1,))")
    coords = compact_nonzero(x, "coords")
    return tuple(coords[d] for d in range(x.ndim))


# ------------------------------------------------------------------------------ searchsorted
def searchsorted(x1: Array, x2, /, *, side: str = "left", sorter: Array = None) -> Array:
    """int64 indices where the elements of ``x2`` (an Array, or a Python int / float giving a
    0-d result) would be inserted into the 1-D ``x1``
    (sorted ascending, or through ``sorter``) to keep it sorted; ``side`` 'left' (first
    suitable) or 'right' (last).  NaN sorts last (numpy)."""
    from baracuda_dsl.ops.sorting.searchsorted import (SearchsortedArgs, SearchsortedDescriptor,
                                                       SearchsortedPlan)

    _plans.check_array(x1, "x1")
    if isinstance(x2, (int, float)) and not isinstance(x2, builtins.bool):
        # a Python scalar (2025.12 draft): 0-d query
        x2 = asarray(x2, dtype=x1.dtype, device=x1.device)
    _plans.check_array(x2, "x2")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be one-dimensional, got shape {x1.shape}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if x1.dtype != x2.dtype:
        dt = _promotion.result_type(x1, x2)
        x1, x2 = astype(x1, dt), astype(x2, dt)
    if sorter is not None:
        _plans.check_array(sorter, "sorter")
        if sorter.shape != x1.shape:
            raise ValueError(f"searchsorted: sorter shape {sorter.shape} != x1 shape {x1.shape}")
        if not _dt.isdtype(sorter.dtype, "integral"):
            raise TypeError("searchsorted: sorter must have an integer dtype")
        if sorter.dtype != _dt.int64:
            sorter = astype(sorter, _dt.int64)
    try:
        desc = SearchsortedDescriptor(x1.shape, x2.shape, x1.dtype, side, _dt.int64,
                                      sorter is not None)
    except InvalidProblemError as e:
        raise ValueError(str(e)) from None
    plan = _plans.select(SearchsortedPlan, desc)
    out = Array._empty(x2.shape, _dt.int64, x1.device)
    _plans.run(plan, SearchsortedArgs(x1, x2, out, sorter), x1)
    return out


# ------------------------------------------------------------------------------ where
@recorded
def where(condition: Array, x1, x2, /) -> Array:
    """``x1`` where ``condition`` is True, else ``x2`` (broadcast together).  ``condition`` must
    be a bool Array; ``x1`` / ``x2`` Arrays or Python scalars (2024.12), at least one an Array;
    result dtype ``result_type(x1, x2)``."""
    if not isinstance(condition, Array):
        raise TypeError(f"where: condition must be an array_api Array, got "
                        f"{type(condition).__name__}")
    if condition.dtype != _d.bool_:
        raise TypeError(f"where: condition must have dtype bool, got {condition.dtype.name}")
    for k, v in enumerate((x1, x2)):
        if not isinstance(v, Array) and not is_scalar(v):
            raise TypeError(f"where: x{k + 1} must be an Array or a Python scalar, got "
                            f"{type(v).__name__}")
    if not isinstance(x1, Array) and not isinstance(x2, Array):
        raise TypeError("where: at least one of x1, x2 must be an Array")
    dt = _promotion.result_type(x1, x2)
    ops = [convert_scalar(v, dt) if is_scalar(v) else v for v in (x1, x2)]
    return _dispatch.elementwise("where", [condition] + ops, dt, dt)
