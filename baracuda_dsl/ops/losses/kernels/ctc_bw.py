"""CTC loss backward: one CTA per batch element ``n``, after the forward kernel filled ``alpha``
and ``nll`` in the workspace.

    β_{Tn−1}(2L) = lp[Tn−1, blank],  β_{Tn−1}(2L−1) = lp[Tn−1, l_{L−1}]
    β_t(s) = lp[t, l'_s] + lse(β_{t+1}(s), β_{t+1}(s+1), β_{t+1}(s+2) if l'_s ≠ blank, l'_s ≠ l'_{s+2})
    grad[t, n, c] = g·(exp(lp[t,n,c]) − exp(lse_{s: l'_s = c}(α_t(s) + β_t(s)) + nll − lp[t,n,c]))

for t < Tn (0 for t ≥ Tn) — torch's formula (the gradient with respect to log-probabilities that
come out of a log_softmax).  ``g = dl[n·dls]·scale`` (divided by max(L, 1) with MEAN); with
ZERO_INF an infinite nll zeroes the sample's gradient.  Columns that are no label of the sample
get exp(lp)·g (NaN when nll = +∞, as torch); the label columns are then rewritten by the thread
owning their first occurrence (fixed order, no atomics).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float64, Int32, Int64

from ..specs.ctc import MEAN, SLOTS, THREADS, ZERO_INF, CTCKnobs, ctc_geometry
from .ctc import ext_label, label, lse3, sample_setup
from .loss_row import example_ptr, ld, st
from ....blocks.reduction_base import alloc_reduction_buffer, compute_type, element_type

M = cute.math
INF = float("inf")


def build(knobs: CTCKnobs):
    """The CTC backward kernel for ``knobs.dtype`` (see the module docstring)."""
    dt = knobs.dtype
    T = element_type(dt)
    CT = compute_type(dt)
    smem = ctc_geometry(knobs).smem_bytes
    nt = THREADS

    @cute.kernel
    def kernel(pdl: cute.Pointer, plp: cute.Pointer, ptg: cute.Pointer, pil: cute.Pointer,
               ptl: cute.Pointer, palpha: cute.Pointer, pbeta: cute.Pointer, pnll: cute.Pointer,
               pgrad: cute.Pointer, Tmax: Int32, N: Int32, C: Int32, S: Int32, blank: Int32,
               l0: Int64, l1: Int64, l2: Int64, ts0: Int64, ts1: Int64, ils: Int64, tls: Int64,
               g0: Int64, g1: Int64, g2: Int64, dls: Int64, tot: Int64, scale: Float64,
               flags: Int32):
        lane, _, _ = cute.arch.thread_idx()
        n, _, _ = cute.arch.block_idx()
        buf64 = alloc_reduction_buffer(Float64, nt, 1, SLOTS)
        ninf = CT(-INF)
        Tn, L, base, badlen = sample_setup(ptg, pil, ptl, buf64, n, N, Tmax, S, ts0, ts1, ils,
                                           tls, tot, flags, lane)
        nll = CT(ld(pnll, Int64(n)))
        g = CT(ld(pdl, Int64(n) * dls)) * CT(scale)
        if (flags & MEAN) != Int32(0):
            g = g / CT(Int32(cutlass.select_(L > Int32(1), L, Int32(1))))
        zi = Int32(0)
        if (flags & ZERO_INF) != Int32(0):
            zi = cutlass.select_(nll == CT(INF), Int32(1), Int32(0))
        Sp = Int64(2) * Int64(S) + Int64(1)
        Sn = Int32(2) * L + Int32(1)
        arow = Int64(n) * Int64(Tmax) * Sp
        lpn = Int64(n) * l1
        gn = Int64(n) * g1
        if Tn > Int32(0):
            last = arow + Int64(Tn - 1) * Sp
            for s in cutlass.range(lane, Sn, nt):
                b0 = ninf
                if s >= Sn - Int32(2):
                    b0 = CT(ld(plp, Int64(Tn - 1) * l0 + lpn
                               + Int64(ext_label(ptg, base, ts1, s, C, blank)) * l2))
                st(pbeta, last + Int64(s), b0)
            for tt in cutlass.range(Tn - Int32(1)):
                t = Tn - Int32(2) - tt
                cute.arch.barrier()
                nxt = arow + Int64(t + 1) * Sp
                cur = arow + Int64(t) * Sp
                for s in cutlass.range(lane, Sn, nt):
                    ls = ext_label(ptg, base, ts1, s, C, blank)
                    a = CT(ld(pbeta, nxt + Int64(s)))
                    b = ninf
                    c = ninf
                    if s + Int32(1) < Sn:
                        b = CT(ld(pbeta, nxt + Int64(s + 1)))
                    if s + Int32(2) < Sn:
                        if ls != blank:
                            if ls != ext_label(ptg, base, ts1, s + Int32(2), C, blank):
                                c = CT(ld(pbeta, nxt + Int64(s + 2)))
                    v = CT(ld(plp, Int64(t) * l0 + lpn + Int64(ls) * l2)) + lse3(a, b, c)
                    st(pbeta, cur + Int64(s), v)
        # every column: exp(lp)·g (the label columns are rewritten below)
        for t in cutlass.range(Tmax):
            for c in cutlass.range(lane, C, nt):
                v = CT(0.0)
                if t < Tn:
                    x = CT(ld(plp, Int64(t) * l0 + lpn + Int64(c) * l2))
                    v = (M.exp(x) - M.exp(ninf + nll - x)) * g
                    if zi != Int32(0):
                        v = CT(0.0)
                st(pgrad, Int64(t) * g0 + gn + Int64(c) * g2, T(v))
        cute.arch.barrier()
        if zi == Int32(0):
            for t in cutlass.range(Tn):
                row = arow + Int64(t) * Sp
                for item in cutlass.range(lane, L + Int32(1), nt):
                    c = blank
                    k0 = item - Int32(1)
                    own = Int32(1)
                    if item > Int32(0):
                        c = label(ptg, base, ts1, k0, C)
                        if c == blank:
                            own = Int32(0)
                        for kk in cutlass.range(k0):
                            if label(ptg, base, ts1, kk, C) == c:
                                own = Int32(0)
                    if own != Int32(0):
                        m = ninf
                        acc = CT(0.0)
                        # two passes over the positions carrying c: max, then the sum of exps
                        for s in cutlass.range(Sn):
                            if ext_label(ptg, base, ts1, s, C, blank) == c:
                                v = CT(ld(palpha, row + Int64(s))) + CT(ld(pbeta, row + Int64(s)))
                                m = cutlass.select_(v > m, v, m)
                        ms = cutlass.select_(m == ninf, CT(0.0), m)
                        for s in cutlass.range(Sn):
                            if ext_label(ptg, base, ts1, s, C, blank) == c:
                                v = CT(ld(palpha, row + Int64(s))) + CT(ld(pbeta, row + Int64(s)))
                                acc = acc + M.exp(v - ms)
                        lcab = ms + M.log(acc)
                        x = CT(ld(plp, Int64(t) * l0 + lpn + Int64(c) * l2))
                        v = (M.exp(x) - M.exp(lcab + nll - x)) * g
                        st(pgrad, Int64(t) * g0 + gn + Int64(c) * g2, T(v))

    @cute.jit
    def launch(pdl: cute.Pointer, plp: cute.Pointer, ptg: cute.Pointer, pil: cute.Pointer,
               ptl: cute.Pointer, palpha: cute.Pointer, pbeta: cute.Pointer, pnll: cute.Pointer,
               pgrad: cute.Pointer, Tmax: Int32, N: Int32, C: Int32, S: Int32, blank: Int32,
               l0: Int64, l1: Int64, l2: Int64, ts0: Int64, ts1: Int64, ils: Int64, tls: Int64,
               g0: Int64, g1: Int64, g2: Int64, dls: Int64, tot: Int64, scale: Float64,
               flags: Int32, stream):
        kernel(pdl, plp, ptg, pil, ptl, palpha, pbeta, pnll, pgrad, Tmax, N, C, S, blank, l0, l1,
               l2, ts0, ts1, ils, tls, g0, g1, g2, dls, tot, scale, flags).launch(
            grid=[N, 1, 1], block=[nt, 1, 1], smem=smem, stream=stream)

    from cutlass.cute.runtime import make_fake_stream

    I64 = cutlass.Int64
    args = [example_ptr(t) for t in (T, T, I64, I64, I64, CT, CT, CT, T)] + [
            Int32(1), Int32(1), Int32(1), Int32(1), Int32(0)] + [Int64(1)] * 12 + [
            Float64(1.0), Int32(0), make_fake_stream()]
    return launch, args
