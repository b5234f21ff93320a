"""im2col (unfold): one thread per element of ``cols`` (N, C·K0·K1·K2, L0·L1·L2), a pure gather.

The thread's linear index runs row-major over (n, c, k0, k1, k2, l0, l1, l2) — the order of a
dense ``cols``, so consecutive threads write consecutive blocks.  Per spatial dim the image
coordinate is ``z = l·S − P + k·D``; a tap with any ``z`` outside ``[0, I)`` is 0 (padding), else
``cols[n, (c·K0 + k0)·K1·K2 + k1·K2 + k2, (l0·L1 + l1)·L2 + l2] = x[n, c, z0, z1, z2]``.  Any
strides on both sides; Int64 index math.  Also the device helpers the ``col2im`` kernel shares
(:func:`sel`, :func:`imin`, :func:`element_index`).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int64

from ....blocks.gmem import example_args, gload, gmem_ptr, grouped_launcher, gstore
from ....blocks.image_index import linear_index, sel
from ....blocks.reduction_base import element_type
from ..specs.im2col import N_SCALARS, THREADS, Im2ColKnobs


def element_index():
    """This thread's linear element index (one element per thread, 1-D grid of THREADS)."""
    return linear_index(THREADS)


def divmod64(a, b):
    """``(a // b, a % b)`` of non-negative Int64 values."""
    q = a // b
    return q, a - q * b


def build(knobs: Im2ColKnobs):
    T = element_type(knobs.dtype)

    @cute.kernel
    def kernel(px: cute.Pointer, pc: cute.Pointer, n: Int64, e, k, q, s):
        C, I0, I1, I2, L0, L1, L2, _ = e
        K0, K1, K2, S0, S1, S2, _, _ = k
        P0, P1, P2, D0, D1, D2, _, _ = q
        xn, xc, x0, x1, x2, cn, cr, cl = s
        i = element_index()
        if i < n:
            r, l2 = divmod64(i, L2)
            r, l1 = divmod64(r, L1)
            r, l0 = divmod64(r, L0)
            r, k2 = divmod64(r, K2)
            r, k1 = divmod64(r, K1)
            r, k0 = divmod64(r, K0)
            b, c = divmod64(r, C)
            z0 = l0 * S0 - P0 + k0 * D0
            z1 = l1 * S1 - P1 + k1 * D1
            z2 = l2 * S2 - P2 + k2 * D2
            zero = Int64(0)
            inside = ((z0 >= zero) & (z0 < I0) & (z1 >= zero) & (z1 < I1) & (z2 >= zero)
                      & (z2 < I2))
            # a tap in the padding reads element 0 of x (always valid: n > 0 means x is not
            # empty) and stores 0
            off = sel(inside, b * xn + c * xc + z0 * x0 + z1 * x1 + z2 * x2, zero)
            v = gload(px, off)
            row = ((c * K0 + k0) * K1 + k1) * K2 + k2
            blk = (l0 * L1 + l1) * L2 + l2
            gstore(pc, b * cn + row * cr + blk * cl, T(cutlass.select_(inside, v, T(0.0))))

    isz = T.width // 8
    return (grouped_launcher(kernel, THREADS),
            example_args([gmem_ptr(T, isz), gmem_ptr(T, isz)], 1 + N_SCALARS))
