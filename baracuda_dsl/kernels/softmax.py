"""softmax / log_softmax forward along a unit-stride row: one CuTe DSL kernel per dtype and
row-length bucket (log vs plain is the runtime flag ``LOG``).

    softmax:     y = exp(x − m) / S,       m = max(x),  S = Σ exp(x − m)
    log_softmax: y = x − m − log(S)

Register mode (``chunks > 0``): each thread loads ``chunks`` vectors of its row (16-byte loads),
keeps them in registers, computes its (max, Σ exp(x − max)) pair, merges the row's pairs (warp
shuffles + one shared slot per warp, one barrier), rescales and writes y: x is read once (1 read
+ 1 write).  With a thread-block cluster
(sm90a) each CTA holds a slice of the row; the CTAs' (max, sum-exp) pairs are exchanged through
distributed shared memory and merged in rank order.  Loop mode (``chunks == 0``, any ``N``): one
online pass keeps a running (max, rescaled sum) per thread, the row's pairs are merged, and a
second pass writes y (2 reads + 1 write; the second read mostly hits L2).  exp(x − m) is
exp2((x − m)·log2 e) (difference first: no overflow / cancellation for huge x); half types
compute in f32, f64 in f64.
"""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, const_expr

from ..templates.softmax import LOG, SLOTS, _geometry
from .reduction_base import (alloc_cluster_buffer, alloc_reduction_buffer, cluster_rank,
                             compute_type, element_type, row_offset)
from .softmax_base import cluster_online, exp_sub, row_allreduce_online, safe_max


def build(knobs: dict):
    dt = knobs["dtype"]
    vec, tpr, rows, chunks = knobs["vec"], knobs["tpr"], knobs["rows"], knobs["chunks"]
    C = knobs.get("cluster", 1)
    T = element_type(dt)
    CT = compute_type(dt)
    threads = tpr * rows
    smem = _geometry(knobs).smem_bytes
    U = 4 if vec > 1 else 8  # loop mode: vectors per thread in flight per step
    NEG = -math.inf

    @cute.kernel
    def kernel(px: cute.Pointer, py: cute.Pointer, M: Int32, N: Int32, s1: Int32, s2: Int32,
               x0: Int64, x1: Int64, x2: Int64, y0: Int64, y1: Int64, y2: Int64, flags: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        lane = tidx % tpr
        rin = tidx // tpr
        row = (bidx // C) * rows + rin
        rank = cluster_rank(C)
        vb = rank * (chunks * tpr)  # first vector of the row owned by this CTA
        buf = alloc_reduction_buffer(CT, tpr, rows, SLOTS)
        valid = row < M
        rr = row if valid else Int32(0)
        offx = cute.assume(row_offset(rr, s1, s2, x0, x1, x2), divby=vec)
        offy = cute.assume(row_offset(rr, s1, s2, y0, y1, y2), divby=vec)
        is_log = (flags & LOG) != 0
        if const_expr(chunks > 0):
            nv = chunks * tpr * C
            gx = cute.make_tensor(px + offx, cute.make_layout((vec, nv), stride=(1, vec)))
            gy = cute.make_tensor(py + offy, cute.make_layout((vec, nv), stride=(1, vec)))
            rx = cute.make_rmem_tensor(cute.make_layout((vec, chunks), stride=(1, vec)), T)
            xf = cute.make_rmem_tensor(cute.make_layout((vec, chunks), stride=(1, vec)), CT)
            for c in cutlass.range_constexpr(chunks):
                v = vb + c * tpr + lane
                if valid and v * vec < N:
                    cute.autovec_copy(gx[None, v], rx[None, c])
                else:
                    rx[None, c].fill(NEG)
            # the cluster's start-up barrier (peers' shared memory live before remote stores)
            # overlaps the loads in flight
            cbuf = alloc_cluster_buffer(CT, rows, SLOTS, C)
            # one online (max, sum-exp) reduction: each thread exponentiates against its own
            # max, the thread / warp / CTA pairs merge with one barrier, the cluster's with one
            # cluster barrier, and each thread rescales by exp(m_thread − m_row) at the end
            m = CT(NEG)
            for c in cutlass.range_constexpr(chunks):
                for e in cutlass.range_constexpr(vec):
                    xf[e, c] = CT(rx[e, c])
                    m = cutlass.max(m, xf[e, c])
            ms = safe_max(m)
            s = CT(0.0)
            if is_log:
                for c in cutlass.range_constexpr(chunks):
                    for e in cutlass.range_constexpr(vec):
                        s = s + exp_sub(xf[e, c], ms)
            else:
                for c in cutlass.range_constexpr(chunks):
                    for e in cutlass.range_constexpr(vec):
                        xf[e, c] = exp_sub(xf[e, c], ms)
                        s = s + xf[e, c]
            mt, st = row_allreduce_online(m, s, buf, tpr, 0, 1, rin, lane)
            mt, st = cluster_online(mt, st, cbuf, C, 0, 1, rin, lane)
            if is_log:
                sub = mt + cute.math.log(st)
                for c in cutlass.range_constexpr(chunks):
                    for e in cutlass.range_constexpr(vec):
                        rx[e, c] = T(xf[e, c] - sub)
            else:
                # m = −inf (only −inf / padding here): scale 0, y = 0; all −inf row: 0/0 = NaN
                scale = exp_sub(m, safe_max(mt)) / st
                for c in cutlass.range_constexpr(chunks):
                    for e in cutlass.range_constexpr(vec):
                        rx[e, c] = T(xf[e, c] * scale)
            for c in cutlass.range_constexpr(chunks):
                v = vb + c * tpr + lane
                if valid and v * vec < N:
                    cute.autovec_copy(rx[None, c], gy[None, v])
        else:
            nvec = (N + vec - 1) // vec
            lay = cute.make_layout((vec, nvec), stride=(1, vec))
            gx = cute.make_tensor(px + offx, lay)
            gy = cute.make_tensor(py + offy, lay)
            bl = cute.make_layout((vec, U), stride=(1, vec))
            rx = cute.make_rmem_tensor(bl, T)
            m = CT(NEG)
            s = CT(0.0)
            if valid:
                for v0 in cutlass.range(lane, nvec, tpr * U):
                    for u in cutlass.range_constexpr(U):
                        if v0 + u * tpr < nvec:
                            cute.autovec_copy(gx[None, v0 + u * tpr], rx[None, u])
                        else:
                            rx[None, u].fill(NEG)
                    mb = m
                    for u in cutlass.range_constexpr(U):
                        for e in cutlass.range_constexpr(vec):
                            mb = cutlass.max(mb, CT(rx[e, u]))
                    ml = safe_max(mb)
                    s = s * exp_sub(m, ml)
                    for u in cutlass.range_constexpr(U):
                        for e in cutlass.range_constexpr(vec):
                            s = s + exp_sub(CT(rx[e, u]), ml)
                    m = mb
            mt, st = row_allreduce_online(m, s, buf, tpr, 0, 1, rin, lane)
            mlt = safe_max(mt)
            sub = mt + cute.math.log(st)
            scale = CT(1.0) / st
            if valid:
                for v0 in cutlass.range(lane, nvec, tpr * U):
                    for u in cutlass.range_constexpr(U):
                        if v0 + u * tpr < nvec:
                            cute.autovec_copy(gx[None, v0 + u * tpr], rx[None, u])
                    if is_log:
                        for u in cutlass.range_constexpr(U):
                            for e in cutlass.range_constexpr(vec):
                                rx[e, u] = T(CT(rx[e, u]) - sub)
                    else:
                        for u in cutlass.range_constexpr(U):
                            for e in cutlass.range_constexpr(vec):
                                rx[e, u] = T(exp_sub(CT(rx[e, u]), mlt) * scale)
                    for u in cutlass.range_constexpr(U):
                        if v0 + u * tpr < nvec:
                            cute.autovec_copy(rx[None, u], gy[None, v0 + u * tpr])

    @cute.jit
    def launch(px: cute.Pointer, py: cute.Pointer, M: Int32, N: Int32, s1: Int32, s2: Int32,
               x0: Int64, x1: Int64, x2: Int64, y0: Int64, y1: Int64, y2: Int64, flags: Int32,
               stream):
        kernel(px, py, M, N, s1, s2, x0, x1, x2, y0, y1, y2, flags).launch(
            grid=[(M + rows - 1) // rows * C, 1, 1], block=[threads, 1, 1],
            cluster=[C, 1, 1] if const_expr(C > 1) else None, smem=smem, stream=stream)

    return launch, example_args(T, vec, 2) + [Int32(1), Int32(1), Int32(1), Int32(1)] + [
        Int64(vec)] * 6 + [Int32(0), cute.runtime.make_fake_stream()]


def example_args(T, vec, nptr):
    """``nptr`` element pointers with the alignment the kernel may assume (16 bytes on the
    vector path, the element size otherwise)."""
    from cutlass.cute.runtime import make_ptr

    align = T.width // 8 * vec
    return [make_ptr(T, 16, cute.AddressSpace.gmem, assumed_align=align) for _ in range(nptr)]
