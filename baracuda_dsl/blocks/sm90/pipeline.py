"""The TMA → mbarrier stage pipeline of the warp-specialised sm90a kernels and the wgmma mainloop
that consumes it.

One producer warp fills ``stages`` shared-memory stages with TMA loads, each completing on the
stage's *full* mbarrier by transaction bytes; the consumer warpgroups wait for a full stage, issue
its wgmma instructions asynchronously, keep one wgmma batch in flight and hand the previous
stage back on its *empty* mbarrier (to every CTA that multicasts into it).  Work units come from
:class:`~baracuda_dsl.blocks.sm90.scheduler.PersistentTileScheduler`; producer and consumers walk
the same units in the same order, so the stage ring stays in step across units."""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import warpgroup


def make_tma_pipeline(barriers, stages: int, stage_bytes: int, cluster: int,
                      consumer_warps: int = 8):
    """The ``PipelineTmaAsync`` over ``stages`` stages of ``stage_bytes`` bytes (the mbarrier
    pairs at ``barriers``: 2 × stages Int64 in shared memory): one producer thread, the
    ``consumer_warps`` warps of the consumers releasing each stage to the ``cluster`` CTAs that
    multicast into it.  Initialisation is deferred: call :func:`wait_pipeline_init` before the
    first use."""
    pipe = pipeline.PipelineTmaAsync.create(
        barrier_storage=barriers, num_stages=stages,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread,
                                                 consumer_warps * cluster),
        tx_count=stage_bytes, cta_layout_vmnk=cute.make_layout((1, cluster, 1, 1)),
        defer_sync=True)
    pipeline.pipeline_init_arrive(cluster_shape_mn=(cluster, 1), is_relaxed=True)
    return pipe


def wait_pipeline_init(cluster: int) -> None:
    """Wait until every CTA of the cluster has initialised its pipeline barriers."""
    pipeline.pipeline_init_wait(cluster_shape_mn=(cluster, 1))


@cute.jit
def tma_producer(pipe, loads, sched, splits, kps, stages: cutlass.Constexpr):
    """The producer warp's whole loop: for each work unit of ``sched`` (``splits`` k splits of
    ``kps`` k blocks), per k block wait for a free stage, issue ``loads.load_stage`` (a
    :class:`~baracuda_dsl.blocks.sm90.tma.TmaOperandLoads`) on its full barrier and commit;
    then drain the pipeline (``producer_tail``)."""
    state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
    for u in cutlass.range(sched.cid, sched.ntiles * splits, sched.ncl):
        t, sp = sched.unit(u)
        kb0 = sp * kps
        tm, tn = sched.tile(t)
        for kt in cutlass.range(kb0, cutlass.min(sched.ktiles, kb0 + kps)):
            pipe.producer_acquire(state)
            bar = pipe.producer_get_barrier(state)
            loads.load_stage(tm, tn, kt, state.index, bar)
            pipe.producer_commit(state)
            state.advance()
    pipe.producer_tail(state)


def wgmma_fragments(tiled_mma, thread, sA, sB, tile_mn):
    """(A fragment, B fragment, f32 accumulator, k blocks per stage) of consumer thread
    ``thread`` (0-based among the consumers) of ``tiled_mma`` over the staged shared operands:
    the wgmma descriptors of every stage and the thread's accumulator of the tile_mn tile."""
    thr = tiled_mma.get_slice(thread)
    tCsA = thr.partition_A(sA)
    tCsB = thr.partition_B(sB)
    tCrA = tiled_mma.make_fragment_A(tCsA)
    tCrB = tiled_mma.make_fragment_B(tCsB)
    acc = cute.make_rmem_tensor(thr.partition_shape_C(tile_mn), cutlass.Float32)
    return tCrA, tCrB, acc, cute.size(tCrA, mode=[2])


@cute.jit
def wgmma_mainloop(tiled_mma, pipe, acc, tCrA, tCrB, rstate, fstate, nk,
                   nkb: cutlass.Constexpr):
    """acc = Σ over ``nk`` stages of the pipeline of their wgmma products (``nkb`` k blocks per
    stage), one batch in flight: wait for a full stage, issue its wgmmas, commit, and release
    the stage before it once its batch has retired.  ``rstate`` / ``fstate`` (the next stage to
    read / to free) carry over from unit to unit: returns them advanced."""
    acc.fill(0.0)
    tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
    warpgroup.fence()
    for kt in cutlass.range(nk):
        pipe.consumer_wait(rstate)
        for kb in cutlass.range_constexpr(nkb):
            crd = (None, None, kb, rstate.index)
            cute.gemm(tiled_mma, acc, tCrA[crd], tCrB[crd], acc)
        warpgroup.commit_group()
        rstate.advance()
        if kt > 0:
            # the previous stage's wgmma batch is done: hand its buffers back
            warpgroup.wait_group(1)
            pipe.consumer_release(fstate)
            fstate.advance()
    warpgroup.wait_group(0)
    if nk > 0:
        pipe.consumer_release(fstate)
        fstate.advance()
    return rstate, fstate
