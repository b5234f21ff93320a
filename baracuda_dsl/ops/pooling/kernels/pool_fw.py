"""Pooling forward: one thread per output element of a (N, C, Od, Oh, Ow) output (1-/2-D problems
padded in front with size-1 dims), any input strides, output (and indices) strides given.

``max``: the window's maximum, a NaN wins (``v > m or v != v``, torch's rule: the last NaN's
index); the int64 index of the winner into the flattened spatial input ``(d·Ih + h)·Iw + w`` is
written when ``want_idx``; the index starts at the window's first tap inside the input (torch).
``avg``: the sum of the taps inside the input divided by ``divisor`` when non-zero, else by the
count_include_pad window size (``cip``) or the number of taps inside the input; an output whose
window holds no input element is 0.  Fixed or adaptive windows (``adaptive``).  Accumulation in
f32 (f64 for f64); Int64 index math.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int64

from ....blocks.gmem import example_args, gload, gmem_ptr, gstore
from ....blocks.reduction_base import compute_type, element_type
from ..specs.pool import FW_GROUPS, PoolKnobs
from .pool_common import decompose, element_index, fw_window, launcher, sel


def build(knobs: PoolKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    is_max = knobs.op == "max"

    @cute.kernel
    def kernel(px: cute.Pointer, py: cute.Pointer, pidx: cute.Pointer, n: Int64, e, w, xs, ys,
               fl):
        _, C, Id, Ih, Iw, Od, Oh, Ow = e
        kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw = w
        adaptive, cip, divisor, cl, want = fl
        i = element_index()
        if i < n:
            b, c, od, oh, ow = decompose(i, C, Od, Oh, Ow, cl)
            fd, cd, td, qd = fw_window(od, Id, Od, kd, sd, pd, dd, adaptive)
            fh, ch, th, qh = fw_window(oh, Ih, Oh, kh, sh, ph, dh, adaptive)
            fw, cw, tw, qw = fw_window(ow, Iw, Ow, kw, sw, pw, dw, adaptive)
            base = b * xs[0] + c * xs[1]
            yoff = b * ys[0] + c * ys[1] + od * ys[2] + oh * ys[3] + ow * ys[4]
            if cutlass.const_expr(is_max):
                m = CT(float("-inf"))
                mi = (fd * Ih + fh) * Iw + fw
                for a in cutlass.range(cd):
                    zd = fd + a * td
                    for bb in cutlass.range(ch):
                        zh = fh + bb * th
                        row = base + zd * xs[2] + zh * xs[3]
                        flat_row = (zd * Ih + zh) * Iw
                        for cc in cutlass.range(cw):
                            zw = fw + cc * tw
                            v = CT(gload(px, row + zw * xs[4]))
                            take = (v > m) | (v != v)
                            m = CT(cutlass.select_(take, v, m))
                            mi = sel(take, flat_row + zw, mi)
                gstore(py, yoff, T(m))
                if want != Int64(0):
                    gstore(pidx, yoff, mi)
            else:
                acc = CT(0.0)
                for a in cutlass.range(cd):
                    zd = fd + a * td
                    for bb in cutlass.range(ch):
                        zh = fh + bb * th
                        row = base + zd * xs[2] + zh * xs[3]
                        for cc in cutlass.range(cw):
                            acc = acc + CT(gload(px, row + (fw + cc * tw) * xs[4]))
                cnt = cd * ch * cw
                div = sel(divisor != Int64(0), divisor,
                          sel(cip != Int64(0), qd * qh * qw, cnt))
                res = CT(cutlass.select_(cnt == Int64(0), CT(0.0), acc / CT(div)))
                gstore(py, yoff, T(res))

    isz = T.width // 8
    args = example_args([gmem_ptr(T, isz), gmem_ptr(T, isz), gmem_ptr(Int64, 8)],
                        1 + sum(FW_GROUPS))
    return launcher(kernel, FW_GROUPS), args
