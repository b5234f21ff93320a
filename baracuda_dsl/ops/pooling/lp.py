"""LP (power-average) pooling over 1, 2 or 3 spatial dims, forward and backward
(torch.nn.functional.lp_pool1d / lp_pool2d / lp_pool3d).

torch computes ``(sign(a)·relu(|a|)·K)^(1/p)`` with ``a = avg_pool(x.pow(p), kernel, stride,
padding=0, ceil_mode)`` and ``K`` the full window size; since ``sign(a)·relu(|a|) = a``, per
output with window ``[o·S, min(o·S + K, I))`` per dim holding ``cnt`` elements::

    y = ((Σ_window x^p) / cnt · K)^(1/p)

``x^p`` is ``pow`` (not ``|x|^p``): a negative ``x`` with a non-integer ``p`` gives NaN, and a
negative window sum with a non-integer ``1/p`` gives NaN, as in torch.  ``norm_type`` ``p`` is a
run-time parameter: any finite ``p > 0`` (``p <= 0`` or non-finite is an InvalidProblemError;
torch does not special-case ``p = inf`` and its results there are degenerate).  Output extents
are torch's pooling sizes with no padding (``ceil_mode`` keeps a last, clipped window).

Backward (``LPPoolBackwardPlan``, ``LPPoolBackwardArgs(x, dy, dx)``): the gradient of that
composition as torch's autograd forms it (``relu``'s mask: outputs with ``a == 0`` pass nothing)::

    coef[o] = dy[o]·(1/p)·z^(1/p − 1)·K / cnt  (z = a·K),    dx = (Σ_{o ∋ i} coef[o])·p·x^(p − 1)

two launches: ``lp_fw`` stage ``coef`` (one thread per output, writing ``coef`` into the
workspace: ``workspace_size()`` = numel(y) × 4 bytes, × 8 for f64) and ``lp_bw`` (one thread per
input element gathering in a fixed order: deterministic, no atomics).

Dtypes f32, f16, bf16, f64; computation in f32 (f64 for f64); outputs dense in ``layout`` (NCHW /
NHWC), inputs any strides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Tuple

from ...dtypes import DType, float32, float64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, align_up, prod, view_arg
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee
from ...common.spatial import check_dense_in, check_image_desc, five_strides, spatial_ints, three
from .fractional import MAX_GRID
from .pool import pool_output_size
from .specs import lp as spec
from .specs.lp import LPBwKnobs, LPKnobs
from .specs.fractional import THREADS

__all__ = ["LPPoolDescriptor", "LPPoolArgs", "LPPoolBackwardArgs", "LPPoolPlan",
           "LPPoolBackwardPlan"]


@dataclass(frozen=True)
class LPPoolDescriptor:
    """LP pooling of an (N, C, *spatial) input of ``shape`` (``spatial`` = 1, 2 or 3, extents >=
    1; N and C may be 0) with ``norm_type`` ``p`` (finite, > 0), ``kernel_size``, ``stride``
    (None: the kernel size), ``ceil_mode``; ``dtype`` (f32, f16, bf16, f64); output ``layout``
    (NCHW / NHWC).  Every output extent must be >= 1 (InvalidProblemError)."""

    spatial: int
    shape: Tuple[int, ...]
    norm_type: float
    kernel_size: object
    stride: object = None
    ceil_mode: bool = False
    dtype: DType = float32
    layout: str = "NCHW"

    def __post_init__(self):
        what = "LPPool"
        shape = check_image_desc(self, what, (1, 2, 3))
        k = self.spatial
        p = self.norm_type
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) \
                or p <= 0:
            raise InvalidProblemError(f"{what}: norm_type must be a finite number > 0, got {p!r}")
        ks = spatial_ints(self.kernel_size, k, what, "kernel_size")
        empty = isinstance(self.stride, (tuple, list)) and len(self.stride) == 0
        st = ks if self.stride is None or empty else spatial_ints(self.stride, k, what, "stride")
        for name, vals in (("kernel_size", ks), ("stride", st)):
            if any(v < 1 for v in vals):
                raise InvalidProblemError(f"{what}: {name} must be >= 1, got {vals}")
        object.__setattr__(self, "norm_type", float(p))
        object.__setattr__(self, "kernel_size", ks)
        object.__setattr__(self, "stride", st)
        object.__setattr__(self, "ceil_mode", bool(self.ceil_mode))
        out = self.out_spatial
        if any(o < 1 for o in out):
            raise InvalidProblemError(f"{what}: output size {out} is too small for input "
                                      f"{shape[2:]} (kernel {ks}, stride {st})")

    @property
    def out_spatial(self) -> Tuple[int, ...]:
        return tuple(pool_output_size(n, k, s, 0, 1, self.ceil_mode)
                     for n, k, s in zip(self.shape[2:], self.kernel_size, self.stride))

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return self.shape[:2] + self.out_spatial


@dataclass
class LPPoolArgs:
    """Forward operands: ``x`` (N, C, *spatial), any strides; ``y`` (``desc.out_shape``, dense in
    ``desc.layout``)."""

    x: object
    y: object


@dataclass
class LPPoolBackwardArgs:
    """Backward operands: ``x`` (the forward's input, any strides), ``dy`` (``desc.out_shape``,
    any strides), ``dx`` (``desc.shape``, dense in ``desc.layout``)."""

    x: object
    dy: object
    dx: object


class _LPBase(Plan):
    _backward = False

    def _plan(self) -> None:
        d = self.desc
        self._e = (d.shape[0], d.shape[1]) + three(d.shape[2:], 1) + three(d.out_spatial, 1)
        self._w = three(d.kernel_size, 1) + three(d.stride, 1)
        self._cl = 1 if d.layout == "NHWC" else 0
        self._n_out, self._n_in = prod(d.out_shape), prod(d.shape)
        if -(-max(self._n_out, self._n_in) // THREADS) > MAX_GRID:
            raise UnsupportedError(f"lp pooling: {self._n_in} elements exceed the grid limit")
        ct = float64 if d.dtype is float64 else float32
        self._ws = align_up(self._n_out * ct.itemsize) if self._backward else 0
        self._fw_knobs = LPKnobs(d.dtype.short, "coef" if self._backward else "out")
        self._bw_knobs = LPBwKnobs(d.dtype.short)
        pg = PrecisionGuarantee(math_precision=ct, accumulator=ct)
        tmpl = spec.LP_BW if self._backward else spec.LP_FW
        kn = self._bw_knobs if self._backward else self._fw_knobs
        self._sku = KernelSku(OpCategory.POOLING, f"lp_pool{d.spatial}d" + (
            "_backward" if self._backward else ""), d.dtype, self._arch, BackendKind.CUTE_DSL,
            pg, layout=d.layout, template=tmpl.name, knobs=freeze_knobs(kn))

    def workspace_size(self) -> int:
        return self._ws

    def is_empty(self) -> bool:
        return self._n_out == 0


class LPPoolPlan(_LPBase):
    """lp_pool1d / 2d / 3d forward (``LPPoolArgs(x, y)``): one thread per output; no
    workspace.  See the module docstring."""

    descriptor = LPPoolDescriptor

    def _bind(self, args):
        d = self.desc
        x = view_arg(args.x, "x", shape=d.shape, dtype=d.dtype)
        y = check_dense_in(view_arg(args.y, "y", shape=d.out_shape, dtype=d.dtype,
                                    device=x.device), "y", d.layout)
        return x, y

    def _launch(self, bound, stream: int, ws) -> None:
        x, y = bound
        kern = self._kernel(spec.LP_FW, self._fw_knobs, x.device)
        ys = five_strides(y.strides)
        kern.launch((-(-self._n_out // THREADS), 1, 1),
                    [x.ptr, y.ptr, y.ptr, y.ptr, self._n_out, *self._e, *self._w,
                     *five_strides(x.strides), *ys, *ys, self._cl, self.desc.norm_type], stream)


class LPPoolBackwardPlan(_LPBase):
    """Gradient of LP pooling (``LPPoolBackwardArgs(x, dy, dx)``): per-output coefficients into
    the workspace (``workspace_size()``), then a fixed-order gather per input element —
    deterministic, no atomics.  See the module docstring."""

    descriptor = LPPoolDescriptor
    _backward = True

    def _bind(self, args):
        d = self.desc
        x = view_arg(args.x, "x", shape=d.shape, dtype=d.dtype)
        dy = view_arg(args.dy, "dy", shape=d.out_shape, dtype=d.dtype, device=x.device)
        dx = check_dense_in(view_arg(args.dx, "dx", shape=d.shape, dtype=d.dtype,
                                     device=x.device), "dx", d.layout)
        return x, dy, dx

    def _launch(self, bound, stream: int, ws) -> None:
        x, dy, dx = bound
        p = self.desc.norm_type
        xs = five_strides(x.strides)
        k1 = self._kernel(spec.LP_FW, self._fw_knobs, x.device)
        k1.launch((-(-self._n_out // THREADS), 1, 1),
                  [x.ptr, dy.ptr, dy.ptr, ws.ptr, self._n_out, *self._e, *self._w, *xs,
                   *(0,) * 5, *five_strides(dy.strides), 0, p], stream)
        k2 = self._kernel(spec.LP_BW, self._bw_knobs, x.device)
        k2.launch((-(-self._n_in // THREADS), 1, 1),
                  [x.ptr, dx.ptr, ws.ptr, ws.ptr, self._n_in, *self._e, *self._w, *xs,
                   *five_strides(dx.strides), self._cl, p], stream)
