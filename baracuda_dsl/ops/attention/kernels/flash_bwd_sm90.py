"""Flash attention backward for Hopper (sm90a), dK / dV / dQ in one pass with ``wgmma``:

    S_ij, P_ij = exp2(t_ij − lse_i·log2 e), dP = dO·Vᵀ, dS = P∘(dP − delta) (∘ softcap'),
    dV_j += Σ_i P_ij dO_i,   dK_j += Σ_i dS_ij Q_i,   dQ_i += Σ_j dS_ij K_j   (f32 atomics)

One CTA of three warpgroups (384 threads) per (key tile of 128 rows, kv head, batch entry):

* warpgroup 0, the producer: ``cp.async`` of the Q and dO tiles (64 query rows) of every query
  head of the GQA group and every query tile that can see the key tile, into a two-stage ring
  (``PipelineCpAsync``);
* warpgroups 1, 2, the consumers, 64 key rows each, K and V rows loaded once: per query tile
  Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ (``wgmma``, shared operands), Pᵀ and dSᵀ in registers, then
  dV += Pᵀ·dO and dK += dSᵀ·Q (``wgmma`` with Pᵀ / dSᵀ from registers and dO / Q read through
  an MN-major view of the same shared tiles), dSᵀ staged to shared memory and
  dQ_partial = dS·K (both warpgroups, 64 × D/2 each) added to the f32 dQ accumulator with
  ``red.add`` (so dQ's summation order varies run to run: the plan's fast, non-deterministic
  path; ``flash_bwd_post`` scales and converts it).

dK (·scale) and dV are written once at the end in the input dtype.  Head dims 64 and 128
(:data:`~baracuda_dsl.ops.attention.specs.flash_bwd_sm90.SM90_BWD_DIMS`).
"""

# no ``from __future__ import annotations``: ``cute.struct`` reads its annotations as types

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass import Float32, Int32, Int64
from cutlass.cute.nvgpu import warpgroup

from ....blocks.sm90.tma import smem_layout
from ..specs.flash import ALIBI, BOTTOM_RIGHT, SOFTCAP, VARLEN, FlashKnobs
from ..specs.flash_bwd_sm90 import SM90_BWD_THREADS, SM90_BWD_TILES, sm90_bwd_smem
from .flash_common import (LOG2E, TYPES, Dropout, copy_rows, dropout_factor, g2s_copy,
                           seq_bounds)
from .flash_fwd_sm90 import (CONSUMER_REGS, PRODUCER_REGS, c_to_a_layout,
                             make_cp_async_pipeline, wg_mn_view)


@cute.jit
def store_rows(acc, crd, base: cute.Pointer, row_stride: Int64, n_rows, mul, T: cutlass.Constexpr):
    """acc (a wgmma accumulator's mn view) · ``mul`` → rows < ``n_rows`` at ``base`` +
    row·``row_stride`` + col, in pairs of consecutive columns (4-byte stores)."""
    for r in cutlass.range_constexpr(cute.size(acc, mode=[0])):
        row = crd[r, 0][0]
        if cute.elem_less(row, n_rows):
            prow = base + Int64(row) * row_stride
            for c in cutlass.range_constexpr(cute.size(acc, mode=[1]) // 2):
                col = crd[r, 2 * c][1]
                pair = cute.make_rmem_tensor(cute.make_layout(2), T)
                pair[0] = T(acc[r, 2 * c] * mul)
                pair[1] = T(acc[r, 2 * c + 1] * mul)
                cute.autovec_copy(pair, cute.make_tensor((prow + Int64(col)).align(4),
                                                         cute.make_layout(2)))


def build(knobs: FlashKnobs):
    T = TYPES[knobs.dtype]
    D = knobs.head_dim
    bN, bM = SM90_BWD_TILES[D]            # key rows of the CTA, query rows of a step
    NT = SM90_BWD_THREADS
    KB = 64
    ST = 2

    @cute.struct
    class Storage:
        sK: cute.struct.Align[cute.struct.MemRange[T, bN * D], 1024]
        sV: cute.struct.Align[cute.struct.MemRange[T, bN * D], 1024]
        sQ: cute.struct.Align[cute.struct.MemRange[T, bM * D * ST], 1024]
        sdO: cute.struct.Align[cute.struct.MemRange[T, bM * D * ST], 1024]
        sdS: cute.struct.Align[cute.struct.MemRange[T, bM * bN], 1024]
        sL: cute.struct.Align[cute.struct.MemRange[Float32, bM * ST], 16]
        sDl: cute.struct.Align[cute.struct.MemRange[Float32, bM * ST], 16]
        bars: cute.struct.MemRange[Int64, 2 * ST]

    @cute.kernel
    def kernel(pq: cute.Pointer, pk: cute.Pointer, pv: cute.Pointer, pdo: cute.Pointer,
               plse: cute.Pointer, pdelta: cute.Pointer, pdk: cute.Pointer, pdv: cute.Pointer,
               pdqa: cute.Pointer, pcuq: cute.Pointer, pcuk: cute.Pointer,
               pslope: cute.Pointer, sq: Int32, sk: Int32, ratio: Int32, qb: Int64, qs: Int64,
               qh: Int64, kb: Int64, ks: Int64, kh: Int64, vb: Int64, vs: Int64, vh: Int64,
               gb: Int64, gs: Int64, gh: Int64, dkb: Int64, dks: Int64, dkh: Int64,
               dvb: Int64, dvs: Int64, dvh: Int64, ab: Int64, as_: Int64, ah: Int64,
               lb: Int64, lh: Int64, slb: Int64, slh: Int64, scale: Float32, softcap: Float32,
               left: Int32, right: Int32, flags: Int32, dseed: Int64, doff: Int64, dthr: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        nb_, hk, b = cute.arch.block_idx()
        q0, nq = seq_bounds(pcuq, b, flags, sq)
        k0, nk = seq_bounds(pcuk, b, flags, sk)
        c0 = Int32(nb_) * bN
        if c0 < nk:
            bb = Int64(b)
            if (flags & VARLEN) != 0:
                bb = Int64(0)
            off = Int32(0)
            if (flags & BOTTOM_RIGHT) != 0:
                off = nk - nq
            c1 = cutlass.min(c0 + bN, nk) - 1
            # ---- the query tiles that can see this key tile
            n_mt = (nq + bM - 1) // bM
            m_start = Int32(0)
            if right >= 0:
                m_start = cutlass.max(c0 - off - right, 0) // bM
            m_end = n_mt
            if left >= 0:
                m_end = cutlass.min(n_mt, cutlass.max(c1 - off + left + bM, 0) // bM)
            n_m = cutlass.max(m_end - m_start, 0)
            steps = n_m * ratio

            qs8 = cute.assume(qs, divby=8)
            gs8 = cute.assume(gs, divby=8)
            ks8 = cute.assume(ks, divby=8)
            vs8 = cute.assume(vs, divby=8)
            kp = pk + (bb * kb + Int64(k0) * ks + Int64(hk) * kh)
            vp = pv + (bb * vb + Int64(k0) * vs + Int64(hk) * vh)
            mK = cute.make_tensor(kp.align(16), cute.make_layout((nk, D), stride=(ks8, 1)))
            mV = cute.make_tensor(vp.align(16), cute.make_layout((nk, D), stride=(vs8, 1)))
            cKV = cute.local_tile(cute.make_identity_tensor((nk, D)), (bN, D), (nb_, 0))

            lk = smem_layout(T, True, bN, D, 1)          # K, V: A operands (keys, D)
            lkt = smem_layout(T, False, D, bN, 1)        # K as dQ's B operand (D, keys)
            lq = smem_layout(T, True, bM, D, ST)         # Q, dO: B operands (queries, D)
            lqt = smem_layout(T, False, D, bM, ST)       # Q, dO as dK / dV's B (D, queries)
            lds = smem_layout(T, False, bM, bN, 1)       # dS: dQ's A operand (queries, keys)
            smem = cutlass.utils.SmemAllocator()
            st = smem.allocate(Storage)
            sK = st.sK.get_tensor(lk.outer, swizzle=lk.inner)
            sKt = st.sK.get_tensor(lkt.outer, swizzle=lkt.inner)
            sV = st.sV.get_tensor(lk.outer, swizzle=lk.inner)
            sQ = st.sQ.get_tensor(lq.outer, swizzle=lq.inner)
            sQt = st.sQ.get_tensor(lqt.outer, swizzle=lqt.inner)
            sdO = st.sdO.get_tensor(lq.outer, swizzle=lq.inner)
            sdOt = st.sdO.get_tensor(lqt.outer, swizzle=lqt.inner)
            sdS = st.sdS.get_tensor(lds.outer, swizzle=lds.inner)
            sK2 = sK[None, None, 0]
            sV2 = sV[None, None, 0]
            sdS2 = sdS[None, None, 0]
            # per stage: lse (base 2; +inf for rows past the sequence or fully masked ones, so
            # their P is 0) and delta of the step's query rows, written by the producer
            sL = cute.make_tensor(st.sL.data_ptr(), cute.make_layout((bM, ST)))
            sDl = cute.make_tensor(st.sDl.data_ptr(), cute.make_layout((bM, ST)))
            pipe = make_cp_async_pipeline(st.bars.data_ptr(), ST)
            warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
            wg = warp // 4

            if wg == 0:
                # ================= producer: Q and dO tiles of every (head, query tile)
                cute.arch.setmaxregister_decrease(PRODUCER_REGS)
                gcp = g2s_copy(T, KB, 128)
                thr = gcp.get_slice(tidx)
                tQs = thr.partition_D(sQ)
                tdOs = thr.partition_D(sdO)
                pst = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, ST)
                for s in cutlass.range(steps):
                    h = Int32(hk) * ratio + s // n_m
                    mi = m_start + s % n_m
                    qp = pq + (bb * qb + Int64(q0) * qs + Int64(h) * qh)
                    gp = pdo + (bb * gb + Int64(q0) * gs + Int64(h) * gh)
                    mQ = cute.make_tensor(qp.align(16), cute.make_layout((nq, D),
                                                                         stride=(qs8, 1)))
                    mdO = cute.make_tensor(gp.align(16), cute.make_layout((nq, D),
                                                                          stride=(gs8, 1)))
                    cQ = cute.local_tile(cute.make_identity_tensor((nq, D)), (bM, D), (mi, 0))
                    pipe.producer_acquire(pst)
                    copy_rows(gcp, thr.partition_S(cute.local_tile(mQ, (bM, D), (mi, 0))),
                           tQs[None, None, None, pst.index], thr.partition_S(cQ), nq)
                    copy_rows(gcp, thr.partition_S(cute.local_tile(mdO, (bM, D), (mi, 0))),
                           tdOs[None, None, None, pst.index], thr.partition_S(cQ), nq)
                    i = mi * bM + Int32(tidx) % bM
                    rowoff = Int64(b) * lb + Int64(h) * lh + Int64(q0 + i)
                    if tidx < bM:
                        lv = Float32.inf
                        if i < nq:
                            x = cute.make_tensor(plse + rowoff, cute.make_layout(1))[0]
                            if x != -Float32.inf:
                                lv = x * LOG2E
                        sL[Int32(tidx), pst.index] = lv
                    else:
                        dv = Float32(0.0)
                        if i < nq:
                            dv = cute.make_tensor(pdelta + rowoff, cute.make_layout(1))[0]
                        sDl[Int32(tidx) % bM, pst.index] = dv
                    # the plain shared stores (zero-filled rows, lse, delta) are ordered before
                    # the stage's arrive
                    cute.arch.fence_acq_rel_cta()
                    pipe.producer_commit(pst)
                    pst.advance()
            else:
                # ================= consumers: 64 key rows each
                cute.arch.setmaxregister_increase(CONSUMER_REGS)
                ctid = Int32(tidx) - 128
                wgc = wg - 1
                # this warpgroup's K and V rows, then both warpgroups' rows are in place
                gck = g2s_copy(T, KB, 128)
                tk = gck.get_slice(ctid % 128)
                crd = tk.partition_S(cute.local_tile(cKV, (64, D), (wgc, 0)))
                copy_rows(gck, tk.partition_S(cute.local_tile(
                    cute.local_tile(mK, (bN, D), (nb_, 0)), (64, D), (wgc, 0))),
                    tk.partition_D(cute.local_tile(sK2, (64, D), (wgc, 0))), crd, nk)
                copy_rows(gck, tk.partition_S(cute.local_tile(
                    cute.local_tile(mV, (bN, D), (nb_, 0)), (64, D), (wgc, 0))),
                    tk.partition_D(cute.local_tile(sV2, (64, D), (wgc, 0))), crd, nk)
                cute.arch.cp_async_commit_group()
                cute.arch.cp_async_wait_group(0)
                cute.arch.fence_view_async_shared()
                cute.arch.barrier(barrier_id=1, number_of_threads=256)

                K_ = warpgroup.OperandMajorMode.K
                MN = warpgroup.OperandMajorMode.MN
                mma_s = sm90_utils.make_trivial_tiled_mma(T, T, K_, K_, Float32, (2, 1, 1),
                                                          tiler_mn=(64, bM))
                mma_kv = sm90_utils.make_trivial_tiled_mma(
                    T, T, K_, MN, Float32, (2, 1, 1), tiler_mn=(64, D),
                    a_source=warpgroup.OperandSource.RMEM)
                mma_q = sm90_utils.make_trivial_tiled_mma(T, T, MN, MN, Float32, (1, 2, 1),
                                                          tiler_mn=(64, D // 2))
                ths = mma_s.get_slice(ctid)
                thk = mma_kv.get_slice(ctid)
                thq = mma_q.get_slice(ctid)
                rK = mma_s.make_fragment_A(ths.partition_A(sK))
                rV = mma_s.make_fragment_A(ths.partition_A(sV))
                rQ = mma_s.make_fragment_B(ths.partition_B(sQ))
                rdO = mma_s.make_fragment_B(ths.partition_B(sdO))
                rQt = mma_kv.make_fragment_B(thk.partition_B(sQt))
                rdOt = mma_kv.make_fragment_B(thk.partition_B(sdOt))
                rdS_s = mma_q.make_fragment_A(thq.partition_A(sdS))
                rKt = mma_q.make_fragment_B(thq.partition_B(sKt))
                accS = cute.make_rmem_tensor(ths.partition_shape_C((bN, bM)), Float32)
                accP = cute.make_rmem_tensor(ths.partition_shape_C((bN, bM)), Float32)
                accdK = cute.make_rmem_tensor(thk.partition_shape_C((bN, D)), Float32)
                accdV = cute.make_rmem_tensor(thk.partition_shape_C((bN, D)), Float32)
                accdQ = cute.make_rmem_tensor(thq.partition_shape_C((bM, D)), Float32)
                accdK.fill(0.0)
                accdV.fill(0.0)
                rP = cute.make_rmem_tensor(c_to_a_layout(accS.layout,
                                                         mma_kv.tv_layout_A.shape[1]), T)
                rdS = cute.make_rmem_tensor(c_to_a_layout(accS.layout,
                                                          mma_kv.tv_layout_A.shape[1]), T)
                rP_acc = cute.make_tensor(rP.iterator, accS.layout)
                rdS_acc = cute.make_tensor(rdS.iterator, accS.layout)
                S = wg_mn_view(accS)
                dP = wg_mn_view(accP)
                tScS = wg_mn_view(ths.partition_C(cute.make_identity_tensor((bN, bM))))
                tQcQ = wg_mn_view(thq.partition_C(cute.make_identity_tensor((bM, D))))
                dQv = wg_mn_view(accdQ)
                NKD = cute.size(rK, mode=[2])
                NKM = cute.size(rP, mode=[2])
                NKN = cute.size(rdS_s, mode=[2])
                NC = cute.size(S, mode=[1])

                use_cap = (flags & SOFTCAP) != 0
                use_alibi = (flags & ALIBI) != 0
                s_mul = scale * LOG2E
                cap_in = Float32(0.0)
                cap_out = Float32(0.0)
                if use_cap:
                    cap_in = scale / softcap
                    cap_out = softcap * LOG2E
                cst = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, ST)
                for s in cutlass.range(steps):
                    h = Int32(hk) * ratio + s // n_m
                    m0 = (m_start + s % n_m) * bM
                    drop = None
                    if cutlass.const_expr(knobs.dropout):
                        _, hkn, _ = cute.arch.grid_dim()
                        drop = Dropout(dseed, doff, dthr, b, h, Int32(hkn) * ratio, sq, sk)
                    slope2 = Float32(0.0)
                    if use_alibi:
                        sl = cute.make_tensor(pslope + (Int64(b) * slb + Int64(h) * slh),
                                              cute.make_layout(1))
                        slope2 = Float32(sl[0]) * LOG2E
                    pipe.consumer_wait(cst)
                    cute.arch.fence_view_async_shared()
                    # ---- Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ
                    warpgroup.fence()
                    for kk in cutlass.range_constexpr(NKD):
                        mma_s.set(warpgroup.Field.ACCUMULATE, kk != 0)
                        cute.gemm(mma_s, accS, rK[None, None, kk, 0],
                                  rQ[None, None, kk, cst.index], accS)
                    for kk in cutlass.range_constexpr(NKD):
                        mma_s.set(warpgroup.Field.ACCUMULATE, kk != 0)
                        cute.gemm(mma_s, accP, rV[None, None, kk, 0],
                                  rdO[None, None, kk, cst.index], accP)
                    warpgroup.commit_group()
                    warpgroup.wait_group(0)
                    # ---- Pᵀ, dSᵀ (rows: keys, columns: queries)
                    for r in cutlass.range_constexpr(cute.size(S, mode=[0])):
                        j = c0 + tScS[r, 0][0]
                        for c in cutlass.range_constexpr(NC):
                            i = m0 + tScS[0, c][1]
                            x = S[r, c]
                            th = Float32(0.0)
                            t = x * s_mul
                            if use_cap:
                                th = cute.math.tanh(x * cap_in, fastmath=True)
                                t = cap_out * th
                            if use_alibi:
                                dist = i + off - j
                                dist = cutlass.max(dist, -dist)
                                t = t - slope2 * Float32(dist)
                            keep = cute.elem_less(j, nk)
                            if right >= 0:
                                keep = keep & (j <= i + off + right)
                            if left >= 0:
                                keep = keep & (j >= i + off - left)
                            ql = tScS[0, c][1]
                            p = cutlass.select_(
                                keep, cute.math.exp2(t - sL[ql, cst.index], fastmath=True),
                                Float32(0.0))
                            dpv = dP[r, c]
                            if cutlass.const_expr(knobs.dropout):
                                z = dropout_factor(drop, i, j)
                                dpv = dpv * z
                            ds = p * (dpv - sDl[ql, cst.index])
                            if cutlass.const_expr(knobs.dropout):
                                p = p * z
                            if use_cap:
                                ds = ds * (Float32(1.0) - th * th)
                            S[r, c] = p
                            dP[r, c] = ds
                    rP_acc.store(accS.load().to(T))
                    rdS_acc.store(accP.load().to(T))
                    # dSᵀ to shared memory (dS for the dQ GEMM, queries contiguous)
                    dSv = wg_mn_view(rdS_acc)
                    for r in cutlass.range_constexpr(cute.size(S, mode=[0])):
                        jl = tScS[r, 0][0]
                        for c in cutlass.range_constexpr(NC):
                            sdS2[tScS[0, c][1], jl] = dSv[r, c]
                    # ---- dV += Pᵀ·dO, dK += dSᵀ·Q
                    warpgroup.fence()
                    mma_kv.set(warpgroup.Field.ACCUMULATE, True)
                    for kk in cutlass.range_constexpr(NKM):
                        cute.gemm(mma_kv, accdV, rP[None, None, kk],
                                  rdOt[None, None, kk, cst.index], accdV)
                    for kk in cutlass.range_constexpr(NKM):
                        cute.gemm(mma_kv, accdK, rdS[None, None, kk],
                                  rQt[None, None, kk, cst.index], accdK)
                    warpgroup.commit_group()
                    cute.arch.fence_view_async_shared()
                    cute.arch.barrier(barrier_id=1, number_of_threads=256)
                    # ---- dQ_partial = dS·K (each warpgroup: 64 × D/2)
                    for kk in cutlass.range_constexpr(NKN):
                        mma_q.set(warpgroup.Field.ACCUMULATE, kk != 0)
                        cute.gemm(mma_q, accdQ, rdS_s[None, None, kk, 0],
                                  rKt[None, None, kk, 0], accdQ)
                    warpgroup.commit_group()
                    warpgroup.wait_group(0)
                    pipe.consumer_release(cst)
                    cst.advance()
                    arow = pdqa + (bb * ab + Int64(q0) * as_ + Int64(h) * ah)
                    for r in cutlass.range_constexpr(cute.size(dQv, mode=[0])):
                        i = m0 + tQcQ[r, 0][0]
                        if cute.elem_less(i, nq):
                            pr = arow + Int64(i) * as_
                            for c in cutlass.range_constexpr(cute.size(dQv, mode=[1])):
                                cute.arch.red(pr + Int64(tQcQ[r, c][1]), dQv[r, c], op="add",
                                              dtype=Float32, sem="relaxed", scope="gpu")
                    # every warpgroup is done reading dS before the next step writes it
                    cute.arch.barrier(barrier_id=1, number_of_threads=256)

                # ---- dK·scale, dV in the input dtype
                tKcK = wg_mn_view(thk.partition_C(cute.make_identity_tensor((bN, D))))
                dkp = pdk + (bb * dkb + Int64(k0 + c0) * dks + Int64(hk) * dkh)
                dvp = pdv + (bb * dvb + Int64(k0 + c0) * dvs + Int64(hk) * dvh)
                store_rows(wg_mn_view(accdK), tKcK, dkp, dks, nk - c0, scale, T)
                store_rows(wg_mn_view(accdV), tKcK, dvp, dvs, nk - c0, Float32(1.0), T)

    @cute.jit
    def launch(pq: cute.Pointer, pk: cute.Pointer, pv: cute.Pointer, pdo: cute.Pointer,
               plse: cute.Pointer, pdelta: cute.Pointer, pdk: cute.Pointer, pdv: cute.Pointer,
               pdqa: cute.Pointer, pcuq: cute.Pointer, pcuk: cute.Pointer,
               pslope: cute.Pointer, sq: Int32, sk: Int32, ratio: Int32, qb: Int64, qs: Int64,
               qh: Int64, kb: Int64, ks: Int64, kh: Int64, vb: Int64, vs: Int64, vh: Int64,
               gb: Int64, gs: Int64, gh: Int64, dkb: Int64, dks: Int64, dkh: Int64,
               dvb: Int64, dvs: Int64, dvh: Int64, ab: Int64, as_: Int64, ah: Int64,
               lb: Int64, lh: Int64, slb: Int64, slh: Int64, scale: Float32, softcap: Float32,
               left: Int32, right: Int32, flags: Int32, dseed: Int64, doff: Int64,
               dthr: Int64, nblocks: Int32, heads: Int32,
               batch: Int32, stream):
        kernel(pq, pk, pv, pdo, plse, pdelta, pdk, pdv, pdqa, pcuq, pcuk, pslope, sq, sk,
               ratio, qb, qs, qh, kb, ks, kh, vb, vs, vh, gb, gs, gh, dkb, dks, dkh, dvb, dvs,
               dvh, ab, as_, ah, lb, lh, slb, slh, scale, softcap, left, right, flags, dseed, doff, dthr).launch(
                   grid=[nblocks, heads, batch], block=[NT, 1, 1], smem=sm90_bwd_smem(D),
                   min_blocks_per_mp=1, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t, align):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=align)

    args = ([ptr(T, 16)] * 4 + [ptr(Float32, 4), ptr(Float32, 4), ptr(T, 16), ptr(T, 16),
                                ptr(Float32, 4), ptr(Int32, 4), ptr(Int32, 4), ptr(Float32, 4)]
            + [Int32(1), Int32(1), Int32(1)] + [Int64(8)] * 25
            + [Float32(1.0), Float32(1.0), Int32(-1), Int32(-1), Int32(0), Int64(0), Int64(0), Int64(0),
               Int32(1), Int32(1), Int32(1), make_fake_stream()])
    return launch, args
