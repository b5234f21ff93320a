"""Interpolation backward in scatter form, nearest and (bi/tri)linear / bicubic (template
``interp_bw_scatter``, the plans' ``deterministic=False`` path): one thread per run of ``RUN``
``dy`` elements along the last spatial dim; each adds ``w_d · w_h · w_w · dy`` to the inputs its
taps read (the forward's map, :mod:`.interp_common`) with atomic adds into the accumulator —
``dx`` itself for f32 / f64, an f32 workspace for the half types (zeroed before, cast after by
the ``grid_sample_acc`` passes).  The order of the adds is the hardware's: not deterministic.
Int32 index math (the plan runs it only when every index and offset is below 2^31).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64

from ....blocks.gmem import gload, gmem_ptr
from ....blocks.image_index import cast_all, ix_linear_index
from ....blocks.reduction_base import compute_type, element_type
from ..specs.interpolate import FW_GROUPS, RUN, RUNS_TAPS, THREADS, InterpKnobs
from .interp_common import (example_scalars, imin, launcher, linear_taps, nearest_index,
                            run_position, tap)

IX = Int32


def _atomic_add(ptr, index, value):
    cute.arch.atomic_add((ptr + Int64(index)).llvm_ptr, value)


def build(knobs: InterpKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    TAPS = RUNS_TAPS[knobs.group]

    @cute.kernel
    def kernel(pdy: cute.Pointer, pacc: cute.Pointer, n: Int64, e, gs, acs, sc, fl, dv):
        _, C, Id, Ih, Iw, Od, Oh, Ow = cast_all(e, IX)
        gs0, gs1, gs2, gs3, gs4 = cast_all(gs, IX)
        as0, as1, as2, as3, as4 = cast_all(acs, IX)
        sub, align, cl = fl
        i = ix_linear_index(THREADS, IX)
        if i < IX(n):
            b, c, od, oh, ow0, last = run_position(i, C, Od, Oh, Ow, cl, dv, RUN, IX)
            goff = b * gs0 + c * gs1 + od * gs2 + oh * gs3
            g = [CT(gload(pdy, goff + imin(ow0 + IX(v), last, IX) * gs4)) for v in range(RUN)]
            base = b * as0 + c * as1
            if cutlass.const_expr(TAPS == 1):
                zd = nearest_index(od, Id, Float32(sc[0]), sub, IX)
                zh = nearest_index(oh, Ih, Float32(sc[1]), sub, IX)
                row = base + zd * as2 + zh * as3
                for v in cutlass.range_constexpr(RUN):
                    if ow0 + IX(v) < Ow:
                        zw = nearest_index(ow0 + IX(v), Iw, Float32(sc[2]), sub, IX)
                        _atomic_add(pacc, row + zw * as4, g[v])
            else:
                fd, cd, d0, d1, d2, d3 = linear_taps(od, Id, CT(sc[0]), align, sub, CT, IX)
                fh, ch, h0, h1, h2, h3 = linear_taps(oh, Ih, CT(sc[1]), align, sub, CT, IX)
                wt = [linear_taps(imin(ow0 + IX(v), last, IX), Iw, CT(sc[2]), align, sub, CT, IX)
                      for v in range(RUN)]
                for a in cutlass.range(cd):
                    zd, wd = tap(fd, IX(a), Id, d0, d1, d2, d3, CT, IX)
                    for bb in cutlass.range(ch):
                        zh, wh = tap(fh, IX(bb), Ih, h0, h1, h2, h3, CT, IX)
                        row = base + zd * as2 + zh * as3
                        wdh = wd * wh
                        for v in cutlass.range_constexpr(RUN):
                            for j in cutlass.range_constexpr(TAPS):
                                if (ow0 + IX(v) < Ow) & (IX(j) < wt[v][1]):
                                    zw, ww = tap(wt[v][0], IX(j), Iw, *wt[v][2:], CT, IX)
                                    _atomic_add(pacc, row + zw * as4, wdh * ww * g[v])

    isz = T.width // 8
    args = [gmem_ptr(T, isz), gmem_ptr(CT, CT.width // 8), Int64(1),
            *example_scalars(FW_GROUPS)]
    from cutlass.cute.runtime import make_fake_stream

    return launcher(kernel, FW_GROUPS), args + [make_fake_stream()]
