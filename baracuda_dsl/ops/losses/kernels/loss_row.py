"""Row-structured losses, forward: one CTA (``tpr`` threads) per row of length ``N``, loop mode.

    cos:  cos = Σ a·b / sqrt((Σa² + 1e-12)(Σb² + 1e-12));
          loss = 1 − cos (t = 1), max(0, cos − margin) (t = −1), 0 otherwise      (t: dtype)
    mm1/mm2 (multi_margin, p = 1 / 2):  y = t[row] (int64, wrapped once Python-style);
          loss = w[y] · Σ_{c≠y} max(0, margin − a[y] + a[c])^p / N
    mlm (multilabel_margin): targets t[row, :] (int64) up to the first negative value;
          loss = Σ_{j<L} Σ_{i ∉ targets} max(0, 1 − (a[t_j] − a[i])) / N
    trip: d(u, v) = ‖u − v + eps‖_p over the row; dn = d(a, c), or min(d(a, c), d(b, c)) with
          SWAP; loss = max(0, margin + d(a, b) − dn)

Inputs are read with any (row, column) strides, math in f32 (f64 for f64).  The per-row loss is
written in the loss dtype to ``out`` (WRITE_OUT) and/or in the compute type to ``part``
(WRITE_PART, for :func:`build_finalize`).  Bad class indices (multi_margin target outside
[−N, N), multilabel target ≥ N) never touch memory: the row's loss is 0 (multilabel: the prefix
ends there) and ``st[0] = 1`` when ``has_st``.  This module also builds ``loss_finalize``:
the fixed-order sum of a per-row vector (one CTA), scaled, written as a scalar.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float64, Int32, Int64, const_expr

from ..specs.loss_row import (FINAL_THREADS, HAS_W, SLOTS, SWAP, WRITE_OUT, WRITE_PART,
                              LossFinalizeKnobs, LossRowKnobs, finalize_geometry, row_geometry)
from ....blocks.reduction_base import (alloc_reduction_buffer, compute_type, element_type,
                                       row_allreduce_sum, row_allreduce_sum2)

M = cute.math
COS_EPS = 1e-12


def ld(ptr, off):
    """Trace-time: the scalar at ``ptr + off`` (elements)."""
    return cute.make_tensor(ptr + off, cute.make_layout(1))[0]


def st(ptr, off, v):
    """Trace-time: store ``v`` at ``ptr + off`` (elements)."""
    cute.make_tensor(ptr + off, cute.make_layout(1))[0] = v


@cute.jit
def powabs(v, p):
    """|v|^p (p > 0), exact squares / absolute values for p = 2 / 1."""
    a = M.absf(v)
    r = a * a
    if p != type(v)(2.0):
        r = a
        if p != type(v)(1.0):
            r = M.pow(a, p)
    return r


@cute.jit
def root(s, p):
    """s^(1/p): sqrt for p = 2, identity for p = 1."""
    r = M.sqrt(s)
    if p != type(s)(2.0):
        r = s
        if p != type(s)(1.0):
            r = M.pow(s, type(s)(1.0) / p)
    return r


@cute.jit
def prefix_len(pt, ts1, N):
    """(L, bad): the number of leading non-negative targets of a multilabel row (stopping at the
    first negative value, or at a value >= N, which sets ``bad``)."""
    L = Int32(0)
    bad = Int32(0)
    go = cutlass.select_(N > Int32(0), Int32(1), Int32(0))
    while go != Int32(0):
        v = Int64(ld(pt, Int64(L) * ts1))
        over = v >= Int64(N)
        stop = (v < Int64(0)) | over
        bad = cutlass.select_(over | (v < Int64(-1)), Int32(1), bad)
        nl = L + Int32(1)
        L = cutlass.select_(stop, L, nl)
        go = cutlass.select_(stop, Int32(0), cutlass.select_(nl < N, Int32(1), Int32(0)))
    return L, bad


@cute.jit
def is_target(pt, ts1, L, i):
    """1 when column ``i`` is one of the first ``L`` targets of the row."""
    f = Int32(0)
    for k in cutlass.range(L):
        if Int64(ld(pt, Int64(k) * ts1)) == Int64(i):
            f = Int32(1)
    return f


@cute.jit
def cos_sums(pa, pb, rr, as0, as1, bs0, bs1, N, zero, buf, tpr: cutlass.Constexpr, lane):
    """(Σab, Σa² + COS_EPS, Σb² + COS_EPS) over row ``rr`` (every lane gets them; slots 0–2
    of ``buf``)."""
    CT = type(zero)
    sd = zero
    sa = zero
    sb = zero
    for j in cutlass.range(lane, N, tpr):
        x = CT(ld(pa, rr * as0 + Int64(j) * as1))
        y = CT(ld(pb, rr * bs0 + Int64(j) * bs1))
        sd = sd + x * y
        sa = sa + x * x
        sb = sb + y * y
    d, a2 = row_allreduce_sum2(sd, sa, buf, tpr, 0, 1, 0, lane)
    b2 = row_allreduce_sum(sb, buf, tpr, 2, 0, lane)
    return d, a2 + CT(COS_EPS), b2 + CT(COS_EPS)


@cute.jit
def mm_target(pt, pa, pw, rr, ts0, as0, as1, ws0, N, flags, one):
    """(isbad, yc, a[y], w[y]) of a multi_margin row: y wrapped once, ``yc = 0`` when bad,
    ``w[y] = 1`` without HAS_W."""
    CT = type(one)
    y = Int64(ld(pt, rr * ts0))
    y = cutlass.select_(y < Int64(0), y + Int64(N), y)
    isbad = (y < Int64(0)) | (y >= Int64(N))
    yc = cutlass.select_(isbad, Int64(0), y)
    xy = CT(ld(pa, rr * as0 + yc * as1))
    wy = one
    if (flags & HAS_W) != Int32(0):
        wy = CT(ld(pw, yc * ws0))
    return isbad, yc, xy, wy


@cute.jit
def trip_sums(pa, pb, pc, rr, as0, as1, bs0, bs1, cs0, cs1, N, pc_, e, swap, zero, buf,
              tpr: cutlass.Constexpr, lane):
    """(d(a, b), d(a, c), Σ|b − c + e|^p) of a triplet row (the last is 0 without ``swap``)."""
    CT = type(zero)
    s1 = zero
    s2 = zero
    s3 = zero
    for j in cutlass.range(lane, N, tpr):
        a = CT(ld(pa, rr * as0 + Int64(j) * as1))
        b = CT(ld(pb, rr * bs0 + Int64(j) * bs1))
        cn = CT(ld(pc, rr * cs0 + Int64(j) * cs1))
        s1 = s1 + powabs(a - b + e, pc_)
        s2 = s2 + powabs(a - cn + e, pc_)
        if swap:
            s3 = s3 + powabs(b - cn + e, pc_)
    t1, t2 = row_allreduce_sum2(s1, s2, buf, tpr, 0, 1, 0, lane)
    t3 = row_allreduce_sum(s3, buf, tpr, 2, 0, lane)
    return root(t1, pc_), root(t2, pc_), t3


def build(knobs):
    """The ``loss_row_fw`` kernel (:class:`LossRowKnobs`) or ``loss_finalize``
    (:class:`LossFinalizeKnobs`, :func:`build_finalize`): both templates live in this module."""
    if isinstance(knobs, LossFinalizeKnobs):
        return build_finalize(knobs)
    return build_row(knobs)


def build_row(knobs: LossRowKnobs):
    """The forward row-loss kernel of ``knobs.op`` (see the module docstring)."""
    dt, op, tpr = knobs.dtype, knobs.op, knobs.tpr
    T = element_type(dt)
    CT = compute_type(dt)
    TT = cutlass.Int64 if op in ("mm1", "mm2", "mlm") else T  # target element type
    smem = row_geometry(knobs).smem_bytes

    @cute.kernel
    def kernel(pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer, pt: cute.Pointer,
               pw: cute.Pointer, pout: cute.Pointer, ppart: cute.Pointer, pst: cute.Pointer,
               has_st: Int32, Mrows: Int32, N: Int32, as0: Int64, as1: Int64, bs0: Int64,
               bs1: Int64, cs0: Int64, cs1: Int64, ts0: Int64, ts1: Int64, ws0: Int64,
               os0: Int64, margin: Float64, p: Float64, eps: Float64, flags: Int32):
        lane, _, _ = cute.arch.thread_idx()
        row, _, _ = cute.arch.block_idx()
        buf = alloc_reduction_buffer(CT, tpr, 1, SLOTS)
        rr = Int64(row)
        zero = CT(0.0)
        one = CT(1.0)
        mg = CT(margin)
        loss = zero
        bad = Int32(0)
        nct = CT(N)
        if const_expr(op == "cos"):
            d, A, B = cos_sums(pa, pb, rr, as0, as1, bs0, bs1, N, zero, buf, tpr, lane)
            c = d / M.sqrt(A * B)
            tv = CT(ld(pt, rr * ts0))
            neg = cutlass.select_(c - mg > zero, c - mg, zero)
            loss = cutlass.select_(tv == one, one - c, cutlass.select_(tv == -one, neg, zero))
        if const_expr(op in ("mm1", "mm2")):
            isbad, yc, xy, wy = mm_target(pt, pa, pw, rr, ts0, as0, as1, ws0, N, flags, one)
            bad = cutlass.select_(isbad, Int32(1), Int32(0))
            s = zero
            for j in cutlass.range(lane, N, tpr):
                if Int64(j) != yc:
                    z = mg - xy + CT(ld(pa, rr * as0 + Int64(j) * as1))
                    if z > zero:
                        if const_expr(op == "mm2"):
                            s = s + z * z
                        else:
                            s = s + z
            tot = row_allreduce_sum(s, buf, tpr, 0, 0, lane)
            loss = cutlass.select_(isbad, zero, tot * wy / nct)
        if const_expr(op == "mlm"):
            ptr_ = pt + rr * ts0
            L, bad = prefix_len(ptr_, ts1, N)
            s = zero
            for i in cutlass.range(lane, N, tpr):
                if is_target(ptr_, ts1, L, i) == Int32(0):
                    xi = CT(ld(pa, rr * as0 + Int64(i) * as1))
                    for k in cutlass.range(L):
                        yk = Int64(ld(ptr_, Int64(k) * ts1))
                        z = one - CT(ld(pa, rr * as0 + yk * as1)) + xi
                        if z > zero:
                            s = s + z
            tot = row_allreduce_sum(s, buf, tpr, 0, 0, lane)
            loss = tot / nct
        if const_expr(op == "trip"):
            pc_ = CT(p)
            e = CT(eps)
            dpos, dn, t3 = trip_sums(pa, pb, pc, rr, as0, as1, bs0, bs1, cs0, cs1, N, pc_, e,
                                     (flags & SWAP) != Int32(0), zero, buf, tpr, lane)
            if (flags & SWAP) != Int32(0):
                dsw = root(t3, pc_)
                dn = cutlass.select_(dsw < dn, dsw, dn)
            v = mg + dpos - dn
            loss = cutlass.select_(v > zero, v, zero)
        if lane == Int32(0):
            if (flags & WRITE_OUT) != Int32(0):
                st(pout, rr * os0, T(loss))
            if (flags & WRITE_PART) != Int32(0):
                st(ppart, rr, loss)
            if bad != Int32(0):
                if has_st != Int32(0):
                    st(pst, Int64(0), Int32(1))

    @cute.jit
    def launch(pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer, pt: cute.Pointer,
               pw: cute.Pointer, pout: cute.Pointer, ppart: cute.Pointer, pst: cute.Pointer,
               has_st: Int32, Mrows: Int32, N: Int32, as0: Int64, as1: Int64, bs0: Int64,
               bs1: Int64, cs0: Int64, cs1: Int64, ts0: Int64, ts1: Int64, ws0: Int64,
               os0: Int64, margin: Float64, p: Float64, eps: Float64, flags: Int32, stream):
        kernel(pa, pb, pc, pt, pw, pout, ppart, pst, has_st, Mrows, N, as0, as1, bs0, bs1, cs0,
               cs1, ts0, ts1, ws0, os0, margin, p, eps, flags).launch(
            grid=[Mrows, 1, 1], block=[tpr, 1, 1], smem=smem, stream=stream)

    from cutlass.cute.runtime import make_fake_stream

    args = [example_ptr(t) for t in (T, T, T, TT, T, T, CT, Int32)] + [
            Int32(0), Int32(1), Int32(1)] + [Int64(1)] * 10 + [
            Float64(1.0), Float64(2.0), Float64(1e-6), Int32(0), make_fake_stream()]
    return launch, args


def example_ptr(t):
    """A global-memory pointer of element type ``t`` (aligned to its size) for compiling."""
    from cutlass.cute.runtime import make_ptr

    return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=t.width // 8)


def build_finalize(knobs: LossFinalizeKnobs):
    """``out[0] = scale · Σ_i part[i]`` (i < M, fixed order: thread-strided partials, then the
    row all-reduce of :mod:`reduction_base`), ``part`` in the compute type, ``out`` in ``dtype``."""
    dt = knobs.dtype
    T = element_type(dt)
    CT = compute_type(dt)
    nt = FINAL_THREADS
    smem = finalize_geometry(knobs).smem_bytes

    @cute.kernel
    def kernel(ppart: cute.Pointer, pout: cute.Pointer, Mrows: Int32, scale: Float64):
        tid, _, _ = cute.arch.thread_idx()
        buf = alloc_reduction_buffer(CT, nt, 1, SLOTS)
        s = CT(0.0)
        for i in cutlass.range(tid, Mrows, nt):
            s = s + CT(ld(ppart, Int64(i)))
        tot = row_allreduce_sum(s, buf, nt, 0, 0, tid)
        if tid == Int32(0):
            st(pout, Int64(0), T(tot * CT(scale)))

    @cute.jit
    def launch(ppart: cute.Pointer, pout: cute.Pointer, Mrows: Int32, scale: Float64, stream):
        kernel(ppart, pout, Mrows, scale).launch(grid=[1, 1, 1], block=[nt, 1, 1], smem=smem,
                                                 stream=stream)

    from cutlass.cute.runtime import make_fake_stream

    return launch, [example_ptr(CT), example_ptr(T), Int32(1), Float64(1.0), make_fake_stream()]
