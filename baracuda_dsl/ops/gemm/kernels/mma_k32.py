"""The 8-bit ``mma.sync`` m16n8k32 shared by the int8 and fp8 GEMMs, issued by inline PTX (the DSL
has no 8-bit warp-MMA atom), and the ``gemm_tf32.mainloop`` hooks that run it on 32-bit words.

The m16n8k32 8-bit fragments are, register for register, the m16n8k8 tf32 ones when every
32-bit word holds 4 consecutive k elements (4 words of A, 2 of B; 4 accumulators in the C
positions), so both GEMMs reuse the tf32 kernel's pipeline and ``TiledMma`` partitioning on words:

* ``s8`` / ``u8`` inputs with s32 accumulators: ``mma.sync.aligned.m16n8k32.row.col.s32.ta.tb.s32``
  (sm80+);
* ``e4m3`` / ``e5m2`` inputs with f32 accumulators: ``...f32.ta.tb.f32`` (sm89+).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32
from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import T as IRT, dsl_user_op


@dsl_user_op
def mma_k32(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3, *, ta: str, tb: str, acc_float: bool,
            loc=None, ip=None):
    """One ``mma.sync.m16n8k32`` {ta}·{tb} on packed 8-bit words (Int32) with s32
    (``acc_float=False``) or f32 accumulators; returns the 4 new accumulators."""
    AT, ir_t, kind, con = ((Float32, IRT.f32(), "f32", "f") if acc_float
                           else (Int32, IRT.i32(), "s32", "r"))
    vals = ([Int32(x).ir_value(loc=loc, ip=ip) for x in (a0, a1, a2, a3, b0, b1)]
            + [AT(x).ir_value(loc=loc, ip=ip) for x in (c0, c1, c2, c3)])
    st = llvm.inline_asm(
        llvm.StructType.get_literal([ir_t] * 4), vals,
        f"mma.sync.aligned.m16n8k32.row.col.{kind}.{ta}.{tb}.{kind} "
        "{$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};",
        f"={con},={con},={con},={con},r,r,r,r,r,r,{con},{con},{con},{con}",
        has_side_effects=False, is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT,
        loc=loc, ip=ip)
    return tuple(AT(llvm.extractvalue(ir_t, st, [i], loc=loc, ip=ip)) for i in range(4))


def word_mma_hooks(ta: str, tb: str, acc_float: bool):
    """(mma_init, mma_kblock) for ``gemm_tf32.mainloop`` over 32-bit words: zeroed (4, MMA_M,
    MMA_N) accumulators of f32 / s32 plus word fragments, and a k block issuing one m16n8k32
    per (MMA_M, MMA_N) atom."""
    AT = Float32 if acc_float else Int32

    def mma_init(tiled_mma, thr_mma, tCsA, tCsB, shape_mn):
        acc = cute.make_rmem_tensor(thr_mma.partition_shape_C(shape_mn), AT)
        acc.fill(0.0 if acc_float else 0)
        rA = cute.make_rmem_tensor(tCsA[None, None, 0, 0].shape, Int32)
        rB = cute.make_rmem_tensor(tCsB[None, None, 0, 0].shape, Int32)
        return acc, rA, rB

    @cute.jit
    def mma_kblock(tiled_mma, acc, rA, rB, fa, fb, kb: cutlass.Constexpr):
        # the tf32 TiledMma partitions the word buffers; one m16n8k32 per atom
        for i in cutlass.range_constexpr(cute.size(rA)):
            rA[i] = fa[i]
        for i in cutlass.range_constexpr(cute.size(rB)):
            rB[i] = fb[i]
        for mi in cutlass.range_constexpr(cute.size(acc, mode=[1])):
            for ni in cutlass.range_constexpr(cute.size(acc, mode=[2])):
                d0, d1, d2, d3 = mma_k32(
                    rA[0, mi], rA[1, mi], rA[2, mi], rA[3, mi], rB[0, ni], rB[1, ni],
                    acc[0, mi, ni], acc[1, mi, ni], acc[2, mi, ni], acc[3, mi, ni],
                    ta=ta, tb=tb, acc_float=acc_float)
                acc[0, mi, ni] = d0
                acc[1, mi, ni] = d1
                acc[2, mi, ni] = d2
                acc[3, mi, ni] = d3

    return mma_init, mma_kblock
