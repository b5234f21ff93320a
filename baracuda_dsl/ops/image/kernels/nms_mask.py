"""NMS suppression mask: CTA (r, c) of a (ceil(K/64), ceil(K/64)) grid, 64 threads; thread t of a
CTA with r <= c takes sorted position ``i = r·64 + t`` and sets bit j of
``mask[i·cb + c]`` when the box at sorted position ``j' = c·64 + j`` (``j' > i``) overlaps it
with IoU > ``thr`` (and has its category when ``has_idx``).  Boxes are read through ``order``
(sorted position → box index), any strides.  IoU as torchvision: ``inter / (area_a + area_b −
inter)`` with ``inter = max(min(x2) − max(x1), 0)·max(min(y2) − max(y1), 0)``, in f32 (f64 for
f64) — a NaN IoU suppresses nothing.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float64, Int32, Int64, Uint64

from ....blocks.gmem import example_args, gload, gmem_ptr, gstore
from ....blocks.reduction_base import compute_type, element_type
from ..specs.nms import BLOCK, NmsMaskKnobs


def build(knobs: NmsMaskKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)

    def sel(cond, a, b):
        t = type(a)
        return t(cutlass.select_(cond, a, t(b)))

    def box(pb, j, bs0, bs1):
        base = j * bs0
        return (CT(gload(pb, base)), CT(gload(pb, base + bs1)), CT(gload(pb, base + 2 * bs1)),
                CT(gload(pb, base + 3 * bs1)))

    @cute.kernel
    def kernel(pb: cute.Pointer, po: cute.Pointer, pc: cute.Pointer, pm: cute.Pointer, k: Int64,
               cb: Int64, bs0: Int64, bs1: Int64, is0: Int64, has_idx: Int64, thr: Float64):
        tidx, _, _ = cute.arch.thread_idx()
        rb, cbk, _ = cute.arch.block_idx()
        r = Int64(rb)
        col = Int64(cbk)
        row = r * Int64(BLOCK) + Int64(tidx)
        if (r <= col) & (row < k):
            ib = Int64(gload(po, row))
            ax1, ay1, ax2, ay2 = box(pb, ib, bs0, bs1)
            area_a = (ax2 - ax1) * (ay2 - ay1)
            use_c = has_idx != Int64(0)
            cat_a = Int64(0)
            if use_c:
                cat_a = Int64(gload(pc, ib * is0))
            t = CT(thr)
            col0 = col * Int64(BLOCK)
            size = k - col0
            size = sel(size > Int64(BLOCK), Int64(BLOCK), size)
            start = sel(r == col, Int64(tidx) + Int64(1), Int64(0))
            bits = Uint64(0)
            for j in cutlass.range(start, size):
                jb = Int64(gload(po, col0 + j))
                bx1, by1, bx2, by2 = box(pb, jb, bs0, bs1)
                left = sel(bx1 > ax1, bx1, ax1)
                right = sel(bx2 < ax2, bx2, ax2)
                top = sel(by1 > ay1, by1, ay1)
                bottom = sel(by2 < ay2, by2, ay2)
                wd = right - left
                ht = bottom - top
                wd = sel(wd > CT(0.0), wd, CT(0.0))
                ht = sel(ht > CT(0.0), ht, CT(0.0))
                inter = wd * ht
                area_b = (bx2 - bx1) * (by2 - by1)
                sup = inter / (area_a + area_b - inter) > t
                if use_c:
                    sup = sup & (Int64(gload(pc, jb * is0)) == cat_a)
                bits = bits | sel(sup, Uint64(1) << Uint64(j), Uint64(0))
            gstore(pm, row * cb + col, bits)

    @cute.jit
    def launch(pb: cute.Pointer, po: cute.Pointer, pc: cute.Pointer, pm: cute.Pointer, k: Int64,
               cb: Int64, bs0: Int64, bs1: Int64, is0: Int64, has_idx: Int64, thr: Float64,
               stream):
        kernel(pb, po, pc, pm, k, cb, bs0, bs1, is0, has_idx, thr).launch(
            grid=[Int32(cb), Int32(cb), 1], block=[BLOCK, 1, 1], smem=0, stream=stream)

    isz = T.width // 8
    args = example_args([gmem_ptr(T, isz), gmem_ptr(Int64, 8), gmem_ptr(Int64, 8),
                         gmem_ptr(Uint64, 8)], 6, tail=[Float64(0.5)])
    return launch, args
