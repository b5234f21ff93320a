"""Host side of the Hopper wgmma GEMM (``ops/gemm/specs/gemm_sm90.py``): which operand layouts
TMA can take, the operands' TMA descriptor layouts (encoded by the driver through
:mod:`~baracuda_dsl.ops.gemm.tensor_maps`, cached per layout) and the persistent-grid launch.
Shared by :class:`~baracuda_dsl.ops.gemm.gemm.GemmPlan` and the fp8 GEMM plan."""

from __future__ import annotations

import math
from typing import Dict, Optional, Tuple

from ...plan import align_up
from .specs import gemm_sm90 as spec90
from .specs.gemm import MMA_VEC
from .tensor_maps import TENSOR_MAPS, TensorMapLayout

_TMA_MAX_LD = 2 ** 36


def operand_options(rows: int, cols: int, s_rows: int, s_cols: int, vec: int = MMA_VEC):
    """Candidate (major, leading dim) of an operand seen as (rows = m or n, cols = k): ``k`` when
    the k stride is unit (or k has extent 1), ``mn`` when the rows stride is unit.  The leading
    dim of a one-row / one-column operand is irrelevant: any multiple of 8 serves."""
    out = []
    if s_cols == 1 or cols == 1:
        out.append(("k", s_rows if rows > 1 else align_up(max(cols, 1), vec)))
    if s_rows == 1 or rows == 1:
        out.append(("mn", s_cols if cols > 1 else align_up(max(rows, 1), vec)))
    return out


def tma_layout(view, rows: int, cols: int, s_rows: int, s_cols: int):
    """("k" | "mn", ld) of the first TMA-legal layout of an operand seen as (rows, k), or None:
    16-byte aligned base, leading dim a multiple of 8 elements (16 bytes) below 2**36."""
    if view.ptr % 16:
        return None
    for major, ld in operand_options(rows, cols, s_rows, s_cols):
        if 0 < ld < _TMA_MAX_LD and ld % MMA_VEC == 0:
            return major, ld
    return None


def operand_layout(dtype: str, kmajor: bool, rows: int, k: int, ld: int, rows_tile: int,
                   bk: int, mcast: int = 1) -> TensorMapLayout:
    """The descriptor layout ``gemm_sm90`` expects for one operand seen as (rows, k) with unit
    stride along k (``kmajor``) or along rows, leading dim ``ld`` elements (a multiple of 16
    bytes): 2-D, contiguous dim first, box :func:`specs.gemm_sm90.operand_box` (``bk`` =
    ``block_k``; ``mcast``: the cluster size of a multicast operand), 128-byte swizzle, L2
    promotion 128 B, zero fill out of bounds (fp8 as UINT8)."""
    isz = spec90.ITEMSIZE[dtype]
    return TensorMapLayout(dtype, (k, rows) if kmajor else (rows, k), (ld * isz,),
                           spec90.operand_box(kmajor, rows_tile, bk, mcast, isz),
                           swizzle="128B", l2_promotion="L2_128B", oob_fill="NONE")


_MAX_CLUSTERS: Dict[int, int] = {}


def max_active_clusters(lk, fallback: int) -> int:
    """How many clusters of ``lk`` (a cluster SKU) can be resident at once on its device
    (``cuOccupancyMaxActiveClusters``, memoised per kernel); ``fallback`` if the query fails.
    A persistent grid larger than this would run its last clusters as a second wave."""
    key = id(lk)
    v = _MAX_CLUSTERS.get(key)
    if v is None:
        v = fallback
        try:
            from cuda.bindings import driver

            from ...runtime.device import bind_thread

            bind_thread(lk.ordinal)   # the query needs the context current on this thread
            err, func = driver.cuKernelGetFunction(lk.handle)
            if int(err) == 0:
                cfg = lk._cluster_config((lk.cluster * fallback, 1, 1), 0)
                err, n = driver.cuOccupancyMaxActiveClusters(func, cfg)
                if int(err) == 0 and int(n) > 0:
                    v = min(int(n), fallback)
        except Exception:   # the driver binding's errors: keep the SM-count bound
            v = fallback
        _MAX_CLUSTERS[key] = v
    return v


class Sm90Launcher:
    """One plan's ``gemm_sm90`` launches: the operands' TensorMap entries memoised per (leading
    dims, SKU), so a call only patches the two base addresses into cached descriptors, and the
    SM count of the device."""

    def __init__(self):
        self._maps: Dict[tuple, tuple] = {}
        self._sms: Optional[int] = None

    def descriptors(self, knobs: spec90.Sm90Knobs, m: int, n: int, k: int, a_ptr: int,
                    b_ptr: int, lds: Tuple[int, int]) -> Tuple[bytes, bytes]:
        """The two 128-byte CUtensorMaps of a (m, k) at ``a_ptr`` and b (n, k) at ``b_ptr``
        (leading dims ``lds``) for SKU ``knobs``."""
        key = (m, n, k, lds, id(knobs))
        maps = self._maps.get(key)
        if maps is None:
            if len(self._maps) >= 64:
                self._maps.clear()
            bm, bn = spec90.TILES[knobs.tile][:2]
            bk = spec90.block_k(knobs.tile, knobs.dtype)
            maps = self._maps[key] = (
                TENSOR_MAPS.get(operand_layout(knobs.dtype, knobs.a_major == "k", m, k, lds[0],
                                               bm, bk)),
                TENSOR_MAPS.get(operand_layout(knobs.b_dtype, knobs.b_major == "k", n, k,
                                               lds[1], bn, bk, knobs.cluster)))
        return maps[0].at(a_ptr), maps[1].at(b_ptr)

    def launch(self, lk, knobs: spec90.Sm90Knobs, m: int, n: int, k: int, a, b, c, bias,
               lds, stream: int, *, act: str = "none", alpha: float = 1.0, beta: float = 0.0,
               scales=None, split=None, cview=None) -> None:
        """Launch the persistent ``gemm_sm90`` kernel ``lk`` (grid = min(work units, resident
        CTAs / clusters)) on views a, b, c; ``bias`` = (pointer, stride, has_bias).  ``scales`` =
        (sa pointer, sa stride, sb pointer, sb stride) for the fp8 SKUs.  ``split`` = (S, k
        blocks per split, partial-product element stride) runs split-K into ``cview`` =
        (pointer, row stride) of an f32 workspace (alpha 1, beta 0, no bias or activation: the
        caller reduces)."""
        from ...runtime.device import sm_count

        tile = knobs.tile
        bm, bn = spec90.TILES[tile][:2]
        bk = spec90.block_k(tile, knobs.dtype)
        ta, tb = self.descriptors(knobs, m, n, k, a.ptr, b.ptr, lds)
        sms = self._sms
        if sms is None:
            sms = self._sms = sm_count(a.device)
        cl = knobs.cluster
        S, kps, zc = split if split is not None else (1, max(1, -(-k // bk)), 0)
        if cl == 1:
            grid = (max(1, min(spec90.num_tiles(m, n, tile) * S, sms)), 1, 1)
        else:
            # one work unit = a column-aligned pair of tiles; never more clusters than fit
            units = -(-math.ceil(m / bm) // cl) * math.ceil(n / bn)
            grid = (cl * max(1, min(units, max_active_clusters(lk, sms // cl))), 1, 1)
        psa, sas, psb, sbs = scales if scales is not None else (c.ptr, 0, c.ptr, 0)
        pbias, bs, hb = bias
        if split is not None:       # partial products: plain f32 stores into the workspace
            cp, csm = cview
            epi = spec90.epi_word("none", cp, csm, 1, m, 4)
            lk.launch(grid, [ta, tb, cp, cp, psa, psb, m, n, k, csm, 1, 0, sas, sbs, 1.0, 0.0,
                             0, epi, S, kps, zc], stream)
            return
        epi = spec90.epi_word(act, c.ptr, c.strides[0], c.strides[1], m, c.dtype.itemsize,
                              None if not hb else pbias, bs)
        lk.launch(grid, [ta, tb, c.ptr, pbias, psa, psb, m, n, k, c.strides[0], c.strides[1],
                         bs, sas, sbs, alpha, beta, hb, epi, S, kps, zc], stream)
