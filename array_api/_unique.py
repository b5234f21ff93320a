"""How the set functions and ``unique_consecutive`` drive ``UniquePlan`` /
``UniqueConsecutivePlan`` over the flattened input: stable sort (not for the consecutive form),
group-start flags ``!=`` — so every NaN is its own value and -0.0 == +0.0, as the standard
specifies — compaction, gathers and a scan, all on the device.  The one device → host read is the
number of unique values, which sizes the results (views of the plan's worst-case outputs).
Real dtypes (bool, integers, floats); complex inputs raise UnsupportedError (no total order).
Index outputs are int64.
"""

from __future__ import annotations

import functools

from baracuda_dsl.errors import UnsupportedError

from . import _dtypes as _dt
from . import _plans
from ._array_object import Array, tensor_view
from ._manipulation_functions import flatten, reshape


def _flat(x) -> Array:
    if isinstance(x, Array) and x.dtype in _dt.COMPLEX_FLOATING_DTYPES:
        raise UnsupportedError(f"unique of {x.dtype}: complex values have no order; wired: "
                               f"bool, integer and real floating dtypes")
    return flatten(x)


@functools.lru_cache(maxsize=256)
def _plan(consecutive: bool, n: int, dt, index: bool, inverse: bool, counts: bool):
    from baracuda_dsl.ops.sorting.unique import UniqueConsecutivePlan, UniqueDescriptor, UniquePlan

    cls = UniqueConsecutivePlan if consecutive else UniquePlan
    return cls.select(UniqueDescriptor(n, dt, index, inverse, counts))


def unique(x: Array, consecutive: bool, index: bool, inverse: bool, counts: bool):
    """(values, indices, inverse_indices, counts) of the flattened ``x`` — None for what was not
    asked for; ``consecutive``: runs of equal neighbours instead of sorted unique values."""
    from baracuda_dsl.ops.sorting.unique import UniqueArgs

    flat = _flat(x)
    n, dev = flat.size, x.device
    plan = _plan(consecutive, n, flat.dtype, index, inverse, counts)

    def buf(dt):
        return Array._empty((n,), dt, dev)

    vals, cnt = buf(flat.dtype), Array._empty((1,), _dt.int64, dev)
    idx = buf(_dt.int64) if index else None
    inv = buf(_dt.int64) if inverse else None
    cts = buf(_dt.int64) if counts else None
    ws, _keep = _plans.workspace(plan, flat)
    plan.run(UniqueArgs(tensor_view(flat), tensor_view(vals), tensor_view(cnt),
                        None if idx is None else tensor_view(idx),
                        None if inv is None else tensor_view(inv),
                        None if cts is None else tensor_view(cts)), workspace=ws)
    k = int(cnt.to_numpy()[0]) if n else 0
    return (vals[:k], None if idx is None else idx[:k],
            None if inv is None else reshape(inv, x.shape), None if cts is None else cts[:k])
