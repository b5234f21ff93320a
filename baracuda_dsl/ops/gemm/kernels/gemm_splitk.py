"""Split-K reduction of the tensor-core GEMM (``GemmPlan`` with ``splits`` > 1):

    c[i, j] = act(alpha · Σ_{s=0}^{S-1} ws[s, i, j] + beta · c[i, j] + bias[j])

``ws`` is the float32 workspace (S, m, wsn) the ``gemm_mma`` partial products were written to
(split s = the product over its k range, alpha 1, no epilogue), row stride ``wsn`` (a multiple of
4, >= n; the columns n..wsn-1 are padding and ignored), split stride m · wsn; its base pointer is
16-byte aligned.  One thread owns 4 consecutive columns of a row: it reads them as one 16-byte
vector per split, sums the splits in order s = 0, 1, … (f32, fixed order: deterministic), then
applies the shared GEMM epilogue (``gemm_simt.epilogue_value``) element-wise to c (any strides;
c read only when beta != 0; bias (n,) stride ``bs`` read when ``has_bias``).  Knobs: ``out``
(c / bias dtype: f16, bf16, f32) and ``act``.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64

from ..specs.gemm import SPLITK_THREADS, SPLITK_VEC
from .gemm_simt import TYPES, epilogue_value


def build(knobs):
    OT = TYPES[knobs.out]
    act = knobs.act
    V = SPLITK_VEC

    @cute.kernel
    def kernel(pws: cute.Pointer, pc: cute.Pointer, pbias: cute.Pointer, m: Int32, n: Int32,
               splits: Int32, wsn: Int64, csm: Int64, csn: Int64, bs: Int64, alpha: Float32,
               beta: Float32, has_bias: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        g = Int64(bid) * Int64(SPLITK_THREADS) + Int64(tidx)
        vpr = wsn // Int64(V)                       # vectors per workspace row
        i = g // vpr
        j0 = (g - i * vpr) * Int64(V)
        if i < Int64(m):
            plane = Int64(m) * wsn
            acc = cute.make_rmem_tensor(cute.make_layout(V), Float32)
            frag = cute.make_rmem_tensor(cute.make_layout(V), Float32)
            for e in cutlass.range_constexpr(V):
                acc[e] = Float32(0.0)
            base = i * wsn + j0
            for s in cutlass.range(splits):
                off = base + Int64(s) * plane
                src = cute.make_tensor(pws + cute.assume(off, divby=V), cute.make_layout(V))
                cute.autovec_copy(src, frag)
                for e in cutlass.range_constexpr(V):
                    acc[e] = acc[e] + frag[e]
            use_beta = beta != Float32(0.0)
            hb = has_bias != 0
            for e in cutlass.range_constexpr(V):
                j = j0 + Int64(e)
                if j < Int64(n):
                    epilogue_value(acc[e], pc, pbias, i * csm + j * csn, j * bs, alpha, beta,
                                   use_beta, hb, act, OT)

    @cute.jit
    def launch(pws: cute.Pointer, pc: cute.Pointer, pbias: cute.Pointer, m: Int32, n: Int32,
               splits: Int32, wsn: Int64, csm: Int64, csn: Int64, bs: Int64, alpha: Float32,
               beta: Float32, has_bias: Int32, blocks: Int32, stream):
        kernel(pws, pc, pbias, m, n, splits, wsn, csm, csn, bs, alpha, beta, has_bias).launch(
            grid=[blocks, 1, 1], block=[SPLITK_THREADS, 1, 1], stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t, align):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=align)

    args = [ptr(Float32, 16), ptr(OT, OT.width // 8), ptr(OT, OT.width // 8),
            Int32(1), Int32(1), Int32(1), Int64(4), Int64(1), Int64(1), Int64(1),
            Float32(1.0), Float32(0.0), Int32(0), Int32(1), make_fake_stream()]
    return launch, args
