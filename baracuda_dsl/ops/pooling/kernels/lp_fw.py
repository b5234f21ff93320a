"""LP pooling forward (and the backward's per-output coefficients): one thread per output
element of a (N, C, Od, Oh, Ow) output (1-/2-D problems padded in front with size-1 dims), any
input strides, no padding, windows ``[o·S, min(o·S + K, I))`` per dim (ceil_mode's last window is
clipped; the host sized the output).

torch.nn.functional.lp_pool*d is ``(sign(a)·relu(|a|)·K)^(1/p)`` with ``a = avg_pool(x^p)``
(count_include_pad with no padding: the divisor is the clipped window's count ``cnt``) and ``K``
the full window size; ``sign(a)·relu(|a|) = a``, so::

    z = (Σ_window x^p / cnt)·K,   y = z^(1/p)                          (stage ``out``)
    coef = a == 0 ? 0 : dy·(1/p)·z^(1/p − 1)·K / cnt                    (stage ``coef``)

``coef`` (f32; f64 for f64) goes to the workspace at the output's dense NCHW linear index; the
``lp_bw`` kernel spreads it over the window.  ``pow`` is the C ``pow`` (a negative base with a
non-integer exponent is NaN, like torch).  Computation in f32 (f64 for f64).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float64, Int64

from ....blocks.gmem import example_args, gload, gmem_ptr, gstore
from ....blocks.image_index import decompose_ncdhw as decompose
from ....blocks.image_index import imin
from ....blocks.reduction_base import compute_type, element_type
from ..specs.lp import FW_GROUPS, LPKnobs
from .pool_common import element_index
from .pool_extra import launcher4


def build(knobs: LPKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    coef = knobs.stage == "coef"

    @cute.kernel
    def kernel(px: cute.Pointer, py: cute.Pointer, pdy: cute.Pointer, pws: cute.Pointer,
               n: Int64, e, w, xs, ys, gs, fl, pp):
        _, C, Id, Ih, Iw, Od, Oh, Ow = e
        kd, kh, kw, sd, sh, sw = w
        cl = fl[0]
        i = element_index()
        if i < n:
            p = CT(pp[0])
            r = CT(1.0) / p
            b, c, od, oh, ow = decompose(i, C, Od, Oh, Ow, cl)
            fd = od * sd
            fh = oh * sh
            fw = ow * sw
            cd = imin(fd + kd, Id) - fd
            ch = imin(fh + kh, Ih) - fh
            cw = imin(fw + kw, Iw) - fw
            base = b * xs[0] + c * xs[1]
            s = CT(0.0)
            for a in cutlass.range(cd):
                for bb in cutlass.range(ch):
                    row = base + (fd + a) * xs[2] + (fh + bb) * xs[3]
                    for cc in cutlass.range(cw):
                        v = CT(gload(px, row + (fw + cc) * xs[4]))
                        s = s + cute.math.pow(v, p)
            cnt = CT(cd * ch * cw)
            kf = CT(kd * kh * kw)
            avg = s / cnt
            z = avg * kf
            if cutlass.const_expr(coef):
                g = CT(gload(pdy, b * gs[0] + c * gs[1] + od * gs[2] + oh * gs[3] + ow * gs[4]))
                t = g * r * cute.math.pow(z, r - CT(1.0)) * kf / cnt
                gstore(pws, i, CT(cutlass.select_(avg == CT(0.0), CT(0.0), t)))
            else:
                yoff = b * ys[0] + c * ys[1] + od * ys[2] + oh * ys[3] + ow * ys[4]
                gstore(py, yoff, T(cute.math.pow(z, r)))

    isz = T.width // 8
    args = example_args([gmem_ptr(T, isz), gmem_ptr(T, isz), gmem_ptr(T, isz),
                         gmem_ptr(CT, CT.width // 8)], 1 + sum(FW_GROUPS[:-1]),
                        tail=[Float64(2.0)])
    return launcher4(kernel, FW_GROUPS), args
