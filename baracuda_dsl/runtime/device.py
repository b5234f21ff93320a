"""Current device and its arch, through ``cuda.core`` (imported lazily: importing this package
must work on a machine without a GPU or driver)."""

from __future__ import annotations

import functools
from typing import Optional

from ..errors import NoDeviceError
from ..vocabulary import ArchSku


@functools.lru_cache(maxsize=None)
def _core():
    try:
        import cuda.core as core
    except Exception as e:  # pragma: no cover - depends on the machine
        raise NoDeviceError(f"cuda.core is not importable: {e}") from None
    return core


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


@functools.lru_cache(maxsize=None)
def get_device(ordinal: int = 0):
    """The ``cuda.core.Device`` for ``ordinal``, made current (primary context) once."""
    if device_count() <= ordinal:
        raise NoDeviceError(f"no CUDA device {ordinal} (visible: {device_count()})")
    dev = _core().Device(ordinal)
    dev.set_current()
    return dev


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
