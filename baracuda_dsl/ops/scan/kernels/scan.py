"""The scan kernel: one template for every scan op (``ops/scan/kernels/scan_ops.py``) × dtype × path.

Problem: ``F`` rows ("fibers") of length ``L`` along the scanned axis; fiber ``r`` of operand
``p`` starts at ``row_offset7(r, e, p_*)`` and element ℓ sits ``ℓ·ps`` further (the plan reverses
a scan by pointing at the last element with a negated stride).  The axis is split into
``nchunk`` chunks of ``chunk`` elements (a multiple of the tile):

* ``phase 0``: nchunk == 1, the whole row in one pass;
* ``phase 1``: each chunk's total state → workspace ``w0/w1[r·nchunk + c]`` (nothing stored);
* ``phase 2``: carry = the ordered combination of the totals of chunks ``0..c-1``, then the
  chunk is scanned with that carry and stored.

Row paths (``vec`` / ``row``; grid (F, nchunk), 256 threads): a tile is 256 threads × E
consecutive elements (16-byte vectors on ``vec``); per-thread sequential scan, warp inclusive
scan of the thread totals with ``shuffle_up``, block scan of the 8 warp totals through shared
memory (two parities → one barrier per tile), a running carry across tiles.  ``col`` path
(grid (⌈F/256⌉, nchunk)): one thread per fiber, sequential, ``COL_ILP`` loads in flight.

The association order depends on the shape only: results are bit-identical run to run.
``flags & 1`` (exclusive): position ℓ gets the exclusive prefix and position L the total.
``flags & 2`` (reverse, ``vec`` path only): logical element ℓ is physical ``L-1-ℓ`` (the vector
is read and written back to front); other paths reverse through negated strides (the plan).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, const_expr

from ..specs.scan import COL_ILP, COL_THREADS, EXCLUSIVE, REVERSE, ROW_ELEMS_SCALAR, THREADS
from ....blocks.scalar_math import sel
from .scan_ops import make, select_state
from ....blocks.gmem import gload, gstore, row_offset7

WARP = 32


def _shfl_up(st, o):
    return tuple(cute.arch.shuffle_sync_up(x, o) for x in st)


def _shfl_idx(st, lane):
    return tuple(cute.arch.shuffle_sync(x, lane) for x in st)


def block_scan(OP, tot, bufs, parity, lane, warp, W: int):
    """Branch-free CTA scan of the per-thread totals ``tot`` (thread order).  Returns
    (exclusive prefix of this thread — identity for thread 0 —, CTA total).  One barrier;
    ``parity`` selects the shared-memory half, so consecutive calls need no second barrier."""
    w = tot
    for k in range(5):
        o = 1 << k
        y = _shfl_up(w, o)
        w = select_state(lane >= Int32(o), OP.combine(y, w), w)
    wtot = _shfl_idx(w, 31)
    wex = _shfl_up(w, 1)
    for j in range(len(tot)):
        bufs[j][parity, warp] = wtot[j]   # every lane stores the same value
    cute.arch.barrier()
    pre = OP.identity()
    blk = OP.identity()
    for wi in range(W):
        s = tuple(bufs[j][parity, wi] for j in range(len(tot)))
        pre = select_state(Int32(wi) < warp, OP.combine(pre, s), pre)
        blk = OP.combine(blk, s)
    tp = select_state(lane > Int32(0), OP.combine(pre, wex), pre)
    return tp, blk


def build(knobs):
    """``knobs``: a :class:`~baracuda_dsl.ops.scan.specs.scan.ScanKnobs`."""
    OP = make(knobs.op, knobs.dtype, knobs.odt)
    path = knobs.path
    VEC = knobs.vec
    E = VEC if path == "vec" else ROW_ELEMS_SCALAR
    T = THREADS
    W = T // WARP
    TILE = T * E
    NC = len(OP.ct)
    U = COL_ILP
    _row, _col = _jit_helpers(OP, path, E, VEC, T, W, TILE, U)

    @cute.kernel
    def kernel(pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer, po: cute.Pointer,
               poi: cute.Pointer, pw0: cute.Pointer, pw1: cute.Pointer, L: Int64, F: Int64,
               nchunk: Int64, chunk: Int64, phase: Int32, flags: Int32, pos0: Int64, dpos: Int64,
               ext, sa, sb, sc, so, soi):
        """``ext``: the 7 outer extents; ``sa`` ... ``soi``: per operand (a, b, c, o, oi) the
        axis stride, then the 7 outer strides."""
        tidx, _, _ = cute.arch.thread_idx()
        bx, by, _ = cute.arch.block_idx()
        tid = Int32(tidx)
        ext = list(ext)
        cidx = Int64(by)
        exclusive = (flags & Int32(EXCLUSIVE)) != Int32(0)
        rev = (flags & Int32(REVERSE)) != Int32(0)
        if const_expr(path == "col"):
            fiber = Int64(bx) * Int64(COL_THREADS) + Int64(tid)
        else:
            fiber = Int64(bx)
        if fiber < F:
            offa = row_offset7(fiber, ext, list(sa[1:]))
            offb = row_offset7(fiber, ext, list(sb[1:]))
            offc = row_offset7(fiber, ext, list(sc[1:]))
            offo = row_offset7(fiber, ext, list(so[1:]))
            offi = row_offset7(fiber, ext, list(soi[1:]))
            start = cidx * chunk
            end = start + chunk
            end = Int64(cutlass.select_(end > L, L, end))
            wbase = fiber * nchunk
            if const_expr(path == "col"):
                _col(pa, pb, pc, po, poi, pw0, pw1, offa, offb, offc, offo, offi,
                     sa[0], sb[0], sc[0], so[0], soi[0], start, end, L, cidx, nchunk, wbase,
                     phase, exclusive, pos0, dpos)
            else:
                _row(pa, pb, pc, po, poi, pw0, pw1, offa, offb,
                     offc, offo, offi, sa[0], sb[0], sc[0], so[0], soi[0], start, end, L, cidx,
                     nchunk, wbase, phase, exclusive, pos0, dpos, tid, rev)

    @cute.jit
    def launch(pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer, po: cute.Pointer,
               poi: cute.Pointer, pw0: cute.Pointer, pw1: cute.Pointer, L: Int64, F: Int64,
               nchunk: Int64, chunk: Int64, phase: Int32, flags: Int32, pos0: Int64, dpos: Int64,
               *rest):
        """The flat ABI (spec.SCAN_PARAMS): 7 extents, 5 × (axis stride, 7 strides), stream."""
        dims, stream = rest[:-1], rest[-1]
        if const_expr(path == "col"):
            gx = Int32((F + COL_THREADS - 1) // COL_THREADS)
        else:
            gx = Int32(F)
        smem = 0 if path == "col" else 2 * 2 * W * 8 + 128
        kernel(pa, pb, pc, po, poi, pw0, pw1, L, F, nchunk, chunk, phase, flags, pos0, dpos,
               tuple(dims[:7]), *(tuple(dims[7 + 8 * k:15 + 8 * k]) for k in range(5))).launch(
            grid=[gx, Int32(nchunk), 1], block=[T if path != "col" else COL_THREADS, 1, 1],
            smem=smem, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    al = 16 if path == "vec" else 1

    def ptr(t, a=al):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=max(a, t.width // 8))

    w1t = OP.ct[1] if NC == 2 else Int64
    args = [ptr(OP.st_a), ptr(OP.st_b), ptr(OP.st_c), ptr(OP.st_o), ptr(Int64, 1 if al == 1 else 16),
            ptr(OP.ct[0], 1), ptr(w1t, 1)]
    args += [Int64(1)] * 4 + [Int32(0), Int32(0), Int64(0), Int64(1)] + [Int64(1)] * 7
    args += [Int64(1)] * 40 + [make_fake_stream()]
    return launch, args


# ------------------------------------------------------------------------------ helpers
def _tup(OP, c0, c1):
    """State tuple from the two component variables (c1 is a dummy for one-component ops)."""
    return (c0,) if len(OP.ct) == 1 else (c0, c1)


def _c1(state, dummy):
    return state[1] if len(state) > 1 else dummy


def _ws_state(OP, ws0, ws1, idx):
    return _tup(OP, gload(ws0, idx), gload(ws1, idx) if len(OP.ct) > 1 else None)


def _or(v, dummy):
    return dummy if v is None else v


def _imin(a, b):
    return Int64(cutlass.select_(a < b, a, b))


def _values(OP, fa, fb, fc, fn, k, l, L, pos0, dpos):
    """Trace-time: the loaded values of element ``k`` of the register fragments (logical index
    ``l``) as the dict ``ScanOp.element`` / ``emit`` read."""
    v = {"a": fa[k], "pos": pos0 + l * dpos}
    if OP.uses_b:
        v["b"] = fb[k]
    if OP.uses_c:
        v["c"] = fc[k]
    if OP.neighbour is not None:
        nl = l + Int64(OP.neighbour[1])
        v["nb"] = fn[k]
        v["has_nb"] = cutlass.Boolean(cutlass.select_(nl >= Int64(0), nl < L,
                                                      cutlass.Boolean(False)))
    return v


def _frags(OP, n: int):
    """Register fragments for the loaded operands (None where unused)."""
    fa = cute.make_rmem_tensor(cute.make_layout(n), OP.st_a)
    fa.fill(0)
    fb = fc = fn = None
    if OP.uses_b:
        fb = cute.make_rmem_tensor(cute.make_layout(n), OP.st_b)
        fb.fill(0)
    if OP.uses_c:
        fc = cute.make_rmem_tensor(cute.make_layout(n), OP.st_c)
        fc.fill(0)
    if OP.neighbour is not None:
        fn = cute.make_rmem_tensor(cute.make_layout(n),
                                   OP.st_a if OP.neighbour[0] == "a" else OP.st_c)
        fn.fill(0)
    return fa, fb, fc, fn


def _jit_helpers(OP, path: str, E: int, VEC: int, T: int, W: int, TILE: int, U: int):
    """The @cute.jit pieces of one SKU (trace-time constants captured by closure)."""

    @cute.jit
    def _load_scalar(fa, fb, fc, fn, k: cutlass.Constexpr, l, end, L, pa,
                     pb, pc, offa, offb, offc, sa, sb, sc):
        """Load element ``l`` (if ``l < end``) and its neighbour into slot ``k`` of the fragments."""
        if l < end:
            fa[k] = gload(pa, offa + l * sa)
            if const_expr(OP.uses_b):
                fb[k] = gload(pb, offb + l * sb)
            if const_expr(OP.uses_c):
                fc[k] = gload(pc, offc + l * sc)
            if const_expr(OP.neighbour is not None):
                nl = l + Int64(OP.neighbour[1])
                if nl >= Int64(0):
                    if nl < L:
                        if const_expr(OP.neighbour[0] == "a"):
                            fn[k] = gload(pa, offa + nl * sa)
                        else:
                            fn[k] = gload(pc, offc + nl * sc)


    @cute.jit
    def _row(pa, pb, pc, po, poi, pw0, pw1, offa, offb, offc, offo, offi,
             sa, sb, sc, so, si, start, end, L, cidx, nchunk, wbase, phase, exclusive, pos0, dpos,
             tid, rev):
        lane = tid % Int32(WARP)
        warp = tid // Int32(WARP)
        smem = cutlass.memory.SmemAllocator()
        buf0 = smem.allocate_tensor(OP.ct[0], cute.make_layout((2, W), stride=(W, 1)),
                                    byte_alignment=16)
        buf1 = smem.allocate_tensor(OP.ct[-1], cute.make_layout((2, W), stride=(W, 1)),
                                    byte_alignment=16)
        bufs = [buf0, buf1]
        ident = OP.identity()
        dummy = Int64(0)

        # carry-in (phase 2): ordered combination of the totals of chunks 0..cidx-1 — thread t
        # folds a contiguous run of them, the CTA combines the thread results in thread order
        nprev = Int64(cutlass.select_(phase == Int32(2), cidx, Int64(0)))
        q = (nprev + Int64(T - 1)) // Int64(T)
        lo = Int64(tid) * q
        hi = _imin(lo + q, nprev)
        a0 = ident[0]
        a1 = _c1(ident, dummy)
        for j in cutlass.range(lo, hi):
            acc = OP.combine(_tup(OP, a0, a1), _ws_state(OP, pw0, pw1, wbase + j))
            a0 = acc[0]
            a1 = _c1(acc, a1)
        tp0, blk0 = block_scan(OP, _tup(OP, a0, a1), bufs, Int32(0), lane, warp, W)
        c0 = blk0[0]
        c1 = _c1(blk0, dummy)

        ntiles = (end - start + Int64(TILE - 1)) // Int64(TILE)
        ntiles = Int64(cutlass.select_(end <= start, Int64(0), ntiles))
        fa, fb, fc, fn = _frags(OP, E)
        fo = cute.make_rmem_tensor(cute.make_layout(E), OP.st_o)
        fi = cute.make_rmem_tensor(cute.make_layout(E), Int64)
        parity = Int32(1)
        for it in cutlass.range(ntiles):
            base = start + it * Int64(TILE) + Int64(tid) * Int64(E)
            # vec path, in-kernel reversal (flags & REVERSE): logical [base, base+E) is the
            # physical vector at L - base - E, read back to front
            pbase = Int64(cutlass.select_(rev, L - base - Int64(E), base))
            if const_expr(path == "vec"):
                if base < end:
                    ga = cute.make_tensor(pa + cute.assume(offa + pbase, divby=VEC),
                                          cute.make_layout(E))
                    cute.autovec_copy(ga, fa)
            else:
                for k in cutlass.range_constexpr(E):
                    _load_scalar(fa, fb, fc, fn, k, base + Int64(k), end, L, pa, pb, pc, offa,
                                 offb, offc, sa, sb, sc)
            vals = []
            sts = []
            for k in cutlass.range_constexpr(E):
                l = base + Int64(k)
                v = _values(OP, fa, fb, fc, fn, k, l, L, pos0, dpos)
                if const_expr(path == "vec"):
                    v["a"] = sel(rev, OP.c(fa[E - 1 - k]), OP.c(fa[k]))
                vals.append(v)
                sts.append(select_state(l < end, OP.element(v), ident))
            inc = [sts[0]]
            for k in cutlass.range_constexpr(1, E):
                inc.append(OP.combine(inc[k - 1], sts[k]))
            tp, blk = block_scan(OP, inc[E - 1], bufs, parity, lane, warp, W)
            parity = Int32(1) - parity
            carry = _tup(OP, c0, c1)
            pre = OP.combine(carry, tp)
            nc = OP.combine(carry, blk)
            c0 = nc[0]
            c1 = _c1(nc, c1)
            ovs = []
            ois = []
            for k in cutlass.range_constexpr(E):
                ex = pre
                if const_expr(k > 0):
                    ex = OP.combine(pre, inc[k - 1])
                ov, oi = OP.emit(vals[k], OP.combine(pre, inc[k]), ex, exclusive)
                ovs.append(ov)
                ois.append(oi)
            for k in cutlass.range_constexpr(E):
                if const_expr(path == "vec"):
                    fo[k] = sel(rev, ovs[E - 1 - k], ovs[k])
                    if const_expr(OP.has_index):
                        fi[k] = sel(rev, ois[E - 1 - k], ois[k])
                else:
                    fo[k] = ovs[k]
                    if const_expr(OP.has_index):
                        fi[k] = ois[k]
            if phase != Int32(1):
                if const_expr(path == "vec"):
                    if base < end:
                        go = cute.make_tensor(po + cute.assume(offo + pbase, divby=VEC),
                                              cute.make_layout(E))
                        cute.autovec_copy(fo, go)
                        if const_expr(OP.has_index):
                            gi = cute.make_tensor(poi + cute.assume(offi + pbase, divby=VEC),
                                                  cute.make_layout(E))
                            cute.autovec_copy(fi, gi)
                else:
                    for k in cutlass.range_constexpr(E):
                        _store_scalar(fo, fi, k, base + Int64(k), end, po, poi, offo, offi, so,
                                      si)
        _finish(po, pw0, pw1, offo, so, c0, c1, L, cidx, nchunk, wbase, phase, exclusive,
                tid == Int32(0))


    @cute.jit
    def _store_scalar(fo, fi, k: cutlass.Constexpr, l, end, po, poi, offo,
                      offi, so, si):
        if l < end:
            gstore(po, offo + l * so, fo[k])
            if const_expr(OP.has_index):
                gstore(poi, offi + l * si, fi[k])


    @cute.jit
    def _finish(po, pw0, pw1, offo, so, c0, c1, L, cidx, nchunk, wbase,
                phase, exclusive, leader):
        """Phase 1: the chunk total to the workspace; exclusive scans: the row total at L."""
        if leader:
            if phase == Int32(1):
                gstore(pw0, wbase + cidx, c0)
                if const_expr(len(OP.ct) == 2):
                    gstore(pw1, wbase + cidx, c1)
            else:
                if exclusive:
                    if cidx == nchunk - Int64(1):
                        gstore(po, offo + L * so, OP.out_value(_tup(OP, c0, c1)))


    @cute.jit
    def _col(pa, pb, pc, po, poi, pw0, pw1, offa,
             offb, offc, offo, offi, sa, sb, sc, so, si, start, end, L, cidx, nchunk, wbase, phase,
             exclusive, pos0, dpos):
        ident = OP.identity()
        dummy = Int64(0)
        c0 = ident[0]
        c1 = _c1(ident, dummy)
        nprev = Int64(cutlass.select_(phase == Int32(2), cidx, Int64(0)))
        for j in cutlass.range(nprev):
            acc = OP.combine(_tup(OP, c0, c1), _ws_state(OP, pw0, pw1, wbase + j))
            c0 = acc[0]
            c1 = _c1(acc, c1)
        fa, fb, fc, fn = _frags(OP, U)
        nsteps = (end - start + Int64(U - 1)) // Int64(U)
        nsteps = Int64(cutlass.select_(end <= start, Int64(0), nsteps))
        for it in cutlass.range(nsteps):
            base = start + it * Int64(U)
            for k in cutlass.range_constexpr(U):
                _load_scalar(fa, fb, fc, fn, k, base + Int64(k), end, L, pa, pb, pc, offa, offb,
                             offc, sa, sb, sc)
            for k in cutlass.range_constexpr(U):
                l = base + Int64(k)
                v = _values(OP, fa, fb, fc, fn, k, l, L, pos0, dpos)
                carry = _tup(OP, c0, c1)
                nxt = OP.combine(carry, OP.element(v))
                ov, oi = OP.emit(v, nxt, carry, exclusive)
                _store_one(ov, _or(oi, dummy), l, end, phase, po, poi, offo, offi, so, si)
                nc = select_state(l < end, nxt, carry)
                c0 = nc[0]
                c1 = _c1(nc, c1)
        _finish(po, pw0, pw1, offo, so, c0, c1, L, cidx, nchunk, wbase, phase, exclusive,
                cutlass.Boolean(True))


    @cute.jit
    def _store_one(ov, oi, l, end, phase, po, poi, offo, offi, so, si):
        if phase != Int32(1):
            if l < end:
                gstore(po, offo + l * so, ov)
                if const_expr(OP.has_index):
                    gstore(poi, offi + l * si, oi)

    return _row, _col
