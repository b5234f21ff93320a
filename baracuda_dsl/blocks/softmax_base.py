"""Exponential and online-softmax helpers of the row kernels (softmax, cross-entropy; others may
import them; row sums / maxima and the cluster exchange are in :mod:`reduction_base`).

Row threads are laid out as in :mod:`reduction_base` (``tpr`` consecutive lanes per row, ``rows``
rows per CTA, a shared buffer ``buf[row, warp, slot]`` from ``alloc_reduction_buffer``).

* :func:`fmax_c` — max in the compute type (one FMNMX for f32, NaN-propagating for f64).
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
* :func:`exp_sub` — exp(x − m) as exp2((x − m)·log2 e) (all helpers here use it).
* :func:`exp_c` — exp in the compute type (ex2.approx for f32, libdevice for f64).

Reduction order is fixed: results are bit-identical from run to run.
"""

from __future__ import annotations

import math
import operator

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Float64, const_expr

from .reduction_base import WARP, cluster_exchange, cluster_exchange2

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


def _max(a, b):
    return cutlass.max(a, b)


@cute.jit
def fmax_c(a, b):
    """max in the compute type: one FMNMX for f32 (drops a NaN operand: NaN elements still
    reach every output through the sum of exponentials), the NaN-propagating max for f64."""
    if const_expr(isinstance(a, Float64)):
        return cutlass.max(a, b)
    return cute.arch.fmax(a, b)


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
def online_merge(m1, s1, m2, s2):
    """Merge two (max, sum-exp) pairs."""
    m = _max(m1, m2)
    ml = safe_max(m)
    s = s1 * exp_sub(m1, ml) + s2 * exp_sub(m2, ml)
    return m, s


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
def cluster_online(m, s, cbuf, C: cutlass.Constexpr, slot_m: cutlass.Constexpr,
                   slot_s: cutlass.Constexpr, row_in_cta, lane_in_row):
    """Merge one (max, sum-exp) pair per CTA over a cluster of C CTAs (each holding a slice of
    the row): publish to every peer, one cluster barrier, merge in rank order.  Identity for
    C == 1.  ``cbuf`` from ``reduction_base.alloc_cluster_buffer``."""
    if const_expr(C == 1):
        return m, s
    cluster_exchange2(m, s, cbuf, C, slot_m, slot_s, row_in_cta, lane_in_row)
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
    cluster_exchange(val, cbuf, C, slot, row_in_cta, lane_in_row)
    t = cbuf[row_in_cta, slot, 0]
    for r in cutlass.range_constexpr(1, C):
        t = _max(t, cbuf[row_in_cta, slot, r])
    return t


def neg_inf(ct):
    """Trace-time helper: −inf in compute type ``ct``."""
    return ct(-math.inf)


__all__ = ["LOG2E", "LN2", "WARP", "fmax_c", "exp2_c", "exp_c", "safe_max", "exp_sub",
           "online_merge", "warp_online", "row_allreduce_online", "cluster_online",
           "cluster_max", "neg_inf", "Float32"]
