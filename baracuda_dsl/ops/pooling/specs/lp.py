"""Template specs of LP pooling (``LPPoolPlan`` → ``lp_fw``; ``LPPoolBackwardPlan`` → ``lp_fw``
stage ``coef`` then ``lp_bw``), 1-/2-/3-D (padded in front to three dims), NCHW or NHWC,
``norm_type`` a run-time f64 parameter.

``lp_fw`` SKU = ``dtype`` × ``stage``: ``out`` writes ``y`` = (Σ_window x^p · K/cnt)^(1/p);
``coef`` writes, per output, the factor the backward spreads over its window into an f32 (f64
for f64) workspace: 8 per arch.  ``lp_bw`` SKU = ``dtype``: 4 per arch (one thread per input
element gathering the coefficients of the windows covering it, fixed order, deterministic).

Parameter groups (Int64 unless said): ``e`` = (N, C, Id, Ih, Iw, Od, Oh, Ow); ``w`` = kernel (3),
stride (3); per-operand strides over (n, c, d, h, w); flags (channels_last); ``p`` (f64).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ....jit import KernelTemplate, LaunchGeometry, params, register
from .fractional import DTYPES, THREADS

STAGES = ("out", "coef")
FW_GROUPS = (8, 6, 5, 5, 5, 1, 1)   # e, w, x strides, y strides, dy strides, flags, p (f64)
BW_GROUPS = (8, 6, 5, 5, 1, 1)      # e, w, x strides, dx strides, flags, p (f64)


@dataclass(frozen=True)
class LPKnobs:
    """One ``lp_fw`` SKU: element ``dtype`` and ``stage`` (out / coef)."""

    dtype: str
    stage: str = "out"


@dataclass(frozen=True)
class LPBwKnobs:
    """One ``lp_bw`` SKU: element ``dtype``."""

    dtype: str


def _g(prefix: str, k: int) -> str:
    return " ".join(f"{prefix}{i}:i64" for i in range(k))


_FW = ("x:ptr y:ptr dy:ptr ws:ptr n:i64 " + " ".join(
    _g(p, k) for p, k in zip(("e", "w", "xs", "ys", "gs", "fl"), FW_GROUPS[:-1])) + " p:f64")
_BW = ("x:ptr dx:ptr ws:ptr unused:ptr n:i64 " + " ".join(
    _g(p, k) for p, k in zip(("e", "w", "xs", "dxs", "fl"), BW_GROUPS[:-1])) + " p:f64")

LP_FW = register(KernelTemplate(
    name="lp_fw",
    family="pooling",
    module="baracuda_dsl.ops.pooling.kernels.lp_fw",
    params=params(_FW),
    space=lambda: (LPKnobs(dt, s) for dt, s in product(DTYPES, STAGES)),
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=LPKnobs,
))

LP_BW = register(KernelTemplate(
    name="lp_bw",
    family="pooling",
    module="baracuda_dsl.ops.pooling.kernels.lp_bw",
    params=params(_BW),
    space=lambda: (LPBwKnobs(dt) for dt in DTYPES),
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=LPBwKnobs,
))
