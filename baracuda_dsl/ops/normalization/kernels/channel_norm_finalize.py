"""Channel-norm finalize (BatchNorm / GroupNorm / InstanceNorm, FW and BW): one thread per entry.

Entries are the (n, c) rows for GroupNorm (E = N·C) and the channels for BatchNorm (E = C); entry
e has channel ``ch = e mod C`` and statistics group ``us = (e // C)·G + ch // cpg``.

fw: merge the K partials (count, mean, M2) of group ``us`` in order k = 0..K-1 (Chan), or with
    TRAINING off take mean / var from the running stats; rstd = 1/sqrt(var + eps).  The first
    entry of each group writes saved mean / rstd (compute type) and, with UPDATE_RUNNING,
    ``running = (1 − momentum)·running + momentum·batch`` (unbiased variance, as PyTorch).  Every
    entry writes ``emu = mean``, ``ea = rstd·w[ch]``, ``ec = b[ch]`` for the apply
    pass.
bw: per entry (ENTRIES): alpha = w[ch]·rstd; with TRAINING
    gamma = rstd·Σ_{c'∈group} w[c']·A[c'] / count, beta = rstd³·Σ_{c'∈group} w[c']·B[c'] / count
    (A = Σdy, B = Σdy·(x − mean) of each row of the group, summed over its K partials in order),
    else beta = gamma = 0 (BatchNorm inference).  Threads t < C also write
    dbias[t] = Σ_n A[n·C + t] and dweight[t] = Σ_n rstd·B[n·C + t] (n = 0..Nn-1 in order).

All sums in f32 (f64 for f64 inputs) in a fixed order: bit-identical reruns, no atomics.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float64, Int32, Int64, const_expr

from ..specs.channel_norm import (ENTRIES, FINALIZE_THREADS, HAS_B, HAS_W, TRAINING, UPDATE_RUNNING,
                                  WANT_DB, WANT_DW, ChannelFinalizeKnobs)
from .channel_norm import chan_merge
from ....blocks.reduction_base import compute_type, element_type
from ....blocks.gmem import gmem_ptr


def build(knobs: ChannelFinalizeKnobs):
    dt, pdt, mode = knobs.dtype, knobs.pdtype, knobs.mode
    CT = compute_type(dt)
    PT = element_type(pdt)
    bw = mode == "bw"
    THREADS = FINALIZE_THREADS
    BIG = 1 << 30

    @cute.kernel
    def kernel(ppart: cute.Pointer, pw: cute.Pointer, pb: cute.Pointer, prm: cute.Pointer,
               prv: cute.Pointer, psmean: cute.Pointer, psrstd: cute.Pointer, pemu: cute.Pointer,
               pea: cute.Pointer, peb: cute.Pointer, pec: cute.Pointer, pdw: cute.Pointer,
               pdb: cute.Pointer, E: Int32, C: Int32, G: Int32, cpg: Int32, K: Int32, Nn: Int32,
               count: Float64, eps: Float64, momentum: Float64, flags: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        t = bidx * THREADS + tidx
        lin = cute.make_layout(BIG)
        w = cute.make_tensor(pw, lin)
        smean = cute.make_tensor(psmean, lin)
        srstd = cute.make_tensor(psrstd, lin)
        has_w = (flags & HAS_W) != 0
        training = (flags & TRAINING) != 0
        cnt = CT(count)
        if t < E and ((flags & ENTRIES) != 0 or const_expr(not bw)):
            ch = t % C
            us = (t // C) * G + ch // cpg
            emu = cute.make_tensor(pemu + Int64(t), cute.make_layout(1))
            ea = cute.make_tensor(pea + Int64(t), cute.make_layout(1))
            ec = cute.make_tensor(pec + Int64(t), cute.make_layout(1))
            if const_expr(not bw):
                b = cute.make_tensor(pb, lin)
                rm = cute.make_tensor(prm, lin)
                rv = cute.make_tensor(prv, lin)
                n = CT(0.0)
                mean = CT(0.0)
                m2 = CT(0.0)
                var = CT(0.0)
                if training:
                    for k in cutlass.range(K):
                        p = (Int64(us) * Int64(K) + Int64(k)) * 3
                        pp = cute.make_tensor(ppart + p, cute.make_layout(3))
                        n, mean, m2 = chan_merge(n, mean, m2, pp[0], pp[1], pp[2], CT)
                    var = m2 / cutlass.max(n, CT(1.0))
                else:
                    mean = CT(rm[ch])
                    var = CT(rv[ch])
                rstd = CT(1.0) / cute.math.sqrt(var + CT(eps))
                if ch % cpg == 0:
                    smean[us] = mean
                    srstd[us] = rstd
                    if (flags & UPDATE_RUNNING) != 0:
                        mom = CT(momentum)
                        unb = m2 / cutlass.max(n - CT(1.0), CT(1.0))
                        rm[ch] = PT((CT(1.0) - mom) * CT(rm[ch]) + mom * mean)
                        rv[ch] = PT((CT(1.0) - mom) * CT(rv[ch]) + mom * unb)
                a = rstd
                if has_w:
                    a = rstd * CT(w[ch])
                c = CT(0.0)
                if (flags & HAS_B) != 0:
                    c = CT(b[ch])
                emu[0] = mean
                ea[0] = a
                ec[0] = c
            else:
                eb = cute.make_tensor(peb + Int64(t), cute.make_layout(1))
                rstd = srstd[us]
                wc = CT(1.0)
                if has_w:
                    wc = CT(w[ch])
                alpha = wc * rstd
                beta = CT(0.0)
                gam = CT(0.0)
                if training:
                    g0 = (ch // cpg) * cpg
                    rowbase = Int64(t // C) * Int64(C) + Int64(g0)
                    s1 = CT(0.0)
                    s2 = CT(0.0)
                    for j in cutlass.range(cpg):
                        wj = CT(1.0)
                        if has_w:
                            wj = CT(w[g0 + j])
                        sa = CT(0.0)
                        sb = CT(0.0)
                        for k in cutlass.range(K):
                            p = ((rowbase + Int64(j)) * Int64(K) + Int64(k)) * 2
                            pp = cute.make_tensor(ppart + p, cute.make_layout(2))
                            sa = sa + pp[0]
                            sb = sb + pp[1]
                        s1 = s1 + wj * sa
                        s2 = s2 + wj * sb
                    gam = rstd * s1 / cnt
                    beta = rstd * rstd * rstd * s2 / cnt
                emu[0] = smean[us]
                ea[0] = alpha
                eb[0] = beta
                ec[0] = gam
        if const_expr(bw):
            if t < C and (flags & (WANT_DW | WANT_DB)) != 0:
                ta = CT(0.0)
                tb = CT(0.0)
                for n in cutlass.range(Nn):
                    row = Int64(n) * Int64(C) + Int64(t)
                    us2 = n * G + t // cpg
                    sa = CT(0.0)
                    sb = CT(0.0)
                    for k in cutlass.range(K):
                        p = (row * Int64(K) + Int64(k)) * 2
                        pp = cute.make_tensor(ppart + p, cute.make_layout(2))
                        sa = sa + pp[0]
                        sb = sb + pp[1]
                    ta = ta + sa
                    tb = tb + srstd[us2] * sb
                if (flags & WANT_DW) != 0:
                    dw = cute.make_tensor(pdw + Int64(t), cute.make_layout(1))
                    dw[0] = PT(tb)
                if (flags & WANT_DB) != 0:
                    db = cute.make_tensor(pdb + Int64(t), cute.make_layout(1))
                    db[0] = PT(ta)

    @cute.jit
    def launch(ppart: cute.Pointer, pw: cute.Pointer, pb: cute.Pointer, prm: cute.Pointer,
               prv: cute.Pointer, psmean: cute.Pointer, psrstd: cute.Pointer, pemu: cute.Pointer,
               pea: cute.Pointer, peb: cute.Pointer, pec: cute.Pointer, pdw: cute.Pointer,
               pdb: cute.Pointer, E: Int32, C: Int32, G: Int32, cpg: Int32, K: Int32, Nn: Int32,
               count: Float64, eps: Float64, momentum: Float64, flags: Int32, blocks: Int32,
               stream):
        kernel(ppart, pw, pb, prm, prv, psmean, psrstd, pemu, pea, peb, pec, pdw, pdb, E, C, G,
               cpg, K, Nn, count, eps, momentum, flags).launch(
                   grid=[blocks, 1, 1], block=[THREADS, 1, 1], smem=0, stream=stream)

    def ct():
        return gmem_ptr(CT, CT.width // 8)

    def pt():
        return gmem_ptr(PT, PT.width // 8)

    args = [ct(), pt(), pt(), pt(), pt(), ct(), ct(), ct(), ct(), ct(), ct(), pt(), pt(),
            Int32(1), Int32(1), Int32(1), Int32(1), Int32(1), Int32(1), Float64(1.0),
            Float64(1e-5), Float64(0.1), Int32(0), Int32(1), cute.runtime.make_fake_stream()]
    return launch, args
