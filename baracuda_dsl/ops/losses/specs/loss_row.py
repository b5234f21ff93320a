"""Template specs of the row-structured losses (cosine_embedding, multi_margin, multilabel_margin,
triplet_margin; forward and backward) and of the fixed-order batch reduction that finishes the
``sum`` / ``mean`` reductions of these losses and of CTC.

One CTA per row (``tpr`` threads, 32 for rows of at most :data:`SHORT_ROW` elements, 256 beyond),
loop mode for any row length: elements are read with their strides, one at a time (rows are
re-read from L1/L2 by the second pass of the backward).  Knobs:

``dtype``  element type (f32, f16, bf16, f64); math in f32 (f64 for f64)
``op``     ``cos`` (cosine_embedding), ``mm1`` / ``mm2`` (multi_margin with p = 1 / 2), ``mlm``
           (multilabel_margin), ``trip`` (triplet_margin)
``tpr``    threads per row (= the block)

``loss_finalize`` sums a per-row vector of compute-type losses in a fixed order (one CTA),
scales it and writes the scalar in the loss dtype: deterministic, bit-identical reruns.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....dtypes import FP4
from ....jit import KernelTemplate, LaunchGeometry, params, register

DTYPES = tuple(d.short for d in FP4)
OPS = ("cos", "mm1", "mm2", "mlm", "trip")
TPRS = (32, 256)
#: rows up to this length use the 32-thread SKU
SHORT_ROW = 256
SLOTS = 4
FINAL_THREADS = 256

#: flag bits of the row kernels
WRITE_OUT = 1    # forward: write the per-row loss in the loss dtype (reduction none)
WRITE_PART = 2   # forward: write the per-row loss in the compute type (for loss_finalize)
HAS_W = 4        # multi_margin: class weights given
SWAP = 8         # triplet: distance swap
WANT_B = 16      # backward: gradient of the second input (cos: x2, trip: positive)
WANT_C = 32      # backward: gradient of the third input (trip: negative)
WANT_A = 64      # backward: gradient of the first input


@dataclass(frozen=True)
class LossRowKnobs:
    """A SKU of ``loss_row_fw`` / ``loss_row_bw``: element ``dtype``, loss ``op`` (:data:`OPS`),
    ``tpr`` threads per row (:data:`TPRS`)."""

    dtype: str
    op: str
    tpr: int


@dataclass(frozen=True)
class LossFinalizeKnobs:
    """A SKU of ``loss_finalize``: the loss ``dtype`` (the partials are its compute type)."""

    dtype: str


def tpr_for(n: int) -> int:
    """Threads per row for rows of length ``n``."""
    return TPRS[0] if n <= SHORT_ROW else TPRS[1]


def _space():
    for dt in DTYPES:
        for op in OPS:
            for tpr in TPRS:
                yield LossRowKnobs(dtype=dt, op=op, tpr=tpr)


def row_geometry(k: LossRowKnobs) -> LaunchGeometry:
    """One CTA of ``tpr`` threads; beyond one warp, the row all-reduce's shared slots."""
    smem = 0 if k.tpr <= 32 else (k.tpr // 32) * SLOTS * 8 + 64
    return LaunchGeometry(threads=k.tpr, smem_bytes=smem)


def finalize_geometry(k: LossFinalizeKnobs) -> LaunchGeometry:
    """One CTA of :data:`FINAL_THREADS` threads and its all-reduce slots."""
    return LaunchGeometry(threads=FINAL_THREADS,
                          smem_bytes=(FINAL_THREADS // 32) * SLOTS * 8 + 64)


LOSS_ROW_FW = register(KernelTemplate(
    name="loss_row_fw",
    family="losses",
    module="baracuda_dsl.ops.losses.kernels.loss_row",
    params=params("a:ptr b:ptr c:ptr t:ptr w:ptr out:ptr part:ptr st:ptr has_st:i32 M:i32 N:i32 "
                  "as0:i64 as1:i64 bs0:i64 bs1:i64 cs0:i64 cs1:i64 ts0:i64 ts1:i64 ws0:i64 "
                  "os0:i64 margin:f64 p:f64 eps:f64 flags:i32"),
    space=_space,
    geometry=row_geometry,
    knobs=LossRowKnobs,
))

LOSS_ROW_BW = register(KernelTemplate(
    name="loss_row_bw",
    family="losses",
    module="baracuda_dsl.ops.losses.kernels.loss_row_bw",
    params=params("dl:ptr a:ptr b:ptr c:ptr t:ptr w:ptr da:ptr db:ptr dc:ptr aux:ptr M:i32 "
                  "N:i32 as0:i64 as1:i64 bs0:i64 bs1:i64 cs0:i64 cs1:i64 ts0:i64 ts1:i64 "
                  "ws0:i64 das0:i64 das1:i64 dbs0:i64 dbs1:i64 dcs0:i64 dcs1:i64 dls:i64 "
                  "scale:f64 margin:f64 p:f64 eps:f64 flags:i32"),
    space=_space,
    geometry=row_geometry,
    knobs=LossRowKnobs,
))


def _final_space():
    for dt in DTYPES:
        yield LossFinalizeKnobs(dtype=dt)


LOSS_FINALIZE = register(KernelTemplate(
    name="loss_finalize",
    family="losses",
    module="baracuda_dsl.ops.losses.kernels.loss_row",
    params=params("part:ptr out:ptr M:i32 scale:f64"),
    space=_final_space,
    geometry=finalize_geometry,
    knobs=LossFinalizeKnobs,
))
