"""Template specs of the non-maximum-suppression kernels behind ``NMSPlan``.

``nms_mask``: a (ceil(K/64), ceil(K/64)) grid of 64-thread CTAs; CTA (r, c) with r <= c compares
the 64 boxes of row block r (in decreasing-score order, through the sorted ``order``) with the
64 of column block c and writes one 64-bit word per row: bit j set when box ``c·64 + j`` comes
after the row's box and their IoU exceeds the threshold (and, with ``has_idx``, both boxes have
the same category).  SKUs: the box dtype (f32, f16, bf16, f64; IoU in f32, f64 for f64).

``nms_sweep``: one CTA of ``SWEEP_THREADS`` threads walks the boxes in order, keeping a box unless
a kept box suppressed it (a ``removed`` bit word per column block in the workspace, each word
owned by one thread), and writes the kept original indices and their count.  One SKU (it moves
only int64 indices and mask words).
"""

from __future__ import annotations

from dataclasses import dataclass

from ....jit import KernelTemplate, LaunchGeometry, params, register

BLOCK = 64            # boxes per mask word / per mask CTA
SWEEP_THREADS = 128
DTYPES = ("f32", "f16", "bf16", "f64")


@dataclass(frozen=True)
class NmsMaskKnobs:
    """One ``nms_mask`` SKU: the boxes' element ``dtype`` (short name)."""

    dtype: str


@dataclass(frozen=True)
class NmsSweepKnobs:
    """The single ``nms_sweep`` SKU (``block``: boxes per mask word, fixed at 64)."""

    block: int = BLOCK


NMS_MASK = register(KernelTemplate(
    name="nms_mask",
    family="image",
    module="baracuda_dsl.ops.image.kernels.nms_mask",
    params=params("boxes:ptr order:ptr idxs:ptr mask:ptr k:i64 cb:i64 bs0:i64 bs1:i64 is0:i64 "
                  "has_idx:i64 thr:f64"),
    space=lambda: (NmsMaskKnobs(dt) for dt in DTYPES),
    geometry=lambda k: LaunchGeometry(threads=BLOCK, smem_bytes=0),
    knobs=NmsMaskKnobs,
))

NMS_SWEEP = register(KernelTemplate(
    name="nms_sweep",
    family="image",
    module="baracuda_dsl.ops.image.kernels.nms_sweep",
    params=params("mask:ptr order:ptr removed:ptr keep:ptr count:ptr k:i64 cb:i64"),
    space=lambda: iter((NmsSweepKnobs(),)),
    geometry=lambda k: LaunchGeometry(threads=SWEEP_THREADS, smem_bytes=0),
    knobs=NmsSweepKnobs,
))
