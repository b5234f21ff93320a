"""Template specs for the cross-entropy / NLL loss kernels (forward, backward, the fixed-order
loss reduction, and the per-chunk statistics update of the fused linear + cross-entropy).

Rows are the ``M`` rows of an (M, N) logits matrix: unit stride along the N classes, any row
stride.  Knobs (:class:`CrossEntropyKnobs`):

``dtype``   logits element type (f32, f16, bf16, f64); math in f32 (f64 for f64)
``mode``    forward: ``nll`` (log-probability input: loss = −w[t]·x[t], one thread a row),
            ``plain`` (class-index targets, optional class weights), ``smooth``
            (class-index targets with label smoothing: also accumulates Σ w_c·x_c), ``prob``
            (soft targets: a second (M, N) operand of probabilities); backward adds ``nll``
            (input already log-probabilities: dx = −w[t]·g at the target, 0 elsewhere; x is not
            read)
``vec``, ``tpr``, ``rows``, ``chunks``, ``cluster``
            the row geometry (:class:`~baracuda_dsl.common.rows.RowGeometry`): the SKU serves
            ``N <= tpr·chunks·vec·cluster`` from registers; ``chunks = 0`` is loop mode for any N
            (online max / sum-exp); clusters on sm90a only

Targets are read as int32 words (``ts`` = 1 for int32 targets, 2 for int64), so one SKU serves
both index dtypes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ....common.rows import ByDtype, RowEngine, RowGeometry, WideRows
from ....dtypes import FP4
from ....jit import KernelTemplate, LaunchGeometry, params, register

DTYPES = tuple(d.short for d in FP4)
FW_MODES = ("plain", "smooth", "prob")
BW_MODES = ("plain", "smooth", "prob", "nll")
BUCKETS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
HALF_DTYPES = ("f16", "bf16")

#: forward flag bits
HAS_W, WRITE_LOSS, WRITE_ROWS, WRITE_LSE, HAS_STATUS = 1, 2, 4, 8, 16
#: backward flag bits (HAS_W and HAS_STATUS shared); G_ROW: per-row upstream gradient (none),
#: G_MEAN: divide the scalar upstream gradient by the total weight
G_ROW, G_MEAN = 32, 64

SLOTS = 8  # reduction slots (max, sum-exp, Σa·x, Σa, and parities)

#: element-wise loop for short misaligned rows (N <= SMALL_GENERIC_MAX): a warp per row
SMALL_GENERIC = RowGeometry(vec=1, tpr=32, rows=4, chunks=0, cluster=1)
SMALL_GENERIC_MAX = 2048

#: forward: four 16-byte vectors a thread up to 1024 threads (32768 elements, 16384 for f64);
#: long rows on sm90a: clusters of half-size (512-thread) slices, then full slices; for the half
#: types (f16, bf16) "wide" alternatives — the same bucket with half the threads per row and
#: twice the vectors per thread, and clusters of 512-thread × 32K-element slices — that
#: :class:`~baracuda_dsl.ops.losses.cross_entropy.CrossEntropyTuning` can switch to
FW_ROWS = RowEngine(
    slots=SLOTS, buckets=BUCKETS, caps=ByDtype(32768, 32768, 32768, 16384),
    per_thread=ByDtype.vectors(4), max_tpr=1024,
    clusters=((2, True), (4, True), (8, True), (8, False)),
    wide=WideRows(dtypes=HALF_DTYPES, buckets=(4096, 8192, 16384, 32768), clusters=(2, 4, 8)),
    short_generic=SMALL_GENERIC, short_generic_max=SMALL_GENERIC_MAX)
#: backward: streams each row once (x read once either way), so no clusters / wide variants
BW_ROWS = dataclasses.replace(FW_ROWS, clusters=(), wide=None)

#: NLL forward: one thread per row (only the target element is read)
NLL_FW_GEO = RowGeometry(vec=1, tpr=1, rows=128, chunks=0, cluster=1)


@dataclass(frozen=True)
class CrossEntropyKnobs(RowGeometry):
    """Knobs of ``cross_entropy_fw`` / ``cross_entropy_bw``: the row geometry, the logits
    element type and the loss mode."""

    dtype: str
    mode: str


@dataclass(frozen=True)
class LossReduceKnobs:
    """Knobs of ``cross_entropy_reduce``: the loss element type (sums in its compute type)."""

    dtype: str


@dataclass(frozen=True)
class LceChunkKnobs(RowGeometry):
    """Knobs of ``lce_chunk``: the loop geometry, the logits compute type ``dtype`` (f32, f64),
    ``op`` (``fw`` statistics update, ``bw`` dlogits) and ``ddt`` (the dlogits / loss dtype)."""

    dtype: str
    op: str
    ddt: str


def _fw_space():
    for dt in DTYPES:
        for mode in FW_MODES:
            for g in FW_ROWS.space(dt):
                yield CrossEntropyKnobs.of(g, dtype=dt, mode=mode)
        yield CrossEntropyKnobs.of(NLL_FW_GEO, dtype=dt, mode="nll")


def _bw_space():
    for dt in DTYPES:
        for mode in BW_MODES:
            for g in BW_ROWS.space(dt):
                yield CrossEntropyKnobs.of(g, dtype=dt, mode=mode)


CROSS_ENTROPY_FW = register(KernelTemplate(
    name="cross_entropy_fw",
    family="losses",
    module="baracuda_dsl.ops.losses.kernels.cross_entropy",
    params=params("x:ptr t:ptr w:ptr p:ptr loss:ptr rl:ptr den:ptr lse:ptr st:ptr M:i32 N:i32 "
                  "xs:i64 ps:i64 ts:i32 ign:i64 eps:f64 flags:i32"),
    space=_fw_space,
    geometry=FW_ROWS.launch,
    knobs=CrossEntropyKnobs,
    arch_ok=CrossEntropyKnobs.arch_ok,
))

CROSS_ENTROPY_BW = register(KernelTemplate(
    name="cross_entropy_bw",
    family="losses",
    module="baracuda_dsl.ops.losses.kernels.cross_entropy_bw",
    params=params("x:ptr t:ptr w:ptr p:ptr lse:ptr g:ptr tw:ptr dx:ptr st:ptr M:i32 N:i32 "
                  "xs:i64 ps:i64 ds:i64 ts:i32 ign:i64 eps:f64 flags:i32"),
    space=_bw_space,
    geometry=BW_ROWS.launch,
    knobs=CrossEntropyKnobs,
    arch_ok=CrossEntropyKnobs.arch_ok,
))

REDUCE_THREADS = 1024


#: fixed-order Σ of the per-row losses / denominators: loss = Σl (sum) or Σl / Σd (mean)
LOSS_REDUCE = register(KernelTemplate(
    name="cross_entropy_reduce",
    family="losses",
    module="baracuda_dsl.ops.losses.kernels.cross_entropy",
    params=params("rl:ptr den:ptr out:ptr tw:ptr M:i32 rs:i64 flags:i32"),
    space=lambda: (LossReduceKnobs(dt) for dt in DTYPES),
    geometry=lambda k: LaunchGeometry(threads=REDUCE_THREADS, smem_bytes=2 * 32 * 8 + 64),
    knobs=LossReduceKnobs,
))

#: reduce flag bits
RED_MEAN, RED_TW = 1, 2


def _lce_space():
    """z (the chunk of logits) is f32 (f64 for f64 problems); ``ddt`` is the dtype of the
    backward's dlogits (the GEMM operand dtype); the vectorised and the generic loop."""
    for dt, ddts in (("f32", ("f32", "f16", "bf16")), ("f64", ("f64",))):
        for g in (FW_ROWS.loop(dt), FW_ROWS.generic()):
            for ddt in ddts:
                yield LceChunkKnobs.of(g, dtype=dt, op="fw", ddt=ddt)
                yield LceChunkKnobs.of(g, dtype=dt, op="bw", ddt=ddt)


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
    geometry=FW_ROWS.launch,
    knobs=LceChunkKnobs,
))

#: lce flag bits: FIRST chunk (initialise stats), LAST chunk (finalise); HAS_STATUS, G_ROW and
#: G_MEAN as above.  ``stats`` is (M, LCE_STATS) of the compute type: running max, running
#: sum-exp, target logit, lse, row loss, row denominator (1, or 0 for ignored / bad targets).
LCE_FIRST, LCE_LAST = 1, 2
#: fw, last chunk: also write the row loss into ``dz`` (``ddt``: the loss dtype, reduction none)
#: and lse into ``tw`` (compute type); the backward op reads lse from ``stats`` (one per row)
LCE_WRITE_LOSS, LCE_WRITE_LSE = 128, 256
LCE_STATS = 6
