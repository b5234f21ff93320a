"""Manipulation functions of the standard (2024.12) and ``ascontiguousarray`` (numpy, extension).
Views where possible (``permute_dims``, ``expand_dims``, ``squeeze``, ``broadcast_to``, ``flip``,
``moveaxis``, ``unstack``, ``reshape`` of dense arrays); copies go through the layout plans: dense
copies of any view through ``_copy`` (tiled transpose kernel for permuted layouts, strided gather
otherwise), ``tile`` (numpy.tile) and ``repeat`` (numpy.repeat semantics) through ``RepeatPlan`` /
the strided copy, ``concat`` / ``stack`` through ``ConcatPlan``, ``roll`` through ``RollPlan``.
Also the axis / flattening / diagonal-view helpers the other function modules share."""

from __future__ import annotations

import functools
import operator

import numpy as np

from baracuda_dsl.errors import DeviceMismatchError
from baracuda_dsl.ops.elementwise.elementwise import broadcast_shapes
from baracuda_dsl.plan import prod
from baracuda_dsl.tensor import contiguous_strides

from . import _copy
from . import _dtypes as _dt
from . import _plans
from ._array_object import Array
from ._data_type_functions import astype, result_type
from ._records import recorded


# ------------------------------------------------------------------------ helpers
def normalize_axis(axis: int, ndim: int) -> int:
    """``axis`` as an index in [0, ndim) (negative counts from the end); IndexError when out of
    range, TypeError when not an integer."""
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise IndexError(f"axis {axis} is out of bounds for a {ndim}-D array")
    return a % ndim


def flatten(x, name: str = "x") -> Array:
    """``x`` as a 1-D array: itself when 1-D (any stride), else ``reshape(x, (-1,))``;
    TypeError when ``x`` is no Array."""
    if not isinstance(x, Array):
        raise TypeError(f"{name} must be an array_api Array, got {type(x).__name__}")
    if x.ndim == 1:
        return x
    return reshape(x, (-1,))


def diagonal_view(x: Array, offset: int) -> Array:
    """The ``offset`` diagonal of the last two axes of ``x`` (offset > 0 above the main one,
    < 0 below; batched) as a strided view of shape (..., k)."""
    r, c = x.shape[-2:]
    sr, sc = x.strides[-2:]
    i0, j0 = (0, offset) if offset >= 0 else (-offset, 0)
    k = max(0, min(r - i0, c - j0))
    start = (i0 * sr + j0 * sc) if k else 0
    return x._view(start, x.shape[:-2] + (k,), x.strides[:-2] + (sr + sc,))


def ascontiguousarray(x: Array, /) -> Array:
    """``x`` itself when dense row-major, else a dense copy (extension)."""
    return x if x.is_contiguous() else _copy.contiguous_copy(x)


# ---------------------------------------------------------------------------------- views
def permute_dims(x: Array, /, axes) -> Array:
    axes = tuple(normalize_axis(a, x.ndim) for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"permute_dims: {axes} is not a permutation of {x.ndim} axes")
    return x._view(0, tuple(x.shape[a] for a in axes), tuple(x.strides[a] for a in axes))


def expand_dims(x: Array, /, axis: int = 0) -> Array:
    a = normalize_axis(axis, x.ndim + 1)
    return x._view(0, x.shape[:a] + (1,) + x.shape[a:], x.strides[:a] + (0,) + x.strides[a:])


def squeeze(x: Array, /, axis) -> Array:
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = {normalize_axis(a, x.ndim) for a in axes}
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}, not 1")
    keep = [i for i in range(x.ndim) if i not in axes]
    return x._view(0, tuple(x.shape[i] for i in keep), tuple(x.strides[i] for i in keep))


def broadcast_arrays(*arrays: Array) -> list:
    """Views of ``arrays`` broadcast to their common shape (no copies; ValueError when the
    shapes do not broadcast)."""
    shape = broadcast_shapes(*(a.shape for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def broadcast_to(x: Array, /, shape) -> Array:
    shape = tuple(int(s) for s in shape)
    if len(shape) < x.ndim:
        raise ValueError(f"broadcast_to: cannot broadcast {x.shape} to {shape}")
    pad = len(shape) - x.ndim
    strides = [0] * pad
    for n_in, s_in, n_out in zip(x.shape, x.strides, shape[pad:]):
        if n_in == n_out:
            strides.append(s_in if n_in != 1 else 0)
        elif n_in == 1:
            strides.append(0)
        else:
            raise ValueError(f"broadcast_to: cannot broadcast {x.shape} to {shape}")
    return x._view(0, shape, tuple(strides))


def flip(x: Array, /, *, axis=None) -> Array:
    axes = range(x.ndim) if axis is None else ((axis,) if isinstance(axis, int) else axis)
    axes = {normalize_axis(a, x.ndim) for a in axes}
    off = sum((x.shape[a] - 1) * x.strides[a] for a in axes if x.shape[a] > 0)
    return x._view(off, x.shape, tuple(-s if i in axes else s for i, s in enumerate(x.strides)))


def reshape(x: Array, /, shape, *, copy=None) -> Array:
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if shape.count(-1) > 1 or any(s < -1 for s in shape):
        raise ValueError(f"reshape: invalid shape {shape}")
    if -1 in shape:
        known = prod(s for s in shape if s != -1)
        if known == 0 or x.size % known:
            raise ValueError(f"reshape: cannot reshape size {x.size} into {shape}")
        shape = tuple(x.size // known if s == -1 else s for s in shape)
    if prod(shape) != x.size:
        raise ValueError(f"reshape: cannot reshape {x.shape} into {shape}")
    if x.is_contiguous() and not copy:
        return x._view(0, shape, contiguous_strides(shape))
    if copy is False:
        raise ValueError("reshape: this view cannot be reshaped without a copy (copy=False)")
    y = _copy.contiguous_copy(x)
    return y._view(0, shape, contiguous_strides(shape))


# ---------------------------------------------------------------------------------- copies
@functools.lru_cache(maxsize=256)
def _repeat_plan(shape, reps, dt):
    from baracuda_dsl.ops.shape.repeat import RepeatDescriptor, RepeatPlan

    return RepeatPlan.select(RepeatDescriptor(shape, reps, dt))


def tile(x: Array, repetitions, /) -> Array:
    """numpy.tile / torch.Tensor.repeat (``repetitions`` padded with leading 1s to x's rank)."""
    reps = tuple(operator.index(r) for r in repetitions)
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: negative repetitions {reps}")
    reps = (1,) * (x.ndim - len(reps)) + reps
    from baracuda_dsl.ops.shape.repeat import RepeatArgs

    plan = _repeat_plan(x.shape, reps, x.dtype)
    out = Array._empty(plan.desc.out_shape, x.dtype, x.device)
    plan.run(RepeatArgs(x, out))
    return out


def repeat(x: Array, repeats, /, *, axis=None) -> Array:
    """Array API ``repeat`` (numpy.repeat semantics): each element along ``axis`` is repeated
    ``repeats`` times (an int, or a 1-D integer array/sequence with one count per element or a
    single count); ``axis=None`` flattens first.  Int repeats: one strided-copy launch; array
    repeats: the counts are read on the host and each element's run is one copy launch."""
    if axis is None:
        x = reshape(x, (-1,))
        axis = 0
    axis = normalize_axis(axis, x.ndim)
    n = x.shape[axis]
    if isinstance(repeats, Array):
        if not _dt.isdtype(repeats.dtype, "integral"):
            raise TypeError("repeat: repeats must have an integer dtype")
        counts = repeats.to_numpy()
    elif isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool):
        counts = None
        r = int(repeats)
        if r < 0:
            raise ValueError("repeat: negative repeat count")
    else:
        counts = np.asarray(repeats)
        if counts.dtype.kind not in "iu":
            raise TypeError("repeat: repeats must be integers")
    if counts is not None:
        counts = counts.reshape(-1).astype(np.int64) if counts.ndim <= 1 else None
        if counts is None:
            raise ValueError("repeat: repeats must be an int or a 1-D array")
        if counts.size == 1:
            r, counts = int(counts[0]), None
            if r < 0:
                raise ValueError("repeat: negative repeat count")
        elif counts.size != n:
            raise ValueError(f"repeat: {counts.size} counts for axis of size {n}")
        elif (counts < 0).any():
            raise ValueError("repeat: negative repeat count")
    if counts is None:
        out_shape = x.shape[:axis] + (n * r,) + x.shape[axis + 1:]
        out = Array._empty(out_shape, x.dtype, x.device)
        shape = x.shape[:axis + 1] + (r,) + x.shape[axis + 1:]
        strides = x.strides[:axis + 1] + (0,) + x.strides[axis + 1:]
        _copy.copy_strided(x._ptr, shape, strides, x.dtype, x.device.ordinal, x, out._ptr)
        return out
    total = int(counts.sum())
    rest = x.shape[:axis] + x.shape[axis + 1:]
    rest_st = x.strides[:axis] + x.strides[axis + 1:]
    tmp = Array._empty((total,) + rest, x.dtype, x.device)  # axis first
    row = prod(rest)
    pos = 0
    isz = x.dtype.itemsize
    for j in range(n):
        c = int(counts[j])
        if c == 0:
            continue
        _copy.copy_strided(x._ptr + j * x.strides[axis] * isz, (c,) + rest, (0,) + rest_st,
                           x.dtype, x.device.ordinal, x, tmp._ptr + pos * row * isz)
        pos += c
    if axis == 0:
        return tmp
    order = tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, x.ndim))
    return _copy.contiguous_copy(permute_dims(tmp, order))


# ----------------------------------------------------------------- concat / stack / roll
def _same_device(arrays, what: str):
    dev = arrays[0].device
    for a in arrays[1:]:
        if a.device != dev:
            raise DeviceMismatchError(f"{what}: arrays on {dev} and {a.device}")
    return dev


def _as_array_list(arrays, what: str) -> list:
    if isinstance(arrays, Array) or not isinstance(arrays, (tuple, list)):
        raise TypeError(f"{what}: expected a tuple or list of arrays, got {type(arrays).__name__}")
    arrays = list(arrays)
    if not arrays:
        raise ValueError(f"{what}: need at least one array")
    for i, a in enumerate(arrays):
        if not isinstance(a, Array):
            raise TypeError(f"{what}: element {i} is a {type(a).__name__}, not an Array")
    return arrays


@recorded
def concat(arrays, /, *, axis=0) -> Array:
    """Join ``arrays`` along ``axis`` (``None``: flatten each first).  The result dtype is
    ``result_type(*arrays)``; shapes must match except along ``axis``.  One ``ConcatPlan``
    launch per non-empty input, copying into its slice of the new dense output (every dtype,
    bit-exact)."""
    from baracuda_dsl.ops.shape.layout import ConcatArgs, ConcatDescriptor, ConcatPlan

    arrays = _as_array_list(arrays, "concat")
    dev = _same_device(arrays, "concat")
    dt = result_type(*arrays)
    if axis is None:
        arrays = [reshape(a, (-1,)) for a in arrays]
        axis = 0
    nd = arrays[0].ndim
    if nd == 0:
        raise ValueError("concat: zero-dimensional arrays cannot be concatenated")
    if any(a.ndim != nd for a in arrays):
        raise ValueError(f"concat: arrays have ranks {[a.ndim for a in arrays]}")
    axis = normalize_axis(axis, nd)
    for a in arrays[1:]:
        if any(a.shape[d] != arrays[0].shape[d] for d in range(nd) if d != axis):
            raise ValueError(f"concat: shapes {[a.shape for a in arrays]} differ off axis {axis}")
    arrays = [a if a.dtype == dt else astype(a, dt) for a in arrays]
    shapes = tuple(a.shape for a in arrays)
    out_shape = shapes[0][:axis] + (sum(s[axis] for s in shapes),) + shapes[0][axis + 1:]
    out = Array._empty(out_shape, dt, dev)
    if out.size:
        plan = _plans.select(ConcatPlan, ConcatDescriptor(shapes, axis, dt))
        plan.run(ConcatArgs(arrays, out))
    return out


@recorded
def stack(arrays, /, *, axis: int = 0) -> Array:
    """Join same-shape ``arrays`` along a new ``axis`` (result dtype ``result_type``)."""
    arrays = _as_array_list(arrays, "stack")
    shape = arrays[0].shape
    if any(a.shape != shape for a in arrays):
        raise ValueError(f"stack: shapes differ: {[a.shape for a in arrays]}")
    a = normalize_axis(axis, len(shape) + 1)
    return concat([expand_dims(x, axis=a) for x in arrays], axis=a)


def unstack(x: Array, /, *, axis: int = 0) -> tuple:
    """The views ``x[..., i, ...]`` along ``axis`` (no copies)."""
    if x.ndim == 0:
        raise ValueError("unstack: x must have at least one dimension")
    a = normalize_axis(axis, x.ndim)
    shape = x.shape[:a] + x.shape[a + 1:]
    strides = x.strides[:a] + x.strides[a + 1:]
    return tuple(x._view(i * x.strides[a], shape, strides) for i in range(x.shape[a]))


def moveaxis(x: Array, source, destination, /) -> Array:
    """View of ``x`` with the axes ``source`` moved to ``destination`` (ints or tuples)."""
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: {len(src)} source and {len(dst)} destination axes")
    src = [normalize_axis(a, x.ndim) for a in src]
    dst = [normalize_axis(a, x.ndim) for a in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("moveaxis: repeated axes")
    order = [d for d in range(x.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, tuple(order))


def roll(x: Array, /, shift, *, axis=None) -> Array:
    """Elements shifted by ``shift`` along ``axis`` (wrapping around); ``axis=None`` rolls the
    flattened array.  Tuples of shifts/axes add up per axis.  One ``RollPlan`` launch."""
    from baracuda_dsl.ops.shape.pad import RollArgs, RollDescriptor, RollPlan

    if axis is None:
        if not isinstance(shift, int):
            if isinstance(shift, (tuple, list)):
                shift = sum(operator.index(s) for s in shift)
            else:
                shift = operator.index(shift)
        flat = reshape(x, (-1,))
        return reshape(roll(flat, shift, axis=0), x.shape)
    shifts = (shift,) if isinstance(shift, int) else tuple(shift)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: {len(shifts)} shifts for {len(axes)} axes")
    per = [0] * x.ndim
    for s, a in zip(shifts, axes):
        per[normalize_axis(a, x.ndim)] += operator.index(s)
    per = tuple(p % n if n else 0 for p, n in zip(per, x.shape))
    out = Array._empty(x.shape, x.dtype, x.device)
    if x.size:
        plan = _plans.select(RollPlan, RollDescriptor(x.shape, per, x.dtype))
        plan.run(RollArgs(x, out))
    return out

