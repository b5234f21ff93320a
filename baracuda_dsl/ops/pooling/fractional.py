"""Fractional max pooling over 2 or 3 spatial dims, forward and backward
(torch.nn.functional.fractional_max_pool2d / fractional_max_pool3d, Graham 2014).

Each (n, c) plane is pooled with a fixed ``kernel_size`` window to ``output_size`` (or
``floor(input · output_ratio)`` per dim, torch's conversion); per spatial dim the windows start at
pseudo-random, increasing positions chosen from one uniform sample ``u`` in [0, 1) per
(n, c, dim), caller-supplied as an f32 ``samples`` array of shape (N, C, spatial), any strides.
With ``alpha = (I − K) / (O − 1)`` rounded to the compute type (f32; f64 for f64 inputs) and
``O + K − 1 <= I`` (torch's rule):

``mode="torch"`` (default) — torch's CUDA interval generator, bit for bit::

    start(o) = int((o + u)·alpha) − int(u·alpha)   (o < O − 1, compute-type arithmetic)
    start(O − 1) = I − K
    sample columns: 2-D (W, H) = (0, 1); 3-D (D, H, W) = (0, 1, 2)   (torch's order)

``mode="seed"`` — the seed's evenly-spaced positions perturbed by ``u``::

    start(o) = clamp(floor(o·alpha + u), 0, I − K)   (O > 1; one fused multiply-add)
    start(0) = floor(u·(I − K))                      (O == 1)
    sample column k for spatial dim k (2-D: H = 0, W = 1)

Output: the window maximum (first largest, a NaN wins — torch's rule) and, optionally, int64
indices into the flattened spatial input ``(d·H + h)·W + w``.  Outputs (y, indices, dx) are dense
in ``layout`` (NCHW or NHWC); inputs (x, samples, dy, saved indices) may have any strides.

Backward (``FractionalMaxPoolBackwardPlan``): ``dx[i] = Σ dy[o]`` over the outputs whose saved
index is ``i``.  ``deterministic=True`` (default): gather form, one thread per ``dx`` element
testing, in a fixed order, the outputs whose window can hold it — bit-identical reruns, no
workspace; it assumes the indices came from the forward (each inside its own window).
``deterministic=False``: the seed's atomic scatter (zero, atomic add per output, and for f16 /
bf16 an f32 workspace of ``4·numel(x)`` bytes converted at the end) — non-deterministic (atomics),
any in-range index honoured, out-of-range ones skipped.

Dtypes f32, f16, bf16, f64; comparison and accumulation in f32 (f64 for f64); Int64 index math.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

import numpy as np

from ...common.spatial import check_dense_in, check_image_desc, five_strides, spatial_ints, three
from ...dtypes import DType, float32, float64, int64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, align_up, prod, view_arg
from ...tensor import contiguous_strides
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee
from .specs import fractional as spec
from .specs.fractional import FractionalBwKnobs, FractionalKnobs
from .specs.fractional import THREADS

__all__ = [
    "FractionalMaxPoolDescriptor", "FractionalMaxPoolArgs", "FractionalMaxPoolBackwardArgs",
    "FractionalMaxPoolPlan", "FractionalMaxPoolBackwardPlan", "fractional_starts",
]

MODES = ("torch", "seed")
MAX_GRID = 2**31 - 1


def _alpha(n: int, k: int, o: int, dtype: DType) -> float:
    """``(n − k) / (o − 1)`` rounded to the compute type (``n − k`` when ``o == 1``)."""
    if o == 1:
        return float(n - k)
    ct = np.float64 if dtype is float64 else np.float32
    return float(ct(n - k) / ct(o - 1))


def fractional_starts(n: int, k: int, o: int, u: float, mode: str, dtype=float32):
    """Host reference of the window starts along one dim (the kernel's formulas, in the compute
    type of ``dtype``; ``u`` rounded to f32 like the samples array)."""
    ct = np.float64 if as_ct(dtype) is float64 else np.float32
    a = ct(_alpha(n, k, o, as_ct(dtype)))
    u = ct(np.float32(u))
    out = []
    for i in range(o):
        if mode == "torch":
            s = n - k if i == o - 1 else int(ct(ct(i) + u) * a) - int(ct(u * a))
        else:
            f = u * a if o == 1 else ct(np.float64(i) * np.float64(a) + np.float64(u))
            s = min(max(int(np.floor(f)), 0), n - k)
        out.append(s)
    return out


def as_ct(dtype) -> DType:
    from ...dtypes import dtype as _as

    return float64 if _as(dtype) is float64 else float32


# ------------------------------------------------------------------------ descriptors
@dataclass(frozen=True)
class FractionalMaxPoolDescriptor:
    """Fractional max pooling of an (N, C, *spatial) input of ``shape`` (``spatial`` = 2 or 3,
    each extent >= 1; N and C may be 0) with window ``kernel_size`` to ``output_size`` (an int or
    one per dim) or, when that is None, ``output_ratio`` (a float or one per dim in (0, 1]:
    ``int(n · ratio)``, torch's conversion); ``mode`` ``"torch"`` | ``"seed"`` (the window rule,
    see the module docstring); ``dtype`` (f32, f16, bf16, f64); output ``layout`` (NCHW / NHWC);
    ``deterministic`` (backward: gather form when True, atomic scatter when False).  torch's rules
    (InvalidProblemError): kernel >= 1, output >= 1, ``output + kernel − 1 <= input`` per dim
    (``<`` for 3-D in ``"torch"`` mode, torch's own check)."""

    spatial: int
    shape: Tuple[int, ...]
    kernel_size: object
    output_size: object = None
    output_ratio: object = None
    mode: str = "torch"
    dtype: DType = float32
    layout: str = "NCHW"
    deterministic: bool = True

    def __post_init__(self):
        what = "FractionalMaxPool"
        shape = check_image_desc(self, what, (2, 3))
        k = self.spatial
        ks = spatial_ints(self.kernel_size, k, what, "kernel_size")
        if self.output_size is not None:
            os_ = spatial_ints(self.output_size, k, what, "output_size")
            ratio = None
        elif self.output_ratio is not None:
            r = self.output_ratio
            r = (r,) * k if isinstance(r, (int, float)) and not isinstance(r, bool) else tuple(r)
            if len(r) == 1:
                r = r * k
            if len(r) != k or any(isinstance(a, bool) or not isinstance(a, (int, float))
                                  or not 0.0 < a <= 1.0 for a in r):
                raise InvalidProblemError(f"{what}: output_ratio must be a number or {k} numbers "
                                          f"in (0, 1], got {self.output_ratio!r}")
            ratio = tuple(float(a) for a in r)
            os_ = tuple(int(n * a) for n, a in zip(shape[2:], ratio))
        else:
            raise InvalidProblemError(f"{what}: output_size or output_ratio is required")
        if any(v < 1 for v in ks):
            raise InvalidProblemError(f"{what}: kernel_size must be >= 1, got {ks}")
        if any(v < 1 for v in os_):
            raise InvalidProblemError(f"{what}: output size {os_} must be >= 1")
        if self.mode not in MODES:
            raise InvalidProblemError(f"{what}: mode must be 'torch' or 'seed', got {self.mode!r}")
        # torch's 3-D kernel wants output + kernel − 1 < input (strict), its 2-D one <=
        strict = self.mode == "torch" and self.spatial == 3
        for n, kk, o in zip(shape[2:], ks, os_):
            if o + kk - 1 > n or (strict and o + kk - 1 == n):
                rule = "<" if strict else "<="
                raise InvalidProblemError(f"{what}: kernel {ks} too large for input {shape[2:]} "
                                          f"and output {os_} (need output + kernel − 1 {rule} "
                                          f"input)")
        object.__setattr__(self, "kernel_size", ks)
        object.__setattr__(self, "output_size", os_)
        object.__setattr__(self, "output_ratio", ratio)
        object.__setattr__(self, "deterministic", bool(self.deterministic))

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return self.shape[:2] + self.output_size

    @property
    def samples_shape(self) -> Tuple[int, ...]:
        return self.shape[:2] + (self.spatial,)


@dataclass
class FractionalMaxPoolArgs:
    """Forward operands: ``x`` (N, C, *spatial), any strides; ``samples`` f32 (N, C, spatial) in
    [0, 1), any strides; ``y`` (``desc.out_shape``, dense in ``desc.layout``); ``indices``
    (optional) int64, same shape and layout as ``y``."""

    x: object
    samples: object
    y: object
    indices: object = None


@dataclass
class FractionalMaxPoolBackwardArgs:
    """Backward operands: ``dy`` (``desc.out_shape``, any strides), ``indices`` (the forward's
    int64 indices, any strides), ``dx`` (``desc.shape``, dense in ``desc.layout``)."""

    dy: object
    indices: object
    dx: object


def _precision(d, deterministic=True):
    ct = float64 if d.dtype is float64 else float32
    return PrecisionGuarantee(math_precision=ct, accumulator=ct,
                              bit_stable_on_same_hardware=deterministic,
                              deterministic=deterministic)


class FractionalMaxPoolPlan(Plan):
    """fractional_max_pool2d / 3d forward (``FractionalMaxPoolArgs``): one thread per output;
    see the module docstring.  No workspace."""

    descriptor = FractionalMaxPoolDescriptor

    def _plan(self) -> None:
        d = self.desc
        sp, out = d.shape[2:], d.output_size
        self._e = (d.shape[0], d.shape[1]) + three(sp, 1) + three(out, 1)
        self._k = three(d.kernel_size, 1)
        if d.mode == "torch":
            cols = (0, 1, 2) if d.spatial == 3 else (0, 1, 0)
        else:
            cols = (0, 1, 2) if d.spatial == 3 else (0, 0, 1)
        self._flags = (1 if d.mode == "torch" else 0, 1 if d.layout == "NHWC" else 0) + cols
        self._alpha = tuple(_alpha(n, k, o, as_ct(d.dtype)) for n, k, o in
                            zip(self._e[2:5], self._k, self._e[5:8]))
        self._n = prod(d.out_shape)
        if -(-self._n // THREADS) > MAX_GRID:
            raise UnsupportedError(f"fractional max pool: {self._n} outputs exceed the grid")
        self._knobs = FractionalKnobs(d.dtype.short)
        self._template = spec.FRACTIONAL_FW
        self._sku = KernelSku(OpCategory.POOLING, f"fractional_max_pool{d.spatial}d", d.dtype,
                              self._arch, BackendKind.CUTE_DSL, _precision(d), aux_element=int64,
                              layout=d.layout, template=self._template.name,
                              knobs=freeze_knobs(self._knobs))

    def is_empty(self) -> bool:
        return self._n == 0

    def _bind(self, args):
        d = self.desc
        x = view_arg(args.x, "x", shape=d.shape, dtype=d.dtype)
        u = view_arg(args.samples, "samples", shape=d.samples_shape, dtype=float32,
                     device=x.device)
        y = check_dense_in(view_arg(args.y, "y", shape=d.out_shape, dtype=d.dtype,
                                    device=x.device), "y", d.layout)
        idx = view_arg(args.indices, "indices", shape=d.out_shape, dtype=int64, device=x.device,
                       optional=True)
        if idx is not None:
            check_dense_in(idx, "indices", d.layout)
        return x, u, y, idx

    def _launch(self, bound, stream: int, ws) -> None:
        x, u, y, idx = bound
        kern = self._kernel(self._template, self._knobs, x.device)
        want = 1 if idx is not None else 0
        kern.launch((-(-self._n // THREADS), 1, 1),
                    [x.ptr, y.ptr, idx.ptr if idx is not None else y.ptr, u.ptr, self._n,
                     *self._e, *self._k, *five_strides(x.strides), *five_strides(y.strides),
                     *u.strides, self._flags[0], self._flags[1], want, *self._flags[2:],
                     *self._alpha], stream)


class FractionalMaxPoolBackwardPlan(Plan):
    """Gradient of fractional max pooling (``FractionalMaxPoolBackwardArgs(dy, indices, dx)``):
    gather form (``desc.deterministic``, default: fixed order, no atomics, no workspace) or
    atomic scatter (non-deterministic (atomics); f16 / bf16 need ``workspace_size()`` = an f32
    copy of dx).  See the module docstring."""

    descriptor = FractionalMaxPoolDescriptor

    def _plan(self) -> None:
        d = self.desc
        sp, out = d.shape[2:], d.output_size
        self._e = (d.shape[0], d.shape[1]) + three(sp, 1) + three(out, 1)
        self._k = three(d.kernel_size, 1)
        self._cl = 1 if d.layout == "NHWC" else 0
        self._n_in, self._n_out = prod(d.shape), prod(d.out_shape)
        if -(-max(self._n_in, self._n_out) // THREADS) > MAX_GRID:
            raise UnsupportedError(f"fractional max pool: {self._n_in} elements exceed the grid")
        method = "gather" if d.deterministic else "atomic"
        self._half = d.dtype.short in ("f16", "bf16")
        self._ws = align_up(4 * self._n_in) if method == "atomic" and self._half else 0
        self._knobs = FractionalBwKnobs(d.dtype.short, method)
        self._template = spec.FRACTIONAL_BW
        self._sku = KernelSku(OpCategory.POOLING, f"fractional_max_pool{d.spatial}d_backward",
                              d.dtype, self._arch, BackendKind.CUTE_DSL,
                              _precision(d, d.deterministic), aux_element=int64, layout=d.layout,
                              template=self._template.name, knobs=freeze_knobs(self._knobs))

    def workspace_size(self) -> int:
        return self._ws

    def is_empty(self) -> bool:
        return self._n_in == 0

    def _bind(self, args):
        d = self.desc
        dy = view_arg(args.dy, "dy", shape=d.out_shape, dtype=d.dtype)
        idx = view_arg(args.indices, "indices", shape=d.out_shape, dtype=int64, device=dy.device)
        dx = check_dense_in(view_arg(args.dx, "dx", shape=d.shape, dtype=d.dtype,
                                     device=dy.device), "dx", d.layout)
        return dy, idx, dx

    def _launch(self, bound, stream: int, ws) -> None:
        dy, idx, dx = bound
        kern = self._kernel(self._template, self._knobs, dx.device)
        xs = five_strides(dx.strides)
        head = [*self._e, *self._k, *five_strides(dy.strides), *five_strides(idx.strides), *xs]
        if self._knobs.method == "gather":
            kern.launch((-(-self._n_in // THREADS), 1, 1),
                        [dy.ptr, dx.ptr, idx.ptr, dx.ptr, self._n_in, *head, *xs, self._cl, 0],
                        stream)
            return
        if self._half:
            wp, ts = ws.ptr, five_strides(contiguous_strides(self.desc.shape))
        else:
            wp, ts = dx.ptr, xs
        stages = ((0, self._n_in), (1, self._n_out)) + (((2, self._n_in),) if self._half else ())
        for stage, n in stages:
            kern.launch((-(-n // THREADS), 1, 1),
                        [dy.ptr, dx.ptr, idx.ptr, wp, n, *head, *ts, self._cl, stage], stream)
