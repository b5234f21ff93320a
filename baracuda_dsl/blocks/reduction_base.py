"""Shared reduction pieces for row kernels (norms, softmax, cross-entropy, row losses, ...).

Threads of one row form ``tpr`` consecutive lanes (a sub-warp group when ``tpr <= 32``, whole warps
otherwise).  :func:`row_allreduce_sum` / :func:`row_allreduce_max` reduce a per-thread partial
over those threads — warp shuffles, then one shared-memory slot per warp when the row spans
several warps — and return the total to every thread of the row.  Each call uses its own
``slot`` of the buffer, so consecutive reductions need no extra barrier between them.

Thread-block clusters (sm90a): a row split over C CTAs exchanges one value per CTA through
distributed shared memory — :func:`cluster_exchange` / :func:`cluster_exchange2` publish to every
peer and pass one cluster barrier, after which ``cbuf[row, slot, rank]`` holds every CTA's value;
:func:`cluster_sum` / :func:`cluster_sum2` add them in rank order (:func:`cluster_total2` reads
the sums of values already exchanged).  The reduction order is fixed: results are bit-identical
from run to run, and in every CTA of a cluster.
"""

from __future__ import annotations

import operator

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Float64, Int32, Int64, const_expr

WARP = 32


def compute_type(dtype_short: str):
    """f64 rows compute in f64; every other type computes and accumulates in f32."""
    return Float64 if dtype_short == "f64" else Float32


def element_type(dtype_short: str):
    return {"f32": cutlass.Float32, "f16": cutlass.Float16, "bf16": cutlass.BFloat16,
            "f64": cutlass.Float64}[dtype_short]


def row_thread(tpr: int, rows: int, cluster=None):
    """Trace-time helper: (lane in its row, row in the CTA, global row) of this thread, with
    ``tpr`` threads a row and ``rows`` rows a CTA; ``cluster``: CTAs per row (a cluster of CTAs
    shares one row; None for kernels without clusters)."""
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    lane = tidx % tpr
    rin = tidx // tpr
    row = (bidx if cluster is None else bidx // cluster) * rows + rin
    return lane, rin, row


def alloc_reduction_buffer(ct, tpr: int, rows: int, slots: int):
    """Shared buffer (rows, warps_per_row, slots) of the compute type, or None for tpr <= 32."""
    if const_expr(tpr <= WARP):
        return None
    smem = cutlass.memory.SmemAllocator()
    return smem.allocate_tensor(ct, cute.make_layout((rows, tpr // WARP, slots)), byte_alignment=16)


def alloc_cluster_buffer(ct, rows: int, slots: int, C: int):
    """Shared buffer (rows, slots, C) receiving each cluster peer's partial, or None for C == 1.
    Also synchronises the cluster once, so peers' shared memory is live before remote stores."""
    if const_expr(C == 1):
        return None
    smem = cutlass.memory.SmemAllocator()
    buf = smem.allocate_tensor(ct, cute.make_layout((rows, slots, C), stride=(slots * C, C, 1)),
                               byte_alignment=16)
    cute.arch.cluster_arrive_relaxed()
    cute.arch.cluster_wait()
    return buf


def cluster_rank(C: int):
    """This CTA's rank in its cluster (0 without clusters)."""
    if const_expr(C == 1):
        return Int32(0)
    return Int32(cute.arch.block_idx_in_cluster())


@cute.jit
def cluster_publish(val, cbuf, C: cutlass.Constexpr, slot, row_in_cta, lane_in_row):
    """Lanes 0..C-1 of the row store this CTA's ``val`` into slot [row, slot, rank] of every
    cluster peer's buffer through distributed shared memory (visible after a cluster barrier)."""
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
def cluster_exchange(val, cbuf, C: cutlass.Constexpr, slot, row_in_cta, lane_in_row):
    """Publish ``val`` to slot ``slot`` of every cluster peer, then one cluster barrier: on return
    ``cbuf[row, slot, r]`` holds CTA r's value for every r < C."""
    cluster_publish(val, cbuf, C, slot, row_in_cta, lane_in_row)
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()


@cute.jit
def cluster_exchange2(a, b, cbuf, C: cutlass.Constexpr, slot_a, slot_b, row_in_cta,
                      lane_in_row):
    """:func:`cluster_exchange` of two values (slots ``slot_a`` / ``slot_b``), one barrier."""
    cluster_publish(a, cbuf, C, slot_a, row_in_cta, lane_in_row)
    cluster_publish(b, cbuf, C, slot_b, row_in_cta, lane_in_row)
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()


@cute.jit
def cluster_total2(cbuf, C: cutlass.Constexpr, slot_a, slot_b, row_in_cta):
    """(Σ_r cbuf[row, slot_a, r], Σ_r cbuf[row, slot_b, r]) in rank order, for values already
    exchanged."""
    ta = cbuf[row_in_cta, slot_a, 0]
    tb = cbuf[row_in_cta, slot_b, 0]
    for r in cutlass.range_constexpr(1, C):
        ta = ta + cbuf[row_in_cta, slot_a, r]
        tb = tb + cbuf[row_in_cta, slot_b, r]
    return ta, tb


@cute.jit
def cluster_sum(val, cbuf, C: cutlass.Constexpr, slot, row_in_cta, lane_in_row):
    """Sum a row total over the C CTAs of a cluster (each holds a slice of the row): publish it
    to every peer, a cluster barrier makes the stores visible, and every CTA adds the C values in
    rank order, so all get the bit-identical total.  Identity for C == 1."""
    if const_expr(C == 1):
        return val
    cluster_exchange(val, cbuf, C, slot, row_in_cta, lane_in_row)
    total = cbuf[row_in_cta, slot, 0]
    for r in cutlass.range_constexpr(1, C):
        total = total + cbuf[row_in_cta, slot, r]
    return total


@cute.jit
def cluster_sum2(a, b, cbuf, C: cutlass.Constexpr, slot_a, slot_b, row_in_cta, lane_in_row):
    """Two row totals over the C CTAs of a cluster through one cluster barrier (rank order, as
    :func:`cluster_sum`); identity for C == 1."""
    if const_expr(C == 1):
        return a, b
    cluster_exchange2(a, b, cbuf, C, slot_a, slot_b, row_in_cta, lane_in_row)
    return cluster_total2(cbuf, C, slot_a, slot_b, row_in_cta)


@cute.jit
def row_allreduce_sum(val, buf, tpr: cutlass.Constexpr, slot: cutlass.Constexpr,
                      row_in_cta, lane_in_row):
    """Sum ``val`` over the ``tpr`` threads of this thread's row; every thread gets the total."""
    if const_expr(tpr <= WARP):
        return cute.arch.warp_reduction(val, operator.add, threads_in_group=tpr)
    part = cute.arch.warp_reduction(val, operator.add)
    warp_in_row = lane_in_row // WARP
    lane = lane_in_row % WARP
    if lane == 0:
        buf[row_in_cta, warp_in_row, slot] = part
    cute.arch.barrier()
    total = buf[row_in_cta, 0, slot]
    for w in cutlass.range_constexpr(1, tpr // WARP):
        total = total + buf[row_in_cta, w, slot]
    return total


@cute.jit
def row_allreduce_max(val, buf, tpr: cutlass.Constexpr, slot: cutlass.Constexpr, row_in_cta,
                      lane_in_row):
    """Max of ``val`` over the ``tpr`` threads of this thread's row; every thread gets it
    (``cutlass.max``: NaN-propagating)."""
    if const_expr(tpr <= WARP):
        return cute.arch.warp_reduction(val, cutlass.max, threads_in_group=tpr)
    part = cute.arch.warp_reduction(val, cutlass.max)
    if lane_in_row % WARP == 0:
        buf[row_in_cta, lane_in_row // WARP, slot] = part
    cute.arch.barrier()
    total = buf[row_in_cta, 0, slot]
    for w in cutlass.range_constexpr(1, tpr // WARP):
        total = cutlass.max(total, buf[row_in_cta, w, slot])
    return total


@cute.jit
def row_allreduce_sum2(a, b, buf, tpr: cutlass.Constexpr, slot_a, slot_b, row_in_cta,
                       lane_in_row):
    """Two row sums through a single barrier (slots ``slot_a``/``slot_b``); returns (Σa, Σb)."""
    if const_expr(tpr <= WARP):
        return (cute.arch.warp_reduction(a, operator.add, threads_in_group=tpr),
                cute.arch.warp_reduction(b, operator.add, threads_in_group=tpr))
    pa = cute.arch.warp_reduction(a, operator.add)
    pb = cute.arch.warp_reduction(b, operator.add)
    warp_in_row = lane_in_row // WARP
    if lane_in_row % WARP == 0:
        buf[row_in_cta, warp_in_row, slot_a] = pa
        buf[row_in_cta, warp_in_row, slot_b] = pb
    cute.arch.barrier()
    ta = buf[row_in_cta, 0, slot_a]
    tb = buf[row_in_cta, 0, slot_b]
    for w in cutlass.range_constexpr(1, tpr // WARP):
        ta = ta + buf[row_in_cta, w, slot_a]
        tb = tb + buf[row_in_cta, w, slot_b]
    return ta, tb


@cute.jit
def row_offset(row, s1, s2, st0, st1, st2):
    """Element offset of row ``row`` when rows are laid out as three strided groups of outer dims
    with extents (M / (s1*s2), s1, s2) and strides (st0, st1, st2)."""
    r = Int64(row)
    i2 = r % Int64(s2)
    t = r // Int64(s2)
    i1 = t % Int64(s1)
    i0 = t // Int64(s1)
    return i0 * st0 + i1 * st1 + i2 * st2


@cute.jit
def load_slice(g, frag, vb, lane, tpr: cutlass.Constexpr, chunks: cutlass.Constexpr,
               vec: cutlass.Constexpr, n, valid, fill: cutlass.Constexpr = 0.0):
    """Register mode: frag[:, c] = g[:, vb + c·tpr + lane] for c < chunks — the vectors this
    thread owns of its CTA's slice of the row (``vb``: the slice's first vector) — every load
    issued at once; ``fill`` past the row's ``n`` elements or when the row is not ``valid``."""
    for c in cutlass.range_constexpr(chunks):
        v = vb + c * tpr + lane
        if valid and v * vec < n:
            cute.autovec_copy(g[None, v], frag[None, c])
        else:
            frag[None, c].fill(fill)


@cute.jit
def load_batch(g, frag, v0, tpr: cutlass.Constexpr, U: cutlass.Constexpr, nvec,
               fill: cutlass.Constexpr = 0.0):
    """frag[:, u] = g[:, v0 + u·tpr] for u < U: U independent loads in flight; vectors past
    ``nvec`` are set to ``fill`` (left as they are with ``fill=None``)."""
    for u in cutlass.range_constexpr(U):
        v = v0 + u * tpr
        if const_expr(fill is None):
            if v < nvec:
                cute.autovec_copy(g[None, v], frag[None, u])
        else:
            if v < nvec:
                cute.autovec_copy(g[None, v], frag[None, u])
            else:
                frag[None, u].fill(fill)


@cute.jit
def store_batch(frag, g, v0, tpr: cutlass.Constexpr, U: cutlass.Constexpr, nvec):
    """g[:, v0 + u·tpr] = frag[:, u] for u < U, skipping vectors past ``nvec``."""
    for u in cutlass.range_constexpr(U):
        v = v0 + u * tpr
        if v < nvec:
            cute.autovec_copy(frag[None, u], g[None, v])


def row_tensors(rr, s1, s2, layout, vec: int, *operands):
    """Trace-time helper: for each (pointer, stride0, stride1, stride2) operand, the tensor of
    row ``rr`` with ``layout`` (its offset asserted divisible by ``vec`` for vector accesses)."""
    return [cute.make_tensor(p + cute.assume(row_offset(rr, s1, s2, a, b, c), divby=vec), layout)
            for p, a, b, c in operands]


def load_scalar(ptr, index):
    """Trace-time helper: ``ptr[index]`` for a scalar in global memory."""
    return cute.make_tensor(ptr + Int64(index), cute.make_layout(1))[0]

