"""Backward plans of sort / top-k / kthvalue: scatters through the forward's int64 indices.

    sort:      dx[..., idx[..., j], ...] = dy[..., j, ...]           (idx a permutation)
    top-k:     dx = 0;  dx[..., idx[..., c], ...] = dy[..., c, ...]  for c < k
    kthvalue:  dx = 0;  dx[..., idx[...], ...] = dy[...]

dtypes f32, f16, bf16, f64 (values move bit-exactly: no arithmetic).  ``dy`` and ``indices``
may have any strides, ``dx`` is dense.  Indices outside ``[0, n)`` are skipped; indices of a
row must be distinct (as the forward produces them) — then each ``dx`` element has one writer
and the result is deterministic.  No workspace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from ...dtypes import FP4, DType, float32, int64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, norm_axis, prod, view_arg
from ...tensor import check_shape, contiguous_strides
from ...vocabulary import BackendKind, KernelSku, OpCategory, Workspace
from .sort import check_k, exact_precision, row_geometry, sort_operand
from .specs import sort as spec
from .specs.sort import ScatterBackwardKnobs


class _ScatterBackwardBase(Plan):
    """Shared SKU, checks and launches of the three backward plans: each ``_plan`` calls
    ``_setup`` with x's shape, the axis, the selected column count and the shapes of the
    selected (keep-dims) view and of dy."""

    _op = "sort_backward"

    def _setup(self, shape, axis, ncols: int, sel_shape, dy_shape):
        dt = self._dt = self.desc.dtype
        self._shape, self._axis = shape, axis
        self._n = (shape or (1,))[axis]
        self._ncols, self._sel_shape, self._dy_shape = ncols, sel_shape, dy_shape
        self._dx_strides = contiguous_strides(shape)
        self._zero_knobs = ScatterBackwardKnobs(dt.itemsize, "zero")
        self._knobs = ScatterBackwardKnobs(dt.itemsize, "scatter")
        self._sku = KernelSku(OpCategory.INDEXING, self._op, dt, self._arch,
                              BackendKind.CUTE_DSL, exact_precision(dt), aux_element=int64,
                              template=spec.SORT_SCATTER_BW.name, knobs=freeze_knobs(self._knobs))

    def _axis_of(self, what: str):
        """(x's shape, the normalised axis) of the descriptor."""
        shape = check_shape(self.desc.shape, f"{what}: x")
        return shape, norm_axis(self.desc.axis, len(shape), what)

    def is_empty(self) -> bool:
        return prod(self._shape) == 0

    def _sel_strides(self, strides):
        """Strides of a dy / indices view in the selected (keep-dims) shape's form."""
        if len(strides) == len(self._sel_shape):
            return tuple(strides)
        return tuple(strides[:self._axis]) + (0,) + tuple(strides[self._axis:])

    def _bind(self, args):
        dy = view_arg(args.dy, "dy", shape=self._dy_shape, dtype=self._dt)
        idx = view_arg(args.indices, "indices", shape=self._dy_shape, dtype=int64,
                       device=dy.device)
        dx = view_arg(args.dx, "dx", shape=self._shape, dtype=self._dt, device=dy.device)
        if dx.numel and not dx.is_contiguous():
            raise UnsupportedError(f"dx: must be dense row-major (got strides {dx.strides}); "
                                   f"strided gradients are not wired")
        return dy, idx, dx

    def _launch(self, bound, s: int, ws: Workspace) -> None:
        dy, idx, dx = bound
        t = spec.ELEM_THREADS
        dev = dx.device
        if self._ncols < self._n:
            total = prod(self._shape)
            self._kernel(spec.SORT_SCATTER_BW, self._zero_knobs, dev).launch(
                (-(-total // t), 1, 1), [0, 0, dx.ptr, 0, total, 1, 0, 0, 0] + [1] * 7
                + [0] * 21, s)
        if self._ncols == 0:
            return
        sel = self._sel_shape or (1,)
        ys = self._sel_strides(dy.strides) if self._shape else (0,)
        is_ = self._sel_strides(idx.strides) if self._shape else (0,)
        xs = self._dx_strides if self._shape else (0,)
        ncols, rows, (ya, ia, xa), e, (y7, i7, x7) = row_geometry(sel, self._axis, ys, is_, xs)
        total = rows * ncols
        self._kernel(spec.SORT_SCATTER_BW, self._knobs, dev).launch(
            (-(-total // t), 1, 1),
            [dy.ptr, idx.ptr, dx.ptr, self._n, total, ncols, ya, ia, xa, *e, *y7, *i7, *x7], s)


_BW_DTYPES = FP4


@dataclass(frozen=True)
class SortBackwardDescriptor:
    """Gradient of sort along ``axis``: dx[idx] = dy (``shape`` = x's shape; f32/f16/bf16/f64)."""

    shape: Tuple[int, ...]
    axis: int = -1
    dtype: DType = float32

    def __post_init__(self):
        sort_operand(self, _BW_DTYPES, "SortBackward")


@dataclass
class SortBackwardArgs:
    """dy, indices (int64, the forward's): x's shape, any strides; dx: dense, x's shape."""

    dy: object
    indices: object
    dx: object


class SortBackwardPlan(_ScatterBackwardBase):
    """dx[..., indices[..., j]] = dy[..., j] (a permutation scatter); bit-exact, deterministic."""

    descriptor = SortBackwardDescriptor
    _op = "sort_backward"

    def _plan(self) -> None:
        shape, axis = self._axis_of("SortBackward")
        self._setup(shape, axis, (shape or (1,))[axis], shape, shape)


@dataclass(frozen=True)
class TopkBackwardDescriptor:
    """Gradient of topk(x, k, axis): dx = 0 except dx[indices] = dy (``shape`` = x's shape)."""

    shape: Tuple[int, ...]
    k: int
    axis: int = -1
    dtype: DType = float32

    def __post_init__(self):
        sort_operand(self, _BW_DTYPES, "TopkBackward")


@dataclass
class TopkBackwardArgs(SortBackwardArgs):
    """dy, indices (int64): the top-k output shape, any strides; dx: dense, x's shape."""


class TopkBackwardPlan(_ScatterBackwardBase):
    """dx = 0; dx[..., indices[..., c]] = dy[..., c] for c < k; deterministic."""

    descriptor = TopkBackwardDescriptor
    _op = "topk_backward"

    def _plan(self) -> None:
        shape, axis = self._axis_of("TopkBackward")
        k = check_k(self.desc.k, 0, (shape or (1,))[axis], "TopkBackward")
        sel = shape[:axis] + (k,) + shape[axis + 1:] if shape else ()
        self._setup(shape, axis, k, sel, sel)


@dataclass(frozen=True)
class KthvalueBackwardDescriptor:
    """Gradient of kthvalue(x, k, axis, keepdims): dx = 0 except dx[index] = dy."""

    shape: Tuple[int, ...]
    axis: int = -1
    dtype: DType = float32
    keepdims: bool = False

    def __post_init__(self):
        sort_operand(self, _BW_DTYPES, "KthvalueBackward")


@dataclass
class KthvalueBackwardArgs(SortBackwardArgs):
    """dy, indices (int64): kthvalue's output shape, any strides; dx: dense, x's shape."""


class KthvalueBackwardPlan(_ScatterBackwardBase):
    """dx = 0; dx[..., indices[...], ...] = dy[...]; deterministic."""

    descriptor = KthvalueBackwardDescriptor
    _op = "kthvalue_backward"

    def _plan(self) -> None:
        shape, axis = self._axis_of("KthvalueBackward")
        if (shape or (1,))[axis] == 0:
            raise InvalidProblemError("KthvalueBackward: the reduced axis has extent 0")
        keep = shape[:axis] + (1,) + shape[axis + 1:] if shape else ()
        dy_shape = keep if (self.desc.keepdims or not shape) else shape[:axis] + shape[axis + 1:]
        self._setup(shape, axis, 1, keep, dy_shape)
