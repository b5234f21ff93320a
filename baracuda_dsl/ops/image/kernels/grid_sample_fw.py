"""grid_sample forward: one thread per (n, output point) of a (N, C, Od, Oh, Ow) output (2-D
problems are depth-1 volumes), looping over the C channels with the point's taps and weights
computed once.  Any input, grid and output strides.

``bilinear``: the 4 (2-D) or 8 (3-D) corners floor(i), floor(i) + 1 per dim, weights the products
of (floor(i) + 1 − i) / (i − floor(i)), summed z, then y, then x major (torch's order); corners
outside the input contribute nothing.  ``nearest``: the tap at round-half-to-even of each
coordinate, 0 outside.  ``bicubic`` (2-D): the 4×4 taps around floor(i), each padded separately,
A = −0.75 weights, rows interpolated along x then the rows along y.  Source coordinates:
:mod:`.grid_common` (torch's unnormalise / clip / reflect arithmetic).  Math in f32 (f64 for
f64); Int64 index math.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int64

from ....blocks.gmem import example_args, gload, gmem_ptr, gstore
from ....blocks.image_index import split_groups
from ....blocks.reduction_base import compute_type, element_type
from ..specs.sampling import FW_GROUPS, THREADS, GridSampleKnobs
from .grid_common import (blocks_for, cubic_axis, cubic_coeffs, decompose, fsel, isel,
                          linear_axis, load_point, nearest_axis, point_index, source_index,
                          unnormalize)


def build(knobs: GridSampleKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    mode = knobs.mode

    @cute.kernel
    def kernel(px: cute.Pointer, pg: cute.Pointer, py: cute.Pointer, n: Int64, e, xs, gs, ys,
               fl):
        _, C, Id, Ih, Iw, Od, Oh, Ow = e
        pad, align, d3 = fl
        i = point_index()
        if i < n:
            b, od, oh, ow = decompose(i, Od, Oh, Ow)
            al = align != Int64(0)
            is3 = d3 != Int64(0)
            gx, gy, gz = load_point(pg, b * gs[0] + od * gs[1] + oh * gs[2] + ow * gs[3], gs[4],
                                    is3, CT)
            xb = b * xs[0]
            yb = b * ys[0] + od * ys[2] + oh * ys[3] + ow * ys[4]
            zero = CT(0.0)
            if cutlass.const_expr(mode == "bicubic"):
                ux, _ = unnormalize(gx, CT(Iw), al)
                uy, _ = unnormalize(gy, CT(Ih), al)
                tx, vx, jx = cubic_axis(ux, Iw, CT(Iw), pad, al)
                ty, vy, jy = cubic_axis(uy, Ih, CT(Ih), pad, al)
                ox = [j * xs[4] for j in jx]
                oy = [j * xs[3] for j in jy]
                cx = cubic_coeffs(tx)
                cy = cubic_coeffs(ty)
                for c in cutlass.range(C):
                    cb = xb + c * xs[1]
                    acc = zero
                    for yy in cutlass.range_constexpr(4):
                        row = zero
                        for xx in cutlass.range_constexpr(4):
                            ok = vy[yy] & vx[xx]
                            v = CT(gload(px, cb + isel(ok, oy[yy] + ox[xx], Int64(0))))
                            row = row + fsel(ok, v, zero) * cx[xx]
                        acc = acc + row * cy[yy]
                    gstore(py, yb + c * ys[1], T(acc))
            else:
                ix, _ = source_index(gx, CT(Iw), pad, al)
                iy, _ = source_index(gy, CT(Ih), pad, al)
                iz, _ = source_index(gz, CT(Id), pad, al)
                iz = fsel(is3, iz, zero)
                if cutlass.const_expr(mode == "nearest"):
                    okx, jx = nearest_axis(ix, Iw)
                    oky, jy = nearest_axis(iy, Ih)
                    okz, jz = nearest_axis(iz, Id)
                    ok = okx & oky & okz
                    off = isel(ok, jx * xs[4] + jy * xs[3] + jz * xs[2], Int64(0))
                    for c in cutlass.range(C):
                        v = CT(gload(px, xb + c * xs[1] + off))
                        gstore(py, yb + c * ys[1], T(fsel(ok, v, zero)))
                else:
                    wx, vx, jx = linear_axis(ix, Iw)
                    wy, vy, jy = linear_axis(iy, Ih)
                    wz, vz, jz = linear_axis(iz, Id)
                    ox = [j * xs[4] for j in jx]
                    oy = [j * xs[3] for j in jy]
                    oz = [j * xs[2] for j in jz]
                    nz = isel(is3, Int64(2), Int64(1))
                    for c in cutlass.range(C):
                        cb = xb + c * xs[1]
                        acc = zero
                        for dz in cutlass.range(nz):
                            first = Int64(dz) == Int64(0)
                            wzd = fsel(first, wz[0], wz[1])
                            vzd = cutlass.select_(first, vz[0], vz[1])
                            ozd = isel(first, oz[0], oz[1])
                            for yy in cutlass.range_constexpr(2):
                                for xx in cutlass.range_constexpr(2):
                                    ok = vzd & vy[yy] & vx[xx]
                                    v = CT(gload(px, cb + isel(ok, ozd + oy[yy] + ox[xx],
                                                               Int64(0))))
                                    acc = acc + fsel(ok, v, zero) * (wx[xx] * wy[yy] * wzd)
                        gstore(py, yb + c * ys[1], T(acc))

    @cute.jit
    def launch(px: cute.Pointer, pg: cute.Pointer, py: cute.Pointer, n: Int64, *rest):
        groups, stream = split_groups(rest, FW_GROUPS)
        kernel(px, pg, py, n, *groups).launch(grid=[blocks_for(n), 1, 1], block=[THREADS, 1, 1],
                                              smem=0, stream=stream)

    isz = T.width // 8
    args = example_args([gmem_ptr(T, isz), gmem_ptr(T, isz), gmem_ptr(T, isz)],
                        1 + sum(FW_GROUPS))
    return launch, args
