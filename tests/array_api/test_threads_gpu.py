"""The namespace and its Plans under concurrent host threads.

8 threads, started together by a Barrier, each run ~30 iterations of a mix of namespace ops on
their OWN arrays (per-thread shapes, fresh random data every iteration): elementwise add / exp /
multiply by a scalar, sum and mean over an axis, a 64×64 f32 matmul, where, astype to float16,
softmax, rms_norm, cumulative_sum, sort, take with an index array.  Every result is checked
element by element against a float64 numpy reference (tests._checks bounds); an exception in a
thread is collected and fails the test.  Then: 8 threads share ONE selected ``RMSNormPlan`` and
``run`` it concurrently (``stream=None``) on their own namespace Arrays; 8 threads each enqueue
on their own stream with ``xp.use_stream(s)`` and synchronise that stream before checking; the
stream ``xp.use_stream`` sets is per thread and nested uses restore the previous one; the
cached memory of closed user streams is released cleanly.
"""

import threading
import traceback

import numpy as np
import pytest

import array_api as xp
from tests._checks import assert_close, assert_equal, assert_within, bounds, eps

pytestmark = pytest.mark.gpu

THREADS = 8
ITERS = 30
#: seconds a thread may wait at the barrier / the test waits for a thread
TIMEOUT = 300.0
#: unit roundoff ×2 of float32 (the compute precision of every case here)
U = eps("float32")
SCALAR = 2.5                     # exact in float32: x·2.5 is one correctly rounded product


def row_depth(n):
    """Most rounded adds on a path of a row reduction of the row engine (softmax, rms_norm;
    common/rows.py — the model of tests/softmax and tests/normalization).  Never more than n."""
    return max(1, min(n, max(64, -(-n // 256)) + 45))


def _run_threads(body, n=THREADS):
    """Run ``body(tid, barrier)`` on ``n`` threads started together; re-raise the first failure
    (every failing thread's traceback in the message)."""
    barrier = threading.Barrier(n, timeout=TIMEOUT)
    errors = []
    lock = threading.Lock()

    def wrap(tid):
        try:
            body(tid, barrier)
        except BaseException as e:  # noqa: BLE001 - every failure must reach the main thread
            barrier.abort()          # nobody waits forever for a dead thread
            with lock:
                errors.append((tid, e, traceback.format_exc()))

    threads = [threading.Thread(target=wrap, args=(t,), name=f"xp-worker-{t}")
               for t in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    alive = [t.name for t in threads if t.is_alive()]
    assert not alive, f"threads still running after {TIMEOUT} s: {alive}"
    if errors:
        errors.sort(key=lambda e: (isinstance(e[1], threading.BrokenBarrierError), e[0]))
        report = "\n".join(f"--- thread {tid}:\n{tb}" for tid, _, tb in errors)
        # the cause: the first thread that failed on its own (not at the aborted barrier)
        raise AssertionError(f"{len(errors)} of {n} threads failed:\n{report}") from errors[0][1]


# ------------------------------------------------------------------------------- the mix
def _shape(tid):
    """Per-thread shapes: rows 16..65, columns 40..243 (none shared)."""
    return 16 + 7 * tid, 40 + 29 * tid


def _launch_mix(rng, tid):
    """Enqueue the op mix on fresh inputs; returns [(what, output Array, check(host output))]
    (the caller synchronises and runs the checks)."""
    m, n = _shape(tid)
    a = rng.standard_normal((m, n)).astype(np.float32)
    b = rng.standard_normal((m, n)).astype(np.float32)
    k = rng.integers(-3, 4, (m, n)).astype(np.float32)   # small integers: exact sums / scans
    w = rng.standard_normal(n).astype(np.float32)
    p = rng.standard_normal((64, 64)).astype(np.float32)
    q = rng.standard_normal((64, 64)).astype(np.float32)
    idx = rng.integers(-m, m, 2 * m + 3)                 # negative indices wrap once
    a64, b64, k64, w64 = (v.astype(np.float64) for v in (a, b, k, w))
    p64, q64 = p.astype(np.float64), q.astype(np.float64)
    x, y, kd, wd = xp.asarray(a), xp.asarray(b), xp.asarray(k), xp.asarray(w)
    pd, qd, ix = xp.asarray(p), xp.asarray(q), xp.asarray(idx)
    pending = []

    def add(what, out, check):
        pending.append((f"thread {tid} {what}", out, check))

    # elementwise: correctly rounded add / scalar product; exp: 3 roundings (libdevice + steps)
    add("add", x + y, lambda o, s: assert_close(o, a64 + b64, *bounds("float32"), what=s))
    add("mul scalar", x * SCALAR,
        lambda o, s: assert_close(o, a64 * SCALAR, *bounds("float32"), what=s))
    add("exp", xp.exp(x),
        lambda o, s: assert_close(o, np.exp(a64), *bounds("float32", compute="float32", terms=3),
                                  what=s))
    # reductions / scan of small integers: every partial sum is exact in f32
    add("sum axis 1", xp.sum(kd, axis=1), lambda o, s: assert_equal(o, k64.sum(1), what=s))
    add("mean axis 0", xp.mean(kd, axis=0),                # exact sum, then × 1/m: 1.5u
        lambda o, s: assert_close(o, k64.mean(0), *bounds("float32", compute="float32", terms=1),
                                  what=s))
    add("cumulative_sum", xp.cumulative_sum(kd, axis=1),
        lambda o, s: assert_equal(o, np.cumsum(k64, 1), what=s))
    # 64×64 f32 GEMM (strict IEEE): K + 4 roundings relative to |P|·|Q|
    add("matmul", pd @ qd,
        lambda o, s: assert_close(o, p64 @ q64, *bounds("float32", compute="float32", terms=68),
                                  scale=np.abs(p64) @ np.abs(q64), what=s))
    add("where", xp.where(x > 0, x, y),
        lambda o, s: assert_equal(o, np.where(a > 0, a64, b64), what=s))
    add("astype f16", xp.astype(x, xp.float16),
        lambda o, s: assert_close(o, a64, *bounds("float16"), what=s))
    add("softmax", xp.softmax(x, axis=-1), lambda o, s: _check_softmax(o, a64, s))
    add("rms_norm", xp.rms_norm(x, (n,), wd, eps=1e-6),
        lambda o, s: assert_close(
            o, a64 / np.sqrt((a64 * a64).mean(-1, keepdims=True) + 1e-6) * w64,
            *bounds("float32", compute="float32", terms=row_depth(n) / 2 + 5), what=s))
    add("sort", xp.sort(x, axis=1), lambda o, s: assert_equal(o, np.sort(a64, axis=1), what=s))
    add("take", xp.take(x, ix, axis=0),
        lambda o, s: assert_equal(o, np.take(a64, idx, axis=0), what=s))
    return pending


def _check_softmax(out, x, what):
    """tests/softmax's per-element model: p_i·u·(2g_i + 2W + d + 8) beyond the output rounding
    (g_i = |x_i − max|, W = Σ p_j g_j, d = :func:`row_depth`)."""
    m = x.max(-1, keepdims=True)
    e = np.exp(x - m)
    p = e / e.sum(-1, keepdims=True)
    g = np.abs(x - m)
    w = (p * g).sum(-1, keepdims=True)
    d = row_depth(x.shape[-1])
    assert_within(out, p, "float32", bounds("float32")[0], U * (2 * g + 2 * w + d + 8) * p,
                  what=what)


def _check_all(pending, it):
    for what, out, check in pending:
        check(np.asarray(out.to_numpy()), f"{what} iteration {it}")


def test_threads_run_the_op_mix_on_their_own_arrays():
    def body(tid, barrier):
        rng = np.random.default_rng(1000 + tid)
        barrier.wait()
        for it in range(ITERS):
            _check_all(_launch_mix(rng, tid), it)

    _run_threads(body)


# ------------------------------------------------------------------------ one shared Plan
def test_threads_share_one_plan():
    """One RMSNormPlan selected once, ``plan.run(args)`` (stream=None) from 8 threads at once,
    each on its own namespace Arrays (poisoned output, new data every iteration)."""
    import baracuda_dsl as bd

    m, n, eps_ = 24, 384, 1e-6
    plan = bd.RMSNormPlan.select(bd.RMSNormDescriptor((m, n), 1, "f32", eps_, True))
    rtol, atol = bounds("float32", compute="float32", terms=row_depth(n) / 2 + 5)

    def body(tid, barrier):
        rng = np.random.default_rng(2000 + tid)
        barrier.wait()
        for it in range(ITERS):
            hx = rng.standard_normal((m, n)).astype(np.float32)
            hw = rng.standard_normal(n).astype(np.float32)
            x, w = xp.asarray(hx), xp.asarray(hw)
            y = xp.full((m, n), float("nan"), dtype=xp.float32)
            plan.run(bd.RMSNormArgs(x, y, weight=w), stream=None)
            x64, w64 = hx.astype(np.float64), hw.astype(np.float64)
            ref = x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + eps_) * w64
            assert_close(y.to_numpy(), ref, rtol, atol,
                         what=f"shared RMSNormPlan thread {tid} iteration {it}")

    _run_threads(body)


# ------------------------------------------------------------------ a stream per thread
def test_threads_each_on_their_own_stream():
    """Each thread enqueues the mix on its own non-blocking stream (``xp.use_stream``), waits
    for that stream only (``s.sync()``), then checks."""
    from baracuda_dsl.runtime.stream import new_stream, stream_handle

    def body(tid, barrier):
        rng = np.random.default_rng(3000 + tid)
        s = new_stream()
        try:
            barrier.wait()
            with xp.use_stream(s):
                assert xp.current_stream() == stream_handle(s)
                for it in range(ITERS):
                    pending = _launch_mix(rng, tid)
                    s.sync()
                    _check_all(pending, it)
                del pending                       # the arrays go before their stream does
            assert xp.current_stream() == 0
        finally:
            s.sync()
            s.close()

    _run_threads(body)


def test_use_stream_is_per_thread_and_nests():
    """``xp.use_stream`` changes the stream of the calling thread only; nested uses restore the
    previous stream on exit; the default is the legacy default stream (0)."""
    from baracuda_dsl.runtime.stream import new_stream, stream_handle

    s1, s2 = new_stream(), new_stream()
    h1, h2 = stream_handle(s1), stream_handle(s2)
    seen = {}
    try:
        assert xp.current_stream() == 0
        with xp.use_stream(s1):
            assert xp.current_stream() == h1
            t = threading.Thread(target=lambda: seen.setdefault("other", xp.current_stream()))
            t.start()
            t.join(TIMEOUT)
            with xp.use_stream(h2):                       # a raw CUstream int works too
                assert xp.current_stream() == h2
                z = xp.ones((1000,), dtype=xp.float32) * 3.0
            assert xp.current_stream() == h1
            s2.sync()                                     # z is written on s2, read on s1
            total = xp.sum(z)
            s1.sync()
            assert float(total) == 3000.0
            del z, total
        assert xp.current_stream() == 0
        assert seen == {"other": 0}
    finally:
        s1.sync()
        s2.sync()
        s1.close()
        s2.close()


def test_cached_memory_of_closed_streams_is_released_cleanly():
    """Blocks allocated under ``xp.use_stream(s)`` go back to the namespace's cache when their
    arrays die; after ``s`` is synchronised and closed, releasing that cache (``empty_cache``)
    must still work, and so must the namespace."""
    from baracuda_dsl.runtime.stream import new_stream

    n = 1 << 16
    s = new_stream()
    with xp.use_stream(s):
        a = xp.ones((n,), dtype=xp.float32) * 2.0
        total = xp.sum(a)
        s.sync()
        assert float(total) == 2.0 * n
        del a, total                       # cached for stream s
    s.sync()
    s.close()
    xp.empty_cache()
    z = xp.full((n,), 0.5, dtype=xp.float32)
    assert float(xp.sum(z)) == 0.5 * n
