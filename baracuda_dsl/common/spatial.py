"""Host-side geometry of (N, C, *spatial) image operands, shared by the conv, pooling and image
families' plans: per-dim int arguments, the dense strides of a layout, the (n, c, d, h, w)
padding of 1-/2-D problems to the kernels' three spatial dims, and the descriptor checks of an
image shape.  Layouts: ``"NCHW"`` (row-major) and ``"NHWC"`` (channels innermost, then the
spatial dims, then N: torch's channels_last / channels_last_3d)."""

from __future__ import annotations

from typing import Tuple

import numpy as np

from ..dtypes import FP4
from ..errors import InvalidProblemError, UnsupportedError
from ..plan import check_dtype
from ..tensor import check_shape, contiguous_strides

LAYOUTS = ("NCHW", "NHWC")
#: index spaces below this run the kernels' magic-number divisions
NARROW = 2**31


def fast_divisor(d: int) -> Tuple[int, int]:
    """``(m, s)`` with ``floor(a / d) == (a·m) >> s`` for every ``0 <= a < 2^31`` (the round-up
    method: ``s = 31 + ceil(log2 d)``, ``m = floor(2^s / d) + 1 < 2^32 + 1``, so ``a·m < 2^63``);
    ``d >= 1``.  The narrow pooling / image kernels divide this way."""
    d = int(d)
    if d < 1:
        raise ValueError(f"fast_divisor: divisor must be >= 1, got {d}")
    s = 31 + (d - 1).bit_length()
    return (1 << s) // d + 1, s


def index_span(*views) -> int:
    """The largest element-offset span (highest − lowest offset touched, ``TensorView.
    span_elements``) of ``views`` (None entries skipped): below :data:`NARROW`, every offset of
    every view fits the Int32 index math of the narrow kernels."""
    spans = [hi - lo for lo, hi in (v.span_elements() for v in views if v is not None)]
    return max(spans, default=0)


def magic_pairs(*divisors) -> Tuple[int, ...]:
    """The flat ``(m, s)`` pairs of ``divisors`` (values < 1 count as 1)."""
    return tuple(v for d in divisors for v in fast_divisor(max(int(d), 1)))


def spatial_ints(v, k: int, what: str, name: str) -> Tuple[int, ...]:
    """``v`` (an int or a sequence of 1 or ``k`` ints; one int repeats) as a ``k``-tuple of ints
    (InvalidProblemError otherwise; bools are rejected)."""
    bad = InvalidProblemError(f"{what}: {name} must be an int or {k} ints, got {v!r}")
    if isinstance(v, bool):
        raise bad
    if isinstance(v, (int, np.integer)):
        return (int(v),) * k
    try:
        t = tuple(v)
    except TypeError:
        raise bad from None
    if len(t) == 1:
        t = t * k
    if len(t) != k or any(isinstance(a, bool) or not isinstance(a, (int, np.integer)) for a in t):
        raise bad
    return tuple(int(a) for a in t)


def dense_strides(shape, layout: str) -> Tuple[int, ...]:
    """Dense element strides of an (N, C, *spatial) tensor of ``shape`` in ``layout``."""
    shape = tuple(shape)
    if layout == "NCHW":
        return contiguous_strides(shape)
    perm = (0,) + tuple(range(2, len(shape))) + (1,)
    ps = contiguous_strides(tuple(shape[i] for i in perm))
    out = [0] * len(shape)
    for j, i in enumerate(perm):
        out[i] = ps[j]
    return tuple(out)


def check_dense_in(v, name: str, layout: str):
    """``v`` (a TensorView) unless it is not dense in ``layout`` (UnsupportedError); extents of
    1 and empty views match any stride."""
    dense = dense_strides(v.shape, layout)
    if v.numel and any(n > 1 and s != t for n, s, t in zip(v.shape, v.strides, dense)):
        raise UnsupportedError(f"{name}: must be dense in {layout} order (strides {dense} for "
                               f"shape {tuple(v.shape)}), got strides {tuple(v.strides)}")
    return v


def five_strides(strides) -> Tuple[int, ...]:
    """(n, c, d, h, w) strides: the spatial ones padded in front with zeros to three."""
    s = tuple(int(a) for a in strides)
    return s[:2] + (0,) * (5 - len(s)) + s[2:]


def three(vals, fill) -> tuple:
    """``vals`` padded in front with ``fill`` to three entries."""
    return (fill,) * (3 - len(vals)) + tuple(vals)


def check_image_desc(desc, what: str, ranks=(1, 2, 3)) -> Tuple[int, ...]:
    """Validate, in place, an image descriptor's ``spatial`` (one of ``ranks``), ``shape``
    ((N, C, *spatial), spatial extents >= 1), ``dtype`` (a float type) and ``layout``; returns the
    shape."""
    if isinstance(desc.spatial, bool) or desc.spatial not in ranks:
        raise InvalidProblemError(f"{what}: spatial must be one of {tuple(ranks)}, got "
                                  f"{desc.spatial!r}")
    shape = check_shape(desc.shape, f"{what}: x")
    if len(shape) != desc.spatial + 2:
        raise InvalidProblemError(f"{what}: shape {shape} must be (N, C, *spatial) with "
                                  f"{desc.spatial} spatial dims")
    if any(n < 1 for n in shape[2:]):
        raise InvalidProblemError(f"{what}: spatial extents must be >= 1, got {shape[2:]}")
    object.__setattr__(desc, "shape", shape)
    object.__setattr__(desc, "dtype", check_dtype(desc.dtype, FP4, what))
    if desc.layout not in LAYOUTS:
        raise InvalidProblemError(f"{what}: layout must be 'NCHW' or 'NHWC', got {desc.layout!r}")
    return shape
