"""Top-k / k-th value of rows of ``n ≤ 4096`` elements without a full sort: one CTA
(256 threads) per row runs a radix select in shared memory, then (top-k) sorts only the ``k``
survivors.

Order: the stable order of the row sort, i.e. ascending by the composite ``(key, j)`` of the
order-preserving key (:mod:`sort_common`, inverted when ``desc`` — top-k largest) and the input
position ``j``.  Its ``k``-th smallest composite ``(Tk, Tj)`` (1-based) is found digit by
digit, most significant first: the key's 8-bit digits (``bits/8`` passes) and then the 12-bit
position (digits ``j >> 8`` and ``j & 255``; skipped when the key digits settle it: top-k
taking every tie of ``Tk`` — then ``Tj = 4096`` —, or kthvalue with a single tie).  Each pass counts, among the elements whose
composite matches the prefix found so far, the digit values (256 shared bins, one
``match.any``-aggregated shared atomic per distinct digit per warp: integer counts, order-free),
scans the bins (thread ``d`` owns bin ``d``) and keeps the bin holding the remaining rank:

    rank_{p+1} = rank_p − Σ_{d' < d} count[d']      where Σ_{d'<d} count < rank_p ≤ Σ_{d'≤d} count

* ``kb = 0`` (kthvalue): output ``vals = x[Tj]``, ``idx = Tj``.
* ``kb ∈ {64, 256, 1024}`` (top-k, ``k ≤ kb``): the survivors — exactly the ``k`` elements with
  ``key < Tk`` or ``key == Tk and j ≤ Tj`` (ties: lowest positions first) — are compacted (block
  scan of per-thread counts) into a ``kb``-pair buffer padded with (all ones, 4096 + p) and
  sorted by (key, j) with the register-blocked bitonic network of :mod:`sort_block`; column
  ``c < k`` gets ``vals = x[j_c]`` (the input word: bit-exact) and ``idx = j_c`` (int64).

Identical to columns ``[0, k)`` (top-k) / column ``k-1`` (kthvalue) of the stable row sort.
Rows: 7 outer dims (extents ``e``, input strides ``s``, output strides ``o``), axis stride
``sa`` (input) and ``oa`` (output).  Shared memory: ``4096·key bytes`` + bins + survivors.  No
workspace; deterministic.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, Uint64, const_expr

from ..specs.sort import SELECT_MAX_N, SORT_SELECT, select_passes
from .sort_block import BlockNetwork
from .sort_common import KEY_INFO, WORD, key_type, make_key, sel
from ....blocks.block_scan import block_exclusive_scan
from ....blocks.gmem import dims_args, gload, gstore, row_offset7

THREADS = 256
WARPS = THREADS // 32
NMAX = SELECT_MAX_N
IDX_BITS = 12
BINS = 256
LOADS = NMAX // THREADS


def build(knobs):
    """``knobs``: a :class:`~baracuda_dsl.ops.sorting.specs.sort.SortSelectKnobs`."""
    short = knobs.dtype
    KB = knobs.kb
    SORTK = KB > 0
    bits, _ = KEY_INFO[short]
    KT = key_type(bits)
    W = WORD[bits]
    FULL = (1 << bits) - 1
    PACK = bits <= 32
    KEY_PASSES = [sh for pos, sh in select_passes(bits) if not pos]
    smem_bytes = SORT_SELECT.geometry(knobs).smem_bytes
    net = BlockNetwork(KB, KT, PACK) if SORTK else None
    DRAIN = -(-KB // THREADS)

    @cute.jit
    def radix_pass(skeys, hist, buf, st, spk, tid, n32, is_pos: cutlass.Constexpr,
                   s: cutlass.Constexpr):
        """One digit pass (``is_pos``: a position digit) at bit ``s``: count the digits of the
        elements matching the prefix, keep the bin holding the remaining rank (st[0]), its
        count (st[2]) and extend the prefix (spk[0] / st[1]).  Ends with a barrier."""
        kk = st[0]
        pj = st[1]
        pk = spk[0]
        lt_mask = cute.arch.lanemask_lt()
        rk = cute.make_rmem_tensor(cute.make_layout(LOADS), KT)
        for t in cutlass.range_constexpr(LOADS):           # shared loads ahead of the atomics
            rk[t] = skeys[tid + Int32(t * THREADS)]
        for t in cutlass.range_constexpr(LOADS):
            li = tid + Int32(t * THREADS)
            kv = rk[t]
            m = li < n32
            dig = Int32(0)
            if const_expr(is_pos):
                m = m & (kv == pk)
                if const_expr(s + 8 < IDX_BITS):
                    m = m & (((li ^ pj) >> Int32(s + 8)) == Int32(0))
                dig = (li >> Int32(s)) & Int32(BINS - 1)
            else:
                if const_expr(s + 8 < bits):
                    m = m & (((kv ^ pk) >> KT(s + 8)) == KT(0))
                dig = Int32((kv >> KT(s)) & KT(BINS - 1))
            d = sel(m, dig, BINS, Int32)
            peers = cute.arch.match_sync(cute.arch.FULL_MASK, d)
            rank = Int32(cute.arch.popc(peers & lt_mask))
            cnt = Int32(cute.arch.popc(peers))
            if (rank == Int32(0)) & (d < Int32(BINS)):
                cute.arch.atomic_add((hist.iterator + d).llvm_ptr, cnt)
        cute.arch.barrier()
        c = hist[tid]
        excl, _ = block_exclusive_scan(c, buf, WARPS)      # ends with a barrier
        hist[tid] = Int32(0)
        if (excl < kk) & (kk <= excl + c):
            st[0] = kk - excl
            st[2] = c
            if const_expr(is_pos):
                st[1] = pj | (tid << Int32(s))
            else:
                spk[0] = pk | (KT(tid) << KT(s))
        cute.arch.barrier()

    @cute.kernel
    def kernel(psrc: cute.Pointer, pvals: cute.Pointer, pidx: cute.Pointer, n: Int64, k: Int64,
               rows: Int64, desc: Int32, want_vals: Int32, want_idx: Int32, sa: Int64, oa: Int64,
               e0: Int64, e1: Int64, e2: Int64, e3: Int64, e4: Int64, e5: Int64, e6: Int64,
               s0: Int64, s1: Int64, s2: Int64, s3: Int64, s4: Int64, s5: Int64, s6: Int64,
               o0: Int64, o1: Int64, o2: Int64, o3: Int64, o4: Int64, o5: Int64, o6: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        tid = Int32(tidx)
        smem = cutlass.memory.SmemAllocator()
        skeys = smem.allocate_tensor(KT, cute.make_layout(NMAX), byte_alignment=16)
        hist = smem.allocate_tensor(Int32, cute.make_layout(BINS), byte_alignment=16)
        buf = smem.allocate_tensor(Int32, cute.make_layout(WARPS), byte_alignment=16)
        st = smem.allocate_tensor(Int32, cute.make_layout(4), byte_alignment=16)
        spk = smem.allocate_tensor(KT, cute.make_layout(2), byte_alignment=16)
        scomb = None
        sk = None
        si = None
        rr = None
        rk = None
        ri = None
        if const_expr(SORTK):
            if const_expr(PACK):
                scomb = smem.allocate_tensor(Uint64, cute.make_layout(KB), byte_alignment=16)
                rr = cute.make_rmem_tensor(cute.make_layout(net.R), Uint64)
            else:
                sk = smem.allocate_tensor(KT, cute.make_layout(KB), byte_alignment=16)
                si = smem.allocate_tensor(Int32, cute.make_layout(KB), byte_alignment=16)
                rk = cute.make_rmem_tensor(cute.make_layout(net.R), KT)
                ri = cute.make_rmem_tensor(cute.make_layout(net.R), Int32)
        ee = [e0, e1, e2, e3, e4, e5, e6]
        soff = row_offset7(Int64(bidx), ee, [s0, s1, s2, s3, s4, s5, s6])
        ooff = row_offset7(Int64(bidx), ee, [o0, o1, o2, o3, o4, o5, o6])
        n32 = Int32(n)
        hist[tid] = Int32(0)
        if tid == Int32(0):
            st[0] = Int32(k)
            st[1] = Int32(0)
            st[2] = Int32(0)
            spk[0] = KT(0)
        # the row's keys → shared memory (coalesced, all loads first; pads never match: j ≥ n)
        rw = cute.make_rmem_tensor(cute.make_layout(LOADS), W)
        for t in cutlass.range_constexpr(LOADS):
            li = tid + Int32(t * THREADS)
            w = W(0)
            if li < n32:
                w = W(gload(psrc, soff + Int64(li) * sa))
            rw[t] = w
        for t in cutlass.range_constexpr(LOADS):
            li = tid + Int32(t * THREADS)
            skeys[li] = sel(li < n32, make_key(rw[t], desc, short), FULL, KT)
        cute.arch.barrier()
        # radix select of the k-th smallest composite (key, j): key digits …
        for p in cutlass.range_constexpr(len(KEY_PASSES)):
            radix_pass(skeys, hist, buf, st, spk, tid, n32, False, KEY_PASSES[p])
        # … then position digits, unless the ties are resolved already: top-k takes every tie
        # (ties == rank left) → Tj = NMAX; kthvalue with a single tie → its position
        ties = st[2]
        left = st[0]
        skip = ties == Int32(1)
        if const_expr(SORTK):
            skip = ties == left
        if skip:
            if const_expr(SORTK):
                if tid == Int32(0):
                    st[1] = Int32(NMAX)
            else:
                pk0 = spk[0]
                for t in cutlass.range_constexpr(LOADS):
                    li = tid + Int32(t * THREADS)
                    if (li < n32) & (skeys[li] == pk0):
                        st[1] = li
        else:
            radix_pass(skeys, hist, buf, st, spk, tid, n32, True, 8)
            radix_pass(skeys, hist, buf, st, spk, tid, n32, True, 0)
        cute.arch.barrier()
        tk = spk[0]
        tj = st[1]
        if const_expr(not SORTK):
            if tid == Int32(0):
                if want_vals != Int32(0):
                    gstore(pvals, ooff, W(gload(psrc, soff + Int64(tj) * sa)))
                if want_idx != Int32(0):
                    gstore(pidx, ooff, Int64(tj))
        else:
            # compaction of the k survivors (any order: the network orders them)
            cl = Int32(0)
            for t in cutlass.range_constexpr(LOADS):
                li = tid + Int32(t * THREADS)
                kv = skeys[li]
                sv = (li < n32) & ((kv < tk) | ((kv == tk) & (li <= tj)))
                cl = cl + sel(sv, 1, 0, Int32)
            pos, _ = block_exclusive_scan(cl, buf, WARPS)
            for t in cutlass.range_constexpr(LOADS):
                li = tid + Int32(t * THREADS)
                kv = skeys[li]
                sv = (li < n32) & ((kv < tk) | ((kv == tk) & (li <= tj)))
                if sv:
                    ps = net.slot(pos)
                    if const_expr(PACK):
                        scomb[ps] = (Uint64(kv) << Uint64(32)) | Uint64(li)
                    else:
                        sk[ps] = kv
                        si[ps] = li
                pos = pos + sel(sv, 1, 0, Int32)
            for t in cutlass.range_constexpr(DRAIN):
                q = tid + Int32(t * THREADS)
                if (q < Int32(KB)) & (Int64(q) >= k):
                    ps = net.slot(q)
                    if const_expr(PACK):
                        scomb[ps] = (Uint64(FULL) << Uint64(32)) | Uint64(NMAX + q)
                    else:
                        sk[ps] = KT(FULL)
                        si[ps] = Int32(NMAX) + q
            cute.arch.barrier()
            for g in cutlass.range_constexpr(len(net.groups)):
                if tid < Int32(net.TB):
                    net.group(g, tid, scomb, sk, si, rr, rk, ri)
                cute.arch.barrier()
            for t in cutlass.range_constexpr(DRAIN):
                q = tid + Int32(t * THREADS)
                if Int64(q) < k:
                    ps = net.slot(q)
                    src_i = Int64(0)
                    if const_expr(PACK):
                        src_i = Int64(scomb[ps] & Uint64(0xFFFFFFFF))
                    else:
                        src_i = Int64(si[ps])
                    if want_vals != Int32(0):
                        gstore(pvals, ooff + Int64(q) * oa, W(gload(psrc, soff + src_i * sa)))
                    if want_idx != Int32(0):
                        gstore(pidx, ooff + Int64(q) * oa, src_i)

    @cute.jit
    def launch(psrc: cute.Pointer, pvals: cute.Pointer, pidx: cute.Pointer, n: Int64, k: Int64,
               rows: Int64, desc: Int32, want_vals: Int32, want_idx: Int32, sa: Int64, oa: Int64,
               e0: Int64, e1: Int64, e2: Int64, e3: Int64, e4: Int64, e5: Int64, e6: Int64,
               s0: Int64, s1: Int64, s2: Int64, s3: Int64, s4: Int64, s5: Int64, s6: Int64,
               o0: Int64, o1: Int64, o2: Int64, o3: Int64, o4: Int64, o5: Int64, o6: Int64,
               stream):
        kernel(psrc, pvals, pidx, n, k, rows, desc, want_vals, want_idx, sa, oa,
               e0, e1, e2, e3, e4, e5, e6, s0, s1, s2, s3, s4, s5, s6,
               o0, o1, o2, o3, o4, o5, o6).launch(grid=[Int32(rows), 1, 1],
                                                  block=[THREADS, 1, 1],
                                                  smem=smem_bytes, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    isz = bits // 8
    args = [make_ptr(W, 16, cute.AddressSpace.gmem, assumed_align=isz),
            make_ptr(W, 16, cute.AddressSpace.gmem, assumed_align=isz),
            make_ptr(Int64, 16, cute.AddressSpace.gmem, assumed_align=8),
            Int64(1), Int64(1), Int64(1), Int32(0), Int32(1), Int32(1), Int64(1),
            Int64(1)] + dims_args(21) + [make_fake_stream()]
    return launch, args
