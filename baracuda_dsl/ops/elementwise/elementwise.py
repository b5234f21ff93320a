"""The generic elementwise plan: any op of the elementwise op table over broadcast operands.

    desc = ElementwiseDescriptor("add", shapes=((4096, 1024), (1024,)), dtype="bf16")
    plan = ElementwisePlan.select(desc)
    plan.run(ElementwiseArgs(inputs=(x, bias), outputs=(y,)))

``shapes`` holds one entry per input: a shape (an array operand, broadcast to the common shape by
the standard's rules) or ``None`` (a Python scalar given in ``Args.inputs``, passed to the kernel
by value).  Outputs have the broadcast shape; they may have any strides (views) except zero
strides over extents > 1, and may alias an input (in-place ops).

Kernel choice per call (the SKU's ``path`` knob; shapes and strides are run-time values):

* ``flat`` — every array operand dense with the output's shape, aligned to its vector width:
  128-bit loads/stores, 4 vectors in flight per thread.
* ``s4`` — otherwise, when the dims collapse (over all operands) to rank ≤ 4, the element count
  and every operand's span are < 2³¹ and no output overlaps an input through different strides:
  strided loads with Int32 index math (broadcast and transposed operands).
* fallback — inputs are gathered into dense temporaries (StridedCopy), the op runs ``flat`` into
  dense temporaries, and the ``copy`` op writes them to the outputs (Int64 ``s8`` path when
  needed).  Temporaries come from the stream-ordered pool and are released in stream order.

Precision: half types and fp8 compute in f32, f64 in f64, integers in their own width (wrapping),
complex in (re, im) pairs of the component type; bit-identical reruns; no workspace.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

from ... import dtypes as _dt
from ...dtypes import DType
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, check_writable_no_overlap, collapse_dims, prod, view_arg
from ...runtime.memory import as_core_stream
from ...tensor import MAX_RANK, TensorView, check_shape, contiguous_strides
from .specs import elementwise as spec
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee

_I32_MAX = 2**31 - 1 - spec.THREADS * spec.ILP * 16
_BY_SHORT = {d.short: d for d in _dt.ALL_DTYPES}


def broadcast_shapes(*shapes) -> Tuple[int, ...]:
    """The standard's broadcast of ``shapes`` (InvalidProblemError, a ValueError, when two
    extents differ and neither is 1)."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for i, n in enumerate(s):
            j = rank - len(s) + i
            if n == out[j] or n == 1:
                continue
            if out[j] != 1:
                raise InvalidProblemError(f"shapes {tuple(tuple(x) for x in shapes)} cannot be "
                                          f"broadcast together (dim {j}: {out[j]} vs {n})")
            out[j] = n
    return tuple(out)


def broadcast_strides(shape, strides, out_shape) -> Tuple[int, ...]:
    """Strides of a ``shape`` view broadcast to ``out_shape`` (0 on broadcast dims)."""
    pad = len(out_shape) - len(shape)
    return tuple(0 if i < pad or shape[i - pad] != n else strides[i - pad]
                 for i, n in enumerate(out_shape))


def precision_of(dt: DType) -> PrecisionGuarantee:
    """What an elementwise op on ``dt`` computes in: f32 for half types and fp8, f64 for f64,
    the component type for complex, the integer type itself for integers and bool."""
    if dt.kind == "f" and dt.itemsize < 4 or dt.short.startswith("fp8"):
        math_dt = _dt.float32
    elif dt.kind == "c":
        math_dt = _dt.float64 if dt == _dt.complex128 else _dt.float32
    else:
        math_dt = dt
    return PrecisionGuarantee(math_precision=math_dt, accumulator=math_dt)


def _align(dt: DType) -> int:
    """Pointer alignment the kernel needs: the element size (a complex component's size:
    complex values are read as two words)."""
    return dt.itemsize // 2 if dt.kind == "c" else dt.itemsize


def wired_dtypes(op: str) -> Tuple[DType, ...]:
    """The value dtypes ``op`` is wired for."""
    return tuple(_BY_SHORT[s] for s in spec.OPS[op].dtypes)


# =========================================================================== descriptor / args
@dataclass(frozen=True)
class ElementwiseDescriptor:
    """``op`` (a name of the op table), one entry per input in ``shapes`` (a shape, or None for
    a Python scalar operand), the value ``dtype`` (inputs are that dtype, except where's
    condition which is bool), ``out_dtype`` (casts only), ``params`` (the op's float
    parameters, e.g. leaky_relu's slope), ``shape`` (the output shape when it is not the
    inputs' broadcast: fills from a scalar, copies that broadcast a source)."""

    op: str
    shapes: Tuple[Optional[Tuple[int, ...]], ...]
    dtype: DType = _dt.float32
    out_dtype: Optional[DType] = None
    params: Tuple[float, ...] = ()
    shape: Optional[Tuple[int, ...]] = None

    def __post_init__(self):
        if self.op not in spec.OPS:
            raise UnsupportedError(f"elementwise op {self.op!r} is not wired; wired: "
                                   f"{', '.join(sorted(spec.OPS))}")
        object.__setattr__(self, "shapes", tuple(
            None if s is None else check_shape(s, f"{self.op} operand {i}")
            for i, s in enumerate(self.shapes)))
        object.__setattr__(self, "dtype", _dt.dtype(self.dtype))
        if self.out_dtype is not None:
            object.__setattr__(self, "out_dtype", _dt.dtype(self.out_dtype))
        object.__setattr__(self, "params", tuple(float(p) for p in self.params))
        if self.shape is not None:
            object.__setattr__(self, "shape", check_shape(self.shape, f"{self.op} output"))
            if self.out_shape != self.shape:
                raise InvalidProblemError(f"{self.op}: inputs {self.shapes} do not broadcast to "
                                          f"the output shape {self.shape}")

    @property
    def out_shape(self) -> Tuple[int, ...]:
        extra = () if self.shape is None else (self.shape,)
        return broadcast_shapes(*(s for s in self.shapes if s is not None), *extra)


@dataclass
class ElementwiseArgs:
    """``inputs``: one device view (torch / cupy / Array / TensorView) or Python scalar per
    descriptor shape; ``outputs``: one view per op output, of the broadcast shape."""

    inputs: Sequence
    outputs: Sequence


class ScalarOperands:
    """The kernel's ``scalars`` parameter group for ``n`` inputs: bit k of ``mask`` marks input
    k as a Python scalar passed by value, held in ``f[k]`` (float / real part), ``g[k]``
    (imaginary part) or ``i[k]`` (integer / bool bits)."""

    __slots__ = ("mask", "f", "g", "i")

    def __init__(self, n: int = len(spec.INPUTS)):
        self.mask, self.f, self.g, self.i = 0, [0.0] * n, [0.0] * n, [0] * n

    def values(self, slots: int) -> list:
        """The group's values for a kernel with ``slots`` scalar-operand slots (≥ n; the
        unused ones zero): ``mask, f[slots], g[slots], i[slots]``."""
        pad = slots - len(self.f)
        if not pad:
            return [self.mask, *self.f, *self.g, *self.i]
        zf = [0.0] * pad
        return [self.mask, *self.f, *zf, *self.g, *zf, *self.i, *([0] * pad)]


def encode_scalar(value, dt: DType, k: int, sc: ScalarOperands) -> None:
    """Store Python scalar ``value`` as operand ``k`` of dtype ``dt`` (rounded to ``dt`` first, so
    the kernel sees exactly the value an array of ``dt`` would hold)."""
    sc.mask |= 1 << k
    if dt.kind == "b":
        sc.i[k] = 1 if value else 0
    elif dt.kind in "iu":
        if isinstance(value, float) or isinstance(value, complex):
            raise InvalidProblemError(f"scalar {value!r} for an integer ({dt.name}) operand")
        v = int(value)
        bits = dt.itemsize * 8
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dt.kind == "i" else (0,
                                                                                    (1 << bits) - 1)
        if not lo <= v <= hi:
            raise OverflowError(f"scalar {v} is out of range for {dt.name}")
        sc.i[k] = v - (1 << 64) if v >= 1 << 63 else v
    elif dt.kind == "c":
        z = complex(value)
        if dt == _dt.complex64:
            z = complex(np.complex64(z))
        sc.f[k], sc.g[k] = z.real, z.imag
    else:
        if isinstance(value, complex):
            raise InvalidProblemError(f"complex scalar {value!r} for a real ({dt.name}) operand")
        sc.f[k] = round_to(float(value), dt)


def round_to(v: float, dt: DType) -> float:
    """``v`` rounded to the floating dtype ``dt`` (returned as a Python float)."""
    if dt == _dt.float64:
        return v
    if dt == _dt.float32:
        return float(np.float32(v))
    if dt == _dt.float16:
        return float(np.float16(v))
    if dt == _dt.bfloat16:
        u = int(np.array(v, np.float32).view(np.uint32))
        if math.isnan(v):
            return v
        u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
        return float(np.array(u & 0xFFFFFFFF, np.uint32).view(np.float32))
    return v


# ================================================================================ the plan
def check_family(who: str, op: str, ops: Optional[frozenset]) -> None:
    """UnsupportedError naming the family's ops unless ``op`` is one of ``ops`` (None: every op
    of the table)."""
    if ops is not None and op not in ops:
        raise UnsupportedError(f"{who}: op {op!r} is not in this family; wired: "
                               f"{', '.join(sorted(ops))}")


class ElementwisePlan(Plan):
    """Any op of the elementwise op table (see the module docstring for the kernel paths).
    Dtypes: per op (``wired_dtypes(op)``); casts: every pair of the 17 dtypes (fp8 needs
    sm89+).  No workspace; deterministic; outputs may alias inputs."""

    descriptor = ElementwiseDescriptor
    category = OpCategory.ELEMENTWISE
    #: the ops this plan accepts (None: every op of the table); the family plans narrow it
    OPS: Optional[frozenset] = None

    def _plan(self) -> None:
        desc = self.desc
        check_family(type(self).__name__, desc.op, self.OPS)
        op = spec.OPS[desc.op]
        if len(desc.shapes) != op.nin:
            raise InvalidProblemError(f"{desc.op}: {op.nin} inputs expected, got "
                                      f"{len(desc.shapes)} shapes")
        dt = desc.dtype
        if dt.short not in op.dtypes:
            raise UnsupportedError(f"{desc.op}: dtype {dt.name} is not wired; wired: "
                                   f"{', '.join(d.name for d in wired_dtypes(desc.op))}")
        if desc.op == "cast":
            if desc.out_dtype is None:
                raise InvalidProblemError("cast: out_dtype is required")
            if desc.out_dtype.short not in spec.CAST_DTYPES:
                raise UnsupportedError(f"cast to {desc.out_dtype.name} is not wired")
        elif desc.out_dtype is not None:
            raise InvalidProblemError(f"{desc.op}: out_dtype is only for casts")
        if len(desc.params) != op.nparams:
            raise InvalidProblemError(f"{desc.op}: {op.nparams} parameters expected, got "
                                      f"{len(desc.params)}")
        for p in desc.params:
            if math.isnan(p):
                raise InvalidProblemError(f"{desc.op}: NaN parameter {desc.params}")
        out_shape = desc.out_shape
        if len(out_shape) > MAX_RANK:
            raise InvalidProblemError(f"{desc.op}: rank {len(out_shape)} > {MAX_RANK}")
        out_short = desc.out_dtype.short if desc.out_dtype is not None else None
        paths = spec.PATHS if desc.op == "cast" else spec.paths_of(desc.op, dt.short)
        #: the knobs of each path's SKU (kept: the kernel memo is keyed by their identity)
        self._knobs = {p: spec.ElementwiseKnobs(desc.op, dt.short, p, out_short) for p in paths}
        flat = self._knobs["flat"]
        if not spec.ELEMENTWISE.arch_ok(flat, self._arch.value):
            raise UnsupportedError(f"{desc.op}[{dt.name}→{out_short}] needs sm89 or newer "
                                   f"(fp8 conversions); selected arch {self._arch.value}")
        self._op = op
        self._out_shape = out_shape
        self._n = prod(out_shape)
        self._in_dts = tuple(_BY_SHORT[s] for s in flat.in_dtypes)
        self._out_dts = tuple(_BY_SHORT[s] for s in flat.out_dtypes)
        self._vec = spec.vec_width(flat)
        self._abi = {p: PathArguments(k, desc.params) for p, k in self._knobs.items()}
        self._geo = {}  # call layout -> (path, extents + strides, broadcast input strides)
        self._sku = KernelSku(self.category, desc.op, dt, self._arch, BackendKind.CUTE_DSL,
                              precision_of(dt), aux_element=desc.out_dtype,
                              template=spec.ELEMENTWISE.name, knobs=freeze_knobs(flat))

    def is_empty(self) -> bool:
        return self._n == 0

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return self._out_shape

    @property
    def out_dtypes(self) -> Tuple[DType, ...]:
        return self._out_dts

    # ----------------------------------------------------------------------- validation
    def _bind(self, args):
        """(input views / Python scalars, output views, device) of checked Args."""
        d = self.desc
        if len(args.inputs) != len(d.shapes):
            raise InvalidProblemError(f"{d.op}: {len(d.shapes)} inputs expected, got "
                                      f"{len(args.inputs)}")
        if len(args.outputs) != self._op.nout:
            raise InvalidProblemError(f"{d.op}: {self._op.nout} outputs expected, got "
                                      f"{len(args.outputs)}")
        ins, dev = [], None
        for k, (x, shp) in enumerate(zip(args.inputs, d.shapes)):
            if shp is None:
                if not isinstance(x, (bool, int, float, complex, np.generic)):
                    raise InvalidProblemError(f"{d.op}: input {k} was described as a scalar, "
                                              f"got {type(x).__name__}")
                ins.append(x.item() if isinstance(x, np.generic) else x)
                continue
            dt = self._in_dts[k]
            v = view_arg(x, f"{d.op} input {k}", shape=shp, dtype=dt, device=dev,
                         align=_align(dt))
            dev = v.device
            ins.append(v)
        outs = []
        for k, x in enumerate(args.outputs):
            dt = self._out_dts[k]
            v = view_arg(x, f"{d.op} output {k}", shape=self._out_shape, dtype=dt, device=dev,
                         align=_align(dt))
            dev = v.device
            check_writable_no_overlap(v, f"{d.op} output {k}")
            outs.append(v)
        return ins, outs, dev

    # ----------------------------------------------------------------------------- run
    def _launch(self, bound, stream: int, ws) -> None:
        ins, outs, dev = bound
        self._launch_views(ins, outs, dev, stream)

    def _launch_views(self, ins, outs, dev: int, stream: int, fresh: bool = False) -> None:
        """Launch on validated views / scalars.  ``fresh``: the outputs are new allocations
        (cannot alias an input), so the in-place hazard check is skipped."""
        key = tuple((x.shape, x.strides, x.ptr & 15) if type(x) is TensorView else None
                    for x in ins) + tuple((o.strides, o.ptr & 15) for o in outs)
        geo = self._geo.get(key)
        if geo is None:
            geo = self._geo[key] = self._layout(ins, outs)
        path, dims, in_str = geo
        sc = None
        if any(type(x) is not TensorView for x in ins):
            sc = ScalarOperands(len(ins))
            for k, x in enumerate(ins):
                if type(x) is not TensorView:
                    encode_scalar(x, self._in_dts[k], k, sc)
        if fresh or not _hazard(ins, outs, in_str):
            if path is None and "s8" in self._knobs:
                path, dims = "s8", _geometry8(self._out_shape, in_str,
                                              tuple(o.strides for o in outs))
            if path is not None:
                self._launch_path(path, [o.ptr for o in outs],
                                  [x.ptr if type(x) is TensorView else 0 for x in ins], sc, dims,
                                  dev, stream)
                return
        self._launch_via_temporaries(ins, outs, in_str, sc, dev, stream)

    def _layout(self, ins, outs):
        """(path or None, its extents + strides, broadcast input strides) of one call layout."""
        shape = self._out_shape
        in_str = tuple(None if type(x) is not TensorView else
                       (x.strides if x.shape == shape else
                        broadcast_strides(x.shape, x.strides, shape)) for x in ins)
        mods = tuple(None if type(x) is not TensorView else x.ptr % 16 for x in ins) + tuple(
            o.ptr % 16 for o in outs)
        path, dims = _geometry(shape, in_str, tuple(o.strides for o in outs), mods, self._vec,
                               tuple(d.itemsize for d in self._in_dts),
                               tuple(d.itemsize for d in self._out_dts), "v4" in self._knobs)
        return path, dims, in_str

    def _launch_path(self, path: str, out_ptrs, in_ptrs, sc, dims, dev: int,
                     stream: int) -> None:
        """Enqueue the ``path`` kernel.  Its arguments, in the spec's group order: outputs,
        inputs, size, scalars (``sc``: ScalarOperands, None when every input is an array),
        params, then ``dims`` (extents and strides; empty on the flat path)."""
        kern = self._kernel(spec.ELEMENTWISE, self._knobs[path], dev)
        a = self._abi[path]
        args = out_ptrs + a.out_pad + in_ptrs + a.in_pad
        args.append(self._n)
        args += a.no_scalars if sc is None else sc.values(a.slots)
        args += a.params
        args += dims
        kern.launch(((self._n + a.per_block - 1) // a.per_block, 1, 1), args, stream)

    def _launch_via_temporaries(self, ins, outs, in_str, sc, dev: int, stream: int) -> None:
        """Inputs the fast paths cannot read directly (strided beyond rank 4 or 2³¹, misaligned,
        overlapping an output) are gathered into dense temporaries; outputs that are not dense
        are written by the ``s8`` path (copy) or from dense temporaries by the copy op."""
        from ...runtime.memory import allocate
        from ..shape.repeat import strided_copy

        shape = self._out_shape
        dense = contiguous_strides(shape)
        bufs, in_ptrs, tmp_outs = [], [], []

        def temp(dt: DType) -> TensorView:
            b = allocate(self._n * dt.itemsize, stream, dev)
            bufs.append(b)
            return TensorView._trusted(int(b.handle), shape, dense, dt, dev, b)

        try:
            for k, x in enumerate(ins):
                if type(x) is not TensorView:
                    in_ptrs.append(0)
                    continue
                if (x.shape == shape and x.is_contiguous() and x.ptr % 16 == 0
                        and not _hazard([x], outs, [in_str[k]])):
                    in_ptrs.append(x.ptr)
                    continue
                t = temp(x.dtype)
                strided_copy(TensorView._trusted(x.ptr, shape, in_str[k], x.dtype, dev, x), t,
                             stream)
                in_ptrs.append(t.ptr)
            if all(o.is_contiguous() and o.ptr % 16 == 0 for o in outs):
                self._launch_path("flat", [o.ptr for o in outs], in_ptrs, sc, (), dev, stream)
                return
            dense_in = tuple(None if type(x) is not TensorView else dense for x in ins)
            if "s8" in self._knobs:
                self._launch_path("s8", [o.ptr for o in outs], in_ptrs, sc, _geometry8(
                    shape, dense_in, tuple(o.strides for o in outs)), dev, stream)
                return
            for o in outs:
                tmp_outs.append(temp(o.dtype))
            self._launch_path("flat", [t.ptr for t in tmp_outs], in_ptrs, sc, (), dev, stream)
            for o, t in zip(outs, tmp_outs):
                copy_plan(shape, o.dtype, self._arch)._launch_views([t], [o], dev, stream)
        finally:
            for b in bufs:
                b.close(stream=as_core_stream(stream, dev))


class PathArguments:
    """How a plan fills the parameters of one path's kernel, read off the spec's
    :func:`~.specs.elementwise.param_groups`: zero pointers padding the op's outputs / inputs
    to the kernel's slots, its scalar-operand ``slots`` (``no_scalars``: the scalars group when
    every input is an array), the ``params`` group (the descriptor's, padded) and the elements
    one block covers."""

    __slots__ = ("out_pad", "in_pad", "slots", "no_scalars", "params", "per_block")

    def __init__(self, knobs: spec.ElementwiseKnobs, params: Tuple[float, ...]):
        outs, ins, _, _, prm, _, _ = spec.param_groups(knobs)
        op = knobs.spec
        self.out_pad = [0] * (len(outs) - op.nout)
        self.in_pad = [0] * (len(ins) - op.nin)
        self.slots = spec.scalar_slots(knobs)
        self.no_scalars = ScalarOperands(self.slots).values(self.slots)
        self.params = list(params) + [0.0] * (len(prm) - len(params))
        vec = spec.vec_width(knobs) if knobs.path in ("flat", "v4") else 1
        self.per_block = spec.THREADS * spec.ILP * vec


def _geometry8(shape, in_str, out_str):
    """The extents + strides (64 scalars) of the Int64 rank-≤8 ``s8`` path."""
    sets = list(out_str) + [st for st in in_str if st is not None]
    collapsed = collapse_dims(shape, *sets)
    return _pack_dims(collapsed, in_str, len(out_str))


def _pack_dims(collapsed, in_str, nout: int):
    """The extents and strides groups of the strided paths: the collapsed extents (padded with
    1 in front to STRIDED_RANK), then STRIDED_RANK strides per output slot and per input slot
    (zeros for unused slots and scalar inputs)."""
    rank = spec.STRIDED_RANK
    cshape = collapsed[0]
    ext = (1,) * (rank - len(cshape)) + tuple(cshape)
    cs = list(collapsed[1:])
    outs = cs[:nout] + [()] * (len(spec.OUTPUTS) - nout)
    it = iter(cs[nout:])
    ins = [(() if st is None else next(it)) for st in in_str]
    ins += [()] * (len(spec.INPUTS) - len(in_str))
    strides = []
    for st in outs + ins:
        strides += [0] * (rank - len(st)) + list(st)
    return ext + tuple(strides)


@functools.lru_cache(maxsize=512)
def copy_plan(shape, dt: DType, arch) -> ElementwisePlan:
    """The cached ``copy`` plan writing a dense ``shape`` array of ``dt`` into any view."""
    from ...vocabulary import PlanPreference

    return ElementwisePlan.select(ElementwiseDescriptor("copy", (shape,), dt),
                                  PlanPreference(arch=arch))


def _hazard(ins, outs, in_str) -> bool:
    """True when an output overlaps an input that it does not match element for element (the
    kernel would read values another thread already overwrote)."""
    for o in outs:
        lo, hi = o.span_elements()
        a0, a1 = o.ptr + lo * o.itemsize, o.ptr + (hi + 1) * o.itemsize
        for x, st in zip(ins, in_str):
            if type(x) is not TensorView or not x.numel:
                continue
            l2, h2 = x.span_elements()
            b0, b1 = x.ptr + l2 * x.itemsize, x.ptr + (h2 + 1) * x.itemsize
            if a0 < b1 and b0 < a1 and not (x.ptr == o.ptr and st == o.strides
                                            and x.itemsize == o.itemsize):
                return True
    return False


@functools.lru_cache(maxsize=4096)
def _geometry(shape, in_str, out_str, mods, vec: int, in_sz, out_sz, v4: bool = False):
    """(path, its extents + strides: 64 scalars, none on the flat path) for one call layout,
    or (None, None) when only the temporaries fallback can run it."""
    n = prod(shape)
    dense = contiguous_strides(shape)
    flat = all(st is None or st == dense or _dense_equiv(shape, st) for st in in_str) and all(
        _dense_equiv(shape, st) for st in out_str)
    if flat:
        sizes = in_sz + out_sz
        flat = all(m is None or m % min(16, vec * sz) == 0 for m, sz in zip(mods, sizes))
    if flat:
        return "flat", ()
    sets = list(out_str) + [st for st in in_str if st is not None]
    collapsed = collapse_dims(shape, *sets)
    cshape = collapsed[0]
    if len(cshape) > 4 or n >= _I32_MAX:
        return None, None
    for st in collapsed[1:]:
        span = sum((e - 1) * abs(s) for e, s in zip(cshape, st))
        if span >= _I32_MAX:
            return None, None
    if v4 and _v4_ok(collapsed, in_str, len(out_str), mods, vec, in_sz + out_sz):
        return "v4", _pack_dims(collapsed, in_str, len(out_str))
    return "s4", _pack_dims(collapsed, in_str, len(out_str))


def _v4_ok(collapsed, in_str, nout: int, mods, vec: int, sizes) -> bool:
    """The v4 conditions: innermost extent a multiple of ``vec``; outputs unit-stride innermost;
    array inputs unit- or zero-stride innermost; every unit-stride operand's other strides
    multiples of ``vec`` and its pointer aligned to the vector (``vec`` elements)."""
    cshape = collapsed[0]
    if not cshape or cshape[-1] % vec:
        return False
    sets = list(collapsed[1:])
    # operand order in ``collapsed``: outputs, then the array inputs; mods/sizes: inputs, outputs
    arr_in = [k for k, st in enumerate(in_str) if st is not None]
    n_in = len(in_str)
    order = [(sets[o], mods[n_in + o], sizes[n_in + o], True) for o in range(nout)]
    order += [(sets[nout + i], mods[k], sizes[k], False) for i, k in enumerate(arr_in)]
    for st, mod, sz, is_out in order:
        inner = st[-1]
        if inner == 0 and not is_out:
            continue
        if inner != 1 or any(x % vec for x in st[:-1]) or mod % (vec * sz):
            return False
    return True


def _dense_equiv(shape, st) -> bool:
    expect = 1
    for n, s in zip(reversed(shape), reversed(st)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True
