"""CTA-level register-blocked bitonic network over (key, index) pairs in shared memory (CuTe DSL
trace helpers shared by ``sort_rows`` and ``sort_select``).

``N = 2^LOG`` pairs, ``TB = BUCKET_THREADS[N]`` threads each holding ``R = N / TB`` pairs; the
schedule and the swizzled slots are those of :mod:`sort_network`.  Keys of ≤ 32 bits are packed
with their int32 index into one Uint64 ``key << 32 | index`` (one unsigned compare orders by
key, then index); 64-bit keys use a key array and an int32 index array (compare key, then
index).  The result is ascending by (key, index): the stable order when index is the input
position.  Shared memory: ``N·8`` bytes packed, ``N·(8 + 4)`` split.
"""

from __future__ import annotations

from cutlass import Int32, Uint64

from .sort_common import sel
from ..specs.sort_network import BUCKET_THREADS, reg_bits, schedule, slot_index, swizzle


class BlockNetwork:
    """Trace-time description of the network for a bucket of ``N`` pairs of ``KT`` keys
    (``packed``: keys ≤ 32 bits).  ``groups[g]`` = (lo, stages); :meth:`group` runs one group for
    thread ``tid`` (load R pairs, exchanges in registers, store back — no barrier: the caller
    puts one CTA barrier after every group)."""

    def __init__(self, N: int, KT, packed: bool):
        self.N = N
        self.TB = BUCKET_THREADS[N]
        self.r = reg_bits(N)
        self.R = 1 << self.r
        self.KT = KT
        self.packed = packed
        self.swz = self.r == 3
        self.groups = schedule(N.bit_length() - 1, self.r)

    def slot(self, i):
        """Shared-memory slot of row position ``i``."""
        return swizzle(i, self.swz)

    def _exchange_packed(self, rr, s, s2, up):
        a = rr[s]
        b = rr[s2]
        lt = a < b
        mn = sel(lt, a, b, Uint64)
        mx = sel(lt, b, a, Uint64)
        if up is True:
            rr[s] = mn
            rr[s2] = mx
        elif up is False:
            rr[s] = mx
            rr[s2] = mn
        else:
            rr[s] = sel(up, mn, mx, Uint64)
            rr[s2] = sel(up, mx, mn, Uint64)

    def _exchange_split(self, rk, ri, s, s2, up):
        KT = self.KT
        ka = rk[s]
        kb = rk[s2]
        ia = ri[s]
        ib = ri[s2]
        gt = (ka > kb) | ((ka == kb) & (ia > ib))          # b before a in ascending order
        g = sel(gt, 1, 0, Int32)
        if up is True:
            swap = g == Int32(1)
        elif up is False:
            swap = g == Int32(0)
        else:
            swap = g == sel(up, 1, 0, Int32)
        rk[s] = sel(swap, kb, ka, KT)
        rk[s2] = sel(swap, ka, kb, KT)
        ri[s] = sel(swap, ib, ia, Int32)
        ri[s2] = sel(swap, ia, ib, Int32)

    def group(self, g: int, tid, scomb, skey, sidx, rr, rk, ri):
        """Group ``g`` of the network for thread ``tid`` (< TB).  Packed: ``scomb`` (shared
        Uint64[N]) and ``rr`` (registers Uint64[R]); split: ``skey``/``sidx`` and ``rk``/``ri``."""
        lo, stages = self.groups[g]
        r, R = self.r, self.R
        pos = [self.slot(slot_index(tid, s, lo, r)) for s in range(R)]
        for s in range(R):
            if self.packed:
                rr[s] = scomb[pos[s]]
            else:
                rk[s] = skey[pos[s]]
                ri[s] = sidx[pos[s]]
        for kk, jj in stages:
            bj = jj - lo
            up_thread = None
            if kk - lo >= r:
                up_thread = ((tid >> Int32(kk - r)) & Int32(1)) == Int32(0)
            for s in range(R):
                if ((s >> bj) & 1) == 0:
                    s2 = s | (1 << bj)
                    up = up_thread if up_thread is not None else (((s >> (kk - lo)) & 1) == 0)
                    if self.packed:
                        self._exchange_packed(rr, s, s2, up)
                    else:
                        self._exchange_split(rk, ri, s, s2, up)
        for s in range(R):
            if self.packed:
                scomb[pos[s]] = rr[s]
            else:
                skey[pos[s]] = rk[s]
                sidx[pos[s]] = ri[s]
