"""Device memory under pressure: an allocation the device cannot satisfy raises the typed
``DeviceOutOfMemoryError`` (a ``MemoryError``) and leaves the device usable; a refused allocation
is retried once after the namespace's cached free blocks go back to the driver (a simulated
refusal: exhausting the GPU for real would starve the other test processes)."""

import gc

import numpy as np
import pytest

import array_api as xp
import baracuda_dsl as bd

pytestmark = pytest.mark.gpu


def test_impossible_allocation_is_a_typed_memory_error():
    with pytest.raises(bd.DeviceOutOfMemoryError) as ei:
        xp.empty((1 << 38,), dtype=xp.float32)                     # 1 TiB
    assert isinstance(ei.value, MemoryError) and ei.value.nbytes >= 1 << 40
    assert "out of memory on CUDA device 0" in str(ei.value)
    x = xp.asarray(np.arange(1 << 20, dtype=np.float32))            # the device still works
    assert float(xp.sum(x)) == float(np.arange(1 << 20, dtype=np.float64).sum())


class _Refusing:
    """A memory resource that refuses its first ``refusals`` allocations as the driver does when
    the device is full (no real memory pressure: the suite runs in parallel processes)."""

    def __init__(self, mr, refusals):
        self.mr, self.refusals, self.calls = mr, refusals, 0

    def allocate(self, nbytes, stream=None):
        self.calls += 1
        if self.calls <= self.refusals:
            raise RuntimeError("CUDA_ERROR_OUT_OF_MEMORY: out of memory (simulated)")
        return self.mr.allocate(nbytes, stream=stream)


@pytest.mark.parametrize("refusals", [1, 2])
def test_refused_allocation_retries_after_releasing_cached_blocks(monkeypatch, refusals):
    from array_api import _device
    from baracuda_dsl.runtime import memory

    _device.empty_cache()                   # only the blocks below are cached
    xs = [xp.empty((1 << 20,), dtype=xp.float32) for _ in range(3)]   # cached when dropped
    del xs
    gc.collect()
    assert _device._CACHED[0] >= 3 * (4 << 20)
    refusing = _Refusing(memory.memory_resource(0), refusals)
    monkeypatch.setattr(memory, "memory_resource", lambda ordinal=0: refusing)
    if refusals == 1:                       # the retry after the release succeeds
        y = xp.empty((3 << 20,), dtype=xp.float32)
        assert y.size == 3 << 20
    else:                                   # refused again: the typed error
        with pytest.raises(bd.DeviceOutOfMemoryError, match="simulated"):
            xp.empty((3 << 20,), dtype=xp.float32)
    assert refusing.calls == 2 and _device._CACHED[0] == 0     # cached blocks went back
