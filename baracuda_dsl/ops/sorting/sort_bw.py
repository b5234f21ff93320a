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
from ...plan import Plan, check_dtype, plan_arch, prod, resolve_pref, view_arg
from ...tensor import check_shape, contiguous_strides
from .specs import sort as spec
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee
from .sort import _check_k, norm_axis, row_geometry


class _ScatterBackwardBase(Plan):
    _op = "sort_backward"

    def _setup(self, shape, axis, dt, ncols: int, sel_shape, dy_shape, pref):
        from ...jit import freeze_knobs

        self._arch = plan_arch(pref)
        self._shape, self._axis, self._dt = shape, axis, dt
        self._n = (shape or (1,))[axis]
        self._ncols, self._sel_shape, self._dy_shape = ncols, sel_shape, dy_shape
        self._dx_strides = contiguous_strides(shape)
        self._zero_knobs = dict(itemsize=dt.itemsize, mode="zero")
        self._knobs = dict(itemsize=dt.itemsize, mode="scatter")
        prec = PrecisionGuarantee(math_precision=dt, accumulator=dt,
                                  bit_stable_on_same_hardware=True, deterministic=True)
        self._sku = KernelSku(OpCategory.INDEXING, self._op, dt, self._arch,
                              BackendKind.CUTE_DSL, prec, aux_element=int64,
                              template=spec.SORT_SCATTER_BW.name, knobs=freeze_knobs(self._knobs))

    def is_empty(self) -> bool:
        return prod(self._shape) == 0

    def _sel_strides(self, strides):
        """Strides of a dy / indices view in the selected (keep-dims) shape's form."""
        if len(strides) == len(self._sel_shape):
            return tuple(strides)
        return tuple(strides[:self._axis]) + (0,) + tuple(strides[self._axis:])

    def _views(self, args):
        dy = view_arg(args.dy, "dy", shape=self._dy_shape, dtype=self._dt)
        idx = view_arg(args.indices, "indices", shape=self._dy_shape, dtype=int64,
                       device=dy.device)
        dx = view_arg(args.dx, "dx", shape=self._shape, dtype=self._dt, device=dy.device)
        if dx.numel and not dx.is_contiguous():
            raise UnsupportedError(f"dx: must be dense row-major (got strides {dx.strides}); "
                                   f"strided gradients are not wired")
        return dy, idx, dx

    def can_implement(self, args) -> None:
        self._views(args)

    def run(self, args, stream=None, workspace=None) -> None:
        from ...runtime.stream import stream_handle

        dy, idx, dx = self._views(args)
        self.check_workspace(workspace)
        if self.is_empty():
            return
        s = stream_handle(stream)
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
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, _BW_DTYPES, "SortBackward"))


@dataclass
class SortBackwardArgs:
    """dy, indices (int64, the forward's): x's shape, any strides; dx: dense, x's shape."""

    dy: object
    indices: object
    dx: object


class SortBackwardPlan(_ScatterBackwardBase):
    """dx[..., indices[..., j]] = dy[..., j] (a permutation scatter); bit-exact, deterministic."""

    _op = "sort_backward"

    @classmethod
    def select(cls, desc, pref=None):
        pref = resolve_pref(pref)
        if not isinstance(desc, SortBackwardDescriptor):
            raise InvalidProblemError(f"SortBackwardPlan needs a SortBackwardDescriptor, got "
                                      f"{type(desc).__name__}")
        shape = check_shape(desc.shape, "SortBackward: x")
        axis = norm_axis(desc.axis, len(shape), "SortBackward")
        plan = cls(desc, pref, None)
        plan._setup(shape, axis, desc.dtype, (shape or (1,))[axis], shape, shape, pref)
        return plan


@dataclass(frozen=True)
class TopkBackwardDescriptor:
    """Gradient of topk(x, k, axis): dx = 0 except dx[indices] = dy (``shape`` = x's shape)."""

    shape: Tuple[int, ...]
    k: int
    axis: int = -1
    dtype: DType = float32

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, _BW_DTYPES, "TopkBackward"))


@dataclass
class TopkBackwardArgs:
    """dy, indices (int64): the top-k output shape, any strides; dx: dense, x's shape."""

    dy: object
    indices: object
    dx: object


class TopkBackwardPlan(_ScatterBackwardBase):
    """dx = 0; dx[..., indices[..., c]] = dy[..., c] for c < k; deterministic."""

    _op = "topk_backward"

    @classmethod
    def select(cls, desc, pref=None):
        pref = resolve_pref(pref)
        if not isinstance(desc, TopkBackwardDescriptor):
            raise InvalidProblemError(f"TopkBackwardPlan needs a TopkBackwardDescriptor, got "
                                      f"{type(desc).__name__}")
        shape = check_shape(desc.shape, "TopkBackward: x")
        axis = norm_axis(desc.axis, len(shape), "TopkBackward")
        k = _check_k(desc.k, 0, (shape or (1,))[axis], "TopkBackward")
        sel = shape[:axis] + (k,) + shape[axis + 1:] if shape else ()
        plan = cls(desc, pref, None)
        plan._setup(shape, axis, desc.dtype, k, sel, sel, pref)
        return plan


@dataclass(frozen=True)
class KthvalueBackwardDescriptor:
    """Gradient of kthvalue(x, k, axis, keepdims): dx = 0 except dx[index] = dy."""

    shape: Tuple[int, ...]
    axis: int = -1
    dtype: DType = float32
    keepdims: bool = False

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, _BW_DTYPES,
                                                      "KthvalueBackward"))


@dataclass
class KthvalueBackwardArgs:
    """dy, indices (int64): kthvalue's output shape, any strides; dx: dense, x's shape."""

    dy: object
    indices: object
    dx: object


class KthvalueBackwardPlan(_ScatterBackwardBase):
    """dx = 0; dx[..., indices[...], ...] = dy[...]; deterministic."""

    _op = "kthvalue_backward"

    @classmethod
    def select(cls, desc, pref=None):
        pref = resolve_pref(pref)
        if not isinstance(desc, KthvalueBackwardDescriptor):
            raise InvalidProblemError(f"KthvalueBackwardPlan needs a KthvalueBackwardDescriptor, "
                                      f"got {type(desc).__name__}")
        shape = check_shape(desc.shape, "KthvalueBackward: x")
        axis = norm_axis(desc.axis, len(shape), "KthvalueBackward")
        if (shape or (1,))[axis] == 0:
            raise InvalidProblemError("KthvalueBackward: the reduced axis has extent 0")
        keep = shape[:axis] + (1,) + shape[axis + 1:] if shape else ()
        dy_shape = keep if (desc.keepdims or not shape) else shape[:axis] + shape[axis + 1:]
        plan = cls(desc, pref, None)
        plan._setup(shape, axis, desc.dtype, 1, keep, dy_shape, pref)
        return plan
