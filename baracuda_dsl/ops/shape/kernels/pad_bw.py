"""Pad backward: ``dx[i] = Σ_{p : map(p) = i} dy[p]`` over every padded dim at once (dense ``dx``).

The dense ``dx`` index is decomposed row-major over the input extents ``x[8-R..7]``; for each dim
the output coordinates ``p`` (out extent ``pe``, low pad ``l``) that the forward pad maps onto the
input coordinate form a short ascending list (:mod:`.pad_sources`).  Eight nested loops (one per
dim, unused dims run once) walk the lists innermost last, so every element sums in the same fixed
order (deterministic, no atomics).  Accumulation in f32 (f64 for f64).  Index math in Int64;
counts in Int32.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

from ....blocks.reduction_base import compute_type, element_type
from ..specs.remap import BW_THREADS as THREADS, PadBwKnobs
from .pad_sources import pad_sources
from ....blocks.gmem import example_args, gmem_ptr, grouped_launcher


def build(knobs: PadBwKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    R = knobs.rank
    cands, pick = pad_sources(knobs.mode, Int64)

    @cute.kernel
    def kernel(pdy: cute.Pointer, pdx: cute.Pointer, n: Int64, xx, pp, ll, ss):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        s0, s1, s2, s3, s4, s5, s6, s7 = ss
        i = Int64(bidx) * Int64(THREADS) + Int64(tidx)
        if i < n:
            coord = [Int64(0)] * 8
            rem = i
            for d in cutlass.range_constexpr(7, 8 - R, -1):
                q = rem // xx[d]
                coord[d] = rem - q * xx[d]
                rem = q
            coord[8 - R] = rem
            cn = [Int32(1)] * 8
            fa = [Int64(0)] * 8
            fb = [Int64(0)] * 8
            fc = [Int64(0)] * 8
            fs = [Int64(0)] * 8
            for d in cutlass.range_constexpr(8 - R, 8):
                cn[d], fa[d], fb[d], fc[d], fs[d] = cands(coord[d], xx[d], pp[d], ll[d])
            c0, c1, c2, c3, c4, c5, c6, c7 = cn
            acc = CT(0.0)
            for a0 in cutlass.range(c0):
                g0 = pick(a0, fa[0], fb[0], fc[0], fs[0]) * s0
                for a1 in cutlass.range(c1):
                    g1 = g0 + pick(a1, fa[1], fb[1], fc[1], fs[1]) * s1
                    for a2 in cutlass.range(c2):
                        g2 = g1 + pick(a2, fa[2], fb[2], fc[2], fs[2]) * s2
                        for a3 in cutlass.range(c3):
                            g3 = g2 + pick(a3, fa[3], fb[3], fc[3], fs[3]) * s3
                            for a4 in cutlass.range(c4):
                                g4 = g3 + pick(a4, fa[4], fb[4], fc[4], fs[4]) * s4
                                for a5 in cutlass.range(c5):
                                    g5 = g4 + pick(a5, fa[5], fb[5], fc[5], fs[5]) * s5
                                    for a6 in cutlass.range(c6):
                                        g6 = g5 + pick(a6, fa[6], fb[6], fc[6], fs[6]) * s6
                                        for a7 in cutlass.range(c7):
                                            off = g6 + pick(a7, fa[7], fb[7], fc[7], fs[7]) * s7
                                            g = cute.make_tensor(pdy + off, cute.make_layout(1))
                                            acc = acc + CT(g[0])
            out = cute.make_tensor(pdx + i, cute.make_layout(1))
            out[0] = T(acc)

    isz = T.width // 8
    return grouped_launcher(kernel, THREADS), example_args([gmem_ptr(T, isz), gmem_ptr(T, isz)], 33)
