"""Copy-based layout ops: permute, contiguize, concat, flip, fill, write-slice (and the backward
plans of permute, concat and flip).

Every op is a bit-exact copy of opaque 1/2/4/8/16-byte words (so every dtype works: bool, ints,
floats, fp8, complex) between two strided views, done by one of two kernels chosen from the
strides **at run time** (:func:`copy_kernel_for`):

* ``transpose`` (ops/shape/kernels/transpose.py): when, after collapsing dims, the destination's
  unit-stride dim ``B`` is not the source's unit-stride dim ``A`` (e.g. ``permute(0, 2, 1)``,
  ``.T`` materialised, NHWC ↔ NCHW): T×T tiles through padded shared memory, coalesced reads
  along A and coalesced writes along B; up to 4 further (batch) dims.
* ``strided_copy`` (ops/shape/kernels/strided_copy.py) otherwise (and when the source has no unit-stride
  dim, more than 4 batch dims, A or B shorter than 8, or huge strides): a gather copy with
  strided source and destination, vectorised to 16-byte words when both innermost dims are
  unit-stride and aligned.

``plan.sku()`` reports the kernel picked at ``select`` for dense operands (for ``Contiguize``
the generic strided-copy SKU: the real view is only known at ``run``).  Outputs must not
overlap themselves (a stride-0 output dim, or dims whose strides interleave); ``WriteSlice``
additionally rejects a source whose memory range overlaps the destination's (the caller
stages through a temporary).  No plan needs a workspace.  Rank ≤ 8.  Precision: exact copies,
deterministic and bit-stable (``OpCategory.SHAPE``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from ... import dtypes as _dt
from ...dtypes import DType, float32
from ...errors import InvalidProblemError
from ...jit import freeze_knobs, kernel as jit_kernel
from ...plan import Plan, check_dtype, collapse_dims, norm_axes, norm_axis, prod, view_arg
from ...tensor import TensorView, check_shape, contiguous_strides
from .repeat import (COPY_DTYPES, io_views, pad_dims, shape_sku,
                     strided_copy_geometry)
from .specs import layout as lspec
from .specs import repeat as rspec

_MIN_TILE_EXTENT = 8       # A or B shorter than this: the strided copy is as good
_MAX_TILE_STRIDE = 2**31 // 64 - 1


# ----------------------------------------------------------------------------- geometry
class TransposeGeometry:
    """Knobs, scalars and grid of one transpose launch."""

    __slots__ = ("knobs", "scalars", "grid")

    def __init__(self, knobs, scalars, grid):
        self.knobs, self.scalars, self.grid = knobs, scalars, grid


@functools.lru_cache(maxsize=2048)
def transpose_geometry(shape, src_strides, dst_strides, isz: int) -> Optional[TransposeGeometry]:
    """The tiled-transpose launch for ``dst[c] = src[c]`` or None when the strided copy fits
    better.  After collapsing dims over both stride sets: ``B`` = the dim with destination
    stride 1, ``A`` = a different dim with source stride 1 (the innermost such); every other
    dim (≤ 4) is a batch dim decoded from the block index."""
    cshape, cs, cd = collapse_dims(shape, src_strides, dst_strides)
    r = len(cshape)
    if r < 2:
        return None
    bs = [i for i in range(r) if cd[i] == 1]
    if not bs:
        return None
    b = bs[-1]
    if cs[b] == 1:
        return None
    as_ = [i for i in range(r) if cs[i] == 1 and i != b]
    if not as_:
        return None
    a = as_[-1]
    na, nb = cshape[a], cshape[b]
    if min(na, nb) < _MIN_TILE_EXTENT:
        return None
    sb, da = cs[b], cd[a]
    if max(abs(sb), abs(da)) > _MAX_TILE_STRIDE:
        return None
    batch = [i for i in range(r) if i not in (a, b)]
    if len(batch) > 4:
        return None
    t = lspec.tile_for(isz)
    ta, tb = -(-na // t), -(-nb // t)
    nbatch = prod(cshape[i] for i in batch)
    grid = nbatch * ta * tb
    if grid > 2**31 - 1:
        return None
    pad = 4 - len(batch)
    bext = (1,) * pad + tuple(cshape[i] for i in batch)
    bsrc = (0,) * pad + tuple(cs[i] for i in batch)
    bdst = (0,) * pad + tuple(cd[i] for i in batch)
    knobs = lspec.TransposeKnobs(itemsize=isz, batch=lspec.transpose_batch_for(len(batch)))
    scalars = (na, nb, sb, da, ta, tb) + bext + bsrc + bdst
    return TransposeGeometry(knobs, scalars, grid)


@functools.lru_cache(maxsize=4096)
def _copy_kernel_for(shape, ss, ds, isz, src_mod, dst_mod):
    g = transpose_geometry(shape, ss, ds, isz)
    if g is not None:
        return "transpose", g
    return "strided_copy", strided_copy_geometry(shape, ss, ds, isz, src_mod, dst_mod)


def copy_kernel_for(shape, src_strides, dst_strides, isz: int, src_mod: int = 0,
                    dst_mod: int = 0):
    """``("transpose", TransposeGeometry)`` or ``("strided_copy", _CopyGeometry)`` for a copy of
    ``shape`` between the given strides (elements) of ``isz``-byte words; ``*_mod`` are the
    pointers modulo 16 (word widening of the strided copy)."""
    return _copy_kernel_for(tuple(shape), tuple(src_strides), tuple(dst_strides), isz,
                            src_mod, dst_mod)


def enqueue_copy(src: TensorView, dst: TensorView, kernel_for, stream: int) -> str:
    """Enqueue ``dst = src`` (same shape, same itemsize, any strides; dst must not overlap
    itself or src) with the kernel :func:`copy_kernel_for` picks, loaded by
    ``kernel_for(template, knobs)``; returns the template name ("" for an empty copy)."""
    if src.numel == 0:
        return ""
    kind, g = _copy_kernel_for(src.shape, src.strides, dst.strides, src.itemsize,
                               src.ptr % 16, dst.ptr % 16)
    if kind == "transpose":
        kernel_for(lspec.TRANSPOSE, g.knobs).launch((g.grid, 1, 1), [src.ptr, dst.ptr, *g.scalars],
                                                    stream)
    else:
        kernel_for(rspec.STRIDED_COPY, g.knobs).launch(
            (rspec.copy_blocks(g.n), 1, 1), [src.ptr, dst.ptr, g.n, *g.dims], stream)
    return kind


_LAUNCH_MEMO: dict = {}


def launch_copy(src: TensorView, dst: TensorView, arch, stream: int) -> str:
    """:func:`enqueue_copy` outside a plan: kernels for ``arch`` on ``dst``'s device, memoised
    by the identity of the (cached) knobs objects; returns the template name."""
    def kernel_for(template, knobs):
        key = (id(knobs), dst.device, arch)
        e = _LAUNCH_MEMO.get(key)
        if e is None or e[0] is not knobs:
            if len(_LAUNCH_MEMO) > 4096:
                _LAUNCH_MEMO.clear()
            e = _LAUNCH_MEMO[key] = (knobs, jit_kernel(template, freeze_knobs(knobs), dst.device,
                                                       arch))
        return e[1]

    return enqueue_copy(src, dst, kernel_for, stream)


# ----------------------------------------------------------------------------- checks
def check_no_self_overlap(v: TensorView, name: str) -> None:
    """InvalidProblemError unless distinct elements of the (output) view ``v`` are distinct
    memory: no stride 0 over an extent > 1, and with dims sorted by |stride| each |stride|
    exceeds the span of the smaller ones (sufficient; covers every slice of a dense tensor)."""
    if v.numel <= 1:
        return
    dims = sorted((abs(s), n) for n, s in zip(v.shape, v.strides) if n > 1)
    span = 0
    for s, n in dims:
        if s == 0:
            raise InvalidProblemError(f"{name}: an output may not have a zero (broadcast) stride "
                                      f"(shape {v.shape}, strides {v.strides})")
        if s <= span:
            raise InvalidProblemError(f"{name}: the output view overlaps itself (shape "
                                      f"{v.shape}, strides {v.strides})")
        span += (n - 1) * s
    return


def _byte_range(v: TensorView) -> Tuple[int, int]:
    lo, hi = v.span_elements()
    return v.ptr + lo * v.itemsize, v.ptr + (hi + 1) * v.itemsize


def check_disjoint(src: TensorView, dst: TensorView, what: str) -> None:
    """InvalidProblemError when the memory ranges of ``src`` and ``dst`` intersect
    (conservative: interleaved but disjoint views are rejected too; the caller stages)."""
    if src.numel == 0 or dst.numel == 0:
        return
    a0, a1 = _byte_range(src)
    b0, b1 = _byte_range(dst)
    if a0 < b1 and b0 < a1:
        raise InvalidProblemError(f"{what}: source and destination memory overlap; copy the "
                                  f"source to a temporary first")


def _check_perm(perm, rank: int, what: str) -> Tuple[int, ...]:
    try:
        p = tuple(perm)
    except TypeError:
        raise InvalidProblemError(f"{what}: perm must be a sequence of ints, got {perm!r}") from None
    if any(isinstance(a, bool) or not isinstance(a, int) for a in p):
        raise InvalidProblemError(f"{what}: perm must be ints, got {perm!r}")
    if len(p) != rank:
        raise InvalidProblemError(f"{what}: perm {p} has {len(p)} entries for rank {rank}")
    q = tuple(a % rank if -rank <= a < rank else a for a in p) if rank else p
    if sorted(q) != list(range(rank)):
        raise InvalidProblemError(f"{what}: {p} is not a permutation of range({rank})")
    return q


class _CopyPlan(Plan):
    """Shared plan and launch path of the layout copies: ``_pairs(args)`` checks the Args and
    returns the (src, dst) views, each copied by :func:`enqueue_copy`."""

    _op = ""
    _io = ("x", "out")  # the Args fields of ``_io_views``: (input, dense output)

    def _copy_sku(self, shape, src_strides, dst_strides) -> None:
        """``sku()``: the kernel a copy of ``shape`` between these strides runs."""
        kind, g = copy_kernel_for(shape, src_strides, dst_strides, self.desc.dtype.itemsize)
        tmpl = lspec.TRANSPOSE if kind == "transpose" else rspec.STRIDED_COPY
        self._sku = shape_sku(self, self._op, tmpl, g.knobs)

    def _io_views(self, args, in_shape, out_shape):
        """The input view and the dense output view of the Args fields named by ``_io``."""
        return io_views(self.desc, args, self._io, in_shape, out_shape)

    def _src_dst(self, args):
        """The ``src`` and ``dst`` views of Args of shape ``desc.shape`` (dst not yet checked)."""
        d = self.desc
        src = view_arg(args.src, "src", shape=d.shape, dtype=d.dtype)
        dst = view_arg(args.dst, "dst", shape=d.shape, dtype=d.dtype, device=src.device)
        return src, dst

    def is_empty(self) -> bool:
        return self._n == 0

    def _bind(self, args):
        return self._pairs(args)

    def _launch(self, pairs, stream: int, ws) -> None:
        for src, dst in pairs:
            enqueue_copy(src, dst, lambda t, k: self._kernel(t, k, dst.device), stream)

    def kernels_for(self, args) -> Tuple[str, ...]:
        """The template each launch of ``run(args)`` would use (diagnostics / tests)."""
        out = []
        for src, dst in self._pairs(args):
            if src.numel:
                out.append(copy_kernel_for(src.shape, src.strides, dst.strides, src.itemsize,
                                           src.ptr % 16, dst.ptr % 16)[0])
        return tuple(out)


def _permuted(v: TensorView, perm) -> TensorView:
    return TensorView._trusted(v.ptr, tuple(v.shape[p] for p in perm),
                               tuple(v.strides[p] for p in perm), v.dtype, v.device, v.owner)


def _flipped(v: TensorView, axes) -> TensorView:
    ptr = v.ptr
    st = list(v.strides)
    for a in axes:
        if v.shape[a] > 0:
            ptr += (v.shape[a] - 1) * st[a] * v.itemsize
        st[a] = -st[a]
    return TensorView._trusted(ptr, v.shape, tuple(st), v.dtype, v.device, v.owner)


def _sliced(v: TensorView, axis: int, start: int, shape) -> TensorView:
    return TensorView._trusted(v.ptr + start * v.strides[axis] * v.itemsize, tuple(shape),
                               v.strides, v.dtype, v.device, v.owner)


# =============================================================================== Permute
@dataclass(frozen=True)
class PermuteDescriptor:
    """out = x.permute(perm) materialised: ``shape`` is x's shape (rank ≤ 8), ``perm`` a
    permutation of range(rank) (negative entries wrap), any dtype."""

    shape: Tuple[int, ...]
    perm: Tuple[int, ...]
    dtype: DType = float32

    def __post_init__(self):
        shape = check_shape(self.shape, "Permute: x")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "perm", _check_perm(self.perm, len(shape), "Permute"))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, COPY_DTYPES, "Permute"))

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return tuple(self.shape[p] for p in self.perm)


@dataclass
class PermuteArgs:
    """x: input (any strides); out: dense row-major, shape ``desc.out_shape``."""

    x: object
    out: object


class PermutePlan(_CopyPlan):
    """out[c] = x[c permuted back] (out dense, x any strides); tiled transpose when the unit
    dims differ, strided copy otherwise; every dtype, exact; no workspace."""

    descriptor = PermuteDescriptor
    _op = "permute"

    def _plan(self) -> None:
        self._permute(self.desc.shape, self.desc.perm)

    def _permute(self, shape, perm) -> None:
        self._in_shape, self._perm = shape, perm
        self._out_shape = tuple(shape[p] for p in perm)
        self._n = prod(shape)
        xs = contiguous_strides(shape)
        self._copy_sku(self._out_shape, tuple(xs[p] for p in perm),
                       contiguous_strides(self._out_shape))

    def _pairs(self, args):
        x, out = self._io_views(args, self._in_shape, self._out_shape)
        return [(_permuted(x, self._perm), out)]


@dataclass
class PermuteBackwardArgs:
    """dy: gradient of the permute output (shape ``desc.out_shape``, any strides); dx: dense,
    shape ``desc.shape``."""

    dy: object
    dx: object


class PermuteBackwardPlan(PermutePlan):
    """dx = dy.permute(inverse(perm)) (dense dx); same kernels as PermutePlan; exact."""

    _op = "permute_backward"
    _io = ("dy", "dx")

    def _plan(self) -> None:
        inv = [0] * len(self.desc.perm)
        for i, p in enumerate(self.desc.perm):
            inv[p] = i
        self._permute(self.desc.out_shape, tuple(inv))


# ============================================================================ Contiguize
@dataclass(frozen=True)
class ContiguizeDescriptor:
    """dst = src for a view of ``shape`` (rank ≤ 8), any dtype: src any strides (0 broadcasts,
    negative walk backwards), dst dense row-major (or any non-overlapping strides)."""

    shape: Tuple[int, ...]
    dtype: DType = float32

    def __post_init__(self):
        object.__setattr__(self, "shape", check_shape(self.shape, "Contiguize"))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, COPY_DTYPES, "Contiguize"))


@dataclass
class ContiguizeArgs:
    """src: any strided view; dst: dense (or non-overlapping strided) output of the same shape."""

    src: object
    dst: object


class ContiguizePlan(_CopyPlan):
    """Dense copy of any strided view.  The kernel is chosen from the strides at ``run``: the
    tiled transpose when src is a permuted dense layout (its unit-stride dim is not dst's), else
    the strided copy; ``sku()`` reports the strided-copy SKU of a dense→dense copy (the view is
    unknown at select).  Exact, no workspace."""

    descriptor = ContiguizeDescriptor

    def _plan(self) -> None:
        d = self.desc
        self._n = prod(d.shape)
        cs = contiguous_strides(d.shape)
        g = strided_copy_geometry(d.shape, cs, cs, d.dtype.itemsize, 0, 0)
        self._sku = shape_sku(self, "contiguize", rspec.STRIDED_COPY, g.knobs)

    def _pairs(self, args):
        src, dst = self._src_dst(args)
        if not dst.is_contiguous():
            check_no_self_overlap(dst, "dst")
            check_disjoint(src, dst, "Contiguize")
        return [(src, dst)]


def contiguize(src, dst, stream=None) -> None:
    """``dst = src`` for any strided device view ``src`` into ``dst`` (dense, same shape and
    dtype), with a cached :class:`ContiguizePlan` (transpose kernel for permuted layouts)."""
    from ...tensor import as_view

    s = as_view(src)
    plan = _contiguize_plan(tuple(s.shape), s.dtype)
    plan.run(ContiguizeArgs(s, dst), stream=stream)


@functools.lru_cache(maxsize=256)
def _contiguize_plan(shape, dt) -> ContiguizePlan:
    return ContiguizePlan.select(ContiguizeDescriptor(shape, dt))


# ================================================================================ Concat
def _check_concat(shapes, axis, what: str):
    try:
        shapes = tuple(tuple(s) for s in shapes)
    except TypeError:
        raise InvalidProblemError(f"{what}: shapes must be a sequence of shapes") from None
    if not shapes:
        raise InvalidProblemError(f"{what}: needs at least one input")
    shapes = tuple(check_shape(s, f"{what}: input {i}") for i, s in enumerate(shapes))
    rank = len(shapes[0])
    if rank == 0:
        raise InvalidProblemError(f"{what}: zero-dimensional inputs cannot be concatenated")
    ax = norm_axis(axis, rank, what)
    for i, s in enumerate(shapes):
        if len(s) != rank:
            raise InvalidProblemError(f"{what}: input {i} has rank {len(s)}, input 0 rank {rank}")
        if any(a != b for d, (a, b) in enumerate(zip(s, shapes[0])) if d != ax):
            raise InvalidProblemError(f"{what}: input {i} shape {s} does not match {shapes[0]} "
                                      f"outside axis {ax}")
    return shapes, ax


@dataclass(frozen=True)
class ConcatDescriptor:
    """out = concat(xs, axis): ``shapes`` one shape per input (same rank ≤ 8, equal except
    along ``axis``; zero-size inputs allowed), any dtype."""

    shapes: Tuple[Tuple[int, ...], ...]
    axis: int = 0
    dtype: DType = float32

    def __post_init__(self):
        shapes, ax = _check_concat(self.shapes, self.axis, "Concat")
        object.__setattr__(self, "shapes", shapes)
        object.__setattr__(self, "axis", ax)
        object.__setattr__(self, "dtype", check_dtype(self.dtype, COPY_DTYPES, "Concat"))

    @property
    def out_shape(self) -> Tuple[int, ...]:
        s = list(self.shapes[0])
        s[self.axis] = sum(x[self.axis] for x in self.shapes)
        return tuple(s)

    @property
    def offsets(self) -> Tuple[int, ...]:
        """Start of each input along ``axis`` in the output."""
        o, acc = [], 0
        for s in self.shapes:
            o.append(acc)
            acc += s[self.axis]
        return tuple(o)


@dataclass
class ConcatArgs:
    """xs: sequence of input views (any strides); out: output (dense or any non-overlapping
    strides) of ``desc.out_shape``."""

    xs: Sequence[object]
    out: object


class ConcatPlan(_CopyPlan):
    """One copy launch per non-empty input into its slice of out (strided destination); every
    dtype, exact, no workspace.  ``sku()``: the kernel of the first non-empty dense input."""

    descriptor = ConcatDescriptor
    _op = "concat"

    def _plan(self) -> None:
        d = self.desc
        self._out_shape = d.out_shape
        self._n = prod(self._out_shape)
        first = next((s for s in d.shapes if prod(s)), d.shapes[0])
        self._copy_sku(first, contiguous_strides(first), contiguous_strides(self._out_shape))

    def _parts(self, xs_obj, big_obj, big_name, parts_name):
        d = self.desc
        try:
            xs_list = list(xs_obj)
        except TypeError:
            raise InvalidProblemError(f"{parts_name}: must be a sequence of views") from None
        if len(xs_list) != len(d.shapes):
            raise InvalidProblemError(f"{parts_name}: {len(xs_list)} views for "
                                      f"{len(d.shapes)} shapes")
        big = view_arg(big_obj, big_name, shape=self._out_shape, dtype=d.dtype)
        parts = [view_arg(x, f"{parts_name}[{i}]", shape=s, dtype=d.dtype, device=big.device)
                 for i, (x, s) in enumerate(zip(xs_list, d.shapes))]
        slices = [_sliced(big, d.axis, o, s) for o, s in zip(d.offsets, d.shapes)]
        return big, parts, slices

    def _pairs(self, args):
        out, xs, slices = self._parts(args.xs, args.out, "out", "xs")
        check_no_self_overlap(out, "out")
        for i, x in enumerate(xs):
            check_disjoint(x, out, f"Concat: xs[{i}] and out")
        return [(x, s) for x, s in zip(xs, slices) if x.numel]


@dataclass
class ConcatBackwardArgs:
    """dy: gradient of the concat output (any strides); dxs: one output per input (dense or
    any non-overlapping strides)."""

    dy: object
    dxs: Sequence[object]


class ConcatBackwardPlan(ConcatPlan):
    """dxs[i] = the slice of dy along ``axis`` that input i filled; exact, no workspace."""

    _op = "concat_backward"

    def _pairs(self, args):
        dy, dxs, slices = self._parts(args.dxs, args.dy, "dy", "dxs")
        out = []
        for i, (dx, s) in enumerate(zip(dxs, slices)):
            check_no_self_overlap(dx, f"dxs[{i}]")
            check_disjoint(dy, dx, f"ConcatBackward: dy and dxs[{i}]")
            if dx.numel:
                out.append((s, dx))
        return out


# ================================================================================== Flip
@dataclass(frozen=True)
class FlipDescriptor:
    """out = flip(x, axes): reverse the order along ``axes`` (None = all; ints in [-rank,
    rank), no repeats); ``shape`` rank ≤ 8; any dtype."""

    shape: Tuple[int, ...]
    axes: Optional[Tuple[int, ...]] = None
    dtype: DType = float32

    def __post_init__(self):
        shape = check_shape(self.shape, "Flip: x")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "axes", norm_axes(self.axes, len(shape), "Flip"))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, COPY_DTYPES, "Flip"))


@dataclass
class FlipArgs:
    """x: input (any strides); out: dense row-major of the same shape."""

    x: object
    out: object


class FlipPlan(_CopyPlan):
    """out[c] = x[c with c_a → n_a − 1 − c_a for a in axes] (a copy of a negative-stride view of
    x; out dense); exact, no workspace."""

    descriptor = FlipDescriptor
    _op = "flip"

    def _plan(self) -> None:
        d = self.desc
        self._n = prod(d.shape)
        cs = list(contiguous_strides(d.shape))
        for a in d.axes:
            cs[a] = -cs[a]
        self._copy_sku(d.shape, tuple(cs), contiguous_strides(d.shape))

    def _pairs(self, args):
        d = self.desc
        x, out = self._io_views(args, d.shape, d.shape)
        return [(_flipped(x, d.axes), out)]


@dataclass
class FlipBackwardArgs:
    """dy: gradient of the flip output (any strides); dx: dense, same shape."""

    dy: object
    dx: object


class FlipBackwardPlan(FlipPlan):
    """dx = flip(dy, axes) (flip is its own inverse); exact, no workspace."""

    _op = "flip_backward"
    _io = ("dy", "dx")


# ================================================================================== Fill
def encode_fill_value(value, dt: DType) -> bytes:
    """The ``dt.itemsize`` bytes of ``value`` converted to ``dt``: bool / int / float / complex
    Python scalars; integers must be in range (and integral), bools take only False/True/0/1,
    real dtypes reject a non-zero imaginary part, floats round to nearest but may not overflow
    a finite value to infinity.  InvalidProblemError otherwise."""
    import numpy as np

    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, (bool, int, float, complex)):
        raise InvalidProblemError(f"Fill: value must be a bool/int/float/complex scalar, got "
                                  f"{type(value).__name__}")
    if dt.kind == "c":
        c = complex(value)
        return np.array(c, dtype=dt.to_numpy()).tobytes()
    if isinstance(value, complex):
        if value.imag != 0:
            raise InvalidProblemError(f"Fill: complex value {value} for the real dtype {dt.name}")
        value = value.real
    if dt.kind in ("b", "i", "u"):
        if isinstance(value, float):
            if not math.isfinite(value) or value != int(value):
                raise InvalidProblemError(f"Fill: {value} is not representable in {dt.name}")
            value = int(value)
        v = int(value)
        if dt.kind == "b":
            if v not in (0, 1):
                raise InvalidProblemError(f"Fill: {value!r} is not a boolean value")
            return bytes([v])
        bits = dt.itemsize * 8
        lo, hi = (0, 2**bits - 1) if dt.kind == "u" else (-2**(bits - 1), 2**(bits - 1) - 1)
        if not lo <= v <= hi:
            raise InvalidProblemError(f"Fill: {value} is out of range for {dt.name} "
                                      f"[{lo}, {hi}]")
        return (v % 2**bits).to_bytes(dt.itemsize, "little")
    # floating
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**1023 * 2:
        raise InvalidProblemError(f"Fill: {value} overflows {dt.name}")
    f = float(value)
    if dt.numpy is not None:
        with np.errstate(over="ignore"):
            arr = np.array(f, dtype=np.float64).astype(dt.to_numpy())
        out = float(arr)
        raw = arr.tobytes()
    else:
        bits = _dt.encode_minifloat(f, dt)
        out = _dt.decode_minifloat(bits, dt)
        raw = bits.to_bytes(dt.itemsize, "little")
    if math.isfinite(f) and not math.isfinite(out):
        raise InvalidProblemError(f"Fill: {value} overflows {dt.name}")
    return raw


@dataclass(frozen=True)
class FillDescriptor:
    """out[...] = value: ``shape`` rank ≤ 8, any dtype, ``value`` a Python scalar converted
    exactly (see :func:`encode_fill_value`; unrepresentable values raise)."""

    shape: Tuple[int, ...]
    dtype: DType = float32
    value: object = 0

    def __post_init__(self):
        object.__setattr__(self, "shape", check_shape(self.shape, "Fill"))
        dt = check_dtype(self.dtype, COPY_DTYPES, "Fill")
        object.__setattr__(self, "dtype", dt)
        encode_fill_value(self.value, dt)

    @property
    def pattern(self) -> bytes:
        return encode_fill_value(self.value, self.dtype)


@dataclass
class FillArgs:
    """out: the view to fill (dense or any non-overlapping strides)."""

    out: object


def _memset_kind(pattern: bytes):
    """(memset width in bytes, value) when a 1/2/4-byte memset reproduces ``pattern``."""
    for w in (1, 2, 4):
        if len(pattern) % w == 0 and pattern == pattern[:w] * (len(pattern) // w):
            return w, int.from_bytes(pattern[:w], "little")
    return None


@functools.lru_cache(maxsize=1024)
def fill_geometry(shape, strides, isz: int):
    """(knobs, n, v-split, dims) of the fill kernel for a view: 16-byte elements become two
    8-byte words (innermost extent 2, ``odd`` = 1)."""
    odd = 0
    if isz == 16:
        shape = tuple(shape) + (2,)
        strides = tuple(2 * s for s in strides) + (1,)
        isz, odd = 8, 1
    cshape, cd = collapse_dims(shape, strides)
    if odd and (not cshape or cshape[-1] % 2 or cd[-1] != 1):
        raise AssertionError("fill: 16-byte split lost its inner pair")  # pragma: no cover
    n = prod(cshape)
    span = sum((o - 1) * abs(s) for o, s in zip(cshape, cd))
    lim = 2**31 - 1 - lspec.FILL_THREADS * lspec.FILL_ILP
    wide = 0 if (n < lim and span < lim) else 1
    knobs = lspec.FillKnobs(itemsize=isz, rank=lspec.fill_rank_for(len(cshape)), wide=wide)
    return knobs, n, odd, pad_dims(cshape, 1) + pad_dims(cd, 0)


class FillPlan(Plan):
    """out[...] = value.  Dense outputs whose byte pattern repeats every 1, 2 or 4 bytes use
    cuMemsetD8/D16/D32Async; anything else runs the strided ``fill`` kernel (opaque words, 16-byte
    elements as two 8-byte words).  Exact, no workspace.  ``sku()``: the fill-kernel SKU of a
    dense output (also reported when run would memset)."""

    descriptor = FillDescriptor

    def _plan(self) -> None:
        d = self.desc
        self._n = prod(d.shape)
        pat = d.pattern
        self._pattern = pat
        self._memset = _memset_kind(pat)
        if d.dtype.itemsize == 16:
            self._v = (int.from_bytes(pat[:8], "little", signed=True),
                       int.from_bytes(pat[8:], "little", signed=True))
        else:
            v = int.from_bytes(pat, "little", signed=True)
            self._v = (v, v)
        knobs, _, _, _ = fill_geometry(d.shape, contiguous_strides(d.shape), d.dtype.itemsize)
        self._sku = shape_sku(self, "fill", lspec.FILL, knobs)

    def is_empty(self) -> bool:
        return self._n == 0

    def _bind(self, args) -> TensorView:
        d = self.desc
        out = view_arg(args.out, "out", shape=d.shape, dtype=d.dtype)
        check_no_self_overlap(out, "out")
        return out

    def _memset_of(self, out: TensorView):
        """(width, value) of the cuMemset that fills ``out``, or None (the fill kernel)."""
        m = self._memset
        return m if m is not None and out.is_contiguous() and out.ptr % m[0] == 0 else None

    def uses_memset(self, args) -> bool:
        """True when ``run(args)`` would use a cuMemset instead of the kernel."""
        return self._memset_of(self._bind(args)) is not None

    def _launch(self, out: TensorView, stream: int, ws) -> None:
        m = self._memset_of(out)
        if m is not None:
            w, val = m
            _memset(out.ptr, w, val, out.numel * out.itemsize // w, stream)
            return
        knobs, n, odd, dims = fill_geometry(out.shape, out.strides, out.itemsize)
        kern = self._kernel(lspec.FILL, knobs, out.device)
        kern.launch((lspec.fill_blocks(n), 1, 1), [out.ptr, n, self._v[0], self._v[1], odd, *dims],
                    stream)


def _memset(ptr: int, width: int, value: int, count: int, stream: int) -> None:
    from ...runtime.memory import memset

    memset(width, ptr, value, count, stream)


# ============================================================================ WriteSlice
@dataclass(frozen=True)
class WriteSliceDescriptor:
    """dst = src for two views of ``shape`` (rank ≤ 8), any dtype: dst any non-overlapping
    strides (e.g. ``y[2:5, ::2]``), src any strides including broadcast 0."""

    shape: Tuple[int, ...]
    dtype: DType = float32

    def __post_init__(self):
        object.__setattr__(self, "shape", check_shape(self.shape, "WriteSlice"))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, COPY_DTYPES, "WriteSlice"))


@dataclass
class WriteSliceArgs:
    """src: any strided view (broadcast allowed); dst: non-overlapping strided view; their
    memory ranges must not intersect (InvalidProblemError: stage through a temporary)."""

    src: object
    dst: object


class WriteSlicePlan(_CopyPlan):
    """dst[c] = src[c] through the strides of both (``y[2:5, ::2] = x``); transpose kernel when
    the unit dims differ, strided copy otherwise; exact, no workspace.  ``sku()``: the kernel
    of a dense → dense copy."""

    descriptor = WriteSliceDescriptor
    _op = "write_slice"

    def _plan(self) -> None:
        d = self.desc
        self._n = prod(d.shape)
        cs = contiguous_strides(d.shape)
        self._copy_sku(d.shape, cs, cs)

    def _pairs(self, args):
        src, dst = self._src_dst(args)
        check_no_self_overlap(dst, "dst")
        check_disjoint(src, dst, "WriteSlice")
        return [(src, dst)]


__all__ = [
    "PermuteDescriptor", "PermuteArgs", "PermutePlan", "PermuteBackwardArgs",
    "PermuteBackwardPlan", "ContiguizeDescriptor", "ContiguizeArgs", "ContiguizePlan",
    "contiguize", "ConcatDescriptor", "ConcatArgs", "ConcatPlan", "ConcatBackwardArgs",
    "ConcatBackwardPlan", "FlipDescriptor", "FlipArgs", "FlipPlan", "FlipBackwardArgs",
    "FlipBackwardPlan", "FillDescriptor", "FillArgs", "FillPlan", "WriteSliceDescriptor",
    "WriteSliceArgs", "WriteSlicePlan", "copy_kernel_for", "transpose_geometry",
    "launch_copy", "enqueue_copy", "check_no_self_overlap", "check_disjoint", "encode_fill_value",
]
