"""CPU tests of the kernel wheels (``baracuda_dsl.jit.kernel_wheel``) and of how the cache finds
installed kernel packages: a fake cache of a few real templates' SKUs is packed into a wheel,
whose members, metadata and RECORD are checked; the wheel is then extracted onto ``sys.path`` of a
subprocess, where ``KernelCache`` must find its entries through the entry point."""

import base64
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile

import pytest

from baracuda_dsl._version import __version__
from baracuda_dsl.errors import InvalidProblemError
from baracuda_dsl.jit import KernelCache
from baracuda_dsl.jit.kernel_wheel import (NoCachedKernelsError, build_kernel_wheel,
                                           dist_info_name, distribution_name, package_name,
                                           select_entries, wheel_name)
from baracuda_dsl.ops import get_template

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DSL = "4.8.1"
ARCH = "sm90a"
PKG = "baracuda_dsl_kernels_sm90a"
INFO = f"{PKG}-{__version__}.dist-info"
TEMPLATES = ("fill", "gemm_sm90")  # gemm_sm90 only exists on sm90a


class Console:
    """Collects what the builder prints."""

    def __init__(self):
        self.lines = []

    def print(self, msg):
        self.lines.append(str(msg))

    @property
    def text(self):
        return "\n".join(self.lines)


def _cubin(name):
    return hashlib.sha256(name.encode()).digest() * 8


def _meta(t, dsl=DSL):
    return {"entry": "k", "source_hash": t.source_hash(), "dsl_version": dsl}


def _rel(t, k, dsl=DSL, arch=ARCH):
    return f"dsl-{dsl}/{arch}/{t.name}/{t.sku_id(k)}-{t.source_hash()}.bkc"


@pytest.fixture
def fake_cache(tmp_path):
    """A cache holding the first sm90a SKU of each of :data:`TEMPLATES` plus one stale entry;
    returns (root, {template name: relative entry path})."""
    root = tmp_path / "cache"
    cache = KernelCache(str(root), kernel_packages=False)
    rels = {}
    for name in TEMPLATES:
        t = get_template(name)
        k = t.skus(ARCH)[0]
        cache.put(t, k, ARCH, _cubin(name), _meta(t))
        rels[name] = _rel(t, k)
    stale = root / f"dsl-{DSL}" / ARCH / "fill" / "fill-000000000000-0123456789abcdef.bkc"
    stale.write_bytes((root / rels["fill"]).read_bytes())
    return root, rels


def _record_rows(zf):
    return list(csv.reader(io.StringIO(zf.read(f"{INFO}/RECORD").decode())))


def test_names_agree():
    assert distribution_name("sm90a") == "baracuda-dsl-kernels-sm90a"
    assert package_name("sm_90a") == PKG
    assert wheel_name("sm90a", "0.1.0") == "baracuda_dsl_kernels_sm90a-0.1.0-py3-none-any.whl"
    assert wheel_name("sm80") == f"baracuda_dsl_kernels_sm80-{__version__}-py3-none-any.whl"
    assert dist_info_name("sm90a") == INFO


def test_wheel_members_and_metadata(fake_cache, tmp_path):
    root, rels = fake_cache
    con = Console()
    path = build_kernel_wheel(str(root), ARCH, str(tmp_path / "out"), console=con)
    assert os.path.basename(path) == f"{PKG}-{__version__}-py3-none-any.whl"
    assert os.listdir(tmp_path / "out") == [os.path.basename(path)]  # no temp file left
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        assert sorted(names) == sorted(
            [f"{PKG}/cache/{r}" for r in rels.values()]
            + [f"{PKG}/__init__.py"]
            + [f"{INFO}/{n}" for n in ("METADATA", "WHEEL", "entry_points.txt", "RECORD")])
        assert all(zi.compress_type == zipfile.ZIP_DEFLATED for zi in zf.infolist())
        for name, rel in rels.items():
            assert zf.read(f"{PKG}/cache/{rel}") == (root / rel).read_bytes()
        meta = zf.read(f"{INFO}/METADATA").decode()
        wheel = zf.read(f"{INFO}/WHEEL").decode()
        eps = zf.read(f"{INFO}/entry_points.txt").decode()
        init = zf.read(f"{PKG}/__init__.py").decode()
    assert meta.startswith("Metadata-Version: 2.1\n")
    assert "Name: baracuda-dsl-kernels-sm90a\n" in meta
    assert f"Version: {__version__}\n" in meta
    assert f"Requires-Dist: baracuda-dsl=={__version__}\n" in meta
    assert f"CuTe DSL {DSL}" in meta.split("\n\n")[0]  # the summary names the DSL version
    for line in ("Wheel-Version: 1.0", "Root-Is-Purelib: true", "Tag: py3-none-any"):
        assert line in wheel.splitlines()
    assert wheel.startswith("Wheel-Version: 1.0\nGenerator: ")
    assert eps == f"[baracuda_dsl.kernel_caches]\nsm90a = {PKG}:CACHE_ROOT\n"
    ns = {"__file__": "/x/pkg/__init__.py"}
    exec(compile(init, "__init__.py", "exec"), ns)
    assert (ns["ARCH"], ns["DSL_VERSION"], ns["BARACUDA_DSL_VERSION"], ns["ENTRIES"]) == \
        (ARCH, DSL, __version__, 2)
    assert ns["CACHE_ROOT"] == os.path.join("/x/pkg", "cache")
    assert ns["__doc__"] and DSL in ns["__doc__"]
    assert "1 stale" in con.text and "packed 2 entries of 2 templates" in con.text


def test_record_verifies_every_member(fake_cache, tmp_path):
    root, _ = fake_cache
    path = build_kernel_wheel(str(root), ARCH, str(tmp_path / "out"))
    with zipfile.ZipFile(path) as zf:
        rows = _record_rows(zf)
        assert sorted(r[0] for r in rows) == sorted(zf.namelist())
        for name, digest, size in rows:
            if name == f"{INFO}/RECORD":
                assert (digest, size) == ("", "")
                continue
            data = zf.read(name)
            algo, _, b64 = digest.partition("=")
            assert algo == "sha256" and not b64.endswith("=")
            assert base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4)) == \
                hashlib.sha256(data).digest(), name
            assert int(size) == len(data), name


def test_deterministic(fake_cache, tmp_path):
    root, rels = fake_cache
    a = build_kernel_wheel(str(root), ARCH, str(tmp_path / "a"))
    for rel in rels.values():  # file times do not matter
        os.utime(root / rel, (1e9, 1e9))
    b = build_kernel_wheel(str(root), ARCH, str(tmp_path / "b"))
    with open(a, "rb") as fa, open(b, "rb") as fb:
        assert fa.read() == fb.read()
    c = build_kernel_wheel(str(root), ARCH, str(tmp_path / "a"))  # overwrite in place
    assert c == a and os.listdir(tmp_path / "a") == [os.path.basename(a)]


def test_stale_unknown_and_corrupt_entries_are_left_out(fake_cache, tmp_path):
    root, rels = fake_cache
    fill = get_template("fill")
    # a template not in the list passed is stale; a current entry that fails verification is
    # skipped (and not deleted: the builder only reads the cache)
    k1 = fill.skus(ARCH)[1]
    bad = root / _rel(fill, k1)
    bad.write_bytes(b"BKCUBIN2" + b"\0" * 64)
    con = Console()
    path = build_kernel_wheel(str(root), ARCH, str(tmp_path / "out"), templates=[fill],
                              console=con)
    with zipfile.ZipFile(path) as zf:
        cached = [n for n in zf.namelist() if n.endswith(".bkc")]
    assert cached == [f"{PKG}/cache/{rels['fill']}"]
    assert "2 stale" in con.text and "1 entries that fail verification" in con.text
    assert bad.exists()


def test_only_the_newest_dsl_version_is_packed(fake_cache, tmp_path):
    root, rels = fake_cache
    fill = get_template("fill")
    KernelCache(str(root), kernel_packages=False).put(
        fill, fill.skus(ARCH)[0], ARCH, b"old" * 100, _meta(fill, "4.7.0"))
    newer = get_template("gemm_sm90")
    KernelCache(str(root), kernel_packages=False).put(
        newer, newer.skus(ARCH)[0], ARCH, b"new" * 100, _meta(newer, "4.10.0"))
    sel = select_entries(str(root), ARCH)
    assert sel.dsl_version == "4.10.0" and sel.other_versions == {DSL: 2, "4.7.0": 1}
    con = Console()
    path = build_kernel_wheel(str(root), ARCH, str(tmp_path / "out"), console=con)
    with zipfile.ZipFile(path) as zf:
        cached = [n for n in zf.namelist() if n.endswith(".bkc")]
        assert "DSL_VERSION = '4.10.0'" in zf.read(f"{PKG}/__init__.py").decode()
    assert cached == [f"{PKG}/cache/{_rel(newer, newer.skus(ARCH)[0], '4.10.0')}"]
    assert "only the newest DSL version, 4.10.0" in con.text and "4.7.0 (1)" in con.text


def test_no_entries_for_the_arch_is_an_error(fake_cache, tmp_path):
    root, _ = fake_cache
    out = tmp_path / "out"
    with pytest.raises(NoCachedKernelsError) as ei:
        build_kernel_wheel(str(root), "sm80", str(out))
    assert isinstance(ei.value, InvalidProblemError) and isinstance(ei.value, ValueError)
    assert f"prebuild --arch sm80 --cache-dir {root}" in str(ei.value)
    assert not out.exists() or not os.listdir(out)
    with pytest.raises(NoCachedKernelsError, match="no current cached kernel"):
        build_kernel_wheel(str(tmp_path / "missing"), ARCH, str(out))
    # only stale entries: still an error, which says so
    with pytest.raises(NoCachedKernelsError, match="3 stale"):
        build_kernel_wheel(str(root), ARCH, str(out), templates=[get_template("transpose")])
    # every current entry corrupt: an error, and no wheel left behind
    fill = get_template("fill")
    with pytest.raises(NoCachedKernelsError, match="1 corrupt"):
        rel = _rel(fill, fill.skus(ARCH)[0])
        (root / rel).write_bytes(b"junk")
        build_kernel_wheel(str(root), ARCH, str(out), templates=[fill])
    assert not os.listdir(out)


# ------------------------------------------------------------------ installed: discovery
_PROBE = r"""
import importlib.metadata as md, json, os, sys
calls = []
_eps = md.entry_points
def counting(**kw):
    calls.append(kw)
    return _eps(**kw)
md.entry_points = counting
from baracuda_dsl.jit import KernelCache, cache as cache_mod
from baracuda_dsl.ops import get_template
spec = json.loads(sys.argv[1])
out = {}
c = KernelCache()
out["roots"] = list(c.roots(spec["arch"]))
out["readonly"] = list(c.readonly_roots())
out["packages"] = {a: list(r) for a, r in cache_mod.kernel_packages().items()}
for name in spec["templates"]:
    t = get_template(name)
    art = c.get(t, t.skus(spec["arch"])[0], spec["arch"])
    out[name] = None if art is None else art.cubin.hex()
t = get_template("fill")
out["sm80"] = c.get(t, t.skus("sm80")[0], "sm80") is not None
cache_mod.installed_dsl_version = lambda: "9.9.9"   # another DSL installed: still used
out["other_dsl"] = c.get(t, t.skus(spec["arch"])[0], spec["arch"]) is not None
out["own_root_empty"] = not os.path.exists(c.root) or not any(os.scandir(c.root))
out["entry_point_scans"] = len(calls)
print(json.dumps(out))
"""


def _broken_dist(where):
    """A distribution whose kernel entry point cannot be loaded."""
    info = where / "broken_kernels-0.0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-kernels\n"
                                   "Version: 0.0.0\n")
    (info / "entry_points.txt").write_text("[baracuda_dsl.kernel_caches]\n"
                                           "sm90a = no_such_module_for_kernels:CACHE_ROOT\n")


def _probe(site, tmp_path, **env_extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(p) for p in site] + [ROOT])
    env["BARACUDA_DSL_CACHE_DIR"] = str(tmp_path / "empty-cache")
    env.pop("BARACUDA_DSL_NO_KERNEL_PACKAGES", None)
    env.pop("BARACUDA_DSL_TEMPLATE_MODULES", None)
    env.update(env_extra)
    spec = json.dumps({"arch": ARCH, "templates": list(TEMPLATES)})
    r = subprocess.run([sys.executable, "-c", _PROBE, spec], capture_output=True, text=True,
                       env=env, cwd=str(tmp_path), timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


@pytest.fixture
def installed(fake_cache, tmp_path):
    """The kernel wheel extracted into a site folder: (site dir, package cache root, rels)."""
    root, rels = fake_cache
    path = build_kernel_wheel(str(root), ARCH, str(tmp_path / "out"))
    site = tmp_path / "site"
    with zipfile.ZipFile(path) as zf:
        zf.extractall(site)
    return site, site / PKG / "cache", rels


def test_installed_package_is_found_through_its_entry_point(installed, tmp_path):
    site, pkg_root, rels = installed
    broken = tmp_path / "broken"
    _broken_dist(broken)
    out, err = _probe([site, broken], tmp_path)
    assert out["roots"] == [str(tmp_path / "empty-cache"), str(pkg_root)]
    assert out["readonly"] == [str(pkg_root)]
    assert out["packages"] == {ARCH: [str(pkg_root)]}
    for name in TEMPLATES:
        assert out[name] == _cubin(name).hex(), name
    assert out["sm80"] is False           # no sm80 package installed
    assert out["other_dsl"] is True       # a package serves whatever DSL is installed
    assert out["own_root_empty"]          # nothing copied into the writable cache
    assert out["entry_point_scans"] == 1  # discovered once per process
    assert "skipping kernel package entry point sm90a" in err  # broken one: a warning only


def test_corrupt_entry_in_a_package_is_a_miss_and_kept(installed, tmp_path):
    site, pkg_root, rels = installed
    bad = pkg_root / rels["fill"]
    blob = bytearray(bad.read_bytes())
    blob[40] ^= 0xFF
    bad.write_bytes(bytes(blob))
    out, _ = _probe([site], tmp_path)
    assert out["fill"] is None
    assert out["gemm_sm90"] == _cubin("gemm_sm90").hex()
    assert bad.read_bytes() == bytes(blob)  # read-only root: not deleted


def test_discovery_can_be_turned_off(installed, tmp_path):
    site, _, _ = installed
    out, _ = _probe([site], tmp_path, BARACUDA_DSL_NO_KERNEL_PACKAGES="1")
    assert out["roots"] == [str(tmp_path / "empty-cache")]
    assert out["readonly"] == [] and out["packages"] == {}
    assert all(out[name] is None for name in TEMPLATES)
    assert out["entry_point_scans"] == 0


def test_kernel_packages_off_for_one_cache(fake_cache):
    root, _ = fake_cache
    c = KernelCache(str(root), kernel_packages=False)
    assert c.roots(ARCH) == (str(root),) and c.readonly_roots() == ()
