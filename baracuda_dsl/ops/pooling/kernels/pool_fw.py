"""Pooling forward (templates ``pool_fw`` and ``pool_fw_runs``): one thread per run of ``VW``
outputs along the output's last spatial dim (``VW`` = the SKU's ``runs``: 1 in ``pool_fw``) of a
(N, C, Od, Oh, Ow) output (1-/2-D problems padded in front with
size-1 dims), any input strides, output (and indices) strides given.  The run shares the thread
index decomposition and the d / h windows, and its taps are loaded ``CHUNK`` columns at a time
for all ``VW`` outputs together (``VW·CHUNK`` independent loads in flight; a tap past a window
re-reads that window's last tap and is masked out).

``max``: the window's maximum, a NaN wins (``v > m or v != v``, torch's rule: the last NaN's
index); the int64 index of the winner into the flattened spatial input ``(d·Ih + h)·Iw + w`` is
written when ``want_idx``; the index starts at the window's first tap inside the input (torch).
``avg``: the sum of the taps inside the input divided by ``divisor`` when non-zero, else by the
count_include_pad window size (``cip``) or the number of taps inside the input; an output whose
window holds no input element is 0.  Fixed or adaptive windows (``adaptive``).  Accumulation in
f32 (f64 for f64); index math in Int32 with magic-number divisions, or Int64 (``wide``).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int64

from ....blocks.gmem import example_args, gload, gmem_ptr, gstore
from ....blocks.image_index import cast_all, index_type, isel
from ....blocks.image_index import decompose_ncdhw_ix as decompose_fast
from ....blocks.reduction_base import compute_type, element_type
from ..specs.pool import FW_GROUPS, PoolKnobs, outputs_per_thread
from .pool_common import CHUNK, launcher, thread_index, window_fw


def build(knobs: PoolKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    IX = index_type(knobs.wide)
    VW = outputs_per_thread(knobs)
    is_max = knobs.op == "max"

    def load_taps(px, row, xs4, fws, cws, tw, c0):
        """vals[v][u]: tap c0 + u of output v's row (clamped into its window)."""
        vals = []
        for v in range(VW):
            last = isel(cws[v] > IX(0), cws[v] - IX(1), IX(0), IX)
            vals.append([CT(gload(px, row + (fws[v] + isel(c0 + u < cws[v], c0 + u, last, IX)
                                            * tw) * xs4))
                         for u in range(CHUNK)])
        return vals

    @cute.kernel
    def kernel(px: cute.Pointer, py: cute.Pointer, pidx: cute.Pointer, n: Int64, e, w, xs, ys,
               fl, mg, wm):
        _, C, Id, Ih, Iw, Od, Oh, Ow = cast_all(e, IX)
        kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw = cast_all(w, IX)
        xs0, xs1, xs2, xs3, xs4 = cast_all(xs, IX)
        ys0, ys1, ys2, ys3, ys4 = cast_all(ys, IX)
        adaptive, cip, divisor, cl, want = fl
        ad = adaptive != Int64(0)
        i = thread_index(IX)
        if i < IX(n):
            Og = (Ow + IX(VW - 1)) // IX(VW) if VW > 1 else Ow
            b, c, od, oh, og = decompose_fast(i, C, Od, Oh, Og, cl, mg, IX)
            fd, cd, td, qd = window_fw(od, Id, Od, kd, sd, pd, dd, ad, wm[0:4], IX)
            fh, ch, th, qh = window_fw(oh, Ih, Oh, kh, sh, ph, dh, ad, wm[8:12], IX)
            ow0 = og * IX(VW)
            fws, cws, qws = [], [], []
            tw = IX(1)
            for v in cutlass.range_constexpr(VW):
                ok = ow0 + IX(v) < Ow
                f_, c_, t_, q_ = window_fw(isel(ok, ow0 + IX(v), IX(0), IX), Iw, Ow, kw, sw, pw,
                                           dw, ad, wm[16:20], IX)
                fws.append(f_)
                cws.append(isel(ok, c_, IX(0), IX))
                qws.append(q_)
                tw = t_
            cmax = cws[0]
            for v in cutlass.range_constexpr(1, VW):
                cmax = isel(cws[v] > cmax, cws[v], cmax, IX)
            base = b * xs0 + c * xs1
            yoff = b * ys0 + c * ys1 + od * ys2 + oh * ys3 + ow0 * ys4
            if cutlass.const_expr(is_max):
                ms = [CT(float("-inf"))] * VW
                mis = [(fd * Ih + fh) * Iw + fws[v] for v in range(VW)]
                for a in cutlass.range(cd):
                    zd = fd + a * td
                    for bb in cutlass.range(ch):
                        zh = fh + bb * th
                        row = base + zd * xs2 + zh * xs3
                        flat_row = (zd * Ih + zh) * Iw
                        for c0 in cutlass.range(0, cmax, CHUNK):
                            vals = load_taps(px, row, xs4, fws, cws, tw, c0)
                            for v in cutlass.range_constexpr(VW):
                                for u in cutlass.range_constexpr(CHUNK):
                                    x_ = vals[v][u]
                                    take = ((x_ > ms[v]) | (x_ != x_)) & (c0 + u < cws[v])
                                    ms[v] = CT(cutlass.select_(take, x_, ms[v]))
                                    mis[v] = IX(cutlass.select_(
                                        take, flat_row + fws[v] + (c0 + u) * tw, mis[v]))
                for v in cutlass.range_constexpr(VW):
                    if ow0 + IX(v) < Ow:
                        gstore(py, yoff + IX(v) * ys4, T(ms[v]))
                        if want != Int64(0):
                            gstore(pidx, yoff + IX(v) * ys4, Int64(mis[v]))
            else:
                accs = [CT(0.0)] * VW
                for a in cutlass.range(cd):
                    zd = fd + a * td
                    for bb in cutlass.range(ch):
                        zh = fh + bb * th
                        row = base + zd * xs2 + zh * xs3
                        for c0 in cutlass.range(0, cmax, CHUNK):
                            vals = load_taps(px, row, xs4, fws, cws, tw, c0)
                            for v in cutlass.range_constexpr(VW):
                                for u in cutlass.range_constexpr(CHUNK):
                                    accs[v] = accs[v] + CT(cutlass.select_(
                                        c0 + u < cws[v], vals[v][u], CT(0.0)))
                for v in cutlass.range_constexpr(VW):
                    if ow0 + IX(v) < Ow:
                        cnt = cd * ch * cws[v]
                        div = Int64(cutlass.select_(divisor != Int64(0), divisor, Int64(
                            cutlass.select_(cip != Int64(0), Int64(qd * qh * qws[v]),
                                            Int64(cnt)))))
                        res = CT(cutlass.select_(cnt == IX(0), CT(0.0), accs[v] / CT(div)))
                        gstore(py, yoff + IX(v) * ys4, T(res))

    isz = T.width // 8
    args = example_args([gmem_ptr(T, isz), gmem_ptr(T, isz), gmem_ptr(Int64, 8)],
                        1 + sum(FW_GROUPS))
    return launcher(kernel, FW_GROUPS), args
