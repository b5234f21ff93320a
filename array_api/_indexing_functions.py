"""Indexing functions of the standard (``take``, ``take_along_axis``), every assignment
``Array.__setitem__`` makes and the integer-array / boolean-mask reads of ``Array.__getitem__``
(basic keys give views in ``_array_object``).

Advanced indexing follows numpy's rules (the standard's 2024.12 subset is contained in them):
integer arrays (any integer dtype; negative indices wrap once) broadcast together to a shape B;
ints next to them count as 0-D arrays; the B dims replace the indexed dims when the array indices
are adjacent in the key and go first otherwise; a boolean array of rank m stands for the m
coordinate arrays of its true elements (``nonzero``: one host read of the count); a 0-D boolean
adds a new axis of length 1 (True) or 0 (False).  Slices, ``None`` and ``...`` are applied first
as views.  Reads go through ``IndexSelectPlan`` (one indexed axis) or a linearised index over the
indexed axes; writes through ``ScatterAxisPlan`` (duplicate targets: one write wins, unspecified
which) or, for ``x[mask] = scalar``, one masked elementwise ``where`` in place.  Out-of-range
indices raise IndexError (see ``_plans``: one 4-byte device read per call).
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from baracuda_dsl.errors import DeviceMismatchError, UnsupportedError
from baracuda_dsl.ops.elementwise.elementwise import broadcast_shapes
from baracuda_dsl.plan import prod

from . import _copy
from . import _dispatch
from . import _dtypes as _dt
from . import _plans
from . import _promotion
from ._array_object import Array, is_advanced
from ._creation_functions import asarray, full, zeros
from ._data_type_functions import astype
from ._elementwise_functions import (add, convert_scalar, greater_equal, less, logical_or,
                                     multiply, remainder)
from ._manipulation_functions import (ascontiguousarray, broadcast_to, moveaxis, normalize_axis,
                                      permute_dims, reshape)
from ._searching_functions import nonzero, where
from ._records import recorded


# ------------------------------------------------------------------------------ take family
def select_along_axis(x: Array, idx: Array, axis: int, what: str) -> Array:
    """``x`` indexed along ``axis`` by the 1-D integer array ``idx`` (a new dense array;
    IndexSelectPlan; out-of-range indices raise IndexError naming ``what``)."""
    from baracuda_dsl.ops.indexing.indexing import (IndexSelectArgs, IndexSelectDescriptor,
                                                    IndexSelectPlan)

    idx = _plans.index_dtype_array(idx)
    out = Array._empty(x.shape[:axis] + (idx.shape[0],) + x.shape[axis + 1:], x.dtype, x.device)
    if out.size == 0:
        if idx.shape[0] and x.shape[axis] == 0:
            raise IndexError(f"{what}: cannot index an axis of size 0")
        return out
    if x.shape[axis] == 0:
        raise IndexError(f"{what}: cannot index an axis of size 0")
    plan = _plans.select(IndexSelectPlan, IndexSelectDescriptor(x.shape, axis, idx.shape[0],
                                                                x.dtype, idx.dtype))
    _plans.run_checked(plan, lambda st: IndexSelectArgs(x, idx, out, st), x.device, what)
    return out


def flat_index(idx, what: str) -> Array:
    """The integer array ``idx`` (any shape) as a dense 1-D int32 / int64 array (other integer
    dtypes converted); TypeError for non-integer arrays."""
    _plans.check_index_array(idx, what)
    return _plans.index_dtype_array(reshape(ascontiguousarray(idx), (-1,)))


@recorded
def take(x: Array, indices: Array, /, *, axis=None) -> Array:
    """Elements of ``x`` at the 1-D integer ``indices`` along ``axis`` (optional for 1-D x):
    result shape ``x.shape[:axis] + indices.shape + x.shape[axis+1:]``.  Negative indices wrap
    once; out-of-range ones raise IndexError.  Every dtype, bit-exact (``IndexSelectPlan``)."""
    _plans.check_array(x, "x")
    _plans.check_index_array(indices, "indices")
    if indices.ndim != 1:
        raise ValueError(f"take: indices must be 1-D, got shape {indices.shape}")
    if axis is None:
        if x.ndim != 1:
            raise ValueError("take: axis is required for arrays of rank != 1")
        axis = 0
    if x.ndim == 0:
        raise ValueError("take: x must have at least one dimension")
    return select_along_axis(x, indices, normalize_axis(axis, x.ndim), "take")


def take_along_axis(x: Array, indices: Array, /, *, axis: int = -1) -> Array:
    """``out[..., i, ...] = x[..., indices[..., i, ...], ...]`` along ``axis``; ``indices`` has
    x's rank and broadcasts with x off ``axis``.  Negative indices wrap once; out-of-range ones
    raise IndexError.  Every dtype, bit-exact (``GatherAxisPlan``)."""
    from baracuda_dsl.ops.indexing.indexing import (GatherAxisArgs, GatherAxisDescriptor,
                                                    GatherAxisPlan)

    _plans.check_array(x, "x")
    _plans.check_index_array(indices, "indices")
    if x.ndim == 0 or indices.ndim != x.ndim:
        raise ValueError(f"take_along_axis: indices rank {indices.ndim} must equal x's rank "
                         f"{x.ndim} (>= 1)")
    a = normalize_axis(axis, x.ndim)
    off_x = x.shape[:a] + (1,) + x.shape[a + 1:]
    off_i = indices.shape[:a] + (1,) + indices.shape[a + 1:]
    try:
        b = list(broadcast_shapes(off_x, off_i))
    except ValueError as e:
        raise ValueError(f"take_along_axis: shapes {x.shape} and {indices.shape} do not "
                         f"broadcast off axis {a}") from e
    xb = broadcast_to(x, tuple(b[:a] + [x.shape[a]] + b[a + 1:]))
    ib = _plans.index_dtype_array(broadcast_to(indices, tuple(b[:a] + [indices.shape[a]]
                                                              + b[a + 1:])))
    out = Array._empty(ib.shape, x.dtype, x.device)
    if out.size == 0:
        return out
    if x.shape[a] == 0:
        raise IndexError("take_along_axis: cannot index an axis of size 0")
    plan = _plans.select(GatherAxisPlan, GatherAxisDescriptor(xb.shape, ib.shape, a, x.dtype,
                                                              ib.dtype))
    _plans.run_checked(plan, lambda st: GatherAxisArgs(xb, ib, out, st), x.device,
                       "take_along_axis")
    return out


# ------------------------------------------------------------------------ assignment
def setitem(x: Array, key, value) -> None:
    """``x[key] = value`` (``Array.__setitem__``): basic keys write the indexed view in place —
    a Python scalar by a memset / fill kernel, an Array of x's dtype by a dense copy, other
    dtypes (promotable to x's: ``can_cast``) and strided views by the converting copy kernel;
    integer-array / boolean-mask keys scatter (:func:`advanced_setitem`)."""
    if is_advanced(key):
        advanced_setitem(x, key, value)
        return
    target = x[key]
    if isinstance(value, np.generic) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (builtins.bool, builtins.int, builtins.float, builtins.complex)):
        if _promotion.scalar_dtype(value, x.dtype) != x.dtype:
            raise TypeError(f"cannot assign a Python {type(value).__name__} to a "
                            f"{x.dtype.name} array")
        value = convert_scalar(value, x.dtype)
        if target.is_contiguous():
            _copy.fill(target, value)  # memset where the pattern allows
        else:
            _dispatch.fill(target, value)
        return
    if not isinstance(value, Array):
        value = asarray(value, dtype=x.dtype, device=x.device)
    if value.device != x.device:
        raise DeviceMismatchError(f"__setitem__: value on {value.device}, array on "
                                  f"{x.device}")
    if value.dtype != x.dtype and not _promotion.can_cast(value.dtype, x.dtype):
        raise TypeError(f"cannot assign a {value.dtype.name} array to a {x.dtype.name} "
                        f"array (the standard's promotion rules do not allow it)")
    if value.dtype == x.dtype and target.is_contiguous():
        _copy.copy_into(broadcast_to(value, target.shape), target)
    else:
        _dispatch.copy_into(value, target)


# ------------------------------------------------------------------------ advanced indexing
def _check_mask_shape(mshape, xshape) -> None:
    """A boolean index must match the dims it covers (an extent 0 matches anything)."""
    if len(mshape) > len(xshape) or any(m not in (n, 0) for m, n in zip(mshape, xshape)):
        raise IndexError(f"boolean index of shape {mshape} does not match the indexed dims "
                         f"{xshape}")


class _Decomposed:
    """A key split into a basic view and integer index arrays over some of its dims."""

    __slots__ = ("view", "dims", "arrays", "place")

    def __init__(self, view, dims, arrays, place):
        self.view, self.dims, self.arrays, self.place = view, dims, arrays, place


def _decompose(x: Array, key) -> _Decomposed:
    items = list(key) if isinstance(key, tuple) else [key]
    for k in items:
        if isinstance(k, Array) and k.device != x.device:
            raise DeviceMismatchError(f"index array on {k.device}, array on {x.device}")
    # expand the ellipsis over the dims the key does not consume
    consumed = 0
    for k in items:
        if k is None or k is Ellipsis or isinstance(k, (builtins.bool, np.bool_)):
            continue
        if isinstance(k, Array) and k.dtype == _dt.bool:
            consumed += k.ndim
        else:
            consumed += 1
    if consumed > x.ndim:
        raise IndexError(f"too many indices for a {x.ndim}-D array")
    if sum(1 for k in items if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if Ellipsis in [k for k in items if not isinstance(k, Array)]:
        i = next(j for j, k in enumerate(items) if not isinstance(k, Array) and k is Ellipsis)
        items[i:i + 1] = [slice(None)] * (x.ndim - consumed)
    else:
        items += [slice(None)] * (x.ndim - consumed)
    basic, adv = [], []  # adv: (key position, view dim, host int | device array)
    vdim, xdim = 0, 0
    for pos, k in enumerate(items):
        if k is None:
            basic.append(None)
            vdim += 1
        elif isinstance(k, slice):
            basic.append(k)
            vdim += 1
            xdim += 1
        elif isinstance(k, (builtins.bool, np.bool_)) or (isinstance(k, Array) and k.ndim == 0
                                                          and k.dtype == _dt.bool):
            truth = builtins.bool(k)
            basic.append(None)
            adv.append((pos, vdim, zeros((1 if truth else 0,), dtype=_dt.int64,
                                         device=x.device)))
            vdim += 1
        elif isinstance(k, Array) and k.dtype == _dt.bool:
            _check_mask_shape(k.shape, x.shape[xdim:xdim + k.ndim])
            if k.size == 0:  # a mask with a 0 extent selects nothing (array-api-tests)
                coords = tuple(zeros((0,), dtype=_dt.int64, device=x.device)
                               for _ in range(k.ndim))
            else:
                coords = nonzero(k)
            for c in coords:
                basic.append(slice(None))
                adv.append((pos, vdim, c))
                vdim += 1
                xdim += 1
        elif isinstance(k, Array):
            if not _dt.isdtype(k.dtype, "integral"):
                raise IndexError(f"arrays used as indices must have an integer or boolean dtype, "
                                 f"got {k.dtype.name}")
            basic.append(slice(None))
            adv.append((pos, vdim, k if k.ndim else builtins.int(k)))
            vdim += 1
            xdim += 1
        else:
            try:
                i = operator.index(k)
            except TypeError:
                raise IndexError(f"unsupported index {k!r}") from None
            basic.append(slice(None))
            adv.append((pos, vdim, i))
            vdim += 1
            xdim += 1
    view = x[tuple(basic)]
    positions = sorted({p for p, _, _ in adv})  # a mask's coordinate arrays share its position
    adjacent = positions == list(range(positions[0], positions[0] + len(positions)))
    dims = [d for _, d, _ in adv]
    arrays = []
    for _, d, a in adv:
        if isinstance(a, Array):
            arrays.append(a)
            continue
        n = view.shape[d]
        if not -n <= a < n:
            raise IndexError(f"index {a} is out of bounds for an axis of size {n}")
        arrays.append(a % n)
    # where the broadcast index dims go in the result: in place of the first indexed dim when the
    # advanced indices are adjacent in the key, else first
    place = 0
    if adjacent:
        place = sum(1 for d in range(dims[0]) if d not in dims)
    return _Decomposed(view, dims, arrays, place)


def _broadcast_indices(arrays, device):
    """The index arrays (host ints stay ints) broadcast to one shape B; returns (B, arrays)."""
    shapes = [a.shape for a in arrays if isinstance(a, Array)]
    try:
        b = broadcast_shapes(*shapes) if shapes else ()
    except ValueError as e:
        raise IndexError(f"index arrays of shapes {shapes} do not broadcast") from e
    return b, [broadcast_to(a, b) if isinstance(a, Array) else a for a in arrays]


def _flat_target(dec: _Decomposed, writable: builtins.bool):
    """The view as (M, *rest) with the indexed dims (in key order) collapsed into axis 0, and the
    linear index (1-D int64 device array of length prod(B)) into it, plus B.  When the indexed
    dims do not collapse, reads use a dense copy; writes raise UnsupportedError."""
    v = dec.view
    rest = [d for d in range(v.ndim) if d not in dec.dims]
    pv = permute_dims(v, tuple(dec.dims) + tuple(rest))
    k = len(dec.dims)
    ext = pv.shape[:k]
    live = [(n, st) for n, st in zip(ext, pv.strides[:k]) if n != 1]
    ok = all(live[j][1] == live[j + 1][1] * live[j + 1][0] for j in range(len(live) - 1))
    if not ok:
        if writable:
            raise UnsupportedError("assigning through integer arrays over indexed dims that do not "
                                   "collapse to one strided dim is not wired; index a dense array")
        pv = ascontiguousarray(pv)
        live = [(n, st) for n, st in zip(ext, pv.strides[:k]) if n != 1]
    m = prod(ext)
    s0 = live[-1][1] if live else 1
    flat = pv._view(0, (m,) + pv.shape[k:], (s0,) + pv.strides[k:])
    b, arrays = _broadcast_indices(dec.arrays, v.device)
    lin = _linear_index(arrays, ext, b, v.device)
    return flat, lin, b


def _linear_index(arrays, ext, b, device) -> Array:
    """Σ_j wrap(i_j)·Π_{l>j} ext_l as int64 (shape prod(B)); an index outside [-n_j, n_j) makes
    the whole linear index M (= prod(ext), out of range) so the kernels flag it."""
    m = prod(ext)
    mult = [prod(ext[j + 1:]) for j in range(len(ext))]
    lin = None
    bad = None
    const = 0
    for a, n, w in zip(arrays, ext, mult):
        if not isinstance(a, Array):
            const += a * w
            continue
        a = astype(a, _dt.int64) if a.dtype != _dt.int64 else a
        bad_j = logical_or(less(a, -n), greater_equal(a, n))
        bad = bad_j if bad is None else logical_or(bad, bad_j)
        term = multiply(remainder(a, n), w) if n else a
        lin = term if lin is None else add(lin, term)
    if lin is None:
        return full((1,), const, dtype=_dt.int64, device=device)
    if const:
        lin = add(lin, const)
    lin = where(bad, m, lin)  # every array was broadcast to b, so lin has shape b
    return reshape(ascontiguousarray(lin), (-1,))


@recorded
def advanced_getitem(x: Array, key) -> Array:
    """``x[key]`` for keys with integer arrays / boolean masks (see the module doc)."""
    dec = _decompose(x, key)
    v = dec.view
    if len(dec.dims) == 1 and isinstance(dec.arrays[0], Array) and dec.arrays[0].ndim == 1:
        out = select_along_axis(v, dec.arrays[0], dec.dims[0], "__getitem__")
        return out  # B is 1-D and replaces the indexed dim in place
    flat, lin, b = _flat_target(dec, False)
    out = select_along_axis(flat, lin, 0, "__getitem__")
    out = reshape(out, tuple(b) + flat.shape[1:])
    if dec.place and len(b):
        src = tuple(range(len(b)))
        out = moveaxis(out, src, tuple(dec.place + i for i in src))
    return out


def _is_scalar(v) -> builtins.bool:
    return isinstance(v, (builtins.bool, builtins.int, builtins.float, builtins.complex,
                          np.generic)) or (isinstance(v, Array) and v.ndim == 0)


def advanced_setitem(x: Array, key, value) -> None:
    """``x[key] = value`` for keys with integer arrays / boolean masks; ``value`` broadcasts to
    ``x[key]``'s shape and is converted to x's dtype (same rules as basic ``__setitem__``)."""
    items = key if isinstance(key, tuple) else (key,)
    if len(items) == 1 and (isinstance(items[0], (builtins.bool, np.bool_)) or (
            isinstance(items[0], Array) and items[0].dtype == _dt.bool and items[0].ndim == 0)):
        val = _coerce_value(x, value, x.shape)  # validates even when nothing is written
        if builtins.bool(items[0]):
            x[...] = val
        return
    if (len(items) == 1 and isinstance(items[0], Array) and items[0].dtype == _dt.bool
            and items[0].ndim >= 1 and _is_scalar(value)):
        _masked_assign(x, items[0], value)
        return
    dec = _decompose(x, key)
    flat, lin, b = _flat_target(dec, True)
    rshape = list(flat.shape[1:])
    rshape[dec.place:dec.place] = list(b)
    val = _coerce_value(x, value, tuple(rshape))
    if dec.place and len(b):
        src = tuple(dec.place + i for i in range(len(b)))
        val = moveaxis(val, src, tuple(range(len(b))))
    val = reshape(ascontiguousarray(val), (lin.shape[0],) + flat.shape[1:])
    if val.size == 0:
        return
    from baracuda_dsl.ops.indexing.indexing import (ScatterAxisArgs, ScatterAxisDescriptor,
                                                    ScatterAxisPlan)

    ib = lin._view(0, val.shape, (1,) + (0,) * (val.ndim - 1))
    plan = _plans.select(ScatterAxisPlan, ScatterAxisDescriptor(flat.shape, val.shape, 0,
                                                                x.dtype, _dt.int64, "assign"))
    _plans.run_checked(plan, lambda st: ScatterAxisArgs(ib, val, flat, st), x.device,
                       "__setitem__")


def _assign_value(x: Array, value):
    """``value`` ready to be written into ``x`` (the rules of basic ``__setitem__``): a Python
    scalar whose kind fits x's dtype, converted (TypeError otherwise), or an Array on x's device
    of x's dtype (promotable dtypes are converted; TypeError otherwise); other objects are
    converted on the host with ``asarray``."""
    if isinstance(value, np.generic) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (builtins.bool, builtins.int, builtins.float, builtins.complex)):
        if _promotion.scalar_dtype(value, x.dtype) != x.dtype:
            raise TypeError(f"cannot assign a Python {type(value).__name__} to a "
                            f"{x.dtype.name} array")
        return convert_scalar(value, x.dtype)
    if not isinstance(value, Array):
        value = asarray(value, dtype=x.dtype, device=x.device)
    if value.device != x.device:
        raise DeviceMismatchError(f"value on {value.device}, array on {x.device}")
    if value.dtype != x.dtype:
        if not _promotion.can_cast(value.dtype, x.dtype):
            raise TypeError(f"cannot assign a {value.dtype.name} array to a {x.dtype.name} array")
        value = astype(value, x.dtype)
    return value


def _coerce_value(x: Array, value, shape) -> Array:
    """``value`` (see ``_assign_value``) as an Array of x's dtype broadcast to ``shape``."""
    value = _assign_value(x, value)
    if not isinstance(value, Array):
        return full(shape, value, dtype=x.dtype, device=x.device)
    return broadcast_to(value, shape)


def _masked_assign(x: Array, mask: Array, value) -> None:
    """``x[mask] = scalar`` as one in-place ``where(mask, value, x)`` (mask over x's leading
    dims, broadcast over the rest)."""
    _check_mask_shape(mask.shape, x.shape)
    value = _assign_value(x, value)
    if x.size == 0 or mask.size == 0:
        return
    pad = x.ndim - mask.ndim
    mb = mask._view(0, x.shape, mask.strides + (0,) * pad)
    if isinstance(value, Array):
        value = value._view(0, x.shape, (0,) * x.ndim)
    _dispatch.apply("where", [mb, value, x], x.dtype, outs=[x], shape=x.shape)


__all__ = ["take", "take_along_axis"]
