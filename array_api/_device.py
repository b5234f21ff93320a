"""Devices of the namespace (CUDA GPUs by ordinal) and the raw memory operations the array layer
uses: stream-ordered allocation, memset fills, host ↔ device copies (through cuda.bindings)."""

from __future__ import annotations

import numpy as np

from baracuda_dsl.dlpack import KDL_CPU, KDL_CUDA_HOST
from baracuda_dsl.errors import DeviceMismatchError, DriverError, UnsupportedError
from baracuda_dsl.runtime.memory import allocate_pool
from baracuda_dsl.runtime.stream import AMBIENT as _STREAMS, current_stream
from baracuda_dsl.runtime.trace import STATE as _TRACE, refuse


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
    the last owner (Array, view, DLPack export) drops it, instead of to the driver; a block of a
    CUDA graph's capture (``home``: its arena) goes back to that graph's list."""

    __slots__ = ("buf", "ptr", "key", "home", "__weakref__")

    def __init__(self, buf, key, home=None):
        self.buf, self.ptr, self.key, self.home = buf, int(buf.handle), key, home

    def __del__(self):
        try:
            if self.home is None:
                _release(self)
            else:
                self.home.release(self.buf, self.key)
        except Exception:  # interpreter shutdown
            pass


#: (ordinal, size class, stream) -> free pool buffers.  A block is handed out again only to an
#: allocation on the stream it was allocated on (the namespace's current stream then), so stream
#: order makes the previous owner's kernels finish first, as torch's caching allocator does.
#: An array used on another stream than the one current at its allocation must be synchronised
#: by the caller before it is dropped (torch's ``record_stream`` rule).
#: The lists are used without a lock: ``list.pop`` / ``list.append`` / ``dict.setdefault`` are
#: atomic under the GIL, so no block is ever handed out twice; ``_CACHED`` (the bytes held, for
#: the soft ``CACHE_LIMIT``) may drift by a block under concurrent frees, which is harmless.
_FREE: dict = {}
_CACHED = [0]
CACHE_LIMIT = 1 << 30  # bytes kept in the free lists; above it blocks go back to the pool
_MIN_CLASS = 512


_CLASSES: dict = {}      # memo of size_class for the request sizes seen


def size_class(nbytes: int) -> int:
    """The bytes actually allocated for a request: 512 B at least; up to 64 MiB, eight classes
    per power of two (a request just above one class wastes under 12.5 %, not 2x); above, a
    multiple of 2 MiB."""
    if nbytes <= _MIN_CLASS:
        return _MIN_CLASS
    if nbytes <= (64 << 20):
        step = 1 << max((nbytes - 1).bit_length() - 4, 0)
        return (nbytes + step - 1) // step * step
    return (nbytes + (2 << 20) - 1) // (2 << 20) * (2 << 20)


def _release(block: "_Block") -> None:
    key = block.key
    if _CACHED[0] + key[1] <= CACHE_LIMIT:
        lst = _FREE.get(key)
        if lst is None:
            lst = _FREE.setdefault(key, [])
        lst.append(block.buf)
        _CACHED[0] += key[1]
        return
    from baracuda_dsl.runtime.device import bind_thread

    dev = bind_thread(block.key[0])  # the last owner may die on a thread that never used CUDA
    _close(block.buf, block.key[2], dev)


def _close(buf, stream: int, dev) -> None:
    """Free ``buf`` on the legacy default stream; a block of another stream (which its owner may
    have destroyed meanwhile) after a device sync, so no pending work still uses it."""
    if stream:
        dev.sync()
    buf.close(dev.default_stream)


def allocate(nbytes: int, device: Device):
    """(pointer, owner) of a device allocation of at least ``nbytes`` (≥ 1) bytes: a cached
    block of the size class when one is free, else a fresh stream-ordered pool buffer (during a
    CUDA graph capture on this thread: a block of the graph's own memory)."""
    arena = _STREAMS.arena
    if arena is not None:
        size = size_class(int(nbytes))
        block = arena.allocate(int(nbytes), device.ordinal, size, _Block)
    else:
        size = _CLASSES.get(nbytes)
        if size is None:
            size = size_class(int(nbytes))
            if len(_CLASSES) < 4096:
                _CLASSES[nbytes] = size
        key = (device.ordinal, size, _STREAMS.handle)
        buf = None
        free = _FREE.get(key)
        if free:
            try:
                buf = free.pop()
                _CACHED[0] -= size
            except IndexError:       # another thread took the last one
                buf = None
        if buf is None:
            buf = allocate_pool(size, current_stream(), device.ordinal)
        block = _Block(buf, key)
    t = _TRACE.tracer
    if t is not None:
        t.alloc(nbytes, device.ordinal, block.ptr, size, block)
    return block.ptr, block


def empty_cache() -> None:
    """Return every cached free block to the device pool (extension; like
    ``torch.cuda.empty_cache``)."""
    bufs = []
    for k, lst in list(_FREE.items()):
        while True:
            try:
                b = lst.pop()
            except IndexError:
                break
            _CACHED[0] -= k[1]
            bufs.append((k, b))
    from baracuda_dsl.runtime.device import bind_thread

    for k, b in bufs:
        _close(b, k[2], bind_thread(k[0]))


def sync_current() -> None:
    """Wait for the namespace's current stream when it is not the legacy default stream (whose
    work a synchronous copy already waits for)."""
    s = _STREAMS.handle
    if s:
        from cuda.bindings import driver

        _check("cuStreamSynchronize", driver.cuStreamSynchronize(s))


def _bind() -> None:
    """The current device's context current on the calling thread (driver calls need it)."""
    from baracuda_dsl.runtime.device import bind_thread, current_device_ordinal

    bind_thread(current_device_ordinal())


def _register_release_hook() -> None:
    from baracuda_dsl.runtime.memory import RELEASE_HOOKS

    if empty_cache not in RELEASE_HOOKS:
        RELEASE_HOOKS.append(empty_cache)     # an out-of-memory retry frees our cached blocks


_register_release_hook()


def memset(ptr: int, pattern: bytes, count: int, stream=None) -> bool:
    """Fill ``count`` elements of ``len(pattern)`` bytes each at ``ptr`` with a memset when the
    pattern allows it (1/2/4-byte, or a repeated 4-byte word); False when it does not.  On the
    namespace's current stream unless ``stream`` (a raw handle) is given."""
    from baracuda_dsl.runtime.memory import memset as _memset

    n = len(pattern)
    if count == 0:
        return True
    s = current_stream() if stream is None else stream
    _bind()
    if pattern == pattern[:1] * n:
        _memset(1, ptr, pattern[0], count * n, s)
        return True
    if n == 2:
        _memset(2, ptr, int.from_bytes(pattern, "little"), count, s)
        return True
    if n % 4 == 0 and pattern == pattern[:4] * (n // 4) and ptr % 4 == 0:
        _memset(4, ptr, int.from_bytes(pattern[:4], "little"), count * n // 4, s)
        return True
    return False


def htod(ptr: int, host: np.ndarray) -> None:
    """Copy a C-contiguous host array to device memory (synchronous, legacy-stream ordered; the
    namespace's current stream is waited for first when it is another one).  During a CUDA graph
    capture the copy happens once, at capture time (it is not part of the graph)."""
    from cuda.bindings import driver

    refuse("a host-to-device copy")
    if host.nbytes:
        _bind()
        if _STREAMS.arena is None:
            sync_current()
        else:
            _STREAMS.arena.pin(ptr)
        _check("cuMemcpyHtoD", driver.cuMemcpyHtoD(ptr, host.ctypes.data, host.nbytes))


def dtoh(host: np.ndarray, ptr: int) -> None:
    """Copy device bytes into a C-contiguous host array (waits for the namespace's current
    stream and the legacy default stream); UnsupportedError during a CUDA graph capture (the
    captured work has not run: the bytes would be stale)."""
    refuse("a device-to-host copy")
    read_back(host, ptr)


def read_back(host: np.ndarray, ptr: int) -> None:
    """:func:`dtoh` without telling the launch tracer (for a readback a launch record replays
    itself: the index check's status word)."""
    from cuda.bindings import driver

    if _STREAMS.arena is not None:
        raise UnsupportedError("reading device data on the host (to_numpy, float(x), an index "
                               "check, a data-dependent shape) is not possible during a CUDA "
                               "graph capture: the captured work has not run yet")
    if host.nbytes:
        _bind()
        sync_current()
        _check("cuMemcpyDtoH", driver.cuMemcpyDtoH(host.ctypes.data, ptr, host.nbytes))


def stream_wait_default(stream: int) -> None:
    """Make ``stream`` wait for the work enqueued so far on the namespace's current stream (the
    legacy default stream unless ``use_stream`` says otherwise)."""
    from cuda.bindings import driver

    refuse("a stream wait")
    _bind()
    flags = driver.CUevent_flags.CU_EVENT_DISABLE_TIMING
    ev = _check("cuEventCreate", driver.cuEventCreate(flags))
    try:
        _check("cuEventRecord", driver.cuEventRecord(ev, current_stream()))
        _check("cuStreamWaitEvent", driver.cuStreamWaitEvent(stream, ev, 0))
    finally:
        driver.cuEventDestroy(ev)
