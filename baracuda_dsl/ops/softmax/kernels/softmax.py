"""softmax / log_softmax forward along a unit-stride row: one CuTe DSL kernel per dtype and
row-length bucket (log vs plain is the runtime flag ``LOG``).

    softmax:     y = exp(x − m) / S,       m = max(x),  S = Σ exp(x − m)
    log_softmax: y = (x − m) − log(S)   (in that order: exact x − m near the max, so huge rows
                 keep −log(S) where x − (m + log S) would round it away)

Register mode (``chunks > 0``): each thread issues all its loads first (``chunks`` 16-byte
vectors of its row) and keeps ONLY the inputs in registers (two-byte values stay packed); it
takes its max (packed ``max.bf16x2`` / ``max.f16x2`` for the half types, FMNMX in f32) and its
Σ exp(x − max) (halves widened at the point of use), merges the row's (max, sum-exp) pairs
(warp shuffles + one shared slot per warp, one barrier) and writes y recomputing
exp(x − m_row) from the inputs (a second MUFU.EX2 per element instead of an f32 copy of the
row: 32 registers a thread at 1024 threads, so two CTAs share an SM and one's exp phase
overlaps the other's loads): x is read once (1 read + 1 write).  With a thread-block cluster
(sm90a) each CTA holds a slice of the row; the CTAs' (max, sum-exp) pairs are exchanged through
distributed shared memory and merged by a C-lane butterfly (fixed order, bit-identical in
every CTA).  Loop mode (``chunks == 0``, any ``N``): one
online pass keeps a running (max, rescaled sum) per thread, the row's pairs are merged, and a
second pass writes y (2 reads + 1 write; the second read mostly hits L2).  exp(x − m) is
exp2((x − m)·log2 e) (difference first: no overflow / cancellation for huge x); half types
compute in f32, f64 in f64.
"""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, Uint32, const_expr

from ..specs.softmax import LOG, SLOTS, SOFTMAX_FW, SoftmaxKnobs
from ....blocks.reduction_base import (WARP, alloc_cluster_buffer, alloc_reduction_buffer,
                                       cluster_exchange2, cluster_rank, compute_type, element_type,
                                       load_batch, load_slice, row_offset, row_thread, store_batch)
from ....blocks.gmem import gmem_ptr
from ....blocks.half_pairs import NEG_INF2, opaque_copy, packed_max, pair_max
from ....blocks.softmax_base import (exp_sub, fmax_c, row_allreduce_online, safe_max,
                                     warp_online)


@cute.jit
def cluster_merge(m, s, cbuf, C: cutlass.Constexpr, row_in_cta, lane_in_row):
    """The row's (max, sum-exp) pair over a cluster of C CTAs (C a power of two <= 32; identity
    for C == 1): each CTA publishes its pair to every peer (DSMEM), one cluster barrier, then
    lane l of every warp reads rank l mod C's pair and the C-lane xor butterfly merges them
    (every lane of every CTA gets the bit-identical pair; only one pair live per thread, where
    merging all C pairs in each thread kept 2·C values live beside the row)."""
    if const_expr(C == 1):
        return m, s
    cluster_exchange2(m, s, cbuf, C, 0, 1, row_in_cta, lane_in_row)
    r = lane_in_row % WARP % C
    return warp_online(cbuf[row_in_cta, 0, r], cbuf[row_in_cta, 1, r], C)


def build(knobs: SoftmaxKnobs):
    dt = knobs.dtype
    vec, tpr, rows, chunks = knobs.vec, knobs.tpr, knobs.rows, knobs.chunks
    C = knobs.cluster
    T = element_type(dt)
    CT = compute_type(dt)
    threads = tpr * rows
    smem = SOFTMAX_FW.geometry(knobs).smem_bytes
    U = 4 if vec > 1 else 8  # loop mode: vectors per thread in flight per step
    NEG = -math.inf
    HALF = T.width == 16 and vec % 2 == 0  # two-byte vectors: packed max, packed registers
    WORDS = vec * T.width // 32

    @cute.kernel
    def kernel(px: cute.Pointer, py: cute.Pointer, M: Int32, N: Int32, s1: Int32, s2: Int32,
               x0: Int64, x1: Int64, x2: Int64, y0: Int64, y1: Int64, y2: Int64, flags: Int32):
        lane, rin, row = row_thread(tpr, rows, C)
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
            fl = cute.make_layout((vec, chunks), stride=(1, vec))
            rx = cute.make_rmem_tensor(fl, T)
            # every row load is issued first; only the (packed) inputs stay in registers
            load_slice(gx, rx, vb, lane, tpr, chunks, vec, N, valid, NEG)
            # the cluster's start-up barrier (peers' shared memory live before remote stores)
            # overlaps the loads in flight
            cbuf = alloc_cluster_buffer(CT, rows, SLOTS, C)
            # one online (max, sum-exp) reduction: each thread exponentiates against its own
            # max, the thread / warp / CTA pairs merge with one barrier, the cluster's with one
            # cluster barrier; the write pass recomputes exp(x − m_row) from the inputs (a
            # second MUFU.EX2 an element instead of an f32 copy of the row in registers)
            m = CT(NEG)
            if const_expr(HALF):
                # packed max of the halves (exact; −inf padding never wins)
                rw = cute.recast_tensor(rx, Uint32)
                mp = Uint32(NEG_INF2[dt])
                for c in cutlass.range_constexpr(chunks):
                    for e in cutlass.range_constexpr(vec // 2):
                        mp = packed_max(mp, rw[e, c], dt)
                m = pair_max(mp, dt)  # each half read explicitly (see half_pairs)
            else:
                for c in cutlass.range_constexpr(chunks):
                    for e in cutlass.range_constexpr(vec):
                        m = fmax_c(m, CT(rx[e, c]))
            ms = safe_max(m)
            s = CT(0.0)
            for c in cutlass.range_constexpr(chunks):
                for e in cutlass.range_constexpr(vec):
                    s = s + exp_sub(CT(rx[e, c]), ms)
            mt, st = row_allreduce_online(m, s, buf, tpr, 0, 1, rin, lane)
            mt, st = cluster_merge(mt, st, cbuf, C, rin, lane)
            lg = cute.math.log(st)
            mlt = safe_max(mt)
            # m_row = −inf (a row of only −inf): st = 0, y = 0·inf = NaN, as PyTorch
            inv = CT(1.0) / st
            xv = cute.make_rmem_tensor(cute.make_layout(vec), T)
            yv = cute.make_rmem_tensor(cute.make_layout(vec), T)
            for c in cutlass.range_constexpr(chunks):
                v = vb + c * tpr + lane
                if const_expr(HALF):
                    opaque_copy(rx, c, xv, WORDS)  # re-widen from the packed words
                else:
                    xv.store(rx[None, c].load())
                if is_log:
                    for e in cutlass.range_constexpr(vec):
                        yv[e] = T((CT(xv[e]) - mt) - lg)
                else:
                    for e in cutlass.range_constexpr(vec):
                        yv[e] = T(exp_sub(CT(xv[e]), mlt) * inv)
                if valid and v * vec < N:
                    cute.autovec_copy(yv, gy[None, v])
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
                    load_batch(gx, rx, v0, tpr, U, nvec, NEG)
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
            lg = cute.math.log(st)
            scale = CT(1.0) / st
            if valid:
                for v0 in cutlass.range(lane, nvec, tpr * U):
                    load_batch(gx, rx, v0, tpr, U, nvec, None)
                    if is_log:
                        for u in cutlass.range_constexpr(U):
                            for e in cutlass.range_constexpr(vec):
                                rx[e, u] = T((CT(rx[e, u]) - mt) - lg)
                    else:
                        for u in cutlass.range_constexpr(U):
                            for e in cutlass.range_constexpr(vec):
                                rx[e, u] = T(exp_sub(CT(rx[e, u]), mlt) * scale)
                    store_batch(rx, gy, v0, tpr, U, nvec)

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
    return [gmem_ptr(T, T.width // 8 * vec) for _ in range(nptr)]
