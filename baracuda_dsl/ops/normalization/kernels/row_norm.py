"""RMSNorm / LayerNorm forward: one CuTe DSL kernel for every dtype, op and row-length bucket.

    rms:  y = x · rstd · w,             rstd = 1 / sqrt(mean(x²) + eps)
    ln:   y = (x − mean) · rstd · w + b, rstd = 1 / sqrt(mean((x − mean)²) + eps)

A block holds ``rows`` rows of ``tpr`` threads.  Register mode (``chunks > 0``): each thread loads
``chunks`` vectors of ``vec`` elements of its row with 16-byte loads, keeps them in registers for
the reductions and the output, so x is read from memory once.  Loop mode (``chunks == 0``) walks the
row in steps of ``tpr·vec`` for any length, re-reading it (mostly from L2) for each pass.  The
variance is two-pass (centred), never E[x²] − E[x]².  Statistics are written in the compute type
(f32, f64 for f64 inputs); ``flags`` says whether weight / bias are present and stats are written.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float64, Int32, Int64, const_expr

from ..specs.row_norm import HAS_B, HAS_W, ROW_NORM_FW, SLOTS, WRITE_STATS, RowNormKnobs
from ....blocks.reduction_base import (alloc_cluster_buffer, alloc_reduction_buffer,
                                       cluster_exchange2, cluster_rank, cluster_sum, compute_type,
                                       element_type, load_batch, load_scalar, load_slice,
                                       row_allreduce_sum, row_offset, row_thread, store_batch)
from ....blocks.gmem import gmem_ptr


@cute.jit
def channel_affine(pw, pb, ch, has_w, has_b, one):
    """(weight[ch], bias[ch]) in the type of ``one`` (1 and 0 where absent): the per-channel
    affine of GroupNorm rows."""
    wv = one
    bv = one - one
    if has_w:
        wv = type(one)(load_scalar(pw, ch))
    if has_b:
        bv = type(one)(load_scalar(pb, ch))
    return wv, bv


def build(knobs: RowNormKnobs):
    dt, op = knobs.dtype, knobs.op
    vec, tpr, rows, chunks = knobs.vec, knobs.tpr, knobs.rows, knobs.chunks
    C = knobs.cluster  # CTAs sharing one row (thread-block cluster, sm90a)
    chan = knobs.affine == "chan"  # GroupNorm rows: one weight per channel slice
    T = element_type(dt)
    CT = compute_type(dt)
    PT = element_type(knobs.pdt or dt)  # weight / bias element type
    is_ln = op == "ln"
    threads = tpr * rows
    smem = ROW_NORM_FW.geometry(knobs).smem_bytes
    slots = SLOTS
    U = 4 if vec > 1 else 8  # loop mode: vectors per thread in flight per step

    @cute.kernel
    def kernel(px: cute.Pointer, py: cute.Pointer, pw: cute.Pointer, pb: cute.Pointer,
               pmean: cute.Pointer, prstd: cute.Pointer, M: Int32, N: Int32, s1: Int32, s2: Int32,
               x0: Int64, x1: Int64, x2: Int64, y0: Int64, y1: Int64, y2: Int64,
               eps: Float64, flags: Int32, hw: Int32, cpg: Int32, G: Int32):
        lane, rin, row = row_thread(tpr, rows, C)
        rank = cluster_rank(C)
        vb = rank * (chunks * tpr)  # first vector of the row owned by this CTA
        buf = alloc_reduction_buffer(CT, tpr, rows, slots)
        cbuf = alloc_cluster_buffer(CT, rows, slots, C)
        valid = row < M
        rr = row if valid else Int32(0)
        offx = cute.assume(row_offset(rr, s1, s2, x0, x1, x2), divby=vec)
        offy = cute.assume(row_offset(rr, s1, s2, y0, y1, y2), divby=vec)
        has_w = (flags & HAS_W) != 0
        has_b = (flags & HAS_B) != 0
        # channel-affine rows (GroupNorm: row = (n, g), hw elements per channel, cpg channels per
        # group): element j of the row uses weight[(row % G)·cpg + j // hw]
        gbase = (rr % G) * cpg if const_expr(chan) else Int32(0)
        n_ct = CT(N)
        if const_expr(chunks > 0):
            nv = chunks * tpr * C
            gx = cute.make_tensor(px + offx, cute.make_layout((vec, nv), stride=(1, vec)))
            gy = cute.make_tensor(py + offy, cute.make_layout((vec, nv), stride=(1, vec)))
            gw = cute.make_tensor(pw, cute.make_layout((vec, nv), stride=(1, vec)))
            gb = cute.make_tensor(pb, cute.make_layout((vec, nv), stride=(1, vec)))
            rx = cute.make_rmem_tensor(cute.make_layout((vec, chunks), stride=(1, vec)), T)
            rv = cute.make_rmem_tensor(cute.make_layout((vec, chunks), stride=(1, vec)), T)
            xf = cute.make_rmem_tensor(cute.make_layout((vec, chunks), stride=(1, vec)), CT)
            load_slice(gx, rx, vb, lane, tpr, chunks, vec, N, valid)
            s = CT(0.0)
            for c in cutlass.range_constexpr(chunks):
                for e in cutlass.range_constexpr(vec):
                    xf[e, c] = CT(rx[e, c])
            mean = CT(0.0)
            if const_expr(is_ln):
                # mean and centred sum of squares of this CTA's slice; with a cluster, the
                # slices' (sum, M2) pairs are combined exactly (Chan et al.) after one exchange
                for c in cutlass.range_constexpr(chunks):
                    for e in cutlass.range_constexpr(vec):
                        s = s + xf[e, c]
                s = row_allreduce_sum(s, buf, tpr, 0, rin, lane)
                span = chunks * tpr * vec
                n_loc = CT(cutlass.max(cutlass.min(N - vb * vec, span), 0)) if const_expr(
                    C > 1) else n_ct
                m_loc = s / cutlass.max(n_loc, CT(1.0))
                q = CT(0.0)
                for c in cutlass.range_constexpr(chunks):
                    v = vb + c * tpr + lane
                    if v * vec < N:
                        for e in cutlass.range_constexpr(vec):
                            d = xf[e, c] - m_loc
                            q = q + d * d
                q = row_allreduce_sum(q, buf, tpr, 1, rin, lane)
                mean = m_loc
                var = q / n_ct
                if const_expr(C > 1):
                    cluster_exchange2(s, q, cbuf, C, 0, 1, rin, lane)
                    tot = cbuf[rin, 0, 0]
                    for r in cutlass.range_constexpr(1, C):
                        tot = tot + cbuf[rin, 0, r]
                    mean = tot / n_ct
                    m2 = CT(0.0)
                    for r in cutlass.range_constexpr(C):
                        n_r = CT(cutlass.max(cutlass.min(N - r * span, span), 0))
                        d = cbuf[rin, 0, r] / cutlass.max(n_r, CT(1.0)) - mean
                        m2 = m2 + cbuf[rin, 1, r] + n_r * d * d
                    var = m2 / n_ct
            else:
                for c in cutlass.range_constexpr(chunks):
                    for e in cutlass.range_constexpr(vec):
                        s = s + xf[e, c] * xf[e, c]
                var = cluster_sum(row_allreduce_sum(s, buf, tpr, 0, rin, lane), cbuf, C, 0, rin,
                                  lane) / n_ct
            rstd = CT(1.0) / cute.math.sqrt(var + CT(eps))
            if (flags & WRITE_STATS) != 0 and valid and lane == 0 and rank == 0:
                if const_expr(is_ln):
                    pm = cute.make_tensor(pmean + Int64(row), cute.make_layout(1))
                    pm[0] = mean
                pr = cute.make_tensor(prstd + Int64(row), cute.make_layout(1))
                pr[0] = rstd
            for c in cutlass.range_constexpr(chunks):
                v = vb + c * tpr + lane
                if valid and v * vec < N:
                    for e in cutlass.range_constexpr(vec):
                        xf[e, c] = (xf[e, c] - mean) * rstd
                    if const_expr(chan):
                        # a vector never straddles two channels
                        wv, bv = channel_affine(pw, pb, gbase + (v * vec) // hw, has_w, has_b,
                                                CT(1.0))
                        for e in cutlass.range_constexpr(vec):
                            xf[e, c] = xf[e, c] * wv + bv
                    else:
                        if has_w:
                            cute.autovec_copy(gw[None, v], rv[None, c])
                            for e in cutlass.range_constexpr(vec):
                                xf[e, c] = xf[e, c] * CT(rv[e, c])
                        if const_expr(is_ln):
                            if has_b:
                                cute.autovec_copy(gb[None, v], rv[None, c])
                                for e in cutlass.range_constexpr(vec):
                                    xf[e, c] = xf[e, c] + CT(rv[e, c])
                    for e in cutlass.range_constexpr(vec):
                        rx[e, c] = T(xf[e, c])
                    cute.autovec_copy(rx[None, c], gy[None, v])
        else:
            # loop mode: any N; each pass walks the row U vectors per thread at a time (U loads in
            # flight), re-reading it for later passes (mostly from L2)
            nvec = (N + vec - 1) // vec
            lay = cute.make_layout((vec, nvec), stride=(1, vec))
            gx = cute.make_tensor(px + offx, lay)
            gy = cute.make_tensor(py + offy, lay)
            gw = cute.make_tensor(pw, lay)
            gb = cute.make_tensor(pb, lay)
            bl = cute.make_layout((vec, U), stride=(1, vec))
            rx = cute.make_rmem_tensor(bl, T)
            rv = cute.make_rmem_tensor(bl, T)
            yv = cute.make_rmem_tensor(bl, CT)
            s = CT(0.0)
            mean = CT(0.0)
            if valid:
                for v0 in cutlass.range(lane, nvec, tpr * U):
                    load_batch(gx, rx, v0, tpr, U, nvec)
                    for u in cutlass.range_constexpr(U):
                        for e in cutlass.range_constexpr(vec):
                            xe = CT(rx[e, u])
                            if const_expr(is_ln):
                                s = s + xe
                            else:
                                s = s + xe * xe
            tot = row_allreduce_sum(s, buf, tpr, 0, rin, lane)
            if const_expr(is_ln):
                mean = tot / n_ct
                q = CT(0.0)
                if valid:
                    for v0 in cutlass.range(lane, nvec, tpr * U):
                        load_batch(gx, rx, v0, tpr, U, nvec)
                        for u in cutlass.range_constexpr(U):
                            if v0 + u * tpr < nvec:
                                for e in cutlass.range_constexpr(vec):
                                    d = CT(rx[e, u]) - mean
                                    q = q + d * d
                var = row_allreduce_sum(q, buf, tpr, 1, rin, lane) / n_ct
            else:
                var = tot / n_ct
            rstd = CT(1.0) / cute.math.sqrt(var + CT(eps))
            if (flags & WRITE_STATS) != 0 and valid and lane == 0:
                if const_expr(is_ln):
                    pm = cute.make_tensor(pmean + Int64(row), cute.make_layout(1))
                    pm[0] = mean
                pr = cute.make_tensor(prstd + Int64(row), cute.make_layout(1))
                pr[0] = rstd
            if valid:
                for v0 in cutlass.range(lane, nvec, tpr * U):
                    load_batch(gx, rx, v0, tpr, U, nvec)
                    for u in cutlass.range_constexpr(U):
                        for e in cutlass.range_constexpr(vec):
                            yv[e, u] = (CT(rx[e, u]) - mean) * rstd
                    if const_expr(chan):
                        for u in cutlass.range_constexpr(U):
                            v = v0 + u * tpr
                            if v < nvec:
                                wv, bv = channel_affine(pw, pb, gbase + (v * vec) // hw,
                                                        has_w, has_b, CT(1.0))
                                for e in cutlass.range_constexpr(vec):
                                    yv[e, u] = yv[e, u] * wv + bv
                    else:
                        if has_w:
                            load_batch(gw, rv, v0, tpr, U, nvec)
                            for u in cutlass.range_constexpr(U):
                                for e in cutlass.range_constexpr(vec):
                                    yv[e, u] = yv[e, u] * CT(rv[e, u])
                        if const_expr(is_ln):
                            if has_b:
                                load_batch(gb, rv, v0, tpr, U, nvec)
                                for u in cutlass.range_constexpr(U):
                                    for e in cutlass.range_constexpr(vec):
                                        yv[e, u] = yv[e, u] + CT(rv[e, u])
                    for u in cutlass.range_constexpr(U):
                        for e in cutlass.range_constexpr(vec):
                            rx[e, u] = T(yv[e, u])
                    store_batch(rx, gy, v0, tpr, U, nvec)

    @cute.jit
    def launch(px: cute.Pointer, py: cute.Pointer, pw: cute.Pointer, pb: cute.Pointer,
               pmean: cute.Pointer, prstd: cute.Pointer, M: Int32, N: Int32, s1: Int32, s2: Int32,
               x0: Int64, x1: Int64, x2: Int64, y0: Int64, y1: Int64, y2: Int64,
               eps: Float64, flags: Int32, hw: Int32, cpg: Int32, G: Int32, stream):
        kernel(px, py, pw, pb, pmean, prstd, M, N, s1, s2, x0, x1, x2, y0, y1, y2, eps,
               flags, hw, cpg, G).launch(grid=[(M + rows - 1) // rows * C, 1, 1], block=[threads, 1, 1],
                             cluster=[C, 1, 1] if const_expr(C > 1) else None,
                             smem=smem, stream=stream)

    return launch, example_args(T, CT, PT, vec, chan) + [cute.runtime.make_fake_stream()]


def example_args(T, CT, PT, vec, chan):
    """Representative arguments for ``cute.compile``: pointers carry the alignment the kernel may
    assume (16 bytes on the vector path, the element size otherwise; per-channel weights are read
    one scalar at a time)."""
    align = T.width // 8 * vec
    palign = PT.width // 8 if chan else PT.width // 8 * vec
    ptrs = [gmem_ptr(T, align), gmem_ptr(T, align), gmem_ptr(PT, palign), gmem_ptr(PT, palign),
            gmem_ptr(CT, CT.width // 8), gmem_ptr(CT, CT.width // 8)]
    return ptrs + [Int32(1), Int32(1), Int32(1), Int32(1)] + [Int64(vec)] * 6 + [
        Float64(1e-5), Int32(0), Int32(1), Int32(0), Int32(1)]
