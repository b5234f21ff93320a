"""Index helpers of the one-thread-per-element image kernels (pooling, image, conv's unfold /
fold): the thread's linear index on a 1-D grid, the decomposition of a linear index over a dense
(N, C, E0, E1, E2) tensor in NCHW or channels-last order, and the regrouping of a launcher's flat
scalar arguments into its kernel's parameter tuples.  Int64 throughout."""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64


def linear_index(threads: int):
    """This thread's linear index ``block · threads + thread`` (1-D grid of ``threads``-thread
    CTAs) as Int64."""
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    return Int64(bidx) * Int64(threads) + Int64(tidx)


def sel(cond, a, b, IX=Int64):
    """``cond ? a : b`` as the index type ``IX`` (Int64 unless given; branch-free)."""
    return IX(cutlass.select_(cond, IX(a), IX(b)))


def imin(a, b, IX=Int64):
    """``min(a, b)`` as ``IX``."""
    return sel(a < b, a, b, IX)


def imax(a, b, IX=Int64):
    """``max(a, b)`` as ``IX``."""
    return sel(a > b, a, b, IX)


def decompose_ncdhw(i, C, E0, E1, E2, cl):
    """``(n, c, z0, z1, z2)`` of the linear index ``i`` of a dense (N, C, E0, E1, E2) tensor in
    NCHW order (``cl == 0``: z2 fastest) or channels-last order (``cl != 0``: c fastest);
    branch-free (both orders computed, one selected)."""
    q = i // E2                      # NCHW: z2 fastest
    a2 = i - q * E2
    r = q // E1
    a1 = q - r * E1
    q = r // E0
    a0 = r - q * E0
    r = q // C
    ac = q - r * C
    an = r
    q = i // C                       # channels last: c fastest
    bc = i - q * C
    r = q // E2
    b2 = q - r * E2
    q = r // E1
    b1 = r - q * E1
    r = q // E0
    b0 = q - r * E0
    c = cl != Int64(0)
    return (sel(c, r, an), sel(c, bc, ac), sel(c, b0, a0), sel(c, b1, a1), sel(c, b2, a2))


def split_groups(rest, sizes, with_tail: bool = False):
    """A launcher's trailing ``*rest`` (flat scalars, then the stream) as (tuple of scalar groups
    of ``sizes``, stream) — or (groups, the scalars after them, stream) when ``with_tail``."""
    flat, out, k = rest[:-1], [], 0
    for s in sizes:
        out.append(tuple(flat[k:k + s]))
        k += s
    if with_tail:
        return out, tuple(flat[k:]), rest[-1]
    return out, rest[-1]


def _mdiv(a, m, s):
    """``floor(a / d)`` for ``0 <= a < 2^31`` by d's magic pair (``m``, ``s``), in Int64."""
    return (a * m) >> s


def decompose_ncdhw_magic(i, C, E0, E1, E2, cl, mg):
    """:func:`decompose_ncdhw` for ``i < 2^31``: each division a multiply-shift by the magic
    pairs ``mg`` = (C, E0, E1, E2)'s (``common.spatial.fast_divisor``)."""
    q = _mdiv(i, mg[6], mg[7])
    a2 = i - q * E2
    r = _mdiv(q, mg[4], mg[5])
    a1 = q - r * E1
    q = _mdiv(r, mg[2], mg[3])
    a0 = r - q * E0
    r = _mdiv(q, mg[0], mg[1])
    ac = q - r * C
    an = r
    q = _mdiv(i, mg[0], mg[1])
    bc = i - q * C
    r = _mdiv(q, mg[6], mg[7])
    b2 = q - r * E2
    q = _mdiv(r, mg[4], mg[5])
    b1 = r - q * E1
    r = _mdiv(q, mg[2], mg[3])
    b0 = q - r * E0
    c = cl != Int64(0)
    return (sel(c, r, an), sel(c, bc, ac), sel(c, b0, a0), sel(c, b1, a1), sel(c, b2, a2))


@cute.jit
def decompose_ncdhw_auto(i, C, E0, E1, E2, cl, dv):
    """:func:`decompose_ncdhw` with magic-number divisions when the launch says the index space
    is narrow (``dv[8] != 0``: every linear index < 2^31), plain Int64 division otherwise;
    ``dv`` = the magic pairs of C, E0, E1, E2 and the narrow flag (a uniform branch)."""
    n_, c_, z0, z1, z2 = Int64(0), Int64(0), Int64(0), Int64(0), Int64(0)
    if dv[8] != Int64(0):
        n_, c_, z0, z1, z2 = decompose_ncdhw_magic(i, C, E0, E1, E2, cl, dv)
    else:
        n_, c_, z0, z1, z2 = decompose_ncdhw(i, C, E0, E1, E2, cl)
    return n_, c_, z0, z1, z2


# ------------------------------------------------- index math in a chosen type (Int32 / Int64)
# Kernels whose SKU (or launch) guarantees a narrow index space run their index math in Int32:
# every division of a non-negative numerator < 2^31 by a run-time divisor d is then a
# multiply-shift by d's host-computed magic pair (m, s) (common.spatial.fast_divisor); wide ones
# divide in Int64.


def index_type(wide: bool):
    """The index-math type: Int64 when ``wide`` else Int32."""
    return Int64 if wide else Int32


def cast_all(vals, IX):
    """``vals`` (Int64 kernel scalars) converted to ``IX``, as a tuple."""
    return tuple(IX(v) for v in vals)


def isel(cond, a, b, IX):
    """:func:`sel` with the index type required."""
    return sel(cond, a, b, IX)


def qdiv(a, d, m, s, IX):
    """``floor(a / d)`` for ``0 <= a`` (Int32: ``a < 2^31``, by the magic pair ``m``, ``s``)."""
    if cutlass.const_expr(IX is Int64):
        return a // d
    return Int32((Int64(a) * m) >> s)


def ix_linear_index(threads: int, IX):
    """:func:`linear_index` as ``IX``."""
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    return IX(bidx) * IX(threads) + IX(tidx)


def decompose_ncdhw_ix(i, C, E0, E1, E2, cl, mg, IX):
    """:func:`decompose_ncdhw` in ``IX``, dividing with :func:`qdiv` by the magic pairs ``mg`` =
    (C, E0, E1, E2)'s."""
    q = qdiv(i, E2, mg[6], mg[7], IX)          # NCHW: z2 fastest
    a2 = i - q * E2
    r = qdiv(q, E1, mg[4], mg[5], IX)
    a1 = q - r * E1
    q = qdiv(r, E0, mg[2], mg[3], IX)
    a0 = r - q * E0
    r = qdiv(q, C, mg[0], mg[1], IX)
    ac = q - r * C
    an = r
    q = qdiv(i, C, mg[0], mg[1], IX)           # channels last: c fastest
    bc = i - q * C
    r = qdiv(q, E2, mg[6], mg[7], IX)
    b2 = q - r * E2
    q = qdiv(r, E1, mg[4], mg[5], IX)
    b1 = r - q * E1
    r = qdiv(q, E0, mg[2], mg[3], IX)
    b0 = q - r * E0
    c = cl != Int64(0)
    return (isel(c, r, an, IX), isel(c, bc, ac, IX), isel(c, b0, a0, IX), isel(c, b1, a1, IX),
            isel(c, b2, a2, IX))
