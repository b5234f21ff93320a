"""Flash attention forward for Hopper (sm90a): ``wgmma`` tensor-core GEMMs, same math, masks,
parameters and results as ``flash_fwd`` (see its docstring).

One CTA of three warpgroups (384 threads) per (query tile of 128 rows, query head, batch entry):

* warpgroup 0, the producer (24 registers a thread): ``cp.async`` of the K and V tiles, the last
  key tile first, into two-stage rings whose full barriers complete when the copies land
  (``PipelineCpAsync``, arrive-on-completion); rows past the sequence are zero-filled;
* warpgroups 1 and 2, the consumers (240 registers), 64 query rows each: their Q rows by
  ``cp.async``, then per key tile S = Q·Kᵀ (``wgmma`` from shared memory, 128-byte swizzle,
  K-major) and O += P·V (``wgmma`` with P from registers, converted to the input dtype in
  place of the accumulator layout, V MN-major) issued together — S of tile j with P·V of
  tile j − 1 — so the online softmax of tile j (base-2 units, running max / sum, quad
  shuffles; masked only in tiles that cross a boundary) runs while P·V finishes; O is
  rescaled after it.  (Making the two consumers take turns issuing their GEMMs — FA3's
  "ping-pong" — measured slower here: 403–414 against 419–434 TFLOP/s at head dim 128.)

A ``fence.proxy.async`` after each wait makes the ``cp.async`` writes visible to wgmma.  The
output is written from the accumulators with predicated 4-byte stores, the lse by one thread per
row.  Tiles: :data:`~baracuda_dsl.ops.attention.specs.flash.SM90_TILES`.
"""

# no ``from __future__ import annotations``: ``cute.struct`` reads its annotations as types

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass import Float32, Int32, Int64
from cutlass.cute.nvgpu import warpgroup

from ....blocks.sm90.tma import smem_layout
from ..specs.flash import (ALIBI, SM90_THREADS, SM90_TILES, SOFTCAP,
                           FlashKnobs, sm90_smem)
from .flash_common import (LN2, TYPES, Dropout, SoftmaxParams, batch_index, copy_rows, g2s_copy,
                           query_tile_keys, quad_reduce, rows_view, score_consts, seq_bounds,
                           softmax_tile)


def wg_mn_view(t):
    """(rows, cols) view of a wgmma m64nN accumulator fragment ((2, 2, N/8), MMA_M, MMA_N):
    rows = (row half, MMA_M), cols = (column pair, column group, MMA_N)."""
    lay = cute.make_layout(t.layout.shape)
    s0, d0 = lay.shape[0], lay.stride[0]
    mn = cute.make_layout(((s0[1], lay.shape[1]), (s0[0], s0[2], lay.shape[2])),
                          stride=((d0[1], lay.stride[1]), (d0[0], d0[2], lay.stride[2])))
    return cute.make_tensor(t.iterator, cute.composition(t.layout, mn))


def c_to_a_layout(c, a):
    """The register layout of a wgmma A operand (mode-0 shape ``a``) holding the values of an
    accumulator laid out as ``c``: one k block of 16 = two column groups of 8."""
    return cute.make_layout(
        (a, c.shape[1], (c.shape[2], cute.size(c, mode=[0]) // cute.size(a))),
        stride=(c.stride[0], c.stride[1],
                (c.stride[2], cute.size(a, mode=[2]) * c.stride[0][2])))


def v_copy(T, d: int, threads: int):
    """16-byte ``cp.async`` tiled copy of a (d, rows) view of V (d contiguous)."""
    atom = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp(
        cache_mode=cute.nvgpu.LoadCacheMode.GLOBAL), T, num_bits_per_copy=128)
    td = 8 if d % 64 == 0 else 4
    return cute.make_tiled_copy_tv(atom, cute.make_layout((td, threads // td), stride=(1, td)),
                                   cute.make_layout((8, 1)))


@cute.jit
def load_v(cp, src, dst, crd, n):
    """cp.async one (d, rows) view of a V tile, rows at or past ``n`` zero-filled."""
    for i in cutlass.range_constexpr(cute.size(dst, mode=[1])):
        for j in cutlass.range_constexpr(cute.size(dst, mode=[2])):
            if cute.elem_less(crd[0, i, j][1], n):
                cute.copy(cp, src[None, i, j], dst[None, i, j])
            else:
                dst[None, i, j].fill(0)



PRODUCER_REGS = 24
CONSUMER_REGS = 240


def make_cp_async_pipeline(barriers, stages: int):
    """The ``PipelineCpAsync`` of one operand ring: 128 producer threads (their cp.async
    arrive on a stage's full barrier when the copies land), every one of the 256 consumer
    threads frees it."""
    return pipeline.PipelineCpAsync.create(
        barrier_storage=barriers, num_stages=stages,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 128),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 256))


def build(knobs: FlashKnobs):
    T = TYPES[knobs.dtype]
    D = knobs.head_dim
    bM, bN = SM90_TILES[D]
    NT = SM90_THREADS
    KB = 64 if D % 64 == 0 else 32
    ST = 2

    @cute.struct
    class Storage:
        sQ: cute.struct.Align[cute.struct.MemRange[T, bM * D], 1024]
        sK: cute.struct.Align[cute.struct.MemRange[T, bN * D * ST], 1024]
        sV: cute.struct.Align[cute.struct.MemRange[T, bN * D * ST], 1024]
        bars_k: cute.struct.MemRange[Int64, 2 * ST]
        bars_v: cute.struct.MemRange[Int64, 2 * ST]

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
            op_ = po + (bb * ob + Int64(q0) * os + Int64(h) * oh)
            mQ = rows_view(pq, bb, q0, h, qb, qs, qh, nq, D)
            mK = rows_view(pk, bb, k0, hk, kb, ks, kh, nk, D)
            vp = pv + (bb * vb + Int64(k0) * vs + Int64(hk) * vh)
            mVt = cute.make_tensor(vp.align(16), cute.make_layout(
                (D, nk), stride=(1, cute.assume(vs, divby=8))))
            gQ = cute.local_tile(mQ, (bM, D), (mb, 0))
            gK = cute.local_tile(mK, (bN, D), (None, 0))
            gVt = cute.local_tile(mVt, (D, bN), (0, None))
            cQ = cute.local_tile(cute.make_identity_tensor((nq, D)), (bM, D), (mb, 0))
            cK = cute.local_tile(cute.make_identity_tensor((nk, D)), (bN, D), (None, 0))
            cVt = cute.local_tile(cute.make_identity_tensor((D, nk)), (D, bN), (0, None))

            lq = smem_layout(T, True, bM, D, 1)
            lk = smem_layout(T, True, bN, D, ST)
            lv = smem_layout(T, False, D, bN, ST)
            smem = cutlass.utils.SmemAllocator()
            st = smem.allocate(Storage)
            sQ3 = st.sQ.get_tensor(lq.outer, swizzle=lq.inner)
            sK = st.sK.get_tensor(lk.outer, swizzle=lk.inner)
            sV = st.sV.get_tensor(lv.outer, swizzle=lv.inner)
            sQ = sQ3[None, None, 0]
            # K and V stage rings: the producer warpgroup's cp.async completes a stage's full
            # barrier (arrive-on-completion), the consumers' 8 warps free it
            pipe_k = make_cp_async_pipeline(st.bars_k.data_ptr(), ST)
            pipe_v = make_cp_async_pipeline(st.bars_v.data_ptr(), ST)
            warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
            wg = warp // 4

            if wg == 0:
                # ================= producer warpgroup: K and V tiles, last one first
                cute.arch.setmaxregister_decrease(PRODUCER_REGS)
                gcp = g2s_copy(T, KB, 128)
                thr = gcp.get_slice(tidx)
                tKg = thr.partition_S(gK)
                tKs = thr.partition_D(sK)
                tKc = thr.partition_S(cK)
                vcp = v_copy(T, D, 128)
                thv = vcp.get_slice(tidx)
                tVg = thv.partition_S(gVt)
                tVs = thv.partition_D(sV)
                tVc = thv.partition_S(cVt)
                ks_ = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, ST)
                vs_ = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, ST)
                for it in cutlass.range(n_iters):
                    nbk = n_end - 1 - it
                    pipe_k.producer_acquire(ks_)
                    copy_rows(gcp, tKg[None, None, None, nbk], tKs[None, None, None, ks_.index],
                           tKc[None, None, None, nbk], nk)
                    pipe_k.producer_commit(ks_)
                    ks_.advance()
                    pipe_v.producer_acquire(vs_)
                    load_v(vcp, tVg[None, None, None, nbk], tVs[None, None, None, vs_.index],
                           tVc[None, None, None, nbk], nk)
                    pipe_v.producer_commit(vs_)
                    vs_.advance()
            else:
                # ================= consumer warpgroups: 64 query rows each
                cute.arch.setmaxregister_increase(CONSUMER_REGS)
                ctid = Int32(tidx) - 128
                wgc = wg - 1
                # this warpgroup's Q rows (cp.async, then a barrier over its 128 threads)
                gcq = g2s_copy(T, KB, 128)
                thq_cp = gcq.get_slice(ctid % 128)
                tQg = thq_cp.partition_S(cute.local_tile(gQ, (64, D), (wgc, 0)))
                tQs = thq_cp.partition_D(cute.local_tile(sQ, (64, D), (wgc, 0)))
                tQc = thq_cp.partition_S(cute.local_tile(cQ, (64, D), (wgc, 0)))
                for r in cutlass.range_constexpr(cute.size(tQs, mode=[1])):
                    if cute.elem_less(tQc[0, r, 0][0], nq):
                        cute.copy(gcq, tQg[None, r, None], tQs[None, r, None])
                    else:
                        tQs[None, r, None].fill(0)
                cute.arch.cp_async_commit_group()
                cute.arch.cp_async_wait_group(0)
                cute.arch.fence_view_async_shared()
                cute.arch.barrier(barrier_id=1 + wgc, number_of_threads=128)

                mma_qk = sm90_utils.make_trivial_tiled_mma(
                    T, T, warpgroup.OperandMajorMode.K, warpgroup.OperandMajorMode.K, Float32,
                    (2, 1, 1), tiler_mn=(64, bN))
                mma_pv = sm90_utils.make_trivial_tiled_mma(
                    T, T, warpgroup.OperandMajorMode.K, warpgroup.OperandMajorMode.MN, Float32,
                    (2, 1, 1), tiler_mn=(64, D), a_source=warpgroup.OperandSource.RMEM)
                thq = mma_qk.get_slice(ctid)
                thp = mma_pv.get_slice(ctid)
                rQ = mma_qk.make_fragment_A(thq.partition_A(sQ3))
                rK = mma_qk.make_fragment_B(thq.partition_B(sK))
                rV = mma_pv.make_fragment_B(thp.partition_B(sV))
                accO = cute.make_rmem_tensor(thp.partition_shape_C((bM, D)), Float32)
                accO.fill(0.0)
                tScS = wg_mn_view(thq.partition_C(cute.make_identity_tensor((bM, bN))))
                tOcO = wg_mn_view(thp.partition_C(cute.make_identity_tensor((bM, D))))
                NKQ = cute.size(rQ, mode=[2])
                NR = cute.size(tScS, mode=[0])
                row_max = cute.make_rmem_tensor(NR, Float32)
                row_sum = cute.make_rmem_tensor(NR, Float32)
                row_max.fill(-Float32.inf)
                row_sum.fill(0.0)

                slope2, cap_in, cap_out, s_mul = score_consts(pslope, b, h, slb, slh, scale,
                                                              softcap, flags)

                alpha = cute.make_rmem_tensor(NR, Float32)
                accS = cute.make_rmem_tensor(thq.partition_shape_C((bM, bN)), Float32)
                rP = cute.make_rmem_tensor(
                    c_to_a_layout(accS.layout, mma_pv.tv_layout_A.shape[1]), T)
                rP_acc = cute.make_tensor(rP.iterator, accS.layout)
                S = wg_mn_view(accS)
                O = wg_mn_view(accO)
                NKV = cute.size(rP, mode=[2])
                drop = None
                if cutlass.const_expr(knobs.dropout):
                    _, hq, _ = cute.arch.grid_dim()
                    drop = Dropout(dseed, doff, dthr, b, h, hq, sq, sk)
                sm = SoftmaxParams(m0, nk, off, left, right, row_hi, s_mul, cap_in, cap_out,
                                   slope2, (flags & SOFTCAP) != 0, (flags & ALIBI) != 0, drop)
                kst = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, ST)
                vst = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, ST)

                # ---- first key tile: S, softmax, P
                if n_iters > 0:
                    pipe_k.consumer_wait(kst)
                    cute.arch.fence_view_async_shared()
                    warpgroup.fence()
                    for kk in cutlass.range_constexpr(NKQ):
                        mma_qk.set(warpgroup.Field.ACCUMULATE, kk != 0)
                        cute.gemm(mma_qk, accS, rQ[None, None, kk, 0],
                                  rK[None, None, kk, kst.index], accS)
                    warpgroup.commit_group()
                    warpgroup.wait_group(0)
                    pipe_k.consumer_release(kst)
                    kst.advance()
                    softmax_tile(S, tScS, row_max, row_sum, alpha, (n_end - 1) * bN, sm, bN)
                    rP_acc.store(accS.load().to(T))

                # ---- steady state: S of tile it and O += P·V of tile it − 1 in flight
                # together; the softmax of tile it runs while P·V finishes
                for it in cutlass.range(1, n_iters):
                    nbk = n_end - 1 - it
                    pipe_k.consumer_wait(kst)
                    cute.arch.fence_view_async_shared()
                    warpgroup.fence()
                    for kk in cutlass.range_constexpr(NKQ):
                        mma_qk.set(warpgroup.Field.ACCUMULATE, kk != 0)
                        cute.gemm(mma_qk, accS, rQ[None, None, kk, 0],
                                  rK[None, None, kk, kst.index], accS)
                    warpgroup.commit_group()
                    pipe_v.consumer_wait(vst)
                    cute.arch.fence_view_async_shared()
                    mma_pv.set(warpgroup.Field.ACCUMULATE, True)
                    for kk in cutlass.range_constexpr(NKV):
                        cute.gemm(mma_pv, accO, rP[None, None, kk],
                                  rV[None, None, kk, vst.index], accO)
                    warpgroup.commit_group()
                    warpgroup.wait_group(1)
                    pipe_k.consumer_release(kst)
                    kst.advance()
                    softmax_tile(S, tScS, row_max, row_sum, alpha, nbk * bN, sm, bN)
                    warpgroup.wait_group(0)
                    pipe_v.consumer_release(vst)
                    vst.advance()
                    for r in cutlass.range_constexpr(NR):
                        O[r, None] = O[r, None].load() * alpha[r]
                    rP_acc.store(accS.load().to(T))

                # ---- the last P·V
                if n_iters > 0:
                    pipe_v.consumer_wait(vst)
                    cute.arch.fence_view_async_shared()
                    warpgroup.fence()
                    mma_pv.set(warpgroup.Field.ACCUMULATE, True)
                    for kk in cutlass.range_constexpr(NKV):
                        cute.gemm(mma_pv, accO, rP[None, None, kk],
                                  rV[None, None, kk, vst.index], accO)
                    warpgroup.commit_group()
                    warpgroup.wait_group(0)
                    pipe_v.consumer_release(vst)

                # ---- epilogue: normalise, lse, predicated stores from the accumulators
                O = wg_mn_view(accO)
                lane = Int32(tidx) % 4
                for r in cutlass.range_constexpr(NR):
                    tot = quad_reduce(row_sum[r], lambda x, y: x + y)
                    inv = Float32(0.0)
                    lse = -Float32.inf
                    if tot > Float32(0.0):
                        inv = cute.arch.rcp_approx(tot)
                        lse = (row_max[r] + cute.math.log2(tot, fastmath=True)) * LN2
                    row = m0 + tOcO[r, 0][0]
                    if cute.elem_less(row, nq):
                        if lane == 0:
                            gl = cute.make_tensor(plse + (Int64(b) * lb + Int64(h) * lh
                                                          + Int64(q0 + row)), cute.make_layout(1))
                            gl[0] = lse
                        orow = op_ + Int64(row) * os
                        for c in cutlass.range_constexpr(cute.size(O, mode=[1]) // 2):
                            col = tOcO[r, 2 * c][1]
                            pair = cute.make_rmem_tensor(cute.make_layout(2), T)
                            pair[0] = T(O[r, 2 * c] * inv)
                            pair[1] = T(O[r, 2 * c + 1] * inv)
                            dst = cute.make_tensor((orow + Int64(col)).align(4), cute.make_layout(2))
                            cute.autovec_copy(pair, dst)

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
                             smem=sm90_smem(D), min_blocks_per_mp=1, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t, align):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=align)

    args = ([ptr(T, 16)] * 4 + [ptr(Float32, 4), ptr(Int32, 4), ptr(Int32, 4), ptr(Float32, 4)]
            + [Int32(1), Int32(1), Int32(1)] + [Int64(8)] * 16
            + [Float32(1.0), Float32(0.0), Int32(-1), Int32(-1), Int32(0), Int64(0), Int64(0), Int64(0),
               Int32(1), Int32(1), Int32(1), make_fake_stream()])
    return launch, args
