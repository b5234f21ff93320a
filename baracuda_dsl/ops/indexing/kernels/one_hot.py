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

from ....blocks.gmem import WORD, example_args, gmem_ptr, groups, split_stream
from ..specs.indexing import HOT_THREADS as THREADS, OneHotKnobs


def build(knobs: OneHotKnobs):
    W = WORD[knobs.itemsize]
    IX = Int32 if knobs.index == "i32" else Int64
    R = knobs.rank

    @cute.kernel
    def kernel(pidx: cute.Pointer, pout: cute.Pointer, pst: cute.Pointer, has_status: Int32,
               n: Int64, classes: Int64, one: Int64, dd, si):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
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
               n: Int64, classes: Int64, one: Int64, *rest):
        dims, stream = split_stream(rest)
        kernel(pidx, pout, pst, has_status, n, classes, one, *groups(dims)).launch(
            grid=[Int32((n * classes + THREADS - 1) // THREADS), 1, 1], block=[THREADS, 1, 1],
            smem=0, stream=stream)

    ptrs = [gmem_ptr(IX, IX.width // 8), gmem_ptr(W, knobs.itemsize), gmem_ptr(Int32, 4),
            Int32(0)]
    return launch, example_args(ptrs, 19)
