"""Repeat (``torch.Tensor.repeat``), its backward, and the strided copy ("contiguize").

``RepeatPlan``: ``out.shape[i] = in.shape[i] · repeats[i]`` (``len(repeats) >= rank``; extra
leading repeats add leading dims), ``out[c] = x[c mod x.shape]``.  The input may have any strides
(broadcast 0, negative); the output is dense row-major.  Every dtype (bool, ints, floats, fp8,
complex): the kernel copies opaque 1/2/4/8/16-byte words, so results are bit-exact.  The problem
is rewritten as a copy of a broadcast view, shape ``(r0, n0, r1, n1, …)`` with strides
``(0, s0, 0, s1, …)``, whose dims are then collapsed (typical cases end at rank 1–3); a
unit-stride aligned innermost dim is copied in words of up to 16 bytes (vectorised path).

``StridedCopyPlan``: ``dst = src`` for any strided ``src`` into a dense ``dst`` (same kernel).
The kernel also takes destination strides (dense ones here); :func:`strided_copy_geometry`
builds a copy between two strided views (used by ops/shape/layout.py: concat, write-slice, ...).

``RepeatBackwardPlan``: ``dx[i] = Σ over all tiles of dy`` (the gradient of repeat); f32, f16,
bf16, f64; half types accumulate in f32, f64 in f64; each element sums its tiles in a fixed
order (deterministic, bit-stable, no atomics).  ``dy`` may have any strides, ``dx`` is dense.

No plan needs a workspace.  Rank ≤ 8 everywhere (``len(repeats) <= 8``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Tuple

from ...dtypes import ALL_DTYPES, FP4, DType, float32, float64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, check_dtype, collapse_dims, prod, view_arg
from ...tensor import MAX_RANK, TensorView, check_shape, contiguous_strides
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee
from .specs import repeat as spec

_I32_LIMIT = 2**31 - 1 - spec.COPY_THREADS * spec.COPY_ILP
COPY_DTYPES = tuple(d for d in ALL_DTYPES if d.itemsize in spec.ITEMSIZES)


def _check_repeats(repeats, rank: int, what: str) -> Tuple[int, ...]:
    try:
        reps = tuple(int(r) for r in repeats)
    except TypeError:
        raise InvalidProblemError(f"{what}: repeats must be a sequence of ints, got {repeats!r}") from None
    if any(isinstance(r, bool) for r in repeats):
        raise InvalidProblemError(f"{what}: repeats must be ints, got {repeats!r}")
    if len(reps) < rank:
        raise InvalidProblemError(f"{what}: {len(reps)} repeats for a rank-{rank} input: need at "
                                  f"least one per dim (torch.Tensor.repeat semantics)")
    if len(reps) > MAX_RANK:
        raise InvalidProblemError(f"{what}: {len(reps)} repeats: output rank > {MAX_RANK} is not "
                                  f"supported")
    if any(r < 0 for r in reps):
        raise InvalidProblemError(f"{what}: negative repeat count in {reps}")
    return reps


def repeat_out_shape(shape, repeats) -> Tuple[int, ...]:
    """Output shape of ``torch.Tensor.repeat``: leading dims padded with 1, times ``repeats``."""
    shape = tuple(shape)
    pad = (1,) * (len(repeats) - len(shape)) + shape
    return tuple(a * r for a, r in zip(pad, repeats))


# ------------------------------------------------------------------------ copy geometry
class _CopyGeometry:
    """Kernel knobs (:class:`~.specs.repeat.CopyKnobs`) and the 32 dim scalars of one
    strided-copy launch (memoised by shapes, strides and pointer alignment)."""

    __slots__ = ("knobs", "dims", "n", "width")
    # dims: 8 output extents, 8 input extents (mod form), 8 src strides, 8 dst strides

    def __init__(self, knobs, dims, n, width):
        self.knobs, self.dims, self.n, self.width = knobs, dims, n, width


def _widen(shape, strides, isz: int, src_mod: int, dst_mod: int, dst_strides=None):
    """Fold ``w`` consecutive elements of a unit-stride innermost dim into one word of w·isz
    bytes (≤ 16) when extents, strides (of both sides when ``dst_strides`` is given) and both
    pointers allow; returns (shape, strides, isz) or, with ``dst_strides``, (shape, strides,
    dst_strides, isz)."""
    sets = [tuple(strides)] + ([tuple(dst_strides)] if dst_strides is not None else [])

    def done(shp, sts, w):
        return (shp, *sts, w)

    if not shape or any(st[-1] != 1 for st in sets):
        return done(tuple(shape), sets, isz)
    w = 16 // isz
    while w > 1:
        wb = w * isz
        if (shape[-1] % w == 0 and all(x % w == 0 for st in sets for x in st[:-1])
                and src_mod % wb == 0 and dst_mod % wb == 0):
            return done(tuple(shape[:-1]) + (shape[-1] // w,),
                        [tuple(x // w for x in st[:-1]) + (1,) for st in sets], wb)
        w //= 2
    return done(tuple(shape), sets, isz)


def pad_dims(xs, fill, k: int = 8) -> Tuple[int, ...]:
    """``xs`` padded in front with ``fill`` to ``k`` entries (the kernels' fixed dim groups)."""
    xs = tuple(xs)
    return (fill,) * (k - len(xs)) + xs


def _geometry(o, e, s_, d_, n: int, span: int, width: int, rank: int) -> _CopyGeometry:
    """The launch of ``n`` words: out extents ``o``, input extents ``e`` (mod form), source and
    destination strides; Int32 math when ``n`` and the offset ``span`` fit."""
    if spec.copy_blocks(n) > 2**31 - 1:
        raise UnsupportedError(f"strided copy of {n} words exceeds the grid limit")
    wide = 0 if (n < _I32_LIMIT and span < _I32_LIMIT) else 1
    dims = pad_dims(o, 1) + pad_dims(e, 1) + pad_dims(s_, 0) + pad_dims(d_, 0)
    return _CopyGeometry(spec.CopyKnobs(itemsize=width, rank=rank, wide=wide), dims, n, width)


@functools.lru_cache(maxsize=1024)
def _copy_geometry(in_shape, in_strides, reps, isz: int, src_mod: int, dst_mod: int) -> _CopyGeometry:
    """Strided-copy geometry of ``x.repeat(reps)`` (plain copy when every repeat is 1) into a
    dense output.  ``src_mod``/``dst_mod``: the pointers modulo 16."""
    k = len(reps)
    shp = (1,) * (k - len(in_shape)) + tuple(in_shape)
    st = (0,) * (k - len(in_strides)) + tuple(in_strides)
    n = prod(shp) * prod(reps)
    bshape, bstr = [], []
    for r, a, s in zip(reps, shp, st):
        bshape += [r, a]
        bstr += [0, s]
    cshape, cstr = collapse_dims(bshape, bstr)
    if len(cshape) > MAX_RANK:
        # torch-repeat form: per-dim out extent, input extent (coordinate mod), input stride
        dims = [(r * a, a, s) for r, a, s in zip(reps, shp, st) if r * a != 1]
        o = tuple(d[0] for d in dims)
        e = tuple(d[1] for d in dims)
        s_ = tuple(d[2] for d in dims)
        width, rank = isz, 8
        span = sum((ei - 1) * abs(si) for ei, si in zip(e, s_))
    else:
        o, s_, width = _widen(tuple(cshape), tuple(cstr), isz, src_mod, dst_mod)
        e = o
        n = n * isz // width
        rank = spec.copy_rank_for(len(o))
        span = sum((oi - 1) * abs(si) for oi, si in zip(o, s_))
    return _geometry(o, e, s_, contiguous_strides(o), n, span, width, rank)


@functools.lru_cache(maxsize=1024)
def strided_copy_geometry(shape, src_strides, dst_strides, isz: int, src_mod: int,
                          dst_mod: int) -> _CopyGeometry:
    """Geometry of a plain copy ``dst[c] = src[c]`` between two strided views of ``shape``
    (dims collapsed over both stride sets, the word widened when both innermost dims are
    unit-stride and aligned).  ``src_mod``/``dst_mod``: the pointers modulo 16."""
    cshape, cs, cd = collapse_dims(shape, src_strides, dst_strides)
    o, s_, d_, width = _widen(tuple(cshape), tuple(cs), isz, src_mod, dst_mod, tuple(cd))
    n = prod(shape) * isz // width
    span = sum((oi - 1) * max(abs(si), abs(di)) for oi, si, di in zip(o, s_, d_))
    # (rank-8 SKU for collapsed rank 5-8: its per-dim ``mod e`` is the identity with e = o)
    return _geometry(o, o, s_, d_, n, span, width, spec.copy_rank_for(len(o)))


def copy_precision(dt: DType) -> PrecisionGuarantee:
    """Precision contract of a pure copy: exact, deterministic, in the element type."""
    return PrecisionGuarantee(math_precision=dt, accumulator=dt, bit_stable_on_same_hardware=True,
                              deterministic=True)


def sum_precision(dt: DType) -> PrecisionGuarantee:
    """Precision contract of a fixed-order sum (repeat / pad backward): f32 accumulation (f64
    for f64), deterministic and bit-stable."""
    ct = float64 if dt == float64 else float32
    return PrecisionGuarantee(math_precision=ct, accumulator=ct, bit_stable_on_same_hardware=True,
                              deterministic=True)


def shape_sku(plan: Plan, op: str, template, knobs=None, *, summed: bool = False) -> KernelSku:
    """The KernelSku of a shape-family plan: ``template``'s SKU ``knobs`` (None: not known at
    select) for ``plan.desc.dtype`` on ``plan._arch``; a copy (exact) or, with ``summed``, a
    fixed-order sum in the accumulator type (:func:`sum_precision`)."""
    dt = plan.desc.dtype
    pg = sum_precision(dt) if summed else copy_precision(dt)
    aux = pg.accumulator if summed else None
    return KernelSku(OpCategory.SHAPE, op, dt, plan._arch, BackendKind.CUTE_DSL, pg,
                     aux_element=aux, template=template.name,
                     knobs=() if knobs is None else freeze_knobs(knobs))


def check_dense(v: TensorView, name: str) -> TensorView:
    """UnsupportedError unless the output view ``v`` is dense row-major (or empty)."""
    if v.numel and not v.is_contiguous():
        raise UnsupportedError(f"{name}: must be dense row-major (got strides {v.strides} for "
                               f"shape {v.shape}); write strided outputs through WriteSlicePlan")
    return v


def io_views(desc, args, names, in_shape, out_shape) -> Tuple[TensorView, TensorView]:
    """The (input, dense output) views of the Args fields ``names`` (both ``desc.dtype``, the
    input any strides, the output on the input's device)."""
    a, b = names
    x = view_arg(getattr(args, a), a, shape=in_shape, dtype=desc.dtype)
    out = view_arg(getattr(args, b), b, shape=out_shape, dtype=desc.dtype, device=x.device)
    return x, check_dense(out, b)


class _CopyPlanBase(Plan):
    """Shared plan and launch path of RepeatPlan and StridedCopyPlan: the strided copy of the
    broadcast view ``x.repeat(self._reps)`` (every repeat 1: a plain copy)."""

    _op = ""
    _io = ("x", "out")

    def _plan_copy(self, shape, reps) -> None:
        self._reps = reps
        self._out_shape = repeat_out_shape(shape, reps)
        self._n = prod(self._out_shape)
        geo = _copy_geometry(shape, contiguous_strides(shape), reps, self.desc.dtype.itemsize,
                             0, 0)
        self._sku = shape_sku(self, self._op, spec.STRIDED_COPY, geo.knobs)

    def is_empty(self) -> bool:
        return self._n == 0

    def _bind(self, args):
        return io_views(self.desc, args, self._io, self.desc.shape, self._out_shape)

    def _launch(self, bound, stream: int, ws) -> None:
        src, dst = bound
        geo = _copy_geometry(src.shape, src.strides, self._reps, src.itemsize, src.ptr % 16,
                             dst.ptr % 16)
        kern = self._kernel(spec.STRIDED_COPY, geo.knobs, src.device)
        kern.launch((spec.copy_blocks(geo.n), 1, 1), [src.ptr, dst.ptr, geo.n, *geo.dims], stream)


# =============================================================================== Repeat
class _RepeatProblem:
    """What the repeat descriptors share: ``shape`` / ``repeats`` as tuples, ``dtype`` checked
    against the class's ``_dtypes`` (error prefix ``_what``), and ``out_shape``."""

    _dtypes: Tuple[DType, ...] = ()
    _what = ""

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "repeats", tuple(self.repeats))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, self._dtypes, self._what))

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return repeat_out_shape(self.shape, self.repeats)


@dataclass(frozen=True)
class RepeatDescriptor(_RepeatProblem):
    """out = x.repeat(*repeats) (torch semantics): ``shape`` is x's shape (rank ≤ 8),
    ``repeats`` one count ≥ 0 per output dim (``len(repeats) >= len(shape)``), any dtype."""

    shape: Tuple[int, ...]
    repeats: Tuple[int, ...]
    dtype: DType = float32

    _dtypes = COPY_DTYPES
    _what = "Repeat"


@dataclass
class RepeatArgs:
    """x: input (any strides); out: dense output of shape ``desc.out_shape``."""

    x: object
    out: object


def _repeat_problem(desc, what: str):
    """(x shape, repeats) of a Repeat / RepeatBackward descriptor, checked."""
    shape = check_shape(desc.shape, f"{what}: x")
    return shape, _check_repeats(desc.repeats, len(shape), what)


class RepeatPlan(_CopyPlanBase):
    """torch.Tensor.repeat: out[c] = x[c mod x.shape] (out dense, x any strides, rank ≤ 8).
    Every dtype, bit-exact; no workspace; deterministic."""

    descriptor = RepeatDescriptor
    _op = "repeat"

    def _plan(self) -> None:
        self._plan_copy(*_repeat_problem(self.desc, "Repeat"))


# =========================================================================== StridedCopy
@dataclass(frozen=True)
class StridedCopyDescriptor:
    """dst = src elementwise (``shape``, rank ≤ 8, any dtype): src any strides, dst dense."""

    shape: Tuple[int, ...]
    dtype: DType = float32

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, COPY_DTYPES, "StridedCopy"))


@dataclass
class StridedCopyArgs:
    """src: any strides (0 broadcasts, negative walk backwards); dst: dense row-major."""

    src: object
    dst: object


class StridedCopyPlan(_CopyPlanBase):
    """Copy a strided view into a dense tensor ("contiguize"); every dtype, bit-exact; no
    workspace.  Same kernel as RepeatPlan with every repeat 1."""

    descriptor = StridedCopyDescriptor
    _op = "strided_copy"
    _io = ("src", "dst")

    def _plan(self) -> None:
        shape = check_shape(self.desc.shape, "StridedCopy")
        self._plan_copy(shape, (1,) * len(shape))


def strided_copy(src, dst, stream=None) -> None:
    """Copy any strided device view ``src`` into the dense ``dst`` (same shape and dtype)."""
    from ...tensor import as_view

    s = as_view(src)
    plan = strided_copy_plan(tuple(s.shape), s.dtype)
    plan.run(StridedCopyArgs(s, dst), stream=stream)


@functools.lru_cache(maxsize=256)
def strided_copy_plan(shape, dt) -> StridedCopyPlan:
    """The (cached) StridedCopyPlan for ``shape`` and dtype ``dt`` on the current device."""
    return StridedCopyPlan.select(StridedCopyDescriptor(shape, dt))


# ====================================================================== RepeatBackward
@dataclass(frozen=True)
class RepeatBackwardDescriptor(_RepeatProblem):
    """dx = Σ over the tiles of dy, the gradient of ``x.repeat(*repeats)``: ``shape`` is x's
    shape, dy has ``repeat_out_shape(shape, repeats)``; dtypes f32, f16, bf16, f64."""

    shape: Tuple[int, ...]
    repeats: Tuple[int, ...]
    dtype: DType = float32

    _dtypes = FP4
    _what = "RepeatBackward"


@dataclass
class RepeatBackwardArgs:
    """dy: gradient of the repeat output (any strides); dx: dense, x's shape."""

    dy: object
    dx: object


@functools.lru_cache(maxsize=1024)
def _bw_geometry(in_shape, reps, dy_strides):
    """(rank knob, 32 dim scalars: kept extents, their dy strides, repeat extents, their dy
    strides) of one repeat_bw launch."""
    k = len(reps)
    shp = (1,) * (k - len(in_shape)) + tuple(in_shape)
    kshape, _, kstr = collapse_dims(shp, contiguous_strides(shp), tuple(dy_strides))
    if not kshape:
        kshape, kstr = (1,), (0,)
    rshape, rstr = collapse_dims(reps, tuple(t * a for t, a in zip(dy_strides, shp)))
    if any(r == 0 for r in reps):
        rshape, rstr = (0,), (0,)
    rank = spec.bw_rank_for(len(kshape))
    kp = 8 - len(kshape)
    rp = 8 - len(rshape)
    dims = (((1,) * kp + tuple(kshape)) + ((0,) * kp + tuple(kstr))
            + ((1,) * rp + tuple(rshape)) + ((0,) * rp + tuple(rstr)))
    return rank, dims


def dense_grad_views(desc, args, dy_shape):
    """The (dy, dx) views of a backward plan's Args: ``dy`` of ``dy_shape`` (any strides),
    ``dx`` dense row-major of ``desc.shape`` (both ``desc.dtype``)."""
    return io_views(desc, args, ("dy", "dx"), dy_shape, desc.shape)


class RepeatBackwardPlan(Plan):
    """Gradient of repeat: dx[i] = Σ_tiles dy (f32/f16/bf16/f64; f32 accumulation for half
    types, f64 for f64); fixed summation order (deterministic, no atomics); no workspace."""

    descriptor = RepeatBackwardDescriptor

    def _plan(self) -> None:
        shape, reps = _repeat_problem(self.desc, "RepeatBackward")
        self._reps, self._shape = reps, shape
        self._dy_shape = repeat_out_shape(shape, reps)
        self._n = prod(shape)
        rank, _ = _bw_geometry(shape, reps, contiguous_strides(self._dy_shape))
        self._sku = shape_sku(self, "repeat_backward", spec.REPEAT_BW, self._rank_knobs(rank),
                              summed=True)

    def _rank_knobs(self, rank: int) -> spec.RepeatBwKnobs:
        return spec.RepeatBwKnobs(dtype=self.desc.dtype.short, rank=rank)

    def is_empty(self) -> bool:
        return self._n == 0

    def _bind(self, args):
        return dense_grad_views(self.desc, args, self._dy_shape)

    def _launch(self, bound, stream: int, ws) -> None:
        dy, dx = bound
        rank, dims = _bw_geometry(self._shape, self._reps, tuple(dy.strides))
        kern = self._kernel(spec.REPEAT_BW, self._rank_knobs(rank), dx.device)
        t = spec.BW_THREADS
        kern.launch(((self._n + t - 1) // t, 1, 1), [dy.ptr, dx.ptr, self._n, *dims], stream)
