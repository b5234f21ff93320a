"""Max / average pooling and adaptive pooling over 1, 2 or 3 spatial dims, forward and backward
(torch.nn.functional.max_pool*d / avg_pool*d / adaptive_max_pool*d / adaptive_avg_pool*d).

Operands are (N, C, *spatial) logically; ``layout`` names the memory order of the outputs the
plan writes (``"NCHW"``: dense row-major, ``"NHWC"``: channels last, dense in (N, *spatial, C)
order — any spatial rank).  Inputs (``x``, ``dy``, saved ``indices``) may have any strides.

Fixed windows (``PoolDescriptor``), per spatial dim of extent ``n``, kernel ``k``, stride ``s``
(default ``k``), padding ``p`` (0 <= p <= k // 2), dilation ``d`` (max only)::

    out = floor((n + 2p − d(k−1) − 1 + (ceil_mode ? s−1 : 0)) / s) + 1
    ceil_mode: out −= 1 when (out − 1)·s >= n + p  (the last window must start inside the input
    or the left padding); every out must be >= 1

``max``: the largest element of each window (padding never wins), a NaN wins; int64 ``indices``
into the flattened spatial input ``(d·H + h)·W + w`` (torch's convention; optional in the
forward Args).  ``avg``: the window sum over the input elements divided by ``divisor_override``
when given, else by the window size clipped to the padded input (``count_include_pad``) or by the
number of input elements in it.

Adaptive windows (``AdaptivePoolDescriptor``): output ``o`` of a dim of extent ``n`` pooled to
``m`` covers ``[floor(o·n/m), ceil((o+1)·n/m))``.

Backward (``PoolBackwardPlan``, ``AdaptivePoolBackwardPlan``): the gather form — each ``dx``
element sums, in a fixed order, the gradients of the outputs whose window covers it (max: of
those whose saved index is this element; avg: ``dy / divisor``).  Deterministic (bit-identical
reruns, no atomics), no workspace.

Dtypes f32, f16, bf16, f64; accumulation and comparison in f32 (f64 for f64).  Index math in
Int32 with every division a multiply-shift by a host-computed magic number
(:func:`baracuda_dsl.common.spatial.fast_divisor`);
problems whose element counts, strided operand extents or adaptive window products reach 2^31 run
the ``wide`` (Int64) SKU of the same template.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from ...common.spatial import (NARROW, check_dense_in, check_image_desc, dense_strides,
                               five_strides, index_span, magic_pairs, spatial_ints, three)
from ...dtypes import DType, float32, float64, int64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, prod, view_arg
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee
from .specs import pool as spec
from .specs.pool import PoolKnobs

__all__ = [
    "PoolDescriptor", "PoolArgs", "PoolBackwardArgs", "PoolPlan", "PoolBackwardPlan",
    "AdaptivePoolDescriptor", "AdaptivePoolPlan", "AdaptivePoolBackwardPlan",
    "pool_output_size", "adaptive_pool_windows", "pool_dense_strides",
]

POOL_OPS = ("max", "avg")
#: dense element strides of an (N, C, *spatial) tensor in a layout (NCHW / NHWC)
pool_dense_strides = dense_strides
_MAX_GRID = 2**31 - 1


# ------------------------------------------------------------------------------ host math
def pool_output_size(n: int, k: int, s: int, p: int, d: int = 1, ceil_mode: bool = False) -> int:
    """torch's pooling output extent of a dim of extent ``n`` (kernel ``k``, stride ``s``,
    padding ``p``, dilation ``d``); may be <= 0 (the descriptors reject that)."""
    num = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def adaptive_pool_windows(n: int, m: int):
    """The ``[start, end)`` input windows of the ``m`` adaptive outputs of a dim of extent ``n``."""
    return [((o * n) // m, -(-((o + 1) * n) // m)) for o in range(m)]


@dataclass(frozen=True)
class PoolDescriptor:
    """Fixed-window pooling of an (N, C, *spatial) input of ``shape`` (``spatial`` = 1, 2 or 3
    spatial dims, each >= 1; N and C may be 0): ``kernel_size`` / ``stride`` (None: the kernel
    size) / ``padding`` / ``dilation`` (an int or one per spatial dim), ``ceil_mode``, ``op``
    ``"max"`` | ``"avg"``, avg's ``count_include_pad`` and ``divisor_override`` (None or a
    non-zero int), ``dtype`` (f32, f16, bf16, f64) and the output ``layout`` (NCHW / NHWC).
    torch's rules (InvalidProblemError): kernel, stride, dilation >= 1; 0 <= padding <=
    kernel // 2; avg has dilation 1; every output extent >= 1."""

    spatial: int
    shape: Tuple[int, ...]
    kernel_size: object
    stride: object = None
    padding: object = 0
    dilation: object = 1
    ceil_mode: bool = False
    op: str = "max"
    count_include_pad: bool = True
    divisor_override: Optional[int] = None
    dtype: DType = float32
    layout: str = "NCHW"

    def __post_init__(self):
        what = "Pool"
        check_image_desc(self, what)
        k = self.spatial
        ks = spatial_ints(self.kernel_size, k, what, "kernel_size")
        empty = isinstance(self.stride, (tuple, list)) and len(self.stride) == 0
        st = ks if self.stride is None or empty else spatial_ints(self.stride, k, what, "stride")
        pd = spatial_ints(self.padding, k, what, "padding")
        dl = spatial_ints(self.dilation, k, what, "dilation")
        for name, vals, lo in (("kernel_size", ks, 1), ("stride", st, 1), ("dilation", dl, 1),
                               ("padding", pd, 0)):
            if any(v < lo for v in vals):
                raise InvalidProblemError(f"{what}: {name} must be >= {lo}, got {vals}")
        if any(p > kk // 2 for p, kk in zip(pd, ks)):
            raise InvalidProblemError(f"{what}: padding {pd} must be at most half the kernel "
                                      f"size {ks}")
        if self.op not in POOL_OPS:
            raise InvalidProblemError(f"{what}: op must be 'max' or 'avg', got {self.op!r}")
        dv = self.divisor_override
        if self.op == "avg":
            if any(v != 1 for v in dl):
                raise InvalidProblemError(f"{what}: avg pooling has no dilation, got {dl}")
            if dv is not None and (isinstance(dv, bool) or not isinstance(dv, int) or dv == 0
                                   or abs(dv) >= 2**62):
                raise InvalidProblemError(f"{what}: divisor_override must be a non-zero int or "
                                          f"None, got {dv!r}")
        elif dv is not None:
            raise InvalidProblemError(f"{what}: divisor_override applies to avg pooling only")
        object.__setattr__(self, "kernel_size", ks)
        object.__setattr__(self, "stride", st)
        object.__setattr__(self, "padding", pd)
        object.__setattr__(self, "dilation", dl)
        object.__setattr__(self, "ceil_mode", bool(self.ceil_mode))
        object.__setattr__(self, "count_include_pad", bool(self.count_include_pad))
        out = self.out_spatial
        if any(o < 1 for o in out):
            raise InvalidProblemError(f"{what}: output size {out} is too small for input "
                                      f"{self.shape[2:]} (kernel {ks}, stride {st}, padding {pd}, "
                                      f"dilation {dl})")

    @property
    def out_spatial(self) -> Tuple[int, ...]:
        return tuple(pool_output_size(n, k, s, p, d, self.ceil_mode) for n, k, s, p, d in
                     zip(self.shape[2:], self.kernel_size, self.stride, self.padding,
                         self.dilation))

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return self.shape[:2] + self.out_spatial


@dataclass(frozen=True)
class AdaptivePoolDescriptor:
    """Adaptive pooling of an (N, C, *spatial) input of ``shape`` to ``output_size`` (an int or
    one per spatial dim, >= 0; None entries keep the input extent), ``op`` max | avg, ``dtype``
    (f32, f16, bf16, f64), output ``layout`` (NCHW / NHWC).  Spatial extents >= 1."""

    spatial: int
    shape: Tuple[int, ...]
    output_size: object
    op: str = "avg"
    dtype: DType = float32
    layout: str = "NCHW"

    def __post_init__(self):
        what = "AdaptivePool"
        check_image_desc(self, what)
        k = self.spatial
        os_ = self.output_size
        if os_ is None or isinstance(os_, int):
            os_ = (os_,) * k
        try:
            os_ = tuple(os_)
        except TypeError:
            raise InvalidProblemError(f"{what}: output_size must be an int or {k} ints, got "
                                      f"{self.output_size!r}") from None
        if len(os_) == 1:
            os_ = os_ * k
        os_ = tuple(n if o is None else o for o, n in zip(os_, self.shape[2:])) \
            if len(os_) == k else os_
        os_ = spatial_ints(os_, k, what, "output_size")
        if any(o < 0 for o in os_):
            raise InvalidProblemError(f"{what}: output_size must be >= 0, got {os_}")
        if self.op not in POOL_OPS:
            raise InvalidProblemError(f"{what}: op must be 'max' or 'avg', got {self.op!r}")
        object.__setattr__(self, "output_size", os_)

    @property
    def out_spatial(self) -> Tuple[int, ...]:
        return self.output_size

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return self.shape[:2] + self.output_size


@dataclass
class PoolArgs:
    """Forward operands: ``x`` (N, C, *spatial), any strides; ``y`` the output (``desc.out_shape``,
    dense in ``desc.layout``); ``indices`` (max only, optional): int64, same shape and layout as
    ``y``."""

    x: object
    y: object
    indices: object = None


@dataclass
class PoolBackwardArgs:
    """Backward operands: ``dy`` (``desc.out_shape``, any strides); ``dx`` (``desc.shape``, dense in
    ``desc.layout``); ``indices`` (max: required, the forward's int64 indices, any strides)."""

    dy: object
    dx: object
    indices: object = None


class _PoolBase(Plan):
    """Shared plan / bind / launch of the four pooling plans; subclasses set ``_backward`` and
    ``_adaptive``."""

    _backward = False
    _adaptive = False

    def _plan(self) -> None:
        d = self.desc
        if self._adaptive:
            ks = st = dl = (1,) * d.spatial
            pd = (0,) * d.spatial
            cip, div = 1, 0
        else:
            ks, st, pd, dl = d.kernel_size, d.stride, d.padding, d.dilation
            cip = 1 if d.count_include_pad else 0
            div = d.divisor_override or 0
        sp, out = d.shape[2:], d.out_spatial
        self._e = (d.shape[0], d.shape[1]) + three(sp, 1) + three(out, 1)
        self._w = three(ks, 1) + three(st, 1) + three(pd, 0) + three(dl, 1)
        self._flags = (1 if self._adaptive else 0, cip, div, 1 if d.layout == "NHWC" else 0)
        self._n = prod(d.shape) if self._backward else prod(d.out_shape)
        if -(-self._n // spec.THREADS) > _MAX_GRID:
            raise UnsupportedError(f"pooling: {self._n} elements exceed the grid limit")
        self._template = spec.POOL_BW if self._backward else spec.POOL_FW
        e3, o3 = self._e[2:5], self._e[5:8]
        # index-math divisors: the decomposed extents (C, E0, E1, E2), and per dim its
        # dilation, output extent, stride and input extent
        self._dec = self._e[2:5] if self._backward else self._e[5:8]
        self._wm = tuple(v for k in range(3) for v in magic_pairs(self._w[9 + k], o3[k],
                                                             self._w[3 + k], e3[k]))
        products = [o * i + o + i for o, i in zip(o3, e3)]
        self._wide = max([self._n, prod(d.shape), prod(d.out_shape)] + products) >= NARROW
        runs = spec.OUTPUTS_PER_THREAD
        if not self._backward and not self._wide and self._e[7] >= runs:
            self._template = spec.POOL_FW_RUNS
            self._knobs = PoolKnobs(d.dtype.short, d.op, False, runs)
        else:
            self._knobs = PoolKnobs(d.dtype.short, d.op, self._wide)
        ct = float64 if d.dtype is float64 else float32
        pg = PrecisionGuarantee(math_precision=ct, accumulator=ct)
        name = ("adaptive_" if self._adaptive else "") + d.op + "_pool" + (
            "_backward" if self._backward else "")
        self._sku = KernelSku(OpCategory.POOLING, name, d.dtype, self._arch, BackendKind.CUTE_DSL,
                              pg, aux_element=int64 if d.op == "max" else None, layout=d.layout,
                              template=self._template.name, knobs=freeze_knobs(self._knobs))

    def is_empty(self) -> bool:
        return self._n == 0

    def _bind(self, args):
        d = self.desc
        if self._backward:
            dy = view_arg(args.dy, "dy", shape=d.out_shape, dtype=d.dtype)
            dx = check_dense_in(view_arg(args.dx, "dx", shape=d.shape, dtype=d.dtype,
                                        device=dy.device), "dx", d.layout)
            idx = view_arg(args.indices, "indices", shape=d.out_shape, dtype=int64,
                           device=dy.device, optional=d.op != "max")
            if d.op == "avg" and idx is not None:
                raise InvalidProblemError("indices are only used by max pooling")
            return dy, dx, idx
        x = view_arg(args.x, "x", shape=d.shape, dtype=d.dtype)
        y = check_dense_in(view_arg(args.y, "y", shape=d.out_shape, dtype=d.dtype,
                                   device=x.device), "y", d.layout)
        idx = view_arg(args.indices, "indices", shape=d.out_shape, dtype=int64, device=x.device,
                       optional=True)
        if idx is not None:
            if d.op != "max":
                raise InvalidProblemError("indices are only written by max pooling")
            check_dense_in(idx, "indices", d.layout)
        return x, y, idx

    def _threads(self, knobs: PoolKnobs):
        """(threads, the magic pairs of the thread-index divisors) of a launch of ``knobs``:
        backward one thread per input element; forward one per run of
        ``spec.outputs_per_thread(knobs)`` outputs along the last spatial dim."""
        d = self.desc
        if self._backward:
            return self._n, magic_pairs(d.shape[1], *self._dec)
        v = spec.outputs_per_thread(knobs)
        od, oh, ow = self._dec
        og = -(-ow // v)
        return prod(d.out_shape[:2]) * od * oh * og, magic_pairs(d.shape[1], od, oh, og)

    def _launch(self, bound, stream: int, ws) -> None:
        a, b, idx = bound
        knobs, template = self._knobs, self._template
        if not knobs.wide and index_span(*bound) >= NARROW:
            knobs = PoolKnobs(knobs.dtype, knobs.op, True)   # strides reach past Int32
            template = spec.POOL_BW if self._backward else spec.POOL_FW
        kern = self._kernel(template, knobs, b.device)
        n, mg = self._threads(knobs)
        grid = (-(-n // spec.THREADS), 1, 1)
        geo = [*self._e, *self._w]
        tail = [*mg, *self._wm]
        if self._backward:
            js = five_strides(idx.strides) if idx is not None else (0,) * 5
            kern.launch(grid, [a.ptr, b.ptr, idx.ptr if idx is not None else a.ptr, n, *geo,
                               *five_strides(a.strides), *js, *five_strides(b.strides), *self._flags, *tail],
                        stream)
        else:
            want = 1 if idx is not None else 0
            kern.launch(grid, [a.ptr, b.ptr, idx.ptr if idx is not None else b.ptr, n, *geo,
                               *five_strides(a.strides), *five_strides(b.strides), *self._flags, want, *tail],
                        stream)


class PoolPlan(_PoolBase):
    """max_pool / avg_pool forward (1-3 spatial dims; ``PoolArgs(x, y, indices=None)``): one
    thread per output; see the module docstring."""

    descriptor = PoolDescriptor


class PoolBackwardPlan(_PoolBase):
    """Gradient of max_pool / avg_pool (``PoolBackwardArgs(dy, dx, indices)``): gather form, fixed
    order, deterministic, no atomics."""

    descriptor = PoolDescriptor
    _backward = True


class AdaptivePoolPlan(_PoolBase):
    """adaptive_max_pool / adaptive_avg_pool forward (``PoolArgs(x, y, indices=None)``)."""

    descriptor = AdaptivePoolDescriptor
    _adaptive = True


class AdaptivePoolBackwardPlan(_PoolBase):
    """Gradient of adaptive_max_pool / adaptive_avg_pool (``PoolBackwardArgs(dy, dx, indices)``):
    gather form, deterministic."""

    descriptor = AdaptivePoolDescriptor
    _adaptive = True
    _backward = True
