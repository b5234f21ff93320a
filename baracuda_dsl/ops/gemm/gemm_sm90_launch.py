"""Host side of the Hopper wgmma GEMM (``ops/gemm/specs/gemm_sm90.py``): which operand layouts TMA
can take, the per-call CUtensorMap encoding (memoised per plan) and the persistent-grid launch.
Shared by :class:`~baracuda_dsl.ops.gemm.gemm.GemmPlan` and the fp8 GEMM plan."""

from __future__ import annotations

import math

from ...plan import align_up

from .specs import gemm_sm90 as spec90
from .specs.gemm import MMA_VEC

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


_MAX_CLUSTERS = {}


def _max_active_clusters(lk, fallback: int) -> int:
    """How many clusters of ``lk`` (a cluster SKU) can be resident at once on its device
    (``cuOccupancyMaxActiveClusters``, memoised per kernel); ``fallback`` if the query fails.
    A persistent grid larger than this would run its last clusters as a second wave."""
    key = id(lk)
    v = _MAX_CLUSTERS.get(key)
    if v is None:
        v = fallback
        try:
            from cuda.bindings import driver

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


def tma_layout(view, rows: int, cols: int, s_rows: int, s_cols: int):
    """("k" | "mn", ld) of the first TMA-legal layout of an operand seen as (rows, k), or None:
    16-byte aligned base, leading dim a multiple of 8 elements (16 bytes) below 2**36."""
    if view.ptr % 16:
        return None
    for major, ld in operand_options(rows, cols, s_rows, s_cols):
        if 0 < ld < _TMA_MAX_LD and ld % MMA_VEC == 0:
            return major, ld
    return None


def launch_sm90(plan, lk, knobs, a, b, c, pbias, bs, hb, lds, stream, scales=None,
                split=None, cview=None) -> None:
    """Encode (or reuse) the two operand descriptors of ``plan``'s problem and launch the
    persistent ``gemm_sm90`` kernel ``lk`` (grid = min(work units, resident CTAs / clusters)).
    ``scales`` = (sa pointer, sa stride, sb pointer, sb stride) for the fp8 SKUs; alpha, beta
    and the activation come from ``plan.desc`` / ``plan._act`` when it has them (else 1, 0,
    none).  ``split`` = (S, k blocks per split, partial-product element stride) runs split-K
    into ``cview`` = (pointer, row stride) of an f32 workspace (alpha 1, beta 0, no bias or
    activation: the caller reduces)."""
    from ...runtime.device import sm_count

    d = plan.desc
    tile = knobs["tile"]
    bm, bn = spec90.TILES[tile][:2]
    dt = knobs["dtype"]
    bk = spec90.block_k(tile, dt)
    a_k = knobs["a_major"] == "k"
    b_k = knobs["b_major"] == "k"
    # descriptors memoised per (pointers, leading dims, SKU): a repeated call re-encodes none
    memo = plan.__dict__.setdefault("_tmaps", {})
    key = (a.ptr, b.ptr, lds, id(knobs))
    tmaps = memo.get(key)
    if tmaps is None:
        if len(memo) >= 64:
            memo.clear()
        tmaps = memo[key] = (
            spec90.operand_tmap(a.ptr, dt, a_k, d.m, d.k, lds[0], bm, bk),
            spec90.operand_tmap(b.ptr, knobs.get("b", dt), b_k, d.n, d.k, lds[1], bn, bk,
                                knobs["cluster"]))
    ta, tb = tmaps
    sms = plan.__dict__.get("_sms")
    if sms is None:
        sms = plan._sms = sm_count(a.device)
    cl = knobs["cluster"]
    S, kps, zc = split if split is not None else (1, max(1, -(-d.k // bk)), 0)
    if cl == 1:
        grid = (max(1, min(spec90.num_tiles(d.m, d.n, tile) * S, sms)), 1, 1)
    else:
        # one work unit = a column-aligned pair of tiles; never more clusters than fit at once
        units = -(-math.ceil(d.m / bm) // cl) * math.ceil(d.n / bn)
        grid = (cl * max(1, min(units, _max_active_clusters(lk, sms // cl))), 1, 1)
    psa, sas, psb, sbs = scales if scales is not None else (c.ptr, 0, c.ptr, 0)
    if split is not None:           # partial products: plain f32 stores into the workspace
        cp, csm, csn = cview[0], cview[1], 1
        epi = spec90.epi_word("none", cp, csm, 1, d.m, 4)
        lk.launch(grid, [ta, tb, cp, cp, psa, psb, d.m, d.n, d.k, csm, csn, 0, sas, sbs, 1.0,
                         0.0, 0, epi, S, kps, zc], stream)
        return
    act = getattr(plan, "_act", "none")
    epi = spec90.epi_word(act, c.ptr, c.strides[0], c.strides[1], d.m,
                          d.out_dtype.itemsize, None if not hb else pbias, bs)
    lk.launch(grid, [ta, tb, c.ptr, pbias, psa, psb, d.m, d.n, d.k, c.strides[0],
                     c.strides[1], bs, sas, sbs, getattr(d, "alpha", 1.0),
                     getattr(d, "beta", 0.0), hb, epi, S, kps, zc], stream)
