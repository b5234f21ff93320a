"""The indexing family: index_select / embedding / take rows, gather and scatter along an axis
(torch.gather / scatter / scatter_add / scatter_reduce, numpy take_along_axis), masked_fill,
one_hot and nonzero, with their backward plans.

Out-of-range policy (every plan with indices): an index ``i`` into an axis of extent ``m`` is
wrapped once Python-style (``-m <= i < 0`` → ``i + m``); an index still outside ``[0, m)`` is
*bad*: gathers write zero (the all-bits-zero word) for it, scatters skip it, and when the Args'
optional ``status`` (a device int32 with ≥ 1 element) is given the kernel stores ``1`` into
``status[0]`` (it never clears it: zero it before the run).  No kernel ever reads or writes
outside its operands.

Plans (descriptor → args → plan):

* ``IndexSelectPlan`` — ``out = x.index_select(axis, index)``: out.shape = shape[:axis] +
  (n_index,) + shape[axis+1:].  Embedding forward (x = weight, axis 0) and ``take`` along an axis.
  Row copy kernel: the dims after ``axis`` collapse into a row copied as 16-byte words when
  unit-stride and aligned; x, index and out may have any strides (operands whose outer or row
  dims do not collapse run on the gather_axis kernel with a broadcast index view).
* ``GatherAxisPlan`` — ``out[c] = x[c with c[axis] ← index[c]]`` over index's shape
  (torch.gather: x's other extents ≥ index's).  ``GatherAxisBackwardPlan``: ``dx = 0;
  dx[c with c[axis] ← index[c]] += dy[c]`` (float atomics: ``deterministic=False``).
* ``ScatterAxisPlan`` — ``out[c with c[axis] ← index[c]] (op)= src[c]`` in place, reduce
  ``assign`` (with duplicate indices one writer wins, unspecified which), ``add``, ``amax``,
  ``amin`` (atomics).  ``ScatterAddPlan`` = reduce ``add``.  ``ScatterAxisBackwardPlan``:
  ``d_src = gather(dy, index)``; ``d_self = dy`` with, for ``assign``, every position any index
  hits zeroed.
* ``MaskedFillPlan`` — ``out = where(mask, value, x)`` (mask broadcast to x) on the elementwise
  ``where`` kernel; ``MaskedFillBackwardPlan``: ``dx = where(mask, 0, dy)``.
* ``OneHotPlan`` — ``out[..., c] = (index[...] == c)`` in the output dtype.
* ``NonzeroPlan`` — the compaction plan (coordinates mode).

Copies are bit-exact for every dtype (opaque words); no plan needs a workspace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from ...common.status import status_ptr
from ...dtypes import ALL_DTYPES, DType, int32, int64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import (Plan, check_dtype, check_writable_no_overlap, collapse_dims, norm_axis, prod,
                     view_arg)
from ...tensor import TensorView, check_shape, contiguous_strides
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee
from ..scan.compaction import CompactArgs, CompactDescriptor, CompactPlan
from ..shape.repeat import (COPY_DTYPES, StridedCopyArgs, StridedCopyDescriptor, StridedCopyPlan,
                            copy_precision, pad_dims)
from .specs import indexing as spec
INDEX_DTYPES = (int32, int64)
REDUCES = ("assign", "add", "amax", "amin")
_BY_SHORT = {d.short: d for d in ALL_DTYPES}
_I32_COORD = 2**31 - 1 - spec.AXIS_THREADS
_GRID_MAX = 2**31 - 1

__all__ = [
    "IndexSelectDescriptor", "IndexSelectArgs", "IndexSelectPlan",
    "GatherAxisDescriptor", "GatherAxisArgs", "GatherAxisPlan", "GatherAxisBackwardArgs",
    "GatherAxisBackwardPlan",
    "ScatterAxisDescriptor", "ScatterAxisArgs", "ScatterAxisPlan", "ScatterAddPlan",
    "ScatterAxisBackwardArgs", "ScatterAxisBackwardPlan",
    "MaskedFillDescriptor", "MaskedFillArgs", "MaskedFillPlan", "MaskedFillBackwardArgs",
    "MaskedFillBackwardPlan",
    "OneHotDescriptor", "OneHotArgs", "OneHotPlan", "NonzeroPlan", "NonzeroDescriptor",
    "NonzeroArgs", "one_bits",
]


# ============================================================================== helpers
def _check_count(v, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise InvalidProblemError(f"{what} must be an int >= 0, got {v!r}")
    return v


def _check_index_view(idx: TensorView, what: str = "index") -> None:
    if idx.dtype not in INDEX_DTYPES:
        raise UnsupportedError(f"{what}: dtype {idx.dtype.name} is not wired; wired: int32, int64")


def _sku(plan: Plan, op: str, template, knobs, pg: PrecisionGuarantee) -> KernelSku:
    """The KernelSku of an indexing plan: ``template``'s SKU ``knobs`` for ``plan.desc.dtype``
    with the index dtype ``plan.desc.index``."""
    d = plan.desc
    return KernelSku(OpCategory.INDEXING, op, d.dtype, plan._arch, BackendKind.CUTE_DSL, pg,
                     aux_element=d.index, template=template.name, knobs=freeze_knobs(knobs))


def _axis_geometry(shape, a_strides, i_strides, b_strides):
    """Collapsed (rank knob, wide knob, n, 32 dim scalars) of one gather_axis launch over
    ``shape`` (the index shape); ``a_strides`` has 0 on the indexed axis."""
    n = prod(shape)
    cs, ca, ci, cb = collapse_dims(shape, a_strides, i_strides, b_strides)
    if not cs:
        cs, ca, ci, cb = (1,), (0,), (0,), (0,)
    wide = 0 if n < _I32_COORD else 1
    rank = 8 if wide else spec.rank_for(len(cs))
    dims = pad_dims(cs, 1) + pad_dims(ca, 0) + pad_dims(ci, 0) + pad_dims(cb, 0)
    return rank, wide, n, dims


class _AxisLauncher:
    """The knobs (per rank / wide) of one gather_axis mode and its launch: ``a`` is the
    axis-indexed operand, ``b`` the index-shaped one."""

    def __init__(self, plan: Plan, mode: str, itemsize: int, dtype: str, index: str):
        self.plan = plan
        self.base = (mode, itemsize, dtype, index)

    def knob(self, rank: int, wide: int) -> spec.GatherAxisKnobs:
        mode, isz, dt, ix = self.base
        return spec.GatherAxisKnobs(mode=mode, itemsize=isz, dtype=dt, rank=rank, wide=wide,
                                    index=ix)

    def launch(self, a: TensorView, axis: int, idx: TensorView, b_ptr: int, b_strides,
               status, stream: int, shape=None, idx_strides=None) -> None:
        shape = tuple(idx.shape) if shape is None else tuple(shape)
        istr = tuple(idx.strides) if idx_strides is None else tuple(idx_strides)
        a_str = tuple(0 if k == axis else s for k, s in enumerate(a.strides))
        rank, wide, n, dims = _axis_geometry(shape, a_str, istr, tuple(b_strides))
        if n == 0:
            return
        grid = -(-n // spec.AXIS_THREADS)
        if grid > _GRID_MAX:
            raise UnsupportedError(f"gather_axis: {n} elements exceed the grid limit")
        sp, has = status
        lk = self.plan._kernel(spec.GATHER_AXIS, self.knob(rank, wide), idx.device)
        lk.launch((grid, 1, 1), [a.ptr, idx.ptr, b_ptr, sp, has, n, a.shape[axis],
                                 a.strides[axis], *dims], stream)


def _desc_axis_sku(plan, op: str, launcher: _AxisLauncher, pg: PrecisionGuarantee):
    """The SKU of ``launcher`` for dense operands of ``plan.desc`` (``shape`` / ``index_shape``
    / ``dtype`` / ``index``)."""
    d = plan.desc
    ist = contiguous_strides(d.index_shape)
    rank, wide, _, _ = _axis_geometry(d.index_shape, contiguous_strides(d.shape), ist, ist)
    return _sku(plan, op, spec.GATHER_AXIS, launcher.knob(rank, wide), pg)


# ========================================================================== IndexSelect
@dataclass(frozen=True)
class IndexSelectDescriptor:
    """``out = x.index_select(axis, index)``: x ``shape`` (rank 1..8), ``axis``, ``n_index``
    indices of dtype ``index`` (int32 / int64), element ``dtype`` (every dtype)."""

    shape: Tuple[int, ...]
    axis: int
    n_index: int
    dtype: DType
    index: DType = int64

    def __post_init__(self):
        shape = check_shape(self.shape, "IndexSelect: x")
        if not shape:
            raise InvalidProblemError("IndexSelect: x must have rank >= 1")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "axis", norm_axis(self.axis, len(shape), "IndexSelect"))
        _check_count(self.n_index, "IndexSelect: n_index")
        object.__setattr__(self, "dtype", check_dtype(self.dtype, COPY_DTYPES, "IndexSelect"))
        object.__setattr__(self, "index", check_dtype(self.index, INDEX_DTYPES,
                                                      "IndexSelect index"))

    @property
    def out_shape(self) -> Tuple[int, ...]:
        a = self.axis
        return self.shape[:a] + (self.n_index,) + self.shape[a + 1:]


@dataclass
class IndexSelectArgs:
    """x (any strides), index (1-D, any stride), out (``desc.out_shape``, any non-broadcast
    strides), status (optional int32 device word, set to 1 on a bad index)."""

    x: object
    index: object
    out: object
    status: object = None


def _row_widen(rlen: int, isz: int, strides, xsr: int, osr: int, xmod: int, omod: int):
    """Fold w elements of unit-stride rows into one word of w·isz ≤ 16 bytes when the row
    length, every other stride (``strides``) and both pointers allow; (rlen, word, xsr, osr,
    strides)."""
    if xsr != 1 or osr != 1:
        return rlen, isz, xsr, osr, strides
    w = 16 // isz
    while w > 1:
        wb = w * isz
        if rlen % w == 0 and all(s % w == 0 for s in strides) and xmod % wb == 0 \
                and omod % wb == 0:
            return rlen // w, wb, 1, 1, tuple(s // w for s in strides)
        w //= 2
    return rlen, isz, xsr, osr, strides


def _rows_geometry(shape, axis, nidx, xst, ost, isz, xmod, omod):
    """(itemsize, tpr, rows, rlen, (xso, xsm, xsr, oso, osi, osr)) of the row kernel, or None
    when the outer or row dims of x / out do not collapse to one dim each."""
    outer = shape[:axis]
    row = shape[axis + 1:]
    co, cxo, coo = collapse_dims(outer, xst[:axis], ost[:axis])
    cr, cxr, cor = collapse_dims(row, xst[axis + 1:], ost[axis + 1:])
    if len(co) > 1 or len(cr) > 1:
        return None
    O, xso, oso = (co[0], cxo[0], coo[0]) if co else (1, 0, 0)
    rlen, xsr, osr = (cr[0], cxr[0], cor[0]) if cr else (1, 1, 1)
    rlen, word, xsr, osr, (xso, xsm, oso, osi) = _row_widen(
        rlen, isz, (xso, xst[axis], oso, ost[axis]), xsr, osr, xmod, omod)
    return word, spec.tpr_for(rlen), O * nidx, rlen, (xso, xsm, xsr, oso, osi, osr)


class IndexSelectPlan(Plan):
    """out = x.index_select(axis, index) (embedding lookup: x = weight, axis = 0).  Every dtype,
    bit-exact; bad indices give zero rows (+ status); no workspace; deterministic."""

    descriptor = IndexSelectDescriptor

    def _plan(self) -> None:
        d = self.desc
        self._out_shape = d.out_shape
        self._n = prod(self._out_shape)
        self._fallback = _AxisLauncher(self, "gather", d.dtype.itemsize, "any", d.index.short)
        geo = _rows_geometry(d.shape, d.axis, d.n_index, contiguous_strides(d.shape),
                             contiguous_strides(self._out_shape), d.dtype.itemsize, 0, 0)
        self._sku = _sku(self, "index_select", spec.INDEX_ROWS, self._row_knob(geo[0], geo[1]),
                         copy_precision(d.dtype))

    def _row_knob(self, word: int, tpr: int) -> spec.IndexRowsKnobs:
        return spec.IndexRowsKnobs(itemsize=word, index=self.desc.index.short, tpr=tpr)

    def is_empty(self) -> bool:
        return self._n == 0

    def _bind(self, args):
        d = self.desc
        x = view_arg(args.x, "x", shape=d.shape, dtype=d.dtype)
        idx = view_arg(args.index, "index", shape=(d.n_index,), dtype=d.index, device=x.device)
        out = view_arg(args.out, "out", shape=self._out_shape, dtype=d.dtype, device=x.device)
        check_writable_no_overlap(out, "out")
        return x, idx, out, status_ptr(args.status, x.device)

    def _launch(self, bound, st: int, ws) -> None:
        x, idx, out, status = bound
        d = self.desc
        geo = _rows_geometry(d.shape, d.axis, d.n_index, x.strides, out.strides,
                             d.dtype.itemsize, x.ptr % 16, out.ptr % 16)
        if geo is None:
            # generic path: gather along ``axis`` with the index broadcast over out's shape
            istr = tuple(idx.strides[0] if k == d.axis else 0 for k in range(len(d.shape)))
            self._fallback.launch(x, d.axis, idx, out.ptr, out.strides, status, st,
                                  shape=self._out_shape, idx_strides=istr)
            return
        word, tpr, rows, rlen, (xso, xsm, xsr, oso, osi, osr) = geo
        groups, chunks = spec.rows_grid(tpr, rows, rlen)
        if groups * chunks > _GRID_MAX:
            raise UnsupportedError(f"IndexSelect: {rows} rows × {chunks} chunks exceed the grid "
                                   f"limit")
        sp, has = status
        lk = self._kernel(spec.INDEX_ROWS, self._row_knob(word, tpr), x.device)
        lk.launch((groups * chunks, 1, 1),
                  [x.ptr, idx.ptr, out.ptr, sp, has, rows, d.n_index, rlen, d.shape[d.axis],
                   xso, xsm, xsr, idx.strides[0], oso, osi, osr, chunks], st)


# =========================================================================== GatherAxis
def _check_axis_shapes(shape, index_shape, axis, what: str):
    shape = check_shape(shape, f"{what}: x")
    ishape = check_shape(index_shape, f"{what}: index")
    if len(shape) != len(ishape):
        raise InvalidProblemError(f"{what}: index rank {len(ishape)} != x rank {len(shape)}")
    if not shape:
        raise InvalidProblemError(f"{what}: needs rank >= 1 (view a 0-d tensor as shape (1,))")
    ax = norm_axis(axis, len(shape), what)
    for k, (a, b) in enumerate(zip(shape, ishape)):
        if k != ax and b > a:
            raise InvalidProblemError(f"{what}: index extent {b} > x extent {a} on dim {k} "
                                      f"(index {ishape}, x {shape})")
    return shape, ishape, ax


def _init_axis_desc(desc, what: str) -> None:
    """The shared ``__post_init__`` part of the Gather / Scatter axis descriptors: checked
    ``shape`` / ``index_shape`` / ``axis`` / ``dtype`` / ``index``."""
    shape, ishape, ax = _check_axis_shapes(desc.shape, desc.index_shape, desc.axis, what)
    object.__setattr__(desc, "shape", shape)
    object.__setattr__(desc, "index_shape", ishape)
    object.__setattr__(desc, "axis", ax)
    object.__setattr__(desc, "dtype", check_dtype(desc.dtype, COPY_DTYPES, what))
    object.__setattr__(desc, "index", check_dtype(desc.index, INDEX_DTYPES, f"{what} index"))


@dataclass(frozen=True)
class GatherAxisDescriptor:
    """torch.gather / take_along_axis: x ``shape``, ``index_shape`` (same rank, extents ≤ x's
    except on ``axis``), element ``dtype`` (every dtype), ``index`` int32 / int64."""

    shape: Tuple[int, ...]
    index_shape: Tuple[int, ...]
    axis: int
    dtype: DType
    index: DType = int64

    def __post_init__(self):
        _init_axis_desc(self, "GatherAxis")


@dataclass
class GatherAxisArgs:
    """x (``desc.shape``, any strides), index and out (``desc.index_shape``, any strides; out
    not broadcast), status (optional int32 word)."""

    x: object
    index: object
    out: object
    status: object = None


class GatherAxisPlan(Plan):
    """out[c] = x[c with c[axis] ← index[c]] (torch.gather).  Every dtype, bit-exact; bad
    indices write zero (+ status); rank ≤ 8; no workspace; deterministic."""

    descriptor = GatherAxisDescriptor

    def _plan(self) -> None:
        self._n = prod(self.desc.index_shape)
        self._setup()

    def is_empty(self) -> bool:
        return self._n == 0

    def _setup(self):
        d = self.desc
        self._gather = _AxisLauncher(self, "gather", d.dtype.itemsize, "any", d.index.short)
        self._sku = _desc_axis_sku(self, "gather_axis", self._gather, copy_precision(d.dtype))

    def _bind(self, args):
        d = self.desc
        x = view_arg(args.x, "x", shape=d.shape, dtype=d.dtype)
        idx = view_arg(args.index, "index", shape=d.index_shape, dtype=d.index, device=x.device)
        out = view_arg(args.out, "out", shape=d.index_shape, dtype=d.dtype, device=x.device)
        check_writable_no_overlap(out, "out")
        return x, idx, out, status_ptr(args.status, x.device)

    def _launch(self, bound, st: int, ws) -> None:
        x, idx, out, status = bound
        self._gather.launch(x, self.desc.axis, idx, out.ptr, out.strides, status, st)


@dataclass
class GatherAxisBackwardArgs:
    """dy and index (``desc.index_shape``, any strides), dx (``desc.shape``, dense row-major:
    it is zeroed, then accumulated into), status (optional int32 word)."""

    dy: object
    index: object
    dx: object
    status: object = None


def _atomic_pg(dt: DType, reduce: str) -> PrecisionGuarantee:
    floaty = dt.kind == "f"
    return PrecisionGuarantee(math_precision=dt, accumulator=dt,
                              bit_stable_on_same_hardware=not floaty, deterministic=not floaty)


def _check_atomic(reduce: str, dt: DType, arch, what: str) -> None:
    wired = spec.ATOMIC_DTYPES[reduce]
    if dt.short not in wired:
        raise UnsupportedError(f"{what}: reduce {reduce!r} is not wired for {dt.name}; wired: "
                               f"{', '.join(_BY_SHORT[s].name for s in wired)}")
    if not spec.atomic_arch_ok(reduce, dt.short, arch.value):
        raise UnsupportedError(f"{what}: reduce {reduce!r} on {dt.name} needs sm90a (bf16 atomic "
                               f"add); selected arch {arch.value}")


class GatherAxisBackwardPlan(GatherAxisPlan):
    """Gradient of gather: dx = 0, then dx[c with c[axis] ← index[c]] += dy[c] (atomic adds:
    f32, f64, f16, bf16 (sm90a); float results depend on atomic order → ``deterministic=False``).
    Bad indices are skipped (+ status).  dx must be dense; no workspace."""

    def _setup(self):
        d = self.desc
        _check_atomic("add", d.dtype, self._arch, "GatherAxisBackward")
        self._add = _AxisLauncher(self, "add", d.dtype.itemsize, d.dtype.short, d.index.short)
        self._sku = _desc_axis_sku(self, "gather_axis_backward", self._add,
                                   _atomic_pg(d.dtype, "add"))

    def is_empty(self) -> bool:
        return prod(self.desc.shape) == 0

    def _bind(self, args):
        d = self.desc
        dy = view_arg(args.dy, "dy", shape=d.index_shape, dtype=d.dtype)
        idx = view_arg(args.index, "index", shape=d.index_shape, dtype=d.index, device=dy.device)
        dx = view_arg(args.dx, "dx", shape=d.shape, dtype=d.dtype, device=dy.device)
        if not dx.is_contiguous():
            raise UnsupportedError(f"dx: must be dense row-major (got strides {dx.strides})")
        return dy, idx, dx, status_ptr(args.status, dy.device)

    def _launch(self, bound, st: int, ws) -> None:
        from ...runtime.memory import memset_d8

        dy, idx, dx, status = bound
        memset_d8(dx.ptr, 0, dx.numel * dx.itemsize, st)
        if self._n:
            self._add.launch(dx, self.desc.axis, idx, dy.ptr, dy.strides, status, st)


# ========================================================================== ScatterAxis
@dataclass(frozen=True)
class ScatterAxisDescriptor:
    """out[c with c[axis] ← index[c]] (reduce)= src[c]: out (self) ``shape``, index and src
    ``index_shape`` (same rank; extents ≤ out's except on ``axis``), element ``dtype``, ``index``
    int32 / int64, ``reduce`` assign (every dtype), add (f32, f64, f16, bf16 (sm90a), i32, i64),
    amax / amin (f32, i32, i64)."""

    shape: Tuple[int, ...]
    index_shape: Tuple[int, ...]
    axis: int
    dtype: DType
    index: DType = int64
    reduce: str = "assign"

    def __post_init__(self):
        _init_axis_desc(self, "ScatterAxis")
        if self.reduce not in REDUCES:
            raise UnsupportedError(f"ScatterAxis: reduce {self.reduce!r} is not wired; wired: "
                                   f"{', '.join(REDUCES)}")
        if self.reduce != "assign" and self.dtype.short not in spec.ATOMIC_DTYPES[self.reduce]:
            wired = spec.ATOMIC_DTYPES[self.reduce]
            raise UnsupportedError(f"ScatterAxis: reduce {self.reduce!r} is not wired for "
                                   f"{self.dtype.name}; wired: "
                                   f"{', '.join(_BY_SHORT[s].name for s in wired)}")


@dataclass
class ScatterAxisArgs:
    """index and src (``desc.index_shape``, any strides; a larger torch ``src`` is passed as
    its leading slice), out (``desc.shape``, any non-broadcast strides, updated in place: copy
    ``self`` into it first), status (optional int32 word)."""

    index: object
    src: object
    out: object
    status: object = None


class ScatterAxisPlan(Plan):
    """In-place scatter along an axis (torch.Tensor.scatter_ / scatter_add_ / scatter_reduce_
    with include_self=True).  ``assign``: bit-exact, every dtype; with duplicate indices one
    writer wins (unspecified which).  ``add`` / ``amax`` / ``amin``: atomics; float results
    depend on the atomic order (``deterministic=False``), integers are exact.  Bad indices are
    skipped (+ status).  No workspace."""

    descriptor = ScatterAxisDescriptor
    _reduce = None  # subclasses may fix the reduce

    def _plan(self) -> None:
        d = self.desc
        if self._reduce is not None and d.reduce != self._reduce:
            raise InvalidProblemError(f"{type(self).__name__} needs reduce={self._reduce!r}, got "
                                      f"{d.reduce!r}")
        self._n = prod(d.index_shape)
        self._setup()

    def is_empty(self) -> bool:
        return self._n == 0

    def _setup(self):
        d = self.desc
        if d.reduce == "assign":
            self._scat = _AxisLauncher(self, "assign", d.dtype.itemsize, "any", d.index.short)
            pg = copy_precision(d.dtype)
        else:
            _check_atomic(d.reduce, d.dtype, self._arch, "ScatterAxis")
            self._scat = _AxisLauncher(self, d.reduce, d.dtype.itemsize, d.dtype.short,
                                       d.index.short)
            pg = _atomic_pg(d.dtype, d.reduce)
        self._sku = _desc_axis_sku(self, f"scatter_{d.reduce}", self._scat, pg)

    def _bind(self, args):
        d = self.desc
        out = view_arg(args.out, "out", shape=d.shape, dtype=d.dtype)
        idx = view_arg(args.index, "index", shape=d.index_shape, dtype=d.index,
                       device=out.device)
        src = view_arg(args.src, "src", shape=d.index_shape, dtype=d.dtype, device=out.device)
        check_writable_no_overlap(out, "out")
        return idx, src, out, status_ptr(args.status, out.device)

    def _launch(self, bound, st: int, ws) -> None:
        idx, src, out, status = bound
        self._scat.launch(out, self.desc.axis, idx, src.ptr, src.strides, status, st)


class ScatterAddPlan(ScatterAxisPlan):
    """ScatterAxisPlan with reduce "add" (torch scatter_add_): atomic adds, float results
    non-deterministic in the last bits (``deterministic=False``)."""

    _reduce = "add"


@dataclass
class ScatterAxisBackwardArgs:
    """dy (``desc.shape``, any strides), index (``desc.index_shape``), d_src
    (``desc.index_shape``, any non-broadcast strides; optional), d_self (``desc.shape``, dense;
    optional), status (optional int32 word)."""

    dy: object
    index: object
    d_src: object = None
    d_self: object = None
    status: object = None


class ScatterAxisBackwardPlan(Plan):
    """Gradient of scatter (reduce assign / add): ``d_src[c] = dy[c with c[axis] ← index[c]]``
    (a gather; bad indices give 0) and ``d_self = dy`` where, for ``assign``, every position
    that any index hits gets 0 (the overwritten values have no gradient).  Tie rule with
    duplicate indices under ``assign``: every duplicate source receives dy of its target (torch's
    rule), although only one of them was actually written.  Every dtype (pure copies);
    deterministic; no workspace.  amax / amin gradients are not wired."""

    descriptor = ScatterAxisDescriptor

    def _plan(self) -> None:
        d = self.desc
        if d.reduce not in ("assign", "add"):
            raise UnsupportedError(f"ScatterAxisBackward: reduce {d.reduce!r} is not wired; "
                                   f"wired: assign, add")
        ix = d.index.short
        self._gather = _AxisLauncher(self, "gather", d.dtype.itemsize, "any", ix)
        self._zero = _AxisLauncher(self, "zero", d.dtype.itemsize, "any", ix)
        self._copy = StridedCopyPlan.select(StridedCopyDescriptor(d.shape, d.dtype), self.pref)
        self._sku = _desc_axis_sku(self, f"scatter_{d.reduce}_backward", self._gather,
                                   copy_precision(d.dtype))

    def _bind(self, args):
        d = self.desc
        dy = view_arg(args.dy, "dy", shape=d.shape, dtype=d.dtype)
        idx = view_arg(args.index, "index", shape=d.index_shape, dtype=d.index, device=dy.device)
        ds = view_arg(args.d_src, "d_src", shape=d.index_shape, dtype=d.dtype, device=dy.device,
                      optional=True)
        dself = view_arg(args.d_self, "d_self", shape=d.shape, dtype=d.dtype, device=dy.device,
                         optional=True)
        if ds is not None:
            check_writable_no_overlap(ds, "d_src")
        if dself is not None and not dself.is_contiguous():
            raise UnsupportedError(f"d_self: must be dense row-major (got strides "
                                   f"{dself.strides})")
        return dy, idx, ds, dself, status_ptr(args.status, dy.device)

    def _launch(self, bound, st: int, ws) -> None:
        dy, idx, ds, dself, status = bound
        ax = self.desc.axis
        if ds is not None and ds.numel:
            self._gather.launch(dy, ax, idx, ds.ptr, ds.strides, status, st)
        if dself is not None and dself.numel:
            if dself.ptr != dy.ptr or dself.strides != dy.strides:
                self._copy.run(StridedCopyArgs(dy, dself), st)
            if self.desc.reduce == "assign" and idx.numel:
                # the zero mode ignores b: pass dy's pointer with the index strides
                self._zero.launch(dself, ax, idx, dy.ptr, idx.strides, status, st)


# =========================================================================== MaskedFill
def _encode_value(value, dt: DType, what: str):
    from ..elementwise.elementwise import ScalarOperands, encode_scalar

    try:
        encode_scalar(value, dt, 0, ScalarOperands())
    except (OverflowError, TypeError, ValueError) as e:
        raise InvalidProblemError(f"{what}: value {value!r} is not representable as "
                                  f"{dt.name}: {e}") from None
    return value


@dataclass(frozen=True)
class MaskedFillDescriptor:
    """out = where(mask, value, x): x ``shape``, bool ``mask_shape`` broadcast to it, element
    ``dtype`` (every dtype), Python scalar ``value`` (must be representable in dtype)."""

    shape: Tuple[int, ...]
    mask_shape: Tuple[int, ...]
    dtype: DType
    value: object = 0

    def __post_init__(self):
        from ..elementwise.elementwise import broadcast_shapes

        shape = check_shape(self.shape, "MaskedFill: x")
        mshape = check_shape(self.mask_shape, "MaskedFill: mask")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "mask_shape", mshape)
        object.__setattr__(self, "dtype", check_dtype(self.dtype, ALL_DTYPES, "MaskedFill"))
        if broadcast_shapes(mshape, shape) != shape:
            raise InvalidProblemError(f"MaskedFill: mask {mshape} does not broadcast to x "
                                      f"{shape}")
        if isinstance(self.value, bool) and self.dtype.kind != "b":
            object.__setattr__(self, "value", int(self.value))
        _encode_value(self.value, self.dtype, "MaskedFill")


@dataclass
class MaskedFillArgs:
    """x (``desc.shape``, any strides), mask (bool, ``desc.mask_shape``, any strides), out
    (``desc.shape``, non-broadcast strides; may alias x)."""

    x: object
    mask: object
    out: object


@dataclass
class MaskedFillBackwardArgs:
    """dy (``desc.shape``), mask (bool, ``desc.mask_shape``), dx (``desc.shape``)."""

    dy: object
    mask: object
    dx: object


class MaskedFillPlan(Plan):
    """out = where(mask, value, x) (torch.masked_fill) on the elementwise ``where`` kernel;
    every dtype, bit-exact; no workspace; deterministic."""

    descriptor = MaskedFillDescriptor
    _value_from_desc = True

    def _plan(self) -> None:
        from ..elementwise.elementwise import ElementwiseDescriptor, ElementwisePlan

        d = self.desc
        self._inner = ElementwisePlan.select(ElementwiseDescriptor(
            "where", shapes=(d.mask_shape, None, d.shape), dtype=d.dtype, shape=d.shape),
            self.pref)
        self._sku = self._inner.sku()
        self._value = d.value if self._value_from_desc else (False if d.dtype.kind == "b" else 0)

    def is_empty(self) -> bool:
        return prod(self.desc.shape) == 0

    def _args(self, args):
        from ..elementwise.elementwise import ElementwiseArgs

        if isinstance(args, MaskedFillBackwardArgs):
            return ElementwiseArgs(inputs=(args.mask, self._value, args.dy), outputs=(args.dx,))
        return ElementwiseArgs(inputs=(args.mask, self._value, args.x), outputs=(args.out,))

    def _bind(self, args):
        ew = self._args(args)
        self._inner.can_implement(ew)
        return ew

    def _launch(self, ew, stream: int, ws) -> None:
        self._inner.run(ew, stream)


class MaskedFillBackwardPlan(MaskedFillPlan):
    """Gradient of masked_fill: dx = where(mask, 0, dy) (``desc.value`` is ignored); takes
    ``MaskedFillBackwardArgs``; every dtype; no workspace; deterministic."""

    _value_from_desc = False

    def _args(self, args):
        if not isinstance(args, MaskedFillBackwardArgs):
            raise InvalidProblemError(f"MaskedFillBackwardPlan needs MaskedFillBackwardArgs, got "
                                      f"{type(args).__name__}")
        return super()._args(args)


# =============================================================================== OneHot
_ONE_BITS = {"bool": 1, "i8": 1, "i16": 1, "i32": 1, "i64": 1, "u8": 1, "u16": 1, "u32": 1,
             "u64": 1, "f16": 0x3C00, "bf16": 0x3F80, "f32": 0x3F800000,
             "f64": 0x3FF0000000000000, "fp8e4m3": 0x38, "fp8e5m2": 0x3C, "c64": 0x3F800000}
ONE_HOT_DTYPES = tuple(d for d in ALL_DTYPES if d.short in _ONE_BITS)


def one_bits(dt: DType) -> int:
    """The bit pattern of the value 1 in ``dt`` (complex64: 1 + 0j, real part in the low word)."""
    return _ONE_BITS[dt.short]


@dataclass(frozen=True)
class OneHotDescriptor:
    """out[..., c] = (index[...] == c) for c < ``num_classes``: index ``shape`` (rank ≤ 7),
    ``index`` int32 / int64, output ``dtype`` (every dtype but complex128; default int64)."""

    shape: Tuple[int, ...]
    num_classes: int
    index: DType = int64
    dtype: DType = int64

    def __post_init__(self):
        shape = check_shape(self.shape, "OneHot: index")
        if len(shape) > 7:
            raise InvalidProblemError(f"OneHot: index rank {len(shape)} > 7 (output rank > 8)")
        object.__setattr__(self, "shape", shape)
        _check_count(self.num_classes, "OneHot: num_classes")
        object.__setattr__(self, "index", check_dtype(self.index, INDEX_DTYPES, "OneHot index"))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, ONE_HOT_DTYPES, "OneHot"))

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return self.shape + (self.num_classes,)


@dataclass
class OneHotArgs:
    """index (``desc.shape``, any strides), out (``desc.out_shape``, dense row-major), status
    (optional int32 word: set to 1 when an index is outside [-C, C); that row is all zeros)."""

    index: object
    out: object
    status: object = None


class OneHotPlan(Plan):
    """torch.nn.functional.one_hot with an explicit class count; any output dtype (bit pattern
    of 1 per dtype); bad indices give zero rows (+ status); no workspace; deterministic."""

    descriptor = OneHotDescriptor

    def _plan(self) -> None:
        d = self.desc
        self._n = prod(d.shape)
        self._total = self._n * d.num_classes
        if -(-self._total // spec.HOT_THREADS) > _GRID_MAX:
            raise UnsupportedError(f"OneHot: {self._total} outputs exceed the grid limit")
        cs = collapse_dims(d.shape, contiguous_strides(d.shape))[0]
        self._sku = _sku(self, "one_hot", spec.ONE_HOT, self._knob(spec.rank_for(len(cs))),
                         copy_precision(d.dtype))

    def _knob(self, rank: int) -> spec.OneHotKnobs:
        d = self.desc
        return spec.OneHotKnobs(itemsize=d.dtype.itemsize, index=d.index.short, rank=rank)

    def is_empty(self) -> bool:
        return self._total == 0

    def _bind(self, args):
        d = self.desc
        idx = view_arg(args.index, "index", shape=d.shape, dtype=d.index)
        out = view_arg(args.out, "out", shape=d.out_shape, dtype=d.dtype, device=idx.device)
        if not out.is_contiguous():
            raise UnsupportedError(f"out: must be dense row-major (got strides {out.strides})")
        return idx, out, status_ptr(args.status, idx.device)

    def _launch(self, bound, st: int, ws) -> None:
        idx, out, status = bound
        sp, has = status
        d = self.desc
        cs, ci = collapse_dims(d.shape, idx.strides)
        if not cs:
            cs, ci = (1,), (0,)
        lk = self._kernel(spec.ONE_HOT, self._knob(spec.rank_for(len(cs))), idx.device)
        lk.launch((-(-self._total // spec.HOT_THREADS), 1, 1),
                  [idx.ptr, out.ptr, sp, has, self._n, d.num_classes, one_bits(d.dtype),
                   *pad_dims(cs, 1), *pad_dims(ci, 0)], st)


# ============================================================================== Nonzero
class NonzeroPlan(CompactPlan):
    """nonzero / argwhere: the int64 coordinates (shape (ndim, count)) of the non-zero elements
    of a mask, in row-major order — the compaction plan (``CompactDescriptor(shape, dtype,
    mode="coords")``, ``CompactArgs(mask, count, out)``); see ``ops/scan/compaction.py`` for the
    workspace and the two-phase count / scatter protocol."""

    descriptor = CompactDescriptor


NonzeroDescriptor = CompactDescriptor
NonzeroArgs = CompactArgs
