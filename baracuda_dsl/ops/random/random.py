"""Counter-based random numbers (Philox4x32-10), dropout and Gumbel-softmax.

Every value is a pure function of (seed, offset, flat output index): the stream is defined in
:mod:`baracuda_dsl.blocks.philox` and is independent of the launch shape, so a draw of 1000
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
from ...jit import freeze_knobs
from ...plan import Plan, align_up, check_dtype, check_finite, norm_axis, prod, view_arg
from ...tensor import TensorView, check_shape, contiguous_strides
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace
from .specs import random as spec

DISTS = tuple(spec.FILL_DTYPES)
_BY_SHORT = {d.short: d for d in _dt.ALL_DTYPES}
FLOATS = _dt.FP4

U64 = 1 << 64
MAX_OFFSET = 1 << 62


def seed_word(seed) -> int:
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
    """Validate the Args' (seed, offset) words (InvalidProblemError as :func:`seed_word` /
    :func:`offset_word`)."""
    seed_word(args.seed)
    offset_word(args.offset)


def _grid(blocks: int):
    """Launch grid for ``blocks`` Philox blocks (BPT blocks per thread, THREADS per CTA)."""
    per = spec.THREADS * spec.BPT
    return ((blocks + per - 1) // per, 1, 1)


def offset_word(offset) -> int:
    """The Philox block offset (0 <= offset < 2⁶²) the kernels take; InvalidProblemError else."""
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


def _sku(plan: Plan, op: str, template, knobs) -> KernelSku:
    """The KernelSku of a random plan (``plan.desc.dtype``): computed in f32 for floats, f64 for
    f64, exactly for the integer draws."""
    dt = plan.desc.dtype
    ct = _dt.float64 if dt is _dt.float64 else (_dt.float32 if dt.kind == "f" else dt)
    pg = PrecisionGuarantee(math_precision=ct, accumulator=ct)
    return KernelSku(OpCategory.RANDOM, op, dt, plan._arch, BackendKind.CUTE_DSL, pg,
                     template=template.name, knobs=freeze_knobs(knobs))


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

    #: each draw comes with a new (seed, offset): a launch record would rarely repeat
    recordable = False

    descriptor = RandomDescriptor

    def _plan(self) -> None:
        d = self.desc
        self._knobs = spec.RandomFillKnobs(dist=d.dist, dtype=d.kernel_dtype)
        self._n = prod(d.shape)
        self._sku = _sku(self, d.dist, spec.RANDOM_FILL, self._knobs)

    def blocks(self) -> int:
        """Philox blocks this draw consumes (advance the offset by this for the next draw)."""
        return spec.blocks_for(self._n, self.desc.words_per_element)

    def is_empty(self) -> bool:
        return self._n == 0

    def _scalars(self, args: RandomArgs):
        d = self.desc
        seed = seed_word(args.seed)
        off = offset_word(args.offset)
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

    def _bind(self, args):
        if not isinstance(args, RandomArgs):
            raise InvalidProblemError(f"RandomPlan.run needs RandomArgs, got {type(args).__name__}")
        return _flat_view(args.out, "out", self.desc.shape, self.desc.dtype), self._scalars(args)

    def _launch(self, bound, stream: int, ws) -> None:
        out, scalars = bound
        lk = self._kernel(spec.RANDOM_FILL, self._knobs, out.device)
        lk.launch(_grid(self.blocks()), [out.ptr, self._n, *scalars], stream)


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
    """Shared plan and launch of the dropout forward / backward: the Args (``_args_type``) name
    their input and output in ``_io``; ``_mask`` gives the optional mask output."""

    #: each draw comes with a new (seed, offset): a launch record would rarely repeat
    recordable = False

    _args_type: type = object
    _io = ("x", "y")

    def _plan(self) -> None:
        d = self.desc
        self._knobs = spec.DropoutKnobs(dtype=d.dtype.short)
        self._n = prod(d.shape)
        self._sku = _sku(self, "dropout", spec.DROPOUT, self._knobs)

    def blocks(self) -> int:
        """Philox blocks consumed (one word per element)."""
        return spec.blocks_for(self._n, 1)

    def is_empty(self) -> bool:
        return self._n == 0

    def _mask(self, args, device: int):
        """The optional mask output view (None: none, as for the backward)."""
        return None

    def _bind(self, args):
        if not isinstance(args, self._args_type):
            raise InvalidProblemError(f"{type(self).__name__}.run needs "
                                      f"{self._args_type.__name__}, got {type(args).__name__}")
        d = self.desc
        a, b = self._io
        x = _flat_view(getattr(args, a), a, d.shape, d.dtype)
        y = _flat_view(getattr(args, b), b, d.shape, d.dtype, x.device)
        return (x, y, self._mask(args, x.device), seed_word(args.seed),
                offset_word(args.offset))

    def _launch(self, bound, stream: int, ws) -> None:
        x, y, mask, seed, offset = bound
        d = self.desc
        # p = 1 drops everything (select, not multiply), so the scale is never used there
        scale = 0.0 if d.p >= 1.0 else 1.0 / (1.0 - d.p)
        lk = self._kernel(spec.DROPOUT, self._knobs, x.device)
        lk.launch(_grid(self.blocks()),
                  [x.ptr, y.ptr, mask.ptr if mask is not None else 0, self._n, seed, offset,
                   keep_threshold(d.p), scale, 1 if mask is not None else 0], stream)


class DropoutPlan(_DropoutBase):
    """Dropout forward: one read of x, one write of y (+ the optional uint8 mask), vectorised;
    no workspace; deterministic in (seed, offset)."""

    descriptor = DropoutDescriptor
    _args_type = DropoutArgs

    def _mask(self, args, device: int):
        if args.mask is None:
            return None
        d = self.desc
        mv = view_arg(args.mask, "mask", shape=d.shape, device=device, align=4)
        if mv.dtype not in (_dt.uint8, _dt.bool_):
            raise UnsupportedError(f"mask: dtype {mv.dtype.name}; wired: uint8, bool")
        return _flat_view(args.mask, "mask", d.shape, mv.dtype, device)


class DropoutBackwardPlan(_DropoutBase):
    """dx = dy·keep/(1−p), keep regenerated from (seed, offset): one read + one write."""

    descriptor = DropoutBackwardDescriptor
    _args_type = DropoutBackwardArgs
    _io = ("dy", "dx")


# ============================================================================== Gumbel-softmax
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

    #: each draw comes with a new (seed, offset): a launch record would rarely repeat
    recordable = False

    descriptor = GumbelSoftmaxDescriptor

    def _plan(self) -> None:
        from ..elementwise import ElementwiseDescriptor, ElementwisePlan
        from ..softmax import SoftmaxDescriptor, SoftmaxPlan

        d, pref = self.desc, self.pref
        self._n = prod(d.shape)
        ax = d.axis
        shp = d.shape
        rank = len(shp)
        perm = tuple(k for k in range(rank) if k != ax) + (ax,)
        self._pshape = tuple(shp[k] for k in perm)
        pstr = contiguous_strides(self._pshape)
        st = [0] * rank
        for k, dim in enumerate(perm):
            st[dim] = pstr[k]
        self._vstrides = tuple(st)           # Z / S seen in x's dim order
        self._noise = RandomPlan.select(RandomDescriptor(self._pshape, "gumbel", d.dtype), pref)
        # z + (1/τ)·x·1 with 1/τ a compute-precision parameter (a scalar operand would be
        # rounded to the value dtype: 1/0.3 in bf16 is 0.4 % off); the 1 is exact in every dtype
        self._fma = ElementwisePlan.select(ElementwiseDescriptor(
            "addcmul", (shp, shp, None), d.dtype, None, (1.0 / d.tau,)), pref)
        self._copy = ElementwisePlan.select(ElementwiseDescriptor("copy", (shp,), d.dtype), pref)
        self._soft = SoftmaxPlan.select(SoftmaxDescriptor(shp, d.dtype, ax), pref)
        self._buf = align_up(self._n * d.dtype.itemsize)
        ws = 2 * self._buf
        if d.hard:
            from ..indexing.indexing import OneHotDescriptor, OneHotPlan
            from ..reduction import ArgReducePlan, ReduceDescriptor

            lead = self._pshape[:-1]
            self._arg = ArgReducePlan.select(ReduceDescriptor(shp, (ax,), "argmax", d.dtype), pref)
            self._onehot = OneHotPlan.select(OneHotDescriptor(lead, shp[ax], _dt.int64, d.dtype),
                                             pref)
            self._idx_bytes = align_up(max(prod(lead), 1) * 8)
            ws += self._idx_bytes + align_up(self._arg.workspace_size())
        self._ws = ws
        self._sku = self._noise.sku()

    def blocks(self) -> int:
        """Philox blocks the noise consumes."""
        return self._noise.blocks()

    def workspace_size(self) -> int:
        return self._ws

    def is_empty(self) -> bool:
        return self._n == 0

    def _bind(self, args):
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
        return x, y, ys, args.seed, args.offset

    def _direct_soft(self, zv: TensorView, v: TensorView) -> bool:
        """True when SoftmaxPlan can write ``v`` itself (unit stride along the axis, batch dims
        that collapse to its three strided groups)."""
        from ..softmax import SoftmaxArgs

        ax = self.desc.axis
        if not (v.shape[ax] <= 1 or v.strides[ax] == 1):
            return False
        try:
            self._soft.can_implement(SoftmaxArgs(zv, v))
        except UnsupportedError:
            return False
        return True

    def _launch(self, bound, st: int, ws: Workspace) -> None:
        from ..elementwise import ElementwiseArgs
        from ..softmax import SoftmaxArgs

        x, y, ys, seed, offset = bound
        d = self.desc

        def buf_view(off, shape, strides, dt):
            return TensorView._trusted(ws.ptr + off, tuple(shape), tuple(strides), dt,
                                       x.device, None)

        zp = buf_view(0, self._pshape, contiguous_strides(self._pshape), d.dtype)
        zv = buf_view(0, d.shape, self._vstrides, d.dtype)
        sp = buf_view(self._buf, self._pshape, contiguous_strides(self._pshape), d.dtype)
        sv = buf_view(self._buf, d.shape, self._vstrides, d.dtype)
        self._noise.run(RandomArgs(zp, seed, offset, a=0.0, b=1.0 / d.tau), st)
        self._fma.run(ElementwiseArgs([zv, x, 1.0], [zv]), st)

        def soft_into(t):
            if self._direct_soft(zv, t):
                self._soft.run(SoftmaxArgs(zv, t), st)
            else:
                self._soft.run(SoftmaxArgs(zv, sv), st)
                self._copy.run(ElementwiseArgs([sv], [t]), st)

        if ys is not None:
            soft_into(ys)
        if not d.hard:
            soft_into(y)
            return
        from ..indexing.indexing import OneHotArgs
        from ..reduction import ReduceArgs

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


class GumbelSoftmaxBackwardPlan(Plan):
    """dx = (1/τ)·softmax_bw(dy, y_soft): SoftmaxBackwardPlan then an in-place scale by 1/τ
    (elementwise affine).  Workspace: the softmax backward's."""

    descriptor = GumbelSoftmaxBackwardDescriptor

    def _plan(self) -> None:
        from ..elementwise import ElementwiseDescriptor, ElementwisePlan
        from ..softmax import SoftmaxBackwardDescriptor, SoftmaxBackwardPlan

        d = self.desc
        self._n = prod(d.shape)
        self._bw = SoftmaxBackwardPlan.select(SoftmaxBackwardDescriptor(d.shape, d.dtype, d.axis),
                                              self.pref)
        self._scale = None
        if d.tau != 1.0:
            self._scale = ElementwisePlan.select(ElementwiseDescriptor(
                "affine", (d.shape,), d.dtype, None, (1.0 / d.tau, 0.0)), self.pref)
        self._sku = self._bw.sku()

    def workspace_size(self) -> int:
        return self._bw.workspace_size()

    def is_empty(self) -> bool:
        return self._n == 0

    def _bind(self, args):
        from ..softmax import SoftmaxBackwardArgs

        if not isinstance(args, GumbelSoftmaxBackwardArgs):
            raise InvalidProblemError("GumbelSoftmaxBackwardPlan.run needs "
                                      "GumbelSoftmaxBackwardArgs")
        sargs = SoftmaxBackwardArgs(args.dy, args.y_soft, args.dx)
        self._bw.can_implement(sargs)
        return sargs

    def _launch(self, sargs, st: int, ws: Workspace) -> None:
        self._bw.run(sargs, st, ws)
        if self._scale is not None:
            from ..elementwise import ElementwiseArgs

            self._scale.run(ElementwiseArgs([sargs.dx], [sargs.dx]), st)
