"""Set functions of the standard: ``unique_all``, ``unique_counts``, ``unique_inverse``,
``unique_values`` (and the ``unique_consecutive`` extension).

On ``baracuda_dsl.ops.sorting.unique.UniquePlan`` (stable sort, group-start flags ``!=`` — so every NaN
is its own value and -0.0 == +0.0, as the standard specifies — compaction, gathers and a scan, all
on the device); the one device → host read is the number of unique values, which sizes the
results (views of the plan's worst-case outputs).  Values come out sorted ascending.
Real dtypes (bool, integers, floats); complex inputs raise UnsupportedError (no total order).
Index outputs are int64.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from baracuda_dsl.errors import UnsupportedError

from . import _dtypes as _dt
from ._array_object import Array

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
    from ._counting_functions import _flat1d

    if isinstance(x, Array) and x.dtype in (_dt.complex64, _dt.complex128):
        raise UnsupportedError(f"unique of {x.dtype}: complex values have no order; wired: "
                               f"bool, integer and real floating dtypes")
    return _flat1d(x)


@functools.lru_cache(maxsize=256)
def _plan(consecutive: bool, n: int, dt, index: bool, inverse: bool, counts: bool):
    from baracuda_dsl.ops.sorting.unique import UniqueConsecutivePlan, UniqueDescriptor, UniquePlan

    cls = UniqueConsecutivePlan if consecutive else UniquePlan
    return cls.select(UniqueDescriptor(n, dt, index, inverse, counts))


def _unique(x: Array, consecutive: bool, index: bool, inverse: bool, counts: bool):
    """(values, indices, inverse_indices, counts) — None for what was not asked for."""
    from baracuda_dsl.ops.sorting.unique import UniqueArgs

    from ._dispatch import _view
    from ._extensions import _workspace
    from ._manipulation_functions import reshape

    flat = _flat(x)
    n, dev = flat.size, x.device
    plan = _plan(consecutive, n, flat.dtype, index, inverse, counts)

    def buf(dt):
        return Array._empty((n,), dt, dev)

    vals, cnt = buf(flat.dtype), Array._empty((1,), _dt.int64, dev)
    idx = buf(_dt.int64) if index else None
    inv = buf(_dt.int64) if inverse else None
    cts = buf(_dt.int64) if counts else None
    ws, _keep = _workspace(plan, flat)
    plan.run(UniqueArgs(_view(flat), _view(vals), _view(cnt),
                        None if idx is None else _view(idx), None if inv is None else _view(inv),
                        None if cts is None else _view(cts)), workspace=ws)
    k = int(cnt.to_numpy()[0]) if n else 0
    return (vals[:k], None if idx is None else idx[:k],
            None if inv is None else reshape(inv, x.shape), None if cts is None else cts[:k])


def unique_all(x: Array, /) -> UniqueAllResult:
    """Sorted unique values of ``x`` (flattened) with the first-occurrence ``indices``, the
    ``inverse_indices`` (shape of x, values[inverse] == x) and ``counts`` (int64)."""
    return UniqueAllResult(*_unique(x, False, True, True, True))


def unique_counts(x: Array, /) -> UniqueCountsResult:
    """Sorted unique values of ``x`` (flattened) and how often each occurs (int64)."""
    v, _, _, c = _unique(x, False, False, False, True)
    return UniqueCountsResult(v, c)


def unique_inverse(x: Array, /) -> UniqueInverseResult:
    """Sorted unique values of ``x`` (flattened) and ``inverse_indices`` (int64, shape of x)
    with values[inverse_indices] == x."""
    v, _, i, _ = _unique(x, False, False, True, False)
    return UniqueInverseResult(v, i)


def unique_values(x: Array, /) -> Array:
    """Sorted unique values of ``x`` (flattened); every NaN is distinct."""
    return _unique(x, False, False, False, False)[0]


def unique_consecutive(x: Array, /, *, return_inverse: bool = False,
                       return_counts: bool = False):
    """torch.unique_consecutive over the flattened ``x``: collapse runs of equal consecutive
    values (no sort).  Returns values, or a tuple with inverse (shape of x) and/or counts."""
    v, _, i, c = _unique(x, True, False, bool(return_inverse), bool(return_counts))
    out = [v] + ([i] if return_inverse else []) + ([c] if return_counts else [])
    return out[0] if len(out) == 1 else tuple(out)
