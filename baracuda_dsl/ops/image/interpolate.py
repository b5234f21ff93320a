"""Resampling of (N, C, *spatial) images, forward and backward, with
torch.nn.functional.interpolate semantics over 1, 2 or 3 spatial dims.

Modes (per spatial dim of input extent ``I``, output extent ``O``, coordinate scale ``s``):

* ``nearest``: ``src = min(floor(o·s), I−1)``; ``nearest-exact``: ``min(floor((o+0.5)·s), I−1)``
  (torch's CUDA index map, in float32 with a float32 ``s`` for every dtype);
* ``linear`` / ``bilinear`` / ``trilinear`` (1 / 2 / 3 spatial dims): ``src = align_corners ?
  s·o : max(s·(o+0.5)−0.5, 0)``, taps ``floor(src)`` and the next one (clamped), weights
  ``1−λ, λ``; ``bicubic`` (2-D): ``src`` unclamped, 4 taps ``floor(src)−1 … +2`` clamped to the
  border, cubic convolution weights with A = −0.75;
* ``antialias=True`` (bilinear / bicubic, 2-D): torch's separable filter — support
  ``size/2·max(s, 1)`` (size 2 bilinear, 4 bicubic), centre ``s·(o+0.5)``, triangle / cubic
  (a = −0.5) weights at ``(j − centre + 0.5)/max(s, 1)``, normalised per output and dim;
* ``area``: adaptive average pooling windows ``[floor(o·I/O), ceil((o+1)·I/O))``.

``s`` is torch's: ``align_corners`` → ``(I−1)/(O−1)`` (0 when O = 1); else ``1/scale_factor``
when the user gave ``scale_factor`` and ``recompute_scale_factor`` is not True, else ``I/O``;
when every output extent equals the input's, ``s = 1`` in every dim (an exact copy, like torch's
CUDA kernels, even for a ``scale_factor`` such as 1.05).
Output size: ``size``, or ``floor(I·scale_factor)`` per dim.

Operands: ``x`` / ``dy`` any strides; ``y`` / ``dx`` dense in ``layout`` (``"NCHW"`` row-major or
``"NHWC"`` channels last, any spatial rank).  Dtypes f32, f16, bf16, f64; coordinate math and
accumulation in f32 (f64 for f64; nearest's index map in f32 as torch's).  The backward is the
exact adjoint of the forward in gather form (each ``dx`` element sums the gradients of the
outputs whose taps reach it, in a fixed order): deterministic for every mode, no atomics, no
workspace; ``InterpolateTuning(deterministic=False)`` trades that for torch's atomic scatter
(nearest / linear / bicubic).  An empty problem (N = 0 or C = 0) launches nothing.

Kernels: ``area`` runs the pooling family's adaptive average pooling plans (the same windows:
torch computes area so).  Nearest / (bi/tri)linear / bicubic forwards whose last output extent
holds a run of ``RUN`` (4) outputs run ``interp_fw_runs`` (one thread per run, Int32 index math; operands whose
strided extents reach 2^31 take the general kernel instead); the rest ``interp_fw`` /
``interp_bw`` (one thread per element, Int64 index math, the thread index decomposed with
magic-number divisions below 2^31).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ...common.spatial import (NARROW, check_dense_in, dense_strides, five_strides, index_span,
                               magic_pairs, three)
from ...dtypes import FP4, DType, float32, float64
from ...errors import InvalidProblemError, MisalignedOperandError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, align_up, check_dtype, prod, view_arg
from ...tensor import check_shape, contiguous_strides
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee
from .specs import interpolate as spec
from .specs import sampling as sampling_spec
from .specs.interpolate import InterpKnobs
from .specs.sampling import GridAccKnobs

__all__ = [
    "InterpolateDescriptor", "InterpolateArgs", "InterpolateBackwardArgs", "InterpolatePlan",
    "InterpolateBackwardPlan", "InterpolateTuning", "interpolate_output_size",
    "interpolate_dense_strides",
]

#: dense element strides of an (N, C, *spatial) tensor in a layout (NCHW / NHWC)
interpolate_dense_strides = dense_strides

MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
LAYOUTS = ("NCHW", "NHWC")
#: modes tied to one spatial rank (torch's upsample_* kernels)
_RANK = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_GROUP = {"nearest": "nearest", "nearest-exact": "nearest", "linear": "linear",
          "bilinear": "linear", "trilinear": "linear", "bicubic": "linear", "area": "area"}
_MAX_GRID = 2**31 - 1


# ------------------------------------------------------------------------------ host math
def _per_dim(v, k: int, what: str, name: str, kind):
    """``v`` (a scalar or a sequence of ``k``) as a ``k``-tuple converted by ``kind``."""
    if isinstance(v, (list, tuple)):
        if len(v) != k:
            raise InvalidProblemError(f"{what}: {name} must have {k} entries (one per spatial "
                                      f"dim), got {v!r}")
        vals = tuple(v)
    else:
        vals = (v,) * k
    out = []
    for a in vals:
        if isinstance(a, bool) or (kind is int and not isinstance(a, (int, np.integer))):
            raise InvalidProblemError(f"{what}: {name} must hold {kind.__name__}s, got {v!r}")
        try:
            out.append(kind(a))
        except (TypeError, ValueError):
            raise InvalidProblemError(f"{what}: {name} must hold numbers, got {v!r}") from None
    return tuple(out)


def interpolate_output_size(spatial_shape, size=None, scale_factor=None) -> Tuple[int, ...]:
    """torch's output spatial extents: ``size`` (an int or one per dim) or
    ``floor(I · scale_factor)`` per dim (float64 product, like torch)."""
    k = len(spatial_shape)
    if size is not None:
        return _per_dim(size, k, "interpolate", "size", int)
    sf = _per_dim(scale_factor, k, "interpolate", "scale_factor", float)
    return tuple(int(math.floor(float(n) * f)) for n, f in zip(spatial_shape, sf))


def _f32(v) -> float:
    return float(np.float32(v))


def _scale_value(n: int, m: int, user: Optional[float], single: bool) -> float:
    """torch's ``compute_scales_value``: ``1/user`` when given and > 0, else ``n/m`` — in float32
    arithmetic when ``single`` (float32 accscalar), float64 otherwise."""
    if user is not None and user > 0:
        r = 1.0 / user
        return _f32(r) if single else r
    if single:
        return float(np.float32(n) / np.float32(m))
    return n / m


def _area_pixel_scale(n: int, m: int, align: bool, user: Optional[float], single: bool) -> float:
    """torch's ``area_pixel_compute_scale``."""
    if align:
        if m > 1:
            return float(np.float32(n - 1) / np.float32(m - 1)) if single else (n - 1) / (m - 1)
        return 0.0
    return _scale_value(n, m, user, single)


# ------------------------------------------------------------------------------ descriptor
@dataclass(frozen=True)
class InterpolateDescriptor:
    """torch.nn.functional.interpolate of an (N, C, *spatial) input of ``shape`` (1-3 spatial
    dims, each >= 1; N and C may be 0): exactly one of ``size`` (an int or one per dim, each
    >= 1) and ``scale_factor`` (a float or one per dim, > 0); ``mode`` (nearest, nearest-exact,
    linear, bilinear, bicubic, trilinear, area — linear / bilinear / bicubic / trilinear need 1 /
    2 / 2 / 3 spatial dims); ``align_corners`` (None, or a bool for the interpolating modes
    only); ``recompute_scale_factor`` (True: the coordinate map uses ``I/O`` instead of the
    user's ``scale_factor``; not allowed with ``size``); ``antialias`` (bilinear / bicubic,
    2-D); ``dtype`` (f32, f16, bf16, f64) and the layout of the plans' dense outputs (NCHW /
    NHWC).  After validation ``size`` / ``scale_factor`` are tuples (or None) and
    ``align_corners`` / ``recompute_scale_factor`` bools; ``out_spatial`` is the output size and
    ``coord_scales`` the per-dim user scales the coordinate map uses (None: ``I/O``)."""

    shape: Tuple[int, ...]
    size: object = None
    scale_factor: object = None
    mode: str = "nearest"
    align_corners: Optional[bool] = None
    recompute_scale_factor: Optional[bool] = None
    antialias: bool = False
    dtype: DType = float32
    layout: str = "NCHW"

    def __post_init__(self):
        what = "Interpolate"
        shape = check_shape(self.shape, f"{what}: x")
        k = len(shape) - 2
        if k not in (1, 2, 3):
            raise InvalidProblemError(f"{what}: shape {shape} must be (N, C, *spatial) with 1-3 "
                                      f"spatial dims")
        if any(n < 1 for n in shape[2:]):
            raise InvalidProblemError(f"{what}: spatial extents must be >= 1, got {shape[2:]}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", check_dtype(self.dtype, FP4, what))
        if self.layout not in LAYOUTS:
            raise InvalidProblemError(f"{what}: layout must be 'NCHW' or 'NHWC', got "
                                      f"{self.layout!r}")
        mode = self.mode
        if mode not in MODES:
            raise InvalidProblemError(f"{what}: mode must be one of {', '.join(MODES)}, got "
                                      f"{mode!r}")
        if mode in _RANK and _RANK[mode] != k:
            raise UnsupportedError(f"{what}: mode {mode!r} needs {_RANK[mode]} spatial dim(s) "
                                   f"(a {_RANK[mode] + 2}-D input), got {k}")
        if self.antialias and mode not in ("bilinear", "bicubic"):
            raise UnsupportedError(f"{what}: antialias is wired for bilinear and bicubic modes "
                                   f"(2 spatial dims) only, got mode {mode!r}")
        ac = self.align_corners
        if ac is not None:
            if mode in ("nearest", "nearest-exact", "area"):
                raise InvalidProblemError(f"{what}: align_corners can only be set with the "
                                          f"interpolating modes linear | bilinear | bicubic | "
                                          f"trilinear, got mode {mode!r}")
            if not isinstance(ac, (bool, np.bool_)):
                raise InvalidProblemError(f"{what}: align_corners must be a bool or None")
        object.__setattr__(self, "align_corners", bool(ac))
        rc = self.recompute_scale_factor
        if (self.size is None) == (self.scale_factor is None):
            raise InvalidProblemError(f"{what}: exactly one of size and scale_factor must be "
                                      f"given")
        if self.size is not None:
            if rc:
                raise InvalidProblemError(f"{what}: recompute_scale_factor is not meaningful "
                                          f"with an explicit size")
            sz = _per_dim(self.size, k, what, "size", int)
            if any(v < 1 for v in sz):
                raise InvalidProblemError(f"{what}: output size must be >= 1, got {sz}")
            object.__setattr__(self, "size", sz)
        else:
            sf = _per_dim(self.scale_factor, k, what, "scale_factor", float)
            if any(not math.isfinite(f) or f <= 0 for f in sf):
                raise InvalidProblemError(f"{what}: scale_factor must be finite and > 0, got "
                                          f"{sf}")
            object.__setattr__(self, "scale_factor", sf)
            out = interpolate_output_size(shape[2:], None, sf)
            if any(v < 1 for v in out):
                raise InvalidProblemError(f"{what}: output size {out} (input {shape[2:]} × "
                                          f"scale_factor {sf}) must be >= 1")
        object.__setattr__(self, "recompute_scale_factor", bool(rc))
        object.__setattr__(self, "antialias", bool(self.antialias))

    @property
    def spatial(self) -> int:
        """The number of spatial dims (1-3)."""
        return len(self.shape) - 2

    @property
    def out_spatial(self) -> Tuple[int, ...]:
        """The output's spatial extents (``size``, or ``floor(I·scale_factor)``)."""
        return interpolate_output_size(self.shape[2:], self.size, self.scale_factor)

    @property
    def out_shape(self) -> Tuple[int, ...]:
        """(N, C, *out_spatial)."""
        return self.shape[:2] + self.out_spatial

    @property
    def coord_scales(self) -> Tuple[Optional[float], ...]:
        """The user's per-dim scale factors the coordinate map uses (None: it uses ``I/O``)."""
        if self.scale_factor is None or self.recompute_scale_factor:
            return (None,) * self.spatial
        return self.scale_factor

    @property
    def group(self) -> str:
        """The kernel mode group: nearest, linear, area or aa."""
        return "aa" if self.antialias else _GROUP[self.mode]

    def kernel_scales(self) -> Tuple[float, ...]:
        """The per-dim coordinate scale ``s`` the kernels use (torch's value: float32 for
        nearest and for the f32 / f16 / bf16 maps, float64 for f64; 1 for area)."""
        g = self.group
        if self.out_spatial == self.shape[2:]:
            return (1.0,) * self.spatial          # torch's CUDA kernels copy: the identity map
        single = g == "nearest" or self.dtype is not float64
        out = []
        for n, m, u in zip(self.shape[2:], self.out_spatial, self.coord_scales):
            if g == "nearest":
                out.append(_scale_value(n, m, u, True))
            elif g == "area":
                out.append(1.0)
            else:
                out.append(_area_pixel_scale(n, m, self.align_corners, u, single))
        return tuple(out)

    def backward_ranges(self):
        """Per dim ``(rs, lo, hi, margin)`` of the backward's candidate output range of input
        ``i``: ``[floor((i+lo)·rs) − margin, floor((i+hi)·rs) + 1 + margin)`` ∩ ``[0, O)``."""
        g = self.group
        cubic = self.mode == "bicubic"
        exact = self.mode == "nearest-exact"
        out = []
        for n, m, s in zip(self.shape[2:], self.out_spatial, self.kernel_scales()):
            if g == "area":
                s = n / m
            rs = 1.0 / s if s > 0 else 0.0
            if g == "nearest":
                e = 0.5 if exact else 0.0
                lo, hi = -e * s, 1.0 - e * s
            elif g == "linear":
                c = 0.0 if self.align_corners else 0.5 * s - 0.5
                w = 2.0 if cubic else 1.0
                lo, hi = -w - c, w - c
            elif g == "area":
                lo, hi = 0.0, 1.0
            else:
                support = (4.0 if cubic else 2.0) * 0.5 * max(s, 1.0)
                lo, hi = 0.5 - support - 0.5 * s, 0.5 + support - 0.5 * s
            mg = m if rs == 0.0 else 1 + int(math.ceil(n * 2.0**-20 * rs))
            out.append((rs, lo, hi, min(mg, m)))
        return tuple(out)


@dataclass
class InterpolateArgs:
    """Forward operands: ``x`` (``desc.shape``, any strides) and ``y`` (``desc.out_shape``, dense
    in ``desc.layout``)."""

    x: object
    y: object


@dataclass
class InterpolateBackwardArgs:
    """Backward operands: ``dy`` (``desc.out_shape``, any strides) and ``dx`` (``desc.shape``,
    dense in ``desc.layout``)."""

    dy: object
    dx: object


@dataclass(frozen=True)
class InterpolateTuning:
    """Backward kernel choice (``PlanPreference(tuning=InterpolateTuning(...))``):
    ``deterministic=False`` lets nearest / (bi/tri)linear / bicubic backwards scatter with atomic
    adds (``interp_bw_scatter``: torch's form, fast, not bit-reproducible; half types accumulate in
    an f32 workspace); the default is the deterministic gather."""

    deterministic: bool = True


class _InterpBase(Plan):
    """Shared plan / bind / launch of the two interpolation plans."""

    descriptor = InterpolateDescriptor
    _backward = False

    def _plan(self) -> None:
        d = self.desc
        sp, out = d.shape[2:], d.out_spatial
        self._e = (d.shape[0], d.shape[1]) + three(sp, 1) + three(out, 1)
        self._sc = three(d.kernel_scales(), 1.0)
        sub = {"nearest-exact": 1, "bicubic": 1}.get(d.mode, 0)
        self._fl = (sub, 1 if d.align_corners else 0, 1 if d.layout == "NHWC" else 0)
        if self._backward:
            r = d.backward_ranges()
            pad = (0.0, 0.0, 1.0, 0)                   # a size-1 padded dim: output 0 only
            r = (pad,) * (3 - len(r)) + tuple(r)
            self._rng = (tuple(a[0] for a in r) + tuple(a[1] for a in r)
                         + tuple(a[2] for a in r) + tuple(int(a[3]) for a in r))
        self._n = prod(d.shape) if self._backward else prod(d.out_shape)
        if -(-self._n // spec.THREADS) > _MAX_GRID:
            raise UnsupportedError(f"interpolate: {self._n} elements exceed the grid limit")
        self._pool = self._general = self._runs = self._scatter = None
        if d.mode == "area":
            # area is adaptive average pooling (torch computes it so): the pooling family's
            # plans, whose kernels run the windows in Int32 and in runs of outputs
            from ...plan import PlanPreference
            from ..pooling.pool import (AdaptivePoolBackwardPlan, AdaptivePoolDescriptor,
                                        AdaptivePoolPlan)

            cls = AdaptivePoolBackwardPlan if self._backward else AdaptivePoolPlan
            self._pool = cls.select(AdaptivePoolDescriptor(d.spatial, d.shape, d.out_spatial,
                                                           "avg", d.dtype, d.layout),
                                    PlanPreference(arch=self._arch))
            pool_sku = self._pool.sku()
            sku_template, sku_knobs = pool_sku.template, pool_sku.knobs
        else:
            self._routes()
            template, knobs = (self._scatter or self._runs or self._general)[:2]
            sku_template, sku_knobs = template.name, freeze_knobs(knobs)
        ct = float64 if d.dtype is float64 else float32
        atomics = self._scatter is not None
        pg = PrecisionGuarantee(math_precision=ct, accumulator=ct,
                                bit_stable_on_same_hardware=not atomics,
                                deterministic=not atomics)
        name = "interpolate_" + d.mode.replace("-", "_") + ("_aa" if d.antialias else "") + (
            "_backward" if self._backward else "")
        self._sku = KernelSku(OpCategory.IMAGE, name, d.dtype, self._arch, BackendKind.CUTE_DSL,
                              pg, layout=d.layout, template=sku_template, knobs=sku_knobs)

    def _routes(self) -> None:
        """The kernel launches this problem may take, each (template, knobs, threads, dv):
        ``_general`` (one thread per element; ``dv`` = the magic pairs of the thread index's
        divisors and whether every index is below 2^31), ``_runs`` (forward runs of RUN outputs,
        Int32) and ``_scatter`` (the atomic backward on request); None where they don't apply."""
        d = self.desc
        dec = self._e[2:5] if self._backward else self._e[5:8]
        self._general = (spec.INTERP_BW if self._backward else spec.INTERP_FW,
                         InterpKnobs(d.dtype.short, d.group), self._n,
                         magic_pairs(d.shape[1], *dec) + (1 if self._n < NARROW else 0,))
        if max(prod(d.shape), prod(d.out_shape)) >= NARROW or d.group not in ("nearest",
                                                                               "linear"):
            return
        # the runs / scatter kernels index in Int32 over runs of RUN outputs along the last dim
        # (operands whose strides reach 2^31 take the general kernel at run time)
        og = -(-self._e[7] // spec.RUN)
        route = (InterpKnobs(d.dtype.short, "cubic" if d.mode == "bicubic" else d.group),
                 prod(d.out_shape[:-1]) * og, magic_pairs(d.shape[1], *self._e[5:7], og) + (1,))
        if not self._backward and self._e[7] >= spec.RUN:
            self._runs = (spec.INTERP_FW_RUNS,) + route
        if self._backward and not self.pref.tuning_for(InterpolateTuning).deterministic:
            self._scatter = (spec.INTERP_BW_SCATTER,) + route
            self._acc_knobs = GridAccKnobs(d.dtype.short)

    def is_empty(self) -> bool:
        return self._n == 0

    def workspace_size(self) -> int:
        """0, or for the scatter backward of a half type an f32 accumulator of x's size."""
        if self._scatter is None or self.desc.dtype.itemsize >= 4:
            return 0
        return align_up(4 * prod(self.desc.shape))

    def _bind(self, args):
        d = self.desc
        if self._backward:
            dy = view_arg(args.dy, "dy", shape=d.out_shape, dtype=d.dtype)
            dx = check_dense_in(view_arg(args.dx, "dx", shape=d.shape, dtype=d.dtype,
                                        device=dy.device), "dx", d.layout)
            return dy, dx
        x = view_arg(args.x, "x", shape=d.shape, dtype=d.dtype)
        y = check_dense_in(view_arg(args.y, "y", shape=d.out_shape, dtype=d.dtype,
                                   device=x.device), "y", d.layout)
        return x, y

    def _launch(self, bound, stream: int, ws) -> None:
        a, b = bound
        if self._pool is not None:
            from ..pooling.pool import PoolArgs, PoolBackwardArgs

            self._pool.run(PoolBackwardArgs(a, b) if self._backward else PoolArgs(a, b),
                           stream=stream)
            return
        if self._scatter is not None and index_span(a, b) < NARROW:
            self._launch_scatter(a, b, stream, ws)
            return
        choice = self._general
        if self._runs is not None and index_span(a, b) < NARROW:
            choice = self._runs
        template, knobs, threads, dv = choice
        kern = self._kernel(template, knobs, b.device)
        grid = (-(-threads // spec.THREADS), 1, 1)
        tail = list(self._rng) if self._backward else []
        kern.launch(grid, [a.ptr, b.ptr, threads, *self._e, *five_strides(a.strides),
                           *five_strides(b.strides), *self._sc, *self._fl, *tail, *dv], stream)


    def _launch_scatter(self, dy, dx, stream: int, ws) -> None:
        """Zero the accumulator (dx, or the f32 workspace), scatter, cast (half types)."""
        d = self.desc
        dev = dx.device
        e5 = (d.shape[0], d.shape[1]) + three(d.shape[2:], 1)
        ds = five_strides(dx.strides)
        if d.dtype.itemsize >= 4:
            acc, accs = dx.ptr, ds
        else:
            if ws.ptr % 4:
                raise MisalignedOperandError(f"workspace: pointer {ws.ptr:#x} is not aligned "
                                             f"to 4 bytes")
            acc, accs = ws.ptr, five_strides(contiguous_strides(d.shape))
        numel = prod(d.shape)
        blocks = (-(-numel // spec.THREADS), 1, 1)
        acc_kern = self._kernel(sampling_spec.GRID_SAMPLE_ACC, self._acc_knobs, dev)
        acc_kern.launch(blocks, [acc, dx.ptr, numel, *e5, *accs, *ds, 0], stream)
        template, knobs, threads, dv = self._scatter
        kern = self._kernel(template, knobs, dev)
        kern.launch((-(-threads // spec.THREADS), 1, 1),
                    [dy.ptr, acc, threads, *self._e, *five_strides(dy.strides), *accs,
                     *self._sc, *self._fl, *dv], stream)
        if acc != dx.ptr:
            acc_kern.launch(blocks, [acc, dx.ptr, numel, *e5, *accs, *ds, 1], stream)


class InterpolatePlan(_InterpBase):
    """torch.nn.functional.interpolate forward (``InterpolateArgs(x, y)``): one thread per output
    element, or per run of 4 along the last dim (see the module docstring for the modes and the
    kernels).  Deterministic, no workspace."""

    descriptor = InterpolateDescriptor


class InterpolateBackwardPlan(_InterpBase):
    """Gradient of interpolate w.r.t. ``x`` (``InterpolateBackwardArgs(dy, dx)``): the exact
    adjoint of the forward in gather form — one thread per ``dx`` element summing, in a fixed
    order, ``W(o, i)·dy[o]`` over the outputs whose taps reach it.  Deterministic (bit-identical
    reruns, no atomics) for every mode, antialias included; no workspace.  With
    ``PlanPreference(tuning=InterpolateTuning(deterministic=False))`` nearest / linear / bicubic
    backwards scatter with atomic adds instead (``interp_bw_scatter``; half types through an f32
    workspace of x's size)."""

    descriptor = InterpolateDescriptor
    _backward = True
