"""Pooling backward in gather form: one thread per element of ``dx`` (N, C, Id, Ih, Iw), summing
over the outputs whose window may cover it (:func:`.pool_common.range_bw`, per dim) in a fixed
order — d, then h, then w ascending — so every run gives the same bits (no atomics).

``max``: ``dx[i] = Σ dy[o]`` over those outputs ``o`` whose saved int64 index equals i's flattened
spatial index ``(d·Ih + h)·Iw + w``.  ``avg``: ``dx[i] = Σ dy[o] / divisor(o)`` with the forward's
divisor (``divisor`` when non-zero, else the count_include_pad size or the in-input count).
Fixed or adaptive windows.  Accumulation in f32 (f64 for f64); index math in Int32 with
magic-number divisions, or Int64 (``wide``).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int64

from ....blocks.gmem import example_args, gload, gmem_ptr, gstore
from ....blocks.image_index import cast_all, index_type, isel
from ....blocks.image_index import decompose_ncdhw_ix as decompose_fast
from ....blocks.reduction_base import compute_type, element_type
from ..specs.pool import BW_GROUPS, PoolKnobs
from .pool_common import avg_size, launcher, range_bw, thread_index


def build(knobs: PoolKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    IX = index_type(knobs.wide)
    is_max = knobs.op == "max"

    @cute.kernel
    def kernel(pdy: cute.Pointer, pdx: cute.Pointer, pidx: cute.Pointer, n: Int64, e, w, gs, js,
               xs, fl, mg, wm):
        _, C, Id, Ih, Iw, Od, Oh, Ow = cast_all(e, IX)
        kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw = cast_all(w, IX)
        gs0, gs1, gs2, gs3, gs4 = cast_all(gs, IX)
        js0, js1, js2, js3, js4 = cast_all(js, IX)
        xs0, xs1, xs2, xs3, xs4 = cast_all(xs, IX)
        adaptive, cip, divisor, cl = fl
        ad = adaptive != Int64(0)
        i = thread_index(IX)
        if i < IX(n):
            b, c, zd, zh, zw = decompose_fast(i, C, Id, Ih, Iw, cl, mg, IX)
            fd, cd = range_bw(zd, Id, Od, kd, sd, pd, dd, ad, wm[4:8], IX)
            fh, ch = range_bw(zh, Ih, Oh, kh, sh, ph, dh, ad, wm[12:16], IX)
            fw, cw = range_bw(zw, Iw, Ow, kw, sw, pw, dw, ad, wm[20:24], IX)
            gbase = b * gs0 + c * gs1
            acc = CT(0.0)
            if cutlass.const_expr(is_max):
                jbase = b * js0 + c * js1
                me = Int64((zd * Ih + zh) * Iw + zw)
                for a in cutlass.range(cd):
                    od = fd + a
                    for bb in cutlass.range(ch):
                        oh = fh + bb
                        grow = gbase + od * gs2 + oh * gs3
                        jrow = jbase + od * js2 + oh * js3
                        for cc in cutlass.range(cw):
                            ow = fw + cc
                            hit = Int64(gload(pidx, jrow + ow * js4)) == me
                            g = CT(gload(pdy, grow + ow * gs4))
                            acc = acc + CT(cutlass.select_(hit, g, CT(0.0)))
            else:
                use_div = divisor != Int64(0)
                incl = cip != Int64(0)
                for a in cutlass.range(cd):
                    od = fd + a
                    qd, vd = avg_size(od, Id, Od, kd, sd, pd, ad, wm[2:4], IX)
                    for bb in cutlass.range(ch):
                        oh = fh + bb
                        qh, vh = avg_size(oh, Ih, Oh, kh, sh, ph, ad, wm[10:12], IX)
                        grow = gbase + od * gs2 + oh * gs3
                        qdh = qd * qh
                        vdh = vd * vh
                        for cc in cutlass.range(cw):
                            ow = fw + cc
                            qw, vw = avg_size(ow, Iw, Ow, kw, sw, pw, ad, wm[18:20], IX)
                            cnt = isel(incl, qdh * qw, vdh * vw, IX)
                            div = Int64(cutlass.select_(use_div, divisor, Int64(cnt)))
                            acc = acc + CT(gload(pdy, grow + ow * gs4)) / CT(div)
            gstore(pdx, b * xs0 + c * xs1 + zd * xs2 + zh * xs3 + zw * xs4, T(acc))

    isz = T.width // 8
    args = example_args([gmem_ptr(T, isz), gmem_ptr(T, isz), gmem_ptr(Int64, 8)],
                        1 + sum(BW_GROUPS))
    return launcher(kernel, BW_GROUPS), args
