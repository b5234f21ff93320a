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
from cutlass import Float32, Int32, Int64

from ..specs.gemm_int8 import INT8_TILES, int8_smem
from .gemm_tf32 import mainloop
from .mma_k32 import word_mma_hooks


def build(knobs):
    T = Int32
    TA = knobs.a
    TB = knobs.b
    DEQ = knobs.out == "f32"
    tiles = INT8_TILES[knobs.tile]
    bM, bN, _, _, WM, WN = tiles
    THREADS = 32 * WM * WN
    SMEM = int8_smem(knobs)

    mma_init, mma_kblock = word_mma_hooks(TA, TB, acc_float=False)

    pipe = mainloop(T, True, True, tiles, THREADS, mma_init, mma_kblock)

    @cute.kernel
    def kernel(pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer, psa: cute.Pointer,
               psb: cute.Pointer, m: Int32, n: Int32, k: Int32, lda: Int64, ldb: Int64,
               csm: Int64, csn: Int64, sas: Int64, sbs: Int64):
        acc, tCcC = pipe(pa, pb, m, n, k, lda, ldb)

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
