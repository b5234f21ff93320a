"""Per-SKU JIT and the prebuildable cubin cache.

``kernel(template, knobs, ordinal)`` is the one entry the plans use: an in-process table first,
then the on-disk cache (no DSL import needed), then — unless ``BARACUDA_DSL_JIT=0`` — a compile in
a worker process for the device's own arch, stored in the cache for next time.  With JIT disabled a
miss raises :class:`~baracuda_dsl.errors.KernelNotCachedError` naming the prebuild command.

Compiles are logged on the ``baracuda_dsl`` logger (:mod:`logging`): INFO per compiled SKU with
its time, and once per process a WARNING that kernels are being compiled on first use and how to
prebuild them or install prebuilt ones (shown on stderr even when logging is not configured).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Dict, Tuple

from ..abi import Artifact, Param, params
from ..errors import KernelNotCachedError
from ..vocabulary import ArchSku
from .cache import KernelCache, default_cache_dir, installed_dsl_version
from .template import (KernelTemplate, Knobs, LaunchGeometry, freeze_knobs, knob_key, register,
                       registered)

__all__ = [
    "Artifact", "KernelCache", "KernelTemplate", "Knobs", "LaunchGeometry", "Param", "params",
    "artifact", "default_cache_dir", "freeze_knobs", "installed_dsl_version", "jit_enabled",
    "kernel", "knob_key", "register", "registered",
]

_KERNELS: Dict[Tuple[str, Knobs, int], object] = {}
_LOCK = threading.Lock()
log = logging.getLogger("baracuda_dsl")
_told_once: list = []


def _announce_first_compile(t: KernelTemplate, arch: ArchSku, cache: KernelCache) -> None:
    """The once-per-process notice that kernels are compiled on first use."""
    if _told_once:
        return
    _told_once.append(True)
    log.warning("baracuda-dsl: compiling kernel %s for %s on first use (about a second per kernel, "
                "cached in %s for next time). To skip this, prebuild: python -m baracuda_dsl "
                "prebuild --arch native, or install prebuilt kernels: pip install "
                "'baracuda-dsl[%s]'", t.name, arch.value, cache.root, arch.value)


def jit_enabled() -> bool:
    """False when ``BARACUDA_DSL_JIT=0`` (cache misses then raise instead of compiling)."""
    return os.environ.get("BARACUDA_DSL_JIT", "1").strip().lower() not in ("0", "false", "no", "off")


def artifact(t: KernelTemplate, knobs: Knobs, arch: ArchSku, cache: KernelCache | None = None,
             allow_jit: bool | None = None) -> Artifact:
    """The compiled artifact for one SKU: from the cache, or compiled now (and cached)."""
    cache = cache or KernelCache()
    art = cache.get(t, knobs, arch.value)
    if art is not None:
        return art
    if not (jit_enabled() if allow_jit is None else allow_jit):
        raise KernelNotCachedError(f"{t.name}({knob_key(knobs)})", arch.value, cache.root, t.family)
    if installed_dsl_version() is None:
        raise KernelNotCachedError(f"{t.name}({knob_key(knobs)})", arch.value, cache.root, t.family,
                                   reason="the CuTe DSL (nvidia-cutlass-dsl) is not installed here, "
                                          "so it cannot be compiled on demand")
    from .compiler import compile_sku

    _announce_first_compile(t, arch, cache)
    t0 = time.perf_counter()
    cubin, meta = compile_sku(t, knobs, arch)
    log.info("compiled %s(%s) for %s in %.2f s", t.name, knob_key(knobs), arch.value,
             time.perf_counter() - t0)
    return cache.put(t, knobs, arch.value, cubin, meta)


def kernel(t: KernelTemplate, knobs: Knobs, ordinal: int, arch: ArchSku):
    """The loaded kernel for one SKU on device ``ordinal`` (memoised per process)."""
    key = (t.name, knobs, ordinal)
    lk = _KERNELS.get(key)
    if lk is not None:
        return lk
    with _LOCK:
        lk = _KERNELS.get(key)
        if lk is None:
            from ..runtime.module import load

            art = artifact(t, knobs, arch)
            lk = _KERNELS[key] = load(art, ordinal, f"{t.name}/{knob_key(knobs)}")
    return lk
