"""The sources of one input coordinate under a forward pad, shared by the pad backward kernels
(``pad_bw``: Int64 index math, ``pad_bw2d``: Int32).

For an input coordinate ``i`` of a dim of extent ``n`` padded to ``pe`` with low pad ``lo``, the
output coordinates the forward pad maps onto ``i`` form a short ascending list:

    constant   p = i + lo  (if 0 <= p < pe)
    replicate  [0, lo] for i = 0, [lo+i, pe) for i = n-1, else lo + i
    reflect    lo - i (if 1 <= i <= lo), lo + i, lo + 2(n-1) - i (if i <= n-2 and < pe)
    circular   p0 = (i + lo) mod n, p0 + n, p0 + 2n, ... < pe  (``lo`` passed reduced mod n)

``sources(i, n, pe, lo)`` gives ``(count, first, second, third, step)``: the list is first,
second, third (reflect) or first + a·step (the other modes); ``pick(a, ...)`` its entry ``a``.
Counts are Int32.
"""

from __future__ import annotations

import cutlass
from cutlass import Int32, const_expr


def pad_sources(mode: str, I):
    """``(sources, pick)`` for ``mode`` with coordinates of the integer type ``I``."""

    def count(x):
        return x if I is Int32 else Int32(x)

    def sources(i, n, pe, lo):
        z = I(0)
        one = I(1)
        if const_expr(mode == "constant"):
            p = i + lo
            cnt = cutlass.select_((p >= z) & (p < pe), Int32(1), Int32(0))
            return cnt, p, z, z, z
        elif const_expr(mode == "replicate"):
            st = cutlass.select_(i == z, z, lo + i)
            en = cutlass.select_(i == n - one, pe - one, lo + i)
            return count(en - st + one), st, z, z, one
        elif const_expr(mode == "circular"):
            p0 = i + lo
            p0 = cutlass.select_(p0 >= n, p0 - n, p0)
            cnt = cutlass.select_(p0 < pe, count((pe - p0 + n - one) // n), Int32(0))
            return cnt, p0, z, z, n
        else:  # reflect
            c1 = lo - i
            c2 = lo + i
            c3 = lo + I(2) * (n - one) - i
            v1 = (i >= one) & (c1 >= z)
            v3 = (i <= n - I(2)) & (c3 < pe)
            first = cutlass.select_(v1, c1, c2)
            second = cutlass.select_(v1, c2, c3)
            cnt = Int32(1) + cutlass.select_(v1, Int32(1), Int32(0)) + cutlass.select_(
                v3, Int32(1), Int32(0))
            return cnt, first, second, c3, z

    def pick(a, first, second, third, step):
        if const_expr(mode == "reflect"):
            return cutlass.select_(a == Int32(0), first,
                                   cutlass.select_(a == Int32(1), second, third))
        return first + (a if I is Int32 else I(a)) * step

    return sources, pick
