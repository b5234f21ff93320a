"""Set functions of the standard: ``unique_all``, ``unique_counts``, ``unique_inverse``,
``unique_values`` on ``UniquePlan`` (see ``_unique``: values sorted ascending, every NaN distinct,
-0.0 == +0.0; one device → host read of the number of unique values; complex inputs raise
UnsupportedError; index outputs int64).
"""

from __future__ import annotations

from typing import NamedTuple

from ._array_object import Array
from ._unique import unique

__all__ = ["unique_all", "unique_counts", "unique_inverse", "unique_values"]


class UniqueAllResult(NamedTuple):
    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCountsResult(NamedTuple):
    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    values: Array
    inverse_indices: Array


def unique_all(x: Array, /) -> UniqueAllResult:
    """Sorted unique values of ``x`` (flattened) with the first-occurrence ``indices``, the
    ``inverse_indices`` (shape of x, values[inverse] == x) and ``counts`` (int64)."""
    return UniqueAllResult(*unique(x, False, True, True, True))


def unique_counts(x: Array, /) -> UniqueCountsResult:
    """Sorted unique values of ``x`` (flattened) and how often each occurs (int64)."""
    v, _, _, c = unique(x, False, False, False, True)
    return UniqueCountsResult(v, c)


def unique_inverse(x: Array, /) -> UniqueInverseResult:
    """Sorted unique values of ``x`` (flattened) and ``inverse_indices`` (int64, shape of x)
    with values[inverse_indices] == x."""
    v, _, i, _ = unique(x, False, False, True, False)
    return UniqueInverseResult(v, i)


def unique_values(x: Array, /) -> Array:
    """Sorted unique values of ``x`` (flattened); every NaN is distinct."""
    return unique(x, False, False, False, False)[0]
