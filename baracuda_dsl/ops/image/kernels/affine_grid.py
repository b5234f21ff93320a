"""affine_grid forward and backward over (N, D, H, W) points (2-D: D = 1, ``d3`` = 0).

Base coordinates per dim of extent ``S`` (torch's linspace from −1): 0 when S = 1, else
``(2i − (S − 1)) / (S − 1)`` (align_corners) or ``(2i − (S − 1)) / S``, one rounding in the
compute type.  ``fw`` (one thread per point): ``grid[n, p, k] = θ[k, 0]·x + θ[k, 1]·y (+ θ[k, 2]·z)
+ θ[k, last]`` for k < 2 (3 in 3-D).  ``bw`` (one CTA per (n, k)): ``dθ[n, k, :] = Σ_p
d_grid[n, p, k] · (x, y, (z,) 1)``, each thread summing a fixed stride of points, then a block
reduction in a fixed order (deterministic, bit-stable).  Math in f32 (f64 for f64).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

from ....blocks.gmem import example_args, gload, gmem_ptr, gstore
from ....blocks.reduction_base import (alloc_reduction_buffer, compute_type, element_type,
                                       row_allreduce_sum)
from ....blocks.image_index import split_groups
from ..specs.sampling import AFFINE_GROUPS, AFFINE_SMEM, THREADS, AffineGridKnobs
from .grid_common import blocks_for, decompose, fsel, isel, point_index


def base_coord(i, S, al, ct):
    """The base coordinate of index ``i`` along a dim of extent ``S`` (Int64)."""
    num = ct(Int64(2) * i - (S - Int64(1)))
    den = ct(isel(al, S - Int64(1), S))
    return fsel(S == Int64(1), ct(0.0), num / fsel(S == Int64(1), ct(1.0), den))


def affine_row(pth, tb, tc, bx, by, bz, is3, last):
    """``θ[k, 0]·x + θ[k, 1]·y (+ θ[k, 2]·z) + θ[k, last]`` of the theta row at offset ``tb``
    (column stride ``tc``)."""
    ct = type(bx)
    v = ct(gload(pth, tb)) * bx + ct(gload(pth, tb + tc)) * by
    v = fsel(is3, v + ct(gload(pth, tb + tc + tc)) * bz, v)
    return v + ct(gload(pth, tb + last * tc))


def build(knobs: AffineGridKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    bw = knobs.direction == "bw"

    @cute.kernel
    def kernel(pth: cute.Pointer, pgr: cute.Pointer, n: Int64, e, ts, gs, fl):
        _, D, H, W = e
        align, d3 = fl
        al = align != Int64(0)
        is3 = d3 != Int64(0)
        last = isel(is3, Int64(3), Int64(2))
        if cutlass.const_expr(not bw):
            i = point_index()
            if i < n:
                b, z, y, x = decompose(i, D, H, W)
                bx = base_coord(x, W, al, CT)
                by = base_coord(y, H, al, CT)
                bz = base_coord(z, D, al, CT)
                go = b * gs[0] + z * gs[1] + y * gs[2] + x * gs[3]
                for k in cutlass.range_constexpr(2):
                    gstore(pgr, go + Int64(k) * gs[4],
                           T(affine_row(pth, b * ts[0] + Int64(k) * ts[1], ts[2], bx, by, bz,
                                        is3, last)))
                if is3:          # the third row exists only in 3-D
                    gstore(pgr, go + Int64(2) * gs[4],
                           T(affine_row(pth, b * ts[0] + Int64(2) * ts[1], ts[2], bx, by, bz,
                                        is3, last)))
        else:
            tidx, _, _ = cute.arch.thread_idx()
            bidx, _, _ = cute.arch.block_idx()
            t = Int32(tidx)
            buf = alloc_reduction_buffer(CT, THREADS, 1, 4)
            rows = isel(is3, Int64(3), Int64(2))
            blk = Int64(bidx)
            b = blk // rows
            k = blk - b * rows
            P = D * H * W
            gb = b * gs[0] + k * gs[4]
            s0 = CT(0.0)
            s1 = CT(0.0)
            s2 = CT(0.0)
            s3 = CT(0.0)
            for p in cutlass.range(Int64(t), P, THREADS):
                _, z, y, x = decompose(Int64(p), D, H, W)
                g = CT(gload(pgr, gb + z * gs[1] + y * gs[2] + x * gs[3]))
                s0 = s0 + g * base_coord(x, W, al, CT)
                s1 = s1 + g * base_coord(y, H, al, CT)
                s2 = s2 + g * base_coord(z, D, al, CT)
                s3 = s3 + g
            t0 = row_allreduce_sum(s0, buf, THREADS, 0, Int32(0), t)
            t1 = row_allreduce_sum(s1, buf, THREADS, 1, Int32(0), t)
            t2 = row_allreduce_sum(s2, buf, THREADS, 2, Int32(0), t)
            t3 = row_allreduce_sum(s3, buf, THREADS, 3, Int32(0), t)
            if t == Int32(0):
                tb = b * ts[0] + k * ts[1]
                gstore(pth, tb, T(t0))
                gstore(pth, tb + ts[2], T(t1))
                if is3:
                    gstore(pth, tb + ts[2] + ts[2], T(t2))
                gstore(pth, tb + last * ts[2], T(t3))

    @cute.jit
    def launch(pth: cute.Pointer, pgr: cute.Pointer, n: Int64, *rest):
        groups, stream = split_groups(rest, AFFINE_GROUPS)
        if cutlass.const_expr(bw):
            kernel(pth, pgr, n, *groups).launch(grid=[Int32(n), 1, 1], block=[THREADS, 1, 1],
                                                smem=AFFINE_SMEM, stream=stream)
        else:
            kernel(pth, pgr, n, *groups).launch(grid=[blocks_for(n), 1, 1],
                                                block=[THREADS, 1, 1], smem=0, stream=stream)

    isz = T.width // 8
    args = example_args([gmem_ptr(T, isz), gmem_ptr(T, isz)], 1 + sum(AFFINE_GROUPS))
    return launch, args
