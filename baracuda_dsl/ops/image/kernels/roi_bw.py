"""RoI backward by atomic scatter, in three run-time phases of one kernel (``phase``):

0. zero the dense (N, C, H, W) accumulation buffer ``acc`` (f32; f64 for f64) — one thread an
   element;
1. one thread per ``dy`` element (K, C, PH, PW; any strides): ``align`` adds
   ``dy · w / count`` to the four taps of each in-range bilinear sample of its bin
   (torchvision's roi_align backward); ``pool`` adds ``dy`` at the saved argmax (skipped when it
   is −1 or outside ``[0, H·W)``) — ``atomicAdd`` into ``acc``, so the summation order (and the
   last bits) depend on scheduling: non-deterministic;
2. ``dx = acc`` cast to the element type (half types; f32 / f64 accumulate in ``dx`` itself).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float64, Int64

from ....blocks.gmem import example_args, gload, gmem_ptr, gstore
from ....blocks.reduction_base import compute_type, element_type
from ..specs.roi import BW_GROUPS, RoiKnobs
from .roi_common import (align_geometry, bilinear_taps, box_batch, decompose4, element_index,
                         launcher, sample_pos)


def build(knobs: RoiKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    is_align = knobs.op == "align"

    @cute.jit
    def add(pacc, off, v):
        cute.arch.atomic_add((pacc + off).llvm_ptr, v)

    @cute.kernel
    def kernel(pdy: cute.Pointer, pb: cute.Pointer, pidx: cute.Pointer, pacc: cute.Pointer,
               pdx: cute.Pointer, n: Int64, phase: Int64, e, gs, bs, js, scale: Float64):
        N, C, H, W, PH, PW, sampling, aligned = e
        i = element_index()
        if i < n:
            if phase == Int64(0):
                gstore(pacc, i, CT(0.0))
            elif phase == Int64(2):
                gstore(pdx, i, T(CT(gload(pacc, i))))
            else:
                k, c, ph, pw = decompose4(i, C, PH, PW)
                b, ok = box_batch(pb, k, bs, N)
                base = (b * C + c) * H * W
                g = CT(gload(pdy, k * gs[0] + c * gs[1] + ph * gs[2] + pw * gs[3]))
                if cutlass.const_expr(is_align):
                    y0, x0, sy, sx, gh, gw, cnt = align_geometry(pb, k, bs, scale, ph, pw, PH,
                                                                 PW, sampling, aligned, CT)
                    fc = CT(cnt)
                    if ok:
                        for iy in cutlass.range(gh):
                            y = sample_pos(y0, iy, sy, gh, CT)
                            for ix in cutlass.range(gw):
                                x = sample_pos(x0, ix, sx, gw, CT)
                                inside, yl, yh, xl, xh, w1, w2, w3, w4 = bilinear_taps(
                                    y, x, H, W, CT)
                                if inside:
                                    add(pacc, base + yl * W + xl, g * w1 / fc)
                                    add(pacc, base + yl * W + xh, g * w2 / fc)
                                    add(pacc, base + yh * W + xl, g * w3 / fc)
                                    add(pacc, base + yh * W + xh, g * w4 / fc)
                else:
                    a = Int64(gload(pidx, k * js[0] + c * js[1] + ph * js[2] + pw * js[3]))
                    if ok & (a >= Int64(0)) & (a < H * W):
                        add(pacc, base + a, g)

    isz = T.width // 8
    csz = CT.width // 8
    args = example_args([gmem_ptr(T, isz), gmem_ptr(T, isz), gmem_ptr(Int64, 8),
                         gmem_ptr(CT, csz), gmem_ptr(T, isz)], 2 + sum(BW_GROUPS),
                        tail=[Float64(1.0)])
    return launcher(kernel, 5, 1, BW_GROUPS), args
