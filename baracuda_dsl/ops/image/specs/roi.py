"""Template specs of the region-of-interest kernels behind ``RoIAlignPlan`` / ``RoIPoolPlan``
(``roi_fw``) and ``RoIAlignBackwardPlan`` / ``RoIPoolBackwardPlan`` (``roi_bw``).

One generic kernel per direction serves both ops (a knob) on run-time extents and strides, so
the SKUs differ only in:

``dtype``  element dtype of the input, boxes and outputs: f32, f16, bf16, f64 (coordinates and
           sums in f32 for the half types and f32, f64 for f64)
``op``     ``align`` (torchvision roi_align: bilinear samples averaged per bin) or ``pool``
           (torchvision roi_pool: the max of each quantised bin, int64 argmax ``h·W + w``)

``roi_fw``: one thread per output element of the dense (K, C, PH, PW) output.  ``roi_bw``: three
run-time phases of one kernel (``phase``): 0 zeroes the accumulation buffer (N·C·H·W, one thread
an element), 1 scatters ``dy`` into it with atomic adds (one thread per ``dy`` element),
2 casts the buffer into ``dx`` (half types only: f32 / f64 accumulate straight into ``dx``).

Parameter groups (all Int64 but ``scale``): ``e`` = (N, C, H, W, PH, PW, sampling_ratio,
aligned); strides of x / dy (4), boxes (2), argmax (4); ``scale`` = spatial_scale (f64).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ....jit import KernelTemplate, LaunchGeometry, params, register

THREADS = 256
DTYPES = ("f32", "f16", "bf16", "f64")
OPS = ("align", "pool")
#: Int64 parameter groups after the pointers, ``n`` (and the backward's ``phase``), in ABI order
FW_GROUPS = (8, 4, 2, 1)       # e, x strides, boxes strides, want_idx
BW_GROUPS = (8, 4, 2, 4)       # e, dy strides, boxes strides, argmax strides


@dataclass(frozen=True)
class RoiKnobs:
    """One ``roi_fw`` / ``roi_bw`` SKU: element ``dtype`` (short name) and ``op`` (align /
    pool)."""

    dtype: str
    op: str


def _space():
    return (RoiKnobs(dt, op) for dt, op in product(DTYPES, OPS))


def _group(prefix: str, k: int) -> str:
    return " ".join(f"{prefix}{i}:i64" for i in range(k))


_FW_PARAMS = ("x:ptr boxes:ptr y:ptr idx:ptr n:i64 " + _group("e", 8) + " " + _group("xs", 4)
              + " " + _group("bs", 2) + " want_idx:i64 scale:f64")
_BW_PARAMS = ("dy:ptr boxes:ptr idx:ptr acc:ptr dx:ptr n:i64 phase:i64 " + _group("e", 8) + " "
              + _group("gs", 4) + " " + _group("bs", 2) + " " + _group("is", 4) + " scale:f64")

ROI_FW = register(KernelTemplate(
    name="roi_fw",
    family="image",
    module="baracuda_dsl.ops.image.kernels.roi_fw",
    params=params(_FW_PARAMS),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=RoiKnobs,
))

ROI_BW = register(KernelTemplate(
    name="roi_bw",
    family="image",
    module="baracuda_dsl.ops.image.kernels.roi_bw",
    params=params(_BW_PARAMS),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=RoiKnobs,
))
