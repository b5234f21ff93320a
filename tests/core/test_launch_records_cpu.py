"""Launch records (runtime/trace.py, runtime/launcher.py) without a GPU: a Plan whose kernel is a
stand-in that reports to the tracer like ``LoadedKernel.launch`` and whose driver launch decodes
the packed parameter buffer.  A replay must pass exactly the values the full path would have
passed; anything the key does not fix must keep the call on the full path."""

import ctypes
import struct
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from baracuda_dsl import dtypes as dt
from baracuda_dsl.errors import InvalidProblemError
from baracuda_dsl.plan import Plan, view_arg
from baracuda_dsl.runtime import launcher, trace
from baracuda_dsl.runtime.device import THREAD_STATE
from baracuda_dsl.tensor import TensorView
from baracuda_dsl.vocabulary import ArchSku, PlanPreference

_UNPACK = {"ptr": "<Q", "i32": "<i", "i64": "<q", "f32": "<f", "f64": "<d"}


class FakeKernel:
    """A LoadedKernel stand-in: ``launch`` is the full path (reports to the tracer), ``_launch``
    the driver call a KernelCall makes (decodes the parameter buffer)."""

    def __init__(self, params, log):
        self.artifact = SimpleNamespace(meta={"params": params, "template": "fake"})
        self.ordinal, self.cluster, self.threads, self.smem, self.handle = 0, 1, 128, 0, 4242
        self.log = log
        self._launch = self._driver_launch

    def launch(self, grid, args, stream):
        tr = trace.STATE.tracer
        if tr is not None:
            tr.launch(self, grid, args, stream)
        self.log.append(("full", tuple(grid), list(args), stream))

    def _driver_launch(self, handle, gx, gy, gz, bx, by, bz, smem, stream, addr, extra):
        params = self.artifact.meta["params"]
        slots = (ctypes.c_void_p * len(params)).from_address(addr)
        vals = []
        for (_n, kind), p in zip(params, slots):
            fmt = _UNPACK[kind]
            vals.append(struct.unpack(fmt, ctypes.string_at(p, struct.calcsize(fmt)))[0])
        self.log.append(("replay", (gx, gy, gz), vals, stream))
        return (0,)


@dataclass(frozen=True)
class ShiftDesc:
    n: int
    counter: bool = False


@dataclass
class ShiftArgs:
    x: object
    y: object


class ShiftPlan(Plan):
    """y[i] = x[i + 1] for i < n - 1 (the kernel gets x's pointer + one element)."""

    descriptor = ShiftDesc
    LOG: list = []

    def _plan(self):
        self._k = FakeKernel((("y", "ptr"), ("x", "ptr"), ("n", "i32"), ("scale", "f32")),
                             ShiftPlan.LOG)
        self._calls = 0

    def _bind(self, args):
        n = self.desc.n
        return (view_arg(args.x, "x", shape=(n,), dtype=dt.float32),
                view_arg(args.y, "y", shape=(n,), dtype=dt.float32))

    def _launch(self, bound, stream, ws):
        x, y = bound
        self._calls += 1
        extra = self._calls if self.desc.counter else 0
        self._k.launch((self.desc.n // 128 + 1, 1, 1), [y.ptr, x.ptr + 4, self.desc.n - 1 + extra,
                                                        0.5], stream)


def _view(ptr, n=1000):
    return TensorView(ptr, (n,), (1,), dt.float32, 0)


@pytest.fixture
def plan(monkeypatch):
    monkeypatch.setattr(launcher, "_EXT", None)            # the pure-Python KernelCall
    monkeypatch.setattr(THREAD_STATE, "current", 0, raising=False)
    old = trace.set_recording(True)
    ShiftPlan.LOG = []
    yield ShiftPlan.select(ShiftDesc(1000), PlanPreference(arch=ArchSku.SM90A))
    trace.set_recording(old)


def _run(plan, xp, yp, stream=0):
    plan.run(ShiftArgs(_view(xp), _view(yp)), stream=stream)
    return ShiftPlan.LOG[-1]


def test_third_call_replays_with_the_new_pointers(plan):
    a = _run(plan, 0x10000, 0x20000)
    b = _run(plan, 0x30000, 0x40000)
    assert a[0] == b[0] == "full"                          # trace, then the confirming trace
    c = _run(plan, 0x50000, 0x60000, stream=7)
    assert c[0] == "replay"
    assert c[1] == a[1] and c[3] == 7
    assert c[2] == [0x60000, 0x50004, 999, 0.5]


def test_a_new_overlap_pattern_takes_the_full_path(plan):
    for p in (0x10000, 0x30000, 0x50000):
        _run(plan, p, p + 0x10000)
    assert ShiftPlan.LOG[-1][0] == "replay"
    assert _run(plan, 0x70000, 0x70000 + 400)[0] == "full"   # x and y partially overlap
    assert _run(plan, 0x90000, 0x90000)[0] == "full"         # the same buffer: another pattern


def test_values_outside_the_key_refuse_the_record(plan):
    p = ShiftPlan.select(ShiftDesc(1000, counter=True), PlanPreference(arch=ArchSku.SM90A))
    for k in range(4):
        assert _run(p, 0x10000 * (k + 1), 0x80000 + 0x10000 * k)[0] == "full"
    assert [e[2][2] for e in ShiftPlan.LOG] == [1000, 1001, 1002, 1003]


def test_validation_errors_still_raise_and_record_nothing(plan):
    with pytest.raises(InvalidProblemError):
        plan.run(ShiftArgs(_view(0x10000, 999), _view(0x20000)))
    assert not plan.__dict__.get("_records") or not plan._records.table


def test_recording_off_and_refused_calls_stay_on_the_full_path(plan, monkeypatch):
    trace.set_recording(False)
    for k in range(3):
        assert _run(plan, 0x10000 * (k + 1), 0x90000)[0] == "full"
    trace.set_recording(True)
    orig = ShiftPlan._launch

    def refusing(self, bound, stream, ws):
        trace.refuse("a host copy")
        orig(self, bound, stream, ws)

    monkeypatch.setattr(ShiftPlan, "_launch", refusing)
    p = ShiftPlan.select(ShiftDesc(1000), PlanPreference(arch=ArchSku.SM90A))
    for k in range(3):
        assert _run(p, 0x10000 * (k + 1), 0x90000)[0] == "full"


def test_a_pointer_from_nowhere_is_not_recorded(plan, monkeypatch):
    def stray(self, bound, stream, ws):
        x, y = bound
        self._k.launch((1, 1, 1), [y.ptr, 0xDEAD0000, 1, 0.5], stream)

    monkeypatch.setattr(ShiftPlan, "_launch", stray)
    p = ShiftPlan.select(ShiftDesc(1000), PlanPreference(arch=ArchSku.SM90A))
    for k in range(3):
        assert _run(p, 0x10000 * (k + 1), 0x90000)[0] == "full"


def test_scalar_keys_tell_apart_what_calls_branch_on():
    k = trace.scalar_key
    assert k(0.0) != k(-0.0)
    assert k(float("nan")) == k(float("nan"))
    assert len({k(1), k(1.0), k(True)}) == 3
    assert k([1, 2.5]) == k([1, 2.5]) != k((1, 2.5))
    assert k(object()) is None


def test_overlap_pattern():
    s = (0, 400)
    assert trace.overlap_pattern([0x1000, 0x2000], [s, s]) == (0,)
    assert trace.overlap_pattern([0x1000, 0x1000], [s, s]) == (1,)
    assert trace.overlap_pattern([0x1000, 0x1100], [s, s]) == (2,)
    assert trace.overlap_pattern([0x1000, 0x1100], [s, (0, 0)]) == (0,)   # empty operand


def test_kernel_call_patches_in_any_order(monkeypatch):
    monkeypatch.setattr(launcher, "_EXT", None)
    monkeypatch.setattr(THREAD_STATE, "current", 0, raising=False)
    log = []
    k = FakeKernel((("a", "i32"), ("p", "ptr"), ("b", "f64"), ("q", "ptr")), log)
    offs, _ = launcher.layout(tuple(__import__("baracuda_dsl.abi", fromlist=["Param"]).Param(n, t)
                                    for n, t in k.artifact.meta["params"]))
    call = launcher.KernelCall(k, (3, 1, 1), [7, 0, 2.5, 0], [(offs[3], "Q"), (offs[1], "Q")])
    call(5, 0xAAA0, 0xBBB0)
    assert log[-1] == ("replay", (3, 1, 1), [7, 0xBBB0, 2.5, 0xAAA0], 5)


def test_kernel_call_python_path_with_a_tmap_slot(monkeypatch):
    """The pure-Python path copies the template into a fresh per-thread pack whose 64-byte
    alignment offset differs from the template's pack on most allocations: only the parameter
    bytes move (a BufferError / misplaced values otherwise), for every offset that occurs."""
    from baracuda_dsl.abi import Param

    monkeypatch.setattr(launcher, "_EXT", None)
    monkeypatch.setattr(THREAD_STATE, "current", 0, raising=False)
    log = []
    params = (("a", "i32"), ("t", "tmap"), ("p", "ptr"), ("b", "f64"))
    k = FakeKernel(params, log)
    k._launch = lambda *a: (0,)                  # the decoder does not read tmap slots
    offs, _ = launcher.layout(tuple(Param(n, t) for n, t in params))
    keep, layout, bases = [], launcher.layout, []

    def layout_moved(abi):
        """The template's pack (1st, 3rd, ... call) with a small alignment offset, the
        per-thread pack (2nd, 4th, ...) with a larger one (allocations in between move it):
        the template's bytes past the parameters no longer fit after the second offset."""
        thread_pack = len(bases) % 2 == 1
        out = layout(abi)
        keep.append(out)
        for pad in range(1, 512):
            if (out[1]._base > bases[-1]) if thread_pack else (out[1]._base < 48):
                break
            keep.append(bytearray(8 * pad))
            out = layout(abi)
            keep.append(out)
        bases.append(out[1]._base)
        return out

    monkeypatch.setattr(launcher, "layout", layout_moved)
    tmap = bytes(range(128))
    for j in range(16):
        call = launcher.KernelCall(k, (1, 1, 1), [7 + j, tmap, 0, 2.5], [(offs[2], "Q")])
        call(0, 0xABC0 + j)
        buf = call._local.buf[0]
        assert bases[-1] > bases[-2], f"the case is not covered: offsets {bases[-2:]}"
        assert struct.unpack_from("<i", buf, offs[0])[0] == 7 + j
        assert bytes(buf[offs[1]:offs[1] + 128]) == tmap
        assert struct.unpack_from("<Qd", buf, offs[2]) == (0xABC0 + j, 2.5)


def test_pointer_sources():
    spans = [(0, 400), (0, 400)]
    ptrs = [0x1000, 0x2000]
    allocs = [(0x9000, 512)]
    src = trace._source
    assert src(0x1000, ptrs, spans, allocs) == (0, 0, 0)
    assert src(0x2010, ptrs, spans, allocs) == (0, 1, 0x10)
    assert src(0x1000 + 400, ptrs, spans, allocs) == (0, 0, 400)        # an operand's end
    assert src(0x9100, ptrs, spans, allocs) == (1, 0, 0x100)
    assert src(0x9000 + 512, ptrs, spans, allocs) == (1, 0, 512)        # past an allocation
    assert src(0, ptrs, spans, allocs)[0] == 2
    with pytest.raises(trace.NotRecordable):
        src(0x5000, ptrs, spans, allocs)


def test_a_first_call_that_cannot_record_gets_one_more_try(plan, monkeypatch):
    """One-time work of a first call (loading a kernel, a probe) must not refuse a key for good;
    two unrecordable calls in a row do."""
    orig = ShiftPlan._launch
    calls = []

    def first_time_only(self, bound, stream, ws):
        calls.append(1)
        if len(calls) == 1:
            trace.refuse("one-time work")
        orig(self, bound, stream, ws)

    monkeypatch.setattr(ShiftPlan, "_launch", first_time_only)
    p = ShiftPlan.select(ShiftDesc(1000), PlanPreference(arch=ArchSku.SM90A))
    kinds = [_run(p, 0x10000 * (k + 1), 0x90000)[0] for k in range(4)]
    assert kinds == ["full", "full", "full", "replay"]
    assert p._launch_records.explain() == []
