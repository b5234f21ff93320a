"""Register-blocked bitonic network of the small-row sort (pure Python: shared by the
``sort_rows`` kernel, its template geometry and the CPU emulation test).

A row of ``N = 2^LOG`` (key, index) pairs lives in shared memory; ``TB = N / R`` threads each
hold ``R = 2^r`` pairs in registers.  The bitonic network's stages ``(kk, jj)`` (merge level
``kk = 1..LOG``, partner distance ``2^jj``) are cut into groups of stages whose ``jj`` lie in a
window of ``r`` consecutive index bits ``[lo, lo + r)``: for a group, thread ``t`` loads the
``R`` elements

    index(t, s) = (t mod 2^lo) | s << lo | (t >> lo) << (lo + r)        s = 0 .. R-1

so every exchange of the group is between two of its own registers (slots ``s`` and
``s ^ 2^(jj-lo)``); it stores them back and one barrier separates groups.  The direction of an
exchange is index bit ``kk`` of the pair: a slot bit when ``kk < lo + r`` (known at trace
time), else thread bit ``kk - r``.  ``N = 4096, r = 3``: 28 shared-memory round trips and
barriers instead of the 78 barriers of the one-stage-at-a-time network.

Shared memory is addressed through :func:`swizzle` (r = 3): it XORs index bits 4, 5, 6 into
bits 1, 2 and 0 ^ 3 so that for every window ``lo`` the 16 lanes of a half warp (the lowest
4 thread bits → the lowest 4 index bits outside the window) hit 16 distinct 8-byte bank pairs;
the coalesced fill / drain (lanes → index bits 0..4) stays conflict-free too.
"""

from __future__ import annotations

#: rows of ``bucket`` elements: threads per CTA (R = bucket / threads registers per thread)
BUCKET_THREADS = {64: 32, 256: 32, 1024: 128, 4096: 512}


def reg_bits(bucket: int) -> int:
    """r = log2(elements per thread)."""
    return (bucket // BUCKET_THREADS[bucket]).bit_length() - 1


def schedule(log_n: int, r: int):
    """Groups of the network: list of ``(lo, [(kk, jj), ...])`` in execution order; each group's
    ``jj`` lie in ``[lo, lo + r)``; consecutive groups have different ``lo``."""
    groups = []
    for kk in range(1, log_n + 1):
        jj = kk - 1
        while jj >= 0:
            lo = max(0, jj - r + 1)
            stages = [(kk, j) for j in range(jj, lo - 1, -1)]
            if groups and groups[-1][0] == lo:
                groups[-1][1].extend(stages)
            else:
                groups.append((lo, stages))
            jj = lo - 1
    return groups


def slot_index(t, s: int, lo: int, r: int):
    """Row index of register slot ``s`` of thread ``t`` in a group of window ``lo`` (works on
    Python ints, numpy arrays and DSL integers)."""
    return (t & ((1 << lo) - 1)) | (s << lo) | ((t >> lo) << (lo + r))


def swizzle(i, on: bool):
    """Shared-memory slot of row index ``i`` (a bijection within each 128-element block)."""
    if not on:
        return i
    return i ^ ((i >> 3) & 6) ^ (((i >> 6) & 1) * 9)
