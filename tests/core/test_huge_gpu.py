"""Problems past 2**31 elements: each family that can take one is right (indices and offsets in
64 bits: the last elements, the ones straddling 2**31, the totals), and each that cannot rejects
it up front with UnsupportedError (never a wrong answer).  References are exact (integer counts,
sums of ones, a marked element at a known index).

These tests take 4-17 GB of device memory each: they run one at a time across xdist workers
(a file lock), free the namespace's pool afterwards, and skip with a ``capability:`` reason on a
device with less than 40 GB."""

import fcntl
import os
import tempfile

import numpy as np
import pytest

import array_api as xp
from baracuda_dsl.errors import UnsupportedError

pytestmark = pytest.mark.gpu

N = 2**31 + 1000          # elements: past the int32 range by more than a CTA tile
ROWS, COLS = N // 1024 + 1, 1024


@pytest.fixture
def huge():
    """One huge test at a time (xdist workers share the device), the pool emptied after."""
    torch = pytest.importorskip("torch")
    if torch.cuda.get_device_properties(0).total_memory < 40 * 2**30:
        pytest.skip("capability: the > 2**31-element tests need a device with >= 40 GB")
    path = os.path.join(tempfile.gettempdir(), "baracuda-dsl-huge-tests.lock")
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            xp.empty_cache()
            fcntl.flock(lock, fcntl.LOCK_UN)


def _at(a, *index):
    """One element of a device array, copied to the host as a Python scalar."""
    return a[index].to_numpy().item()


def test_sum_of_ones_float16_in_float32(huge):
    a = xp.ones(N, dtype=xp.float16)
    assert float(xp.sum(a, dtype=xp.float32)) == float(np.float32(N))


def test_sum_of_int8_ones_in_int64_is_exact(huge):
    assert int(xp.sum(xp.ones(N, dtype=xp.int8), dtype=xp.int64)) == N


def test_max_and_argmax_find_the_last_element(huge):
    a = xp.zeros(N, dtype=xp.float16)
    a[N - 3] = 5.0
    assert float(xp.max(a)) == 5.0
    assert int(xp.argmax(a)) == N - 3


def test_axis_sum_over_rows_past_2_31(huge):
    m = xp.sum(xp.ones((ROWS, COLS), dtype=xp.float16), axis=0, dtype=xp.float32).to_numpy()
    assert (m == np.float32(ROWS)).all()


def test_cumulative_sum_counts_past_2_31(huge):
    c = xp.cumulative_sum(xp.ones(N, dtype=xp.int8), dtype=xp.int64)
    assert [_at(c, 0), _at(c, 2**31 - 1), _at(c, 2**31), _at(c, N - 1)] == \
        [1, 2**31, 2**31 + 1, N]


def test_elementwise_add_writes_every_element(huge):
    a = xp.ones(N, dtype=xp.float16)
    b = xp.add(a, a)
    assert int(xp.sum(xp.astype(b == 2, xp.int8), dtype=xp.int64)) == N
    assert _at(b, N - 1) == 2.0


def test_broadcast_multiply_past_2_31(huge):
    a = xp.ones((ROWS, COLS), dtype=xp.float16)
    w = xp.full((COLS,), 2.0, dtype=xp.float16)
    p = a * w
    assert int(xp.sum(xp.astype(p == 2, xp.int8), dtype=xp.int64)) == ROWS * COLS
    assert _at(p, ROWS - 1, COLS - 1) == 2.0


def test_copy_keeps_the_last_byte(huge):
    a = xp.ones(N, dtype=xp.uint8)
    a[N - 1] = 7
    c = xp.asarray(a, copy=True)
    assert _at(c, N - 1) == 7 and _at(c, 2**31) == 1
    assert int(xp.sum(c, dtype=xp.int64)) == N + 6


def test_strided_copy_of_a_transposed_view(huge):
    a = xp.ones((2, N), dtype=xp.uint8)
    a[1, N - 1] = 9
    flat = xp.reshape(xp.permute_dims(a, (1, 0)), (-1,))   # a real strided gather
    assert _at(flat, 2 * N - 1) == 9
    assert int(xp.sum(flat, dtype=xp.int64)) == 2 * N + 8


def test_take_indices_past_2_31(huge):
    a = xp.arange(0, N, dtype=xp.int64)
    idx = xp.asarray(np.array([0, 2**31 - 1, 2**31, N - 1], dtype=np.int64))
    assert xp.take(a, idx).to_numpy().tolist() == [0, 2**31 - 1, 2**31, N - 1]


def test_nonzero_finds_an_index_past_2_31(huge):
    a = xp.zeros(N, dtype=xp.bool)
    a[N - 1] = True
    assert xp.nonzero(a)[0].to_numpy().tolist() == [N - 1]


def test_softmax_over_more_than_2_31_elements_in_rows(huge):
    s = xp.softmax(xp.zeros((2**21 + 1, 1024), dtype=xp.float16), axis=-1)
    ok = xp.abs(xp.astype(s, xp.float32) - 1.0 / 1024) < 1e-6
    assert int(xp.sum(xp.astype(ok, xp.int8), dtype=xp.int64)) == (2**21 + 1) * 1024


@pytest.mark.parametrize("op", ["sort", "argsort"])
def test_sort_rows_past_2_31_are_rejected_up_front(huge, op):
    a = xp.ones(N, dtype=xp.float16)
    with pytest.raises(UnsupportedError, match="exceed"):
        getattr(xp, op)(a)


def test_softmax_row_past_2_31_is_rejected_up_front(huge):
    with pytest.raises(UnsupportedError, match="2\\^31"):
        xp.softmax(xp.zeros((1, N), dtype=xp.float16), axis=-1)
