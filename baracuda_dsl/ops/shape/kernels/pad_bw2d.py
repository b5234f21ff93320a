"""Pad backward, fast path: at most the last two dims padded, leading dims one batch dim ``B``.

``dx`` (dense, ``B × h × w``) row ``r = b·h + i`` is handled by one warp; lane ``t`` of the CTA's
column chunk ``cy`` handles the columns ``j = cy·CW + u·32 + t`` (``u < U``, ``CW = 32·U``), so
consecutive lanes read consecutive ``dy`` columns (coalesced).  For each dim the output
coordinates ``p`` (out extent ``pe``, low pad ``l``) that the forward pad maps onto the input
coordinate ``i`` form a short ascending list (:mod:`.pad_sources`; rows: once per warp; columns:
once per column; circular: any pad size, negative pads crop, so the list may be empty or long).

``dx[b, i, j] = 0 + Σ_{ph} Σ_{pw} dy[b, ph, pw]`` in ascending ``ph`` then ascending ``pw`` (the
order of ``pad_bw``: results are bit-identical to it).  The first source of every column is
loaded up front for all ``U`` columns (``U`` loads in flight per lane), the remaining sources in
dynamic loops.  Accumulation in f32 (f64 for f64).  Int32 index math: the plan checks that every
``dy`` / ``dx`` offset fits.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, const_expr

from ....blocks.reduction_base import compute_type, element_type
from ..specs.pad_bw2d import (BW2D_COLS as CW, BW2D_LANE_COLS as U, BW2D_THREADS as THREADS,
                              BW2D_WARPS as WARPS, PadBw2dKnobs)
from .pad_sources import pad_sources
from ....blocks.gmem import example_args, gmem_ptr, split_stream


def build(knobs: PadBw2dKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    mode = knobs.mode
    cands, pick = pad_sources(mode, Int32)

    @cute.kernel
    def kernel(pdy: cute.Pointer, pdx: cute.Pointer, nrows: Int32, ncb: Int32, h: Int32,
               w: Int32, ph: Int32, pw: Int32, lh: Int32, lw: Int32, sb: Int32, sh: Int32,
               sw: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        bid = Int32(bidx)
        tid = Int32(tidx)
        rg = bid // ncb
        cy = bid - rg * ncb
        r = rg * Int32(WARPS) + tid // Int32(32)
        lane = tid - (tid // Int32(32)) * Int32(32)
        if r < nrows:
            b = r // h
            i = r - b * h
            hc, ha, hb, hcc, hs = cands(i, h, ph, lh)
            base = b * sb
            j0 = cy * Int32(CW) + lane
            # first source of every column, loaded up front
            wc = [Int32(0)] * U
            wa = [Int32(0)] * U
            wb = [Int32(0)] * U
            wd = [Int32(0)] * U
            ws = [Int32(0)] * U
            vals = [CT(0.0)] * U
            for u in cutlass.range_constexpr(U):
                j = j0 + Int32(u * 32)
                jj = cutlass.select_(j < w, j, Int32(0))
                wc[u], wa[u], wb[u], wd[u], ws[u] = cands(jj, w, pw, lw)
                off = base + ha * sh + wa[u] * sw
                if const_expr(mode == "circular"):
                    ok = (hc > Int32(0)) & (wc[u] > Int32(0)) & (j < w)
                else:
                    ok = j < w
                off = cutlass.select_(ok, off, Int32(0))
                g = cute.make_tensor(pdy + off, cute.make_layout(1))
                vals[u] = cutlass.select_(ok, CT(g[0]), CT(0.0))
            for u in cutlass.range_constexpr(U):
                j = j0 + Int32(u * 32)
                if j < w:
                    acc = CT(0.0) + vals[u]
                    for a in cutlass.range(hc):
                        roff = base + pick(a, ha, hb, hcc, hs) * sh
                        c0 = cutlass.select_(a == Int32(0), Int32(1), Int32(0))
                        for c in cutlass.range(c0, wc[u]):
                            off = roff + pick(c, wa[u], wb[u], wd[u], ws[u]) * sw
                            g = cute.make_tensor(pdy + off, cute.make_layout(1))
                            acc = acc + CT(g[0])
                    out = cute.make_tensor(pdx + (r * w + j), cute.make_layout(1))
                    out[0] = T(acc)

    @cute.jit
    def launch(pdy: cute.Pointer, pdx: cute.Pointer, nrows: Int32, ncb: Int32, *rest):
        scalars, stream = split_stream(rest)
        kernel(pdy, pdx, nrows, ncb, *scalars).launch(
            grid=[((nrows + WARPS - 1) // WARPS) * ncb, 1, 1],
            block=[THREADS, 1, 1], smem=0, stream=stream)

    isz = T.width // 8
    return launch, example_args([gmem_ptr(T, isz), gmem_ptr(T, isz)], 0, [Int32(1)] * 11)
