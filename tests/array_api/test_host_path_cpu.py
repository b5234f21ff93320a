"""Host-path pieces of issue 18 that need no GPU: allocation size classes, the per-thread
current stream, workspaces from namespace arrays, record keys of namespace arrays."""

import threading

import pytest

from array_api import _device as D
from array_api._array_object import Array
from array_api._device import Device
from baracuda_dsl import dtypes as dt
from baracuda_dsl.errors import InvalidProblemError
from baracuda_dsl.plan import as_workspace
from baracuda_dsl.runtime import stream as S
from baracuda_dsl.runtime import trace
from baracuda_dsl.vocabulary import Workspace


@pytest.mark.parametrize("n", [1, 511, 512, 513, 4097, 100_000, (1 << 20) + 1, 3 << 24,
                               (64 << 20) - 1, (64 << 20) + 1, 1 << 33])
def test_size_classes_cover_the_request_and_waste_under_an_eighth(n):
    c = D.size_class(n)
    assert c >= n
    assert c == 512 or c - n < max(n / 8, 2 << 20), (n, c)
    assert D.size_class(c) == c                 # a class is its own class


def test_size_classes_are_few_per_octave():
    classes = {D.size_class(n) for n in range(1 << 16, 1 << 17)}
    assert len(classes) <= 9


def test_current_stream_is_per_thread_and_nests():
    assert S.current_stream() == 0
    seen = {}

    def other():
        seen["other"] = S.current_stream()

    with S.use_stream(7):
        assert S.current_stream() == 7 and S.stream_handle(None) == 7
        t = threading.Thread(target=other)
        t.start()
        t.join()
        with S.use_stream(9):
            assert S.current_stream() == 9
        assert S.current_stream() == 7
    assert S.current_stream() == 0 and seen["other"] == 0


def test_workspace_from_a_namespace_array_and_refusals():
    a = Array._trusted(0x7000_0000, (4096,), (1,), dt.uint8, Device(0), None)
    ws = as_workspace(a)
    assert (ws.ptr, ws.nbytes) == (0x7000_0000, 4096)
    f = Array._trusted(0x7000_0000, (64,), (1,), dt.float32, Device(0), None)
    assert as_workspace(f).nbytes == 256
    assert as_workspace(Workspace(16, 32)) == Workspace(16, 32)

    class NoAddress:
        size = 100

    with pytest.raises(InvalidProblemError):
        as_workspace(NoAddress())


def test_record_keys_of_namespace_arrays():
    dev = Device(0)
    a = Array._trusted(0x1000_0000, (3, 4), (4, 1), dt.float32, dev, None)
    b = Array._trusted(0x2000_0010, (3, 4), (4, 1), dt.float32, dev, None)
    parts, ptrs, objs = [], [], []
    assert trace.call_key(["add", a, b, 2.0, (0, 1)], parts, ptrs, objs)
    assert ptrs == [0x1000_0000, 0x2000_0010] and objs == [a, b]
    assert parts[1][3] == 0 and parts[2][3] == 0x10          # pointer alignment class
    p2 = []
    trace.call_key(["add", a, b, -2.0, (0, 1)], p2, [], [])
    assert tuple(parts) != tuple(p2)
    assert not trace.call_key([object()], [], [], [])
