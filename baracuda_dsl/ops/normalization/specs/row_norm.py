"""Template specs for the row-normalisation kernels (RMSNorm, LayerNorm; FW and BW) and the
deterministic column reduction that finishes their weight/bias gradients.

A row is the product of the normalised trailing dims (length ``N``, unit stride); up to three
strided groups of outer dims address the rows.  Knobs:

``dtype``   element type (f32, f16, bf16, f64); math and accumulation in f32 (f64 for f64)
``op``      ``rms`` or ``ln``
``vec``     elements per global access (16 bytes, or 1 for the generic misaligned path)
``tpr``     threads per row; ``rows`` rows per CTA (block = tpr × rows threads)
``cluster`` CTAs of a thread-block cluster sharing one row (sm90a only; 1 otherwise)
``affine``  (forward LayerNorm only) ``chan``: one weight/bias per channel slice of the row,
            for GroupNorm / InstanceNorm rows; ``pdt`` is then the weight dtype
``chunks``  vectors each thread keeps in registers (the row-length bucket: the SKU serves
            ``N <= tpr·chunks·vec``); 0 = loop mode for any ``N`` (the row is re-read from
            global memory/L2 instead of kept in registers).  Forward buckets go up to 32768
            (16384 for f64), backward ones to 8192 (4096 for f64): backward also keeps per-column
            weight/bias gradient accumulators in registers.
"""

from __future__ import annotations

from ....dtypes import FP4
from ....jit import KernelTemplate, LaunchGeometry, params, register

DTYPES = tuple(d.short for d in FP4)
OPS = ("rms", "ln")
#: row-length buckets kept in registers; f64 stops one bucket earlier (register budget)
BUCKETS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
MAX_THREADS = 1024


def itemsize(dtype: str) -> int:
    return {"f32": 4, "f16": 2, "bf16": 2, "f64": 8}[dtype]


def max_vec(dtype: str) -> int:
    return 16 // itemsize(dtype)


def register_cap(dtype: str) -> int:
    """Largest row length kept in registers for this dtype."""
    return BUCKETS[-1] if dtype != "f64" else BUCKETS[-2]


def bucket_config(dtype: str, cap: int, backward: bool = False) -> dict:
    """(vec, tpr, rows, chunks) for a register-resident bucket of row length ``cap``.  Forward:
    four vectors per thread (up to 1024 threads a row).  Backward keeps dw/db accumulators per
    column as well, so it holds ``bw_elems`` elements per thread with at most 512 threads a row."""
    vec = max_vec(dtype)
    if backward:
        tpr = min(max(cap // bw_elems(dtype), 32), 512)
    else:
        tpr = min(max(cap // (vec * 4), 32), MAX_THREADS)
    chunks = max(cap // (vec * tpr), 1)
    rows = max(1, 128 // tpr)
    return dict(vec=vec, tpr=tpr, rows=rows, chunks=chunks)


def bw_elems(dtype: str) -> int:
    """Elements per thread in the backward register buckets (register budget at 512 threads)."""
    return 8 if dtype == "f64" else 16


def register_cap_bw(dtype: str) -> int:
    return 512 * bw_elems(dtype)


def loop_config(dtype: str, vectorised: bool) -> dict:
    if vectorised:
        return dict(vec=max_vec(dtype), tpr=512, rows=1, chunks=0)
    return dict(vec=1, tpr=256, rows=1, chunks=0)


#: rows longer than one CTA's register bucket are split over a thread-block cluster (sm90a).
#: Ladders of (CTAs per cluster, half-size CTAs?) in order of preference, chosen from a sweep
#: on the H100 (benchmarks/sweep_row_norm.py): the forward prefers 512-thread slices (two CTAs per
#: SM), the backward a 2-CTA cluster of full slices up to 16K, then 8 half slices.
CLUSTER_LADDER_FW = ((4, True), (8, True), (8, False))
CLUSTER_LADDER_BW = ((2, False), (8, True), (8, False))


def cluster_config(dtype: str, clusters: int, backward: bool = False, half: bool = False) -> dict:
    """A row of ``clusters`` × a single-CTA bucket (the largest, or half of it with ``half`` —
    smaller CTAs, two resident per SM), one slice per CTA of the cluster."""
    cap = (register_cap_bw if backward else register_cap)(dtype) // (2 if half else 1)
    return dict(bucket_config(dtype, cap, backward), cluster=clusters)


def bucket_cap(k: dict) -> int:
    """Longest row a register-mode SKU serves."""
    return k["chunks"] * k["tpr"] * k["vec"] * k.get("cluster", 1)


def _space(backward: bool):
    cap_of = register_cap_bw if backward else register_cap
    for dt in DTYPES:
        for op in OPS:
            for cap in BUCKETS:
                if cap <= cap_of(dt):
                    yield dict(dtype=dt, op=op, cluster=1, **bucket_config(dt, cap, backward))
            for c, half in (CLUSTER_LADDER_BW if backward else CLUSTER_LADDER_FW):
                yield dict(dtype=dt, op=op, **cluster_config(dt, c, backward, half))
            yield dict(dtype=dt, op=op, cluster=1, **loop_config(dt, True))
            yield dict(dtype=dt, op=op, cluster=1, **loop_config(dt, False))


def _chan_space():
    """Forward LayerNorm SKUs with per-channel affine (GroupNorm / InstanceNorm rows): weights
    in the input dtype or, for half inputs, f32 (``pdt``)."""
    for k in _space(False):
        if k["op"] == "ln":
            for pdt in ((k["dtype"], "f32") if k["dtype"] in ("f16", "bf16") else (k["dtype"],)):
                yield dict(k, affine="chan", pdt=pdt)


def _arch_ok(k: dict, arch: str) -> bool:
    """Cluster SKUs exist for sm90a only."""
    return k.get("cluster", 1) == 1 or arch == "sm90a"


SLOTS = 4  # reduction slots: two values × two parities (the backward loop alternates)


def _geometry(k: dict) -> LaunchGeometry:
    """Block = tpr·rows threads; shared memory = the cross-warp reduction buffer plus, for cluster
    SKUs, the buffer receiving the peers' partial sums; cluster = CTAs per row."""
    tpr, rows, c = k["tpr"], k["rows"], k.get("cluster", 1)
    smem = 0 if tpr <= 32 else rows * (tpr // 32) * SLOTS * 8 + 64
    if c > 1:
        smem += rows * SLOTS * c * 8 + 64
    return LaunchGeometry(threads=tpr * rows, smem_bytes=smem, cluster=c)


ROW_NORM_FW = register(KernelTemplate(
    name="row_norm_fw",
    family="normalization",
    module="baracuda_dsl.ops.normalization.kernels.row_norm",
    params=params("x:ptr y:ptr w:ptr b:ptr mean:ptr rstd:ptr M:i32 N:i32 s1:i32 s2:i32 "
                  "x0:i64 x1:i64 x2:i64 y0:i64 y1:i64 y2:i64 eps:f64 flags:i32 hw:i32 cpg:i32 "
                  "G:i32"),
    space=lambda: tuple(_space(False)) + tuple(_chan_space()),
    geometry=_geometry,
    arch_ok=_arch_ok,
))

ROW_NORM_BW = register(KernelTemplate(
    name="row_norm_bw",
    family="normalization",
    module="baracuda_dsl.ops.normalization.kernels.row_norm_bw",
    params=params("dy:ptr x:ptr w:ptr mean:ptr rstd:ptr dx:ptr dwp:ptr dbp:ptr M:i32 N:i32 "
                  "s1:i32 s2:i32 dy0:i64 dy1:i64 dy2:i64 x0:i64 x1:i64 x2:i64 dx0:i64 dx1:i64 "
                  "dx2:i64 flags:i32"),
    space=lambda: _space(True),
    geometry=_geometry,
    arch_ok=_arch_ok,
))


def _colsum_space():
    for dt in DTYPES:
        yield dict(dtype=dt)


COLUMN_SUM = register(KernelTemplate(
    name="column_sum",
    family="normalization",
    module="baracuda_dsl.ops.normalization.kernels.column_sum",
    params=params("src:ptr dst:ptr G:i32 N:i32 ld:i64"),
    space=_colsum_space,
    geometry=lambda k: LaunchGeometry(threads=256, smem_bytes=32 * 8 * 8 + 64),
))

#: flag bits shared by the FW/BW kernels and their plans
HAS_W, HAS_B, WRITE_STATS, WANT_DW = 1, 2, 4, 8
