"""General scaled-dot-product attention forward (``sdpa_fwd``): one CTA of 128 threads per
(query row i, query head h, batch entry b), kv head h // ratio.

    s_ij  = score(q_i, k_j)            (sdpa_common.score: scale, softcap, bool / additive mask)
    m_i   = max_j s_ij,  l_i = Σ_j exp(s_ij − m_i)      over the keys j < j_end (causal bound)
    o_i   = Σ_j (exp(s_ij − m_i) / l_i)·v_j,  lse_i = m_i + log l_i

Pass 1: thread t takes keys t, t + 128, ...; each keeps a running (max, Σexp) pair; the CTA's
pairs merge with one barrier (``blocks.softmax_base.row_allreduce_online``: fixed butterfly
order).  Pass 2, per block of 128 output features: chunk by chunk, thread t recomputes the
score of key j0 + t (bit-identical to pass 1: same code, same order) into shared memory as
p = exp(s − m)/l, then thread t adds Σ_c p_c·v[j0 + c, f0 + t] over the chunk (keys ascending).
So the scores are computed 1 + ⌈Dv/128⌉ times and nothing but the output and the lse is written
(no workspace).  A row that sees no key (Sk = 0, causal, every mask entry False / −∞) gets
o = 0 and lse = −∞.  exp / log / tanh are the accurate (libdevice) functions of the compute
type (f32; f64 for f64).  Every output element is written by one thread: deterministic.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float64, Int32, Int64

from ..specs.sdpa import SDPA_FWD, THREADS, WRITE_LSE, SdpaKnobs
from .sdpa_common import (NEG_INF, alloc_chunk, example_args, key_end, score,
                          score_params, types)
from ....blocks.gmem import gload, gstore
from ....blocks.reduction_base import alloc_reduction_buffer
from ....blocks.softmax_base import row_allreduce_online, safe_max


def build(knobs: SdpaKnobs):
    T, CT = types(knobs.dtype)
    NT = THREADS
    SMEM = SDPA_FWD.geometry(knobs).smem_bytes

    @cute.kernel
    def kernel(pq: cute.Pointer, pk: cute.Pointer, pv: cute.Pointer, pm: cute.Pointer,
               po: cute.Pointer, plse: cute.Pointer, batch: Int32, heads: Int32, sq: Int32,
               sk: Int32, ratio: Int32, D: Int32, Dv: Int32,
               qb: Int64, qs: Int64, qh: Int64, qd: Int64, kb: Int64, ks: Int64, kh: Int64,
               kd: Int64, vb: Int64, vs: Int64, vh: Int64, vd: Int64, mb: Int64, mh: Int64,
               mi: Int64, mj: Int64, ob: Int64, os: Int64, oh: Int64, od: Int64, lb: Int64,
               lh: Int64, li: Int64, scale: Float64, softcap: Float64, flags: Int32):
        tx, _, _ = cute.arch.thread_idx()
        bx, by, bz = cute.arch.block_idx()
        _, ny, nz = cute.arch.grid_dim()
        tid = Int32(tx)
        i = Int32(bx)
        red = alloc_reduction_buffer(CT, NT, 1, 2)
        sp = alloc_chunk(CT, NT)
        sc, cap, icap = score_params(scale, softcap, flags, CT)
        jend = key_end(i, sq, sk, flags)
        for b in cutlass.range(Int32(bz), batch, Int32(nz)):
            for h in cutlass.range(Int32(by), heads, Int32(ny)):
                hk = h // ratio
                qrow = pq + (Int64(b) * qb + Int64(i) * qs + Int64(h) * qh)
                kbase = pk + (Int64(b) * kb + Int64(hk) * kh)
                vbase = pv + (Int64(b) * vb + Int64(hk) * vh)
                mrow = Int64(b) * mb + Int64(h) * mh + Int64(i) * mi
                # ---- pass 1: the row's (max, Σ exp) over its keys
                m = CT(NEG_INF)
                l = CT(0.0)
                for j in cutlass.range(tid, jend, NT):
                    s, _dc = score(qrow, qd, kbase + Int64(j) * ks, kd, D, pm,
                                   mrow + Int64(j) * mj, sc, cap, icap, flags)
                    mn = cutlass.max(m, s)
                    ms = safe_max(mn)
                    l = l * cute.math.exp(m - ms) + cute.math.exp(s - ms)
                    m = mn
                m, l = row_allreduce_online(m, l, red, NT, 0, 1, Int32(0), tid)
                ms = safe_max(m)
                inv = CT(0.0)
                if l > CT(0.0):
                    inv = CT(1.0) / l
                # ---- pass 2: o = Σ_j p_j v_j, 128 features at a time
                obase = Int64(b) * ob + Int64(i) * os + Int64(h) * oh
                for f0 in cutlass.range(0, Dv, NT):
                    d = f0 + tid
                    acc = CT(0.0)
                    for j0 in cutlass.range(0, jend, NT):
                        j = j0 + tid
                        p = CT(0.0)
                        if j < jend:
                            s, _dc = score(qrow, qd, kbase + Int64(j) * ks, kd, D, pm,
                                           mrow + Int64(j) * mj, sc, cap, icap, flags)
                            p = cute.math.exp(s - ms) * inv
                        sp[tid] = p
                        cute.arch.barrier()
                        if d < Dv:
                            n = cutlass.min(jend - j0, NT)
                            vcol = vbase + (Int64(j0) * vs + Int64(d) * vd)
                            for c in cutlass.range(n):
                                acc = acc + sp[c] * CT(gload(vcol, Int64(c) * vs))
                        cute.arch.barrier()
                    if d < Dv:
                        gstore(po, obase + Int64(d) * od, T(acc))
                if tid == 0:
                    if (flags & WRITE_LSE) != 0:
                        lse = CT(NEG_INF)
                        if l > CT(0.0):
                            lse = m + cute.math.log(l)
                        gstore(plse, Int64(b) * lb + Int64(h) * lh + Int64(i) * li, lse)
                # the reduction slots and the chunk buffer are reused by the next (b, h)
                cute.arch.barrier()

    @cute.jit
    def launch(pq: cute.Pointer, pk: cute.Pointer, pv: cute.Pointer, pm: cute.Pointer,
               po: cute.Pointer, plse: cute.Pointer, batch: Int32, heads: Int32, sq: Int32,
               sk: Int32, ratio: Int32, D: Int32, Dv: Int32,
               qb: Int64, qs: Int64, qh: Int64, qd: Int64, kb: Int64, ks: Int64, kh: Int64,
               kd: Int64, vb: Int64, vs: Int64, vh: Int64, vd: Int64, mb: Int64, mh: Int64,
               mi: Int64, mj: Int64, ob: Int64, os: Int64, oh: Int64, od: Int64, lb: Int64,
               lh: Int64, li: Int64, scale: Float64, softcap: Float64, flags: Int32,
               gy: Int32, gz: Int32, stream):
        kernel(pq, pk, pv, pm, po, plse, batch, heads, sq, sk, ratio, D, Dv, qb, qs, qh, qd,
               kb, ks, kh, kd, vb, vs, vh, vd, mb, mh, mi, mj, ob, os, oh, od, lb, lh, li,
               scale, softcap, flags).launch(grid=[sq, gy, gz], block=[NT, 1, 1], smem=SMEM,
                                             stream=stream)

    return launch, example_args(T, CT, "eeeeec", 23)

