"""TMA operands of the sm90a kernels: the swizzled shared-memory stage layout wgmma and TMA agree
on, the global (rows, k) layout and TMA coordinate tensor of an operand, its TMA load atom (built
on the host side of a ``@cute.jit`` launch) and :class:`TmaOperandLoads`, the per-CTA partitions
of two operands a (m, k) and b (n, k) with the loads of one pipeline stage.

An operand is seen as (rows, k) — rows = m for a, n for b — with unit stride along k
(``kmajor``) or along rows; one stage holds a (rows_tile, bk) tile, bk = one 128-byte swizzle
row of k."""

import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import cpasync, warpgroup

from .invariant import LoopInvariant


class _MajorMode:
    """The ``LayoutEnum`` stand-in ``get_smem_layout_atom`` asks for the operand's major mode."""

    def __init__(self, kmajor: bool):
        self.kmajor = kmajor

    def sm90_mma_major_mode(self):
        return warpgroup.OperandMajorMode.K if self.kmajor else warpgroup.OperandMajorMode.MN


def smem_layout(T, kmajor: bool, mn: int, bk: int, stages: int):
    """Staged (mn, bk, stages) swizzled layout of one operand (element type ``T``): 128-byte
    swizzle atoms along the operand's contiguous dim, the layout wgmma reads and TMA writes."""
    atom = warpgroup.make_smem_layout_atom(
        sm90_utils.get_smem_layout_atom(_MajorMode(kmajor), T, bk if kmajor else mn), T)
    return cute.tile_to_shape(atom, (mn, bk, stages), order=(0, 1, 2) if kmajor else (1, 0, 2))


def gmem_layout(kmajor: bool, rows, k, ld):
    """(rows, k) layout of an operand: unit stride along k (k-major) or along rows, the other
    stride ``ld`` elements."""
    if kmajor:
        return cute.make_layout((rows, k), stride=(ld, 1))
    return cute.make_layout((rows, k), stride=(1, ld))


def coord_tensor(kmajor: bool, rows, k):
    """The TMA coordinate tensor of an operand (rows, k): logical coordinates mapped to the
    descriptor's (contiguous dim first) coordinates, as ``make_tiled_tma_atom``'s tensor does;
    the kernel rebuilds it from run-time extents."""
    if kmajor:
        lay = cute.make_layout((rows, k), stride=(cute.E(1), cute.E(0)))
    else:
        lay = cute.make_layout((rows, k), stride=(cute.E(0), cute.E(1)))
    return cute.make_tensor(cute.make_identity_tensor((rows, k)).iterator, lay)


def operand_tma(T, kmajor: bool, ptr, rows, k, ld, rows_tile: int, bk: int, stages: int,
                mcast: int = 1):
    """(TMA load atom, DSL coordinate tensor) of one operand seen as (rows, k) at ``ptr``, box
    rows_tile × bk into the stage layout of :func:`smem_layout`; ``mcast`` > 1: a multicast
    atom whose tile is split over that many CTAs of the cluster.  Host side of a ``@cute.jit``
    launch: the atom's descriptor is what the host encodes for the kernel parameter (the
    layout ``ops/gemm/gemm_sm90_launch.operand_layout`` asks the driver for)."""
    g = cute.make_tensor(ptr, gmem_layout(kmajor, rows, k, ld))
    ls = smem_layout(T, kmajor, rows_tile, bk, stages)
    op = (cpasync.CopyBulkTensorTileG2SOp() if mcast == 1
          else cpasync.CopyBulkTensorTileG2SMulticastOp())
    return cpasync.make_tiled_tma_atom(op, g, cute.slice_(ls, (None, None, 0)), (rows_tile, bk),
                                       num_multicast=mcast)


class TmaOperandLoads(LoopInvariant):
    """The TMA loads of one CTA for operands a (m, k) and b (n, k) into staged shared tensors
    ``sA`` (tile_m, bk, stages) / ``sB`` (tile_n, bk, stages).  With ``cluster`` > 1 the CTAs of
    a cluster along m share the b tile: each (cluster ``rank``) loads 1/cluster of it,
    multicast into every CTA of the cluster.  :meth:`load_stage` issues one stage's two loads,
    completing on an mbarrier."""

    def __init__(self, tma_a, tma_b, sA, sB, m, n, k, a_kmajor: bool, b_kmajor: bool,
                 tile_m: int, tile_n: int, bk: int, cluster: int, rank):
        self.tma_a, self.tma_b, self.cluster = tma_a, tma_b, cluster
        gA = cute.local_tile(coord_tensor(a_kmajor, m, k), (tile_m, bk), (None, None))
        gB = cute.local_tile(coord_tensor(b_kmajor, n, k), (tile_n, bk), (None, None))
        self.sA, self.gA = cpasync.tma_partition(tma_a, 0, cute.make_layout(1),
                                                 cute.group_modes(sA, 0, 2),
                                                 cute.group_modes(gA, 0, 2))
        self.b_mask = None
        if cluster == 1:
            self.sB, self.gB = cpasync.tma_partition(tma_b, 0, cute.make_layout(1),
                                                     cute.group_modes(sB, 0, 2),
                                                     cute.group_modes(gB, 0, 2))
        else:
            cta_lay = cute.make_layout((cluster, 1, 1))
            self.b_mask = cute.make_layout_image_mask(cta_lay, cta_lay.get_flat_coord(rank),
                                                      mode=0)
            self.sB, self.gB = cpasync.tma_partition(tma_b, rank, cute.make_layout(cluster),
                                                     cute.group_modes(sB, 0, 2),
                                                     cute.group_modes(gB, 0, 2))

    def load_stage(self, tm, tn, kt, stage, bar) -> None:
        """Load k block ``kt`` of a's tile row ``tm`` and b's tile row ``tn`` into stage
        ``stage``, completing on mbarrier ``bar`` (transaction bytes)."""
        cute.copy(self.tma_a, self.gA[(None, tm, kt)], self.sA[(None, stage)], tma_bar_ptr=bar)
        if self.cluster == 1:
            cute.copy(self.tma_b, self.gB[(None, tn, kt)], self.sB[(None, stage)],
                      tma_bar_ptr=bar)
        else:
            cute.copy(self.tma_b, self.gB[(None, tn, kt)], self.sB[(None, stage)],
                      tma_bar_ptr=bar, mcast_mask=self.b_mask)
