"""LP pooling backward, gather form: one thread per element of ``dx`` (N, C, Id, Ih, Iw) summing,
in a fixed order (d, h, w ascending), the coefficients ``coef[o]`` (the workspace ``lp_fw`` stage
``coef`` wrote, dense NCHW) of the outputs whose window ``[o·S, o·S + K)`` covers it, then::

    dx = (Σ coef[o])·p·x^(p − 1)

(the chain rule of torch's ``x.pow(p)`` → avg_pool → ``·K`` → ``pow(1/p)``).  Deterministic, no
atomics; computation in f32 (f64 for f64); Int64 index math.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float64, Int64

from ....blocks.gmem import example_args, gload, gmem_ptr, gstore
from ....blocks.reduction_base import compute_type, element_type
from ....blocks.image_index import decompose_ncdhw as decompose
from ..specs.lp import BW_GROUPS, LPBwKnobs
from .pool_common import element_index
from .pool_extra import fixed_range, launcher4


def build(knobs: LPBwKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)

    @cute.kernel
    def kernel(px: cute.Pointer, pdx: cute.Pointer, pws: cute.Pointer, punused: cute.Pointer,
               n: Int64, e, w, xs, dxs, fl, pp):
        _, C, Id, Ih, Iw, Od, Oh, Ow = e
        kd, kh, kw, sd, sh, sw = w
        cl = fl[0]
        i = element_index()
        if i < n:
            p = CT(pp[0])
            b, c, zd, zh, zw = decompose(i, C, Id, Ih, Iw, cl)
            fd, cd = fixed_range(zd, Od, kd, sd)
            fh, ch = fixed_range(zh, Oh, kh, sh)
            fw, cw = fixed_range(zw, Ow, kw, sw)
            plane = (b * C + c) * Od
            acc = CT(0.0)
            for a in cutlass.range(cd):
                for bb in cutlass.range(ch):
                    row = ((plane + fd + a) * Oh + fh + bb) * Ow
                    for cc in cutlass.range(cw):
                        acc = acc + CT(gload(pws, row + fw + cc))
            xv = CT(gload(px, b * xs[0] + c * xs[1] + zd * xs[2] + zh * xs[3] + zw * xs[4]))
            g = acc * (p * cute.math.pow(xv, p - CT(1.0)))
            gstore(pdx, b * dxs[0] + c * dxs[1] + zd * dxs[2] + zh * dxs[3] + zw * dxs[4], T(g))

    isz = T.width // 8
    args = example_args([gmem_ptr(T, isz), gmem_ptr(T, isz), gmem_ptr(CT, CT.width // 8),
                         gmem_ptr(CT, CT.width // 8)], 1 + sum(BW_GROUPS[:-1]),
                        tail=[Float64(2.0)])
    return launcher4(kernel, BW_GROUPS), args
