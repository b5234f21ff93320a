"""Counter-based random numbers (Philox4x32-10), dropout and Gumbel-softmax.

Every value is a pure function of (seed, offset, flat output index): the stream is defined in
:mod:`baracuda_dsl.ops.random.kernels.philox` and is independent of the launch shape, so a draw of 1000
elements and a draw of 10 with the same (seed, offset) agree on the first 10.  ``seed`` is any
int in [−2⁶³, 2⁶⁴) (taken mod 2⁶⁴); ``offset`` (in Philox blocks of 4 words) is in [0, 2⁶²).
A draw of n elements consumes ``plan.blocks()`` = ceil(n·wpe/4) blocks; callers that chain
draws advance the offset by that much (``array_api.random.Generator`` does).

* :class:`RandomPlan` — uniform / normal / gumbel (f32, f16, bf16, f64), bernoulli (bool/uint8
  or a float dtype), randint (int32, int64), bits (uint32, uint64: the raw words).
* :class:`DropoutPlan` / :class:`DropoutBackwardPlan` — f32, f16, bf16, f64.
* :class:`GumbelSoftmaxPlan` / :class:`GumbelSoftmaxBackwardPlan` — composites over RandomPlan,
  the elementwise family, SoftmaxPlan (``ops/softmax/softmax.py``) and, for ``hard``, ArgReducePlan +
  OneHotPlan.

Operands of RandomPlan / DropoutPlan(+BW) are flat-contiguous views (any shape, C-order dense)
whose pointers are aligned to min(16, 4·itemsize) bytes (``MisalignedOperandError`` otherwise;
the namespace copies strided or misaligned operands).  Half types compute in f32, f64 in f64.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from ... import dtypes as _dt
from ...dtypes import DType
from ...errors import InvalidProblemError, UnsupportedError
from ...plan import (Plan, align_up, begin_select, check_dtype, check_finite, check_select,
                     new_plan, plan_arch, prod, view_arg)
from .specs import random as spec
from ...tensor import TensorView, check_shape, contiguous_strides
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace

DISTS = tuple(spec.FILL_DTYPES)
_BY_SHORT = {d.short: d for d in _dt.ALL_DTYPES}
FLOATS = _dt.FP4

U64 = 1 << 64
MAX_OFFSET = 1 << 62


def _seed_word(seed) -> int:
    """The seed as the signed Int64 bit pattern the kernels take."""
    if isinstance(seed, bool):
        raise InvalidProblemError(f"seed must be an int, got {seed!r}")
    if not isinstance(seed, int):
        try:
            import operator

            seed = operator.index(seed)
        except TypeError:
            raise InvalidProblemError(f"seed must be an int, got {seed!r}") from None
    if not -(1 << 63) <= seed < U64:
        raise InvalidProblemError(f"seed {seed} outside [-2**63, 2**64)")
    s = seed % U64
    return s - U64 if s >= (1 << 63) else s


def _check_stream(args) -> None:
    """Validate the Args' (seed, offset) words (InvalidProblemError as :func:`_seed_word` /
    :func:`_offset_word`)."""
    _seed_word(args.seed)
    _offset_word(args.offset)


def _grid(blocks: int):
    """Launch grid for ``blocks`` Philox blocks (BPT blocks per thread, THREADS per CTA)."""
    per = spec.THREADS * spec.BPT
    return ((blocks + per - 1) // per, 1, 1)


def _offset_word(offset) -> int:
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset < MAX_OFFSET:
        raise InvalidProblemError(f"offset must be an int in [0, 2**62), got {offset!r}")
    return offset


def keep_threshold(p: float) -> int:
    """thr = round(p·2³²): dropout keeps element i when word(i) ≥ thr (P(keep) = 1 − thr/2³²),
    bernoulli(p) is 1 when word(i) < thr."""
    return min(1 << 32, max(0, int(round(p * 4294967296.0))))


def _check_p(p, who: str) -> float:
    p = check_finite(p, f"{who}: p")
    if not 0.0 <= p <= 1.0:
        raise InvalidProblemError(f"{who}: p must be in [0, 1], got {p}")
    return p


def _flat_view(obj, name: str, shape, dtype: DType, device=None) -> TensorView:
    """A dense C-order view of ``shape`` aligned for the vectorised kernels."""
    al = min(16, 4 * dtype.itemsize)
    v = view_arg(obj, name, shape=shape, dtype=dtype, device=device, align=al)
    if prod(shape) > 1:
        for n, s, c in zip(v.shape, v.strides, contiguous_strides(shape)):
            if n != 1 and s != c:
                raise InvalidProblemError(f"{name}: must be C-contiguous (strides {v.strides}); "
                                          f"copy it first")
    return v


def _sku(op: str, dt: DType, arch, template: str, knobs: dict) -> KernelSku:
    ct = _dt.float64 if dt is _dt.float64 else (_dt.float32 if dt.kind == "f" else dt)
    pg = PrecisionGuarantee(math_precision=ct, accumulator=ct)
    return KernelSku(OpCategory.RANDOM, op, dt, arch, BackendKind.CUTE_DSL, pg,
                     template=template, knobs=tuple(sorted(knobs.items())))


# ============================================================================== RandomPlan
@dataclass(frozen=True)
class RandomDescriptor:
    """``dist`` ∈ uniform, normal, gumbel (f32/f16/bf16/f64), bernoulli (bool/uint8 or a float
    dtype), randint (int32/int64), bits (uint32/uint64) into an output of ``shape``/``dtype``."""

    shape: Tuple[int, ...]
    dist: str = "uniform"
    dtype: DType = _dt.float32

    def __post_init__(self):
        object.__setattr__(self, "shape", check_shape(self.shape, "Random"))
        if self.dist not in spec.FILL_DTYPES:
            raise InvalidProblemError(f"Random: unknown distribution {self.dist!r}; wired: "
                                      f"{', '.join(DISTS)}")
        d = _dt.dtype(self.dtype)
        short = "u8" if d in (_dt.bool_, _dt.uint8) else d.short
        allowed = spec.FILL_DTYPES[self.dist]
        if short not in allowed:
            names = ", ".join("bool, uint8" if s == "u8" else _BY_SHORT[s].name for s in allowed)
            raise UnsupportedError(f"Random {self.dist}: dtype {d.name} is not wired; wired: "
                                   f"{names}")
        object.__setattr__(self, "dtype", d)

    @property
    def kernel_dtype(self) -> str:
        return "u8" if self.dtype in (_dt.bool_, _dt.uint8) else self.dtype.short

    @property
    def words_per_element(self) -> int:
        return spec.words_per_element(self.dist, self.kernel_dtype)


@dataclass
class RandomArgs:
    """out: dense C-order output; seed / offset: the stream (module doc).  Run-time parameters:
    uniform [a, b) (low, high); normal a = mean, b = std; gumbel a = loc, b = scale;
    bernoulli ``p``; randint [low, high) (ints; high − low ≤ 2³² for int32)."""

    out: object
    seed: int = 0
    offset: int = 0
    a: float = 0.0
    b: float = 1.0
    p: float = 0.5
    low: int = 0
    high: Optional[int] = None


class RandomPlan(Plan):
    """Fill ``out`` from the Philox stream (seed, offset); one kernel, no workspace,
    deterministic (bit-identical for the same seed/offset on any launch shape).  Uniform draws
    give [low, high) (24/11/8/53 random bits for f32/f16/bf16/f64); normal uses Box–Muller;
    randint uses Lemire's multiply-shift (relative bias ≤ span/2³² for int32, span/2⁶⁴ int64)."""

    @classmethod
    def select(cls, desc: RandomDescriptor, pref=None) -> "RandomPlan":
        plan = begin_select(cls, desc, pref, RandomDescriptor, plan_arch, "RandomPlan")
        plan._knobs = dict(dist=desc.dist, dtype=desc.kernel_dtype)
        plan._n = prod(desc.shape)
        plan._sku = _sku(desc.dist, desc.dtype, plan._arch, spec.RANDOM_FILL.name, plan._knobs)
        return plan

    def blocks(self) -> int:
        """Philox blocks this draw consumes (advance the offset by this for the next draw)."""
        return spec.blocks_for(self._n, self.desc.words_per_element)

    def is_empty(self) -> bool:
        return self._n == 0

    def _scalars(self, args: RandomArgs):
        d = self.desc
        seed = _seed_word(args.seed)
        off = _offset_word(args.offset)
        a, b, ia, ib = 0.0, 1.0, 0, 0
        if d.dist in ("uniform", "normal", "gumbel"):
            a = check_finite(args.a, f"Random {d.dist}: a")
            b = check_finite(args.b, f"Random {d.dist}: b")
            if d.dist == "uniform" and not a < b:
                raise InvalidProblemError(f"Random uniform: need low < high, got [{a}, {b})")
            if d.dist != "uniform" and b < 0:
                raise InvalidProblemError(f"Random {d.dist}: scale/std must be >= 0, got {b}")
        elif d.dist == "bernoulli":
            ia = keep_threshold(_check_p(args.p, "Random bernoulli"))
        elif d.dist == "randint":
            lo, hi = args.low, args.high
            if hi is None:
                lo, hi = 0, lo
            for v in (lo, hi):
                if isinstance(v, bool) or not isinstance(v, int):
                    raise InvalidProblemError(f"Random randint: bounds must be ints, got {v!r}")
            bits = 8 * d.dtype.itemsize
            if not (-(1 << (bits - 1)) <= lo < hi <= (1 << (bits - 1))):
                raise InvalidProblemError(f"Random randint: need {d.dtype.name} bounds with "
                                          f"low < high, got [{lo}, {hi})")
            span = hi - lo
            ia = lo
            ib = span % U64
            ib = ib - U64 if ib >= (1 << 63) else ib
        return seed, off, a, b, ia, ib

    def can_implement(self, args) -> None:
        if not isinstance(args, RandomArgs):
            raise InvalidProblemError(f"RandomPlan.run needs RandomArgs, got {type(args).__name__}")
        _flat_view(args.out, "out", self.desc.shape, self.desc.dtype)
        self._scalars(args)

    def _launch(self, args, stream: int, ws) -> None:
        out = _flat_view(args.out, "out", self.desc.shape, self.desc.dtype)
        seed, off, a, b, ia, ib = self._scalars(args)
        lk = self._kernel(spec.RANDOM_FILL, self._knobs, out.device)
        lk.launch(_grid(self.blocks()), [out.ptr, self._n, seed, off, a, b, ia, ib], stream)


# ============================================================================== Dropout
@dataclass(frozen=True)
class DropoutDescriptor:
    """y = x·keep/(1−p), keep(i) = word(i) ≥ round(p·2³²) (P(keep) = 1 − p up to 2⁻³²);
    ``dtype`` ∈ f32, f16, bf16, f64; 0 ≤ p ≤ 1 (p = 0 copies, p = 1 gives zeros)."""

    shape: Tuple[int, ...]
    dtype: DType
    p: float = 0.5

    def __post_init__(self):
        object.__setattr__(self, "shape", check_shape(self.shape, "Dropout"))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, FLOATS, "Dropout"))
        object.__setattr__(self, "p", _check_p(self.p, "Dropout"))


@dataclass
class DropoutArgs:
    """x, y: dense C-order views of ``shape``; mask: optional uint8/bool output (1 = kept)."""

    x: object
    y: object
    seed: int = 0
    offset: int = 0
    mask: object = None


@dataclass(frozen=True)
class DropoutBackwardDescriptor(DropoutDescriptor):
    """dx = dy·keep/(1−p) with keep regenerated from (seed, offset) (same p as the forward)."""


@dataclass
class DropoutBackwardArgs:
    dy: object
    dx: object
    seed: int = 0
    offset: int = 0


class _DropoutBase(Plan):
    _desc_type = DropoutDescriptor

    @classmethod
    def select(cls, desc, pref=None):
        plan = begin_select(cls, desc, pref, cls._desc_type, plan_arch)
        plan._knobs = dict(dtype=desc.dtype.short)
        plan._n = prod(desc.shape)
        plan._sku = _sku("dropout", desc.dtype, plan._arch, spec.DROPOUT.name, plan._knobs)
        return plan

    def blocks(self) -> int:
        """Philox blocks consumed (one word per element)."""
        return spec.blocks_for(self._n, 1)

    def is_empty(self) -> bool:
        return self._n == 0

    def _go(self, x, y, mask, seed, offset, stream):
        d = self.desc
        # p = 1 drops everything (select, not multiply), so the scale is never used there
        scale = 0.0 if d.p >= 1.0 else 1.0 / (1.0 - d.p)
        lk = self._kernel(spec.DROPOUT, self._knobs, x.device)
        lk.launch(_grid(self.blocks()),
                  [x.ptr, y.ptr, mask.ptr if mask is not None else 0, self._n,
                   _seed_word(seed), _offset_word(offset), keep_threshold(d.p), scale,
                   1 if mask is not None else 0], stream)

    def _views(self, args):
        """(input, output, mask or None) views of the Args."""
        raise NotImplementedError

    def can_implement(self, args) -> None:
        self._views(args)

    def _launch(self, args, stream: int, ws) -> None:
        x, y, m = self._views(args)
        self._go(x, y, m, args.seed, args.offset, stream)


class DropoutPlan(_DropoutBase):
    """Dropout forward: one read of x, one write of y (+ the optional uint8 mask), vectorised;
    no workspace; deterministic in (seed, offset)."""

    def _views(self, args):
        if not isinstance(args, DropoutArgs):
            raise InvalidProblemError(f"DropoutPlan.run needs DropoutArgs, got "
                                      f"{type(args).__name__}")
        d = self.desc
        x = _flat_view(args.x, "x", d.shape, d.dtype)
        y = _flat_view(args.y, "y", d.shape, d.dtype, x.device)
        m = None
        if args.mask is not None:
            mv = view_arg(args.mask, "mask", shape=d.shape, device=x.device, align=4)
            if mv.dtype not in (_dt.uint8, _dt.bool_):
                raise UnsupportedError(f"mask: dtype {mv.dtype.name}; wired: uint8, bool")
            m = _flat_view(args.mask, "mask", d.shape, mv.dtype, x.device)
        _check_stream(args)
        return x, y, m


class DropoutBackwardPlan(_DropoutBase):
    """dx = dy·keep/(1−p), keep regenerated from (seed, offset): one read + one write."""

    _desc_type = DropoutBackwardDescriptor

    def _views(self, args):
        if not isinstance(args, DropoutBackwardArgs):
            raise InvalidProblemError(f"DropoutBackwardPlan.run needs DropoutBackwardArgs, got "
                                      f"{type(args).__name__}")
        d = self.desc
        dy = _flat_view(args.dy, "dy", d.shape, d.dtype)
        dx = _flat_view(args.dx, "dx", d.shape, d.dtype, dy.device)
        _check_stream(args)
        return dy, dx, None


# ============================================================================== Gumbel-softmax
def _softmax_mod():
    try:
        from ..softmax import softmax
    except ImportError as e:  # written in parallel (helper H1)
        raise UnsupportedError(f"GumbelSoftmax needs ops/softmax/softmax.py (SoftmaxPlan): {e}") \
            from None
    return softmax


@dataclass(frozen=True)
class GumbelSoftmaxDescriptor:
    """y_soft = softmax((x + g)/τ) along ``axis``, g ~ Gumbel(0, 1) from the Philox stream;
    ``hard``: y = one_hot(argmax) (forward value; gradient straight-through = the soft one).
    dtype ∈ f32, f16, bf16, f64; τ > 0."""

    shape: Tuple[int, ...]
    dtype: DType
    axis: int = -1
    tau: float = 1.0
    hard: bool = False

    def __post_init__(self):
        shape = check_shape(self.shape, "GumbelSoftmax")
        if len(shape) == 0:
            raise InvalidProblemError("GumbelSoftmax: needs rank >= 1")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", check_dtype(self.dtype, FLOATS, "GumbelSoftmax"))
        from ...plan import norm_axis

        object.__setattr__(self, "axis", norm_axis(self.axis, len(shape), "GumbelSoftmax"))
        tau = check_finite(self.tau, "GumbelSoftmax: tau")
        if not tau > 0:
            raise InvalidProblemError(f"GumbelSoftmax: tau must be > 0, got {tau}")
        object.__setattr__(self, "tau", tau)
        object.__setattr__(self, "hard", bool(self.hard))


@dataclass
class GumbelSoftmaxArgs:
    """x (logits), y (output; dense C-order when ``hard``), seed/offset of the noise, y_soft
    (optional: the soft sample, which the backward needs)."""

    x: object
    y: object
    seed: int = 0
    offset: int = 0
    y_soft: object = None


@dataclass(frozen=True)
class GumbelSoftmaxBackwardDescriptor:
    """dx = (1/τ)·y_soft·(dy − Σ_axis dy·y_soft) (hard: straight-through, the same)."""

    shape: Tuple[int, ...]
    dtype: DType
    axis: int = -1
    tau: float = 1.0

    def __post_init__(self):
        GumbelSoftmaxDescriptor(self.shape, self.dtype, self.axis, self.tau)
        object.__setattr__(self, "shape", check_shape(self.shape, "GumbelSoftmax"))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, FLOATS, "GumbelSoftmax"))
        from ...plan import norm_axis

        object.__setattr__(self, "axis", norm_axis(self.axis, len(self.shape), "GumbelSoftmax"))
        object.__setattr__(self, "tau", float(self.tau))


@dataclass
class GumbelSoftmaxBackwardArgs:
    dy: object
    y_soft: object
    dx: object


class GumbelSoftmaxPlan(Plan):
    """Composite over a workspace buffer Z laid out with ``axis`` last (shape P = the other dims
    in order, then the axis; dense): Z = gumbel noise with scale 1/τ (RandomPlan, flat index
    of Z, i.e. the axis-last C order — the same as x's C order when axis = −1); Z = x·(1/τ) + Z
    (elementwise fma through x's strides); then

    * soft: y = softmax(Z) along the axis (SoftmaxPlan), straight into y when y has unit stride
      along the axis, else into a second buffer S (layout P) + an elementwise copy into y;
    * hard: idx = argmax(Z) (ArgReducePlan, int64 buffer), S = one_hot(idx) (layout P), copied
      into y unless y is dense with axis = −1 (then one_hot writes y directly).

    ``y_soft`` (optional) gets softmax(Z) the same way.  Precision: Z in x's dtype, softmax in
    f32 (f64 for f64).  Workspace: ``workspace_size()`` (≤ 2 buffers of x's size + the argmax
    index/scratch).  Deterministic in (seed, offset)."""

    @classmethod
    def select(cls, desc: GumbelSoftmaxDescriptor, pref=None) -> "GumbelSoftmaxPlan":
        pref = check_select(desc, pref, GumbelSoftmaxDescriptor, "GumbelSoftmaxPlan")
        sm = _softmax_mod()
        from ..elementwise.elementwise import ElementwiseDescriptor, ElementwisePlan

        plan = new_plan(cls, desc, pref, plan_arch)
        plan._n = prod(desc.shape)
        ax = desc.axis
        shp = desc.shape
        rank = len(shp)
        perm = tuple(d for d in range(rank) if d != ax) + (ax,)
        plan._pshape = tuple(shp[d] for d in perm)
        pstr = contiguous_strides(plan._pshape)
        st = [0] * rank
        for k, d in enumerate(perm):
            st[d] = pstr[k]
        plan._vstrides = tuple(st)           # Z / S seen in x's dim order
        plan._noise = RandomPlan.select(RandomDescriptor(plan._pshape, "gumbel", desc.dtype),
                                        pref)
        plan._fma = ElementwisePlan.select(ElementwiseDescriptor(
            "fma", (shp, None, shp), desc.dtype), pref)
        plan._copy = ElementwisePlan.select(ElementwiseDescriptor("copy", (shp,), desc.dtype),
                                            pref)
        plan._soft = sm.SoftmaxPlan.select(sm.SoftmaxDescriptor(shp, desc.dtype, ax), pref)
        buf = align_up(plan._n * desc.dtype.itemsize)
        plan._buf = buf
        ws = 2 * buf
        if desc.hard:
            from ..indexing.indexing import OneHotDescriptor, OneHotPlan
            from ..reduction.reductions import ArgReducePlan, ReduceDescriptor

            lead = plan._pshape[:-1]
            plan._arg = ArgReducePlan.select(ReduceDescriptor(shp, (ax,), "argmax", desc.dtype),
                                             pref)
            plan._onehot = OneHotPlan.select(OneHotDescriptor(lead, shp[ax], _dt.int64,
                                                              desc.dtype), pref)
            plan._idx_bytes = align_up(max(prod(lead), 1) * 8)
            ws += plan._idx_bytes + align_up(plan._arg.workspace_size())
        plan._ws = ws
        plan._sku = plan._noise.sku()
        return plan

    def blocks(self) -> int:
        """Philox blocks the noise consumes."""
        return self._noise.blocks()

    def workspace_size(self) -> int:
        return self._ws

    def is_empty(self) -> bool:
        return self._n == 0

    def _views(self, args):
        if not isinstance(args, GumbelSoftmaxArgs):
            raise InvalidProblemError(f"GumbelSoftmaxPlan.run needs GumbelSoftmaxArgs, got "
                                      f"{type(args).__name__}")
        d = self.desc
        x = view_arg(args.x, "x", shape=d.shape, dtype=d.dtype)
        y = view_arg(args.y, "y", shape=d.shape, dtype=d.dtype, device=x.device)
        ys = view_arg(args.y_soft, "y_soft", shape=d.shape, dtype=d.dtype, device=x.device,
                      optional=True)
        for v, name in ((y, "y"), (ys, "y_soft")):
            if v is not None:
                for n, s in zip(v.shape, v.strides):
                    if s == 0 and n > 1:
                        raise InvalidProblemError(f"{name}: an output may not have a zero "
                                                  f"(broadcast) stride")
        _check_stream(args)
        return x, y, ys

    def can_implement(self, args) -> None:
        self._views(args)

    def _direct_soft(self, zv: TensorView, v: TensorView) -> bool:
        """True when SoftmaxPlan can write ``v`` itself (unit stride along the axis, batch dims
        that collapse to its three strided groups)."""
        ax = self.desc.axis
        if not (v.shape[ax] <= 1 or v.strides[ax] == 1):
            return False
        try:
            self._soft.can_implement(_softmax_mod().SoftmaxArgs(zv, v))
        except UnsupportedError:
            return False
        return True

    def run(self, args, stream=None, workspace=None) -> None:
        from ...runtime.stream import stream_handle

        x, y, ys = self._views(args)
        ws = self.check_workspace(workspace)
        if self.is_empty():
            return
        st = stream_handle(stream)
        d = self.desc
        sm = _softmax_mod()
        from ..elementwise.elementwise import ElementwiseArgs

        def buf_view(off, shape, strides, dt):
            return TensorView._trusted(ws.ptr + off, tuple(shape), tuple(strides), dt,
                                       x.device, None)

        zp = buf_view(0, self._pshape, contiguous_strides(self._pshape), d.dtype)
        zv = buf_view(0, d.shape, self._vstrides, d.dtype)
        sp = buf_view(self._buf, self._pshape, contiguous_strides(self._pshape), d.dtype)
        sv = buf_view(self._buf, d.shape, self._vstrides, d.dtype)
        self._noise.run(RandomArgs(zp, args.seed, args.offset, a=0.0, b=1.0 / d.tau), st)
        self._fma.run(ElementwiseArgs([x, 1.0 / d.tau, zv], [zv]), st)

        def soft_into(t):
            if self._direct_soft(zv, t):
                self._soft.run(sm.SoftmaxArgs(zv, t), st)
            else:
                self._soft.run(sm.SoftmaxArgs(zv, sv), st)
                self._copy.run(ElementwiseArgs([sv], [t]), st)

        if ys is not None:
            soft_into(ys)
        if not d.hard:
            soft_into(y)
            return
        from ..indexing.indexing import OneHotArgs
        from ..reduction.reductions import ReduceArgs

        lead = self._pshape[:-1]
        ioff = 2 * self._buf
        idx = buf_view(ioff, lead, contiguous_strides(lead), _dt.int64)
        rest = Workspace(ws.ptr + ioff + self._idx_bytes,
                         ws.nbytes - ioff - self._idx_bytes, None)
        self._arg.run(ReduceArgs(zv, indices=idx), st, rest if rest.nbytes else None)
        dense_last = (d.axis == len(d.shape) - 1 and
                      all(s == c for n, s, c in zip(y.shape, y.strides,
                                                    contiguous_strides(d.shape)) if n > 1))
        if dense_last:
            self._onehot.run(OneHotArgs(idx, y), st)
        else:
            self._onehot.run(OneHotArgs(idx, sp), st)
            self._copy.run(ElementwiseArgs([sv], [y]), st)

    def _launch(self, args, stream, ws):  # pragma: no cover - run() is overridden
        raise NotImplementedError


class GumbelSoftmaxBackwardPlan(Plan):
    """dx = (1/τ)·softmax_bw(dy, y_soft): SoftmaxBackwardPlan then an in-place scale by 1/τ
    (elementwise affine).  Workspace: the softmax backward's."""

    @classmethod
    def select(cls, desc: GumbelSoftmaxBackwardDescriptor, pref=None):
        pref = check_select(desc, pref, GumbelSoftmaxBackwardDescriptor,
                            "GumbelSoftmaxBackwardPlan")
        sm = _softmax_mod()
        from ..elementwise.elementwise import ElementwiseDescriptor, ElementwisePlan

        plan = new_plan(cls, desc, pref, plan_arch)
        plan._n = prod(desc.shape)
        plan._bw = sm.SoftmaxBackwardPlan.select(sm.SoftmaxBackwardDescriptor(
            desc.shape, desc.dtype, desc.axis), pref)
        plan._scale = None
        if desc.tau != 1.0:
            plan._scale = ElementwisePlan.select(ElementwiseDescriptor(
                "affine", (desc.shape,), desc.dtype, None, (1.0 / desc.tau, 0.0)), pref)
        plan._sku = plan._bw.sku()
        return plan

    def workspace_size(self) -> int:
        return self._bw.workspace_size()

    def is_empty(self) -> bool:
        return self._n == 0

    def can_implement(self, args) -> None:
        sm = _softmax_mod()
        if not isinstance(args, GumbelSoftmaxBackwardArgs):
            raise InvalidProblemError("GumbelSoftmaxBackwardPlan.run needs "
                                      "GumbelSoftmaxBackwardArgs")
        self._bw.can_implement(sm.SoftmaxBackwardArgs(args.dy, args.y_soft, args.dx))

    def run(self, args, stream=None, workspace=None) -> None:
        from ...runtime.stream import stream_handle

        sm = _softmax_mod()
        self.can_implement(args)
        if self.is_empty():
            return
        st = stream_handle(stream)
        self._bw.run(sm.SoftmaxBackwardArgs(args.dy, args.y_soft, args.dx), st, workspace)
        if self._scale is not None:
            from ..elementwise.elementwise import ElementwiseArgs

            self._scale.run(ElementwiseArgs([args.dx], [args.dx]), st)

    def _launch(self, args, stream, ws):  # pragma: no cover - run() is overridden
        raise NotImplementedError
