"""Launch records: a repeated call replays the kernels its first call launched.

A call that takes the full path (validation, promotion, plan selection, geometry) runs under a
:class:`Tracer` that sees every device-side effect of the library: kernel launches
(``LoadedKernel.launch``), the namespace's stream-ordered allocations, memsets and index-check
readbacks (CHECK steps).  Anything else (a host copy, a sync, a raw allocation, a TMA descriptor
the driver re-encodes per call) makes the call not recordable.  From the trace a :class:`Record`
is built: per launch a pre-packed :class:`~.launcher.KernelCall` whose pointer parameters (and
TMA descriptors' base addresses) are re-derived on each call from the operands (operand ``k`` +
offset, allocation ``j`` + offset); everything else is fixed.

Records are keyed by what decides the full path's control flow and checks: the function, every
operand's dtype / shape / strides / device / pointer alignment class (``ptr & 255``) and the
other arguments by value.  Two more rules keep a replay from ever differing from the full path:

* **overlap pattern**: the operands' byte ranges (fixed by the key) and pointers give, per pair,
  disjoint / same pointer / partial overlap; a record holds the pattern it was traced with and is
  used only for calls with the same pattern (partial overlaps are never recorded: they take the
  staging paths);
* **confirmation**: a record is used only after a second full-path call with the same key
  produced the identical trace (same kernels, grids, fixed values, pointer sources); a mismatch
  (a value that depends on something outside the key: a seed, a counter) marks the key as not
  recordable for good, as do two traced calls in a row that cannot be recorded (the first one
  alone may be a first call's one-time work: loading a kernel).

Only entry points that opt in record (the namespace's elementwise / reduction / matmul / ...
functions, and Plans with ``recordable = True``); a traced call inside another traced call runs
its full path, so the outer trace sees its launches.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, List, Optional, Sequence, Tuple

from ..tensor import TensorView, as_view
from ..vocabulary import Workspace


class _State(threading.local):
    tracer = None          # the Tracer of the call being traced on this thread


#: per-thread tracing state (``STATE.tracer``)
STATE = _State()
#: ``ENABLED[0]``: launch records on (``set_recording(False)`` runs every call in full)
ENABLED = [True]


def set_recording(enabled: bool) -> bool:
    """Turn launch records on or off process-wide; returns the old setting."""
    old = ENABLED[0]
    ENABLED[0] = bool(enabled)
    return old


def recording() -> bool:
    return ENABLED[0]


def active() -> Optional["Tracer"]:
    """The calling thread's tracer (None when no call is being traced)."""
    return STATE.tracer


def refuse(why: str) -> None:
    """Mark the call being traced (if any) as not recordable: it did something a replay would
    not repeat (a host copy, a sync, a raw allocation)."""
    t = STATE.tracer
    if t is not None:
        t.ok = False
        t.why = t.why or why


class Tracer:
    """The device-side effects of one full-path call, in order: ``('launch', kernel, grid,
    values, stream)``, ``('alloc', nbytes, ordinal, ptr, size)``, ``('memset', width, ptr,
    value, count)``."""

    __slots__ = ("events", "ok", "why", "tmaps", "owners", "_prev")

    def __init__(self):
        self.events: List[tuple] = []
        self.ok = True
        self.why: Optional[str] = None
        #: TMA descriptor bytes -> (byte offset of its base address, the address)
        self.tmaps: dict = {}
        self.owners: List[tuple] = []

    def __enter__(self):
        self._prev = STATE.tracer
        STATE.tracer = self
        return self

    def __exit__(self, *exc):
        STATE.tracer = self._prev
        return False

    def tmap(self, raw: bytes, offset: int, address: int) -> None:
        """A TMA descriptor handed to a launch holds ``address`` as the u64 at ``offset``."""
        self.tmaps[raw] = (offset, address)

    def launch(self, kernel, grid, values, stream) -> None:
        self.events.append(("launch", kernel, tuple(grid), tuple(values), stream))

    def alloc(self, nbytes: int, ordinal: int, ptr: int, size: int, owner=None) -> None:
        """An allocation of ``nbytes`` (``size`` with rounding) at ``ptr``; ``owner``: the
        object whose lifetime is the allocation's (weakly referenced: an allocation still
        alive after the call that is not a result was kept by someone, so not recordable)."""
        self.events.append(("alloc", nbytes, ordinal, ptr, size))
        if owner is not None:
            self.owners.append((ptr, weakref.ref(owner)))

    def check(self, fn, ptr: int, what: str) -> None:
        """A host check ``fn(ptr, what)`` of a device word (it reads the word back and raises);
        a replay runs it again after the launches before it."""
        self.events.append(("check", ptr, what, fn))

    def memset(self, fn, width: int, ptr: int, value: int, count: int, stream) -> None:
        """A memset that ``fn(width, ptr, value, count, stream)`` replays."""
        self.events.append(("memset", width, ptr, value, count, stream, fn))


# ------------------------------------------------------------------------------- operands
def span(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> Tuple[int, int]:
    """(lowest byte offset, one past the highest) an operand touches relative to its pointer;
    (0, 0) when it is empty."""
    lo = hi = 0
    for n, s in zip(shape, strides):
        if n == 0:
            return (0, 0)
        if s > 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return lo * itemsize, (hi + 1) * itemsize


def overlap_pattern(ptrs: Sequence[int], spans: Sequence[Tuple[int, int]]) -> tuple:
    """Per operand pair (i < j): 0 disjoint, 1 the same pointer, 2 partial overlap."""
    n = len(ptrs)
    if n < 2:
        return ()
    if n == 2:
        p0, p1 = ptrs
        if p0 == p1:
            return (1,)
        (l0, h0), (l1, h1) = spans
        return (2,) if p0 + l0 < p1 + h1 and p1 + l1 < p0 + h0 and h0 > l0 and h1 > l1 \
            else (0,)
    out = []
    for i in range(n):
        pi, (li, hi_) = ptrs[i], spans[i]
        for j in range(i + 1, n):
            pj, (lj, hj) = ptrs[j], spans[j]
            if pi == pj:
                out.append(1)
            elif pi + li < pj + hj and pj + lj < pi + hi_ and hi_ > li and hj > lj:
                out.append(2)
            else:
                out.append(0)
    return tuple(out)


# ------------------------------------------------------------------------------- records
#: the kinds of a Record step
LAUNCH, ALLOC, MEMSET, CHECK = 0, 1, 2, 3


class NotRecordable(Exception):
    """The trace cannot be turned into a record (the reason is the message)."""


def _source(v: int, ptrs, spans, allocs) -> tuple:
    """Where pointer value ``v`` comes from: (0, operand k, offset) or (1, allocation j,
    offset); the latest allocation holding it wins, then an operand's own pointer, then the
    operand whose bytes hold it (or end at it), then one past an allocation's end (a pointer to
    an empty tail region, e.g. an unused index slot)."""
    if v == 0:
        return (2, 0, 0)
    for j in range(len(allocs) - 1, -1, -1):
        p, size = allocs[j]
        if p <= v < p + size:
            return (1, j, v - p)
    hit = None
    for k, p in enumerate(ptrs):
        if p == v:
            return (0, k, 0)          # an operand's own pointer (the first one holding it)
    for k, (p, (lo, hi)) in enumerate(zip(ptrs, spans)):
        if p is None:
            continue
        if p + lo <= v <= p + hi and hi > lo:
            if hit is None:
                hit = (0, k, v - p)
            elif p != ptrs[hit[1]]:
                raise NotRecordable("a pointer inside two operands")
    if hit is None:
        for j in range(len(allocs) - 1, -1, -1):      # one past the end (an unused tail slot)
            p, size = allocs[j]
            if v == p + size:
                return (1, j, size)
    if hit is None:
        where = ", ".join(f"[{p + lo:#x}, {p + hi:#x})" for p, (lo, hi) in zip(ptrs, spans)
                          if p is not None)
        raise NotRecordable(f"a pointer {v:#x} outside every operand ({where}) and allocation "
                            f"({', '.join(f'[{p:#x}, +{n})' for p, n in allocs)})")
    return hit


def build(tracer: Tracer, ptrs: Sequence[Optional[int]], spans) -> "Record":
    """The Record of a finished trace over operands at ``ptrs`` (None for non-memory slots) with
    byte ``spans``; NotRecordable when the trace cannot be replayed."""
    from .launcher import KernelCall, layout
    from ..abi import Param

    if not tracer.ok:
        raise NotRecordable(tracer.why or "not recordable")
    allocs: List[Tuple[int, int]] = []
    steps = []
    sig = []
    for ev in tracer.events:
        tag = ev[0]
        if tag == "alloc":
            _, nbytes, ordinal, p, size = ev
            allocs.append((p, size))
            steps.append((ALLOC, nbytes, ordinal))
            sig.append(("alloc", nbytes, ordinal))
        elif tag == "check":
            _, p, what, fn = ev
            src = _source(p, ptrs, spans, allocs)
            steps.append((CHECK, src, what, fn))
            sig.append(("check", src, what))
        elif tag == "memset":
            _, width, p, value, count, _stream, fn = ev
            src = _source(p, ptrs, spans, allocs)
            steps.append((MEMSET, width, src, value, count, fn))
            sig.append(("memset", width, src, value, count))
        else:
            _, kernel, grid, values, _stream = ev
            params = kernel.artifact.meta["params"]
            offs, _pack = layout(tuple(Param(n, k) for n, k in params))
            patches, srcs, fixed = [], [], list(values)
            for i, ((name, kind), v) in enumerate(zip(params, values)):
                try:
                    hit = _patch_of(kind, v, tracer, ptrs, spans, allocs)
                except NotRecordable as e:
                    raise NotRecordable(f"{kernel.artifact.meta.get('template')}.{name}: "
                                        f"{e}") from None
                if hit is not None:
                    at, pkind, src, fixed[i] = hit
                    patches.append((offs[i] + at, pkind))
                    srcs.append(src)
            steps.append((LAUNCH, KernelCall(kernel, grid, values, patches), tuple(srcs)))
            sig.append(("launch", id(kernel), grid, tuple(fixed), tuple(patches), tuple(srcs)))
    return Record(steps, tuple(sig), allocs)


def _patch_of(kind: str, v, tracer: Tracer, ptrs, spans, allocs):
    """(byte offset inside the parameter's slot, patch kind, source, the value with the address
    zeroed) when parameter value ``v`` of ``kind`` holds an address a replay must rewrite, else
    None."""
    from .launcher import PATCH_KIND

    if kind == "tmap":
        hit = tracer.tmaps.get(bytes(v))
        if hit is None:
            raise NotRecordable("a TMA descriptor of unknown address")
        off, address = hit
        return off, "Q", _source(address, ptrs, spans, allocs), \
            bytes(v[:off]) + bytes(8) + bytes(v[off + 8:])
    if kind == "ptr":
        src = _source(int(v), ptrs, spans, allocs)
        if src[0] != 2:
            return 0, PATCH_KIND[kind], src, 0
    return None


class Record:
    """A replayable call: ``steps`` (allocations, memsets, pre-packed launches whose pointer
    slots come from operands / allocations), ``sig`` (what confirmation compares), and the
    allocations' trace-time (pointer, size) for attributing outputs."""

    __slots__ = ("steps", "sig", "trace_allocs", "outputs", "pattern", "spans", "confirmed",
                 "extra", "fast")

    def __init__(self, steps, sig, trace_allocs):
        self.steps = steps
        self.sig = sig
        self.trace_allocs = trace_allocs
        self.outputs = None          # what the caller rebuilds its results from (namespace)
        self.pattern = ()            # the operands' overlap pattern at trace time
        self.spans = ()              # the operands' byte spans (fixed by the key)
        self.confirmed = False
        self.extra = None            # the caller's own data (a plan: its workspace size)
        self.fast = None             # the caller's compiled replay (the namespace's records)

    def replay(self, ptrs: Sequence[int], stream: int, allocate) -> List[Any]:
        """Run the steps for operands at ``ptrs`` on ``stream``; ``allocate(nbytes, ordinal)``
        gives (pointer, owner) for each allocation.  Returns the allocations' owners (kept
        alive by the caller's outputs)."""
        steps = self.steps
        if len(steps) == 1 and steps[0][0] == LAUNCH:        # a plan: one launch
            step = steps[0]
            step[1](stream, *[ptrs[i] + off for _k, i, off in step[2]])
            return []
        allocs: List[Tuple[int, Any]] = []
        for step in steps:
            tag = step[0]
            if tag == LAUNCH:
                step[1](stream, *[(ptrs[i] if k == 0 else allocs[i][0]) + off
                                  for k, i, off in step[2]])
            elif tag == ALLOC:
                allocs.append(allocate(step[1], step[2]))
            elif tag == CHECK:
                _, (k, i, off), what, fn = step
                fn((ptrs[i] if k == 0 else allocs[i][0]) + off, what)
            else:
                _, width, (k, i, off), value, count, fn = step
                fn(width, 0 if k == 2 else (ptrs[i] if k == 0 else allocs[i][0]) + off, value,
                   count, stream)
        return allocs


def record_of(tracer: Tracer, ptrs, objs) -> Optional[Record]:
    """The Record of a finished trace over the operands ``objs`` at ``ptrs``, or None when the
    call cannot be recorded (the tracer refused it, a pointer has no source, or two operands
    partially overlap)."""
    if not tracer.ok:
        return None
    try:
        spans = operand_spans(objs)
        pattern = overlap_pattern(ptrs, spans)
        if 2 in pattern:
            raise NotRecordable("two operands partially overlap")
        rec = build(tracer, ptrs, spans)
    except NotRecordable as e:
        tracer.why = str(e)
        return None
    rec.pattern, rec.spans = pattern, tuple(spans)
    return rec


# ------------------------------------------------------------------------------- the table
class RecordTable:
    """Records of one entry point: key -> Record (confirmed or waiting for confirmation) or
    :data:`REFUSED`.  Bounded (oldest entries dropped past ``limit``)."""

    __slots__ = ("table", "limit", "lock", "why", "name", "__weakref__")

    def __init__(self, limit: int = 1024, name: str = ""):
        self.name = name
        self.table: dict = {}
        #: key -> why its calls are not recorded (``explain``)
        self.why: dict = {}
        self.limit = limit
        self.lock = threading.Lock()
        _TABLES.add(self)

    def get(self, key):
        return self.table.get(key)

    def put(self, key, value) -> None:
        with self.lock:
            t = self.table
            if len(t) >= self.limit and key not in t:
                for k in list(t)[: max(1, self.limit // 8)]:
                    t.pop(k, None)
            t[key] = value

    def clear(self) -> None:
        with self.lock:
            self.table.clear()
            self.why.clear()

    def note(self, key, why: str) -> None:
        """Remember why ``key`` was not recorded (bounded like the table)."""
        with self.lock:
            if len(self.why) >= self.limit and key not in self.why:
                self.why.clear()
            self.why[key] = why

    def explain(self) -> list:
        """(key, reason) of every refused key (why those calls take the full path), and of
        keys whose first traced call could not be recorded and that have not recorded since."""
        return [(k, w) for k, w in list(self.why.items())
                if self.table.get(k) is REFUSED or k not in self.table]


_TABLES: "weakref.WeakSet[RecordTable]" = weakref.WeakSet()


def clear_records() -> None:
    """Forget every launch record (each call then traces afresh; benchmarks, tests)."""
    for t in list(_TABLES):
        t.clear()


#: a key whose calls are never recorded
REFUSED = object()


def settle(table: RecordTable, key, old, new: Optional[Record], why: Optional[str] = None) -> None:
    """After a traced full-path call: store the new record (``old`` None), confirm it (``old``
    traced the same), or refuse the key (not recordable twice in a row: ``why``; or the two
    traces differ)."""
    if new is None:
        if old is None and key not in table.why:
            # a first call may do one-time work that keeps things alive or reads the device
            # (loading a kernel, a probe): refuse only when the next call cannot record either
            table.note(key, why or "not recordable")
            return
        table.put(key, REFUSED)
        table.note(key, why or "not recordable")
    elif old is None:
        table.put(key, new)
    elif old.sig == new.sig and old.pattern == new.pattern:
        old.confirmed = True
    else:
        table.put(key, REFUSED)
        table.note(key, "two traces of the same key differ (a value outside the key)")


# ------------------------------------------------------------------------------- call keys
#: type -> fn(obj) -> (layout key, pointer) for operand types with a fast layout read
#: (TensorView here; the array namespace registers its Array, torch tensors register on sight)
LAYOUTS: dict = {}
_SCALARS = (bool, int, str, type(None))


def scalar_key(v):
    """A hashable key for a non-array argument that tells apart everything a call may branch
    on (-0.0 from 0.0, NaN equal to NaN, 1 from 1.0 from True); None when ``v`` cannot be
    keyed (the call is then not recorded)."""
    t = type(v)
    if t in _SCALARS:
        return (t, v)
    if t is float:
        return (t, v.hex())
    if t is complex:
        return (t, v.real.hex(), v.imag.hex())
    if t is tuple or t is list:
        parts = [t]
        for x in v:
            k = scalar_key(x)
            if k is None:
                return None
            parts.append(k)
        return tuple(parts)
    try:
        hash(v)
    except TypeError:
        return None
    mod = getattr(t, "__module__", "")
    if mod.startswith("numpy"):
        return (t, repr(v))
    if mod.startswith("baracuda_dsl") or mod.startswith("array_api"):
        return (t, v)            # dtypes, devices, descriptors: plain hashable data
    return None


#: argument types that are never operands (call_key skips the operand probe)
_PLAIN = frozenset({bool, int, float, complex, str, type(None), list, tuple})


def _torch_layout(t):
    p = t.data_ptr()
    return (t.dtype, t.shape, t.stride(), p & 255, t.get_device()), p


def operand_layout(obj):
    """(layout key, pointer) of a device operand; None when ``obj`` is not one."""
    fn = LAYOUTS.get(type(obj))
    if fn is not None:
        return fn(obj)
    mod = type(obj).__module__
    if mod.startswith("torch") and hasattr(obj, "data_ptr"):
        LAYOUTS[type(obj)] = _torch_layout          # torch tensor classes: on first sight
        return _torch_layout(obj)
    return None


def _view_layout(v):
    return (v.dtype, v.shape, v.strides, v.ptr & 255, v.device, v.capacity_bytes), v.ptr


def register_layout(tp, fn) -> None:
    """Give operands of type ``tp`` a fast layout read ``fn(obj) -> (key, pointer)``."""
    LAYOUTS[tp] = fn


def call_key(values, parts: list, ptrs: list, objs: list) -> bool:
    """Append the key parts of ``values`` (operands: layout; lists / tuples: recursed; other
    arguments: :func:`scalar_key`) to ``parts``, operand pointers and objects to ``ptrs`` /
    ``objs``; False when some value cannot be keyed."""
    for v in values:
        t = type(v)
        fn = LAYOUTS.get(t)
        lay = fn(v) if fn is not None else (None if t in _PLAIN else operand_layout(v))
        if lay is not None:
            parts.append(lay[0])
            ptrs.append(lay[1])
            objs.append(v)
            continue
        if t is list or t is tuple:
            parts.append(t)
            if not call_key(v, parts, ptrs, objs):
                return False
            parts.append(None)
            continue
        k = scalar_key(v)
        if k is None:
            return False
        parts.append(k)
    return True


def operand_spans(objs) -> list:
    """Byte spans of the operands (traced calls only: goes through ``as_view``)."""
    out = []
    for o in objs:
        if isinstance(o, Workspace):
            out.append((0, o.nbytes))
            continue
        v = as_view(o)
        out.append(span(v.shape, v.strides, v.dtype.itemsize))
    return out


LAYOUTS[TensorView] = _view_layout
