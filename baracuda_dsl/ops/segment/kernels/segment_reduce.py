"""Segment reduction: for batch b, segment s < nseg and column c < C,

    out[b, s, c] = ⊕_{k ∈ [lo, hi)} w[k] · src[b, row(k), c]      (increasing k: bit-stable)

with lo = clamp(off[s]), hi = clamp(off[s+1]) (n past the last offset entry; both clamped into
[0, n] and hi ≥ lo, so garbage offsets can never read out of bounds), row(k) = perm[k] (flag
F_PERM; wrapped once when negative with F_WRAP; rows outside [0, m) are skipped and reported in
status[0]) or k.  Optional filters: keys[k] == s (F_KEYS), row(k) != pad (F_PAD_ROW), segment
s == pad written as zero (F_PAD_SEG), argin[row(k), c] == s once per row (F_ARGIN).  ⊕ is
+ (sum, mean ÷ included count, 0 when empty), × (prod, 1 when empty), max / min (NaN
propagates; empty → the accumulator type's lowest / highest, −inf / +inf for floats, or 0 with
F_ZERO_EMPTY); max / min also write the row of the first extreme (−1 when empty) to ``arg``
(dense (B, nseg, C) int64) with F_ARGOUT.  F_ACC: out += alpha · result (non-empty segments
only).  Threads: ``tps`` consecutive threads share a segment and stride its column vectors
(``vec`` columns each, 16-byte loads when vec > 1: the plan guarantees unit column strides and
alignment); grid (segments / (128 / tps), column chunks, batches).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float64, Int32, Int64

from ....blocks.gmem import example_args, gmem_ptr, split_stream
from ..specs.segment import (F_ACC, F_ARGIN, F_ARGOUT, F_KEYS, F_PAD_ROW, F_PAD_SEG, F_PERM,
                             F_STATUS, F_W, F_WRAP, F_ZERO_EMPTY, THREADS, SegmentReduceKnobs,
                             acc_of)
from .common import ELEMENT, clamped_range, load1, sel


def extreme(acc: str, high: bool):
    """Lowest (high=False) / highest value of the accumulator type."""
    if acc in ("f32", "f64"):
        return float("inf") if high else float("-inf")
    return (1 << 63) - 1 if high else -(1 << 63)


def build(knobs: SegmentReduceKnobs):
    op, dt, ix = knobs.op, knobs.dtype, knobs.index
    vec, tps = knobs.vec, knobs.tps
    T = ELEMENT[dt]
    acs = acc_of(dt)
    A = ELEMENT[acs]
    IX = Int32 if ix == "i32" else Int64
    SPC = THREADS // tps
    EXT = op in ("max", "min")
    HI = op == "max"
    if op in ("sum", "mean"):
        ident = 0
    elif op == "prod":
        ident = 1
    else:
        ident = extreme(acs, not HI)
    # the stored value of an empty max/min segment: the *output* dtype's lowest/highest
    if EXT and dt == "i32":
        empty_ext = (1 << 31) - 1 if not HI else -(1 << 31)
    else:
        empty_ext = ident

    def load_vec(p, off, frag):
        """``frag`` ← the ``vec`` elements at ``p + off`` (one vector access when vec > 1)."""
        if vec > 1:
            cute.autovec_copy(cute.make_tensor(p + cute.assume(off, divby=vec),
                                               cute.make_layout(vec)), frag)
        else:
            frag[0] = load1(p, off)

    def store_vec(p, off, res):
        """The ``vec`` elements at ``p + off`` ← ``res``."""
        if vec > 1:
            cute.autovec_copy(res, cute.make_tensor(p + cute.assume(off, divby=vec),
                                                    cute.make_layout(vec)))
        else:
            cute.make_tensor(p + off, cute.make_layout(1))[0] = res[0]

    @cute.kernel
    def kernel(psrc: cute.Pointer, pperm: cute.Pointer, pkeys: cute.Pointer, poff: cute.Pointer,
               pw: cute.Pointer, pout: cute.Pointer, parg: cute.Pointer, pstat: cute.Pointer,
               nseg: Int64, nofs: Int64, n: Int64, m: Int64, C: Int64, srs: Int64, scs: Int64,
               sbs: Int64, ors: Int64, ocs: Int64, obs: Int64, ps: Int64, os: Int64, wsd: Int64,
               pad: Int64, b0: Int64, alpha: Float64, flags: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bx, by, bz = cute.arch.block_idx()
        _, gy, _ = cute.arch.grid_dim()
        s = Int64(bx) * Int64(SPC) + Int64(tidx // tps)
        lane = Int64(tidx % tps)
        b = b0 + Int64(bz)
        if s < nseg:
            lo, hi = clamped_range(poff, s, n, nofs, os)
            if (flags & Int32(F_PAD_SEG)) != Int32(0):
                hi = sel(s == pad, lo, hi)
            if (flags & Int32(F_PERM)) != Int32(0):
                if m == Int64(0):  # no source rows: every index is bad
                    if hi > lo:
                        if (flags & Int32(F_STATUS)) != Int32(0):
                            cute.make_tensor(pstat, cute.make_layout(1))[0] = Int32(1)
                    hi = lo
            ncv = (C + Int64(vec - 1)) // Int64(vec)
            nch = (ncv + Int64(tps - 1)) // Int64(tps)
            nmine = (nch - Int64(by) + Int64(gy) - Int64(1)) // Int64(gy)
            nmine = sel(nmine < Int64(0), Int64(0), nmine)
            sbase = b * sbs
            for q in cutlass.range(Int32(0), Int32(nmine)):
                cv = (Int64(by) + Int64(q) * Int64(gy)) * Int64(tps) + lane
                if cv < ncv:
                    c0 = cv * Int64(vec)
                    accs = cute.make_rmem_tensor(cute.make_layout(vec), A)
                    argi = cute.make_rmem_tensor(cute.make_layout(vec), Int64)
                    frag = cute.make_rmem_tensor(cute.make_layout(vec), T)
                    for e in cutlass.range_constexpr(vec):
                        accs[e] = A(ident)
                        argi[e] = Int64(-1)
                    cnt = Int64(0)
                    prev = Int64(-1)
                    for j in cutlass.range(Int32(0), Int32(hi - lo), unroll=2):
                        k = lo + Int64(j)
                        r = k
                        ok = Int32(1)
                        if (flags & Int32(F_PERM)) != Int32(0):
                            r = Int64(load1(pperm, k * ps))
                            if (flags & Int32(F_WRAP)) != Int32(0):
                                r = sel(r < Int64(0), r + m, r)
                            if (r < Int64(0)) | (r >= m):
                                ok = Int32(0)
                                if (flags & Int32(F_STATUS)) != Int32(0):
                                    cute.make_tensor(pstat, cute.make_layout(1))[0] = Int32(1)
                        if (flags & Int32(F_KEYS)) != Int32(0):
                            kk = Int64(load1(pkeys, k))
                            ok = sel(kk != s, Int32(0), ok)
                        if (flags & Int32(F_PAD_ROW)) != Int32(0):
                            ok = sel(r == pad, Int32(0), ok)
                        first = Int32(1)
                        if (flags & Int32(F_ARGIN)) != Int32(0):
                            first = sel(r == prev, Int32(0), first)
                            prev = r
                        okb = ok != Int32(0)
                        rr = sel(okb, r, Int64(0))  # a valid row: loads need no branch
                        cnt = cnt + Int64(ok)
                        wv = A(1)
                        if cutlass.const_expr(acs != "i64"):
                            if (flags & Int32(F_W)) != Int32(0):
                                wv = A(load1(pw, k * wsd))
                        load_vec(psrc, sbase + rr * srs + c0 * scs, frag)
                        for e in cutlass.range_constexpr(vec):
                            v = A(frag[e])
                            if cutlass.const_expr(op in ("sum", "mean")):
                                if cutlass.const_expr(acs != "i64"):
                                    v = v * wv
                                if (flags & Int32(F_ARGIN)) != Int32(0):
                                    ai = Int64(load1(parg, rr * C + c0 + Int64(e)))
                                    v = sel((ai != s) | (first == Int32(0)), A(0), v)
                                accs[e] = accs[e] + sel(okb, v, A(0))
                            elif cutlass.const_expr(op == "prod"):
                                accs[e] = accs[e] * sel(okb, v, A(1))
                            else:
                                a = accs[e]
                                more = (v > a) if HI else (v < a)
                                take = okb & (more | ((v != v) & (a == a)))
                                accs[e] = sel(take, v, a)
                                argi[e] = sel(take, r, argi[e])
                    ob = b * obs + s * ors + c0 * ocs
                    nonempty = cnt > Int64(0)
                    res = cute.make_rmem_tensor(cute.make_layout(vec), T)
                    for e in cutlass.range_constexpr(vec):
                        v = accs[e]
                        if cutlass.const_expr(op == "mean"):
                            v = sel(nonempty, v / A(sel(nonempty, cnt, Int64(1))), A(0))
                        if cutlass.const_expr(EXT):
                            if (flags & Int32(F_ZERO_EMPTY)) != Int32(0):
                                v = sel(nonempty, v, A(0))
                            elif cutlass.const_expr(dt == "i32"):
                                v = sel(nonempty, v, A(empty_ext))
                        accs[e] = v
                    if (flags & Int32(F_ACC)) != Int32(0):
                        if nonempty:
                            load_vec(pout, ob, frag)
                            for e in cutlass.range_constexpr(vec):
                                if cutlass.const_expr(acs == "i64"):
                                    res[e] = T(A(frag[e]) + Int64(alpha) * accs[e])
                                else:
                                    res[e] = T(A(frag[e]) + A(alpha) * accs[e])
                            store_vec(pout, ob, res)
                    else:
                        for e in cutlass.range_constexpr(vec):
                            res[e] = T(accs[e])
                        store_vec(pout, ob, res)
                    if cutlass.const_expr(EXT):
                        if (flags & Int32(F_ARGOUT)) != Int32(0):
                            ab = (b * nseg + s) * C + c0
                            for e in cutlass.range_constexpr(vec):
                                cute.make_tensor(parg + (ab + Int64(e)),
                                                 cute.make_layout(1))[0] = argi[e]

    @cute.jit
    def launch(psrc: cute.Pointer, pperm: cute.Pointer, pkeys: cute.Pointer, poff: cute.Pointer,
               pw: cute.Pointer, pout: cute.Pointer, parg: cute.Pointer, pstat: cute.Pointer,
               nseg: Int64, *rest):
        scalars, stream = split_stream(rest)
        kernel(psrc, pperm, pkeys, poff, pw, pout, parg, pstat, nseg, *scalars).launch(
            grid=[Int32((nseg + SPC - 1) // SPC), 1, 1], block=[THREADS, 1, 1], stream=stream)

    def ptr(t, align=None):
        return gmem_ptr(t, align or t.width // 8)

    va = 16 if vec > 1 else None
    ptrs = [ptr(T, va), ptr(IX), ptr(Int32), ptr(IX), ptr(A), ptr(T, va), ptr(Int64), ptr(Int32)]
    return launch, example_args(ptrs, 16, [Float64(1.0), Int32(0)])
