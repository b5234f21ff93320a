"""Streams: the default stream, user streams, and interop with torch / cupy / cuda.core handles.

``stream_handle(s)`` turns whatever the caller passed into the raw ``CUstream`` integer used by
``cuLaunchKernel``: None (the legacy default stream 0, which orders with torch's and cupy's
default streams), an int handle, a ``cuda.core.Stream``, any object implementing the
``__cuda_stream__`` protocol, a ``torch.cuda.Stream`` (``.cuda_stream``) or a cupy stream (``.ptr``).
"""

from __future__ import annotations

from ..errors import InvalidProblemError


def stream_handle(stream) -> int:
    """Raw CUstream handle (int) for ``stream``."""
    if stream is None:
        return 0
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

    bind_thread(current_device_ordinal())
    if stream is None:
        (err,) = driver.cuCtxSynchronize()
    else:
        (err,) = driver.cuStreamSynchronize(stream_handle(stream))
    if int(err) != 0:
        from ..errors import DriverError

        raise DriverError("cuStreamSynchronize", err)
