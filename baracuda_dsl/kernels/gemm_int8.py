"""Integer GEMM on tensor cores with Ampere ``mma.sync`` m16n8k32 (s8 / u8 inputs, s32 accumulate):

    out = "i32": c[i, j] = Σ_p a[i, p] · b[p, j]                      (exact, int32, wraps past 2**31)
    out = "f32": c[i, j] = sa[i · sas] · sb[j · sbs] · float(Σ_p a[i, p] · b[p, j])   (dequant)

a (m, k) row-major (unit stride along k, row stride ``lda``), b (k, n) column-major (unit stride
along k, column stride ``ldb``); c any strides (csm, csn); scale strides 0 broadcast one value.
Every k-major 32-bit word holds 4 consecutive int8 along k, and the m16n8k32 s8 fragments are,
word for word, the m16n8k8 tf32 fragments; so this is ``gemm_tf32``'s pipeline (the same padded
shared buffers, cp.async vectors and tf32 ``TiledMma`` partitioning) run on words, with the
instruction issued by inline PTX (``mma.sync.aligned.m16n8k32.row.col.s32.{s8|u8}.{s8|u8}.s32``).
Scalars ``k``, ``lda``, ``ldb`` are in 32-bit words (bytes / 4).

Caller contract (checked by ``IntGemmPlan``): k >= 1 and k % 16 == 0 (bytes); base pointers
16-byte aligned; lda, ldb multiples of 16 bytes.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Boolean, Float32, Int32, Int64
from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import T as IRT, dsl_user_op

from ..templates.gemm import GROUP_M
from ..templates.gemm_int8 import INT8_TILES, int8_smem
from ..templates.gemm_tf32 import TF32_VEC
from .gemm_tf32 import _g2s_copy, _smem_layout


@dsl_user_op
def mma_s8(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3, *, ta: str, tb: str, loc=None, ip=None):
    """One ``mma.sync.m16n8k32`` {ta}·{tb} → s32 on packed words; returns the 4 accumulators."""
    vals = [Int32(x).ir_value(loc=loc, ip=ip) for x in (a0, a1, a2, a3, b0, b1, c0, c1, c2, c3)]
    st = llvm.inline_asm(
        llvm.StructType.get_literal([IRT.i32()] * 4), vals,
        f"mma.sync.aligned.m16n8k32.row.col.s32.{ta}.{tb}.s32 "
        "{$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};",
        "=r,=r,=r,=r,r,r,r,r,r,r,r,r,r,r", has_side_effects=False, is_align_stack=False,
        asm_dialect=llvm.AsmDialect.AD_ATT, loc=loc, ip=ip)
    return tuple(Int32(llvm.extractvalue(IRT.i32(), st, [i], loc=loc, ip=ip)) for i in range(4))


def build(knobs: dict):
    T = Int32
    TA = knobs["a"]
    TB = knobs["b"]
    DEQ = knobs["out"] == "f32"
    a_k = True
    b_k = True
    bM, bN, bK, ST, WM, WN = INT8_TILES[knobs["tile"]]
    THREADS = 32 * WM * WN
    SMEM = int8_smem(knobs)

    @cute.kernel
    def kernel(pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer, psa: cute.Pointer,
               psb: cute.Pointer, m: Int32, n: Int32, k: Int32, lda: Int64, ldb: Int64,
               csm: Int64, csn: Int64, sas: Int64, sbs: Int64):
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

        # ---- MMA: the tf32 TiledMma partitions the word buffers; m16n8k32 s8 issued per atom
        op = cute.nvgpu.warp.MmaTF32Op((16, 8, 8))
        tiled_mma = cute.make_tiled_mma(op, cute.make_layout((WM, WN, 1)))
        thr_mma = tiled_mma.get_slice(tidx)
        tCsA = thr_mma.partition_A(sA)                # (4 words, MMA_M, MMA_K, stages)
        tCsB = thr_mma.partition_B(sB)                # (2 words, MMA_N, MMA_K, stages)
        cC = cute.local_tile(cute.make_identity_tensor((m, n)), (bM, bN), (tm, tn))
        tCcC = thr_mma.partition_C(cC)
        acc_shape = thr_mma.partition_shape_C((bM, bN))
        acc = cute.make_rmem_tensor(acc_shape, Int32)  # (4, MMA_M, MMA_N)
        acc.fill(0)
        rA = cute.make_rmem_tensor(tCsA[None, None, 0, 0].shape, Int32)
        rB = cute.make_rmem_tensor(tCsB[None, None, 0, 0].shape, Int32)
        NKB = cute.size(tCsA, mode=[2])
        NM = cute.size(acc, mode=[1])
        NN = cute.size(acc, mode=[2])

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
                fa = tCsA[None, None, kb, rd]
                fb = tCsB[None, None, kb, rd]
                for i in cutlass.range_constexpr(cute.size(rA)):
                    rA[i] = fa[i]
                for i in cutlass.range_constexpr(cute.size(rB)):
                    rB[i] = fb[i]
                for mi in cutlass.range_constexpr(NM):
                    for ni in cutlass.range_constexpr(NN):
                        d0, d1, d2, d3 = mma_s8(
                            rA[0, mi], rA[1, mi], rA[2, mi], rA[3, mi], rB[0, ni], rB[1, ni],
                            acc[0, mi, ni], acc[1, mi, ni], acc[2, mi, ni], acc[3, mi, ni],
                            ta=TA, tb=TB)
                        acc[0, mi, ni] = d0
                        acc[1, mi, ni] = d1
                        acc[2, mi, ni] = d2
                        acc[3, mi, ni] = d3
            wr = rd
            rd = rd + 1
            if rd == ST:
                rd = Int32(0)

        cute.arch.cp_async_wait_group(0)

        # ---- epilogue: element-wise, predicated, any c strides
        for i in cutlass.range_constexpr(cute.size(acc)):
            ci = tCcC[i]
            if cute.elem_less(ci[0], m):
                if cute.elem_less(ci[1], n):
                    off = Int64(ci[0]) * csm + Int64(ci[1]) * csn
                    if cutlass.const_expr(DEQ):
                        sa = cute.make_tensor(psa + Int64(ci[0]) * sas, cute.make_layout(1))[0]
                        sb = cute.make_tensor(psb + Int64(ci[1]) * sbs, cute.make_layout(1))[0]
                        cf = cute.make_tensor(pc + off, cute.make_layout(1))
                        cf[0] = Float32(sa) * Float32(sb) * Float32(acc[i])
                    else:
                        ci32 = cute.make_tensor(pc + off, cute.make_layout(1))
                        ci32[0] = acc[i]

    @cute.jit
    def launch(pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer, psa: cute.Pointer,
               psb: cute.Pointer, m: Int32, n: Int32, k: Int32, lda: Int64, ldb: Int64,
               csm: Int64, csn: Int64, sas: Int64, sbs: Int64, stream):
        grid = ((m + bM - 1) // bM) * ((n + bN - 1) // bN)
        kernel(pa, pb, pc, psa, psb, m, n, k, lda, ldb, csm, csn, sas,
               sbs).launch(grid=[grid, 1, 1], block=[THREADS, 1, 1], smem=SMEM, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t, align):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=align)

    OT = Float32 if DEQ else Int32
    args = [ptr(T, 16), ptr(T, 16), ptr(OT, 4), ptr(Float32, 4), ptr(Float32, 4),
            Int32(1), Int32(1), Int32(4)] + [Int64(4)] * 6 + [make_fake_stream()]
    return launch, args
