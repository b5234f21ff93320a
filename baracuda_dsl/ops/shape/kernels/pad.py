"""Index-remapping copy (pad in every mode, roll, triu / tril): ``dst[c] = src[map(c)]`` or a fill
word, for a dense output of collapsed rank R (extents ``o[8-R..7]``) read from a strided input
(extents ``e``, strides ``s``, per-dim low pads ``l``).  For each output coordinate the source
coordinate is ``q = c - l`` mapped by the mode:

    constant   q outside [0, e) → the fill word (``f0`` low / ``f1`` high 64 bits)
    replicate  clamp(q, 0, e-1)
    reflect    q < 0 → -q;  q >= e → 2(e-1) - q            (torch semantics, pad < e)
    circular   q mod e, Python-style (any pad; roll by s = circular with l = s mod e)
    circular1  the same when -e <= q < 2e (two selects instead of a remainder; the plan picks
               it when every dim satisfies it, e.g. every roll and torch-sized circular pads)
    triu/tril  no remap; element (i, j) of the last two dims is zeroed unless j - i >= kd
               (triu) / j - i <= kd (tril)

The output is walked as rows (the outer dims) × cols (the innermost dim): a CTA covers a tile
of rows × cols chosen by the ``tile`` knob; a thread's rows are consecutive (the first is
decomposed by division, the others stepped with a carry chain) and its columns' source
coordinates are remapped once; each thread loads all its words first, then stores them.  Words
are opaque ``itemsize``-byte integers, so one SKU serves every
dtype of that size; masked / out-of-range elements are never read.  ``wide=0``: Int32 index math.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, const_expr

from ..specs.remap import THREADS, RemapKnobs, ilp_for
from ....blocks.gmem import WORD, example_args, gmem_ptr, groups, split_stream


def build(knobs: RemapKnobs):
    isz = knobs.itemsize
    mode = knobs.mode
    R = knobs.rank
    tile = knobs.tile
    W = WORD[isz]
    I = Int64 if knobs.wide else Int32
    ILP = ilp_for(isz)
    TCT = THREADS if tile == "row" else 32          # threads along the cols
    TRT = THREADS // TCT                              # threads along the rows
    RJ, CJ = (1, ILP) if tile == "row" else (ILP, 1)  # rows × cols per thread
    TR, TC = TRT * RJ, TCT * CJ                       # rows × cols per CTA
    TRI = mode in ("triu", "tril")
    CONST = mode == "constant"

    def remap(c, e, lo):
        """Source coordinate of output coordinate ``c`` (and, for constant, whether in range)."""
        q = c - lo
        ok = q >= I(0)
        if const_expr(mode == "constant"):
            ok = (q >= I(0)) & (q < e)
        elif const_expr(mode == "replicate"):
            q = cutlass.select_(q < I(0), I(0), q)
            q = cutlass.select_(q >= e, e - I(1), q)
        elif const_expr(mode == "reflect"):
            q = cutlass.select_(q < I(0), I(0) - q, q)
            q = cutlass.select_(q >= e, I(2) * (e - I(1)) - q, q)
        elif const_expr(mode == "circular"):
            r = q % e
            q = cutlass.select_(r < I(0), r + e, r)
        elif const_expr(mode == "circular1"):
            # the plan guarantees -e <= q < 2e (lo reduced mod e, out extent <= 2e - lo)
            q = cutlass.select_(q < I(0), q + e, q)
            q = cutlass.select_(q >= e, q - e, q)
        return q, ok

    @cute.kernel
    def kernel(psrc: cute.Pointer, pdst: cute.Pointer, nrows: Int64, ncb: Int64, oo, ee, ll, ss,
               f0: Int64, f1: Int64, kd: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        if const_expr(isz == 16):
            fill = (cutlass.Uint128(cutlass.Uint64(f1)) << 64) | cutlass.Uint128(cutlass.Uint64(f0))
        else:
            fill = W(f0)
        nr = I(nrows)
        wcols = I(oo[7])
        ecol = I(ee[7])
        lcol = I(ll[7])
        scol = I(ss[7])
        nb = I(ncb)
        t = I(bidx)
        rg = t // nb
        cb = t - rg * nb
        tr = I(tidx // TCT)
        tc = I(tidx % TCT)
        frag = cute.make_rmem_tensor(cute.make_layout(RJ * CJ), W)
        # the thread's columns and their source columns (independent of the row)
        cols = [None] * CJ
        qcol = [None] * CJ
        okcol = [None] * CJ
        for b in cutlass.range_constexpr(CJ):
            cols[b] = cb * I(TC) + tc + I(b * TCT)
            qcol[b], okcol[b] = remap(cols[b], ecol, lcol)
        # the thread's RJ consecutive rows: decompose the first over the outer dims 8-R .. 6
        # (row-major), step the others with a carry chain (no division)
        row0 = rg * I(TR) + tr * I(RJ)
        cc = [I(0)] * 8
        rem = row0
        for d in cutlass.range_constexpr(6, 8 - R, -1):
            ext = I(oo[d])
            qq = rem // ext
            cc[d] = rem - qq * ext
            rem = qq
        cc[8 - R] = rem
        for a in cutlass.range_constexpr(RJ):
            if const_expr(a > 0):
                carry = I(1)
                for d in cutlass.range_constexpr(6, 8 - R, -1):
                    c = cc[d] + carry
                    wrap = c >= I(oo[d])
                    cc[d] = cutlass.select_(wrap, I(0), c)
                    carry = cutlass.select_(wrap, I(1), I(0))
                cc[8 - R] = cc[8 - R] + carry
            row = row0 + I(a)
            roff = I(0)
            rok = row < nr
            for d in cutlass.range_constexpr(8 - R, 7):
                src, ok = remap(cc[d], I(ee[d]), I(ll[d]))
                roff = roff + src * I(ss[d])
                if const_expr(CONST):
                    rok = rok & ok
            irow = cc[6]
            for b in cutlass.range_constexpr(CJ):
                col = cols[b]
                frag[a * CJ + b] = fill
                if const_expr(TRI):
                    keep = col - irow >= I(kd)
                    if const_expr(mode == "tril"):
                        keep = col - irow <= I(kd)
                    if rok & (col < wcols) & keep:
                        g = cute.make_tensor(psrc + Int64(roff + col * scol), cute.make_layout(1))
                        frag[a * CJ + b] = g[0]
                elif const_expr(CONST):
                    if rok & (col < wcols) & okcol[b]:
                        g = cute.make_tensor(psrc + Int64(roff + qcol[b] * scol),
                                             cute.make_layout(1))
                        frag[a * CJ + b] = g[0]
                else:
                    if rok & (col < wcols):
                        g = cute.make_tensor(psrc + Int64(roff + qcol[b] * scol),
                                             cute.make_layout(1))
                        frag[a * CJ + b] = g[0]
        for a in cutlass.range_constexpr(RJ):
            row = row0 + I(a)
            for b in cutlass.range_constexpr(CJ):
                col = cols[b]
                if (row < nr) & (col < wcols):
                    g = cute.make_tensor(pdst + Int64(row * wcols + col), cute.make_layout(1))
                    g[0] = frag[a * CJ + b]

    @cute.jit
    def launch(psrc: cute.Pointer, pdst: cute.Pointer, nrows: Int64, ncb: Int64, *rest):
        scalars, stream = split_stream(rest)
        f0, f1, kd = scalars[32:]
        kernel(psrc, pdst, nrows, ncb, *groups(scalars[:32]), f0, f1, kd).launch(
            grid=[Int32(((nrows + TR - 1) // TR) * ncb), 1, 1],
            block=[THREADS, 1, 1], smem=0, stream=stream)

    return launch, example_args([gmem_ptr(W, isz), gmem_ptr(W, isz)], 34,
                                [Int64(0), Int64(0), Int64(0)])
