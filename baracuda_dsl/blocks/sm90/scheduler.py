"""The persistent tile scheduler of the sm90a kernels: a grid of CTAs (or clusters of CTAs along
m) walks the work units ``u = cid, cid + ncl, ...`` below ``ntiles · splits``; unit u is output
tile ``t = u % ntiles`` of k split ``u // ntiles``, and tiles are rasterised in groups of
``group_m`` tile rows (of cluster rows) down m, then along n, so neighbouring CTAs share a and b
tiles in L2 (``ops/gemm/specs/gemm.raster`` is the pure-Python reference of the grouping)."""

import cutlass
from cutlass import Int32

from .invariant import LoopInvariant


class PersistentTileScheduler(LoopInvariant):
    """Work units of one CTA for an (m, n, k) problem in tiles of tile_m × tile_n × bk, the CTAs
    of a cluster of ``cluster`` along m taking tile rows ``rank`` of each cluster row (rank =
    the CTA's rank in its cluster, computed by the caller).  Loop over the units with
    ``cutlass.range(s.cid, s.ntiles * splits, s.ncl)`` (the loop must be written out in the
    kernel for the DSL to see it), then :meth:`unit` and :meth:`tile` decode each.

    Attributes: ``tiles_m``, ``tiles_n`` (tile counts), ``tiles_mc`` (cluster rows of tiles),
    ``ntiles`` (output work units: one tile per CTA of a cluster), ``ktiles`` (k blocks),
    ``cid`` / ``ncl`` (this cluster's index and the number of clusters)."""

    def __init__(self, m, n, k, bid, nblk, rank, *, tile_m: int, tile_n: int, bk: int,
                 cluster: int, group_m: int):
        self.rank = rank
        self.cluster = cluster
        self.group_m = group_m // cluster          # rasterisation group, in cluster rows
        self.tiles_m = (m + tile_m - 1) // tile_m
        self.tiles_n = (n + tile_n - 1) // tile_n
        self.tiles_mc = (self.tiles_m + cluster - 1) // cluster
        self.ntiles = self.tiles_mc * self.tiles_n
        self.ktiles = (k + bk - 1) // bk
        self.per_group = self.group_m * self.tiles_n
        self.cid = Int32(bid) // cluster
        self.ncl = Int32(nblk) // cluster

    def unit(self, u):
        """(output tile t, k split) of work unit ``u``."""
        return u % self.ntiles, u // self.ntiles

    def tile(self, t):
        """(tile row, tile column) of this CTA for output tile ``t``: grouped rasterisation;
        the tile row may be >= tiles_m for the second CTA of a cluster past m (its loads
        zero-fill, its stores are predicated off)."""
        gm = self.group_m
        first_m = (t // self.per_group) * gm
        gsz = cutlass.min(self.tiles_mc - first_m, gm)
        r = t % self.per_group
        return (first_m + r % gsz) * self.cluster + self.rank, r // gsz
