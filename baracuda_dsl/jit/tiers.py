"""The default prebuild set ("core") and the SKUs left to compile on first use ("extra").

``prebuild`` compiles the core set unless told ``--set all``; an extra SKU is still a normal SKU:
the first call that needs it compiles it (about a second) and caches it, exactly as a core SKU
missing from the cache would.  The split only decides what is compiled ahead of time.

A SKU is core when

* every dtype-valued knob that names data (``dtype``, ``out``, ``odt``, ...; index knobs do not
  count) is one of :data:`CORE_DTYPES`, the working dtypes of ML models: f16, bf16, f32, the two
  fp8 formats, bool, int32 and int64 (f64, complex and the 8/16-bit and unsigned integer dtypes
  are extra), and
* the rule its family registered for the template with :func:`core_rule`, if any, agrees (each
  family's ``core_set`` module: the elementwise template keeps the ML ops, the GEMM family the
  kernels its plans pick by default, ...).

The rules are prebuild policy, not kernel source: they live outside the specs and kernels, so
changing them never invalidates a cached kernel.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, Iterable

#: data dtypes of the core set (short names as in the knobs); "any" = dtype-agnostic SKUs
CORE_DTYPES = frozenset(("f16", "bf16", "f32", "fp8e4m3", "fp8e5m2", "e4m3", "e5m2", "bool",
                         "i32", "i64", "any"))
#: every dtype short name a knob can hold
ALL_DTYPES = CORE_DTYPES | frozenset(("f64", "c64", "c128", "i8", "i16", "u8", "u16", "u32", "u64"))
#: knob fields that hold a data dtype (index dtypes — ``index`` — are always core)
DATA_DTYPE_FIELDS = ("dtype", "out", "odt", "pdt", "pdtype", "ddt", "acc", "weights", "a", "b")
#: the names of the prebuild sets
SETS = ("core", "all")


_RULES: Dict[str, Callable] = {}


def core_rule(*templates: str):
    """Decorator: register ``fn(knobs, arch) -> bool`` (thawed knobs, an arch value such as
    ``"sm90a"``) as the core-set rule of the named templates."""
    def deco(fn):
        for name in templates:
            _RULES[name] = fn
        return fn
    return deco


def data_dtypes(knobs) -> frozenset:
    """The data dtypes a thawed knobs object names (values of :data:`DATA_DTYPE_FIELDS`)."""
    names = {f.name for f in dataclasses.fields(knobs)}
    return frozenset(getattr(knobs, f) for f in DATA_DTYPE_FIELDS if f in names) & ALL_DTYPES


def is_core(template, knobs, arch: str) -> bool:
    """True when the SKU (frozen ``knobs`` of ``template``) belongs to the core set for ``arch``."""
    kn = template.thaw(knobs)
    if not data_dtypes(kn) <= CORE_DTYPES:
        return False
    rule = _RULES.get(template.name)
    return rule is None or bool(rule(kn, arch))


def select(template, skus: Iterable, arch: str, which: str = "core") -> tuple:
    """The SKUs of ``skus`` in the set ``which`` (``"core"`` or ``"all"``)."""
    if which == "all":
        return tuple(skus)
    if which != "core":
        raise ValueError(f"unknown SKU set {which!r}; known: {', '.join(SETS)}")
    return tuple(k for k in skus if is_core(template, k, arch))
