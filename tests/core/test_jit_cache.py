"""CPU tests of the JIT spine: kernel ABI parsing and argument packing, template keys, the on-disk
cubin cache (keys, atomic writes, corruption, concurrent writers), JIT-disabled misses, and a real
JIT-on-miss compile of a test-only template (``tests/_selftest_kernel.py``)."""

import ctypes
import dataclasses
import json
import multiprocessing as mp
import os
import struct
import sys
import time

import pytest

import baracuda_dsl as bd
from baracuda_dsl.errors import CompileError, KernelNotCachedError
from baracuda_dsl.jit import KernelCache, artifact, freeze_knobs, jit_enabled, knob_key, register
from baracuda_dsl.ops import get_template
from baracuda_dsl.jit import cache as cache_mod
from baracuda_dsl.abi import ArgPack, Param, check_abi, params, ptx_entry_params
from baracuda_dsl.vocabulary import ArchSku

from _selftest_support import cache_writer, payload, plain_template, selftest_templates

needs_dsl = pytest.mark.skipif(
    __import__("importlib").util.find_spec("cutlass") is None,
    reason="CuTe DSL not installed here (a deployed host runs cached kernels only)")

META = {"entry": "k", "params": [], "threads": 128, "smem_bytes": 0}


def _files(root):
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)


@pytest.fixture
def dsl_version(monkeypatch):
    """Pin the 'installed' DSL version the cache keys on."""
    def set_version(v):
        monkeypatch.setattr(cache_mod, "installed_dsl_version", lambda: v)
    set_version("9.9.9")
    return set_version


# ----------------------------------------------------------------------------- ABI
PTX = """
.visible .entry kern_a(
\t.param .u64 .ptr .global .align 16 kern_a_param_0,
\t.param .u64 .ptr .global .align 1 kern_a_param_1,
\t.param .u32 kern_a_param_2,
\t.param .u64 kern_a_param_3,
\t.param .f32 kern_a_param_4,
\t.param .f64 kern_a_param_5
)
.reqntid 256, 1, 1
{
}
.visible .entry kern_b()
{
}
"""


def test_ptx_entry_params():
    assert ptx_entry_params(PTX, "kern_a") == ("u64", "u64", "u32", "u64", "f32", "f64")
    assert ptx_entry_params(PTX, "kern_b") == ()
    with pytest.raises(ValueError, match="not found"):
        ptx_entry_params(PTX, "kern_c")
    with pytest.raises(ValueError, match="cannot parse"):
        ptx_entry_params(".entry bad(\n .reg .u32 r\n)", "bad")


def test_check_abi():
    types = ptx_entry_params(PTX, "kern_a")
    check_abi(params("x:ptr y:ptr n:i32 ld:i64 s:f32 eps:f64"), types)
    check_abi((), ptx_entry_params(PTX, "kern_b"))
    with pytest.raises(ValueError, match="declared 5 params"):
        check_abi(params("x:ptr y:ptr n:i32 ld:i64 s:f32"), types)
    with pytest.raises(ValueError, match="param n"):
        check_abi(params("x:ptr y:ptr n:i64 ld:i64 s:f32 eps:f64"), types)
    with pytest.raises(ValueError, match="param s"):
        check_abi(params("x:ptr y:ptr n:i32 ld:i64 s:f64 eps:f64"), types)
    with pytest.raises(ValueError, match="param x"):
        check_abi(params("x:f64 y:ptr n:i32 ld:i64 s:f32 eps:f64"), types)


def test_params_parsing():
    p = params("x:ptr  n:i32\teps:f64")
    assert p == (Param("x", "ptr"), Param("n", "i32"), Param("eps", "f64"))
    assert params("") == ()
    with pytest.raises(ValueError, match="kind"):
        params("x:ptr n:int")
    with pytest.raises(ValueError):
        params("x")


def test_argpack_writes_every_kind():
    abi = params("x:ptr n:i32 ld:i64 s:f32 eps:f64 m:i32")
    pack = ArgPack(abi)
    vals = [0x7F00DEADBEEF, -7, -(2 ** 40) - 3, 1.5, 1e-300, 2 ** 31 - 1]
    addr = pack.set(vals)
    assert addr == pack.address
    slots = (ctypes.c_void_p * len(abi)).from_address(addr)
    got = [ctypes.c_uint64.from_address(slots[0]).value,
           ctypes.c_int32.from_address(slots[1]).value,
           ctypes.c_int64.from_address(slots[2]).value,
           ctypes.c_float.from_address(slots[3]).value,
           ctypes.c_double.from_address(slots[4]).value,
           ctypes.c_int32.from_address(slots[5]).value]
    assert got == vals
    # rewriting updates the same slots
    pack.set([1, 2, 3, 4.0, 5.0, 6])
    assert ctypes.c_int64.from_address(slots[2]).value == 3
    assert ctypes.c_float.from_address(slots[3]).value == 4.0
    with pytest.raises(ValueError, match="takes 6 arguments"):
        pack.set(vals[:-1])
    with pytest.raises(Exception):
        pack.set([0, 2 ** 31, 0, 0.0, 0.0, 0])  # out of i32 range
    p0 = ArgPack(())  # kernels without parameters
    assert p0.set([]) == p0.address


# ----------------------------------------------------------------------------- template keys
def test_freeze_knobs_and_ids():
    a = freeze_knobs({"vec": 8, "dtype": "bf16"})
    assert a == (("dtype", "bf16"), ("vec", 8)) == freeze_knobs({"dtype": "bf16", "vec": 8})
    assert knob_key(a) == "dtype=bf16,vec=8"
    t = plain_template()
    ids = {t.sku_id(k) for k in t.skus()}
    assert len(ids) == len(t.skus()) == 2
    assert t.sku_id(a) == plain_template().sku_id(a)  # stable across instances
    assert all(i.startswith(t.name + "-") and "/" not in i for i in ids)


def test_source_hash_covers_module_text_and_abi(tmp_path, monkeypatch):
    mod = tmp_path / "tmpl_src_probe.py"
    mod.write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    h1 = plain_template(module="tmpl_src_probe").source_hash()
    assert h1 == plain_template(module="tmpl_src_probe").source_hash()
    mod.write_text("X = 2\n")
    h2 = plain_template(module="tmpl_src_probe").source_hash()
    assert h2 != h1
    h3 = plain_template(module="tmpl_src_probe", spec="x:ptr y:ptr n:i64 s:f32").source_hash()
    assert h3 not in (h1, h2)
    assert plain_template(name="other", module="tmpl_src_probe").source_hash() != h2
    with pytest.raises(ImportError):
        plain_template(module="no_such_module_xyz").source_hash()


def test_register_twice_is_an_error_but_idempotent():
    from baracuda_dsl.jit import template as tmpl

    t = plain_template(name="selftest_register_probe")
    try:
        assert register(t) is t and register(t) is t
        with pytest.raises(ValueError, match="twice"):
            register(plain_template(name="selftest_register_probe"))
        assert get_template("selftest_register_probe") is t
    finally:
        tmpl.unregister(["selftest_register_probe"])


def test_extra_template_modules_env_hook():
    from baracuda_dsl.ops import all_families, all_templates

    assert "selftest" not in all_families()
    with selftest_templates():
        assert "selftest" in all_families()
        assert [t.name for t in all_templates(["selftest"])] == ["selftest_scale"]
    assert "selftest" not in all_families()
    with pytest.raises(KeyError):
        get_template("selftest_scale")


# ----------------------------------------------------------------------------- cache
def test_cache_roundtrip_and_metadata(tmp_path, dsl_version):
    cache = KernelCache(str(tmp_path))
    t = plain_template()
    k = t.skus()[0]
    assert cache.get(t, k, "sm80") is None
    put = cache.put(t, k, "sm80", payload(3), dict(META, smem_bytes=256))
    got = cache.get(t, k, "sm80")
    assert got is not None and got.cubin == payload(3) == put.cubin
    assert (got.entry, got.threads, got.smem_bytes) == ("k", 128, 256)
    for key, want in (("template", t.name), ("knobs", knob_key(k)), ("arch", "sm80"),
                      ("source_hash", t.source_hash()), ("dsl_version", "9.9.9")):
        assert got.meta[key] == want
    (path,) = _files(tmp_path)
    assert path.endswith(".bkc") and f"{os.sep}dsl-9.9.9{os.sep}sm80{os.sep}{t.name}{os.sep}" in path
    assert cache.count() == {"sm80": 1}


def test_cache_keys_differ_by_knobs_arch_dsl_and_source(tmp_path, dsl_version):
    cache = KernelCache(str(tmp_path))
    t = plain_template()
    k0, k1 = t.skus()
    cache.put(t, k0, "sm80", payload(1), META)
    assert cache.get(t, k1, "sm80") is None                      # knobs
    assert cache.get(t, k0, "sm89") is None                      # arch
    assert cache.get(t, k0, "sm90a") is None
    t_abi = plain_template(spec="x:ptr y:ptr n:i64 s:f32")     # template source/ABI hash
    assert t_abi.source_hash() != t.source_hash()
    assert cache.get(t_abi, k0, "sm80") is None
    assert cache.get(plain_template(name="selftest_other"), k0, "sm80") is None  # template
    dsl_version("9.9.10")                                        # DSL version
    assert cache.get(t, k0, "sm80") is None
    dsl_version("9.9.9")
    assert cache.get(t, k0, "sm80").cubin == payload(1)
    # every key gets its own file
    for i, (tt, kk, a) in enumerate([(t, k1, "sm80"), (t, k0, "sm89"), (t_abi, k0, "sm80")]):
        cache.put(tt, kk, a, payload(10 + i), META)
    assert len(_files(tmp_path)) == 4
    assert cache.get(t, k0, "sm80").cubin == payload(1)
    assert cache.get(t, k1, "sm80").cubin == payload(10)
    assert cache.get(t, k0, "sm89").cubin == payload(11)
    assert cache.get(t_abi, k0, "sm80").cubin == payload(12)
    assert cache.count() == {"sm80": 3, "sm89": 1}


def test_host_without_dsl_uses_newest_cached_version(tmp_path, dsl_version):
    cache = KernelCache(str(tmp_path))
    t = plain_template()
    k = t.skus()[0]
    for v, m in (("4.9.1", 1), ("4.10.0", 2), ("4.8.1", 3)):
        cache.put(t, k, "sm80", payload(m), dict(META, dsl_version=v))
    dsl_version(None)
    assert cache.get(t, k, "sm80").cubin == payload(2)  # 4.10.0 > 4.9.1 (numeric, not text)
    assert cache.get(t, k, "sm89") is None
    assert KernelCache(str(tmp_path / "missing")).get(t, k, "sm80") is None


def test_atomic_writes_leave_no_temp_files(tmp_path, dsl_version):
    cache = KernelCache(str(tmp_path))
    t = plain_template()
    for i in range(20):
        cache.put(t, t.skus()[i % 2], ("sm80", "sm89")[i % 2], payload(i), META)
    assert [os.path.basename(f) for f in _files(tmp_path) if not f.endswith(".bkc")] == []
    assert len(_files(tmp_path)) == 2


def test_failed_write_removes_temp_and_keeps_old_entry(tmp_path, dsl_version, monkeypatch):
    cache = KernelCache(str(tmp_path))
    t = plain_template()
    k = t.skus()[0]
    cache.put(t, k, "sm80", payload(1), META)

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(cache_mod.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        cache.put(t, k, "sm80", payload(2), META)
    monkeypatch.undo()
    assert len(_files(tmp_path)) == 1
    dsl_version("9.9.9")
    assert cache.get(t, k, "sm80").cubin == payload(1)


def _corruptions(blob):
    n = struct.unpack("<I", blob[8:12])[0]
    header_pos = 12 + n // 2
    cubin_pos = 12 + n + 100
    flip = lambda b, i: b[:i] + bytes([b[i] ^ 0x01]) + b[i + 1:]  # noqa: E731
    header = blob[12:12 + n]
    threads_pos = 12 + header.index(b'"threads": 128') + len(b'"threads": 12')
    return {
        "empty": b"",
        "magic only": blob[:8],
        "truncated header": blob[:12 + n // 2],
        "truncated cubin": blob[:cubin_pos],
        "missing digest byte": blob[:-1],
        "bad magic": b"XXCUBIN2" + blob[8:],
        "old format magic": b"BKCUBIN1" + blob[8:],
        "flipped header byte": flip(blob, header_pos),
        "flipped metadata digit": flip(blob, threads_pos),  # 128 -> 129: still valid JSON
        "flipped cubin byte": flip(blob, cubin_pos),
        "flipped digest byte": flip(blob, len(blob) - 5),
        "appended garbage": blob + b"\0" * 7,
        "huge length": blob[:8] + struct.pack("<I", 2 ** 31) + blob[12:],
    }


def test_corrupted_entries_are_deleted_and_missed(tmp_path, dsl_version):
    cache = KernelCache(str(tmp_path))
    t = plain_template()
    k = t.skus()[0]
    cache.put(t, k, "sm80", payload(5), META)
    (path,) = _files(tmp_path)
    good = open(path, "rb").read()
    cases = _corruptions(good)
    assert len(set(cases.values())) == len(cases)
    for name, bad in cases.items():
        with open(path, "wb") as f:
            f.write(bad)
        assert cache.get(t, k, "sm80") is None, name
        assert not os.path.exists(path), f"{name}: corrupt entry not deleted"
        # a fresh put repairs it
        cache.put(t, k, "sm80", payload(5), META)
        assert open(path, "rb").read() == good
        assert cache.get(t, k, "sm80").cubin == payload(5)


def test_concurrent_writers_never_expose_partial_entries(tmp_path, dsl_version):
    """Three processes rewrite one key with entries of different sizes and contents while this
    process reads it: every accepted entry is internally consistent, and once the entry exists
    a read never misses (the rename is atomic; nothing is ever deleted as corrupt)."""
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=cache_writer, args=(str(tmp_path), 1000 * (w + 1), 60))
             for w in range(3)]
    for p in procs:
        p.start()
    cache = KernelCache(str(tmp_path))
    t = plain_template()
    k = t.skus()[0]
    hits = misses_after_hit = 0
    markers = set()
    deadline = time.monotonic() + 120
    while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
        a = cache.get(t, k, "sm80")
        if a is None:
            misses_after_hit += hits > 0
            continue
        hits += 1
        m = a.meta["marker"]
        markers.add(m)
        assert a.cubin == payload(m), f"entry {m} has a cubin that is not its own"
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert misses_after_hit == 0
    final = cache.get(t, k, "sm80")
    assert final is not None and final.cubin == payload(final.meta["marker"])
    assert [f for f in _files(tmp_path) if not f.endswith(".bkc")] == []
    assert hits > 0


# ----------------------------------------------------------------------------- JIT policy
@pytest.mark.parametrize("value", ["0", "false", "off", "No"])
def test_jit_disabled_miss_raises_with_prebuild_command(tmp_path, monkeypatch, value):
    monkeypatch.setenv("BARACUDA_DSL_JIT", value)
    assert not jit_enabled()
    t = plain_template()

    def no_compile(*a, **kw):
        raise AssertionError("JIT is disabled: nothing may be compiled")

    monkeypatch.setattr("baracuda_dsl.jit.compiler.compile_sku", no_compile)
    with pytest.raises(KernelNotCachedError) as ei:
        artifact(t, t.skus()[0], ArchSku.SM89, KernelCache(str(tmp_path)))
    msg = str(ei.value)
    assert (f"python -m baracuda_dsl prebuild --arch sm89 --ops selftest --cache-dir {tmp_path}"
            in msg)
    assert "BARACUDA_DSL_JIT=0" in msg and "selftest_plain(dtype=f32,threads=128)" in msg
    # explicit allow_jit=False behaves the same whatever the environment says
    monkeypatch.setenv("BARACUDA_DSL_JIT", "1")
    assert jit_enabled()
    with pytest.raises(KernelNotCachedError):
        artifact(t, t.skus()[0], ArchSku.SM89, KernelCache(str(tmp_path)), allow_jit=False)


def test_host_without_dsl_cannot_jit(tmp_path, monkeypatch):
    monkeypatch.setattr("baracuda_dsl.jit.installed_dsl_version", lambda: None)
    monkeypatch.setattr("baracuda_dsl.jit.compiler.compile_sku",
                        lambda *a, **kw: pytest.fail("no DSL: nothing may be compiled"))
    t = plain_template()
    with pytest.raises(KernelNotCachedError, match="not installed") as ei:
        artifact(t, t.skus()[0], ArchSku.SM90A, KernelCache(str(tmp_path)), allow_jit=True)
    assert "prebuild --arch sm90a --ops selftest" in str(ei.value)


def test_jit_disabled_still_serves_cached_kernels(tmp_path, monkeypatch, dsl_version):
    monkeypatch.setenv("BARACUDA_DSL_JIT", "0")
    cache = KernelCache(str(tmp_path))
    t = plain_template()
    cache.put(t, t.skus()[1], "sm90a", payload(9), META)
    assert artifact(t, t.skus()[1], ArchSku.SM90A, cache).cubin == payload(9)


@needs_dsl
def test_jit_compiles_on_miss_then_hits(tmp_path, monkeypatch):
    with selftest_templates():
        t = get_template("selftest_scale")
        k = t.skus()[0]
        cache = KernelCache(str(tmp_path))
        art = artifact(t, k, ArchSku.SM80, cache, allow_jit=True)
        assert art.cubin[:4] == b"\x7fELF"
        assert art.meta["ptx_target"] == "sm_80"
        assert art.threads == 128 and art.smem_bytes == 0
        assert art.meta["params"] == [["x", "ptr"], ["y", "ptr"], ["n", "i32"], ["s", "f32"]]
        assert art.meta["dsl_version"] == bd.jit.installed_dsl_version()
        assert len(_files(tmp_path)) == 1

        def boom(*a, **kw):
            raise AssertionError("a cache hit must not compile")

        monkeypatch.setattr("baracuda_dsl.jit.compiler.compile_sku", boom)
        again = artifact(t, k, ArchSku.SM80, cache, allow_jit=True)
        assert again.cubin == art.cubin and again.meta == art.meta
        # another arch is another SKU: a miss, which now reaches the (patched) compiler
        with pytest.raises(AssertionError, match="must not compile"):
            artifact(t, k, ArchSku.SM90A, cache, allow_jit=True)


@needs_dsl
def test_compiler_rejects_abi_mismatch():
    from baracuda_dsl.jit.compiler import compile_sku

    with selftest_templates(("_selftest_templates", "_selftest_broken")):
        t = get_template("selftest_bad_abi")
        with pytest.raises(CompileError, match="ABI mismatch for param n"):
            compile_sku(t.name, t.skus()[0], ArchSku.SM89, timeout=300)


def test_prune_removes_only_stale_entries(tmp_path, monkeypatch):
    """prune keeps entries of current SKUs and deletes ones whose key no current SKU produces."""
    import os

    from baracuda_dsl.jit import KernelCache
    from baracuda_dsl.ops import get_template

    monkeypatch.setattr("baracuda_dsl.jit.cache.installed_dsl_version", lambda: "9")
    cache = KernelCache(str(tmp_path))
    t = get_template("column_sum")
    k = t.skus()[0]
    meta = {"entry": "k", "params": [], "threads": 32, "smem_bytes": 0, "dsl_version": "9"}
    cache.put(t, k, "sm80", b"\x7fELFlive", meta)
    d = os.path.join(str(tmp_path), "dsl-9", "sm80", t.name)
    stale = os.path.join(d, f"{t.sku_id(k)}-0123456789abcdef.bkc")
    with open(stale, "wb") as f:
        f.write(b"old")
    assert cache.prune([t]) == 1
    assert not os.path.exists(stale)
    assert cache.get(t, k, "sm80") is not None


def test_jit_machinery_is_not_kernel_source():
    """Editing the compiler / cache / registry must not invalidate cached kernels: no template's
    source closure holds a ``baracuda_dsl.jit`` module, and the compile recipe is hashed instead."""
    from baracuda_dsl.jit import template as tmpl
    from baracuda_dsl.ops import all_templates

    for t in all_templates():
        mods = t.source_modules()
        assert mods[0] == t.module
        assert not [m for m in mods if m == "baracuda_dsl.jit" or m.startswith("baracuda_dsl.jit.")]
    t = all_templates()[0]
    old = t.source_hash()
    try:
        t._hash.clear()
        tmpl.COMPILE_RECIPE, saved = tmpl.COMPILE_RECIPE + "x", tmpl.COMPILE_RECIPE
        assert t.source_hash() != old
    finally:
        tmpl.COMPILE_RECIPE = saved
        t._hash.clear()
    assert t.source_hash() == old
