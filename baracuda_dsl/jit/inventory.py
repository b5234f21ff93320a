"""What a kernel cache (or an archive of one) holds, entry by entry, against this install.

An entry's path inside a cache root is ``dsl-<version>/<arch>/<template>/<sku-id>-<source
hash>.bkc``.  It is **current** when this install would load it: its file name is that of a
SKU of a registered template for that arch with the template's present source hash, and its DSL
version is the installed one (any version on a host without the DSL, which looks under every
``dsl-*`` folder).  Otherwise it is **other-dsl** (built by another CuTe DSL version: never
looked up here), **stale** (older kernel sources, or a SKU that left the space) or **unknown**
(a template this install does not have, or not an entry path at all).
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Dict, FrozenSet, Iterable, Optional, Tuple

from .cache import entries, entry_file, installed_dsl_version

KINDS = ("current", "other-dsl", "stale", "unknown")


class LiveNames:
    """The file names of current entries, per (template, arch), computed on first need."""

    def __init__(self, templates: Iterable):
        self._templates = {t.name: t for t in templates}
        self._names: Dict[Tuple[str, str], FrozenSet[str]] = {}

    def get(self, template: str, arch: str) -> Optional[FrozenSet[str]]:
        """The current file names of ``template`` for ``arch``; None for an unknown template."""
        t = self._templates.get(template)
        if t is None:
            return None
        key = (template, arch)
        if key not in self._names:
            self._names[key] = frozenset(entry_file(t, k) for k in t.skus(arch))
        return self._names[key]


def classify(relpath: str, live: LiveNames, dsl_version: Optional[str] = None) -> str:
    """The kind (:data:`KINDS`) of the entry at ``relpath`` (relative to a cache root, '/' or
    os.sep separated); ``dsl_version``: the installed DSL's (None: none installed)."""
    parts = relpath.replace(os.sep, "/").split("/")
    if len(parts) != 4 or not parts[0].startswith("dsl-") or not parts[3].endswith(".bkc"):
        return "unknown"
    ver, arch, template, name = parts[0][4:], parts[1], parts[2], parts[3]
    names = live.get(template, arch)
    if names is None:
        return "unknown"
    if name not in names:
        return "stale"
    if dsl_version is not None and ver != dsl_version:
        return "other-dsl"
    return "current"


def inventory(root: str, templates: Iterable) -> Dict[str, Counter]:
    """Per arch, how many entries of each kind the cache at ``root`` holds."""
    live = LiveNames(templates)
    ver = installed_dsl_version()
    out: Dict[str, Counter] = {}
    for _path, rel, arch in entries(root):
        out.setdefault(arch, Counter())[classify(rel, live, ver)] += 1
    return out
