"""Sorting extensions (torch semantics, not in the standard): ``topk``, ``kthvalue``, ``msort``
on the sorting Plans (``baracuda_dsl.ops.sorting.sort``; order and NaN rules as ``sort``) and
``unique_consecutive`` on ``UniqueConsecutivePlan`` (see ``_unique``).  Outputs are new dense
arrays; inputs of any strides are read in place."""

from __future__ import annotations

import builtins

from . import _dtypes as _dt
from . import _plans
from ._array_object import Array
from ._sorting_functions import check_flag
from ._unique import unique

__all__ = ["topk", "kthvalue", "msort", "unique_consecutive"]


def topk(x: Array, k: int, /, *, axis: int = -1, largest: builtins.bool = True,
         sorted: builtins.bool = True):  # noqa: A002
    """(values, int64 indices) of the ``k`` largest (``largest``) or smallest elements along
    ``axis``, sorted (torch.topk; NaN counts as largest)."""
    from baracuda_dsl.ops.sorting.sort import TopkArgs, TopkDescriptor, TopkPlan

    _plans.check_array(x, "x")
    check_flag(largest, "largest", "topk")
    check_flag(sorted, "sorted", "topk")
    desc = TopkDescriptor(x.shape, k, axis, x.dtype, largest, True)
    plan = _plans.select(TopkPlan, desc)
    vals = Array._empty(desc.out_shape, x.dtype, x.device)
    idx = Array._empty(desc.out_shape, _dt.int64, x.device)
    _plans.run(plan, TopkArgs(x, vals, idx), x)
    return vals, idx


def kthvalue(x: Array, k: int, /, *, axis: int = -1, keepdims: builtins.bool = False):
    """(values, int64 indices) of the ``k``-th smallest element (1-based) along ``axis``
    (torch.kthvalue)."""
    from baracuda_dsl.ops.sorting.sort import KthvalueArgs, KthvalueDescriptor, KthvaluePlan

    _plans.check_array(x, "x")
    check_flag(keepdims, "keepdims", "kthvalue")
    desc = KthvalueDescriptor(x.shape, k, axis, x.dtype, keepdims)
    plan = _plans.select(KthvaluePlan, desc)
    vals = Array._empty(desc.out_shape, x.dtype, x.device)
    idx = Array._empty(desc.out_shape, _dt.int64, x.device)
    _plans.run(plan, KthvalueArgs(x, vals, idx), x)
    return vals, idx


def msort(x: Array, /) -> Array:
    """torch.msort: ``sort(x, axis=0)``."""
    from baracuda_dsl.ops.sorting.sort import MsortArgs, MsortDescriptor, MsortPlan

    _plans.check_array(x, "x")
    plan = _plans.select(MsortPlan, MsortDescriptor(x.shape, x.dtype))
    out = Array._empty(x.shape, x.dtype, x.device)
    _plans.run(plan, MsortArgs(x, out), x)
    return out


def unique_consecutive(x: Array, /, *, return_inverse: bool = False,
                       return_counts: bool = False):
    """torch.unique_consecutive over the flattened ``x``: collapse runs of equal consecutive
    values (no sort).  Returns values, or a tuple with inverse (shape of x) and/or counts."""
    v, _, i, c = unique(x, True, False, bool(return_inverse), bool(return_counts))
    out = [v] + ([i] if return_inverse else []) + ([c] if return_counts else [])
    return out[0] if len(out) == 1 else tuple(out)
