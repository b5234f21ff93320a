"""searchsorted: one thread per query, a branch-free binary search in its row of boundaries.

Query ``g`` (dense, row-major over the query shape; its element offset from the rank-8 query
extents ``qe`` / strides ``qs``) searches row ``r = g div m`` of the boundaries (``brow`` /
``bcol`` strides; through ``sorter[r·srow + i·scol]`` when ``has_sorter``).  Comparisons use
the order-preserving keys of :mod:`sort_common`, so NaN sorts last and -0.0 == +0.0 (numpy).
``steps = bit_length(n)`` iterations of

    half = cnt >> 1;  mid = lo + half;  go = cnt > 0 and (key(b[mid]) < key(q)   side left
                                                           key(b[mid]) <= key(q)  side right)
    lo = go ? mid + 1 : lo;  cnt = go ? cnt - half - 1 : half

give ``lo`` = the insertion index (numpy.searchsorted), written as int32 or int64.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

from ..specs.sort import ELEM_THREADS as THREADS
from .sort_common import KEY_INFO, WORD, make_key, sel
from ....blocks.gmem import dims_args, gload, gstore



def build(knobs):
    """``knobs``: a :class:`~baracuda_dsl.ops.sorting.specs.sort.SearchsortedKnobs`."""
    short = knobs.dtype
    bits, _ = KEY_INFO[short]
    W = WORD[bits]
    OT = Int64 if knobs.out == "i64" else Int32

    @cute.kernel
    def kernel(pb: cute.Pointer, pq: cute.Pointer, ps: cute.Pointer, pout: cute.Pointer,
               n: Int64, m: Int64, total: Int64, steps: Int32, right: Int32, has_sorter: Int32,
               brow: Int64, bcol: Int64, srow: Int64, scol: Int64,
               qe0: Int64, qe1: Int64, qe2: Int64, qe3: Int64, qe4: Int64, qe5: Int64,
               qe6: Int64, qe7: Int64,
               qs0: Int64, qs1: Int64, qs2: Int64, qs3: Int64, qs4: Int64, qs5: Int64,
               qs6: Int64, qs7: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        g = Int64(bidx) * Int64(THREADS) + Int64(tidx)
        if g < total:
            qe = [qe0, qe1, qe2, qe3, qe4, qe5, qe6, qe7]
            qs = [qs0, qs1, qs2, qs3, qs4, qs5, qs6, qs7]
            rem = g
            qoff = Int64(0)
            for d in cutlass.range_constexpr(7, 0, -1):
                q = rem // qe[d]
                qoff = qoff + (rem - q * qe[d]) * qs[d]
                rem = q
            qoff = qoff + rem * qs[0]
            kq = make_key(gload(pq, qoff), Int32(0), short)
            row = g // m
            lo = Int64(0)
            cnt = n
            for _ in cutlass.range(steps):
                half = cnt >> Int64(1)
                mid = lo + half
                mm = sel(mid < n, mid, n - Int64(1), Int64)
                pos = mm
                if has_sorter != Int32(0):
                    pos = Int64(gload(ps, row * srow + mm * scol))
                kb = make_key(gload(pb, row * brow + pos * bcol), Int32(0), short)
                go = sel(right != Int32(0), kb <= kq, kb < kq, cutlass.Boolean)
                go = go & (cnt > Int64(0))
                lo = sel(go, mid + Int64(1), lo, Int64)
                cnt = sel(go, cnt - half - Int64(1), half, Int64)
            gstore(pout, g, OT(lo))

    @cute.jit
    def launch(pb: cute.Pointer, pq: cute.Pointer, ps: cute.Pointer, pout: cute.Pointer,
               n: Int64, m: Int64, total: Int64, steps: Int32, right: Int32, has_sorter: Int32,
               brow: Int64, bcol: Int64, srow: Int64, scol: Int64,
               qe0: Int64, qe1: Int64, qe2: Int64, qe3: Int64, qe4: Int64, qe5: Int64,
               qe6: Int64, qe7: Int64,
               qs0: Int64, qs1: Int64, qs2: Int64, qs3: Int64, qs4: Int64, qs5: Int64,
               qs6: Int64, qs7: Int64, stream):
        kernel(pb, pq, ps, pout, n, m, total, steps, right, has_sorter, brow, bcol, srow, scol,
               qe0, qe1, qe2, qe3, qe4, qe5, qe6, qe7,
               qs0, qs1, qs2, qs3, qs4, qs5, qs6, qs7).launch(
            grid=[Int32((total + THREADS - 1) // THREADS), 1, 1], block=[THREADS, 1, 1],
            smem=0, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    args = [make_ptr(W, 16, cute.AddressSpace.gmem, assumed_align=bits // 8),
            make_ptr(W, 16, cute.AddressSpace.gmem, assumed_align=bits // 8),
            make_ptr(Int64, 16, cute.AddressSpace.gmem, assumed_align=8),
            make_ptr(OT, 16, cute.AddressSpace.gmem, assumed_align=OT.width // 8),
            Int64(1), Int64(1), Int64(1), Int32(1), Int32(0), Int32(0),
            Int64(1), Int64(1), Int64(1), Int64(1)] + dims_args(16) + [make_fake_stream()]
    return launch, args
