"""Device helpers shared by the RoI kernels (``roi_fw``, ``roi_bw``): the output index
decomposition, the per-RoI geometry of roi_align and roi_pool (torchvision's arithmetic) and the
bilinear sample with torchvision's boundary rules, plus the host launcher.

roi_align, for box ``(b, x1, y1, x2, y2)``, ``off = aligned ? 0.5 : 0``::

    start = (x1, y1)·scale − off, size = (x2 − x1, y2 − y1)·scale (not aligned: >= 1)
    bin = size / (PW, PH); grid = sampling_ratio > 0 ? sampling_ratio : ceil(size / (PW, PH))
    sample (iy, ix) of bin (ph, pw): y = start_y + ph·bin_h + (iy + .5)·bin_h / grid_h (x alike)
    out = Σ bilinear(y, x) / max(grid_h·grid_w, 1)

bilinear: 0 when y < −1, y > H, x < −1 or x > W (or a coordinate is NaN); else y, x clamped below at 0; low corner
``floor``; at or past the last row / column both corners are that row / column.

roi_pool: ``start = round(x1·scale)``, ``end = round(x2·scale)`` (half away from zero),
``size = max(end − start + 1, 1)``, ``bin = size / P``; bin ``p`` covers
``[floor(p·bin), ceil((p + 1)·bin))`` + start, clipped to ``[0, extent]``.
A box whose batch index ``(int) b`` is outside ``[0, N)`` reads nothing (output 0) and scatters
nothing.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float64, Int32, Int64

from ....blocks.gmem import gload
from ....blocks.image_index import linear_index, split_groups
from ..specs.roi import THREADS


def element_index():
    """This thread's linear element index (one element per thread, 1-D grid of THREADS)."""
    return linear_index(THREADS)

M = cute.math


def sel(cond, a, b):
    """``cond ? a : b`` in ``a``'s type (branch-free)."""
    t = type(a)
    return t(cutlass.select_(cond, a, t(b)))


def decompose4(i, E1, E2, E3):
    """``(a0, a1, a2, a3)`` of the row-major linear index ``i`` of an (E0, E1, E2, E3) tensor."""
    q = i // E3
    a3 = i - q * E3
    r = q // E2
    a2 = q - r * E2
    q = r // E1
    a1 = r - q * E1
    return q, a1, a2, a3


def box_batch(pb, k, bs, N):
    """(batch index clamped into range, in range?) of box ``k`` (``(int)`` of its first
    coordinate)."""
    v = Float64(gload(pb, k * bs[0]))
    ok = (v > Float64(-1.0)) & (v < Float64(N))
    b = sel(ok, Int64(sel(ok, v, Float64(0.0))), Int64(0))
    return b, ok


def box_coord(pb, k, bs, j, CT):
    """Coordinate ``j`` (1..4) of box ``k`` in the compute type."""
    return CT(gload(pb, k * bs[0] + Int64(j) * bs[1]))


def align_geometry(pb, k, bs, scale, ph, pw, PH, PW, sampling, aligned, CT):
    """roi_align's (y0, x0, step_y, step_x, grid_h, grid_w, count) of bin (ph, pw) of box
    ``k``: sample (iy, ix) sits at ``y0 + (iy + .5)·step_y`` (torchvision's order of
    operations: ``start + ph·bin + (iy + .5)·bin / grid``)."""
    sc = CT(scale)
    off = sel(aligned != Int64(0), CT(0.5), CT(0.0))
    sw = box_coord(pb, k, bs, 1, CT) * sc - off
    sh = box_coord(pb, k, bs, 2, CT) * sc - off
    ew = box_coord(pb, k, bs, 3, CT) * sc - off
    eh = box_coord(pb, k, bs, 4, CT) * sc - off
    rw = ew - sw
    rh = eh - sh
    na = aligned == Int64(0)
    rw = sel(na & (rw < CT(1.0)), CT(1.0), rw)
    rh = sel(na & (rh < CT(1.0)), CT(1.0), rh)
    bh = rh / CT(PH)
    bw = rw / CT(PW)
    ad = sampling <= Int64(0)
    gh = sel(ad, Int64(clip_big(M.ceil(bh), CT)), sampling)
    gw = sel(ad, Int64(clip_big(M.ceil(bw), CT)), sampling)
    cnt = gh * gw
    cnt = sel(cnt < Int64(1), Int64(1), cnt)
    return sh + CT(ph) * bh, sw + CT(pw) * bw, bh, bw, gh, gw, cnt


def clip_big(v, CT):
    """``v`` clipped into [-2^30, 2^30] (NaN → 0) before an integer conversion."""
    lim = CT(1073741824.0)
    v = sel(v != v, CT(0.0), v)
    v = sel(v > lim, lim, v)
    return sel(v < -lim, -lim, v)


def sample_pos(y0, iy, step, g, CT):
    """torchvision's sample coordinate ``y0 + (iy + .5)·step / g``."""
    return y0 + (CT(iy) + CT(0.5)) * step / CT(g)


def corner(v, E, CT):
    """(low, high, fraction) along one dim of extent ``E`` for an in-range coordinate ``v``
    (clamped below at 0; at or past the last index both corners are the last index)."""
    v = sel(v <= CT(0.0), CT(0.0), v)
    lo = Int64(clip_big(v, CT))
    last = E - Int64(1)
    top = lo >= last
    lo = sel(top, last, lo)
    hi = sel(top, last, lo + Int64(1))
    v = sel(top, CT(lo), v)
    return lo, hi, v - CT(lo)


def bilinear_taps(y, x, H, W, CT):
    """(inside, yl, yh, xl, xh, w1, w2, w3, w4): the four taps of a bilinear sample at (y, x) and
    their weights (torchvision's boundary rules; ``inside`` false: the sample is 0)."""
    inside = (y >= CT(-1.0)) & (y <= CT(H)) & (x >= CT(-1.0)) & (x <= CT(W))
    yl, yh, ly = corner(y, H, CT)
    xl, xh, lx = corner(x, W, CT)
    hy = CT(1.0) - ly
    hx = CT(1.0) - lx
    return inside, yl, yh, xl, xh, hy * hx, hy * lx, ly * hx, ly * lx


def pool_bin(pb, k, bs, scale, p, P, E, j0, j1, CT):
    """roi_pool's ``[start, end)`` of bin ``p`` (of ``P``) along a dim of extent ``E`` (box
    coordinates ``j0`` / ``j1``)."""
    sc = Float64(scale)
    s = Int64(clip_big(M.round(Float64(box_coord(pb, k, bs, j0, CT)) * sc), Float64))
    e = Int64(clip_big(M.round(Float64(box_coord(pb, k, bs, j1, CT)) * sc), Float64))
    size = e - s + Int64(1)
    size = sel(size < Int64(1), Int64(1), size)
    bsz = CT(size) / CT(P)
    lo = Int64(M.floor(CT(p) * bsz)) + s
    hi = Int64(M.ceil(CT(p + Int64(1)) * bsz)) + s
    lo = sel(lo < Int64(0), Int64(0), sel(lo > E, E, lo))
    hi = sel(hi < Int64(0), Int64(0), sel(hi > E, E, hi))
    return lo, hi


def launcher(kernel, n_ptrs: int, n_lead: int, sizes):
    """The host ``launch(*ptrs, n, *lead, *groups, *tail, stream)`` of ``kernel`` over ``n``
    elements, one a thread (``n_ptrs`` pointers, ``n_lead`` Int64 after ``n``)."""

    @cute.jit
    def launch(*rest):
        ptrs = rest[:n_ptrs]
        n = rest[n_ptrs]
        lead = rest[n_ptrs + 1:n_ptrs + 1 + n_lead]
        groups, tail, stream = split_groups(rest[n_ptrs + 1 + n_lead:], sizes, with_tail=True)
        kernel(*ptrs, n, *lead, *groups, *tail).launch(
            grid=[Int32((n + THREADS - 1) // THREADS), 1, 1], block=[THREADS, 1, 1], smem=0,
            stream=stream)

    return launch
