"""NMS sweep: one CTA of ``SWEEP_THREADS`` threads walks the K boxes in sorted order, 64 at a
time.  ``removed`` (``cb`` words in the workspace; word j owned by thread ``j % threads``, which
alone reads and writes it until the block barrier) collects the suppression bits of the kept
boxes.  For column block ``nb`` every thread reads ``removed[nb]`` (after a barrier), then for
each of its 64 boxes not yet suppressed: thread 0 appends ``order[i]`` to ``keep`` (all threads
count it), the block ORs the box's mask row into the words after ``nb`` (each thread its own
words) and every thread ORs word ``nb`` of the row into its copy.  The count is written last.
Deterministic (the decisions are sequential).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int64, Uint64

from ....blocks.gmem import example_args, gload, gmem_ptr, gstore
from ..specs.nms import BLOCK, SWEEP_THREADS, NmsSweepKnobs


def build(knobs: NmsSweepKnobs):

    @cute.kernel
    def kernel(pm: cute.Pointer, po: cute.Pointer, prem: cute.Pointer, pkeep: cute.Pointer,
               pcnt: cute.Pointer, k: Int64, cb: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        t = Int64(tidx)
        for z in cutlass.range(t, cb, SWEEP_THREADS):
            gstore(prem, z, Uint64(0))
        cute.arch.sync_threads()
        cnt = Int64(0)
        for nb in cutlass.range(cb):
            rv = Uint64(gload(prem, nb))
            cute.arch.sync_threads()
            i0 = nb * Int64(BLOCK)
            size = k - i0
            size = Int64(cutlass.select_(size > Int64(BLOCK), Int64(BLOCK), size))
            for ib in cutlass.range(size):
                i = i0 + ib
                kept = ((rv >> Uint64(ib)) & Uint64(1)) == Uint64(0)
                if kept & (t == Int64(0)):
                    gstore(pkeep, cnt, Int64(gload(po, i)))
                row = i * cb
                stop = Int64(cutlass.select_(kept, cb, Int64(0)))
                for j in cutlass.range(nb + Int64(1) + t, stop, SWEEP_THREADS):
                    gstore(prem, j, Uint64(gload(prem, j)) | Uint64(gload(pm, row + j)))
                own = Uint64(gload(pm, row + nb))
                rv = Uint64(cutlass.select_(kept, rv | own, rv))
                cnt = Int64(cutlass.select_(kept, cnt + Int64(1), cnt))
            cute.arch.sync_threads()
        if t == Int64(0):
            gstore(pcnt, 0, cnt)

    @cute.jit
    def launch(pm: cute.Pointer, po: cute.Pointer, prem: cute.Pointer, pkeep: cute.Pointer,
               pcnt: cute.Pointer, k: Int64, cb: Int64, stream):
        kernel(pm, po, prem, pkeep, pcnt, k, cb).launch(
            grid=[1, 1, 1], block=[SWEEP_THREADS, 1, 1], smem=0, stream=stream)

    args = example_args([gmem_ptr(Uint64, 8), gmem_ptr(Int64, 8), gmem_ptr(Uint64, 8),
                         gmem_ptr(Int64, 8), gmem_ptr(Int64, 8)], 2)
    return launch, args
