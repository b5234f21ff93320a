"""Dropout forward / backward on flat contiguous operands:

    keep(i) = word(i) ≥ thr          (word(i): 32-bit word i of the stream (seed, offset), wpe = 1)
    y[i]    = keep(i) ? x[i]·s : 0    (computed in f32 for f32/f16/bf16, f64 for f64)
    mask[i] = keep(i)                 (uint8; only when has_mask != 0)

The backward is this kernel on (dy, dx) with has_mask = 0: it regenerates keep(i) from
(seed, offset), so no mask is stored.  Each thread handles Philox blocks
``b = (c·BPT + j)·THREADS + t``: 4 consecutive elements, one vector load + one vector store each
(x, y aligned to 4 elements, mask to 4 bytes; element-wise past the end).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Float64, Int32, Int64, Uint8, Uint64

from ..specs.random import BPT, THREADS, DropoutKnobs
from ....blocks.philox import philox_block
from .random_fill import STORAGE


def build(knobs: DropoutKnobs):
    dts = knobs.dtype
    T = STORAGE[dts]
    CT = Float64 if dts == "f64" else Float32
    E = 4
    PER_CTA = THREADS * BPT
    VA = min(E, 16 // (T.width // 8))   # elements per aligned 16-byte (or smaller) access

    @cute.kernel
    def kernel(px: cute.Pointer, py: cute.Pointer, pm: cute.Pointer, n: Int64, seed: Int64,
               offset: Int64, thr: Int64, scale: Float64, has_mask: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        nblk = (n + Int64(3)) // Int64(4)
        s = CT(scale)
        rx = cute.make_rmem_tensor(cute.make_layout(E), T)
        ry = cute.make_rmem_tensor(cute.make_layout(E), T)
        rm = cute.make_rmem_tensor(cute.make_layout(E), Uint8)
        for j in cutlass.range_constexpr(BPT):
            blk = (Int64(bidx) * Int64(BPT) + Int64(j)) * Int64(THREADS) + Int64(tidx)
            if blk < nblk:
                e0 = blk * Int64(E)
                full = e0 + Int64(E) <= n
                if full:
                    gx = cute.make_tensor(px + cute.assume(e0, divby=VA), cute.make_layout(E))
                    cute.autovec_copy(gx, rx)
                else:
                    for e in cutlass.range_constexpr(E):
                        xv = T(0.0)
                        if e0 + Int64(e) < n:
                            xv = cute.make_tensor(px + e0 + Int64(e), cute.make_layout(1))[0]
                        rx[e] = xv
                w0, w1, w2, w3 = philox_block(seed, offset, blk)
                ws = [w0, w1, w2, w3]
                for e in cutlass.range_constexpr(E):
                    keep = Int64(Uint64(ws[e])) >= thr
                    ry[e] = T(cutlass.select_(keep, CT(rx[e]) * s, CT(0.0)))
                    rm[e] = cutlass.select_(keep, Uint8(1), Uint8(0))
                if full:
                    gy = cute.make_tensor(py + cute.assume(e0, divby=VA), cute.make_layout(E))
                    cute.autovec_copy(ry, gy)
                    if has_mask != Int32(0):
                        gm = cute.make_tensor(pm + cute.assume(e0, divby=E), cute.make_layout(E))
                        cute.autovec_copy(rm, gm)
                else:
                    for e in cutlass.range_constexpr(E):
                        if e0 + Int64(e) < n:
                            cute.make_tensor(py + e0 + Int64(e), cute.make_layout(1))[0] = ry[e]
                            if has_mask != Int32(0):
                                cute.make_tensor(pm + e0 + Int64(e), cute.make_layout(1))[0] = \
                                    rm[e]

    @cute.jit
    def launch(px: cute.Pointer, py: cute.Pointer, pm: cute.Pointer, n: Int64, seed: Int64,
               offset: Int64, thr: Int64, scale: Float64, has_mask: Int32, stream):
        nblk = (n + Int64(3)) // Int64(4)
        kernel(px, py, pm, n, seed, offset, thr, scale, has_mask).launch(
            grid=[Int32((nblk + PER_CTA - 1) // PER_CTA), 1, 1], block=[THREADS, 1, 1],
            smem=0, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    al = T.width // 8 * VA
    args = [make_ptr(T, 16, cute.AddressSpace.gmem, assumed_align=al),
            make_ptr(T, 16, cute.AddressSpace.gmem, assumed_align=al),
            make_ptr(Uint8, 16, cute.AddressSpace.gmem, assumed_align=4),
            Int64(1), Int64(0), Int64(0), Int64(0), Float64(1.0), Int32(0),
            make_fake_stream()]
    return launch, args
