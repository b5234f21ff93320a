"""Stream compaction (nonzero) over a dense mask of ``n`` words of ``isz`` bytes.

An element is non-zero when ``(word & zmask) != 0`` (``zmask`` drops float sign bits, so -0.0
is zero and NaN is not).  Tiles of ``COMPACT_TILE`` elements, one CTA each (256 threads × 16
consecutive elements):

* grid: ``n // TILE + 1`` CTAs (at least one; the plan sizes ``counts`` for the extra tile)
* ``phase 0``: ``counts[tile]`` = non-zero count of the tile (Int32);
* ``phase 1``: with ``offs`` = exclusive scan of the counts (Int64, by the scan plan), each
  thread writes its non-zero elements' indices at ``offs[tile] + block-exclusive-prefix + j``
  (row-major order): flat indices (``ndim == 0``: ``out[k·sk]``) or coordinates over the
  extents ``x0..x7`` (last ``ndim`` used: ``out[d·sd + k·sk]``); slots ``k >= cap`` are skipped;
* ``phase 2``: one thread copies the total ``offs[n]`` (``n`` = tile count) to ``cnt[0]``.

Deterministic (integer counts; the output order is the row-major order).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, Uint64

from ..specs.scan import COMPACT_ITEMS, COMPACT_THREADS
from ....blocks.block_scan import block_exclusive_scan
from ....blocks.gmem import gload, gstore

WORD = {1: cutlass.Uint8, 2: cutlass.Uint16, 4: cutlass.Uint32, 8: cutlass.Uint64}


def build(knobs):
    """``knobs``: a :class:`~baracuda_dsl.ops.scan.specs.scan.CompactKnobs`."""
    isz = knobs.isz
    Wt = WORD[isz]
    T, K = COMPACT_THREADS, COMPACT_ITEMS
    TILE = T * K

    @cute.jit
    def _emit(pout, k, f, ndim, cap, sd, sk, xs):
        """Write flat index ``f`` (ndim 0) or its coordinates as entry ``k``."""
        if k < cap:
            if ndim == Int32(0):
                gstore(pout, k * sk, f)
            else:
                rem = f
                for d in cutlass.range_constexpr(7, -1, -1):
                    q = rem // xs[d]
                    c = rem - q * xs[d]
                    rem = q
                    dd = Int32(d) - (Int32(8) - ndim)
                    if dd >= Int32(0):
                        gstore(pout, Int64(dd) * sd + k * sk, c)

    @cute.kernel
    def kernel(pmask: cute.Pointer, pcounts: cute.Pointer, poffs: cute.Pointer,
               pout: cute.Pointer, pcnt: cute.Pointer, n: Int64, zmask: Int64, phase: Int32,
               ndim: Int32, cap: Int64, sd: Int64, sk: Int64, x0: Int64, x1: Int64, x2: Int64,
               x3: Int64, x4: Int64, x5: Int64, x6: Int64, x7: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        tid = Int32(tidx)
        xs = [x0, x1, x2, x3, x4, x5, x6, x7]
        smem = cutlass.memory.SmemAllocator()
        buf = smem.allocate_tensor(Int32, cute.make_layout(T // 32), byte_alignment=16)
        zm = Uint64(zmask)
        if phase == Int32(2):
            if tid == Int32(0):
                if Int32(bidx) == Int32(0):
                    gstore(pcnt, Int64(0), gload(poffs, n))
        else:
            base = Int64(bidx) * Int64(TILE) + Int64(tid) * Int64(K)
            flags = cute.make_rmem_tensor(cute.make_layout(K), Int32)
            cnt = Int32(0)
            for j in cutlass.range_constexpr(K):
                i = base + Int64(j)
                nz = Int32(0)
                if i < n:
                    w = gload(pmask, i)
                    if (Uint64(w) & zm) != Uint64(0):
                        nz = Int32(1)
                flags[j] = nz
                cnt = cnt + nz
            excl, tot = block_exclusive_scan(cnt, buf, T // 32)
            if phase == Int32(0):
                if tid == Int32(0):
                    gstore(pcounts, Int64(bidx), tot)
            else:
                k = gload(poffs, Int64(bidx)) + Int64(excl)
                for j in cutlass.range_constexpr(K):
                    if flags[j] != Int32(0):
                        _emit(pout, k, base + Int64(j), ndim, cap, sd, sk, xs)
                        k = k + Int64(1)

    @cute.jit
    def launch(pmask: cute.Pointer, pcounts: cute.Pointer, poffs: cute.Pointer,
               pout: cute.Pointer, pcnt: cute.Pointer, n: Int64, zmask: Int64, phase: Int32,
               ndim: Int32, cap: Int64, sd: Int64, sk: Int64, x0: Int64, x1: Int64, x2: Int64,
               x3: Int64, x4: Int64, x5: Int64, x6: Int64, x7: Int64, stream):
        kernel(pmask, pcounts, poffs, pout, pcnt, n, zmask, phase, ndim, cap, sd, sk, x0, x1,
               x2, x3, x4, x5, x6, x7).launch(
            grid=[Int32(n // TILE + 1), 1, 1], block=[T, 1, 1], smem=T // 32 * 8 + 64,
            stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=t.width // 8)

    args = [ptr(Wt), ptr(Int32), ptr(Int64), ptr(Int64), ptr(Int64), Int64(1), Int64(-1),
            Int32(0), Int32(0), Int64(0), Int64(0), Int64(1)] + [Int64(1)] * 8
    args.append(make_fake_stream())
    return launch, args
