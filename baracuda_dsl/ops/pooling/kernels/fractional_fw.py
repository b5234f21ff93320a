"""Fractional max pooling forward: one thread per output element of a (N, C, Od, Oh, Ow) output
(2-D problems padded in front with a size-1 depth dim), any input / samples strides, output (and
indices) strides given.

Per dim the window is ``[start, start + K)`` with ``start`` from :func:`.pool_extra.frac_start`
(torch's interval generator or the seed's formula, the run-time ``torch_mode`` flag); the sample
of a dim is ``u[n, c, col]`` (f32) with ``col`` a run-time parameter per dim.  The maximum keeps
the first largest element and lets a NaN win (``v > m or v != v``, torch's rule); the int64 index
of the winner into the flattened spatial input ``(d·Ih + h)·Iw + w`` is written when ``want_idx``.
Comparison in f32 (f64 for f64); Int64 index math.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Float64, Int64

from ....blocks.gmem import example_args, gload, gmem_ptr, gstore
from ....blocks.image_index import decompose_ncdhw as decompose
from ....blocks.image_index import sel
from ....blocks.reduction_base import compute_type, element_type
from ..specs.fractional import FW_GROUPS, FractionalKnobs
from .pool_common import element_index
from .pool_extra import frac_start, launcher4


def build(knobs: FractionalKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)

    @cute.kernel
    def kernel(px: cute.Pointer, py: cute.Pointer, pidx: cute.Pointer, pu: cute.Pointer,
               n: Int64, e, k, xs, ys, us, fl, alpha):
        _, C, Id, Ih, Iw, Od, Oh, Ow = e
        kd, kh, kw = k
        torch_mode, cl, want, cold, colh, colw = fl
        i = element_index()
        if i < n:
            tm = torch_mode != Int64(0)
            b, c, od, oh, ow = decompose(i, C, Od, Oh, Ow, cl)
            ub = b * us[0] + c * us[1]
            ud = CT(gload(pu, ub + cold * us[2]))
            uh = CT(gload(pu, ub + colh * us[2]))
            uw = CT(gload(pu, ub + colw * us[2]))
            fd = frac_start(od, Id, Od, kd, ud, CT(alpha[0]), tm)
            fh = frac_start(oh, Ih, Oh, kh, uh, CT(alpha[1]), tm)
            fw = frac_start(ow, Iw, Ow, kw, uw, CT(alpha[2]), tm)
            base = b * xs[0] + c * xs[1]
            yoff = b * ys[0] + c * ys[1] + od * ys[2] + oh * ys[3] + ow * ys[4]
            m = CT(float("-inf"))
            mi = (fd * Ih + fh) * Iw + fw
            for a in cutlass.range(kd):
                zd = fd + a
                for bb in cutlass.range(kh):
                    zh = fh + bb
                    row = base + zd * xs[2] + zh * xs[3]
                    flat_row = (zd * Ih + zh) * Iw
                    for cc in cutlass.range(kw):
                        zw = fw + cc
                        v = CT(gload(px, row + zw * xs[4]))
                        take = (v > m) | (v != v)
                        m = CT(cutlass.select_(take, v, m))
                        mi = sel(take, flat_row + zw, mi)
            gstore(py, yoff, T(m))
            if want != Int64(0):
                gstore(pidx, yoff, mi)

    isz = T.width // 8
    args = example_args([gmem_ptr(T, isz), gmem_ptr(T, isz), gmem_ptr(Int64, 8),
                         gmem_ptr(Float32, 4)], 1 + sum(FW_GROUPS[:-1]),
                        tail=[Float64(1.0)] * FW_GROUPS[-1])
    return launcher4(kernel, FW_GROUPS), args
