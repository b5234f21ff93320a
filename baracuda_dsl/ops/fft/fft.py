"""Discrete Fourier transforms on cuFFT (through ``nvmath-python``'s bindings), over any axes of
a strided operand.

    desc = FFTDescriptor(shape=(16, 1000), axes=(-1,), kind="c2c", dtype="c64")
    plan = FFTPlan.select(desc)
    plan.run(FFTArgs(x=x, out=y), workspace=ws)        # ws: plan.workspace_size() bytes

The transforms (``n_k`` the logical length of transformed axis ``k``, N = Π n_k):

- ``c2c`` (complex64 / complex128 → same): ``X[k] = Σ_j x[j] · exp(∓2πi·j·k/n)``, the minus sign
  forward, the plus sign inverse (``inverse=True``), over every axis of ``axes``;
- ``r2c`` (float32 / float64 → complex64 / complex128, forward only): ``numpy.fft.rfftn`` — the
  last axis of ``axes`` keeps its ``n//2 + 1`` non-negative frequencies, the others are full
  complex transforms;
- ``c2r`` (complex64 / complex128 → float32 / float64, inverse only): ``numpy.fft.irfftn`` — the
  input holds the ``out_last//2 + 1`` non-negative frequencies of the last axis of ``axes``
  (``out_last``: the real output length of that axis, default ``2·(m − 1)`` for an input extent
  ``m``); the other axes are full inverse complex transforms.

``norm`` scales like NumPy: ``"backward"`` (forward ×1, inverse ×1/N), ``"ortho"`` (×1/√N both
ways), ``"forward"`` (forward ×1/N, inverse ×1).  The input extents along ``axes`` ARE the
transform lengths (``c2r``: the last one is ``out_last//2 + 1``): padding / truncation to a
requested ``n`` is the caller's (``array_api.fft`` does it).

How it runs (one ``run``, every step enqueued on the caller's stream):

1. the transformed axes are split into cuFFT calls of rank ≤ 3 (cuFFT's limit): ``r2c`` does
   its real-to-complex call first (the last axis of ``axes`` with up to two more), then complex
   calls for the rest; ``c2r`` does the complex calls first and its complex-to-real call last
   (as ``numpy.fft.irfftn``); axes of length 1 are identities and are skipped;
2. per call, the operand is viewed with the call's axes moved last; unless that view is already
   dense (and the call may read the caller's input: cuFFT's c2r overwrites its input), it is
   copied into a dense workspace buffer (``ops.shape.strided_copy``, a prebuilt DSL kernel);
   cuFFT then runs a batched transform (batch = the product of the other extents) into the
   output when the call's axes are the trailing axes in order, else into a second workspace
   buffer, and the next call reads that buffer through the inverse permutation;
3. a final strided copy writes the result into ``out`` when the last call could not, and
   ``norm`` scaling is one in-place ``multiply`` (elementwise plan) on ``out``'s real view.

cuFFT handles (``cufftHandle``) are made lazily — on the first ``workspace_size()`` or ``run``,
which need a GPU — with auto-allocation off, and cached per (call geometry, device, thread)
(a handle is bound to a stream and a work area per run, so each thread keeps its own); the 64
most recently used per thread are kept, older ones are destroyed.

Operands: ``x`` any strides (rank ≤ 8, on one device, aligned to its element size); ``out``
dense row-major (UnsupportedError otherwise), of :attr:`FFTDescriptor.out_shape` and
:attr:`FFTDescriptor.out_dtype`, not overlapping ``x``.  Empty batches (an extent 0 outside
``axes``) return without launching; a transform length < 1 is an InvalidProblemError at select.

Workspace (``workspace_size()``): the cuFFT work area (the largest of the calls', 256-byte
aligned) plus one or two dense buffers of the largest intermediate (none are touched when the
input is dense, the axes are trailing and one call does everything; the size depends on the
descriptor only, so such a plan reserves its input buffer anyway unless the descriptor says
``dense_input=True``, a promise ``run`` checks).

Precision: cuFFT computes in the dtype's precision (float32 for complex64 / float32, float64 for
the double types); errors grow like O(log2 N)·eps relative to the norm of the data.  Results are
deterministic for a given plan and GPU; bit-stability across cuFFT versions or GPUs is not
promised.  ``recordable = False``: launch-record replay does not cover vendor calls.
"""

from __future__ import annotations

import collections
import functools
import math
import threading
from dataclasses import dataclass
from typing import List, Optional, Tuple

from ...dtypes import DType, complex64, complex128, dtype as as_dtype, float32, float64
from ...errors import InvalidProblemError, UnsupportedError, WorkspaceTooSmallError
from ...plan import Plan, align_up, check_writable_no_overlap, prod, view_arg
from ...runtime import trace, vendor
from ...tensor import MAX_RANK, TensorView, check_shape, contiguous_strides
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee

#: the transform kinds
KINDS = ("c2c", "r2c", "c2r")
#: the normalisation modes (NumPy's / the array API's)
NORMS = ("backward", "ortho", "forward")
#: input dtypes per kind
KIND_DTYPES = {"c2c": (complex64, complex128), "r2c": (float32, float64),
               "c2r": (complex64, complex128)}
COMPLEX_OF = {float32: complex64, float64: complex128, complex64: complex64,
              complex128: complex128}
REAL_OF = {complex64: float32, complex128: float64, float32: float32, float64: float64}

#: cufftType of each (call kind, complex dtype): CUFFT_C2C 0x29, Z2Z 0x69, R2C 0x2a, D2Z 0x6a,
#: C2R 0x2c, Z2D 0x6c
CUFFT_TYPE = {("c2c", complex64): 0x29, ("c2c", complex128): 0x69,
              ("r2c", complex64): 0x2A, ("r2c", complex128): 0x6A,
              ("c2r", complex64): 0x2C, ("c2r", complex128): 0x6C}
#: cuFFT's routine names per (call kind, complex dtype), for the SKU's template
CUFFT_NAME = {("c2c", complex64): "C2C", ("c2c", complex128): "Z2Z",
              ("r2c", complex64): "R2C", ("r2c", complex128): "D2Z",
              ("c2r", complex64): "C2R", ("c2r", complex128): "Z2D"}
#: exec function of each call kind / precision
_EXEC = {("c2c", complex64): "exec_c2c", ("c2c", complex128): "exec_z2z",
         ("r2c", complex64): "exec_r2c", ("r2c", complex128): "exec_d2z",
         ("c2r", complex64): "exec_c2r", ("c2r", complex128): "exec_z2d"}
CUFFT_FORWARD, CUFFT_INVERSE = -1, 1

#: cuFFT's largest transform rank per call
MAX_CALL_RANK = 3
#: cuFFT handles kept per thread (least recently used ones are destroyed)
HANDLE_CACHE_SIZE = 64


def _axes_tuple(axes, rank: int) -> Tuple[int, ...]:
    """``axes`` (an int or a sequence, any order) as non-negative ints, order kept; typed
    errors for non-ints, out-of-range and repeated axes, and an empty tuple."""
    if isinstance(axes, int) and not isinstance(axes, bool):
        axes = (axes,)
    try:
        axes = tuple(axes)
    except TypeError:
        raise InvalidProblemError(f"FFT: axes must be an int or a sequence of ints, got "
                                  f"{axes!r}") from None
    if not axes:
        raise InvalidProblemError("FFT: at least one axis must be transformed")
    out = []
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, int):
            raise InvalidProblemError(f"FFT: axes must be ints, got {axes!r}")
        if not -rank <= a < rank:
            raise InvalidProblemError(f"FFT: axis {a} out of range for a rank-{rank} input")
        out.append(a % rank)
    if len(set(out)) != len(out):
        raise InvalidProblemError(f"FFT: repeated axis in {axes!r}")
    return tuple(out)


@dataclass(frozen=True)
class FFTDescriptor:
    """A DFT over ``axes`` (any order; the last one is the real axis of r2c / c2r) of an input
    of ``shape`` (rank 1..8) and ``dtype``: ``kind`` "c2c" (complex64 / complex128), "r2c"
    (float32 / float64 in, forward only) or "c2r" (complex64 / complex128 in, real out, inverse
    only); ``inverse`` (None: forward for c2c / r2c, inverse for c2r); ``norm`` "backward" |
    "ortho" | "forward"; ``out_last`` (c2r only): the real output length of the last axis of
    ``axes`` (default ``2·(m − 1)``; the input extent m must equal ``out_last//2 + 1``);
    ``dense_input``: the caller promises a dense row-major x (checked at run), so a transform
    that cuFFT can read in place of a copy reserves no copy buffer in the workspace."""

    shape: Tuple[int, ...]
    axes: Tuple[int, ...]
    kind: str = "c2c"
    dtype: DType = complex64
    inverse: Optional[bool] = None
    norm: str = "backward"
    out_last: Optional[int] = None
    dense_input: bool = False

    def __post_init__(self):
        shape = check_shape(self.shape, "FFT: x")
        if not shape:
            raise InvalidProblemError("FFT: the input must have rank >= 1")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "axes", _axes_tuple(self.axes, len(shape)))
        if self.kind not in KINDS:
            raise InvalidProblemError(f"FFT: kind must be one of {', '.join(KINDS)}, got "
                                      f"{self.kind!r}")
        try:
            dt = as_dtype(self.dtype)
        except Exception:
            raise UnsupportedError(f"FFT: dtype {self.dtype!r} is not wired; wired: float32, "
                                   f"float64, complex64, complex128") from None
        wired = KIND_DTYPES[self.kind]
        if dt not in wired:
            raise UnsupportedError(f"FFT {self.kind}: dtype {dt.name} is not wired; wired: "
                                   f"{', '.join(d.name for d in wired)} (float32, float64, "
                                   f"complex64, complex128 across the kinds)")
        object.__setattr__(self, "dtype", dt)
        inv = self.inverse
        if inv is not None and not isinstance(inv, bool):
            raise InvalidProblemError(f"FFT: inverse must be a bool or None, got {inv!r}")
        if inv is None:
            inv = self.kind == "c2r"
        if self.kind == "r2c" and inv:
            raise InvalidProblemError("FFT: r2c is a forward transform (inverse=False)")
        if self.kind == "c2r" and not inv:
            raise InvalidProblemError("FFT: c2r is an inverse transform (inverse=True)")
        object.__setattr__(self, "inverse", inv)
        if self.norm not in NORMS:
            raise InvalidProblemError(f"FFT: norm must be one of {', '.join(NORMS)}, got "
                                      f"{self.norm!r}")
        last = self.axes[-1]
        if self.kind == "c2r":
            m = shape[last]
            ol = self.out_last
            if ol is None:
                ol = 2 * (m - 1)
            elif isinstance(ol, bool) or not isinstance(ol, int):
                raise InvalidProblemError(f"FFT c2r: out_last must be an int, got {ol!r}")
            if ol < 1:
                raise InvalidProblemError(f"FFT c2r: invalid number of data points ({ol}) for "
                                          f"axis {last} (input extent {m}): need >= 1")
            if m != ol // 2 + 1:
                raise InvalidProblemError(f"FFT c2r: axis {last} has extent {m}, a real length "
                                          f"{ol} needs {ol // 2 + 1} (pad or truncate first)")
            object.__setattr__(self, "out_last", ol)
        elif self.out_last is not None:
            raise InvalidProblemError(f"FFT: out_last is for c2r only (kind {self.kind!r})")
        if not isinstance(self.dense_input, bool):
            raise InvalidProblemError(f"FFT: dense_input must be a bool, got "
                                      f"{self.dense_input!r}")
        for a in self.axes:
            n = self.lengths[self.axes.index(a)]
            if n < 1:
                raise InvalidProblemError(f"FFT: invalid number of data points ({n}) along axis "
                                          f"{a}: need >= 1")

    @property
    def lengths(self) -> Tuple[int, ...]:
        """The logical transform length of each axis of ``axes`` (c2r: ``out_last`` last)."""
        ns = [self.shape[a] for a in self.axes]
        if self.kind == "c2r":
            ns[-1] = self.out_last
        return tuple(ns)

    @property
    def out_shape(self) -> Tuple[int, ...]:
        s = list(self.shape)
        last = self.axes[-1]
        if self.kind == "r2c":
            s[last] = s[last] // 2 + 1
        elif self.kind == "c2r":
            s[last] = self.out_last
        return tuple(s)

    @property
    def out_dtype(self) -> DType:
        if self.kind == "r2c":
            return COMPLEX_OF[self.dtype]
        if self.kind == "c2r":
            return REAL_OF[self.dtype]
        return self.dtype

    @property
    def scale(self) -> float:
        """The factor ``norm`` applies to the result (1.0: none)."""
        n = prod(self.lengths)
        if self.norm == "ortho":
            return 1.0 / math.sqrt(n)
        if (self.norm == "forward") != bool(self.inverse):
            return 1.0 / n
        return 1.0


@dataclass
class FFTArgs:
    """x: the input (any strides, ``desc.shape``, ``desc.dtype``); out: the dense row-major
    output (``desc.out_shape``, ``desc.out_dtype``), not overlapping x."""

    x: object
    out: object


# ------------------------------------------------------------------------------- the calls
@dataclass(frozen=True)
class FFTCall:
    """One step of a plan: ``op`` "c2c" | "r2c" | "c2r" (one batched cuFFT call over ``axes``,
    moved last in that order), "cast" (real → complex, for an r2c whose real axis has length 1)
    or "real" (complex → its real part, for a c2r whose real output axis has length 1);
    ``n``: the logical lengths of ``axes``; ``direction``: CUFFT_FORWARD / CUFFT_INVERSE."""

    op: str
    axes: Tuple[int, ...]
    n: Tuple[int, ...] = ()
    direction: int = CUFFT_FORWARD


def _chunks(axes: List[int]) -> List[Tuple[int, ...]]:
    """``axes`` split into runs of at most MAX_CALL_RANK, the LAST run full (so that when the
    axes are trailing and sorted, the last call needs no permutation)."""
    out = []
    while axes:
        out.insert(0, tuple(axes[-MAX_CALL_RANK:]))
        axes = axes[:-MAX_CALL_RANK]
    return out


def plan_calls(desc: FFTDescriptor) -> Tuple[FFTCall, ...]:
    """The steps that compute ``desc`` (see the module docstring); length-1 complex axes are
    identities and are skipped (no step at all: the result is a copy of the input)."""
    lens = dict(zip(desc.axes, desc.lengths))
    direction = CUFFT_INVERSE if desc.inverse else CUFFT_FORWARD
    last = desc.axes[-1]
    if desc.kind == "c2c":
        active = sorted(a for a in desc.axes if lens[a] > 1)
        return tuple(FFTCall("c2c", g, tuple(lens[a] for a in g), direction)
                     for g in _chunks(active))
    others = [a for a in desc.axes[:-1] if lens[a] > 1]
    head, tail = others[:-(MAX_CALL_RANK - 1)], others[-(MAX_CALL_RANK - 1):]
    if lens[last] == 1:            # the real axis is an identity: a cast / real part
        c2c = [FFTCall("c2c", g, tuple(lens[a] for a in g), direction)
               for g in _chunks(sorted(others))]
        if desc.kind == "r2c":
            return (FFTCall("cast", ()),) + tuple(c2c)
        return tuple(c2c) + (FFTCall("real", ()),)
    real_axes = tuple(tail) + (last,)
    real = FFTCall(desc.kind, real_axes, tuple(lens[a] for a in real_axes), direction)
    c2c = [FFTCall("c2c", g, tuple(lens[a] for a in g), direction)
           for g in _chunks(sorted(head))]
    if desc.kind == "r2c":
        return (real,) + tuple(c2c)
    return tuple(c2c) + (real,)


def _perm(rank: int, axes: Tuple[int, ...]) -> Tuple[int, ...]:
    """The permutation that moves ``axes`` last (in their order), the others keeping theirs."""
    return tuple(a for a in range(rank) if a not in axes) + tuple(axes)


def _call_shapes(call: FFTCall, shape: Tuple[int, ...]):
    """(input shape, output shape) of ``call`` applied to an operand of ``shape`` (original
    axis order)."""
    out = list(shape)
    if call.op == "r2c":
        out[call.axes[-1]] = call.n[-1] // 2 + 1
    elif call.op == "c2r":
        out[call.axes[-1]] = call.n[-1]
    return tuple(shape), tuple(out)


def _call_dtypes(call: FFTCall, cdt: DType):
    """(input dtype, output dtype) of ``call`` in the precision of the complex dtype ``cdt``."""
    rdt = REAL_OF[cdt]
    return {"c2c": (cdt, cdt), "r2c": (rdt, cdt), "c2r": (cdt, rdt), "cast": (rdt, cdt),
            "real": (cdt, rdt)}[call.op]


def _span_bytes(v: TensorView) -> Tuple[int, int]:
    lo, hi = v.span_elements()
    return v.ptr + lo * v.itemsize, v.ptr + (hi + 1) * v.itemsize


# ------------------------------------------------------------------------- cuFFT handles
class _ThreadHandles(threading.local):
    def __init__(self):
        self.handles = collections.OrderedDict()


_HANDLES = _ThreadHandles()


def _geometry(call: FFTCall, batch: int, cdt: DType) -> tuple:
    """The ``cufftMakePlanMany64`` arguments after the handle for ``call`` over ``batch``
    dense transforms: (rank, n, inembed, istride, idist, onembed, ostride, odist, type, batch).
    Dense batches: the embeds are the arrays' own extents, unit element stride, the distance
    between transforms is one whole transform."""
    n = tuple(call.n)
    inner = n[:-1]
    half = inner + (n[-1] // 2 + 1,)
    ie, oe = {"c2c": (n, n), "r2c": (n, half), "c2r": (half, n)}[call.op]
    return (len(n), n, ie, 1, prod(ie), oe, 1, prod(oe), CUFFT_TYPE[(call.op, cdt)], batch)


def cufft_handle(geometry: tuple, ordinal: int) -> Tuple[int, int]:
    """(handle, work-area bytes) of this thread's cuFFT plan for ``geometry`` (see
    :func:`_geometry`) on device ``ordinal``: made on first use (auto-allocation off), kept in
    a per-thread LRU of :data:`HANDLE_CACHE_SIZE`."""
    table = _HANDLES.handles
    key = (geometry, ordinal)
    hit = table.get(key)
    if hit is not None:
        table.move_to_end(key)
        return hit
    from ...runtime.device import bind_thread

    bind_thread(ordinal)
    h = vendor.call("cufft", "create")
    try:
        vendor.call("cufft", "set_auto_allocation", h, 0)
        size = vendor.call("cufft", "make_plan_many64", h, *geometry)
    except BaseException:
        try:
            vendor.call("cufft", "destroy", h)
        except Exception:
            pass
        raise
    hit = table[key] = (int(h), int(size))
    while len(table) > HANDLE_CACHE_SIZE:
        (_, old_ord), (old, _) = table.popitem(last=False)
        try:
            bind_thread(old_ord)
            vendor.call("cufft", "destroy", old)
        except Exception:
            pass
    bind_thread(ordinal)
    return hit


@functools.lru_cache(maxsize=256)
def _elementwise_plan(op: str, shape: Tuple[int, ...], dt: DType, out_dt: Optional[DType],
                      scalar: bool):
    from ..elementwise import ElementwiseDescriptor, ElementwisePlan

    shapes = (shape, None) if scalar else (shape,)
    return ElementwisePlan.select(ElementwiseDescriptor(op, shapes, dt, out_dtype=out_dt))


def _elementwise(op: str, inputs, out: TensorView, stream: int, out_dt=None) -> None:
    from ..elementwise import ElementwiseArgs

    x = inputs[0]
    plan = _elementwise_plan(op, tuple(x.shape), x.dtype, out_dt, len(inputs) > 1)
    plan.run(ElementwiseArgs(inputs=tuple(inputs), outputs=(out,)), stream=stream)


def _copy(src: TensorView, dst: TensorView, stream: int) -> None:
    from ..shape import strided_copy

    strided_copy(src, dst, stream)


# ================================================================================ the plan
class FFTPlan(Plan):
    """The DFT of :class:`FFTDescriptor` on cuFFT: x any strides, out dense; workspace =
    cuFFT work area + dense copies (see the module docstring); cuFFT precision (math in the
    dtype's component type), deterministic; not recordable (vendor calls)."""

    descriptor = FFTDescriptor
    recordable = False

    def _plan(self) -> None:
        d = self.desc
        if len(d.shape) > MAX_RANK:
            raise InvalidProblemError(f"FFT: rank {len(d.shape)} > {MAX_RANK}")
        self._cdt = COMPLEX_OF[d.dtype]
        self._calls = plan_calls(d)
        self._n = prod(d.shape) * prod(d.out_shape)   # 0 when either side is empty
        # the steps' operand shapes, and the buffer bytes every step may need
        rank = len(d.shape)
        shape = d.shape
        buf = 0
        self._steps = []
        for i, c in enumerate(self._calls):
            sin, sout = _call_shapes(c, shape)
            din, dout = _call_dtypes(c, self._cdt)
            buf = max(buf, prod(sin) * din.itemsize, prod(sout) * dout.itemsize)
            batch = prod(sin[a] for a in range(rank) if a not in c.axes)
            self._steps.append((c, sin, sout, din, dout, batch))
            shape = sout
        self._buf_bytes = align_up(buf)
        one = (len(self._calls) == 1 and self._calls[0].op in ("c2c", "r2c", "c2r")
               and _perm(rank, self._calls[0].axes) == tuple(range(rank)))
        if not self._calls or (len(self._calls) == 1 and self._calls[0].op in ("cast", "real")):
            self._nbuf = 0           # a copy, a cast or a real part straight into out
        elif one and d.dense_input and self._calls[0].op != "c2r":
            self._nbuf = 0           # cuFFT reads the dense x and writes out directly
        else:
            self._nbuf = 1 if one else 2
        self._work = None            # the cuFFT work-area bytes (lazy: needs a GPU)
        ops = [CUFFT_NAME[(c.op, self._cdt)] for c in self._calls if c.op in ("c2c", "r2c",
                                                                              "c2r")]
        names = []
        for o in ops:
            if o not in names:
                names.append(o)
        template = "cufft." + "+".join(names) if names else "cufft.none"
        op = {"c2c": "ifft" if d.inverse else "fft", "r2c": "rfft", "c2r": "irfft"}[d.kind]
        rdt = REAL_OF[self._cdt]
        pg = PrecisionGuarantee(math_precision=rdt, accumulator=rdt,
                                bit_stable_on_same_hardware=False, deterministic=True)
        self._sku = KernelSku(OpCategory.FFT, op, d.dtype, self._arch, BackendKind.VENDOR, pg,
                              aux_element=d.out_dtype, layout=f"axes={len(d.axes)}",
                              epilogue=None if d.scale == 1.0 else f"norm={d.norm}",
                              template=template)

    # -- sizes -------------------------------------------------------------------------------
    def calls(self) -> Tuple[FFTCall, ...]:
        """The steps this plan runs (cuFFT calls, casts), in order."""
        return self._calls

    def copy_workspace_size(self) -> int:
        """Bytes of the dense copy buffers (known without a GPU)."""
        return 0 if self.is_empty() else self._nbuf * self._buf_bytes

    def cufft_work_size(self, ordinal: Optional[int] = None) -> int:
        """Bytes of the cuFFT work area (the largest of the plan's calls), from the cuFFT
        handles of device ``ordinal`` (default: the current device); makes the handles (GPU)."""
        if self.is_empty():
            return 0
        if ordinal is None:
            from ...runtime.device import current_device_ordinal

            ordinal = current_device_ordinal()
        if self._work is None:
            self._work = self._work_for(ordinal)
        return self._work

    def _work_for(self, ordinal: int) -> int:
        w = 0
        for c, sin, _sout, _din, _dout, batch in self._steps:
            if c.op in ("c2c", "r2c", "c2r"):
                w = max(w, cufft_handle(_geometry(c, batch, self._cdt), ordinal)[1])
        return align_up(w)

    def workspace_size(self) -> int:
        """cuFFT work area + copy buffers, in bytes (the cuFFT part is queried on the current
        device the first time: needs a GPU; 0 for empty problems)."""
        if self.is_empty():
            return 0
        return self.cufft_work_size() + self.copy_workspace_size()

    def is_empty(self) -> bool:
        return self._n == 0

    # -- run ---------------------------------------------------------------------------------
    def _bind(self, args):
        d = self.desc
        x = view_arg(args.x, "x", shape=d.shape, dtype=d.dtype)
        out = view_arg(args.out, "out", shape=d.out_shape, dtype=d.out_dtype, device=x.device)
        check_writable_no_overlap(out, "out")
        if d.dense_input and x.numel and not x.is_contiguous():
            raise InvalidProblemError(f"FFT: the descriptor promises a dense input "
                                      f"(dense_input=True) but x has strides {x.strides} for "
                                      f"shape {x.shape}")
        if out.numel and not out.is_contiguous():
            raise UnsupportedError(f"FFT: out must be dense row-major (got strides "
                                   f"{out.strides} for shape {out.shape})")
        if x.numel and out.numel:
            xl, xh = _span_bytes(x)
            ol, oh = _span_bytes(out)
            if xl < oh and ol < xh:
                raise InvalidProblemError("FFT: out overlaps x (in-place transforms are not "
                                          "supported: pass a separate output)")
        return x, out

    def _launch(self, bound, stream: int, ws) -> None:
        trace.refuse("vendor call")
        x, out = bound
        dev = x.device
        work = self._work_for(dev) if self._work is None else self._work
        if self._work is None:
            self._work = work
        bufs_at = ws.ptr + work
        need = work + self.copy_workspace_size()
        if ws.nbytes < need:
            raise WorkspaceTooSmallError(need, ws.nbytes)
        slots = [bufs_at + i * self._buf_bytes for i in range(self._nbuf)]
        rank = len(self.desc.shape)
        ident = tuple(range(rank))
        cur, cur_slot = x, None
        nsteps = len(self._steps)
        if not nsteps:                                 # every axis has length 1: a copy
            _copy(x, out, stream)
        for i, (c, sin, sout, din, dout, batch) in enumerate(self._steps):
            is_last = i == nsteps - 1
            if c.op == "cast" or c.op == "real":
                if is_last:
                    dst = out
                else:
                    s = 1 if cur_slot == 0 else 0
                    dst = TensorView(slots[s], sout, contiguous_strides(sout), dout, dev)
                    cur_slot = s
                _elementwise(c.op, (cur,), dst, stream, out_dt=dout if c.op == "cast" else None)
                cur = dst
                continue
            perm = _perm(rank, c.axes)
            pshape = tuple(sin[a] for a in perm)
            pview = TensorView(cur.ptr, pshape, tuple(cur.strides[a] for a in perm), din, dev)
            if pview.is_contiguous() and not (c.op == "c2r" and cur_slot is None):
                in_ptr, in_slot = cur.ptr, cur_slot
            else:
                in_slot = 1 if cur_slot == 0 else 0
                dense = TensorView(slots[in_slot], pshape, contiguous_strides(pshape), din, dev)
                _copy(pview, dense, stream)
                in_ptr = slots[in_slot]
            if is_last and perm == ident:
                out_ptr, out_slot = out.ptr, None
            else:
                out_slot = 1 if in_slot == 0 else 0
                out_ptr = slots[out_slot]
            h, wsize = cufft_handle(_geometry(c, batch, self._cdt), dev)
            if wsize > work:
                raise WorkspaceTooSmallError(wsize + self.copy_workspace_size(), ws.nbytes)
            vendor.call("cufft", "set_stream", h, int(stream))
            if wsize:
                vendor.call("cufft", "set_work_area", h, ws.ptr)
            fn = _EXEC[(c.op, self._cdt)]
            if c.op == "c2c":
                vendor.call("cufft", fn, h, in_ptr, out_ptr, c.direction)
            else:
                vendor.call("cufft", fn, h, in_ptr, out_ptr)
            # the result, seen in the original axis order
            oshape = tuple(sout[a] for a in perm)
            ostr = contiguous_strides(oshape)
            strides = [0] * rank
            for k, a in enumerate(perm):
                strides[a] = ostr[k]
            cur = TensorView(out_ptr, sout, tuple(strides), dout, dev)
            cur_slot = out_slot
        if nsteps and cur.ptr != out.ptr:
            _copy(cur, out, stream)
        scale = self.desc.scale
        if scale != 1.0:
            rdt = REAL_OF[out.dtype]
            k = out.numel * (out.itemsize // rdt.itemsize)
            flat = TensorView(out.ptr, (k,), (1,), rdt, dev)
            _elementwise("multiply", (flat, scale), flat, stream)
