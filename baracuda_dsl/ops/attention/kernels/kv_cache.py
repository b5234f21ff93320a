"""KV-cache append: the ``kv_append`` kernel (``specs/kv_cache.py`` has the addressing).

Block ``(g, y)``: ``y = 0`` appends k, ``y = 1`` appends v; thread ``t`` copies one opaque word
(``itemsize`` bytes: 16-byte vectors when the plan could widen the rows) of its item
``g·THREADS + t`` = ``((b·S + t)·Hk + h)·words + w``.  The token's position
``p = cache_seqlens[b] + t`` is validated before the destination is formed (and, for a paged
cache, before the block table is read): a word whose row cannot be written is skipped and sets
``status[0] = 1`` when asked.  Index math in Int32 when every item index fits, offsets in Int64.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

from ....blocks.gmem import WORD, example_args, gload, gmem_ptr, gstore, split_stream
from ..specs.kv_cache import HAS_STATUS, PAGED, THREADS, KvAppendKnobs
from .rope import unit_of


def build(knobs: KvAppendKnobs):
    W = WORD[knobs.itemsize]

    @cute.jit
    def append_word(pn: cute.Pointer, pc: cute.Pointer, pseq: cute.Pointer,
                    ptab: cute.Pointer, pst: cute.Pointer, flags: Int32, item: Int64,
                    total: Int64, words: Int32, S: Int32, Hk: Int32, smax: Int32,
                    npages: Int32, maxpages: Int32, sl: Int64, tb: Int64, tp: Int64, nb: Int64,
                    nt: Int64, nh: Int64, cb: Int64, cs: Int64, ch: Int64):
        """Copy word ``item`` of one side (k or v) if its row is inside the cache."""
        if item < total:
            # row = (b·S + t)·Hk + h: unit_of's (b, s, h)
            b, t, h, w = unit_of(item, total, words, Hk, S)
            p = Int64(gload(pseq, Int64(b) * sl)) + Int64(t)
            ok = p >= Int64(0)
            pp = Int64(cutlass.select_(ok, p, Int64(0)))
            row = pp
            base = Int64(b) * cb
            page = Int64(-1)
            if (flags & Int32(PAGED)) != Int32(0):
                pidx = pp // Int64(smax)
                row = pp - pidx * Int64(smax)
                ok = ok & (pidx < Int64(maxpages))
                if ok:
                    page = Int64(gload(ptab, Int64(b) * tb + pidx * tp))
                ok = ok & (page >= Int64(0)) & (page < Int64(npages))
                base = page * cb
            else:
                ok = ok & (p < Int64(smax))
            if ok:
                src = Int64(b) * nb + Int64(t) * nt + Int64(h) * nh + Int64(w)
                gstore(pc, base + row * cs + Int64(h) * ch + Int64(w), gload(pn, src))
            else:
                if (flags & Int32(HAS_STATUS)) != Int32(0):
                    gstore(pst, 0, Int32(1))

    @cute.kernel
    def kernel(pkn: cute.Pointer, pvn: cute.Pointer, pkc: cute.Pointer, pvc: cute.Pointer,
               pseq: cute.Pointer, ptab: cute.Pointer, pst: cute.Pointer, flags: Int32,
               S: Int32, Hk: Int32, smax: Int32, npages: Int32, maxpages: Int32, sl: Int64,
               tb: Int64, tp: Int64,
               totalk: Int64, wordsk: Int32, nbk: Int64, ntk: Int64, nhk: Int64, cbk: Int64,
               csk: Int64, chk: Int64,
               totalv: Int64, wordsv: Int32, nbv: Int64, ntv: Int64, nhv: Int64, cbv: Int64,
               csv: Int64, chv: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, side, _ = cute.arch.block_idx()
        item = Int64(bidx) * Int64(THREADS) + Int64(tidx)
        if Int32(side) == Int32(0):
            append_word(pkn, pkc, pseq, ptab, pst, flags, item, totalk, wordsk, S, Hk, smax,
                        npages, maxpages, sl, tb, tp, nbk, ntk, nhk, cbk, csk, chk)
        else:
            append_word(pvn, pvc, pseq, ptab, pst, flags, item, totalv, wordsv, S, Hk, smax,
                        npages, maxpages, sl, tb, tp, nbv, ntv, nhv, cbv, csv, chv)

    @cute.jit
    def launch(pkn: cute.Pointer, pvn: cute.Pointer, pkc: cute.Pointer, pvc: cute.Pointer,
               pseq: cute.Pointer, ptab: cute.Pointer, pst: cute.Pointer, flags: Int32,
               S: Int32, Hk: Int32, smax: Int32, npages: Int32, maxpages: Int32, sl: Int64,
               tb: Int64, tp: Int64, totalk: Int64, *rest):
        scalars, stream = split_stream(rest)
        totalv = scalars[7]
        most = cutlass.max(totalk, totalv)
        blocks = (most + Int64(THREADS - 1)) // Int64(THREADS)
        kernel(pkn, pvn, pkc, pvc, pseq, ptab, pst, flags, S, Hk, smax, npages, maxpages, sl,
               tb, tp, totalk, *scalars).launch(
            grid=[Int32(blocks), 2, 1], block=[THREADS, 1, 1], smem=0, stream=stream)

    isz = knobs.itemsize
    ptrs = [gmem_ptr(W, isz), gmem_ptr(W, isz), gmem_ptr(W, isz), gmem_ptr(W, isz),
            gmem_ptr(Int32, 4), gmem_ptr(Int32, 4), gmem_ptr(Int32, 4), Int32(0)]
    side = [Int64(1), Int32(1)] + [Int64(1)] * 6
    tail = [Int32(1)] * 5 + [Int64(1)] * 3 + side[:1]
    return launch, example_args(ptrs, 0, tail + side[1:] + side)
