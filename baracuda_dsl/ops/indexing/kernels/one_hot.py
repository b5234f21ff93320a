"""one_hot: for every dense output element ``e < n · classes`` (row ``r = e div classes``,
class ``c = e mod classes``; the row ``r`` decomposed row-major over idx's collapsed extents
``d[8-R..7]``)

    j = idx[Σ r_k·is_k];  j += classes if j < 0
    out[e] = one if j == c else 0        (opaque ``itemsize`` words; ``one`` = bit pattern of 1)

A bad ``j`` (outside [0, classes) after the wrap) gives a row of zeros and sets ``status[0] = 1``
when ``has_status != 0`` (stored by the thread of class 0).  Index math in Int64.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

from ..specs.indexing import HOT_THREADS as THREADS

WORD = {1: cutlass.Uint8, 2: cutlass.Uint16, 4: cutlass.Uint32, 8: cutlass.Uint64}


def build(knobs: dict):
    W = WORD[int(knobs["itemsize"])]
    IX = Int32 if knobs["index"] == "i32" else Int64
    R = int(knobs["rank"])

    @cute.kernel
    def kernel(pidx: cute.Pointer, pout: cute.Pointer, pst: cute.Pointer, has_status: Int32,
               n: Int64, classes: Int64, one: Int64,
               d0: Int64, d1: Int64, d2: Int64, d3: Int64, d4: Int64, d5: Int64, d6: Int64,
               d7: Int64,
               is0: Int64, is1: Int64, is2: Int64, is3: Int64, is4: Int64, is5: Int64,
               is6: Int64, is7: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        dd = [d0, d1, d2, d3, d4, d5, d6, d7]
        si = [is0, is1, is2, is3, is4, is5, is6, is7]
        e = Int64(bidx) * Int64(THREADS) + Int64(tidx)
        if e < n * classes:
            rem = e // classes
            c = e - rem * classes
            offi = Int64(0)
            for k in cutlass.range_constexpr(R - 1, 0, -1):
                q = rem // dd[8 - R + k]
                offi = offi + (rem - q * dd[8 - R + k]) * si[8 - R + k]
                rem = q
            offi = offi + rem * si[8 - R]
            j = Int64(cute.make_tensor(pidx + offi, cute.make_layout(1))[0])
            j = cutlass.select_(j < Int64(0), j + classes, j)
            bad = (j < Int64(0)) | (j >= classes)
            hot = cutlass.select_(j == c, one, Int64(0))
            cute.make_tensor(pout + e, cute.make_layout(1))[0] = W(hot)
            if bad:
                if has_status != Int32(0):
                    if c == Int64(0):
                        cute.make_tensor(pst, cute.make_layout(1))[0] = Int32(1)

    @cute.jit
    def launch(pidx: cute.Pointer, pout: cute.Pointer, pst: cute.Pointer, has_status: Int32,
               n: Int64, classes: Int64, one: Int64,
               d0: Int64, d1: Int64, d2: Int64, d3: Int64, d4: Int64, d5: Int64, d6: Int64,
               d7: Int64,
               is0: Int64, is1: Int64, is2: Int64, is3: Int64, is4: Int64, is5: Int64,
               is6: Int64, is7: Int64, stream):
        kernel(pidx, pout, pst, has_status, n, classes, one, d0, d1, d2, d3, d4, d5, d6, d7,
               is0, is1, is2, is3, is4, is5, is6, is7).launch(
            grid=[Int32((n * classes + THREADS - 1) // THREADS), 1, 1], block=[THREADS, 1, 1],
            smem=0, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t, a):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=a)

    isz = int(knobs["itemsize"])
    args = ([ptr(IX, IX.width // 8), ptr(W, isz), ptr(Int32, 4), Int32(0)]
            + [Int64(1)] * 19 + [make_fake_stream()])
    return launch, args
