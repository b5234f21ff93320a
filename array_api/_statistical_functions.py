"""Statistical functions of the standard (2024.12): ``sum prod max min mean var std`` and the
cumulative ``cumulative_sum`` / ``cumulative_prod``.

Reductions run on ``ReducePlan`` (``var``/``std`` on the composite ``StatReducePlan``; see
``_reduce``): any axes, deterministic fixed-order combines, half types accumulate in float32;
complex ``sum``/``mean`` reduce the array viewed as real pairs.  Cumulative functions run on
``ScanPlan`` (see ``_scan``).  Results are new arrays; no host synchronisation.

Dtypes per the standard: ``sum``/``prod``/``cumulative_*`` of signed integers and bool default to
int64, unsigned to uint64, floats and complex keep theirs (``dtype=`` overrides: a float dtype
converts the input first, an integer dtype converts the result); ``max``/``min`` of an empty
reduction raise ValueError; ``mean``/``var``/``std`` need a floating input; the cumulative
functions take bool, integer and real floating dtypes, ``include_initial=True`` prepends the
identity along ``axis`` (output extent ``L + 1``).
"""

from __future__ import annotations

import builtins

from baracuda_dsl.errors import UnsupportedError

from . import _dispatch
from . import _dtypes as _dt
from . import _plans
from ._array_object import Array
from ._reduce import (as_pairs, check_floating, complex_from_pairs, finish, is_complex, reduce,
                      reduction_axes, stat_reduce)
from ._scan import scan, scan_axis, scan_input, scan_result
from ._records import recorded

__all__ = ["sum", "prod", "max", "min", "mean", "var", "std", "cumulative_sum",
           "cumulative_prod"]


# ------------------------------------------------------------------------------ reductions
def _sum_prod(op: str, x, axis, dtype, keepdims):
    _plans.check_operand(x, op)
    axes = reduction_axes(axis, x.ndim)
    if dtype is not None and dtype != x.dtype and _dt.isdtype(dtype, ("real floating",
                                                                       "complex floating")):
        x = _dispatch.cast(x, dtype)
        dtype = None
    if is_complex(x.dtype):
        if op == "prod":
            raise UnsupportedError("prod of complex arrays is not wired; wired: bool, integer "
                                   "and real floating dtypes")
        r = reduce(as_pairs(x), axes, "sum")
        return finish(complex_from_pairs(r, x.dtype), x, axes, keepdims)
    keep = dtype is not None and dtype == x.dtype and x.dtype != _dt.bool
    res = reduce(x, axes, op, keep_dtype=keep)
    if dtype is not None and res.dtype != dtype:
        res = _dispatch.cast(res, dtype)
    return finish(res, x, axes, keepdims)


@recorded
def sum(x: Array, /, *, axis=None, dtype=None, keepdims: builtins.bool = False) -> Array:  # noqa: A001
    """Σ over ``axis`` (None: all).  Integers/bool → int64 (unsigned → uint64) unless ``dtype``;
    floats and complex keep their dtype (f16/bf16 accumulate in f32)."""
    return _sum_prod("sum", x, axis, dtype, keepdims)


@recorded
def prod(x: Array, /, *, axis=None, dtype=None, keepdims: builtins.bool = False) -> Array:
    """Π over ``axis``; dtype rules as :func:`sum` (complex not wired)."""
    return _sum_prod("prod", x, axis, dtype, keepdims)


def _extreme(op, x, axis, keepdims):
    _plans.check_operand(x, op)
    if is_complex(x.dtype):
        raise TypeError(f"{op}: complex arrays have no order")
    axes = reduction_axes(axis, x.ndim)
    if builtins.any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"{op}: zero-size reduction has no identity")
    return finish(reduce(x, axes, op), x, axes, keepdims)


@recorded
def max(x: Array, /, *, axis=None, keepdims: builtins.bool = False) -> Array:  # noqa: A001
    """Maximum over ``axis`` (NaN propagates); x's dtype; ValueError on an empty reduction."""
    return _extreme("max", x, axis, keepdims)


@recorded
def min(x: Array, /, *, axis=None, keepdims: builtins.bool = False) -> Array:  # noqa: A001
    """Minimum over ``axis`` (NaN propagates); x's dtype; ValueError on an empty reduction."""
    return _extreme("min", x, axis, keepdims)


@recorded
def mean(x: Array, /, *, axis=None, keepdims: builtins.bool = False) -> Array:
    """Arithmetic mean over ``axis`` (NaN for an empty reduction); floating dtypes."""
    check_floating(x, "mean")
    axes = reduction_axes(axis, x.ndim)
    if is_complex(x.dtype):
        r = reduce(as_pairs(x), axes, "mean")
        return finish(complex_from_pairs(r, x.dtype), x, axes, keepdims)
    return finish(reduce(x, axes, "mean"), x, axes, keepdims)


@recorded
def var(x: Array, /, *, axis=None, correction=0.0, keepdims: builtins.bool = False) -> Array:
    """Σ (x − mean)² / (N − correction) over ``axis`` (NaN when N − correction ≤ 0); real
    floating dtypes; half inputs compute in float32 (StatReducePlan)."""
    return stat_reduce("var", x, axis, keepdims, correction)


@recorded
def std(x: Array, /, *, axis=None, correction=0.0, keepdims: builtins.bool = False) -> Array:
    """√var(x) (see :func:`var`)."""
    return stat_reduce("std", x, axis, keepdims, correction)


# ------------------------------------------------------------------------------ cumulative
def _cumulative(x, op, axis, dtype, include_initial, what):
    _plans.check_operand(x, what)
    if x.dtype in _dt.COMPLEX_FLOATING_DTYPES:
        raise UnsupportedError(f"{what}: complex dtypes are not wired; wired: bool, integer and "
                               f"real floating dtypes")
    ax = scan_axis(x, axis, what)
    x, final = scan_input(x, dtype, what)
    out, _ = scan(x, op, ax, exclusive=bool(include_initial))
    return scan_result(out, final)


@recorded
def cumulative_sum(x: Array, /, *, axis=None, dtype=None, include_initial: bool = False) -> Array:
    """Cumulative sum along ``axis`` (required for ndim > 1); ``include_initial`` prepends 0."""
    return _cumulative(x, "cumsum", axis, dtype, include_initial, "cumulative_sum")


def cumulative_prod(x: Array, /, *, axis=None, dtype=None, include_initial: bool = False) -> Array:
    """Cumulative product along ``axis`` (required for ndim > 1); ``include_initial`` prepends 1."""
    return _cumulative(x, "cumprod", axis, dtype, include_initial, "cumulative_prod")
