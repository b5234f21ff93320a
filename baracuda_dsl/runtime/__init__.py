"""CUDA runtime layer over ``cuda.core``: devices and their arch, streams, events, the
stream-ordered memory pool, and the module cache / launcher for cached cubins.  Nothing here imports the CUDA
packages at import time, so ``import baracuda_dsl`` works without a GPU or driver."""

from .device import (current_device_ordinal, device_arch, device_count, device_name, get_device,
                     has_gpu, resolve_arch, set_device, sm_count)
from .event import elapsed_ms, record
from .stream import new_stream, stream_handle, synchronize

__all__ = [
    "current_device_ordinal", "device_arch", "device_count", "device_name", "get_device", "has_gpu",
    "resolve_arch", "set_device", "sm_count", "new_stream", "stream_handle", "synchronize",
    "record", "elapsed_ms",
]
