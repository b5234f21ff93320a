"""Index preparation kernels of the segment family (ops/segment/specs/segment.py):

``keys``     key[i] = ids[i·xs] wrapped once (−m ≤ id < 0 → id + m) as int32, or m for a bad
             id (so bad ids sort last); status[0] ← 1 on a bad id when has_status.
``offsets``  for sorted int32 keys: off[s] = first position k with key[k] ≥ s, s ∈ [0, m]
             (int64; a binary search per s, thread per s: every entry written, no atomics, no
             serial gaps).  Unsorted keys give some position in [0, n] per entry (the consumers
             clamp offsets and check keys, so nothing reads out of bounds).
``count``    embedding_bag: inv[b] = 1 / (number of valid, non-padding indices of bag b), 0 for
             an empty bag (accumulator dtype).
``map``      embedding_bag backward: for sorted position j with p = perm[j]: rows[j] = the bag
             holding position p (binary search over the offsets; nbags when none) and
             w[j] = psw[p] (flag 1) × inv[bag] (flag 2).
"""

from __future__ import annotations

from typing import Union

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Float64, Int32, Int64

from ....blocks.gmem import example_args, gmem_ptr, split_stream
from ..specs.segment import (PREP_THREADS as THREADS, SegmentBagKnobs, SegmentKeysKnobs,
                             SegmentOffsetsKnobs)
from .common import clamped_range, load1, sel


def build(knobs: Union[SegmentKeysKnobs, SegmentOffsetsKnobs, SegmentBagKnobs]):
    """The ``keys``, ``offsets`` or embedding_bag (``count`` / ``map``) kernel of ``knobs.kind``."""
    if knobs.kind == "keys":
        return _build_keys(knobs)
    if knobs.kind == "offsets":
        return _build_offsets()
    return _build_bag(knobs)


def _ptr(t):
    return gmem_ptr(t, t.width // 8)


def _build_keys(knobs: SegmentKeysKnobs):
    IX = Int32 if knobs.index == "i32" else Int64

    @cute.kernel
    def kkeys(pids: cute.Pointer, pkeys: cute.Pointer, pstat: cute.Pointer, n: Int64,
              m: Int64, xs: Int64, has_status: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = Int64(bidx) * Int64(THREADS) + Int64(tidx)
        if i < n:
            v = Int64(load1(pids, i * xs))
            v = sel(v < Int64(0), v + m, v)
            bad = (v < Int64(0)) | (v >= m)
            if bad:
                if has_status != Int32(0):
                    cute.make_tensor(pstat, cute.make_layout(1))[0] = Int32(1)
            cute.make_tensor(pkeys + i, cute.make_layout(1))[0] = Int32(sel(bad, m, v))

    @cute.jit
    def launch(pids: cute.Pointer, pkeys: cute.Pointer, pstat: cute.Pointer, n: Int64, *rest):
        scalars, stream = split_stream(rest)
        kkeys(pids, pkeys, pstat, n, *scalars).launch(
            grid=[Int32((n + THREADS - 1) // THREADS), 1, 1], block=[THREADS, 1, 1],
            stream=stream)

    return launch, example_args([_ptr(IX), _ptr(Int32), _ptr(Int32)], 3, [Int32(0)])


def _build_offsets():
    @cute.kernel
    def koffs(pkeys: cute.Pointer, poff: cute.Pointer, n: Int64, m: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        s = Int64(bidx) * Int64(THREADS) + Int64(tidx)
        if s <= m:
            lo = Int64(0)
            hi = n
            for _ in cutlass.range(Int32(0), Int32(32)):
                if lo < hi:
                    mid = (lo + hi) // Int64(2)
                    if Int64(load1(pkeys, mid)) < s:
                        lo = mid + Int64(1)
                    else:
                        hi = mid
            cute.make_tensor(poff + s, cute.make_layout(1))[0] = lo

    @cute.jit
    def launch(pkeys: cute.Pointer, poff: cute.Pointer, n: Int64, m: Int64, stream):
        koffs(pkeys, poff, n, m).launch(
            grid=[Int32((m + THREADS) // THREADS), 1, 1], block=[THREADS, 1, 1],
            stream=stream)

    return launch, example_args([_ptr(Int32), _ptr(Int64)], 2)


def _build_bag(knobs: SegmentBagKnobs):
    IX = Int32 if knobs.index == "i32" else Int64
    A = Float64 if knobs.acc == "f64" else Float32
    count = knobs.kind == "count"

    @cute.kernel
    def kbag(pperm: cute.Pointer, poffs: cute.Pointer, pidx: cute.Pointer, ppsw: cute.Pointer,
             pinv: cute.Pointer, prows: cute.Pointer, pw: cute.Pointer, n: Int64, nofs: Int64,
             nbags: Int64, os: Int64, xs: Int64, pws: Int64, pad: Int64, m: Int64,
             flags: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = Int64(bidx) * Int64(THREADS) + Int64(tidx)
        if cutlass.const_expr(count):
            if i < nbags:
                lo, hi = clamped_range(poffs, i, n, nofs, os)
                c = Int64(0)
                for j in cutlass.range(Int32(0), Int32(hi - lo)):
                    v = Int64(load1(pidx, (lo + Int64(j)) * xs))
                    v = sel(v < Int64(0), v + m, v)
                    ok = (v >= Int64(0)) & (v < m) & (v != pad)
                    c = sel(ok, c + Int64(1), c)
                inv = sel(c > Int64(0), A(1.0) / A(sel(c > Int64(0), c, Int64(1))), A(0.0))
                cute.make_tensor(pinv + i, cute.make_layout(1))[0] = inv
        else:
            if i < n:
                p = Int64(load1(pperm, i))
                # last bag b < nbags with offs[b] <= p (offsets assumed non-decreasing)
                lo_b = Int64(0)
                hi_b = nbags
                for _ in cutlass.range(Int32(0), Int32(64)):
                    if lo_b < hi_b:
                        mid = (lo_b + hi_b) // Int64(2)
                        om = Int64(load1(poffs, mid * os))
                        if om <= p:
                            lo_b = mid + Int64(1)
                        else:
                            hi_b = mid
                bag = lo_b - Int64(1)
                w = A(0.0)
                if bag >= Int64(0):
                    blo, bhi = clamped_range(poffs, bag, n, nofs, os)
                    if (p < blo) | (p >= bhi):
                        bag = Int64(-1)
                bag = sel(bag < Int64(0), nbags, bag)
                if bag < nbags:
                    w = A(1.0)
                    if (flags & Int32(1)) != Int32(0):
                        w = A(load1(ppsw, p * pws))
                    if (flags & Int32(2)) != Int32(0):
                        w = w * A(load1(pinv, bag))
                cute.make_tensor(prows + i, cute.make_layout(1))[0] = bag
                cute.make_tensor(pw + i, cute.make_layout(1))[0] = w

    @cute.jit
    def launch(pperm: cute.Pointer, poffs: cute.Pointer, pidx: cute.Pointer, ppsw: cute.Pointer,
               pinv: cute.Pointer, prows: cute.Pointer, pw: cute.Pointer, n: Int64, *rest):
        scalars, stream = split_stream(rest)
        kbag(pperm, poffs, pidx, ppsw, pinv, prows, pw, n, *scalars).launch(
            grid=[Int32((n + THREADS - 1) // THREADS), 1, 1], block=[THREADS, 1, 1],
            stream=stream)

    ptrs = [_ptr(Int64), _ptr(IX), _ptr(IX), _ptr(A), _ptr(A), _ptr(Int64), _ptr(A)]
    return launch, example_args(ptrs, 8, [Int32(0)])
