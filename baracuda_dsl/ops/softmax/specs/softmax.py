"""Template specs for the softmax family: softmax / log_softmax forward, the shared backward
(softmax, log_softmax and sparsemax gradients) and the sparsemax forward.

A row is the unit-stride softmax axis (length ``N``); up to three strided groups of outer dims
address the rows (as the row norms).  Knobs (:class:`SoftmaxKnobs`): ``dtype`` (f32, f16, bf16,
f64; math in f32, f64 for f64) and the row geometry ``vec``, ``tpr``, ``rows``, ``chunks``,
``cluster`` (:class:`~baracuda_dsl.common.rows.RowGeometry`: the SKU serves
``N <= tpr·chunks·vec·cluster`` from registers; ``chunks = 0`` is loop mode for any ``N``, the
row re-read; clusters on sm90a only).

softmax vs log_softmax (forward) and softmax / log_softmax / sparsemax (backward) are runtime
flags of one SKU, not knobs: the branch is uniform and only changes the final element-wise step.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....common.rows import ByDtype, RowEngine, RowGeometry
from ....dtypes import FP4
from ....jit import KernelTemplate, params, register

DTYPES = tuple(d.short for d in FP4)
#: row-length buckets kept in registers (the largest ones per dtype are cut by the caps)
BUCKETS = (512, 2048, 4096, 8192, 16384, 32768)
SLOTS = 4  # reduction slots: two values × two parities (iterative reductions alternate)
#: vectors (of 16 bytes) each thread holds per operand in a register bucket
CHUNKS = 4

#: forward: 32 elements a thread (16 for f64) at 1024 threads.  Cluster SKUs (sm90a): full
#: 1024-thread slices of 2, 4 or 8 CTAs (8 × 32K = 256K two-byte / f32 elements) and half-size
#: slices (512 threads: at <= 64 registers a thread two such CTAs share an SM, so one CTA's
#: exp / convert / reduce phase overlaps the other's loads); :class:`SoftmaxTuning`'s ladders
#: pick among them (benchmarks/sweep_softmax.py times them all).
FW_ROWS = RowEngine(
    slots=SLOTS, buckets=BUCKETS, caps=ByDtype(32768, 32768, 32768, 16384),
    per_thread=ByDtype.vectors(CHUNKS), max_tpr=1024,
    clusters=((2, False), (4, False), (8, False), (2, True), (4, True), (8, True)))
#: backward: holds dy and y, 32 two-byte (kept packed), 16 f32 or 8 f64 elements a thread
BW_ROWS = RowEngine(
    slots=SLOTS, buckets=BUCKETS, caps=ByDtype(16384, 32768, 32768, 8192),
    per_thread=ByDtype.vectors(CHUNKS), max_tpr=1024,
    clusters=((2, False), (4, False), (8, False)))
#: sparsemax forward: iterates a data-dependent number of times per row, so a CTA whose rows
#: span several warps holds a single row (its barriers stay CTA-uniform); no clusters
SPARSEMAX_ROWS = RowEngine(
    slots=SLOTS, buckets=BUCKETS, caps=FW_ROWS.caps, per_thread=FW_ROWS.per_thread,
    max_tpr=1024, solo_rows=True)


@dataclass(frozen=True)
class SoftmaxKnobs(RowGeometry):
    """Knobs of ``softmax_fw`` / ``softmax_bw`` / ``sparsemax_fw``: the row geometry and the
    element type."""

    dtype: str


def _space(engine: RowEngine):
    for dt in DTYPES:
        for g in engine.space(dt):
            yield SoftmaxKnobs.of(g, dtype=dt)


_ROW = "M:i32 N:i32 s1:i32 s2:i32 "

SOFTMAX_FW = register(KernelTemplate(
    name="softmax_fw",
    family="softmax",
    module="baracuda_dsl.ops.softmax.kernels.softmax",
    params=params("x:ptr y:ptr " + _ROW + "x0:i64 x1:i64 x2:i64 y0:i64 y1:i64 y2:i64 flags:i32"),
    space=lambda: _space(FW_ROWS),
    geometry=FW_ROWS.launch,
    knobs=SoftmaxKnobs,
    arch_ok=SoftmaxKnobs.arch_ok,
))

SOFTMAX_BW = register(KernelTemplate(
    name="softmax_bw",
    family="softmax",
    module="baracuda_dsl.ops.softmax.kernels.softmax_bw",
    params=params("dy:ptr y:ptr dx:ptr " + _ROW + "dy0:i64 dy1:i64 dy2:i64 y0:i64 y1:i64 y2:i64 "
                  "dx0:i64 dx1:i64 dx2:i64 mode:i32"),
    space=lambda: _space(BW_ROWS),
    geometry=BW_ROWS.launch,
    knobs=SoftmaxKnobs,
    arch_ok=SoftmaxKnobs.arch_ok,
))

SPARSEMAX_FW = register(KernelTemplate(
    name="sparsemax_fw",
    family="softmax",
    module="baracuda_dsl.ops.softmax.kernels.sparsemax",
    params=params("x:ptr y:ptr " + _ROW + "x0:i64 x1:i64 x2:i64 y0:i64 y1:i64 y2:i64 flags:i32"),
    space=lambda: _space(SPARSEMAX_ROWS),
    geometry=SPARSEMAX_ROWS.launch,
    knobs=SoftmaxKnobs,
))

#: forward flag bit: write log_softmax instead of softmax
LOG = 1
#: backward modes
MODE_SOFTMAX, MODE_LOG, MODE_SPARSEMAX = 0, 1, 2
