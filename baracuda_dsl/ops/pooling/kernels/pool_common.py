"""Device helpers shared by the pooling family's kernels: branch-free Int64 selects, the element
index (Int64, or in the index type ``IX`` of ``pool_fw`` / ``pool_bw``, whose decomposition and
magic-number divisions are :mod:`baracuda_dsl.blocks.image_index`'s), the per-dim window math,
and the host launcher that regroups the flat Int64 ABI scalars into the kernels' parameter
tuples.

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

import cutlass.cute as cute
from cutlass import Int32, Int64

from ....blocks.image_index import isel, ix_linear_index, linear_index, qdiv, split_groups
from ..specs.pool import THREADS


def element_index():
    """This thread's linear element index (one element per thread, 1-D grid of THREADS)."""
    return linear_index(THREADS)


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
# pool_fw / pool_bw run their index math in ``IX`` (Int32 unless the SKU is ``wide``): the
# helpers are blocks.image_index's (index_type, cast_all, isel, qdiv, decompose_ncdhw_ix).

#: taps loaded together in the innermost window loops (independent loads in flight)
CHUNK = 4


def thread_index(IX):
    """This thread's linear element index as ``IX`` (one element per thread, 1-D grid)."""
    return ix_linear_index(THREADS, IX)


def window_fw(o, I, O, K, S, P, D, ad, wm, IX):
    """``(first, count, step, pool)`` of output ``o``'s window along one dim, in ``IX``: the first
    tap inside the input, the number of taps inside it, the tap step and the count_include_pad
    size; ``wm`` = the (magic, shift) pairs of D and O; ``ad``: adaptive (a Boolean)."""
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
