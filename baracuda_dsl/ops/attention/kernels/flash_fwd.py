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

import math

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64

from ..specs.flash import (ALIBI, BOTTOM_RIGHT, FWD_THREADS, FWD_TILES, SOFTCAP, VARLEN,
                           FlashKnobs, fwd_smem)

TYPES = {"f16": cutlass.Float16, "bf16": cutlass.BFloat16}
LOG2E = math.log2(math.e)
LN2 = math.log(2.0)


def atom_width(d: int) -> int:
    """Columns of the shared-memory swizzle atom of a (rows, d) 16-bit tile."""
    return 64 if d % 64 == 0 else 32


def smem_tile(rows: int, d: int):
    """Swizzled (rows, d) layout of a 16-bit tile (atoms of 8 × 64 | 32): bank-conflict-free
    ``ldmatrix`` reads and 16-byte ``cp.async`` writes (inside a kernel trace)."""
    kb = atom_width(d)
    atom = cute.make_composed_layout(cute.make_swizzle(3 if kb == 64 else 2, 3, 3), 0,
                                     cute.make_layout((8, kb), stride=(kb, 1)))
    return cute.tile_to_shape(atom, (rows, d), (0, 1))


def g2s_copy(T, kb: int, threads: int):
    """16-byte ``cp.async`` tiled copy of a (rows, d) tile: kb / 8 threads along a row."""
    atom = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp(
        cache_mode=cute.nvgpu.LoadCacheMode.GLOBAL), T, num_bits_per_copy=128)
    tk = kb // 8
    return cute.make_tiled_copy_tv(atom, cute.make_layout((threads // tk, tk), stride=(tk, 1)),
                                   cute.make_layout((1, 8)))


def mn_view(t):
    """(rows, cols) view of an m16n8 accumulator fragment ((2, 2), MMA_M, MMA_N): rows =
    (row half, MMA_M), cols = (column pair, MMA_N)."""
    lay = cute.make_layout(t.layout.shape)
    mn = cute.make_layout(((lay.shape[0][1], lay.shape[1]), (lay.shape[0][0], lay.shape[2])),
                          stride=((lay.stride[0][1], lay.stride[1]),
                                  (lay.stride[0][0], lay.stride[2])))
    return cute.make_tensor(t.iterator, cute.composition(t.layout, mn))


def a_view(p):
    """The A-operand view ((2, 2, 2), MMA_M, MMA_N / 2) of an m16n8 accumulator-shaped fragment
    (P as the A operand of O += P·V: two n8 accumulator tiles make one k16 A tile)."""
    d = cute.logical_divide(p.layout, (None, None, 2))
    lay = cute.make_layout(((d.shape[0], d.shape[2][0]), d.shape[1], d.shape[2][1]),
                           stride=((d.stride[0], d.stride[2][0]), d.stride[1], d.stride[2][1]))
    return cute.make_tensor(p.iterator, lay)


def quad_reduce(v, op):
    """Reduce over the 4 threads of a quad (they hold one row of an m16n8 fragment)."""
    v = op(v, cute.arch.shuffle_sync_bfly(v, offset=2))
    return op(v, cute.arch.shuffle_sync_bfly(v, offset=1))


@cute.jit
def seq_bounds(pcu: cute.Pointer, b: Int32, flags: Int32, n_fixed: Int32):
    """(first row, rows) of batch entry b: from cu_seqlens when VARLEN, else (0, n_fixed)."""
    start = Int32(0)
    n = n_fixed
    if (flags & VARLEN) != 0:
        cu = cute.make_tensor(pcu + b, cute.make_layout(2))
        start = cu[0]
        n = cu[1] - cu[0]
    return start, n


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
               scale: Float32, softcap: Float32, left: Int32, right: Int32, flags: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        mb, h, b = cute.arch.block_idx()
        q0, nq = seq_bounds(pcuq, b, flags, sq)
        k0, nk = seq_bounds(pcuk, b, flags, sk)
        m0 = Int32(mb) * bM
        if m0 < nq:
            bb = Int64(b)
            if (flags & VARLEN) != 0:
                bb = Int64(0)
            hk = Int32(h) // ratio
            off = Int32(0)
            if (flags & BOTTOM_RIGHT) != 0:
                off = nk - nq
            # ---- the key-tile range this query tile can see
            row_hi = cutlass.min(m0 + bM, nq) - 1
            n_end = (nk + bN - 1) // bN
            if right >= 0:
                n_end = cutlass.min(n_end, cutlass.max(row_hi + off + right + bN, 0) // bN)
            n_start = Int32(0)
            if left >= 0:
                n_start = cutlass.max(m0 + off - left, 0) // bN
            n_iters = cutlass.max(n_end - n_start, 0)

            # ---- operand views (element strides are multiples of 8: 16-byte vectors)
            qs8 = cute.assume(qs, divby=8)
            ks8 = cute.assume(ks, divby=8)
            vs8 = cute.assume(vs, divby=8)
            os8 = cute.assume(os, divby=8)
            qp = pq + (bb * qb + Int64(q0) * qs + Int64(h) * qh)
            kp = pk + (bb * kb + Int64(k0) * ks + Int64(hk) * kh)
            vp = pv + (bb * vb + Int64(k0) * vs + Int64(hk) * vh)
            op_ = po + (bb * ob + Int64(q0) * os + Int64(h) * oh)
            mQ = cute.make_tensor(qp.align(16), cute.make_layout((nq, D), stride=(qs8, 1)))
            mK = cute.make_tensor(kp.align(16), cute.make_layout((nk, D), stride=(ks8, 1)))
            mV = cute.make_tensor(vp.align(16), cute.make_layout((nk, D), stride=(vs8, 1)))
            mO = cute.make_tensor(op_.align(16), cute.make_layout((nq, D), stride=(os8, 1)))
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

            # ALiBi slope (base 2), softcap constants
            slope2 = Float32(0.0)
            if (flags & ALIBI) != 0:
                sl = cute.make_tensor(pslope + (Int64(b) * slb + Int64(h) * slh),
                                      cute.make_layout(1))
                slope2 = Float32(sl[0]) * LOG2E
            use_cap = (flags & SOFTCAP) != 0
            s_mul = scale * LOG2E
            cap_in = Float32(0.0)
            cap_out = Float32(0.0)
            if use_cap:
                cap_in = scale / softcap
                cap_out = softcap * LOG2E
            use_alibi = (flags & ALIBI) != 0

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

                # ---- scores in base-2 units, masks, online softmax
                S = mn_view(accS)
                O = mn_view(accO)
                c1 = c0 + bN - 1
                need_mask = cute.elem_less(nk - 1, c1)
                if right >= 0:
                    need_mask = need_mask | cute.elem_less(m0 + off + right, c1)
                if left >= 0:
                    need_mask = need_mask | cute.elem_less(c0, row_hi + off - left)
                for r in cutlass.range_constexpr(cute.size(S, mode=[0])):
                    row = m0 + tScS[r, 0][0]
                    for c in cutlass.range_constexpr(cute.size(S, mode=[1])):
                        t = S[r, c]
                        if use_cap:
                            t = cap_out * cute.math.tanh(t * cap_in, fastmath=True)
                        else:
                            t = t * s_mul
                        if use_alibi:
                            dist = row + off - (c0 + tScS[0, c][1])
                            dist = cutlass.max(dist, -dist)
                            t = t - slope2 * Float32(dist)
                        S[r, c] = t
                    if need_mask:
                        lo = row + off - left
                        hi = row + off + right
                        for c in cutlass.range_constexpr(cute.size(S, mode=[1])):
                            col = c0 + tScS[0, c][1]
                            keep = cute.elem_less(col, nk)
                            if right >= 0:
                                keep = keep & (col <= hi)
                            if left >= 0:
                                keep = keep & (col >= lo)
                            S[r, c] = cutlass.select_(keep, S[r, c], -Float32.inf)
                    srow = S[r, None].load()
                    mx = quad_reduce(srow.reduce(cute.ReductionOp.MAX, -Float32.inf, 0),
                                     cute.arch.fmax)
                    mnew = cute.arch.fmax(row_max[r], mx)
                    muse = mnew
                    if mnew == -Float32.inf:
                        muse = Float32(0.0)
                    alpha = cute.math.exp2(row_max[r] - muse, fastmath=True)
                    p = cute.math.exp2(srow - muse, fastmath=True)
                    row_sum[r] = row_sum[r] * alpha + p.reduce(cute.ReductionOp.ADD,
                                                               Float32(0.0), 0)
                    row_max[r] = mnew
                    O[r, None] = O[r, None].load() * alpha
                    S[r, None] = p

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
               scale: Float32, softcap: Float32, left: Int32, right: Int32, flags: Int32,
               mblocks: Int32, heads: Int32, batch: Int32, stream):
        kernel(pq, pk, pv, po, plse, pcuq, pcuk, pslope, sq, sk, ratio, qb, qs, qh, kb, ks, kh,
               vb, vs, vh, ob, os, oh, lb, lh, slb, slh, scale, softcap, left, right,
               flags).launch(grid=[mblocks, heads, batch], block=[NT, 1, 1],
                             smem=fwd_smem(D), stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t, align):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=align)

    args = ([ptr(T, 16)] * 4 + [ptr(Float32, 4), ptr(Int32, 4), ptr(Int32, 4), ptr(Float32, 4)]
            + [Int32(1), Int32(1), Int32(1)] + [Int64(8)] * 16
            + [Float32(1.0), Float32(0.0), Int32(-1), Int32(-1), Int32(0),
               Int32(1), Int32(1), Int32(1), make_fake_stream()])
    return launch, args
