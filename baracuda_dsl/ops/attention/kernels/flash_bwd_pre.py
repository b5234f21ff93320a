"""Flash attention backward, step 1: delta_i = Σ_d dO[i, d]·O[i, d] (f32) for every query row.

One CTA (PRE_THREADS threads) per (PRE_ROWS query rows, query head h, batch entry b); 4 threads
a row, each multiplying D / 32 pairs of 16-byte vectors of O and dO in f32, summed across the
quad by shuffles.  delta shares the lse's layout: element (b, h, row) at
b·lb + h·lh + q_start + row (q_start from cu_q when VARLEN, whose batch strides are ignored).
Rows past the sequence are not written.

Parameters: see ``specs/flash_bwd.py``; (ob, os, oh) are O's strides, (gb, gs, gh) dO's.
Caller contract: 16-byte aligned pointers, row / head / batch strides multiples of 8 elements,
unit stride along the head dim.
"""

import cutlass.cute as cute
from cutlass import Float32, Int32, Int64

from ..specs.flash import VARLEN, FlashKnobs
from ..specs.flash_bwd import PRE_ROWS, PRE_THREADS
from .flash_common import TYPES, quad_reduce, seq_bounds


def build(knobs: FlashKnobs):
    T = TYPES[knobs.dtype]
    D = knobs.head_dim
    NT = PRE_THREADS
    TPR = NT // PRE_ROWS          # threads a row (a quad)
    assert TPR == 4 and D % (8 * TPR) == 0

    @cute.kernel
    def kernel(po: cute.Pointer, pdo: cute.Pointer, pdelta: cute.Pointer, pcuq: cute.Pointer,
               sq: Int32, ob: Int64, os: Int64, oh: Int64, gb: Int64, gs: Int64, gh: Int64,
               lb: Int64, lh: Int64, flags: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bx, h, b = cute.arch.block_idx()
        q0, nq = seq_bounds(pcuq, b, flags, sq)
        if Int32(bx) * PRE_ROWS < nq:
            bb = Int64(b)
            if (flags & VARLEN) != 0:
                bb = Int64(0)
            os8 = cute.assume(os, divby=8)
            gs8 = cute.assume(gs, divby=8)
            op_ = po + (bb * ob + Int64(q0) * os + Int64(h) * oh)
            gp = pdo + (bb * gb + Int64(q0) * gs + Int64(h) * gh)
            mO = cute.make_tensor(op_.align(16), cute.make_layout((nq, D), stride=(os8, 1)))
            mdO = cute.make_tensor(gp.align(16), cute.make_layout((nq, D), stride=(gs8, 1)))
            gO = cute.local_tile(mO, (PRE_ROWS, D), (bx, 0))
            gdO = cute.local_tile(mdO, (PRE_ROWS, D), (bx, 0))
            cO = cute.local_tile(cute.make_identity_tensor((nq, D)), (PRE_ROWS, D), (bx, 0))
            ld = cute.make_tiled_copy_tv(
                cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), T, num_bits_per_copy=128),
                cute.make_layout((PRE_ROWS, TPR), stride=(TPR, 1)), cute.make_layout((1, 8)))
            thr = ld.get_slice(tidx)
            tOg = thr.partition_S(gO)
            tdOg = thr.partition_S(gdO)
            row = thr.partition_S(cO)[0, 0, 0][0]
            acc = Float32(0.0)
            if cute.elem_less(row, nq):
                rO = cute.make_fragment_like(tOg, T)
                rdO = cute.make_fragment_like(tdOg, T)
                cute.copy(ld, tOg, rO)
                cute.copy(ld, tdOg, rdO)
                prod = rO.load().to(Float32) * rdO.load().to(Float32)
                acc = prod.reduce(cute.ReductionOp.ADD, Float32(0.0), 0)
            acc = quad_reduce(acc, lambda x, y: x + y)
            if Int32(tidx) % TPR == 0:
                if cute.elem_less(row, nq):
                    gd = cute.make_tensor(pdelta + (Int64(b) * lb + Int64(h) * lh
                                                    + Int64(q0 + row)), cute.make_layout(1))
                    gd[0] = acc

    @cute.jit
    def launch(po: cute.Pointer, pdo: cute.Pointer, pdelta: cute.Pointer, pcuq: cute.Pointer,
               sq: Int32, ob: Int64, os: Int64, oh: Int64, gb: Int64, gs: Int64, gh: Int64,
               lb: Int64, lh: Int64, flags: Int32, blocks_x: Int32, heads: Int32, batch: Int32,
               stream):
        kernel(po, pdo, pdelta, pcuq, sq, ob, os, oh, gb, gs, gh, lb, lh,
               flags).launch(grid=[blocks_x, heads, batch], block=[NT, 1, 1], stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t, align):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=align)

    args = ([ptr(T, 16), ptr(T, 16), ptr(Float32, 4), ptr(Int32, 4), Int32(1)]
            + [Int64(8)] * 8 + [Int32(0), Int32(1), Int32(1), Int32(1), make_fake_stream()])
    return launch, args
