"""Axis reduction: for item = s·n_out + o (output o, segment s < nseg),

    out[item] = ⊕_{r ∈ [s·seg, min(R, (s+1)·seg))} x[off_k(o) + off_r(r)]

with off_k(o) = (o / k1)·ks0 + (o mod k1)·ks1 and off_r(r) = (r / r1)·rs0 + (r mod r1)·rs1.
⊕ is +, ×, max or min (NaN propagates) in the accumulator type, or for argmax / argmin the
(value, index) pair with the first index among equal extremes (NaN counts as the extreme); arg
SKUs also write the int64 index to ``oi`` and, with ``stage2``, read candidate indices from ``xi``
(the partials of a split first pass) instead of using r.  Float sums are multiplied by ``scale``
before the store (1/N for a mean; 1 otherwise).

``tpo`` threads cooperate on one item: 1 (consecutive threads take consecutive outputs, so
loads coalesce along a unit kept stride), 32 (lanes stride the reduced range, butterfly shuffles)
or 256 (eight warps, then their partials in shared memory combined by thread 0 in warp order).
Each thread accumulates its elements in increasing r; the combine tree is fixed: results are
bit-identical run to run.  ``vec`` > 1 SKUs load 16-byte vectors: with tpo 32/256 along a unit
reduced stride (lane l takes vectors l, l + tpo, …), with tpo 1 across ``vec`` adjacent outputs
of a unit kept stride (column reductions); the plan checks strides and alignment.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Float64, Int32, Int64

from ..specs.axis_reduce import ARG_OPS, THREADS, acc_of

# bool is stored as one byte holding 0 or 1: reduced as uint8
_T = {"bool": cutlass.Uint8, "i8": cutlass.Int8, "i16": cutlass.Int16, "i32": cutlass.Int32,
      "i64": cutlass.Int64, "u8": cutlass.Uint8, "u16": cutlass.Uint16, "u32": cutlass.Uint32,
      "u64": cutlass.Uint64, "f32": Float32, "f16": cutlass.Float16, "bf16": cutlass.BFloat16,
      "f64": Float64}
_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}


def _extreme(dt: str, low: bool):
    """The identity of max (low=True) / min (low=False) in compute type ``dt``."""
    if dt in ("f32", "f64"):
        return float("-inf") if low else float("inf")
    if dt == "bool":
        return 0 if low else 1
    b = _BITS[dt]
    if dt.startswith("u"):
        return 0 if low else (1 << b) - 1
    return -(1 << (b - 1)) if low else (1 << (b - 1)) - 1


def build(knobs):
    """``knobs``: an :class:`~baracuda_dsl.ops.reduction.specs.axis_reduce.AxisReduceKnobs`."""
    op, dt, od, tpo = knobs.op, knobs.dtype, knobs.out, knobs.tpo
    stage2 = knobs.stage2
    vec = knobs.vec
    T, O = _T[dt], _T[od]
    cdt = acc_of(op, dt) if op in ("sum", "prod") else ("f32" if dt in ("f16", "bf16") else dt)
    if cdt == "bool":
        cdt = "u8"
    A = _T[cdt]
    ARG = op in ARG_OPS
    HI = op in ("max", "argmax")
    if op == "sum":
        ident = 0
    elif op == "prod":
        ident = 1
    else:
        ident = _extreme(cdt, HI)
    WARPS = THREADS // 32

    def sel(c, a, b):
        return type(a)(cutlass.select_(c, a, type(a)(b)))

    def better(v, i, m, j):
        """(v, i) replaces the running (m, j) of an arg op: more extreme, NaN over non-NaN, or
        equal (both NaN included) with a smaller index."""
        more = (v > m) if HI else (v < m)
        vnan = v != v
        mnan = m != m
        eq = (v == m) | (vnan & mnan)
        return (more & ~mnan) | (vnan & ~mnan) | (eq & (i < j))

    def comb(a, b):
        if op == "sum":
            return a + b
        if op == "prod":
            return a * b
        take = ((b > a) if HI else (b < a)) | (b != b)
        return sel(take, b, a)

    def fold(acc, idx, v, i):
        """One accumulate step of the running (acc, idx) with the candidate (v, i) (i only
        matters for arg ops)."""
        if ARG:
            take = better(v, i, acc, idx)
            return sel(take, v, acc), sel(take, i, idx)
        return comb(acc, v), idx

    @cute.jit
    def offset(r: Int64, r1: Int64, rs0: Int64, rs1: Int64):
        off = r * rs1
        if r1 != Int64(1):
            q = r // r1
            off = q * rs0 + (r - q * r1) * rs1
        return off

    @cute.jit
    def walk(px: cute.Pointer, pxi: cute.Pointer, base: Int64, lo: Int64, hi: Int64,
             step: Int64, r1: Int64, rs0: Int64, rs1: Int64):
        """Accumulate x[base + off_r(r)] for r = lo, lo + step, … < hi."""
        acc = A(ident)
        idx = Int64(2**62)  # above every index: the first real candidate equal to the identity wins
        for k in cutlass.range(Int32(0), Int32((hi - lo + step - Int64(1)) // step), unroll=4):
            r = lo + Int64(k) * step
            off = base + offset(r, r1, rs0, rs1)
            v = A(cute.make_tensor(px + off, cute.make_layout(1))[0])
            i = r
            if cutlass.const_expr(ARG and stage2 == 1):
                i = cute.make_tensor(pxi + off, cute.make_layout(1))[0]
            acc, idx = fold(acc, idx, v, i)
        return acc, idx

    @cute.jit
    def walk_vec(px: cute.Pointer, base: Int64, s0: Int64, hi: Int64, lane: Int64):
        """As :func:`walk` over [s0, hi) with unit stride, in 16-byte vectors: lane l takes
        vectors l, l + tpo, …; the < vec tail elements go to lanes 0.. one each."""
        acc = A(ident)
        idx = Int64(2**62)
        nv = (hi - s0) // Int64(vec)
        cnt = (nv - lane + Int64(tpo - 1)) // Int64(tpo)
        cnt = sel(cnt < Int64(0), Int64(0), cnt)
        frag = cute.make_rmem_tensor(cute.make_layout(vec), T)
        for k in cutlass.range(Int32(0), Int32(cnt), unroll=2):
            r = s0 + (lane + Int64(k) * Int64(tpo)) * Int64(vec)
            g = cute.make_tensor(px + cute.assume(base + r, divby=vec), cute.make_layout(vec))
            cute.autovec_copy(g, frag)
            for e in cutlass.range_constexpr(vec):
                acc, idx = fold(acc, idx, A(frag[e]), r + Int64(e))
        t = s0 + nv * Int64(vec) + lane
        if t < hi:
            acc, idx = fold(acc, idx, A(cute.make_tensor(px + (base + t), cute.make_layout(1))[0]),
                            t)
        return acc, idx

    @cute.jit
    def warp_combine(acc, idx):
        for sh in cutlass.range_constexpr(5):
            ov = cute.arch.shuffle_sync_bfly(acc, offset=16 >> sh)
            oj = idx
            if cutlass.const_expr(ARG):
                oj = cute.arch.shuffle_sync_bfly(idx, offset=16 >> sh)
            acc, idx = fold(acc, idx, ov, oj)
        return acc, idx

    @cute.jit
    def store(pout: cute.Pointer, poi: cute.Pointer, item: Int64, acc, idx, scale: Float64):
        if cutlass.const_expr(op == "sum" and cdt in ("f32", "f64")):
            acc = acc * A(scale)  # mean: × 1/N before the cast to a narrow output type
        cute.make_tensor(pout + item, cute.make_layout(1))[0] = O(acc)
        if cutlass.const_expr(ARG):
            cute.make_tensor(poi + item, cute.make_layout(1))[0] = idx

    @cute.jit
    def column_group(px: cute.Pointer, pout: cute.Pointer, n_out: Int64, R: Int64, k1: Int64,
                     ks0: Int64, r1: Int64, rs0: Int64, rs1: Int64, seg: Int64, nseg: Int64,
                     scale: Float64, bidx, tidx):
        """tpo = 1 with vectors: a thread reduces ``vec`` adjacent outputs (unit kept stride)
        with one 16-byte load per reduced element, in increasing r like the scalar path."""
        groups = n_out // Int64(vec)
        item = Int64(bidx) * Int64(THREADS) + Int64(tidx)
        if item < groups * nseg:
            s = item // groups
            o0 = (item - s * groups) * Int64(vec)
            q = o0 // k1
            base = q * ks0 + (o0 - q * k1)
            lo = s * seg
            hi = lo + seg
            hi = sel(hi < R, hi, R)
            accs = cute.make_rmem_tensor(cute.make_layout(vec), A)
            for e in cutlass.range_constexpr(vec):
                accs[e] = A(ident)
            frag = cute.make_rmem_tensor(cute.make_layout(vec), T)
            for k in cutlass.range(Int32(0), Int32(hi - lo), unroll=4):
                off = base + offset(lo + Int64(k), r1, rs0, rs1)
                g = cute.make_tensor(px + cute.assume(off, divby=vec), cute.make_layout(vec))
                cute.autovec_copy(g, frag)
                for e in cutlass.range_constexpr(vec):
                    accs[e] = comb(accs[e], A(frag[e]))
            dst = s * n_out + o0
            for e in cutlass.range_constexpr(vec):
                v = accs[e]
                if cutlass.const_expr(op == "sum" and cdt in ("f32", "f64")):
                    v = v * A(scale)
                cute.make_tensor(pout + (dst + Int64(e)), cute.make_layout(1))[0] = O(v)

    @cute.kernel
    def kernel(px: cute.Pointer, pxi: cute.Pointer, pout: cute.Pointer, poi: cute.Pointer,
               n_out: Int64, R: Int64, k1: Int64, ks0: Int64, ks1: Int64, r1: Int64, rs0: Int64,
               rs1: Int64, seg: Int64, nseg: Int64, scale: Float64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        if cutlass.const_expr(tpo == 1 and vec > 1):
            column_group(px, pout, n_out, R, k1, ks0, r1, rs0, rs1, seg, nseg, scale, bidx, tidx)
        else:
            items = n_out * nseg
            if cutlass.const_expr(tpo == 1):
                item = Int64(bidx) * Int64(THREADS) + Int64(tidx)
                lane = Int64(0)
            elif cutlass.const_expr(tpo == 32):
                item = Int64(bidx) * Int64(WARPS) + Int64(tidx // 32)
                lane = Int64(tidx % 32)
            else:
                item = Int64(bidx)
                lane = Int64(tidx)
            live = item < items
            it = sel(live, item, Int64(0))
            s = it // n_out
            o = it - s * n_out
            q = o // k1
            base = q * ks0 + (o - q * k1) * ks1
            lo = s * seg + lane
            hi = s * seg + seg
            hi = sel(hi < R, hi, R)
            hi = sel(live, hi, lo)
            if cutlass.const_expr(vec > 1):
                s0 = s * seg
                hv = s0 + seg
                hv = sel(hv < R, hv, R)
                hv = sel(live, hv, s0)
                acc, idx = walk_vec(px, base, s0, hv, lane)
            else:
                acc, idx = walk(px, pxi, base, lo, hi, Int64(tpo), r1, rs0, rs1)
            if cutlass.const_expr(tpo == 1):
                if live:
                    store(pout, poi, item, acc, idx, scale)
            else:
                acc, idx = warp_combine(acc, idx)
                if cutlass.const_expr(tpo == 32):
                    if live and lane == Int64(0):
                        store(pout, poi, item, acc, idx, scale)
                else:
                    smem = cutlass.memory.SmemAllocator()
                    sv = smem.allocate_tensor(A, cute.make_layout(WARPS), byte_alignment=16)
                    si = smem.allocate_tensor(Int64, cute.make_layout(WARPS), byte_alignment=16)
                    w = tidx // 32
                    if tidx % 32 == 0:
                        sv[w] = acc
                        si[w] = idx
                    cute.arch.barrier()
                    if tidx == 0:
                        tot = sv[0]
                        ti = si[0]
                        for k in cutlass.range_constexpr(1, WARPS):
                            tot, ti = fold(tot, ti, sv[k], si[k])
                        if live:
                            store(pout, poi, item, tot, ti, scale)

    @cute.jit
    def launch(px: cute.Pointer, pxi: cute.Pointer, pout: cute.Pointer, poi: cute.Pointer,
               n_out: Int64, R: Int64, k1: Int64, ks0: Int64, ks1: Int64, r1: Int64, rs0: Int64,
               rs1: Int64, seg: Int64, nseg: Int64, scale: Float64, stream):
        kernel(px, pxi, pout, poi, n_out, R, k1, ks0, ks1, r1, rs0, rs1, seg, nseg,
               scale).launch(
            grid=[Int32(1), 1, 1], block=[THREADS, 1, 1], smem=256, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t, align=None):
        return make_ptr(t, 16, cute.AddressSpace.gmem,
                        assumed_align=align or max(t.width // 8, 1))

    args = ([ptr(T, 16 if vec > 1 else None), ptr(Int64), ptr(O), ptr(Int64)] + [Int64(1)] * 10 +
            [Float64(1.0), make_fake_stream()])
    return launch, args
