"""Prebuilt kernels you can pip install: one wheel per arch, made from a prebuilt cubin cache.

:func:`build_kernel_wheel` packs the current entries of one arch (those whose file name is a
current SKU id and source hash of a registered template) into
``baracuda_dsl_kernels_<arch>-<version>-py3-none-any.whl``, distribution
``baracuda-dsl-kernels-<arch>``, version-locked to this baracuda-dsl (``Requires-Dist:
baracuda-dsl==<version>``: the source hashes only match that version's kernel code).  The wheel
holds

- ``baracuda_dsl_kernels_<arch>/__init__.py``: ``ARCH``, ``DSL_VERSION`` (the CuTe DSL the cubins
  were built with), ``BARACUDA_DSL_VERSION``, ``ENTRIES`` and ``CACHE_ROOT`` (its ``cache`` folder);
- ``baracuda_dsl_kernels_<arch>/cache/dsl-<ver>/<arch>/<template>/<sku-id>-<hash>.bkc``: the
  entries, laid out as in a cache root (one DSL version only: the newest the cache holds);
- the ``.dist-info``: METADATA, WHEEL, RECORD and ``entry_points.txt`` declaring
  ``<arch> = baracuda_dsl_kernels_<arch>:CACHE_ROOT`` in the group
  :data:`~baracuda_dsl.jit.cache.KERNEL_CACHES_GROUP`, through which :class:`KernelCache` finds the
  installed kernels.

Only the standard library writes it, deterministically (sorted members, fixed timestamps and
modes), so the same cache gives the same bytes.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import zipfile
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

from .._version import __version__
from ..errors import InvalidProblemError
from ..vocabulary import ArchSku
from .cache import KERNEL_CACHES_GROUP, atomic_file, decode_entry, version_key
from .inventory import LiveNames
from .template import KernelTemplate, registered

_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip member can carry


class NoCachedKernelsError(InvalidProblemError):
    """The cache holds no current entry for the arch a kernel wheel was asked for."""


# ----------------------------------------------------------------------------------- names
def package_name(arch: str) -> str:
    """Import package of the kernel wheel for ``arch``: ``baracuda_dsl_kernels_sm90a``."""
    return f"baracuda_dsl_kernels_{ArchSku.parse(arch).value}"


def distribution_name(arch: str) -> str:
    """Distribution (pip) name of the kernel wheel for ``arch``: ``baracuda-dsl-kernels-sm90a``."""
    return package_name(arch).replace("_", "-")


def wheel_name(arch: str, version: str = __version__) -> str:
    """File name of the kernel wheel: ``baracuda_dsl_kernels_sm90a-0.1.0-py3-none-any.whl``."""
    return f"{package_name(arch)}-{version.replace('-', '_')}-py3-none-any.whl"


def dist_info_name(arch: str, version: str = __version__) -> str:
    """The wheel's ``.dist-info`` folder name."""
    return f"{package_name(arch)}-{version.replace('-', '_')}.dist-info"


# --------------------------------------------------------------------------- entry selection
@dataclass
class KernelSelection:
    """The entries of one arch a kernel wheel packs: ``files`` (path relative to the cache
    root, template name) of DSL version ``dsl_version``; ``stale`` counts the entries no current
    SKU maps to, ``other_versions`` the current entries of DSL versions left out."""

    arch: str
    dsl_version: Optional[str] = None
    files: List[Tuple[str, str]] = field(default_factory=list)
    stale: int = 0
    other_versions: Dict[str, int] = field(default_factory=dict)


def _scan_version(root: str, ver: str, arch: str,
                  live: LiveNames) -> Tuple[List[Tuple[str, str]], int]:
    """Current entries (relative path, template) and the stale count under one DSL version."""
    base = os.path.join(root, f"dsl-{ver}", arch)
    current, stale = [], 0
    for tname in sorted(os.listdir(base)) if os.path.isdir(base) else ():
        d = os.path.join(base, tname)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if f.startswith(".") or not f.endswith(".bkc"):
                continue
            if f in (live.get(tname, arch) or ()):
                current.append((f"dsl-{ver}/{arch}/{tname}/{f}", tname))
            else:
                stale += 1
    return current, stale


def select_entries(cache_root: str, arch: str,
                   templates: Optional[Iterable[KernelTemplate]] = None) -> KernelSelection:
    """What :func:`build_kernel_wheel` would pack: the current entries of ``arch`` under the
    newest DSL version that has any (default templates: every one registered)."""
    arch = ArchSku.parse(arch).value
    live = LiveNames(registered() if templates is None else templates)
    try:
        versions = [n[4:] for n in os.listdir(cache_root) if n.startswith("dsl-")]
    except OSError:
        versions = []
    sel = KernelSelection(arch)
    for ver in sorted(versions, key=version_key, reverse=True):
        current, stale = _scan_version(cache_root, ver, arch, live)
        sel.stale += stale
        if current and sel.dsl_version is None:
            sel.dsl_version, sel.files = ver, current
        elif current:
            sel.other_versions[ver] = len(current)
    return sel


# ------------------------------------------------------------------------------ wheel text
def _init_py(arch: str, dsl_version: str, n: int) -> str:
    return (f'"""Prebuilt baracuda-dsl {__version__} kernels (cubins) for {arch}, built with CuTe '
            f'DSL {dsl_version}.\n\n'
            f"Installed, :class:`baracuda_dsl.jit.KernelCache` finds them through the "
            f"``{KERNEL_CACHES_GROUP}`` entry point\n``{arch}``, which names :data:`CACHE_ROOT` "
            f"(a read-only cache root); ``BARACUDA_DSL_NO_KERNEL_PACKAGES=1``\nignores them.\n"
            f'"""\n\n'
            f"import os\n\n"
            f"ARCH = {arch!r}\n"
            f"DSL_VERSION = {dsl_version!r}\n"
            f"BARACUDA_DSL_VERSION = {__version__!r}\n"
            f"ENTRIES = {n}\n"
            f'CACHE_ROOT = os.path.join(os.path.dirname(__file__), "cache")\n')


def _metadata(arch: str, dsl_version: str, n: int, n_templates: int) -> str:
    summary = (f"Prebuilt baracuda-dsl kernels for {arch} "
               f"(cubins built with CuTe DSL {dsl_version})")
    return (f"Metadata-Version: 2.1\n"
            f"Name: {distribution_name(arch)}\n"
            f"Version: {__version__}\n"
            f"Summary: {summary}\n"
            f"Requires-Dist: baracuda-dsl=={__version__}\n"
            f"Description-Content-Type: text/plain\n\n"
            f"{summary}.\n\n"
            f"{n} kernel SKUs of {n_templates} templates, compiled for {arch} by baracuda-dsl "
            f"{__version__}\nwith nvidia-cutlass-dsl {dsl_version}. Installed next to "
            f"baracuda-dsl {__version__}, its plans load\nthese cubins instead of compiling them "
            f"(no CuTe DSL compile on first use).\n"
            f"Set BARACUDA_DSL_NO_KERNEL_PACKAGES=1 to ignore installed kernel packages.\n")


def _wheel_file() -> str:
    return ("Wheel-Version: 1.0\n"
            f"Generator: baracuda_dsl.jit.kernel_wheel {__version__}\n"
            "Root-Is-Purelib: true\n"
            "Tag: py3-none-any\n")


def _entry_points(arch: str) -> str:
    return f"[{KERNEL_CACHES_GROUP}]\n{arch} = {package_name(arch)}:CACHE_ROOT\n"


# ------------------------------------------------------------------------------ zip writing
def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


class _WheelWriter:
    """A zip written member by member with fixed metadata, keeping the RECORD rows."""

    def __init__(self, fileobj):
        self.zf = zipfile.ZipFile(fileobj, "w", compression=zipfile.ZIP_DEFLATED)
        self.rows: List[Tuple[str, str, str]] = []

    def add(self, name: str, data: bytes) -> None:
        zi = zipfile.ZipInfo(name, date_time=_EPOCH)
        zi.compress_type = zipfile.ZIP_DEFLATED
        zi.create_system = 3  # unix, whatever the build host
        zi.external_attr = 0o644 << 16
        self.zf.writestr(zi, data)
        self.rows.append((name, _record_hash(data), str(len(data))))

    def close(self, record_name: str) -> None:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerows(self.rows)
        w.writerow((record_name, "", ""))
        self.add(record_name, buf.getvalue().encode())
        self.zf.close()

    def abort(self) -> None:
        """Close the zip after a failure (its file is about to be removed)."""
        try:
            self.zf.close()
        except (OSError, ValueError):
            pass


def _entry_ok(blob: bytes, arch: str, tname: str, dsl_version: str) -> bool:
    art = decode_entry(blob)
    return art is not None and (art.meta.get("arch"), art.meta.get("template"),
                                art.meta.get("dsl_version")) == (arch, tname, dsl_version)


def _write_entries(w: _WheelWriter, cache_root: str,
                   sel: KernelSelection) -> Tuple[int, int, int]:
    """Add the selected entries that verify; returns how many were added, how many failed
    verification and how many templates the added ones belong to."""
    pkg = package_name(sel.arch)
    added, corrupt, seen = 0, 0, set()
    for rel, tname in sel.files:
        try:
            with open(os.path.join(cache_root, *rel.split("/")), "rb") as f:
                blob = f.read()
        except OSError:
            corrupt += 1
            continue
        if not _entry_ok(blob, sel.arch, tname, sel.dsl_version):
            corrupt += 1
            continue
        w.add(f"{pkg}/cache/{rel}", blob)
        added += 1
        seen.add(tname)
    return added, corrupt, len(seen)


def _say(console, msg: str) -> None:
    if console is not None:
        console.print(msg)


def _nothing_to_pack(arch: str, root: str, stale: int, corrupt: int) -> NoCachedKernelsError:
    skipped = [f"{stale} stale" if stale else "", f"{corrupt} corrupt" if corrupt else ""]
    note = " and ".join(s for s in skipped if s)
    return NoCachedKernelsError(
        f"no current cached kernel for {arch} under {root}"
        + (f" ({note} entries skipped)" if note else "")
        + f"; build them first with:\n    python -m baracuda_dsl prebuild --arch {arch} "
          f"--cache-dir {root}")


def build_kernel_wheel(cache_root: str, arch: str, out_dir: str, *,
                       templates: Optional[Iterable[KernelTemplate]] = None,
                       console=None) -> str:
    """Pack the current cache entries of ``arch`` under ``cache_root`` into a kernel wheel in
    ``out_dir``; returns its path.  ``templates`` defaults to every registered one (pass
    ``ops.all_templates()`` to include extra template modules); ``console`` (anything with
    ``print``) gets a line per finding.  Raises :class:`NoCachedKernelsError` when nothing
    current (and intact) is cached for the arch."""
    root = os.path.abspath(cache_root)
    sel = select_entries(root, arch, templates)
    if not sel.files:
        raise _nothing_to_pack(sel.arch, root, sel.stale, 0)
    if sel.stale:
        _say(console, f"kernel wheel {sel.arch}: skipped {sel.stale} stale entries "
                      f"(no current SKU or source hash maps to them)")
    if sel.other_versions:
        others = ", ".join(f"{v} ({n})" for v, n in sel.other_versions.items())
        _say(console, f"kernel wheel {sel.arch}: packing only the newest DSL version, "
                      f"{sel.dsl_version}; left out the entries of {others}")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, wheel_name(sel.arch))
    with atomic_file(path) as f:
        _write_wheel(f, root, sel, console)
    _say(console, f"kernel wheel {sel.arch}: wrote {path} "
                  f"({os.path.getsize(path) / 2**20:.1f} MiB)")
    return path


def _write_wheel(f, root: str, sel: KernelSelection, console) -> None:
    w = _WheelWriter(f)
    try:
        _write_members(w, root, sel, console)
    except BaseException:
        w.abort()
        raise


def _write_members(w: _WheelWriter, root: str, sel: KernelSelection, console) -> None:
    added, corrupt, n_templates = _write_entries(w, root, sel)
    if corrupt:
        _say(console, f"kernel wheel {sel.arch}: skipped {corrupt} entries that fail "
                      f"verification")
    if not added:
        raise _nothing_to_pack(sel.arch, root, sel.stale, corrupt)
    pkg, info = package_name(sel.arch), dist_info_name(sel.arch)
    w.add(f"{pkg}/__init__.py", _init_py(sel.arch, sel.dsl_version, added).encode())
    w.add(f"{info}/METADATA", _metadata(sel.arch, sel.dsl_version, added, n_templates).encode())
    w.add(f"{info}/WHEEL", _wheel_file().encode())
    w.add(f"{info}/entry_points.txt", _entry_points(sel.arch).encode())
    w.close(f"{info}/RECORD")
    _say(console, f"kernel wheel {sel.arch}: packed {added} entries of {n_templates} templates "
                  f"built with CuTe DSL {sel.dsl_version}")


__all__ = ["KernelSelection", "NoCachedKernelsError", "build_kernel_wheel", "dist_info_name",
           "distribution_name", "package_name", "select_entries", "wheel_name"]
