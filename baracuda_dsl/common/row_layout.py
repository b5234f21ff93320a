"""Strided row addressing shared by the row plans (row norms, softmax): the rows of a call are
the product of the outer dims of every operand, collapsed to at most three strided groups
(extents ``sizes``, one stride triple per operand), so that row ``r`` starts at
``i0·st0 + i1·st1 + i2·st2`` with ``(i0, i1, i2)`` the digits of ``r`` in ``sizes`` (the kernels'
``row_offset``).  Any slice, transpose or broadcast of the outer dims collapses this way as long
as it needs no more than three groups.  Pure Python."""

from __future__ import annotations

import math
from typing import Sequence, Tuple

from ..errors import UnsupportedError
from ..plan import collapse_dims

#: strided groups of outer dims the row kernels address (s1, s2 and three strides per operand)
GROUPS = 3


class RowLayout:
    """How the operands of one call map onto (rows × N): ``sizes`` (three outer extents,
    padded with 1), ``strides`` (three outer strides per operand, padded with 0) and ``gcd``, the
    gcd of N and every outer stride (a vector path of width ``vec`` needs ``gcd % vec == 0``)."""

    __slots__ = ("sizes", "strides", "gcd")

    def __init__(self, sizes: Tuple[int, int, int], strides: Tuple[Tuple[int, ...], ...],
                 gcd: int):
        self.sizes, self.strides, self.gcd = sizes, strides, gcd

    def aligned(self, vec: int, views) -> bool:
        """True when rows of ``vec``-element vectors start 16-byte aligned in every view."""
        return self.gcd % vec == 0 and all(v.ptr % 16 == 0 for v in views)

    def flat_strides(self) -> Tuple[int, ...]:
        """Every operand's three strides, operand after operand (the kernels' argument order)."""
        return tuple(s for st in self.strides for s in st)


def strided_rows(n: int, outer: Sequence[int], outer_strides: Sequence[Sequence[int]],
                 what: str) -> RowLayout:
    """The :class:`RowLayout` of rows of ``n`` unit-stride elements over the ``outer`` dims
    (``outer_strides``: one stride tuple per operand); UnsupportedError naming ``what`` (the
    outer dims) when they need more than three strided groups."""
    col = collapse_dims(tuple(outer), *[tuple(st) for st in outer_strides])
    oshape, ostrides = col[0], col[1:]
    if len(oshape) > GROUPS:
        raise UnsupportedError(
            f"{what} collapse to {len(oshape)} strided groups; at most {GROUPS} are wired. Make "
            f"the operands contiguous first (array_api does this automatically).")
    pad = GROUPS - len(oshape)
    sizes = (1,) * pad + tuple(oshape)
    groups = tuple((0,) * pad + tuple(st) for st in ostrides)
    return RowLayout(sizes, groups, math.gcd(n, *[s for st in groups for s in st]))


__all__ = ["GROUPS", "RowLayout", "strided_rows"]
