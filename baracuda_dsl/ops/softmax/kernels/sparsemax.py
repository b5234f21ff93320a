"""Sparsemax forward (Martins & Astudillo, 2016) along a unit-stride row of any length:

    y = max(x − τ, 0),   τ such that Σ y = 1.

τ is found exactly, without sorting, by Michelot's fixed-point iteration

    τ₀ = max(x) − 1,   τ_{k+1} = (Σ_{x > τ_k} x − 1) / |{x > τ_k}|

which is non-decreasing from any τ₀ ≤ τ* (τ* ≥ max − 1 always holds) and reaches τ* in finitely
many steps: the support {x > τ_k} shrinks at every step until it stops changing.  The kernel
iterates until the support size no longer decreases (the last step recomputes τ on the final
support), so termination is guaranteed even under rounding; an empty support (max − 1 rounding
to max for huge values, or a row of −inf) stops at once.  Each step is one row reduction of
(Σ x, count) over the support.

Register mode (``chunks > 0``) keeps the row in registers (1 read + 1 write); loop mode
(``chunks == 0``, any N) re-reads the row from memory / L2 for the max, for every step and for
the output.  A CTA whose row spans several warps holds one row (the step count is per row), so
its barriers stay uniform.  Half types compute in f32, f64 in f64.
"""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, const_expr

from ..specs.softmax import SLOTS, SPARSEMAX_FW, SoftmaxKnobs
from ....blocks.reduction_base import (alloc_reduction_buffer, compute_type, element_type,
                                       load_batch, load_slice, row_allreduce_max,
                                       row_allreduce_sum2, row_offset, row_thread, store_batch)
from .softmax import example_args


def build(knobs: SoftmaxKnobs):
    dt = knobs.dtype
    vec, tpr, rows, chunks = knobs.vec, knobs.tpr, knobs.rows, knobs.chunks
    T = element_type(dt)
    CT = compute_type(dt)
    threads = tpr * rows
    smem = SPARSEMAX_FW.geometry(knobs).smem_bytes
    U = 4 if vec > 1 else 8
    NEG = -math.inf

    @cute.jit
    def support(xf, n_u: cutlass.Constexpr, tau, s, k):
        """(Σ x, count) over the elements of ``xf`` above ``tau`` added to (s, k)."""
        for u in cutlass.range_constexpr(n_u):
            for e in cutlass.range_constexpr(vec):
                xv = CT(xf[e, u])
                s = s + cutlass.select_(xv > tau, xv, CT(0.0))
                k = k + cutlass.select_(xv > tau, CT(1.0), CT(0.0))
        return s, k

    @cute.jit
    def solve_tau(m, xf, gx, valid, nvec, N, buf, rin, lane):
        """τ of the row by the fixed-point iteration from the thread's max ``m``: register mode
        sums the support of ``xf``; loop mode streams the row ``gx`` through ``xf``."""
        m = row_allreduce_max(m, buf, tpr, 0, rin, lane)
        tau = m - CT(1.0)
        k_old = CT(N) + CT(1.0)
        par = Int32(1)  # slots 2,3 first: slot 0 held the max until the next barrier
        go = cutlass.Boolean(True)
        while go:
            s = CT(0.0)
            k = CT(0.0)
            if const_expr(chunks > 0):
                s, k = support(xf, chunks, tau, s, k)
            else:
                if valid:
                    for v0 in cutlass.range(lane, nvec, tpr * U):
                        load_batch(gx, xf, v0, tpr, U, nvec, NEG)
                        s, k = support(xf, U, tau, s, k)
            s, k = row_allreduce_sum2(s, k, buf, tpr, 2 * par, 2 * par + 1, rin, lane)
            # an empty support (only when max − 1 rounds to max, or a row of −inf) stops with
            # τ₀ = max − 1 kept
            go = (k < k_old) & (k > CT(0.0))
            k_old = k
            tau = cutlass.select_(k > CT(0.0), (s - CT(1.0)) / k, tau)
            par = 1 - par
        return tau

    @cute.kernel
    def kernel(px: cute.Pointer, py: cute.Pointer, M: Int32, N: Int32, s1: Int32, s2: Int32,
               x0: Int64, x1: Int64, x2: Int64, y0: Int64, y1: Int64, y2: Int64, flags: Int32):
        lane, rin, row = row_thread(tpr, rows)
        buf = alloc_reduction_buffer(CT, tpr, rows, SLOTS)
        valid = row < M
        rr = row if valid else Int32(0)
        offx = cute.assume(row_offset(rr, s1, s2, x0, x1, x2), divby=vec)
        offy = cute.assume(row_offset(rr, s1, s2, y0, y1, y2), divby=vec)
        if const_expr(chunks > 0):
            nv = chunks * tpr
            gx = cute.make_tensor(px + offx, cute.make_layout((vec, nv), stride=(1, vec)))
            gy = cute.make_tensor(py + offy, cute.make_layout((vec, nv), stride=(1, vec)))
            rx = cute.make_rmem_tensor(cute.make_layout((vec, chunks), stride=(1, vec)), T)
            xf = cute.make_rmem_tensor(cute.make_layout((vec, chunks), stride=(1, vec)), CT)
            load_slice(gx, rx, 0, lane, tpr, chunks, vec, N, valid, NEG)
            m = CT(NEG)
            for c in cutlass.range_constexpr(chunks):
                for e in cutlass.range_constexpr(vec):
                    xf[e, c] = CT(rx[e, c])
                    m = cutlass.max(m, xf[e, c])
            tau = solve_tau(m, xf, gx, valid, Int32(0), N, buf, rin, lane)
            for c in cutlass.range_constexpr(chunks):
                for e in cutlass.range_constexpr(vec):
                    rx[e, c] = T(cutlass.max(xf[e, c] - tau, CT(0.0)))
            for c in cutlass.range_constexpr(chunks):
                v = c * tpr + lane
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
            if valid:
                for v0 in cutlass.range(lane, nvec, tpr * U):
                    for u in cutlass.range_constexpr(U):
                        if v0 + u * tpr < nvec:
                            cute.autovec_copy(gx[None, v0 + u * tpr], rx[None, u])
                            for e in cutlass.range_constexpr(vec):
                                m = cutlass.max(m, CT(rx[e, u]))
            tau = solve_tau(m, rx, gx, valid, nvec, N, buf, rin, lane)
            if valid:
                for v0 in cutlass.range(lane, nvec, tpr * U):
                    load_batch(gx, rx, v0, tpr, U, nvec, None)
                    for u in cutlass.range_constexpr(U):
                        for e in cutlass.range_constexpr(vec):
                            rx[e, u] = T(cutlass.max(CT(rx[e, u]) - tau, CT(0.0)))
                    store_batch(rx, gy, v0, tpr, U, nvec)

    @cute.jit
    def launch(px: cute.Pointer, py: cute.Pointer, M: Int32, N: Int32, s1: Int32, s2: Int32,
               x0: Int64, x1: Int64, x2: Int64, y0: Int64, y1: Int64, y2: Int64, flags: Int32,
               stream):
        kernel(px, py, M, N, s1, s2, x0, x1, x2, y0, y1, y2, flags).launch(
            grid=[(M + rows - 1) // rows, 1, 1], block=[threads, 1, 1], smem=smem,
            stream=stream)

    return launch, example_args(T, vec, 2) + [Int32(1), Int32(1), Int32(1), Int32(1)] + [
        Int64(vec)] * 6 + [Int32(0), cute.runtime.make_fake_stream()]
