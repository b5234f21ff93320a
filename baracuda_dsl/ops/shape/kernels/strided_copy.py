"""Strided gather copy (the repeat / "contiguize" primitive): ``dst[offd(i)] = src[off(i)]`` where
the linear index ``i`` is decomposed row-major over the output extents ``o[8-R..7]`` into
coordinates ``c_d`` and

    off(i)  = Σ_d (c_d mod e_d) · s_d         (rank-8 SKU: ``e`` = input extents, torch repeat)
    off(i)  = Σ_d c_d · s_d                   (rank 1-4 SKUs: ``e`` unused)
    offd(i) = Σ_d c_d · d_d                   (destination strides; dense: row-major strides)

Elements are opaque ``itemsize``-byte words (u8/u16/u32/u64/u128), so one SKU serves every dtype
of that size (bool, ints, floats, complex); the plan widens the word when the innermost dim is
unit-stride and aligned (e.g. 8 bf16 → one 16-byte word), which is the vectorised path.  Each
thread copies ``ILP`` elements (all loads first, then all stores).  ``wide=0`` SKUs do the index
math in Int32 (the plan checks every index and offset fits), ``wide=1`` in Int64.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, const_expr

THREADS = 256
ILP = 4
WORD = {1: cutlass.Uint8, 2: cutlass.Uint16, 4: cutlass.Uint32, 8: cutlass.Uint64,
        16: cutlass.Uint128}


def build(knobs: dict):
    isz = int(knobs["itemsize"])
    R = int(knobs["rank"])
    wide = int(knobs["wide"])
    W = WORD[isz]
    I = Int64 if wide else Int32
    MOD = R == 8

    @cute.kernel
    def kernel(psrc: cute.Pointer, pdst: cute.Pointer, n: Int64,
               o0: Int64, o1: Int64, o2: Int64, o3: Int64, o4: Int64, o5: Int64, o6: Int64,
               o7: Int64,
               e0: Int64, e1: Int64, e2: Int64, e3: Int64, e4: Int64, e5: Int64, e6: Int64,
               e7: Int64,
               s0: Int64, s1: Int64, s2: Int64, s3: Int64, s4: Int64, s5: Int64, s6: Int64,
               s7: Int64,
               d0: Int64, d1: Int64, d2: Int64, d3: Int64, d4: Int64, d5: Int64, d6: Int64,
               d7: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        oo = [o0, o1, o2, o3, o4, o5, o6, o7]
        ee = [e0, e1, e2, e3, e4, e5, e6, e7]
        ss = [s0, s1, s2, s3, s4, s5, s6, s7]
        ext = [I(oo[8 - R + d]) for d in range(R)]
        iext = [I(ee[8 - R + d]) for d in range(R)]
        st = [I(ss[8 - R + d]) for d in range(R)]
        dd = [d0, d1, d2, d3, d4, d5, d6, d7]
        dst_st = [I(dd[8 - R + d]) for d in range(R)]
        nn = I(n)
        base = I(bidx) * I(THREADS * ILP) + I(tidx)
        frag = cute.make_rmem_tensor(cute.make_layout(ILP), W)
        dof = cute.make_rmem_tensor(cute.make_layout(ILP), I)
        for j in cutlass.range_constexpr(ILP):
            i = base + I(j * THREADS)
            if i < nn:
                rem = i
                off = I(0)
                doff = I(0)
                for d in cutlass.range_constexpr(R - 1, 0, -1):
                    q = rem // ext[d]
                    c = rem - q * ext[d]
                    doff = doff + c * dst_st[d]
                    if const_expr(MOD):
                        c = c % iext[d]
                    off = off + c * st[d]
                    rem = q
                doff = doff + rem * dst_st[0]
                if const_expr(MOD):
                    rem = rem % iext[0]
                off = off + rem * st[0]
                g = cute.make_tensor(psrc + Int64(off), cute.make_layout(1))
                frag[j] = g[0]
                dof[j] = doff
        for j in cutlass.range_constexpr(ILP):
            i = base + I(j * THREADS)
            if i < nn:
                g = cute.make_tensor(pdst + Int64(dof[j]), cute.make_layout(1))
                g[0] = frag[j]

    @cute.jit
    def launch(psrc: cute.Pointer, pdst: cute.Pointer, n: Int64,
               o0: Int64, o1: Int64, o2: Int64, o3: Int64, o4: Int64, o5: Int64, o6: Int64,
               o7: Int64,
               e0: Int64, e1: Int64, e2: Int64, e3: Int64, e4: Int64, e5: Int64, e6: Int64,
               e7: Int64,
               s0: Int64, s1: Int64, s2: Int64, s3: Int64, s4: Int64, s5: Int64, s6: Int64,
               s7: Int64,
               d0: Int64, d1: Int64, d2: Int64, d3: Int64, d4: Int64, d5: Int64, d6: Int64,
               d7: Int64, stream):
        kernel(psrc, pdst, n, o0, o1, o2, o3, o4, o5, o6, o7, e0, e1, e2, e3, e4, e5, e6, e7,
               s0, s1, s2, s3, s4, s5, s6, s7, d0, d1, d2, d3, d4, d5, d6, d7).launch(
            grid=[Int32((n + THREADS * ILP - 1) // (THREADS * ILP)), 1, 1],
            block=[THREADS, 1, 1], smem=0, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    args = [make_ptr(W, 16, cute.AddressSpace.gmem, assumed_align=isz),
            make_ptr(W, 16, cute.AddressSpace.gmem, assumed_align=isz),
            Int64(1)] + [Int64(1)] * 32 + [make_fake_stream()]
    return launch, args
