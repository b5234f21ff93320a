"""Searching functions of the standard.  Wired: ``where`` (one elementwise kernel); ``argmax``,
``argmin``, ``nonzero``, ``searchsorted``, ``count_nonzero`` come with the reductions issue."""

from __future__ import annotations

from baracuda_dsl import dtypes as _d

from . import _promotion
from ._array_object import Array
from ._elementwise_functions import convert_scalar, is_scalar


def where(condition: Array, x1, x2, /) -> Array:
    """``x1`` where ``condition`` is True, else ``x2`` (broadcast together).  ``condition`` must
    be a bool Array; ``x1`` / ``x2`` Arrays or Python scalars (2024.12), at least one an Array;
    result dtype ``result_type(x1, x2)``."""
    if not isinstance(condition, Array):
        raise TypeError(f"where: condition must be an array_api Array, got "
                        f"{type(condition).__name__}")
    if condition.dtype != _d.bool_:
        raise TypeError(f"where: condition must have dtype bool, got {condition.dtype.name}")
    for k, v in enumerate((x1, x2)):
        if not isinstance(v, Array) and not is_scalar(v):
            raise TypeError(f"where: x{k + 1} must be an Array or a Python scalar, got "
                            f"{type(v).__name__}")
    if not isinstance(x1, Array) and not isinstance(x2, Array):
        raise TypeError("where: at least one of x1, x2 must be an Array")
    dt = _promotion.result_type(x1, x2)
    ops = [convert_scalar(v, dt) if is_scalar(v) else v for v in (x1, x2)]
    from . import _dispatch

    return _dispatch.elementwise("where", [condition] + ops, dt, dt)
