"""The namespace from many host threads: every thread gets the device's primary context bound on
first use, results stay right under concurrency (elementwise, reductions, matmul, sort, indexing,
scans, softmax, random), arrays die on other threads than the one that made them, and DLPack
exports are released from whichever thread drops them."""

import concurrent.futures as cf
import gc
import threading

import numpy as np
import pytest

import array_api as xp

pytestmark = pytest.mark.gpu

THREADS = 8
ROUNDS = 6


def _work(seed: int) -> int:
    """One thread's share: a few families per round, each checked against numpy in float64."""
    rng = np.random.default_rng(seed)
    done = 0
    for r in range(ROUNDS):
        a = rng.standard_normal((67, 129)).astype(np.float32)
        b = rng.standard_normal((129, 33)).astype(np.float32)
        x, y = xp.asarray(a), xp.asarray(b)
        a64 = a.astype(np.float64)
        np.testing.assert_allclose(xp.exp(x).to_numpy(), np.exp(a64), rtol=2e-6, atol=0)
        np.testing.assert_allclose(xp.sum(x, axis=1).to_numpy(), a64.sum(1), rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose((x @ y).to_numpy(), a64 @ b.astype(np.float64),
                                   rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(xp.sort(x, axis=1).to_numpy(), np.sort(a, axis=1))
        idx = rng.integers(0, 67, 50)
        np.testing.assert_array_equal(xp.take(x, xp.asarray(idx), axis=0).to_numpy(), a[idx])
        np.testing.assert_allclose(xp.cumulative_sum(x, axis=1).to_numpy(), np.cumsum(a64, 1),
                                   rtol=1e-5, atol=1e-4)
        sm = np.exp(a64 - a64.max(1, keepdims=True))
        np.testing.assert_allclose(xp.softmax(x, axis=-1).to_numpy(),
                                   sm / sm.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
        g = xp.random.default_rng(seed * 100 + r)
        u = g.random((1000,)).to_numpy()
        assert u.dtype == np.float32 and (u >= 0).all() and (u < 1).all()
        done += 1
    return done


def test_many_threads_get_right_answers():
    with cf.ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(_work, range(1, THREADS + 1)))
    assert results == [ROUNDS] * THREADS


def test_first_use_on_a_fresh_thread():
    """A thread that never touched CUDA before: creation, a kernel and a copy back."""
    out = {}

    def run():
        x = xp.asarray(np.arange(10, dtype=np.float32))
        out["v"] = xp.square(x).to_numpy()

    th = threading.Thread(target=run)
    th.start()
    th.join()
    np.testing.assert_array_equal(out["v"], np.arange(10, dtype=np.float32) ** 2)


def test_arrays_released_on_other_threads():
    """Arrays made here and dropped on another thread (and the reverse) free cleanly, and the
    memory is usable afterwards."""
    xs = [xp.ones((1 << 16,), dtype=xp.float32) * i for i in range(16)]
    made = []

    def drop_and_make():
        xs.clear()
        gc.collect()
        made.append(xp.full((1 << 16,), 3.0, dtype=xp.float32))

    th = threading.Thread(target=drop_and_make)
    th.start()
    th.join()
    assert not xs and len(made) == 1
    v = made.pop()
    assert float(xp.sum(v)) == 3.0 * (1 << 16)
    del v
    gc.collect()
    z = xp.zeros((1 << 16,), dtype=xp.float32)
    assert float(xp.sum(z)) == 0.0


def test_dlpack_export_released_on_another_thread():
    torch = pytest.importorskip("torch")
    x = xp.asarray(np.arange(1000, dtype=np.float32))
    t = torch.from_dlpack(x)
    del x
    box = [t]

    def drop():
        box.clear()
        gc.collect()

    th = threading.Thread(target=drop)
    th.start()
    th.join()
    gc.collect()
    y = xp.asarray(np.arange(4, dtype=np.float32))
    assert float(xp.sum(y)) == 6.0
