"""Device helpers of the fractional max pool, LP pool and max_unpool kernels
(``fractional_fw``, ``fractional_bw``, ``lp_fw``, ``lp_bw``, ``max_unpool``): branch-free Int64
selects, the element index and its decomposition in both layouts, the outputs whose fixed window
covers an input element, the per-dim fractional window start, the candidate output range of an
input element under fractional windows, and the four-pointer host launcher (every one of these
kernels takes four pointers, the element count ``n`` and groups of scalars).  The Int64
selects, the element index and its decomposition are :mod:`.pool_common`'s.

Fixed windows (LP pooling: no padding, no dilation): the outputs whose window ``[o·S, o·S + K)``
covers input ``i`` are ``[i < K ? 0 : (i − K)//S + 1, min(i//S + 1, O))``.

Fractional windows, one dim of input extent ``I``, output extent ``O``, kernel ``K``, sample
``u`` in [0, 1) and ``alpha`` (host-computed in the compute type: ``(I − K) / (O − 1)``, or
``I − K`` when ``O == 1``):

    torch  start(o) = o == O − 1 ? I − K : int((o + u)·alpha) − int(u·alpha)
    seed   start(o) = clamp(floor(O == 1 ? u·alpha : o·alpha + u), 0, I − K)

Both are within 1 of ``o·alpha`` and strictly increasing (``alpha >= 1`` since ``O + K − 1 <=
I``), so the outputs whose window can hold input ``z`` lie in
``[floor((z − K)(O − 1)/(I − K)), floor((z + 1)(O − 1)/(I − K)) + 2)`` (one output of margin each
side), clipped to ``[0, O)``; ``O == 1``: ``[0, 1)``.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

from ....blocks.image_index import imax, imin, sel
from ..specs.fractional import THREADS


def fixed_range(i, O, K, S):
    """``(first, count)`` of the outputs along one dim whose window ``[o·S, o·S + K)`` covers
    input ``i``."""
    one = Int64(1)
    lo = sel(i < K, Int64(0), (i - K) // S + one)
    hi = imin(i // S + one, O)
    return lo, sel(hi > lo, hi - lo, Int64(0))


def frac_start(o, I, O, K, u, alpha, torch_mode):
    """Fractional window start of output ``o`` along one dim (``u``, ``alpha``: compute-type
    floats; ``torch_mode``: a Boolean)."""
    one = Int64(1)
    t = type(alpha)
    ot = t(o)
    a = Int64((ot + u) * alpha) - Int64(u * alpha)
    a = sel(o == O - one, I - K, a)
    f = t(cutlass.select_(O == one, u * alpha, ot * alpha + u))
    b = imin(imax(Int64(f), Int64(0)), I - K)        # f >= 0: truncation is floor
    return sel(torch_mode, a, b)


def frac_candidates(z, I, O, K):
    """``(first, count)`` of the outputs along one dim whose fractional window may hold input
    ``z`` (a superset: callers test the saved index)."""
    one = Int64(1)
    den = imax(I - K, one)
    a = (z - K) * (O - one)
    lo = sel(a < Int64(0), Int64(0), a // den)
    hi = imin(((z + one) * (O - one)) // den + Int64(2), O)
    lo = sel(O == one, Int64(0), lo)
    hi = sel(O == one, one, hi)
    return lo, sel(hi > lo, hi - lo, Int64(0))


def launcher4(kernel, sizes):
    """The host ``launch(a, b, c, d, n, *scalars, stream)`` of ``kernel(a, b, c, d, n,
    *groups)`` over ``n`` items, one a thread; ``sizes``: the lengths of the scalar groups."""

    @cute.jit
    def launch(pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer, pd: cute.Pointer, n: Int64,
               *rest):
        flat, stream = rest[:-1], rest[-1]
        groups, k = [], 0
        for sz in sizes:
            groups.append(tuple(flat[k:k + sz]))
            k += sz
        kernel(pa, pb, pc, pd, n, *groups).launch(
            grid=[Int32((n + THREADS - 1) // THREADS), 1, 1], block=[THREADS, 1, 1], smem=0,
            stream=stream)

    return launch
