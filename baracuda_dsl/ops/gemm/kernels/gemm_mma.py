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

* global → shared (``kernels/multistage.py``, shared with ``gemm_tf32``): 16-byte ``cp.async``
  vectors along each operand's contiguous dimension into
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
from cutlass import Float32, Int32, Int64

from ..specs.gemm import MMA_VEC, TILES, MmaKnobs
from .gemm_simt import TYPES, fragment_epilogue
from .multistage import CpAsyncLoads, operand_tiles, prologue, raster


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


def build(knobs: MmaKnobs):
    T = TYPES[knobs.dtype]
    OT = TYPES[knobs.out]
    act = knobs.act
    a_k = knobs.a_major == "k"
    b_k = knobs.b_major == "k"
    bM, bN, bK, ST, WM, WN = TILES[knobs.tile]
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
        # ---- grouped rasterisation, operand tile views, shared buffers, cp.async pipeline
        tm, tn = raster(bid, m, n, bM, bN)
        gA, gB, cA, cB, ktiles = operand_tiles(pa, pb, m, n, k, lda, ldb, tm, tn, a_kmajor=a_k,
                                               b_kmajor=b_k, tile_m=bM, tile_n=bN, tile_k=bK,
                                               vec=MMA_VEC)
        lsa, swa = _smem_layout(a_k, bM, bK, ST)
        lsb, swb = _smem_layout(b_k, bN, bK, ST)
        smem = cutlass.memory.SmemAllocator()
        sA = smem.allocate_tensor(T, lsa, byte_alignment=128, swizzle=swa)
        sB = smem.allocate_tensor(T, lsb, byte_alignment=128, swizzle=swb)
        loads = CpAsyncLoads(T, sA, sB, gA, gB, cA, cB, m, n, tidx, a_kmajor=a_k, b_kmajor=b_k,
                             tile_m=bM, tile_n=bN, tile_k=bK, threads=THREADS, vec=MMA_VEC)
        kread = prologue(loads, ktiles, ST)

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
                        loads.load_stage(kread, wr)
                    kread = kread + 1
                    cute.arch.cp_async_commit_group()
                    wr = rd
                    rd = rd + 1
                    if rd == ST:
                        rd = Int32(0)
                cute.gemm(tiled_mma, acc, tCrA[None, None, kb], tCrB[None, None, kb], acc)

        cute.arch.cp_async_wait_group(0)

        # ---- epilogue: element-wise, predicated, any c strides
        fragment_epilogue(acc, tCcC, m, n, pc, pbias, csm, csn, bs, alpha, beta, has_bias, act,
                          OT)

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
