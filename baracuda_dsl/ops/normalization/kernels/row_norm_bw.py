"""RMSNorm / LayerNorm backward over rows, with deterministic weight/bias gradient partials.

With x̂ = (x − mean)·rstd (mean = 0 for rms) and g = w·dy (g = dy without weight):

    dx = rstd · (g − mean_N(g) − x̂ · mean_N(g·x̂))      (the mean_N(g) term only for ln)
    dw = Σ_rows dy·x̂,   db = Σ_rows dy

The grid is persistent: CTA slot p = block·rows + row_in_block handles rows p, p + P, p + 2P, …
(P = grid·rows) and accumulates its dw/db contributions for the columns it owns in registers
(register mode) or in its own workspace row (loop mode).  It writes one partial row of dw and db
per slot to the workspace; ``column_sum`` then adds the P partial rows in a fixed order.  No
atomics: results are bit-identical from run to run.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, const_expr

from ..specs.row_norm import HAS_W, ROW_NORM_BW, SLOTS, WANT_DW, RowNormKnobs
from ....blocks.reduction_base import (alloc_cluster_buffer, alloc_reduction_buffer, cluster_rank,
                                       cluster_sum, cluster_sum2, compute_type, element_type,
                                       load_batch, load_scalar, row_allreduce_sum,
                                       row_allreduce_sum2, row_tensors, store_batch)
from ....blocks.gmem import gmem_ptr


def build(knobs: RowNormKnobs):
    dt, op = knobs.dtype, knobs.op
    vec, tpr, rows, chunks = knobs.vec, knobs.tpr, knobs.rows, knobs.chunks
    C = knobs.cluster  # CTAs sharing one row (thread-block cluster, sm90a)
    T = element_type(dt)
    CT = compute_type(dt)
    is_ln = op == "ln"
    threads = tpr * rows
    smem = ROW_NORM_BW.geometry(knobs).smem_bytes
    U = 2 if vec > 1 else 4  # loop mode: vectors per thread in flight per step

    def saved_stats(pmean, prstd, rr):
        """Trace-time helper: (mean, rstd) the forward saved for row ``rr`` (mean 0 for rms)."""
        rstd = load_scalar(prstd, rr)
        mean = CT(0.0)
        if is_ln:
            mean = load_scalar(pmean, rr)
        return mean, rstd

    @cute.kernel
    def kernel(pdy: cute.Pointer, px: cute.Pointer, pw: cute.Pointer, pmean: cute.Pointer,
               prstd: cute.Pointer, pdx: cute.Pointer, pdwp: cute.Pointer, pdbp: cute.Pointer,
               M: Int32, N: Int32, s1: Int32, s2: Int32, dy0: Int64, dy1: Int64, dy2: Int64,
               x0: Int64, x1: Int64, x2: Int64, dx0: Int64, dx1: Int64, dx2: Int64, flags: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        gdim, _, _ = cute.arch.grid_dim()
        lane = tidx % tpr
        rin = tidx // tpr
        slot = (bidx // C) * rows + rin
        nslots = (gdim // C) * rows
        rank = cluster_rank(C)
        vb = rank * (chunks * tpr)  # first vector of the row owned by this CTA (cluster SKUs)
        buf = alloc_reduction_buffer(CT, tpr, rows, SLOTS)
        cbuf = alloc_cluster_buffer(CT, rows, SLOTS, C)
        has_w = (flags & HAS_W) != 0
        want_dw = (flags & WANT_DW) != 0
        n_ct = CT(N)
        # rows handled by this slot: slot, slot + nslots, ... ; every thread of a row agrees
        # every CTA runs the same number of iterations so that barriers inside the row reduction
        # are reached by all threads: iterate over the maximum and mask inactive rows
        n_iter = (M + nslots - 1) // nslots
        wsrow = Int64(slot) * Int64(N)
        if const_expr(chunks > 0):
            # register mode: x, dy and w of the row stay in registers (input precision); x̂ and g
            # are recomputed rather than stored, so only dw/db accumulators are kept in f32
            nv = chunks * tpr * C
            lay = cute.make_layout((vec, nv), stride=(1, vec))
            rl = cute.make_layout((vec, chunks), stride=(1, vec))
            gw = cute.make_tensor(pw, lay)
            rx = cute.make_rmem_tensor(rl, T)
            rdy = cute.make_rmem_tensor(rl, T)
            rwt = cute.make_rmem_tensor(rl, T)
            acc_w = cute.make_rmem_tensor(rl, CT)
            acc_b = cute.make_rmem_tensor(rl, CT)
            acc_w.fill(0.0)
            acc_b.fill(0.0)
            rwt.fill(1.0)
            if has_w:
                for c in cutlass.range_constexpr(chunks):
                    v = vb + c * tpr + lane
                    if v * vec < N:
                        cute.autovec_copy(gw[None, v], rwt[None, c])
            for it in cutlass.range(n_iter):
                row = slot + it * nslots
                active = row < M
                rr = row if active else Int32(0)
                gdy, gx, gdx = row_tensors(rr, s1, s2, lay, vec, (pdy, dy0, dy1, dy2),
                                           (px, x0, x1, x2), (pdx, dx0, dx1, dx2))
                mean, rstd = saved_stats(pmean, prstd, rr)
                for c in cutlass.range_constexpr(chunks):
                    v = vb + c * tpr + lane
                    if active and v * vec < N:
                        cute.autovec_copy(gx[None, v], rx[None, c])
                        cute.autovec_copy(gdy[None, v], rdy[None, c])
                    else:
                        rx[None, c].fill(0.0)
                        rdy[None, c].fill(0.0)
                s_gx = CT(0.0)
                s_g = CT(0.0)
                for c in cutlass.range_constexpr(chunks):
                    for e in cutlass.range_constexpr(vec):
                        d = CT(rdy[e, c])
                        xh = (CT(rx[e, c]) - mean) * rstd
                        g = d * CT(rwt[e, c])
                        s_gx = s_gx + g * xh
                        s_g = s_g + g
                        acc_w[e, c] = acc_w[e, c] + d * xh
                        acc_b[e, c] = acc_b[e, c] + d
                # slots alternate by iteration parity (CTA and cluster buffers), so no barrier is
                # needed before the next row's reduction overwrites them
                par = (it % 2) * 2
                c1 = CT(0.0)
                c2 = CT(0.0)
                if const_expr(is_ln):
                    t1, t2 = row_allreduce_sum2(s_gx, s_g, buf, tpr, par, par + 1, rin, lane)
                    t1, t2 = cluster_sum2(t1, t2, cbuf, C, par, par + 1, rin, lane)
                    c1 = t1 / n_ct
                    c2 = t2 / n_ct
                else:
                    c1 = cluster_sum(row_allreduce_sum(s_gx, buf, tpr, par, rin, lane), cbuf, C,
                                     par, rin, lane) / n_ct
                for c in cutlass.range_constexpr(chunks):
                    v = vb + c * tpr + lane
                    if active and v * vec < N:
                        for e in cutlass.range_constexpr(vec):
                            xh = (CT(rx[e, c]) - mean) * rstd
                            g = CT(rdy[e, c]) * CT(rwt[e, c])
                            rx[e, c] = T(rstd * (g - c2 - xh * c1))
                        cute.autovec_copy(rx[None, c], gdx[None, v])
            if want_dw:
                gdw = cute.make_tensor(pdwp + wsrow, lay)
                gdb = cute.make_tensor(pdbp + wsrow, lay)
                for c in cutlass.range_constexpr(chunks):
                    v = vb + c * tpr + lane
                    if v * vec < N:
                        cute.autovec_copy(acc_w[None, c], gdw[None, v])
                        if const_expr(is_ln):
                            cute.autovec_copy(acc_b[None, c], gdb[None, v])
        else:
            # loop mode (any N): per row, pass 1 reduces, pass 2 writes dx and read-modify-writes
            # this slot's own dw/db partial row (L2-resident); U vectors per thread in flight
            nvec = (N + vec - 1) // vec
            lay = cute.make_layout((vec, nvec), stride=(1, vec))
            gw = cute.make_tensor(pw, lay)
            bl = cute.make_layout((vec, U), stride=(1, vec))
            rx = cute.make_rmem_tensor(bl, T)
            rdy = cute.make_rmem_tensor(bl, T)
            rwt = cute.make_rmem_tensor(bl, T)
            pa = cute.make_rmem_tensor(bl, CT)
            pb = cute.make_rmem_tensor(bl, CT)
            gdw = cute.make_tensor(pdwp + wsrow, lay)
            gdb = cute.make_tensor(pdbp + wsrow, lay)
            rwt.fill(1.0)
            if want_dw:
                pa.fill(0.0)
                for v0 in cutlass.range(lane, nvec, tpr * U):
                    store_batch(pa, gdw, v0, tpr, U, nvec)
                    if const_expr(is_ln):
                        store_batch(pa, gdb, v0, tpr, U, nvec)
            for it in cutlass.range(n_iter):
                row = slot + it * nslots
                active = row < M
                rr = row if active else Int32(0)
                gdy, gx, gdx = row_tensors(rr, s1, s2, lay, vec, (pdy, dy0, dy1, dy2),
                                           (px, x0, x1, x2), (pdx, dx0, dx1, dx2))
                mean, rstd = saved_stats(pmean, prstd, rr)
                s_gx = CT(0.0)
                s_g = CT(0.0)
                if active:
                    for v0 in cutlass.range(lane, nvec, tpr * U):
                        load_batch(gx, rx, v0, tpr, U, nvec)
                        load_batch(gdy, rdy, v0, tpr, U, nvec)
                        if has_w:
                            load_batch(gw, rwt, v0, tpr, U, nvec)
                        for u in cutlass.range_constexpr(U):
                            for e in cutlass.range_constexpr(vec):
                                d = CT(rdy[e, u])
                                xe = (CT(rx[e, u]) - mean) * rstd
                                ge = d * CT(rwt[e, u])
                                s_gx = s_gx + ge * xe
                                s_g = s_g + ge
                c1 = row_allreduce_sum(s_gx, buf, tpr, 0, rin, lane) / n_ct
                c2 = CT(0.0)
                if const_expr(is_ln):
                    c2 = row_allreduce_sum(s_g, buf, tpr, 1, rin, lane) / n_ct
                if active:
                    for v0 in cutlass.range(lane, nvec, tpr * U):
                        load_batch(gx, rx, v0, tpr, U, nvec)
                        load_batch(gdy, rdy, v0, tpr, U, nvec)
                        if has_w:
                            load_batch(gw, rwt, v0, tpr, U, nvec)
                        if want_dw:
                            load_batch(gdw, pa, v0, tpr, U, nvec)
                            if const_expr(is_ln):
                                load_batch(gdb, pb, v0, tpr, U, nvec)
                        for u in cutlass.range_constexpr(U):
                            for e in cutlass.range_constexpr(vec):
                                d = CT(rdy[e, u])
                                xe = (CT(rx[e, u]) - mean) * rstd
                                ge = d * CT(rwt[e, u])
                                rx[e, u] = T(rstd * (ge - c2 - xe * c1))
                                pa[e, u] = pa[e, u] + d * xe
                                pb[e, u] = pb[e, u] + d
                        store_batch(rx, gdx, v0, tpr, U, nvec)
                        if want_dw:
                            store_batch(pa, gdw, v0, tpr, U, nvec)
                            if const_expr(is_ln):
                                store_batch(pb, gdb, v0, tpr, U, nvec)
                if const_expr(tpr > 32):
                    cute.arch.barrier()

    @cute.jit
    def launch(pdy: cute.Pointer, px: cute.Pointer, pw: cute.Pointer, pmean: cute.Pointer,
               prstd: cute.Pointer, pdx: cute.Pointer, pdwp: cute.Pointer, pdbp: cute.Pointer,
               M: Int32, N: Int32, s1: Int32, s2: Int32, dy0: Int64, dy1: Int64, dy2: Int64,
               x0: Int64, x1: Int64, x2: Int64, dx0: Int64, dx1: Int64, dx2: Int64, flags: Int32,
               stream):
        kernel(pdy, px, pw, pmean, prstd, pdx, pdwp, pdbp, M, N, s1, s2, dy0, dy1, dy2, x0, x1,
               x2, dx0, dx1, dx2, flags).launch(grid=[(M + rows - 1) // rows * C, 1, 1],
                                                block=[threads, 1, 1], smem=smem,
                                                cluster=[C, 1, 1] if const_expr(C > 1) else None,
                                                stream=stream)

    align = T.width // 8 * vec
    cal = min(max(CT.width // 8 * vec, CT.width // 8), 16)
    args = [gmem_ptr(T, align), gmem_ptr(T, align), gmem_ptr(T, align),
            gmem_ptr(CT, CT.width // 8), gmem_ptr(CT, CT.width // 8), gmem_ptr(T, align),
            gmem_ptr(CT, cal), gmem_ptr(CT, cal),
            Int32(1), Int32(1), Int32(1), Int32(1)] + [Int64(vec)] * 9 + [Int32(0)]
    return launch, args + [cute.runtime.make_fake_stream()]
