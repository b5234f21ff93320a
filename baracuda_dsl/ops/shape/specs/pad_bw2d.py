"""Template spec of ``pad_bw2d``: the pad backward fast path when at most the last two dims are
padded (reflect, replicate, circular) and the leading dims collapse into one batch dim — a warp per
dx row, Int32 index math, the same fixed summation order as ``pad_bw``.  Knobs
(:class:`PadBw2dKnobs`): ``dtype`` (f32, f16, bf16, f64) and ``mode``."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ....jit import KernelTemplate, LaunchGeometry, params, register
from .remap import BW_DTYPES

BW2D_MODES = ("reflect", "replicate", "circular")
BW2D_THREADS = 256
BW2D_WARPS = BW2D_THREADS // 32
BW2D_LANE_COLS = 8                   # columns per lane
BW2D_COLS = 32 * BW2D_LANE_COLS      # columns per warp (one column chunk)


@dataclass(frozen=True)
class PadBw2dKnobs:
    """One ``pad_bw2d`` SKU: element dtype (short name) and pad mode."""

    dtype: str
    mode: str


def _bw2d_space():
    return (PadBw2dKnobs(*k) for k in product(BW_DTYPES, BW2D_MODES))


PAD_BW2D = register(KernelTemplate(
    name="pad_bw2d",
    family="shape",
    module="baracuda_dsl.ops.shape.kernels.pad_bw2d",
    params=params("dy:ptr dx:ptr nrows:i32 ncb:i32 h:i32 w:i32 ph:i32 pw:i32 lh:i32 lw:i32 "
                  "sb:i32 sh:i32 sw:i32"),
    space=_bw2d_space,
    geometry=lambda k: LaunchGeometry(threads=BW2D_THREADS, smem_bytes=0),
    knobs=PadBw2dKnobs,
))
