"""Row-structured losses, backward: one CTA (``tpr`` threads) per row; ``g = dl[row·dls]·scale``
(``dls = 0`` for a scalar upstream gradient of a sum / mean reduction).

    cos:  A = Σa² + 1e-12, B = Σb² + 1e-12, cos = Σab/√(AB);  ∂ℓ/∂cos = −1 (t = 1),
          [cos ≥ margin] (t = −1), 0 otherwise;  da = g·∂ℓ/∂cos·(b/√(AB) − cos·a/A), db likewise
    mm1/mm2: for c ≠ y with z_c = margin − a[y] + a[c] > 0: da[c] = g·w[y]/N·(1 | 2z_c),
          da[y] = −Σ_c da[c]; other entries 0
    mlm:  da[i] = g/N·#{j: 1 − a[t_j] + a[i] > 0} for non-targets i, and each target entry t_j
          subtracts g/N·#{non-targets i: 1 − a[t_j] + a[i] > 0} from da[t_j] (in target order).
          ``aux`` (uint8, M × N, row-major) holds the per-row "is a target" flags.
    trip: s = g·[margin + d(a, b) − dn ≥ 0]; ∇_v ‖v‖_p = sign(v)|v|^(p−1)/‖v‖^(p−1) (0 when
          ‖v‖ = 0); with SWAP the min splits ties half/half (as torch's minimum).

Same math types as the forward (f32; f64 for f64).  Gradients are written with any strides; the
WANT_A/B/C flags say which are written.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float64, Int32, Int64, const_expr

from ..specs.loss_row import SLOTS, SWAP, WANT_A, WANT_B, WANT_C, LossRowKnobs, row_geometry
from .loss_row import (cos_sums, example_ptr, is_target, ld, mm_target, prefix_len, root, st,
                       trip_sums)
from ....blocks.reduction_base import (alloc_reduction_buffer, compute_type, element_type,
                                       row_allreduce_sum)

M = cute.math


@cute.jit
def sgnpow(v, p):
    """sign(v)·|v|^(p−1): v for p = 2, sign(v) for p = 1."""
    t = type(v)
    r = v
    if p != t(2.0):
        sg = cutlass.select_(v > t(0.0), t(1.0), cutlass.select_(v < t(0.0), t(-1.0), t(0.0)))
        r = sg
        if p != t(1.0):
            r = sg * M.pow(M.absf(v), p - t(1.0))
    return r


@cute.jit
def inv_pow(d, p):
    """1/d^(p−1) for d > 0, else 0 (torch's norm backward at a zero norm)."""
    t = type(d)
    dd = cutlass.select_(d > t(0.0), d, t(1.0))
    r = t(1.0) / dd
    if p != t(2.0):
        r = t(1.0)
        if p != t(1.0):
            r = M.pow(dd, t(1.0) - p)
    return cutlass.select_(d > t(0.0), r, t(0.0))


def build(knobs: LossRowKnobs):
    """The backward row-loss kernel of ``knobs.op`` (see the module docstring)."""
    dt, op, tpr = knobs.dtype, knobs.op, knobs.tpr
    T = element_type(dt)
    CT = compute_type(dt)
    TT = cutlass.Int64 if op in ("mm1", "mm2", "mlm") else T
    smem = row_geometry(knobs).smem_bytes

    @cute.kernel
    def kernel(pdl: cute.Pointer, pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer,
               pt: cute.Pointer, pw: cute.Pointer, pda: cute.Pointer, pdb: cute.Pointer,
               pdc: cute.Pointer, paux: cute.Pointer, Mrows: Int32, N: Int32, as0: Int64,
               as1: Int64, bs0: Int64, bs1: Int64, cs0: Int64, cs1: Int64, ts0: Int64,
               ts1: Int64, ws0: Int64, das0: Int64, das1: Int64, dbs0: Int64, dbs1: Int64,
               dcs0: Int64, dcs1: Int64, dls: Int64, scale: Float64, margin: Float64,
               p: Float64, eps: Float64, flags: Int32):
        lane, _, _ = cute.arch.thread_idx()
        row, _, _ = cute.arch.block_idx()
        buf = alloc_reduction_buffer(CT, tpr, 1, SLOTS)
        rr = Int64(row)
        zero = CT(0.0)
        one = CT(1.0)
        mg = CT(margin)
        nct = CT(N)
        g = CT(ld(pdl, rr * dls)) * CT(scale)
        want_a = (flags & WANT_A) != Int32(0)
        want_b = (flags & WANT_B) != Int32(0)
        want_c = (flags & WANT_C) != Int32(0)
        if const_expr(op == "cos"):
            d, A, B = cos_sums(pa, pb, rr, as0, as1, bs0, bs1, N, zero, buf, tpr, lane)
            den = M.sqrt(A * B)
            c = d / den
            tv = CT(ld(pt, rr * ts0))
            dneg = cutlass.select_(c >= mg, one, zero)
            gc = g * cutlass.select_(tv == one, -one, cutlass.select_(tv == -one, dneg, zero))
            ia = one / den
            ca = c / A
            cb = c / B
            for j in cutlass.range(lane, N, tpr):
                x = CT(ld(pa, rr * as0 + Int64(j) * as1))
                y = CT(ld(pb, rr * bs0 + Int64(j) * bs1))
                if want_a:
                    st(pda, rr * das0 + Int64(j) * das1, T(gc * (y * ia - ca * x)))
                if want_b:
                    st(pdb, rr * dbs0 + Int64(j) * dbs1, T(gc * (x * ia - cb * y)))
        if const_expr(op in ("mm1", "mm2")):
            isbad, yc, xy, wy = mm_target(pt, pa, pw, rr, ts0, as0, as1, ws0, N, flags, one)
            gw = cutlass.select_(isbad, zero, g * wy / nct)
            s = zero
            for j in cutlass.range(lane, N, tpr):
                if Int64(j) != yc:
                    z = mg - xy + CT(ld(pa, rr * as0 + Int64(j) * as1))
                    gj = zero
                    if z > zero:
                        if const_expr(op == "mm2"):
                            gj = gw * (z + z)
                        else:
                            gj = gw
                    s = s + gj
                    st(pda, rr * das0 + Int64(j) * das1, T(gj))
            tot = row_allreduce_sum(s, buf, tpr, 0, 0, lane)
            if lane == Int32(0):
                st(pda, rr * das0 + yc * das1, T(-tot))
        if const_expr(op == "mlm"):
            ptr_ = pt + rr * ts0
            paux_ = paux + rr * Int64(N)
            L, bad = prefix_len(ptr_, ts1, N)
            for i in cutlass.range(lane, N, tpr):
                st(paux_, Int64(i), cutlass.Uint8(is_target(ptr_, ts1, L, i)))
            cute.arch.barrier()
            gn = g / nct
            for i in cutlass.range(lane, N, tpr):
                gi = zero
                if Int32(ld(paux_, Int64(i))) == Int32(0):
                    xi = CT(ld(pa, rr * as0 + Int64(i) * as1))
                    for k in cutlass.range(L):
                        yk = Int64(ld(ptr_, Int64(k) * ts1))
                        z = one - CT(ld(pa, rr * as0 + yk * as1)) + xi
                        if z > zero:
                            gi = gi + gn
                st(pda, rr * das0 + Int64(i) * das1, T(gi))
            cute.arch.barrier()
            cnt = zero
            for k in cutlass.range(L):
                yk = Int64(ld(ptr_, Int64(k) * ts1))
                xk = CT(ld(pa, rr * as0 + yk * as1))
                cnt = zero
                for i in cutlass.range(lane, N, tpr):
                    if Int32(ld(paux_, Int64(i))) == Int32(0):
                        z = one - xk + CT(ld(pa, rr * as0 + Int64(i) * as1))
                        if z > zero:
                            cnt = cnt + one
                totk = row_allreduce_sum(cnt, buf, tpr, 0, 0, lane)
                if lane == Int32(0):
                    o = rr * das0 + yk * das1
                    st(pda, o, T(CT(ld(pda, o)) - gn * totk))
                cute.arch.barrier()
        if const_expr(op == "trip"):
            pc_ = CT(p)
            e = CT(eps)
            swap = (flags & SWAP) != Int32(0)
            dpos, dng, t3 = trip_sums(pa, pb, pc, rr, as0, as1, bs0, bs1, cs0, cs1, N, pc_, e,
                                      swap, zero, buf, tpr, lane)
            dsw = root(t3, pc_)
            wn = one
            wsw = zero
            dn = dng
            if swap:
                half = CT(0.5)
                wn = cutlass.select_(dng < dsw, one, cutlass.select_(dng == dsw, half, zero))
                wsw = one - wn
                dn = cutlass.select_(dsw < dng, dsw, dng)
            sg = cutlass.select_(mg + dpos - dn >= zero, g, zero)
            fp = sg * inv_pow(dpos, pc_)
            fn = sg * wn * inv_pow(dng, pc_)
            fs = sg * wsw * inv_pow(dsw, pc_)
            for j in cutlass.range(lane, N, tpr):
                a = CT(ld(pa, rr * as0 + Int64(j) * as1))
                b = CT(ld(pb, rr * bs0 + Int64(j) * bs1))
                cn = CT(ld(pc, rr * cs0 + Int64(j) * cs1))
                gp = fp * sgnpow(a - b + e, pc_)
                gng = fn * sgnpow(a - cn + e, pc_)
                gs = zero
                if swap:
                    gs = fs * sgnpow(b - cn + e, pc_)
                if want_a:
                    st(pda, rr * das0 + Int64(j) * das1, T(gp - gng))
                if want_b:
                    st(pdb, rr * dbs0 + Int64(j) * dbs1, T(-gp - gs))
                if want_c:
                    st(pdc, rr * dcs0 + Int64(j) * dcs1, T(gng + gs))

    @cute.jit
    def launch(pdl: cute.Pointer, pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer,
               pt: cute.Pointer, pw: cute.Pointer, pda: cute.Pointer, pdb: cute.Pointer,
               pdc: cute.Pointer, paux: cute.Pointer, Mrows: Int32, N: Int32, as0: Int64,
               as1: Int64, bs0: Int64, bs1: Int64, cs0: Int64, cs1: Int64, ts0: Int64,
               ts1: Int64, ws0: Int64, das0: Int64, das1: Int64, dbs0: Int64, dbs1: Int64,
               dcs0: Int64, dcs1: Int64, dls: Int64, scale: Float64, margin: Float64,
               p: Float64, eps: Float64, flags: Int32, stream):
        kernel(pdl, pa, pb, pc, pt, pw, pda, pdb, pdc, paux, Mrows, N, as0, as1, bs0, bs1, cs0,
               cs1, ts0, ts1, ws0, das0, das1, dbs0, dbs1, dcs0, dcs1, dls, scale, margin, p,
               eps, flags).launch(grid=[Mrows, 1, 1], block=[tpr, 1, 1], smem=smem,
                                  stream=stream)

    from cutlass.cute.runtime import make_fake_stream

    args = [example_ptr(t) for t in (T, T, T, T, TT, T, T, T, T, cutlass.Uint8)] + [
            Int32(1), Int32(1)] + [Int64(1)] * 16 + [
            Float64(1.0), Float64(1.0), Float64(2.0), Float64(1e-6), Int32(0),
            make_fake_stream()]
    return launch, args
