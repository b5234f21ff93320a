"""cuDNN through NVIDIA's Python frontend (``nvidia-cudnn-frontend``, module ``cudnn``): the
convolution graphs the conv plans run.

- :func:`library` imports ``cudnn`` lazily (importing this package never loads cuDNN); a host
  without the frontend gets an UnsupportedError naming the install.
- :func:`handle`: one ``cudnn.Handle`` per (thread, device), made on first use with the
  device's primary context current (a cuDNN handle must not be shared between threads);
  :func:`execute` binds it to the caller's stream (``cudnn.set_stream``, which the frontend
  skips when the stream did not change) before every run.
- :class:`ConvGraph`: everything that defines one cuDNN graph — the operation (``fprop`` /
  ``dgrad`` / ``wgrad``), the dims and strides of the convolution's three operands in the
  logical ``(N, C, *spatial)`` / ``(K, C/groups, *kernel)`` order, the padding / stride /
  dilation, the dtype, the fused epilogue (bias, ReLU: fprop only) and the engine filters.
  :func:`graph` builds it once per (graph, device, thread) — validate, build_operation_graph,
  create_execution_plans with heuristics A then FALLBACK, check_support, then the first ranked
  plan that builds — and keeps the 64 most recently used per thread.
- Engine filters (cuDNN's numerical notes, as PyTorch applies them): engines that down-convert
  their inputs or reduce in reduced precision are always excluded (the plans promise float32
  accumulation for half inputs); tensor-core engines are excluded for float32 unless TF32 is
  allowed (``ConvTuning(allow_tf32=True)``); nondeterministic engines are excluded when
  ``ConvTuning(deterministic=True)``.
- Errors: "no engine for this graph" → UnsupportedError naming the problem; an allocation
  failure → DeviceOutOfMemoryError; a missing library → UnsupportedError with the install
  hint; any other failure of a cuDNN call → :class:`CudnnError` (a DriverError).

Operands are passed to ``execute`` as raw device addresses (Python ints) keyed by role; the
geometry is the graph's declaration.  The workspace is the caller's (a raw address, or None when
the plan needs none).  The steady-state run skips the frontend's Python ``execute`` (25–45 µs of
variant-pack rebuilding per call): :class:`RawLaunch` writes the addresses into a per-graph
pointer array in the backend's order and makes one C call; graphs the frontend cannot serve that
way (python engines, a frontend without the lowered-graph entry points) use ``execute``.
"""

from __future__ import annotations

import collections
import ctypes
import importlib
import os
import threading
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from ...dtypes import DType, bfloat16, float16, float32, float64
from ...errors import (BaracudaError, DeviceOutOfMemoryError, DriverError, UnsupportedError)

INSTALL_HINT = ("install NVIDIA's cuDNN frontend and cuDNN 9: pip install nvidia-cudnn-frontend "
                "nvidia-cudnn-cu13 (or nvidia-cudnn-cu12)")

#: graphs kept per thread (least recently used ones are dropped)
GRAPH_CACHE_SIZE = 64
#: BARACUDA_DSL_CUDNN_RAW=0 turns the raw-pointer launch off (every run goes through the
#: frontend's public ``execute``; for diagnosis)
_RAW_ENABLED = os.environ.get("BARACUDA_DSL_CUDNN_RAW", "1") != "0"


class CudnnError(DriverError):
    """A cuDNN frontend / backend call failed (not an unsupported problem, not out of memory)."""


_LIB = []
_LOCK = threading.Lock()


def library():
    """The ``cudnn`` module (nvidia-cudnn-frontend), imported once; UnsupportedError when it is
    not installed or cannot load."""
    if _LIB:
        return _LIB[0]
    with _LOCK:
        if not _LIB:
            try:
                mod = importlib.import_module("cudnn")
            except (ImportError, OSError) as e:
                raise UnsupportedError(f"the conv family needs cuDNN ({e}); {INSTALL_HINT}") \
                    from None
            _LIB.append(mod)
    return _LIB[0]


def is_available() -> bool:
    """True when the ``cudnn`` frontend module imports (the backend library loads on first use)."""
    try:
        library()
        return True
    except UnsupportedError:
        return False


def data_type(dt: DType):
    """``cudnn.data_type`` of ``dt`` (float16 / bfloat16 / float32 / float64)."""
    c = library()
    table = {float16: c.data_type.HALF, bfloat16: c.data_type.BFLOAT16,
             float32: c.data_type.FLOAT, float64: c.data_type.DOUBLE}
    try:
        return table[dt]
    except KeyError:
        raise UnsupportedError(f"conv: dtype {dt.name} has no cuDNN path; wired: float16, "
                               f"bfloat16, float32, float64") from None


def compute_type(dt: DType):
    """The math / accumulation type of ``dt``'s convolutions: DOUBLE for float64, FLOAT else."""
    c = library()
    return c.data_type.DOUBLE if dt == float64 else c.data_type.FLOAT


# --------------------------------------------------------------------------------- errors
def typed(e: BaseException, what: str, ordinal: int = 0) -> BaracudaError:
    """A frontend exception as a typed error (see the module docstring)."""
    if isinstance(e, BaracudaError):
        return e
    text = str(e)
    low = text.lower()
    c = _LIB[0] if _LIB else None
    not_supported = c is not None and isinstance(e, getattr(c, "cudnnGraphNotSupportedError",
                                                           ()))
    if "symbol" in low or "libcudnn" in low or isinstance(e, (ImportError, OSError)):
        return UnsupportedError(f"{what}: cuDNN could not be loaded ({text}); {INSTALL_HINT}")
    if "out_of_memory" in low or "alloc_failed" in low or "out of memory" in low:
        return DeviceOutOfMemoryError(0, ordinal, f"{what}: {text}")
    if not_supported or "not_supported" in low or "not supported" in low \
            or "no valid engine" in low or "no plan" in low or "no engine" in low \
            or isinstance(e, (NotImplementedError, ValueError)):
        return UnsupportedError(f"{what}: cuDNN cannot run this problem ({text})")
    return CudnnError(what, text)


# -------------------------------------------------------------------------------- handles
class _ThreadState(threading.local):
    def __init__(self):
        self.handles: Dict[int, object] = {}
        self.graphs: "collections.OrderedDict" = collections.OrderedDict()


_STATE = _ThreadState()


def handle(ordinal: int):
    """This thread's ``cudnn.Handle`` for device ``ordinal`` (made on first use)."""
    h = _STATE.handles.get(ordinal)
    if h is None:
        from ...runtime.device import bind_thread

        bind_thread(ordinal)
        c = library()
        try:
            h = c.create_handle()
        except Exception as e:
            raise typed(e, "cudnn.create_handle", ordinal) from None
        _STATE.handles[ordinal] = h
    return h


# --------------------------------------------------------------------------------- graphs
@dataclass(frozen=True)
class ConvGraph:
    """One cuDNN convolution graph.  ``op``: "fprop" (x, w → y), "dgrad" (dy, w → dx) or
    "wgrad" (x, dy → dw); ``x`` / ``w`` / ``y``: (dims, strides) of the convolution's input
    ``(N, C, *spatial)``, filter ``(K, C/groups, *kernel)`` and output ``(N, K, *out)`` (the
    gradients share their operand's geometry); ``pre`` / ``post``: padding before / after per
    spatial dim; ``bias`` (dims, strides of the ``(1, K, 1, ...)`` bias) and ``relu``: fprop's
    fused epilogue; ``tf32`` / ``deterministic``: the engine filters; ``max_workspace``: plans
    needing more workspace bytes are excluded (None: no cap)."""

    op: str
    x: Tuple[Tuple[int, ...], Tuple[int, ...]]
    w: Tuple[Tuple[int, ...], Tuple[int, ...]]
    y: Tuple[Tuple[int, ...], Tuple[int, ...]]
    pre: Tuple[int, ...]
    post: Tuple[int, ...]
    stride: Tuple[int, ...]
    dilation: Tuple[int, ...]
    dtype: DType
    bias: Optional[Tuple[Tuple[int, ...], Tuple[int, ...]]] = None
    relu: bool = False
    tf32: bool = False
    deterministic: bool = False
    max_workspace: Optional[int] = None

    @property
    def roles(self) -> Tuple[str, ...]:
        """The operand roles of the variant pack, inputs first, output last."""
        r = {"fprop": ("x", "w"), "dgrad": ("dy", "w"), "wgrad": ("x", "dy")}[self.op]
        if self.bias is not None:
            r = r + ("bias",)
        return r + ({"fprop": "y", "dgrad": "dx", "wgrad": "dw"}[self.op],)

    def without_epilogue(self) -> "ConvGraph":
        return ConvGraph(self.op, self.x, self.w, self.y, self.pre, self.post, self.stride,
                         self.dilation, self.dtype, None, False, self.tf32, self.deterministic,
                         self.max_workspace)


class RawLaunch:
    """The frontend's lowered backend graph driven directly: one C call per run
    (``_execute_with_raw_ptrs``) with the operand addresses written into a per-graph pointer
    array in the backend's variant-pack order (ascending uid), instead of the frontend's
    Python ``execute`` (which rebuilds and validates a variant pack: 25–45 µs a call).  Built
    only when the selected plan is a backend plan and the frontend exposes the lowered graph
    (nvidia-cudnn-frontend 1.32); otherwise :func:`execute` uses the public ``execute``."""

    __slots__ = ("lowered", "index", "ptrs", "slots", "address", "handle")

    def __init__(self, lowered, index: int, n: int, slots: Dict[str, int], h):
        self.lowered = lowered
        self.index = index
        self.ptrs = (ctypes.c_uint64 * n)()
        self.slots = slots
        self.address = ctypes.addressof(self.ptrs)
        self.handle = int(h.backend_handle)

    def run(self, ptrs: Dict[str, int], workspace: int) -> None:
        arr, slots = self.ptrs, self.slots
        for role, p in ptrs.items():
            arr[slots[role]] = p
        self.lowered._execute_with_raw_ptrs(self.address, len(arr), workspace, self.handle,
                                            self.index)


def raw_launch(g, tensors: Dict[str, object], roles, h) -> Optional[RawLaunch]:
    """:class:`RawLaunch` of the built graph ``g`` (its selected plan), or None when the
    frontend lacks the pieces (a python-engine plan, another frontend version) or the backend's
    variant pack holds slots other than the operands ``roles``."""
    try:
        if g.selected_engine is not None or h.backend_handle is None:
            return None
        lowered = g._lowered_graph
        cfg = g._materialize_backend_plan(g._plan_index)
        index = -1 if cfg.cpp_index is None else int(cfg.cpp_index)
        lowered._prepare_variant_pack_template()
        order = [int(u) for u in lowered._get_variant_pack_uids_sorted()]
        pos = {u: i for i, u in enumerate(order)}
        slots = {r: pos[int(tensors[r].get_uid())] for r in roles}
        if len(order) != len(slots) or len(set(slots.values())) != len(slots):
            return None
        return RawLaunch(lowered, index, len(order), slots, h)
    except Exception:                     # noqa: BLE001 -- any mismatch: the public path
        return None


class Built:
    """A built graph: the frontend graph, its tensors by role, its workspace bytes, the handle
    it was built with and its :class:`RawLaunch` (None: run through ``graph.execute``)."""

    __slots__ = ("graph", "tensors", "workspace", "handle", "raw")

    def __init__(self, graph, tensors, workspace, h, raw=None):
        self.graph = graph
        self.tensors = tensors
        self.workspace = int(workspace)
        self.handle = h
        self.raw = raw


def _note_filters(c, spec: ConvGraph):
    notes = [c.numerical_note.DOWN_CONVERT_INPUTS, c.numerical_note.REDUCED_PRECISION_REDUCTION]
    if spec.dtype == float32 and not spec.tf32:
        notes.append(c.numerical_note.TENSOR_CORE)
    if spec.deterministic:
        notes.append(c.numerical_note.NONDETERMINISTIC)
    return notes


def declare(spec: ConvGraph, ordinal: int, filters: bool = True):
    """``(graph, tensors by role, handle)``: ``spec``'s frontend graph declared, validated and
    planned (heuristics A then FALLBACK, the engine filters applied unless ``filters`` is
    False), no plan built yet."""
    c = library()
    h = handle(ordinal)
    io = data_type(spec.dtype)
    comp = compute_type(spec.dtype)
    g = c.pygraph(io_data_type=io, intermediate_data_type=comp, compute_data_type=comp, handle=h)
    attrs = dict(pre_padding=list(spec.pre), post_padding=list(spec.post),
                 stride=list(spec.stride), dilation=list(spec.dilation))

    def tensor(name, geom):
        return g.tensor(name=name, dim=list(geom[0]), stride=list(geom[1]), data_type=io)

    t: Dict[str, object] = {}
    if spec.op == "fprop":
        t["x"], t["w"] = tensor("x", spec.x), tensor("w", spec.w)
        out = g.conv_fprop(t["x"], t["w"], compute_data_type=comp, **attrs)
        if spec.bias is not None or spec.relu:
            out.set_dim(list(spec.y[0])).set_stride(list(spec.y[1])).set_data_type(comp)
            if spec.bias is not None:
                t["bias"] = tensor("bias", spec.bias)
                out = g.bias(input=out, bias=t["bias"], compute_data_type=comp)
                out.set_dim(list(spec.y[0])).set_stride(list(spec.y[1])).set_data_type(comp)
            if spec.relu:
                out = g.relu(input=out, compute_data_type=comp)
        t["y"] = out
        geom = spec.y
    elif spec.op == "dgrad":
        t["dy"], t["w"] = tensor("dy", spec.y), tensor("w", spec.w)
        t["dx"] = g.conv_dgrad(loss=t["dy"], filter=t["w"], compute_data_type=comp, **attrs)
        geom = spec.x
    elif spec.op == "wgrad":
        t["x"], t["dy"] = tensor("x", spec.x), tensor("dy", spec.y)
        t["dw"] = g.conv_wgrad(image=t["x"], loss=t["dy"], compute_data_type=comp, **attrs)
        geom = spec.w
    else:
        raise ValueError(spec.op)
    out_role = spec.roles[-1]
    t[out_role].set_output(True).set_dim(list(geom[0])).set_stride(list(geom[1])) \
        .set_data_type(io)

    g.validate()
    g.build_operation_graph()
    if filters:
        g.deselect_numeric_notes(_note_filters(c, spec))
    if spec.max_workspace is not None:
        g.deselect_workspace_greater_than(int(spec.max_workspace))
    g.create_execution_plans([c.heur_mode.A, c.heur_mode.FALLBACK])
    g.check_support()
    return g, t, h


def _build(spec: ConvGraph, ordinal: int) -> Built:
    c = library()
    g, t, h = declare(spec, ordinal)
    # the first ranked plan that builds (plans the note filters exclude, or that fail to
    # build, are skipped; the frontend's own walk stops at the first failing backend entry)
    failures = []
    for i in range(g.get_execution_plan_count()):
        try:
            g.build_plan_at_index(i)
        except Exception as e:            # noqa: BLE001 -- a decline of this one plan
            failures.append(f"[{i}] {e}")
            continue
        roles = [r for r in spec.roles if r in t]
        raw = raw_launch(g, t, roles, h) if _RAW_ENABLED else None
        return Built(g, t, g.get_workspace_size(), h, raw)
    raise c.cudnnGraphNotSupportedError(
        "no execution plan could be built: " + ("; ".join(failures[:4]) or "no plans"))


def graph(spec: ConvGraph, ordinal: int, what: str) -> Built:
    """This thread's built graph for ``spec`` on device ``ordinal`` (built on first use; GPU)."""
    table = _STATE.graphs
    key = (spec, ordinal)
    hit = table.get(key)
    if hit is not None:
        table.move_to_end(key)
        return hit
    try:
        hit = _build(spec, ordinal)
    except BaracudaError:
        raise
    except Exception as e:
        raise typed(e, what, ordinal) from None
    table[key] = hit
    while len(table) > GRAPH_CACHE_SIZE:
        table.popitem(last=False)
    return hit


def execute(built: Built, ptrs: Dict[str, int], stream: int, workspace: int, what,
            ordinal: int = 0) -> None:
    """Run ``built`` on ``stream`` with the operands at ``ptrs`` (role → device address) and
    the workspace at ``workspace`` (ignored when the graph needs none); ``what`` (a string, or
    a callable giving one, formatted only on failure) labels the typed error."""
    from ...runtime.device import bind_thread

    c = library()
    bind_thread(ordinal)
    try:
        c.set_stream(built.handle, int(stream))
        if built.raw is not None:
            built.raw.run(ptrs, int(workspace) if built.workspace else 0)
            return
        pack = {built.tensors[r]: int(p) for r, p in ptrs.items()}
        built.graph.execute(pack, int(workspace) if built.workspace else None,
                            handle=built.handle)
    except Exception as e:
        raise typed(e, what() if callable(what) else what, ordinal) from None
