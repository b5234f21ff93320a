"""Scan extensions (torch semantics, not in the standard): ``cumsum``, ``cumprod``, ``cummax``,
``cummin`` (``(values, indices)``), ``logcumsumexp`` on ``ScanPlan``, and ``flatnonzero``
(numpy: flat row-major int64 indices of the non-zero elements) on ``CompactPlan``.

Dtypes and ``dtype=`` as the standard's cumulative functions (see ``_scan``); ``reverse=True``
scans from the end.  Outputs are new dense arrays; strided inputs are read in place.
"""

from __future__ import annotations

from typing import NamedTuple

from . import _plans
from ._array_object import Array
from ._scan import compact_nonzero, scan, scan_axis, scan_input, scan_result

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "flatnonzero"]


class CumExtremeResult(NamedTuple):
    values: Array
    indices: Array


def _ext(x, op, axis, dtype, reverse, what):
    _plans.check_operand(x, what)
    ax = scan_axis(x, axis, what)
    x, final = scan_input(x, dtype, what)
    out, _ = scan(x, op, ax, reverse=bool(reverse))
    return scan_result(out, final)


def cumsum(x: Array, /, axis: int = -1, *, dtype=None, reverse: bool = False) -> Array:
    """torch.cumsum-like: inclusive cumulative sum along ``axis`` (``reverse`` from the end)."""
    return _ext(x, "cumsum", axis, dtype, reverse, "cumsum")


def cumprod(x: Array, /, axis: int = -1, *, dtype=None, reverse: bool = False) -> Array:
    """torch.cumprod-like: inclusive cumulative product along ``axis``."""
    return _ext(x, "cumprod", axis, dtype, reverse, "cumprod")


def logcumsumexp(x: Array, /, axis: int = -1, *, reverse: bool = False) -> Array:
    """torch.logcumsumexp: log Σ_{k≤ℓ} exp(x_k) along ``axis`` (real floating dtypes)."""
    _plans.check_operand(x, "logcumsumexp")
    ax = scan_axis(x, axis, "logcumsumexp")
    return scan(x, "logcumsumexp", ax, reverse=bool(reverse))[0]


def _extreme(x, op, axis, reverse, what):
    _plans.check_operand(x, what)
    ax = scan_axis(x, axis, what)
    v, i = scan(x, op, ax, reverse=bool(reverse), with_indices=True)
    return CumExtremeResult(v, i)


def cummax(x: Array, /, axis: int = -1, *, reverse: bool = False) -> CumExtremeResult:
    """torch.cummax: (running maximum, int64 index of it); ties take the last index, NaN
    propagates (with the index of the latest NaN)."""
    return _extreme(x, "cummax", axis, reverse, "cummax")


def cummin(x: Array, /, axis: int = -1, *, reverse: bool = False) -> CumExtremeResult:
    """torch.cummin: (running minimum, int64 index of it); ties → last index, NaN propagates."""
    return _extreme(x, "cummin", axis, reverse, "cummin")


def flatnonzero(x: Array, /) -> Array:
    """Flat row-major int64 indices of the non-zero elements of ``x`` (any rank)."""
    _plans.check_operand(x, "flatnonzero")
    return compact_nonzero(x, "flat")
