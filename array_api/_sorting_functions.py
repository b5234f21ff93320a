"""Sorting functions of the standard (``sort``, ``argsort``), ``searchsorted`` (searching
category, 2024.12) and the extensions ``topk``, ``kthvalue``, ``msort`` — dispatching to the
sorting Plans (baracuda_dsl/ops/sorting/sort.py, searchsorted.py).  Outputs are new dense arrays;
inputs of any strides are read in place.  Order: ascending puts NaNs last, descending first
(torch); -0.0 == +0.0; always stable.  Plans are selected once per descriptor; workspaces come
from the stream-ordered pool per call; everything runs on the legacy default stream."""

from __future__ import annotations

import builtins

from baracuda_dsl.errors import InvalidProblemError

from . import _dtypes as _dt
from . import _plans
from ._array_object import Array


_check_array = _plans.check_array
_select = _plans.select
_run = _plans.run


def _flag(v, name, what):
    if not isinstance(v, builtins.bool):
        raise TypeError(f"{what}: {name} must be a bool, got {type(v).__name__}")
    return v


def sort(x: Array, /, *, axis: int = -1, descending: builtins.bool = False,
         stable: builtins.bool = True) -> Array:
    """Sorted copy of ``x`` along ``axis`` (stable; NaNs last ascending, first descending)."""
    from baracuda_dsl.ops.sorting.sort import SortArgs, SortDescriptor, SortPlan

    _check_array(x, "x")
    _flag(descending, "descending", "sort")
    _flag(stable, "stable", "sort")
    plan = _select(SortPlan, SortDescriptor(x.shape, axis, x.dtype, descending, True))
    out = Array._empty(x.shape, x.dtype, x.device)
    _run(plan, SortArgs(x, out, None), x)
    return out


def argsort(x: Array, /, *, axis: int = -1, descending: builtins.bool = False,
            stable: builtins.bool = True) -> Array:
    """int64 indices that sort ``x`` along ``axis`` (numpy ``argsort(kind='stable')``;
    descending: stable descending order)."""
    from baracuda_dsl.ops.sorting.sort import ArgsortArgs, ArgsortDescriptor, ArgsortPlan

    _check_array(x, "x")
    _flag(descending, "descending", "argsort")
    _flag(stable, "stable", "argsort")
    plan = _select(ArgsortPlan, ArgsortDescriptor(x.shape, axis, x.dtype, descending, True))
    out = Array._empty(x.shape, _dt.int64, x.device)
    _run(plan, ArgsortArgs(x, out), x)
    return out


def msort(x: Array, /) -> Array:
    """torch.msort: ``sort(x, axis=0)``."""
    from baracuda_dsl.ops.sorting.sort import MsortArgs, MsortDescriptor, MsortPlan

    _check_array(x, "x")
    plan = _select(MsortPlan, MsortDescriptor(x.shape, x.dtype))
    out = Array._empty(x.shape, x.dtype, x.device)
    _run(plan, MsortArgs(x, out), x)
    return out


def topk(x: Array, k: int, /, *, axis: int = -1, largest: builtins.bool = True,
         sorted: builtins.bool = True):  # noqa: A002
    """(values, int64 indices) of the ``k`` largest (``largest``) or smallest elements along
    ``axis``, sorted (torch.topk; NaN counts as largest)."""
    from baracuda_dsl.ops.sorting.sort import TopkArgs, TopkDescriptor, TopkPlan

    _check_array(x, "x")
    _flag(largest, "largest", "topk")
    _flag(sorted, "sorted", "topk")
    desc = TopkDescriptor(x.shape, k, axis, x.dtype, largest, True)
    plan = _select(TopkPlan, desc)
    vals = Array._empty(desc.out_shape, x.dtype, x.device)
    idx = Array._empty(desc.out_shape, _dt.int64, x.device)
    _run(plan, TopkArgs(x, vals, idx), x)
    return vals, idx


def kthvalue(x: Array, k: int, /, *, axis: int = -1, keepdims: builtins.bool = False):
    """(values, int64 indices) of the ``k``-th smallest element (1-based) along ``axis``
    (torch.kthvalue)."""
    from baracuda_dsl.ops.sorting.sort import KthvalueArgs, KthvalueDescriptor, KthvaluePlan

    _check_array(x, "x")
    _flag(keepdims, "keepdims", "kthvalue")
    desc = KthvalueDescriptor(x.shape, k, axis, x.dtype, keepdims)
    plan = _select(KthvaluePlan, desc)
    vals = Array._empty(desc.out_shape, x.dtype, x.device)
    idx = Array._empty(desc.out_shape, _dt.int64, x.device)
    _run(plan, KthvalueArgs(x, vals, idx), x)
    return vals, idx


def searchsorted(x1: Array, x2, /, *, side: str = "left", sorter: Array = None) -> Array:
    """int64 indices where the elements of ``x2`` (an Array, or a Python int / float giving a
    0-d result) would be inserted into the 1-D ``x1``
    (sorted ascending, or through ``sorter``) to keep it sorted; ``side`` 'left' (first
    suitable) or 'right' (last).  NaN sorts last (numpy)."""
    from baracuda_dsl.ops.sorting.searchsorted import (SearchsortedArgs, SearchsortedDescriptor,
                                                       SearchsortedPlan)

    from . import _promotion
    from ._data_type_functions import astype

    _check_array(x1, "x1")
    if isinstance(x2, (int, float)) and not isinstance(x2, builtins.bool):
        from ._creation_functions import asarray   # a Python scalar (2025.12 draft): 0-d query

        x2 = asarray(x2, dtype=x1.dtype, device=x1.device)
    _check_array(x2, "x2")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be one-dimensional, got shape {x1.shape}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if x1.dtype != x2.dtype:
        dt = _promotion.result_type(x1, x2)
        x1, x2 = astype(x1, dt), astype(x2, dt)
    if sorter is not None:
        _check_array(sorter, "sorter")
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
    plan = _select(SearchsortedPlan, desc)
    out = Array._empty(x2.shape, _dt.int64, x1.device)
    _run(plan, SearchsortedArgs(x1, x2, out, sorter), x1)
    return out


__all__ = ["sort", "argsort", "searchsorted", "topk", "kthvalue", "msort"]
