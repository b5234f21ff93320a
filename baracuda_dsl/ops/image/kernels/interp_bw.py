"""Interpolation backward in gather form: one thread per element of ``dx`` (N, C, Id, Ih, Iw),
summing over the candidate outputs along each dim (:func:`.interp_common.out_range`) in a fixed
order — d, then h, then w ascending — so every run gives the same bits (no atomics)::

    dx[i] = Σ_od Wd(od, id) · Σ_oh Wh(oh, ih) · Σ_ow Ww(ow, iw) · dy[od, oh, ow]

where ``W(o, i)`` is the forward's exact weight of input ``i`` in output ``o`` along that dim
(the sum of the weights of ``o``'s taps that land on ``i``; 0 for a candidate that does not
reach ``i``): the exact adjoint of ``interp_fw``.  Accumulation in f32 (f64 for f64).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int64

from ....blocks.gmem import gload, gmem_ptr, gstore
from ....blocks.reduction_base import compute_type, element_type
from ....blocks.image_index import decompose_ncdhw_auto as decompose
from ..specs.interpolate import BW_GROUPS, InterpKnobs
from .interp_common import (aa_filter, aa_span, element_index, example_scalars,
                            fsel, imin, launcher, linear_taps, nearest_index, out_range, tap)


#: candidates along the last dim whose weights the nearest / linear backward computes
#: once per thread (see the kernel)
HOIST = 4


def _nearest_w(o, i, I, s, sub, CT):
    return fsel(nearest_index(o, I, Float32(s), sub) == i, CT(1.0), CT(0.0), CT)


def _linear_w(o, i, I, s, align, sub, CT):
    first, cnt, w0, w1, w2, w3 = linear_taps(o, I, CT(s), align, sub, CT)
    acc = CT(0.0)
    for j in range(4):
        idx, w = tap(first, Int64(j), I, w0, w1, w2, w3, CT)
        acc = acc + fsel((Int64(j) < cnt) & (idx == i), w, CT(0.0), CT)
    return acc


def build(knobs: InterpKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    group = knobs.group

    if group == "aa":
        @cute.kernel
        def kernel(pdy: cute.Pointer, pdx: cute.Pointer, n: Int64, e, gs, xs, sc, fl, rs, lo,
                   hi, mg, dv):
            _, C, Id, Ih, Iw, Od, Oh, Ow = e
            sub, align, cl = fl
            i = element_index()
            if i < n:
                b, c, zd, zh, zw = decompose(i, C, Id, Ih, Iw, cl, dv)
                fd, cd = out_range(zd, Od, rs[0], lo[0], hi[0], mg[0])
                fh, ch = out_range(zh, Oh, rs[1], lo[1], hi[1], mg[1])
                fw, cw = out_range(zw, Ow, rs[2], lo[2], hi[2], mg[2])
                sd, sh, sw = CT(sc[0]), CT(sc[1]), CT(sc[2])
                gbase = b * gs[0] + c * gs[1]
                acc = CT(0.0)
                for a in cutlass.range(cd):
                    od = fd + a
                    xd, nd, md, vd = aa_span(od, Id, sd, sub, CT)
                    td = CT(0.0)
                    for j in cutlass.range(nd):
                        td = td + aa_filter(j, md, vd, sub, CT)
                    td = CT(cutlass.select_(td != CT(0.0), td, CT(1.0)))
                    wd = aa_filter(zd - xd, md, vd, sub, CT) / td
                    wd = CT(cutlass.select_((zd >= xd) & (zd < xd + nd), wd, CT(0.0)))
                    acc_h = CT(0.0)
                    for bb in cutlass.range(ch):
                        oh = fh + bb
                        xh, nh, mh, vh = aa_span(oh, Ih, sh, sub, CT)
                        th = CT(0.0)
                        for j in cutlass.range(nh):
                            th = th + aa_filter(j, mh, vh, sub, CT)
                        th = CT(cutlass.select_(th != CT(0.0), th, CT(1.0)))
                        wh = aa_filter(zh - xh, mh, vh, sub, CT) / th
                        wh = CT(cutlass.select_((zh >= xh) & (zh < xh + nh), wh, CT(0.0)))
                        grow = gbase + od * gs[2] + oh * gs[3]
                        acc_w = CT(0.0)
                        for cc in cutlass.range(cw):
                            ow = fw + cc
                            xw, nw, mw, vw = aa_span(ow, Iw, sw, sub, CT)
                            tw = CT(0.0)
                            for j in cutlass.range(nw):
                                tw = tw + aa_filter(j, mw, vw, sub, CT)
                            tw = CT(cutlass.select_(tw != CT(0.0), tw, CT(1.0)))
                            ww = aa_filter(zw - xw, mw, vw, sub, CT) / tw
                            ww = CT(cutlass.select_((zw >= xw) & (zw < xw + nw), ww, CT(0.0)))
                            acc_w = acc_w + ww * CT(gload(pdy, grow + ow * gs[4]))
                        acc_h = acc_h + wh * acc_w
                    acc = acc + wd * acc_h
                gstore(pdx, b * xs[0] + c * xs[1] + zd * xs[2] + zh * xs[3] + zw * xs[4], T(acc))
    else:
        def weight(o, z, I, O, s, sub, align):
            if group == "nearest":
                return _nearest_w(o, z, I, s, sub, CT)
            return _linear_w(o, z, I, s, align, sub, CT)

        @cute.kernel
        def kernel(pdy: cute.Pointer, pdx: cute.Pointer, n: Int64, e, gs, xs, sc, fl, rs, lo,
                   hi, mg, dv):
            _, C, Id, Ih, Iw, Od, Oh, Ow = e
            sub, align, cl = fl
            i = element_index()
            if i < n:
                b, c, zd, zh, zw = decompose(i, C, Id, Ih, Iw, cl, dv)
                fd, cd = out_range(zd, Od, rs[0], lo[0], hi[0], mg[0])
                fh, ch = out_range(zh, Oh, rs[1], lo[1], hi[1], mg[1])
                fw, cw = out_range(zw, Ow, rs[2], lo[2], hi[2], mg[2])
                gbase = b * gs[0] + c * gs[1]
                # the first HOIST candidates along w: their weights computed once (not per
                # (d, h) candidate) and their loads issued together; the rest in a loop
                wws = [weight(fw + Int64(j), zw, Iw, Ow, sc[2], sub, align)
                       for j in range(HOIST)]
                last = Ow - Int64(1)
                acc = CT(0.0)
                for a in cutlass.range(cd):
                    od = fd + a
                    wd = weight(od, zd, Id, Od, sc[0], sub, align)
                    acc_h = CT(0.0)
                    for bb in cutlass.range(ch):
                        oh = fh + bb
                        wh = weight(oh, zh, Ih, Oh, sc[1], sub, align)
                        grow = gbase + od * gs[2] + oh * gs[3]
                        gv = [CT(gload(pdy, grow + imin(fw + Int64(j), last) * gs[4]))
                              for j in range(HOIST)]
                        acc_w = CT(0.0)
                        for j in cutlass.range_constexpr(HOIST):
                            acc_w = acc_w + fsel(Int64(j) < cw, wws[j] * gv[j], CT(0.0), CT)
                        for cc in cutlass.range(HOIST, cw):
                            ow = fw + cc
                            ww = weight(ow, zw, Iw, Ow, sc[2], sub, align)
                            acc_w = acc_w + ww * CT(gload(pdy, grow + ow * gs[4]))
                        acc_h = acc_h + wh * acc_w
                    acc = acc + wd * acc_h
                gstore(pdx, b * xs[0] + c * xs[1] + zd * xs[2] + zh * xs[3] + zw * xs[4], T(acc))

    isz = T.width // 8
    args = [gmem_ptr(T, isz), gmem_ptr(T, isz), Int64(1), *example_scalars(BW_GROUPS)]
    from cutlass.cute.runtime import make_fake_stream

    return launcher(kernel, BW_GROUPS), args + [make_fake_stream()]
