"""Device helpers shared by the grid_sample kernels (``grid_sample_fw``, ``grid_sample_bw``,
``grid_sample_acc``): torch's source-coordinate arithmetic (aten/native GridSampler.h), point
index decomposition, the bicubic coefficients and the flat-ABI host launchers.

Per spatial dim of input extent ``S`` and normalised grid coordinate ``c`` in [-1, 1]:

    unnormalize   align_corners: (c + 1) / 2 · (S − 1)        else: ((c + 1) · S − 1) / 2
    border        clip to [0, S − 1]
    reflection    reflect about [0, S − 1] (align_corners) or [−0.5, S − 0.5] (else), then clip
    afterwards    a non-finite coordinate or one outside the int32 range becomes −100 (never
                  inside the image; torch's safe_downgrade_to_int_range)

Each function also returns the derivative of its result with respect to its input (torch's
``*_set_grad`` variants: 0 where a coordinate is clipped, ±1 through a reflection).  Bicubic
weights use A = −0.75 (torch's upsampling kernel); ``cubic_grads`` are the negated derivatives
of the weights with respect to the fractional offset, as torch's backward uses them.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

from ....blocks.gmem import gload
from ..specs.sampling import THREADS

M = cute.math
CUBIC_A = -0.75


def fsel(cond, a, b):
    """``cond ? a : b`` in ``a``'s float type (branch-free)."""
    t = type(a)
    return t(cutlass.select_(cond, a, t(b)))


def isel(cond, a, b):
    """``cond ? a : b`` as Int64 (branch-free)."""
    return Int64(cutlass.select_(cond, Int64(a), Int64(b)))


def unnormalize(c, size, align):
    """(source coordinate, its derivative) of the normalised coordinate ``c`` along a dim of
    ``size`` (a float of the compute type); ``align``: a Boolean."""
    t = type(c)
    one, two = t(1.0), t(2.0)
    a = (c + one) / two * (size - one)
    b = ((c + one) * size - one) / two
    return fsel(align, a, b), fsel(align, (size - one) / two, size / two)


def clip(c, size):
    """(min(size − 1, max(c, 0)), 1 inside / 0 where clipped)."""
    t = type(c)
    lim = size - t(1.0)
    lo = c <= t(0.0)
    hi = c >= lim
    return fsel(lo, t(0.0), fsel(hi, lim, c)), fsel(lo | hi, t(0.0), t(1.0))


def reflect(c, twice_low, twice_high):
    """(``c`` reflected into [twice_low / 2, twice_high / 2], its derivative ±1); a degenerate
    range (low == high) gives (0, 0)."""
    t = type(c)
    zero, one, two = t(0.0), t(1.0), t(2.0)
    mn = twice_low / two
    span = (twice_high - twice_low) / two
    a = c - mn
    neg = a < zero
    a = M.absf(a)
    extra = M.rem(a, span)
    flips = M.floor(a / span)
    even = flips - two * M.floor(flips / two) == zero
    r = fsel(even, extra + mn, span - extra + mn)
    g = fsel(even, one, t(-1.0)) * fsel(neg, t(-1.0), one)
    deg = twice_low == twice_high
    return fsel(deg, zero, r), fsel(deg, zero, g)


def safe_index_range(c):
    """``c``, or −100 when it is not finite or outside the int32 range."""
    t = type(c)
    ok = (M.absf(c) < t(float("inf"))) & (c <= t(2147483646.0)) & (c >= t(-2147483648.0))
    return fsel(ok, c, t(-100.0))


def pad_coordinate(c, size, pad, align):
    """(padded coordinate, derivative) of the unnormalised ``c``: ``pad`` 0 zeros (unchanged),
    1 border, 2 reflection (Int64); ``align``: a Boolean."""
    t = type(c)
    one, two = t(1.0), t(2.0)
    cb, gb = clip(c, size)
    tl = fsel(align, t(0.0), t(-1.0))
    th = fsel(align, two * (size - one), two * size - one)
    rr, gr = reflect(c, tl, th)
    rc, gc = clip(rr, size)
    border = pad == Int64(1)
    refl = pad == Int64(2)
    coord = fsel(border, cb, fsel(refl, rc, c))
    g = fsel(border, gb, fsel(refl, gr * gc, one))
    return safe_index_range(coord), g


def source_index(c, size, pad, align):
    """(source coordinate, d coordinate / d c) of the normalised grid coordinate ``c``."""
    u, gu = unnormalize(c, size, align)
    s, gs = pad_coordinate(u, size, pad, align)
    return s, gu * gs


def cubic_coeffs(t):
    """The four bicubic weights of taps −1, 0, 1, 2 at fractional offset ``t``."""
    ty = type(t)
    A = ty(CUBIC_A)
    one = ty(1.0)

    def conv1(x):
        return ((A + ty(2.0)) * x - (A + ty(3.0))) * x * x + one

    def conv2(x):
        return ((A * x - ty(5.0) * A) * x + ty(8.0) * A) * x - ty(4.0) * A

    return [conv2(t + one), conv1(t), conv1(one - t), conv2(ty(2.0) - t)]


def cubic_grads(t):
    """Minus the derivatives of :func:`cubic_coeffs` with respect to ``t``."""
    ty = type(t)
    A = ty(CUBIC_A)
    c3, c2, c10, c8 = ty(3.0), ty(2.0), ty(10.0), ty(8.0)
    x0 = ty(-1.0) - t
    x1 = ty(0.0) - t
    x2 = ty(1.0) - t
    x3 = ty(2.0) - t
    return [(ty(-3.0) * A * x0 - c10 * A) * x0 - c8 * A,
            (ty(-3.0) * (A + c2) * x1 - c2 * (A + c3)) * x1,
            (c3 * (A + c2) * x2 - c2 * (A + c3)) * x2,
            (c3 * A * x3 - c10 * A) * x3 + c8 * A]


def in_range(i, n):
    """``0 <= i < n`` (Int64)."""
    return (i >= Int64(0)) & (i < n)


def point_index():
    """This thread's linear point index (one point per thread, 1-D grid)."""
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    return Int64(bidx) * Int64(THREADS) + Int64(tidx)


def decompose(i, E0, E1, E2):
    """``(q, z0, z1, z2)`` of the row-major linear index ``i`` over (*, E0, E1, E2)."""
    q = i // E2
    z2 = i - q * E2
    r = q // E1
    z1 = q - r * E1
    q = r // E0
    z0 = r - q * E0
    return q, z0, z1, z2


def load_point(pg, goff, gc, d3, ct):
    """(gx, gy, gz) in type ``ct`` of the grid point at element offset ``goff`` (component
    stride ``gc``); gz is read only in 3-D (``d3``: a Boolean; the x component is re-read
    otherwise)."""
    gx = ct(gload(pg, goff))
    gy = ct(gload(pg, goff + gc))
    gz = ct(gload(pg, goff + isel(d3, gc + gc, Int64(0))))
    return gx, gy, gz


def linear_axis(c, n):
    """Linear interpolation along one dim at source coordinate ``c`` (extent ``n``): ([w0, w1],
    [valid0, valid1], [index0, index1]) of taps floor(c) and floor(c) + 1 (torch: w0 =
    (floor(c) + 1) − c, w1 = c − floor(c))."""
    t = type(c)
    f = M.floor(c)
    i0 = Int64(f)
    i1 = i0 + Int64(1)
    return [(f + t(1.0)) - c, c - f], [in_range(i0, n), in_range(i1, n)], [i0, i1]


def nearest_axis(c, n):
    """(valid, index) of the nearest tap (round half to even, torch's nearbyint)."""
    i = Int64(M.roundeven(c))
    return in_range(i, n), i


def cubic_axis(c, n, size, pad, align):
    """Bicubic taps along one dim at the unnormalised coordinate ``c`` (extent ``n``, Int64, and
    ``size``, its float): (fractional offset t, [valid] * 4, [index] * 4) of taps floor(c) − 1 ..
    floor(c) + 2, each padded separately (torch's get_value_bounded / add_value_bounded)."""
    t = type(c)
    f = M.floor(c)
    valid, idx = [], []
    for k in range(4):
        p, _ = pad_coordinate(f + t(float(k - 1)), size, pad, align)
        i = Int64(p)
        valid.append(in_range(i, n))
        idx.append(i)
    return c - f, valid, idx


def blocks_for(n):
    """Int32 CTA count covering ``n`` items, one a thread."""
    return Int32((n + THREADS - 1) // THREADS)
