"""Region-of-interest pooling over (N, C, H, W) images, forward and backward, with
torchvision.ops semantics: ``roi_align`` (Mask R-CNN's RoIAlign) and ``roi_pool`` (Fast R-CNN's
RoIPool).

Operands: ``x`` (N, C, H, W), any strides; ``boxes`` (K, 5) rows ``[batch_index, x1, y1, x2, y2]``
in x's dtype, any strides (the batch index is truncated to an int; a box whose index is outside
``[0, N)`` reads nothing: its outputs are 0 / argmax −1, its gradients are dropped); outputs dense
row-major (K, C, PH, PW).

roi_align (``RoIAlignPlan``): per bin the mean of ``grid_h × grid_w`` bilinear samples, ``grid``
= ``sampling_ratio`` when > 0, else ``ceil(roi_size / output_size)`` (adaptive); ``aligned``
shifts the box by −0.5 pixel (and allows boxes smaller than a pixel); samples with y < −1,
y > H, x < −1 or x > W are 0, others clamp to the image (torchvision's rules — the exact
formulas are in ``kernels/roi_common.py``).

roi_pool (``RoIPoolPlan``): the box rounded to the pixel grid (``round(coord · scale)``, at
least 1 pixel), split into ``PH × PW`` bins ``[floor(p·bin), ceil((p+1)·bin))`` clipped to the
image; each output is its bin's max (a NaN never wins; an empty bin gives 0) and ``argmax`` the
int64 flat index ``h·W + w`` of the winner in its image plane (−1 for empty bins).

Backward (``RoIAlignBackwardPlan``, ``RoIPoolBackwardPlan``): ``dx`` (dense (N, C, H, W)) =
the scatter of ``dy`` (any strides) through the forward's weights / saved argmax, by atomic adds
into an f32 buffer (f64 for f64): **non-deterministic** (the summation order depends on
scheduling; reruns may differ in the last bits).  f32 / f64 accumulate in ``dx`` itself (no
workspace); f16 / bf16 accumulate in a workspace of N·C·H·W f32 (``workspace_size()``) and cast.

Dtypes f32, f16, bf16, f64; coordinates, interpolation and sums in f32 (f64 for f64); Int64
index math.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from ...dtypes import FP4, DType, float32, float64, int64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, check_dtype, check_finite, prod, view_arg
from ...tensor import check_shape, contiguous_strides
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee
from .specs import roi as spec
from .specs.roi import RoiKnobs

__all__ = [
    "RoIAlignDescriptor", "RoIPoolDescriptor", "RoIAlignArgs", "RoIPoolArgs",
    "RoIAlignBackwardArgs", "RoIPoolBackwardArgs", "RoIAlignPlan", "RoIAlignBackwardPlan",
    "RoIPoolPlan", "RoIPoolBackwardPlan",
]

_MAX_GRID = 2**31 - 1


def _pair(v, what: str) -> Tuple[int, int]:
    """``output_size`` (an int or two ints, each >= 1) as (PH, PW)."""
    if isinstance(v, int) and not isinstance(v, bool):
        v = (v, v)
    try:
        t = tuple(v)
    except TypeError:
        raise InvalidProblemError(f"{what}: output_size must be an int or 2 ints, got "
                                  f"{v!r}") from None
    if len(t) == 1:
        t = t * 2
    if len(t) != 2 or any(isinstance(a, bool) or not isinstance(a, int) or a < 1 for a in t):
        raise InvalidProblemError(f"{what}: output_size must be an int or 2 ints, each >= 1, "
                                  f"got {v!r}")
    return int(t[0]), int(t[1])


def _check_common(desc, what: str) -> None:
    shape = check_shape(desc.shape, f"{what}: x")
    if len(shape) != 4:
        raise InvalidProblemError(f"{what}: x must be (N, C, H, W), got shape {shape}")
    if shape[2] < 1 or shape[3] < 1:
        raise InvalidProblemError(f"{what}: H and W must be >= 1, got {shape[2:]}")
    k = desc.num_rois
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise InvalidProblemError(f"{what}: num_rois must be an int >= 0, got {k!r}")
    object.__setattr__(desc, "shape", shape)
    object.__setattr__(desc, "output_size", _pair(desc.output_size, what))
    object.__setattr__(desc, "spatial_scale",
                       check_finite(desc.spatial_scale, f"{what}: spatial_scale"))
    object.__setattr__(desc, "dtype", check_dtype(desc.dtype, FP4, what))


@dataclass(frozen=True)
class RoIAlignDescriptor:
    """roi_align of an (N, C, H, W) input of ``shape`` (H, W >= 1) over ``num_rois`` boxes to
    ``output_size`` (an int or (PH, PW), >= 1); ``spatial_scale`` (finite) maps box coordinates
    to the input grid; ``sampling_ratio`` samples per bin side (<= 0: adaptive,
    ``ceil(roi / output)``); ``aligned`` (pixel-centre shift of −0.5); ``dtype`` f32 / f16 /
    bf16 / f64.  Output (num_rois, C, PH, PW)."""

    shape: Tuple[int, ...]
    num_rois: int
    output_size: object
    spatial_scale: float = 1.0
    sampling_ratio: int = -1
    aligned: bool = False
    dtype: DType = float32

    def __post_init__(self):
        _check_common(self, "RoIAlign")
        sr = self.sampling_ratio
        if isinstance(sr, bool) or not isinstance(sr, int) or abs(sr) >= 2**31:
            raise InvalidProblemError(f"RoIAlign: sampling_ratio must be an int, got {sr!r}")
        object.__setattr__(self, "aligned", bool(self.aligned))

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return (self.num_rois, self.shape[1]) + self.output_size


@dataclass(frozen=True)
class RoIPoolDescriptor:
    """roi_pool of an (N, C, H, W) input of ``shape`` over ``num_rois`` boxes to
    ``output_size`` (an int or (PH, PW), >= 1) with ``spatial_scale``; ``dtype`` f32 / f16 /
    bf16 / f64.  Output (num_rois, C, PH, PW) values and int64 argmax."""

    shape: Tuple[int, ...]
    num_rois: int
    output_size: object
    spatial_scale: float = 1.0
    dtype: DType = float32

    def __post_init__(self):
        _check_common(self, "RoIPool")

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return (self.num_rois, self.shape[1]) + self.output_size


@dataclass
class RoIAlignArgs:
    """Forward operands: ``x`` (N, C, H, W) and ``boxes`` (K, 5), any strides; ``y`` the dense
    row-major (K, C, PH, PW) output."""

    x: object
    boxes: object
    y: object


@dataclass
class RoIPoolArgs:
    """Forward operands: ``x``, ``boxes`` as :class:`RoIAlignArgs`; ``y`` dense (K, C, PH, PW);
    ``argmax`` (optional) dense int64 (K, C, PH, PW)."""

    x: object
    boxes: object
    y: object
    argmax: object = None


@dataclass
class RoIAlignBackwardArgs:
    """Backward operands: ``dy`` (K, C, PH, PW) and ``boxes`` (K, 5), any strides; ``dx`` the
    dense row-major (N, C, H, W) input gradient (fully written)."""

    dy: object
    boxes: object
    dx: object


@dataclass
class RoIPoolBackwardArgs:
    """Backward operands: ``dy`` (K, C, PH, PW), ``boxes`` (K, 5), the forward's int64
    ``argmax`` (K, C, PH, PW), any strides; ``dx`` dense (N, C, H, W)."""

    dy: object
    boxes: object
    argmax: object
    dx: object


def _dense(v, name: str):
    dense = contiguous_strides(v.shape)
    if v.numel and any(n > 1 and s != t for n, s, t in zip(v.shape, v.strides, dense)):
        raise UnsupportedError(f"{name}: must be dense row-major (strides {dense} for shape "
                               f"{tuple(v.shape)}), got strides {tuple(v.strides)}")
    return v


class _RoiBase(Plan):
    """Shared plan / bind / launch of the four RoI plans; subclasses set ``_op`` and
    ``_backward``."""

    _op = "align"
    _backward = False

    def _plan(self) -> None:
        d = self.desc
        N, C, H, W = d.shape
        PH, PW = d.output_size
        sr = getattr(d, "sampling_ratio", 0)
        al = 1 if getattr(d, "aligned", False) else 0
        self._e = (N, C, H, W, PH, PW, sr, al)
        self._n_out = prod(d.out_shape)
        self._n_in = prod(d.shape)
        if -(-max(self._n_out, self._n_in) // spec.THREADS) > _MAX_GRID:
            raise UnsupportedError(f"roi_{self._op}: too many elements for the grid limit")
        self._knobs = RoiKnobs(d.dtype.short, self._op)
        self._half = d.dtype not in (float32, float64)
        ct = float64 if d.dtype is float64 else float32
        self._ct = ct
        det = not self._backward
        pg = PrecisionGuarantee(math_precision=ct, accumulator=ct,
                                bit_stable_on_same_hardware=det, deterministic=det)
        name = f"roi_{self._op}" + ("_backward" if self._backward else "")
        self._template = spec.ROI_BW if self._backward else spec.ROI_FW
        self._sku = KernelSku(OpCategory.IMAGE, name, d.dtype, self._arch, BackendKind.CUTE_DSL,
                              pg, aux_element=int64 if self._op == "pool" else None,
                              template=self._template.name, knobs=freeze_knobs(self._knobs))

    def workspace_size(self) -> int:
        """Backward of f16 / bf16: the f32 accumulation buffer (N·C·H·W·4 bytes); else 0."""
        return self._n_in * 4 if self._backward and self._half else 0

    def is_empty(self) -> bool:
        return (self._n_in if self._backward else self._n_out) == 0

    def _boxes(self, obj, device):
        d = self.desc
        return view_arg(obj, "boxes", shape=(d.num_rois, 5), dtype=d.dtype, device=device)

    def _bind(self, args):
        d = self.desc
        if self._backward:
            dy = view_arg(args.dy, "dy", shape=d.out_shape, dtype=d.dtype)
            b = self._boxes(args.boxes, dy.device)
            dx = _dense(view_arg(args.dx, "dx", shape=d.shape, dtype=d.dtype, device=dy.device),
                        "dx")
            idx = None
            if self._op == "pool":
                idx = view_arg(args.argmax, "argmax", shape=d.out_shape, dtype=int64,
                               device=dy.device)
            return dy, b, idx, dx
        x = view_arg(args.x, "x", shape=d.shape, dtype=d.dtype)
        b = self._boxes(args.boxes, x.device)
        y = _dense(view_arg(args.y, "y", shape=d.out_shape, dtype=d.dtype, device=x.device), "y")
        idx = None
        if self._op == "pool":
            idx = view_arg(args.argmax, "argmax", shape=d.out_shape, dtype=int64,
                           device=x.device, optional=True)
            if idx is not None:
                _dense(idx, "argmax")
        return x, b, y, idx

    def _launch(self, bound, stream: int, ws) -> None:
        kern = self._kernel(self._template, self._knobs, bound[0].device)
        scale = float(self.desc.spatial_scale)
        if not self._backward:
            x, b, y, idx = bound
            n = self._n_out
            kern.launch((-(-n // spec.THREADS), 1, 1),
                        [x.ptr, b.ptr, y.ptr, idx.ptr if idx is not None else y.ptr, n,
                         *self._e, *x.strides, *b.strides, 1 if idx is not None else 0, scale],
                        stream)
            return
        dy, b, idx, dx = bound
        acc = ws.ptr if self._half else dx.ptr
        js = tuple(idx.strides) if idx is not None else (0,) * 4
        ip = idx.ptr if idx is not None else dy.ptr
        phases = [(0, self._n_in), (1, self._n_out)] + ([(2, self._n_in)] if self._half else [])
        for phase, n in phases:
            if n:
                kern.launch((-(-n // spec.THREADS), 1, 1),
                            [dy.ptr, b.ptr, ip, acc, dx.ptr, n, phase, *self._e, *dy.strides,
                             *b.strides, *js, scale], stream)


class RoIAlignPlan(_RoiBase):
    """y = roi_align(x, boxes, output_size, spatial_scale, sampling_ratio, aligned)
    (``RoIAlignArgs(x, boxes, y)``): one thread per output; deterministic; see the module
    docstring."""

    descriptor = RoIAlignDescriptor


class RoIAlignBackwardPlan(_RoiBase):
    """dx = gradient of roi_align (``RoIAlignBackwardArgs(dy, boxes, dx)``): atomic scatter,
    non-deterministic; workspace N·C·H·W·4 bytes for f16 / bf16."""

    descriptor = RoIAlignDescriptor
    _backward = True


class RoIPoolPlan(_RoiBase):
    """y, argmax = roi_pool(x, boxes, output_size, spatial_scale) (``RoIPoolArgs(x, boxes, y,
    argmax=None)``): one thread per output; deterministic."""

    descriptor = RoIPoolDescriptor
    _op = "pool"


class RoIPoolBackwardPlan(_RoiBase):
    """dx = gradient of roi_pool (``RoIPoolBackwardArgs(dy, boxes, argmax, dx)``): ``dy`` added
    at the saved argmax by atomics, non-deterministic where bins share a winner; workspace
    N·C·H·W·4 bytes for f16 / bf16."""

    descriptor = RoIPoolDescriptor
    _op = "pool"
    _backward = True
