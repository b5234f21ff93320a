"""Kernel templates: CuTe DSL code plus a declared, finite SKU space.

A :class:`KernelTemplate` is plain data and never imports the DSL: it names the module holding the
CuTe DSL code (imported only by the compiler worker), the parameter ABI of the kernel entry, the
type of its knobs and the specialisation space (dtype × knobs such as vector width or a row-length
bucket).  Shapes and strides are run-time kernel parameters, so the set of SKUs is finite and can
be prebuilt.

Knobs are frozen dataclasses (one type per template, :attr:`KernelTemplate.knobs`).  A SKU's
canonical form (:data:`Knobs`, what caches and :class:`~baracuda_dsl.vocabulary.KernelSku` hold)
is the sorted ``(name, value)`` pairs of its fields, leaving out the fields that still have their
declared default: a knob added later with a default does not rename the SKUs that exist.

The kernel module exposes ``build(knobs) -> (jit_fn, example_args)``; the compiler calls
``cute.compile(jit_fn, *example_args)``.  ``geometry(knobs)`` (pure Python, in the spec) gives the
block size, dynamic shared memory and cluster size the kernel was compiled for.

This module only holds the registry; which spec modules exist is the op-family registry's business
(:mod:`baracuda_dsl.ops`), so nothing here imports an op family.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib
import importlib.util
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Optional, Tuple, Union

from ..abi import Param

Knobs = Tuple[Tuple[str, object], ...]


def freeze_knobs(knobs: Any) -> Knobs:
    """Canonical, hashable form of a knobs dataclass (fields that differ from their default) or
    of a mapping (every item), sorted by name."""
    if dataclasses.is_dataclass(knobs) and not isinstance(knobs, type):
        items = []
        for f in dataclasses.fields(knobs):
            v = getattr(knobs, f.name)
            if f.default is not dataclasses.MISSING and v == f.default \
                    and type(v) is type(f.default):
                continue
            items.append((f.name, v))
        return tuple(sorted(items))
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
    ``family``    op family (the ``baracuda_dsl.ops`` package that owns it; prebuild's ``--ops``)
    ``module``    dotted module with the CuTe DSL code, exposing ``build(knobs) -> (fn, args)``
    ``params``    the kernel entry's parameter ABI, in order; or a callable knobs -> that tuple
                  when SKUs of the template take different parameters (see :meth:`abi`)
    ``space``     callable returning every SKU's knobs
    ``geometry``  callable knobs -> LaunchGeometry
    ``knobs``     the frozen dataclass type of this template's knobs
    ``arch_ok``   optional callable (knobs, arch value) -> bool: SKUs that only exist on some
                  arches (thread-block clusters need sm90a)

    The source hash covers the kernel module and every module of the same top-level package it
    imports, transitively (read as text, never imported), so a change to a shared helper
    invalidates exactly the SKUs built from it.  ``spec`` is the module that registered the
    template (set by :func:`register`); a compiler worker imports it to find the template.
    """

    name: str
    family: str
    module: str
    params: Union[Tuple[Param, ...], Callable[[Any], Tuple[Param, ...]]]
    space: Callable[[], Iterable[Any]]
    geometry: Callable[[Any], LaunchGeometry]
    knobs: type = None
    arch_ok: Optional[Callable[[Any, str], bool]] = None
    spec: str = ""
    _hash: list = field(default_factory=list, compare=False, repr=False)

    def __post_init__(self):
        kt = self.knobs
        if not (isinstance(kt, type) and dataclasses.is_dataclass(kt)
                and kt.__dataclass_params__.frozen):
            raise TypeError(f"template {self.name}: knobs must be a frozen dataclass type, "
                            f"got {kt!r}")

    def skus(self, arch: Optional[str] = None) -> Tuple[Knobs, ...]:
        """Every SKU (as frozen knobs) of this template's declared space, optionally only those
        that exist for ``arch`` (an ArchSku value such as ``"sm80"``)."""
        return tuple(freeze_knobs(k) for k in self.space()
                     if arch is None or self.arch_ok is None or self.arch_ok(k, arch))

    def abi(self, knobs) -> Tuple[Param, ...]:
        """The entry's parameters of the SKU with ``knobs`` (the thawed knobs object)."""
        return self.params(knobs) if callable(self.params) else self.params

    def thaw(self, knobs: Knobs):
        """The knobs object (an instance of :attr:`knobs`) of a frozen SKU."""
        return self.knobs(**dict(knobs))

    def source_modules(self) -> Tuple[str, ...]:
        """The kernel module and the modules of its package it imports, transitively."""
        return source_closure(self.module)

    def source_hash(self) -> str:
        """sha256 (16 hex) over the compile recipe, the text of :meth:`source_modules` and the
        ABI; read from disk without importing them, so a deployed host without the DSL can
        compute it."""
        if not self._hash:
            h = hashlib.sha256(self.name.encode())
            h.update(COMPILE_RECIPE.encode())
            for mod in self.source_modules():
                with open(_origin(mod), "rb") as f:
                    h.update(f.read())
            h.update((f"{self.params.__module__}.{self.params.__qualname__}"
                      if callable(self.params) else repr(self.params)).encode())
            self._hash.append(h.hexdigest()[:16])
        return self._hash[0]

    def sku_id(self, knobs: Knobs) -> str:
        """Stable file-name-safe id of one SKU of this template."""
        digest = hashlib.sha256(knob_key(knobs).encode()).hexdigest()[:12]
        return f"{self.name}-{digest}"


# ---------------------------------------------------------------------------- source closure
def _origin(mod: str) -> str:
    spec = importlib.util.find_spec(mod)
    if spec is None or spec.origin is None:
        raise ImportError(f"cannot locate module {mod}")
    return spec.origin


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


_CLOSURE: Dict[str, Tuple[str, ...]] = {}


#: bump when :mod:`.compile_one` changes anything that reaches a cubin (DSL options, its
#: environment): the JIT machinery itself is not part of any template's source hash
COMPILE_RECIPE = "cute.compile;keep=cubin,ptx;1"


def _is_jit_machinery(mod: str, top: str) -> bool:
    """The ``<top>.jit`` package (registry, compiler, cache): how kernels are compiled and stored,
    not what they are, so editing it never invalidates a cached kernel."""
    return mod == f"{top}.jit" or mod.startswith(f"{top}.jit.")


def source_closure(module: str) -> Tuple[str, ...]:
    """``module`` and every module of its top-level package that it imports (at module level or
    inside functions), transitively, in first-seen order, except the JIT machinery
    (``<top>.jit``: see :data:`COMPILE_RECIPE`); package ``__init__`` files count only when a name
    is imported from the package itself."""
    hit = _CLOSURE.get(module)
    if hit is not None:
        return hit
    top = module.split(".")[0]
    seen, todo = [], [module]
    while todo:
        mod = todo.pop(0)
        if mod in seen or _is_jit_machinery(mod, top):
            continue
        seen.append(mod)
        path = _origin(mod)
        is_pkg = path.endswith("__init__.py")
        pkg = mod if is_pkg else mod.rpartition(".")[0]
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base_parts = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                if base.split(".")[0] != top:
                    continue
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    todo.append(sub if a.name != "*" and _is_module(sub) else base)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] == top:
                        todo.append(a.name)
    _CLOSURE[module] = out = tuple(seen)
    return out


# ---------------------------------------------------------------------------------- registry
_REGISTRY: Dict[str, KernelTemplate] = {}


def register(t: KernelTemplate) -> KernelTemplate:
    """Add a template to the registry (idempotent for the same object); records the calling
    module as the template's ``spec``."""
    if not t.spec:
        object.__setattr__(t, "spec", sys._getframe(1).f_globals.get("__name__", ""))
    old = _REGISTRY.get(t.name)
    if old is not None and old is not t:
        raise ValueError(f"kernel template {t.name!r} registered twice")
    _REGISTRY[t.name] = t
    return t


def registered(name: Optional[str] = None):
    """The template registered under ``name`` (KeyError if none), or with no name a tuple of
    every template registered so far in this process (registration order)."""
    if name is None:
        return tuple(_REGISTRY.values())
    return _REGISTRY[name]


def unregister(names: Iterable[str]) -> None:
    """Drop templates from the registry (tests that register temporary templates)."""
    for n in names:
        _REGISTRY.pop(n, None)


def template_for(spec: str, name: str) -> KernelTemplate:
    """The template ``name`` after importing the spec module that registers it (what a compiler
    worker process does before building a SKU)."""
    if name not in _REGISTRY and spec:
        importlib.import_module(spec)
    return _REGISTRY[name]


__all__ = ["Knobs", "KernelTemplate", "LaunchGeometry", "freeze_knobs", "knob_key", "register",
           "registered", "source_closure", "template_for", "unregister"]
