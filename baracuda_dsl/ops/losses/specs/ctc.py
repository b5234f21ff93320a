"""Template specs of the CTC loss kernels (forward alpha recursion, backward beta recursion and
gradient).  One CTA of :data:`THREADS` threads per batch element; threads walk the positions of
the extended label sequence l' (length 2L+1); the T time steps run sequentially with one CTA
barrier each; alpha / beta rows live in the caller's workspace, so any T and target length work.
Knob: ``dtype`` (f32, f16, bf16, f64) — log-space math in f32 (f64 for f64).  Targets and lengths
are int64.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....dtypes import FP4
from ....jit import KernelTemplate, LaunchGeometry, params, register

DTYPES = tuple(d.short for d in FP4)
THREADS = 256
SLOTS = 4

#: flag bits shared by the kernels and the plans
CONCAT = 1      # targets are one concatenated 1-D array (else padded (N, S))
WRITE_OUT = 2   # forward: per-sample loss in the loss dtype (reduction none)
WRITE_PART = 4  # forward: per-sample loss in the compute type (for loss_finalize)
MEAN = 8        # divide the per-sample loss (forward part) / gradient (backward) by max(L, 1)
ZERO_INF = 16   # infinite losses (and their gradients) become 0

#: the forward kernel stores 1 into ``st[0]`` (when ``has_st``) for a label outside [0, C) or an
#: invalid length (input length outside [0, T], target length outside [0, S], concatenated
#: targets running past ``tot``); that sample's loss is NaN.


@dataclass(frozen=True)
class CTCKnobs:
    """A SKU of ``ctc_fw`` / ``ctc_bw``: the element ``dtype`` of log_probs (and the loss)."""

    dtype: str


def _space():
    for dt in DTYPES:
        yield CTCKnobs(dtype=dt)


def ctc_geometry(k: CTCKnobs) -> LaunchGeometry:
    """:data:`THREADS` threads; two all-reduce buffers (f64 offsets, compute-type values)."""
    return LaunchGeometry(threads=THREADS, smem_bytes=2 * (THREADS // 32) * SLOTS * 8 + 128)


CTC_FW = register(KernelTemplate(
    name="ctc_fw",
    family="losses",
    module="baracuda_dsl.ops.losses.kernels.ctc",
    params=params("lp:ptr tg:ptr il:ptr tl:ptr alpha:ptr nll:ptr out:ptr part:ptr st:ptr "
                  "has_st:i32 Tmax:i32 N:i32 C:i32 S:i32 blank:i32 l0:i64 l1:i64 l2:i64 "
                  "ts0:i64 ts1:i64 ils:i64 tls:i64 os0:i64 tot:i64 flags:i32"),
    space=_space,
    geometry=ctc_geometry,
    knobs=CTCKnobs,
))

CTC_BW = register(KernelTemplate(
    name="ctc_bw",
    family="losses",
    module="baracuda_dsl.ops.losses.kernels.ctc_bw",
    params=params("dl:ptr lp:ptr tg:ptr il:ptr tl:ptr alpha:ptr beta:ptr nll:ptr grad:ptr "
                  "Tmax:i32 N:i32 C:i32 S:i32 blank:i32 l0:i64 l1:i64 l2:i64 ts0:i64 ts1:i64 "
                  "ils:i64 tls:i64 g0:i64 g1:i64 g2:i64 dls:i64 tot:i64 scale:f64 flags:i32"),
    space=_space,
    geometry=ctc_geometry,
    knobs=CTCKnobs,
))
