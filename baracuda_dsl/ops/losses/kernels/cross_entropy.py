"""Cross-entropy forward (one row per ``tpr`` threads), the fixed-order loss reduction and the
per-chunk kernel of the fused linear + cross-entropy.

Per row of logits x (N classes), with lse = max + log Σ exp(x − max):

    plain / smooth:  loss = (1 − ε)·w[t]·(lse − x[t]) + (ε/N)·(lse·Σ_c w_c − Σ_c w_c·x_c)
                     den  = w[t]            (w ≡ 1 without class weights; ε = 0 for plain)
    prob:            loss = lse·Σ_c a_c − Σ_c a_c·x_c,   a_c = w_c·((1 − ε)·p_c + ε/N),  den = 1

Rows whose target equals ``ign`` give loss 0, den 0; targets outside [0, N) (never wrapped,
as torch) also give 0 / 0, read nothing, and set ``st[0] = 1`` when ``HAS_STATUS``.  Register
mode keeps the row in registers (x read from memory once): every load (and the soft-target /
weight loads) is issued first, then each thread takes its own max (packed ``max.bf16x2`` /
``max.f16x2`` for the half types, FMNMX in f32) and its sum of exp2((x − m)·log2e) (FADD, FMUL
and one MUFU.EX2 per element, halves widened on the fly; the difference first keeps huge logits
exact), and the row merges the per-thread
(max, sum-exp[, Σa·x, Σa]) tuples through ONE CTA barrier (warp shuffles, then one warp-level
merge of the warps' tuples) and, for clusters, ONE cluster barrier (the cluster's start-up
barrier is arrived early and waited on only before the exchange).  Loop mode keeps a
per-thread online (max, sum-exp) pair that is merged across the row.  Outputs by flag: the
per-row loss in the logits dtype (``loss``, reduction none), per-row loss / den in the compute
type (``rl`` / ``den``, for the fixed-order reduction), lse in the compute type (``lse``).
"""

from __future__ import annotations

import math
import operator

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Float64, Int32, Int64, Uint32, const_expr

from ..specs import cross_entropy as spec
from ....blocks.half_pairs import NEG_INF2, packed_max, pair_max
from ....blocks.reduction_base import (WARP, alloc_reduction_buffer, cluster_publish, cluster_rank,
                                       cluster_total2, compute_type, element_type, load_batch,
                                       load_scalar, load_slice, row_allreduce_max,
                                       row_allreduce_sum, row_allreduce_sum2, row_thread,
                                       store_batch)
from ....blocks.gmem import gmem_ptr
from ....blocks.softmax_base import cluster_online, exp_sub, fmax_c, safe_max

LOG2E = 1.0 / math.log(2.0)


@cute.jit
def exp_off(x, ms):
    """exp(x − ms) for a finite offset ``ms`` (the row max or lse): the difference is taken
    first — exact near the max, −inf gives 0 — then FMUL + MUFU.EX2 in f32 (ex2.approx.ftz);
    the full-precision exp in f64.  (The one-FFMA form x·log2e − ms·log2e loses the rounding
    error of ms·log2e, ~|ms|·2⁻²⁴: NaN rows for logits ≳ 1e30.)"""
    if const_expr(isinstance(x, Float64)):
        return cute.math.exp(x - ms)
    return cute.arch.exp2((x - ms) * Float32(LOG2E))


@cute.jit
def fexp(x):
    """exp(x): exp2 with a log2(e) scale in f32, the full-precision exp in f64."""
    if const_expr(isinstance(x, Float64)):
        return cute.math.exp(x)
    return cute.math.exp2(x * Float32(LOG2E), fastmath=True)


@cute.jit
def online_batch(s, m, frag, v0, tpr: cutlass.Constexpr, U: cutlass.Constexpr, nvec,
                 vec: cutlass.Constexpr):
    """Fold the loaded vectors ``frag[:, u]`` (those of index v0 + u·tpr < nvec) into a running
    (Σ exp(x − max), max) pair — in that order, in and out (the order the callers' loops carry
    them) —: the batch's max first, one rescale of the sum when it grows."""
    CT = type(m)
    mb = m
    for u in cutlass.range_constexpr(U):
        if v0 + u * tpr < nvec:
            for e in cutlass.range_constexpr(vec):
                mb = fmax_c(mb, CT(frag[e, u]))
    if mb > m:
        s = s * fexp(m - mb)
        m = mb
    for u in cutlass.range_constexpr(U):
        if v0 + u * tpr < nvec:
            for e in cutlass.range_constexpr(vec):
                s = s + fexp(CT(frag[e, u]) - m)
    return s, m


@cute.jit
def row_online(m, s, buf, tpr: cutlass.Constexpr, row_in_cta, lane_in_row):
    """The row's (max, Σ exp(x − max)) from the threads' running pairs: the row max (slot 0),
    each thread's sum rescaled to it (0 for a thread that saw only −inf), then the row sum
    (slot 1)."""
    CT = type(m)
    mm = row_allreduce_max(m, buf, tpr, 0, row_in_cta, lane_in_row)
    if m > CT(-math.inf):
        s = s * fexp(m - mm)
    else:
        s = CT(0.0)
    return mm, row_allreduce_sum(s, buf, tpr, 1, row_in_cta, lane_in_row)


@cute.jit
def row_allreduce_stats(m, s, a, b, buf, tpr: cutlass.Constexpr, aux: cutlass.Constexpr,
                        row_in_cta, lane_in_row):
    """Merge the row's per-thread (max, sum-exp) pairs and (``aux``) sum ``a`` and ``b`` through
    a single barrier; every thread of the row gets (max, sum-exp, Σa, Σb).  Fixed order."""
    width = tpr if const_expr(tpr <= WARP) else WARP
    wm = cute.arch.warp_reduction(m, fmax_c, threads_in_group=width)
    ws = cute.arch.warp_reduction(s * exp_sub(m, safe_max(wm)), operator.add,
                                  threads_in_group=width)
    wa = a
    wb = b
    if const_expr(aux):
        wa = cute.arch.warp_reduction(a, operator.add, threads_in_group=width)
        wb = cute.arch.warp_reduction(b, operator.add, threads_in_group=width)
    if const_expr(tpr <= WARP):
        return wm, ws, wa, wb
    w0 = lane_in_row // WARP
    if lane_in_row % WARP == 0:
        buf[row_in_cta, w0, 0] = wm
        buf[row_in_cta, w0, 1] = ws
        if const_expr(aux):
            buf[row_in_cta, w0, 2] = wa
            buf[row_in_cta, w0, 3] = wb
    cute.arch.barrier()
    # every warp merges the warps' pairs by shuffles (lane w reads warp w's pair): O(log) work
    # per thread instead of one exponential per warp, same fixed order in every warp
    lw = lane_in_row % WARP
    pm = type(m)(-math.inf)
    ps = type(s)(0.0)
    pa = type(a)(0.0)
    pb = type(b)(0.0)
    if lw < tpr // WARP:
        pm = buf[row_in_cta, lw, 0]
        ps = buf[row_in_cta, lw, 1]
        if const_expr(aux):
            pa = buf[row_in_cta, lw, 2]
            pb = buf[row_in_cta, lw, 3]
    tm = cute.arch.warp_reduction(pm, fmax_c)
    ts = cute.arch.warp_reduction(ps * exp_sub(pm, safe_max(tm)), operator.add)
    ta = a
    tb = b
    if const_expr(aux):
        ta = cute.arch.warp_reduction(pa, operator.add)
        tb = cute.arch.warp_reduction(pb, operator.add)
    return tm, ts, ta, tb


@cute.jit
def read_target(pt, row, ts):
    """Target of ``row`` from int32 words: ``ts`` = 1 (int32 targets) or 2 (int64, little
    endian)."""
    r = Int64(row)
    lo = load_scalar(pt, r * Int64(ts))
    t = Int64(lo)
    if ts == 2:
        hi = load_scalar(pt, r * Int64(2) + Int64(1))
        t = (Int64(hi) << Int64(32)) | (Int64(lo) & Int64(0xFFFFFFFF))
    return t


@cute.jit
def set_status(pst, flags):
    if (flags & spec.HAS_STATUS) != 0:
        s = cute.make_tensor(pst, cute.make_layout(1))
        s[0] = Int32(1)


def build(knobs):
    """The kernel of one SKU of the three templates defined here (by knobs type:
    ``cross_entropy_fw``, ``lce_chunk``, ``cross_entropy_reduce``)."""
    if isinstance(knobs, spec.CrossEntropyKnobs):
        return _build_fw(knobs)
    if isinstance(knobs, spec.LceChunkKnobs):
        return _build_lce(knobs)
    return _build_reduce(knobs)


# ===================================================================================== forward
def _build_fw(knobs: spec.CrossEntropyKnobs):
    dt, mode = knobs.dtype, knobs.mode
    vec, tpr, rows, chunks = knobs.vec, knobs.tpr, knobs.rows, knobs.chunks
    C = knobs.cluster
    T = element_type(dt)
    CT = compute_type(dt)
    threads = tpr * rows
    smem = spec.CROSS_ENTROPY_FW.geometry(knobs).smem_bytes
    slots = spec.SLOTS
    aux = mode != "plain"
    U = 4 if vec > 1 else 8
    NEG = -math.inf
    HALF = dt in ("bf16", "f16") and vec % 2 == 0

    @cute.jit
    def coef(rv, rp, e, c, has_w, eps, inv_n):
        """a_c of element (e, c): the class weight (smooth) or weighted smoothed probability."""
        a = CT(1.0)
        if const_expr(mode == "prob"):
            a = CT(rp[e, c]) * (CT(1.0) - eps) + eps * inv_n
            if has_w:
                a = a * CT(rv[e, c])
        else:
            if has_w:
                a = CT(rv[e, c])
        return a

    @cute.jit
    def prefetch(px, offx, pt, pw, pst, row, N, ts, ign, flags):
        """(kind, x[t], w[t]) of the row's target, read before the row itself so the dependent
        loads overlap the row's: kind 1 = valid target, 0 = ignored, 2 = bad (status set)."""
        kind = Int32(0)
        xt = CT(0.0)
        wt = CT(0.0)
        if const_expr(mode != "prob"):
            t = read_target(pt, row, ts)
            if t != ign:
                if (t >= Int64(0)) & (t < Int64(N)):
                    kind = Int32(1)
                    xt = CT(load_scalar(px + offx, t))
                    wt = CT(1.0)
                    if (flags & spec.HAS_W) != 0:
                        wt = CT(load_scalar(pw, t))
                else:
                    kind = Int32(2)
                    set_status(pst, flags)
        return kind, xt, wt

    @cute.jit
    def finish(ploss, prl, pden, plse, row, m, ls, A, B, N, eps, flags, kind, xt, wt):
        """One thread per row: the row's loss from (max m, ls = log Σexp(x − m)), the coefficient
        sums and the target.  The max is subtracted before ls is added ((m − x[t]) + ls, not
        lse − x[t]): exact for huge logits, where m + ls would absorb ls."""
        has_w = (flags & spec.HAS_W) != 0
        lse = m + ls
        loss = CT(0.0)
        den = CT(0.0)
        if const_expr(mode == "prob"):
            loss = (m * B - A) + ls * B
            den = CT(1.0)
        elif const_expr(mode == "nll"):
            if kind == 1:
                loss = -wt * xt
                den = wt
        else:
            if kind == 1:
                loss = (CT(1.0) - eps) * wt * ((m - xt) + ls)
                den = wt
                if const_expr(mode == "smooth"):
                    bb = B
                    if not has_w:
                        bb = CT(N)
                    loss = loss + eps / CT(N) * ((m * bb - A) + ls * bb)
        r = Int64(row)
        if (flags & spec.WRITE_LOSS) != 0:
            o = cute.make_tensor(ploss + r, cute.make_layout(1))
            o[0] = T(loss)
        if (flags & spec.WRITE_ROWS) != 0:
            o = cute.make_tensor(prl + r, cute.make_layout(1))
            o[0] = loss
            o2 = cute.make_tensor(pden + r, cute.make_layout(1))
            o2[0] = den
        if (flags & spec.WRITE_LSE) != 0:
            o = cute.make_tensor(plse + r, cute.make_layout(1))
            o[0] = lse

    @cute.kernel
    def kernel(px: cute.Pointer, pt: cute.Pointer, pw: cute.Pointer, pp: cute.Pointer,
               ploss: cute.Pointer, prl: cute.Pointer, pden: cute.Pointer, plse: cute.Pointer,
               pst: cute.Pointer, M: Int32, N: Int32, xs: Int64, ps: Int64, ts: Int32, ign: Int64,
               eps_: Float64, flags: Int32):
        lane, rin, row = row_thread(tpr, rows, C)
        rank = cluster_rank(C)
        buf = alloc_reduction_buffer(CT, tpr, rows, slots)
        cbuf = None
        if const_expr(C > 1):
            # peers' buffers must be live before the remote stores: arrive now (relaxed, no
            # wait), wait only right before publishing, so the loads are not held back
            cbuf = cutlass.memory.SmemAllocator().allocate_tensor(
                CT, cute.make_layout((rows, slots, C), stride=(slots * C, C, 1)),
                byte_alignment=16)
            cute.arch.cluster_arrive_relaxed()
        valid = row < M
        rr = row if valid else Int32(0)
        offx = cute.assume(Int64(rr) * xs, divby=vec)
        offp = cute.assume(Int64(rr) * ps, divby=vec)
        has_w = (flags & spec.HAS_W) != 0
        eps = CT(eps_)
        inv_n = CT(1.0) / CT(N)
        A = CT(0.0)
        B = CT(0.0)
        kind = Int32(0)
        xt = CT(0.0)
        wt = CT(0.0)
        if const_expr(chunks == 0):
            if valid and lane == 0 and rank == 0:
                kind, xt, wt = prefetch(px, offx, pt, pw, pst, row, N, ts, ign, flags)
        if const_expr(mode == "nll"):
            if valid:
                finish(ploss, prl, pden, plse, row, CT(0.0), CT(0.0), A, B, N, eps, flags, kind,
                       xt, wt)
        elif const_expr(chunks > 0):
            vb = rank * (chunks * tpr)
            nv = chunks * tpr * C
            lay = cute.make_layout((vec, nv), stride=(1, vec))
            gx = cute.make_tensor(px + offx, lay)
            gp = cute.make_tensor(pp + offp, lay)
            gw = cute.make_tensor(pw, lay)
            fl = cute.make_layout((vec, chunks), stride=(1, vec))
            rx = cute.make_rmem_tensor(fl, T)
            rv = cute.make_rmem_tensor(fl, T)
            rp = cute.make_rmem_tensor(fl, T)
            # every row load is issued before the (dependent) target reads of lane 0
            load_slice(gx, rx, vb, lane, tpr, chunks, vec, N, valid)
            if const_expr(aux):
                # soft targets / class weights: issued with the row, consumed after it
                for c in cutlass.range_constexpr(chunks):
                    v = vb + c * tpr + lane
                    if valid and v * vec < N:
                        if const_expr(mode == "prob"):
                            cute.autovec_copy(gp[None, v], rp[None, c])
                        if has_w:
                            cute.autovec_copy(gw[None, v], rv[None, c])
            if valid and lane == 0 and rank == 0:
                kind, xt, wt = prefetch(px, offx, pt, pw, pst, row, N, ts, ign, flags)
            # per-thread (max, sum-exp): no barrier between the loads and the exponentials;
            # the halves are widened on the fly (no f32 copy of the row in registers)
            m = CT(NEG)
            if const_expr(HALF):
                # packed max of the halves (max.{bf16,f16}x2: exact, half the instructions, and
                # no early f32 widening that would keep a second copy of the row alive)
                rw = cute.recast_tensor(rx, Uint32)
                mp = Uint32(NEG_INF2[dt])
                for c in cutlass.range_constexpr(chunks):
                    v = vb + c * tpr + lane
                    if v * vec < N:
                        for e in cutlass.range_constexpr(vec // 2):
                            mp = packed_max(mp, rw[e, c], dt)
                m = pair_max(mp, dt)  # each half read explicitly (see half_pairs)
            else:
                for c in cutlass.range_constexpr(chunks):
                    v = vb + c * tpr + lane
                    if v * vec < N:
                        for e in cutlass.range_constexpr(vec):
                            m = fmax_c(m, CT(rx[e, c]))
            ms = safe_max(m)
            s = CT(0.0)
            for c in cutlass.range_constexpr(chunks):
                v = vb + c * tpr + lane
                if v * vec < N:
                    for e in cutlass.range_constexpr(vec):
                        s = s + exp_off(CT(rx[e, c]), ms)
                    if const_expr(aux):
                        if valid:
                            for e in cutlass.range_constexpr(vec):
                                a = coef(rv, rp, e, c, has_w, eps, inv_n)
                                A = A + a * CT(rx[e, c])
                                B = B + a
            # one CTA barrier and (clusters) one cluster barrier for (max, sum-exp[, A, B])
            m, s, A, B = row_allreduce_stats(m, s, A, B, buf, tpr, aux, rin, lane)
            if const_expr(C > 1):
                cute.arch.cluster_wait()
                if const_expr(aux):
                    cluster_publish(A, cbuf, C, 2, rin, lane)
                    cluster_publish(B, cbuf, C, 3, rin, lane)
                m, s = cluster_online(m, s, cbuf, C, 0, 1, rin, lane)
                if const_expr(aux):
                    A, B = cluster_total2(cbuf, C, 2, 3, rin)
            if valid and lane == 0 and rank == 0:
                finish(ploss, prl, pden, plse, row, safe_max(m), cute.math.log(s), A, B, N, eps,
                       flags, kind, xt, wt)
        else:
            nvec = (N + vec - 1) // vec
            lay = cute.make_layout((vec, nvec), stride=(1, vec))
            gx = cute.make_tensor(px + offx, lay)
            gp = cute.make_tensor(pp + offp, lay)
            gw = cute.make_tensor(pw, lay)
            bl = cute.make_layout((vec, U), stride=(1, vec))
            rx = cute.make_rmem_tensor(bl, T)
            rv = cute.make_rmem_tensor(bl, T)
            rp = cute.make_rmem_tensor(bl, T)
            m = CT(NEG)
            s = CT(0.0)
            if valid:
                for v0 in cutlass.range(lane, nvec, tpr * U):
                    load_batch(gx, rx, v0, tpr, U, nvec)
                    s, m = online_batch(s, m, rx, v0, tpr, U, nvec, vec)
                    if const_expr(aux):
                        if const_expr(mode == "prob"):
                            load_batch(gp, rp, v0, tpr, U, nvec)
                        if has_w:
                            load_batch(gw, rv, v0, tpr, U, nvec)
                        for u in cutlass.range_constexpr(U):
                            if v0 + u * tpr < nvec:
                                for e in cutlass.range_constexpr(vec):
                                    a = coef(rv, rp, e, u, has_w, eps, inv_n)
                                    A = A + a * CT(rx[e, u])
                                    B = B + a
            mm, s = row_online(m, s, buf, tpr, rin, lane)
            if const_expr(aux):
                A, B = row_allreduce_sum2(A, B, buf, tpr, 2, 3, rin, lane)
            if valid and lane == 0:
                finish(ploss, prl, pden, plse, row, safe_max(mm), cute.math.log(s), A, B, N, eps,
                       flags, kind, xt, wt)

    @cute.jit
    def launch(px: cute.Pointer, pt: cute.Pointer, pw: cute.Pointer, pp: cute.Pointer,
               ploss: cute.Pointer, prl: cute.Pointer, pden: cute.Pointer, plse: cute.Pointer,
               pst: cute.Pointer, M: Int32, N: Int32, xs: Int64, ps: Int64, ts: Int32, ign: Int64,
               eps: Float64, flags: Int32, stream):
        kernel(px, pt, pw, pp, ploss, prl, pden, plse, pst, M, N, xs, ps, ts, ign, eps,
               flags).launch(grid=[(M + rows - 1) // rows * C, 1, 1], block=[threads, 1, 1],
                             cluster=[C, 1, 1] if const_expr(C > 1) else None,
                             smem=smem, stream=stream)

    align = T.width // 8 * vec
    ca = CT.width // 8
    args = [gmem_ptr(T, align), gmem_ptr(Int32, 4), gmem_ptr(T, align), gmem_ptr(T, align),
            gmem_ptr(T, T.width // 8), gmem_ptr(CT, ca), gmem_ptr(CT, ca), gmem_ptr(CT, ca),
            gmem_ptr(Int32, 4), Int32(1), Int32(1), Int64(vec), Int64(vec), Int32(2), Int64(-100),
            Float64(0.0), Int32(0), cute.runtime.make_fake_stream()]
    return launch, args


# =================================================================================== reduction
def _build_reduce(knobs: spec.LossReduceKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    NT = spec.REDUCE_THREADS
    NW = NT // WARP

    @cute.kernel
    def kernel(prl: cute.Pointer, pden: cute.Pointer, pout: cute.Pointer, ptw: cute.Pointer,
               M: Int32, rs: Int64, flags: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        smem = cutlass.memory.SmemAllocator()
        part = smem.allocate_tensor(CT, cute.make_layout((NW, 2), stride=(2, 1)),
                                    byte_alignment=16)
        a = CT(0.0)
        d = CT(0.0)
        for i in cutlass.range(tidx, M, NT):
            a = a + load_scalar(prl, Int64(i) * rs)
            d = d + load_scalar(pden, Int64(i) * rs)
        a = cute.arch.warp_reduction(a, lambda p, q: p + q)
        d = cute.arch.warp_reduction(d, lambda p, q: p + q)
        if tidx % WARP == 0:
            part[tidx // WARP, 0] = a
            part[tidx // WARP, 1] = d
        cute.arch.barrier()
        if tidx == 0:
            ta = part[0, 0]
            td = part[0, 1]
            for w in cutlass.range_constexpr(1, NW):
                ta = ta + part[w, 0]
                td = td + part[w, 1]
            res = ta
            if (flags & spec.RED_MEAN) != 0:
                res = ta / td
            o = cute.make_tensor(pout, cute.make_layout(1))
            o[0] = T(res)
            if (flags & spec.RED_TW) != 0:
                o2 = cute.make_tensor(ptw, cute.make_layout(1))
                o2[0] = td

    @cute.jit
    def launch(prl: cute.Pointer, pden: cute.Pointer, pout: cute.Pointer, ptw: cute.Pointer,
               M: Int32, rs: Int64, flags: Int32, stream):
        kernel(prl, pden, pout, ptw, M, rs, flags).launch(
            grid=[1, 1, 1], block=[NT, 1, 1], smem=2 * 32 * 8 + 64, stream=stream)

    ca = CT.width // 8
    args = [gmem_ptr(CT, ca), gmem_ptr(CT, ca), gmem_ptr(T, T.width // 8), gmem_ptr(CT, ca),
            Int32(1), Int64(1), Int32(0), cute.runtime.make_fake_stream()]
    return launch, args


# ========================================================== fused linear + cross-entropy chunk
def _build_lce(knobs: spec.LceChunkKnobs):
    """One vocabulary chunk z (M, Vc) of f32 (f64) logits for columns [v0, v0 + Vc).

    fw: per row, merge the chunk's (max, sum-exp) into stats[row, 0:2] and take the target logit
        (stats[row, 2]) when the target falls in the chunk; on the LAST chunk write lse, loss and
        den (stats[row, 3:6]).
    bw: dz = (exp(z − lse) − [col == t])·g_row in the ``ddt`` dtype (0 for ignored / bad rows);
        here ``stats`` is the lse vector (one value per row).
    """
    dt, op = knobs.dtype, knobs.op
    vec, tpr, rows = knobs.vec, knobs.tpr, knobs.rows
    CT = compute_type(dt)
    DT = element_type(knobs.ddt)
    threads = tpr * rows
    smem = spec.LCE_CHUNK.geometry(knobs).smem_bytes
    slots = spec.SLOTS
    U = 4 if vec > 1 else 8
    NEG = -math.inf
    NS = spec.LCE_STATS

    @cute.kernel
    def kernel(pz: cute.Pointer, pt: cute.Pointer, pstats: cute.Pointer, pdz: cute.Pointer,
               pg: cute.Pointer, ptw: cute.Pointer, pst: cute.Pointer, M: Int32, Vc: Int32,
               zs: Int64, dzs: Int64, v0c: Int64, V: Int64, ts: Int32, ign: Int64, flags: Int32):
        lane, rin, row = row_thread(tpr, rows)
        buf = alloc_reduction_buffer(CT, tpr, rows, slots)
        valid = row < M
        rr = row if valid else Int32(0)
        offz = cute.assume(Int64(rr) * zs, divby=vec)
        st = cute.make_tensor(pstats + Int64(rr) * Int64(NS), cute.make_layout(NS))
        nvec = (Vc + vec - 1) // vec
        lay = cute.make_layout((vec, nvec), stride=(1, vec))
        gz = cute.make_tensor(pz + offz, lay)
        bl = cute.make_layout((vec, U), stride=(1, vec))
        rz = cute.make_rmem_tensor(bl, CT)
        t = read_target(pt, rr, ts)
        if const_expr(op == "fw"):
            m = CT(NEG)
            s = CT(0.0)
            if valid:
                for w0 in cutlass.range(lane, nvec, tpr * U):
                    load_batch(gz, rz, w0, tpr, U, nvec)
                    s, m = online_batch(s, m, rz, w0, tpr, U, nvec, vec)
            mm, s = row_online(m, s, buf, tpr, rin, lane)
            if valid and lane == 0:
                om = mm
                os_ = s
                xt = CT(0.0)
                if (flags & spec.LCE_FIRST) == 0:
                    pm = st[0]
                    ps_ = st[1]
                    xt = st[2]
                    om = cutlass.max(pm, mm)
                    a1 = CT(0.0)
                    a2 = CT(0.0)
                    if pm > CT(NEG):
                        a1 = ps_ * fexp(pm - om)
                    if mm > CT(NEG):
                        a2 = s * fexp(mm - om)
                    os_ = a1 + a2
                if (t >= v0c) & (t < v0c + Int64(Vc)):
                    xt = load_scalar(pz + offz, t - v0c)
                st[0] = om
                st[1] = os_
                st[2] = xt
                if (flags & spec.LCE_LAST) != 0:
                    lse = om + cute.math.log(os_)
                    loss = CT(0.0)
                    den = CT(0.0)
                    if t != ign:
                        if (t >= Int64(0)) & (t < V):
                            loss = (om - xt) + cute.math.log(os_)
                            den = CT(1.0)
                        else:
                            set_status(pst, flags)
                    st[3] = lse
                    st[4] = loss
                    st[5] = den
                    if (flags & spec.LCE_WRITE_LOSS) != 0:
                        o = cute.make_tensor(pdz + Int64(rr), cute.make_layout(1))
                        o[0] = DT(loss)
                    if (flags & spec.LCE_WRITE_LSE) != 0:
                        o2 = cute.make_tensor(ptw + Int64(rr), cute.make_layout(1))
                        o2[0] = lse
        else:
            gd = cute.make_tensor(pdz + Int64(rr) * dzs, lay)
            rd = cute.make_rmem_tensor(bl, DT)
            g = CT(0.0)
            if valid:
                if t != ign:
                    if (t >= Int64(0)) & (t < V):
                        if (flags & spec.G_ROW) != 0:
                            g = CT(load_scalar(pg, Int64(rr)))
                        else:
                            g = CT(load_scalar(pg, Int64(0)))
                        if (flags & spec.G_MEAN) != 0:
                            g = g / CT(load_scalar(ptw, Int64(0)))
                lse = load_scalar(pstats, Int64(rr))
                for w0 in cutlass.range(lane, nvec, tpr * U):
                    load_batch(gz, rz, w0, tpr, U, nvec)
                    for u in cutlass.range_constexpr(U):
                        col0 = Int64(w0 + u * tpr) * Int64(vec) + v0c
                        for e in cutlass.range_constexpr(vec):
                            d = fexp(rz[e, u] - lse)
                            if col0 + Int64(e) == t:
                                d = d - CT(1.0)
                            rd[e, u] = DT(d * g)
                    store_batch(rd, gd, w0, tpr, U, nvec)

    @cute.jit
    def launch(pz: cute.Pointer, pt: cute.Pointer, pstats: cute.Pointer, pdz: cute.Pointer,
               pg: cute.Pointer, ptw: cute.Pointer, pst: cute.Pointer, M: Int32, Vc: Int32,
               zs: Int64, dzs: Int64, v0c: Int64, V: Int64, ts: Int32, ign: Int64, flags: Int32,
               stream):
        kernel(pz, pt, pstats, pdz, pg, ptw, pst, M, Vc, zs, dzs, v0c, V, ts, ign, flags).launch(
            grid=[(M + rows - 1) // rows, 1, 1], block=[threads, 1, 1], smem=smem, stream=stream)

    ca = CT.width // 8
    args = [gmem_ptr(CT, ca * vec), gmem_ptr(Int32, 4), gmem_ptr(CT, ca),
            gmem_ptr(DT, DT.width // 8 * vec), gmem_ptr(DT, DT.width // 8), gmem_ptr(CT, ca),
            gmem_ptr(Int32, 4), Int32(1), Int32(1), Int64(vec), Int64(vec), Int64(0), Int64(1),
            Int32(2), Int64(-100), Int32(0), cute.runtime.make_fake_stream()]
    return launch, args
