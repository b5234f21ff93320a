"""Radix sort upsweep: for one 8-bit digit pass (``shift``), CTA (tile t, row r) counts the
digits of keys ``[t·TILE, (t+1)·TILE)`` of row ``row0 + r`` (256 shared-memory bins, shared
atomics; counts are exact so the order of the atomics does not matter) and writes
``counts[row][digit][t]`` (digit-major, Int32).  TILE = 256 threads × 16 keys.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

from ..specs.sort import RADIX_BINS as BINS, RADIX_ITEMS as ITEMS, RADIX_THREADS as THREADS
from ..specs.sort import RADIX_UPSWEEP
from ....blocks.gmem import gload, gstore
from .sort_common import key_type

TILE = THREADS * ITEMS


def build(knobs):
    """``knobs``: a :class:`~baracuda_dsl.ops.sorting.specs.sort.RadixPassKnobs`."""
    KT = key_type(knobs.kbits)
    smem_bytes = RADIX_UPSWEEP.geometry(knobs).smem_bytes

    @cute.kernel
    def kernel(pkeys: cute.Pointer, pcounts: cute.Pointer, n: Int64, tiles: Int64, row0: Int64,
               shift: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, bidy, _ = cute.arch.block_idx()
        tid = Int32(tidx)
        smem = cutlass.memory.SmemAllocator()
        hist = smem.allocate_tensor(Int32, cute.make_layout(BINS), byte_alignment=16)
        hist[tid] = Int32(0)
        cute.arch.barrier()
        row = row0 + Int64(bidy)
        base = Int64(bidx) * Int64(TILE)
        rk = cute.make_rmem_tensor(cute.make_layout(ITEMS), KT)
        for it in cutlass.range_constexpr(ITEMS):              # independent loads first
            e = base + Int64(it * THREADS) + Int64(tid)
            k = KT(0)
            if e < n:
                k = KT(gload(pkeys, row * n + e))
            rk[it] = k
        for it in cutlass.range_constexpr(ITEMS):
            e = base + Int64(it * THREADS) + Int64(tid)
            if e < n:
                d = Int32((rk[it] >> KT(shift)) & KT(BINS - 1))
                cute.arch.atomic_add((hist.iterator + d).llvm_ptr, Int32(1))
        cute.arch.barrier()
        gstore(pcounts, (row * Int64(BINS) + Int64(tid)) * tiles + Int64(bidx), hist[tid])

    @cute.jit
    def launch(pkeys: cute.Pointer, pcounts: cute.Pointer, n: Int64, tiles: Int64, row0: Int64,
               shift: Int32, stream):
        kernel(pkeys, pcounts, n, tiles, row0, shift).launch(
            grid=[Int32(tiles), 1, 1], block=[THREADS, 1, 1], smem=smem_bytes, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    args = [make_ptr(KT, 16, cute.AddressSpace.gmem, assumed_align=KT.width // 8),
            make_ptr(Int32, 16, cute.AddressSpace.gmem, assumed_align=4),
            Int64(1), Int64(1), Int64(0), Int32(0), make_fake_stream()]
    return launch, args
