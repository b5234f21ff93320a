"""CPU tests of the command line (``python -m baracuda_dsl prebuild|info``) and of the prebuild
scheduler.  The real compiles use the test-only ``selftest`` family (two tiny SKUs) and the
always-failing ``selftest_broken`` family, made visible to the CLI subprocess through
``BARACUDA_DSL_TEMPLATE_MODULES``."""

import concurrent.futures as cf
import os
import subprocess
import sys
import threading
import time

import pytest

from baracuda_dsl.__main__ import main
from baracuda_dsl.jit import KernelCache, installed_dsl_version
from baracuda_dsl.ops import all_templates, get_template
from baracuda_dsl.vocabulary import ArchSku

from _selftest_support import ROOT, plain_template, selftest_templates, subprocess_env

needs_dsl = pytest.mark.skipif(
    __import__("importlib").util.find_spec("cutlass") is None,
    reason="CuTe DSL not installed here (a deployed host runs cached kernels only)")

BOTH = ("_selftest_templates", "_selftest_broken")


def cli(*args, modules=("_selftest_templates",), timeout=600, **env):
    return subprocess.run([sys.executable, "-m", "baracuda_dsl", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=timeout, env=subprocess_env(modules, **env))


def _table_row(text, *cells):
    """The table line holding every cell (rich draws ``│ a │ b │``)."""
    for line in text.splitlines():
        parts = [p.strip() for p in line.split("│")]
        if all(c in parts for c in cells):
            return parts
    raise AssertionError(f"no row with {cells} in:\n{text}")


# ----------------------------------------------------------------------------- argument errors
def test_unknown_family_exits_2_and_lists_known(tmp_path):
    r = cli("prebuild", "--arch", "sm89", "--ops", "nope,selftest", "--cache-dir", str(tmp_path))
    assert r.returncode == 2, r.stderr
    assert "unknown op family nope" in r.stderr
    with selftest_templates():
        from baracuda_dsl.ops import all_families

        known = all_families()
    # the message may be wrapped at any space: compare with whitespace normalised
    assert "known: " + ", ".join(known) in " ".join(r.stderr.split())
    assert "selftest" in known and not os.listdir(tmp_path)


@pytest.mark.parametrize("args,needle", [
    (["--arch", "sm70"], "unknown arch"),
    (["--arch", ","], "names no arch"),
    (["--jobs", "0"], "--jobs must be >= 1"),
    (["--ops", ","], "unknown op famil"),
])
def test_bad_arguments_exit_2(args, needle, tmp_path, capsys):
    assert main(["prebuild", *args, "--cache-dir", str(tmp_path)]) == 2
    assert needle in capsys.readouterr().err
    assert not os.listdir(tmp_path)


def test_no_subcommand_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as ei:
        main([])
    assert ei.value.code == 2


def test_prebuild_without_dsl_refuses(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("baracuda_dsl.jit.installed_dsl_version", lambda: None)
    assert main(["prebuild", "--arch", "sm80", "--cache-dir", str(tmp_path)]) == 2
    assert "needs CuTe DSL" in capsys.readouterr().err


# ----------------------------------------------------------------------------- --list
@pytest.mark.parametrize("which", ["all", "core"])
def test_list_covers_every_template_and_arch(tmp_path, which):
    from baracuda_dsl.jit.tiers import select

    r = cli("prebuild", "--list", "--arch", "sm80,sm89,sm90a", "--set", which,
            "--cache-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    with selftest_templates():
        templates = all_templates()
        total = 0
        for t in templates:
            want = [len(select(t, t.skus(a.value), a.value, which)) for a in ArchSku]
            total += sum(want)
            if not any(want):
                continue
            row = _table_row(r.stdout, t.name)
            assert row[1] == t.family
            assert row[3:6] == [f"0/{n}" for n in want], row
    assert f"{total} SKU builds over sm80, sm89, sm90a" in r.stdout
    core = sum(len(select(t, t.skus("sm90a"), "sm90a")) for t in templates)
    assert 0.2 < core / sum(len(t.skus("sm90a")) for t in templates) < 0.6
    assert not os.listdir(tmp_path)  # listing compiles nothing


def test_core_set_rules():
    """The core set keeps ML dtypes and the templates' own picks; the rest is extra."""
    from baracuda_dsl.jit.tiers import is_core

    ew = get_template("elementwise")
    core = {dict(k)["op"] + ":" + dict(k).get("dtype", "") + ":" + dict(k)["path"]
            for k in ew.skus("sm90a") if is_core(ew, k, "sm90a")}
    assert "add:bf16:flat" in core and "add:bf16:s4" in core and "exp:f32:flat" in core
    assert "exp:f32:s4" not in core            # strided unary: first use
    assert not any(":f64:" in c or ":c64:" in c for c in core)
    assert not any(c.startswith(("acos:", "lgamma:")) for c in core)
    assert not any(is_core(get_template(n), k, "sm90a") for n in ("gemm_tf32", "gemm_int8")
                   for k in get_template(n).skus("sm90a"))
    mma = get_template("gemm_mma")
    assert all(is_core(mma, k, "sm80") for k in mma.skus("sm80"))
    assert {dict(k)["tile"] for k in mma.skus("sm90a") if is_core(mma, k, "sm90a")} == {"16x32"}


def test_shards_partition_the_selection(tmp_path):
    from baracuda_dsl.jit.prebuild import Selection, plan_jobs

    cache = KernelCache(str(tmp_path))
    ts = all_templates(["normalization", "softmax"])
    whole = plan_jobs(ts, [ArchSku.SM90A], cache, Selection("all"))
    parts = [plan_jobs(ts, [ArchSku.SM90A], cache, Selection("all", None, k, 3)) for k in (1, 2, 3)]
    keys = [[(j.template.name, j.knobs) for j in p] for p in parts]
    assert sorted(sum(keys, [])) == sorted((j.template.name, j.knobs) for j in whole)
    assert max(map(len, keys)) - min(map(len, keys)) <= 1
    bf16 = plan_jobs(ts, [ArchSku.SM90A], cache, Selection("all", frozenset({"bf16"})))
    assert bf16 and all(j.template.thaw(j.knobs).dtype == "bf16" for j in bf16)


@pytest.mark.parametrize("args,needle", [
    (["--shard", "3/2"], "need 1 <= K <= N"),
    (["--shard", "x"], "expected K/N"),
    (["--dtypes", "f99"], "unknown dtype(s) f99"),
    (["--templates", "nope"], "unknown template(s) nope"),
])
def test_bad_selection_exits_2(args, needle, tmp_path, capsys):
    assert main(["prebuild", "--arch", "sm90a", *args, "--cache-dir", str(tmp_path)]) == 2
    assert needle in capsys.readouterr().err


def test_verbose_alone_lists(tmp_path, capsys):
    with selftest_templates():
        assert main(["prebuild", "-v", "--set", "all", "--ops", "selftest", "--arch", "sm80",
                     "--cache-dir", str(tmp_path)]) == 0
    assert "2 SKU builds over sm80" in capsys.readouterr().out
    assert not os.listdir(tmp_path)


def test_version_and_prog_name():
    from baracuda_dsl._version import __version__

    r = subprocess.run([sys.executable, "-m", "baracuda_dsl", "--version"], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == f"baracuda-dsl {__version__}"
    r = subprocess.run([sys.executable, "-c", "import sys; sys.argv[0] = '/usr/bin/baracuda-dsl';"
                        "from baracuda_dsl.__main__ import main; main(['nope'])"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and r.stderr.startswith("usage: baracuda-dsl ")
    r = subprocess.run([sys.executable, "-m", "baracuda_dsl", "nope"], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.stderr.startswith("usage: python -m baracuda_dsl ")


def test_list_verbose_one_row_per_sku(tmp_path, capsys):
    with selftest_templates():
        assert main(["prebuild", "--list", "-v", "--set", "all", "--ops", "selftest", "--arch", "sm80,sm90a",
                     "--cache-dir", str(tmp_path)]) == 0
        out = capsys.readouterr().out
        t = get_template("selftest_scale")
        for k in t.skus():
            row = _table_row(out, ",".join(f"{a}={b}" for a, b in k))
            assert row[-3:-1] == ["no", "no"]
    assert "4 SKU builds over sm80, sm90a" in out and "sm89" not in out


# ----------------------------------------------------------------------------- real prebuild
@needs_dsl
def test_prebuild_compiles_caches_and_skips(tmp_path):
    target, decoy = tmp_path / "target", tmp_path / "decoy"
    t0 = time.perf_counter()
    r = cli("prebuild", "--arch", "sm80", "--set", "all", "--ops", "selftest", "--jobs", "2",
            "--cache-dir", str(target), BARACUDA_DSL_CACHE_DIR=str(decoy))
    first = time.perf_counter() - t0
    assert r.returncode == 0, r.stderr + r.stdout
    assert _table_row(r.stdout, "selftest", "sm80")[3:6] == ["2", "0", "0"]
    assert "prebuild: 2/2 SKUs" in r.stderr  # plain progress lines when not a terminal
    assert not decoy.exists()  # --cache-dir wins over BARACUDA_DSL_CACHE_DIR
    cache = KernelCache(str(target))
    assert cache.count() == {"sm80": 2}
    with selftest_templates():
        t = get_template("selftest_scale")
        for k in t.skus():
            art = cache.get(t, k, "sm80")
            assert art is not None and art.cubin[:4] == b"\x7fELF"
            assert art.meta["ptx_target"] == "sm_80"
            assert art.threads == dict(k)["threads"]
    # second run: everything is cached, nothing compiles
    r2 = cli("prebuild", "--arch", "sm80", "--set", "all", "--ops", "selftest",
             "--cache-dir", str(target))
    assert r2.returncode == 0, r2.stderr
    assert _table_row(r2.stdout, "selftest", "sm80")[3:6] == ["0", "2", "0"]
    assert "2 already cached, 0 to compile" in r2.stderr
    # the environment variable is the default cache root; --list sees the entries
    r3 = cli("prebuild", "--list", "--set", "all", "--arch", "sm80", "--ops", "selftest",
             BARACUDA_DSL_CACHE_DIR=str(target))
    assert r3.returncode == 0 and _table_row(r3.stdout, "selftest_scale")[3] == "2/2"
    assert first < 300


@needs_dsl
def test_prebuild_reports_failures_and_exits_1(tmp_path):
    r = cli("prebuild", "--arch", "sm80,sm90a", "--set", "all", "--ops", "selftest_broken,selftest",
            "--cache-dir", str(tmp_path), modules=BOTH)
    assert r.returncode == 1, r.stderr + r.stdout
    for arch in ("sm80", "sm90a"):
        assert _table_row(r.stdout, "selftest_broken", arch)[3:6] == ["0", "0", "2"]
        assert _table_row(r.stdout, "selftest", arch)[3:6] == ["2", "0", "0"]
        assert (f"FAILED selftest_bad_abi(dtype=f32,threads=128) @{arch}: ABI mismatch for "
                f"param n: declared i64, PTX has .u32") in r.stderr
        # a compiler crash fails that SKU only; the run goes on with a fresh worker
        assert (f"FAILED selftest_crash(dtype=f32,threads=128) @{arch}: " in r.stderr)
    assert "exited (status 3) while compiling" in r.stderr
    assert "4 SKU(s) failed" in r.stderr
    assert "Traceback" not in r.stderr  # one concise line per failed SKU
    assert KernelCache(str(tmp_path)).count() == {"sm80": 2, "sm90a": 2}  # good SKUs kept


# ----------------------------------------------------------------------------- scheduler
def test_prebuild_scheduler_throttles_tallies_and_skips_cached(tmp_path, monkeypatch):
    """prebuild() with a fake compiler: never more than ``jobs`` compiles in flight, cached SKUs
    skipped, failures recorded per SKU, each arch's pool released when its SKUs are done."""
    from baracuda_dsl.jit import compiler, prebuild as pb

    lock = threading.Lock()
    state = {"inflight": 0, "peak": 0, "calls": []}
    released = []
    pool = cf.ThreadPoolExecutor(8)

    def fake_compile(name, knobs, arch):
        with lock:
            state["inflight"] += 1
            state["peak"] = max(state["peak"], state["inflight"])
        time.sleep(0.02)
        with lock:
            state["inflight"] -= 1
        if dict(knobs)["dtype"] == "f16" and arch is ArchSku.SM89:
            raise RuntimeError("boom\nsecond line")
        return b"\x7fELFfake-" + arch.value.encode(), {"entry": "k", "params": [],
                                                       "threads": 128, "smem_bytes": 0,
                                                       "compile_seconds": 0.25}

    def fake_submit(template, knobs, arch, jobs):
        state["calls"].append((template.name, knobs, arch, jobs))
        return pool.submit(fake_compile, template.name, knobs, arch)

    monkeypatch.setattr(compiler, "submit", fake_submit)
    monkeypatch.setattr(compiler, "shutdown",
                        lambda arch=None, wait=True: released.append(arch))
    monkeypatch.setattr("baracuda_dsl.jit.cache.installed_dsl_version", lambda: "9.9.9")
    cache = KernelCache(str(tmp_path))
    with selftest_templates():
        t = get_template("selftest_scale")
        cache.put(t, t.skus()[0], "sm80", b"cached", {"entry": "k", "threads": 128,
                                                      "smem_bytes": 0})
        arches = list(ArchSku)
        tally = pb.prebuild(all_templates(["selftest"]), arches, 2, cache)
    pool.shutdown()
    assert state["peak"] <= 2
    assert len(state["calls"]) == 5  # 6 SKUs, one cached
    assert {c[3] for c in state["calls"]} == {2}
    assert (tally[("selftest", "sm80")].compiled, tally[("selftest", "sm80")].cached) == (1, 1)
    s89 = tally[("selftest", "sm89")]
    assert (s89.compiled, s89.failed) == (1, 1)
    assert s89.errors == ["selftest_scale(dtype=f16,threads=64) @sm89: RuntimeError: boom"]
    assert tally[("selftest", "sm90a")].compiled == 2
    assert tally[("selftest", "sm90a")].seconds == pytest.approx(0.5)
    assert [a for a in released if a is not None] == arches  # each arch freed when done
    assert cache.count() == {"sm80": 2, "sm89": 1, "sm90a": 2}


def test_error_line_strips_compiler_prefix():
    from baracuda_dsl.errors import CompileError
    from baracuda_dsl.jit.prebuild import error_line

    t = plain_template(name="tmpl")
    e = CompileError("tmpl((('dtype', 'f32'), ('vec', 8))) for sm80: DSLRuntimeError: bad op\n"
                     "Traceback (most recent call last):\n  ...")
    assert error_line(t, e) == "DSLRuntimeError: bad op"
    e2 = CompileError("tmpl((('dtype', 'f32'),)): ABI mismatch for param n")
    assert error_line(t, e2) == "ABI mismatch for param n"
    assert error_line(t, OSError("disk full")) == "OSError: disk full"
    assert len(error_line(t, ValueError("x" * 1000))) == 300


# ----------------------------------------------------------------------------- info
def test_info_without_gpu_reports_everything(tmp_path, monkeypatch):
    from baracuda_dsl._version import __version__

    monkeypatch.setattr("baracuda_dsl.jit.cache.installed_dsl_version", lambda: "9.9.9")
    cache = KernelCache(str(tmp_path))
    t = plain_template()
    for arch in ("sm80", "sm80", "sm89"):
        k = t.skus()[0] if arch == "sm89" or not cache.count() else t.skus()[1]
        cache.put(t, k, arch, b"x", {"entry": "k", "threads": 128, "smem_bytes": 0})
    assert cache.count() == {"sm80": 2, "sm89": 1}
    r = cli("info", "--cache-dir", str(tmp_path), BARACUDA_DSL_JIT="0")
    assert r.returncode == 0, r.stderr
    lines = dict((ln[:18].strip(), ln[18:]) for ln in r.stdout.splitlines())
    assert lines["baracuda-dsl"] == __version__
    assert lines["CuTe DSL"] == (installed_dsl_version() or
                                 "not installed (runs cached kernels only)")
    assert lines["cuda-core"] and lines["cuda-bindings"]
    assert lines["cache"] == str(tmp_path)
    # the test template is not visible to the CLI subprocess: its entries are not usable here
    assert lines["cached sm80"].startswith("0 current (of ")
    assert "2 unknown" in lines["cached sm80"] and "1 unknown" in lines["cached sm89"]
    assert lines["cached sm90a"].startswith("0 current") and "usable" not in lines["cached sm90a"]
    assert lines["JIT on cache miss"].startswith("disabled")
    from baracuda_dsl.runtime import has_gpu

    if not has_gpu():
        assert lines["GPUs"].startswith("none visible")
    r2 = cli("info", BARACUDA_DSL_CACHE_DIR=str(tmp_path / "nothing"))
    assert r2.returncode == 0
    assert f"{tmp_path / 'nothing'} (empty, not created yet)" in r2.stdout
    jit = "enabled" if installed_dsl_version() else "impossible here (no CuTe DSL)"
    assert f"JIT on cache miss {jit}" in r2.stdout
