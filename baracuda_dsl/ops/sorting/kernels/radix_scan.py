"""Radix sort scan: CTA (digit d, row r) turns ``counts[row][d][0..tiles)`` into its exclusive
prefix sum in place (rounds of 256 tiles, carried) and writes the digit total
``totals[row][d]``.  The scatter adds the exclusive scan of the totals (digit base).
Integer sums: exact and deterministic.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

from ..specs.sort import RADIX_BINS as BINS, RADIX_SCAN, RADIX_THREADS as THREADS
from ....blocks.block_scan import block_exclusive_scan
from ....blocks.gmem import gload, gstore


def build(knobs):
    """``knobs``: a :class:`~baracuda_dsl.ops.sorting.specs.sort.RadixScanKnobs` (one SKU)."""
    smem_bytes = RADIX_SCAN.geometry(knobs).smem_bytes

    @cute.kernel
    def kernel(pcounts: cute.Pointer, ptotals: cute.Pointer, tiles: Int64, row0: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, bidy, _ = cute.arch.block_idx()
        tid = Int32(tidx)
        smem = cutlass.memory.SmemAllocator()
        buf = smem.allocate_tensor(Int32, cute.make_layout(THREADS // 32), byte_alignment=16)
        row = row0 + Int64(bidy)
        base = (row * Int64(BINS) + Int64(bidx)) * tiles
        carry = Int32(0)
        for r in cutlass.range((tiles + THREADS - 1) // THREADS):
            t = r * Int64(THREADS) + Int64(tid)
            v = Int32(0)
            if t < tiles:
                v = gload(pcounts, base + t)
            excl, tot = block_exclusive_scan(v, buf, THREADS // 32)
            if t < tiles:
                gstore(pcounts, base + t, carry + excl)
            carry = carry + tot
        if tid == Int32(0):
            gstore(ptotals, row * Int64(BINS) + Int64(bidx), carry)

    @cute.jit
    def launch(pcounts: cute.Pointer, ptotals: cute.Pointer, tiles: Int64, row0: Int64, stream):
        kernel(pcounts, ptotals, tiles, row0).launch(grid=[BINS, 1, 1], block=[THREADS, 1, 1],
                                                     smem=smem_bytes, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    args = [make_ptr(Int32, 16, cute.AddressSpace.gmem, assumed_align=4),
            make_ptr(Int32, 16, cute.AddressSpace.gmem, assumed_align=4),
            Int64(1), Int64(0), make_fake_stream()]
    return launch, args
