"""Repeat backward: ``dx[i] = Σ_tiles dy[off_keep(i) + off_tile]`` (dense ``dx``).

The dense ``dx`` index ``i`` is decomposed row-major over the kept extents ``k[8-R..7]`` (dy
strides ``ks``); the tiles are walked by eight nested loops over the reduction extents ``r0..r7``
(dy strides ``rs``; unused ones are 1), innermost last, so every element sums its tiles in the
same fixed order (deterministic, no atomics).  Accumulation in f32 (f64 for f64 inputs).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int64

from ....blocks.reduction_base import compute_type, element_type
from ..specs.repeat import BW_THREADS as THREADS, RepeatBwKnobs
from ....blocks.gmem import example_args, gmem_ptr, grouped_launcher


def build(knobs: RepeatBwKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    R = knobs.rank

    @cute.kernel
    def kernel(pdy: cute.Pointer, pdx: cute.Pointer, n: Int64, kk, kss, rr, rss):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        r0, r1, r2, r3, r4, r5, r6, r7 = rr
        rs0, rs1, rs2, rs3, rs4, rs5, rs6, rs7 = rss
        i = Int64(bidx) * Int64(THREADS) + Int64(tidx)
        if i < n:
            rem = i
            off = Int64(0)
            for d in cutlass.range_constexpr(7, 8 - R, -1):
                q = rem // kk[d]
                off = off + (rem - q * kk[d]) * kss[d]
                rem = q
            off = off + rem * kss[8 - R]
            acc = CT(0.0)
            for a0 in cutlass.range(r0):
                f0 = off + a0 * rs0
                for a1 in cutlass.range(r1):
                    f1 = f0 + a1 * rs1
                    for a2 in cutlass.range(r2):
                        f2 = f1 + a2 * rs2
                        for a3 in cutlass.range(r3):
                            f3 = f2 + a3 * rs3
                            for a4 in cutlass.range(r4):
                                f4 = f3 + a4 * rs4
                                for a5 in cutlass.range(r5):
                                    f5 = f4 + a5 * rs5
                                    for a6 in cutlass.range(r6):
                                        f6 = f5 + a6 * rs6
                                        for a7 in cutlass.range(r7):
                                            g = cute.make_tensor(pdy + (f6 + a7 * rs7),
                                                                 cute.make_layout(1))
                                            acc = acc + CT(g[0])
            out = cute.make_tensor(pdx + i, cute.make_layout(1))
            out[0] = T(acc)

    isz = T.width // 8
    return grouped_launcher(kernel, THREADS), example_args([gmem_ptr(T, isz), gmem_ptr(T, isz)], 33)
