"""The pointwise-loss kernel (see :mod:`baracuda_dsl.ops.losses.specs.loss_pointwise` for the modes).

Flat path only: thread ``t`` of CTA ``b`` handles vectors ``(b·ILP + j)·THREADS + t`` (j < ILP)
of VEC = 16 / itemsize elements of every operand, each loaded with one 16-byte access (all loads
first, then the math, then the stores); the last partial vector is done element by element.
``reduce`` mode adds the thread's terms in a fixed order (j, then e), reduces the CTA with warp
shuffles and one shared slot per warp (added in warp order) and stores one partial per CTA; the
``fin`` SKU adds the partials in a fixed order too, so sums and means are bit-identical run to run.
"""

from __future__ import annotations

import operator

import cutlass
import cutlass.cute as cute
from cutlass import Float64, Int32, Int64, const_expr

from ..specs.loss_pointwise import (G_SCALAR, HAS_O1, HAS_O2, HAS_PW, HAS_W, ILP, OPS, THREADS,
                                    WARPS, LossPointwiseKnobs, vec_width)
from .loss_pointwise_bw import BACKWARD, FORWARD
from ....blocks.reduction_base import compute_type, element_type


@cute.jit
def load_vec(p, frag, j: cutlass.Constexpr, e0, n, VEC: cutlass.Constexpr):
    """frag[:, j] = the VEC elements at element index e0 (one 16-byte access when the vector is
    whole, element-wise up to n otherwise; elements past n are left as they are)."""
    if e0 + VEC <= n:
        g = cute.make_tensor(p + cute.assume(e0, divby=VEC), cute.make_layout(VEC))
        cute.autovec_copy(g, frag[None, j])
    elif e0 < n:
        for e in cutlass.range_constexpr(VEC):
            if e0 + e < n:
                frag[e, j] = cute.make_tensor(p + (e0 + e), cute.make_layout(1))[0]


@cute.jit
def store_vec(p, frag, j: cutlass.Constexpr, e0, n, VEC: cutlass.Constexpr):
    """The VEC elements at element index e0 = frag[:, j] (predicated past n)."""
    if e0 + VEC <= n:
        g = cute.make_tensor(p + cute.assume(e0, divby=VEC), cute.make_layout(VEC))
        cute.autovec_copy(frag[None, j], g)
    elif e0 < n:
        for e in cutlass.range_constexpr(VEC):
            if e0 + e < n:
                cute.make_tensor(p + (e0 + e), cute.make_layout(1))[0] = frag[e, j]


@cute.jit
def block_sum(val, buf, tidx):
    """Σ val over the CTA, valid in thread 0 (warp shuffles, then the warp sums in order)."""
    part = cute.arch.warp_reduction(val, operator.add)
    if tidx % 32 == 0:
        buf[tidx // 32] = part
    cute.arch.barrier()
    tot = buf[0]
    for k in cutlass.range_constexpr(1, WARPS):
        tot = tot + buf[k]
    return tot


def build(knobs: LossPointwiseKnobs):
    """The ``loss_pointwise`` kernel of ``knobs`` (see the module docstring and the spec)."""
    dt = knobs.dtype
    mode = knobs.mode
    T = element_type(dt)
    CT = compute_type(dt)
    VEC = vec_width(dt)
    FIN = mode == "fin"
    op = None if FIN else OPS[knobs.op]
    NIN = 0 if FIN else op.nin
    USE_W = (not FIN) and op.weight
    USE_PW = (not FIN) and op.pos_weight
    NG = 0 if FIN else len(op.grads)
    # multilabel_soft_margin's per-element terms are row-reduced by the plan: keep them in CT
    OT = CT if (mode == "none" and not FIN and op.name == "multilabel_soft_margin") else T
    fwd = None if FIN else FORWARD[op.name]
    bwd = None if FIN else BACKWARD[op.name]

    @cute.kernel
    def kernel(o0: cute.Pointer, o1: cute.Pointer, o2: cute.Pointer, a: cute.Pointer,
               b: cute.Pointer, c: cute.Pointer, w: cute.Pointer, pw: cute.Pointer,
               g: cute.Pointer, part: cute.Pointer, n: Int64, flags: Int32, p0: Float64,
               p1: Float64, scale: Float64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        if const_expr(FIN):
            smem = cutlass.memory.SmemAllocator()
            buf = smem.allocate_tensor(CT, cute.make_layout(WARPS), byte_alignment=16)
            acc = CT(0.0)
            for i in cutlass.range(Int32(tidx), Int32(n), THREADS):
                acc = acc + cute.make_tensor(part + Int64(i), cute.make_layout(1))[0]
            tot = block_sum(acc, buf, Int32(tidx))
            if tidx == 0:
                cute.make_tensor(o0, cute.make_layout(1))[0] = T(tot * CT(scale))
        else:
            q0 = CT(p0)
            q1 = CT(p1)
            base = (Int64(bidx) * ILP) * THREADS + Int64(tidx)
            pin = [a, b, c]
            fin = [cute.make_rmem_tensor(cute.make_layout((VEC, ILP)), T) for _ in range(NIN)]
            for k in cutlass.range_constexpr(NIN):
                for j in cutlass.range_constexpr(ILP):
                    load_vec(pin[k], fin[k], j, (base + j * THREADS) * VEC, n, VEC)
            fw_ = cute.make_rmem_tensor(cute.make_layout((VEC, ILP)), T)
            fpw = cute.make_rmem_tensor(cute.make_layout((VEC, ILP)), T)
            if const_expr(USE_W):
                fw_.fill(1.0)
                if (flags & HAS_W) != 0:
                    for j in cutlass.range_constexpr(ILP):
                        load_vec(w, fw_, j, (base + j * THREADS) * VEC, n, VEC)
            if const_expr(USE_PW):
                fpw.fill(1.0)
                if (flags & HAS_PW) != 0:
                    for j in cutlass.range_constexpr(ILP):
                        load_vec(pw, fpw, j, (base + j * THREADS) * VEC, n, VEC)
            gsc = (flags & G_SCALAR) != 0
            fg = cute.make_rmem_tensor(cute.make_layout((VEC, ILP)), T)
            g0 = CT(0.0)
            if const_expr(mode == "bw"):
                fg.fill(0.0)
                g0 = CT(cute.make_tensor(g, cute.make_layout(1))[0])
                if (flags & G_SCALAR) == 0:
                    for j in cutlass.range_constexpr(ILP):
                        load_vec(g, fg, j, (base + j * THREADS) * VEC, n, VEC)
            one = CT(1.0)
            if const_expr(mode == "reduce"):
                acc = CT(0.0)
                for j in cutlass.range_constexpr(ILP):
                    e0 = (base + j * THREADS) * VEC
                    for e in cutlass.range_constexpr(VEC):
                        v = [CT(fin[k][e, j]) for k in range(NIN)]
                        wv = CT(fw_[e, j]) if USE_W else one
                        pv = CT(fpw[e, j]) if USE_PW else one
                        term = fwd(v, wv, pv, q0, q1)
                        acc = acc + CT(cutlass.select_(e0 + e < n, term, CT(0.0)))
                smem = cutlass.memory.SmemAllocator()
                buf = smem.allocate_tensor(CT, cute.make_layout(WARPS), byte_alignment=16)
                tot = block_sum(acc, buf, Int32(tidx))
                if tidx == 0:
                    cute.make_tensor(part + Int64(bidx), cute.make_layout(1))[0] = tot
            elif const_expr(mode == "none"):
                fo = cute.make_rmem_tensor(cute.make_layout((VEC, ILP)), OT)
                for j in cutlass.range_constexpr(ILP):
                    for e in cutlass.range_constexpr(VEC):
                        v = [CT(fin[k][e, j]) for k in range(NIN)]
                        wv = CT(fw_[e, j]) if USE_W else one
                        pv = CT(fpw[e, j]) if USE_PW else one
                        fo[e, j] = OT(fwd(v, wv, pv, q0, q1))
                for j in cutlass.range_constexpr(ILP):
                    store_vec(o0, fo, j, (base + j * THREADS) * VEC, n, VEC)
            else:
                sc = CT(scale)
                fo = [cute.make_rmem_tensor(cute.make_layout((VEC, ILP)), T) for _ in range(NG)]
                for j in cutlass.range_constexpr(ILP):
                    for e in cutlass.range_constexpr(VEC):
                        v = [CT(fin[k][e, j]) for k in range(NIN)]
                        wv = CT(fw_[e, j]) if USE_W else one
                        pv = CT(fpw[e, j]) if USE_PW else one
                        gv = CT(cutlass.select_(gsc, g0, CT(fg[e, j]))) * sc
                        r = bwd(v, wv, pv, q0, q1)
                        for k in cutlass.range_constexpr(NG):
                            fo[k][e, j] = T(r[k] * gv)
                outs = [o0, o1, o2]
                bits = [0, HAS_O1, HAS_O2]
                for k in cutlass.range_constexpr(NG):
                    if const_expr(k == 0):
                        for j in cutlass.range_constexpr(ILP):
                            store_vec(outs[k], fo[k], j, (base + j * THREADS) * VEC, n, VEC)
                    else:
                        if (flags & bits[k]) != 0:
                            for j in cutlass.range_constexpr(ILP):
                                store_vec(outs[k], fo[k], j, (base + j * THREADS) * VEC, n,
                                          VEC)

    per = THREADS * ILP * VEC

    @cute.jit
    def launch(o0: cute.Pointer, o1: cute.Pointer, o2: cute.Pointer, a: cute.Pointer,
               b: cute.Pointer, c: cute.Pointer, w: cute.Pointer, pw: cute.Pointer,
               g: cute.Pointer, part: cute.Pointer, n: Int64, flags: Int32, p0: Float64,
               p1: Float64, scale: Float64, stream):
        grid = Int32(1) if const_expr(FIN) else Int32((n + per - 1) // per)
        kernel(o0, o1, o2, a, b, c, w, pw, g, part, n, flags, p0, p1, scale).launch(
            grid=[grid, 1, 1], block=[THREADS, 1, 1], smem=WARPS * 8 + 64, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t, al=16):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=al)

    CTW = CT.width // 8
    args = ([ptr(OT if not FIN else T, T.width // 8 if FIN else 16), ptr(T), ptr(T)]
            + [ptr(T)] * 6 + [ptr(CT, CTW)]
            + [Int64(1), Int32(0), Float64(0.0), Float64(0.0), Float64(1.0), make_fake_stream()])
    return launch, args
