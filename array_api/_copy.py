"""Whole-array writes: dense copies of strided views and scalar fills.

Copies go through the layout plans (``baracuda_dsl.ops.shape.layout.contiguize``: a tiled
transpose kernel for permuted layouts, a strided gather otherwise; every dtype, bit-exact).
Fills use cuMemsetD8/D16/D32Async (on the current stream) when the element's byte pattern
allows, the elementwise fill kernel above ``SMALL_UPLOAD`` bytes (and inside a CUDA graph
capture), a host upload below it.
"""

from __future__ import annotations

import math

import numpy as np

from baracuda_dsl.dtypes import DType
from baracuda_dsl.errors import InvalidProblemError, UnsupportedError
from baracuda_dsl.plan import collapse_dims, prod
from baracuda_dsl.runtime.stream import AMBIENT
from baracuda_dsl.tensor import MAX_RANK, TensorView, contiguous_strides

from . import _device as _dev
from . import _dispatch
from . import _dtypes as _dt
from ._array_object import Array

#: bytes: below this a fill the memset cannot do is a host upload, above it a kernel
SMALL_UPLOAD = 1 << 16


# ------------------------------------------------------------------------------ copies
def copy_strided(ptr: int, shape, strides, dtype, ordinal: int, owner, dst_ptr: int) -> None:
    """Copy the strided source (any rank, collapsible to ≤ 8 dims) into dense memory at dst."""
    if prod(shape) == 0:
        return
    cshape, cstr = collapse_dims(shape, strides)
    if len(cshape) > MAX_RANK:
        raise UnsupportedError(f"copy of a view that collapses to {len(cshape)} dims (> 8)")
    from baracuda_dsl.ops.shape.layout import contiguize

    src = TensorView(ptr, cshape, cstr, dtype, ordinal, None, owner)
    dst = TensorView(dst_ptr, cshape, contiguous_strides(cshape), dtype, ordinal, None, None)
    contiguize(src, dst)  # tiled transpose for permuted layouts, strided gather otherwise


def views_overlap(a: Array, b: Array) -> bool:
    """True when the memory spans of ``a`` and ``b`` intersect."""
    if a.size == 0 or b.size == 0:
        return False
    va, vb = a.__baracuda_view__(), b.__baracuda_view__()
    (alo, ahi), (blo, bhi) = va.span_elements(), vb.span_elements()
    isz = a.dtype.itemsize
    a0, a1 = a._ptr + alo * isz, a._ptr + (ahi + 1) * isz
    b0, b1 = b._ptr + blo * isz, b._ptr + (bhi + 1) * b.dtype.itemsize
    return a0 < b1 and b0 < a1


def copy_into(src: Array, dst: Array) -> None:
    """dst[...] = src (same shape and dtype; dst dense; overlapping sources are staged)."""
    if tuple(src.shape) != tuple(dst.shape) or src.dtype != dst.dtype:
        raise InvalidProblemError(f"copy: {src.shape}/{src.dtype} into {dst.shape}/{dst.dtype}")
    if not dst.is_contiguous():
        raise UnsupportedError("writing into a non-contiguous view is not wired")
    if views_overlap(src, dst):
        src = contiguous_copy(src)
    copy_strided(src._ptr, src.shape, src.strides, src.dtype, src.device.ordinal, src,
                 dst._ptr)


def contiguous_copy(x: Array) -> Array:
    """A new dense copy of ``x`` (every dtype, bit-exact)."""
    out = Array._empty(x.shape, x.dtype, x.device)
    copy_strided(x._ptr, x.shape, x.strides, x.dtype, x.device.ordinal, x, out._ptr)
    return out


# ------------------------------------------------------------------------------ fills
def host_scalar(value, dt: DType) -> np.ndarray:
    """One element holding the Python scalar ``value`` converted to ``dt``, as the device's
    bytes."""
    if value == 0 and not (isinstance(value, float) and math.copysign(1.0, value) < 0):
        return np.zeros(1, dt.to_numpy())  # every dtype (fp8 too) stores zero as zero bytes
    if dt.kind == "c":
        host = np.asarray([complex(value)])
    elif dt.kind == "f":
        host = np.asarray([float(value)])
    else:
        host = np.asarray([value])
    return _dt.host_encode(host, dt)


def fill(x: Array, value) -> None:
    """Fill the dense array ``x`` with the Python scalar ``value`` (converted to x's dtype)."""
    n = x.size
    if n == 0:
        return
    one = host_scalar(value, x.dtype)
    if _dev.memset(x._ptr, one.tobytes(), n):
        return
    if n * x.dtype.itemsize > SMALL_UPLOAD or AMBIENT.arena is not None:
        # large, or inside a CUDA graph capture (a host upload would run once, at capture)
        try:
            _dispatch.fill(x, value)
            return
        except UnsupportedError:
            pass
    _dev.htod(x._ptr, np.ascontiguousarray(np.broadcast_to(one, (n,))))
