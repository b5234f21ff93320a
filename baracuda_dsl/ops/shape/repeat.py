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
from ...jit import freeze_knobs, kernel as jit_kernel
from ...plan import (ViewsPlan, check_dtype, check_select, collapse_dims, new_plan, plan_arch, prod,
                     resolve_pref, view_arg)
from ...tensor import MAX_RANK, TensorView, check_shape, contiguous_strides
from .specs import repeat as spec
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee

_I32_LIMIT = 2**31 - 1 - spec.COPY_THREADS * spec.COPY_ILP
_COPY_DTYPES = tuple(d for d in ALL_DTYPES if d.itemsize in spec.ITEMSIZES)


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
    """Kernel knobs and the 24 dim scalars of one strided-copy launch (memoised by shapes,
    strides and pointer alignment)."""

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


@functools.lru_cache(maxsize=1024)
def _copy_geometry(in_shape, in_strides, reps, isz: int, src_mod: int, dst_mod: int) -> _CopyGeometry:
    """Strided-copy geometry of ``x.repeat(reps)`` (plain copy when every repeat is 1).
    ``src_mod``/``dst_mod``: the pointers modulo 16."""
    k = len(reps)
    shp = (1,) * (k - len(in_shape)) + tuple(in_shape)
    st = (0,) * (k - len(in_strides)) + tuple(in_strides)
    n = prod(shp) * prod(reps)
    bshape, bstr = [], []
    for r, a, s in zip(reps, shp, st):
        bshape += [r, a]
        bstr += [0, s]
    cshape, cstr = collapse_dims(bshape, bstr)
    mod_form = len(cshape) > MAX_RANK
    if mod_form:
        # torch-repeat form: per-dim out extent, input extent (coordinate mod), input stride
        dims = [(r * a, a, s) for r, a, s in zip(reps, shp, st) if r * a != 1]
        o = tuple(d[0] for d in dims)
        e = tuple(d[1] for d in dims)
        s_ = tuple(d[2] for d in dims)
        width = isz
        rank = 8
        span = sum((ei - 1) * abs(si) for ei, si in zip(e, s_))
    else:
        o, s_, width = _widen(tuple(cshape), tuple(cstr), isz, src_mod, dst_mod)
        e = o
        n = n * isz // width
        rank = spec.copy_rank_for(len(o))
        span = sum((oi - 1) * abs(si) for oi, si in zip(o, s_))
    if (n + spec.COPY_THREADS * spec.COPY_ILP - 1) // (spec.COPY_THREADS * spec.COPY_ILP) > 2**31 - 1:
        raise UnsupportedError(f"strided copy of {n} words exceeds the grid limit")
    wide = 0 if (n < _I32_LIMIT and span < _I32_LIMIT) else 1
    pad = 8 - len(o)
    dims = (((1,) * pad + tuple(o)) + ((1,) * pad + tuple(e)) + ((0,) * pad + tuple(s_))
            + ((0,) * pad + contiguous_strides(o)))
    return _CopyGeometry(dict(itemsize=width, rank=rank, wide=wide), dims, n, width)


@functools.lru_cache(maxsize=1024)
def strided_copy_geometry(shape, src_strides, dst_strides, isz: int, src_mod: int,
                          dst_mod: int) -> _CopyGeometry:
    """Geometry of a plain copy ``dst[c] = src[c]`` between two strided views of ``shape``
    (dims collapsed over both stride sets, the word widened when both innermost dims are
    unit-stride and aligned).  ``src_mod``/``dst_mod``: the pointers modulo 16."""
    cshape, cs, cd = collapse_dims(shape, src_strides, dst_strides)
    o, s_, d_, width = _widen(tuple(cshape), tuple(cs), isz, src_mod, dst_mod, tuple(cd))
    n = prod(shape) * isz // width
    if (n + spec.COPY_THREADS * spec.COPY_ILP - 1) // (spec.COPY_THREADS * spec.COPY_ILP) > 2**31 - 1:
        raise UnsupportedError(f"strided copy of {n} words exceeds the grid limit")
    span = sum((oi - 1) * max(abs(si), abs(di)) for oi, si, di in zip(o, s_, d_))
    wide = 0 if (n < _I32_LIMIT and span < _I32_LIMIT) else 1
    # (rank-8 SKU for collapsed rank 5-8: its per-dim ``mod e`` is the identity with e = o)
    rank = spec.copy_rank_for(len(o))
    pad = 8 - len(o)
    dims = (((1,) * pad + tuple(o)) * 2 + ((0,) * pad + tuple(s_)) + ((0,) * pad + tuple(d_)))
    return _CopyGeometry(dict(itemsize=width, rank=rank, wide=wide), dims, n, width)


def copy_precision(dt: DType) -> PrecisionGuarantee:
    """Precision contract of a pure copy: exact, deterministic, in the element type."""
    return PrecisionGuarantee(math_precision=dt, accumulator=dt, bit_stable_on_same_hardware=True,
                              deterministic=True)


class _CopyPlanBase(ViewsPlan):
    """Shared launch path of RepeatPlan and StridedCopyPlan."""

    def _primary(self, in_shape, reps, dt) -> _CopyGeometry:
        return _copy_geometry(tuple(in_shape), contiguous_strides(in_shape), tuple(reps),
                              dt.itemsize, 0, 0)

    def _launch_copy(self, src: TensorView, dst: TensorView, reps, stream: int) -> None:
        geo = _copy_geometry(src.shape, src.strides, reps, src.itemsize, src.ptr % 16,
                             dst.ptr % 16)
        kern = jit_kernel(spec.STRIDED_COPY, freeze_knobs(geo.knobs), src.device, self._arch)
        per = spec.COPY_THREADS * spec.COPY_ILP
        kern.launch(((geo.n + per - 1) // per, 1, 1), [src.ptr, dst.ptr, geo.n, *geo.dims], stream)

    def _run_views(self, src: TensorView, dst: TensorView, stream: int) -> None:
        self._launch_copy(src, dst, self._reps, stream)

    def _check_dst(self, dst: TensorView, name: str) -> None:
        if dst.numel and not dst.is_contiguous():
            raise UnsupportedError(f"{name}: the output must be dense row-major (got strides "
                                   f"{dst.strides} for shape {dst.shape}); strided outputs are "
                                   f"not wired")


# =============================================================================== Repeat
@dataclass(frozen=True)
class RepeatDescriptor:
    """out = x.repeat(*repeats) (torch semantics): ``shape`` is x's shape (rank ≤ 8),
    ``repeats`` one count ≥ 0 per output dim (``len(repeats) >= len(shape)``), any dtype."""

    shape: Tuple[int, ...]
    repeats: Tuple[int, ...]
    dtype: DType = float32

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "repeats", tuple(self.repeats))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, _COPY_DTYPES, "Repeat"))

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return repeat_out_shape(self.shape, self.repeats)


@dataclass
class RepeatArgs:
    """x: input (any strides); out: dense output of shape ``desc.out_shape``."""

    x: object
    out: object


class RepeatPlan(_CopyPlanBase):
    """torch.Tensor.repeat: out[c] = x[c mod x.shape] (out dense, x any strides, rank ≤ 8).
    Every dtype, bit-exact; no workspace; deterministic."""

    @classmethod
    def select(cls, desc: RepeatDescriptor, pref=None) -> "RepeatPlan":
        pref = check_select(desc, pref, RepeatDescriptor, "RepeatPlan")
        shape = check_shape(desc.shape, "Repeat: x")
        reps = _check_repeats(desc.repeats, len(shape), "Repeat")
        plan = new_plan(cls, desc, pref, plan_arch)
        arch = plan._arch
        plan._reps = reps
        plan._out_shape = repeat_out_shape(shape, reps)
        plan._n = prod(plan._out_shape)
        geo = plan._primary(shape, reps, desc.dtype)
        plan._sku = KernelSku(OpCategory.SHAPE, "repeat", desc.dtype, arch, BackendKind.CUTE_DSL,
                              copy_precision(desc.dtype), template=spec.STRIDED_COPY.name,
                              knobs=freeze_knobs(geo.knobs))
        return plan

    def _views(self, args):
        d = self.desc
        x = view_arg(args.x, "x", shape=d.shape, dtype=d.dtype)
        out = view_arg(args.out, "out", shape=self._out_shape, dtype=d.dtype, device=x.device)
        self._check_dst(out, "out")
        return x, out


# =========================================================================== StridedCopy
@dataclass(frozen=True)
class StridedCopyDescriptor:
    """dst = src elementwise (``shape``, rank ≤ 8, any dtype): src any strides, dst dense."""

    shape: Tuple[int, ...]
    dtype: DType = float32

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, _COPY_DTYPES, "StridedCopy"))


@dataclass
class StridedCopyArgs:
    """src: any strides (0 broadcasts, negative walk backwards); dst: dense row-major."""

    src: object
    dst: object


class StridedCopyPlan(_CopyPlanBase):
    """Copy a strided view into a dense tensor ("contiguize"); every dtype, bit-exact; no
    workspace.  Same kernel as RepeatPlan with every repeat 1."""

    @classmethod
    def select(cls, desc: StridedCopyDescriptor, pref=None) -> "StridedCopyPlan":
        pref = resolve_pref(pref)
        shape = check_shape(desc.shape, "StridedCopy")
        plan = new_plan(cls, desc, pref, plan_arch)
        arch = plan._arch
        plan._reps, plan._n = (1,) * len(shape), prod(shape)
        geo = plan._primary(shape, plan._reps, desc.dtype)
        plan._sku = KernelSku(OpCategory.SHAPE, "strided_copy", desc.dtype, arch,
                              BackendKind.CUTE_DSL, copy_precision(desc.dtype),
                              template=spec.STRIDED_COPY.name, knobs=freeze_knobs(geo.knobs))
        return plan

    def _views(self, args):
        d = self.desc
        src = view_arg(args.src, "src", shape=d.shape, dtype=d.dtype)
        dst = view_arg(args.dst, "dst", shape=d.shape, dtype=d.dtype, device=src.device)
        self._check_dst(dst, "dst")
        return src, dst


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
class RepeatBackwardDescriptor:
    """dx = Σ over the tiles of dy, the gradient of ``x.repeat(*repeats)``: ``shape`` is x's
    shape, dy has ``repeat_out_shape(shape, repeats)``; dtypes f32, f16, bf16, f64."""

    shape: Tuple[int, ...]
    repeats: Tuple[int, ...]
    dtype: DType = float32

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "repeats", tuple(self.repeats))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, FP4, "RepeatBackward"))

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return repeat_out_shape(self.shape, self.repeats)


@dataclass
class RepeatBackwardArgs:
    """dy: gradient of the repeat output (any strides); dx: dense, x's shape."""

    dy: object
    dx: object


@functools.lru_cache(maxsize=1024)
def _bw_geometry(in_shape, reps, dy_strides):
    k = len(reps)
    shp = (1,) * (k - len(in_shape)) + tuple(in_shape)
    keep = collapse_dims(shp, contiguous_strides(shp),
                         tuple(t for t in dy_strides))
    kshape, _, kstr = keep
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
    dy = view_arg(args.dy, "dy", shape=dy_shape, dtype=desc.dtype)
    dx = view_arg(args.dx, "dx", shape=desc.shape, dtype=desc.dtype, device=dy.device)
    if dx.numel and not dx.is_contiguous():
        raise UnsupportedError(f"dx: must be dense row-major (got strides {dx.strides}); "
                               f"strided gradients are not wired")
    return dy, dx


def sum_precision(dt: DType) -> PrecisionGuarantee:
    """Precision contract of a fixed-order sum (repeat / pad backward): f32 accumulation (f64
    for f64), deterministic and bit-stable."""
    ct = float64 if dt == float64 else float32
    return PrecisionGuarantee(math_precision=ct, accumulator=ct, bit_stable_on_same_hardware=True,
                              deterministic=True)


class RepeatBackwardPlan(ViewsPlan):
    """Gradient of repeat: dx[i] = Σ_tiles dy (f32/f16/bf16/f64; f32 accumulation for half
    types, f64 for f64); fixed summation order (deterministic, no atomics); no workspace."""

    @classmethod
    def select(cls, desc: RepeatBackwardDescriptor, pref=None) -> "RepeatBackwardPlan":
        pref = resolve_pref(pref)
        shape = check_shape(desc.shape, "RepeatBackward: x")
        reps = _check_repeats(desc.repeats, len(shape), "RepeatBackward")
        plan = new_plan(cls, desc, pref, plan_arch)
        arch = plan._arch
        plan._reps, plan._shape = reps, shape
        plan._dy_shape = repeat_out_shape(shape, reps)
        plan._n = prod(shape)
        rank, _ = _bw_geometry(shape, reps, contiguous_strides(plan._dy_shape))
        knobs = dict(dtype=desc.dtype.short, rank=rank)
        plan._sku = KernelSku(OpCategory.SHAPE, "repeat_backward", desc.dtype, arch,
                              BackendKind.CUTE_DSL, sum_precision(desc.dtype),
                              aux_element=float64 if desc.dtype == float64 else float32,
                              template=spec.REPEAT_BW.name, knobs=freeze_knobs(knobs))
        return plan

    def _views(self, args):
        return dense_grad_views(self.desc, args, self._dy_shape)

    def _run_views(self, dy: TensorView, dx: TensorView, stream: int) -> None:
        rank, dims = _bw_geometry(self._shape, self._reps, tuple(dy.strides))
        knobs = freeze_knobs(dict(dtype=self.desc.dtype.short, rank=rank))
        kern = jit_kernel(spec.REPEAT_BW, knobs, dx.device, self._arch)
        t = spec.BW_THREADS
        kern.launch(((self._n + t - 1) // t, 1, 1), [dy.ptr, dx.ptr, self._n, *dims], stream)
