"""Pad backward: ``dx[i] = Σ_{p : map(p) = i} dy[p]`` over every padded dim at once (dense ``dx``).

The dense ``dx`` index is decomposed row-major over the input extents ``x[8-R..7]``; for each dim
the output coordinates ``p`` (out extent ``pe``, low pad ``l``) that the forward pad maps onto the
input coordinate ``i`` form a short list, in ascending order:

    constant   p = i + l  (if 0 <= p < pe)
    replicate  [0, l] for i = 0, [l+i, pe) for i = n-1, else l + i
    reflect    l - i (if 1 <= i <= l), l + i, l + 2(n-1) - i (if i <= n-2 and < pe)
    circular   p0 = (i + l) mod n, p0 + n, p0 + 2n, ... < pe  (``l`` is passed reduced mod n)

Eight nested loops (one per dim, unused dims run once) walk the lists innermost last, so every
element sums in the same fixed order (deterministic, no atomics).  Accumulation in f32 (f64 for
f64).  Index math in Int64; counts in Int32.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, const_expr

from ....blocks.reduction_base import compute_type, element_type

THREADS = 256


def build(knobs: dict):
    T = element_type(knobs["dtype"])
    CT = compute_type(knobs["dtype"])
    R = int(knobs["rank"])
    mode = str(knobs["mode"])

    def cands(i, n, pe, lo):
        """(count, first, second, third, step): the list is first, second, third (reflect) or
        first + a·step (other modes)."""
        z = Int64(0)
        one = Int64(1)
        if const_expr(mode == "constant"):
            p = i + lo
            cnt = cutlass.select_((p >= z) & (p < pe), Int32(1), Int32(0))
            return cnt, p, z, z, z
        elif const_expr(mode == "replicate"):
            st = cutlass.select_(i == z, z, lo + i)
            en = cutlass.select_(i == n - one, pe - one, lo + i)
            return Int32(en - st + one), st, z, z, one
        elif const_expr(mode == "circular"):
            p0 = i + lo
            p0 = cutlass.select_(p0 >= n, p0 - n, p0)
            cnt = cutlass.select_(p0 < pe, Int32((pe - p0 + n - one) // n), Int32(0))
            return cnt, p0, z, z, n
        else:  # reflect
            c1 = lo - i
            c2 = lo + i
            c3 = lo + Int64(2) * (n - one) - i
            v1 = (i >= one) & (c1 >= z)
            v3 = (i <= n - Int64(2)) & (c3 < pe)
            first = cutlass.select_(v1, c1, c2)
            second = cutlass.select_(v1, c2, c3)
            cnt = Int32(1) + cutlass.select_(v1, Int32(1), Int32(0)) + cutlass.select_(
                v3, Int32(1), Int32(0))
            return cnt, first, second, c3, z

    def pick(a, first, second, third, step):
        if const_expr(mode == "reflect"):
            return cutlass.select_(a == Int32(0), first,
                                   cutlass.select_(a == Int32(1), second, third))
        return first + Int64(a) * step

    @cute.kernel
    def kernel(pdy: cute.Pointer, pdx: cute.Pointer, n: Int64,
               x0: Int64, x1: Int64, x2: Int64, x3: Int64, x4: Int64, x5: Int64, x6: Int64,
               x7: Int64,
               p0: Int64, p1: Int64, p2: Int64, p3: Int64, p4: Int64, p5: Int64, p6: Int64,
               p7: Int64,
               l0: Int64, l1: Int64, l2: Int64, l3: Int64, l4: Int64, l5: Int64, l6: Int64,
               l7: Int64,
               s0: Int64, s1: Int64, s2: Int64, s3: Int64, s4: Int64, s5: Int64, s6: Int64,
               s7: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        xx = [x0, x1, x2, x3, x4, x5, x6, x7]
        pp = [p0, p1, p2, p3, p4, p5, p6, p7]
        ll = [l0, l1, l2, l3, l4, l5, l6, l7]
        i = Int64(bidx) * Int64(THREADS) + Int64(tidx)
        if i < n:
            coord = [Int64(0)] * 8
            rem = i
            for d in cutlass.range_constexpr(7, 8 - R, -1):
                q = rem // xx[d]
                coord[d] = rem - q * xx[d]
                rem = q
            coord[8 - R] = rem
            cn = [Int32(1)] * 8
            fa = [Int64(0)] * 8
            fb = [Int64(0)] * 8
            fc = [Int64(0)] * 8
            fs = [Int64(0)] * 8
            for d in cutlass.range_constexpr(8 - R, 8):
                cn[d], fa[d], fb[d], fc[d], fs[d] = cands(coord[d], xx[d], pp[d], ll[d])
            c0, c1, c2, c3, c4, c5, c6, c7 = cn
            acc = CT(0.0)
            for a0 in cutlass.range(c0):
                g0 = pick(a0, fa[0], fb[0], fc[0], fs[0]) * s0
                for a1 in cutlass.range(c1):
                    g1 = g0 + pick(a1, fa[1], fb[1], fc[1], fs[1]) * s1
                    for a2 in cutlass.range(c2):
                        g2 = g1 + pick(a2, fa[2], fb[2], fc[2], fs[2]) * s2
                        for a3 in cutlass.range(c3):
                            g3 = g2 + pick(a3, fa[3], fb[3], fc[3], fs[3]) * s3
                            for a4 in cutlass.range(c4):
                                g4 = g3 + pick(a4, fa[4], fb[4], fc[4], fs[4]) * s4
                                for a5 in cutlass.range(c5):
                                    g5 = g4 + pick(a5, fa[5], fb[5], fc[5], fs[5]) * s5
                                    for a6 in cutlass.range(c6):
                                        g6 = g5 + pick(a6, fa[6], fb[6], fc[6], fs[6]) * s6
                                        for a7 in cutlass.range(c7):
                                            off = g6 + pick(a7, fa[7], fb[7], fc[7], fs[7]) * s7
                                            g = cute.make_tensor(pdy + off, cute.make_layout(1))
                                            acc = acc + CT(g[0])
            out = cute.make_tensor(pdx + i, cute.make_layout(1))
            out[0] = T(acc)

    @cute.jit
    def launch(pdy: cute.Pointer, pdx: cute.Pointer, n: Int64,
               x0: Int64, x1: Int64, x2: Int64, x3: Int64, x4: Int64, x5: Int64, x6: Int64,
               x7: Int64,
               p0: Int64, p1: Int64, p2: Int64, p3: Int64, p4: Int64, p5: Int64, p6: Int64,
               p7: Int64,
               l0: Int64, l1: Int64, l2: Int64, l3: Int64, l4: Int64, l5: Int64, l6: Int64,
               l7: Int64,
               s0: Int64, s1: Int64, s2: Int64, s3: Int64, s4: Int64, s5: Int64, s6: Int64,
               s7: Int64, stream):
        kernel(pdy, pdx, n, x0, x1, x2, x3, x4, x5, x6, x7, p0, p1, p2, p3, p4, p5, p6, p7,
               l0, l1, l2, l3, l4, l5, l6, l7, s0, s1, s2, s3, s4, s5, s6, s7).launch(
            grid=[Int32((n + THREADS - 1) // THREADS), 1, 1],
            block=[THREADS, 1, 1], smem=0, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    isz = T.width // 8
    args = [make_ptr(T, 16, cute.AddressSpace.gmem, assumed_align=isz),
            make_ptr(T, 16, cute.AddressSpace.gmem, assumed_align=isz),
            Int64(1)] + [Int64(1)] * 32 + [make_fake_stream()]
    return launch, args
