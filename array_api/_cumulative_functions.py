"""Cumulative functions: the standard's ``cumulative_sum`` / ``cumulative_prod`` (2024.12) and the
extensions ``cumsum``, ``cumprod``, ``cummax``, ``cummin`` (``(values, indices)``, torch
semantics) and ``logcumsumexp``, all on ``baracuda_dsl.ops.scan.scan.ScanPlan``.

Result dtypes: floats keep their dtype; signed integers and bool accumulate to int64, unsigned
integers to uint64 (the standard's default integer rule).  ``dtype=`` a floating type casts the
input first (as the standard specifies); ``dtype=`` an integer type computes in 64 bits and casts
the result (the same wrapped values as accumulating in that type).  ``include_initial=True``
prepends the identity along ``axis`` (output extent ``L + 1``).  ``reverse=True`` (extensions)
scans from the end.  Outputs are new dense arrays; strided inputs are read in place.  Ordered on
the legacy default stream.
"""

from __future__ import annotations

from typing import NamedTuple

from baracuda_dsl.errors import InvalidProblemError, UnsupportedError

from . import _dtypes as _dt
from ._array_object import Array

__all__ = ["cumulative_sum", "cumulative_prod", "cumsum", "cumprod", "cummax", "cummin",
           "logcumsumexp"]


class CumExtremeResult(NamedTuple):
    values: Array
    indices: Array


def _check(x, what):
    if not isinstance(x, Array):
        raise TypeError(f"{what}: expected an array_api Array, got {type(x).__name__}")


def _select(desc):
    from baracuda_dsl.ops.scan.scan import ScanPlan

    from ._plans import select as sel

    return sel(ScanPlan, desc)


def _scan(x: Array, op: str, axis: int, exclusive: bool = False, reverse: bool = False,
          with_indices: bool = False):
    from baracuda_dsl.ops.scan.scan import ScanArgs, ScanDescriptor, default_out_dtype

    from ._extensions import _workspace

    desc = ScanDescriptor(tuple(x.shape), axis, op, x.dtype, exclusive, reverse)
    plan = _select(desc)
    oshape = () if (x.ndim == 0 and not exclusive) else desc.out_shape
    out = Array._empty(oshape, default_out_dtype(op, x.dtype), x.device)
    idx = Array._empty(tuple(x.shape), _dt.int64, x.device) if with_indices else None
    ws, _keep = _workspace(plan, x)
    plan.run(ScanArgs(x, out, idx), workspace=ws)
    return out, idx


def _resolve_dtype(x: Array, dtype, what: str):
    """(input to scan, final dtype or None) for the ``dtype=`` argument."""
    if dtype is None:
        return x, None
    if dtype in _dt._complex_floating_dtypes or x.dtype in _dt._complex_floating_dtypes:
        raise UnsupportedError(f"{what}: complex dtypes are not wired; wired: bool, integer and "
                               f"real floating dtypes")
    if dtype in _dt._real_floating_dtypes:
        if x.dtype != dtype:
            from ._data_type_functions import astype

            x = astype(x, dtype)
        return x, None
    if dtype in _dt._integer_dtypes or dtype == _dt.bool:
        if x.dtype in _dt._real_floating_dtypes:
            from ._data_type_functions import astype

            x = astype(x, dtype)
        return x, dtype
    raise UnsupportedError(f"{what}: dtype {dtype} is not wired")


def _finish(out: Array, final):
    if final is None or out.dtype == final:
        return out
    from ._data_type_functions import astype

    return astype(out, final)


def _std_axis(x: Array, axis, what):
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{what}: axis must be given for an array of {x.ndim} dimensions")
        return 0
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise TypeError(f"{what}: axis must be an int, got {axis!r}")
    r = max(x.ndim, 1)
    if not -r <= axis < r:
        raise InvalidProblemError(f"{what}: axis {axis} out of range for {x.ndim} dimensions")
    return axis


def _cumulative(x, op, axis, dtype, include_initial, what):
    _check(x, what)
    if x.dtype in _dt._complex_floating_dtypes:
        raise UnsupportedError(f"{what}: complex dtypes are not wired; wired: bool, integer and "
                               f"real floating dtypes")
    ax = _std_axis(x, axis, what)
    x, final = _resolve_dtype(x, dtype, what)
    out, _ = _scan(x, op, ax, exclusive=bool(include_initial))
    return _finish(out, final)


def cumulative_sum(x: Array, /, *, axis=None, dtype=None, include_initial: bool = False) -> Array:
    """Cumulative sum along ``axis`` (required for ndim > 1); ``include_initial`` prepends 0."""
    return _cumulative(x, "cumsum", axis, dtype, include_initial, "cumulative_sum")


def cumulative_prod(x: Array, /, *, axis=None, dtype=None, include_initial: bool = False) -> Array:
    """Cumulative product along ``axis`` (required for ndim > 1); ``include_initial`` prepends 1."""
    return _cumulative(x, "cumprod", axis, dtype, include_initial, "cumulative_prod")


def _ext(x, op, axis, dtype, reverse, what):
    _check(x, what)
    ax = _std_axis(x, axis, what)
    x, final = _resolve_dtype(x, dtype, what)
    out, _ = _scan(x, op, ax, reverse=bool(reverse))
    return _finish(out, final)


def cumsum(x: Array, /, axis: int = -1, *, dtype=None, reverse: bool = False) -> Array:
    """torch.cumsum-like: inclusive cumulative sum along ``axis`` (``reverse`` from the end)."""
    return _ext(x, "cumsum", axis, dtype, reverse, "cumsum")


def cumprod(x: Array, /, axis: int = -1, *, dtype=None, reverse: bool = False) -> Array:
    """torch.cumprod-like: inclusive cumulative product along ``axis``."""
    return _ext(x, "cumprod", axis, dtype, reverse, "cumprod")


def logcumsumexp(x: Array, /, axis: int = -1, *, reverse: bool = False) -> Array:
    """torch.logcumsumexp: log Σ_{k≤ℓ} exp(x_k) along ``axis`` (real floating dtypes)."""
    _check(x, "logcumsumexp")
    ax = _std_axis(x, axis, "logcumsumexp")
    return _scan(x, "logcumsumexp", ax, reverse=bool(reverse))[0]


def _extreme(x, op, axis, reverse, what):
    _check(x, what)
    ax = _std_axis(x, axis, what)
    v, i = _scan(x, op, ax, reverse=bool(reverse), with_indices=True)
    return CumExtremeResult(v, i)


def cummax(x: Array, /, axis: int = -1, *, reverse: bool = False) -> CumExtremeResult:
    """torch.cummax: (running maximum, int64 index of it); ties take the last index, NaN
    propagates (with the index of the latest NaN)."""
    return _extreme(x, "cummax", axis, reverse, "cummax")


def cummin(x: Array, /, axis: int = -1, *, reverse: bool = False) -> CumExtremeResult:
    """torch.cummin: (running minimum, int64 index of it); ties → last index, NaN propagates."""
    return _extreme(x, "cummin", axis, reverse, "cummin")
