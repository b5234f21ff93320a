"""CPU tests of the spine: vocabulary, dtypes, tensor views, kernel ABI, the cubin cache,
JIT-disabled behaviour, the CLI, and cross-compiling every kernel template for every arch."""

import os
import subprocess
import sys

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.jit import KernelCache, all_templates, artifact, get_template
from baracuda_dsl.jit.abi import ArgPack, check_abi, params, ptx_entry_params
from baracuda_dsl.tensor import TensorView, as_view, contiguous_strides

needs_dsl = pytest.mark.skipif(
    __import__("importlib").util.find_spec("cutlass") is None,
    reason="CuTe DSL not installed here (a deployed host runs cached kernels only)")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_arch_parse_and_capability():
    assert bd.ArchSku.parse("sm_90a") is bd.ArchSku.SM90A
    assert bd.ArchSku.parse("90") is bd.ArchSku.SM90A
    assert bd.ArchSku.parse("sm80") is bd.ArchSku.SM80
    assert bd.ArchSku.for_compute_capability(8, 6) is bd.ArchSku.SM80
    assert bd.ArchSku.for_compute_capability(8, 9) is bd.ArchSku.SM89
    assert bd.ArchSku.SM90A.cute_arch == "sm_90a"
    with pytest.raises(bd.UnsupportedError):
        bd.ArchSku.parse("sm70")
    with pytest.raises(bd.UnsupportedError):
        bd.ArchSku.for_compute_capability(7, 5)


def test_dtype_resolution():
    assert bd.dtypes.dtype("bf16") is bd.bfloat16
    assert bd.dtypes.dtype("float32") is bd.float32
    assert bd.dtypes.dtype(np.float64) is bd.float64
    assert bd.dtypes.dtype("torch.float16") is bd.float16
    assert bd.dtypes.from_dlpack_code(4, 16) is bd.bfloat16
    with pytest.raises(bd.UnsupportedError):
        bd.dtypes.dtype("float128")


def test_tensor_view_checks():
    v = TensorView(0x1000, (2, 3), (3, 1), bd.float32)
    assert v.is_contiguous() and v.numel == 6 and v.required_bytes() == 24
    t = v.with_shape((3, 2), (1, 3))
    assert not t.is_contiguous()
    neg = TensorView(0x1000, (4,), (-1,), bd.float32)
    assert neg.span_elements() == (-3, 0)
    with pytest.raises(bd.InvalidProblemError):
        TensorView(0, (1,) * 9, (1,) * 9, bd.float32)
    with pytest.raises(bd.InvalidProblemError):
        TensorView(0, (2, -1), (1, 1), bd.float32)
    with pytest.raises(bd.InvalidProblemError):
        TensorView(0, (2, 2), (1,), bd.float32)
    assert contiguous_strides((2, 3, 4)) == (12, 4, 1)


def test_host_arrays_are_rejected():
    with pytest.raises(bd.DeviceMismatchError):
        as_view(np.zeros((2, 2), np.float32))
    with pytest.raises(bd.InvalidProblemError):
        as_view(object())


def test_abi_parsing_and_packing():
    ptx = (".visible .entry k(\n .param .u64 .ptr .global .align 16 k_param_0,\n"
           " .param .u32 k_param_1,\n .param .f64 k_param_2\n)\n.reqntid 128, 1, 1\n{")
    types = ptx_entry_params(ptx, "k")
    assert types == ("u64", "u32", "f64")
    check_abi(params("x:ptr n:i32 eps:f64"), types)
    with pytest.raises(ValueError):
        check_abi(params("x:ptr n:i32"), types)
    with pytest.raises(ValueError):
        check_abi(params("x:ptr n:i64 eps:f64"), types)
    pack = ArgPack(params("x:ptr n:i32 eps:f64"))
    addr = pack.set([0xDEAD0000, 7, 0.5])
    import ctypes

    arr = (ctypes.c_void_p * 3).from_address(addr)
    assert ctypes.c_uint64.from_address(arr[0]).value == 0xDEAD0000
    assert ctypes.c_int32.from_address(arr[1]).value == 7
    assert ctypes.c_double.from_address(arr[2]).value == 0.5
    with pytest.raises(ValueError):
        pack.set([1, 2])


def test_sku_space_is_finite_and_shape_free():
    names = {t.name for t in all_templates()}
    assert {"row_norm_fw", "row_norm_bw", "column_sum"} <= names
    for t in all_templates():
        skus = t.skus()
        assert len(skus) == len(set(skus)) > 0
        for k in skus:
            assert t.geometry(dict(k)).threads <= 1024


def _fake_put(cache, t, knobs, arch="sm80", payload=b"\x7fELF-not-really"):
    return cache.put(t, knobs, arch, payload, {"entry": "k", "params": [], "threads": 32,
                                                "smem_bytes": 0, "dsl_version": "9.9.9"})


def test_cache_roundtrip_keys_and_corruption(tmp_path, monkeypatch):
    monkeypatch.setattr("baracuda_dsl.jit.cache.installed_dsl_version", lambda: None)
    cache = KernelCache(str(tmp_path))
    t = get_template("column_sum")
    k0, k1 = t.skus()[0], t.skus()[1]
    assert cache.get(t, k0, "sm80") is None
    art = _fake_put(cache, t, k0)
    got = cache.get(t, k0, "sm80")
    assert got is not None and got.cubin == art.cubin and got.entry == "k"
    assert cache.get(t, k1, "sm80") is None  # knobs are part of the key
    assert cache.get(t, k0, "sm90a") is None  # arch is part of the key
    assert not [f for _, _, fs in os.walk(tmp_path) for f in fs if f.startswith(".tmp")]
    assert cache.count() == {"sm80": 1}
    # corrupt the entry: it is removed and reported as a miss
    path = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs][0]
    blob = open(path, "rb").read()
    open(path, "wb").write(blob[:-3] + b"xyz")
    assert cache.get(t, k0, "sm80") is None
    assert not os.path.exists(path)
    # truncated entry
    _fake_put(cache, t, k0)
    open(path, "wb").write(b"BKCU")
    assert cache.get(t, k0, "sm80") is None


def test_cache_keyed_by_dsl_version(tmp_path, monkeypatch):
    cache = KernelCache(str(tmp_path))
    t = get_template("column_sum")
    k = t.skus()[0]
    monkeypatch.setattr("baracuda_dsl.jit.cache.installed_dsl_version", lambda: "9.9.9")
    _fake_put(cache, t, k)
    assert cache.get(t, k, "sm80") is not None
    monkeypatch.setattr("baracuda_dsl.jit.cache.installed_dsl_version", lambda: "1.0.0")
    assert cache.get(t, k, "sm80") is None  # another DSL version does not reuse the entry
    monkeypatch.setattr("baracuda_dsl.jit.cache.installed_dsl_version", lambda: None)
    assert cache.get(t, k, "sm80") is not None  # a host without the DSL takes what is there


def _writer(root, n):
    from baracuda_dsl.jit import KernelCache, get_template

    c = KernelCache(root)
    t = get_template("column_sum")
    for i in range(n):
        c.put(t, t.skus()[0], "sm80", bytes([i % 251]) * 4096,
              {"entry": "k", "params": [], "threads": 32, "smem_bytes": 0, "dsl_version": "9"})


def test_concurrent_writers_never_expose_partial_entries(tmp_path, monkeypatch):
    import multiprocessing as mp

    monkeypatch.setattr("baracuda_dsl.jit.cache.installed_dsl_version", lambda: "9")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), 40)) for _ in range(2)]
    for p in procs:
        p.start()
    cache = KernelCache(str(tmp_path))
    t = get_template("column_sum")
    seen = 0
    while any(p.is_alive() for p in procs):
        a = cache.get(t, t.skus()[0], "sm80")
        if a is not None:
            assert len(a.cubin) == 4096 and len(set(a.cubin)) == 1
            seen += 1
    for p in procs:
        p.join()
        assert p.exitcode == 0
    assert cache.get(t, t.skus()[0], "sm80") is not None


def test_jit_disabled_miss_names_prebuild_command(tmp_path, monkeypatch):
    monkeypatch.setenv("BARACUDA_DSL_JIT", "0")
    t = get_template("row_norm_fw")
    with pytest.raises(bd.KernelNotCachedError) as ei:
        artifact(t, t.skus()[0], bd.ArchSku.SM90A, KernelCache(str(tmp_path)))
    assert "python -m baracuda_dsl prebuild --arch sm90a --ops normalization" in str(ei.value)


@needs_dsl
def test_jit_compiles_on_miss_then_hits(tmp_path, monkeypatch):
    t = get_template("column_sum")
    k = t.skus()[0]
    cache = KernelCache(str(tmp_path))
    art = artifact(t, k, bd.ArchSku.SM80, cache, allow_jit=True)
    assert art.cubin[:4] == b"\x7fELF" and art.meta["ptx_target"] == "sm_80"

    def boom(*a, **kw):
        raise AssertionError("a cache hit must not compile")

    monkeypatch.setattr("baracuda_dsl.jit.compiler.compile_sku", boom)
    again = artifact(t, k, bd.ArchSku.SM80, cache, allow_jit=True)
    assert again.cubin == art.cubin


@needs_dsl
@pytest.mark.parametrize("arch", ["sm80", "sm89", "sm90a"])
def test_cross_compile_every_template(arch, tmp_path):
    """At least one SKU of every kernel template compiles for every arch (no GPU needed); the ABI
    and block size are checked against the template by the compiler."""
    from baracuda_dsl.jit.compiler import submit

    a = bd.ArchSku.parse(arch)
    futs = []
    for t in all_templates():
        skus = t.skus(a.value)
        picks = {skus[0], skus[-1]} | {k for k in skus if dict(k).get("cluster", 1) > 1}
        for k in picks:
            futs.append((t, k, submit(t.name, k, a, 2)))
    for t, k, f in futs:
        cubin, meta = f.result(timeout=600)
        assert cubin[:4] == b"\x7fELF", t.name
        assert meta["ptx_target"] == a.cute_arch
        assert meta["threads"] == t.geometry(dict(k)).threads


def test_cli_prebuild_and_info(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-m", "baracuda_dsl", "prebuild", "--arch", "sm89",
                        "--ops", "nope"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert r.returncode == 2 and "known: normalization" in r.stderr
    r = subprocess.run([sys.executable, "-m", "baracuda_dsl", "prebuild", "--list", "--arch",
                        "sm80", "--cache-dir", str(tmp_path)], capture_output=True, text=True,
                       env=env, cwd=ROOT)
    assert r.returncode == 0 and "row_norm_fw" in r.stdout
    r = subprocess.run([sys.executable, "-m", "baracuda_dsl", "info", "--cache-dir",
                        str(tmp_path)], capture_output=True, text=True, env=env, cwd=ROOT)
    assert r.returncode == 0 and "CuTe DSL" in r.stdout and "cache" in r.stdout
