"""How the cumulative functions (``cumulative_sum`` / ``cumulative_prod`` and the scan
extensions) drive ``ScanPlan``, and ``nonzero`` / ``flatnonzero`` drive ``CompactPlan``.

Scans: result dtypes follow ``baracuda_dsl.ops.scan.scan.default_out_dtype`` (floats keep their
dtype; signed integers and bool accumulate to int64, unsigned integers to uint64); ``dtype=`` a
floating type casts the input first, an integer type computes in 64 bits and casts the result
(the same wrapped values as accumulating in that type).  Outputs are new dense arrays; strided
inputs are read in place; ordered on the legacy default stream.

Compaction: a count pass, one device → host read of the count (the only sync: the result size
depends on the data), then the scatter of the flat indices or coordinates (int64).
"""

from __future__ import annotations

import functools

from baracuda_dsl.errors import InvalidProblemError, UnsupportedError

from . import _dtypes as _dt
from . import _plans
from ._array_object import Array
from ._data_type_functions import astype


# ------------------------------------------------------------------------------ scans
def scan(x: Array, op: str, axis: int, exclusive: bool = False, reverse: bool = False,
         with_indices: bool = False):
    """(values, int64 indices or None) of one ScanPlan launch of ``op`` along ``axis``
    (``exclusive``: the identity prepended, extent L + 1; ``with_indices``: the arg of running
    extremes)."""
    from baracuda_dsl.ops.scan.scan import ScanArgs, ScanDescriptor, ScanPlan, default_out_dtype

    desc = ScanDescriptor(tuple(x.shape), axis, op, x.dtype, exclusive, reverse)
    plan = _plans.select(ScanPlan, desc)
    oshape = () if (x.ndim == 0 and not exclusive) else desc.out_shape
    out = Array._empty(oshape, default_out_dtype(op, x.dtype), x.device)
    idx = Array._empty(tuple(x.shape), _dt.int64, x.device) if with_indices else None
    ws, _keep = _plans.workspace(plan, x)
    plan.run(ScanArgs(x, out, idx), workspace=ws)
    return out, idx


def scan_input(x: Array, dtype, what: str):
    """(input to scan, final dtype or None) for the ``dtype=`` argument."""
    if dtype is None:
        return x, None
    if dtype in _dt.COMPLEX_FLOATING_DTYPES or x.dtype in _dt.COMPLEX_FLOATING_DTYPES:
        raise UnsupportedError(f"{what}: complex dtypes are not wired; wired: bool, integer and "
                               f"real floating dtypes")
    if dtype in _dt.REAL_FLOATING_DTYPES:
        if x.dtype != dtype:
            x = astype(x, dtype)
        return x, None
    if dtype in _dt.INTEGER_DTYPES or dtype == _dt.bool:
        if x.dtype in _dt.REAL_FLOATING_DTYPES:
            x = astype(x, dtype)
        return x, dtype
    raise UnsupportedError(f"{what}: dtype {dtype} is not wired")


def scan_result(out: Array, final):
    """``out`` cast to the ``final`` dtype from :func:`scan_input` (None: as is)."""
    if final is None or out.dtype == final:
        return out
    return astype(out, final)


def scan_axis(x: Array, axis, what: str) -> int:
    """``axis`` checked for a scan of ``x`` (None: 0, allowed for ndim ≤ 1 only)."""
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


# ------------------------------------------------------------------------------ compaction
@functools.lru_cache(maxsize=256)
def _compact_plan(shape, dtype, mode):
    from baracuda_dsl.ops.scan.compaction import CompactDescriptor, CompactPlan

    return CompactPlan.select(CompactDescriptor(shape, dtype, mode))


def compact_nonzero(x: Array, mode: str) -> Array:
    """The non-zero elements of ``x`` (-0.0 is zero, NaN is not) in row-major order:
    ``mode='flat'`` their flat indices (n,), ``'coords'`` their coordinates (ndim, n); int64.
    Every dtype except complex128."""
    from baracuda_dsl.ops.scan.compaction import CompactArgs

    plan = _compact_plan(tuple(x.shape), x.dtype, mode)
    ws, _keep = _plans.workspace(plan, x)
    cnt = Array._empty((1,), _dt.int64, x.device)
    plan.run_count(CompactArgs(x, cnt), workspace=ws)
    n = int(cnt.to_numpy()[0])
    shape = (n,) if mode == "flat" else (x.ndim, n)
    out = Array._empty(shape, _dt.int64, x.device)
    if n:
        plan.run_scatter(CompactArgs(x, cnt, out), workspace=ws)
    return out
