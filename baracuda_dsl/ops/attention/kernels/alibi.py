"""ALiBi bias forward and its slope gradient: the kernels of the ``alibi_fw`` and ``alibi_bw``
templates (``build`` tells them apart by the knobs type).

Forward: ``bias[b, h, i, j] = −(slope[b·sb + h·sh] · |i + off − j|)`` with the distance an exact
Int32 converted to the compute type (f32, f64 for f64; exact below 2^24 in f32) and one rounding
of the product before the output rounding.  Thread ``t`` of block ``g`` takes work item
``g·FW_THREADS + t = row·upr + u`` (``row = (b·H + h)·Sq + i``), unit ``u`` of that row: a
16-byte vector (``VEC``) or one element.

Backward (``specs/alibi.py`` describes the two modes): a fixed thread → item assignment, each
thread's items added in order in the compute type, then warp shuffles and the CTA's warps in
order (``blocks.reduction_base.row_allreduce_sum`` over the whole CTA), then the chunks in
order: bit-identical from run to run for a given shape.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64

from ....blocks.gmem import example_args, gload, gmem_ptr, gstore, split_stream
from ....blocks.reduction_base import (alloc_reduction_buffer, compute_type, element_type,
                                       row_allreduce_sum)
from ..specs.alibi import (BW_SMEM, BW_THREADS, DIRECT, FINISH, FW_THREADS, VEC,
                           AlibiBackwardKnobs, AlibiKnobs, vec_of)
from .rope import unit_of


@cute.jit
def distance(d0: Int32, j: Int32):
    """|d0 − j| (Int32: both in (−2^31, 2^31) and so is their difference)."""
    d = d0 - j
    return Int32(cutlass.select_(d < Int32(0), Int32(0) - d, d))


def build(knobs):
    if isinstance(knobs, AlibiBackwardKnobs):
        return _build_bw(knobs)
    return _build_fw(knobs)


def _build_fw(knobs: AlibiKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    V = vec_of(knobs.dtype)
    gmem = cute.AddressSpace.gmem

    @cute.kernel
    def kernel(ps: cute.Pointer, pout: cute.Pointer, flags: Int32, total: Int64, upr: Int32,
               H: Int32, Sq: Int32, Sk: Int32, off: Int32, sb: Int64, sh: Int64, ob: Int64,
               oh: Int64, oi: Int64, oj: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        item = Int64(bidx) * Int64(FW_THREADS) + Int64(tidx)
        if item < total:
            # row = (b·H + h)·Sq + i: unit_of's (b, s, h) with S = H and H = Sq
            b, h, i, u = unit_of(item, total, upr, Sq, H)
            slope = CT(Float32(gload(ps, Int64(b) * sb + Int64(h) * sh)))
            base = Int64(b) * ob + Int64(h) * oh + Int64(i) * oi
            d0 = i + off
            if (flags & Int32(VEC)) != Int32(0):
                vo = cute.make_ptr(T, pout.toint(), gmem, assumed_align=16)
                lay = cute.make_layout(V)
                r = cute.make_rmem_tensor(lay, T)
                j0 = u * Int32(V)
                for e in cutlass.range_constexpr(V):
                    r[e] = T(-(slope * CT(distance(d0, j0 + Int32(e)))))
                dst = cute.make_tensor(vo + cute.assume(base + Int64(j0), divby=V), lay)
                cute.autovec_copy(r, dst)
            else:
                gstore(pout, base + Int64(u) * oj, T(-(slope * CT(distance(d0, u)))))

    @cute.jit
    def launch(ps: cute.Pointer, pout: cute.Pointer, flags: Int32, total: Int64, *rest):
        scalars, stream = split_stream(rest)
        blocks = (total + Int64(FW_THREADS - 1)) // Int64(FW_THREADS)
        kernel(ps, pout, flags, total, *scalars).launch(
            grid=[Int32(blocks), 1, 1], block=[FW_THREADS, 1, 1], smem=0, stream=stream)

    ptrs = [gmem_ptr(Float32, 4), gmem_ptr(T, T.width // 8), Int32(0), Int64(1)]
    return launch, example_args(ptrs, 0, [Int32(1)] * 5 + [Int64(1)] * 6)


def _build_bw(knobs: AlibiBackwardKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    V = vec_of(knobs.dtype)
    gmem = cute.AddressSpace.gmem

    @cute.jit
    def vector_term(pd: cute.Pointer, rv, base: Int64, u: Int32, d0: Int32):
        """Σ_e dbias[base + uV + e]·(−|d0 − uV − e|) over one 16-byte vector (the 16-byte
        alignment is asserted here, on the vector path only)."""
        vd = cute.make_ptr(T, pd.toint(), gmem, assumed_align=16)
        j0 = u * Int32(V)
        cute.autovec_copy(
            cute.make_tensor(vd + cute.assume(base + Int64(j0), divby=V), cute.make_layout(V)),
            rv)
        part = CT(0.0)
        for e in cutlass.range_constexpr(V):
            part = part - CT(rv[e]) * CT(distance(d0, j0 + Int32(e)))
        return part

    @cute.jit
    def finish(ppart: cute.Pointer, pds: cute.Pointer, nslopes: Int32, nchunks: Int32,
               H: Int32, gb: Int64, gh: Int64):
        """Mode FINISH: thread k adds the chunk partials of slope k in order."""
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        k = Int32(bidx) * Int32(BW_THREADS) + Int32(tidx)
        if k < nslopes:
            acc = CT(0.0)
            pbase = Int64(k) * Int64(nchunks)
            for c in cutlass.range(nchunks):
                acc = acc + CT(gload(ppart, pbase + Int64(c)))
            bk = k // H
            h = k - bk * H
            gstore(pds, Int64(bk) * gb + Int64(h) * gh, Float32(acc))

    @cute.jit
    def reduce(pd: cute.Pointer, ppart: cute.Pointer, pds: cute.Pointer, flags: Int32,
               nchunks: Int32, rpc: Int64, nrows: Int64, upr: Int32, H: Int32, Sq: Int32,
               off: Int32, db: Int64, dh: Int64, di: Int64, dj: Int64, gb: Int64, gh: Int64):
        """Mode REDUCE: CTA (k, c) adds its chunk of slope k's rows."""
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        t = Int32(tidx)
        buf = alloc_reduction_buffer(CT, BW_THREADS, 1, 1)
        blk = Int32(bidx)
        k = blk // nchunks
        c = blk - k * nchunks
        bk = k // H
        h = k - bk * H
        r0 = Int64(c) * rpc
        r1 = cutlass.min(r0 + rpc, nrows)
        nitems = (r1 - r0) * Int64(upr)
        acc = CT(0.0)
        hoff = Int64(h) * dh
        vec = (flags & Int32(VEC)) != Int32(0)
        # (loop-carried state is scalars only: the vector registers live outside the loop)
        rv = cute.make_rmem_tensor(cute.make_layout(V), T)
        for it in cutlass.range(Int64(t), nitems, BW_THREADS):
            rr = it // Int64(upr)
            u = Int32(it - rr * Int64(upr))
            r = r0 + rr
            bq = r // Int64(Sq)
            i = Int32(r - bq * Int64(Sq))
            base = (Int64(bk) + bq) * db + hoff + Int64(i) * di
            d0 = i + off
            part = CT(0.0)
            if vec:
                part = vector_term(pd, rv, base, u, d0)
            else:
                part = CT(0.0) - CT(gload(pd, base + Int64(u) * dj)) * CT(distance(d0, u))
            acc = acc + part
        tot = row_allreduce_sum(acc, buf, BW_THREADS, 0, Int32(0), t)
        if t == Int32(0):
            if (flags & Int32(DIRECT)) != Int32(0):
                gstore(pds, Int64(bk) * gb + Int64(h) * gh, Float32(tot))
            else:
                gstore(ppart, Int64(k) * Int64(nchunks) + Int64(c), tot)

    @cute.kernel
    def kernel(pd: cute.Pointer, ppart: cute.Pointer, pds: cute.Pointer, mode: Int32,
               flags: Int32, nslopes: Int32, nchunks: Int32, rpc: Int64, nrows: Int64,
               upr: Int32, H: Int32, Sq: Int32, Sk: Int32, off: Int32, db: Int64, dh: Int64,
               di: Int64, dj: Int64, gb: Int64, gh: Int64):
        if mode == Int32(FINISH):
            finish(ppart, pds, nslopes, nchunks, H, gb, gh)
        else:
            reduce(pd, ppart, pds, flags, nchunks, rpc, nrows, upr, H, Sq, off, db, dh, di, dj,
                   gb, gh)

    @cute.jit
    def launch(pd: cute.Pointer, ppart: cute.Pointer, pds: cute.Pointer, mode: Int32,
               flags: Int32, nslopes: Int32, nchunks: Int32, *rest):
        scalars, stream = split_stream(rest)
        blocks = Int32(cutlass.select_(mode == Int32(FINISH),
                                       (nslopes + Int32(BW_THREADS - 1)) // Int32(BW_THREADS),
                                       nslopes * nchunks))
        kernel(pd, ppart, pds, mode, flags, nslopes, nchunks, *scalars).launch(
            grid=[blocks, 1, 1], block=[BW_THREADS, 1, 1], smem=BW_SMEM, stream=stream)

    ptrs = [gmem_ptr(T, T.width // 8), gmem_ptr(CT, CT.width // 8), gmem_ptr(Float32, 4),
            Int32(0), Int32(0), Int32(1), Int32(1)]
    return launch, example_args(ptrs, 0, [Int64(1)] * 2 + [Int32(1)] * 5 + [Int64(1)] * 6)

