"""Operand and descriptor checks the attention plans share (pure Python, no DSL): integer
fields, i32 extents, outputs disjoint from every operand, unit-stride last dims."""

from __future__ import annotations

from ...errors import InvalidProblemError, UnsupportedError
from ..shape.layout import check_disjoint as _ranges_disjoint

I32_MAX = 2**31 - 1


def check_int(v, what: str, lo: int = 0) -> int:
    """``v`` when it is an int (not a bool) >= ``lo``; InvalidProblemError otherwise."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise InvalidProblemError(f"{what} must be an int, got {v!r}")
    if v < lo:
        raise InvalidProblemError(f"{what} must be >= {lo}, got {v}")
    return v


def check_extent(v, what: str, lo: int = 0) -> int:
    """:func:`check_int`, and UnsupportedError past 2³¹ − 1 (the kernels take i32 extents)."""
    check_int(v, what, lo)
    if v > I32_MAX:
        raise UnsupportedError(f"{what} = {v} is past 2^31 - 1 (the kernels take i32 extents)")
    return v


def check_disjoint(out, name: str, others) -> None:
    """InvalidProblemError when output ``out`` may share bytes with any of ``others``
    ((name, view) pairs, None skipped; byte ranges, as ``shape.layout.check_disjoint``)."""
    if out is None:
        return
    for other_name, o in others:
        if o is not None and o.device == out.device:
            _ranges_disjoint(o, out, f"{name} overlaps {other_name}")


def check_unit_last(v, name: str) -> None:
    """UnsupportedError unless the last dim of view ``v`` has unit stride (extent <= 1: any)."""
    if v.shape and v.shape[-1] > 1 and v.strides[-1] != 1:
        raise UnsupportedError(f"{name}: the last dim must have unit stride (strides "
                               f"{v.strides} for shape {v.shape}); make it contiguous first")
