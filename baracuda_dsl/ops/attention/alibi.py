"""ALiBi (attention with linear biases): the bias tensor (AlibiPlan), the slope gradient
(AlibiBackwardPlan) and the paper's slopes (:func:`alibi_slopes`).

Forward::

    bias[b, h, i, j] = −slope[b, h] · |i + off − j|        off = Sk − Sq  (align="bottom_right")
                                                             off = 0        (align="top_left")

for bias (B, Hq, Sq, Sk) (``B`` may be 1) and f32 slopes (Hq,) — one slope per head, used for
every batch — or (B, Hq) (``batched_slopes=True``): the bias ``tests/_attention_ref._bias`` adds
to the scores.  The product is computed in f32 (f64 for an f64 bias; the distance is exact) and
rounded once into the bias dtype (f16, bf16, f32, f64).

Backward: dslopes (the shape of the slopes, f32) ``= Σ_{i,j} dbias[b, h, i, j]·(−|i + off − j|)``,
summed over b too when the slopes are per head (dbias (B, Hq, Sq, Sk) with any B).  The
reduction is deterministic — a fixed assignment of elements to threads, a fixed-order tree in
each CTA and the chunk partials added in order (no atomics) — and accumulates in f32 (f64 for
f64 dbias).  The chunking depends on the shape only, so results are bit-identical across runs
and devices.  Rows longer than one chunk's element budget split a slope over several CTAs: the
plan then needs a workspace of ``nslopes · nchunks`` partials (``workspace_size()``).

Operands may have any strides (the bias / dbias use 16-byte vectors when their last dim is
unit-stride, ``Sk`` and the row strides are multiples of ``16 / itemsize`` and the pointer is
16-byte aligned; otherwise one element per thread).  Outputs may not overlap inputs.  Empty
problems return without launching, except that the backward writes zeros into a non-empty
dslopes when dbias has no elements (an empty sum).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Tuple

import numpy as np

from ...dtypes import DType, bfloat16, float16, float32, float64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, align_up, check_dtype, prod, view_arg
from ...tensor import TensorView, check_shape
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace
from ..shape.layout import check_disjoint, check_no_self_overlap
from .specs import alibi as spec

__all__ = [
    "alibi_slopes", "AlibiDescriptor", "AlibiArgs", "AlibiPlan", "AlibiBackwardDescriptor",
    "AlibiBackwardArgs", "AlibiBackwardPlan",
]

_I32_MAX = 2**31 - 1
DTYPES = (float16, bfloat16, float32, float64)
ALIGNS = ("bottom_right", "top_left")
#: backward: elements one CTA adds before the slope is split over more CTAs, and the most chunks
CHUNK_ELEMENTS = 65536
MAX_CHUNKS = 1024


def alibi_slopes(n_heads: int) -> np.ndarray:
    """The ALiBi paper's head slopes (Press et al., 2022) as numpy float32 (n_heads,): for a
    power of two ``n``, ``2^(−8k/n)`` for ``k = 1 .. n``; otherwise the ``m = 2^⌊log2 n⌋``
    slopes of ``m`` followed by every other slope of ``2m`` (``2^(−4k/m)`` for odd
    ``k = 1, 3, …``) until there are ``n``.  Computed in float64, rounded once."""
    if isinstance(n_heads, bool) or not isinstance(n_heads, (int, np.integer)) or n_heads < 0:
        raise InvalidProblemError(f"alibi_slopes: n_heads must be an int >= 0, got {n_heads!r}")
    n = int(n_heads)
    if n == 0:
        return np.zeros(0, np.float32)

    def power_of_two(m: int) -> list:
        return [2.0 ** (-8.0 * k / m) for k in range(1, m + 1)]

    m = 2 ** int(math.floor(math.log2(n)))
    s = power_of_two(m)
    if m < n:
        s += power_of_two(2 * m)[0::2][:n - m]
    return np.asarray(s, np.float64).astype(np.float32)


def _post_init(self, what: str) -> None:
    shape = check_shape(self.shape, what)
    if len(shape) != 4:
        raise InvalidProblemError(f"{what}: shape must be (B, Hq, Sq, Sk), got {shape}")
    if any(n > _I32_MAX for n in shape):
        raise UnsupportedError(f"{what}: extents must be < 2^31, got {shape}")
    object.__setattr__(self, "shape", shape)
    object.__setattr__(self, "dtype", check_dtype(self.dtype, DTYPES, what))
    if not isinstance(self.batched_slopes, bool):
        raise InvalidProblemError(f"{what}: batched_slopes must be a bool, got "
                                  f"{self.batched_slopes!r}")
    if self.align not in ALIGNS:
        raise InvalidProblemError(f"{what}: align must be 'bottom_right' or 'top_left', got "
                                  f"{self.align!r}")


@dataclass(frozen=True)
class AlibiDescriptor:
    """bias = alibi(slopes): bias ``shape`` (B, Hq, Sq, Sk) of ``dtype`` (f16 / bf16 / f32 /
    f64); slopes (Hq,) f32, or (B, Hq) with ``batched_slopes``; ``align`` "bottom_right"
    (flash-attn, default) or "top_left"."""

    shape: Tuple[int, ...]
    dtype: DType = float32
    batched_slopes: bool = False
    align: str = "bottom_right"

    def __post_init__(self):
        _post_init(self, "Alibi")

    @property
    def slopes_shape(self) -> Tuple[int, ...]:
        return self.shape[:2] if self.batched_slopes else self.shape[1:2]


@dataclass(frozen=True)
class AlibiBackwardDescriptor:
    """dslopes = Σ_{(b), i, j} dbias·(−|i + off − j|): dbias ``shape`` (B, Hq, Sq, Sk) of
    ``dtype``; dslopes f32 of the slopes' shape ((Hq,), or (B, Hq) with ``batched_slopes``)."""

    shape: Tuple[int, ...]
    dtype: DType = float32
    batched_slopes: bool = False
    align: str = "bottom_right"

    def __post_init__(self):
        _post_init(self, "AlibiBackward")

    @property
    def slopes_shape(self) -> Tuple[int, ...]:
        return self.shape[:2] if self.batched_slopes else self.shape[1:2]


@dataclass
class AlibiArgs:
    """slopes (f32, ``desc.slopes_shape``, any strides), bias (output, ``desc.shape``)."""

    slopes: object
    bias: object


@dataclass
class AlibiBackwardArgs:
    """dbias (``desc.shape``, any strides), dslopes (f32 output, ``desc.slopes_shape``)."""

    dbias: object
    dslopes: object


def _offset(desc) -> int:
    return desc.shape[3] - desc.shape[2] if desc.align == "bottom_right" else 0


def _vector_ok(v: TensorView, sk: int, vec: int) -> bool:
    """Whether (B, Hq, Sq, Sk) view ``v`` can be read / written in 16-byte vectors."""
    return (not v.ptr & 15 and sk % vec == 0 and (sk <= 1 or v.strides[3] == 1)
            and all(s % vec == 0 for s in v.strides[:3]))


def _precision(dt: DType) -> PrecisionGuarantee:
    ct = float64 if dt is float64 else float32
    return PrecisionGuarantee(math_precision=ct, accumulator=ct,
                              bit_stable_on_same_hardware=True, deterministic=True)


def _slope_strides(v: TensorView, batched: bool) -> Tuple[int, int]:
    """(batch stride, head stride) of a slopes-shaped view (batch stride 0 per head)."""
    return (v.strides[0], v.strides[1]) if batched else (0, v.strides[0])


class AlibiPlan(Plan):
    """The ALiBi bias (module docstring).  One thread per 16-byte vector (or element) of the
    bias; one write of the bias, no reads beyond the slopes; no workspace; deterministic."""

    descriptor = AlibiDescriptor

    def _plan(self) -> None:
        d = self.desc
        self._knobs = spec.AlibiKnobs(dtype=d.dtype.short)
        self._sku = KernelSku(OpCategory.ATTENTION, "alibi", d.dtype, self._arch,
                              BackendKind.CUTE_DSL, _precision(d.dtype), aux_element=float32,
                              template=spec.ALIBI_FW.name, knobs=freeze_knobs(self._knobs))

    def is_empty(self) -> bool:
        return prod(self.desc.shape) == 0

    def _bind(self, args: AlibiArgs):
        d = self.desc
        slopes = view_arg(args.slopes, "slopes", shape=d.slopes_shape, dtype=float32)
        bias = view_arg(args.bias, "bias", shape=d.shape, dtype=d.dtype, device=slopes.device)
        check_no_self_overlap(bias, "bias")
        check_disjoint(slopes, bias, "Alibi: bias overlaps slopes")
        return slopes, bias

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        slopes, bias = bound
        d = self.desc
        b, hq, sq, sk = d.shape
        v = spec.vec_of(self._knobs.dtype)
        vec = _vector_ok(bias, sk, v)
        upr = sk // v if vec else sk
        total = b * hq * sq * upr
        blocks = -(-total // spec.FW_THREADS)
        if blocks > _I32_MAX:
            raise UnsupportedError(f"alibi: {total} work items exceed the grid limit")
        sb, sh = _slope_strides(slopes, d.batched_slopes)
        kern = self._kernel(spec.ALIBI_FW, self._knobs, bias.device)
        kern.launch((blocks, 1, 1), [
            slopes.ptr, bias.ptr, spec.VEC if vec else 0, total, upr, hq, sq, sk, _offset(d),
            sb, sh, *bias.strides], stream)


class AlibiBackwardPlan(Plan):
    """The ALiBi slope gradient (module docstring): one read of dbias; deterministic;
    workspace ``nslopes · nchunks`` compute-type partials when a slope's rows are split over
    several CTAs (``workspace_size()``; 0 otherwise)."""

    descriptor = AlibiBackwardDescriptor

    def _plan(self) -> None:
        d = self.desc
        self._knobs = spec.AlibiBackwardKnobs(dtype=d.dtype.short)
        self._sku = KernelSku(OpCategory.ATTENTION, "alibi_backward", d.dtype, self._arch,
                              BackendKind.CUTE_DSL, _precision(d.dtype), aux_element=float32,
                              template=spec.ALIBI_BW.name, knobs=freeze_knobs(self._knobs))
        b, hq, sq, sk = d.shape
        self._nslopes = b * hq if d.batched_slopes else hq
        self._nrows = sq if d.batched_slopes else b * sq     # rows of dbias per slope
        if self._nslopes > _I32_MAX:
            raise UnsupportedError(f"AlibiBackward: {self._nslopes} slopes exceed 2^31 - 1")
        elems = self._nrows * sk
        nchunks = max(1, min(MAX_CHUNKS, self._nrows, -(-elems // CHUNK_ELEMENTS)))
        self._rpc = -(-self._nrows // nchunks) if self._nrows else 1
        self._nchunks = -(-self._nrows // self._rpc) if self._nrows else 1
        if self._nslopes * self._nchunks > _I32_MAX:
            raise UnsupportedError(f"AlibiBackward: {self._nslopes} slopes × {self._nchunks} "
                                   f"chunks exceed the grid limit")
        ct = 8 if d.dtype is float64 else 4
        self._ws = 0 if self._nchunks == 1 else align_up(self._nslopes * self._nchunks * ct)

    def workspace_size(self) -> int:
        return self._ws

    def is_empty(self) -> bool:
        # no slopes to write; a problem with slopes but no dbias elements still writes zeros
        return self._nslopes == 0

    def _bind(self, args: AlibiBackwardArgs):
        d = self.desc
        dbias = view_arg(args.dbias, "dbias", shape=d.shape, dtype=d.dtype)
        ds = view_arg(args.dslopes, "dslopes", shape=d.slopes_shape, dtype=float32,
                      device=dbias.device)
        check_no_self_overlap(ds, "dslopes")
        check_disjoint(dbias, ds, "AlibiBackward: dslopes overlaps dbias")
        return dbias, ds

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        dbias, ds = bound
        d = self.desc
        b, hq, sq, sk = d.shape
        v = spec.vec_of(self._knobs.dtype)
        vec = _vector_ok(dbias, sk, v)
        upr = sk // v if vec else sk
        if self._nchunks > 1:
            check_disjoint(TensorView(ws.ptr, (self._ws,), (1,), "u8", dbias.device), ds,
                           "AlibiBackward: the workspace overlaps dslopes")
        gb, gh = _slope_strides(ds, d.batched_slopes)
        direct = self._nchunks == 1
        flags = (spec.VEC if vec else 0) | (spec.DIRECT if direct else 0)
        kern = self._kernel(spec.ALIBI_BW, self._knobs, dbias.device)
        tail = [self._rpc, self._nrows, upr, hq, sq, sk, _offset(d), *dbias.strides, gb, gh]
        part = ws.ptr if not direct else 0
        kern.launch((self._nslopes * self._nchunks, 1, 1), [
            dbias.ptr, part, ds.ptr, spec.REDUCE, flags, self._nslopes, self._nchunks] + tail,
            stream)
        if not direct:
            kern.launch((-(-self._nslopes // spec.BW_THREADS), 1, 1), [
                dbias.ptr, part, ds.ptr, spec.FINISH, flags, self._nslopes, self._nchunks]
                + tail, stream)
