"""Template spec of max_unpool (``MaxUnpoolPlan`` / ``MaxUnpoolBackwardPlan`` → ``max_unpool``),
1-/2-/3-D (padded in front to three dims), NCHW or NHWC, shapes run-time parameters.

SKU = ``dtype`` (f32, f16, bf16, f64) × ``direction``: ``fw`` (stage 0 zero-fills ``y``, one
thread per output element; stage 1 scatters ``y[n, c, idx] = x``, one thread per input element)
or ``bw`` (``dx = dy`` gathered at the indices, one thread per element of ``dx``): 8 per arch.
Out-of-range indices are skipped (fw) or give 0 (bw) and set ``status[0] = 1`` when a status word
is given.

Parameter groups (Int64): ``e`` = (N, C, Id, Ih, Iw, Od, Oh, Ow) with I the pooled (x / dx) and
O the unpooled (y / dy) extents; strides over (n, c, d, h, w) of x (or dx), y (or dy) and the
indices; flags (channels_last, stage, has_status).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ....jit import KernelTemplate, LaunchGeometry, params, register
from .fractional import DTYPES, THREADS

DIRECTIONS = ("fw", "bw")
GROUPS = (8, 5, 5, 5, 3)   # e, x strides, y strides, indices strides, flags


@dataclass(frozen=True)
class UnpoolKnobs:
    """One ``max_unpool`` SKU: element ``dtype`` and ``direction`` (fw / bw)."""

    dtype: str
    direction: str = "fw"


def _g(prefix: str, k: int) -> str:
    return " ".join(f"{prefix}{i}:i64" for i in range(k))


_P = ("x:ptr y:ptr idx:ptr status:ptr n:i64 " + " ".join(
    _g(p, k) for p, k in zip(("e", "xs", "ys", "js", "fl"), GROUPS)))

MAX_UNPOOL = register(KernelTemplate(
    name="max_unpool",
    family="pooling",
    module="baracuda_dsl.ops.pooling.kernels.unpool",
    params=params(_P),
    space=lambda: (UnpoolKnobs(dt, d) for dt, d in product(DTYPES, DIRECTIONS)),
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=UnpoolKnobs,
))
