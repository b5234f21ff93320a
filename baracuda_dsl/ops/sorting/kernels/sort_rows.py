"""Small-row sort (the fast path): one CTA per row sorts ``n ≤ N`` (bucket) elements with a
register-blocked bitonic network (:mod:`sort_block`, :mod:`sort_network`) over (key, original index) pairs — for
keys of ≤ 32 bits packed into one Uint64 ``key << 32 | index`` (one compare per exchange), else
a key array and an int32 index array.

Keys are the order-preserving patterns of :mod:`sort_common` (descending: inverted), padded to
``N`` with (all-ones key, index ≥ n) so pads sort last; pairs compare by key then index, so the
result is the stable order (equal keys keep their input order, also descending).

Phases: coalesced fill of shared memory (swizzled slots) → per group of up to ``r`` stages:
each thread loads its ``R = 2^r`` pairs, runs the group's exchanges in registers, stores them
back, one barrier → coalesced drain: for ``c < ncols`` the sorted column ``j = col0 + c``:
``vals[c]`` decoded from the key (the input word itself, gathered by index, where the key
merged values: float ±0 and NaN — so -0.0 and NaN payloads are preserved) and
``idx[c] = idx_j`` (int64).  Rows: 7 outer dims (extents ``e``, input strides ``s``, output
strides ``o``); the sorted axis has input stride ``sa`` and output stride ``oa``.  No
workspace; deterministic.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, Uint64, const_expr

from .sort_common import KEY_INFO, WORD, key_type, make_key, sel, store_column
from ....blocks.gmem import dims_args, gload, row_offset7
from .sort_block import BlockNetwork
from ..specs.sort import SORT_ROWS
from ..specs.sort_network import BUCKET_THREADS, reg_bits, swizzle


def build(knobs):
    """``knobs``: a :class:`~baracuda_dsl.ops.sorting.specs.sort.SortRowsKnobs`."""
    short = knobs.dtype
    N = knobs.bucket
    TB = BUCKET_THREADS[N]
    r = reg_bits(N)
    R = 1 << r
    bits, kind = KEY_INFO[short]
    KT = key_type(bits)
    W = WORD[bits]
    FULL = (1 << bits) - 1
    LOADS = N // TB
    PACK = bits <= 32
    SWZ = r == 3
    smem_bytes = SORT_ROWS.geometry(knobs).smem_bytes     # keys, int32 indices (== N·8 + 64 packed)

    net = BlockNetwork(N, KT, PACK)

    def network(tid, scomb, skey, sidx, rr, rk, ri):
        """The whole bitonic network (one barrier per group)."""
        for g in range(len(net.groups)):
            net.group(g, tid, scomb, skey, sidx, rr, rk, ri)
            cute.arch.barrier()

    @cute.kernel
    def kernel(psrc: cute.Pointer, pvals: cute.Pointer, pidx: cute.Pointer, n: Int64,
               rows: Int64, desc: Int32, want_vals: Int32, want_idx: Int32, col0: Int64,
               ncols: Int64, sa: Int64, oa: Int64,
               e0: Int64, e1: Int64, e2: Int64, e3: Int64, e4: Int64, e5: Int64, e6: Int64,
               s0: Int64, s1: Int64, s2: Int64, s3: Int64, s4: Int64, s5: Int64, s6: Int64,
               o0: Int64, o1: Int64, o2: Int64, o3: Int64, o4: Int64, o5: Int64, o6: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        tid = Int32(tidx)
        smem = cutlass.memory.SmemAllocator()
        if const_expr(PACK):
            scomb = smem.allocate_tensor(Uint64, cute.make_layout(N), byte_alignment=16)
            skey = None
            sidx = None
            rr = cute.make_rmem_tensor(cute.make_layout(R), Uint64)
            rk = None
            ri = None
        else:
            scomb = None
            skey = smem.allocate_tensor(KT, cute.make_layout(N), byte_alignment=16)
            sidx = smem.allocate_tensor(Int32, cute.make_layout(N), byte_alignment=16)
            rr = None
            rk = cute.make_rmem_tensor(cute.make_layout(R), KT)
            ri = cute.make_rmem_tensor(cute.make_layout(R), Int32)
        ee = [e0, e1, e2, e3, e4, e5, e6]
        soff = row_offset7(bidx, ee, [s0, s1, s2, s3, s4, s5, s6])
        ooff = row_offset7(bidx, ee, [o0, o1, o2, o3, o4, o5, o6])
        # fill: coalesced global reads (all issued first), keys + indices into (swizzled)
        # shared memory
        rw = cute.make_rmem_tensor(cute.make_layout(LOADS), W)
        for t in cutlass.range_constexpr(LOADS):
            li = tid + Int32(t * TB)
            w = W(0)
            if Int64(li) < n:
                w = W(gload(psrc, soff + Int64(li) * sa))
            rw[t] = w
        for t in cutlass.range_constexpr(LOADS):
            li = tid + Int32(t * TB)
            k = sel(Int64(li) < n, make_key(rw[t], desc, short), FULL, KT)
            ps = swizzle(li, SWZ)
            if const_expr(PACK):
                scomb[ps] = (Uint64(k) << Uint64(32)) | Uint64(li)
            else:
                skey[ps] = k
                sidx[ps] = li
        cute.arch.barrier()
        network(tid, scomb, skey, sidx, rr, rk, ri)
        # drain: coalesced writes of the selected columns
        for t in cutlass.range_constexpr(LOADS):
            c = Int64(tid + Int32(t * TB))
            if c < ncols:
                ps = swizzle(Int32(col0 + c), SWZ)
                src_i = Int64(0)
                k = KT(0)
                if const_expr(PACK):
                    comb = scomb[ps]
                    src_i = Int64(comb & Uint64(0xFFFFFFFF))
                    k = KT(comb >> Uint64(32))
                else:
                    src_i = Int64(sidx[ps])
                    k = skey[ps]
                store_column(k, src_i, c, short, desc, want_vals, want_idx, psrc, soff, sa, pvals,
                             pidx, ooff, oa)

    @cute.jit
    def launch(psrc: cute.Pointer, pvals: cute.Pointer, pidx: cute.Pointer, n: Int64,
               rows: Int64, desc: Int32, want_vals: Int32, want_idx: Int32, col0: Int64,
               ncols: Int64, sa: Int64, oa: Int64,
               e0: Int64, e1: Int64, e2: Int64, e3: Int64, e4: Int64, e5: Int64, e6: Int64,
               s0: Int64, s1: Int64, s2: Int64, s3: Int64, s4: Int64, s5: Int64, s6: Int64,
               o0: Int64, o1: Int64, o2: Int64, o3: Int64, o4: Int64, o5: Int64, o6: Int64,
               stream):
        kernel(psrc, pvals, pidx, n, rows, desc, want_vals, want_idx, col0, ncols, sa, oa,
               e0, e1, e2, e3, e4, e5, e6, s0, s1, s2, s3, s4, s5, s6,
               o0, o1, o2, o3, o4, o5, o6).launch(grid=[Int32(rows), 1, 1], block=[TB, 1, 1],
                                                  smem=smem_bytes, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    isz = bits // 8
    args = [make_ptr(W, 16, cute.AddressSpace.gmem, assumed_align=isz),
            make_ptr(W, 16, cute.AddressSpace.gmem, assumed_align=isz),
            make_ptr(Int64, 16, cute.AddressSpace.gmem, assumed_align=8),
            Int64(1), Int64(1), Int32(0), Int32(1), Int32(1), Int64(0), Int64(1), Int64(1),
            Int64(1)] + dims_args(21) + [make_fake_stream()]
    return launch, args
