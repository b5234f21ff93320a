"""Rotary position embeddings (RoPE): RopePlan (forward), RopeBackwardPlan, the scaling variants
(:class:`RopeScaling`) and the host table builder :func:`rope_cos_sin`.

For x (B, S, H, D) — or a varlen batch (T, H, D), which needs ``position_ids`` (T,) — and each
token with table row ``p``::

    pairs (i1, i2) = (i, i + r/2)          layout "half" (GPT-NeoX), i < r/2
                   = (2i, 2i + 1)          layout "interleaved" (GPT-J)
    out[i1] = x[i1]·cos[p, i] − x[i2]·sin[p, i]
    out[i2] = x[i2]·cos[p, i] + x[i1]·sin[p, i]
    out[j]  = x[j]                          r <= j < D (pass-through; copied when out is not x)

with ``r = rotary_dim`` (even, ``<= D``; default D).  The backward (RopeBackwardPlan: dy → dx) is
the rotation by the opposite angle (sin negated), the same kernel with a run-time flag.  Table
rows: ``p = position_ids[b, s]`` (int32 / int64, (B, S) or (1, S) — one row for every
sequence — any strides, or (T,) for varlen) when given; otherwise ``p = s + seqlen_offset`` with
``seqlen_offset`` a Python int (checked on the host: ``0 <= seqlen_offset`` and
``S + seqlen_offset <= S_tab``) or a (B,) int32 device tensor (one offset per sequence,
decoding with a KV cache).  This is the formula of
``tests/_attention_ref.rope`` / ``rope_backward``.

Operands: x / out any strides with a unit-stride last dim (else UnsupportedError); out may be x
itself (same pointer and strides: in place, pass-through features untouched) but may not
overlap it otherwise, nor the tables, positions or status (InvalidProblemError).  cos / sin
(S_tab, r/2) of ``table_dtype`` (f32, or x's dtype; default f32, f64 for f64 x), any row stride,
unit last stride.  dtypes f16, bf16, f32, f64; math in f32 (f64 for f64 x), each output rounded
once.  No workspace; deterministic (every output element is written by one thread).

Out-of-range table rows: the plan cannot see device-side positions.  A position outside
``[0, S_tab)`` (position ids, or ``s + offsets[b]``) is never used to read the tables; that row's
rotary features are written as NaN (its pass-through features are copied as usual), and when the
Args' optional ``status`` (a device int32, >= 1 element) is given the kernel stores 1 into
``status[0]`` (it never clears it: zero it before the run).

Kernel (``specs/rope.py``): one thread per 16-byte vector unit (two x vectors for "half") when
x, out, the tables and every row stride are aligned and ``D``, ``r/2`` ("half") / ``r``
("interleaved") are multiples of the vector width ``16 / itemsize``; otherwise the same SKU's
scalar path (one pair per thread).  SKUs: dtype × table dtype × layout (14 per arch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ...common.status import status_view
from ...dtypes import DType, bfloat16, dtype as as_dtype, float16, float32, float64, int32, int64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, check_dtype, check_finite, prod, view_arg
from ...tensor import TensorView, check_shape
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace
from ..shape.layout import check_disjoint, check_no_self_overlap
from .checks import check_unit_last
from .specs import rope as spec

__all__ = [
    "RopeScaling", "rope_cos_sin", "RopeDescriptor", "RopeArgs", "RopePlan",
    "RopeBackwardDescriptor", "RopeBackwardArgs", "RopeBackwardPlan",
]

_I32_MAX = 2**31 - 1
DTYPES = (float16, bfloat16, float32, float64)
LAYOUTS = ("half", "interleaved")
SCALING_KINDS = ("none", "linear", "dynamic_ntk", "llama3")


# =============================================================================== tables
@dataclass(frozen=True)
class RopeScaling:
    """How :func:`rope_cos_sin` stretches the rotary frequencies (context-length extension).

    ``kind``:

    * ``"none"``: ``θ_i = base^(−2i/r)``, angle ``p·θ_i``.
    * ``"linear"`` (position interpolation): angle ``(p / factor)·θ_i``.
    * ``"dynamic_ntk"``: with ``L`` the table length (``seq_len``, or the largest position + 1)
      and ``L > original_max_position``, the base grows to
      ``base' = base·(factor·L/original_max_position − (factor − 1))^(r/(r − 2))``
      (unchanged for ``L <= original_max_position``); angle ``p·base'^(−2i/r)``.
    * ``"llama3"``: per frequency, with wavelength ``λ_i = 2π/θ_i``,
      ``λ_lo = original_max_position/low_freq_factor``,
      ``λ_hi = original_max_position/high_freq_factor``: ``θ_i`` unchanged when
      ``λ_i < λ_hi``; ``θ_i/factor`` when ``λ_i > λ_lo``; otherwise the blend
      ``(1 − w)·θ_i/factor + w·θ_i`` with ``w = (original_max_position/λ_i − low_freq_factor)
      / (high_freq_factor − low_freq_factor)``.

    ``factor`` > 0 (``linear`` / ``dynamic_ntk`` / ``llama3``); ``original_max_position`` a
    positive int (``dynamic_ntk`` / ``llama3``); ``low_freq_factor < high_freq_factor``
    (``llama3``, Llama 3.1's defaults 1 and 4 with factor 8 and 8192 positions)."""

    kind: str = "none"
    factor: float = 1.0
    original_max_position: Optional[int] = None
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0

    def __post_init__(self):
        if self.kind not in SCALING_KINDS:
            raise InvalidProblemError(f"RopeScaling: kind must be one of {SCALING_KINDS}, got "
                                      f"{self.kind!r}")
        f = check_finite(self.factor, "RopeScaling: factor")
        if f <= 0:
            raise InvalidProblemError(f"RopeScaling: factor must be > 0, got {f}")
        object.__setattr__(self, "factor", f)
        lo = check_finite(self.low_freq_factor, "RopeScaling: low_freq_factor")
        hi = check_finite(self.high_freq_factor, "RopeScaling: high_freq_factor")
        object.__setattr__(self, "low_freq_factor", lo)
        object.__setattr__(self, "high_freq_factor", hi)
        omp = self.original_max_position
        if self.kind in ("dynamic_ntk", "llama3"):
            if isinstance(omp, bool) or not isinstance(omp, int) or omp <= 0:
                raise InvalidProblemError(f"RopeScaling({self.kind}): original_max_position must "
                                          f"be a positive int, got {omp!r}")
        if self.kind == "llama3" and not (0 < lo < hi):
            raise InvalidProblemError(f"RopeScaling(llama3): needs 0 < low_freq_factor < "
                                      f"high_freq_factor, got {lo}, {hi}")


def _np_dtype(dt):
    """A numpy dtype for ``dt`` (numpy dtype or type, name, DType; bfloat16 through ml_dtypes)."""
    if isinstance(dt, (np.dtype, type)):
        try:
            dt = np.dtype(dt).name
        except TypeError:
            pass
    d = as_dtype(dt)
    if d not in DTYPES:
        raise UnsupportedError(f"rope_cos_sin: dtype {d.name} is not wired; wired: "
                               f"{', '.join(x.name for x in DTYPES)}")
    if d is bfloat16:
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(d.numpy)


def rope_cos_sin(positions_or_seq_len, rotary_dim: int, base: float = 10000.0,
                 scaling: Optional[RopeScaling] = None,
                 dtype=np.float32) -> Tuple[np.ndarray, np.ndarray]:
    """Host (numpy) rotary tables ``(cos, sin)``, each ``(n, rotary_dim / 2)``, for the
    positions ``0 .. seq_len − 1`` (an int) or the given positions (a 1-D sequence of numbers).

    Angles are computed in float64 — ``angle[p, i] = p·θ_i`` with ``θ_i = base^(−2i/r)`` changed
    by ``scaling`` as :class:`RopeScaling` documents — and cos / sin are rounded once to
    ``dtype`` (float32 default; float16, bfloat16 (ml_dtypes), float64).  ``rotary_dim`` even
    and > 0, ``base`` > 0.  No device is touched: upload the tables to pass them to the plans."""
    if isinstance(rotary_dim, bool) or not isinstance(rotary_dim, (int, np.integer)) \
            or rotary_dim <= 0 or rotary_dim % 2:
        raise InvalidProblemError(f"rope_cos_sin: rotary_dim must be a positive even int, got "
                                  f"{rotary_dim!r}")
    r = int(rotary_dim)
    base = check_finite(base, "rope_cos_sin: base")
    if base <= 0:
        raise InvalidProblemError(f"rope_cos_sin: base must be > 0, got {base}")
    if scaling is None:
        scaling = RopeScaling()
    if not isinstance(scaling, RopeScaling):
        raise InvalidProblemError(f"rope_cos_sin: scaling must be a RopeScaling, got "
                                  f"{type(scaling).__name__}")
    if isinstance(positions_or_seq_len, (int, np.integer)) and \
            not isinstance(positions_or_seq_len, bool):
        n = int(positions_or_seq_len)
        if n < 0:
            raise InvalidProblemError(f"rope_cos_sin: seq_len must be >= 0, got {n}")
        pos = np.arange(n, dtype=np.float64)
        length = n
    else:
        pos = np.asarray(positions_or_seq_len, dtype=np.float64)
        if pos.ndim != 1:
            raise InvalidProblemError(f"rope_cos_sin: positions must be 1-D, got shape "
                                      f"{pos.shape}")
        if not np.isfinite(pos).all():
            raise InvalidProblemError("rope_cos_sin: positions must be finite")
        length = int(math.floor(pos.max())) + 1 if pos.size else 0
    out_dt = _np_dtype(dtype)
    i2 = np.arange(0, r, 2, dtype=np.float64)
    theta = base ** (-i2 / r)
    k = scaling.kind
    if k == "linear":
        pos = pos / scaling.factor
    elif k == "dynamic_ntk":
        omp = scaling.original_max_position
        if length > omp and r > 2:
            grown = base * (scaling.factor * length / omp - (scaling.factor - 1.0)) ** (
                r / (r - 2.0))
            theta = grown ** (-i2 / r)
    elif k == "llama3":
        omp = float(scaling.original_max_position)
        lo, hi, f = scaling.low_freq_factor, scaling.high_freq_factor, scaling.factor
        wavelen = 2.0 * math.pi / theta
        w = (omp / wavelen - lo) / (hi - lo)
        blended = (1.0 - w) * theta / f + w * theta
        theta = np.where(wavelen < omp / hi, theta,
                         np.where(wavelen > omp / lo, theta / f, blended))
    ang = pos[:, None] * theta[None, :]
    return np.cos(ang).astype(out_dt), np.sin(ang).astype(out_dt)


# =========================================================================== descriptors
def _post_init(self, what: str) -> None:
    shape = check_shape(self.shape, what)
    if len(shape) not in (3, 4):
        raise InvalidProblemError(f"{what}: x must be (B, S, H, D) or varlen (T, H, D), got "
                                  f"shape {shape}")
    if any(n > _I32_MAX for n in shape):
        raise UnsupportedError(f"{what}: extents must be < 2^31, got {shape}")
    object.__setattr__(self, "shape", shape)
    dt = check_dtype(self.dtype, DTYPES, what)
    object.__setattr__(self, "dtype", dt)
    d = shape[-1]
    r = d if self.rotary_dim is None else self.rotary_dim
    if isinstance(r, bool) or not isinstance(r, int) or r < 0 or r % 2 or r > d:
        raise InvalidProblemError(f"{what}: rotary_dim must be an even int in [0, D = {d}], got "
                                  f"{self.rotary_dim!r}")
    object.__setattr__(self, "rotary_dim", r)
    if self.layout not in LAYOUTS:
        raise InvalidProblemError(f"{what}: layout must be 'half' or 'interleaved', got "
                                  f"{self.layout!r}")
    td = (float64 if dt is float64 else float32) if self.table_dtype is None else \
        as_dtype(self.table_dtype)
    if td.short not in spec.TABLES[dt.short]:
        raise UnsupportedError(f"{what}: cos / sin tables of {td.name} with x of {dt.name} are "
                               f"not wired; wired: "
                               f"{', '.join(as_dtype(t).name for t in spec.TABLES[dt.short])}")
    object.__setattr__(self, "table_dtype", td)


@dataclass(frozen=True)
class RopeDescriptor:
    """out = rope(x): x ``shape`` (B, S, H, D) or varlen (T, H, D), ``dtype`` (f16 / bf16 / f32 /
    f64), ``rotary_dim`` (even, <= D; None = D), ``layout`` ("half" | "interleaved"),
    ``table_dtype`` of cos / sin (None = f32, f64 for f64 x; or x's dtype)."""

    shape: Tuple[int, ...]
    dtype: DType = float32
    rotary_dim: Optional[int] = None
    layout: str = "half"
    table_dtype: Optional[DType] = None

    def __post_init__(self):
        _post_init(self, "Rope")

    @property
    def varlen(self) -> bool:
        return len(self.shape) == 3


@dataclass(frozen=True)
class RopeBackwardDescriptor:
    """dx = rope_backward(dy): the rotation by the opposite angle; fields as
    :class:`RopeDescriptor` (``shape`` is dy's)."""

    shape: Tuple[int, ...]
    dtype: DType = float32
    rotary_dim: Optional[int] = None
    layout: str = "half"
    table_dtype: Optional[DType] = None

    def __post_init__(self):
        _post_init(self, "RopeBackward")

    @property
    def varlen(self) -> bool:
        return len(self.shape) == 3


@dataclass
class RopeArgs:
    """x (input), cos / sin (S_tab, rotary_dim/2) tables, out (output; may be x: in place);
    position_ids ((B, S), (1, S) or varlen (T,) int32 / int64, optional; required for varlen x);
    seqlen_offset (a Python int, or a (B,) int32 device tensor; must be 0 with position_ids);
    status (optional int32 device word, set to 1 when a position is outside the table)."""

    x: object
    cos: object
    sin: object
    out: object
    position_ids: object = None
    seqlen_offset: object = 0
    status: object = None


@dataclass
class RopeBackwardArgs:
    """dy (incoming gradient), cos / sin, dx (output; may be dy); position_ids, seqlen_offset
    and status as :class:`RopeArgs`."""

    dy: object
    cos: object
    sin: object
    dx: object
    position_ids: object = None
    seqlen_offset: object = 0
    status: object = None


# ================================================================================= plans
def _same_view(a: TensorView, b: TensorView) -> bool:
    """True when ``a`` and ``b`` address the same elements in the same order."""
    if a.ptr != b.ptr or a.shape != b.shape:
        return False
    return all(n <= 1 or sa == sb for n, sa, sb in zip(a.shape, a.strides, b.strides))


def _int_scalar(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


class _RopeBase(Plan):
    """Shared select / check / launch of the forward and backward plans."""

    _fields = ("x", "out")
    _backward = False
    _op = "rope"

    def _plan(self) -> None:
        d = self.desc
        self._knobs = spec.RopeKnobs(dtype=d.dtype.short, table=d.table_dtype.short,
                                     layout=d.layout)
        ct = float64 if d.dtype is float64 else float32
        pg = PrecisionGuarantee(math_precision=ct, accumulator=ct,
                                bit_stable_on_same_hardware=True, deterministic=True)
        self._sku = KernelSku(OpCategory.ATTENTION, self._op, d.dtype, self._arch,
                              BackendKind.CUTE_DSL, pg, aux_element=d.table_dtype,
                              layout=d.layout, template=spec.ROPE.name,
                              knobs=freeze_knobs(self._knobs))
        if d.varlen:
            self._b, self._s = 1, d.shape[0]
        else:
            self._b, self._s = d.shape[0], d.shape[1]
        self._h, self._d = d.shape[-2], d.shape[-1]

    def is_empty(self) -> bool:
        return prod(self.desc.shape) == 0

    def _bind(self, args):
        d = self.desc
        src_name, dst_name = self._fields
        x = view_arg(getattr(args, src_name), src_name, shape=d.shape, dtype=d.dtype)
        dev = x.device
        out = view_arg(getattr(args, dst_name), dst_name, shape=d.shape, dtype=d.dtype,
                       device=dev)
        check_unit_last(x, src_name)
        check_unit_last(out, dst_name)
        check_no_self_overlap(out, dst_name)
        inplace = _same_view(x, out)
        if not inplace:
            check_disjoint(x, out, f"{type(self).__name__}: {dst_name} partially overlaps "
                                   f"{src_name} (only {dst_name} = {src_name}, in place, is "
                                   f"allowed)")
        half = d.rotary_dim // 2
        cos = view_arg(args.cos, "cos", dtype=d.table_dtype, device=dev)
        sin = view_arg(args.sin, "sin", dtype=d.table_dtype, device=dev)
        for name, t in (("cos", cos), ("sin", sin)):
            if t.ndim != 2 or t.shape[1] != half:
                raise InvalidProblemError(f"{name}: shape {t.shape} != (S_tab, rotary_dim/2 = "
                                          f"{half})")
            check_unit_last(t, name)
            check_disjoint(t, out, f"{type(self).__name__}: {dst_name} overlaps {name}")
        if cos.shape[0] != sin.shape[0]:
            raise InvalidProblemError(f"cos and sin have different table lengths "
                                      f"({cos.shape[0]} vs {sin.shape[0]})")
        stab = cos.shape[0]
        if stab > _I32_MAX:
            raise UnsupportedError(f"cos / sin: {stab} table rows exceed 2^31 - 1")
        pos, mode, pb, ps, off = self._positions(args, dev, stab, out, dst_name)
        sv = status_view(args.status, dev)
        if sv is not None:
            check_disjoint(sv, out, f"{type(self).__name__}: {dst_name} overlaps status")
        return x, out, cos, sin, pos, sv, mode, pb, ps, off, inplace, stab

    def _positions(self, args, dev: int, stab: int, out: TensorView, dst_name: str):
        """(view or None, position mode, pb, ps, off) of the Args' position source."""
        d = self.desc
        pid, so = args.position_ids, args.seqlen_offset
        if pid is not None:
            if not (_int_scalar(so) and int(so) == 0):
                raise InvalidProblemError("seqlen_offset must be 0 when position_ids are given")
            p = view_arg(pid, "position_ids", device=dev)
            if p.dtype not in (int32, int64):
                raise UnsupportedError(f"position_ids: dtype {p.dtype.name} is not wired; "
                                       f"wired: int32, int64")
            want = (self._s,) if d.varlen else (self._b, self._s)
            shared = not d.varlen and tuple(p.shape) == (1, self._s)   # one row for every b
            if tuple(p.shape) != want and not shared:
                raise InvalidProblemError(f"position_ids: shape {tuple(p.shape)} != {want}"
                                          + ("" if d.varlen else f" or (1, {self._s})"))
            check_disjoint(p, out, f"{type(self).__name__}: {dst_name} overlaps position_ids")
            mode = spec.POS_IDS32 if p.dtype is int32 else spec.POS_IDS64
            if d.varlen:
                return p, mode, 0, p.strides[0], 0
            return p, mode, 0 if shared else p.strides[0], p.strides[1], 0
        if d.varlen:
            raise InvalidProblemError("varlen x (T, H, D) needs position_ids (T,)")
        if _int_scalar(so):
            off = int(so)
            if self._s and d.rotary_dim and not (0 <= off and self._s + off <= stab):
                raise InvalidProblemError(f"seqlen_offset {off}: positions {off} .. "
                                          f"{off + self._s - 1} are outside the cos / sin table "
                                          f"of {stab} rows")
            if abs(off) > 2**62:
                raise UnsupportedError(f"seqlen_offset {off} does not fit an int64")
            return None, spec.POS_OFFSET, 0, 0, off
        if isinstance(so, (bool, float)):
            raise InvalidProblemError(f"seqlen_offset must be an int or an int32 device tensor, "
                                      f"got {so!r}")
        o = view_arg(so, "seqlen_offset", device=dev)
        if o.dtype is not int32:
            raise UnsupportedError(f"seqlen_offset: dtype {o.dtype.name} is not wired; wired: "
                                   f"int32 (B,) device tensor, or a Python int")
        if tuple(o.shape) != (self._b,):
            raise InvalidProblemError(f"seqlen_offset: shape {tuple(o.shape)} != ({self._b},)")
        check_disjoint(o, out, f"{type(self).__name__}: {dst_name} overlaps seqlen_offset")
        return o, spec.POS_OFFSETS, o.strides[0], 0, 0

    def _vector_ok(self, x: TensorView, out: TensorView, cos: TensorView,
                   sin: TensorView) -> bool:
        """Whether the 16-byte vector path can serve these operands."""
        d = self.desc
        k = self._knobs
        v = spec.vec_of(k.dtype)
        r, half = d.rotary_dim, d.rotary_dim // 2
        if self._d % v or (half % v if d.layout == "half" else r % v):
            return False
        if (x.ptr | out.ptr) & 15:
            return False
        if any(s % v for s in x.strides[:-1] + out.strides[:-1]):
            return False
        ta, tsz = spec.table_align(k), d.table_dtype.itemsize
        if r and ((cos.ptr | sin.ptr) % ta or (cos.strides[0] * tsz) % ta
                  or (sin.strides[0] * tsz) % ta):
            return False
        return True

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        x, out, cos, sin, pos, sv, mode, pb, ps, off, inplace, stab = bound
        d = self.desc
        r, half = d.rotary_dim, d.rotary_dim // 2
        vec = self._vector_ok(x, out, cos, sin)
        v = spec.vec_of(self._knobs.dtype)
        if vec:
            urot = half // v if d.layout == "half" else r // v
            upass = (self._d - r) // v
        else:
            urot, upass = half, self._d - r
        if inplace:
            upass = 0
        upr = urot + upass
        rows = self._b * self._s * self._h
        total = rows * upr
        if total == 0:
            return
        blocks = -(-total // spec.THREADS)
        if blocks > _I32_MAX:
            raise UnsupportedError(f"rope: {total} work items exceed the grid limit")
        flags = (mode << spec.POS_SHIFT) | (spec.BACKWARD if self._backward else 0) | (
            spec.VEC if vec else 0) | (spec.HAS_STATUS if sv is not None else 0)
        if d.varlen:
            xst = (0,) + tuple(x.strides[:2])
            ost = (0,) + tuple(out.strides[:2])
        else:
            xst, ost = tuple(x.strides[:3]), tuple(out.strides[:3])
        kern = self._kernel(spec.ROPE, self._knobs, x.device)
        kern.launch((blocks, 1, 1), [
            x.ptr, out.ptr, cos.ptr, sin.ptr, 0 if pos is None else pos.ptr,
            0 if sv is None else sv.ptr, flags, total, upr, urot, self._h, self._s, half, r,
            self._d, stab, *xst, *ost, cos.strides[0], sin.strides[0], pb, ps, off], stream)


class RopePlan(_RopeBase):
    """Rotary embedding forward (module docstring): out = rope(x, cos, sin).  dtypes f16 / bf16 /
    f32 / f64 (f32 math, f64 for f64); tables f32 or x's dtype; no workspace; deterministic;
    one read of x and the table rows, one write of out (rotary features only when in place).
    Positions outside the table: NaN rows and ``status[0] = 1`` (see the module docstring)."""

    descriptor = RopeDescriptor
    _fields = ("x", "out")


class RopeBackwardPlan(_RopeBase):
    """Rotary embedding backward: dx = rope_backward(dy, cos, sin), the rotation by the opposite
    angle (the forward kernel with sin negated); everything else as :class:`RopePlan`."""

    descriptor = RopeBackwardDescriptor
    _fields = ("dy", "dx")
    _backward = True
    _op = "rope_backward"
