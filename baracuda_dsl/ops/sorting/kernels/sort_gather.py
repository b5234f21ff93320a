"""Long-row sort output: for sorted column ``j = col0 + c`` of a row, ``i = idx_ws[row·n + j]``
(the radix-sorted int32 indices) and ``key = keys_ws[row·n + j]``:

    vals[o(row) + c·oa] = decode(key)          the value rebuilt from its key (sequential read)
                        = x[s(row) + i·sa]     where the key merged values (float ±0, NaN):
                                               the input word itself, sign / payload preserved
    idx[o(row) + c·oa]  = i                    (int64)

``desc`` un-inverts descending keys first.  Knob: ``dtype``.  Grid (column blocks of 2048, rows from ``row0``): row
offsets are decomposed once per thread, each thread handles 8 columns.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

from ..specs.sort import COLS_PER_CTA, ELEM_THREADS as THREADS
from .sort_common import KEY_INFO, WORD, key_type, store_column
from ....blocks.gmem import dims_args, gload, row_offset7

ITEMS = COLS_PER_CTA // THREADS


def build(knobs):
    """``knobs``: a :class:`~baracuda_dsl.ops.sorting.specs.sort.SortDtypeKnobs`."""
    short = knobs.dtype
    bits, kind = KEY_INFO[short]
    isz = bits // 8
    W = WORD[bits]
    KT = key_type(bits)

    @cute.kernel
    def kernel(psrc: cute.Pointer, pvals: cute.Pointer, pws: cute.Pointer, pkeys: cute.Pointer,
               pidx: cute.Pointer, n: Int64, row0: Int64, desc: Int32, want_vals: Int32, want_idx: Int32, col0: Int64,
               ncols: Int64, sa: Int64, oa: Int64,
               e0: Int64, e1: Int64, e2: Int64, e3: Int64, e4: Int64, e5: Int64, e6: Int64,
               s0: Int64, s1: Int64, s2: Int64, s3: Int64, s4: Int64, s5: Int64, s6: Int64,
               o0: Int64, o1: Int64, o2: Int64, o3: Int64, o4: Int64, o5: Int64, o6: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, bidy, _ = cute.arch.block_idx()
        row = row0 + Int64(bidy)
        ee = [e0, e1, e2, e3, e4, e5, e6]
        ooff = row_offset7(row, ee, [o0, o1, o2, o3, o4, o5, o6])
        soff = row_offset7(row, ee, [s0, s1, s2, s3, s4, s5, s6])
        c0 = Int64(bidx) * Int64(THREADS * ITEMS) + Int64(tidx)
        ri = cute.make_rmem_tensor(cute.make_layout(ITEMS), Int32)
        rk = cute.make_rmem_tensor(cute.make_layout(ITEMS), KT)
        for it in cutlass.range_constexpr(ITEMS):              # independent loads first
            c = c0 + Int64(it * THREADS)
            iv = Int32(0)
            kv = KT(0)
            if c < ncols:
                iv = Int32(gload(pws, row * n + col0 + c))
                if want_vals != Int32(0):
                    kv = KT(gload(pkeys, row * n + col0 + c))
            ri[it] = iv
            rk[it] = kv
        for it in cutlass.range_constexpr(ITEMS):
            c = c0 + Int64(it * THREADS)
            if c < ncols:
                store_column(rk[it], Int64(ri[it]), c, short, desc, want_vals, want_idx, psrc,
                             soff, sa, pvals, pidx, ooff, oa)

    @cute.jit
    def launch(psrc: cute.Pointer, pvals: cute.Pointer, pws: cute.Pointer, pkeys: cute.Pointer,
               pidx: cute.Pointer, n: Int64, row0: Int64, desc: Int32, want_vals: Int32, want_idx: Int32, col0: Int64,
               ncols: Int64, sa: Int64, oa: Int64,
               e0: Int64, e1: Int64, e2: Int64, e3: Int64, e4: Int64, e5: Int64, e6: Int64,
               s0: Int64, s1: Int64, s2: Int64, s3: Int64, s4: Int64, s5: Int64, s6: Int64,
               o0: Int64, o1: Int64, o2: Int64, o3: Int64, o4: Int64, o5: Int64, o6: Int64,
               stream):
        kernel(psrc, pvals, pws, pkeys, pidx, n, row0, desc, want_vals, want_idx, col0, ncols, sa, oa,
               e0, e1, e2, e3, e4, e5, e6, s0, s1, s2, s3, s4, s5, s6,
               o0, o1, o2, o3, o4, o5, o6).launch(
            grid=[Int32((ncols + THREADS * ITEMS - 1) // (THREADS * ITEMS)), 1, 1], block=[THREADS, 1, 1],
            smem=0, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    args = [make_ptr(W, 16, cute.AddressSpace.gmem, assumed_align=isz),
            make_ptr(W, 16, cute.AddressSpace.gmem, assumed_align=isz),
            make_ptr(Int32, 16, cute.AddressSpace.gmem, assumed_align=4),
            make_ptr(KT, 16, cute.AddressSpace.gmem, assumed_align=KT.width // 8),
            make_ptr(Int64, 16, cute.AddressSpace.gmem, assumed_align=8),
            Int64(1), Int64(0), Int32(0), Int32(1), Int32(1), Int64(0), Int64(1), Int64(1),
            Int64(1)] + dims_args(21) + [make_fake_stream()]
    return launch, args
