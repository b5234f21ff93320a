"""Template specs of fractional max pooling (``FractionalMaxPoolPlan`` →
``fractional_fw``; ``FractionalMaxPoolBackwardPlan`` → ``fractional_bw``), 2-D and 3-D (2-D
problems padded in front with a size-1 depth dim), NCHW or NHWC, window mode (torch / seed) and
shapes all run-time parameters.

``fractional_fw`` SKU = ``dtype`` (f32, f16, bf16, f64): 4 per arch.  One thread per output.
``fractional_bw`` SKU = ``dtype`` × ``method``: ``gather`` (one thread per input element summing,
in a fixed order, the gradients of the candidate outputs whose saved index is this element:
deterministic) or ``atomic`` (zero, scatter with atomic adds, and for f16 / bf16 a conversion
from an f32 workspace: three launches, non-deterministic): 8 per arch.

Parameter groups (Int64 unless said): ``e`` = (N, C, Id, Ih, Iw, Od, Oh, Ow); ``k`` = kernel
(3); per-operand strides over (n, c, d, h, w); samples strides (n, c, k); fw flags (torch_mode,
channels_last, want_idx, sample column of d, h, w); fw ``alpha`` (3 × f64); bw flags
(channels_last, stage).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ....jit import KernelTemplate, LaunchGeometry, params, register
from .pool import THREADS  # one block size for the family (pool_common.element_index)

DTYPES = ("f32", "f16", "bf16", "f64")
METHODS = ("gather", "atomic")
#: scalar groups after the four pointers and ``n`` (the last fw group: three f64 alphas)
FW_GROUPS = (8, 3, 5, 5, 3, 6, 3)   # e, k, x strides, y / idx strides, u strides, flags, alpha
BW_GROUPS = (8, 3, 5, 5, 5, 5, 2)   # e, k, dy, idx, dx, target strides, flags


@dataclass(frozen=True)
class FractionalKnobs:
    """One ``fractional_fw`` SKU: element ``dtype`` (short name)."""

    dtype: str


@dataclass(frozen=True)
class FractionalBwKnobs:
    """One ``fractional_bw`` SKU: element ``dtype`` and ``method`` (gather / atomic)."""

    dtype: str
    method: str = "gather"


def _g(prefix: str, k: int, kind: str = "i64") -> str:
    return " ".join(f"{prefix}{i}:{kind}" for i in range(k))


_FW = ("x:ptr y:ptr idx:ptr u:ptr n:i64 " + " ".join(
    _g(p, k) for p, k in zip(("e", "k", "xs", "ys", "us", "fl"), FW_GROUPS[:-1]))
    + " " + _g("alpha", 3, "f64"))
_BW = ("dy:ptr dx:ptr idx:ptr ws:ptr n:i64 " + " ".join(
    _g(p, k) for p, k in zip(("e", "k", "gs", "js", "xs", "ts", "fl"), BW_GROUPS)))

FRACTIONAL_FW = register(KernelTemplate(
    name="fractional_fw",
    family="pooling",
    module="baracuda_dsl.ops.pooling.kernels.fractional_fw",
    params=params(_FW),
    space=lambda: (FractionalKnobs(dt) for dt in DTYPES),
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=FractionalKnobs,
))

FRACTIONAL_BW = register(KernelTemplate(
    name="fractional_bw",
    family="pooling",
    module="baracuda_dsl.ops.pooling.kernels.fractional_bw",
    params=params(_BW),
    space=lambda: (FractionalBwKnobs(dt, m) for dt, m in product(DTYPES, METHODS)),
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=FractionalBwKnobs,
))
