"""Radix sort, step 1 (long rows): ``keys[g] = key(x[row, j])``, ``idx[g] = j`` for the dense
element ``g = row·n + j`` of the workspace, gathering from a strided input (7 outer dims,
axis stride ``sa``).  Grid (column blocks of 2048, rows from ``row0``): the row's offset is
decomposed once per thread, each thread handles 8 columns.  Keys: order-preserving patterns of :mod:`sort_common` (inverted when
``desc``), Uint32 for ≤ 32-bit dtypes, Uint64 for 64-bit ones; indices int32.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

from ..specs.sort import COLS_PER_CTA, ELEM_THREADS as THREADS
from .sort_common import KEY_INFO, WORD, key_type, make_key
from ....blocks.gmem import dims_args, gload, gstore, row_offset7

ITEMS = COLS_PER_CTA // THREADS


def build(knobs):
    """``knobs``: a :class:`~baracuda_dsl.ops.sorting.specs.sort.SortDtypeKnobs`."""
    short = knobs.dtype
    bits, _ = KEY_INFO[short]
    KT = key_type(bits)
    W = WORD[bits]

    @cute.kernel
    def kernel(psrc: cute.Pointer, pkeys: cute.Pointer, pidx: cute.Pointer, n: Int64,
               row0: Int64, desc: Int32, sa: Int64,
               e0: Int64, e1: Int64, e2: Int64, e3: Int64, e4: Int64, e5: Int64, e6: Int64,
               s0: Int64, s1: Int64, s2: Int64, s3: Int64, s4: Int64, s5: Int64, s6: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, bidy, _ = cute.arch.block_idx()
        row = row0 + Int64(bidy)
        off = row_offset7(row, [e0, e1, e2, e3, e4, e5, e6], [s0, s1, s2, s3, s4, s5, s6])
        j0 = Int64(bidx) * Int64(THREADS * ITEMS) + Int64(tidx)
        rw = cute.make_rmem_tensor(cute.make_layout(ITEMS), W)
        for it in cutlass.range_constexpr(ITEMS):              # independent loads first
            j = j0 + Int64(it * THREADS)
            w = W(0)
            if j < n:
                w = W(gload(psrc, off + j * sa))
            rw[it] = w
        for it in cutlass.range_constexpr(ITEMS):
            j = j0 + Int64(it * THREADS)
            if j < n:
                gstore(pkeys, row * n + j, make_key(rw[it], desc, short))
                gstore(pidx, row * n + j, Int32(j))

    @cute.jit
    def launch(psrc: cute.Pointer, pkeys: cute.Pointer, pidx: cute.Pointer, n: Int64,
               row0: Int64, desc: Int32, sa: Int64,
               e0: Int64, e1: Int64, e2: Int64, e3: Int64, e4: Int64, e5: Int64, e6: Int64,
               s0: Int64, s1: Int64, s2: Int64, s3: Int64, s4: Int64, s5: Int64, s6: Int64,
               stream):
        kernel(psrc, pkeys, pidx, n, row0, desc, sa, e0, e1, e2, e3, e4, e5, e6,
               s0, s1, s2, s3, s4, s5, s6).launch(
            grid=[Int32((n + THREADS * ITEMS - 1) // (THREADS * ITEMS)), 1, 1], block=[THREADS, 1, 1],
            smem=0, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    args = [make_ptr(W, 16, cute.AddressSpace.gmem, assumed_align=bits // 8),
            make_ptr(KT, 16, cute.AddressSpace.gmem, assumed_align=KT.width // 8),
            make_ptr(Int32, 16, cute.AddressSpace.gmem, assumed_align=4),
            Int64(1), Int64(0), Int32(0), Int64(1)] + dims_args(14) + [make_fake_stream()]
    return launch, args
