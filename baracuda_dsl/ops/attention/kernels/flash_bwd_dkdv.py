"""Flash attention backward, dK and dV (``mma.sync``, sm80 / sm89 / sm90a):

    dV_j = Σ_h Σ_i P_ij·dO_i,   dK_j = scale·Σ_h Σ_i dS_ij·Q_i   (h over the query heads of the
    GQA group of kv head hk: hk·ratio … hk·ratio + ratio − 1)
    P_ij = exp2(t_ij − lse_i·log2 e),  dS_ij = P_ij·(dP_ij − delta_i) (softcap: ·(1 − tanh²)),
    dP = dO·Vᵀ

One CTA (8 warps) per (key tile of bN rows, kv head hk, batch entry b).  The K and V tiles load
once; then for each query head of the group and each query tile that can see the key tile (the
forward's key range inverted), the Q and dO tiles (``cp.async``; with two stages
(``DKDV_STAGES``) those of the next query tile load while this one computes, else after it) and
the row statistics (lse, delta) load, S = Q·Kᵀ and dP = dO·Vᵀ run (``ldmatrix`` +
``mma.sync`` m16n8k16, f32), P and dS are recomputed in registers (masks only in the blocks that
cross a boundary) and written to shared memory in the input dtype, and dV += Pᵀ·dO,
dK += dSᵀ·Q accumulate in f32 registers (all four operands read transposed with
``ldmatrix.trans``).  Rows past the sequences are zero in shared
memory and have P = 0 (as do rows with lse = −∞); a key tile no query row sees gets dK = dV = 0.
dK·scale and dV are staged through the K / V buffers and stored with 16-byte vectors (rows past
the key sequence not written).  Deterministic: no atomics, fixed summation order.

Parameters: see ``specs/flash_bwd.py`` (element strides; batch strides are ignored for
variable-length batches).  Caller contract (``FlashAttentionBackwardPlan``): 16-byte aligned
pointers, every q / k / v / do / dk / dv stride a multiple of 8 elements, unit stride along the
head dim, lse / delta f32, ratio = Hq / Hk.
"""

# no ``from __future__ import annotations``: ``cute.struct`` reads its annotations as types

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64

from ..specs.flash import VARLEN, FlashKnobs
from ..specs.flash_bwd import DKDV_STAGES, DKDV_THREADS, DKDV_TILES, dkdv_smem
from .flash_common import (TYPES, Dropout, atom_width, copy_rows, diag_offset, g2s_copy, load_row_stats,
                           load_tile, make_consts, mn_view, need_mask, probs_and_grads,
                           query_tile_range, score_consts, seq_bounds, smem_gemm, smem_tile,
                           staged_tile)


def warp_grid(m: int, n: int, warps: int):
    """(warps along M, warps along N, N of the MMA tile) for an (m, n) accumulator: 16 rows a
    warp along M, the rest along N, 16 columns a warp per MMA tile (8 when n is too narrow)."""
    wm = min(m // 16, warps)
    wn = warps // wm
    assert wm * wn == warps and m % (16 * wm) == 0, (m, n, warps)
    pn = 16 * wn if n % (16 * wn) == 0 else 8 * wn
    assert n % pn == 0, (m, n, warps)
    return wm, wn, pn


def build(knobs: FlashKnobs):
    T = TYPES[knobs.dtype]
    D = knobs.head_dim
    bM, bN = DKDV_TILES[D]
    NT = DKDV_THREADS
    NW = NT // 32
    KB = atom_width(D)
    # S, dP: (bM, bN); dK, dV: (bN, D)
    wm_s, wn_s, pn_s = warp_grid(bM, bN, NW)
    wm_k, wn_k, pn_k = warp_grid(bN, D, NW)
    assert pn_k == 16 * wn_k and bM % 16 == 0
    ST = DKDV_STAGES[D]
    nmat_s = 4 if pn_s == 16 * wn_s else 2          # ldmatrix matrices of an S / dP B operand

    @cute.struct
    class Storage:
        sK: cute.struct.Align[cute.struct.MemRange[T, bN * D], 1024]
        sV: cute.struct.Align[cute.struct.MemRange[T, bN * D], 1024]
        sQ: cute.struct.Align[cute.struct.MemRange[T, ST * bM * D], 1024]
        sdO: cute.struct.Align[cute.struct.MemRange[T, ST * bM * D], 1024]
        sP: cute.struct.Align[cute.struct.MemRange[T, bM * bN], 1024]
        sdS: cute.struct.Align[cute.struct.MemRange[T, bM * bN], 1024]

    @cute.kernel
    def kernel(pq: cute.Pointer, pk: cute.Pointer, pv: cute.Pointer, pdo: cute.Pointer,
               plse: cute.Pointer, pdelta: cute.Pointer, pdk: cute.Pointer, pdv: cute.Pointer,
               pcuq: cute.Pointer, pcuk: cute.Pointer, pslope: cute.Pointer, sq: Int32,
               sk: Int32, ratio: Int32, qb: Int64, qs: Int64, qh: Int64, kb: Int64, ks: Int64,
               kh: Int64, vb: Int64, vs: Int64, vh: Int64, gb: Int64, gs: Int64, gh: Int64,
               dkb: Int64, dks: Int64, dkh: Int64, dvb: Int64, dvs: Int64, dvh: Int64,
               lb: Int64, lh: Int64, slb: Int64, slh: Int64, scale: Float32, softcap: Float32,
               left: Int32, right: Int32, flags: Int32, dseed: Int64, doff: Int64, dthr: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        nb, hk, b = cute.arch.block_idx()
        q0, nq = seq_bounds(pcuq, b, flags, sq)
        k0, nk = seq_bounds(pcuk, b, flags, sk)
        c0 = Int32(nb) * bN
        if c0 < nk:
            bb = Int64(b)
            if (flags & VARLEN) != 0:
                bb = Int64(0)
            off = diag_offset(nq, nk, flags)
            # ---- the query tiles that can see this key tile, over the heads of the group
            c_hi = cutlass.min(c0 + bN, nk) - 1
            m_start, m_end = query_tile_range(c0, c_hi, nq, off, left, right, bM)
            n_m = cutlass.max(m_end - m_start, 0)
            n_iters = ratio * n_m
            h0 = Int32(hk) * ratio

            # ---- operand views (element strides are multiples of 8: 16-byte vectors)
            qs8 = cute.assume(qs, divby=8)
            ks8 = cute.assume(ks, divby=8)
            vs8 = cute.assume(vs, divby=8)
            gs8 = cute.assume(gs, divby=8)
            dks8 = cute.assume(dks, divby=8)
            dvs8 = cute.assume(dvs, divby=8)
            qp0 = pq + (bb * qb + Int64(q0) * qs)
            gp0 = pdo + (bb * gb + Int64(q0) * gs)
            kp = pk + (bb * kb + Int64(k0) * ks + Int64(hk) * kh)
            vp = pv + (bb * vb + Int64(k0) * vs + Int64(hk) * vh)
            dkp = pdk + (bb * dkb + Int64(k0) * dks + Int64(hk) * dkh)
            dvp = pdv + (bb * dvb + Int64(k0) * dvs + Int64(hk) * dvh)
            mdK = cute.make_tensor(dkp.align(16), cute.make_layout((nk, D), stride=(dks8, 1)))
            mdV = cute.make_tensor(dvp.align(16), cute.make_layout((nk, D), stride=(dvs8, 1)))
            cK = cute.local_tile(cute.make_identity_tensor((nk, D)), (bN, D), (nb, 0))
            cQ = cute.local_tile(cute.make_identity_tensor((nq, D)), (bM, D), (None, 0))

            sK_l = smem_tile(bN, D)
            sQ_l = staged_tile(bM, D, ST)
            sP_l = smem_tile(bM, bN)
            smem = cutlass.utils.SmemAllocator()
            st = smem.allocate(Storage)
            sK = st.sK.get_tensor(sK_l)
            sV = st.sV.get_tensor(sK_l)
            sQ = st.sQ.get_tensor(sQ_l)           # (bM, D, ST)
            sdO = st.sdO.get_tensor(sQ_l)
            sP = st.sP.get_tensor(sP_l)
            sdS = st.sdS.get_tensor(sP_l)
            # transposed views: (D, bM, ST) of Q / dO, (bN, bM) of P / dS
            qt_l = cute.make_layout((D, bM, ST), stride=(bM, 1, bM * D))
            sQt = cute.composition(sQ, qt_l)
            sdOt = cute.composition(sdO, qt_l)
            sPt = cute.composition(sP, cute.make_layout((bN, bM), stride=(bM, 1)))
            sdSt = cute.composition(sdS, cute.make_layout((bN, bM), stride=(bM, 1)))

            g2s = g2s_copy(T, KB, NT)
            thr = g2s.get_slice(tidx)
            tKs = thr.partition_D(sK)
            tVs = thr.partition_D(sV)
            tKc = thr.partition_S(cK)
            tQs = thr.partition_D(sQ)             # (CPY, rows, cols, ST)
            tdOs = thr.partition_D(sdO)
            tQc = thr.partition_S(cQ)             # (CPY, rows, cols, query tile)

            # ---- MMAs: S, dP = (bM, bN) over D; dV, dK = (bN, D) over bM
            atom = cute.nvgpu.warp.MmaF16BF16Op(T, Float32, (16, 8, 16))
            mma_s = cute.make_tiled_mma(atom, cute.make_layout((wm_s, wn_s, 1)),
                                        permutation_mnk=(16 * wm_s, pn_s, 16))
            mma_k = cute.make_tiled_mma(atom, cute.make_layout((wm_k, wn_k, 1)),
                                        permutation_mnk=(16 * wm_k, pn_k, 16))
            ths = mma_s.get_slice(tidx)
            thk = mma_k.get_slice(tidx)
            rQ = ths.make_fragment_A(ths.partition_A(sQ[None, None, 0]))
            rdO = ths.make_fragment_A(ths.partition_A(sdO[None, None, 0]))
            rK = ths.make_fragment_B(ths.partition_B(sK))
            rV = ths.make_fragment_B(ths.partition_B(sV))
            rPt = thk.make_fragment_A(thk.partition_A(sPt))
            rdSt = thk.make_fragment_A(thk.partition_A(sdSt))
            rdOt = thk.make_fragment_B(thk.partition_B(sdOt[None, None, 0]))
            rQt = thk.make_fragment_B(thk.partition_B(sQt[None, None, 0]))
            accdK = cute.make_rmem_tensor(thk.partition_shape_C((bN, D)), Float32)
            accdV = cute.make_rmem_tensor(thk.partition_shape_C((bN, D)), Float32)
            accdK.fill(0.0)
            accdV.fill(0.0)

            def ldsm(trans, n):
                return cute.make_copy_atom(
                    cute.nvgpu.warp.LdMatrix8x8x16bOp(transpose=trans, num_matrices=n), T)

            ldsm_sa = cute.make_tiled_copy_A(ldsm(False, 4), mma_s)
            ldsm_sb = cute.make_tiled_copy_B(ldsm(False, nmat_s), mma_s)
            ldsm_ka = cute.make_tiled_copy_A(ldsm(True, 4), mma_k)
            ldsm_kb = cute.make_tiled_copy_B(ldsm(True, 4), mma_k)
            tsa = ldsm_sa.get_slice(tidx)
            tsb = ldsm_sb.get_slice(tidx)
            tka = ldsm_ka.get_slice(tidx)
            tkb = ldsm_kb.get_slice(tidx)
            tSsQ = tsa.partition_S(sQ)            # (CPY, M, K, ST)
            tSrQ = tsa.retile(rQ)
            tSsdO = tsa.partition_S(sdO)
            tSrdO = tsa.retile(rdO)
            tSsK = tsb.partition_S(sK)
            tSrK = tsb.retile(rK)
            tSsV = tsb.partition_S(sV)
            tSrV = tsb.retile(rV)
            tKsPt = tka.partition_S(sPt)
            tKrPt = tka.retile(rPt)
            tKsdSt = tka.partition_S(sdSt)
            tKrdSt = tka.retile(rdSt)
            tKsdOt = tkb.partition_S(sdOt)        # (CPY, N, K, ST)
            tKrdOt = tkb.retile(rdOt)
            tKsQt = tkb.partition_S(sQt)
            tKrQt = tkb.retile(rQt)
            # P / dS: registers -> shared memory in the accumulator layout of mma_s
            r2s = cute.make_tiled_copy_C(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), T),
                                         mma_s)
            thp = r2s.get_slice(tidx)
            tPs = thp.partition_D(sP)
            tdSs = thp.partition_D(sdS)
            tScS = mn_view(ths.partition_C(cute.make_identity_tensor((bM, bN))))
            NR = cute.size(tScS, mode=[0])
            r_lse = cute.make_rmem_tensor(NR, Float32)
            r_delta = cute.make_rmem_tensor(NR, Float32)

            # ---- prologue: K, V and the first (head, query tile) into stage 0
            if n_iters > 0:
                copy_rows(g2s, thr.partition_S(cute.local_tile(
                    cute.make_tensor(kp.align(16), cute.make_layout((nk, D), stride=(ks8, 1))),
                    (bN, D), (nb, 0))), tKs, tKc, nk)
                copy_rows(g2s, thr.partition_S(cute.local_tile(
                    cute.make_tensor(vp.align(16), cute.make_layout((nk, D), stride=(vs8, 1))),
                    (bN, D), (nb, 0))), tVs, tKc, nk)
                tc = tQc[None, None, None, m_start]
                load_tile(g2s, thr, qp0 + Int64(h0) * qh, qs8, nq, bM, D, m_start,
                          tQs[None, None, None, 0], tc)
                load_tile(g2s, thr, gp0 + Int64(h0) * gh, gs8, nq, bM, D, m_start,
                          tdOs[None, None, None, 0], tc)
                cute.arch.cp_async_commit_group()

            for it in cutlass.range(n_iters):
                stage = it % ST
                g = it // n_m
                mt = m_start + (it - g * n_m)
                h = h0 + g
                m0 = mt * bM
                load_row_stats(r_lse, r_delta, tScS, plse, pdelta,
                               Int64(b) * lb + Int64(h) * lh + Int64(q0), m0, nq)
                slope2, cap_in, cap_out, s_mul = score_consts(pslope, b, h, slb, slh, scale,
                                                              softcap, flags)
                drop = None
                if cutlass.const_expr(knobs.dropout):
                    _, hkn, _ = cute.arch.grid_dim()
                    drop = Dropout(dseed, doff, dthr, b, h, Int32(hkn) * ratio, sq, sk)
                sc = make_consts(slope2, cap_in, cap_out, s_mul, flags, drop)
                cute.arch.cp_async_wait_group(0)
                cute.arch.sync_threads()
                if cutlass.const_expr(ST == 2):
                    # Q, dO of the next (head, query tile) into the other stage, read by no
                    # warp since the barrier above
                    if it + 1 < n_iters:
                        gn = (it + 1) // n_m
                        mn = m_start + (it + 1 - gn * n_m)
                        tc = tQc[None, None, None, mn]
                        load_tile(g2s, thr, qp0 + Int64(h0 + gn) * qh, qs8, nq, bM, D, mn,
                                  tQs[None, None, None, 1 - stage], tc)
                        load_tile(g2s, thr, gp0 + Int64(h0 + gn) * gh, gs8, nq, bM, D, mn,
                                  tdOs[None, None, None, 1 - stage], tc)
                        cute.arch.cp_async_commit_group()
                # S = Q·Kᵀ, dP = dO·Vᵀ
                accS = cute.make_rmem_tensor(ths.partition_shape_C((bM, bN)), Float32)
                accS.fill(0.0)
                accdP = cute.make_rmem_tensor(ths.partition_shape_C((bM, bN)), Float32)
                accdP.fill(0.0)
                smem_gemm(mma_s, accS, ldsm_sa, tSsQ[None, None, None, stage], tSrQ, rQ,
                          ldsm_sb, tSsK, tSrK, rK)
                smem_gemm(mma_s, accdP, ldsm_sa, tSsdO[None, None, None, stage], tSrdO, rdO,
                          ldsm_sb, tSsV, tSrV, rV)
                # P, dS in registers, then to shared memory (input dtype)
                row_hi = cutlass.min(m0 + bM, nq) - 1
                masked = need_mask(m0, row_hi, c0, nk, off, left, right, bN)
                probs_and_grads(mn_view(accS), mn_view(accdP), tScS, m0, c0, r_lse, r_delta,
                                nk, off, left, right, masked, sc)
                rP = cute.make_fragment_like(accS, T)
                rP.store(accS.load().to(T))
                rdS = cute.make_fragment_like(accdP, T)
                rdS.store(accdP.load().to(T))
                cute.copy(r2s, thp.retile(rP), tPs)
                cute.copy(r2s, thp.retile(rdS), tdSs)
                cute.arch.sync_threads()
                # dV += Pᵀ·dO, dK += dSᵀ·Q
                smem_gemm(mma_k, accdV, ldsm_ka, tKsPt, tKrPt, rPt, ldsm_kb,
                          tKsdOt[None, None, None, stage], tKrdOt, rdOt)
                smem_gemm(mma_k, accdK, ldsm_ka, tKsdSt, tKrdSt, rdSt, ldsm_kb,
                          tKsQt[None, None, None, stage], tKrQt, rQt)
                if cutlass.const_expr(ST == 1):
                    # Q, dO of the next (head, query tile) once every warp is done with these
                    cute.arch.sync_threads()
                    if it + 1 < n_iters:
                        gn = (it + 1) // n_m
                        mn = m_start + (it + 1 - gn * n_m)
                        tc = tQc[None, None, None, mn]
                        load_tile(g2s, thr, qp0 + Int64(h0 + gn) * qh, qs8, nq, bM, D, mn,
                                  tQs[None, None, None, 0], tc)
                        load_tile(g2s, thr, gp0 + Int64(h0 + gn) * gh, gs8, nq, bM, D, mn,
                                  tdOs[None, None, None, 0], tc)
                        cute.arch.cp_async_commit_group()

            # ---- epilogue: dK·scale, dV in the input dtype, staged through sK / sV
            rdK = cute.make_fragment_like(accdK, T)
            rdK.store((accdK.load() * scale).to(T))
            rdV = cute.make_fragment_like(accdV, T)
            rdV.store(accdV.load().to(T))
            cute.arch.cp_async_wait_group(0)
            cute.arch.sync_threads()
            r2sk = cute.make_tiled_copy_C(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), T),
                                          mma_k)
            thr2 = r2sk.get_slice(tidx)
            cute.copy(r2sk, thr2.retile(rdK), thr2.partition_D(sK))
            cute.copy(r2sk, thr2.retile(rdV), thr2.partition_D(sV))
            cute.arch.sync_threads()
            s2g = cute.make_tiled_copy_tv(
                cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), T, num_bits_per_copy=128),
                cute.make_layout((NT // (KB // 8), KB // 8), stride=(KB // 8, 1)),
                cute.make_layout((1, 8)))
            tho = s2g.get_slice(tidx)
            tOc = tho.partition_S(cK)
            for src, dst in ((sK, mdK), (sV, mdV)):
                tOs = tho.partition_S(src)
                tOg = tho.partition_D(cute.local_tile(dst, (bN, D), (nb, 0)))
                tOr = cute.make_fragment_like(tOg, T)
                cute.copy(s2g, tOs, tOr)
                for r in cutlass.range_constexpr(cute.size(tOg, mode=[1])):
                    if cute.elem_less(tOc[0, r, 0][0], nk):
                        cute.copy(s2g, tOr[None, r, None], tOg[None, r, None])

    @cute.jit
    def launch(pq: cute.Pointer, pk: cute.Pointer, pv: cute.Pointer, pdo: cute.Pointer,
               plse: cute.Pointer, pdelta: cute.Pointer, pdk: cute.Pointer, pdv: cute.Pointer,
               pcuq: cute.Pointer, pcuk: cute.Pointer, pslope: cute.Pointer, sq: Int32,
               sk: Int32, ratio: Int32, qb: Int64, qs: Int64, qh: Int64, kb: Int64, ks: Int64,
               kh: Int64, vb: Int64, vs: Int64, vh: Int64, gb: Int64, gs: Int64, gh: Int64,
               dkb: Int64, dks: Int64, dkh: Int64, dvb: Int64, dvs: Int64, dvh: Int64,
               lb: Int64, lh: Int64, slb: Int64, slh: Int64, scale: Float32, softcap: Float32,
               left: Int32, right: Int32, flags: Int32, dseed: Int64, doff: Int64,
               dthr: Int64, nblocks: Int32, heads: Int32,
               batch: Int32, stream):
        kernel(pq, pk, pv, pdo, plse, pdelta, pdk, pdv, pcuq, pcuk, pslope, sq, sk, ratio, qb,
               qs, qh, kb, ks, kh, vb, vs, vh, gb, gs, gh, dkb, dks, dkh, dvb, dvs, dvh, lb, lh,
               slb, slh, scale, softcap, left, right,
               flags, dseed, doff, dthr).launch(grid=[nblocks, heads, batch], block=[NT, 1, 1],
                             smem=dkdv_smem(D), stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t, align):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=align)

    args = ([ptr(T, 16)] * 4 + [ptr(Float32, 4), ptr(Float32, 4), ptr(T, 16), ptr(T, 16),
                                ptr(Int32, 4), ptr(Int32, 4), ptr(Float32, 4)]
            + [Int32(1), Int32(1), Int32(1)] + [Int64(8)] * 22
            + [Float32(1.0), Float32(0.0), Int32(-1), Int32(-1), Int32(0), Int64(0), Int64(0), Int64(0),
               Int32(1), Int32(1), Int32(1), make_fake_stream()])
    return launch, args
