"""Set functions of the standard: ``unique_all``, ``unique_counts``, ``unique_inverse``,
``unique_values`` (and the ``unique_consecutive`` extension).

On the device: the flattened input is argsorted (stable radix sort), gathered into sorted order,
group starts are flagged where a value differs from its predecessor (``!=``, so every NaN is its
own group and -0.0 == +0.0, as the standard specifies), the flags are compacted into the start
positions (``nonzero``; one device → host read of the unique count, the only sync) and the results
are gathered: values = sorted[starts], indices = perm[starts] (the first occurrence, thanks to the
stable sort), counts = differences of consecutive starts, inverse = the inclusive cumulative sum of
the flags − 1, scattered back through the permutation.  Values come out sorted ascending.
Real dtypes (bool, integers, floats); complex inputs raise UnsupportedError (no total order).
Index outputs are int64.
"""

from __future__ import annotations

from typing import NamedTuple

from baracuda_dsl.errors import UnsupportedError

from . import _dtypes as _dt
from ._array_object import Array
from ._gather import scatter_flat, take_flat

__all__ = ["unique_all", "unique_counts", "unique_inverse", "unique_values",
           "unique_consecutive"]


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


def _flat(x) -> Array:
    if not isinstance(x, Array):
        raise TypeError(f"expected an array_api Array, got {type(x).__name__}")
    if x.dtype in (_dt.complex64, _dt.complex128):
        raise UnsupportedError(f"unique of {x.dtype}: complex values have no order; wired: "
                               f"bool, integer and real floating dtypes")
    from ._manipulation_functions import reshape

    return reshape(x, (-1,))


def _group_starts(s: Array):
    """(flags, starts) of a sorted 1-D array: flags[i] = i == 0 or s[i] != s[i-1]."""
    from ._dispatch import apply, fill
    from ._nonzero import nonzero

    n = s.size
    flags = Array._empty((n,), _dt.bool, s.device)
    fill(flags[0:1], True)
    if n > 1:
        apply("not_equal", [s[1:], s[:-1]], s.dtype, outs=[flags[1:]], shape=(n - 1,))
    return flags, nonzero(flags)[0]


def _counts(starts: Array, n: int) -> Array:
    from ._dispatch import copy_into, fill
    from ._elementwise_functions import subtract

    k = starts.size
    ends = Array._empty((k,), _dt.int64, starts.device)
    if k > 1:
        copy_into(starts[1:], ends[:-1])
    fill(ends[k - 1:], n)
    return subtract(ends, starts)


def _inverse(flags: Array, perm: Array, shape) -> Array:
    from ._cumulative_functions import cumulative_sum
    from ._elementwise_functions import subtract
    from ._manipulation_functions import reshape

    group = subtract(cumulative_sum(flags, dtype=_dt.int64), 1)
    inv = Array._empty((flags.size,), _dt.int64, flags.device)
    scatter_flat(inv, perm, group)
    return reshape(inv, shape)


def _empty_results(x: Array, flat: Array):
    from ._creation_functions import empty

    e = empty((0,), dtype=_dt.int64, device=x.device)
    return (empty((0,), dtype=x.dtype, device=x.device), e,
            empty(x.shape, dtype=_dt.int64, device=x.device), e)


def unique_all(x: Array, /) -> UniqueAllResult:
    """Sorted unique values of ``x`` (flattened) with the first-occurrence ``indices``, the
    ``inverse_indices`` (shape of x, values[inverse] == x) and ``counts`` (int64)."""
    from ._sorting_functions import argsort

    flat = _flat(x)
    if flat.size == 0:
        return UniqueAllResult(*_empty_results(x, flat))
    perm = argsort(flat, stable=True)
    s = take_flat(flat, perm)
    flags, starts = _group_starts(s)
    return UniqueAllResult(take_flat(s, starts), take_flat(perm, starts),
                           _inverse(flags, perm, x.shape), _counts(starts, flat.size))


def unique_counts(x: Array, /) -> UniqueCountsResult:
    """Sorted unique values of ``x`` (flattened) and how often each occurs (int64)."""
    from ._sorting_functions import sort

    flat = _flat(x)
    if flat.size == 0:
        r = _empty_results(x, flat)
        return UniqueCountsResult(r[0], r[3])
    s = sort(flat)
    _, starts = _group_starts(s)
    return UniqueCountsResult(take_flat(s, starts), _counts(starts, flat.size))


def unique_inverse(x: Array, /) -> UniqueInverseResult:
    """Sorted unique values of ``x`` (flattened) and ``inverse_indices`` (int64, shape of x)
    with values[inverse_indices] == x."""
    from ._sorting_functions import argsort

    flat = _flat(x)
    if flat.size == 0:
        r = _empty_results(x, flat)
        return UniqueInverseResult(r[0], r[2])
    perm = argsort(flat, stable=True)
    s = take_flat(flat, perm)
    flags, starts = _group_starts(s)
    return UniqueInverseResult(take_flat(s, starts), _inverse(flags, perm, x.shape))


def unique_values(x: Array, /) -> Array:
    """Sorted unique values of ``x`` (flattened); every NaN is distinct."""
    from ._sorting_functions import sort

    flat = _flat(x)
    if flat.size == 0:
        return _empty_results(x, flat)[0]
    s = sort(flat)
    return take_flat(s, _group_starts(s)[1])


def unique_consecutive(x: Array, /, *, return_inverse: bool = False,
                       return_counts: bool = False):
    """torch.unique_consecutive over the flattened ``x``: collapse runs of equal consecutive
    values (no sort).  Returns values, or a tuple with inverse (shape of x) and/or counts."""
    flat = _flat(x)
    if flat.size == 0:
        r = _empty_results(x, flat)
        out = [r[0]] + ([r[2]] if return_inverse else []) + ([r[3]] if return_counts else [])
        return out[0] if len(out) == 1 else tuple(out)
    flags, starts = _group_starts(flat)
    out = [take_flat(flat, starts)]
    if return_inverse:
        from ._creation_functions import arange

        out.append(_inverse(flags, arange(flat.size, dtype=_dt.int64, device=x.device), x.shape))
    if return_counts:
        out.append(_counts(starts, flat.size))
    return out[0] if len(out) == 1 else tuple(out)
