"""Backward of sort / top-k / kthvalue: a scatter through the saved indices.

``mode=zero``:    ``dx[g] = 0`` for the dense ``dx`` (``total`` words), used first when only
                  ``ncols < n`` columns are scattered (top-k, kthvalue).
``mode=scatter``: for ``g = row·ncols + c``: ``i = idx[row, c]`` (int64); if ``0 ≤ i < n``:
                  ``dx[row, i] = dy[row, c]``.  Indices of a row are distinct (a permutation /
                  selection), so every ``dx`` element has one writer: deterministic.
Words of ``itemsize`` bytes (f16/bf16: 2, f32: 4, f64: 8); 7 outer dims with per-operand
strides (``y``, ``i``, ``x``) and axis strides ``ya``, ``ia``, ``xa``.
"""

from __future__ import annotations

import cutlass.cute as cute
from cutlass import Int32, Int64, const_expr

from ..specs.sort import ELEM_THREADS as THREADS
from .sort_common import WORD
from ....blocks.gmem import dims_args, gload, gstore, row_offset7



def build(knobs):
    """``knobs``: a :class:`~baracuda_dsl.ops.sorting.specs.sort.ScatterBackwardKnobs`."""
    isz = knobs.itemsize
    W = WORD[isz * 8]
    zero = knobs.mode == "zero"

    @cute.kernel
    def kernel(pdy: cute.Pointer, pidx: cute.Pointer, pdx: cute.Pointer, n: Int64, total: Int64,
               ncols: Int64, ya: Int64, ia: Int64, xa: Int64,
               e0: Int64, e1: Int64, e2: Int64, e3: Int64, e4: Int64, e5: Int64, e6: Int64,
               y0: Int64, y1: Int64, y2: Int64, y3: Int64, y4: Int64, y5: Int64, y6: Int64,
               i0: Int64, i1: Int64, i2: Int64, i3: Int64, i4: Int64, i5: Int64, i6: Int64,
               x0: Int64, x1: Int64, x2: Int64, x3: Int64, x4: Int64, x5: Int64, x6: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        g = Int64(bidx) * Int64(THREADS) + Int64(tidx)
        if g < total:
            if const_expr(zero):
                gstore(pdx, g, W(0))
            else:
                row = g // ncols
                c = g - row * ncols
                ee = [e0, e1, e2, e3, e4, e5, e6]
                i = Int64(gload(pidx, row_offset7(row, ee, [i0, i1, i2, i3, i4, i5, i6]) + c * ia))
                if (i >= Int64(0)) & (i < n):
                    v = gload(pdy, row_offset7(row, ee, [y0, y1, y2, y3, y4, y5, y6]) + c * ya)
                    gstore(pdx, row_offset7(row, ee, [x0, x1, x2, x3, x4, x5, x6]) + i * xa, v)

    @cute.jit
    def launch(pdy: cute.Pointer, pidx: cute.Pointer, pdx: cute.Pointer, n: Int64, total: Int64,
               ncols: Int64, ya: Int64, ia: Int64, xa: Int64,
               e0: Int64, e1: Int64, e2: Int64, e3: Int64, e4: Int64, e5: Int64, e6: Int64,
               y0: Int64, y1: Int64, y2: Int64, y3: Int64, y4: Int64, y5: Int64, y6: Int64,
               i0: Int64, i1: Int64, i2: Int64, i3: Int64, i4: Int64, i5: Int64, i6: Int64,
               x0: Int64, x1: Int64, x2: Int64, x3: Int64, x4: Int64, x5: Int64, x6: Int64,
               stream):
        kernel(pdy, pidx, pdx, n, total, ncols, ya, ia, xa, e0, e1, e2, e3, e4, e5, e6,
               y0, y1, y2, y3, y4, y5, y6, i0, i1, i2, i3, i4, i5, i6,
               x0, x1, x2, x3, x4, x5, x6).launch(
            grid=[Int32((total + THREADS - 1) // THREADS), 1, 1], block=[THREADS, 1, 1],
            smem=0, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    args = [make_ptr(W, 16, cute.AddressSpace.gmem, assumed_align=isz),
            make_ptr(Int64, 16, cute.AddressSpace.gmem, assumed_align=8),
            make_ptr(W, 16, cute.AddressSpace.gmem, assumed_align=isz),
            Int64(1), Int64(1), Int64(1), Int64(1), Int64(1), Int64(1)] + dims_args(28) + [
        make_fake_stream()]
    return launch, args
