"""float32 GEMM on tensor cores (tf32 inputs, f32 accumulate) with Ampere ``mma.sync`` m16n8k8:

    c[i, j] = act(alpha · Σ_p tf32(a[i, p]) · tf32(b[p, j]) + beta · c[i, j] + bias[j])

tf32(x) rounds x to 10 mantissa bits, to nearest with ties away from zero (``cvt.rna.tf32.f32``);
products and sums are f32.  ``a`` is (m, k) with unit stride along k (``a_major=k``, row stride
``lda``) or along m (``a_major=m``, column stride ``lda``); ``b`` is (k, n) with unit stride along
k (``b_major=k``, column stride ``ldb``) or along n (``b_major=n``, row stride ``ldb``); c has any
strides (csm, csn), bias (n,) stride ``bs`` read when ``has_bias``; c is read only when beta != 0.

Structure (same as ``gemm_mma`` with 32-bit elements): grouped rasterisation of a 1-D grid;
16-byte ``cp.async`` vectors into ``stages`` padded shared buffers (row padding makes the
fragment reads bank-conflict-free, no ldmatrix: fragments are loaded element-wise and rounded
to tf32 on the way); the k residue is the first k tile (its k < 0 part predicated off);
element-wise predicated epilogue from the accumulators (``gemm_simt.epilogue_value``).

Caller contract (checked by ``GemmPlan``): k >= 1; base pointers 16-byte aligned; ``lda``,
``ldb`` multiples of 4 elements; the contiguous extent of each operand (k for k-major, m / n
otherwise) a multiple of 4, so a 16-byte vector is fully inside or fully outside the operand.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Boolean, Float32, Int32, Int64

from ..specs.gemm import GROUP_M
from ..specs.gemm_tf32 import PAD_K, PAD_MN, TF32_TILES, TF32_VEC, tf32_smem
from .gemm_simt import TYPES, epilogue_value


def _smem_layout(kmajor: bool, mn: int, bk: int, stages: int):
    """Padded (mn, bk, stages) layout of one operand's shared buffers (f32 elements)."""
    if kmajor:
        ld = bk + PAD_K
        return cute.make_layout((mn, bk, stages), stride=(ld, 1, mn * ld))
    ld = mn + PAD_MN
    return cute.make_layout((mn, bk, stages), stride=(1, ld, ld * bk))


def _g2s_copy(atom, kmajor: bool, mn: int, bk: int, threads: int):
    """Thread/value layout of the cp.async tiled copy of an (mn, bk) operand tile."""
    if kmajor:
        tk = bk // TF32_VEC
        thr = cute.make_layout((threads // tk, tk), stride=(tk, 1))
        val = cute.make_layout((1, TF32_VEC))
    else:
        tm = mn // TF32_VEC
        thr = cute.make_layout((tm, threads // tm), stride=(1, tm))
        val = cute.make_layout((TF32_VEC, 1))
    return cute.make_tiled_copy_tv(atom, thr, val)


def mainloop(T, a_k: bool, b_k: bool, tiles, threads: int, mma_init, mma_kblock):
    """Trace-time builder of the shared GEMM body (also used by ``gemm_int8``): a ``@cute.jit``
    ``run(pa, pb, m, n, k, lda, ldb) -> (acc, tCcC)`` doing the grouped rasterisation, the
    cp.async multistage pipeline into padded shared buffers of element type ``T`` and the main
    loop, partitioned by the tf32 m16n8k8 ``TiledMma`` (``WM x WN`` warps).  The caller supplies
    ``mma_init(tiled_mma, thr_mma, tCsA, tCsB, acc_shape) -> (acc, fA, fB)`` (register
    fragments) and a ``@cute.jit`` ``mma_kblock(tiled_mma, acc, fA, fB, sa, sb, kb)`` issuing the
    MMAs of k block ``kb`` from the shared views ``sa``, ``sb``; ``tCcC`` holds the (m, n)
    coordinates of ``acc``'s elements for the caller's epilogue."""
    bM, bN, bK, ST, WM, WN = tiles
    THREADS = threads

    @cute.jit
    def run(pa, pb, m, n, k, lda, ldb):
        tidx, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
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

        # ---- global views (a as (m, k), b as (n, k)); leading dims are multiples of 4
        lda = cute.assume(lda, divby=TF32_VEC)
        ldb = cute.assume(ldb, divby=TF32_VEC)
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
        smem = cutlass.memory.SmemAllocator()
        sA = smem.allocate_tensor(T, _smem_layout(a_k, bM, bK, ST), byte_alignment=128)
        sB = smem.allocate_tensor(T, _smem_layout(b_k, bN, bK, ST), byte_alignment=128)

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
        op = cute.nvgpu.warp.MmaTF32Op((16, 8, 8))
        tiled_mma = cute.make_tiled_mma(op, cute.make_layout((WM, WN, 1)))
        thr_mma = tiled_mma.get_slice(tidx)
        tCsA = thr_mma.partition_A(sA)                # (A values, MMA_M, MMA_K, stages)
        tCsB = thr_mma.partition_B(sB)                # (B values, MMA_N, MMA_K, stages)
        cC = cute.local_tile(cute.make_identity_tensor((m, n)), (bM, bN), (tm, tn))
        tCcC = thr_mma.partition_C(cC)
        acc, fA, fB = mma_init(tiled_mma, thr_mma, tCsA, tCsB, (bM, bN))
        NKB = cute.size(tCsA, mode=[2])

        rd = Int32(0)
        wr = Int32(ST - 1)
        for kt in cutlass.range(ktiles):
            cute.arch.cp_async_wait_group(ST - 2)
            cute.arch.sync_threads()
            # refill the stage every thread finished reading in the previous iteration
            if kt + (ST - 1) < ktiles:
                cute.copy(cpA, tAgA[None, None, None, kread], tAsA[None, None, None, wr],
                          pred=pA)
                cute.copy(cpB, tBgB[None, None, None, kread], tBsB[None, None, None, wr],
                          pred=pB)
            kread = kread + 1
            cute.arch.cp_async_commit_group()
            for kb in cutlass.range_constexpr(NKB):
                mma_kblock(tiled_mma, acc, fA, fB, tCsA[None, None, kb, rd],
                           tCsB[None, None, kb, rd], kb)
            wr = rd
            rd = rd + 1
            if rd == ST:
                rd = Int32(0)

        cute.arch.cp_async_wait_group(0)
        return acc, tCcC

    return run


def _tf32_init(tiled_mma, thr_mma, tCsA, tCsB, shape_mn):
    """f32 register fragments of the tf32 MMA and the zeroed f32 accumulator."""
    tCrA = tiled_mma.make_fragment_A(tCsA[None, None, None, 0])
    tCrB = tiled_mma.make_fragment_B(tCsB[None, None, None, 0])
    acc = tiled_mma.make_fragment_C(thr_mma.partition_shape_C(shape_mn))
    acc.fill(0.0)
    return acc, tCrA, tCrB


@cute.jit
def _tf32_kblock(tiled_mma, acc, tCrA, tCrB, fa, fb, kb: cutlass.Constexpr):
    """Rounds k block ``kb`` of both operands to tf32 into the fragments, then one ``gemm``."""
    ra = cute.recast_tensor(tCrA, Int32)[None, None, kb]
    rb = cute.recast_tensor(tCrB, Int32)[None, None, kb]
    for i in cutlass.range_constexpr(cute.size(fa)):
        ra[i] = Int32(cute.arch.cvt_f32_tf32(fa[i]))
    for i in cutlass.range_constexpr(cute.size(fb)):
        rb[i] = Int32(cute.arch.cvt_f32_tf32(fb[i]))
    cute.gemm(tiled_mma, acc, tCrA[None, None, kb], tCrB[None, None, kb], acc)


def build(knobs: dict):
    T = Float32
    OT = TYPES["f32"]
    act = knobs["act"]
    a_k = knobs["a_major"] == "k"
    b_k = knobs["b_major"] == "k"
    tiles = TF32_TILES[knobs["tile"]]
    bM, bN, _, _, WM, WN = tiles
    THREADS = 32 * WM * WN
    SMEM = tf32_smem(knobs)
    pipe = mainloop(T, a_k, b_k, tiles, THREADS, _tf32_init, _tf32_kblock)

    @cute.kernel
    def kernel(pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer, pbias: cute.Pointer,
               m: Int32, n: Int32, k: Int32, lda: Int64, ldb: Int64, csm: Int64, csn: Int64,
               bs: Int64, alpha: Float32, beta: Float32, has_bias: Int32):
        acc, tCcC = pipe(pa, pb, m, n, k, lda, ldb)

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
               bs: Int64, alpha: Float32, beta: Float32, has_bias: Int32, stream):
        grid = ((m + bM - 1) // bM) * ((n + bN - 1) // bN)
        kernel(pa, pb, pc, pbias, m, n, k, lda, ldb, csm, csn, bs, alpha, beta,
               has_bias).launch(grid=[grid, 1, 1], block=[THREADS, 1, 1], smem=SMEM,
                                stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t, align):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=align)

    args = [ptr(T, 16), ptr(T, 16), ptr(OT, 4), ptr(OT, 4),
            Int32(1), Int32(1), Int32(1)] + [Int64(4)] * 5 + \
        [Float32(1.0), Float32(0.0), Int32(0), make_fake_stream()]
    return launch, args
