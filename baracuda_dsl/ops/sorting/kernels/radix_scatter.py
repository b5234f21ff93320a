"""Radix sort downsweep: the stable scatter of one 8-bit digit pass.

CTA (tile t, row r), 8 warps; warp w owns keys ``t·TILE + w·512 + [0, 512)`` and walks them in
16 steps of 32 (input order).  Per step, ``match.any`` on the digit gives each lane its peers;
its rank among them (popc of the lower peers) plus the warp's running count of that digit
(a per-warp 257-bin shared histogram; bin 256 takes out-of-range lanes) is its offset in the
warp.  Then per digit an exclusive scan over the warps, and the global position is

    digit_base[d] (exclusive scan of the row's digit totals) + counts[row][d][t] (scanned)
    + warp offset + in-warp offset

— input order is kept among equal digits (stable).  A warp first loads the keys and indices
of all its 16 steps into registers (independent loads), then ranks them.  The writes are
staged: every element first goes to its
tile-local position ``p = tile_start[d] + warp offset + in-warp offset`` in shared
memory (the tile sorted by digit), then thread ``t`` writes local positions ``t, t+256, …`` to
``p + (digit_base[d] + counts[row][d][t] − tile_start[d])`` — runs of equal digits become
contiguous global stores.  Keys and their int32 indices move to the other ping-pong buffer.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

from ..specs.sort import RADIX_BINS as BINS, RADIX_ITEMS as ITEMS, RADIX_THREADS as THREADS
from ..specs.sort import scatter_smem
from ....blocks.block_scan import block_exclusive_scan
from ....blocks.gmem import gload, gstore
from .sort_common import key_type, sel

WARPS = THREADS // 32
TILE = THREADS * ITEMS
HB = BINS + 1


def build(knobs):
    """``knobs``: a :class:`~baracuda_dsl.ops.sorting.specs.sort.RadixPassKnobs`."""
    KT = key_type(knobs.kbits)
    smem_bytes = scatter_smem(knobs)

    @cute.kernel
    def kernel(pkin: cute.Pointer, piin: cute.Pointer, pkout: cute.Pointer, piout: cute.Pointer,
               pcounts: cute.Pointer, ptotals: cute.Pointer, n: Int64, tiles: Int64,
               row0: Int64, shift: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, bidy, _ = cute.arch.block_idx()
        tid = Int32(tidx)
        lane = tid % Int32(32)
        warp = tid // Int32(32)
        smem = cutlass.memory.SmemAllocator()
        dbase = smem.allocate_tensor(Int32, cute.make_layout(BINS), byte_alignment=16)
        whist = smem.allocate_tensor(Int32, cute.make_layout((WARPS, HB), stride=(HB, 1)),
                                     byte_alignment=16)
        buf = smem.allocate_tensor(Int32, cute.make_layout(WARPS), byte_alignment=16)
        tstart = smem.allocate_tensor(Int32, cute.make_layout(BINS), byte_alignment=16)
        skeys = smem.allocate_tensor(KT, cute.make_layout(TILE), byte_alignment=16)
        sidx = smem.allocate_tensor(Int32, cute.make_layout(TILE), byte_alignment=16)
        row = row0 + Int64(bidy)
        tot = gload(ptotals, row * Int64(BINS) + Int64(tid))
        excl, _ = block_exclusive_scan(tot, buf, WARPS)
        dbase[tid] = excl + gload(pcounts, (row * Int64(BINS) + Int64(tid)) * tiles + Int64(bidx))
        for w in cutlass.range_constexpr(WARPS):
            whist[w, tid] = Int32(0)
        if tid < Int32(WARPS):
            whist[tid, BINS] = Int32(0)
        cute.arch.barrier()
        rbase = row * n
        wbase = Int64(bidx) * Int64(TILE) + Int64(warp * Int32(32 * ITEMS) + lane)
        rk = cute.make_rmem_tensor(cute.make_layout(ITEMS), KT)
        ri = cute.make_rmem_tensor(cute.make_layout(ITEMS), Int32)
        rd = cute.make_rmem_tensor(cute.make_layout(ITEMS), Int32)
        rl = cute.make_rmem_tensor(cute.make_layout(ITEMS), Int32)
        lt_mask = cute.arch.lanemask_lt()
        # all loads first (independent: one memory latency per tile, not one per step)
        for it in cutlass.range_constexpr(ITEMS):
            e = wbase + Int64(it * 32)
            k = KT(0)
            v = Int32(0)
            if e < n:
                k = KT(gload(pkin, rbase + e))
                v = Int32(gload(piin, rbase + e))
            rk[it] = k
            ri[it] = v
        for it in cutlass.range_constexpr(ITEMS):
            e = wbase + Int64(it * 32)
            d = sel(e < n, Int32((rk[it] >> KT(shift)) & KT(BINS - 1)), BINS, Int32)
            peers = cute.arch.match_sync(cute.arch.FULL_MASK, d)
            rank = Int32(cute.arch.popc(peers & lt_mask))
            cnt = Int32(cute.arch.popc(peers))
            b = whist[warp, d]
            cute.arch.sync_warp()
            if rank == Int32(0):
                whist[warp, d] = b + cnt
            cute.arch.sync_warp()
            rd[it] = d
            rl[it] = b + rank
        cute.arch.barrier()
        run = Int32(0)
        for w in cutlass.range_constexpr(WARPS):
            c = whist[w, tid]
            whist[w, tid] = run
            run = run + c
        ts, _ = block_exclusive_scan(run, buf, WARPS)       # ends with a barrier
        tstart[tid] = ts
        dbase[tid] = dbase[tid] - ts
        cute.arch.barrier()
        for it in cutlass.range_constexpr(ITEMS):
            d = rd[it]
            if d < Int32(BINS):
                p = tstart[d] + whist[warp, d] + rl[it]
                skeys[p] = rk[it]
                sidx[p] = ri[it]
        cute.arch.barrier()
        valid = n - Int64(bidx) * Int64(TILE)
        for it in cutlass.range_constexpr(ITEMS):
            p = tid + Int32(it * THREADS)
            if Int64(p) < valid:
                k = skeys[p]
                d = Int32((k >> KT(shift)) & KT(BINS - 1))
                pos = Int64(p + dbase[d])
                gstore(pkout, rbase + pos, k)
                gstore(piout, rbase + pos, sidx[p])

    @cute.jit
    def launch(pkin: cute.Pointer, piin: cute.Pointer, pkout: cute.Pointer, piout: cute.Pointer,
               pcounts: cute.Pointer, ptotals: cute.Pointer, n: Int64, tiles: Int64,
               row0: Int64, shift: Int32, stream):
        kernel(pkin, piin, pkout, piout, pcounts, ptotals, n, tiles, row0, shift).launch(
            grid=[Int32(tiles), 1, 1], block=[THREADS, 1, 1], smem=smem_bytes, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    kp = lambda: make_ptr(KT, 16, cute.AddressSpace.gmem, assumed_align=KT.width // 8)  # noqa: E731
    ip = lambda: make_ptr(Int32, 16, cute.AddressSpace.gmem, assumed_align=4)  # noqa: E731
    args = [kp(), ip(), kp(), ip(), ip(), ip(), Int64(1), Int64(1), Int64(0), Int32(0),
            make_fake_stream()]
    return launch, args
