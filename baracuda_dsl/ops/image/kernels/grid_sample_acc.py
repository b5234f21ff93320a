"""The grid_sample backward's accumulator passes over an (N, C, D, H, W) image, one thread per
element: ``op`` 0 zeroes the accumulator ``src`` (compute type: f32, f64 for f64; strides
``ss``), ``op`` 1 casts it into ``dst`` (the element dtype; strides ``ds``).  Int64 index math.
"""

from __future__ import annotations

import cutlass.cute as cute
from cutlass import Int64

from ....blocks.gmem import example_args, gload, gmem_ptr, gstore
from ....blocks.reduction_base import compute_type, element_type
from ....blocks.image_index import split_groups
from ..specs.sampling import ACC_GROUPS, THREADS, GridAccKnobs
from .grid_common import blocks_for, decompose, point_index


def build(knobs: GridAccKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)

    @cute.kernel
    def kernel(psrc: cute.Pointer, pdst: cute.Pointer, n: Int64, e, ss, ds, op):
        _, C, D, H, W = e
        i = point_index()
        if i < n:
            q, z, y, x = decompose(i, D, H, W)
            b = q // C
            c = q - b * C
            so = b * ss[0] + c * ss[1] + z * ss[2] + y * ss[3] + x * ss[4]
            if op[0] == Int64(0):
                gstore(psrc, so, CT(0.0))
            else:
                do = b * ds[0] + c * ds[1] + z * ds[2] + y * ds[3] + x * ds[4]
                gstore(pdst, do, T(CT(gload(psrc, so))))

    @cute.jit
    def launch(psrc: cute.Pointer, pdst: cute.Pointer, n: Int64, *rest):
        groups, stream = split_groups(rest, ACC_GROUPS)
        kernel(psrc, pdst, n, *groups).launch(grid=[blocks_for(n), 1, 1],
                                              block=[THREADS, 1, 1], smem=0, stream=stream)

    args = example_args([gmem_ptr(CT, CT.width // 8), gmem_ptr(T, T.width // 8)],
                        1 + sum(ACC_GROUPS))
    return launch, args
