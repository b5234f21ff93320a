"""Template spec of the counting kernel behind ``BincountPlan`` and ``HistogramPlan``.

Knobs:
``mode``     ``bincount`` (integer values are their own bin), ``uniform`` (torch.histc: equal bins
             over [lo, hi]) or ``edges`` (numpy.histogram: a sorted float64 edge array, bins
             half-open except the last, found by binary search)
``dtype``    value dtype: every integer dtype for ``bincount``; f32 f16 bf16 f64 and every integer
             dtype for ``uniform`` / ``edges``
``weights``  ``none`` (int64 counts) or the weight dtype f32 f16 bf16 f64 (sums in float32;
             float64 for f64 weights)

Each CTA keeps a private histogram of up to ``SMEM_BINS`` bins in shared memory (shared-memory
atomics), then adds it to the output with one global atomic per non-zero bin; more bins go
straight to global atomics.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....jit import KernelTemplate, LaunchGeometry, params, register

THREADS = 256
SMEM_BINS = 4096
INT_VALUES = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
FLOAT_VALUES = ("f32", "f16", "bf16", "f64")
WEIGHTS = ("none", "f32", "f16", "bf16", "f64")
MODES = ("bincount", "uniform", "edges")


@dataclass(frozen=True)
class HistogramKnobs:
    """One ``histogram`` SKU: ``mode``, value ``dtype`` and ``weights`` (see the module doc)."""

    mode: str
    dtype: str
    weights: str


def acc_short(weights: str) -> str:
    """The accumulator/output dtype: i64 counts, f64 for f64 weights, f32 for other weights."""
    return "i64" if weights == "none" else ("f64" if weights == "f64" else "f32")


def _space():
    for mode in MODES:
        values = INT_VALUES if mode == "bincount" else FLOAT_VALUES + INT_VALUES
        for dt in values:
            for w in WEIGHTS:
                yield HistogramKnobs(mode, dt, w)


def _smem(k: HistogramKnobs) -> int:
    return SMEM_BINS * (4 if acc_short(k.weights) == "f32" else 8) + 64


HISTOGRAM = register(KernelTemplate(
    name="histogram",
    family="histogram",
    module="baracuda_dsl.ops.histogram.kernels.histogram",
    params=params("x:ptr w:ptr edges:ptr out:ptr n:i64 xs:i64 ws:i64 bins:i32 nsteps:i32 "
                  "lo:f64 hi:f64 scale:f64 priv:i32"),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=_smem(k)),
    knobs=HistogramKnobs,
))
