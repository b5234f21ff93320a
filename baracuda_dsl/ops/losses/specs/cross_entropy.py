"""Template specs for the cross-entropy / NLL loss kernels (forward, backward, the fixed-order
loss reduction, and the per-chunk statistics update of the fused linear + cross-entropy).

Rows are the ``M`` rows of an (M, N) logits matrix: unit stride along the N classes, any row
stride.  Geometry knobs follow the row-norm family (:mod:`baracuda_dsl.ops.normalization.specs.row_norm`):

``dtype``   logits element type (f32, f16, bf16, f64); math in f32 (f64 for f64)
``mode``    forward: ``nll`` (log-probability input: loss = −w[t]·x[t], one thread a row),
            ``plain`` (class-index targets, optional class weights), ``smooth``
            (class-index targets with label smoothing: also accumulates Σ w_c·x_c), ``prob``
            (soft targets: a second (M, N) operand of probabilities); backward adds ``nll``
            (input already log-probabilities: dx = −w[t]·g at the target, 0 elsewhere; x is not
            read)
``vec``     elements per global access (16 bytes, or 1 for the generic misaligned path)
``tpr``     threads per row; ``rows`` rows per CTA
``cluster`` CTAs of a thread-block cluster sharing one row (sm90a only; 1 otherwise)
``chunks``  vectors per thread kept in registers (the row-length bucket; the SKU serves
            ``N <= tpr·chunks·vec·cluster``); 0 = loop mode for any N (online max / sum-exp)

Targets are read as int32 words (``ts`` = 1 for int32 targets, 2 for int64), so one SKU serves
both index dtypes.
"""

from __future__ import annotations

from ....dtypes import FP4
from ....jit import KernelTemplate, LaunchGeometry, params, register
from ...normalization.specs import row_norm as _rn

DTYPES = tuple(d.short for d in FP4)
FW_MODES = ("plain", "smooth", "prob")
BW_MODES = ("plain", "smooth", "prob", "nll")
BUCKETS = _rn.BUCKETS

#: forward flag bits
HAS_W, WRITE_LOSS, WRITE_ROWS, WRITE_LSE, HAS_STATUS = 1, 2, 4, 8, 16
#: backward flag bits (HAS_W and HAS_STATUS shared); G_ROW: per-row upstream gradient (none),
#: G_MEAN: divide the scalar upstream gradient by the total weight
G_ROW, G_MEAN = 32, 64

SLOTS = 8  # reduction slots (max, sum-exp, Σa·x, Σa, and parities)


def register_cap(dtype: str) -> int:
    return _rn.register_cap(dtype)


def bucket_config(dtype: str, cap: int) -> dict:
    return _rn.bucket_config(dtype, cap)


def loop_config(dtype: str, vectorised: bool) -> dict:
    return _rn.loop_config(dtype, vectorised)


#: long rows on sm90a: a cluster of half-size (512-thread) slices, then full slices
CLUSTER_LADDER = ((2, True), (4, True), (8, True), (8, False))


def cluster_config(dtype: str, clusters: int, half: bool) -> dict:
    cap = register_cap(dtype) // (2 if half else 1)
    return dict(bucket_config(dtype, cap), cluster=clusters)


#: forward alternatives for the half types (f16, bf16), for the sweep / the plans' WIDE knob:
#: the same row bucket with half the threads and twice the vectors per thread (``wide_config``),
#: and clusters of such 512-thread × 64-element slices (``WIDE_CLUSTERS``)
WIDE_CAPS = (4096, 8192, 16384, 32768)
WIDE_CLUSTERS = (2, 4, 8)
HALF_DTYPES = ("f16", "bf16")


def wide_config(dtype: str, cap: int) -> dict:
    """Bucket ``cap`` of a half dtype at half the threads per row, twice the chunks."""
    k = bucket_config(dtype, cap)
    return dict(k, tpr=k["tpr"] // 2, chunks=k["chunks"] * 2, cluster=1)


def wide_cluster_config(dtype: str, clusters: int) -> dict:
    """A cluster of ``clusters`` wide 512-thread slices (cap 32768 per CTA for half dtypes)."""
    return dict(wide_config(dtype, register_cap(dtype)), cluster=clusters)


def bucket_cap(k: dict) -> int:
    return k["chunks"] * k["tpr"] * k["vec"] * k.get("cluster", 1)


def _geo_space(dt: str):
    for cap in BUCKETS:
        if cap <= register_cap(dt):
            yield dict(cluster=1, **bucket_config(dt, cap))
    seen = set()
    for c, half in CLUSTER_LADDER:
        k = cluster_config(dt, c, half)
        key = tuple(sorted(k.items()))
        if key not in seen:
            seen.add(key)
            yield k
    yield dict(cluster=1, **loop_config(dt, True))
    yield dict(cluster=1, **loop_config(dt, False))
    yield dict(cluster=1, **SMALL_GENERIC)


#: element-wise loop for short misaligned rows (c <= SMALL_GENERIC_MAX): a warp per row
SMALL_GENERIC = dict(vec=1, tpr=32, rows=4, chunks=0)
SMALL_GENERIC_MAX = 2048

#: NLL forward: one thread per row (only the target element is read)
NLL_FW_GEO = dict(vec=1, tpr=1, rows=128, chunks=0, cluster=1)


def _wide_space(dt: str):
    if dt in HALF_DTYPES:
        for cap in WIDE_CAPS:
            yield wide_config(dt, cap)
        for c in WIDE_CLUSTERS:
            yield wide_cluster_config(dt, c)


def _fw_space():
    for dt in DTYPES:
        for mode in FW_MODES:
            seen = set()
            for g in list(_geo_space(dt)) + list(_wide_space(dt)):
                key = tuple(sorted(g.items()))
                if key not in seen:
                    seen.add(key)
                    yield dict(dtype=dt, mode=mode, **g)
        yield dict(dtype=dt, mode="nll", **NLL_FW_GEO)


def _bw_space():
    for dt in DTYPES:
        for mode in BW_MODES:
            for g in _geo_space(dt):
                if g["cluster"] == 1:  # streaming: x is read once either way
                    yield dict(dtype=dt, mode=mode, **g)


def _arch_ok(k: dict, arch: str) -> bool:
    return k.get("cluster", 1) == 1 or arch == "sm90a"


def _geometry(k: dict) -> LaunchGeometry:
    tpr, rows, c = k["tpr"], k["rows"], k.get("cluster", 1)
    smem = 0 if tpr <= 32 else rows * (tpr // 32) * SLOTS * 8 + 64
    if c > 1:
        smem += rows * SLOTS * c * 8 + 64
    return LaunchGeometry(threads=tpr * rows, smem_bytes=smem, cluster=c)


CROSS_ENTROPY_FW = register(KernelTemplate(
    name="cross_entropy_fw",
    family="losses",
    module="baracuda_dsl.ops.losses.kernels.cross_entropy",
    params=params("x:ptr t:ptr w:ptr p:ptr loss:ptr rl:ptr den:ptr lse:ptr st:ptr M:i32 N:i32 "
                  "xs:i64 ps:i64 ts:i32 ign:i64 eps:f64 flags:i32"),
    space=_fw_space,
    geometry=_geometry,
    arch_ok=_arch_ok,
))

CROSS_ENTROPY_BW = register(KernelTemplate(
    name="cross_entropy_bw",
    family="losses",
    module="baracuda_dsl.ops.losses.kernels.cross_entropy_bw",
    params=params("x:ptr t:ptr w:ptr p:ptr lse:ptr g:ptr tw:ptr dx:ptr st:ptr M:i32 N:i32 "
                  "xs:i64 ps:i64 ds:i64 ts:i32 ign:i64 eps:f64 flags:i32"),
    space=_bw_space,
    geometry=_geometry,
    arch_ok=_arch_ok,
))

REDUCE_THREADS = 1024


def _red_space():
    for dt in DTYPES:
        yield dict(dtype=dt)


#: fixed-order Σ of the per-row losses / denominators: loss = Σl (sum) or Σl / Σd (mean)
LOSS_REDUCE = register(KernelTemplate(
    name="cross_entropy_reduce",
    family="losses",
    module="baracuda_dsl.ops.losses.kernels.cross_entropy",
    params=params("rl:ptr den:ptr out:ptr tw:ptr M:i32 rs:i64 flags:i32"),
    space=_red_space,
    geometry=lambda k: LaunchGeometry(threads=REDUCE_THREADS, smem_bytes=2 * 32 * 8 + 64),
))

#: reduce flag bits
RED_MEAN, RED_TW = 1, 2


def _lce_space():
    """z (the chunk of logits) is f32 (f64 for f64 problems); ``ddt`` is the dtype of the
    backward's dlogits (the GEMM operand dtype)."""
    for dt, ddts in (("f32", ("f32", "f16", "bf16")), ("f64", ("f64",))):
        for g in (dict(cluster=1, **loop_config(dt, True)),
                  dict(cluster=1, **loop_config(dt, False))):
            for ddt in ddts:
                yield dict(dtype=dt, op="fw", ddt=ddt, **g)
                yield dict(dtype=dt, op="bw", ddt=ddt, **g)


#: fused linear + cross-entropy: per-row online (max, sum-exp) update over one vocabulary chunk
#: of f32 logits, picking the target logit when it falls in the chunk; ``fin`` finalises
#: (loss rows, lse) after the last chunk.  ``bw`` turns a chunk of logits into dlogits.
LCE_CHUNK = register(KernelTemplate(
    name="lce_chunk",
    family="losses",
    module="baracuda_dsl.ops.losses.kernels.cross_entropy",
    params=params("z:ptr t:ptr stats:ptr dz:ptr g:ptr tw:ptr st:ptr M:i32 Vc:i32 zs:i64 dzs:i64 "
                  "v0:i64 V:i64 ts:i32 ign:i64 flags:i32"),
    space=_lce_space,
    geometry=_geometry,
))

#: lce flag bits: FIRST chunk (initialise stats), LAST chunk (finalise); HAS_STATUS, G_ROW and
#: G_MEAN as above.  ``stats`` is (M, LCE_STATS) of the compute type: running max, running
#: sum-exp, target logit, lse, row loss, row denominator (1, or 0 for ignored / bad targets).
LCE_FIRST, LCE_LAST = 1, 2
#: fw, last chunk: also write the row loss into ``dz`` (``ddt``: the loss dtype, reduction none)
#: and lse into ``tw`` (compute type); the backward op reads lse from ``stats`` (one per row)
LCE_WRITE_LOSS, LCE_WRITE_LSE = 128, 256
LCE_STATS = 6
