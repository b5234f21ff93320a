"""Tensor-core GEMM (f16 / bf16 inputs, f32 accumulate) with Ampere ``mma.sync`` m16n8k16:

    c[i, j] = act(alpha · Σ_p a[i, p] · b[p, j] + beta · c[i, j] + bias[j])

``a`` is (m, k) with unit stride along k (``a_major=k``, row stride ``lda``) or along m
(``a_major=m``, column stride ``lda``); ``b`` is (k, n) with unit stride along k (``b_major=k``,
column stride ``ldb``) or along n (``b_major=n``, row stride ``ldb``); ``c`` has arbitrary
strides (csm, csn); ``bias`` (n,) stride ``bs``, read when ``has_bias``; c is read only when
beta != 0.  Runs on sm80, sm89 and sm90a (on Hopper it is the pre-wgmma path: expect roughly
half to two thirds of cuBLAS there; the wgmma/TMA kernel of issue 7 replaces it on sm90a).

Batch index ``z = block_idx.y`` (grid (tiles, batches, 1)): entry z reads a + z·za, b + z·zb,
bias + z·zbias and writes c + z·zc (element offsets, Int64; 0 broadcasts an operand); the last
entry of the launch (z = grid_dim.y - 1) has k extent ``k_last`` instead of k (split-K: every
split but the last is k long, the last takes the residue).  ``BatchedGemmPlan`` launches its
entries this way; ``GemmPlan``'s split-K launches its splits this way (into an f32 workspace,
reduced by ``gemm_splitk``).

Structure (per CTA tile bM × bN, grouped rasterisation of block_idx.x for L2 reuse):

* global → shared: 16-byte ``cp.async`` vectors along each operand's contiguous dimension into
  ``stages`` swizzled shared buffers (bank-conflict-free for ``ldmatrix``).  Rows / columns past
  m / n are predicated off (their shared slots stay zero); the k residue is handled by shifting
  the k range so that the *first* k tile is the partial one (its k < 0 part predicated off).
* shared → registers with ``ldmatrix`` (transposing for m- / n-major operands), double-buffered
  over the k blocks of a tile, overlapping the next tile's ``cp.async``.
* epilogue straight from the accumulators, element-wise and predicated (any c strides).

Caller contract (checked by ``GemmPlan``): k >= 1 and k_last >= 1; base pointers (of every
batch entry) 16-byte aligned; ``lda``, ``ldb`` multiples of 8 elements; the contiguous extent of
each operand (k / k_last for k-major, m / n otherwise) a multiple of 8, so a 16-byte vector is
either fully inside or fully outside the operand and nothing outside the operands is ever read.
"""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute
from cutlass import Boolean, Float32, Int32, Int64

from ..specs.gemm import GROUP_M, MMA_VEC, TILES
from .gemm_simt import TYPES, epilogue_value


def _smem_layout(kmajor: bool, mn: int, bk: int, stages: int):
    """Swizzled (mn, bk, stages) layout of one operand's shared buffers (16-bit elements) and its
    swizzle functor (byte addresses, 16-byte units)."""
    if kmajor:
        width = min(bk, 64)
        atom = cute.make_layout((8, width), stride=(width, 1))
    else:
        width = min(mn, 64)
        atom = cute.make_layout((width, 8), stride=(1, width))
    bits = min(int(math.log2(width * 16 // 128)), 3)
    layout = cute.tile_to_shape(atom, (mn, bk, stages), (0, 1, 2))
    return layout, cute.make_swizzle(bits, 4, 3)


def _g2s_copy(atom, kmajor: bool, mn: int, bk: int, threads: int):
    """Thread/value layout of the cp.async tiled copy of an (mn, bk) operand tile."""
    if kmajor:
        tk = bk // MMA_VEC
        thr = cute.make_layout((threads // tk, tk), stride=(tk, 1))
        val = cute.make_layout((1, MMA_VEC))
    else:
        tm = mn // MMA_VEC
        thr = cute.make_layout((tm, threads // tm), stride=(1, tm))
        val = cute.make_layout((MMA_VEC, 1))
    return cute.make_tiled_copy_tv(atom, thr, val)


def build(knobs: dict):
    T = TYPES[knobs["dtype"]]
    OT = TYPES[knobs["out"]]
    act = knobs["act"]
    a_k = knobs["a_major"] == "k"
    b_k = knobs["b_major"] == "k"
    bM, bN, bK, ST, WM, WN = TILES[knobs["tile"]]
    THREADS = 32 * WM * WN

    @cute.kernel
    def kernel(pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer, pbias: cute.Pointer,
               m: Int32, n: Int32, k: Int32, lda: Int64, ldb: Int64, csm: Int64, csn: Int64,
               bs: Int64, alpha: Float32, beta: Float32, has_bias: Int32, za: Int64,
               zb: Int64, zc: Int64, zbias: Int64, k_last: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bid, bz, _ = cute.arch.block_idx()
        _, nz, _ = cute.arch.grid_dim()
        # ---- batch index block_idx.y: element offsets of this entry's operands (0 broadcasts);
        # the last entry of the launch has k extent k_last (split-K residue)
        z = Int64(bz)
        pa = pa + z * za
        pb = pb + z * zb
        pc = pc + z * zc
        pbias = pbias + z * zbias
        k = cutlass.select_(Int32(bz) == Int32(nz) - Int32(1), k_last, k)
        # ---- grouped rasterisation of the 1-D grid (templates.gemm.raster is the reference)
        tiles_m = (m + bM - 1) // bM
        tiles_n = (n + bN - 1) // bN
        per_group = GROUP_M * tiles_n
        g = Int32(bid) // per_group
        first_m = g * GROUP_M
        gsz = cutlass.min(tiles_m - first_m, GROUP_M)
        r = Int32(bid) % per_group
        tm = first_m + r % gsz
        tn = r // gsz

        # ---- global views (a as (m, k), b as (n, k)); leading dims are multiples of 8
        lda = cute.assume(lda, divby=MMA_VEC)
        ldb = cute.assume(ldb, divby=MMA_VEC)
        if cutlass.const_expr(a_k):
            la = cute.make_layout((m, k), stride=(lda, 1))
        else:
            la = cute.make_layout((m, k), stride=(1, lda))
        if cutlass.const_expr(b_k):
            lb = cute.make_layout((n, k), stride=(ldb, 1))
        else:
            lb = cute.make_layout((n, k), stride=(1, ldb))
        mA = cute.make_tensor(pa, la)
        mB = cute.make_tensor(pb, lb)
        gA = cute.local_tile(mA, (bM, bK), (tm, None))          # (bM, bK, ktiles)
        gB = cute.local_tile(mB, (bN, bK), (tn, None))          # (bN, bK, ktiles)
        cA = cute.local_tile(cute.make_identity_tensor((m, k)), (bM, bK), (tm, None))
        cB = cute.local_tile(cute.make_identity_tensor((n, k)), (bN, bK), (tn, None))
        ktiles = cute.size(gA, mode=[2])
        # shift k so that the first tile is the partial one (residue <= 0)
        res = k - Int32(bK) * ktiles
        gA = cute.domain_offset((0, res, 0), gA)
        gB = cute.domain_offset((0, res, 0), gB)
        gA = cute.make_tensor(gA.iterator.align(16), gA.layout)
        gB = cute.make_tensor(gB.iterator.align(16), gB.layout)
        cA = cute.domain_offset((0, res, 0), cA)
        cB = cute.domain_offset((0, res, 0), cB)

        # ---- shared buffers
        lsa, swa = _smem_layout(a_k, bM, bK, ST)
        lsb, swb = _smem_layout(b_k, bN, bK, ST)
        smem = cutlass.memory.SmemAllocator()
        sA = smem.allocate_tensor(T, lsa, byte_alignment=128, swizzle=swa)
        sB = smem.allocate_tensor(T, lsb, byte_alignment=128, swizzle=swb)

        # ---- global -> shared copies
        g2s = cute.make_copy_atom(
            cute.nvgpu.cpasync.CopyG2SOp(cache_mode=cute.nvgpu.LoadCacheMode.GLOBAL), T,
            num_bits_per_copy=128)
        cpA = _g2s_copy(g2s, a_k, bM, bK, THREADS)
        cpB = _g2s_copy(g2s, b_k, bN, bK, THREADS)
        thA = cpA.get_slice(tidx)
        thB = cpB.get_slice(tidx)
        tAgA = thA.partition_S(gA)
        tAsA = thA.partition_D(sA)
        tAcA = thA.partition_S(cA)
        tBgB = thB.partition_S(gB)
        tBsB = thB.partition_D(sB)
        tBcB = thB.partition_S(cB)

        # m / n predicates (fixed over k); the k predicate only matters in the first tile
        pA = cute.make_rmem_tensor(
            cute.make_layout((tAsA.shape[0][1], cute.size(tAsA, mode=[1]),
                              cute.size(tAsA, mode=[2])),
                             stride=(cute.size(tAsA, mode=[1]), 1, 0)), Boolean)
        pB = cute.make_rmem_tensor(
            cute.make_layout((tBsB.shape[0][1], cute.size(tBsB, mode=[1]),
                              cute.size(tBsB, mode=[2])),
                             stride=(cute.size(tBsB, mode=[1]), 1, 0)), Boolean)
        for v in cutlass.range_constexpr(pA.shape[0]):
            for i in cutlass.range_constexpr(pA.shape[1]):
                pA[v, i, 0] = cute.elem_less(tAcA[(0, v), i, 0, 0][0], m)
        for v in cutlass.range_constexpr(pB.shape[0]):
            for i in cutlass.range_constexpr(pB.shape[1]):
                pB[v, i, 0] = cute.elem_less(tBcB[(0, v), i, 0, 0][0], n)

        tAsA.fill(0)
        tBsB.fill(0)
        cute.arch.sync_threads()

        # ---- prologue: tile 0 (partial in k) then stages-2 full tiles
        kread = Int32(0)
        for kk in cutlass.range_constexpr(cute.size(tAsA, mode=[2])):
            if cute.elem_less(Int32(-1), tAcA[0, 0, kk, 0][1]):
                cute.copy(cpA, tAgA[None, None, kk, kread], tAsA[None, None, kk, 0],
                          pred=pA[None, None, kk])
        for kk in cutlass.range_constexpr(cute.size(tBsB, mode=[2])):
            if cute.elem_less(Int32(-1), tBcB[0, 0, kk, 0][1]):
                cute.copy(cpB, tBgB[None, None, kk, kread], tBsB[None, None, kk, 0],
                          pred=pB[None, None, kk])
        kread = kread + 1
        cute.arch.cp_async_commit_group()
        for s in cutlass.range_constexpr(1, ST - 1):
            if kread < ktiles:
                cute.copy(cpA, tAgA[None, None, None, kread], tAsA[None, None, None, s],
                          pred=pA)
                cute.copy(cpB, tBgB[None, None, None, kread], tBsB[None, None, None, s],
                          pred=pB)
            kread = kread + 1
            cute.arch.cp_async_commit_group()

        # ---- MMA
        op = cute.nvgpu.warp.MmaF16BF16Op(T, Float32, (16, 8, 16))
        tiled_mma = cute.make_tiled_mma(op, cute.make_layout((WM, WN, 1)),
                                        permutation_mnk=(WM * 16, WN * 16, 16))
        thr_mma = tiled_mma.get_slice(tidx)
        tCsA = thr_mma.partition_A(sA)
        tCsB = thr_mma.partition_B(sB)
        tCrA = tiled_mma.make_fragment_A(tCsA[None, None, None, 0])
        tCrB = tiled_mma.make_fragment_B(tCsB[None, None, None, 0])
        cC = cute.local_tile(cute.make_identity_tensor((m, n)), (bM, bN), (tm, tn))
        tCcC = thr_mma.partition_C(cC)
        acc = tiled_mma.make_fragment_C(thr_mma.partition_shape_C((bM, bN)))
        acc.fill(0.0)

        s2rA = cute.make_tiled_copy_A(
            cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(not a_k, 4), T), tiled_mma)
        s2rB = cute.make_tiled_copy_B(
            cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(not b_k, 4), T), tiled_mma)
        thsA = s2rA.get_slice(tidx)
        thsB = s2rB.get_slice(tidx)
        tXsA = thsA.partition_S(sA)
        tXrA = thsA.retile(tCrA)
        tXsB = thsB.partition_S(sB)
        tXrB = thsB.retile(tCrB)

        rd = Int32(0)
        wr = Int32(ST - 1)
        vA = tXsA[None, None, None, rd]
        vB = tXsB[None, None, None, rd]
        NKB = cute.size(tCrA, mode=[2])
        cute.arch.cp_async_wait_group(ST - 2)
        cute.arch.sync_threads()
        cute.copy(s2rA, vA[None, None, 0], tXrA[None, None, 0])
        cute.copy(s2rB, vB[None, None, 0], tXrB[None, None, 0])

        for kt in cutlass.range(ktiles):
            for kb in cutlass.range_constexpr(NKB):
                if cutlass.const_expr(kb == NKB - 1):
                    vA = tXsA[None, None, None, rd]
                    vB = tXsB[None, None, None, rd]
                    cute.arch.cp_async_wait_group(ST - 2)
                    cute.arch.sync_threads()
                kn = (kb + 1) % NKB
                cute.copy(s2rA, vA[None, None, kn], tXrA[None, None, kn])
                cute.copy(s2rB, vB[None, None, kn], tXrB[None, None, kn])
                if cutlass.const_expr(kb == 0):
                    if kt + (ST - 1) < ktiles:
                        cute.copy(cpA, tAgA[None, None, None, kread],
                                  tAsA[None, None, None, wr], pred=pA)
                        cute.copy(cpB, tBgB[None, None, None, kread],
                                  tBsB[None, None, None, wr], pred=pB)
                    kread = kread + 1
                    cute.arch.cp_async_commit_group()
                    wr = rd
                    rd = rd + 1
                    if rd == ST:
                        rd = Int32(0)
                cute.gemm(tiled_mma, acc, tCrA[None, None, kb], tCrB[None, None, kb], acc)

        cute.arch.cp_async_wait_group(0)

        # ---- epilogue: element-wise, predicated, any c strides
        use_beta = beta != Float32(0.0)
        hb = has_bias != 0
        for i in cutlass.range_constexpr(cute.size(acc)):
            ci = tCcC[i]
            if cute.elem_less(ci[0], m):
                if cute.elem_less(ci[1], n):
                    epilogue_value(acc[i], pc, pbias,
                                   Int64(ci[0]) * csm + Int64(ci[1]) * csn, Int64(ci[1]) * bs,
                                   alpha, beta, use_beta, hb, act, OT)

    @cute.jit
    def launch(pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer, pbias: cute.Pointer,
               m: Int32, n: Int32, k: Int32, lda: Int64, ldb: Int64, csm: Int64, csn: Int64,
               bs: Int64, alpha: Float32, beta: Float32, has_bias: Int32, za: Int64,
               zb: Int64, zc: Int64, zbias: Int64, k_last: Int32, batches: Int32, stream):
        grid = ((m + bM - 1) // bM) * ((n + bN - 1) // bN)
        kernel(pa, pb, pc, pbias, m, n, k, lda, ldb, csm, csn, bs, alpha, beta,
               has_bias, za, zb, zc, zbias, k_last).launch(
            grid=[grid, batches, 1], block=[THREADS, 1, 1],
            smem=ST * (bM + bN) * bK * 2 + 128, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t, align):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=align)

    args = [ptr(T, 16), ptr(T, 16), ptr(OT, OT.width // 8), ptr(OT, OT.width // 8),
            Int32(1), Int32(1), Int32(1)] + [Int64(8)] * 5 + \
        [Float32(1.0), Float32(0.0), Int32(0)] + [Int64(0)] * 4 + \
        [Int32(1), Int32(1), make_fake_stream()]
    return launch, args
