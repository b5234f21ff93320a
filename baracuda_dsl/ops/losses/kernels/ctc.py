"""CTC loss forward: one CTA per batch element ``n``.

With ``Tn`` = input_lengths[n], ``L`` = target_lengths[n], labels l_k and the extended sequence
l'_s (blank for even s, l_{(s−1)/2} for odd s), in log space:

    α_0(0) = lp[0, blank],  α_0(1) = lp[0, l_0],  α_0(s) = −∞ otherwise
    α_t(s) = lp[t, l'_s] + lse(α_{t−1}(s), α_{t−1}(s−1), α_{t−1}(s−2) if l'_s ≠ blank, l'_s ≠ l'_{s−2})
    nll    = −lse(α_{Tn−1}(2L), α_{Tn−1}(2L−1))          (Tn = 0: 0 for L = 0, +∞ otherwise)

α rows are stored in the workspace ``alpha`` (row pitch 2S+1, rows (n, t)) — the backward reads
them; ``nll`` (compute type, per sample) too.  Outputs: per-sample loss in the loss dtype to
``out`` (WRITE_OUT), and/or in the compute type to ``part`` (WRITE_PART; divided by max(L, 1)
with MEAN); ZERO_INF maps +∞ to 0 in both.  Targets are padded (row n at ``n·ts0``) or
concatenated (CONCAT: sample n starts after the previous samples' target lengths).  Invalid
labels / lengths never touch memory out of bounds: the sample's loss is NaN and ``st[0] = 1``.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float64, Int32, Int64

from ..specs.ctc import (CONCAT, MEAN, SLOTS, THREADS, WRITE_OUT, WRITE_PART, ZERO_INF, CTCKnobs,
                         ctc_geometry)
from .loss_row import example_ptr, ld, st
from ....blocks.reduction_base import (alloc_reduction_buffer, compute_type, element_type,
                                       row_allreduce_sum)

M = cute.math
INF = float("inf")


@cute.jit
def lse3(a, b, c):
    """log(e^a + e^b + e^c), −∞ when all are −∞."""
    t = type(a)
    m = cutlass.select_(a > b, a, b)
    m = cutlass.select_(c > m, c, m)
    m = cutlass.select_(m == t(-INF), t(0.0), m)
    return m + M.log(M.exp(a - m) + M.exp(b - m) + M.exp(c - m))


@cute.jit
def sample_setup(tg, il, tl, buf64, n, N, Tmax, S, ts0, ts1, ils, tls, tot, flags, lane):
    """(Tn, L, base, badlen) of sample ``n``: lengths, the element offset of its first label and
    a flag for invalid lengths (then Tn = L = 0).  Concatenated targets: base = Σ_{i<n} L_i · ts1
    (fixed-order f64 all-reduce, exact below 2^53)."""
    Tn = Int64(ld(il, Int64(n) * ils))
    L = Int64(ld(tl, Int64(n) * tls))
    cum = Float64(0.0)
    if (flags & CONCAT) != Int32(0):
        for i in cutlass.range(lane, n, THREADS):
            cum = cum + Float64(Int64(ld(tl, Int64(i) * tls)))
    cum = row_allreduce_sum(cum, buf64, THREADS, 3, 0, lane)
    c64 = Int64(cum)
    base = Int64(n) * ts0
    bad = (Tn < Int64(0)) | (Tn > Int64(Tmax)) | (L < Int64(0)) | (L > Int64(S))
    if (flags & CONCAT) != Int32(0):
        base = c64 * ts1
        bad = bad | (c64 + L > tot)
    Tn = cutlass.select_(bad, Int64(0), Tn)
    L = cutlass.select_(bad, Int64(0), L)
    return Int32(Tn), Int32(L), base, bad


@cute.jit
def label(tg, base, ts1, k, C):
    """Label k of the sample, clamped into [0, C) (validity is checked separately)."""
    v = Int64(ld(tg, base + Int64(k) * ts1))
    v = cutlass.select_(v < Int64(0), Int64(0), v)
    v = cutlass.select_(v >= Int64(C), Int64(C - 1), v)
    return Int32(v)


@cute.jit
def ext_label(tg, base, ts1, s, C, blank):
    """l'_s: blank for even s, label (s−1)/2 for odd s."""
    r = blank
    if s % Int32(2) == Int32(1):
        r = label(tg, base, ts1, s // Int32(2), C)
    return r


def build(knobs: CTCKnobs):
    """The CTC forward kernel for ``knobs.dtype`` (see the module docstring)."""
    dt = knobs.dtype
    T = element_type(dt)
    CT = compute_type(dt)
    smem = ctc_geometry(knobs).smem_bytes
    nt = THREADS

    @cute.kernel
    def kernel(plp: cute.Pointer, ptg: cute.Pointer, pil: cute.Pointer, ptl: cute.Pointer,
               palpha: cute.Pointer, pnll: cute.Pointer, pout: cute.Pointer, ppart: cute.Pointer,
               pst: cute.Pointer, has_st: Int32, Tmax: Int32, N: Int32, C: Int32, S: Int32,
               blank: Int32, l0: Int64, l1: Int64, l2: Int64, ts0: Int64, ts1: Int64,
               ils: Int64, tls: Int64, os0: Int64, tot: Int64, flags: Int32):
        lane, _, _ = cute.arch.thread_idx()
        n, _, _ = cute.arch.block_idx()
        buf64 = alloc_reduction_buffer(Float64, nt, 1, SLOTS)
        buf = alloc_reduction_buffer(CT, nt, 1, SLOTS)
        ninf = CT(-INF)
        Tn, L, base, badlen = sample_setup(ptg, pil, ptl, buf64, n, N, Tmax, S, ts0, ts1, ils,
                                           tls, tot, flags, lane)
        # label validity (fixed-order count of bad labels)
        nb = CT(0.0)
        for k in cutlass.range(lane, L, nt):
            v = Int64(ld(ptg, base + Int64(k) * ts1))
            if (v < Int64(0)) | (v >= Int64(C)):
                nb = nb + CT(1.0)
        nbad = row_allreduce_sum(nb, buf, nt, 0, 0, lane)
        bad = badlen | (nbad > CT(0.0))
        Sp = Int64(2) * Int64(S) + Int64(1)
        Sn = Int32(2) * L + Int32(1)
        arow = Int64(n) * Int64(Tmax) * Sp
        lpn = Int64(n) * l1
        if Tn > Int32(0):
            for s in cutlass.range(lane, Sn, nt):
                a0 = ninf
                if s < Int32(2):
                    a0 = CT(ld(plp, lpn + Int64(ext_label(ptg, base, ts1, s, C, blank)) * l2))
                st(palpha, arow + Int64(s), a0)
            for t in cutlass.range(1, Tn):
                cute.arch.barrier()
                prev = arow + Int64(t - 1) * Sp
                cur = arow + Int64(t) * Sp
                for s in cutlass.range(lane, Sn, nt):
                    ls = ext_label(ptg, base, ts1, s, C, blank)
                    a = CT(ld(palpha, prev + Int64(s)))
                    b = ninf
                    c = ninf
                    if s >= Int32(1):
                        b = CT(ld(palpha, prev + Int64(s - 1)))
                    if s >= Int32(2):
                        if ls != blank:
                            if ls != ext_label(ptg, base, ts1, s - Int32(2), C, blank):
                                c = CT(ld(palpha, prev + Int64(s - 2)))
                    v = CT(ld(plp, Int64(t) * l0 + lpn + Int64(ls) * l2)) + lse3(a, b, c)
                    st(palpha, cur + Int64(s), v)
        cute.arch.barrier()
        if lane == Int32(0):
            nll = cutlass.select_(L == Int32(0), CT(0.0), CT(INF))
            if Tn > Int32(0):
                last = arow + Int64(Tn - 1) * Sp
                x = CT(ld(palpha, last + Int64(Sn - 1)))
                y = ninf
                if L > Int32(0):
                    y = CT(ld(palpha, last + Int64(Sn - 2)))
                nll = -lse3(x, y, ninf)
            nll = cutlass.select_(bad, CT(float("nan")), nll)
            st(pnll, Int64(n), nll)
            loss = nll
            if (flags & ZERO_INF) != Int32(0):
                loss = cutlass.select_(loss == CT(INF), CT(0.0), loss)
            if (flags & WRITE_OUT) != Int32(0):
                st(pout, Int64(n) * os0, T(loss))
            if (flags & WRITE_PART) != Int32(0):
                pl = loss
                if (flags & MEAN) != Int32(0):
                    pl = loss / CT(Int32(cutlass.select_(L > Int32(1), L, Int32(1))))
                st(ppart, Int64(n), pl)
            if bad:
                if has_st != Int32(0):
                    st(pst, Int64(0), Int32(1))

    @cute.jit
    def launch(plp: cute.Pointer, ptg: cute.Pointer, pil: cute.Pointer, ptl: cute.Pointer,
               palpha: cute.Pointer, pnll: cute.Pointer, pout: cute.Pointer, ppart: cute.Pointer,
               pst: cute.Pointer, has_st: Int32, Tmax: Int32, N: Int32, C: Int32, S: Int32,
               blank: Int32, l0: Int64, l1: Int64, l2: Int64, ts0: Int64, ts1: Int64,
               ils: Int64, tls: Int64, os0: Int64, tot: Int64, flags: Int32, stream):
        kernel(plp, ptg, pil, ptl, palpha, pnll, pout, ppart, pst, has_st, Tmax, N, C, S, blank,
               l0, l1, l2, ts0, ts1, ils, tls, os0, tot, flags).launch(
            grid=[N, 1, 1], block=[nt, 1, 1], smem=smem, stream=stream)

    from cutlass.cute.runtime import make_fake_stream

    I64 = cutlass.Int64
    args = [example_ptr(t) for t in (T, I64, I64, I64, CT, CT, T, CT, Int32)] + [
            Int32(0), Int32(1), Int32(1), Int32(1), Int32(1), Int32(0)] + [
            Int64(1)] * 9 + [Int32(0), make_fake_stream()]
    return launch, args


