"""Launch records for namespace functions: ``@recorded`` functions replay their kernels.

The first calls of a recorded function with a given key — every Array argument's dtype /
shape / strides / device / pointer alignment class, every other argument by value (and the
index-checking setting) — run the full path under a tracer (``baracuda_dsl.runtime.trace``).
Once two traces agree, later calls with the same key and operand overlap pattern skip
validation, promotion, plan selection and geometry: they allocate the outputs, re-issue the
recorded launches with the new pointers and wrap the results.  A call is recorded only when its
results are Arrays (or a tuple of them, or None) made from the call's own allocations or views
of its operands, every other allocation died inside the call, and the tracer saw only launches,
allocations, memsets and index-check readbacks (no other host copy, no sync or raw allocation):
everything else takes the full path every time.  Each recorded function has a ``records``
table (``xp.sum.records.explain()``); ``baracuda_dsl.runtime.trace.set_recording(False)`` turns
records off.
"""

from __future__ import annotations

import functools

from baracuda_dsl.runtime import trace
from baracuda_dsl.runtime.stream import AMBIENT
from baracuda_dsl.runtime.trace import ENABLED, REFUSED, STATE

from . import _device as _dev
from ._array_object import Array
from ._device import Device
from ._plans import INDEX_CHECKING

_DEVICES: dict = {}


def _array_layout(x: Array):
    return (x._dtype, x._shape, x._strides, x._ptr & 255, x._device.ordinal), x._ptr


trace.register_layout(Array, _array_layout)


def _output_spec(out, rec: trace.Record, objs, ptrs):
    """How to rebuild ``out`` from a replay's allocations and operands, or None."""
    if out is None:
        return ("none",)
    if type(out) is tuple:
        parts = [_output_spec(o, rec, objs, ptrs) for o in out]
        return None if any(p is None for p in parts) else ("tuple", tuple(parts))
    if type(out) is not Array:
        return None
    for k, o in enumerate(objs):
        if o is out:
            return ("operand", k)
    meta = (out._shape, out._strides, out._dtype, out._device)
    p = out._ptr
    allocs = rec.trace_allocs
    for j in range(len(allocs) - 1, -1, -1):
        a, size = allocs[j]
        if a <= p < a + size:
            if getattr(out._owner, "ptr", None) != a:
                return None
            return ("alloc", j, p - a) + meta
    for k, o in enumerate(objs):
        if type(o) is Array and o._owner is out._owner and ptrs[k] is not None:
            return ("view", k, p - ptrs[k]) + meta
    return None


def _alloc_indices(spec, acc: set) -> None:
    if spec[0] == "alloc":
        acc.add(spec[1])
    elif spec[0] == "tuple":
        for s in spec[1]:
            _alloc_indices(s, acc)


def _finish(tracer: trace.Tracer, out, ptrs, objs):
    """The confirmed-or-not Record of a traced call that returned ``out``, or None."""
    rec = trace.record_of(tracer, ptrs, objs)
    if rec is None:
        return None
    spec = _output_spec(out, rec, objs, ptrs)
    if spec is None:
        tracer.why = "a result that is not an array made by the call or a view of an operand"
        return None
    used: set = set()
    _alloc_indices(spec, used)
    results = {a for j, (a, _s) in enumerate(rec.trace_allocs) if j in used}
    alive = [ref for ptr, ref in tracer.owners if ptr not in results and ref() is not None]
    if alive:
        import gc

        gc.collect()               # a reference cycle (a traceback, a closure) may hold it
        kept = [r() for r in alive if r() is not None]
        if kept:
            held = sorted({type(o).__name__ for k in kept for o in gc.get_referrers(k)
                           if o is not kept})
            tracer.why = (f"an allocation outlived the call without being a result (held by: "
                          f"{', '.join(held)})")
            return None
    rec.outputs = spec
    rec.sig = rec.sig + (spec,)
    rec.fast = _compile(rec)
    return rec


def _compile(rec: trace.Record):
    """A Python function ``fast(ptrs, objs, stream)`` doing exactly ``rec.replay`` plus the
    rebuilding of the results (``rec.outputs``) for this record, written out step by step (one
    frame, constants bound): the replay of a namespace call costs a few attribute loads instead
    of a generic loop."""
    ns = {"alloc": _dev.allocate, "T": Array._trusted}
    body = []

    def ptr(src):
        k, i, off = src
        base = "0" if k == 2 else (f"ptrs[{i}]" if k == 0 else f"p{i}")
        return base if not off else f"{base} + {off}"

    n_alloc = 0
    for s, step in enumerate(rec.steps):
        tag = step[0]
        if tag == trace.ALLOC:
            ns[f"d{n_alloc}"] = _device_of(step[2])
            body.append(f"p{n_alloc}, b{n_alloc} = alloc({int(step[1])}, d{n_alloc})")
            n_alloc += 1
        elif tag == trace.LAUNCH:
            ns[f"c{s}"] = step[1]
            body.append(f"c{s}(stream, {', '.join(ptr(src) for src in step[2])})")
        elif tag == trace.CHECK:
            _, src, what, fn = step
            ns[f"k{s}"], ns[f"w{s}"] = fn, what
            body.append(f"k{s}({ptr(src)}, w{s})")
        else:
            _, width, src, value, count, fn = step
            ns[f"m{s}"] = fn
            body.append(f"m{s}({int(width)}, {ptr(src)}, {int(value)}, {int(count)}, stream)")

    def out(spec) -> str:
        tag = spec[0]
        if tag == "none":
            return "None"
        if tag == "operand":
            return f"objs[{spec[1]}]"
        if tag == "tuple":
            return "(" + "".join(out(x) + ", " for x in spec[1]) + ")"
        n = len(ns)
        ns[f"m_{n}"] = spec[3:]
        if tag == "alloc":
            _, j, off = spec[:3]
            return f"T(p{j} + {off}, *m_{n}, b{j})" if off else f"T(p{j}, *m_{n}, b{j})"
        _, k, off = spec[:3]
        return f"T(objs[{k}]._ptr + {off}, *m_{n}, objs[{k}]._owner)"

    body.append(f"return {out(rec.outputs)}")
    src = "def fast(ptrs, objs, stream):\n" + "".join(f"    {line}\n" for line in body)
    exec(compile(src, "<launch record>", "exec"), ns)
    return ns["fast"]


def _device_of(ordinal: int) -> Device:
    dev = _DEVICES.get(ordinal)
    if dev is None:
        dev = _DEVICES[ordinal] = Device(ordinal)
    return dev


def recorded(fn):
    """Give ``fn`` (a namespace function) launch records (see the module docstring)."""
    table = trace.RecordTable(1024, f"array_api.{fn.__name__}")
    get = table.table.get

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if STATE.tracer is not None or not ENABLED[0]:
            return fn(*args, **kwargs)
        parts = [AMBIENT.arena is None, INDEX_CHECKING[0]]
        ptrs, objs = [], []
        for v in args:                   # the common arguments inline, the rest by call_key
            t = type(v)
            if t is Array:
                p = v._ptr
                parts.append((v._dtype, v._shape, v._strides, p & 255, v._device.ordinal))
                ptrs.append(p)
                objs.append(v)
            elif t is str:
                parts.append(v)
            elif not trace.call_key((v,), parts, ptrs, objs):
                return fn(*args, **kwargs)
        if kwargs:
            parts.append("kw")
            if not trace.call_key([(k, kwargs[k]) for k in sorted(kwargs)], parts, ptrs, objs):
                return fn(*args, **kwargs)
        key = tuple(parts)
        rec = get(key)
        if rec is REFUSED:
            return fn(*args, **kwargs)
        if rec is not None and rec.confirmed:
            if len(ptrs) < 2 or trace.overlap_pattern(ptrs, rec.spans) == rec.pattern:
                return rec.fast(ptrs, objs, AMBIENT.handle)
            return fn(*args, **kwargs)
        with trace.Tracer() as tr:
            out = fn(*args, **kwargs)
        trace.settle(table, key, rec, _finish(tr, out, ptrs, objs), tr.why)
        return out

    wrapper.records = table
    return wrapper
