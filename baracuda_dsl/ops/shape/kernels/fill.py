"""Strided fill: ``dst[offd(i)] = v(i)`` for the linear index ``i`` decomposed row-major over the
extents ``o[8-R..7]`` (``offd(i) = Σ_d c_d · d_d``).  The value is an opaque ``itemsize``-byte
word built from the Int64 bit pattern ``v0``; ``v(i) = v1`` when ``i & odd`` is non-zero (a
16-byte element is filled as two 8-byte words with the innermost extent 2 and ``odd = 1``), else
``v0``.  Each thread stores ``ILP`` words; ``wide=0`` does the index math in Int32.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

from ..specs.layout import FILL_ILP as ILP, FILL_THREADS as THREADS, FillKnobs
from ....blocks.gmem import WORD, example_args, gmem_ptr, groups, split_stream


def build(knobs: FillKnobs):
    isz = knobs.itemsize
    R = knobs.rank
    W = WORD[isz]
    I = Int64 if knobs.wide else Int32

    @cute.kernel
    def kernel(pdst: cute.Pointer, n: Int64, v0: Int64, v1: Int64, odd: Int64, oo, dd):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        ext = [I(oo[8 - R + d]) for d in range(R)]
        st = [I(dd[8 - R + d]) for d in range(R)]
        w0 = W(cutlass.Uint64(v0))
        w1 = W(cutlass.Uint64(v1))
        oddm = I(odd)
        nn = I(n)
        base = I(bidx) * I(THREADS * ILP) + I(tidx)
        for j in cutlass.range_constexpr(ILP):
            i = base + I(j * THREADS)
            if i < nn:
                rem = i
                off = I(0)
                for d in cutlass.range_constexpr(R - 1, 0, -1):
                    q = rem // ext[d]
                    off = off + (rem - q * ext[d]) * st[d]
                    rem = q
                off = off + rem * st[0]
                g = cute.make_tensor(pdst + Int64(off), cute.make_layout(1))
                g[0] = cutlass.select_((i & oddm) != I(0), w1, w0)

    @cute.jit
    def launch(pdst: cute.Pointer, n: Int64, v0: Int64, v1: Int64, odd: Int64, *rest):
        dims, stream = split_stream(rest)
        kernel(pdst, n, v0, v1, odd, *groups(dims)).launch(
            grid=[Int32((n + THREADS * ILP - 1) // (THREADS * ILP)), 1, 1],
            block=[THREADS, 1, 1], smem=0, stream=stream)

    return launch, example_args([gmem_ptr(W, isz)], 20)
