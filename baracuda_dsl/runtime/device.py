"""Current device and its arch, through ``cuda.core`` (imported lazily: importing this package
must work on a machine without a GPU or driver).

CUDA binds a context to each host thread separately: :func:`bind_thread` makes the device's
primary context current on the calling thread the first time that thread needs it (a
thread-local check afterwards), and every entry that talks to the driver — kernel launches,
allocations, copies, synchronisation, :func:`get_device` — calls it, so the library works from
any thread (web servers, data loaders, joblib's threading backend)."""

from __future__ import annotations

import functools
import threading
from typing import Optional

from ..errors import NoDeviceError
from ..vocabulary import ArchSku


#: serialises the first import of cuda.core and the per-device one-time set-up (memory pool):
#: cuda.core resolves its names lazily, and two threads importing it at once can see a partly
#: initialised module (ImportError "cannot import name ... from cuda.core.cu13")
INIT_LOCK = threading.RLock()
_CORE: list = []


def cuda_core():
    """The ``cuda.core`` module, imported once (thread-safe; NoDeviceError if unavailable)."""
    if _CORE:
        return _CORE[0]
    with INIT_LOCK:
        if not _CORE:
            try:
                import cuda.core as core

                # resolve the lazily loaded names now, under the lock
                for name in ("Device", "Stream", "DeviceMemoryResource", "LaunchConfig",
                             "ObjectCode", "EventOptions"):
                    getattr(core, name, None)
            except Exception as e:  # pragma: no cover - depends on the machine
                raise NoDeviceError(f"cuda.core is not importable: {e}") from None
            _CORE.append(core)
    return _CORE[0]


def device_count() -> int:
    """Number of visible CUDA devices (0 without a driver)."""
    try:
        from cuda.bindings import driver
    except Exception:
        return 0
    try:
        (err,) = driver.cuInit(0)
        if int(err) != 0:
            return 0
        err, n = driver.cuDeviceGetCount()
        return int(n) if int(err) == 0 else 0
    except Exception:
        return 0


def has_gpu() -> bool:
    return device_count() > 0


#: per-thread state: ``devices`` (this thread's cuda.core Device objects by ordinal) and
#: ``current`` (the ordinal whose primary context this thread has made current)
THREAD_STATE = threading.local()


@functools.lru_cache(maxsize=None)
def _check_ordinal(ordinal: int) -> None:
    if device_count() <= ordinal:
        raise NoDeviceError(f"no CUDA device {ordinal} (visible: {device_count()})")


def bind_thread(ordinal: int = 0):
    """The calling thread's ``cuda.core.Device`` for ``ordinal``, with the device's primary
    context made current on this thread when it is not already (cuda.core's Device objects are
    per thread, so each thread keeps its own)."""
    devs = getattr(THREAD_STATE, "devices", None)
    if devs is None:
        devs = THREAD_STATE.devices = {}
    dev = devs.get(ordinal)
    if dev is None:
        _check_ordinal(ordinal)
        dev = devs[ordinal] = cuda_core().Device(ordinal)
    if getattr(THREAD_STATE, "current", None) != ordinal:
        dev.set_current()
        THREAD_STATE.current = ordinal
    return dev


def get_device(ordinal: int = 0):
    """The ``cuda.core.Device`` for ``ordinal``, its primary context current on this thread."""
    return bind_thread(ordinal)


def current_device_ordinal() -> int:
    return 0 if not _CURRENT else _CURRENT[0]


_CURRENT: list = []


def set_device(ordinal: int) -> None:
    """Make ``ordinal`` the device later plans run on."""
    get_device(ordinal).set_current()
    _CURRENT[:] = [ordinal]


@functools.lru_cache(maxsize=None)
def device_arch(ordinal: int = 0) -> ArchSku:
    """The kernel SKU arch for a device (sm90a on H100/H200, sm89 on Ada, sm80 on Ampere)."""
    cc = get_device(ordinal).compute_capability
    return ArchSku.for_compute_capability(cc.major, cc.minor)


def device_name(ordinal: int = 0) -> str:
    return get_device(ordinal).name


def sm_count(ordinal: int = 0) -> int:
    return int(get_device(ordinal).properties.multiprocessor_count)


def resolve_arch(override: Optional[ArchSku] = None, ordinal: Optional[int] = None) -> ArchSku:
    """``override`` if given, else the arch of the current device."""
    if override is not None:
        return override if isinstance(override, ArchSku) else ArchSku.parse(str(override))
    return device_arch(current_device_ordinal() if ordinal is None else ordinal)
