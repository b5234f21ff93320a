"""RoI forward: one thread per element of the dense (K, C, PH, PW) output; input (N, C, H, W)
and boxes (K, 5) of any strides.

``align``: the mean of the bin's bilinear samples (:mod:`.roi_common`).  ``pool``: the bin's
maximum (``v > m`` from −FLT_MAX: a NaN never wins; an empty bin gives 0 and argmax −1), with
the int64 argmax ``h·W + w`` written when ``want_idx``.  Coordinates and sums in f32 (f64 for
f64); Int64 index math.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float64, Int64

from ....blocks.gmem import example_args, gload, gmem_ptr, gstore
from ....blocks.reduction_base import compute_type, element_type
from ..specs.roi import FW_GROUPS, RoiKnobs
from .roi_common import (align_geometry, bilinear_taps, box_batch, decompose4, element_index,
                         launcher, pool_bin, sample_pos, sel)

FLT_MAX = 3.4028234663852886e38


def build(knobs: RoiKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    is_align = knobs.op == "align"

    @cute.kernel
    def kernel(px: cute.Pointer, pb: cute.Pointer, py: cute.Pointer, pidx: cute.Pointer,
               n: Int64, e, xs, bs, fl, scale: Float64):
        N, C, H, W, PH, PW, sampling, aligned = e
        want = fl[0]
        i = element_index()
        if i < n:
            k, c, ph, pw = decompose4(i, C, PH, PW)
            b, ok = box_batch(pb, k, bs, N)
            base = b * xs[0] + c * xs[1]
            if cutlass.const_expr(is_align):
                y0, x0, sy, sx, gh, gw, cnt = align_geometry(pb, k, bs, scale, ph, pw, PH, PW,
                                                             sampling, aligned, CT)
                acc = CT(0.0)
                if ok:
                    for iy in cutlass.range(gh):
                        y = sample_pos(y0, iy, sy, gh, CT)
                        for ix in cutlass.range(gw):
                            x = sample_pos(x0, ix, sx, gw, CT)
                            inside, yl, yh, xl, xh, w1, w2, w3, w4 = bilinear_taps(y, x, H, W, CT)
                            rl = base + yl * xs[2]
                            rh = base + yh * xs[2]
                            v = (w1 * CT(gload(px, rl + xl * xs[3]))
                                 + w2 * CT(gload(px, rl + xh * xs[3]))
                                 + w3 * CT(gload(px, rh + xl * xs[3]))
                                 + w4 * CT(gload(px, rh + xh * xs[3])))
                            acc = acc + sel(inside, v, CT(0.0))
                gstore(py, i, T(acc / CT(cnt)))
            else:
                hs, he = pool_bin(pb, k, bs, scale, ph, PH, H, 2, 4, CT)
                ws, we = pool_bin(pb, k, bs, scale, pw, PW, W, 1, 3, CT)
                empty = (he <= hs) | (we <= ws) | (ok == False)  # noqa: E712
                m = sel(empty, CT(0.0), CT(-FLT_MAX))
                mi = Int64(-1)
                if ok:
                    for a in cutlass.range(he - hs):
                        h = hs + a
                        row = base + h * xs[2]
                        for bb in cutlass.range(we - ws):
                            w = ws + bb
                            v = CT(gload(px, row + w * xs[3]))
                            take = v > m
                            m = sel(take, v, m)
                            mi = sel(take, h * W + w, mi)
                gstore(py, i, T(m))
                if want != Int64(0):
                    gstore(pidx, i, mi)

    isz = T.width // 8
    args = example_args([gmem_ptr(T, isz), gmem_ptr(T, isz), gmem_ptr(T, isz),
                         gmem_ptr(Int64, 8)], 1 + sum(FW_GROUPS), tail=[Float64(1.0)])
    return launcher(kernel, 4, 0, FW_GROUPS), args
