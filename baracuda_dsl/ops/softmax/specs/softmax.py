"""Template specs for the softmax family: softmax / log_softmax forward, the shared backward
(softmax, log_softmax and sparsemax gradients) and the sparsemax forward.

A row is the unit-stride softmax axis (length ``N``); up to three strided groups of outer dims
address the rows (as the row norms).  Knobs:

``dtype``   element type (f32, f16, bf16, f64); math in f32 (f64 for f64)
``vec``     elements per global access (16 bytes, or 1 for the generic misaligned path)
``tpr``     threads per row; ``rows`` rows per CTA (block = tpr × rows threads)
``chunks``  vectors each thread keeps in registers (the row-length bucket: the SKU serves
            ``N <= tpr·chunks·vec·cluster``); 0 = loop mode for any ``N`` (the row is re-read)
``cluster`` CTAs of a thread-block cluster sharing one row (sm90a only; 1 otherwise)

softmax vs log_softmax (forward) and softmax / log_softmax / sparsemax (backward) are runtime
flags of one SKU, not knobs: the branch is uniform and only changes the final element-wise step.
"""

from __future__ import annotations

from ....dtypes import FP4
from ....jit import KernelTemplate, LaunchGeometry, params, register

DTYPES = tuple(d.short for d in FP4)
#: row-length buckets kept in registers (the largest ones per dtype are cut by ``register_cap``)
BUCKETS = (512, 2048, 4096, 8192, 16384, 32768)
MAX_THREADS = 1024
#: vectors (of 16 bytes) each thread holds per operand in a full register bucket
CHUNKS = 4


def itemsize(dtype: str) -> int:
    return {"f32": 4, "f16": 2, "bf16": 2, "f64": 8}[dtype]


def max_vec(dtype: str) -> int:
    return 16 // itemsize(dtype)


def register_cap(dtype: str, backward: bool = False) -> int:
    """Longest row one CTA keeps in registers.  Forward: 32 elements a thread (16 for f64) at
    1024 threads.  Backward holds dy and y: 32 two-byte (kept packed), 16 f32 or 8 f64 elements
    a thread."""
    if backward:
        return {"f32": 16384, "f16": 32768, "bf16": 32768, "f64": 8192}[dtype]
    return 16384 if dtype == "f64" else 32768


def bucket_config(dtype: str, cap: int, backward: bool = False) -> dict:
    """(vec, tpr, rows, chunks) of the register bucket of row length ``cap``: CHUNKS vectors a
    thread, up to 1024 threads a row (more vectors a thread beyond); short rows pack several
    rows per 128-thread CTA.  (``backward`` is accepted for symmetry; the layout is the same.)"""
    vec = max_vec(dtype)
    tpr = min(max(cap // (vec * CHUNKS), 32), MAX_THREADS)
    chunks = max(cap // (vec * tpr), 1)
    rows = max(1, 128 // tpr)
    return dict(vec=vec, tpr=tpr, rows=rows, chunks=chunks)


def loop_config(dtype: str, vectorised: bool) -> dict:
    if vectorised:
        return dict(vec=max_vec(dtype), tpr=512, rows=1, chunks=0)
    return dict(vec=1, tpr=256, rows=1, chunks=0)


#: rows longer than one CTA's register bucket are split over a thread-block cluster (sm90a).
#: Ladders of (CTAs per cluster, half-size CTAs?) in order of preference: full 1024-thread
#: slices of 2, 4 or 8 CTAs (8 × 32K = 256K two-byte / f32 elements forward; the backward's
#: slices hold 32K two-byte, 16K f32, 8K f64 elements).  ``half`` slices (512 threads, two CTAs
#: resident per SM) are wired too: a sweep on the H100 may reorder the ladders (the SKU space
#: follows them).
CLUSTER_LADDER_FW = ((2, False), (4, False), (8, False))
CLUSTER_LADDER_BW = ((2, False), (4, False), (8, False))
CLUSTERS = (2, 4, 8)
#: forward cluster SKUs built (prebuild) but not on the ladder: half-size slices (a 16K-element
#: two-byte / f32 slice a CTA, 8K f64).  At <= 64 registers a thread, two 512-thread CTAs fit an
#: SM, so one CTA's exp / convert / reduce phase overlaps the other's loads (a full 1024-thread
#: CTA runs alone on its SM).  benchmarks/sweep_softmax.py times them against the ladder.
CLUSTER_EXTRA_FW = ((2, True), (4, True), (8, True))
#: Sweeps of 2026-11-23 (benchmarks/sweep_softmax.py, H100, fraction of copy).  While the forward
#: kept its f32 exps in registers (49-57 registers a thread) half slices won for 16-bit rows (64K:
#: 0.82 vs 0.74 full).  Since it keeps only the packed inputs (32 registers: two 1024-thread CTAs
#: per SM) full slices win: bf16 64K — 2 full 0.98, 4 half 0.97; 128K — 4 full 0.96, 8 half
#: 0.95; 256K — 8 full 0.91, loop 0.64.  So every dtype uses CLUSTER_LADDER_FW; the half slices
#: stay in the space (CLUSTER_EXTRA_FW) for the sweep.
#: per-dtype forward ladders (others: CLUSTER_LADDER_FW); f32's half slices are 1024-thread CTAs
#: (one per SM beyond C = 2), so f32 keeps the full ladder until a sweep says otherwise
CLUSTER_LADDER_FW_DTYPE: dict = {}
#: forward rows longer than this (per dtype; default: the register cap) go to the cluster ladder
#: on sm90a even when one CTA could hold them (two-byte rows of 16K+ use half-size clusters;
#: set {} to go back to one 1024-thread CTA up to 32K)
SINGLE_CTA_MAX_FW: dict = {}


def cluster_ladder(backward: bool = False, dtype: str = None):
    """(CTAs, half) rungs in order of preference for ``dtype``'s rows beyond one CTA."""
    if backward:
        return CLUSTER_LADDER_BW
    return CLUSTER_LADDER_FW_DTYPE.get(dtype, CLUSTER_LADDER_FW)


def single_cta_max(dtype: str, backward: bool = False) -> int:
    """Longest row served by one CTA's register bucket on sm90a (other archs: the cap)."""
    cap = register_cap(dtype, backward)
    return cap if backward else min(cap, SINGLE_CTA_MAX_FW.get(dtype, cap))


def cluster_config(dtype: str, clusters: int, backward: bool = False, half: bool = False) -> dict:
    """A row of ``clusters`` slices, each a single-CTA bucket (the largest, or half of it)."""
    cap = register_cap(dtype, backward) // (2 if half else 1)
    return dict(bucket_config(dtype, cap, backward), cluster=clusters)


def bucket_cap(k: dict) -> int:
    """Longest row a register-mode SKU serves."""
    return k["chunks"] * k["tpr"] * k["vec"] * k.get("cluster", 1)


def sparse_config(k: dict) -> dict:
    """Sparsemax iterates a data-dependent number of times per row, so a CTA whose rows span
    several warps holds a single row (its barriers stay CTA-uniform)."""
    return dict(k, rows=1) if k["tpr"] > 32 else k


def _space(backward: bool, clusters: bool = True):
    for dt in DTYPES:
        for cap in BUCKETS:
            if cap <= register_cap(dt, backward):
                k = dict(dtype=dt, cluster=1, **bucket_config(dt, cap, backward))
                yield k if clusters else sparse_config(k)
        if clusters:
            seen = []
            extra = () if backward else CLUSTER_EXTRA_FW
            for c, half in cluster_ladder(backward, dt) + CLUSTER_LADDER_FW * (not backward) \
                    + extra:
                k = dict(dtype=dt, **cluster_config(dt, c, backward, half))
                if k not in seen:
                    seen.append(k)
                    yield k
        yield dict(dtype=dt, cluster=1, **loop_config(dt, True))
        yield dict(dtype=dt, cluster=1, **loop_config(dt, False))


def _arch_ok(k: dict, arch: str) -> bool:
    """Cluster SKUs exist for sm90a only."""
    return k.get("cluster", 1) == 1 or arch == "sm90a"


SLOTS = 4  # reduction slots: two values × two parities (iterative reductions alternate)


def _geometry(k: dict) -> LaunchGeometry:
    """Block = tpr·rows threads; shared memory = the cross-warp reduction buffer plus, for cluster
    SKUs, the buffer receiving the peers' partials; cluster = CTAs per row."""
    tpr, rows, c = k["tpr"], k["rows"], k.get("cluster", 1)
    smem = 0 if tpr <= 32 else rows * (tpr // 32) * SLOTS * 8 + 64
    if c > 1:
        smem += rows * SLOTS * c * 8 + 64
    return LaunchGeometry(threads=tpr * rows, smem_bytes=smem, cluster=c)


_ROW = "M:i32 N:i32 s1:i32 s2:i32 "

SOFTMAX_FW = register(KernelTemplate(
    name="softmax_fw",
    family="softmax",
    module="baracuda_dsl.ops.softmax.kernels.softmax",
    params=params("x:ptr y:ptr " + _ROW + "x0:i64 x1:i64 x2:i64 y0:i64 y1:i64 y2:i64 flags:i32"),
    space=lambda: _space(False),
    geometry=_geometry,
    arch_ok=_arch_ok,
))

SOFTMAX_BW = register(KernelTemplate(
    name="softmax_bw",
    family="softmax",
    module="baracuda_dsl.ops.softmax.kernels.softmax_bw",
    params=params("dy:ptr y:ptr dx:ptr " + _ROW + "dy0:i64 dy1:i64 dy2:i64 y0:i64 y1:i64 y2:i64 "
                  "dx0:i64 dx1:i64 dx2:i64 mode:i32"),
    space=lambda: _space(True),
    geometry=_geometry,
    arch_ok=_arch_ok,
))

SPARSEMAX_FW = register(KernelTemplate(
    name="sparsemax_fw",
    family="softmax",
    module="baracuda_dsl.ops.softmax.kernels.sparsemax",
    params=params("x:ptr y:ptr " + _ROW + "x0:i64 x1:i64 x2:i64 y0:i64 y1:i64 y2:i64 flags:i32"),
    space=lambda: _space(False, clusters=False),
    geometry=_geometry,
))

#: forward flag bit: write log_softmax instead of softmax
LOG = 1
#: backward modes
MODE_SOFTMAX, MODE_LOG, MODE_SPARSEMAX = 0, 1, 2
