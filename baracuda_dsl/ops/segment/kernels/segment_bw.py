"""Gather-form backward of a segment reduction: for batch b, data row k < n, column c < C,
with s = keys[k] (int32, already wrapped; s ∉ [0, nseg) for a bad id):

    sum   dx[b, k, c] = dy[b, s, c]
    mean  dx[b, k, c] = dy[b, s, c] / (off[s+1] − off[s])
    arg   dx[b, k, c] = dy[b, s, c] if arg[b, s, c] == k else 0     (max / min: first extreme)

and 0 for a bad id.  One CTA per row k (grid x), threads stride the columns (grid y chunks of
128 columns), grid z = batches from b0.  Each dx element written once: deterministic.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

from ....blocks.gmem import example_args, gmem_ptr, split_stream
from ..specs.segment import THREADS, SegmentBwKnobs, acc_of
from .common import ELEMENT, load1


def build(knobs: SegmentBwKnobs):
    op, dt = knobs.op, knobs.dtype
    T = ELEMENT[dt]
    A = ELEMENT[acc_of(dt)]

    @cute.kernel
    def kernel(pdy: cute.Pointer, pkeys: cute.Pointer, poff: cute.Pointer, parg: cute.Pointer,
               pdx: cute.Pointer, n: Int64, nseg: Int64, C: Int64, dyrs: Int64, dycs: Int64,
               dybs: Int64, dxrs: Int64, dxcs: Int64, dxbs: Int64, b0: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bx, by, bz = cute.arch.block_idx()
        _, gy, _ = cute.arch.grid_dim()
        k = Int64(bx)
        b = b0 + Int64(bz)
        s = Int64(load1(pkeys, k))
        ok = (s >= Int64(0)) & (s < nseg)
        s = Int64(cutlass.select_(ok, s, Int64(0)))
        scale = A(1)
        if cutlass.const_expr(op == "mean"):
            if ok:
                cnt = Int64(load1(poff, s + Int64(1))) - Int64(load1(poff, s))
                scale = A(1) / A(Int64(cutlass.select_(cnt > Int64(0), cnt, Int64(1))))
        nch = (C + Int64(THREADS - 1)) // Int64(THREADS)
        nmine = (nch - Int64(by) + Int64(gy) - Int64(1)) // Int64(gy)
        nmine = Int64(cutlass.select_(nmine < Int64(0), Int64(0), nmine))
        for q in cutlass.range(Int32(0), Int32(nmine)):
            c = (Int64(by) + Int64(q) * Int64(gy)) * Int64(THREADS) + Int64(tidx)
            if c < C:
                v = T(0)
                if ok:
                    g = load1(pdy, b * dybs + s * dyrs + c * dycs)
                    if cutlass.const_expr(op == "mean"):
                        v = T(A(g) * scale)
                    elif cutlass.const_expr(op == "arg"):
                        a = Int64(load1(parg, (b * nseg + s) * C + c))
                        v = T(cutlass.select_(a == k, g, T(0)))
                    else:
                        v = g
                cute.make_tensor(pdx + (b * dxbs + k * dxrs + c * dxcs), cute.make_layout(1))[0] = v

    @cute.jit
    def launch(pdy: cute.Pointer, pkeys: cute.Pointer, poff: cute.Pointer, parg: cute.Pointer,
               pdx: cute.Pointer, n: Int64, *rest):
        scalars, stream = split_stream(rest)
        kernel(pdy, pkeys, poff, parg, pdx, n, *scalars).launch(
            grid=[Int32(n), 1, 1], block=[THREADS, 1, 1], stream=stream)

    ptrs = [gmem_ptr(t, t.width // 8) for t in (T, Int32, Int64, Int64, T)]
    return launch, example_args(ptrs, 10)
