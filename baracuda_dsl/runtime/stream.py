"""Streams: the default stream, user streams, and interop with torch / cupy / cuda.core handles.

``stream_handle(s)`` turns whatever the caller passed into the raw ``CUstream`` integer used by
``cuLaunchKernel``: None (the calling thread's *current* stream: the legacy default stream 0,
which orders with torch's and cupy's default streams, unless :func:`use_stream` set another), an
int handle, a ``cuda.core.Stream``, any object implementing the
``__cuda_stream__`` protocol, a ``torch.cuda.Stream`` (``.cuda_stream``) or a cupy stream (``.ptr``).
"""

from __future__ import annotations

import contextlib
import threading

from ..errors import InvalidProblemError

#: per-thread: ``handle`` (the current stream, default 0) and ``arena`` (the memory of the CUDA
#: graph being captured on this thread, if any; see array_api's CUDAGraph)
class _Ambient(threading.local):
    handle = 0             # the current stream
    arena = None           # the capturing graph's memory


AMBIENT = _Ambient()


def current_stream() -> int:
    """The calling thread's current stream (raw handle): what ``stream=None`` means."""
    return AMBIENT.handle


@contextlib.contextmanager
def use_stream(stream):
    """Within the block, ``stream=None`` (every Plan's default, every array-namespace op) means
    ``stream`` on this thread; the previous current stream is restored on exit."""
    h = stream_handle(stream)
    prev = AMBIENT.handle
    AMBIENT.handle = h
    try:
        yield h
    finally:
        AMBIENT.handle = prev


def stream_handle(stream) -> int:
    """Raw CUstream handle (int) for ``stream`` (None: the thread's current stream)."""
    if stream is None:
        return AMBIENT.handle
    if isinstance(stream, int):
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        _ver, handle = proto() if callable(proto) else proto
        return int(handle)
    for attr in ("cuda_stream", "ptr", "handle"):
        h = getattr(stream, attr, None)
        if h is not None:
            try:
                return int(h)
            except TypeError:
                pass
    raise InvalidProblemError(f"cannot use an object of type {type(stream).__name__} as a CUDA stream")


def new_stream(ordinal: int = 0):
    """A new non-blocking ``cuda.core.Stream`` on the device."""
    from .device import get_device

    return get_device(ordinal).create_stream()


def synchronize(stream=None) -> None:
    """Wait for ``stream`` (or the whole device when None)."""
    from cuda.bindings import driver

    from .device import bind_thread, current_device_ordinal
    from .trace import refuse

    refuse("a synchronisation")
    bind_thread(current_device_ordinal())
    if stream is None:
        (err,) = driver.cuCtxSynchronize()
    else:
        (err,) = driver.cuStreamSynchronize(stream_handle(stream))
    if int(err) != 0:
        from ..errors import DriverError

        raise DriverError("cuStreamSynchronize", err)
