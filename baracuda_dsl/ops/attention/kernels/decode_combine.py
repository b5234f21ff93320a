"""Split-KV decode, second pass (``attn_decode_combine``): merge the splits' partials.

One warp per query row ``row_id = (b·Hk + hk)·G·Sq + ρ`` (ρ = t·G + g; 4 rows a CTA).  The row's
``nsplit`` partials sit at workspace slots ``row_id·nsplit + s``: the normalised partial output
o_s (head_dim f32) and lse2_s = m_s + log2 l_s (base 2; −∞ for a split that saw no key).

    M = max_s lse2_s,   lse2 = M + log2 Σ_s 2^(lse2_s − M)
    out = Σ_s 2^(lse2_s − lse2)·o_s     (input dtype, rounded once),   lse = lse2·ln 2

The lanes take the splits for M and the sum (shuffle reductions), then 8 head-dims each for the
weighted sum, adding the splits in order (deterministic, bit-stable).  A row whose splits are
all empty gets out = 0 and lse = −∞.  ``HAS_LSE``: write lse (f32, any strides) too.
"""

from __future__ import annotations

import math
import operator

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64

from ..specs.decode import COMBINE_THREADS, COMBINE_WARPS, HAS_LSE, DecodeCombineKnobs
from .decode import ldg_f32, ldg_f32x4, pack2, safe_base, stg_f32, stg_v4

LN2 = math.log(2.0)
NEG_INF = -math.inf


def build(knobs: DecodeCombineKnobs):
    dt = knobs.dtype
    T = {"f16": cutlass.Float16, "bf16": cutlass.BFloat16}[dt]

    @cute.kernel
    def kernel(ppo: cute.Pointer, ppl: cute.Pointer, po: cute.Pointer, plse: cute.Pointer,
               rows: Int32, nsplit: Int32, hd: Int32, nrows: Int32, heads_k: Int32,
               ratio: Int32, ob: Int64, os: Int64, oh: Int64, lb: Int64, lh: Int64, lt: Int64,
               flags: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bx, _, _ = cute.arch.block_idx()
        tid = Int32(tidx)
        lane = tid % 32
        row = Int32(bx) * COMBINE_WARPS + tid // 32
        if row < rows:
            base = Int64(row) * Int64(nsplit)
            lbase = ppl.toint() + base * 4
            mx = Float32(NEG_INF)
            for sp in cutlass.range(lane, nsplit, 32, unroll=1):
                mx = cute.arch.fmax(mx, ldg_f32(lbase + Int64(sp) * 4))
            mx = cute.arch.warp_reduction(mx, cute.arch.fmax)
            ms = safe_base(mx)
            tot = Float32(0.0)
            for sp in cutlass.range(lane, nsplit, 32, unroll=1):
                tot = tot + cute.math.exp2(ldg_f32(lbase + Int64(sp) * 4) - ms, fastmath=True)
            tot = cute.arch.warp_reduction(tot, operator.add)
            lse2 = Float32(NEG_INF)
            if tot > Float32(0.0):
                lse2 = mx + cute.math.log2(tot, fastmath=True)
            lsafe = safe_base(lse2)
            # the row's (b, t, h)
            rho = row % nrows
            bh = row // nrows
            hk = bh % heads_k
            b = bh // heads_k
            t = rho // ratio
            h = hk * ratio + rho - t * ratio
            for j8 in cutlass.range(lane, hd // 8, 32, unroll=1):
                acc = cute.make_rmem_tensor(cute.make_layout(8), Float32)
                acc.fill(0.0)
                for sp in cutlass.range(nsplit, unroll=1):
                    w = cute.math.exp2(ldg_f32(lbase + Int64(sp) * 4) - lsafe, fastmath=True)
                    oa = ppo.toint() + ((base + Int64(sp)) * Int64(hd) + Int64(j8) * 8) * 4
                    x = ldg_f32x4(oa)
                    y = ldg_f32x4(oa + 16)
                    for e in cutlass.range_constexpr(4):
                        acc[e] = acc[e] + w * x[e]
                        acc[4 + e] = acc[4 + e] + w * y[e]
                oaddr = po.toint() + (Int64(b) * ob + Int64(t) * os + Int64(h) * oh
                                      + Int64(j8) * 8) * 2
                stg_v4(oaddr, pack2(dt, acc[0], acc[1]), pack2(dt, acc[2], acc[3]),
                       pack2(dt, acc[4], acc[5]), pack2(dt, acc[6], acc[7]))
            if ((flags & HAS_LSE) != 0) & (lane == 0):
                stg_f32(plse.toint() + (Int64(b) * lb + Int64(h) * lh + Int64(t) * lt) * 4,
                        lse2 * LN2)

    @cute.jit
    def launch(ppo: cute.Pointer, ppl: cute.Pointer, po: cute.Pointer, plse: cute.Pointer,
               rows: Int32, nsplit: Int32, hd: Int32, nrows: Int32, heads_k: Int32,
               ratio: Int32, ob: Int64, os: Int64, oh: Int64, lb: Int64, lh: Int64, lt: Int64,
               flags: Int32, stream):
        kernel(ppo, ppl, po, plse, rows, nsplit, hd, nrows, heads_k, ratio, ob, os, oh, lb, lh,
               lt, flags).launch(grid=[(rows + COMBINE_WARPS - 1) // COMBINE_WARPS, 1, 1],
                                 block=[COMBINE_THREADS, 1, 1], smem=0, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t, align):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=align)

    args = ([ptr(Float32, 16), ptr(Float32, 4), ptr(T, 16), ptr(Float32, 4)]
            + [Int32(1)] * 6 + [Int64(8)] * 6 + [Int32(0), make_fake_stream()])
    return launch, args
