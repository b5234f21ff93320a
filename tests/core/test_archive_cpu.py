"""``pack`` / ``unpack``: an empty cache packs nothing (exit 1, no archive), unpack keeps only the
entries this install can use and names what it skipped, and bad archives are typed errors."""

import os
import tarfile

import pytest

from baracuda_dsl.__main__ import main
from baracuda_dsl.jit import KernelCache
from baracuda_dsl.ops import get_template

DSL = "4.8.1"


@pytest.fixture
def dsl(monkeypatch):
    """Pretend DSL version DSL is installed (entries of other versions are then unusable)."""
    monkeypatch.setattr("baracuda_dsl.jit.cache.installed_dsl_version", lambda: DSL)


def _fill(root):
    """One current entry, one of another DSL version, one stale (other source hash)."""
    t = get_template("fill")
    k = t.skus("sm90a")[0]
    cache = KernelCache(str(root), kernel_packages=False)
    cache.put(t, k, "sm90a", b"\x7fELF-current", {"entry": "k", "dsl_version": DSL})
    cache.put(t, k, "sm90a", b"\x7fELF-other", {"entry": "k", "dsl_version": "0.0.1"})
    cur = os.path.join(str(root), f"dsl-{DSL}", "sm90a", t.name)
    name = f"{t.sku_id(k)}-{t.source_hash()}.bkc"
    stale = name.replace(t.source_hash(), "0" * 16)
    with open(os.path.join(cur, name), "rb") as f, open(os.path.join(cur, stale), "wb") as g:
        g.write(f.read())
    return t, k


def test_pack_of_an_empty_cache_writes_nothing(tmp_path, capsys):
    out = tmp_path / "k.tar.xz"
    assert main(["pack", str(out), "--cache-dir", str(tmp_path / "empty")]) == 1
    assert "nothing to pack" in capsys.readouterr().err
    assert not out.exists() and not [p for p in os.listdir(tmp_path) if p.startswith(".tmp")]


def test_unpack_keeps_what_this_install_can_use(tmp_path, capsys, dsl):
    t, k = _fill(tmp_path / "src")
    arc = tmp_path / "k.tar.xz"
    assert main(["pack", str(arc), "--cache-dir", str(tmp_path / "src")]) == 0
    with tarfile.open(arc) as tar:
        assert len([m for m in tar.getmembers() if m.isfile()]) == 3
    capsys.readouterr()
    assert main(["unpack", str(arc), "--cache-dir", str(tmp_path / "dst")]) == 0
    io = capsys.readouterr()
    assert "unpacked 1 cached kernels" in io.out
    assert "1 entry built by another CuTe DSL version than the installed 4.8.1 skipped" in io.err
    assert "1 entry built from other kernel sources" in io.err
    dst = KernelCache(str(tmp_path / "dst"), kernel_packages=False)
    assert dst.get(t, k, "sm90a").cubin == b"\x7fELF-current"
    assert main(["unpack", str(arc), "--all", "--cache-dir", str(tmp_path / "all")]) == 0
    assert "unpacked 3 cached kernels" in capsys.readouterr().out


def test_unpack_of_nothing_usable_exits_1(tmp_path, capsys, dsl):
    root = tmp_path / "src"
    d = root / "dsl-0.0.1" / "sm90a" / "nope"
    d.mkdir(parents=True)
    (d / "x.bkc").write_bytes(b"junk")
    arc = tmp_path / "k.tar.xz"
    assert main(["pack", str(arc), "--cache-dir", str(root)]) == 0
    assert main(["unpack", str(arc), "--cache-dir", str(tmp_path / "dst")]) == 1
    err = capsys.readouterr().err
    assert "of templates this install does not have" in err and "nothing in the archive" in err


@pytest.mark.parametrize("content", [None, b"not a tarball"])
def test_unpack_of_a_missing_or_bad_file_is_a_clean_error(tmp_path, capsys, content):
    arc = tmp_path / "k.tar.xz"
    if content is not None:
        arc.write_bytes(content)
    assert main(["unpack", str(arc), "--cache-dir", str(tmp_path / "dst")]) == 2
    err = capsys.readouterr().err
    assert ("no such archive" if content is None else "is not a kernel-cache archive") in err
    assert "Traceback" not in err
