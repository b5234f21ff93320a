"""Sorting functions of the standard (2024.12): ``sort``, ``argsort`` on the sorting Plans
(``baracuda_dsl.ops.sorting.sort``).  Outputs are new dense arrays; inputs of any strides are read
in place.  Order: ascending puts NaNs last, descending first (torch); -0.0 == +0.0; always stable.
Plans are selected once per descriptor; workspaces come from the stream-ordered pool per call;
everything runs on the legacy default stream."""

from __future__ import annotations

import builtins

from . import _dtypes as _dt
from . import _plans
from ._array_object import Array

__all__ = ["sort", "argsort"]


def check_flag(v, name, what):
    """``v`` when it is a bool, else TypeError naming ``what``'s argument ``name``."""
    if not isinstance(v, builtins.bool):
        raise TypeError(f"{what}: {name} must be a bool, got {type(v).__name__}")
    return v


def sort(x: Array, /, *, axis: int = -1, descending: builtins.bool = False,
         stable: builtins.bool = True) -> Array:
    """Sorted copy of ``x`` along ``axis`` (stable; NaNs last ascending, first descending)."""
    from baracuda_dsl.ops.sorting.sort import SortArgs, SortDescriptor, SortPlan

    _plans.check_array(x, "x")
    check_flag(descending, "descending", "sort")
    check_flag(stable, "stable", "sort")
    plan = _plans.select(SortPlan, SortDescriptor(x.shape, axis, x.dtype, descending, True))
    out = Array._empty(x.shape, x.dtype, x.device)
    _plans.run(plan, SortArgs(x, out, None), x)
    return out


def argsort(x: Array, /, *, axis: int = -1, descending: builtins.bool = False,
            stable: builtins.bool = True) -> Array:
    """int64 indices that sort ``x`` along ``axis`` (numpy ``argsort(kind='stable')``;
    descending: stable descending order)."""
    from baracuda_dsl.ops.sorting.sort import ArgsortArgs, ArgsortDescriptor, ArgsortPlan

    _plans.check_array(x, "x")
    check_flag(descending, "descending", "argsort")
    check_flag(stable, "stable", "argsort")
    plan = _plans.select(ArgsortPlan, ArgsortDescriptor(x.shape, axis, x.dtype, descending, True))
    out = Array._empty(x.shape, _dt.int64, x.device)
    _plans.run(plan, ArgsortArgs(x, out), x)
    return out
