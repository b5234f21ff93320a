"""Rotary embedding, forward and backward: one CuTe DSL kernel per (dtype, table dtype, layout).

For a row ``(b, s, h)`` of x with position ``p`` and each rotary pair ``i < half = r / 2``
(``(i, i + half)`` for the ``half`` layout, ``(2i, 2i + 1)`` for ``interleaved``)::

    c = cos[p, i],  sn = ±sin[p, i]            (− for the backward: BACKWARD flag)
    out[i1] = x[i1]·c − x[i2]·sn
    out[i2] = x[i2]·c + x[i1]·sn

in f32 (f64 for f64 x), rounded once into the output dtype; features ``r <= j < D`` are copied
by the pass-through units (the plan launches none when out is x).  Thread ``t`` of block ``g``
takes work item ``g·THREADS + t`` = ``row · upr + u`` (Int32 index math when
``total < 2^31``): unit ``u`` of the row (the spec module describes the vector and scalar
units).  Each thread reads every element
it writes (both halves of its pairs) before writing, so ``out`` may be ``x`` (in place).  A
position outside ``[0, stab)`` never reads the tables: the unit's rotary outputs are NaN and
``status[0] = 1`` when ``HAS_STATUS``.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, const_expr

from ....blocks.gmem import example_args, gload, gmem_ptr, gstore, split_stream
from ....blocks.reduction_base import compute_type, element_type
from ..specs.rope import (BACKWARD, HAS_STATUS, POS_IDS32, POS_IDS64, POS_OFFSETS,
                          POS_SHIFT, THREADS, VEC, RopeKnobs, table_align, table_vec, vec_of)

_I32_MAX = 2**31 - 1
NAN = float("nan")


@cute.jit
def unit_of(item: Int64, total: Int64, upr: Int32, H: Int32, S: Int32):
    """(b, s, h, u) of a work item ``row · upr + u`` with ``row = (b·S + s)·H + h`` (Int32
    divisions when every item index fits)."""
    u = Int32(0)
    h = Int32(0)
    s = Int32(0)
    b = Int32(0)
    if total <= Int64(_I32_MAX):
        it = Int32(item)
        row32 = it // upr
        u = it - row32 * upr
        tok32 = row32 // H
        h = row32 - tok32 * H
        b = tok32 // S
        s = tok32 - b * S
    else:
        row64 = item // Int64(upr)
        u = Int32(item - row64 * Int64(upr))
        tok64 = row64 // Int64(H)
        h = Int32(row64 - tok64 * Int64(H))
        b64 = tok64 // Int64(S)
        s = Int32(tok64 - b64 * Int64(S))
        b = Int32(b64)
    return b, s, h, u


@cute.jit
def position_of(ppos: cute.Pointer, mode: Int32, b: Int32, s: Int32, pb: Int64, ps: Int64,
                off: Int64):
    """The table row of token (b, s): ``s + off``, ``s + offs[b]`` or ``ids[b·pb + s·ps]``
    (int32 words; an int64 id is its little-endian word pair)."""
    p = Int64(s) + off
    if mode == Int32(POS_OFFSETS):
        p = Int64(s) + Int64(gload(ppos, Int64(b) * pb))
    if mode == Int32(POS_IDS32):
        p = Int64(gload(ppos, Int64(b) * pb + Int64(s) * ps))
    if mode == Int32(POS_IDS64):
        w = (Int64(b) * pb + Int64(s) * ps) * Int64(2)
        lo = Int64(gload(ppos, w)) & Int64(0xFFFFFFFF)
        hi = Int64(gload(ppos, w + Int64(1)))
        p = hi * Int64(2**32) + lo
    return p


def build(knobs: RopeKnobs):
    T = element_type(knobs.dtype)
    TT = element_type(knobs.table)
    CT = compute_type(knobs.dtype)
    V = vec_of(knobs.dtype)          # x elements per 16-byte vector
    TV = table_vec(knobs)            # table entries per vector unit
    TA = table_align(knobs)          # their byte alignment
    HALF = knobs.layout == "half"
    gmem = cute.AddressSpace.gmem

    @cute.kernel
    def kernel(px: cute.Pointer, pout: cute.Pointer, pcos: cute.Pointer, psin: cute.Pointer,
               ppos: cute.Pointer, pst: cute.Pointer, flags: Int32, total: Int64, upr: Int32,
               urot: Int32, H: Int32, S: Int32, half: Int32, rdim: Int32, D: Int32, stab: Int32,
               xb: Int64, xs: Int64, xh: Int64, ob: Int64, os_: Int64, oh: Int64, cs: Int64,
               ss: Int64, pb: Int64, ps: Int64, off: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        item = Int64(bidx) * Int64(THREADS) + Int64(tidx)
        if item < total:
            b, s, h, u = unit_of(item, total, upr, H, S)
            xrow = Int64(b) * xb + Int64(s) * xs + Int64(h) * xh
            orow = Int64(b) * ob + Int64(s) * os_ + Int64(h) * oh
            sgn = CT(1.0)
            if (flags & Int32(BACKWARD)) != Int32(0):
                sgn = CT(-1.0)
            if u < urot:
                p = position_of(ppos, (flags >> Int32(POS_SHIFT)) & Int32(3), b, s, pb, ps, off)
                ok = (p >= Int64(0)) & (p < Int64(stab))
                bad = (p < Int64(0)) | (p >= Int64(stab))
                if bad:
                    if (flags & Int32(HAS_STATUS)) != Int32(0):
                        gstore(pst, 0, Int32(1))
                tc = p * cs
                tsn = p * ss
                if (flags & Int32(VEC)) != Int32(0):
                    # vector unit: V pairs (half) or V features = V/2 pairs (interleaved)
                    vx = cute.make_ptr(T, px.toint(), gmem, assumed_align=16)
                    vo = cute.make_ptr(T, pout.toint(), gmem, assumed_align=16)
                    lay = cute.make_layout(V)
                    ra = cute.make_rmem_tensor(lay, T)
                    rb = cute.make_rmem_tensor(lay, T)
                    fa = cute.make_rmem_tensor(lay, CT)
                    fb = cute.make_rmem_tensor(lay, CT)
                    e0 = Int64(u) * Int64(V)
                    ia = cute.assume(xrow + e0, divby=V)
                    oa = cute.assume(orow + e0, divby=V)
                    ib = ia
                    obb = oa
                    if const_expr(HALF):
                        ib = cute.assume(xrow + Int64(half) + e0, divby=V)
                        obb = cute.assume(orow + Int64(half) + e0, divby=V)
                        cute.autovec_copy(cute.make_tensor(vx + ia, lay), ra)
                        cute.autovec_copy(cute.make_tensor(vx + ib, lay), rb)
                    else:
                        cute.autovec_copy(cute.make_tensor(vx + ia, lay), ra)
                    if ok:
                        tlay = cute.make_layout(TV)
                        vc = cute.make_ptr(TT, pcos.toint(), gmem, assumed_align=TA)
                        vs = cute.make_ptr(TT, psin.toint(), gmem, assumed_align=TA)
                        t0 = Int64(u) * Int64(TV)
                        rc = cute.make_rmem_tensor(tlay, TT)
                        rs = cute.make_rmem_tensor(tlay, TT)
                        cute.autovec_copy(
                            cute.make_tensor(vc + cute.assume(tc + t0, divby=TV), tlay), rc)
                        cute.autovec_copy(
                            cute.make_tensor(vs + cute.assume(tsn + t0, divby=TV), tlay), rs)
                        fa.store(ra.load().to(CT))
                        if const_expr(HALF):
                            fb.store(rb.load().to(CT))
                            for e in cutlass.range_constexpr(V):
                                c = CT(rc[e])
                                sn = CT(rs[e]) * sgn
                                x1 = fa[e]
                                x2 = fb[e]
                                fa[e] = x1 * c - x2 * sn
                                fb[e] = x2 * c + x1 * sn
                            rb.store(fb.load().to(T))
                        else:
                            for k in cutlass.range_constexpr(V // 2):
                                c = CT(rc[k])
                                sn = CT(rs[k]) * sgn
                                x1 = fa[2 * k]
                                x2 = fa[2 * k + 1]
                                fa[2 * k] = x1 * c - x2 * sn
                                fa[2 * k + 1] = x2 * c + x1 * sn
                        ra.store(fa.load().to(T))
                    else:
                        ra.fill(NAN)
                        rb.fill(NAN)
                    cute.autovec_copy(ra, cute.make_tensor(vo + oa, lay))
                    if const_expr(HALF):
                        cute.autovec_copy(rb, cute.make_tensor(vo + obb, lay))
                else:
                    # scalar unit: one pair
                    i1 = Int64(u)
                    i2 = Int64(u) + Int64(half)
                    if const_expr(not HALF):
                        i1 = Int64(u) * Int64(2)
                        i2 = i1 + Int64(1)
                    y1 = CT(NAN)
                    y2 = CT(NAN)
                    if ok:
                        x1 = CT(gload(px, xrow + i1))
                        x2 = CT(gload(px, xrow + i2))
                        c = CT(gload(pcos, tc + Int64(u)))
                        sn = CT(gload(psin, tsn + Int64(u))) * sgn
                        y1 = x1 * c - x2 * sn
                        y2 = x2 * c + x1 * sn
                    gstore(pout, orow + i1, T(y1))
                    gstore(pout, orow + i2, T(y2))
            else:
                # pass-through unit (launched only when out is not x)
                if (flags & Int32(VEC)) != Int32(0):
                    vx = cute.make_ptr(T, px.toint(), gmem, assumed_align=16)
                    vo = cute.make_ptr(T, pout.toint(), gmem, assumed_align=16)
                    lay = cute.make_layout(V)
                    e0 = Int64(rdim) + Int64(u - urot) * Int64(V)
                    ra = cute.make_rmem_tensor(lay, T)
                    cute.autovec_copy(cute.make_tensor(vx + cute.assume(xrow + e0, divby=V), lay),
                                      ra)
                    cute.autovec_copy(ra, cute.make_tensor(vo + cute.assume(orow + e0, divby=V),
                                                           lay))
                else:
                    e = Int64(rdim) + Int64(u - urot)
                    gstore(pout, orow + e, gload(px, xrow + e))

    @cute.jit
    def launch(px: cute.Pointer, pout: cute.Pointer, pcos: cute.Pointer, psin: cute.Pointer,
               ppos: cute.Pointer, pst: cute.Pointer, flags: Int32, total: Int64, *rest):
        scalars, stream = split_stream(rest)
        blocks = (total + Int64(THREADS - 1)) // Int64(THREADS)
        kernel(px, pout, pcos, psin, ppos, pst, flags, total, *scalars).launch(
            grid=[Int32(blocks), 1, 1], block=[THREADS, 1, 1], smem=0, stream=stream)

    isz = T.width // 8
    tsz = TT.width // 8
    ptrs = [gmem_ptr(T, isz), gmem_ptr(T, isz), gmem_ptr(TT, tsz), gmem_ptr(TT, tsz),
            gmem_ptr(Int32, 4), gmem_ptr(Int32, 4), Int32(0), Int64(1)]
    i32s = [Int32(1)] * 8
    return launch, example_args(ptrs, 0, i32s + [Int64(1)] * 11)
