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

from ..specs.repeat import COPY_ILP as ILP, COPY_THREADS as THREADS, CopyKnobs
from ....blocks.gmem import WORD, example_args, gmem_ptr, grouped_launcher


def build(knobs: CopyKnobs):
    isz = knobs.itemsize
    R = knobs.rank
    W = WORD[isz]
    I = Int64 if knobs.wide else Int32
    MOD = R == 8

    @cute.kernel
    def kernel(psrc: cute.Pointer, pdst: cute.Pointer, n: Int64, oo, ee, ss, dd):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        ext = [I(oo[8 - R + d]) for d in range(R)]
        iext = [I(ee[8 - R + d]) for d in range(R)]
        st = [I(ss[8 - R + d]) for d in range(R)]
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

    return (grouped_launcher(kernel, THREADS, ILP),
            example_args([gmem_ptr(W, isz), gmem_ptr(W, isz)], 33))
