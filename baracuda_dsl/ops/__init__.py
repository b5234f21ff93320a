"""The op families, one package each, and the registry that lists them.

Every family is a folder ``ops/<family>/`` holding

- ``specs/``    pure-Python kernel specs (no DSL import): knob types, SKU spaces, launch geometry,
                parameter ABIs; importing ``specs`` registers the family's kernel templates;
- ``kernels/``  the CuTe DSL code, imported only by compiler worker processes;
- the Plan modules (Descriptors, Args, Plans, forward and backward) and an ``__init__`` that
  exports the family's public names in ``__all__``.

Adding a family is adding such a folder and its name to :data:`FAMILIES`.  Everything that needs
the whole set of kernels — ``prebuild``, ``info``, the cache pruner, the tests that cross-compile
every template — asks this module (:func:`all_templates`), so the JIT layer below never imports an
op family.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Iterable, Optional, Tuple

from ..jit.template import KernelTemplate, registered

#: the op families, in the order their kernels are listed and prebuilt
FAMILIES: Tuple[str, ...] = (
    "normalization", "shape", "elementwise", "scan", "sorting", "histogram", "reduction",
    "indexing", "segment", "random", "losses", "gemm", "softmax", "attention", "linalg",
    "fft", "conv", "pooling", "image",
)

#: comma-separated extra modules that register templates (out-of-tree or test templates); read
#: by every process that discovers templates, including CLI subprocesses
EXTRA_TEMPLATES_ENV = "BARACUDA_DSL_TEMPLATE_MODULES"

#: every family's public names (Descriptors, Args, Plans, helpers), re-exported here and by
#: ``baracuda_dsl`` itself
PUBLIC: Tuple[str, ...] = ()
for _fam in FAMILIES:
    _mod = importlib.import_module(f".{_fam}", __name__)
    globals().update({_n: getattr(_mod, _n) for _n in _mod.__all__})
    PUBLIC += tuple(_mod.__all__)
del _fam, _mod

__all__ = ["FAMILIES", "EXTRA_TEMPLATES_ENV", "PUBLIC", "all_families", "all_templates",
           "get_template", "load_specs", *PUBLIC]


_CORE_SETS_LOOKED_UP: set = set()   # families whose core_set module was looked for already


def load_specs(families: Optional[Iterable[str]] = None) -> None:
    """Import the spec packages of ``families`` (default: every family), registering their
    templates, with each family's ``core_set`` module (its rules for the default prebuild set,
    :mod:`baracuda_dsl.jit.tiers`), and the extra template modules named by
    :data:`EXTRA_TEMPLATES_ENV`."""
    for fam in FAMILIES if families is None else families:
        if fam in FAMILIES:
            importlib.import_module(f".{fam}.specs", __name__)
            if fam not in _CORE_SETS_LOOKED_UP:              # a file-system search: once
                _CORE_SETS_LOOKED_UP.add(fam)
                if importlib.util.find_spec(f"{__name__}.{fam}.core_set") is not None:
                    importlib.import_module(f".{fam}.core_set", __name__)  # prebuild's core set
    for mod in os.environ.get(EXTRA_TEMPLATES_ENV, "").split(","):
        if mod.strip():
            importlib.import_module(mod.strip())


def all_templates(families: Optional[Iterable[str]] = None) -> Tuple[KernelTemplate, ...]:
    """Every registered kernel template (of ``families`` only, when given), in family order."""
    load_specs()
    fams = None if families is None else set(families)
    rank = {f: i for i, f in enumerate(FAMILIES)}
    found = [t for t in registered() if fams is None or t.family in fams]
    return tuple(sorted(found, key=lambda t: rank.get(t.family, len(rank))))


def all_families() -> Tuple[str, ...]:
    """Names of the families that have kernel templates (extra template modules included)."""
    return tuple(sorted({t.family for t in all_templates()}))


def get_template(name: str) -> KernelTemplate:
    """The registered template called ``name`` (KeyError if there is none)."""
    load_specs()
    return registered(name)
