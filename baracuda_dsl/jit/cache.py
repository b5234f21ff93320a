"""On-disk cubin cache.

Layout: ``<root>/dsl-<cute-dsl-version>/<arch>/<template>/<sku-id>-<source-hash>.bkc``.
The key therefore covers the template source hash, the SKU knobs, the arch and the CuTe DSL version.
One entry is one file: an 8-byte magic, a 4-byte JSON length, the JSON metadata (which records the
cubin's sha256), the cubin, and a trailing sha256 of everything before it (so a flipped byte in the
metadata is caught as well as one in the cubin).  It is written to a temp file in the same
directory and renamed into place (``os.replace``), so concurrent readers see a complete entry or
none; an entry that fails verification is deleted and treated as a miss (it gets recompiled).

Root: ``$BARACUDA_DSL_CACHE_DIR`` or the user cache dir (``~/.cache/baracuda-dsl``).  A host
without the DSL installed looks the entry up under every ``dsl-*`` folder, newest version first.

Kernel packages: a miss in the root is looked up next in the read-only cache roots of installed
prebuilt-kernel distributions (``pip install baracuda-dsl-kernels-sm90a``, made by
:mod:`baracuda_dsl.jit.kernel_wheel`).  Each declares an entry point in the group
``baracuda_dsl.kernel_caches`` named after its arch, whose object is the path of a cache root laid
out as above; only the entry points named after the requested arch are consulted.  They are found
once per process (a broken one is skipped with a warning on the ``baracuda_dsl`` logger).  A
package holds the kernels of one build, version-locked to this baracuda-dsl, so every ``dsl-*``
folder in it is searched (the installed DSL's version first): a cubin runs whatever DSL version is
installed.  An entry there that fails verification is a miss, never deleted.
``BARACUDA_DSL_NO_KERNEL_PACKAGES=1`` turns the lookup in kernel packages off.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import struct
import tempfile
import threading
from typing import Dict, Iterator, List, Optional, Tuple

from ..abi import Artifact
from .template import KernelTemplate, Knobs, knob_key

_MAGIC = b"BKCUBIN2"
_DIGEST = 32  # trailing sha256 of magic + length + metadata + cubin

#: entry-point group of installed prebuilt-kernel packages: name = arch, object = cache root path
KERNEL_CACHES_GROUP = "baracuda_dsl.kernel_caches"
#: set to 1 to ignore installed kernel packages
NO_KERNEL_PACKAGES_ENV = "BARACUDA_DSL_NO_KERNEL_PACKAGES"

_log = logging.getLogger("baracuda_dsl")


def default_cache_dir() -> str:
    env = os.environ.get("BARACUDA_DSL_CACHE_DIR")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    try:
        import platformdirs

        return platformdirs.user_cache_dir("baracuda-dsl", appauthor=False)
    except ImportError:  # pragma: no cover
        return os.path.join(os.path.expanduser("~"), ".cache", "baracuda-dsl")


def installed_dsl_version() -> Optional[str]:
    """Version of the installed ``nvidia-cutlass-dsl`` distribution, or None (deployed host)."""
    try:
        from importlib.metadata import version

        return version("nvidia-cutlass-dsl")
    except Exception:
        return None


def version_key(v: str) -> Tuple:
    """Sort key of a DSL version string (numeric parts compare as numbers: 4.10 > 4.9)."""
    out = []
    for part in v.replace("-", ".").split("."):
        out.append((0, int(part)) if part.isdigit() else (-1, part))
    return tuple(out)


class KernelCache:
    """The on-disk cache rooted at ``root`` (default :func:`default_cache_dir`), backed by the
    read-only roots of installed kernel packages unless ``kernel_packages=False`` (or
    ``BARACUDA_DSL_NO_KERNEL_PACKAGES=1``)."""

    def __init__(self, root: Optional[str] = None, *, kernel_packages: bool = True):
        self.root = os.path.abspath(root) if root else default_cache_dir()
        self.kernel_packages = kernel_packages

    # -- roots
    def readonly_roots(self, arch: Optional[str] = None) -> Tuple[str, ...]:
        """Cache roots of installed kernel packages a lookup for ``arch`` falls back on (every
        arch's when None), in lookup order."""
        if not self.kernel_packages:
            return ()
        if arch is not None:
            return kernel_package_roots(arch)
        return tuple(r for roots in kernel_packages().values() for r in roots)

    def roots(self, arch: Optional[str] = None) -> Tuple[str, ...]:
        """Every root a lookup for ``arch`` reads, in order: this cache's own, then the
        read-only ones."""
        return (self.root,) + self.readonly_roots(arch)

    # -- paths
    def _path(self, dsl_version: str, arch: str, t: KernelTemplate, knobs: Knobs,
              root: Optional[str] = None) -> str:
        return os.path.join(root or self.root, f"dsl-{dsl_version}", arch, t.name,
                            entry_file(t, knobs))

    def _dsl_versions(self, root: Optional[str] = None, readonly: bool = False) -> Iterator[str]:
        v = installed_dsl_version()
        if v is not None:
            yield v
            if not readonly:
                return
        try:
            names = [n[4:] for n in os.listdir(root or self.root) if n.startswith("dsl-")]
        except OSError:
            return
        yield from (n for n in sorted(names, key=version_key, reverse=True) if n != v)

    # -- read
    def get(self, t: KernelTemplate, knobs: Knobs, arch: str) -> Optional[Artifact]:
        """The verified artifact, or None on a miss: this cache's root first (a corrupt entry
        there is removed), then the kernel packages' read-only roots."""
        for ver in self._dsl_versions():
            art = self._read(self._path(ver, arch, t, knobs))
            if art is not None:
                return art
        for root in self.readonly_roots(arch):
            for ver in self._dsl_versions(root, readonly=True):
                art = self._read(self._path(ver, arch, t, knobs, root), remove_corrupt=False)
                if art is not None:
                    return art
        return None

    def _read(self, path: str, remove_corrupt: bool = True) -> Optional[Artifact]:
        try:
            with open(path, "rb") as f:
                blob = f.read()
        except OSError:
            return None
        art = decode_entry(blob)
        if art is None and remove_corrupt:
            try:
                os.remove(path)
            except OSError:
                pass
        return art

    # -- write
    def put(self, t: KernelTemplate, knobs: Knobs, arch: str, cubin: bytes, meta: Dict) -> Artifact:
        """Store atomically; returns the stored artifact.  Refuses (ValueError) a cubin compiled
        from another version of the template source than this process hashes (the source was
        edited while compiling), so an entry's key always describes the code it holds."""
        compiled_from = meta.get("source_hash")
        if compiled_from is not None and compiled_from != t.source_hash():
            raise ValueError(f"{t.name}: kernel source changed while compiling "
                             f"({compiled_from} != {t.source_hash()}); compile again")
        ver = meta.get("dsl_version") or installed_dsl_version() or "unknown"
        path = self._path(ver, arch, t, knobs)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        meta = dict(meta, cubin_sha256=hashlib.sha256(cubin).hexdigest(), template=t.name,
                    knobs=knob_key(knobs), arch=arch, source_hash=t.source_hash(), dsl_version=ver)
        header = json.dumps(meta, sort_keys=True).encode()
        body = _MAGIC + struct.pack("<I", len(header)) + header + cubin
        _atomic_write(path, body + hashlib.sha256(body).digest())
        return Artifact(cubin, meta)

    # -- inventory
    def prune(self, templates) -> int:
        """Delete entries of the given templates that no current SKU maps to (stale source hash
        or a knob set that left the space); returns how many files were removed."""
        removed = 0
        if not os.path.isdir(self.root):
            return 0
        for t in templates:
            live = {entry_file(t, k) for k in t.skus()}
            for ver in os.listdir(self.root):
                base = os.path.join(self.root, ver)
                if not (ver.startswith("dsl-") and os.path.isdir(base)):
                    continue
                for arch in os.listdir(base):
                    d = os.path.join(base, arch, t.name)
                    if not os.path.isdir(d):
                        continue
                    for f in os.listdir(d):
                        if f.endswith(".bkc") and f not in live:
                            try:
                                os.remove(os.path.join(d, f))
                                removed += 1
                            except OSError:
                                pass
        return removed

    def count(self) -> Dict[str, int]:
        """Number of cached SKUs per arch (all DSL versions)."""
        out: Dict[str, int] = {}
        for _path, _rel, arch in entries(self.root):
            out[arch] = out.get(arch, 0) + 1
        return out


def entries(root: str) -> Iterator[Tuple[str, str, str]]:
    """Every ``.bkc`` file under a cache root, in sorted order: (path, path relative to the root
    with '/' separators, arch folder or '?')."""
    if not os.path.isdir(root):
        return
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".bkc"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                parts = rel.split("/")
                yield path, rel, parts[1] if len(parts) > 2 else "?"


def entry_file(t: KernelTemplate, knobs: Knobs) -> str:
    """File name of one SKU's entry in any cache root: ``<sku-id>-<source-hash>.bkc``."""
    return f"{t.sku_id(knobs)}-{t.source_hash()}.bkc"


def decode_entry(blob: bytes) -> Optional[Artifact]:
    """The artifact held by the bytes of one ``.bkc`` entry, or None when they fail
    verification (magic, trailing sha256, metadata, cubin sha256)."""
    try:
        if blob[:8] != _MAGIC or len(blob) < 12 + _DIGEST:
            return None
        body = blob[:-_DIGEST]
        if hashlib.sha256(body).digest() != blob[-_DIGEST:]:
            return None
        n = struct.unpack("<I", body[8:12])[0]
        meta = json.loads(body[12:12 + n].decode())
        cubin = body[12 + n:]
    except (ValueError, struct.error, UnicodeDecodeError):
        return None
    if (not isinstance(meta, dict) or "entry" not in meta
            or meta.get("cubin_sha256") != hashlib.sha256(cubin).hexdigest()):
        return None
    return Artifact(cubin, meta)


# ------------------------------------------------------------------------- kernel packages
_PKG_LOCK = threading.Lock()
_PKG_EPS: List[Dict[str, tuple]] = []          # [arch -> entry points], filled once
_PKG_ROOTS: Dict[str, Tuple[str, ...]] = {}    # arch -> loaded cache roots


def kernel_packages_enabled() -> bool:
    """False when ``BARACUDA_DSL_NO_KERNEL_PACKAGES`` is set to 1 (true, yes, on)."""
    return os.environ.get(NO_KERNEL_PACKAGES_ENV, "").strip().lower() not in (
        "1", "true", "yes", "on")


def _entry_points_by_arch() -> Dict[str, tuple]:
    if not _PKG_EPS:
        by: Dict[str, list] = {}
        try:
            from importlib.metadata import entry_points

            eps = entry_points(group=KERNEL_CACHES_GROUP)
        except Exception as e:  # pragma: no cover - a broken environment
            _log.warning("cannot list %s entry points: %s", KERNEL_CACHES_GROUP, e)
            eps = ()
        for ep in eps:
            if all(ep.value != o.value for o in by.get(ep.name, ())):
                by.setdefault(ep.name, []).append(ep)
        _PKG_EPS.append({a: tuple(v) for a, v in by.items()})
    return _PKG_EPS[0]


def _load_root(ep) -> Optional[str]:
    try:
        root = os.path.abspath(os.fspath(ep.load()))
    except Exception as e:
        _log.warning("skipping kernel package entry point %s = %s: %s: %s",
                     ep.name, ep.value, type(e).__name__, e)
        return None
    if not os.path.isdir(root):
        _log.warning("skipping kernel package entry point %s = %s: %s is not a directory",
                     ep.name, ep.value, root)
        return None
    return root


def kernel_package_roots(arch: str) -> Tuple[str, ...]:
    """Read-only cache roots of the installed kernel packages for ``arch`` (entry points of
    :data:`KERNEL_CACHES_GROUP` named ``arch``); discovered once per process, () when
    ``BARACUDA_DSL_NO_KERNEL_PACKAGES=1``."""
    if not kernel_packages_enabled():
        return ()
    hit = _PKG_ROOTS.get(arch)
    if hit is not None:
        return hit
    with _PKG_LOCK:
        hit = _PKG_ROOTS.get(arch)
        if hit is None:
            roots = (_load_root(ep) for ep in _entry_points_by_arch().get(arch, ()))
            hit = _PKG_ROOTS[arch] = tuple(dict.fromkeys(r for r in roots if r))
    return hit


def kernel_packages() -> Dict[str, Tuple[str, ...]]:
    """Every installed kernel package's cache roots by arch (what ``info`` lists)."""
    if not kernel_packages_enabled():
        return {}
    with _PKG_LOCK:
        arches = sorted(_entry_points_by_arch())
    found = {a: kernel_package_roots(a) for a in arches}
    return {a: r for a, r in found.items() if r}


@contextlib.contextmanager
def atomic_file(path: str):
    """A binary file to write ``path`` through: a temp file in the same folder, renamed into
    place when the block ends normally and removed if it raises, so readers see the whole file
    or none.  No fsync: a cache entry torn by a power cut fails its own sha256 check on the next
    read and is rebuilt, so durability is not worth a disk flush per SKU during a prebuild."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def _atomic_write(path: str, data: bytes) -> None:
    with atomic_file(path) as f:
        f.write(data)
