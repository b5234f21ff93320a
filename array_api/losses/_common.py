"""Pieces shared by the ``xp.losses`` modules."""

from __future__ import annotations


def legacy_reduction(size_average, reduce, reduction: str) -> str:
    """torch's legacy (size_average, reduce) → reduction mapping (both None: ``reduction``)."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"
