"""General scaled-dot-product attention backward, second kernel (``sdpa_bwd_dkdv``): one CTA of
128 threads per (key j, kv head hk, batch entry b); it runs after ``sdpa_bwd_dq``, which left
delta_i = dO_i·O_i in the workspace.

    dv_j = Σ_{g < ratio} Σ_{i >= i_start} P_ij·dO_i          (h = hk·ratio + g)
    dk_j = scale·Σ_{g < ratio} Σ_{i >= i_start} dS_ij·q_i
    P_ij = exp(s_ij − lse_i),  dS_ij = P_ij·(dO_i·v_j − delta_i)·(1 − tanh²)   (as sdpa_bwd_dq)

``i_start`` is the first query row the causal rule lets see key j (0 without it).  Per block of
128 features (of dk and dv at once: max(D, Dv) wide), per query head of the group and chunk by
chunk of query rows, thread t computes P and dS of row i0 + t (score recomputed from q and k,
dO·v only where P ≠ 0) into shared memory, then thread t adds Σ_c P_c·dO[i0 + c, f0 + t] and
Σ_c dS_c·q[i0 + c, f0 + t] (rows ascending, heads ascending): a fixed order, deterministic, no
atomics.  With no query rows (Sq = 0, or a key no row may see) dk_j = dv_j = 0 are still
written.  Parameter ``heads`` is the number of kv heads here (query heads = heads·ratio).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float64, Int32, Int64

from ..specs.sdpa import SDPA_BWD_DKDV, THREADS, SdpaKnobs
from .sdpa_common import (NEG_INF, alloc_chunk, dot, example_args, query_start, score,
                          score_params, types)
from ....blocks.gmem import gload, gstore


def build(knobs: SdpaKnobs):
    T, CT = types(knobs.dtype)
    NT = THREADS
    SMEM = SDPA_BWD_DKDV.geometry(knobs).smem_bytes

    @cute.kernel
    def kernel(pq: cute.Pointer, pk: cute.Pointer, pv: cute.Pointer, pdo: cute.Pointer,
               plse: cute.Pointer, pdelta: cute.Pointer, pm: cute.Pointer, pdk: cute.Pointer,
               pdv: cute.Pointer, batch: Int32, heads: Int32, sq: Int32, sk: Int32,
               ratio: Int32, D: Int32, Dv: Int32,
               qb: Int64, qs: Int64, qh: Int64, qd: Int64, kb: Int64, ks: Int64, kh: Int64,
               kd: Int64, vb: Int64, vs: Int64, vh: Int64, vd: Int64, dob: Int64, dos: Int64,
               doh: Int64, dod: Int64, lb: Int64, lh: Int64, li: Int64, mb: Int64, mh: Int64,
               mi: Int64, mj: Int64, dkb: Int64, dks: Int64, dkh: Int64, dkd: Int64,
               dvb: Int64, dvs: Int64, dvh: Int64, dvd: Int64,
               scale: Float64, softcap: Float64, flags: Int32):
        tx, _, _ = cute.arch.thread_idx()
        bx, by, bz = cute.arch.block_idx()
        _, ny, nz = cute.arch.grid_dim()
        tid = Int32(tx)
        j = Int32(bx)
        sp = alloc_chunk(CT, NT)
        sds = alloc_chunk(CT, NT)
        sc, cap, icap = score_params(scale, softcap, flags, CT)
        istart = query_start(j, sq, sk, flags)
        dmax = cutlass.max(D, Dv)
        for b in cutlass.range(Int32(bz), batch, Int32(nz)):
            for hk in cutlass.range(Int32(by), heads, Int32(ny)):
                krow = pk + (Int64(b) * kb + Int64(j) * ks + Int64(hk) * kh)
                vrow = pv + (Int64(b) * vb + Int64(j) * vs + Int64(hk) * vh)
                dkbase = Int64(b) * dkb + Int64(j) * dks + Int64(hk) * dkh
                dvbase = Int64(b) * dvb + Int64(j) * dvs + Int64(hk) * dvh
                for f0 in cutlass.range(0, dmax, NT):
                    d = f0 + tid
                    acck = CT(0.0)
                    accv = CT(0.0)
                    for g in cutlass.range(ratio):
                        h = hk * ratio + g
                        qbase = pq + (Int64(b) * qb + Int64(h) * qh)
                        dobase = pdo + (Int64(b) * dob + Int64(h) * doh)
                        lbase = Int64(b) * lb + Int64(h) * lh
                        dlbase = (Int64(b) * Int64(heads) * Int64(ratio) + Int64(h)) * Int64(sq)
                        mcol = Int64(b) * mb + Int64(h) * mh + Int64(j) * mj
                        for i0 in cutlass.range(istart, sq, NT):
                            i = i0 + tid
                            p = CT(0.0)
                            ds = CT(0.0)
                            if i < sq:
                                lse = CT(gload(plse, lbase + Int64(i) * li))
                                if lse != CT(NEG_INF):
                                    s, dcap = score(qbase + Int64(i) * qs, qd, krow, kd, D, pm,
                                                    mcol + Int64(i) * mi, sc, cap, icap, flags)
                                    p = cute.math.exp(s - lse)
                                    if p != CT(0.0):
                                        dp = dot(dobase + Int64(i) * dos, dod, vrow, vd, Dv,
                                                 CT(0.0))
                                        delta = CT(gload(pdelta, dlbase + Int64(i)))
                                        ds = p * (dp - delta) * dcap
                            sp[tid] = p
                            sds[tid] = ds
                            cute.arch.barrier()
                            n = cutlass.min(sq - i0, NT)
                            if d < Dv:
                                docol = dobase + (Int64(i0) * dos + Int64(d) * dod)
                                for c in cutlass.range(n):
                                    accv = accv + sp[c] * CT(gload(docol, Int64(c) * dos))
                            if d < D:
                                qcol = qbase + (Int64(i0) * qs + Int64(d) * qd)
                                for c in cutlass.range(n):
                                    acck = acck + sds[c] * CT(gload(qcol, Int64(c) * qs))
                            cute.arch.barrier()
                    if d < D:
                        gstore(pdk, dkbase + Int64(d) * dkd, T(acck * sc))
                    if d < Dv:
                        gstore(pdv, dvbase + Int64(d) * dvd, T(accv))

    @cute.jit
    def launch(pq: cute.Pointer, pk: cute.Pointer, pv: cute.Pointer, pdo: cute.Pointer,
               plse: cute.Pointer, pdelta: cute.Pointer, pm: cute.Pointer, pdk: cute.Pointer,
               pdv: cute.Pointer, batch: Int32, heads: Int32, sq: Int32, sk: Int32,
               ratio: Int32, D: Int32, Dv: Int32,
               qb: Int64, qs: Int64, qh: Int64, qd: Int64, kb: Int64, ks: Int64, kh: Int64,
               kd: Int64, vb: Int64, vs: Int64, vh: Int64, vd: Int64, dob: Int64, dos: Int64,
               doh: Int64, dod: Int64, lb: Int64, lh: Int64, li: Int64, mb: Int64, mh: Int64,
               mi: Int64, mj: Int64, dkb: Int64, dks: Int64, dkh: Int64, dkd: Int64,
               dvb: Int64, dvs: Int64, dvh: Int64, dvd: Int64,
               scale: Float64, softcap: Float64, flags: Int32, gy: Int32, gz: Int32, stream):
        kernel(pq, pk, pv, pdo, plse, pdelta, pm, pdk, pdv, batch, heads, sq, sk, ratio, D, Dv,
               qb, qs, qh, qd, kb, ks, kh, kd, vb, vs, vh, vd, dob, dos, doh, dod,
               lb, lh, li, mb, mh, mi, mj, dkb, dks, dkh, dkd, dvb, dvs, dvh, dvd,
               scale, softcap, flags).launch(grid=[sk, gy, gz], block=[NT, 1, 1], smem=SMEM,
                                             stream=stream)

    # pointers: q k v dout (elements), lse delta (compute type), mask dk dv (elements)
    return launch, example_args(T, CT, "eeeecceee", 31)
