"""Flash attention backward, dQ (``mma.sync``, sm80 / sm89 / sm90a):

    dQ_i = scale·Σ_j dS_ij·K_j,   dS_ij = P_ij·(dP_ij − delta_i) (softcap: ·(1 − tanh²)),
    P_ij = exp2(t_ij − lse_i·log2 e),   dP = dO·Vᵀ

One CTA (4 warps, 16 query rows each, as in the forward) per (query tile of bM rows, query head
h, batch entry b); kv head h // ratio.  The Q and dO tiles and the row statistics (lse, delta)
load once; then per visible key tile (the forward's range, walked from the last one down):
S = Q·Kᵀ and dP = dO·Vᵀ from ``ldmatrix`` fragments into ``mma.sync`` m16n8k16 (f32), P and dS
recomputed in registers (masks only in the tiles that cross a boundary), dS converted to the
input dtype and used in place as the A operand of dQ += dS·K (K read transposed with
``ldmatrix.trans``).  V of the next tile loads (``cp.async``) while dS·K runs, K of the next tile
while the following S and dP wait for it.  Rows past the sequence are zero in shared memory; a
row that sees no key (lse = −∞) or a query tile with no visible key gets dQ = 0.  dQ·scale is
staged through the Q buffer and stored with 16-byte vectors (rows past the sequence not
written).  Deterministic: no atomics.

Parameters: see ``specs/flash_bwd.py`` (element strides; batch strides are ignored for
variable-length batches).  Caller contract (``FlashAttentionBackwardPlan``): 16-byte aligned
pointers, every q / k / v / do / dq stride a multiple of 8 elements, unit stride along the head
dim, lse / delta f32.
"""

# no ``from __future__ import annotations``: ``cute.struct`` reads its annotations as types

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64

from ..specs.flash import FlashKnobs
from ..specs.flash_bwd import DQ_THREADS, DQ_TILES, dq_smem
from .flash_common import (TYPES, Dropout, a_view, atom_width, batch_index, copy_rows, g2s_copy,
                           load_row_stats, make_consts, mn_view, need_mask, probs_and_grads,
                           query_tile_keys, reg_a_gemm, rows_view, score_consts, seq_bounds,
                           smem_gemm, smem_tile)


def build(knobs: FlashKnobs):
    T = TYPES[knobs.dtype]
    D = knobs.head_dim
    bM, bN = DQ_TILES[D]
    NT = DQ_THREADS
    NW = NT // 32
    KB = atom_width(D)
    assert bM == 16 * NW and bN % 16 == 0

    @cute.struct
    class Storage:
        sQ: cute.struct.Align[cute.struct.MemRange[T, bM * D], 1024]
        sdO: cute.struct.Align[cute.struct.MemRange[T, bM * D], 1024]
        sK: cute.struct.Align[cute.struct.MemRange[T, bN * D], 1024]
        sV: cute.struct.Align[cute.struct.MemRange[T, bN * D], 1024]

    @cute.kernel
    def kernel(pq: cute.Pointer, pk: cute.Pointer, pv: cute.Pointer, pdo: cute.Pointer,
               plse: cute.Pointer, pdelta: cute.Pointer, pdq: cute.Pointer, pcuq: cute.Pointer,
               pcuk: cute.Pointer, pslope: cute.Pointer, sq: Int32, sk: Int32, ratio: Int32,
               qb: Int64, qs: Int64, qh: Int64, kb: Int64, ks: Int64, kh: Int64, vb: Int64,
               vs: Int64, vh: Int64, gb: Int64, gs: Int64, gh: Int64, dqb: Int64, dqs: Int64,
               dqh: Int64, lb: Int64, lh: Int64, slb: Int64, slh: Int64, scale: Float32,
               softcap: Float32, left: Int32, right: Int32, flags: Int32, dseed: Int64, doff: Int64, dthr: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        mb, h, b = cute.arch.block_idx()
        q0, nq = seq_bounds(pcuq, b, flags, sq)
        k0, nk = seq_bounds(pcuk, b, flags, sk)
        m0 = Int32(mb) * bM
        if m0 < nq:
            bb = batch_index(b, flags)
            hk = Int32(h) // ratio
            # ---- the key tiles this query tile can see (the forward's range)
            off, row_hi, n_start, n_end, n_iters = query_tile_keys(m0, nq, nk, flags, left,
                                                                   right, bM, bN)
            # ---- operand views (element strides are multiples of 8: 16-byte vectors)
            mQ = rows_view(pq, bb, q0, h, qb, qs, qh, nq, D)
            mdO = rows_view(pdo, bb, q0, h, gb, gs, gh, nq, D)
            mK = rows_view(pk, bb, k0, hk, kb, ks, kh, nk, D)
            mV = rows_view(pv, bb, k0, hk, vb, vs, vh, nk, D)
            mdQ = rows_view(pdq, bb, q0, h, dqb, dqs, dqh, nq, D)
            gQ = cute.local_tile(mQ, (bM, D), (mb, 0))
            gdO = cute.local_tile(mdO, (bM, D), (mb, 0))
            gK = cute.local_tile(mK, (bN, D), (None, 0))
            gV = cute.local_tile(mV, (bN, D), (None, 0))
            cQ = cute.local_tile(cute.make_identity_tensor((nq, D)), (bM, D), (mb, 0))
            cK = cute.local_tile(cute.make_identity_tensor((nk, D)), (bN, D), (None, 0))

            sQ_l = smem_tile(bM, D)
            sK_l = smem_tile(bN, D)
            smem = cutlass.utils.SmemAllocator()
            st = smem.allocate(Storage)
            sQ = st.sQ.get_tensor(sQ_l)
            sdO = st.sdO.get_tensor(sQ_l)
            sK = st.sK.get_tensor(sK_l)
            sV = st.sV.get_tensor(sK_l)
            sKt = cute.composition(sK, cute.make_layout((D, bN), stride=(bN, 1)))

            g2s = g2s_copy(T, KB, NT)
            thr = g2s.get_slice(tidx)
            tQg = thr.partition_S(gQ)
            tQs = thr.partition_D(sQ)
            tdOg = thr.partition_S(gdO)
            tdOs = thr.partition_D(sdO)
            tQc = thr.partition_S(cQ)
            tKg = thr.partition_S(gK)
            tKs = thr.partition_D(sK)
            tVg = thr.partition_S(gV)
            tVs = thr.partition_D(sV)
            tKc = thr.partition_S(cK)

            # ---- MMA: the warps split the query rows; S, dP (bM × bN) and dQ (bM × D)
            mma = cute.make_tiled_mma(cute.nvgpu.warp.MmaF16BF16Op(T, Float32, (16, 8, 16)),
                                      cute.make_layout((NW, 1, 1)),
                                      permutation_mnk=(NW * 16, 16, 16))
            thm = mma.get_slice(tidx)
            rQ = thm.make_fragment_A(thm.partition_A(sQ))
            rdO = thm.make_fragment_A(thm.partition_A(sdO))
            rK = thm.make_fragment_B(thm.partition_B(sK))
            rV = thm.make_fragment_B(thm.partition_B(sV))
            rKt = thm.make_fragment_B(thm.partition_B(sKt))
            accdQ = cute.make_rmem_tensor(thm.partition_shape_C((bM, D)), Float32)
            accdQ.fill(0.0)
            ldsm_a = cute.make_tiled_copy_A(cute.make_copy_atom(
                cute.nvgpu.warp.LdMatrix8x8x16bOp(transpose=False, num_matrices=4), T), mma)
            ldsm_b = cute.make_tiled_copy_B(cute.make_copy_atom(
                cute.nvgpu.warp.LdMatrix8x8x16bOp(transpose=False, num_matrices=4), T), mma)
            ldsm_bt = cute.make_tiled_copy_B(cute.make_copy_atom(
                cute.nvgpu.warp.LdMatrix8x8x16bOp(transpose=True, num_matrices=4), T), mma)
            tha = ldsm_a.get_slice(tidx)
            thb = ldsm_b.get_slice(tidx)
            thbt = ldsm_bt.get_slice(tidx)
            tSsQ = tha.partition_S(sQ)
            tSrQ = tha.retile(rQ)
            tSsdO = tha.partition_S(sdO)
            tSrdO = tha.retile(rdO)
            tSsK = thb.partition_S(sK)
            tSrK = thb.retile(rK)
            tSsV = thb.partition_S(sV)
            tSrV = thb.retile(rV)
            tQsKt = thbt.partition_S(sKt)
            tQrKt = thbt.retile(rKt)
            tScS = mn_view(thm.partition_C(cute.make_identity_tensor((bM, bN))))

            # ---- per-row statistics of this thread's rows, score constants
            NR = cute.size(tScS, mode=[0])
            r_lse = cute.make_rmem_tensor(NR, Float32)
            r_delta = cute.make_rmem_tensor(NR, Float32)
            load_row_stats(r_lse, r_delta, tScS, plse, pdelta,
                           Int64(b) * lb + Int64(h) * lh + Int64(q0), m0, nq)
            slope2, cap_in, cap_out, s_mul = score_consts(pslope, b, h, slb, slh, scale,
                                                          softcap, flags)
            drop = None
            if cutlass.const_expr(knobs.dropout):
                _, hq, _ = cute.arch.grid_dim()
                drop = Dropout(dseed, doff, dthr, b, h, hq, sq, sk)
            sc = make_consts(slope2, cap_in, cap_out, s_mul, flags, drop)

            # ---- prologue: Q, dO and the last visible K / V tile
            if n_iters > 0:
                nb0 = n_end - 1
                copy_rows(g2s, tQg, tQs, tQc, nq)
                copy_rows(g2s, tdOg, tdOs, tQc, nq)
                copy_rows(g2s, tKg[None, None, None, nb0], tKs, tKc[None, None, None, nb0], nk)
                copy_rows(g2s, tVg[None, None, None, nb0], tVs, tKc[None, None, None, nb0], nk)
                cute.arch.cp_async_commit_group()

            for it in cutlass.range(n_iters):
                nbk = n_end - 1 - it
                c0 = nbk * bN
                cute.arch.cp_async_wait_group(0)
                cute.arch.sync_threads()
                # S = Q·Kᵀ, dP = dO·Vᵀ
                accS = cute.make_rmem_tensor(thm.partition_shape_C((bM, bN)), Float32)
                accS.fill(0.0)
                accdP = cute.make_rmem_tensor(thm.partition_shape_C((bM, bN)), Float32)
                accdP.fill(0.0)
                smem_gemm(mma, accS, ldsm_a, tSsQ, tSrQ, rQ, ldsm_b, tSsK, tSrK, rK)
                smem_gemm(mma, accdP, ldsm_a, tSsdO, tSrdO, rdO, ldsm_b, tSsV, tSrV, rV)
                cute.arch.sync_threads()
                # V of the next tile (down) while dS·K runs
                if it + 1 < n_iters:
                    copy_rows(g2s, tVg[None, None, None, nbk - 1], tVs,
                              tKc[None, None, None, nbk - 1], nk)
                    cute.arch.cp_async_commit_group()
                # P, dS in registers; dQ += dS·K
                masked = need_mask(m0, row_hi, c0, nk, off, left, right, bN)
                probs_and_grads(mn_view(accS), mn_view(accdP), tScS, m0, c0, r_lse, r_delta,
                                nk, off, left, right, masked, sc)
                rdS = cute.make_fragment_like(accdP, T)
                rdS.store(accdP.load().to(T))
                reg_a_gemm(mma, accdQ, a_view(rdS), ldsm_bt, tQsKt, tQrKt, rKt)
                cute.arch.sync_threads()
                # K of the next tile
                if it + 1 < n_iters:
                    copy_rows(g2s, tKg[None, None, None, nbk - 1], tKs,
                              tKc[None, None, None, nbk - 1], nk)
                    cute.arch.cp_async_commit_group()

            # ---- epilogue: dQ·scale in the input dtype, staged through sQ, 16-byte stores
            rdQ = cute.make_fragment_like(accdQ, T)
            rdQ.store((accdQ.load() * scale).to(T))
            cute.arch.cp_async_wait_group(0)
            cute.arch.sync_threads()
            sdQ = cute.make_tensor(sQ.iterator, sQ_l)
            r2s = cute.make_tiled_copy_C(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), T),
                                         mma)
            cute.copy(r2s, r2s.get_slice(tidx).retile(rdQ), r2s.get_slice(tidx).partition_D(sdQ))
            cute.arch.sync_threads()
            gdQ = cute.local_tile(mdQ, (bM, D), (mb, 0))
            s2g = cute.make_tiled_copy_tv(
                cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), T, num_bits_per_copy=128),
                cute.make_layout((NT // (KB // 8), KB // 8), stride=(KB // 8, 1)),
                cute.make_layout((1, 8)))
            ths = s2g.get_slice(tidx)
            tOs = ths.partition_S(sdQ)
            tOg = ths.partition_D(gdQ)
            tOr = cute.make_fragment_like(tOg, T)
            cute.copy(s2g, tOs, tOr)
            for r in cutlass.range_constexpr(cute.size(tOg, mode=[1])):
                if cute.elem_less(tQc[0, r, 0][0], nq):
                    cute.copy(s2g, tOr[None, r, None], tOg[None, r, None])

    @cute.jit
    def launch(pq: cute.Pointer, pk: cute.Pointer, pv: cute.Pointer, pdo: cute.Pointer,
               plse: cute.Pointer, pdelta: cute.Pointer, pdq: cute.Pointer, pcuq: cute.Pointer,
               pcuk: cute.Pointer, pslope: cute.Pointer, sq: Int32, sk: Int32, ratio: Int32,
               qb: Int64, qs: Int64, qh: Int64, kb: Int64, ks: Int64, kh: Int64, vb: Int64,
               vs: Int64, vh: Int64, gb: Int64, gs: Int64, gh: Int64, dqb: Int64, dqs: Int64,
               dqh: Int64, lb: Int64, lh: Int64, slb: Int64, slh: Int64, scale: Float32,
               softcap: Float32, left: Int32, right: Int32, flags: Int32, dseed: Int64, doff: Int64,
               dthr: Int64,
               mblocks: Int32, heads: Int32, batch: Int32, stream):
        kernel(pq, pk, pv, pdo, plse, pdelta, pdq, pcuq, pcuk, pslope, sq, sk, ratio, qb, qs, qh,
               kb, ks, kh, vb, vs, vh, gb, gs, gh, dqb, dqs, dqh, lb, lh, slb, slh, scale,
               softcap, left, right, flags, dseed, doff, dthr).launch(grid=[mblocks, heads, batch],
                                                   block=[NT, 1, 1], smem=dq_smem(D),
                                                   stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t, align):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=align)

    args = ([ptr(T, 16)] * 4 + [ptr(Float32, 4), ptr(Float32, 4), ptr(T, 16), ptr(Int32, 4),
                                ptr(Int32, 4), ptr(Float32, 4)]
            + [Int32(1), Int32(1), Int32(1)] + [Int64(8)] * 19
            + [Float32(1.0), Float32(0.0), Int32(-1), Int32(-1), Int32(0), Int64(0), Int64(0), Int64(0),
               Int32(1), Int32(1), Int32(1), make_fake_stream()])
    return launch, args
