"""Template specs of the pooling kernels behind ``PoolPlan`` / ``AdaptivePoolPlan`` (``pool_fw``)
and ``PoolBackwardPlan`` / ``AdaptivePoolBackwardPlan`` (``pool_bw``).

One generic kernel per direction serves 1-, 2- and 3-D pooling (spatial dims padded in front to
three with size-1 dims), fixed and adaptive windows (a run-time flag) and both memory layouts
(NCHW / NHWC: the strides and a run-time channels-last flag), so the SKUs differ only in:

``dtype``  element dtype: f32, f16, bf16, f64 (f32 accumulation for the half types, f64 for f64)
``op``     ``max`` (NaN wins, int64 argmax indices into the flattened spatial input) or ``avg``
``wide``   Int64 index math (problems with an element count, element offset or adaptive window
           product >= 2^31); otherwise Int32 index math with every division a multiply-shift by
           a host-computed magic number (``common.spatial.fast_divisor``)

``pool_fw``: one thread per output; ``pool_fw_runs`` (narrow, 8 SKUs): one thread per run of
:data:`OUTPUTS_PER_THREAD` outputs along the last spatial dim (used when that extent is at least
the run length: the run shares the index decomposition and the outer windows, and its taps load
together).  ``pool_bw``: one thread per input element, summing the
gradients of every output whose window covers it in a fixed order (deterministic, no atomics).

Parameter groups (all Int64): ``e`` = (N, C, Id, Ih, Iw, Od, Oh, Ow); ``w`` = kernel (3), stride
(3), padding (3), dilation (3); per-operand strides over (n, c, d, h, w); flags; ``mg`` = the
(magic, shift) pairs of the element-index divisors C, E0, E1, E2 (the extents the thread index is
decomposed over: the output's in the forward, the input's in the backward); ``wm`` = per spatial
dim the (magic, shift) pairs of its dilation, output extent, stride and input extent.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ....jit import KernelTemplate, LaunchGeometry, params, register

THREADS = 256
DTYPES = ("f32", "f16", "bf16", "f64")
OPS = ("max", "avg")
#: Int64 parameter groups of both kernels, in ABI order after the pointers and ``n``
FW_GROUPS = (8, 12, 5, 5, 5, 8, 24)      # e, w, x strides, y / indices strides, flags, mg, wm
BW_GROUPS = (8, 12, 5, 5, 5, 4, 8, 24)   # e, w, dy / indices / dx strides, flags, mg, wm


@dataclass(frozen=True)
class PoolKnobs:
    """One ``pool_fw`` / ``pool_fw_runs`` / ``pool_bw`` SKU: element ``dtype`` (short name),
    ``op`` (max / avg), ``wide`` (Int64 index math) and ``runs`` (forward outputs per thread
    along the last spatial dim: 1, or :data:`OUTPUTS_PER_THREAD` in ``pool_fw_runs``)."""

    dtype: str
    op: str
    wide: bool = False
    runs: int = 1


#: outputs one ``pool_fw_runs`` thread computes along the output's last spatial dim
OUTPUTS_PER_THREAD = 4


def outputs_per_thread(knobs: "PoolKnobs") -> int:
    """How many consecutive outputs along the last spatial dim one forward thread of this SKU
    computes."""
    return knobs.runs


def _runs_space():
    return (PoolKnobs(dt, op, False, OUTPUTS_PER_THREAD) for dt, op in product(DTYPES, OPS))


def _space():
    return (PoolKnobs(dt, op, wide) for dt, op, wide in product(DTYPES, OPS, (False, True)))


def _group(prefix: str, k: int) -> str:
    return " ".join(f"{prefix}{i}:i64" for i in range(k))


_FW_PARAMS = ("x:ptr y:ptr idx:ptr n:i64 " + _group("e", 8) + " " + _group("w", 12) + " "
              + _group("xs", 5) + " " + _group("ys", 5) + " "
              + "adaptive:i64 cip:i64 divisor:i64 cl:i64 want_idx:i64 "
              + _group("mg", 8) + " " + _group("wm", 24))
_BW_PARAMS = ("dy:ptr dx:ptr idx:ptr n:i64 " + _group("e", 8) + " " + _group("w", 12) + " "
              + _group("gs", 5) + " " + _group("is", 5) + " " + _group("xs", 5) + " "
              + "adaptive:i64 cip:i64 divisor:i64 cl:i64 " + _group("mg", 8) + " "
              + _group("wm", 24))

POOL_FW = register(KernelTemplate(
    name="pool_fw",
    family="pooling",
    module="baracuda_dsl.ops.pooling.kernels.pool_fw",
    params=params(_FW_PARAMS),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=PoolKnobs,
))

POOL_FW_RUNS = register(KernelTemplate(
    name="pool_fw_runs",
    family="pooling",
    module="baracuda_dsl.ops.pooling.kernels.pool_fw",
    params=params(_FW_PARAMS),
    space=_runs_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=PoolKnobs,
))

POOL_BW = register(KernelTemplate(
    name="pool_bw",
    family="pooling",
    module="baracuda_dsl.ops.pooling.kernels.pool_bw",
    params=params(_BW_PARAMS),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=PoolKnobs,
))
