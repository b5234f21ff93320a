"""Device helpers of the softmax family (others may import them; see reduction_base for sums).

Row threads are laid out as in :mod:`reduction_base` (``tpr`` consecutive lanes per row, ``rows``
rows per CTA, a shared buffer ``buf[row, warp, slot]`` from ``alloc_reduction_buffer``).

* :func:`row_allreduce_max` — max of a per-thread value over the row's threads (every thread gets
  it); warp shuffles, then one shared slot per warp.
* Online (max, sum-exp) pairs: a thread's partial of a row is ``(m, s)`` with ``m`` the largest
  element it saw (natural units) and ``s = Σ exp(x − m)``.  :func:`online_update` folds one value
  in, :func:`online_merge` merges two pairs, :func:`row_allreduce_online` merges the pairs of a
  row's threads (one barrier) and :func:`cluster_online` those of a thread-block cluster's CTAs
  (one cluster barrier, merged in rank order: every CTA gets the bit-identical pair).
  ``exp`` is computed as ``exp2((x − m)·log2 e)``: the difference first (exact when x is near m),
  then the scale.  (The one-FMA form ``x·log2e − m·log2e`` is NOT used: for huge |x| the
  rounding error of the pre-scaled max, up to ulp(m·log2e)/2 ≈ 1e31 at m = 1e38, is amplified
  to exp2(±1e31) = inf / 0 and whole rows became NaN.)  An ``m`` of −inf (no finite element
  yet) is treated as 0 when subtracted, so empty partials contribute exactly 0 and never NaN; a
  row of only −inf gives s = 0 (softmax 0/0 = NaN, as PyTorch).
* :func:`exp_sub` — exp(x − m) as exp2((x − m)·log2 e) (all helpers here use it);
  :func:`exp_shift` — the older one-FMA form with a pre-scaled max (unsafe for huge x).
* :func:`exp_c` — exp in the compute type (ex2.approx for f32, libdevice for f64).

Reduction order is fixed: results are bit-identical from run to run.
"""

from __future__ import annotations

import math
import operator

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Float64, Int32, const_expr

WARP = 32
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


def _max(a, b):
    return cutlass.max(a, b)


@cute.jit
def exp2_c(t):
    """2^t in the type of ``t`` (ex2.approx.ftz for f32, accurate exp2 for f64)."""
    if const_expr(isinstance(t, Float64)):
        return cute.math.exp2(t)
    return cute.arch.exp2(t)


@cute.jit
def exp_c(x):
    """e^x in the type of ``x``."""
    return exp2_c(x * type(x)(LOG2E))


@cute.jit
def safe_max(m):
    """``m`` with −inf replaced by 0: the offset subtracted before exponentiating."""
    return cutlass.select_(m == type(m)(-math.inf), type(m)(0.0), m)


@cute.jit
def exp_sub(x, ms):
    """exp(x − ms) with ``ms = safe_max(m)`` (finite): exp2((x − ms)·log2 e), no cancellation
    for huge x (x − ms is exact near the max; −inf − ms = −inf gives exactly 0)."""
    return exp2_c((x - ms) * type(x)(LOG2E))


@cute.jit
def exp_shift(x, ms_l2e):
    """exp(x − ms) with ``ms_l2e = safe_max(m)·log2 e`` precomputed: one FMA + exp2.  Kept for
    existing callers; NOT safe for |x| ≳ 1e30 (f32) / 1e290 (f64): the rounding error of the
    pre-scaled max is amplified (see the module docstring) — prefer :func:`exp_sub`."""
    return exp2_c(x * type(x)(LOG2E) - ms_l2e)


@cute.jit
def online_merge(m1, s1, m2, s2):
    """Merge two (max, sum-exp) pairs."""
    m = _max(m1, m2)
    ml = safe_max(m)
    s = s1 * exp_sub(m1, ml) + s2 * exp_sub(m2, ml)
    return m, s


@cute.jit
def row_allreduce_max(val, buf, tpr: cutlass.Constexpr, slot: cutlass.Constexpr, row_in_cta,
                      lane_in_row):
    """Max of ``val`` over the ``tpr`` threads of this thread's row; every thread gets it."""
    if const_expr(tpr <= WARP):
        return cute.arch.warp_reduction(val, _max, threads_in_group=tpr)
    part = cute.arch.warp_reduction(val, _max)
    if lane_in_row % WARP == 0:
        buf[row_in_cta, lane_in_row // WARP, slot] = part
    cute.arch.barrier()
    total = buf[row_in_cta, 0, slot]
    for w in cutlass.range_constexpr(1, tpr // WARP):
        total = _max(total, buf[row_in_cta, w, slot])
    return total


@cute.jit
def warp_online(m, s, width: cutlass.Constexpr):
    """(max, sum-exp) merged over groups of ``width`` lanes (butterfly: all lanes get it)."""
    mm = cute.arch.warp_reduction(m, _max, threads_in_group=width)
    ml = safe_max(mm)
    ss = cute.arch.warp_reduction(s * exp_sub(m, ml), operator.add,
                                  threads_in_group=width)
    return mm, ss


@cute.jit
def row_allreduce_online(m, s, buf, tpr: cutlass.Constexpr, slot_m: cutlass.Constexpr,
                         slot_s: cutlass.Constexpr, row_in_cta, lane_in_row):
    """Merge the row's per-thread (max, sum-exp) pairs; every thread gets the row's pair (one
    barrier).  Warps merge by shuffles; then every warp loads the warps' pairs (lane w holds
    warp w mod NW's) and merges them with the same butterfly: one exp per thread, and the xor
    butterfly gives every lane of every warp the bit-identical pair (fixed order)."""
    if const_expr(tpr <= WARP):
        return warp_online(m, s, tpr)
    wm, ws = warp_online(m, s, WARP)
    lw = lane_in_row % WARP
    if lw == 0:
        buf[row_in_cta, lane_in_row // WARP, slot_m] = wm
        buf[row_in_cta, lane_in_row // WARP, slot_s] = ws
    cute.arch.barrier()
    NW = tpr // WARP  # a power of two <= 32: every group of NW lanes merges the same pairs
    return warp_online(buf[row_in_cta, lw % NW, slot_m], buf[row_in_cta, lw % NW, slot_s], NW)


@cute.jit
def _publish(val, cbuf, C: cutlass.Constexpr, slot, row_in_cta, lane_in_row):
    """Lanes 0..C-1 store ``val`` into slot [row, slot, rank] of every peer (DSMEM)."""
    rank = cute.arch.block_idx_in_cluster()
    if lane_in_row < C:
        off = (row_in_cta * cute.size(cbuf, mode=[1]) + slot) * C + rank
        addr = Int32(cute.arch.map_dsmem_ptr(cbuf.iterator + off, lane_in_row).toint())
        if const_expr(isinstance(val, Float64)):
            cute.arch.inline_ptx("st.shared::cluster.f64 [{$r0}], {$r1};",
                                 read_only_args=[addr, val])
        else:
            cute.arch.inline_ptx("st.shared::cluster.f32 [{$r0}], {$r1};",
                                 read_only_args=[addr, val])


@cute.jit
def cluster_online(m, s, cbuf, C: cutlass.Constexpr, slot_m: cutlass.Constexpr,
                   slot_s: cutlass.Constexpr, row_in_cta, lane_in_row):
    """Merge one (max, sum-exp) pair per CTA over a cluster of C CTAs (each holding a slice of
    the row): publish to every peer, one cluster barrier, merge in rank order.  Identity for
    C == 1.  ``cbuf`` from ``reduction_base.alloc_cluster_buffer``."""
    if const_expr(C == 1):
        return m, s
    _publish(m, cbuf, C, slot_m, row_in_cta, lane_in_row)
    _publish(s, cbuf, C, slot_s, row_in_cta, lane_in_row)
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()
    tm = cbuf[row_in_cta, slot_m, 0]
    for r in cutlass.range_constexpr(1, C):
        tm = _max(tm, cbuf[row_in_cta, slot_m, r])
    ml = safe_max(tm)
    ts = cbuf[row_in_cta, slot_s, 0] * exp_sub(cbuf[row_in_cta, slot_m, 0], ml)
    for r in cutlass.range_constexpr(1, C):
        ts = ts + cbuf[row_in_cta, slot_s, r] * exp_sub(cbuf[row_in_cta, slot_m, r], ml)
    return tm, ts


@cute.jit
def cluster_max(val, cbuf, C: cutlass.Constexpr, slot: cutlass.Constexpr, row_in_cta,
                lane_in_row):
    """Max of one value per CTA over a cluster (identity for C == 1)."""
    if const_expr(C == 1):
        return val
    _publish(val, cbuf, C, slot, row_in_cta, lane_in_row)
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()
    t = cbuf[row_in_cta, slot, 0]
    for r in cutlass.range_constexpr(1, C):
        t = _max(t, cbuf[row_in_cta, slot, r])
    return t


def neg_inf(ct):
    """Trace-time helper: −inf in compute type ``ct``."""
    return ct(-math.inf)


__all__ = ["LOG2E", "LN2", "exp2_c", "exp_c", "safe_max", "exp_sub", "exp_shift",
           "online_merge", "row_allreduce_max", "warp_online", "row_allreduce_online",
           "cluster_online", "cluster_max", "neg_inf", "Float32"]
