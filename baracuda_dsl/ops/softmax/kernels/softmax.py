"""softmax / log_softmax forward along a unit-stride row: one CuTe DSL kernel per dtype and
row-length bucket (log vs plain is the runtime flag ``LOG``).

    softmax:     y = exp(x − m) / S,       m = max(x),  S = Σ exp(x − m)
    log_softmax: y = x − m − log(S)

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
from cutlass import Float64, Int32, Int64, Uint32, const_expr

from ..specs.softmax import LOG, SLOTS, SOFTMAX_FW, SoftmaxKnobs
from ....blocks.reduction_base import (alloc_cluster_buffer, alloc_reduction_buffer, cluster_rank,
                                       compute_type, element_type, row_offset)
from ....blocks.half_pairs import pair_max
from ....blocks.softmax_base import (WARP, _publish, exp_sub, row_allreduce_online, safe_max,
                                     warp_online)


@cute.jit
def fmax_c(a, b):
    """max in the compute type: one FMNMX for f32 (drops a NaN operand: NaN elements still
    reach every output through the sum of exponentials), the NaN-propagating max for f64."""
    if const_expr(isinstance(a, Float64)):
        return cutlass.max(a, b)
    return cute.arch.fmax(a, b)


@cute.jit
def cluster_merge(m, s, cbuf, C: cutlass.Constexpr, row_in_cta, lane_in_row):
    """The row's (max, sum-exp) pair over a cluster of C CTAs (C a power of two <= 32; identity
    for C == 1): each CTA publishes its pair to every peer (DSMEM), one cluster barrier, then
    lane l of every warp reads rank l mod C's pair and the C-lane xor butterfly merges them
    (every lane of every CTA gets the bit-identical pair; only one pair live per thread, where
    merging all C pairs in each thread kept 2·C values live beside the row)."""
    if const_expr(C == 1):
        return m, s
    _publish(m, cbuf, C, 0, row_in_cta, lane_in_row)
    _publish(s, cbuf, C, 1, row_in_cta, lane_in_row)
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()
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
    NEG2 = 0xFF80FF80 if dt == "bf16" else 0xFC00FC00  # (−inf, −inf)
    MAX2 = ("{ .reg .b32 t; mov.b32 t, {$r0}; max.%s {$w0}, t, {$r1}; }"
            % ("bf16x2" if dt == "bf16" else "f16x2"))
    WORDS = vec * T.width // 32

    @cute.jit
    def opaque(src, c: cutlass.Constexpr, dst):
        """dst ← src[:, c] through opaque 32-bit moves: the write pass re-widens the halves
        from their packed words instead of keeping the first pass's f32 conversions alive
        across the reduction (which would double the register footprint)."""
        sw = cute.recast_tensor(src, Uint32)
        dw = cute.recast_tensor(dst, Uint32)
        for i in cutlass.range_constexpr(WORDS):
            dw[i] = cute.arch.inline_ptx("mov.b32 {$w0}, {$r0};", write_only_types=[Uint32],
                                         read_only_args=[sw[i, c]])


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
            fl = cute.make_layout((vec, chunks), stride=(1, vec))
            rx = cute.make_rmem_tensor(fl, T)
            # every row load is issued first; only the (packed) inputs stay in registers
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
            # cluster barrier; the write pass recomputes exp(x − m_row) from the inputs (a
            # second MUFU.EX2 an element instead of an f32 copy of the row in registers)
            m = CT(NEG)
            if const_expr(HALF):
                # packed max of the halves (exact; −inf padding never wins)
                rw = cute.recast_tensor(rx, Uint32)
                mp = Uint32(NEG2)
                for c in cutlass.range_constexpr(chunks):
                    for e in cutlass.range_constexpr(vec // 2):
                        mp = cute.arch.inline_ptx(MAX2, write_only_types=[Uint32],
                                                  read_only_args=[mp, rw[e, c]])
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
            sub = mt + cute.math.log(st)
            mlt = safe_max(mt)
            # m_row = −inf (a row of only −inf): st = 0, y = 0·inf = NaN, as PyTorch
            inv = CT(1.0) / st
            xv = cute.make_rmem_tensor(cute.make_layout(vec), T)
            yv = cute.make_rmem_tensor(cute.make_layout(vec), T)
            for c in cutlass.range_constexpr(chunks):
                v = vb + c * tpr + lane
                if const_expr(HALF):
                    opaque(rx, c, xv)  # re-widen from the packed words (no f32 copy kept)
                else:
                    xv.store(rx[None, c].load())
                if is_log:
                    for e in cutlass.range_constexpr(vec):
                        yv[e] = T(CT(xv[e]) - sub)
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
