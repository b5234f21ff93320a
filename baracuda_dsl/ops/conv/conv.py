"""1-D / 2-D / 3-D convolution and transposed convolution, forward, backward-data and
backward-filter, on cuDNN (through NVIDIA's Python frontend, :mod:`.cudnn_backend`).

    desc = ConvDescriptor(spatial=2, n=32, c=64, k=64, in_size=(56, 56), kernel_size=(3, 3),
                          padding=1, dtype="bf16", layout="NHWC")
    plan = ConvPlan.select(desc)
    plan.run(ConvArgs(x=x, w=w, y=y), workspace=ws)    # ws: plan.workspace_size() bytes

Semantics are ``torch.nn.functional.conv{1,2,3}d`` / ``conv_transpose{1,2,3}d`` (cross-
correlation).  Logical operand shapes, whatever the memory layout:

- x ``(N, C, *in_size)``, y ``(N, K, *out_size)``;
- w ``(K, C/groups, *kernel_size)`` for a convolution, ``(C, K/groups, *kernel_size)`` for a
  transposed one (torch's ``weight`` of ``ConvNd`` / ``ConvTransposeNd`` with ``in_channels = C``,
  ``out_channels = K``);
- bias ``(K,)`` (forward only, ``bias=True``).

Output size per spatial dim (torch's formulas)::

    conv:       out = floor((in + pad + pad_end - dilation·(kernel − 1) − 1) / stride) + 1
    transposed: out = (in − 1)·stride − 2·pad + dilation·(kernel − 1) + output_padding + 1

``padding_end`` (convolution only; default ``padding``) is the padding after the data, for
asymmetric padding such as torch's ``padding="same"`` with an even kernel.

``layout``: "NCHW" (dense row-major of the logical shape; "NCL" / "NCDHW" are accepted as
aliases) or "NHWC" (channels-last: the strides of ``torch.channels_last`` /
``channels_last_3d``, channels innermost; aliases "NLC" / "NDHWC").  x, y, w (and their
gradients) must all be laid out so; the bias is a dense vector.  An operand with other strides is
an UnsupportedError before anything runs (copy it first: ``array_api``'s ``conv`` does).
Channels-last is cuDNN's fast layout for half precision.

The plans (each a single cuDNN graph; a transposed convolution is the data-gradient graph of the
matching convolution, as in cuDNN and torch):

- :class:`ConvPlan`: y = conv(x, w) (+ bias) (then ReLU when ``activation="relu"``); the bias /
  ReLU epilogue is fused into cuDNN's graph when cuDNN can (convolution; else, and for transposed
  convolutions, it runs after the graph as the elementwise family's ``add`` / ``relu`` on y);
- :class:`ConvBackwardDataPlan`: dx = ∂L/∂x from dy = ∂L/∂y (of the convolution alone: a ReLU's
  mask is applied to dy by the caller);
- :class:`ConvBackwardFilterPlan`: dw = ∂L/∂w from x and dy; an empty batch gives dw = 0.
  The bias gradient (dy summed over N and space) is not a cuDNN convolution: ``array_api``'s
  ``conv_backward`` computes it with a reduction.

dtypes: float16, bfloat16 (float32 accumulation; engines that down-convert inputs or reduce in
half precision are excluded), float32 (strict float32 math by default — tensor-core (TF32)
engines are excluded unless ``PlanPreference(tuning=ConvTuning(allow_tf32=True))``), float64
(cuDNN's double-precision engines: NCHW; an unsupported geometry is an UnsupportedError at the
first ``workspace_size()`` / ``run``).  ``ConvTuning(deterministic=True)`` excludes cuDNN's
nondeterministic engines (atomics in dgrad / wgrad).  ``PlanPreference(max_workspace_bytes=)``
excludes engines that need more workspace.

Workspace: cuDNN's, queried from the built graph on the first ``workspace_size()`` (needs a GPU;
``select`` never touches one).  Graphs are built once per (problem, device, thread) and cached
(the 64 most recently used per thread).  ``recordable = False``: launch-record replay does not
cover vendor calls.  A problem cuDNN has no engine for raises UnsupportedError naming it.

Host cost: a steady-state ``run`` validates its operands and makes one C call into cuDNN
(:class:`.cudnn_backend.RawLaunch`), not the frontend's Python ``execute``.  The family's unfold /
fold (im2col / col2im) are CuTe DSL kernels: :mod:`.im2col`.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

import numpy as np

from ...dtypes import DType, bfloat16, dtype as as_dtype, float16, float32, float64
from ...errors import InvalidProblemError, UnsupportedError, WorkspaceTooSmallError
from ...plan import Plan, align_up, check_writable_no_overlap, prod, view_arg
from ...runtime import trace
from ...tensor import TensorView, contiguous_strides
from ...vocabulary import (BackendKind, KernelSku, OpCategory, PlanPreference,
                           PrecisionGuarantee)
from . import cudnn_backend as cb

#: the dtypes the plans take
CONV_DTYPES = (float16, bfloat16, float32, float64)
#: accepted layout names → the two layouts
LAYOUTS = {"NCHW": "NCHW", "NCL": "NCHW", "NCDHW": "NCHW", "NHWC": "NHWC", "NLC": "NHWC",
           "NDHWC": "NHWC"}
#: the fused activations
ACTIVATIONS = (None, "relu")


# ----------------------------------------------------------------------------- tuning
@dataclass(frozen=True)
class ConvTuning:
    """The conv plans' engine preferences (``PlanPreference(tuning=ConvTuning(...))``):
    ``allow_tf32`` lets float32 convolutions use TF32 tensor cores (10-bit mantissa products,
    float32 accumulation; default off: strict float32); ``deterministic`` excludes cuDNN's
    nondeterministic engines (bit-stable reruns, possibly slower)."""

    allow_tf32: bool = False
    deterministic: bool = False

    def __post_init__(self):
        for f in ("allow_tf32", "deterministic"):
            v = getattr(self, f)
            if not isinstance(v, (bool, np.bool_)):
                raise InvalidProblemError(f"ConvTuning: {f} must be a bool, got {v!r}")
            object.__setattr__(self, f, bool(v))


# ---------------------------------------------------------------------------- helpers
def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _ints(v, spatial: int, name: str, lo: int) -> Tuple[int, ...]:
    """``v`` (an int, or a sequence of ``spatial`` ints) as a tuple of ``spatial`` ints >= lo."""
    if _is_int(v):
        v = (int(v),) * spatial
    try:
        t = tuple(v)
    except TypeError:
        raise InvalidProblemError(f"conv: {name} must be an int or a tuple of {spatial} ints, "
                                  f"got {v!r}") from None
    if len(t) != spatial or not all(_is_int(x) for x in t):
        raise InvalidProblemError(f"conv: {name} must be an int or a tuple of {spatial} ints, "
                                  f"got {v!r}")
    t = tuple(int(x) for x in t)
    if any(x < lo for x in t):
        raise InvalidProblemError(f"conv: {name} must be >= {lo} in every dim, got {t}")
    return t


def layout_strides(shape, layout: str) -> Tuple[int, ...]:
    """Element strides of a dense operand of logical ``shape`` ``(N, C, *spatial)`` (or a filter
    ``(O, I, *kernel)``) in ``layout``: "NCHW" row-major, "NHWC" channels innermost then the
    spatial dims then N (torch's channels_last / channels_last_3d)."""
    shape = tuple(shape)
    if layout == "NCHW":
        return contiguous_strides(shape)
    phys = (shape[0],) + shape[2:] + (shape[1],)
    ps = contiguous_strides(phys)
    return (ps[0], ps[-1]) + tuple(ps[1:-1])


def strides_match(v: TensorView, strides) -> bool:
    """True when ``v`` addresses its elements like ``strides`` (extents of 1 and empty views
    match anything)."""
    if v.numel == 0:
        return True
    return all(n == 1 or s == e for n, s, e in zip(v.shape, v.strides, strides))


def conv_out_size(i: int, k: int, s: int, p: int, pe: int, d: int) -> int:
    """torch's convolution output length (may be < 1: invalid)."""
    return (i + p + pe - d * (k - 1) - 1) // s + 1


def conv_transpose_out_size(i: int, k: int, s: int, p: int, d: int, op: int) -> int:
    """torch's transposed-convolution output length (may be < 1: invalid)."""
    return (i - 1) * s - 2 * p + d * (k - 1) + op + 1


# --------------------------------------------------------------------------- descriptor
@dataclass(frozen=True)
class ConvDescriptor:
    """A ``spatial``-D convolution (``transposed``: transposed convolution) of x
    ``(n, c, *in_size)`` into y ``(n, k, *out_size)``; see the module docstring for the weight
    shapes, the output formulas and the layouts.  ``stride`` / ``padding`` / ``dilation`` /
    ``output_padding`` / ``padding_end``: an int or one int per spatial dim; ``groups`` divides
    c and k; ``bias`` / ``activation`` (None | "relu"): the forward's epilogue."""

    spatial: int
    n: int
    c: int
    k: int
    in_size: Tuple[int, ...]
    kernel_size: Tuple[int, ...]
    stride: Tuple[int, ...] = 1
    padding: Tuple[int, ...] = 0
    dilation: Tuple[int, ...] = 1
    groups: int = 1
    dtype: DType = float32
    layout: str = "NCHW"
    transposed: bool = False
    output_padding: Tuple[int, ...] = 0
    bias: bool = False
    activation: Optional[str] = None
    padding_end: Optional[Tuple[int, ...]] = None

    def __post_init__(self):
        sp = self.spatial
        if not _is_int(sp) or sp not in (1, 2, 3):
            raise InvalidProblemError(f"conv: spatial must be 1, 2 or 3, got {sp!r}")
        set_ = functools.partial(object.__setattr__, self)
        set_("spatial", int(sp))
        for name, lo in (("n", 0), ("c", 1), ("k", 1), ("groups", 1)):
            v = getattr(self, name)
            if not _is_int(v) or v < lo:
                raise InvalidProblemError(f"conv: {name} must be an int >= {lo}, got {v!r}")
            set_(name, int(v))
        set_("in_size", _ints(self.in_size, sp, "in_size", 1))
        set_("kernel_size", _ints(self.kernel_size, sp, "kernel_size", 1))
        set_("stride", _ints(self.stride, sp, "stride", 1))
        set_("padding", _ints(self.padding, sp, "padding", 0))
        set_("dilation", _ints(self.dilation, sp, "dilation", 1))
        set_("output_padding", _ints(self.output_padding, sp, "output_padding", 0))
        if self.c % self.groups or self.k % self.groups:
            raise InvalidProblemError(f"conv: groups={self.groups} must divide the channels "
                                      f"c={self.c} and k={self.k}")
        try:
            dt = as_dtype(self.dtype)
        except Exception:
            raise UnsupportedError(f"conv: dtype {self.dtype!r} is not wired; wired: "
                                   f"{', '.join(d.name for d in CONV_DTYPES)}") from None
        if dt not in CONV_DTYPES:
            raise UnsupportedError(f"conv: dtype {dt.name} is not wired; wired: "
                                   f"{', '.join(d.name for d in CONV_DTYPES)}")
        set_("dtype", dt)
        if not isinstance(self.layout, str) or self.layout not in LAYOUTS:
            raise InvalidProblemError(f"conv: layout must be one of {', '.join(LAYOUTS)}, got "
                                      f"{self.layout!r}")
        set_("layout", LAYOUTS[self.layout])
        for f in ("transposed", "bias"):
            v = getattr(self, f)
            if not isinstance(v, (bool, np.bool_)):
                raise InvalidProblemError(f"conv: {f} must be a bool, got {v!r}")
            set_(f, bool(v))
        if self.activation is not None and not isinstance(self.activation, str):
            raise InvalidProblemError(f"conv: activation must be None or a name, got "
                                      f"{self.activation!r}")
        if self.activation not in ACTIVATIONS:
            raise UnsupportedError(f"conv: activation {self.activation!r} is not wired; wired: "
                                   f"None, 'relu'")
        if self.transposed:
            if self.padding_end is not None:
                raise InvalidProblemError("conv: padding_end is for convolutions only (a "
                                          "transposed convolution pads symmetrically)")
            for i, (op, s, d) in enumerate(zip(self.output_padding, self.stride,
                                               self.dilation)):
                if op >= max(s, d):
                    raise InvalidProblemError(f"conv: output_padding {op} in dim {i} must be "
                                              f"smaller than stride {s} or dilation {d}")
        else:
            if any(self.output_padding):
                raise InvalidProblemError("conv: output_padding is for transposed "
                                          "convolutions only")
            pe = self.padding if self.padding_end is None else \
                _ints(self.padding_end, sp, "padding_end", 0)
            set_("padding_end", pe)
        for i, o in enumerate(self.out_size):
            if o < 1:
                raise InvalidProblemError(
                    f"conv: the output size {self.out_size} is too small in dim {i} (input "
                    f"{self.in_size}, kernel {self.kernel_size}, stride {self.stride}, padding "
                    f"{self.padding}, dilation {self.dilation})")

    # -- shapes ------------------------------------------------------------------------------
    @property
    def out_size(self) -> Tuple[int, ...]:
        """The spatial size of y (torch's formulas; see the module docstring)."""
        if self.transposed:
            return tuple(conv_transpose_out_size(i, k, s, p, d, op) for i, k, s, p, d, op in
                         zip(self.in_size, self.kernel_size, self.stride, self.padding,
                             self.dilation, self.output_padding))
        return tuple(conv_out_size(i, k, s, p, pe, d) for i, k, s, p, pe, d in
                     zip(self.in_size, self.kernel_size, self.stride, self.padding,
                         self.padding_end, self.dilation))

    @property
    def x_shape(self) -> Tuple[int, ...]:
        return (self.n, self.c) + self.in_size

    @property
    def y_shape(self) -> Tuple[int, ...]:
        return (self.n, self.k) + self.out_size

    @property
    def w_shape(self) -> Tuple[int, ...]:
        if self.transposed:
            return (self.c, self.k // self.groups) + self.kernel_size
        return (self.k, self.c // self.groups) + self.kernel_size

    @property
    def bias_shape(self) -> Tuple[int, ...]:
        return (self.k,)

    # -- the underlying convolution (a transposed convolution is its data gradient) ---------
    @property
    def conv_input_shape(self) -> Tuple[int, ...]:
        """The input of the convolution cuDNN sees: x, or y for a transposed convolution."""
        return self.y_shape if self.transposed else self.x_shape

    @property
    def conv_output_shape(self) -> Tuple[int, ...]:
        """The output of the convolution cuDNN sees: y, or x for a transposed convolution."""
        return self.x_shape if self.transposed else self.y_shape

    @property
    def pre_padding(self) -> Tuple[int, ...]:
        return self.padding

    @property
    def post_padding(self) -> Tuple[int, ...]:
        return self.padding if self.transposed else self.padding_end

    def strides_of(self, shape) -> Tuple[int, ...]:
        """The strides ``layout`` gives an operand of logical ``shape``."""
        return layout_strides(shape, self.layout)

    @property
    def macs(self) -> int:
        """Multiply-adds of the convolution (forward, data and filter gradients alike):
        N · K_conv · Π out_conv · (C_conv / groups) · Π kernel."""
        ci, co = self.conv_input_shape, self.conv_output_shape
        return prod(co) * (ci[1] // self.groups) * prod(self.kernel_size)


# ------------------------------------------------------------------------------- args
@dataclass
class ConvArgs:
    """ConvPlan operands: x ``desc.x_shape``, w ``desc.w_shape``, y (output) ``desc.y_shape``,
    bias ``(k,)`` when ``desc.bias``; all ``desc.dtype``, on one device."""

    x: object
    w: object
    y: object
    bias: object = None


@dataclass
class ConvBackwardDataArgs:
    """ConvBackwardDataPlan operands: dy ``desc.y_shape``, w ``desc.w_shape``, dx (output)
    ``desc.x_shape``."""

    dy: object
    w: object
    dx: object


@dataclass
class ConvBackwardFilterArgs:
    """ConvBackwardFilterPlan operands: x ``desc.x_shape``, dy ``desc.y_shape``, dw (output)
    ``desc.w_shape``."""

    x: object
    dy: object
    dw: object


# ------------------------------------------------------------------------------- plans
def conv_precision(dt: DType, tuning: ConvTuning) -> PrecisionGuarantee:
    """Math and accumulation in float32 for f16 / bf16 / f32 (TF32 products when allowed: the
    sku's ``tf32`` knob), float64 for f64; deterministic / bit-stable only with
    ``ConvTuning(deterministic=True)``."""
    acc = float64 if dt == float64 else float32
    return PrecisionGuarantee(math_precision=acc, accumulator=acc,
                              bit_stable_on_same_hardware=tuning.deterministic,
                              deterministic=tuning.deterministic)


@functools.lru_cache(maxsize=256)
def _elementwise_plan(op: str, shapes, dt: DType, arch):
    from ..elementwise.elementwise import ElementwiseDescriptor, ElementwisePlan

    return ElementwisePlan.select(ElementwiseDescriptor(op, shapes, dt),
                                  PlanPreference(arch=arch))


def _spans_overlap(a: TensorView, b: TensorView) -> bool:
    if not a.numel or not b.numel:
        return False
    al, ah = a.span_elements()
    bl, bh = b.span_elements()
    a0, a1 = a.ptr + al * a.itemsize, a.ptr + (ah + 1) * a.itemsize
    b0, b1 = b.ptr + bl * b.itemsize, b.ptr + (bh + 1) * b.itemsize
    return a0 < b1 and b0 < a1


class _ConvPlanBase(Plan):
    """What the three conv plans share.  A subclass sets ``_kind`` ("forward",
    "backward_data", "backward_filter") and ``_fields``: the Args field names with their
    expected shapes (output last); ``_cudnn`` maps it to the cuDNN graph and its roles."""

    descriptor = ConvDescriptor
    recordable = False
    _kind = ""

    # -- select ------------------------------------------------------------------------------
    def _plan(self) -> None:
        d = self.desc
        tuning = self.pref.tuning_for(ConvTuning)
        if not isinstance(tuning, ConvTuning):
            raise InvalidProblemError("conv: the tuning record must be a ConvTuning")
        self._tuning = tuning
        ci, co, w = d.conv_input_shape, d.conv_output_shape, d.w_shape
        geo = lambda s: (tuple(s), d.strides_of(s))   # noqa: E731
        op, roles = self._cudnn(d)
        fused = self._kind == "forward" and not d.transposed
        bias = None
        if fused and d.bias:
            bshape = (1, d.k) + (1,) * d.spatial
            bias = geo(bshape)
        self._spec = cb.ConvGraph(
            op, geo(ci), geo(w), geo(co), d.pre_padding, d.post_padding, d.stride, d.dilation,
            d.dtype, bias, fused and d.activation == "relu", tuning.allow_tf32,
            tuning.deterministic, self.pref.max_workspace_bytes)
        #: spec role → Args field
        self._roles = roles
        #: the epilogue run after the graph (elementwise plans): (bias?, relu?)
        self._post = None
        if self._kind == "forward" and d.transposed and (d.bias or d.activation):
            self._post = (d.bias, d.activation == "relu")
        self._ws: Dict[int, int] = {}
        self._out_field = self._fields()[-1][0]
        shapes = dict(self._fields())
        #: per Args field: (shape, the dense strides of the layout), computed once
        self._expect = tuple((f, tuple(sh), d.strides_of(sh)) for f, sh in self._fields())
        #: this thread's built graphs by device ordinal (run-time lookups skip hashing the spec)
        self._local = threading.local()
        self._empty = prod(shapes[self._out_field]) == 0
        # an empty reduction (a filter gradient over an empty batch) writes zeros
        self._zero_only = not self._empty and self._kind == "backward_filter" and d.n == 0
        name = {"forward": "conv", "backward_data": "conv_backward_data",
                "backward_filter": "conv_backward_filter"}[self._kind]
        if d.transposed:
            name = name.replace("conv", "conv_transpose", 1)
        epi = None
        if self._kind == "forward":
            epi = "+".join(e for e, on in (("bias", d.bias), ("relu", d.activation == "relu"))
                           if on) or None
        self._sku = KernelSku(OpCategory.CONV, name, d.dtype, self._arch, BackendKind.VENDOR,
                              conv_precision(d.dtype, tuning),
                              layout=f"{d.layout}:{d.spatial}d", epilogue=epi,
                              template=f"cudnn.conv_{op}",
                              knobs=(("tf32", tuning.allow_tf32 and d.dtype == float32),
                                     ("deterministic", tuning.deterministic)))

    def _cudnn(self, d: ConvDescriptor):
        raise NotImplementedError

    def _fields(self):
        raise NotImplementedError

    def graph_spec(self) -> cb.ConvGraph:
        """The cuDNN graph this plan runs (before an unfusable epilogue is split off)."""
        return self._spec

    def epilogue_after_graph(self) -> Optional[Tuple[bool, bool]]:
        """(bias, relu) when the forward's epilogue runs after the cuDNN graph (elementwise
        plans) instead of fused into it; None otherwise.  Known for transposed convolutions
        at select, for convolutions after the first graph build."""
        return self._post

    # -- sizes -------------------------------------------------------------------------------
    def is_empty(self) -> bool:
        return self._empty

    def _label(self) -> str:
        return f"{type(self).__name__}({self.desc})"

    def _built(self, ordinal: int):
        cache = getattr(self._local, "built", None)
        if cache is None:
            cache = self._local.built = {}
        hit = cache.get(ordinal)
        if hit is None or hit[1] is not self._post:
            hit = cache[ordinal] = (self._build_graph(ordinal), self._post)
        return hit[0]

    def _build_graph(self, ordinal: int):
        what = self._label()
        spec = self._spec
        if self._post is None and (spec.bias is not None or spec.relu):
            try:
                return cb.graph(spec, ordinal, what)
            except (UnsupportedError, cb.CudnnError):   # no fused engine: run it separately
                self._post = (spec.bias is not None, spec.relu)
        if self._post is not None:
            spec = spec.without_epilogue()
        return cb.graph(spec, ordinal, what)

    def workspace_size(self) -> int:
        """cuDNN's workspace bytes for this problem (queried from the graph, built on the
        current device the first time: needs a GPU; 0 for empty problems)."""
        if self._empty or self._zero_only:
            return 0
        from ...runtime.device import current_device_ordinal

        ordinal = current_device_ordinal()
        n = self._ws.get(ordinal)
        if n is None:
            n = self._ws[ordinal] = align_up(self._built(ordinal).workspace)
        return n

    # -- run ---------------------------------------------------------------------------------
    def _bind(self, args):
        d = self.desc
        views = {}
        dev = None
        for field, shape, expect in self._expect:
            v = view_arg(getattr(args, field, None), field, shape=shape, dtype=d.dtype,
                         device=dev)
            dev = v.device if dev is None else dev
            if v.strides != expect and not strides_match(v, expect):
                raise UnsupportedError(
                    f"conv: {field} has strides {v.strides} for shape {v.shape}; the {d.layout} "
                    f"layout needs {expect} (copy it to that layout first)")
            views[field] = v
        if self._kind == "forward" and d.bias:
            b = view_arg(args.bias, "bias", shape=(d.k,), dtype=d.dtype, device=dev)
            if d.k > 1 and b.strides[0] != 1:
                raise UnsupportedError(f"conv: bias must be a dense vector (stride 1), got "
                                       f"stride {b.strides[0]}")
            views["bias"] = b
        elif self._kind == "forward" and getattr(args, "bias", None) is not None:
            raise InvalidProblemError("conv: a bias was passed but the descriptor has "
                                      "bias=False")
        out = views[self._out_field]
        check_writable_no_overlap(out, self._out_field)
        for name, v in views.items():
            if name != self._out_field and _spans_overlap(out, v):
                raise InvalidProblemError(f"conv: the output {self._out_field} overlaps "
                                          f"{name}; outputs must not alias the inputs")
        views["dev"] = dev
        return views

    def _launch(self, bound, stream: int, ws) -> None:
        trace.refuse("vendor call")
        ordinal = bound["dev"]
        out = bound[self._out_field]
        if self._zero_only:
            from ...runtime.memory import memset_d8

            memset_d8(out.ptr, 0, out.numel * out.itemsize, stream)
            return
        built = self._built(ordinal)
        need = align_up(built.workspace)
        if ws.nbytes < need:
            raise WorkspaceTooSmallError(need, ws.nbytes)
        ptrs = {role: bound[field].ptr for role, field in self._roles.items()
                if role != "bias" or (self._post is None and self._spec.bias is not None)}
        cb.execute(built, ptrs, stream, ws.ptr, self._label, ordinal)
        if self._post is not None:
            self._epilogue(bound, stream)

    def _epilogue(self, bound, stream: int) -> None:
        from ..elementwise.elementwise import ElementwiseArgs

        d = self.desc
        y = bound[self._out_field]
        with_bias, relu = self._post
        if with_bias:
            b = bound["bias"]
            bshape = (1, d.k) + (1,) * d.spatial
            bview = TensorView(b.ptr, bshape, (d.k, 1) + (1,) * d.spatial, d.dtype, y.device)
            plan = _elementwise_plan("add", (tuple(y.shape), bshape), d.dtype, self._arch)
            plan.run(ElementwiseArgs(inputs=(y, bview), outputs=(y,)), stream=stream)
        if relu:
            plan = _elementwise_plan("relu", (tuple(y.shape),), d.dtype, self._arch)
            plan.run(ElementwiseArgs(inputs=(y,), outputs=(y,)), stream=stream)


class ConvPlan(_ConvPlanBase):
    """y = conv(x, w) (+ bias, + ReLU) — or the transposed convolution — on cuDNN (see the
    module docstring)."""

    _kind = "forward"

    def _fields(self):
        d = self.desc
        return (("x", d.x_shape), ("w", d.w_shape), ("y", d.y_shape))

    def _cudnn(self, d):
        if d.transposed:      # y = the data gradient of the convolution y → x
            return "dgrad", {"dy": "x", "w": "w", "dx": "y"}
        roles = {"x": "x", "w": "w", "y": "y"}
        if d.bias:
            roles["bias"] = "bias"
        return "fprop", roles


class ConvBackwardDataPlan(_ConvPlanBase):
    """dx from dy (and w): the data gradient of :class:`ConvPlan`'s convolution (for a
    transposed convolution: the forward convolution of dy)."""

    _kind = "backward_data"

    def _fields(self):
        d = self.desc
        return (("dy", d.y_shape), ("w", d.w_shape), ("dx", d.x_shape))

    def _cudnn(self, d):
        if d.transposed:
            return "fprop", {"x": "dy", "w": "w", "y": "dx"}
        return "dgrad", {"dy": "dy", "w": "w", "dx": "dx"}


class ConvBackwardFilterPlan(_ConvPlanBase):
    """dw from x and dy: the filter gradient of :class:`ConvPlan`'s convolution (dw = 0 for an
    empty batch)."""

    _kind = "backward_filter"

    def _fields(self):
        d = self.desc
        return (("x", d.x_shape), ("dy", d.y_shape), ("dw", d.w_shape))

    def _cudnn(self, d):
        if d.transposed:      # the convolution's input is y (grad: dy), its output x
            return "wgrad", {"x": "dy", "dy": "x", "dw": "dw"}
        return "wgrad", {"x": "x", "dy": "dy", "dw": "dw"}
