"""Device helpers shared by the pooling family's kernels: branch-free selects, the element index
and its decomposition in both layouts (Int64, and the Int32 / Int64 ``*_fast`` forms with
magic-number division that ``pool_fw`` / ``pool_bw`` use), the per-dim window math, and the host
launcher that regroups the flat Int64 ABI scalars into the kernels' parameter tuples.

Per spatial dim of input extent ``I``, output extent ``O``, kernel ``K``, stride ``S``, padding
``P``, dilation ``D`` (avg: D = 1), fixed windows (torch max_pool / avg_pool):

    start = o·S − P,  taps start + j·D (0 <= j < K) inside [0, I)
    avg pool size (count_include_pad) = min(start + K, I + P) − start

adaptive windows (torch adaptive_*_pool): ``[floor(o·I/O), ceil((o+1)·I/O))``.  The outputs whose
window may cover input ``i``: fixed ``[i+P < span ? 0 : (i+P−span)//S + 1, min((i+P)//S + 1, O))``
with ``span = (K−1)·D + 1``; adaptive ``[floor(i·O/I), ceil((i+1)·O/I))``.  Every numerator is
non-negative, so ``//`` is floor division.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

from ....blocks.image_index import linear_index, split_groups
from ..specs.pool import THREADS


def element_index():
    """This thread's linear element index (one element per thread, 1-D grid of THREADS)."""
    return linear_index(THREADS)


def sel(cond, a, b):
    """``cond ? a : b`` as Int64 (branch-free)."""
    return Int64(cutlass.select_(cond, Int64(a), Int64(b)))


def imin(a, b):
    return sel(a < b, a, b)


def imax(a, b):
    return sel(a > b, a, b)


def launcher(kernel, sizes):
    """The host ``launch(a, b, c, n, *scalars, stream)`` of ``kernel(a, b, c, n, *groups)`` over
    ``n`` elements, one a thread; ``sizes``: the lengths of the Int64 scalar groups."""

    @cute.jit
    def launch(pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer, n: Int64, *rest):
        groups, stream = split_groups(rest, sizes)
        kernel(pa, pb, pc, n, *groups).launch(
            grid=[Int32((n + THREADS - 1) // THREADS), 1, 1], block=[THREADS, 1, 1], smem=0,
            stream=stream)

    return launch


# ------------------------------------------------------------ Int32 / Int64 fast index math
# The pool_fw / pool_bw kernels run their index math in ``IX`` (Int32 unless the SKU is
# ``wide``); in Int32 every division of a non-negative numerator < 2^31 by a run-time divisor d
# is a multiply-shift by d's host-computed magic pair (m, s) (common.spatial.fast_divisor: the
# round-up method, exact for every such numerator); wide SKUs divide in Int64.


#: taps loaded together in the innermost window loops (independent loads in flight)
CHUNK = 4


def index_type(wide: bool):
    """The index-math type of a SKU: Int64 when ``wide`` else Int32."""
    return Int64 if wide else Int32


def cast_all(vals, IX):
    """``vals`` (Int64 kernel scalars) converted to ``IX``, as a tuple."""
    return tuple(IX(v) for v in vals)


def isel(cond, a, b, IX):
    """``cond ? a : b`` as ``IX`` (branch-free)."""
    return IX(cutlass.select_(cond, IX(a), IX(b)))


def qdiv(a, d, m, s, IX):
    """``floor(a / d)`` for ``0 <= a`` (Int32: ``a < 2^31``, by the magic pair ``m``, ``s``)."""
    if cutlass.const_expr(IX is Int64):
        return a // d
    return Int32((Int64(a) * m) >> s)


def thread_index(IX):
    """This thread's linear element index as ``IX`` (one element per thread, 1-D grid)."""
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    return IX(bidx) * IX(THREADS) + IX(tidx)


def decompose_fast(i, C, E0, E1, E2, cl, mg, IX):
    """:func:`decompose` in ``IX`` with the magic pairs ``mg`` = (C, E0, E1, E2)'s."""
    # NCHW: w fastest
    q = qdiv(i, E2, mg[6], mg[7], IX)
    a2 = i - q * E2
    r = qdiv(q, E1, mg[4], mg[5], IX)
    a1 = q - r * E1
    q = qdiv(r, E0, mg[2], mg[3], IX)
    a0 = r - q * E0
    r = qdiv(q, C, mg[0], mg[1], IX)
    ac = q - r * C
    an = r
    # channels last: c fastest
    q = qdiv(i, C, mg[0], mg[1], IX)
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


def window_fw(o, I, O, K, S, P, D, ad, wm, IX):
    """:func:`fw_window` in ``IX``: ``(first, count, step, pool)``; ``wm`` = the (magic, shift)
    pairs of D and O; ``ad``: adaptive (a Boolean)."""
    one = IX(1)
    zero = IX(0)
    st0 = o * S - P
    en_full = st0 + (K - one) * D + one
    pool = isel(en_full < I + P, en_full, I + P, IX) - st0
    en = isel(en_full < I, en_full, I, IX)
    skip = qdiv(D - one - st0, D, wm[0], wm[1], IX)      # taps left of the input (st0 < 0)
    st = isel(st0 < zero, st0 + skip * D, st0, IX)
    cnt = isel(en > st, qdiv(en - st + D - one, D, wm[0], wm[1], IX), zero, IX)
    ast = qdiv(o * I, O, wm[2], wm[3], IX)
    aen = qdiv((o + one) * I + O - one, O, wm[2], wm[3], IX)
    return (isel(ad, ast, st, IX), isel(ad, aen - ast, cnt, IX), isel(ad, one, D, IX),
            isel(ad, aen - ast, pool, IX))


def range_bw(i, I, O, K, S, P, D, ad, wm, IX):
    """``(first, count)`` of the outputs along one dim whose window may cover input ``i``; ``wm`` = the (magic, shift) pairs of S
    and I."""
    one = IX(1)
    zero = IX(0)
    a = i + P
    span = (K - one) * D + one
    lo = isel(a < span, zero, qdiv(a - span, S, wm[0], wm[1], IX) + one, IX)
    hi0 = qdiv(a, S, wm[0], wm[1], IX) + one
    hi = isel(hi0 < O, hi0, O, IX)
    alo = qdiv(i * O, I, wm[2], wm[3], IX)
    ahi0 = qdiv((i + one) * O + I - one, I, wm[2], wm[3], IX)
    ahi = isel(ahi0 < O, ahi0, O, IX)
    lo = isel(ad, alo, lo, IX)
    hi = isel(ad, ahi, hi, IX)
    return lo, isel(hi > lo, hi - lo, zero, IX)


def avg_size(o, I, O, K, S, P, ad, wmo, IX):
    """``(pool, valid)`` of output ``o``'s avg window along one dim: its count_include_pad size
    and the number of its elements inside the input; ``wmo`` = O's (magic, shift) pair."""
    one = IX(1)
    zero = IX(0)
    st0 = o * S - P
    en = isel(st0 + K < I + P, st0 + K, I + P, IX)
    pool = en - st0
    valid = isel(en < I, en, I, IX) - isel(st0 > zero, st0, zero, IX)
    ast = qdiv(o * I, O, wmo[0], wmo[1], IX)
    aen = qdiv((o + one) * I + O - one, O, wmo[0], wmo[1], IX)
    return isel(ad, aen - ast, pool, IX), isel(ad, aen - ast, valid, IX)
