"""General scaled-dot-product attention backward, first kernel (``sdpa_bwd_dq``): one CTA of
128 threads per (query row i, query head h, batch entry b), kv head h // ratio.

    delta_i = Σ_e dO_i[e]·O_i[e]                        (stored: workspace[(b·Hq + h)·Sq + i])
    P_ij    = exp(s_ij − lse_i)                          (0 where masked, or when lse_i = −∞)
    dS_ij   = P_ij·(dO_i·v_j − delta_i)·(1 − tanh²)      (the tanh factor only under SOFTCAP)
    dq_i    = scale·Σ_j dS_ij·k_j                        over the keys j < j_end (causal bound)

delta is a CTA reduction (``blocks.reduction_base.row_allreduce_sum``) written by thread 0 for
``sdpa_bwd_dkdv``, which runs after this kernel on the same stream.  Then, per block of 128
features of dq and chunk by chunk, thread t computes dS of key j0 + t (the score recomputed
from q and k, dO·v only where P ≠ 0) into shared memory and thread t adds
Σ_c dS_c·k[j0 + c, f0 + t] over the chunk (keys ascending): fixed order, deterministic, no
atomics.  A row with lse = −∞ (it saw no key) gets dq = 0.  Compute type f32 (f64 for f64),
accurate exp / tanh.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float64, Int32, Int64

from ..specs.sdpa import SDPA_BWD_DQ, THREADS, SdpaKnobs
from .sdpa_common import (NEG_INF, alloc_chunk, dot, example_args, key_end, score,
                          score_params, types)
from ....blocks.gmem import gload, gstore
from ....blocks.reduction_base import alloc_reduction_buffer, row_allreduce_sum


def build(knobs: SdpaKnobs):
    T, CT = types(knobs.dtype)
    NT = THREADS
    SMEM = SDPA_BWD_DQ.geometry(knobs).smem_bytes

    @cute.kernel
    def kernel(pq: cute.Pointer, pk: cute.Pointer, pv: cute.Pointer, po: cute.Pointer,
               pdo: cute.Pointer, plse: cute.Pointer, pm: cute.Pointer, pdq: cute.Pointer,
               pdelta: cute.Pointer, batch: Int32, heads: Int32, sq: Int32, sk: Int32,
               ratio: Int32, D: Int32, Dv: Int32,
               qb: Int64, qs: Int64, qh: Int64, qd: Int64, kb: Int64, ks: Int64, kh: Int64,
               kd: Int64, vb: Int64, vs: Int64, vh: Int64, vd: Int64, ob: Int64, os: Int64,
               oh: Int64, od: Int64, dob: Int64, dos: Int64, doh: Int64, dod: Int64,
               lb: Int64, lh: Int64, li: Int64, mb: Int64, mh: Int64, mi: Int64, mj: Int64,
               dqb: Int64, dqs: Int64, dqh: Int64, dqd: Int64,
               scale: Float64, softcap: Float64, flags: Int32):
        tx, _, _ = cute.arch.thread_idx()
        bx, by, bz = cute.arch.block_idx()
        _, ny, nz = cute.arch.grid_dim()
        tid = Int32(tx)
        i = Int32(bx)
        red = alloc_reduction_buffer(CT, NT, 1, 2)
        sds = alloc_chunk(CT, NT)
        sc, cap, icap = score_params(scale, softcap, flags, CT)
        jend = key_end(i, sq, sk, flags)
        for b in cutlass.range(Int32(bz), batch, Int32(nz)):
            for h in cutlass.range(Int32(by), heads, Int32(ny)):
                hk = h // ratio
                qrow = pq + (Int64(b) * qb + Int64(i) * qs + Int64(h) * qh)
                orow = po + (Int64(b) * ob + Int64(i) * os + Int64(h) * oh)
                dorow = pdo + (Int64(b) * dob + Int64(i) * dos + Int64(h) * doh)
                kbase = pk + (Int64(b) * kb + Int64(hk) * kh)
                vbase = pv + (Int64(b) * vb + Int64(hk) * vh)
                mrow = Int64(b) * mb + Int64(h) * mh + Int64(i) * mi
                # ---- delta_i = dO_i · O_i (a CTA sum), kept for sdpa_bwd_dkdv
                part = CT(0.0)
                for e in cutlass.range(tid, Dv, NT):
                    part = part + CT(gload(dorow, Int64(e) * dod)) * CT(gload(orow, Int64(e) * od))
                delta = row_allreduce_sum(part, red, NT, 0, Int32(0), tid)
                if tid == 0:
                    gstore(pdelta, (Int64(b) * Int64(heads) + Int64(h)) * Int64(sq) + Int64(i),
                           delta)
                lse = CT(gload(plse, Int64(b) * lb + Int64(h) * lh + Int64(i) * li))
                live = lse != CT(NEG_INF)
                # ---- dq_i = scale · Σ_j dS_ij k_j, 128 features at a time
                dqbase = Int64(b) * dqb + Int64(i) * dqs + Int64(h) * dqh
                for f0 in cutlass.range(0, D, NT):
                    d = f0 + tid
                    acc = CT(0.0)
                    for j0 in cutlass.range(0, jend, NT):
                        j = j0 + tid
                        ds = CT(0.0)
                        if j < jend:
                            if live:
                                s, dcap = score(qrow, qd, kbase + Int64(j) * ks, kd, D, pm,
                                                mrow + Int64(j) * mj, sc, cap, icap, flags)
                                p = cute.math.exp(s - lse)
                                if p != CT(0.0):
                                    dp = dot(dorow, dod, vbase + Int64(j) * vs, vd, Dv, CT(0.0))
                                    ds = p * (dp - delta) * dcap
                        sds[tid] = ds
                        cute.arch.barrier()
                        if d < D:
                            n = cutlass.min(jend - j0, NT)
                            kcol = kbase + (Int64(j0) * ks + Int64(d) * kd)
                            for c in cutlass.range(n):
                                acc = acc + sds[c] * CT(gload(kcol, Int64(c) * ks))
                        cute.arch.barrier()
                    if d < D:
                        gstore(pdq, dqbase + Int64(d) * dqd, T(acc * sc))
                # the reduction slot and the chunk buffer are reused by the next (b, h)
                cute.arch.barrier()

    @cute.jit
    def launch(pq: cute.Pointer, pk: cute.Pointer, pv: cute.Pointer, po: cute.Pointer,
               pdo: cute.Pointer, plse: cute.Pointer, pm: cute.Pointer, pdq: cute.Pointer,
               pdelta: cute.Pointer, batch: Int32, heads: Int32, sq: Int32, sk: Int32,
               ratio: Int32, D: Int32, Dv: Int32,
               qb: Int64, qs: Int64, qh: Int64, qd: Int64, kb: Int64, ks: Int64, kh: Int64,
               kd: Int64, vb: Int64, vs: Int64, vh: Int64, vd: Int64, ob: Int64, os: Int64,
               oh: Int64, od: Int64, dob: Int64, dos: Int64, doh: Int64, dod: Int64,
               lb: Int64, lh: Int64, li: Int64, mb: Int64, mh: Int64, mi: Int64, mj: Int64,
               dqb: Int64, dqs: Int64, dqh: Int64, dqd: Int64,
               scale: Float64, softcap: Float64, flags: Int32, gy: Int32, gz: Int32, stream):
        kernel(pq, pk, pv, po, pdo, plse, pm, pdq, pdelta, batch, heads, sq, sk, ratio, D, Dv,
               qb, qs, qh, qd, kb, ks, kh, kd, vb, vs, vh, vd, ob, os, oh, od,
               dob, dos, doh, dod, lb, lh, li, mb, mh, mi, mj, dqb, dqs, dqh, dqd,
               scale, softcap, flags).launch(grid=[sq, gy, gz], block=[NT, 1, 1], smem=SMEM,
                                             stream=stream)

    # pointers: q k v out dout (elements), lse (compute type), mask dq (elements), delta
    return launch, example_args(T, CT, "eeeeeceec", 31)
