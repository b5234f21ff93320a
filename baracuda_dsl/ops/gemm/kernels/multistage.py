"""The ``cp.async`` multistage global → shared pipeline of the ``mma.sync`` GEMMs (``gemm_mma``;
``gemm_tf32`` and through it ``gemm_int8`` / ``gemm_fp8``): the grouped rasterisation of the 1-D
grid, the operand tile views, the predicated 16-byte ``cp.async`` copies into ``stages`` shared
buffers and the prologue that fills all but one of them.  The kernels keep their own shared
layouts (swizzled for ``ldmatrix`` / padded for element-wise fragment loads) and main loops.

An operand is seen as (rows, k) — a (m, k), b (n, k) — with unit stride along k (``kmajor``,
leading dim = row stride) or along rows (leading dim = column stride); the contiguous extent and
the leading dim are multiples of the ``vec``-element 16-byte vector, so a vector is either fully
inside or fully outside the operand.  The k residue is handled by shifting the k range so that
the *first* k tile is the partial one (its k < 0 part predicated off)."""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Boolean, Int32

from ....blocks.sm90.invariant import LoopInvariant
from ..specs.gemm import GROUP_M


def raster(bid, m, n, tile_m: int, tile_n: int):
    """(tile row, tile column) of CTA ``bid`` of a 1-D grid over (m, n) in tile_m × tile_n
    tiles: groups of GROUP_M tile rows down m, then along n (``specs.gemm.raster`` is the
    pure-Python reference)."""
    tiles_m = (m + tile_m - 1) // tile_m
    tiles_n = (n + tile_n - 1) // tile_n
    per_group = GROUP_M * tiles_n
    g = Int32(bid) // per_group
    first_m = g * GROUP_M
    gsz = cutlass.min(tiles_m - first_m, GROUP_M)
    r = Int32(bid) % per_group
    return first_m + r % gsz, r // gsz


def operand_tiles(pa, pb, m, n, k, lda, ldb, tm, tn, *, a_kmajor: bool, b_kmajor: bool,
                  tile_m: int, tile_n: int, tile_k: int, vec: int):
    """(gA, gB, cA, cB, ktiles): the CTA's (tile_m | tile_n, tile_k, ktiles) views of a and b
    (16-byte aligned) and their (m | n, k) coordinate tensors, k shifted so that the first of
    the ``ktiles`` k tiles is the partial one."""
    lda = cute.assume(lda, divby=vec)
    ldb = cute.assume(ldb, divby=vec)
    if a_kmajor:
        la = cute.make_layout((m, k), stride=(lda, 1))
    else:
        la = cute.make_layout((m, k), stride=(1, lda))
    if b_kmajor:
        lb = cute.make_layout((n, k), stride=(ldb, 1))
    else:
        lb = cute.make_layout((n, k), stride=(1, ldb))
    mA = cute.make_tensor(pa, la)
    mB = cute.make_tensor(pb, lb)
    gA = cute.local_tile(mA, (tile_m, tile_k), (tm, None))          # (bM, bK, ktiles)
    gB = cute.local_tile(mB, (tile_n, tile_k), (tn, None))          # (bN, bK, ktiles)
    cA = cute.local_tile(cute.make_identity_tensor((m, k)), (tile_m, tile_k), (tm, None))
    cB = cute.local_tile(cute.make_identity_tensor((n, k)), (tile_n, tile_k), (tn, None))
    ktiles = cute.size(gA, mode=[2])
    # shift k so that the first tile is the partial one (residue <= 0)
    res = k - Int32(tile_k) * ktiles
    gA = cute.domain_offset((0, res, 0), gA)
    gB = cute.domain_offset((0, res, 0), gB)
    gA = cute.make_tensor(gA.iterator.align(16), gA.layout)
    gB = cute.make_tensor(gB.iterator.align(16), gB.layout)
    cA = cute.domain_offset((0, res, 0), cA)
    cB = cute.domain_offset((0, res, 0), cB)
    return gA, gB, cA, cB, ktiles


def g2s_tiled_copy(atom, kmajor: bool, mn: int, bk: int, threads: int, vec: int):
    """Thread/value layout of the cp.async tiled copy of an (mn, bk) operand tile in vectors of
    ``vec`` elements along its contiguous dim."""
    if kmajor:
        tk = bk // vec
        thr = cute.make_layout((threads // tk, tk), stride=(tk, 1))
        val = cute.make_layout((1, vec))
    else:
        tm = mn // vec
        thr = cute.make_layout((tm, threads // tm), stride=(1, tm))
        val = cute.make_layout((vec, 1))
    return cute.make_tiled_copy_tv(atom, thr, val)


class CpAsyncLoads(LoopInvariant):
    """Thread ``tidx``'s predicated 16-byte ``cp.async`` copies of a's and b's k tiles (views of
    :func:`operand_tiles`) into the staged shared buffers ``sA`` / ``sB`` (element type ``T``).
    Rows past m / n are predicated off for good (their shared slots stay zero: the buffers are
    zeroed here, followed by a CTA barrier).  :meth:`load_stage` copies one k tile into one
    stage; :func:`prologue` fills the first stages."""

    def __init__(self, T, sA, sB, gA, gB, cA, cB, m, n, tidx, *, a_kmajor: bool,
                 b_kmajor: bool, tile_m: int, tile_n: int, tile_k: int, threads: int,
                 vec: int):
        g2s = cute.make_copy_atom(
            cute.nvgpu.cpasync.CopyG2SOp(cache_mode=cute.nvgpu.LoadCacheMode.GLOBAL), T,
            num_bits_per_copy=128)
        self.cpA = g2s_tiled_copy(g2s, a_kmajor, tile_m, tile_k, threads, vec)
        self.cpB = g2s_tiled_copy(g2s, b_kmajor, tile_n, tile_k, threads, vec)
        thA = self.cpA.get_slice(tidx)
        thB = self.cpB.get_slice(tidx)
        self.gA = thA.partition_S(gA)
        self.sA = thA.partition_D(sA)
        self.cA = thA.partition_S(cA)
        self.gB = thB.partition_S(gB)
        self.sB = thB.partition_D(sB)
        self.cB = thB.partition_S(cB)
        # m / n predicates (fixed over k); the k predicate only matters in the first tile
        self.pA = self._row_predicate(self.sA)
        self.pB = self._row_predicate(self.sB)
        for v in range(self.pA.shape[0]):
            for i in range(self.pA.shape[1]):
                self.pA[v, i, 0] = cute.elem_less(self.cA[(0, v), i, 0, 0][0], m)
        for v in range(self.pB.shape[0]):
            for i in range(self.pB.shape[1]):
                self.pB[v, i, 0] = cute.elem_less(self.cB[(0, v), i, 0, 0][0], n)
        self.sA.fill(0)
        self.sB.fill(0)
        cute.arch.sync_threads()

    @staticmethod
    def _row_predicate(part):
        return cute.make_rmem_tensor(
            cute.make_layout((part.shape[0][1], cute.size(part, mode=[1]),
                              cute.size(part, mode=[2])),
                             stride=(cute.size(part, mode=[1]), 1, 0)), Boolean)

    def load_stage(self, kread, stage) -> None:
        """cp.async k tile ``kread`` (a full one: k >= 0 throughout) of both operands into
        shared stage ``stage``."""
        cute.copy(self.cpA, self.gA[None, None, None, kread], self.sA[None, None, None, stage],
                  pred=self.pA)
        cute.copy(self.cpB, self.gB[None, None, None, kread], self.sB[None, None, None, stage],
                  pred=self.pB)


@cute.jit
def prologue(loads: CpAsyncLoads, ktiles, stages: cutlass.Constexpr):
    """Issue k tile 0 (the partial one: its k < 0 vectors skipped) into stage 0 and tiles
    1 .. stages - 2 into the next stages (those past ``ktiles`` skipped), one cp.async group per
    stage; returns the next k tile to read (stages - 1)."""
    kread = Int32(0)
    for kk in cutlass.range_constexpr(cute.size(loads.sA, mode=[2])):
        if cute.elem_less(Int32(-1), loads.cA[0, 0, kk, 0][1]):
            cute.copy(loads.cpA, loads.gA[None, None, kk, kread], loads.sA[None, None, kk, 0],
                      pred=loads.pA[None, None, kk])
    for kk in cutlass.range_constexpr(cute.size(loads.sB, mode=[2])):
        if cute.elem_less(Int32(-1), loads.cB[0, 0, kk, 0][1]):
            cute.copy(loads.cpB, loads.gB[None, None, kk, kread], loads.sB[None, None, kk, 0],
                      pred=loads.pB[None, None, kk])
    kread = kread + 1
    cute.arch.cp_async_commit_group()
    for s in cutlass.range_constexpr(1, stages - 1):
        if kread < ktiles:
            loads.load_stage(kread, s)
        kread = kread + 1
        cute.arch.cp_async_commit_group()
    return kread
