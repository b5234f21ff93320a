"""1-D index gather / scatter of opaque words: for i < n,

    gather:  dst[i·ds] = src[clamp(idx[i·xs], 0, m−1)·ss]
    scatter: dst[idx[i·xs]·ds] = src[i·ss]          (skipped when idx ∉ [0, m))

Negative indices are not wrapped here (the callers normalise them); the gather clamps and the
scatter skips out-of-range indices, so a bad index can never touch memory outside the arrays.
Scatter with repeated indices leaves one of the writers' values (unspecified which).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

from ....blocks.gmem import WORD, example_args, gmem_ptr, split_stream
from ..specs.gather import THREADS, GatherKnobs


def build(knobs: GatherKnobs):
    W = WORD[knobs.itemsize]
    IX = Int32 if knobs.index == "i32" else Int64
    gather = knobs.mode == "gather"

    @cute.kernel
    def kernel(psrc: cute.Pointer, pidx: cute.Pointer, pdst: cute.Pointer, n: Int64, m: Int64,
               ss: Int64, xs: Int64, ds: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = Int64(bidx) * Int64(THREADS) + Int64(tidx)
        if i < n:
            j = Int64(cute.make_tensor(pidx + i * xs, cute.make_layout(1))[0])
            if cutlass.const_expr(gather):
                j = cutlass.select_(j < Int64(0), Int64(0), j)
                j = cutlass.select_(j >= m, m - Int64(1), j)
                v = cute.make_tensor(psrc + Int64(j) * ss, cute.make_layout(1))[0]
                cute.make_tensor(pdst + i * ds, cute.make_layout(1))[0] = v
            else:
                if j >= Int64(0):
                    if j < m:
                        v = cute.make_tensor(psrc + i * ss, cute.make_layout(1))[0]
                        cute.make_tensor(pdst + j * ds, cute.make_layout(1))[0] = v

    @cute.jit
    def launch(psrc: cute.Pointer, pidx: cute.Pointer, pdst: cute.Pointer, n: Int64, *rest):
        scalars, stream = split_stream(rest)
        kernel(psrc, pidx, pdst, n, *scalars).launch(
            grid=[Int32((n + THREADS - 1) // THREADS), 1, 1], block=[THREADS, 1, 1],
            stream=stream)

    ptrs = [gmem_ptr(t, t.width // 8) for t in (W, IX, W)]
    return launch, example_args(ptrs, 5)
