"""Reduction extensions (not in the standard's main namespace): ``logsumexp`` (on the composite
``StatReducePlan``) and ``trace`` (the standard's ``linalg.trace``, also at top level: a strided
diagonal view summed by ``ReducePlan``)."""

from __future__ import annotations

import builtins

from . import _plans
from . import _statistical_functions as _sf
from ._array_object import Array
from ._manipulation_functions import diagonal_view
from ._reduce import stat_reduce
from ._records import recorded

__all__ = ["logsumexp", "trace"]


@recorded
def logsumexp(x: Array, /, *, axis=None, keepdims: builtins.bool = False) -> Array:
    """log Σ exp(x) over ``axis``, stabilised by the max (extension; real floating dtypes;
    −inf for an empty reduction; half inputs compute in float32; StatReducePlan)."""
    return stat_reduce("logsumexp", x, axis, keepdims)


def trace(x: Array, /, *, offset: int = 0, dtype=None) -> Array:
    """Σ of the ``offset`` diagonal over the last two axes (batched; array API linalg.trace):
    a strided diagonal view reduced by ReducePlan.  dtype rules as :func:`sum`."""
    _plans.check_operand(x, "trace")
    if x.ndim < 2:
        raise ValueError("trace: x must have at least two dimensions")
    return _sf.sum(diagonal_view(x, int(offset)), axis=-1, dtype=dtype)
