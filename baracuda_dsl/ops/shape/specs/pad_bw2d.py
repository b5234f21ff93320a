"""Template spec of ``pad_bw2d``: the pad backward fast path when at most the last two dims are
padded (reflect, replicate, circular) and the leading dims collapse into one batch dim — a warp per
dx row, Int32 index math, the same fixed summation order as ``pad_bw``.  Knobs: ``dtype`` (f32,
f16, bf16, f64) and ``mode``.  (A module of its own so that editing it leaves the other remap
templates' source hashes, and so their cached cubins, alone.)"""

from __future__ import annotations

from ....jit import KernelTemplate, LaunchGeometry, params, register
from .remap import BW_DTYPES

BW2D_MODES = ("reflect", "replicate", "circular")
BW2D_THREADS = 256
BW2D_WARPS = BW2D_THREADS // 32
BW2D_COLS = 32 * 8    # columns per warp (kernels.pad_bw2d.CW)


def _bw2d_space():
    for dt in BW_DTYPES:
        for mode in BW2D_MODES:
            yield dict(dtype=dt, mode=mode)


PAD_BW2D = register(KernelTemplate(
    name="pad_bw2d",
    family="shape",
    module="baracuda_dsl.ops.shape.kernels.pad_bw2d",
    params=params("dy:ptr dx:ptr nrows:i32 ncb:i32 h:i32 w:i32 ph:i32 pw:i32 lh:i32 lw:i32 "
                  "sb:i32 sh:i32 sw:i32"),
    space=_bw2d_space,
    geometry=lambda k: LaunchGeometry(threads=BW2D_THREADS, smem_bytes=0),
))
