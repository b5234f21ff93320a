"""Tiled transpose copy through shared memory: ``dst[offd] = src[offs]`` over an iteration space
``[b0, b1, b2, b3, A, B]`` where the source is unit-stride along ``A`` and the destination is
unit-stride along ``B``:

    offs = Σ_k c_k·bs_k + a + b·sb          offd = Σ_k c_k·bd_k + a·da + b

The batch knob ``NB`` (0, 1, 2, 4) decodes only the last NB batch dims (the plan pads with
leading extents of 1).  Each block moves one ``T × T`` tile (``T`` = 32 for 4/8/16-byte words,
64 for 1/2-byte words): it reads rows of the tile with consecutive threads walking ``A``
(coalesced source reads), stores
them into a padded shared-memory tile (row pitch ``T + max(1, 4 // itemsize)`` words: conflict
free), synchronises, then writes with consecutive threads walking ``B`` (coalesced destination
writes).  Elements are opaque ``itemsize``-byte words, so one SKU serves every dtype of that size.
The linear block index decodes ``(batch…, tile_a, tile_b)`` in Int32 (grid < 2^31); batch
offsets and tile bases are Int64, in-tile offsets Int32 (the plan guarantees
``T·max(|sb|, |da|) < 2^31``).  Edge tiles are
predicated (A, B need not be multiples of T); nothing outside the views is touched.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, const_expr

from ..specs.layout import TRANSPOSE_THREADS as THREADS, TransposeKnobs, pad_for, tile_for
from ....blocks.gmem import WORD, example_args, gmem_ptr, groups, split_stream


def build(knobs: TransposeKnobs):
    isz = knobs.itemsize
    NB = knobs.batch
    W = WORD[isz]
    T = tile_for(isz)
    P = T + pad_for(isz)
    TY = THREADS // T
    ROWS = T // TY

    @cute.kernel
    def kernel(psrc: cute.Pointer, pdst: cute.Pointer, na: Int64, nb: Int64, sb: Int64,
               da: Int64, ta: Int64, tb: Int64, ext, bss, bdd):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        smem = cutlass.memory.SmemAllocator()
        tile = smem.allocate_tensor(W, cute.make_layout((T, P), stride=(P, 1)),
                                    byte_alignment=16)
        # block → (batch…, tile_a, tile_b); every quotient fits Int32 (grid < 2^31)
        rem = Int32(bidx)
        tb32 = Int32(tb)
        ta32 = Int32(ta)
        q = rem // tb32
        t_b = rem - q * tb32
        rem = q
        q = rem // ta32
        t_a = rem - q * ta32
        rem = q
        soff = Int64(0)
        doff = Int64(0)
        if const_expr(NB > 0):
            for k in cutlass.range_constexpr(3, 4 - NB, -1):
                e32 = Int32(ext[k])
                q = rem // e32
                c = Int64(rem - q * e32)
                soff = soff + c * bss[k]
                doff = doff + c * bdd[k]
                rem = q
            soff = soff + Int64(rem) * bss[4 - NB]
            doff = doff + Int64(rem) * bdd[4 - NB]
        a0 = Int64(t_a) * Int64(T)
        bb0 = Int64(t_b) * Int64(T)
        sbase = psrc + (soff + a0 + bb0 * sb)
        dbase = pdst + (doff + a0 * da + bb0)
        la = Int32(cutlass.min(na - a0, Int64(T)))
        lb = Int32(cutlass.min(nb - bb0, Int64(T)))
        tx = Int32(tidx) % Int32(T)
        ty = Int32(tidx) // Int32(T)
        sb32 = Int32(sb)
        da32 = Int32(da)
        for r in cutlass.range_constexpr(ROWS):
            bl = ty + Int32(r * TY)
            if (tx < la) & (bl < lb):
                g = cute.make_tensor(sbase + Int64(tx + bl * sb32), cute.make_layout(1))
                tile[bl, tx] = g[0]
        cute.arch.sync_threads()
        for r in cutlass.range_constexpr(ROWS):
            al = ty + Int32(r * TY)
            if (al < la) & (tx < lb):
                g = cute.make_tensor(dbase + Int64(al * da32 + tx), cute.make_layout(1))
                g[0] = tile[tx, al]

    @cute.jit
    def launch(psrc: cute.Pointer, pdst: cute.Pointer, na: Int64, nb: Int64, sb: Int64,
               da: Int64, ta: Int64, tb: Int64, *rest):
        scalars, stream = split_stream(rest)
        kernel(psrc, pdst, na, nb, sb, da, ta, tb, *groups(scalars[:12], 4)).launch(
            grid=[scalars[12], 1, 1], block=[THREADS, 1, 1], smem=T * P * isz + 16,
            stream=stream)

    return launch, example_args([gmem_ptr(W, isz), gmem_ptr(W, isz)], 18, [Int32(1)])
