"""Softmax family plans: softmax / log_softmax and sparsemax, forward and backward.

The reduction axis (``axis``, default −1; length ``N``) must have unit stride in every operand;
the other dims address rows and may have any strides as long as they collapse to at most three
strided groups (any slice, transpose or broadcast of the batch dims does).  Other layouts raise
UnsupportedError (``array_api`` then copies with the axis moved last).  dtypes f32, f16, bf16,
f64; half types compute in f32, f64 in f64.  No workspace; deterministic and bit-stable (fixed
reduction order, no atomics).  Empty problems (no rows or N == 0) return without launching.

Kernel choice (``plan.sku()`` reports the primary SKU): rows up to one CTA's register bucket
(32768 elements forward, 16384 for f64; backward 32768 two-byte / 16384 f32 / 8192 f64) use the
smallest bucket that fits (the row is read once); on sm90a longer rows up to 8 buckets are split
over a thread-block cluster of 2, 4 or 8 CTAs (forward up to 262144 elements for 2-byte and f32
rows; two-byte forward rows over 16384 use 2/4/8 half-size 512-thread slices of 16K elements,
then 8 full slices); anything longer takes the loop SKU (the row is read twice).  Operands that are not 16-byte
aligned, or N / outer strides not multiples of the vector width, run the generic element-wise
loop SKU of the same family (same results, lower bandwidth).  Sparsemax has no cluster SKUs:
rows beyond one CTA's registers take the loop SKU.  The forward's ladder is data:
``ops/softmax/specs/softmax.py`` CLUSTER_LADDER_FW (rungs) and SINGLE_CTA_MAX_FW (longest row kept in one
CTA on sm90a), chosen with ``benchmarks/sweep_softmax.py``; half-size cluster SKUs are prebuilt.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Tuple

from ...dtypes import FP4, DType, float32, float64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import (Plan, check_dtype, check_writable_no_overlap, collapse_dims, norm_axis,
                     plan_arch, prod, resolve_pref, view_arg)
from ...tensor import check_shape
from .specs import softmax as spec
from ...vocabulary import ArchSku, BackendKind, KernelSku, OpCategory, PrecisionGuarantee

_I32_MAX = 2**31 - 1


def compute_dtype(dt: DType) -> DType:
    """Math / accumulation dtype: f64 for f64 inputs, f32 otherwise."""
    return float64 if dt == float64 else float32


def _rows(shape, axis, what: str) -> Tuple[Tuple[int, ...], int, int, int]:
    shape = check_shape(shape, what)
    if len(shape) == 0:
        raise InvalidProblemError(f"{what}: needs at least one dimension (got a 0-d shape)")
    ax = norm_axis(axis, len(shape), what)
    n = shape[ax]
    m = prod(shape) // n if n else prod(s for i, s in enumerate(shape) if i != ax)
    if n > _I32_MAX or m > _I32_MAX:
        raise UnsupportedError(f"{what}: rows ({m}) and row length ({n}) must each be < 2^31")
    return shape, ax, m, n


def _precision(dt: DType) -> PrecisionGuarantee:
    ct = compute_dtype(dt)
    return PrecisionGuarantee(math_precision=ct, accumulator=ct,
                              bit_stable_on_same_hardware=True, deterministic=True)


def _sku(op_name: str, dt: DType, arch, template: str, knobs: dict) -> KernelSku:
    return KernelSku(OpCategory.SOFTMAX, op_name, dt, arch, BackendKind.CUTE_DSL,
                     _precision(dt), aux_element=compute_dtype(dt), template=template,
                     knobs=freeze_knobs(knobs))


def primary_knobs(dt: DType, n: int, arch, backward: bool = False,
                  sparse: bool = False) -> dict:
    """Smallest register bucket that holds the row; on sm90a (not sparsemax) rows up to 8
    buckets long are split over a 2/4/8-CTA cluster; longer rows take the vectorised loop SKU."""
    cap = spec.register_cap(dt.short, backward)
    clusters = arch is ArchSku.SM90A and not sparse
    one = spec.single_cta_max(dt.short, backward) if clusters else cap
    if n <= one:
        b = next(c for c in spec.BUCKETS if c >= n)
        k = dict(dtype=dt.short, cluster=1, **spec.bucket_config(dt.short, b, backward))
        return spec.sparse_config(k) if sparse else k
    if clusters:
        for c, half in spec.cluster_ladder(backward, dt.short):
            if n <= cap // (2 if half else 1) * c:
                return dict(dtype=dt.short, **spec.cluster_config(dt.short, c, backward, half))
        if n <= cap:  # single_cta_max lowered below the cap and no rung fits: one CTA
            b = next(c for c in spec.BUCKETS if c >= n)
            return dict(dtype=dt.short, cluster=1, **spec.bucket_config(dt.short, b, backward))
    return dict(dtype=dt.short, cluster=1, **spec.loop_config(dt.short, True))


def generic_knobs(dt: DType) -> dict:
    return dict(dtype=dt.short, cluster=1, **spec.loop_config(dt.short, False))


class _Geometry:
    """Rows of one call: outer ``sizes`` (3 groups) and per-operand ``strides``; ``gcd`` of N
    and every outer stride (the vector path needs a multiple of the vector width)."""

    __slots__ = ("sizes", "strides", "gcd")

    def __init__(self, sizes, strides, g):
        self.sizes, self.strides, self.gcd = sizes, strides, g


@functools.lru_cache(maxsize=512)
def _geometry(shape, ax: int, names, strides) -> _Geometry:
    n = shape[ax]
    for name, st in zip(names, strides):
        if n != 1 and st[ax] != 1:
            raise UnsupportedError(
                f"{name}: the softmax axis {ax} must have unit stride; got strides {st} for "
                f"shape {shape}. Make it contiguous with the axis last first (array_api does "
                f"this automatically).")
    outer = tuple(s for i, s in enumerate(shape) if i != ax)
    ost = [tuple(s for i, s in enumerate(st) if i != ax) for st in strides]
    col = collapse_dims(outer, *ost)
    oshape, ostrides = col[0], col[1:]
    if len(oshape) > 3:
        raise UnsupportedError(
            f"the non-softmax dims collapse to {len(oshape)} strided groups; at most 3 are "
            f"wired. Make the operands contiguous first (array_api does this automatically).")
    pad = 3 - len(oshape)
    sizes = (1,) * pad + tuple(oshape)
    groups = tuple((0,) * pad + tuple(st) for st in ostrides)
    g = math.gcd(n, *[s for st in groups for s in st])
    return _Geometry(sizes, groups, g)


class _RowPlan(Plan):
    """Shared select / check / launch path: ``_fields`` are the Args' input names then the
    output; one kernel launch over all rows."""

    _template = None
    _fields = ("x", "y")
    _op = "softmax"
    _backward = False
    _sparse = False
    _desc_type = None

    @classmethod
    def select(cls, desc, pref=None):
        pref = resolve_pref(pref)
        if not isinstance(desc, cls._desc_type):
            raise InvalidProblemError(f"{cls.__name__} needs a {cls._desc_type.__name__}, got "
                                      f"{type(desc).__name__}")
        shape, ax, m, n = _rows(desc.shape, desc.axis, cls.__name__)
        arch = plan_arch(pref)
        knobs = primary_knobs(desc.dtype, n, arch, cls._backward, cls._sparse)
        plan = cls(desc, pref, _sku(cls._op_name(desc), desc.dtype, arch, cls._template.name,
                                    knobs))
        plan._arch, plan._ax, plan._m, plan._n, plan._knobs = arch, ax, m, n, knobs
        plan._generic = generic_knobs(desc.dtype)
        plan._records = {}
        return plan

    @classmethod
    def _op_name(cls, desc) -> str:
        return cls._op

    def _runtime_flag(self) -> int:
        return 0

    def is_empty(self) -> bool:
        return self._m == 0 or self._n == 0

    def _views(self, args):
        d = self.desc
        first = view_arg(getattr(args, self._fields[0]), self._fields[0], shape=d.shape,
                         dtype=d.dtype)
        views = [first]
        for f in self._fields[1:]:
            views.append(view_arg(getattr(args, f), f, shape=d.shape, dtype=d.dtype,
                                  device=first.device))
        check_writable_no_overlap(views[-1], self._fields[-1])
        return views

    def _geo(self, views) -> _Geometry:
        return _geometry(self.desc.shape, self._ax, self._fields,
                         tuple(tuple(v.strides) for v in views))

    def can_implement(self, args) -> None:
        views = self._views(args)
        if not self.is_empty():
            self._geo(views)

    def run(self, args, stream=None, workspace=None) -> None:
        from ...runtime.stream import stream_handle

        views = self._views(args)
        self.check_workspace(workspace)
        if self.is_empty():
            return
        ptrs = tuple(v.ptr for v in views)
        aligned = not (functools.reduce(lambda a, b: a | b, ptrs) & 15)
        key = (tuple(tuple(v.strides) for v in views), aligned, views[0].device)
        rec = self._records.get(key)
        if rec is None:
            rec = self._launch_record(key, views, aligned)
        kern, grid, tail = rec
        kern.launch(grid, ptrs + tail, stream_handle(stream))

    def _launch_record(self, key, views, aligned: bool):
        """Kernel, grid and the non-pointer arguments for one layout of the operands (memoised
        per plan: the hot path only fills in the pointers)."""
        k = self._knobs
        geo = self._geo(views)
        if not (aligned and geo.gcd % k["vec"] == 0):
            k = self._generic
        kern = self._kernel(self._template, k, views[0].device)
        grid = ((self._m + k["rows"] - 1) // k["rows"] * k["cluster"], 1, 1)
        strides = tuple(s for st in geo.strides for s in st)
        tail = (self._m, self._n, geo.sizes[1], geo.sizes[2]) + strides + (self._runtime_flag(),)
        if len(self._records) > 64:
            self._records.clear()
        rec = self._records[key] = (kern, grid, tail)
        return rec


def _post_init(self, what: str):
    object.__setattr__(self, "shape", tuple(self.shape))
    object.__setattr__(self, "dtype", check_dtype(self.dtype, FP4, what))
    if isinstance(self.axis, bool) or not isinstance(self.axis, int):
        raise InvalidProblemError(f"{what}: axis must be an int, got {self.axis!r}")


# =============================================================================== softmax
@dataclass(frozen=True)
class SoftmaxDescriptor:
    """y = softmax(x) = exp(x − max)/Σ exp(x − max) along ``axis`` (``log=True``:
    y = x − max − log Σ exp(x − max)).  y has x's dtype and shape."""

    shape: Tuple[int, ...]
    dtype: DType = float32
    axis: int = -1
    log: bool = False

    def __post_init__(self):
        _post_init(self, "Softmax")
        object.__setattr__(self, "log", bool(self.log))


@dataclass
class SoftmaxArgs:
    """x (input), y (output): views of the descriptor's shape and dtype."""

    x: object
    y: object


class SoftmaxPlan(_RowPlan):
    """softmax / log_softmax forward.  dtypes f32/f16/bf16/f64 (f32 math for half types, f64 for
    f64); exp via exp2 (ex2.approx for f32: ≤ 2 ulp); numerically stable (max subtracted; rows of
    −inf give NaN as PyTorch); no workspace; deterministic.  FW traffic: 1 read + 1 write
    (register and cluster SKUs), 2 reads + 1 write (loop SKU)."""

    _template = spec.SOFTMAX_FW
    _fields = ("x", "y")
    _desc_type = SoftmaxDescriptor

    @classmethod
    def _op_name(cls, desc) -> str:
        return "log_softmax" if desc.log else "softmax"

    def _runtime_flag(self) -> int:
        return spec.LOG if self.desc.log else 0


@dataclass(frozen=True)
class SoftmaxBackwardDescriptor:
    """dx = y·(dy − Σ dy·y) (softmax) or dx = dy − exp(y)·Σ dy (``log=True``; y is the
    log-softmax output), sums along ``axis``."""

    shape: Tuple[int, ...]
    dtype: DType = float32
    axis: int = -1
    log: bool = False

    def __post_init__(self):
        _post_init(self, "SoftmaxBackward")
        object.__setattr__(self, "log", bool(self.log))


@dataclass
class SoftmaxBackwardArgs:
    """dy (incoming gradient), y (the forward output), dx (output)."""

    dy: object
    y: object
    dx: object


class SoftmaxBackwardPlan(_RowPlan):
    """softmax / log_softmax backward.  dtypes f32/f16/bf16/f64 (f32 math for half types); no
    workspace; deterministic.  Traffic: 2 reads + 1 write (register / cluster SKUs), 4 reads +
    1 write (loop SKU)."""

    _template = spec.SOFTMAX_BW
    _fields = ("dy", "y", "dx")
    _backward = True
    _desc_type = SoftmaxBackwardDescriptor

    @classmethod
    def _op_name(cls, desc) -> str:
        return "log_softmax_backward" if desc.log else "softmax_backward"

    def _runtime_flag(self) -> int:
        return spec.MODE_LOG if self.desc.log else spec.MODE_SOFTMAX


# ============================================================================= sparsemax
@dataclass(frozen=True)
class SparsemaxDescriptor:
    """y = max(x − τ, 0) along ``axis`` with τ such that Σ y = 1 (Martins & Astudillo)."""

    shape: Tuple[int, ...]
    dtype: DType = float32
    axis: int = -1

    def __post_init__(self):
        _post_init(self, "Sparsemax")


@dataclass
class SparsemaxArgs:
    """x (input), y (output)."""

    x: object
    y: object


class SparsemaxPlan(_RowPlan):
    """Sparsemax forward, any row length.  τ is found exactly by Michelot's fixed-point
    iteration τ ← (Σ_{x>τ} x − 1)/|{x>τ}| from τ₀ = max − 1 (monotone, finitely many steps; one
    row reduction per step, no sort).  dtypes f32/f16/bf16/f64 (f32 math for half types); no
    workspace; deterministic.  Rows up to the register bucket are read once; longer rows (loop
    SKU) are re-read once per step."""

    _template = spec.SPARSEMAX_FW
    _fields = ("x", "y")
    _sparse = True
    _op = "sparsemax"
    _desc_type = SparsemaxDescriptor


@dataclass(frozen=True)
class SparsemaxBackwardDescriptor:
    """dx = s·(dy − Σ s·dy / Σ s), s = [y > 0], along ``axis``."""

    shape: Tuple[int, ...]
    dtype: DType = float32
    axis: int = -1

    def __post_init__(self):
        _post_init(self, "SparsemaxBackward")


@dataclass
class SparsemaxBackwardArgs:
    """dy (incoming gradient), y (the sparsemax output), dx (output)."""

    dy: object
    y: object
    dx: object


class SparsemaxBackwardPlan(_RowPlan):
    """Sparsemax backward (the softmax_bw kernel in sparsemax mode).  dtypes f32/f16/bf16/f64;
    no workspace; deterministic.  2 reads + 1 write (register / cluster SKUs)."""

    _template = spec.SOFTMAX_BW
    _fields = ("dy", "y", "dx")
    _backward = True
    _op = "sparsemax_backward"
    _desc_type = SparsemaxBackwardDescriptor

    def _runtime_flag(self) -> int:
        return spec.MODE_SPARSEMAX


__all__ = [
    "SoftmaxDescriptor", "SoftmaxArgs", "SoftmaxPlan", "SoftmaxBackwardDescriptor",
    "SoftmaxBackwardArgs", "SoftmaxBackwardPlan", "SparsemaxDescriptor", "SparsemaxArgs",
    "SparsemaxPlan", "SparsemaxBackwardDescriptor", "SparsemaxBackwardArgs",
    "SparsemaxBackwardPlan", "compute_dtype", "primary_knobs", "generic_knobs",
]
