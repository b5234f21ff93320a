"""Softmax-family extensions (torch.nn.functional semantics): ``softmax``, ``log_softmax`` and
``sparsemax`` along one axis, dispatching to :mod:`baracuda_dsl.ops.softmax.softmax`.

Dtypes: real floating only — float16, bfloat16, float32, float64 (half types compute in float32,
float64 in float64); bool / integer / complex inputs are a ``TypeError``.  The plans need the
axis to have unit stride: when the axis is last the input is used as is (any batch strides the
plan takes, otherwise a dense copy); for another axis the input is copied with the axis moved
last and the result is returned as a view with the axis moved back.  Results are new arrays.
Forward only: the backward plans live in ``baracuda_dsl.ops.softmax.softmax``.
"""

from __future__ import annotations

from baracuda_dsl.errors import UnsupportedError

from . import _elementwise_functions as _ef
from . import _plans
from ._array_object import Array
from ._manipulation_functions import ascontiguousarray, moveaxis, reshape
from ._records import recorded

_CAT = "real floating-point"


def _axis(axis, ndim: int, name: str) -> int:
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise TypeError(f"{name}: axis must be an int, got {axis!r}")
    r = max(ndim, 1)
    if not -r <= axis < r:
        raise ValueError(f"{name}: axis {axis} out of range for a rank-{ndim} array")
    return axis % r


def _rowwise(name: str, x, axis, plan_cls, desc_cls, args_cls, **desc_kw) -> Array:
    _plans.check_array(x, name)
    _ef.check_dtype(x.dtype, _CAT, name)
    if x.ndim == 0:
        # a single element: the axis is the element itself
        return reshape(_rowwise(name, reshape(x, (1,)), 0, plan_cls, desc_cls, args_cls,
                                **desc_kw), ())
    ax = _axis(axis, x.ndim, name)
    if ax != x.ndim - 1:
        xm = ascontiguousarray(moveaxis(x, ax, -1))
        ym = _rowwise(name, xm, -1, plan_cls, desc_cls, args_cls, **desc_kw)
        return moveaxis(ym, -1, ax)
    plan = _plans.select(plan_cls, desc_cls(tuple(x.shape), x.dtype, -1, **desc_kw))
    y = Array._empty(x.shape, x.dtype, x.device)
    try:
        plan.can_implement(args_cls(x, y))
    except UnsupportedError:
        x = ascontiguousarray(x)
    plan.run(args_cls(x, y))
    return y


@recorded
def softmax(x, /, axis: int = -1) -> Array:
    """exp(x − max)/Σ exp(x − max) along ``axis`` (torch.nn.functional.softmax with ``dim``);
    numerically stable; a row of −inf gives NaN (as PyTorch).  One kernel launch."""
    from baracuda_dsl.ops.softmax.softmax import SoftmaxArgs, SoftmaxDescriptor, SoftmaxPlan

    return _rowwise("softmax", x, axis, SoftmaxPlan, SoftmaxDescriptor, SoftmaxArgs, log=False)


@recorded
def log_softmax(x, /, axis: int = -1) -> Array:
    """x − max − log Σ exp(x − max) along ``axis`` (torch.nn.functional.log_softmax)."""
    from baracuda_dsl.ops.softmax.softmax import SoftmaxArgs, SoftmaxDescriptor, SoftmaxPlan

    return _rowwise("log_softmax", x, axis, SoftmaxPlan, SoftmaxDescriptor, SoftmaxArgs,
                    log=True)


def sparsemax(x, /, axis: int = -1) -> Array:
    """Sparsemax (Martins & Astudillo 2016) along ``axis``: max(x − τ, 0) with τ such that each
    row sums to 1 — the Euclidean projection onto the probability simplex; τ is exact
    (Michelot's fixed-point iteration, no sort), any row length."""
    from baracuda_dsl.ops.softmax.softmax import SparsemaxArgs, SparsemaxDescriptor, SparsemaxPlan

    return _rowwise("sparsemax", x, axis, SparsemaxPlan, SparsemaxDescriptor, SparsemaxArgs)


__all__ = ["softmax", "log_softmax", "sparsemax"]
