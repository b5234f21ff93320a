"""Tiled FFMA / DFMA GEMM with arbitrary strides (strict f32, f64, and the f16 / bf16 fallback):

    c[i, j] = act(alpha · Σ_p a[i, p] · b[p, j] + beta · c[i, j] + bias[j])

``a`` (m, k) with strides (sam, sak), ``b`` (k, n) with strides (sbk, sbn), ``c`` (m, n) with
strides (csm, csn), ``bias`` (n,) with stride ``bs`` (read only when ``has_bias``); ``c`` is read
only when beta != 0.  Products accumulate in f64 for f64 inputs and in f32 otherwise (strict
IEEE f32 FMA, no tf32).  A CTA of 16 × 16 threads computes a 128 × 128 tile, 8 × 8 outputs per
thread (two 4-row by two 4-column groups), staging 128 × 8 slices of a and b through shared
memory (converted to the compute type);
loads are predicated (zero fill), stores are predicated, so no memory outside the operands is
touched for any m, n, k (k = 0 gives c = act(beta·c + bias)).

:func:`epilogue_value` (the shared epilogue math) and :func:`fragment_epilogue` (it over an MMA
accumulator fragment) are also used by the tensor-core kernels.
"""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Float64, Int32, Int64, const_expr

from ..specs.gemm import SIMT_BK, SIMT_BM, SIMT_BN, SIMT_THREADS, SimtKnobs, simt_smem

TYPES = {"f32": Float32, "f16": cutlass.Float16, "bf16": cutlass.BFloat16, "f64": Float64}


def activation(x, act: str):
    """``act`` (trace-time string) applied to a compute-type scalar: relu (NaN stays NaN),
    gelu (erf form: x·(1 + erf(x/√2))/2), silu (x / (1 + e^−x))."""
    t = type(x)
    if const_expr(act == "relu"):
        return cutlass.select_(x < t(0.0), t(0.0), x)
    if const_expr(act == "gelu"):
        return t(0.5) * x * (t(1.0) + cute.math.erf(x * t(1.0 / math.sqrt(2.0))))
    if const_expr(act == "silu"):
        return x / (t(1.0) + cute.math.exp(-x))
    return x


@cute.jit
def epilogue_value(acc, pc: cute.Pointer, pbias: cute.Pointer, coff: Int64, boff: Int64,
                   alpha, beta, use_beta, has_bias, act: cutlass.Constexpr, OT: cutlass.Constexpr):
    """Store act(alpha·acc + beta·c_old + bias) at ``pc + coff`` (``boff``: bias element offset;
    ``use_beta`` / ``has_bias`` are run-time booleans)."""
    CT = type(acc)
    v = CT(alpha) * acc
    cref = cute.make_tensor(pc + coff, cute.make_layout(1))
    if use_beta:
        v = v + CT(beta) * CT(cref[0])
    if has_bias:
        v = v + CT(cute.make_tensor(pbias + boff, cute.make_layout(1))[0])
    v = activation(v, act)
    cref[0] = OT(v)


@cute.jit
def fragment_epilogue(acc, tCcC, m, n, pc: cute.Pointer, pbias: cute.Pointer, csm: Int64,
                      csn: Int64, bs: Int64, alpha, beta, has_bias, act: cutlass.Constexpr,
                      OT: cutlass.Constexpr):
    """:func:`epilogue_value` for every element of an MMA accumulator fragment ``acc`` whose
    (m, n) coordinates ``tCcC`` holds, predicated on m / n (any c strides); c is read only when
    beta != 0, bias only when ``has_bias`` != 0."""
    use_beta = beta != Float32(0.0)
    hb = has_bias != 0
    for i in cutlass.range_constexpr(cute.size(acc)):
        ci = tCcC[i]
        if cute.elem_less(ci[0], m):
            if cute.elem_less(ci[1], n):
                epilogue_value(acc[i], pc, pbias,
                               Int64(ci[0]) * csm + Int64(ci[1]) * csn, Int64(ci[1]) * bs,
                               alpha, beta, use_beta, hb, act, OT)


def build(knobs: SimtKnobs):
    dt = knobs.dtype
    T = TYPES[dt]
    OT = TYPES[knobs.out]
    CT = Float64 if dt == "f64" else Float32
    act = knobs.act
    BM, BN, BK = SIMT_BM, SIMT_BN, SIMT_BK
    TM = BM // 16               # outputs per thread along m (two groups of 4)
    TN = BN // 16
    HM = BM // 2
    HN = BN // 2
    PAD = 4                     # a's slice rows padded: conflict-free k-fastest stores
    LOADS_A = BM * BK // SIMT_THREADS
    LOADS_B = BN * BK // SIMT_THREADS

    @cute.kernel
    def kernel(pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer, pbias: cute.Pointer,
               m: Int32, n: Int32, k: Int32, sam: Int64, sak: Int64, sbk: Int64, sbn: Int64,
               csm: Int64, csn: Int64, bs: Int64, alpha: Float64, beta: Float64,
               has_bias: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, bidy, _ = cute.arch.block_idx()
        tx = Int32(tidx) % 16
        ty = Int32(tidx) // 16
        row0 = Int32(bidx) * BM
        col0 = Int32(bidy) * BN
        smem = cutlass.memory.SmemAllocator()
        sA = smem.allocate_tensor(CT, cute.make_layout((BK, BM), stride=(BM + PAD, 1)),
                                  byte_alignment=16)
        sB = smem.allocate_tensor(CT, cute.make_layout((BK, BN), stride=(BN, 1)),
                                  byte_alignment=16)
        acc = cute.make_rmem_tensor(cute.make_layout((TM, TN), stride=(TN, 1)), CT)
        for i in cutlass.range_constexpr(TM):
            for j in cutlass.range_constexpr(TN):
                acc[i, j] = CT(0.0)
        ktiles = (k + BK - 1) // BK
        for kt in cutlass.range(ktiles):
            k0 = kt * BK
            # a slice: BM rows × BK k; consecutive threads walk k (row-major a coalesces)
            for r in cutlass.range_constexpr(LOADS_A):
                e = Int32(tidx) + r * SIMT_THREADS
                kk = e % BK
                ii = e // BK
                gi = row0 + ii
                gk = k0 + kk
                v = CT(0.0)
                if gi < m:
                    if gk < k:
                        v = CT(cute.make_tensor(pa + Int64(gi) * sam + Int64(gk) * sak,
                                                cute.make_layout(1))[0])
                sA[kk, ii] = v
            # b slice: BK k × BN cols; consecutive threads walk n (row-major b coalesces)
            for r in cutlass.range_constexpr(LOADS_B):
                e = Int32(tidx) + r * SIMT_THREADS
                jj = e % BN
                kk = e // BN
                gj = col0 + jj
                gk = k0 + kk
                v = CT(0.0)
                if gj < n:
                    if gk < k:
                        v = CT(cute.make_tensor(pb + Int64(gk) * sbk + Int64(gj) * sbn,
                                                cute.make_layout(1))[0])
                sB[kk, jj] = v
            cute.arch.sync_threads()
            for kk in cutlass.range_constexpr(BK):
                av = cute.make_rmem_tensor(cute.make_layout(TM), CT)
                bv = cute.make_rmem_tensor(cute.make_layout(TN), CT)
                for i in cutlass.range_constexpr(TM):
                    av[i] = sA[kk, (i // 4) * HM + ty * 4 + i % 4]
                for j in cutlass.range_constexpr(TN):
                    bv[j] = sB[kk, (j // 4) * HN + tx * 4 + j % 4]
                for i in cutlass.range_constexpr(TM):
                    for j in cutlass.range_constexpr(TN):
                        acc[i, j] = acc[i, j] + av[i] * bv[j]
            cute.arch.sync_threads()
        use_beta = beta != Float64(0.0)
        hb = has_bias != 0
        for i in cutlass.range_constexpr(TM):
            gi = row0 + (i // 4) * HM + ty * 4 + i % 4
            for j in cutlass.range_constexpr(TN):
                gj = col0 + (j // 4) * HN + tx * 4 + j % 4
                if gi < m:
                    if gj < n:
                        epilogue_value(acc[i, j], pc, pbias, Int64(gi) * csm + Int64(gj) * csn,
                                       Int64(gj) * bs, alpha, beta, use_beta, hb, act, OT)

    @cute.jit
    def launch(pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer, pbias: cute.Pointer,
               m: Int32, n: Int32, k: Int32, sam: Int64, sak: Int64, sbk: Int64, sbn: Int64,
               csm: Int64, csn: Int64, bs: Int64, alpha: Float64, beta: Float64,
               has_bias: Int32, stream):
        kernel(pa, pb, pc, pbias, m, n, k, sam, sak, sbk, sbn, csm, csn, bs, alpha, beta,
               has_bias).launch(
            grid=[(m + BM - 1) // BM, (n + BN - 1) // BN, 1], block=[SIMT_THREADS, 1, 1],
            smem=simt_smem(dt), stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=t.width // 8)

    args = [ptr(T), ptr(T), ptr(OT), ptr(OT), Int32(1), Int32(1), Int32(1)] + \
        [Int64(1)] * 7 + [Float64(1.0), Float64(0.0), Int32(0), make_fake_stream()]
    return launch, args
