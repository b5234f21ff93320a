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
over a thread-block cluster of 2, 4 or 8 full-size CTAs (forward up to 262144 elements for
2-byte and f32 rows); anything longer takes the loop SKU (the row is read twice).  Operands that
are not 16-byte aligned, or N / outer strides not multiples of the vector width, run the generic
element-wise loop SKU of the same family (same results, lower bandwidth).  Sparsemax has no
cluster SKUs: rows beyond one CTA's registers take the loop SKU.  The ladders are data:
:class:`SoftmaxTuning` (rungs per direction and dtype, and the longest forward row kept in one
CTA on sm90a), passed as ``PlanPreference(tuning=...)`` and chosen with
``benchmarks/sweep_softmax.py``; the half-size cluster SKUs are prebuilt for the sweep.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Tuple

from ...common.row_layout import RowLayout, strided_rows
from ...common.rows import Ladder, PerDtype, RowPolicy, dtype_pairs, ladder_of
from ...dtypes import FP4, DType, float32, float64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, check_dtype, check_writable_no_overlap, norm_axis, prod, view_arg
from ...tensor import check_shape
from .specs import softmax as spec
from ...vocabulary import ArchSku, BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace

_I32_MAX = 2**31 - 1


def compute_dtype(dt: DType) -> DType:
    """Math / accumulation dtype: f64 for f64 inputs, f32 otherwise."""
    return float64 if dt == float64 else float32


@dataclass(frozen=True)
class SoftmaxTuning:
    """Softmax kernel choice on sm90a (``PlanPreference(tuning=SoftmaxTuning(...))``): cluster
    ladders — (CTAs, half-size slices?) rungs in order of preference, each among the built
    cluster SKUs (``specs/softmax.py`` FW_ROWS / BW_ROWS ``clusters``) — for rows longer than
    one CTA's register bucket, per direction and (forward) per dtype, and ``single_cta_max_fw``:
    per dtype, forward rows longer than this go to the ladder even when one CTA could hold them.
    Per-dtype settings take a mapping or (dtype, value) pairs.

    Sweeps of 2026-11-23 (benchmarks/sweep_softmax.py, H100, fraction of copy): since the forward
    keeps only the packed inputs in registers (32 a thread: two 1024-thread CTAs per SM) full
    slices win — bf16 64K: 2 full 0.98, 4 half 0.97; 128K: 4 full 0.96, 8 half 0.95; 256K:
    8 full 0.91, loop 0.64 — so every dtype takes the full ladder and one CTA up to its cap
    (while the forward kept its f32 exps in registers, half slices won for 16-bit rows)."""

    ladder_fw: Ladder = ((2, False), (4, False), (8, False))
    ladder_bw: Ladder = ((2, False), (4, False), (8, False))
    ladder_fw_by_dtype: PerDtype = ()
    single_cta_max_fw: PerDtype = ()

    def __post_init__(self):
        object.__setattr__(self, "ladder_fw", ladder_of(self.ladder_fw))
        object.__setattr__(self, "ladder_bw", ladder_of(self.ladder_bw))
        object.__setattr__(self, "ladder_fw_by_dtype", tuple(
            (dt, ladder_of(lad)) for dt, lad in dtype_pairs(self.ladder_fw_by_dtype)))
        object.__setattr__(self, "single_cta_max_fw", tuple(
            (dt, int(n)) for dt, n in dtype_pairs(self.single_cta_max_fw)))

    def policy(self, dtype: str, backward: bool = False) -> RowPolicy:
        """The row-engine policy of ``dtype``'s forward or backward kernel."""
        if backward:
            return RowPolicy(ladder=self.ladder_bw)
        return RowPolicy(ladder=dict(self.ladder_fw_by_dtype).get(dtype, self.ladder_fw),
                         cluster_above=dict(self.single_cta_max_fw).get(dtype))


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


def _sku(op_name: str, dt: DType, arch, template: str, knobs) -> KernelSku:
    return KernelSku(OpCategory.SOFTMAX, op_name, dt, arch, BackendKind.CUTE_DSL,
                     _precision(dt), aux_element=compute_dtype(dt), template=template,
                     knobs=freeze_knobs(knobs))


def primary_knobs(dt: DType, n: int, arch: ArchSku, tuning: SoftmaxTuning,
                  backward: bool = False, sparse: bool = False) -> spec.SoftmaxKnobs:
    """Smallest register bucket that holds the row; on sm90a (not sparsemax) rows up to 8
    buckets long are split over a 2/4/8-CTA cluster (the tuning's ladder); longer rows take the
    vectorised loop SKU."""
    engine = spec.SPARSEMAX_ROWS if sparse else spec.BW_ROWS if backward else spec.FW_ROWS
    g = engine.choose(dt.short, n, arch is ArchSku.SM90A, tuning.policy(dt.short, backward))
    return spec.SoftmaxKnobs.of(g, dtype=dt.short)


def generic_knobs(dt: DType) -> spec.SoftmaxKnobs:
    """The element-wise loop SKU (operands not 16-byte aligned, or N / strides not multiples of
    the vector width)."""
    return spec.SoftmaxKnobs.of(spec.FW_ROWS.generic(), dtype=dt.short)


@functools.lru_cache(maxsize=512)
def _layout(shape, ax: int, names, strides) -> RowLayout:
    """The strided row layout of one call (memoised); UnsupportedError unless the softmax axis
    has unit stride in every operand."""
    n = shape[ax]
    for name, st in zip(names, strides):
        if n != 1 and st[ax] != 1:
            raise UnsupportedError(
                f"{name}: the softmax axis {ax} must have unit stride; got strides {st} for "
                f"shape {shape}. Make it contiguous with the axis last first (array_api does "
                f"this automatically).")
    outer = tuple(s for i, s in enumerate(shape) if i != ax)
    ost = [tuple(s for i, s in enumerate(st) if i != ax) for st in strides]
    return strided_rows(n, outer, ost, "the non-softmax dims")


class _RowPlan(Plan):
    """Shared select / check / launch path: ``_fields`` are the Args' input names then the
    output; one kernel launch over all rows."""

    _template = None
    _fields = ("x", "y")
    _op = "softmax"
    _backward = False
    _sparse = False

    def _plan(self) -> None:
        d = self.desc
        _, self._ax, self._m, self._n = _rows(d.shape, d.axis, type(self).__name__)
        tuning = self.pref.tuning_for(SoftmaxTuning)
        self._knobs = primary_knobs(d.dtype, self._n, self._arch, tuning, self._backward,
                                    self._sparse)
        self._generic = generic_knobs(d.dtype)
        self._sku = _sku(self._op_name(), d.dtype, self._arch, self._template.name, self._knobs)
        self._records = {}

    def _op_name(self) -> str:
        return self._op

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

    def _layout_of(self, views) -> RowLayout:
        return _layout(self.desc.shape, self._ax, self._fields,
                       tuple(tuple(v.strides) for v in views))

    def _bind(self, args):
        """The checked views, their pointers and the launch record of their layout (memoised
        per plan by strides, alignment and device: a repeated call only re-checks the operands
        and fills in pointers); a new layout is validated here."""
        views = self._views(args)
        ptrs = tuple(v.ptr for v in views)
        aligned = not (functools.reduce(lambda a, b: a | b, ptrs) & 15)
        key = (tuple(tuple(v.strides) for v in views), aligned, views[0].device)
        rec = self._records.get(key)
        if rec is None and not self.is_empty():
            self._layout_of(views)
        return views, ptrs, key, rec

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        views, ptrs, key, rec = bound
        if rec is None:
            rec = self._launch_record(key, views, key[1])
        kern, grid, tail = rec
        kern.launch(grid, ptrs + tail, stream)

    def _launch_record(self, key, views, aligned: bool):
        """Kernel, grid and the non-pointer arguments for one layout of the operands."""
        k = self._knobs
        lay = self._layout_of(views)
        if not (aligned and lay.gcd % k.vec == 0):
            k = self._generic
        kern = self._kernel(self._template, k, views[0].device)
        grid = (k.blocks(self._m), 1, 1)
        tail = (self._m, self._n, lay.sizes[1], lay.sizes[2]) + lay.flat_strides() + (
            self._runtime_flag(),)
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

    descriptor = SoftmaxDescriptor
    _template = spec.SOFTMAX_FW
    _fields = ("x", "y")

    def _op_name(self) -> str:
        return "log_softmax" if self.desc.log else "softmax"

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

    descriptor = SoftmaxBackwardDescriptor
    _template = spec.SOFTMAX_BW
    _fields = ("dy", "y", "dx")
    _backward = True

    def _op_name(self) -> str:
        return "log_softmax_backward" if self.desc.log else "softmax_backward"

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

    descriptor = SparsemaxDescriptor
    _template = spec.SPARSEMAX_FW
    _fields = ("x", "y")
    _sparse = True
    _op = "sparsemax"


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

    descriptor = SparsemaxBackwardDescriptor
    _template = spec.SOFTMAX_BW
    _fields = ("dy", "y", "dx")
    _backward = True
    _op = "sparsemax_backward"

    def _runtime_flag(self) -> int:
        return spec.MODE_SPARSEMAX


__all__ = [
    "SoftmaxDescriptor", "SoftmaxArgs", "SoftmaxPlan", "SoftmaxBackwardDescriptor",
    "SoftmaxBackwardArgs", "SoftmaxBackwardPlan", "SparsemaxDescriptor", "SparsemaxArgs",
    "SparsemaxPlan", "SparsemaxBackwardDescriptor", "SparsemaxBackwardArgs",
    "SparsemaxBackwardPlan", "SoftmaxTuning", "compute_dtype", "primary_knobs", "generic_knobs",
]
