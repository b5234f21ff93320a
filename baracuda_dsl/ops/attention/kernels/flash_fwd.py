"""Flash attention forward, ``mma.sync`` (sm80 / sm89 / sm90a):

    o[i] = Σ_j p_ij v[j] / Σ_j p_ij,  p_ij = exp(s_ij − m_i),  lse[i] = m_i + log Σ_j p_ij
    s_ij = scale·q_i·k_j, then softcap c·tanh(s/c), minus slope·|i + off − j| (ALiBi), and −∞
    outside the window  i + off − left <= j <= i + off + right  (negative bound = unbounded)

One CTA (4 warps) per (query tile of bM rows, query head h, batch entry b); kv head
h // ratio.  Per key tile (bN rows, walked from the last one down, so the tiles that need the
mask come first): S = Q·Kᵀ from ``ldmatrix`` fragments into ``mma.sync`` m16n8k16 (f32
accumulators), the scores turned into base-2 units in place (t = s·log2 e), masked only in the
tiles that cross a boundary (a uniform branch), the running max / sum per row updated (quad
shuffles), O rescaled and O += P·V (P converted to the input dtype in registers, V read
transposed with ``ldmatrix.trans``).  V of tile j loads (``cp.async``) while S of tile j runs;
K of tile j − 1 while the softmax and P·V of tile j run.  Rows past the sequence are zero-filled
in shared memory.  A row that sees no key gets o = 0 and lse = −∞.  The output is staged through
the Q buffer and stored with 16-byte vectors; the lse (f32, natural log) by one thread per row.

Parameters: see ``specs/flash.py`` (element strides; the batch stride is ignored for
variable-length batches, whose row offsets come from cu_q / cu_k).  Caller contract
(``FlashAttentionPlan``): pointers 16-byte aligned, every q / k / v / o stride a multiple of 8
elements, unit stride along the head dim.
"""

# no ``from __future__ import annotations``: ``cute.struct`` reads its annotations as types


import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64

from ..specs.flash import ALIBI, FWD_THREADS, FWD_TILES, SOFTCAP, FlashKnobs, fwd_smem
from .flash_common import (LN2, TYPES, Dropout, SoftmaxParams, a_view, atom_width, batch_index, g2s_copy,
                           mn_view, query_tile_keys, quad_reduce, rows_view, score_consts,
                           seq_bounds, smem_tile, softmax_tile)

def build(knobs: FlashKnobs):
    T = TYPES[knobs.dtype]
    D = knobs.head_dim
    bM, bN = FWD_TILES[D]
    NT = FWD_THREADS
    KB = atom_width(D)

    @cute.struct
    class Storage:
        sQ: cute.struct.Align[cute.struct.MemRange[T, bM * D], 1024]
        sK: cute.struct.Align[cute.struct.MemRange[T, bN * D], 1024]
        sV: cute.struct.Align[cute.struct.MemRange[T, bN * D], 1024]

    @cute.kernel
    def kernel(pq: cute.Pointer, pk: cute.Pointer, pv: cute.Pointer, po: cute.Pointer,
               plse: cute.Pointer, pcuq: cute.Pointer, pcuk: cute.Pointer,
               pslope: cute.Pointer, sq: Int32, sk: Int32, ratio: Int32, qb: Int64, qs: Int64,
               qh: Int64, kb: Int64, ks: Int64, kh: Int64, vb: Int64, vs: Int64, vh: Int64,
               ob: Int64, os: Int64, oh: Int64, lb: Int64, lh: Int64, slb: Int64, slh: Int64,
               scale: Float32, softcap: Float32, left: Int32, right: Int32, flags: Int32, dseed: Int64, doff: Int64, dthr: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        mb, h, b = cute.arch.block_idx()
        q0, nq = seq_bounds(pcuq, b, flags, sq)
        k0, nk = seq_bounds(pcuk, b, flags, sk)
        m0 = Int32(mb) * bM
        if m0 < nq:
            bb = batch_index(b, flags)
            hk = Int32(h) // ratio
            off, row_hi, n_start, n_end, n_iters = query_tile_keys(m0, nq, nk, flags, left,
                                                                   right, bM, bN)
            # ---- operand views (element strides are multiples of 8: 16-byte vectors)
            mQ = rows_view(pq, bb, q0, h, qb, qs, qh, nq, D)
            mK = rows_view(pk, bb, k0, hk, kb, ks, kh, nk, D)
            mV = rows_view(pv, bb, k0, hk, vb, vs, vh, nk, D)
            mO = rows_view(po, bb, q0, h, ob, os, oh, nq, D)
            gQ = cute.local_tile(mQ, (bM, D), (mb, 0))
            gK = cute.local_tile(mK, (bN, D), (None, 0))
            gV = cute.local_tile(mV, (bN, D), (None, 0))
            cQ = cute.local_tile(cute.make_identity_tensor((nq, D)), (bM, D), (mb, 0))
            cK = cute.local_tile(cute.make_identity_tensor((nk, D)), (bN, D), (None, 0))

            sQ_l = smem_tile(bM, D)
            sKV_l = smem_tile(bN, D)
            smem = cutlass.utils.SmemAllocator()
            st = smem.allocate(Storage)
            sQ = st.sQ.get_tensor(sQ_l)
            sK = st.sK.get_tensor(sKV_l)
            sV = st.sV.get_tensor(sKV_l)
            sVt = cute.composition(sV, cute.make_layout((D, bN), stride=(bN, 1)))

            g2s = g2s_copy(T, KB, NT)
            thr = g2s.get_slice(tidx)
            tQg = thr.partition_S(gQ)
            tQs = thr.partition_D(sQ)
            tQc = thr.partition_S(cQ)
            tKg = thr.partition_S(gK)
            tKs = thr.partition_D(sK)
            tVg = thr.partition_S(gV)
            tVs = thr.partition_D(sV)
            tKc = thr.partition_S(cK)

            # ---- MMA: 4 warps along the query rows
            mma = cute.make_tiled_mma(cute.nvgpu.warp.MmaF16BF16Op(T, Float32, (16, 8, 16)),
                                      cute.make_layout((NT // 32, 1, 1)),
                                      permutation_mnk=(NT // 32 * 16, 16, 16))
            thm = mma.get_slice(tidx)
            rQ = thm.make_fragment_A(thm.partition_A(sQ))
            rK = thm.make_fragment_B(thm.partition_B(sK))
            rVt = thm.make_fragment_B(thm.partition_B(sVt))
            accO = cute.make_rmem_tensor(thm.partition_shape_C((bM, D)), Float32)
            accO.fill(0.0)
            s2rQ = cute.make_tiled_copy_A(cute.make_copy_atom(
                cute.nvgpu.warp.LdMatrix8x8x16bOp(transpose=False, num_matrices=4), T), mma)
            s2rK = cute.make_tiled_copy_B(cute.make_copy_atom(
                cute.nvgpu.warp.LdMatrix8x8x16bOp(transpose=False, num_matrices=4), T), mma)
            s2rV = cute.make_tiled_copy_B(cute.make_copy_atom(
                cute.nvgpu.warp.LdMatrix8x8x16bOp(transpose=True, num_matrices=4), T), mma)
            tSsQ = s2rQ.get_slice(tidx).partition_S(sQ)
            tSrQ = s2rQ.get_slice(tidx).retile(rQ)
            tSsK = s2rK.get_slice(tidx).partition_S(sK)
            tSrK = s2rK.get_slice(tidx).retile(rK)
            tOsV = s2rV.get_slice(tidx).partition_S(sVt)
            tOrV = s2rV.get_slice(tidx).retile(rVt)
            cS = cute.make_identity_tensor((bM, bN))
            tScS = mn_view(thm.partition_C(cS))

            # rows of this thread's accumulators: running max (base 2) and partial sums
            NR = cute.size(mn_view(accO), mode=[0])
            row_max = cute.make_rmem_tensor(NR, Float32)
            row_sum = cute.make_rmem_tensor(NR, Float32)
            row_max.fill(-Float32.inf)
            row_sum.fill(0.0)

            slope2, cap_in, cap_out, s_mul = score_consts(pslope, b, h, slb, slh, scale, softcap,
                                                          flags)
            drop = None
            if cutlass.const_expr(knobs.dropout):
                _, hq, _ = cute.arch.grid_dim()
                drop = Dropout(dseed, doff, dthr, b, h, hq, sq, sk)
            sm = SoftmaxParams(m0, nk, off, left, right, row_hi, s_mul, cap_in, cap_out, slope2,
                               (flags & SOFTCAP) != 0, (flags & ALIBI) != 0, drop)
            alpha = cute.make_rmem_tensor(NR, Float32)

            # ---- prologue: Q and the first K tile (rows past the sequence zero-filled)
            if n_iters > 0:
                for r in cutlass.range_constexpr(cute.size(tQs, mode=[1])):
                    if cute.elem_less(tQc[0, r, 0][0], nq):
                        cute.copy(g2s, tQg[None, r, None], tQs[None, r, None])
                    else:
                        tQs[None, r, None].fill(0)
                nb0 = n_end - 1
                for r in cutlass.range_constexpr(cute.size(tKs, mode=[1])):
                    if cute.elem_less(tKc[0, r, 0, nb0][0], nk):
                        cute.copy(g2s, tKg[None, r, None, nb0], tKs[None, r, None])
                    else:
                        tKs[None, r, None].fill(0)
                cute.arch.cp_async_commit_group()

            for it in cutlass.range(n_iters):
                nbk = n_end - 1 - it
                c0 = nbk * bN
                accS = cute.make_rmem_tensor(thm.partition_shape_C((bM, bN)), Float32)
                accS.fill(0.0)
                cute.arch.cp_async_wait_group(0)
                cute.arch.sync_threads()
                # V of this tile
                for r in cutlass.range_constexpr(cute.size(tVs, mode=[1])):
                    if cute.elem_less(tKc[0, r, 0, nbk][0], nk):
                        cute.copy(g2s, tVg[None, r, None, nbk], tVs[None, r, None])
                    else:
                        tVs[None, r, None].fill(0)
                cute.arch.cp_async_commit_group()
                # S = Q·Kᵀ
                NKS = cute.size(tSsQ, mode=[2])
                cute.copy(s2rQ, tSsQ[None, None, 0], tSrQ[None, None, 0])
                cute.copy(s2rK, tSsK[None, None, 0], tSrK[None, None, 0])
                for kk in cutlass.range_constexpr(NKS):
                    kn = (kk + 1) % NKS
                    cute.copy(s2rQ, tSsQ[None, None, kn], tSrQ[None, None, kn])
                    cute.copy(s2rK, tSsK[None, None, kn], tSrK[None, None, kn])
                    cute.gemm(mma, accS, rQ[None, None, kk], rK[None, None, kk], accS)
                cute.arch.cp_async_wait_group(0)
                cute.arch.sync_threads()
                # K of the next tile (down), while the softmax and P·V run
                if it + 1 < n_iters:
                    nbn = nbk - 1
                    for r in cutlass.range_constexpr(cute.size(tKs, mode=[1])):
                        if cute.elem_less(tKc[0, r, 0, nbn][0], nk):
                            cute.copy(g2s, tKg[None, r, None, nbn], tKs[None, r, None])
                        else:
                            tKs[None, r, None].fill(0)
                    cute.arch.cp_async_commit_group()

                # ---- scores in base-2 units, masks, online softmax; O rescaled
                softmax_tile(mn_view(accS), tScS, row_max, row_sum, alpha, c0, sm, bN)
                O = mn_view(accO)
                for r in cutlass.range_constexpr(NR):
                    O[r, None] = O[r, None].load() * alpha[r]

                # ---- O += P·V
                rP = cute.make_fragment_like(accS, T)
                rP.store(accS.load().to(T))
                tOrP = a_view(rP)
                NKV = cute.size(tOrP, mode=[2])
                cute.copy(s2rV, tOsV[None, None, 0], tOrV[None, None, 0])
                for kk in cutlass.range_constexpr(NKV):
                    kn = (kk + 1) % NKV
                    cute.copy(s2rV, tOsV[None, None, kn], tOrV[None, None, kn])
                    cute.gemm(mma, accO, tOrP[None, None, kk], rVt[None, None, kk], accO)

            # ---- epilogue: normalise, lse, stage through sQ, 16-byte stores
            O = mn_view(accO)
            lane = Int32(tidx) % 4
            for r in cutlass.range_constexpr(NR):
                tot = quad_reduce(row_sum[r], lambda x, y: x + y)
                inv = Float32(0.0)
                lse = -Float32.inf
                if tot > Float32(0.0):
                    inv = cute.arch.rcp_approx(tot)
                    m = row_max[r]
                    lse = (m + cute.math.log2(tot, fastmath=True)) * LN2
                O[r, None] = O[r, None].load() * inv
                row = m0 + tScS[r, 0][0]
                if lane == 0:
                    if cute.elem_less(row, nq):
                        gl = cute.make_tensor(plse + (Int64(b) * lb + Int64(h) * lh
                                                      + Int64(q0 + row)), cute.make_layout(1))
                        gl[0] = lse
            rO = cute.make_fragment_like(accO, T)
            rO.store(accO.load().to(T))
            cute.arch.sync_threads()
            sO = cute.make_tensor(sQ.iterator, sQ_l)
            r2s = cute.make_tiled_copy_C(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), T),
                                         mma)
            cute.copy(r2s, r2s.get_slice(tidx).retile(rO), r2s.get_slice(tidx).partition_D(sO))
            cute.arch.sync_threads()
            gO = cute.local_tile(mO, (bM, D), (mb, 0))
            s2g = cute.make_tiled_copy_tv(
                cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), T, num_bits_per_copy=128),
                cute.make_layout((NT // (KB // 8), KB // 8), stride=(KB // 8, 1)),
                cute.make_layout((1, 8)))
            ths = s2g.get_slice(tidx)
            tOs = ths.partition_S(sO)
            tOg = ths.partition_D(gO)
            tOr = cute.make_fragment_like(tOg, T)
            cute.copy(s2g, tOs, tOr)
            for r in cutlass.range_constexpr(cute.size(tOg, mode=[1])):
                if cute.elem_less(tQc[0, r, 0][0], nq):
                    cute.copy(s2g, tOr[None, r, None], tOg[None, r, None])

    @cute.jit
    def launch(pq: cute.Pointer, pk: cute.Pointer, pv: cute.Pointer, po: cute.Pointer,
               plse: cute.Pointer, pcuq: cute.Pointer, pcuk: cute.Pointer,
               pslope: cute.Pointer, sq: Int32, sk: Int32, ratio: Int32, qb: Int64, qs: Int64,
               qh: Int64, kb: Int64, ks: Int64, kh: Int64, vb: Int64, vs: Int64, vh: Int64,
               ob: Int64, os: Int64, oh: Int64, lb: Int64, lh: Int64, slb: Int64, slh: Int64,
               scale: Float32, softcap: Float32, left: Int32, right: Int32, flags: Int32, dseed: Int64, doff: Int64,
               dthr: Int64,
               mblocks: Int32, heads: Int32, batch: Int32, stream):
        kernel(pq, pk, pv, po, plse, pcuq, pcuk, pslope, sq, sk, ratio, qb, qs, qh, kb, ks, kh,
               vb, vs, vh, ob, os, oh, lb, lh, slb, slh, scale, softcap, left, right,
               flags, dseed, doff, dthr).launch(grid=[mblocks, heads, batch], block=[NT, 1, 1],
                             smem=fwd_smem(D), stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t, align):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=align)

    args = ([ptr(T, 16)] * 4 + [ptr(Float32, 4), ptr(Int32, 4), ptr(Int32, 4), ptr(Float32, 4)]
            + [Int32(1), Int32(1), Int32(1)] + [Int64(8)] * 16
            + [Float32(1.0), Float32(0.0), Int32(-1), Int32(-1), Int32(0), Int64(0), Int64(0), Int64(0),
               Int32(1), Int32(1), Int32(1), make_fake_stream()])
    return launch, args
