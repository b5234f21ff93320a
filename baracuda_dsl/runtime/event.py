"""CUDA events through ``cuda.core``: record on any stream the package accepts (None = legacy
default, an int handle, a cuda.core / torch / cupy stream) and time between two events.

    start = record(stream, timing=True); plan.run(args, stream=stream); stop = record(stream, True)
    stop.sync(); print(elapsed_ms(start, stop))
"""

from __future__ import annotations

from .memory import as_core_stream
from .device import cuda_core, current_device_ordinal


def record(stream=None, timing: bool = False):
    """A ``cuda.core.Event`` recorded on ``stream`` (with timing enabled when asked)."""
    s = as_core_stream(stream, current_device_ordinal())
    return s.record(options=cuda_core().EventOptions(timing_enabled=bool(timing)))


def elapsed_ms(start, stop) -> float:
    """Milliseconds between two timing-enabled events (waits for ``stop``)."""
    stop.sync()
    return float(stop - start)
