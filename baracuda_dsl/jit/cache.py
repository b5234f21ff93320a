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
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
from typing import Dict, Iterator, Optional, Tuple

from ..abi import Artifact
from .template import KernelTemplate, Knobs, knob_key

_MAGIC = b"BKCUBIN2"
_DIGEST = 32  # trailing sha256 of magic + length + metadata + cubin


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


def _version_tuple(v: str) -> Tuple:
    out = []
    for part in v.replace("-", ".").split("."):
        out.append((0, int(part)) if part.isdigit() else (-1, part))
    return tuple(out)


class KernelCache:
    """The on-disk cache rooted at ``root`` (default :func:`default_cache_dir`)."""

    def __init__(self, root: Optional[str] = None):
        self.root = os.path.abspath(root) if root else default_cache_dir()

    # -- paths
    def _stem(self, dsl_version: str, arch: str, t: KernelTemplate, knobs: Knobs) -> str:
        return os.path.join(self.root, f"dsl-{dsl_version}", arch, t.name,
                            f"{t.sku_id(knobs)}-{t.source_hash()}")

    def _dsl_versions(self) -> Iterator[str]:
        v = installed_dsl_version()
        if v is not None:
            yield v
            return
        try:
            names = [n[4:] for n in os.listdir(self.root) if n.startswith("dsl-")]
        except FileNotFoundError:
            return
        yield from sorted(names, key=_version_tuple, reverse=True)

    # -- read
    def get(self, t: KernelTemplate, knobs: Knobs, arch: str) -> Optional[Artifact]:
        """The verified artifact, or None on a miss (a corrupt entry is removed first)."""
        for ver in self._dsl_versions():
            stem = self._stem(ver, arch, t, knobs)
            art = self._read(stem)
            if art is not None:
                return art
        return None

    def _read(self, stem: str) -> Optional[Artifact]:
        path = stem + ".bkc"
        try:
            with open(path, "rb") as f:
                blob = f.read()
        except FileNotFoundError:
            return None
        except OSError:
            return None
        try:
            if blob[:8] != _MAGIC or len(blob) < 12 + _DIGEST:
                raise ValueError("bad magic or truncated")
            body = blob[:-_DIGEST]
            if hashlib.sha256(body).digest() != blob[-_DIGEST:]:
                raise ValueError("checksum mismatch")
            n = struct.unpack("<I", body[8:12])[0]
            meta = json.loads(body[12:12 + n].decode())
            cubin = body[12 + n:]
            if (not isinstance(meta, dict) or "entry" not in meta
                    or meta.get("cubin_sha256") != hashlib.sha256(cubin).hexdigest()):
                raise ValueError("inconsistent entry")
        except (ValueError, struct.error, UnicodeDecodeError):
            try:
                os.remove(path)
            except OSError:
                pass
            return None
        return Artifact(cubin, meta)

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
        stem = self._stem(ver, arch, t, knobs)
        os.makedirs(os.path.dirname(stem), exist_ok=True)
        meta = dict(meta, cubin_sha256=hashlib.sha256(cubin).hexdigest(), template=t.name,
                    knobs=knob_key(knobs), arch=arch, source_hash=t.source_hash(), dsl_version=ver)
        header = json.dumps(meta, sort_keys=True).encode()
        body = _MAGIC + struct.pack("<I", len(header)) + header + cubin
        _atomic_write(stem + ".bkc", body + hashlib.sha256(body).digest())
        return Artifact(cubin, meta)

    # -- inventory
    def prune(self, templates) -> int:
        """Delete entries of the given templates that no current SKU maps to (stale source hash
        or a knob set that left the space); returns how many files were removed."""
        removed = 0
        if not os.path.isdir(self.root):
            return 0
        for t in templates:
            live = {f"{t.sku_id(k)}-{t.source_hash()}.bkc" for k in t.skus()}
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
        if not os.path.isdir(self.root):
            return out
        for dirpath, _dirs, files in os.walk(self.root):
            n = sum(1 for f in files if f.endswith(".bkc"))
            if n:
                rel = os.path.relpath(dirpath, self.root).split(os.sep)
                arch = rel[1] if len(rel) > 1 else "?"
                out[arch] = out.get(arch, 0) + n
        return out


def _atomic_write(path: str, data: bytes) -> None:
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
