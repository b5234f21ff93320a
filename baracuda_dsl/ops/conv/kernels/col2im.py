"""col2im (fold) in gather form: one thread per image element (N, C, I0, I1, I2), summing the
column entries that map onto it in a fixed order — block l0, then l1, then l2 ascending — so
every run gives the same bits (no atomics, no workspace).

Per spatial dim, with ``a = z + P`` and ``span = (K − 1)·D + 1``, the blocks whose window may
cover ``z`` are ``l`` in ``[a < span ? 0 : (a − span)//S + 1, min(a//S + 1, L))``; block ``l``
covers it through kernel tap ``k = (a − l·S) / D`` when ``D`` divides ``a − l·S`` (then
``0 <= k < K``).  ``y[n, c, z] = Σ cols[n, (c·K0 + k0)·K1·K2 + k1·K2 + k2, (l0·L1 + l1)·L2 + l2]``.
Accumulation in f32 (f64 for f64); Int64 index math; any strides on both sides.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int64

from ....blocks.gmem import example_args, gload, gmem_ptr, grouped_launcher, gstore
from ....blocks.image_index import imin, sel
from ....blocks.reduction_base import compute_type, element_type
from ..specs.im2col import N_SCALARS, THREADS, Im2ColKnobs
from .im2col import divmod64, element_index


def block_range(z, L, K, S, P, D):
    """``(first, count)`` of the blocks along one dim whose (dilated) window spans ``z``."""
    one = Int64(1)
    a = z + P
    span = (K - one) * D + one
    lo = sel(a < span, Int64(0), (a - span) // S + one)
    hi = imin(a // S + one, L)
    return lo, sel(hi > lo, hi - lo, Int64(0))


def build(knobs: Im2ColKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)

    @cute.kernel
    def kernel(pc: cute.Pointer, py: cute.Pointer, n: Int64, e, k, q, s):
        C, I0, I1, I2, L0, L1, L2, _ = e
        K0, K1, K2, S0, S1, S2, _, _ = k
        P0, P1, P2, D0, D1, D2, _, _ = q
        yn, yc, y0, y1, y2, cn, cr, cl = s
        i = element_index()
        if i < n:
            r, z2 = divmod64(i, I2)
            r, z1 = divmod64(r, I1)
            r, z0 = divmod64(r, I0)
            b, c = divmod64(r, C)
            f0, c0 = block_range(z0, L0, K0, S0, P0, D0)
            f1, c1 = block_range(z1, L1, K1, S1, P1, D1)
            f2, c2 = block_range(z2, L2, K2, S2, P2, D2)
            a0 = z0 + P0
            a1 = z1 + P1
            a2 = z2 + P2
            zero = Int64(0)
            base = b * cn + c * K0 * K1 * K2 * cr
            acc = CT(0.0)
            for j0 in cutlass.range(c0):
                l0 = f0 + j0
                t0 = a0 - l0 * S0
                m0, r0 = divmod64(t0, D0)
                for j1 in cutlass.range(c1):
                    l1 = f1 + j1
                    t1 = a1 - l1 * S1
                    m1, r1 = divmod64(t1, D1)
                    for j2 in cutlass.range(c2):
                        l2 = f2 + j2
                        t2 = a2 - l2 * S2
                        m2, r2 = divmod64(t2, D2)
                        hit = (r0 == zero) & (r1 == zero) & (r2 == zero)
                        row = (m0 * K1 + m1) * K2 + m2
                        blk = (l0 * L1 + l1) * L2 + l2
                        # a block that skips z (dilation) reads its own first entry, adds 0
                        off = base + sel(hit, row * cr + blk * cl, zero)
                        v = CT(gload(pc, off))
                        acc = acc + CT(cutlass.select_(hit, v, CT(0.0)))
            gstore(py, b * yn + c * yc + z0 * y0 + z1 * y1 + z2 * y2, T(acc))

    isz = T.width // 8
    return (grouped_launcher(kernel, THREADS),
            example_args([gmem_ptr(T, isz), gmem_ptr(T, isz)], 1 + N_SCALARS))
