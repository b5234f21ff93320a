"""Interpolation forward, nearest and (bi/tri)linear / bicubic (template ``interp_fw_runs``):
one thread per run of ``RUN`` consecutive outputs along the last spatial dim, the same maps as
``interp_fw`` (:mod:`.interp_common`).  The run shares the thread index decomposition, the base
offsets and the d / h taps; along w each output has its own taps, all ``RUN · TAPS`` loads of a
row issued together (a tap past an output's count re-reads a clamped index and is masked out).
``TAPS`` = 1 (nearest), 2 (linear) or 4 (bicubic) is the SKU's ``group``.  Accumulation in f32
(f64 for f64); Int32 index math (the plan runs this template only when every thread index and
operand offset is below 2^31), the thread index decomposed with the magic-number divisions of
``dv``.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64

from ....blocks.gmem import gload, gmem_ptr, gstore
from ....blocks.image_index import cast_all, ix_linear_index
from ....blocks.reduction_base import compute_type, element_type
from ..specs.interpolate import FW_GROUPS, RUN, RUNS_TAPS, THREADS, InterpKnobs
from .interp_common import (example_scalars, fsel, imin, launcher, linear_taps, nearest_index,
                            run_position, tap)

IX = Int32


def build(knobs: InterpKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    TAPS = RUNS_TAPS[knobs.group]

    @cute.kernel
    def kernel(px: cute.Pointer, py: cute.Pointer, n: Int64, e, xs, ys, sc, fl, dv):
        _, C, Id, Ih, Iw, Od, Oh, Ow = cast_all(e, IX)
        xs0, xs1, xs2, xs3, xs4 = cast_all(xs, IX)
        ys0, ys1, ys2, ys3, ys4 = cast_all(ys, IX)
        sub, align, cl = fl
        i = ix_linear_index(THREADS, IX)
        if i < IX(n):
            b, c, od, oh, ow0, last = run_position(i, C, Od, Oh, Ow, cl, dv, RUN, IX)
            base = b * xs0 + c * xs1
            yoff = b * ys0 + c * ys1 + od * ys2 + oh * ys3 + ow0 * ys4
            if cutlass.const_expr(TAPS == 1):
                zd = nearest_index(od, Id, Float32(sc[0]), sub, IX)
                zh = nearest_index(oh, Ih, Float32(sc[1]), sub, IX)
                row = base + zd * xs2 + zh * xs3
                vals = [gload(px, row + nearest_index(imin(ow0 + IX(v), last, IX), Iw,
                                                      Float32(sc[2]), sub, IX) * xs4)
                        for v in range(RUN)]
                for v in cutlass.range_constexpr(RUN):
                    if ow0 + IX(v) < Ow:
                        gstore(py, yoff + IX(v) * ys4, vals[v])
            else:
                fd, cd, d0, d1, d2, d3 = linear_taps(od, Id, CT(sc[0]), align, sub, CT, IX)
                fh, ch, h0, h1, h2, h3 = linear_taps(oh, Ih, CT(sc[1]), align, sub, CT, IX)
                wt = [linear_taps(imin(ow0 + IX(v), last, IX), Iw, CT(sc[2]), align, sub, CT, IX)
                      for v in range(RUN)]
                accs = [CT(0.0)] * RUN
                for a in cutlass.range(cd):
                    zd, wd = tap(fd, IX(a), Id, d0, d1, d2, d3, CT, IX)
                    acc_h = [CT(0.0)] * RUN
                    for bb in cutlass.range(ch):
                        zh, wh = tap(fh, IX(bb), Ih, h0, h1, h2, h3, CT, IX)
                        row = base + zd * xs2 + zh * xs3
                        taps = [[tap(wt[v][0], IX(j), Iw, *wt[v][2:], CT, IX)
                                 for j in range(TAPS)] for v in range(RUN)]
                        vals = [[CT(gload(px, row + taps[v][j][0] * xs4)) for j in range(TAPS)]
                                for v in range(RUN)]
                        for v in cutlass.range_constexpr(RUN):
                            acc_w = CT(0.0)
                            for j in cutlass.range_constexpr(TAPS):
                                acc_w = acc_w + fsel(IX(j) < wt[v][1],
                                                     taps[v][j][1] * vals[v][j], CT(0.0), CT)
                            acc_h[v] = acc_h[v] + wh * acc_w
                    for v in cutlass.range_constexpr(RUN):
                        accs[v] = accs[v] + wd * acc_h[v]
                for v in cutlass.range_constexpr(RUN):
                    if ow0 + IX(v) < Ow:
                        gstore(py, yoff + IX(v) * ys4, T(accs[v]))

    isz = T.width // 8
    args = [gmem_ptr(T, isz), gmem_ptr(T, isz), Int64(1), *example_scalars(FW_GROUPS)]
    from cutlass.cute.runtime import make_fake_stream

    return launcher(kernel, FW_GROUPS), args + [make_fake_stream()]
