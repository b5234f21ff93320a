"""Device memory from a stream-ordered pool (``cuda.core.DeviceMemoryResource``).

``allocate(nbytes, stream)`` returns a ``cuda.core.Buffer``; freeing it (``close()`` or garbage
collection) returns the memory to the pool in stream order, so temporaries cost no
``cudaMalloc``/``cudaFree`` round trip.  An allocation the device cannot satisfy runs the
registered release hooks (caches above the pool, e.g. the array namespace's free lists), trims
the pool, retries once, and then raises :class:`~baracuda_dsl.errors.DeviceOutOfMemoryError`
(a ``MemoryError``).
"""

from __future__ import annotations

from typing import Callable, List

from ..errors import DeviceOutOfMemoryError
from .device import INIT_LOCK, cuda_core, current_device_ordinal, get_device
from .stream import AMBIENT
from .trace import active, refuse

#: callables run before an out-of-memory retry; each hands cached device memory back
RELEASE_HOOKS: List[Callable[[], None]] = []


def _is_out_of_memory(e: BaseException) -> bool:
    text = str(e)
    return "OUT_OF_MEMORY" in text or "out of memory" in text.lower()


def _release_cached(ordinal: int, stream) -> None:
    """Run the release hooks, wait for pending frees, and trim the pool to nothing."""
    for hook in list(RELEASE_HOOKS):
        hook()
    import gc

    gc.collect()
    from cuda.bindings import driver

    get_device(ordinal).sync()
    try:
        err, pool = driver.cuDeviceGetMemPool(ordinal)
        if int(err) == 0:
            driver.cuMemPoolTrimTo(pool, 0)
    except Exception:  # noqa: BLE001 - trimming is best effort
        pass


_POOLS: dict = {}


def memory_resource(ordinal: int = 0):
    """The device's stream-ordered memory pool (created once per device, under the runtime's
    init lock: concurrent first uses from several threads get the same pool)."""
    mr = _POOLS.get(ordinal)
    if mr is None:
        with INIT_LOCK:
            mr = _POOLS.get(ordinal)
            if mr is None:
                get_device(ordinal)
                mr = _POOLS[ordinal] = cuda_core().DeviceMemoryResource(ordinal)
    return mr


def allocate(nbytes: int, stream=None, ordinal: int | None = None):
    """A device ``cuda.core.Buffer`` of at least ``nbytes`` (>= 1) bytes, ordered on ``stream``
    (a plan's temporary: a call that makes one is not recorded, see runtime/trace.py)."""
    refuse("a raw device allocation")
    arena = AMBIENT.arena
    if arena is not None:          # a CUDA graph capture: the graph's own memory
        return arena.buffer(max(int(nbytes), 1), current_device_ordinal() if ordinal is None
                            else ordinal)
    return allocate_pool(nbytes, stream, ordinal)


def allocate_pool(nbytes: int, stream=None, ordinal: int | None = None):
    """:func:`allocate` for allocators that report to the launch tracer themselves (the array
    namespace's cached blocks)."""
    ordinal = current_device_ordinal() if ordinal is None else ordinal
    mr = memory_resource(ordinal)
    s = as_core_stream(stream, ordinal)
    n = max(int(nbytes), 1)
    try:
        return mr.allocate(n, stream=s)
    except Exception as e:  # cuda.core's CUDAError
        if not _is_out_of_memory(e):
            raise
    _release_cached(ordinal, s)
    try:
        return mr.allocate(n, stream=s)
    except Exception as e:
        if not _is_out_of_memory(e):
            raise
        raise DeviceOutOfMemoryError(n, ordinal, str(e).splitlines()[0]) from None


def as_core_stream(stream, ordinal):
    if isinstance(stream, cuda_core().Stream):
        return stream
    dev = get_device(ordinal)
    if stream is None:
        return dev.default_stream
    from .stream import stream_handle

    return cuda_core().Stream.from_handle(stream_handle(stream))


def memset(width: int, ptr: int, value: int, count: int, stream: int = 0) -> None:
    """Enqueue ``cuMemsetD{8,16,32}Async(ptr, value, count)`` (``width`` 1, 2 or 4 bytes per
    element) on the raw ``stream``; DriverError on failure.  Every memset of the library goes
    through here (a traced call records it)."""
    from cuda.bindings import driver

    from ..errors import DriverError

    t = active()
    if t is not None:
        t.memset(memset, width, ptr, value, count, stream)
    fn = {1: driver.cuMemsetD8Async, 2: driver.cuMemsetD16Async,
          4: driver.cuMemsetD32Async}[width]
    (err,) = fn(ptr, value, count, stream)
    if err:
        raise DriverError(fn.__name__, err)


def memset_d8(ptr: int, value: int, nbytes: int, stream: int = 0) -> None:
    """``memset(1, ptr, value, nbytes, stream)``."""
    memset(1, ptr, value, nbytes, stream)
