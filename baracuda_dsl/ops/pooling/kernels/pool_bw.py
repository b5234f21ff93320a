"""Pooling backward in gather form: one thread per element of ``dx`` (N, C, Id, Ih, Iw), summing
over the outputs whose window may cover it (:func:`.pool_common.bw_range`, per dim) in a fixed
order — d, then h, then w ascending — so every run gives the same bits (no atomics).

``max``: ``dx[i] = Σ dy[o]`` over those outputs ``o`` whose saved int64 index equals i's flattened
spatial index ``(d·Ih + h)·Iw + w``.  ``avg``: ``dx[i] = Σ dy[o] / divisor(o)`` with the forward's
divisor (``divisor`` when non-zero, else the count_include_pad size or the in-input count).
Fixed or adaptive windows.  Accumulation in f32 (f64 for f64); Int64 index math.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int64

from ....blocks.gmem import example_args, gload, gmem_ptr, gstore
from ....blocks.reduction_base import compute_type, element_type
from ..specs.pool import BW_GROUPS, PoolKnobs
from .pool_common import avg_sizes, bw_range, decompose, element_index, launcher, sel


def build(knobs: PoolKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    is_max = knobs.op == "max"

    @cute.kernel
    def kernel(pdy: cute.Pointer, pdx: cute.Pointer, pidx: cute.Pointer, n: Int64, e, w, gs, js,
               xs, fl):
        _, C, Id, Ih, Iw, Od, Oh, Ow = e
        kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw = w
        adaptive, cip, divisor, cl = fl
        i = element_index()
        if i < n:
            b, c, zd, zh, zw = decompose(i, C, Id, Ih, Iw, cl)
            fd, cd = bw_range(zd, Id, Od, kd, sd, pd, dd, adaptive)
            fh, ch = bw_range(zh, Ih, Oh, kh, sh, ph, dh, adaptive)
            fw, cw = bw_range(zw, Iw, Ow, kw, sw, pw, dw, adaptive)
            gbase = b * gs[0] + c * gs[1]
            acc = CT(0.0)
            if cutlass.const_expr(is_max):
                jbase = b * js[0] + c * js[1]
                me = (zd * Ih + zh) * Iw + zw
                for a in cutlass.range(cd):
                    od = fd + a
                    for bb in cutlass.range(ch):
                        oh = fh + bb
                        grow = gbase + od * gs[2] + oh * gs[3]
                        jrow = jbase + od * js[2] + oh * js[3]
                        for cc in cutlass.range(cw):
                            ow = fw + cc
                            hit = Int64(gload(pidx, jrow + ow * js[4])) == me
                            g = CT(gload(pdy, grow + ow * gs[4]))
                            acc = acc + CT(cutlass.select_(hit, g, CT(0.0)))
            else:
                use_div = divisor != Int64(0)
                incl = cip != Int64(0)
                for a in cutlass.range(cd):
                    od = fd + a
                    qd, vd = avg_sizes(od, Id, Od, kd, sd, pd, adaptive)
                    for bb in cutlass.range(ch):
                        oh = fh + bb
                        qh, vh = avg_sizes(oh, Ih, Oh, kh, sh, ph, adaptive)
                        grow = gbase + od * gs[2] + oh * gs[3]
                        for cc in cutlass.range(cw):
                            ow = fw + cc
                            qw, vw = avg_sizes(ow, Iw, Ow, kw, sw, pw, adaptive)
                            div = sel(use_div, divisor, sel(incl, qd * qh * qw, vd * vh * vw))
                            acc = acc + CT(gload(pdy, grow + ow * gs[4])) / CT(div)
            gstore(pdx, b * xs[0] + c * xs[1] + zd * xs[2] + zh * xs[3] + zw * xs[4], T(acc))

    isz = T.width // 8
    args = example_args([gmem_ptr(T, isz), gmem_ptr(T, isz), gmem_ptr(Int64, 8)],
                        1 + sum(BW_GROUPS))
    return launcher(kernel, BW_GROUPS), args
