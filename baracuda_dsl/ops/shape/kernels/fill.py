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

THREADS = 256
ILP = 4
WORD = {1: cutlass.Uint8, 2: cutlass.Uint16, 4: cutlass.Uint32, 8: cutlass.Uint64}


def build(knobs: dict):
    isz = int(knobs["itemsize"])
    R = int(knobs["rank"])
    wide = int(knobs["wide"])
    W = WORD[isz]
    I = Int64 if wide else Int32

    @cute.kernel
    def kernel(pdst: cute.Pointer, n: Int64, v0: Int64, v1: Int64, odd: Int64,
               o0: Int64, o1: Int64, o2: Int64, o3: Int64, o4: Int64, o5: Int64, o6: Int64,
               o7: Int64,
               d0: Int64, d1: Int64, d2: Int64, d3: Int64, d4: Int64, d5: Int64, d6: Int64,
               d7: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        oo = [o0, o1, o2, o3, o4, o5, o6, o7]
        dd = [d0, d1, d2, d3, d4, d5, d6, d7]
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
    def launch(pdst: cute.Pointer, n: Int64, v0: Int64, v1: Int64, odd: Int64,
               o0: Int64, o1: Int64, o2: Int64, o3: Int64, o4: Int64, o5: Int64, o6: Int64,
               o7: Int64,
               d0: Int64, d1: Int64, d2: Int64, d3: Int64, d4: Int64, d5: Int64, d6: Int64,
               d7: Int64, stream):
        kernel(pdst, n, v0, v1, odd, o0, o1, o2, o3, o4, o5, o6, o7,
               d0, d1, d2, d3, d4, d5, d6, d7).launch(
            grid=[Int32((n + THREADS * ILP - 1) // (THREADS * ILP)), 1, 1],
            block=[THREADS, 1, 1], smem=0, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    args = [make_ptr(W, 16, cute.AddressSpace.gmem, assumed_align=isz)] + \
        [Int64(1)] * 20 + [make_fake_stream()]
    return launch, args
