"""Device memory from a stream-ordered pool (``cuda.core.DeviceMemoryResource``).

``allocate(nbytes, stream)`` returns a ``cuda.core.Buffer``; freeing it (``close()`` or garbage
collection) returns the memory to the pool in stream order, so temporaries cost no
``cudaMalloc``/``cudaFree`` round trip.
"""

from __future__ import annotations

import functools

from .device import current_device_ordinal, get_device


@functools.lru_cache(maxsize=None)
def memory_resource(ordinal: int = 0):
    """The device's stream-ordered memory pool (created once per device)."""
    from cuda.core import DeviceMemoryResource

    get_device(ordinal)
    return DeviceMemoryResource(ordinal)


def allocate(nbytes: int, stream=None, ordinal: int | None = None):
    """A device ``cuda.core.Buffer`` of at least ``nbytes`` (>= 1) bytes, ordered on ``stream``."""
    ordinal = current_device_ordinal() if ordinal is None else ordinal
    mr = memory_resource(ordinal)
    s = as_core_stream(stream, ordinal)
    return mr.allocate(max(int(nbytes), 1), stream=s)


def as_core_stream(stream, ordinal):
    from cuda.core import Stream

    if isinstance(stream, Stream):
        return stream
    dev = get_device(ordinal)
    if stream is None:
        return dev.default_stream
    from .stream import stream_handle

    return Stream.from_handle(stream_handle(stream))


def memset_d8(ptr: int, value: int, nbytes: int, stream: int = 0) -> None:
    """Enqueue ``cuMemsetD8Async(ptr, value, nbytes)`` on the raw ``stream``; DriverError on
    failure."""
    from cuda.bindings import driver

    from ..errors import DriverError

    (err,) = driver.cuMemsetD8Async(ptr, value, nbytes, stream)
    if err:
        raise DriverError("cuMemsetD8Async", err)
