"""Backward of softmax / log_softmax / sparsemax along a unit-stride row (runtime ``mode``):

    softmax      (0):  dx = y · (dy − Σ dy·y)
    log_softmax  (1):  dx = dy − exp(y) · Σ dy              (y is the log-softmax output)
    sparsemax    (2):  dx = s · (dy − Σ s·dy / Σ s),  s = [y > 0]

Register mode (``chunks > 0``): each thread keeps ``chunks`` vectors of dy and y in registers
(2 reads + 1 write); the row sums go through warp shuffles and one shared slot per warp, and with
a thread-block cluster (sm90a) through distributed shared memory, added in rank order.  Loop mode
(``chunks == 0``, any N) reads dy and y twice (the second read mostly from L2).  Half types
compute in f32, f64 in f64; deterministic (fixed summation order).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, const_expr

from ..specs.softmax import MODE_LOG, MODE_SOFTMAX, SLOTS, SOFTMAX_BW, SoftmaxKnobs
from ....blocks.half_pairs import opaque_copy
from ....blocks.reduction_base import (alloc_cluster_buffer, alloc_reduction_buffer, cluster_rank,
                                       cluster_sum2, compute_type, element_type, load_batch,
                                       row_allreduce_sum2, row_offset, row_thread)
from ....blocks.softmax_base import exp_c
from .softmax import example_args


def build(knobs: SoftmaxKnobs):
    dt = knobs.dtype
    vec, tpr, rows, chunks = knobs.vec, knobs.tpr, knobs.rows, knobs.chunks
    C = knobs.cluster
    T = element_type(dt)
    CT = compute_type(dt)
    threads = tpr * rows
    smem = SOFTMAX_BW.geometry(knobs).smem_bytes
    U = 2 if vec > 1 else 4  # loop mode: vectors per thread (per operand) in flight per step
    PACKED = chunks > 0 and vec > 1 and T.width == 16  # register mode, two-byte vectors
    WORDS = vec * T.width // 32

    @cute.jit
    def partials(rdy, ry, mode, n_u: cutlass.Constexpr, a, b):
        """Per-thread (a, b) contributions of n_u register vectors to the row sums (whole-vector
        loads and conversions keep two-byte values packed in registers)."""
        dv = cute.make_rmem_tensor(cute.make_layout(vec), CT)
        yv = cute.make_rmem_tensor(cute.make_layout(vec), CT)
        for u in cutlass.range_constexpr(n_u):
            dv.store(rdy[None, u].load().to(CT))
            yv.store(ry[None, u].load().to(CT))
            if mode == MODE_SOFTMAX:
                for e in cutlass.range_constexpr(vec):
                    a = a + dv[e] * yv[e]
            elif mode == MODE_LOG:
                for e in cutlass.range_constexpr(vec):
                    a = a + dv[e]
            else:
                for e in cutlass.range_constexpr(vec):
                    a = a + cutlass.select_(yv[e] > CT(0.0), dv[e], CT(0.0))
                    b = b + cutlass.select_(yv[e] > CT(0.0), CT(1.0), CT(0.0))
        return a, b

    @cute.jit
    def grads(rdy, ry, u: cutlass.Constexpr, rout, mode, a, v):
        """rout ← dx of register vector ``u`` (a = the row sum, v = Σ s·dy / Σ s)."""
        dv = cute.make_rmem_tensor(cute.make_layout(vec), CT)
        yv = cute.make_rmem_tensor(cute.make_layout(vec), CT)
        if const_expr(PACKED):
            pd = cute.make_rmem_tensor(cute.make_layout(vec), T)
            py_ = cute.make_rmem_tensor(cute.make_layout(vec), T)
            opaque_copy(rdy, u, pd, WORDS)  # re-convert from the packed words (see half_pairs)
            opaque_copy(ry, u, py_, WORDS)
            dv.store(pd.load().to(CT))
            yv.store(py_.load().to(CT))
        else:
            dv.store(rdy[None, u].load().to(CT))
            yv.store(ry[None, u].load().to(CT))
        if mode == MODE_SOFTMAX:
            for e in cutlass.range_constexpr(vec):
                rout[e] = T(yv[e] * (dv[e] - a))
        elif mode == MODE_LOG:
            for e in cutlass.range_constexpr(vec):
                rout[e] = T(dv[e] - exp_c(yv[e]) * a)
        else:
            for e in cutlass.range_constexpr(vec):
                rout[e] = T(cutlass.select_(yv[e] > CT(0.0), dv[e] - v, CT(0.0)))

    @cute.kernel
    def kernel(pdy: cute.Pointer, py: cute.Pointer, pdx: cute.Pointer, M: Int32, N: Int32,
               s1: Int32, s2: Int32, dy0: Int64, dy1: Int64, dy2: Int64, y0: Int64, y1: Int64,
               y2: Int64, dx0: Int64, dx1: Int64, dx2: Int64, mode: Int32):
        lane, rin, row = row_thread(tpr, rows, C)
        rank = cluster_rank(C)
        vb = rank * (chunks * tpr)
        buf = alloc_reduction_buffer(CT, tpr, rows, SLOTS)
        valid = row < M
        rr = row if valid else Int32(0)
        offdy = cute.assume(row_offset(rr, s1, s2, dy0, dy1, dy2), divby=vec)
        offy = cute.assume(row_offset(rr, s1, s2, y0, y1, y2), divby=vec)
        offdx = cute.assume(row_offset(rr, s1, s2, dx0, dx1, dx2), divby=vec)
        a = CT(0.0)
        b = CT(0.0)
        if const_expr(chunks > 0):
            nv = chunks * tpr * C
            lay = cute.make_layout((vec, nv), stride=(1, vec))
            gdy = cute.make_tensor(pdy + offdy, lay)
            gy = cute.make_tensor(py + offy, lay)
            gdx = cute.make_tensor(pdx + offdx, lay)
            rl = cute.make_layout((vec, chunks), stride=(1, vec))
            rdy = cute.make_rmem_tensor(rl, T)
            ry = cute.make_rmem_tensor(rl, T)
            for c in cutlass.range_constexpr(chunks):
                v = vb + c * tpr + lane
                if valid and v * vec < N:
                    cute.autovec_copy(gdy[None, v], rdy[None, c])
                    cute.autovec_copy(gy[None, v], ry[None, c])
                else:
                    rdy[None, c].fill(0.0)
                    ry[None, c].fill(0.0)
            # the cluster's start-up barrier (peers' shared memory live before remote stores)
            # overlaps the loads in flight
            cbuf = alloc_cluster_buffer(CT, rows, SLOTS, C)
            a, b = partials(rdy, ry, mode, chunks, a, b)
            a, b = row_allreduce_sum2(a, b, buf, tpr, 0, 1, rin, lane)
            a, b = cluster_sum2(a, b, cbuf, C, 0, 1, rin, lane)
            vv = a / b
            rout = cute.make_rmem_tensor(cute.make_layout(vec), T)
            for c in cutlass.range_constexpr(chunks):
                v = vb + c * tpr + lane
                if valid and v * vec < N:
                    grads(rdy, ry, c, rout, mode, a, vv)
                    cute.autovec_copy(rout, gdx[None, v])
        else:
            nvec = (N + vec - 1) // vec
            lay = cute.make_layout((vec, nvec), stride=(1, vec))
            gdy = cute.make_tensor(pdy + offdy, lay)
            gy = cute.make_tensor(py + offy, lay)
            gdx = cute.make_tensor(pdx + offdx, lay)
            bl = cute.make_layout((vec, U), stride=(1, vec))
            rdy = cute.make_rmem_tensor(bl, T)
            ry = cute.make_rmem_tensor(bl, T)
            if valid:
                for v0 in cutlass.range(lane, nvec, tpr * U):
                    load_batch(gdy, rdy, v0, tpr, U, nvec)
                    load_batch(gy, ry, v0, tpr, U, nvec)
                    a, b = partials(rdy, ry, mode, U, a, b)
            a, b = row_allreduce_sum2(a, b, buf, tpr, 0, 1, rin, lane)
            vv = a / b
            rout = cute.make_rmem_tensor(cute.make_layout(vec), T)
            if valid:
                for v0 in cutlass.range(lane, nvec, tpr * U):
                    load_batch(gdy, rdy, v0, tpr, U, nvec)
                    load_batch(gy, ry, v0, tpr, U, nvec)
                    for u in cutlass.range_constexpr(U):
                        if v0 + u * tpr < nvec:
                            grads(rdy, ry, u, rout, mode, a, vv)
                            cute.autovec_copy(rout, gdx[None, v0 + u * tpr])

    @cute.jit
    def launch(pdy: cute.Pointer, py: cute.Pointer, pdx: cute.Pointer, M: Int32, N: Int32,
               s1: Int32, s2: Int32, dy0: Int64, dy1: Int64, dy2: Int64, y0: Int64, y1: Int64,
               y2: Int64, dx0: Int64, dx1: Int64, dx2: Int64, mode: Int32, stream):
        kernel(pdy, py, pdx, M, N, s1, s2, dy0, dy1, dy2, y0, y1, y2, dx0, dx1, dx2, mode).launch(
            grid=[(M + rows - 1) // rows * C, 1, 1], block=[threads, 1, 1],
            cluster=[C, 1, 1] if const_expr(C > 1) else None, smem=smem, stream=stream)

    return launch, example_args(T, vec, 3) + [Int32(1), Int32(1), Int32(1), Int32(1)] + [
        Int64(vec)] * 9 + [Int32(0), cute.runtime.make_fake_stream()]
