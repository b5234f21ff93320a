"""Cross-entropy / NLL backward: one streaming pass per row (x read once, dx written once).

With p_j = exp(x_j − lse) (lse saved by the forward) and g the row's upstream gradient
(g[row] for reduction none, else g[0], divided by the total weight for mean):

    plain:   dx_j = g·w[t]·(p_j − [j = t])
    smooth:  dx_j = g·(((1 − ε)·w[t] + (ε/N)·Σ_c w_c)·p_j − (1 − ε)·w[t]·[j = t] − (ε/N)·w_j)
    prob:    dx_j = g·((Σ_c a_c)·p_j − a_j),   a_j = w_j·((1 − ε)·p_j^target + ε/N)
    nll:     dx_j = −g·w[t]·[j = t]            (x is not read)

Rows with an ignored target, or one outside [0, N) (which also sets ``st[0]``), get dx = 0.
Σ_c w_c (smooth with weights) and Σ_c a_c (prob) come from a pre-pass over w / the targets.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float64, Int32, Int64, const_expr

from ..specs import cross_entropy as spec
from .cross_entropy import exp_off, read_target, set_status
from ....blocks.reduction_base import (alloc_reduction_buffer, compute_type, element_type,
                                       load_batch, load_scalar, row_allreduce_sum, row_thread,
                                       store_batch)
from ....blocks.gmem import gmem_ptr


def build(knobs: spec.CrossEntropyKnobs):
    dt, mode = knobs.dtype, knobs.mode
    vec, tpr, rows, chunks = knobs.vec, knobs.tpr, knobs.rows, knobs.chunks
    T = element_type(dt)
    CT = compute_type(dt)
    threads = tpr * rows
    smem = spec.CROSS_ENTROPY_BW.geometry(knobs).smem_bytes
    slots = spec.SLOTS
    U = chunks if chunks > 0 else (4 if vec > 1 else 8)

    @cute.kernel
    def kernel(px: cute.Pointer, pt: cute.Pointer, pw: cute.Pointer, pp: cute.Pointer,
               plse: cute.Pointer, pg: cute.Pointer, ptw: cute.Pointer, pdx: cute.Pointer,
               pst: cute.Pointer, M: Int32, N: Int32, xs: Int64, ps: Int64, ds: Int64, ts: Int32,
               ign: Int64, eps_: Float64, flags: Int32):
        lane, rin, row = row_thread(tpr, rows)
        buf = alloc_reduction_buffer(CT, tpr, rows, slots)
        valid = row < M
        rr = row if valid else Int32(0)
        offx = cute.assume(Int64(rr) * xs, divby=vec)
        offp = cute.assume(Int64(rr) * ps, divby=vec)
        offd = cute.assume(Int64(rr) * ds, divby=vec)
        has_w = (flags & spec.HAS_W) != 0
        eps = CT(eps_)
        inv_n = CT(1.0) / CT(N)
        nvec = (N + vec - 1) // vec
        lay = cute.make_layout((vec, nvec), stride=(1, vec))
        gx = cute.make_tensor(px + offx, lay)
        gp = cute.make_tensor(pp + offp, lay)
        gw = cute.make_tensor(pw, lay)
        gd = cute.make_tensor(pdx + offd, lay)
        bl = cute.make_layout((vec, U), stride=(1, vec))
        rx = cute.make_rmem_tensor(bl, T)
        rv = cute.make_rmem_tensor(bl, T)
        rp = cute.make_rmem_tensor(bl, T)
        rd = cute.make_rmem_tensor(bl, T)
        # the row's upstream gradient
        g = CT(0.0)
        if valid:
            if (flags & spec.G_ROW) != 0:
                g = CT(load_scalar(pg, Int64(rr)))
            else:
                g = CT(load_scalar(pg, Int64(0)))
            if (flags & spec.G_MEAN) != 0:
                g = g / CT(load_scalar(ptw, Int64(0)))
        t = Int64(-1)
        wt = CT(0.0)
        if const_expr(mode != "prob"):
            t = read_target(pt, rr, ts)
            if valid:
                if t == ign:
                    g = CT(0.0)
                else:
                    if (t >= Int64(0)) & (t < Int64(N)):
                        wt = CT(1.0)
                        if has_w:
                            wt = CT(load_scalar(pw, t))
                    else:
                        g = CT(0.0)
                        if lane == 0:
                            set_status(pst, flags)
        lse = CT(0.0)
        if const_expr(mode != "nll"):
            lse = CT(load_scalar(plse, Int64(rr)))
        # Bp: the coefficient of p_j; pre-pass for Σ w (smooth) / Σ a (prob)
        Bp = wt
        if const_expr(mode == "nll"):
            Bp = CT(0.0)
        if const_expr(mode == "smooth"):
            bw = CT(N)
            if has_w:
                sw = CT(0.0)
                if valid:
                    for v0 in cutlass.range(lane, nvec, tpr * U):
                        load_batch(gw, rv, v0, tpr, U, nvec)
                        for u in cutlass.range_constexpr(U):
                            for e in cutlass.range_constexpr(vec):
                                sw = sw + CT(rv[e, u])
                bw = row_allreduce_sum(sw, buf, tpr, 0, rin, lane)
            Bp = (CT(1.0) - eps) * wt + eps * inv_n * bw
        if const_expr(mode == "prob"):
            sa = CT(0.0)
            if valid:
                for v0 in cutlass.range(lane, nvec, tpr * U):
                    load_batch(gp, rp, v0, tpr, U, nvec)
                    if has_w:
                        load_batch(gw, rv, v0, tpr, U, nvec)
                    for u in cutlass.range_constexpr(U):
                        if v0 + u * tpr < nvec:
                            for e in cutlass.range_constexpr(vec):
                                a = CT(rp[e, u]) * (CT(1.0) - eps) + eps * inv_n
                                if has_w:
                                    a = a * CT(rv[e, u])
                                sa = sa + a
            Bp = row_allreduce_sum(sa, buf, tpr, 1, rin, lane)
        cw = (CT(1.0) - eps) * wt  # coefficient of [j = t]
        if const_expr(mode != "smooth"):
            cw = wt
        # target column as int32 (−1 when absent / out of range: g is 0 for those rows anyway)
        t32 = Int32(-1)
        if (t >= Int64(0)) & (t < Int64(N)):
            t32 = Int32(t)
        if valid:
            for v0 in cutlass.range(lane, nvec, tpr * U):
                if const_expr(mode != "nll"):
                    load_batch(gx, rx, v0, tpr, U, nvec)
                if const_expr(mode == "prob"):
                    load_batch(gp, rp, v0, tpr, U, nvec)
                if const_expr(mode == "prob" or mode == "smooth"):
                    if has_w:
                        load_batch(gw, rv, v0, tpr, U, nvec)
                for u in cutlass.range_constexpr(U):
                    rel = t32 - (v0 + u * tpr) * vec  # target's offset in this vector
                    for e in cutlass.range_constexpr(vec):
                        d = CT(0.0)
                        if const_expr(mode != "nll"):
                            d = Bp * exp_off(CT(rx[e, u]), lse)
                        if const_expr(mode == "prob"):
                            a = CT(rp[e, u]) * (CT(1.0) - eps) + eps * inv_n
                            if has_w:
                                a = a * CT(rv[e, u])
                            d = d - a
                        else:
                            if rel == e:
                                d = d - cw
                            if const_expr(mode == "smooth"):
                                ws = CT(1.0)
                                if has_w:
                                    ws = CT(rv[e, u])
                                d = d - eps * inv_n * ws
                        rd[e, u] = T(d * g)
                store_batch(rd, gd, v0, tpr, U, nvec)

    @cute.jit
    def launch(px: cute.Pointer, pt: cute.Pointer, pw: cute.Pointer, pp: cute.Pointer,
               plse: cute.Pointer, pg: cute.Pointer, ptw: cute.Pointer, pdx: cute.Pointer,
               pst: cute.Pointer, M: Int32, N: Int32, xs: Int64, ps: Int64, ds: Int64, ts: Int32,
               ign: Int64, eps: Float64, flags: Int32, stream):
        kernel(px, pt, pw, pp, plse, pg, ptw, pdx, pst, M, N, xs, ps, ds, ts, ign, eps,
               flags).launch(grid=[(M + rows - 1) // rows, 1, 1], block=[threads, 1, 1],
                             smem=smem, stream=stream)

    align = T.width // 8 * vec
    ca = CT.width // 8
    args = [gmem_ptr(T, align), gmem_ptr(Int32, 4), gmem_ptr(T, align), gmem_ptr(T, align),
            gmem_ptr(CT, ca), gmem_ptr(T, T.width // 8), gmem_ptr(CT, ca), gmem_ptr(T, align),
            gmem_ptr(Int32, 4), Int32(1), Int32(1), Int64(vec), Int64(vec), Int64(vec), Int32(2),
            Int64(-100), Float64(0.0), Int32(0), cute.runtime.make_fake_stream()]
    return launch, args
