"""Sorting plans: sort, argsort, msort, top-k, kthvalue (forward).

Every plan sorts rows along ``axis`` of a rank ≤ 8 input with any strides (0, negative; the
kernels gather through the strides, no copy) into dense outputs.  Order: ascending puts NaNs
last (numpy / torch), descending puts NaNs first (torch); -0.0 and +0.0 compare equal; stable
(equal keys keep their input order, also descending).  dtypes: bool, int8..int64,
uint8..uint64, float16, bfloat16, float32, float64.  Values are the input words themselves
(bit-exact: -0.0 and NaN payloads kept); indices are int64.  Deterministic.

Kernels (``ops/sorting/specs/sort.py``):

* rows of ``n ≤ 4096`` — the small-row fast path: one CTA per row sorts (key, index) pairs
  with a register-blocked bitonic network (``sort_rows``, bucket 64 / 256 / 1024 / 4096; 8
  pairs per thread, the exchanges of up to 3 consecutive stages in registers between
  swizzled shared-memory round trips — ops/sorting/specs/sort_network.py); no workspace, one launch.
* longer rows (any length < 2^31) — an LSD radix sort segmented by row over 8-bit digits
  (``bits/8`` passes: 1 for 8-bit dtypes, 2, 4, 8): ``radix_keys`` (strided gather →
  keys + int32 indices), per pass ``radix_upsweep`` (tile digit histograms), ``radix_scan``
  (per-digit exclusive scan over tiles) and ``radix_scatter`` (stable scatter), then
  ``sort_gather`` (values decoded from the sorted keys — gathered from the input where
  the key merged values, float ±0 and NaN —, int64 indices).  Workspace: two key and two index buffers
  (ping-pong), the tile counts and digit totals — :meth:`workspace_size`.

``TopkPlan`` and ``KthvaluePlan`` emit the first ``k`` columns of that sort (top-k: descending
for ``largest``, ascending otherwise; sorted output) or column ``k-1`` (kthvalue: ascending),
any ``k ≤ n``.  Rows of ``n ≤ 4096`` take ``sort_select`` instead of a full sort when it is
cheaper (:func:`select_kb`): a per-row radix select in shared memory of the k-th smallest
(key, position) composite, then (top-k) a bitonic sort of only the ``k ≤ 1024`` survivors —
the same values and indices (ties: lowest positions first), one launch, no workspace.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional, Tuple

from ...dtypes import ALL_DTYPES, DType, float32, int64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, align_up, check_dtype, collapse_dims, norm_axis, prod, view_arg
from ...tensor import TensorView, check_shape, contiguous_strides
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace
from .specs import sort as spec
from .specs.sort import (RadixPassKnobs, RadixScanKnobs, SortDtypeKnobs, SortRowsKnobs,
                         SortSelectKnobs)

SORT_DTYPES = tuple(d for d in ALL_DTYPES if d.short in spec.SORT_DTYPES)
_MAX_N = 2**31 - 1 - spec.RADIX_TILE


@functools.lru_cache(maxsize=1024)
def row_geometry(shape, axis: int, *stride_sets):
    """Rows of ``shape`` along ``axis``: (n, rows, axis strides, 7 outer extents, 7 outer strides
    per stride set).  Outer dims are collapsed jointly over all stride sets and padded in front
    with extent 1 / stride 0 (the kernels' ``row_offset7`` layout)."""
    if not shape:
        shape, stride_sets = (1,), tuple((0,) for _ in stride_sets)
    n = shape[axis]
    outer = [i for i in range(len(shape)) if i != axis]
    cs = collapse_dims([shape[i] for i in outer], *[[st[i] for i in outer] for st in stride_sets])
    ext, sts = cs[0], cs[1:]
    pad = 7 - len(ext)
    e = (1,) * pad + tuple(ext)
    ss = tuple((0,) * pad + tuple(s) for s in sts)
    return n, prod(ext), tuple(st[axis] for st in stride_sets), e, ss


def select_kb(n: int, k: int, kth: bool):
    """The ``sort_select`` knob ``kb`` for a row of ``n`` with ``k`` wanted columns, or None
    (full sort): kthvalue (``kth``) for 256 < n ≤ 4096; top-k when the survivor bucket
    (64 / 256 / 1024 ≥ k) is smaller than the row's sort bucket."""
    if n > spec.SELECT_MAX_N or k < 1:
        return None
    if kth:
        return 0 if n > 256 else None
    kb = next((b for b in spec.SELECT_KB if b >= k and b > 0), None)
    if kb is None or kb >= spec.bucket_for(n):
        return None
    return kb


def radix_layout(rows: int, n: int, bits: int):
    """Byte offsets of the radix workspace: (keys_a, keys_b, idx_a, idx_b, counts, totals,
    total bytes).  Keys are 4 or 8 bytes, indices int32, counts ``rows·256·tiles`` int32."""
    kb = 8 if bits > 32 else 4
    tiles = -(-n // spec.RADIX_TILE)
    sizes = [rows * n * kb, rows * n * kb, rows * n * 4, rows * n * 4,
             rows * spec.RADIX_BINS * tiles * 4, rows * spec.RADIX_BINS * 4]
    offs, acc = [], 0
    for s in sizes:
        offs.append(acc)
        acc += align_up(s)
    return tuple(offs) + (acc,)


def exact_precision(dt: DType) -> PrecisionGuarantee:
    """The guarantee of plans that only move ``dt`` words: exact, deterministic."""
    return PrecisionGuarantee(math_precision=dt, accumulator=dt, bit_stable_on_same_hardware=True,
                              deterministic=True)


def sort_operand(desc, allowed, what: str) -> None:
    """Normalise a frozen descriptor's ``shape`` (a tuple) and check its ``dtype`` against
    ``allowed`` (the ``__post_init__`` of the sorting descriptors)."""
    object.__setattr__(desc, "shape", tuple(desc.shape))
    object.__setattr__(desc, "dtype", check_dtype(desc.dtype, allowed, what))


def check_k(k, lo: int, hi: int, what: str) -> int:
    """``k`` as an int in ``[lo, hi]`` (InvalidProblemError otherwise)."""
    if isinstance(k, bool) or not isinstance(k, int):
        raise InvalidProblemError(f"{what}: k must be an int, got {k!r}")
    if not lo <= k <= hi:
        raise InvalidProblemError(f"{what}: k={k} out of range [{lo}, {hi}]")
    return k


class RowSortPlanBase(Plan):
    """Shared machinery: sort each row along the axis, emit columns ``[col0, col0+ncols)`` of
    the sorted order as values and/or int64 indices (dense outputs of ``_out_keep`` shape)."""

    _op = "sort"

    def _setup(self, shape, axis, dt, descending: bool, col0: int, ncols: int,
               out_keep: Tuple[int, ...], select: Optional[str] = None):
        """``select``: None (sort), 'topk' (columns [0, ncols) may come from sort_select) or
        'kth' (column col0 may come from sort_select)."""
        self._shape, self._axis, self._dt = shape, axis, dt
        self._descending = bool(descending)
        geo_shape = shape if shape else (1,)
        self._n = geo_shape[axis]
        self._rows = prod(geo_shape) // self._n if self._n else prod(
            s for i, s in enumerate(geo_shape) if i != axis)
        if self._n > _MAX_N:
            raise UnsupportedError(f"{type(self).__name__}: rows of {self._n} elements exceed "
                                   f"the wired maximum {_MAX_N}")
        self._col0, self._ncols = col0, ncols
        self._out_keep = out_keep
        self._out_strides = contiguous_strides(out_keep if out_keep else (1,))
        self._bits = spec.KEY_BITS[dt.short]
        self._bucket = spec.bucket_for(self._n)
        self._select_kb = None
        if select is not None and self._n:
            self._select_kb = select_kb(self._n, col0 + ncols, select == "kth")
        if self._select_kb is not None:
            knobs = SortSelectKnobs(dt.short, self._select_kb)
            tmpl = spec.SORT_SELECT
            self._ws = 0
        elif self._bucket is not None:
            knobs = SortRowsKnobs(dt.short, self._bucket)
            tmpl = spec.SORT_ROWS
            self._ws = 0
        else:
            knobs = SortDtypeKnobs(dt.short)
            tmpl = spec.RADIX_KEYS
            self._ws = radix_layout(self._rows, self._n, self._bits)[-1]
        self._knobs = knobs
        self._sku = KernelSku(OpCategory.INDEXING, self._op, dt, self._arch, BackendKind.CUTE_DSL,
                              exact_precision(dt), aux_element=int64, template=tmpl.name,
                              knobs=freeze_knobs(knobs))
        self._kb_knobs = RadixPassKnobs(spec.kbits_for(dt.short))
        self._scan_knobs = RadixScanKnobs(spec.RADIX_THREADS)
        self._gather_knobs = SortDtypeKnobs(dt.short)

    def workspace_size(self) -> int:
        """0 for rows ≤ 4096 elements; else the radix sort's buffers (see radix_layout)."""
        return self._ws

    def is_empty(self) -> bool:
        return self._n == 0 or self._rows == 0 or self._ncols == 0

    def _check_out(self, v: Optional[TensorView], name: str) -> None:
        if v is not None and v.numel and not v.is_contiguous():
            raise UnsupportedError(f"{name}: outputs must be dense row-major (got strides "
                                   f"{v.strides} for shape {v.shape}); strided outputs are not "
                                   f"wired")

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        """Launch the sort of every row; write the selected columns."""
        x, vals, idx = bound
        n, rows, (sa, oa), e, (ss, os_) = row_geometry(
            self._shape, self._axis, tuple(x.strides) if self._shape else (0,),
            self._out_strides if self._shape else (0,))
        if not self._shape:
            oa = 0
        vp = vals.ptr if vals is not None else 0
        ip = idx.ptr if idx is not None else 0
        wv, wi = int(vals is not None), int(idx is not None)
        desc = int(self._descending)
        dev = x.device
        if self._select_kb is not None:
            lk = self._kernel(spec.SORT_SELECT, self._knobs, dev)
            kk = self._col0 + 1 if self._select_kb == 0 else self._ncols
            lk.launch((rows, 1, 1), [x.ptr, vp, ip, n, kk, rows, desc, wv, wi, sa, oa,
                                     *e, *ss, *os_], stream)
            return
        if self._bucket is not None:
            lk = self._kernel(spec.SORT_ROWS, self._knobs, dev)
            lk.launch((rows, 1, 1), [x.ptr, vp, ip, n, rows, desc, wv, wi, self._col0,
                                     self._ncols, sa, oa, *e, *ss, *os_], stream)
            return
        ka, kbuf, ia, ib, cnt, tot, _ = radix_layout(rows, n, self._bits)
        base = ws.ptr
        cpc = spec.COLS_PER_CTA
        keys_k = self._kernel(spec.RADIX_KEYS, self._knobs, dev)
        for row0 in range(0, rows, spec.MAX_GRID_Y):
            rc = min(spec.MAX_GRID_Y, rows - row0)
            keys_k.launch((-(-n // cpc), rc, 1),
                          [x.ptr, base + ka, base + ia, n, row0, desc, sa, *e, *ss], stream)
        tiles = -(-n // spec.RADIX_TILE)
        up = self._kernel(spec.RADIX_UPSWEEP, self._kb_knobs, dev)
        sc = self._kernel(spec.RADIX_SCAN, self._scan_knobs, dev)
        sct = self._kernel(spec.RADIX_SCATTER, self._kb_knobs, dev)
        src_k, src_i, dst_k, dst_i = base + ka, base + ia, base + kbuf, base + ib
        for p in range(self._bits // 8):
            shift = 8 * p
            for row0 in range(0, rows, spec.MAX_GRID_Y):
                rc = min(spec.MAX_GRID_Y, rows - row0)
                up.launch((tiles, rc, 1), [src_k, base + cnt, n, tiles, row0, shift], stream)
                sc.launch((spec.RADIX_BINS, rc, 1), [base + cnt, base + tot, tiles, row0], stream)
                sct.launch((tiles, rc, 1), [src_k, src_i, dst_k, dst_i, base + cnt, base + tot,
                                            n, tiles, row0, shift], stream)
            src_k, src_i, dst_k, dst_i = dst_k, dst_i, src_k, src_i
        gk = self._kernel(spec.SORT_GATHER, self._gather_knobs, dev)
        for row0 in range(0, rows, spec.MAX_GRID_Y):
            rc = min(spec.MAX_GRID_Y, rows - row0)
            gk.launch((-(-self._ncols // cpc), rc, 1),
                      [x.ptr, vp, src_i, src_k, ip, n, row0, desc, wv, wi, self._col0,
                       self._ncols, sa, oa, *e, *ss, *os_], stream)

    def _io_views(self, args_x, args_vals, args_idx, out_shape, need_one=True):
        x = view_arg(args_x, "x", shape=self._shape, dtype=self._dt)
        vals = view_arg(args_vals, "values", shape=out_shape, dtype=self._dt, device=x.device,
                        optional=True)
        idx = view_arg(args_idx, "indices", shape=out_shape, dtype=int64, device=x.device,
                       optional=True)
        if need_one and vals is None and idx is None:
            raise InvalidProblemError(f"{type(self).__name__}: give values and/or indices")
        self._check_out(vals, "values")
        self._check_out(idx, "indices")
        for v, name in ((vals, "values"), (idx, "indices")):
            if v is not None and _overlap(x, v):
                raise UnsupportedError(f"{type(self).__name__}: {name} overlaps x; in-place "
                                       f"sorting is not wired (sort into a new buffer)")
        return x, vals, idx


def _span(v: TensorView):
    lo = hi = 0
    for n, st in zip(v.shape, v.strides):
        if n > 1:
            lo += min(0, (n - 1) * st)
            hi += max(0, (n - 1) * st)
    return v.ptr + lo * v.itemsize, v.ptr + (hi + 1) * v.itemsize


def _overlap(a: TensorView, b: TensorView) -> bool:
    """True when the byte ranges of two non-empty views intersect."""
    if not a.numel or not b.numel:
        return False
    a0, a1 = _span(a)
    b0, b1 = _span(b)
    return a0 < b1 and b0 < a1


def _check_flag(v, name: str, what: str) -> bool:
    if not isinstance(v, bool):
        raise InvalidProblemError(f"{what}: {name} must be a bool, got {v!r}")
    return v


# ==================================================================================== Sort
@dataclass(frozen=True)
class SortDescriptor:
    """Sort along ``axis`` of a ``shape`` (rank ≤ 8) input of ``dtype``; ``descending``;
    ``stable`` is accepted for API parity (the sort is always stable)."""

    shape: Tuple[int, ...]
    axis: int = -1
    dtype: DType = float32
    descending: bool = False
    stable: bool = True

    def __post_init__(self):
        sort_operand(self, SORT_DTYPES, "Sort")


@dataclass
class SortArgs:
    """x: input (any strides); values: dense, x's shape and dtype; indices: dense int64, x's
    shape.  Either output may be None (not both)."""

    x: object
    values: object = None
    indices: object = None


class SortPlan(RowSortPlanBase):
    """values, indices = sort(x, axis, descending) — stable; NaNs last ascending / first
    descending; ±0 equal.  Workspace for rows > 4096 elements (workspace_size())."""

    descriptor = SortDescriptor
    _op = "sort"

    def _plan(self) -> None:
        desc = self.desc
        shape = check_shape(desc.shape, "Sort: x")
        axis = norm_axis(desc.axis, len(shape), "Sort")
        _check_flag(desc.descending, "descending", "Sort")
        _check_flag(desc.stable, "stable", "Sort")
        n = (shape or (1,))[axis]
        self._setup(shape, axis, desc.dtype, desc.descending, 0, n, shape)

    def _bind(self, args):
        return self._io_views(args.x, args.values, args.indices, self._shape)


@dataclass(frozen=True)
class ArgsortDescriptor(SortDescriptor):
    """argsort along ``axis`` (int64 indices of the stable sort)."""


@dataclass
class ArgsortArgs:
    """x: input (any strides); indices: dense int64, x's shape."""

    x: object
    indices: object


class ArgsortPlan(SortPlan):
    """indices = argsort(x, axis, descending): equal to numpy ``argsort(kind='stable')``
    (descending: the stable descending order)."""

    _op = "argsort"

    def _bind(self, args):
        return self._io_views(args.x, None, args.indices, self._shape)


@dataclass(frozen=True)
class MsortDescriptor:
    """torch.msort: sort along axis 0 of ``shape`` (rank ≥ 1)."""

    shape: Tuple[int, ...]
    dtype: DType = float32

    def __post_init__(self):
        sort_operand(self, SORT_DTYPES, "Msort")


@dataclass
class MsortArgs:
    """x: input (any strides); values: dense, x's shape."""

    x: object
    values: object


class MsortPlan(RowSortPlanBase):
    """values = msort(x) = sort(x, axis=0) (ascending, stable)."""

    descriptor = MsortDescriptor
    _op = "msort"

    def _plan(self) -> None:
        shape = check_shape(self.desc.shape, "Msort: x")
        if not shape:
            raise InvalidProblemError("Msort: x must have rank >= 1")
        self._setup(shape, 0, self.desc.dtype, False, 0, shape[0], shape)

    def _bind(self, args):
        return self._io_views(args.x, args.values, None, self._shape)


# ==================================================================================== Topk
@dataclass(frozen=True)
class TopkDescriptor:
    """The ``k`` largest (``largest``) or smallest elements along ``axis``; outputs have
    ``shape`` with ``shape[axis] = k``, sorted (``sorted`` is accepted; output is always
    sorted).  ``0 ≤ k ≤ shape[axis]``."""

    shape: Tuple[int, ...]
    k: int
    axis: int = -1
    dtype: DType = float32
    largest: bool = True
    sorted: bool = True

    def __post_init__(self):
        sort_operand(self, SORT_DTYPES, "Topk")

    @property
    def out_shape(self) -> Tuple[int, ...]:
        if not self.shape:
            return ()
        ax = norm_axis(self.axis, len(self.shape), "Topk")
        return self.shape[:ax] + (int(self.k),) + self.shape[ax + 1:]


@dataclass
class TopkArgs:
    """x: input (any strides); values (x dtype) and indices (int64): dense, ``out_shape``."""

    x: object
    values: object = None
    indices: object = None


class TopkPlan(RowSortPlanBase):
    """values, indices = topk(x, k, axis, largest): the first k columns of the stable sort
    (descending for largest; NaN counts as the largest value, like torch).  Sorted output.
    Rows ≤ 4096 with a small k: radix select + sort of the survivors (``sort_select``)."""

    descriptor = TopkDescriptor
    _op = "topk"

    def _plan(self) -> None:
        desc = self.desc
        shape = check_shape(desc.shape, "Topk: x")
        axis = norm_axis(desc.axis, len(shape), "Topk")
        n = (shape or (1,))[axis]
        k = check_k(desc.k, 0, n, "Topk")
        _check_flag(desc.largest, "largest", "Topk")
        self._out = desc.out_shape
        self._setup(shape, axis, desc.dtype, desc.largest, 0, k, self._out, "topk")

    def _bind(self, args):
        return self._io_views(args.x, args.values, args.indices, self._out)


@dataclass(frozen=True)
class KthvalueDescriptor:
    """The ``k``-th smallest element (1-based) along ``axis`` and its index (torch.kthvalue);
    the axis is kept with extent 1 when ``keepdims``, else removed."""

    shape: Tuple[int, ...]
    k: int
    axis: int = -1
    dtype: DType = float32
    keepdims: bool = False

    def __post_init__(self):
        sort_operand(self, SORT_DTYPES, "Kthvalue")

    @property
    def keep_shape(self) -> Tuple[int, ...]:
        if not self.shape:
            return ()
        ax = norm_axis(self.axis, len(self.shape), "Kthvalue")
        return self.shape[:ax] + (1,) + self.shape[ax + 1:]

    @property
    def out_shape(self) -> Tuple[int, ...]:
        if not self.shape or self.keepdims:
            return self.keep_shape
        ax = norm_axis(self.axis, len(self.shape), "Kthvalue")
        return self.shape[:ax] + self.shape[ax + 1:]


@dataclass
class KthvalueArgs:
    """x: input (any strides); values (x dtype) and indices (int64): dense, ``out_shape``."""

    x: object
    values: object = None
    indices: object = None


class KthvaluePlan(RowSortPlanBase):
    """values, indices = kthvalue(x, k, axis, keepdims): column k-1 of the stable ascending
    sort (NaN largest); the index is the first occurrence in that order.  Rows of
    257..4096: radix select (``sort_select``, kb=0), no sort."""

    descriptor = KthvalueDescriptor
    _op = "kthvalue"

    def _plan(self) -> None:
        desc = self.desc
        shape = check_shape(desc.shape, "Kthvalue: x")
        axis = norm_axis(desc.axis, len(shape), "Kthvalue")
        n = (shape or (1,))[axis]
        if n == 0:
            raise InvalidProblemError("Kthvalue: the reduced axis has extent 0")
        k = check_k(desc.k, 1, n, "Kthvalue")
        _check_flag(desc.keepdims, "keepdims", "Kthvalue")
        self._out = desc.out_shape
        self._setup(shape, axis, desc.dtype, False, k - 1, 1, desc.keep_shape, "kth")

    def _bind(self, args):
        return self._io_views(args.x, args.values, args.indices, self._out)
