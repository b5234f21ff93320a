"""The shared-memory epilogue of the sm90a wgmma kernels: a consumer warpgroup's 64 × N f32
accumulator tile leaves through shared memory in chunks of ``chunk`` columns, so that every
thread then finishes consecutive columns of one row (coalesced, 16-byte vector global accesses)
instead of the scattered fragment positions; the finishing math (scales, alpha, beta · c, bias,
activation, the store) is the kernel's hook.  The chunk loop is a run-time loop, so the
finishing code exists once, not once per fragment element."""

import cutlass
import cutlass.cute as cute


@cute.jit
def stage_chunk(acc, ps: cute.Pointer, lane, wq, q: cutlass.Constexpr, chunk: cutlass.Constexpr,
                ld: cutlass.Constexpr):
    """Write columns [q·chunk, (q+1)·chunk) of this thread's wgmma accumulator fragment into
    its warpgroup's (64, ld) f32 staging buffer at ``ps``.  Fragment value (v0, v1, v2) =
    acc[v0 + 2·v1 + 4·v2] sits at row 16·warp + lane/4 + 8·v1, column 8·v2 + 2·(lane%4) + v0
    of the warpgroup's 64 × N tile (the m64nNk16 f32 accumulator layout); ``wq`` = the warp in
    the warpgroup."""
    r0 = wq * 16 + lane // 4
    c0 = 2 * (lane % 4)
    for v2 in cutlass.range_constexpr(q * chunk // 8, (q + 1) * chunk // 8):
        for v1 in cutlass.range_constexpr(2):
            off = (r0 + 8 * v1) * ld + (v2 * 8 - q * chunk) + c0
            dst = cute.make_tensor(ps + off, cute.make_layout(2))
            dst[0] = acc[4 * v2 + 2 * v1]
            dst[1] = acc[4 * v2 + 2 * v1 + 1]


@cute.jit
def staged_epilogue(acc, ps, lane, wq, wgc, nch: cutlass.Constexpr, chunk: cutlass.Constexpr,
                    ld: cutlass.Constexpr, finish, finish_args):
    """For each of the ``nch`` chunks q of ``chunk`` columns: the warpgroup (consumer index
    ``wgc``, named barrier 1 + wgc over its 128 threads) stages its accumulators at ``ps``
    (:func:`stage_chunk`), then every thread calls ``finish(q, *finish_args)`` to finish its
    part of the staged chunk (e.g. one row, ``chunk`` / 128 · 64 consecutive columns)."""
    for q in cutlass.range(nch):
        cute.arch.barrier(barrier_id=1 + wgc, number_of_threads=128)
        for qq in cutlass.range_constexpr(nch):
            if q == qq:
                stage_chunk(acc, ps, lane, wq, qq, chunk, ld)
        cute.arch.barrier(barrier_id=1 + wgc, number_of_threads=128)
        finish(q, *finish_args)
