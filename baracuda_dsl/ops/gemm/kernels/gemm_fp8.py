"""fp8 GEMM on Ada / Hopper tensor cores with ``mma.sync`` m16n8k32 (e4m3 / e5m2 inputs, f32
accumulate) and a scaled float epilogue:

    c[i, j] = OT( sa[i · sas] · sb[j · sbs] · Σ_p a[i, p] · b[p, j]  (+ bias[j · bs] if has_bias) )

OT = bf16 / f16 / f32 (knob ``out``); products are exact in f32 and summed in f32 by the tensor
core; the scale / bias math is f32 and rounded once to OT (round to nearest even).  a (m, k)
row-major (unit stride along k, row stride ``lda``), b (k, n) column-major (unit stride along k,
column stride ``ldb``); c any strides (csm, csn); scale strides 0 broadcast one value (per-tensor
scale); bias (OT elements, stride ``bs``) is read only when ``has_bias``.

The fp8 m16n8k32 fragments are, register for register, the s8 m16n8k32 ones (4 words of A, 2 of
B, each word 4 consecutive k elements; 4 f32 accumulators where the s32 ones sit), so this is
``gemm_int8``'s structure: ``gemm_tf32.mainloop`` (padded shared buffers, cp.async vectors, the
tf32 ``TiledMma`` partitioning) run on 32-bit words, with the instruction issued by inline PTX
(``mma.sync.aligned.m16n8k32.row.col.f32.{e4m3|e5m2}.{e4m3|e5m2}.f32``, sm_89+).  Scalars ``k``,
``lda``, ``ldb`` are in 32-bit words (bytes / 4).

Caller contract (checked by ``Fp8GemmPlan``): k >= 1 and k % 16 == 0 (elements = bytes); a / b
base pointers 16-byte aligned; lda, ldb multiples of 16 bytes; c / bias aligned to OT, scales
to 4 bytes.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64

from ..specs.gemm_fp8 import FP8_TILES, fp8_smem
from .gemm_simt import TYPES
from .gemm_tf32 import mainloop
from .mma_k32 import word_mma_hooks


def build(knobs):
    T = Int32
    TA = knobs.a
    TB = knobs.b
    OT = TYPES[knobs.out]
    tiles = FP8_TILES[knobs.tile]
    bM, bN, _, _, WM, WN = tiles
    THREADS = 32 * WM * WN
    SMEM = fp8_smem(knobs)

    mma_init, mma_kblock = word_mma_hooks(TA, TB, acc_float=True)

    pipe = mainloop(T, True, True, tiles, THREADS, mma_init, mma_kblock)

    @cute.kernel
    def kernel(pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer, pbias: cute.Pointer,
               psa: cute.Pointer, psb: cute.Pointer, m: Int32, n: Int32, k: Int32, lda: Int64,
               ldb: Int64, csm: Int64, csn: Int64, bs: Int64, sas: Int64, sbs: Int64,
               has_bias: Int32):
        acc, tCcC = pipe(pa, pb, m, n, k, lda, ldb)

        # ---- epilogue: element-wise, predicated, any c strides; f32 math, one rounding to OT
        hb = has_bias != 0
        for i in cutlass.range_constexpr(cute.size(acc)):
            ci = tCcC[i]
            if cute.elem_less(ci[0], m):
                if cute.elem_less(ci[1], n):
                    sa = cute.make_tensor(psa + Int64(ci[0]) * sas, cute.make_layout(1))[0]
                    sb = cute.make_tensor(psb + Int64(ci[1]) * sbs, cute.make_layout(1))[0]
                    v = Float32(sa) * Float32(sb) * acc[i]
                    if hb:
                        v = v + Float32(cute.make_tensor(pbias + Int64(ci[1]) * bs,
                                                         cute.make_layout(1))[0])
                    cref = cute.make_tensor(pc + (Int64(ci[0]) * csm + Int64(ci[1]) * csn),
                                            cute.make_layout(1))
                    cref[0] = OT(v)

    @cute.jit
    def launch(pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer, pbias: cute.Pointer,
               psa: cute.Pointer, psb: cute.Pointer, m: Int32, n: Int32, k: Int32, lda: Int64,
               ldb: Int64, csm: Int64, csn: Int64, bs: Int64, sas: Int64, sbs: Int64,
               has_bias: Int32, stream):
        grid = ((m + bM - 1) // bM) * ((n + bN - 1) // bN)
        kernel(pa, pb, pc, pbias, psa, psb, m, n, k, lda, ldb, csm, csn, bs, sas, sbs,
               has_bias).launch(grid=[grid, 1, 1], block=[THREADS, 1, 1], smem=SMEM,
                                stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t, align):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=align)

    ob = OT.width // 8
    args = [ptr(T, 16), ptr(T, 16), ptr(OT, ob), ptr(OT, ob), ptr(Float32, 4), ptr(Float32, 4),
            Int32(1), Int32(1), Int32(4)] + [Int64(4)] * 7 + [Int32(0), make_fake_stream()]
    return launch, args
