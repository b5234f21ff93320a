"""Devices of the namespace (CUDA GPUs by ordinal) and the raw memory operations the array layer
uses: stream-ordered allocation, memset fills, host ↔ device copies (through cuda.bindings)."""

from __future__ import annotations

import threading

import numpy as np

from baracuda_dsl.dlpack import KDL_CPU, KDL_CUDA_HOST
from baracuda_dsl.errors import DeviceMismatchError, DriverError


class Device:
    """A CUDA device, ``Device(0)`` is ``cuda:0``.  Equal devices compare equal."""

    __slots__ = ("ordinal",)

    def __init__(self, ordinal: int = 0):
        self.ordinal = int(ordinal)

    def __eq__(self, other):
        return isinstance(other, Device) and other.ordinal == self.ordinal

    def __hash__(self):
        return hash(("cuda", self.ordinal))

    def __repr__(self):
        return f"Device('cuda:{self.ordinal}')"

    def __str__(self):
        return f"cuda:{self.ordinal}"


def is_host_request(device) -> bool:
    """True when ``device`` names host memory: ``'cpu'`` / ``'cpu:N'``, a DLPack device tuple
    ``(kDLCPU, n)``, or a device object whose ``type`` is ``'cpu'`` (torch, jax)."""
    if isinstance(device, str):
        return device.strip().lower().split(":")[0] == "cpu"
    if isinstance(device, tuple) and len(device) == 2:
        try:
            return int(device[0]) in (KDL_CPU, KDL_CUDA_HOST)
        except (TypeError, ValueError):
            return False
    kind = getattr(device, "type", None) or getattr(device, "platform", None)
    return isinstance(kind, str) and kind.lower() == "cpu"


def as_device(device) -> Device:
    """Resolve ``device`` (None = current, a Device, an ordinal, ``'cuda'``/``'cuda:N'``, or an
    object with ``.ordinal`` / ``.device_id``) to a Device; CPU requests raise."""
    if device is None:
        from baracuda_dsl.runtime.device import current_device_ordinal

        return Device(current_device_ordinal())
    if isinstance(device, Device):
        return device
    if isinstance(device, int) and not isinstance(device, bool):
        return Device(device)
    if isinstance(device, str):
        d = device.strip().lower()
        if d == "cuda":
            return as_device(None)
        if d.startswith("cuda:") and d[5:].isdigit():
            return Device(int(d[5:]))
        raise DeviceMismatchError(f"device {device!r}: this namespace holds CUDA arrays only "
                                  f"(use x.to_numpy() for host copies)")
    for attr in ("ordinal", "device_id", "index", "id"):
        v = getattr(device, attr, None)
        if isinstance(v, int):
            return Device(v)
    raise DeviceMismatchError(f"cannot use {device!r} as a CUDA device")


def _check(call: str, res):
    err = res[0] if isinstance(res, tuple) else res
    if int(err) != 0:
        raise DriverError(call, err)
    return res[1] if isinstance(res, tuple) and len(res) > 1 else None


class _Block:
    """An Array's device memory: a pool buffer that goes back to the per-size free list when
    the last owner (Array, view, DLPack export) drops it, instead of to the driver."""

    __slots__ = ("buf", "ptr", "key", "__weakref__")

    def __init__(self, buf, key):
        self.buf, self.ptr, self.key = buf, int(buf.handle), key

    def __del__(self):
        try:
            _release(self)
        except Exception:  # interpreter shutdown
            pass


#: (ordinal, size class) -> free pool buffers.  Every namespace operation is ordered on the
#: legacy default stream, so a freed block can be handed out again at once (stream order makes
#: the previous owner's kernels finish first), as torch's caching allocator does.
_FREE: dict = {}
_CACHED = [0]
#: guards _FREE / _CACHED across threads; reentrant because a block's finaliser (_release) may
#: run from the garbage collector while this thread holds it
_FREE_LOCK = threading.RLock()
CACHE_LIMIT = 1 << 30  # bytes kept in the free lists; above it blocks go back to the pool
_MIN_CLASS = 512


def _size_class(nbytes: int) -> int:
    if nbytes <= _MIN_CLASS:
        return _MIN_CLASS
    if nbytes <= (64 << 20):
        return 1 << (nbytes - 1).bit_length()
    return (nbytes + (2 << 20) - 1) // (2 << 20) * (2 << 20)


def _release(block: "_Block") -> None:
    with _FREE_LOCK:
        if _CACHED[0] + block.key[1] <= CACHE_LIMIT:
            _FREE.setdefault(block.key, []).append(block.buf)
            _CACHED[0] += block.key[1]
            return
    from baracuda_dsl.runtime.device import bind_thread

    bind_thread(block.key[0])        # the last owner may die on a thread that never used CUDA
    block.buf.close()


def allocate(nbytes: int, device: Device):
    """(pointer, owner) of a device allocation of at least ``nbytes`` (≥ 1) bytes: a cached
    block of the size class when one is free, else a fresh stream-ordered pool buffer."""
    key = (device.ordinal, _size_class(int(nbytes)))
    buf = None
    with _FREE_LOCK:
        free = _FREE.get(key)
        if free:
            buf = free.pop()
            _CACHED[0] -= key[1]
    if buf is None:
        from baracuda_dsl.runtime.memory import allocate as _alloc

        buf = _alloc(key[1], None, device.ordinal)
    block = _Block(buf, key)
    return block.ptr, block


def empty_cache() -> None:
    """Return every cached free block to the device pool (extension; like
    ``torch.cuda.empty_cache``)."""
    with _FREE_LOCK:
        bufs = [b for bs in _FREE.values() for b in bs]
        _FREE.clear()
        _CACHED[0] = 0
    for b in bufs:
        b.close()


def _bind() -> None:
    """The current device's context current on the calling thread (driver calls need it)."""
    from baracuda_dsl.runtime.device import bind_thread, current_device_ordinal

    bind_thread(current_device_ordinal())


def _register_release_hook() -> None:
    from baracuda_dsl.runtime.memory import RELEASE_HOOKS

    if empty_cache not in RELEASE_HOOKS:
        RELEASE_HOOKS.append(empty_cache)     # an out-of-memory retry frees our cached blocks


_register_release_hook()


def memset(ptr: int, pattern: bytes, count: int, stream: int = 0) -> bool:
    """Fill ``count`` elements of ``len(pattern)`` bytes each at ``ptr`` with a memset when the
    pattern allows it (1/2/4-byte, or a repeated 4-byte word); False when it does not."""
    from cuda.bindings import driver

    n = len(pattern)
    if count == 0:
        return True
    _bind()
    if pattern == pattern[:1] * n:
        _check("cuMemsetD8Async", driver.cuMemsetD8Async(ptr, pattern[0], count * n, stream))
        return True
    if n == 2:
        v = int.from_bytes(pattern, "little")
        _check("cuMemsetD16Async", driver.cuMemsetD16Async(ptr, v, count, stream))
        return True
    if n % 4 == 0 and pattern == pattern[:4] * (n // 4) and ptr % 4 == 0:
        v = int.from_bytes(pattern[:4], "little")
        _check("cuMemsetD32Async", driver.cuMemsetD32Async(ptr, v, count * n // 4, stream))
        return True
    return False


def htod(ptr: int, host: np.ndarray) -> None:
    """Copy a C-contiguous host array to device memory (synchronous, legacy-stream ordered)."""
    from cuda.bindings import driver

    if host.nbytes:
        _bind()
        _check("cuMemcpyHtoD", driver.cuMemcpyHtoD(ptr, host.ctypes.data, host.nbytes))


def dtoh(host: np.ndarray, ptr: int) -> None:
    """Copy device bytes into a C-contiguous host array (waits for the legacy default stream)."""
    from cuda.bindings import driver

    if host.nbytes:
        _bind()
        _check("cuMemcpyDtoH", driver.cuMemcpyDtoH(host.ctypes.data, ptr, host.nbytes))


def stream_wait_default(stream: int) -> None:
    """Make ``stream`` wait for the work enqueued so far on the legacy default stream."""
    from cuda.bindings import driver

    _bind()
    flags = driver.CUevent_flags.CU_EVENT_DISABLE_TIMING
    ev = _check("cuEventCreate", driver.cuEventCreate(flags))
    try:
        _check("cuEventRecord", driver.cuEventRecord(ev, 0))
        _check("cuStreamWaitEvent", driver.cuStreamWaitEvent(stream, ev, 0))
    finally:
        driver.cuEventDestroy(ev)
