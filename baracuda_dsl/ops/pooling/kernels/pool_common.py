"""Device helpers shared by the pooling kernels (``pool_fw``, ``pool_bw``): branch-free per-dim
window math on Int64 coordinates, the element index decomposition of both layouts and the host
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

from ..specs.pool import THREADS


def sel(cond, a, b):
    """``cond ? a : b`` as Int64 (branch-free)."""
    return Int64(cutlass.select_(cond, Int64(a), Int64(b)))


def imin(a, b):
    return sel(a < b, a, b)


def imax(a, b):
    return sel(a > b, a, b)


def fw_window(o, I, O, K, S, P, D, adaptive):
    """``(first, count, step, pool)`` of output ``o``'s window along one dim: the first tap inside
    the input, the number of taps inside it, the tap step and the count_include_pad size."""
    one = Int64(1)
    st0 = o * S - P
    en_full = st0 + (K - one) * D + one
    pool = imin(en_full, I + P) - st0
    en = imin(en_full, I)
    skip = (Int64(0) - st0 + D - one) // D           # taps left of the input (st0 < 0)
    st = sel(st0 < Int64(0), st0 + skip * D, st0)
    cnt = sel(en > st, (en - st + D - one) // D, Int64(0))
    ast = (o * I) // O
    aen = ((o + one) * I + O - one) // O
    ad = adaptive != Int64(0)
    return (sel(ad, ast, st), sel(ad, aen - ast, cnt), sel(ad, one, D),
            sel(ad, aen - ast, pool))


def bw_range(i, I, O, K, S, P, D, adaptive):
    """``(first, count)`` of the outputs along one dim whose window may cover input ``i``."""
    one = Int64(1)
    a = i + P
    span = (K - one) * D + one
    lo = sel(a < span, Int64(0), (a - span) // S + one)
    hi = imin(a // S + one, O)
    alo = (i * O) // I
    ahi = imin(((i + one) * O + I - one) // I, O)
    ad = adaptive != Int64(0)
    lo = sel(ad, alo, lo)
    hi = sel(ad, ahi, hi)
    return lo, sel(hi > lo, hi - lo, Int64(0))


def avg_sizes(o, I, O, K, S, P, adaptive):
    """``(pool, valid)`` of output ``o``'s avg window along one dim: its count_include_pad size
    and the number of its elements inside the input."""
    one = Int64(1)
    st0 = o * S - P
    en = imin(st0 + K, I + P)
    pool = en - st0
    valid = imin(en, I) - imax(st0, Int64(0))
    ast = (o * I) // O
    aen = ((o + one) * I + O - one) // O
    ad = adaptive != Int64(0)
    return sel(ad, aen - ast, pool), sel(ad, aen - ast, valid)


def decompose(i, C, E0, E1, E2, cl):
    """``(n, c, z0, z1, z2)`` of the linear index ``i`` of a dense (N, C, E0, E1, E2) tensor in
    NCHW order (``cl == 0``: z2 fastest) or channels-last order (c fastest)."""
    # NCHW
    q = i // E2
    a2 = i - q * E2
    r = q // E1
    a1 = q - r * E1
    q = r // E0
    a0 = r - q * E0
    r = q // C
    ac = q - r * C
    an = r
    # NHWC
    q = i // C
    bc = i - q * C
    r = q // E2
    b2 = q - r * E2
    q = r // E1
    b1 = r - q * E1
    r = q // E0
    b0 = q - r * E0
    bn = r
    c = cl != Int64(0)
    return (sel(c, bn, an), sel(c, bc, ac), sel(c, b0, a0), sel(c, b1, a1), sel(c, b2, a2))


def element_index():
    """This thread's linear element index (one element per thread, 1-D grid)."""
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    return Int64(bidx) * Int64(THREADS) + Int64(tidx)


def split_groups(rest, sizes):
    """(tuple of scalar groups of ``sizes``, stream) of a launcher's trailing ``*rest``."""
    flat, out, k = rest[:-1], [], 0
    for s in sizes:
        out.append(tuple(flat[k:k + s]))
        k += s
    return out, rest[-1]


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
