"""How the reductions (statistical, searching and utility functions, ``logsumexp``, ``trace``)
drive ``ReducePlan`` / ``ArgReducePlan``: axis normalisation (as array-api-strict), one launch per
reduction (plan selected once per descriptor, pool workspace, a dense copy first when the kernel
cannot walk the strides), keepdims, complex arrays viewed as real pairs, and the ``x != 0`` mask
of the boolean reductions.

Device reductions are deterministic (fixed-order combines; half types accumulate in float32);
``var`` / ``std`` / ``logsumexp`` go to the composite ``StatReducePlan`` (float32 for half
inputs).  Results are new arrays; no host synchronisation.
"""

from __future__ import annotations

import builtins
import functools

from baracuda_dsl.errors import UnsupportedError
from baracuda_dsl.ops.reduction.reductions import (ArgReducePlan, ReduceArgs, ReduceDescriptor,
                                                   ReducePlan)

from . import _dispatch
from . import _dtypes as _dt
from . import _plans
from ._array_object import Array, tensor_view
from ._manipulation_functions import ascontiguousarray, reshape


def reduction_axes(axis, ndim: int):
    """Normalised, sorted axes (None → all), validated like array-api-strict."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if isinstance(a, builtins.bool) or not isinstance(a, int):
            raise TypeError(f"axis must be an int or a tuple of ints, got {axis!r}")
        if not -builtins.max(ndim, 1) <= a < builtins.max(ndim, 1):
            raise IndexError(f"axis {a} is out of bounds for a {ndim}-D array")
        out.append(a % builtins.max(ndim, 1))
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis!r}")
    return tuple(sorted(a for a in out if a < builtins.max(ndim, 1)))


def keepdims_shape(shape, axes):
    """``shape`` with the reduced ``axes`` kept as extent 1."""
    return tuple(1 if d in axes else n for d, n in enumerate(shape))


@functools.lru_cache(maxsize=1024)
def _plan(cls, desc):
    return cls.select(desc)


def reduce(x: Array, axes, op: str, keep_dtype: bool = False, correction: float = 0.0) -> Array:
    """One ReducePlan / ArgReducePlan launch of ``op`` over ``axes``; the result without the
    reduced dims (keepdims not applied)."""
    arg = op in ("argmax", "argmin")
    desc = ReduceDescriptor(x.shape, axes, op, x.dtype, keep_dtype, float(correction))
    plan = _plan(ArgReducePlan if arg else ReducePlan, desc)
    out = Array._empty(desc.out_shape, desc.out_dtype, x.device)
    if out.size == 0:
        return out
    ws, _keep = _plans.workspace(plan, x)

    def go(src):
        a = ReduceArgs(tensor_view(src), None if arg else tensor_view(out),
                       tensor_view(out) if arg else None)
        plan.run(a, workspace=ws)

    try:
        go(x)
    except UnsupportedError:
        go(ascontiguousarray(x))  # a strided layout the kernel cannot walk: dense copy first
    return out


def finish(res: Array, x: Array, axes, keepdims: bool) -> Array:
    """``res`` (reduced over ``axes`` of ``x``) reshaped with the reduced dims kept when
    ``keepdims``."""
    if keepdims:
        return reshape(res, keepdims_shape(x.shape, axes))
    return res


def is_complex(dt) -> builtins.bool:
    return dt in _dt.COMPLEX_FLOATING_DTYPES


def as_pairs(x: Array) -> Array:
    """A complex array viewed as real (…, 2) pairs."""
    rt = _dt.float32 if x.dtype == _dt.complex64 else _dt.float64
    return Array._new(x._ptr, x.shape + (2,), tuple(2 * s for s in x.strides) + (1,), rt,
                      x.device, x._owner)


def complex_from_pairs(r: Array, ct) -> Array:
    """The complex (dtype ``ct``) view of real (…, 2) pairs."""
    return Array._new(r._ptr, r.shape[:-1], tuple(s // 2 for s in r.strides[:-1]), ct, r.device,
                      r._owner)


def check_floating(x, fn: str) -> None:
    """TypeError unless ``x`` is an Array of a floating dtype."""
    _plans.check_operand(x, fn)
    if not _dt.isdtype(x.dtype, ("real floating", "complex floating")):
        raise TypeError(f"{fn}: needs a floating-point array, got {x.dtype}")


def stat_reduce(op: str, x, axis, keepdims: builtins.bool, correction=0.0) -> Array:
    """``var`` / ``std`` / ``logsumexp`` over ``axis`` (real floating dtypes; StatReducePlan)."""
    check_floating(x, op)
    if is_complex(x.dtype):
        raise UnsupportedError(f"{op} of complex arrays is not wired; wired: real floating dtypes")
    axes = reduction_axes(axis, x.ndim)
    return finish(reduce(x, axes, op, correction=correction), x, axes, keepdims)


def nonzero_mask(x: Array) -> Array:
    """``x != 0`` as bool (x itself when bool; NaN is non-zero)."""
    if x.dtype == _dt.bool:
        return x
    return _dispatch.apply("not_equal", [x, 0], x.dtype)[0]
