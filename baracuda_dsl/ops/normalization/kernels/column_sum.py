"""Deterministic column sum: ``dst[j] = Σ_p src[p, j]`` over P partial rows (compute type in, the
plan's dtype out).  A block of 256 threads covers 32 columns with 8 row groups; each thread adds
rows g, g+8, g+16, … into four interleaved accumulators (four loads in flight), combined in a
fixed order, and the 8 group sums are added in order through shared memory.  The
order never depends on scheduling, so results are bit-identical run to run.  Used to finish the
weight/bias gradients of the normalisation backward kernels.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

from ..specs.row_norm import COLSUM_COLS as COLS, COLSUM_GROUPS as GROUPS, ColumnSumKnobs
from ....blocks.reduction_base import compute_type, element_type
from ....blocks.gmem import gmem_ptr


def build(knobs: ColumnSumKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)

    @cute.kernel
    def kernel(psrc: cute.Pointer, pdst: cute.Pointer, G: Int32, N: Int32, ld: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        c = tidx % COLS
        g = tidx // COLS
        col = bidx * COLS + c
        smem = cutlass.memory.SmemAllocator()
        part = smem.allocate_tensor(CT, cute.make_layout((COLS, GROUPS)), byte_alignment=16)
        # four independent accumulators (rows g, g+8, g+16, g+24 of each step of 32) keep four
        # loads in flight per thread; they are combined in a fixed order
        a0 = CT(0.0)
        a1 = CT(0.0)
        a2 = CT(0.0)
        a3 = CT(0.0)
        if col < N:
            col64 = Int64(col)
            for p in cutlass.range(g, G, GROUPS * 4):
                src = cute.make_tensor(psrc + (Int64(p) * ld + col64),
                                       cute.make_layout(4, stride=ld * GROUPS))
                if p + 3 * GROUPS < G:
                    a0 = a0 + src[0]
                    a1 = a1 + src[1]
                    a2 = a2 + src[2]
                    a3 = a3 + src[3]
                else:
                    a0 = a0 + src[0]
                    if p + GROUPS < G:
                        a1 = a1 + src[1]
                    if p + 2 * GROUPS < G:
                        a2 = a2 + src[2]
        part[c, g] = (a0 + a1) + (a2 + a3)
        cute.arch.barrier()
        if g == 0 and col < N:
            tot = part[c, 0]
            for k in cutlass.range_constexpr(1, GROUPS):
                tot = tot + part[c, k]
            dst = cute.make_tensor(pdst + Int64(col), cute.make_layout(1))
            dst[0] = T(tot)

    @cute.jit
    def launch(psrc: cute.Pointer, pdst: cute.Pointer, G: Int32, N: Int32, ld: Int64, stream):
        kernel(psrc, pdst, G, N, ld).launch(grid=[(N + COLS - 1) // COLS, 1, 1],
                                             block=[COLS * GROUPS, 1, 1],
                                             smem=COLS * GROUPS * 8 + 64, stream=stream)

    args = [gmem_ptr(CT, CT.width // 8), gmem_ptr(T, T.width // 8), Int32(1), Int32(1), Int64(1),
            cute.runtime.make_fake_stream()]
    return launch, args
