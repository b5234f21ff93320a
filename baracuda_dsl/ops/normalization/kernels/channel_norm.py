"""Channel-norm statistics pass (BatchNorm / GroupNorm / InstanceNorm, FW and BW): partial sums.

CTA (u, k) of a (units, K) grid reduces chunk k (vectors ``[k·chunk_v, (k+1)·chunk_v)``) of
reduction unit u.  The unit's vector j lives at element offset
``u·ubase + (j // Lv)·segstride + (j mod Lv)·vec`` (``segs`` segments of ``Lv`` vectors).

fw: each thread folds batches of up to ``U`` vectors into a running (count, mean, M2) with
    Chan's pairwise formula (batch mean and centred batch sum of squares first), the warp and
    then the CTA combine theirs the same way in a fixed order; the partial (count, mean, M2) goes
    to ``part[(u·K + k)·3 + 0..2]``.  The variance is never formed as E[x²] − E[x]².
bw: Σdy and Σdy·(x − mean_u) (mean of the unit's statistics group read from ``mean``, index
    ``(u // C)·G + (u mod C) // cpg``) go to ``part[(u·K + k)·2 + 0..1]``.

Accumulation in f32 (f64 for f64 inputs); fixed reduction order (bit-identical reruns).
"""

from __future__ import annotations

import operator

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, const_expr

from ..specs.channel_norm import PARTIAL_THREADS, ChannelVecKnobs
from ....blocks.reduction_base import WARP, compute_type, element_type
from ....blocks.gmem import gmem_ptr


def chan_merge(n_a, m_a, q_a, n_b, m_b, q_b, CT):
    """Combine two (count, mean, M2) summaries (Chan, Golub & LeVeque); empty sides are exact."""
    n = n_a + n_b
    d = m_b - m_a
    r = n_b / cutlass.max(n, CT(1.0))
    return n, m_a + d * r, q_a + q_b + d * d * n_a * r


def build(knobs: ChannelVecKnobs):
    dt, vec, mode = knobs.dtype, knobs.vec, knobs.mode
    T = element_type(dt)
    CT = compute_type(dt)
    bw = mode == "bw"
    THREADS = PARTIAL_THREADS
    W = THREADS // WARP
    U = 4 if vec > 1 else 8
    P = 2 if bw else 3

    @cute.kernel
    def kernel(px: cute.Pointer, pdy: cute.Pointer, pmean: cute.Pointer, ppart: cute.Pointer,
               Lv: Int32, nvu: Int32, chunk_v: Int32, K: Int32, ubase: Int64, segstride: Int64,
               C: Int32, G: Int32, cpg: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        u, k, _ = cute.arch.block_idx()
        smem = cutlass.memory.SmemAllocator()
        red = smem.allocate_tensor(CT, cute.make_layout((W, 4), stride=(4, 1)), byte_alignment=16)
        start = k * chunk_v
        end = cutlass.min(start + chunk_v, nvu)
        base = Int64(u) * ubase
        bl = cute.make_layout((vec, U), stride=(1, vec))
        rx = cute.make_rmem_tensor(bl, T)
        rd = cute.make_rmem_tensor(bl, T)
        n = CT(0.0)
        mean = CT(0.0)
        m2 = CT(0.0)
        mu = CT(0.0)
        if const_expr(bw):
            us = (u // C) * G + (u % C) // cpg
            gm = cute.make_tensor(pmean + Int64(us), cute.make_layout(1))
            mu = CT(gm[0])
        for j0 in cutlass.range(start + tidx, end, THREADS * U):
            for uu in cutlass.range_constexpr(U):
                j = j0 + uu * THREADS
                if j < end:
                    seg = j // Lv
                    o = j - seg * Lv
                    off = base + Int64(seg) * segstride + Int64(o) * vec
                    if const_expr(vec > 1):
                        off = cute.assume(off, divby=vec)
                    gx = cute.make_tensor(px + off, cute.make_layout(vec))
                    cute.autovec_copy(gx, rx[None, uu])
                    if const_expr(bw):
                        gd = cute.make_tensor(pdy + off, cute.make_layout(vec))
                        cute.autovec_copy(gd, rd[None, uu])
            if const_expr(bw):
                for uu in cutlass.range_constexpr(U):
                    if j0 + uu * THREADS < end:
                        for e in cutlass.range_constexpr(vec):
                            g = CT(rd[e, uu])
                            n = n + g
                            mean = mean + g * (CT(rx[e, uu]) - mu)
            else:
                # batch statistics of this step's valid vectors, then one Chan merge
                nb = CT(0.0)
                s = CT(0.0)
                for uu in cutlass.range_constexpr(U):
                    if j0 + uu * THREADS < end:
                        nb = nb + CT(vec)
                        for e in cutlass.range_constexpr(vec):
                            s = s + CT(rx[e, uu])
                mb = s / nb
                q = CT(0.0)
                for uu in cutlass.range_constexpr(U):
                    if j0 + uu * THREADS < end:
                        for e in cutlass.range_constexpr(vec):
                            dd = CT(rx[e, uu]) - mb
                            q = q + dd * dd
                n, mean, m2 = chan_merge(n, mean, m2, nb, mb, q, CT)
        lane = tidx % WARP
        warp = tidx // WARP
        if const_expr(bw):
            n = cute.arch.warp_reduction(n, operator.add)
            mean = cute.arch.warp_reduction(mean, operator.add)
        else:
            for i in cutlass.range_constexpr(5):
                off_l = 16 >> i
                n_o = cute.arch.shuffle_sync_bfly(n, offset=off_l)
                m_o = cute.arch.shuffle_sync_bfly(mean, offset=off_l)
                q_o = cute.arch.shuffle_sync_bfly(m2, offset=off_l)
                n, mean, m2 = chan_merge(n, mean, m2, n_o, m_o, q_o, CT)
        if lane == 0:
            red[warp, 0] = n
            red[warp, 1] = mean
            red[warp, 2] = m2
        cute.arch.barrier()
        if tidx == 0:
            tn = red[0, 0]
            tm = red[0, 1]
            tq = red[0, 2]
            for w in cutlass.range_constexpr(1, W):
                if const_expr(bw):
                    tn = tn + red[w, 0]
                    tm = tm + red[w, 1]
                else:
                    tn, tm, tq = chan_merge(tn, tm, tq, red[w, 0], red[w, 1], red[w, 2], CT)
            dst = cute.make_tensor(ppart + (Int64(u) * Int64(K) + Int64(k)) * P,
                                   cute.make_layout(P))
            dst[0] = tn
            dst[1] = tm
            if const_expr(not bw):
                dst[2] = tq

    @cute.jit
    def launch(px: cute.Pointer, pdy: cute.Pointer, pmean: cute.Pointer, ppart: cute.Pointer,
               Lv: Int32, nvu: Int32, chunk_v: Int32, K: Int32, ubase: Int64, segstride: Int64,
               C: Int32, G: Int32, cpg: Int32, units: Int32, stream):
        kernel(px, pdy, pmean, ppart, Lv, nvu, chunk_v, K, ubase, segstride, C, G,
               cpg).launch(grid=[units, K, 1], block=[THREADS, 1, 1],
                           smem=W * 4 * 8 + 64, stream=stream)

    align = T.width // 8 * vec
    args = [gmem_ptr(T, align), gmem_ptr(T, align), gmem_ptr(CT, CT.width // 8),
            gmem_ptr(CT, CT.width // 8),
            Int32(1), Int32(1), Int32(1), Int32(1), Int64(vec), Int64(vec), Int32(1), Int32(1),
            Int32(1), Int32(1), cute.runtime.make_fake_stream()]
    return launch, args
