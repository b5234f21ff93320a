"""Template specs of the kernels behind ``GridSamplePlan`` / ``GridSampleBackwardPlan``
(``grid_sample_fw``, ``grid_sample_bw``, ``grid_sample_acc``) and ``AffineGridPlan`` /
``AffineGridBackwardPlan`` (``affine_grid``).

``grid_sample_fw`` / ``grid_sample_bw``: one thread per (n, output point), looping over the
channels (the grid point, its source coordinates and interpolation weights are computed once and
reused for every channel; the backward's grid gradient is that point's sum over the channels, so
it needs no atomics).  2-D and 3-D problems share the kernels (2-D = a depth-1 volume, a run-time
flag), as do the three padding modes and ``align_corners`` (run-time), so the SKUs differ in:

``dtype``  element dtype: f32, f16, bf16, f64 (f32 math for the half types, f64 for f64)
``mode``   ``bilinear`` (trilinear in 3-D), ``nearest`` or ``bicubic`` (2-D only)

``grid_sample_acc``: the backward's accumulator passes (zero it; cast it into ``grad_input``),
SKU = dtype.  ``affine_grid``: SKU = dtype × ``direction`` (``fw``: one thread per grid point;
``bw``: one CTA per (n, theta row), a fixed-order block reduction over the points).

Parameter groups (all Int64): ``e`` = (N, C, Id, Ih, Iw, Od, Oh, Ow); per-operand strides over
(n, c, d, h, w) for images and (n, d, h, w, component) for grids; flags.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ....jit import KernelTemplate, LaunchGeometry, params, register

THREADS = 256
DTYPES = ("f32", "f16", "bf16", "f64")
MODES = ("bilinear", "nearest", "bicubic")
DIRECTIONS = ("fw", "bw")
#: Int64 parameter groups in ABI order after the pointers and ``n``
FW_GROUPS = (8, 5, 5, 5, 3)          # e, x strides, grid strides, y strides, (pad, align, d3)
BW_GROUPS = (8, 5, 5, 5, 5, 5, 5)    # e, dy, x, grid, acc, d_grid strides, flags
ACC_GROUPS = (5, 5, 5, 1)            # extents (N, C, D, H, W), src strides, dst strides, op
AFFINE_GROUPS = (4, 3, 5, 2)         # (N, D, H, W), theta strides, grid strides, (align, d3)
#: dynamic shared memory of the ``affine_grid`` bw SKUs: 4 f64 sums per warp (+ alignment slack)
AFFINE_SMEM = (THREADS // 32) * 4 * 8 + 64


@dataclass(frozen=True)
class GridSampleKnobs:
    """One ``grid_sample_fw`` / ``grid_sample_bw`` SKU: element ``dtype`` (short name) and
    interpolation ``mode``."""

    dtype: str
    mode: str


@dataclass(frozen=True)
class GridAccKnobs:
    """One ``grid_sample_acc`` SKU: the element ``dtype`` of ``grad_input``."""

    dtype: str


@dataclass(frozen=True)
class AffineGridKnobs:
    """One ``affine_grid`` SKU: element ``dtype`` and ``direction`` (fw: theta → grid; bw:
    d_grid → d_theta)."""

    dtype: str
    direction: str


def _sample_space():
    return (GridSampleKnobs(dt, m) for dt, m in product(DTYPES, MODES))


def _acc_space():
    return (GridAccKnobs(dt) for dt in DTYPES)


def _affine_space():
    return (AffineGridKnobs(dt, d) for dt, d in product(DTYPES, DIRECTIONS))


def _group(prefix: str, k: int) -> str:
    return " ".join(f"{prefix}{i}:i64" for i in range(k))


_FW_PARAMS = ("x:ptr g:ptr y:ptr n:i64 " + _group("e", 8) + " " + _group("xs", 5) + " "
              + _group("gs", 5) + " " + _group("ys", 5) + " pad:i64 align:i64 d3:i64")
_BW_PARAMS = ("dy:ptr x:ptr g:ptr acc:ptr dg:ptr n:i64 " + _group("e", 8) + " "
              + _group("dys", 5) + " " + _group("xs", 5) + " " + _group("gs", 5) + " "
              + _group("as", 5) + " " + _group("dgs", 5) + " "
              + "pad:i64 align:i64 d3:i64 want_dx:i64 want_dg:i64")
_ACC_PARAMS = ("src:ptr dst:ptr n:i64 " + _group("e", 5) + " " + _group("ss", 5) + " "
               + _group("ds", 5) + " op:i64")
_AFFINE_PARAMS = ("th:ptr gr:ptr n:i64 " + _group("e", 4) + " " + _group("ts", 3) + " "
                  + _group("gs", 5) + " align:i64 d3:i64")

GRID_SAMPLE_FW = register(KernelTemplate(
    name="grid_sample_fw",
    family="image",
    module="baracuda_dsl.ops.image.kernels.grid_sample_fw",
    params=params(_FW_PARAMS),
    space=_sample_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=GridSampleKnobs,
))

GRID_SAMPLE_BW = register(KernelTemplate(
    name="grid_sample_bw",
    family="image",
    module="baracuda_dsl.ops.image.kernels.grid_sample_bw",
    params=params(_BW_PARAMS),
    space=_sample_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=GridSampleKnobs,
))

GRID_SAMPLE_ACC = register(KernelTemplate(
    name="grid_sample_acc",
    family="image",
    module="baracuda_dsl.ops.image.kernels.grid_sample_acc",
    params=params(_ACC_PARAMS),
    space=_acc_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=GridAccKnobs,
))

AFFINE_GRID = register(KernelTemplate(
    name="affine_grid",
    family="image",
    module="baracuda_dsl.ops.image.kernels.affine_grid",
    params=params(_AFFINE_PARAMS),
    space=_affine_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS,
                                      smem_bytes=AFFINE_SMEM if k.direction == "bw" else 0),
    knobs=AffineGridKnobs,
))
