"""Kernel templates: CuTe DSL code plus a declared, finite SKU space.

A :class:`KernelTemplate` is plain data and never imports the DSL: it names the module holding the
CuTe DSL code (imported only by the compiler worker), the parameter ABI of the kernel entry, and
the specialisation space (dtype × knobs such as vector width or a row-length bucket).  Shapes and
strides are run-time kernel parameters, so the set of SKUs is finite and can be prebuilt.

The kernel module exposes ``build(knobs) -> (jit_fn, example_args)``; the compiler calls
``cute.compile(jit_fn, *example_args)``.  ``launch_geometry(knobs)`` (pure Python, in the spec)
gives the block size and dynamic shared memory the kernel was compiled for.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, Mapping, Optional, Tuple

from .abi import Param

Knobs = Tuple[Tuple[str, object], ...]


def freeze_knobs(knobs: Mapping[str, object]) -> Knobs:
    """Canonical, hashable form of a knob dict (sorted by name)."""
    return tuple(sorted((str(k), v) for k, v in knobs.items()))


def knob_key(knobs: Knobs) -> str:
    return ",".join(f"{k}={v}" for k, v in knobs)


@dataclass(frozen=True)
class LaunchGeometry:
    """Block size, dynamic shared memory (bytes) and thread-block-cluster size (CTAs along x;
    1 = no cluster, sm90a only otherwise) a SKU was compiled for."""

    threads: int
    smem_bytes: int = 0
    cluster: int = 1


@dataclass(frozen=True)
class KernelTemplate:
    """One CuTe DSL kernel template.

    ``name``      unique id, e.g. ``"row_norm_fw"``
    ``family``    op family for prebuild selection (``"normalization"``)
    ``module``    dotted module with the CuTe DSL code, exposing ``build(dict) -> (fn, args)``
    ``params``    the kernel entry's parameter ABI, in order
    ``space``     callable returning every knob dict of the SKU space
    ``geometry``  callable knob dict -> LaunchGeometry
    ``sources``   extra modules whose text is part of the template hash (shared helpers)
    ``arch_ok``   optional callable (knob dict, arch value) -> bool: SKUs that only exist on some
                  arches (thread-block clusters need sm90a)
    """

    name: str
    family: str
    module: str
    params: Tuple[Param, ...]
    space: Callable[[], Iterable[Dict[str, object]]]
    geometry: Callable[[Dict[str, object]], LaunchGeometry]
    sources: Tuple[str, ...] = ()
    arch_ok: Optional[Callable[[Dict[str, object], str], bool]] = None
    _hash: list = field(default_factory=list, compare=False, repr=False)

    def skus(self, arch: Optional[str] = None) -> Tuple[Knobs, ...]:
        """Every SKU (as frozen knobs) of this template's declared space, optionally only those
        that exist for ``arch`` (an ArchSku value such as ``"sm80"``)."""
        return tuple(freeze_knobs(k) for k in self.space()
                     if arch is None or self.arch_ok is None or self.arch_ok(k, arch))

    def source_hash(self) -> str:
        """sha256 (16 hex) over the text of the kernel module and its helper modules; read from
        disk without importing them, so a deployed host without the DSL can compute it."""
        if not self._hash:
            h = hashlib.sha256(self.name.encode())
            for mod in (self.module, *self.sources):
                spec = importlib.util.find_spec(mod)
                if spec is None or spec.origin is None:
                    raise ImportError(f"template {self.name}: cannot locate module {mod}")
                with open(spec.origin, "rb") as f:
                    h.update(f.read())
            h.update(repr(self.params).encode())
            self._hash.append(h.hexdigest()[:16])
        return self._hash[0]

    def sku_id(self, knobs: Knobs) -> str:
        """Stable file-name-safe id of one SKU of this template."""
        digest = hashlib.sha256(knob_key(knobs).encode()).hexdigest()[:12]
        return f"{self.name}-{digest}"


_REGISTRY: Dict[str, KernelTemplate] = {}


def register(t: KernelTemplate) -> KernelTemplate:
    """Add a template to the global registry (idempotent for the same object)."""
    old = _REGISTRY.get(t.name)
    if old is not None and old is not t:
        raise ValueError(f"kernel template {t.name!r} registered twice")
    _REGISTRY[t.name] = t
    return t


def get_template(name: str) -> KernelTemplate:
    _load_all()
    return _REGISTRY[name]


def all_templates(families: Optional[Iterable[str]] = None) -> Tuple[KernelTemplate, ...]:
    """Registered templates, optionally filtered by family name."""
    _load_all()
    fams = None if families is None else set(families)
    return tuple(t for t in _REGISTRY.values() if fams is None or t.family in fams)


def all_families() -> Tuple[str, ...]:
    _load_all()
    return tuple(sorted({t.family for t in _REGISTRY.values()}))


#: comma-separated extra modules that register templates (out-of-tree or test templates); read
#: by every process, including the spawned compiler workers, which inherit the environment
EXTRA_TEMPLATES_ENV = "BARACUDA_DSL_TEMPLATE_MODULES"


def _load_all() -> None:
    from .. import templates  # noqa: F401  (importing registers every template)

    extra = os.environ.get(EXTRA_TEMPLATES_ENV)
    if extra:
        for mod in extra.split(","):
            if mod.strip():
                importlib.import_module(mod.strip())
