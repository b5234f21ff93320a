"""Device helpers shared by the interpolation kernels (``interp_fw``, ``interp_bw``): torch's
per-dim coordinate maps (branch-free, on Int64 indices), the element index decomposition of both
output orders, the backward's candidate output range and the host launcher that regroups the flat
ABI scalars into the kernels' parameter tuples.

Per spatial dim of input extent ``I``, output extent ``O``, coordinate scale ``s`` (the plan
passes torch's ``area_pixel_compute_scale`` / ``compute_scales_value``), output index ``o``:

* nearest: ``min(floor(o·s), I−1)``; nearest-exact: ``min(floor((o+0.5)·s), I−1)`` — in f32 with
  an f32 ``s`` (torch's CUDA map for every dtype);
* linear: ``src = align ? s·o : max(s·(o+0.5)−0.5, 0)``, ``x0 = floor(src)``, ``λ = src−x0``:
  taps ``x0`` (weight ``1−λ``) and ``x0+1`` (``λ``) while ``x0 < I−1``, else ``x0`` alone;
* cubic: ``src`` unclamped, taps ``x0−1 … x0+2`` clamped to ``[0, I)``, weights the cubic
  convolution with A = −0.75 at ``t = src−x0`` (one tap of weight 1 when ``I == 1``);
* aa: ``support = (s >= 1 ? s : 1)·size/2`` (size 2 bilinear, 4 bicubic), ``center = s·(o+0.5)``,
  span ``[max(int(center−support+0.5), 0), min(int(center+support+0.5), I))``, weights
  ``filter((j + xmin − center + 0.5)·(s >= 1 ? 1/s : 1))`` normalised by their sum (filter:
  triangle, or the cubic with a = −0.5);

Backward candidate range of input ``i`` along a dim: ``[floor((i + lo)·rs) − mg,
floor((i + hi)·rs) + 1 + mg)`` clipped to ``[0, O)``, where the plan derives ``rs`` (1/s),
``lo`` / ``hi`` (the source window of the mode, shifted by the map's offset) and the margin
``mg`` (covers coordinate rounding; the whole dim when s = 0); every candidate's weight is then
computed exactly as the forward does, so extra candidates add zero.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Float64, Int32, Int64

from ....blocks.image_index import (decompose_ncdhw_ix, imax, imin, linear_index, sel,
                                    split_groups)
from ..specs.interpolate import THREADS


def element_index():
    """This thread's linear element index (one element per thread, 1-D grid of THREADS)."""
    return linear_index(THREADS)


def fsel(cond, a, b, FT):
    """``cond ? a : b`` as the float type ``FT``."""
    return FT(cutlass.select_(cond, FT(a), FT(b)))


def i2f(v, FT):
    """An Int64 index or extent (|v| < 2^31) as the float type ``FT``, through Int32 (the
    32-bit conversion is one instruction, the 64-bit one a sequence)."""
    return FT(Int32(v))


def f2i(x, IX=Int64):
    """A float coordinate (|x| < 2^31) truncated to ``IX``, through Int32."""
    return IX(Int32(x))


def ifloor(x, FT, IX=Int64):
    """``floor(x)`` of a float ``x`` (|x| < 2^31) as ``IX``."""
    t = f2i(x, IX)
    return sel(i2f(t, FT) > x, t - IX(1), t, IX)


def nearest_index(o, I, s32, exact, IX=Int64):
    """torch's CUDA nearest (``exact == 0``) or nearest-exact source index of output ``o``
    (index math in ``IX``)."""
    of = i2f(o, Float32)
    p = fsel(exact != Int64(0), (of + Float32(0.5)) * s32, of * s32, Float32)
    return imin(f2i(p, IX), I - IX(1), IX)


def linear_taps(o, I, s, align, cubic, FT, IX=Int64):
    """``(first, count, w0, w1, w2, w3)``: the taps of output ``o`` along one dim of the linear
    (``cubic == 0``) or bicubic map — tap ``j`` reads ``clamp(first + j, 0, I−1)`` with weight
    ``w_j``; ``count`` is 1 (one tap of weight 1), 2 (linear) or 4 (cubic); index math in
    ``IX``."""
    one = IX(1)
    of = i2f(o, FT)
    al = align != Int64(0)
    cu = cubic != Int64(0)
    raw = fsel(al, s * of, s * (of + FT(0.5)) - FT(0.5), FT)
    src = fsel(cu, raw, fsel(raw < FT(0.0), FT(0.0), raw, FT), FT)
    x0 = ifloor(src, FT, IX)
    t = src - i2f(x0, FT)
    # linear
    lcount = sel(x0 < I - one, IX(2), one, IX)
    l0 = fsel(lcount == one, FT(1.0), FT(1.0) - t, FT)
    # cubic, A = -0.75
    a = FT(-0.75)
    u = t + FT(1.0)
    c0 = ((a * u - FT(5.0) * a) * u + FT(8.0) * a) * u - FT(4.0) * a
    c1 = ((a + FT(2.0)) * t - (a + FT(3.0))) * t * t + FT(1.0)
    v = FT(1.0) - t
    c2 = ((a + FT(2.0)) * v - (a + FT(3.0))) * v * v + FT(1.0)
    u = v + FT(1.0)
    c3 = ((a * u - FT(5.0) * a) * u + FT(8.0) * a) * u - FT(4.0) * a
    ccount = sel(I == one, one, IX(4), IX)
    c1 = fsel(ccount == one, FT(1.0), c1, FT)
    return (sel(cu, sel(ccount == one, IX(0), x0 - one, IX), x0, IX), sel(cu, ccount, lcount, IX),
            fsel(cu, fsel(ccount == one, FT(1.0), c0, FT), l0, FT), fsel(cu, c1, t, FT),
            fsel(cu, c2, FT(0.0), FT), fsel(cu, c3, FT(0.0), FT))


def tap(first, j, I, w0, w1, w2, w3, FT, IX=Int64):
    """``(index, weight)`` of tap ``j`` (dynamic) of :func:`linear_taps` (index in ``IX``)."""
    idx = imax(imin(first + j, I - IX(1), IX), IX(0), IX)
    w = fsel(j == IX(0), w0, fsel(j == IX(1), w1, fsel(j == IX(2), w2, w3, FT), FT), FT)
    return idx, w


def aa_span(o, I, s, bicubic, FT):
    """``(xmin, xsize, xmin − center, invscale)`` of output ``o``'s antialias filter span."""
    size = fsel(bicubic != Int64(0), FT(4.0), FT(2.0), FT)
    big = s >= FT(1.0)
    support = fsel(big, size * FT(0.5) * s, size * FT(0.5), FT)
    center = s * (i2f(o, FT) + FT(0.5))
    xmin = imax(f2i(center - support + FT(0.5)), Int64(0))
    xsize = imin(f2i(center + support + FT(0.5)), I) - xmin
    inv = fsel(big, FT(1.0) / s, FT(1.0), FT)
    return xmin, xsize, i2f(xmin, FT) - center, inv


def aa_filter(j, xmc, inv, bicubic, FT):
    """Unnormalised weight of span tap ``j``: triangle or cubic (a = −0.5) filter."""
    x = (i2f(j, FT) + xmc + FT(0.5)) * inv
    x = fsel(x < FT(0.0), FT(0.0) - x, x, FT)
    tri = fsel(x < FT(1.0), FT(1.0) - x, FT(0.0), FT)
    a = FT(-0.5)
    near = ((a + FT(2.0)) * x - (a + FT(3.0))) * x * x + FT(1.0)
    far = (((x - FT(5.0)) * x + FT(8.0)) * x - FT(4.0)) * a
    cub = fsel(x < FT(1.0), near, fsel(x < FT(2.0), far, FT(0.0), FT), FT)
    return fsel(bicubic != Int64(0), cub, tri, FT)


def out_range(i, O, rs, lo, hi, mg):
    """``(first, count)`` of the candidate outputs along one dim of input ``i`` (backward)."""
    fi = Float64(i)
    cap = Float64(O + Int64(1))
    a = (fi + lo) * rs
    b = (fi + hi) * rs
    a = fsel(a < Float64(-1.0), Float64(-1.0), fsel(a > cap, cap, a, Float64), Float64)
    b = fsel(b < Float64(-1.0), Float64(-1.0), fsel(b > cap, cap, b, Float64), Float64)
    first = imax(ifloor(a, Float64) - mg, Int64(0))
    last = imin(ifloor(b, Float64) + Int64(1) + mg, O)
    return first, sel(last > first, last - first, Int64(0))


def launcher(kernel, groups):
    """The host ``launch(a, b, n, *scalars, stream)`` of ``kernel(a, b, n, *groups)`` over ``n``
    elements, one a thread."""

    @cute.jit
    def launch(pa: cute.Pointer, pb: cute.Pointer, n: Int64, *rest):
        grouped, stream = split_groups(rest, [n for _, n in groups])
        kernel(pa, pb, n, *grouped).launch(
            grid=[Int32((n + THREADS - 1) // THREADS), 1, 1], block=[THREADS, 1, 1], smem=0,
            stream=stream)

    return launch


def example_scalars(groups):
    """Example scalar arguments of the ``groups`` (Int64 / Float64 ones)."""
    out = []
    for kind, s in groups:
        out += [Float64(1.0) if kind == "f64" else Int64(1)] * s
    return out


def run_position(i, C, Od, Oh, Ow, cl, dv, run: int, IX):
    """``(b, c, od, oh, ow0, last)`` of thread ``i`` of a runs kernel (one thread per ``run``
    consecutive outputs along the last dim of an (N, C, Od, Oh, Ow) tensor, either layout):
    the run's coordinates, its first output along w and ``Ow − 1``; ``dv`` holds the magic
    pairs of C, Od, Oh and the run count (index math in ``IX``)."""
    og_n = (Ow + IX(run - 1)) // IX(run)
    b, c, od, oh, og = decompose_ncdhw_ix(i, C, Od, Oh, og_n, cl, dv, IX)
    return b, c, od, oh, og * IX(run), Ow - IX(1)
