"""Hopper GEMM (sm90a): wgmma + TMA + mbarrier pipeline, warp-specialised, persistent.

    c[i, j] = act(alpha · Σ_p a[i, p] · b[p, j] + beta · c[i, j] + bias[j])

f16 / bf16 inputs, f32 accumulation; c and bias in the input dtype or f32.  fp8 SKUs (a, b in
e4m3 / e5m2, both k-major; c and bias bf16 / f16 / f32) scale the accumulator first:
alpha · sa[i·sas] · sb[j·sbs] · Σ_p a[i, p] · b[p, j].

Kernel parameters (``specs/gemm_sm90``): ``ta`` / ``tb`` are CUtensorMap descriptors (by
value, 128 bytes) of a seen as (m, k) and b seen as (n, k) — 2-D, one 128-byte swizzle row along
the operand's contiguous dim × (tile rows | block k), 128-byte swizzle, zero fill out of bounds;
the host has the driver encode them (``ops/gemm/gemm_sm90_launch.operand_layout``) — followed by
c, bias, the fp8 scale
vectors sa / sb, m, n, k, c strides, bias stride, scale strides, alpha, beta, has_bias,
``epi`` (activation code | vector bit) and the split-K triple ``splits``, ``kps``, ``zc``: the
work units are (tile, split) pairs, split s covers k blocks [s·kps, (s+1)·kps) and writes its
partial product at c + s·zc (1, all k blocks, 0 when not split).

Structure (384 threads, one CTA per SM, persistent over the output tiles), built from the
shared sm90a blocks (``baracuda_dsl/blocks/sm90``: TMA operand loads, the stage pipeline and
wgmma mainloop, the persistent tile scheduler, the shared-memory epilogue):

* warpgroup 0 = producer: its first warp walks the CTA's tiles and, per k block, waits for a
  free stage (mbarrier), issues the two TMA loads completing on the stage's full barrier
  (transaction bytes), and moves on; registers are lowered to 40 (``setmaxnreg``).
* warpgroups 1, 2 = consumers (232 registers): each owns 64 rows × bN columns of the tile,
  waits for a full stage, issues the stage's wgmma instructions asynchronously, keeps one
  wgmma batch in flight and releases the previous stage.  After the k loop the epilogue goes
  through shared memory, while the producer already streams the next tile's stages: per chunk
  of ``EPI_CW`` columns each consumer warpgroup writes its 64 × EPI_CW accumulators to its own
  staging buffer (named barrier per warpgroup), then each thread finishes ``EPI_SEG``
  consecutive columns of one row — fp8 scales, alpha, beta·c, bias, activation — with 16-byte
  vector loads / stores when c (and bias) are row-major and aligned (``epi`` bit), else
  element-wise with any c strides.  The chunk loop is a run-time loop, so the finishing code
  exists once per activation (an earlier version stored straight from the unrolled fragment:
  ~12 µs per 128×256 tile on an H100, a fifth of the run time at k = 4096).
* ``cluster=2`` SKUs: 2 CTAs along m share the b tile; each loads its half with a TMA
  multicast into both CTAs, and consumers release every stage to both producers.

Out-of-bounds rows / columns / k are zero-filled by TMA, so any m, n, k >= 1 work; the tile count
and the grid stride come from m, n and the launch grid (the host picks grid = min(tiles, SMs)).
No ``from __future__ import annotations`` here: ``cute.struct`` reads its annotations as types.
"""


import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass import Float32, Int32, Int64
from cutlass.cute.nvgpu import cpasync, warpgroup

from ....blocks.sm90.epilogue import staged_epilogue
from ....blocks.sm90.pipeline import (make_tma_pipeline, tma_producer, wait_pipeline_init,
                                      wgmma_fragments, wgmma_mainloop)
from ....blocks.sm90.scheduler import PersistentTileScheduler
from ....blocks.sm90.tma import TmaOperandLoads, operand_tma, smem_layout
from ..specs.gemm_sm90 import (ACT_CODES, EPI_CW, EPI_LD, EPI_SEG, EPI_VEC, GROUP_M, THREADS,
                               TILES, Sm90Knobs, block_k, smem_bytes)
from .gemm_simt import TYPES as _TYPES, activation, epilogue_value

#: dtype knob -> DSL element type (the 16-bit and f32 types of gemm_simt plus fp8)
TYPES = dict(_TYPES, e4m3=cutlass.Float8E4M3FN, e5m2=cutlass.Float8E5M2)

PRODUCER_REGS = 40
CONSUMER_REGS = 232


@cute.jit
def _readout(ps: cute.Pointer, row, seg, gr, gc, pc: cute.Pointer, pbias: cute.Pointer,
             psa: cute.Pointer, psb: cute.Pointer, m, n, csm: Int64, csn: Int64, bs: Int64,
             sas: Int64, sbs: Int64, alpha, beta, use_beta, has_bias, vec,
             act: cutlass.Constexpr, OT: cutlass.Constexpr, FP8: cutlass.Constexpr):
    """One thread's EPI_SEG consecutive staged values (chunk row ``row``, segment ``seg``) →
    c[gr, gc .. gc + EPI_SEG): fp8 scales, alpha, beta·c, bias, activation; 16-byte vectors when
    ``vec`` (c / bias aligned, unit column stride) and the segment is inside n, else
    element-wise with any strides.  Rows past m store nothing."""
    if cute.elem_less(gr, m):
        src = cute.make_tensor((ps + (row * EPI_LD + seg * EPI_SEG)).align(16),
                               cute.make_layout(EPI_SEG))
        r = cute.make_rmem_tensor(cute.make_layout(EPI_SEG), Float32)
        cute.autovec_copy(src, r)
        if cutlass.const_expr(FP8):
            s_row = Float32(cute.make_tensor(psa + Int64(gr) * sas, cute.make_layout(1))[0])
            for e in cutlass.range_constexpr(EPI_SEG):
                cc = Int64(cutlass.min(gc + e, n - 1))
                s_col = Float32(cute.make_tensor(psb + cc * sbs, cute.make_layout(1))[0])
                r[e] = r[e] * (s_row * s_col)
        if vec & cute.elem_less(gc + (EPI_SEG - 1), n):
            coff = Int64(gr) * csm + Int64(gc)
            cv = cute.make_tensor((pc + coff).align(16), cute.make_layout(EPI_SEG))
            o = cute.make_rmem_tensor(cute.make_layout(EPI_SEG), OT)
            for e in cutlass.range_constexpr(EPI_SEG):
                r[e] = alpha * r[e]
            if use_beta:
                cute.autovec_copy(cv, o)
                for e in cutlass.range_constexpr(EPI_SEG):
                    r[e] = r[e] + beta * Float32(o[e])
            if has_bias:
                bv = cute.make_tensor((pbias + Int64(gc)).align(16), cute.make_layout(EPI_SEG))
                cute.autovec_copy(bv, o)
                for e in cutlass.range_constexpr(EPI_SEG):
                    r[e] = r[e] + Float32(o[e])
            for e in cutlass.range_constexpr(EPI_SEG):
                o[e] = OT(activation(r[e], act))
            cute.autovec_copy(o, cv)
        else:
            for e in cutlass.range_constexpr(EPI_SEG):
                if cute.elem_less(gc + e, n):
                    epilogue_value(r[e], pc, pbias, Int64(gr) * csm + Int64(gc + e) * csn,
                                   Int64(gc + e) * bs, alpha, beta, use_beta, has_bias, act, OT)


def build(knobs: Sm90Knobs):
    T = TYPES[knobs.dtype]
    TB = TYPES[knobs.b_dtype]
    FP8 = T.width == 8
    OT = TYPES[knobs.out]
    a_k = knobs.a_major == "k"
    b_k = knobs.b_major == "k"
    bM, bN, _, ST = TILES[knobs.tile]
    bK = block_k(knobs.tile, knobs.dtype)
    NCH = bN // EPI_CW                    # epilogue chunks per warpgroup tile
    CL = knobs.cluster                    # CTAs per cluster along m (b multicast over them)
    SMEM = smem_bytes(knobs.tile)
    STAGE_BYTES = (bM + bN) * bK * (T.width // 8)
    A_MODE = warpgroup.OperandMajorMode.K if a_k else warpgroup.OperandMajorMode.MN
    B_MODE = warpgroup.OperandMajorMode.K if b_k else warpgroup.OperandMajorMode.MN
    ACTS = tuple(ACT_CODES.items())

    @cute.struct
    class Storage:
        bars: cute.struct.MemRange[Int64, ST * 2]
        sA: cute.struct.Align[cute.struct.MemRange[T, bM * bK * ST], 1024]
        sB: cute.struct.Align[cute.struct.MemRange[TB, bN * bK * ST], 1024]
        sC: cute.struct.Align[cute.struct.MemRange[Float32, 2 * 64 * EPI_LD], 16]

    @cute.jit
    def finish(q, tm, tn, wgc, erow, eseg, ps_wg, pc, sp, zc, pbias, psa, psb, m, n, csm, csn,
               bs, sas, sbs, alpha, beta, use_beta, hb, vec, act):
        """The staged epilogue's hook: this thread's EPI_SEG columns of chunk ``q`` → c (or the
        split's partial product), through the activation the run-time ``act`` code names."""
        gr = tm * bM + wgc * 64 + erow
        gc = tn * bN + q * EPI_CW + eseg * EPI_SEG
        for ai in cutlass.range_constexpr(len(ACTS)):
            if act == ACTS[ai][1]:
                _readout(ps_wg, erow, eseg, gr, gc, pc + Int64(sp) * zc, pbias, psa, psb, m, n,
                         csm, csn, bs, sas, sbs, alpha, beta, use_beta, hb, vec, ACTS[ai][0],
                         OT, FP8)

    @cute.kernel
    def kernel(tma_a: cute.CopyAtom, tma_b: cute.CopyAtom, pc: cute.Pointer,
               pbias: cute.Pointer, psa: cute.Pointer, psb: cute.Pointer, m: Int32, n: Int32,
               k: Int32, csm: Int64, csn: Int64, bs: Int64, sas: Int64, sbs: Int64,
               alpha: Float32, beta: Float32, has_bias: Int32, epi: Int32, splits: Int32,
               kps: Int32, zc: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        act = epi & 3
        vec = (epi & EPI_VEC) != 0
        bid, _, _ = cute.arch.block_idx()
        nblk, _, _ = cute.arch.grid_dim()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        wg = warp // 4

        if warp == 0:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)

        smem = cutlass.utils.SmemAllocator()
        st = smem.allocate(Storage)
        lsa = smem_layout(T, a_k, bM, bK, ST)
        lsb = smem_layout(TB, b_k, bN, bK, ST)
        sA = st.sA.get_tensor(lsa.outer, swizzle=lsa.inner)
        sB = st.sB.get_tensor(lsb.outer, swizzle=lsb.inner)

        # consumers release a stage to every CTA that multicasts into it (CL of them)
        pipe = make_tma_pipeline(st.bars.data_ptr(), ST, STAGE_BYTES, CL)

        # ---- TMA views: tiles of (bM | bN) × bK over the operand coordinate tensors
        rank = Int32(bid) % CL
        loads = TmaOperandLoads(tma_a, tma_b, sA, sB, m, n, k, a_k, b_k, bM, bN, bK, CL, rank)
        sched = PersistentTileScheduler(m, n, k, bid, nblk, rank, tile_m=bM, tile_n=bN, bk=bK,
                                        cluster=CL, group_m=GROUP_M)
        wait_pipeline_init(CL)

        if wg == 0:
            cute.arch.setmaxregister_decrease(PRODUCER_REGS)
            if warp == 0:
                tma_producer(pipe, loads, sched, splits, kps, ST)
        else:
            cute.arch.setmaxregister_increase(CONSUMER_REGS)
            tiled_mma = sm90_utils.make_trivial_tiled_mma(T, TB, A_MODE, B_MODE, Float32,
                                                          (2, 1, 1), tiler_mn=(64, bN))
            ctid = Int32(tidx) - 128
            tCrA, tCrB, acc, NKB = wgmma_fragments(tiled_mma, ctid, sA, sB, (bM, bN))
            rstate = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, ST)
            fstate = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, ST)
            use_beta = beta != Float32(0.0)
            hb = has_bias != 0
            wgc = wg - 1                                 # consumer warpgroup 0 / 1
            wtid = ctid % 128
            lane = wtid % 32
            wq = wtid // 32
            erow = wtid // (EPI_CW // EPI_SEG)           # staged row this thread finishes
            eseg = wtid % (EPI_CW // EPI_SEG)
            ps_wg = st.sC.data_ptr() + wgc * (64 * EPI_LD)
            for u in cutlass.range(sched.cid, sched.ntiles * splits, sched.ncl):
                t, sp = sched.unit(u)                    # sp: the k split of this work unit
                nk = cutlass.min(sched.ktiles - sp * kps, kps)
                tm, tn = sched.tile(t)                   # tm may be >= tiles_m: stores predicated
                rstate, fstate = wgmma_mainloop(tiled_mma, pipe, acc, tCrA, tCrB, rstate,
                                                fstate, nk, NKB)
                # ---- epilogue through shared memory, EPI_CW columns per chunk
                staged_epilogue(acc, ps_wg, lane, wq, wgc, NCH, EPI_CW, EPI_LD, finish,
                                (tm, tn, wgc, erow, eseg, ps_wg, pc, sp, zc, pbias, psa, psb, m,
                                 n, csm, csn, bs, sas, sbs, alpha, beta, use_beta, hb, vec,
                                 act))

    @cute.jit
    def launch(pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer, pbias: cute.Pointer,
               psa: cute.Pointer, psb: cute.Pointer, m: Int32, n: Int32, k: Int32, lda: Int64,
               ldb: Int64, csm: Int64, csn: Int64, bs: Int64, sas: Int64, sbs: Int64,
               alpha: Float32, beta: Float32, has_bias: Int32, epi: Int32, splits: Int32,
               kps: Int32, zc: Int64, grid: Int32, stream):
        lda = cute.assume(lda, divby=128 // T.width)
        ldb = cute.assume(ldb, divby=128 // TB.width)
        tma_a, _ = operand_tma(T, a_k, pa, m, k, lda, bM, bK, ST)
        tma_b, _ = operand_tma(TB, b_k, pb, n, k, ldb, bN, bK, ST, CL)
        if cutlass.const_expr(CL == 1):
            kernel(tma_a, tma_b, pc, pbias, psa, psb, m, n, k, csm, csn, bs, sas, sbs, alpha,
                   beta, has_bias, epi, splits, kps, zc).launch(
                       grid=[grid, 1, 1], block=[THREADS, 1, 1], smem=SMEM,
                       min_blocks_per_mp=1, stream=stream)
        else:
            kernel(tma_a, tma_b, pc, pbias, psa, psb, m, n, k, csm, csn, bs, sas, sbs, alpha,
                   beta, has_bias, epi, splits, kps, zc).launch(
                       grid=[grid, 1, 1], block=[THREADS, 1, 1], cluster=[CL, 1, 1],
                       smem=SMEM, min_blocks_per_mp=1, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t, align):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=align)

    args = [ptr(T, 16), ptr(TB, 16), ptr(OT, OT.width // 8), ptr(OT, OT.width // 8),
            ptr(Float32, 4), ptr(Float32, 4), Int32(1), Int32(1), Int32(1), Int64(16),
            Int64(16), Int64(8), Int64(8), Int64(8), Int64(0), Int64(0), Float32(1.0),
            Float32(0.0), Int32(0), Int32(0), Int32(1), Int32(1), Int64(0), Int32(CL),
            make_fake_stream()]
    return launch, args
