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
from cutlass import Float32, Int32, Int64

from ..specs.gemm_tf32 import PAD_K, PAD_MN, TF32_TILES, TF32_VEC, Tf32Knobs, tf32_smem
from .gemm_simt import TYPES, fragment_epilogue
from .multistage import CpAsyncLoads, operand_tiles, prologue, raster


def _smem_layout(kmajor: bool, mn: int, bk: int, stages: int):
    """Padded (mn, bk, stages) layout of one operand's shared buffers (f32 elements)."""
    if kmajor:
        ld = bk + PAD_K
        return cute.make_layout((mn, bk, stages), stride=(ld, 1, mn * ld))
    ld = mn + PAD_MN
    return cute.make_layout((mn, bk, stages), stride=(1, ld, ld * bk))


def mainloop(T, a_k: bool, b_k: bool, tiles, threads: int, mma_init, mma_kblock):
    """Trace-time builder of the shared GEMM body (also used by ``gemm_int8`` and ``gemm_fp8``):
    a ``@cute.jit`` ``run(pa, pb, m, n, k, lda, ldb) -> (acc, tCcC)`` doing the grouped
    rasterisation, the cp.async multistage pipeline (``kernels/multistage.py``) into padded
    shared buffers of element type ``T`` and the main loop, partitioned by the tf32 m16n8k8
    ``TiledMma`` (``WM x WN`` warps).  The caller supplies ``mma_init(tiled_mma, thr_mma, tCsA,
    tCsB, acc_shape) -> (acc, fA, fB)`` (register fragments) and a ``@cute.jit``
    ``mma_kblock(tiled_mma, acc, fA, fB, sa, sb, kb)`` issuing the MMAs of k block ``kb`` from the
    shared views ``sa``, ``sb``; ``tCcC`` holds the (m, n) coordinates of ``acc``'s elements for
    the caller's epilogue."""
    bM, bN, bK, ST, WM, WN = tiles
    THREADS = threads

    @cute.jit
    def run(pa, pb, m, n, k, lda, ldb):
        tidx, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        # ---- grouped rasterisation, operand tile views, shared buffers, cp.async pipeline
        tm, tn = raster(bid, m, n, bM, bN)
        gA, gB, cA, cB, ktiles = operand_tiles(pa, pb, m, n, k, lda, ldb, tm, tn, a_kmajor=a_k,
                                               b_kmajor=b_k, tile_m=bM, tile_n=bN, tile_k=bK,
                                               vec=TF32_VEC)
        smem = cutlass.memory.SmemAllocator()
        sA = smem.allocate_tensor(T, _smem_layout(a_k, bM, bK, ST), byte_alignment=128)
        sB = smem.allocate_tensor(T, _smem_layout(b_k, bN, bK, ST), byte_alignment=128)
        loads = CpAsyncLoads(T, sA, sB, gA, gB, cA, cB, m, n, tidx, a_kmajor=a_k, b_kmajor=b_k,
                             tile_m=bM, tile_n=bN, tile_k=bK, threads=THREADS, vec=TF32_VEC)
        kread = prologue(loads, ktiles, ST)

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
                loads.load_stage(kread, wr)
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


def build(knobs: Tf32Knobs):
    T = Float32
    OT = TYPES["f32"]
    act = knobs.act
    a_k = knobs.a_major == "k"
    b_k = knobs.b_major == "k"
    tiles = TF32_TILES[knobs.tile]
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
        fragment_epilogue(acc, tCcC, m, n, pc, pbias, csm, csn, bs, alpha, beta, has_bias, act,
                          OT)

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
