"""The Plan lifecycle shared by every op family, and the validation helpers plans use.

    desc = RMSNormDescriptor(shape=(8, 4096), normalized_ndim=1, dtype="bf16")
    plan = RMSNormPlan.select(desc, PlanPreference())   # validates, picks a kernel SKU
    ws   = plan.workspace_size()                        # bytes of caller-owned scratch
    args = RMSNormArgs(x=x, y=y, weight=w)              # device views (any DLPack / CAI object)
    plan.can_implement(args)                            # shapes, dtypes, devices, alignment
    plan.run(args, stream=None, workspace=None)         # checks first; empty problems return at once
    plan.sku(), plan.precision_guarantee()

Every check raises a typed error from :mod:`baracuda_dsl.errors` before anything is launched.
"""

from __future__ import annotations

import math
from typing import Iterable, Optional, Sequence, Tuple

from .dtypes import DType, dtype as as_dtype
from .errors import (BufferTooSmallError, DeviceMismatchError, InvalidProblemError,
                     MisalignedOperandError, UnsupportedError, WorkspaceTooSmallError)
from .runtime import trace
from .runtime.stream import stream_handle
from .runtime.trace import ENABLED as _RECORDING, STATE as _TRACE
from .tensor import TensorView, as_view
from .vocabulary import ArchSku, KernelSku, PlanPreference, Workspace


class Plan:
    """Base class of every plan: one ``select`` and one ``run`` for all of them.

    A family plan sets :attr:`descriptor` (the Descriptor type it takes) and implements

    - ``_plan()``: validate ``self.desc`` for ``self._arch`` and pick the kernel(s): set
      ``self._sku`` (and whatever the launch needs); raise typed errors, never launch;
    - ``_bind(args)``: check the Args (shapes, dtypes, devices, alignment, sizes) and return
      what ``_launch`` needs (usually the tensor views);
    - ``_launch(bound, stream, workspace)``: enqueue the kernel(s);
    - optionally ``workspace_size()``, ``is_empty()`` and ``_plan_type(desc)`` (a classmethod
      returning the plan class that serves ``desc``, when one public plan hands some problems
      to another class, as ``ReducePlan`` does for var / std).
    """

    #: the Descriptor type :meth:`select` accepts
    descriptor: type = object
    #: repeated runs replay a launch record (runtime/trace.py) instead of re-binding and
    #: re-planning; plans whose launches depend on state outside the Args (none today) or that
    #: rarely repeat a call (random draws with a new offset each time) turn it off
    recordable: bool = True

    def __init__(self, desc, pref: PlanPreference):
        self.desc = desc
        self.pref = pref
        self._arch = plan_arch(pref)
        self._sku: Optional[KernelSku] = None

    # -- lifecycle -------------------------------------------------------------------------
    @classmethod
    def select(cls, desc, pref: Optional[PlanPreference] = None) -> "Plan":
        """Validate ``desc`` and pick a kernel SKU for the preference's arch (default: the
        current device's arch; ``PlanPreference(arch=...)`` selects without a GPU)."""
        pref = resolve_pref(pref)
        if not isinstance(desc, cls.descriptor):
            raise InvalidProblemError(f"{cls.__name__} needs a {cls.descriptor.__name__}, got "
                                      f"{type(desc).__name__}")
        plan = cls._plan_type(desc)(desc, pref)
        plan._plan()
        return plan

    @classmethod
    def _plan_type(cls, desc) -> type:
        return cls

    def _plan(self) -> None:
        raise NotImplementedError

    def workspace_size(self) -> int:
        """Bytes of caller-owned device scratch ``run`` needs (0 for most plans)."""
        return 0

    def can_implement(self, args) -> None:
        """Raise a typed error if ``args`` do not fit this plan; return None otherwise."""
        self._bind(args)

    def run(self, args, stream=None, workspace=None) -> None:
        """Check ``args`` and the workspace, then enqueue the kernel(s) on ``stream`` (None: the
        thread's current stream); empty problems return after the checks without launching.

        A repeated call with the same operand layouts (dtype, shape, strides, device, pointer
        alignment class) and overlap pattern replays the launch record of the first two
        (their checks passed and the launches they made are re-issued with the new pointers;
        see runtime/trace.py)."""
        if self.recordable and _TRACE.tracer is None and _RECORDING[0]:
            if self._run_recorded(args, stream, workspace):
                return
        self._run_full(args, stream, workspace)

    def _run_recorded(self, args, stream, workspace) -> bool:
        """Replay or record this call; False when it must take the full path unrecorded."""
        parts, ptrs, objs = [], [], []
        fields = getattr(args, "__dict__", None)
        if fields is None or not trace.call_key(fields.values(), parts, ptrs, objs):
            return False
        ws = None
        if workspace is not None:
            ws = as_workspace(workspace)
            parts.append(("workspace", ws.ptr & 255))
            ptrs.append(ws.ptr)
            objs.append(ws)
        key = tuple(parts)
        table = self.__dict__.get("_launch_records")
        if table is None:
            table = self.__dict__.setdefault("_launch_records",
                                             trace.RecordTable(256, type(self).__name__))
        rec = table.get(key)
        if rec is trace.REFUSED:
            return False
        if rec is not None and rec.confirmed:
            if (ws is None or ws.nbytes >= rec.extra) and \
                    trace.overlap_pattern(ptrs, rec.spans) == rec.pattern:
                rec.replay(ptrs, stream_handle(stream), None)
                return True
            return False
        with trace.Tracer() as tr:
            self._run_full(args, stream, workspace)
        new = trace.record_of(tr, ptrs, objs)
        if new is not None:
            new.extra = self.workspace_size()
        trace.settle(table, key, rec, new, tr.why)
        return True

    def _run_full(self, args, stream, workspace) -> None:
        bound = self._bind(args)
        ws = self.check_workspace(workspace)
        if self.is_empty():
            return
        self._launch(bound, stream_handle(stream), ws)

    def check_workspace(self, workspace) -> Workspace:
        """The caller's workspace as a Workspace; WorkspaceTooSmallError if below workspace_size()."""
        if workspace is None:
            need = self.workspace_size()
            if need:
                raise WorkspaceTooSmallError(need, 0)
            return _NO_WORKSPACE
        ws = as_workspace(workspace)
        need = self.workspace_size()
        if ws.nbytes < need:
            raise WorkspaceTooSmallError(need, ws.nbytes)
        return ws

    def sku(self) -> KernelSku:
        """The kernel this plan picked."""
        return self._sku

    def precision_guarantee(self):
        return self._sku.precision_guarantee

    def is_empty(self) -> bool:
        """True when the problem has no elements (``run`` returns without launching)."""
        return False

    def _bind(self, args):
        raise NotImplementedError

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        raise NotImplementedError

    def _kernel(self, template, knobs, ordinal: int):
        """The loaded kernel for (template, knobs) on device ``ordinal`` for ``self._arch``,
        memoised on the plan so the hot path skips knob freezing and the global table.  The memo
        is keyed by the knobs' value; the first object seen for each value is also remembered by
        identity, so a plan that keeps its knobs objects (attributes) skips the hashing."""
        by_id = self.__dict__.setdefault("_kernels", {})
        hit = by_id.get((template.name, id(knobs), ordinal))
        if hit is not None and hit[0] is knobs:
            return hit[1]
        by_value = self.__dict__.setdefault("_kernels_by_value", {})
        key = (template.name, knobs, ordinal)
        hit = by_value.get(key)
        if hit is None:
            from .jit import freeze_knobs, kernel as jit_kernel

            hit = by_value[key] = (knobs, jit_kernel(template, freeze_knobs(knobs), ordinal,
                                                     self._arch))
            by_id[(template.name, id(knobs), ordinal)] = hit
        return hit[1]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.desc}, sku={self._sku})"


_NO_WORKSPACE = Workspace.none()


def as_workspace(buf) -> Workspace:
    """``buf`` as a Workspace: a Workspace, a device array (our Array, or any DLPack / CUDA
    array interface producer: its bytes), a ``cuda.core.Buffer``, a torch or CuPy tensor;
    InvalidProblemError when no device address can be read from it."""
    if isinstance(buf, Workspace):
        return buf
    if hasattr(buf, "__baracuda_view__") or (
            not hasattr(buf, "data_ptr") and not hasattr(buf, "handle")
            and (hasattr(buf, "__cuda_array_interface__") or hasattr(buf, "__dlpack__"))
            and not hasattr(getattr(buf, "data", None), "ptr")):
        v = as_view(buf)
        if not v.is_contiguous():
            raise InvalidProblemError("workspace: the array must be contiguous")
        return Workspace(v.ptr, v.numel * v.itemsize, buf)
    ws = Workspace.from_buffer(buf)
    if not ws.ptr and ws.nbytes:
        raise InvalidProblemError(f"workspace: cannot read a device address from an object of "
                                  f"type {type(buf).__name__}")
    return ws


# ---------------------------------------------------------------------------------- helpers
def resolve_pref(pref: Optional[PlanPreference]) -> PlanPreference:
    if pref is None:
        return PlanPreference()
    if not isinstance(pref, PlanPreference):
        raise InvalidProblemError(f"pref must be a PlanPreference, got {type(pref).__name__}")
    return pref


def plan_arch(pref: PlanPreference) -> ArchSku:
    """The arch a plan selects for: the preference's override or the current device's."""
    from .runtime.device import resolve_arch

    arch = resolve_arch(pref.arch)
    if arch is ArchSku.SM90A and not pref.allow_sm90a:
        # sm90a cubins are the only ones that run on Hopper; without them nothing can run there.
        raise UnsupportedError("PlanPreference(allow_sm90a=False) on a Hopper device: this package "
                               "ships only sm90a cubins for Hopper; wired: sm80, sm89, sm90a")
    return arch


def check_dtype(dt, allowed: Sequence[DType], what: str) -> DType:
    """Resolve ``dt`` and require it in ``allowed`` (UnsupportedError naming what is wired)."""
    d = as_dtype(dt)
    if d not in allowed:
        raise UnsupportedError(f"{what}: dtype {d.name} is not wired; wired: "
                               f"{', '.join(a.name for a in allowed)}")
    return d


def check_finite(value: float, what: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InvalidProblemError(f"{what} must be a real number, got {value!r}") from None
    if not math.isfinite(v):
        raise InvalidProblemError(f"{what} must be finite, got {v}")
    return v


def view_arg(obj, name: str, *, shape: Optional[Tuple[int, ...]] = None,
             dtype: Optional[DType] = None, device: Optional[int] = None,
             optional: bool = False, align: Optional[int] = None) -> Optional[TensorView]:
    """Turn an Args field into a TensorView and check shape / dtype / device / pointer
    alignment (``align`` bytes; default the element size) / buffer size."""
    if obj is None:
        if optional:
            return None
        raise InvalidProblemError(f"argument {name} is required")
    v = as_view(obj)
    if shape is not None and v.shape != shape and tuple(v.shape) != tuple(shape):
        raise InvalidProblemError(f"{name}: shape {tuple(v.shape)} != expected {tuple(shape)}")
    if dtype is not None and v.dtype is not dtype and v.dtype != dtype:
        raise UnsupportedError(f"{name}: dtype {v.dtype.name} != plan dtype {dtype.name}")
    if device is not None and v.device != device:
        raise DeviceMismatchError(f"{name}: on device {v.device}, plan runs on device {device}")
    a = v.dtype.itemsize if align is None else align
    if v.ptr % a:
        if v.numel:
            raise MisalignedOperandError(f"{name}: pointer {v.ptr:#x} is not aligned to "
                                         f"{a} bytes ({v.dtype.name})")
    if v.capacity_bytes is not None and v.numel:
        need = v.required_bytes()
        if v.capacity_bytes < need:
            raise BufferTooSmallError(need, v.capacity_bytes, name)
    return v


def check_writable_no_overlap(out: TensorView, name: str) -> None:
    """Outputs must not broadcast (stride 0 over an extent > 1 would race)."""
    for n, s in zip(out.shape, out.strides):
        if s == 0 and n > 1:
            raise InvalidProblemError(f"{name}: an output may not have a zero (broadcast) stride")


def collapse_dims(shape: Sequence[int], *stride_sets: Sequence[int]) -> Tuple[Tuple[int, ...], ...]:
    """Merge adjacent dims that are contiguous with each other in *every* stride set (row-major).
    Extents of 1 are dropped. Returns (shape, strides_1, strides_2, ...) of the collapsed view."""
    dims = [(n, [st[i] for st in stride_sets]) for i, n in enumerate(shape) if n != 1]
    out: list = []
    for n, st in dims:
        if out:
            pn, pst = out[-1]
            if all(ps == s * n for ps, s in zip(pst, st)):
                out[-1] = (pn * n, st)
                continue
        out.append((n, st))
    if not out:
        return ((),) + tuple(() for _ in stride_sets)
    shp = tuple(n for n, _ in out)
    return (shp,) + tuple(tuple(st[k] for _, st in out) for k in range(len(stride_sets)))




def prod(xs: Iterable[int]) -> int:
    p = 1
    for x in xs:
        p *= int(x)
    return p


def norm_axis(axis, rank: int, what: str) -> int:
    """``axis`` in ``[-rank, rank)`` (rank 0 behaves as rank 1) as a non-negative int;
    InvalidProblemError otherwise."""
    r = max(rank, 1)
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise InvalidProblemError(f"{what}: axis must be an int, got {axis!r}")
    if not -r <= axis < r:
        raise InvalidProblemError(f"{what}: axis {axis} out of range for rank {rank}")
    return axis % r


def norm_axes(axes, rank: int, what: str) -> Tuple[int, ...]:
    """Sorted, de-duplicated non-negative axes (None = all)."""
    if axes is None:
        return tuple(range(rank))
    if isinstance(axes, int):
        axes = (axes,)
    out = []
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, int):
            raise InvalidProblemError(f"{what}: axes must be ints, got {axes!r}")
        if not -max(rank, 1) <= a < max(rank, 1):
            raise InvalidProblemError(f"{what}: axis {a} out of range for rank {rank}")
        out.append(a % max(rank, 1))
    if len(set(out)) != len(out):
        raise InvalidProblemError(f"{what}: repeated axis in {axes!r}")
    return tuple(sorted(a for a in out if a < rank))


WORKSPACE_ALIGN = 256


def align_up(nbytes: int, align: int = WORKSPACE_ALIGN) -> int:
    """``nbytes`` rounded up to a multiple of ``align`` (workspace slots start 256-byte aligned)."""
    return -(-int(nbytes) // align) * align
