"""max_unpool over 1, 2 or 3 spatial dims, forward and backward
(torch.nn.functional.max_unpool1d / max_unpool2d / max_unpool3d).

The partial inverse of max pooling: ``y`` (N, C, *out) is zero-filled, then
``y[n, c, indices[n, c, i]] = x[n, c, i]`` with ``indices`` the int64 positions in the flattened
output plane ``(d·H + h)·W + w`` (max_pool's ``return_indices``).  Output extents: torch's
``(in − 1)·stride − 2·padding + kernel`` per dim, or ``output_size`` (the last ``spatial``
entries of a sequence) when given, which must lie strictly within ``stride`` of that default
(InvalidProblemError otherwise, torch's rule).

Indices out of ``[0, prod(out))``: torch raises on the CPU and device-asserts on CUDA; checking
would need a device sync here, so the kernels skip them (the output keeps its zero) and, when the
Args carry an int32 ``status`` word, store 1 into ``status[0]`` (never clearing it) — the
namespace's ``max_unpool`` raises IndexError from it.  Duplicate indices within a plane race:
one of the values lands, in no defined order (torch's CUDA kernel has the same race); indices
from a max pool with ``stride >= kernel`` never repeat.

Backward (``MaxUnpoolBackwardPlan``): ``dx[n, c, i] = dy[n, c, indices[n, c, i]]`` (a gather,
deterministic; out-of-range gives 0 and the status flag).  Two launches forward (zero, scatter),
one backward; no workspace; bit-exact copies.  Dtypes f32, f16, bf16, f64; outputs dense in
``layout`` (NCHW / NHWC), inputs any strides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from ...dtypes import DType, float32, int64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, prod, view_arg
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee
from ...common.spatial import check_dense_in, check_image_desc, five_strides, spatial_ints, three
from ...common.status import status_ptr
from .fractional import MAX_GRID
from .specs import unpool as spec
from .specs.fractional import THREADS
from .specs.unpool import UnpoolKnobs

__all__ = ["MaxUnpoolDescriptor", "MaxUnpoolArgs", "MaxUnpoolBackwardArgs", "MaxUnpoolPlan",
           "MaxUnpoolBackwardPlan", "unpool_output_size"]


def unpool_output_size(n: int, k: int, s: int, p: int) -> int:
    """torch's default max_unpool extent of a pooled dim of extent ``n``."""
    return (n - 1) * s - 2 * p + k


@dataclass(frozen=True)
class MaxUnpoolDescriptor:
    """max_unpool of a pooled (N, C, *spatial) ``x`` of ``shape`` (``spatial`` = 1, 2 or 3,
    extents >= 1; N, C may be 0) with the pooling's ``kernel_size``, ``stride`` (None: the kernel
    size) and ``padding``, optional ``output_size`` (a sequence; its last ``spatial`` entries),
    ``dtype`` (f32, f16, bf16, f64) and output ``layout`` (NCHW / NHWC)."""

    spatial: int
    shape: Tuple[int, ...]
    kernel_size: object
    stride: object = None
    padding: object = 0
    output_size: object = None
    dtype: DType = float32
    layout: str = "NCHW"

    def __post_init__(self):
        what = "MaxUnpool"
        shape = check_image_desc(self, what, (1, 2, 3))
        k = self.spatial
        ks = spatial_ints(self.kernel_size, k, what, "kernel_size")
        empty = isinstance(self.stride, (tuple, list)) and len(self.stride) == 0
        st = ks if self.stride is None or empty else spatial_ints(self.stride, k, what, "stride")
        pd = spatial_ints(self.padding, k, what, "padding")
        for name, vals, lo in (("kernel_size", ks, 1), ("stride", st, 1), ("padding", pd, 0)):
            if any(v < lo for v in vals):
                raise InvalidProblemError(f"{what}: {name} must be >= {lo}, got {vals}")
        default = tuple(unpool_output_size(n, kk, s, p)
                        for n, kk, s, p in zip(shape[2:], ks, st, pd))
        if self.output_size is None:
            out = default
        else:
            try:
                o = tuple(self.output_size)
            except TypeError:
                raise InvalidProblemError(f"{what}: output_size must be a sequence, got "
                                          f"{self.output_size!r}") from None
            if len(o) == k + 2:
                o = o[2:]
            out = spatial_ints(o, k, what, "output_size") if len(o) == k else None
            if out is None:
                raise InvalidProblemError(f"{what}: output_size must have {k} or {k + 2} "
                                          f"entries, got {self.output_size!r}")
            for v, dflt, s in zip(out, default, st):
                if not dflt - s < v < dflt + s:
                    raise InvalidProblemError(f"{what}: output_size {out} must be strictly "
                                              f"within stride {st} of the default {default}")
        if any(v < 1 for v in out):
            raise InvalidProblemError(f"{what}: output size {out} must be >= 1")
        object.__setattr__(self, "kernel_size", ks)
        object.__setattr__(self, "stride", st)
        object.__setattr__(self, "padding", pd)
        object.__setattr__(self, "output_size", out)

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return self.shape[:2] + self.output_size


@dataclass
class MaxUnpoolArgs:
    """Forward operands: ``x`` (N, C, *spatial) and ``indices`` (int64, same shape), any strides;
    ``y`` (``desc.out_shape``, dense in ``desc.layout``); ``status`` (optional int32 device word,
    set to 1 on an out-of-range index)."""

    x: object
    indices: object
    y: object
    status: object = None


@dataclass
class MaxUnpoolBackwardArgs:
    """Backward operands: ``dy`` (``desc.out_shape``, any strides), ``indices`` (``desc.shape``,
    int64, any strides), ``dx`` (``desc.shape``, dense in ``desc.layout``), ``status``
    (optional int32 word)."""

    dy: object
    indices: object
    dx: object
    status: object = None


class _UnpoolBase(Plan):
    _backward = False

    def _plan(self) -> None:
        d = self.desc
        self._e = (d.shape[0], d.shape[1]) + three(d.shape[2:], 1) + three(d.output_size, 1)
        self._cl = 1 if d.layout == "NHWC" else 0
        self._n_in, self._n_out = prod(d.shape), prod(d.out_shape)
        if -(-max(self._n_in, self._n_out) // THREADS) > MAX_GRID:
            raise UnsupportedError(f"max_unpool: {self._n_out} elements exceed the grid limit")
        self._knobs = UnpoolKnobs(d.dtype.short, "bw" if self._backward else "fw")
        pg = PrecisionGuarantee(math_precision=d.dtype, accumulator=d.dtype)
        self._sku = KernelSku(OpCategory.POOLING, f"max_unpool{d.spatial}d" + (
            "_backward" if self._backward else ""), d.dtype, self._arch, BackendKind.CUTE_DSL,
            pg, aux_element=int64, layout=d.layout, template=spec.MAX_UNPOOL.name,
            knobs=freeze_knobs(self._knobs))

    def is_empty(self) -> bool:
        return self._n_out == 0


class MaxUnpoolPlan(_UnpoolBase):
    """max_unpool forward (``MaxUnpoolArgs(x, indices, y, status=None)``): zero-fill, then
    scatter (two launches); see the module docstring for out-of-range and duplicate indices."""

    descriptor = MaxUnpoolDescriptor

    def _bind(self, args):
        d = self.desc
        x = view_arg(args.x, "x", shape=d.shape, dtype=d.dtype)
        idx = view_arg(args.indices, "indices", shape=d.shape, dtype=int64, device=x.device)
        y = check_dense_in(view_arg(args.y, "y", shape=d.out_shape, dtype=d.dtype,
                                    device=x.device), "y", d.layout)
        return x, idx, y, status_ptr(args.status, x.device)

    def _launch(self, bound, stream: int, ws) -> None:
        x, idx, y, (sp, has) = bound
        kern = self._kernel(spec.MAX_UNPOOL, self._knobs, x.device)
        tail = [*self._e, *five_strides(x.strides), *five_strides(y.strides),
                *five_strides(idx.strides), self._cl]
        st = sp or idx.ptr
        kern.launch((-(-self._n_out // THREADS), 1, 1),
                    [x.ptr, y.ptr, idx.ptr, st, self._n_out, *tail, 0, has], stream)
        if self._n_in:
            kern.launch((-(-self._n_in // THREADS), 1, 1),
                        [x.ptr, y.ptr, idx.ptr, st, self._n_in, *tail, 1, has], stream)


class MaxUnpoolBackwardPlan(_UnpoolBase):
    """Gradient of max_unpool (``MaxUnpoolBackwardArgs(dy, indices, dx, status=None)``):
    ``dx = dy`` gathered at the indices; deterministic, one launch."""

    descriptor = MaxUnpoolDescriptor
    _backward = True

    def is_empty(self) -> bool:
        return self._n_in == 0

    def _bind(self, args):
        d = self.desc
        dy = view_arg(args.dy, "dy", shape=d.out_shape, dtype=d.dtype)
        idx = view_arg(args.indices, "indices", shape=d.shape, dtype=int64, device=dy.device)
        dx = check_dense_in(view_arg(args.dx, "dx", shape=d.shape, dtype=d.dtype,
                                     device=dy.device), "dx", d.layout)
        return dy, idx, dx, status_ptr(args.status, dy.device)

    def _launch(self, bound, stream: int, ws) -> None:
        dy, idx, dx, (sp, has) = bound
        kern = self._kernel(spec.MAX_UNPOOL, self._knobs, dy.device)
        kern.launch((-(-self._n_in // THREADS), 1, 1),
                    [dx.ptr, dy.ptr, idx.ptr, sp or idx.ptr, self._n_in, *self._e,
                     *five_strides(dx.strides), *five_strides(dy.strides),
                     *five_strides(idx.strides), self._cl, 0, has], stream)
