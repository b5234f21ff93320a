"""grid_sample backward: one thread per (n, output point), looping over the C channels.

``grad_input`` (``want_dx``): each tap's ``weight · grad_output`` is added with a float atomic
into the accumulator ``acc`` (f32, f64 for f64; any strides — the plan zeroes it first and casts
it afterwards for the half types): the order of the additions into one element depends on
scheduling, so the result is not bit-reproducible.  ``grad_grid`` (``want_dg``): the point's
sum over the channels of ``Σ_taps value · d weight / d coordinate · grad_output`` times the
derivative of the source coordinate (unnormalise × clip × reflect factors), written once per
point — no atomics; torch's zeros for ``nearest``.  Taps, weights and padding as the forward
(:mod:`.grid_sample_fw`).  Math in f32 (f64 for f64); Int64 index math.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int64

from ....blocks.gmem import example_args, gload, gmem_ptr, gstore
from ....blocks.image_index import split_groups
from ....blocks.reduction_base import compute_type, element_type
from ..specs.sampling import BW_GROUPS, THREADS, GridSampleKnobs
from .grid_common import (blocks_for, cubic_axis, cubic_coeffs, cubic_grads, decompose, fsel,
                          isel, linear_axis, load_point, nearest_axis, point_index,
                          source_index, unnormalize)


def _atomic_add(ptr, index, value):
    cute.arch.atomic_add((ptr + index).llvm_ptr, value)


def build(knobs: GridSampleKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    mode = knobs.mode

    @cute.kernel
    def kernel(pdy: cute.Pointer, px: cute.Pointer, pg: cute.Pointer, pacc: cute.Pointer,
               pdg: cute.Pointer, n: Int64, e, dys, xs, gs, acs, dgs, fl):
        _, C, Id, Ih, Iw, Od, Oh, Ow = e
        pad, align, d3, want_dx, want_dg = fl
        i = point_index()
        if i < n:
            b, od, oh, ow = decompose(i, Od, Oh, Ow)
            al = align != Int64(0)
            is3 = d3 != Int64(0)
            wdx = want_dx != Int64(0)
            gx, gy, gz = load_point(pg, b * gs[0] + od * gs[1] + oh * gs[2] + ow * gs[3], gs[4],
                                    is3, CT)
            xb = b * xs[0]
            ab = b * acs[0]
            gb = b * dys[0] + od * dys[2] + oh * dys[3] + ow * dys[4]
            zero = CT(0.0)
            gix = zero
            giy = zero
            giz = zero
            mx = zero
            my = zero
            mz = zero
            if cutlass.const_expr(mode == "bicubic"):
                ux, mx = unnormalize(gx, CT(Iw), al)
                uy, my = unnormalize(gy, CT(Ih), al)
                tx, vx, jx = cubic_axis(ux, Iw, CT(Iw), pad, al)
                ty, vy, jy = cubic_axis(uy, Ih, CT(Ih), pad, al)
                cx = cubic_coeffs(tx)
                cy = cubic_coeffs(ty)
                dcx = cubic_grads(tx)
                dcy = cubic_grads(ty)
                for c in cutlass.range(C):
                    go = CT(gload(pdy, gb + c * dys[1]))
                    cb = xb + c * xs[1]
                    cab = ab + c * acs[1]
                    for xx in cutlass.range_constexpr(4):
                        for yy in cutlass.range_constexpr(4):
                            ok = vx[xx] & vy[yy]
                            if wdx & ok:
                                _atomic_add(pacc, cab + jy[yy] * acs[3] + jx[xx] * acs[4],
                                            go * cx[xx] * cy[yy])
                            v = CT(gload(px, cb + isel(ok, jy[yy] * xs[3] + jx[xx] * xs[4],
                                                       Int64(0))))
                            v = fsel(ok, v, zero)
                            gix = gix - v * dcx[xx] * cy[yy] * go
                            giy = giy - v * dcy[yy] * cx[xx] * go
            else:
                ix, mx = source_index(gx, CT(Iw), pad, al)
                iy, my = source_index(gy, CT(Ih), pad, al)
                iz, mz = source_index(gz, CT(Id), pad, al)
                iz = fsel(is3, iz, zero)
                if cutlass.const_expr(mode == "nearest"):
                    okx, jx = nearest_axis(ix, Iw)
                    oky, jy = nearest_axis(iy, Ih)
                    okz, jz = nearest_axis(iz, Id)
                    ok = okx & oky & okz
                    if wdx & ok:
                        aoff = jz * acs[2] + jy * acs[3] + jx * acs[4]
                        for c in cutlass.range(C):
                            _atomic_add(pacc, ab + c * acs[1] + aoff,
                                        CT(gload(pdy, gb + c * dys[1])))
                else:
                    wx, vx, jx = linear_axis(ix, Iw)
                    wy, vy, jy = linear_axis(iy, Ih)
                    wz, vz, jz = linear_axis(iz, Id)
                    nz = isel(is3, Int64(2), Int64(1))
                    for c in cutlass.range(C):
                        go = CT(gload(pdy, gb + c * dys[1]))
                        cb = xb + c * xs[1]
                        cab = ab + c * acs[1]
                        for dz in cutlass.range(nz):
                            first = Int64(dz) == Int64(0)
                            wzd = fsel(first, wz[0], wz[1])
                            vzd = cutlass.select_(first, vz[0], vz[1])
                            jzd = isel(first, jz[0], jz[1])
                            sz = fsel(first, CT(-1.0), CT(1.0))
                            for yy in cutlass.range_constexpr(2):
                                for xx in cutlass.range_constexpr(2):
                                    ok = vzd & vy[yy] & vx[xx]
                                    if wdx & ok:
                                        _atomic_add(pacc, cab + jzd * acs[2] + jy[yy] * acs[3]
                                                    + jx[xx] * acs[4],
                                                    wx[xx] * wy[yy] * wzd * go)
                                    v = CT(gload(px, cb + isel(ok, jzd * xs[2] + jy[yy] * xs[3]
                                                               + jx[xx] * xs[4], Int64(0))))
                                    v = fsel(ok, v, zero)
                                    tx = v * wy[yy] * wzd * go
                                    ty = v * wx[xx] * wzd * go
                                    if cutlass.const_expr(xx == 0):
                                        gix = gix - tx
                                    else:
                                        gix = gix + tx
                                    if cutlass.const_expr(yy == 0):
                                        giy = giy - ty
                                    else:
                                        giy = giy + ty
                                    giz = giz + sz * (v * wx[xx] * wy[yy] * go)
            if want_dg != Int64(0):
                dgo = b * dgs[0] + od * dgs[1] + oh * dgs[2] + ow * dgs[3]
                gstore(pdg, dgo, T(mx * gix))
                gstore(pdg, dgo + dgs[4], T(my * giy))
                if is3:
                    gstore(pdg, dgo + dgs[4] + dgs[4], T(mz * giz))

    @cute.jit
    def launch(pdy: cute.Pointer, px: cute.Pointer, pg: cute.Pointer, pacc: cute.Pointer,
               pdg: cute.Pointer, n: Int64, *rest):
        groups, stream = split_groups(rest, BW_GROUPS)
        kernel(pdy, px, pg, pacc, pdg, n, *groups).launch(
            grid=[blocks_for(n), 1, 1], block=[THREADS, 1, 1], smem=0, stream=stream)

    isz = T.width // 8
    csz = CT.width // 8
    args = example_args([gmem_ptr(T, isz), gmem_ptr(T, isz), gmem_ptr(T, isz), gmem_ptr(CT, csz),
                         gmem_ptr(T, isz)], 1 + sum(BW_GROUPS))
    return launch, args
