"""Interpolation forward: one thread per output element of a (N, C, Od, Oh, Ow) output (1-/2-D
problems padded in front with size-1 dims), any input strides, output strides given.

Separable: ``y[o] = Σ_a wd_a · Σ_b wh_b · Σ_c ww_c · x[zd_a, zh_b, zw_c]`` over each dim's taps
(:mod:`.interp_common`): nearest — one tap; linear / cubic — 1, 2 or 4 border-clamped taps;
aa — the normalised filter span.
Accumulation in f32 (f64 for f64); Int64 index math, the thread index decomposed with
magic-number divisions when the index space is narrow (``dv``).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int64

from ....blocks.gmem import gload, gmem_ptr, gstore
from ....blocks.reduction_base import compute_type, element_type
from ....blocks.image_index import decompose_ncdhw_auto as decompose
from ..specs.interpolate import FW_GROUPS, InterpKnobs
from .interp_common import (aa_filter, aa_span, element_index, example_scalars,
                            launcher, linear_taps, nearest_index, tap)


def build(knobs: InterpKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    group = knobs.group

    if group == "nearest":
        @cute.kernel
        def kernel(px: cute.Pointer, py: cute.Pointer, n: Int64, e, xs, ys, sc, fl, dv):
            _, C, Id, Ih, Iw, Od, Oh, Ow = e
            sub, align, cl = fl
            i = element_index()
            if i < n:
                b, c, od, oh, ow = decompose(i, C, Od, Oh, Ow, cl, dv)
                base = b * xs[0] + c * xs[1]
                yoff = b * ys[0] + c * ys[1] + od * ys[2] + oh * ys[3] + ow * ys[4]
                zd = nearest_index(od, Id, Float32(sc[0]), sub)
                zh = nearest_index(oh, Ih, Float32(sc[1]), sub)
                zw = nearest_index(ow, Iw, Float32(sc[2]), sub)
                gstore(py, yoff, gload(px, base + zd * xs[2] + zh * xs[3] + zw * xs[4]))

    elif group == "linear":
        @cute.kernel
        def kernel(px: cute.Pointer, py: cute.Pointer, n: Int64, e, xs, ys, sc, fl, dv):
            _, C, Id, Ih, Iw, Od, Oh, Ow = e
            sub, align, cl = fl
            i = element_index()
            if i < n:
                b, c, od, oh, ow = decompose(i, C, Od, Oh, Ow, cl, dv)
                base = b * xs[0] + c * xs[1]
                yoff = b * ys[0] + c * ys[1] + od * ys[2] + oh * ys[3] + ow * ys[4]
                fd, cd, d0, d1, d2, d3 = linear_taps(od, Id, CT(sc[0]), align, sub, CT)
                fh, ch, h0, h1, h2, h3 = linear_taps(oh, Ih, CT(sc[1]), align, sub, CT)
                fw, cw, w0, w1, w2, w3 = linear_taps(ow, Iw, CT(sc[2]), align, sub, CT)
                acc = CT(0.0)
                for a in cutlass.range(cd):
                    zd, wd = tap(fd, Int64(a), Id, d0, d1, d2, d3, CT)
                    acc_h = CT(0.0)
                    for bb in cutlass.range(ch):
                        zh, wh = tap(fh, Int64(bb), Ih, h0, h1, h2, h3, CT)
                        row = base + zd * xs[2] + zh * xs[3]
                        acc_w = CT(0.0)
                        for cc in cutlass.range(cw):
                            zw, ww = tap(fw, Int64(cc), Iw, w0, w1, w2, w3, CT)
                            acc_w = acc_w + ww * CT(gload(px, row + zw * xs[4]))
                        acc_h = acc_h + wh * acc_w
                    acc = acc + wd * acc_h
                gstore(py, yoff, T(acc))

    elif group == "aa":
        @cute.kernel
        def kernel(px: cute.Pointer, py: cute.Pointer, n: Int64, e, xs, ys, sc, fl, dv):
            _, C, Id, Ih, Iw, Od, Oh, Ow = e
            sub, align, cl = fl
            i = element_index()
            if i < n:
                b, c, od, oh, ow = decompose(i, C, Od, Oh, Ow, cl, dv)
                base = b * xs[0] + c * xs[1]
                yoff = b * ys[0] + c * ys[1] + od * ys[2] + oh * ys[3] + ow * ys[4]
                sd, sh, sw = CT(sc[0]), CT(sc[1]), CT(sc[2])
                fd, cd, md, vd = aa_span(od, Id, sd, sub, CT)
                fh, ch, mh, vh = aa_span(oh, Ih, sh, sub, CT)
                fw, cw, mw, vw = aa_span(ow, Iw, sw, sub, CT)
                td = CT(0.0)
                for a in cutlass.range(cd):
                    td = td + aa_filter(a, md, vd, sub, CT)
                th = CT(0.0)
                for a in cutlass.range(ch):
                    th = th + aa_filter(a, mh, vh, sub, CT)
                tw = CT(0.0)
                for a in cutlass.range(cw):
                    tw = tw + aa_filter(a, mw, vw, sub, CT)
                td = CT(cutlass.select_(td != CT(0.0), td, CT(1.0)))
                th = CT(cutlass.select_(th != CT(0.0), th, CT(1.0)))
                tw = CT(cutlass.select_(tw != CT(0.0), tw, CT(1.0)))
                acc = CT(0.0)
                for a in cutlass.range(cd):
                    wd = aa_filter(a, md, vd, sub, CT) / td
                    acc_h = CT(0.0)
                    for bb in cutlass.range(ch):
                        wh = aa_filter(bb, mh, vh, sub, CT) / th
                        row = base + (fd + a) * xs[2] + (fh + bb) * xs[3]
                        acc_w = CT(0.0)
                        for cc in cutlass.range(cw):
                            ww = aa_filter(cc, mw, vw, sub, CT) / tw
                            acc_w = acc_w + ww * CT(gload(px, row + (fw + cc) * xs[4]))
                        acc_h = acc_h + wh * acc_w
                    acc = acc + wd * acc_h
                gstore(py, yoff, T(acc))

    isz = T.width // 8
    args = [gmem_ptr(T, isz), gmem_ptr(T, isz), Int64(1), *example_scalars(FW_GROUPS)]
    from cutlass.cute.runtime import make_fake_stream

    return launcher(kernel, FW_GROUPS), args + [make_fake_stream()]
