"""Row gather (index_select along an axis, embedding lookup, take): for every row
``row = o · nidx + i`` (``row < rows``) and word ``r < rlen``

    j = idx[i · xis];  j += m if j < 0
    out[o·oso + i·osi + r·osr] = x[o·xso + j·xsm + r·xsr]     if 0 <= j < m
                               = 0 (all bits)                   otherwise (status[0] = 1)

Words are opaque ``itemsize``-byte values (u8 … u128), so one SKU serves every dtype; the plan
widens unit-stride aligned rows into 16-byte words (the vector path).  Block ``b`` handles chunk
``b mod chunks`` of row group ``b div chunks`` (see ``templates.indexing.rows_grid``):
``tpr > 1``: ``tpr`` threads share one row chunk of ``tpr · ILP`` words; ``tpr == 1`` (rows of
≤ ILP words): each thread copies word ``chunk`` of ``ILP`` rows ``THREADS`` apart.  Each thread
issues its ``ILP`` loads before its stores.  The index is read
once per thread; the block split runs in Int32, row / offset math in Int64.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

from ....blocks.gmem import WORD, example_args, gmem_ptr, split_stream
from ..specs.indexing import ROW_ILP as ILP, ROW_THREADS as THREADS, IndexRowsKnobs


def build(knobs: IndexRowsKnobs):
    W = WORD[knobs.itemsize]
    IX = Int32 if knobs.index == "i32" else Int64
    TPR = knobs.tpr
    RPC = THREADS // TPR  # row chunks per CTA (tpr > 1)

    @cute.jit
    def split(row: Int64, rows: Int64, nidx: Int64):
        """(o, i) of a row: Int32 division when every row index fits."""
        o = Int64(0)
        i = row
        if nidx < rows:                     # an outer dim (uniform branch; embedding skips it)
            if rows < Int64(2**31 - 1):
                r32 = Int32(row)
                n32 = Int32(nidx)
                o32 = r32 // n32
                o = Int64(o32)
                i = Int64(r32 - o32 * n32)
            else:
                o = row // nidx
                i = row - o * nidx
        return o, i

    @cute.kernel
    def kernel(px: cute.Pointer, pidx: cute.Pointer, pout: cute.Pointer, pst: cute.Pointer,
               has_status: Int32, rows: Int64, nidx: Int64, rlen: Int64, m: Int64, xso: Int64,
               xsm: Int64, xsr: Int64, xis: Int64, oso: Int64, osi: Int64, osr: Int64,
               chunks: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        b = Int32(bidx)
        ch32 = Int32(chunks)            # grid = groups · chunks < 2^31: Int32 math here
        grp = b // ch32
        ch = Int64(b - grp * ch32)
        t = Int32(tidx)
        frag = cute.make_rmem_tensor(cute.make_layout(ILP), W)
        if cutlass.const_expr(TPR == 1):
            # ILP rows per thread (THREADS apart), one word (column ``ch``) of each
            ooff = cute.make_rmem_tensor(cute.make_layout(ILP), Int64)
            live = cute.make_rmem_tensor(cute.make_layout(ILP), Int32)
            for k in cutlass.range_constexpr(ILP):
                row = Int64(grp) * Int64(THREADS * ILP) + Int64(k * THREADS) + Int64(t)
                frag[k] = W(Int32(0) * t)
                live[k] = Int32(0)
                ooff[k] = Int64(0)
                if row < rows:
                    o, i = split(row, rows, nidx)
                    j = Int64(cute.make_tensor(pidx + i * xis, cute.make_layout(1))[0])
                    j = cutlass.select_(j < Int64(0), j + m, j)
                    bad = (j < Int64(0)) | (j >= m)
                    if bad:
                        if has_status != Int32(0):
                            if ch == Int64(0):
                                cute.make_tensor(pst, cute.make_layout(1))[0] = Int32(1)
                    else:
                        frag[k] = cute.make_tensor(px + (o * xso + j * xsm + ch * xsr),
                                                   cute.make_layout(1))[0]
                    live[k] = Int32(1)
                    ooff[k] = o * oso + i * osi + ch * osr
            for k in cutlass.range_constexpr(ILP):
                if live[k] != Int32(0):
                    cute.make_tensor(pout + ooff[k], cute.make_layout(1))[0] = frag[k]
        else:
            # TPR threads share one row chunk of TPR · ILP words
            row = Int64(grp) * Int64(RPC) + Int64(t // Int32(TPR))
            lane = Int64(t % Int32(TPR))
            if row < rows:
                o, i = split(row, rows, nidx)
                j = Int64(cute.make_tensor(pidx + i * xis, cute.make_layout(1))[0])
                j = cutlass.select_(j < Int64(0), j + m, j)
                bad = (j < Int64(0)) | (j >= m)
                ok = (j >= Int64(0)) & (j < m)
                if bad:
                    if has_status != Int32(0):
                        if (lane == Int64(0)) & (ch == Int64(0)):
                            cute.make_tensor(pst, cute.make_layout(1))[0] = Int32(1)
                jj = cutlass.select_(ok, j, Int64(0))
                xb = o * xso + jj * xsm
                ob = o * oso + i * osi
                w0 = ch * Int64(TPR * ILP) + lane
                for k in cutlass.range_constexpr(ILP):
                    w = w0 + Int64(k * TPR)
                    frag[k] = W(Int32(0) * t)
                    if ok & (w < rlen):
                        frag[k] = cute.make_tensor(px + (xb + w * xsr), cute.make_layout(1))[0]
                for k in cutlass.range_constexpr(ILP):
                    w = w0 + Int64(k * TPR)
                    if w < rlen:
                        cute.make_tensor(pout + (ob + w * osr), cute.make_layout(1))[0] = frag[k]

    @cute.jit
    def launch(px: cute.Pointer, pidx: cute.Pointer, pout: cute.Pointer, pst: cute.Pointer,
               has_status: Int32, rows: Int64, *rest):
        scalars, stream = split_stream(rest)
        chunks = scalars[-1]
        per = THREADS * ILP if TPR == 1 else RPC
        groups = (rows + Int64(per - 1)) // Int64(per)
        kernel(px, pidx, pout, pst, has_status, rows, *scalars).launch(
            grid=[Int32(groups * chunks), 1, 1], block=[THREADS, 1, 1], smem=0, stream=stream)

    isz = knobs.itemsize
    ptrs = [gmem_ptr(W, isz), gmem_ptr(IX, IX.width // 8), gmem_ptr(W, isz), gmem_ptr(Int32, 4),
            Int32(0)]
    return launch, example_args(ptrs, 12)
