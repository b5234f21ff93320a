"""The compiler worker (``python -m baracuda_dsl.jit.worker``): a user's script without a
``__main__`` guard compiles on a cache miss, the worker imports nothing the script had loaded,
the first compile is announced once on the ``baracuda_dsl`` logger, a worker that dies fails one
compile with its stderr quoted and the next compile starts a fresh one."""

import os
import subprocess
import sys
import textwrap

import pytest

from baracuda_dsl.jit import KernelCache
from baracuda_dsl.jit.worker import read_frame, write_frame

from _selftest_support import selftest_templates, subprocess_env

needs_dsl = pytest.mark.skipif(
    __import__("importlib").util.find_spec("cutlass") is None,
    reason="CuTe DSL not installed here (a deployed host runs cached kernels only)")

#: an unguarded script, as a README snippet, ``python - <<EOF`` or a notebook cell runs it: it
#: loads a (fake) torch first, then triggers one compile through the public JIT entry
SCRIPT = textwrap.dedent("""
    import torch                                  # the user's framework, loaded first
    import baracuda_dsl as bd
    from baracuda_dsl.jit import artifact
    from baracuda_dsl.ops import get_template
    from baracuda_dsl.vocabulary import ArchSku

    t = get_template("selftest_scale")
    for k in t.skus():
        art = artifact(t, k, ArchSku.SM90A)
        assert art.cubin[:4] == b"\\x7fELF", art.cubin[:4]
    print("compiled", len(t.skus()))
""")


@needs_dsl
def test_unguarded_script_compiles_without_reimporting_it(tmp_path):
    fake = tmp_path / "fake_site"
    fake.mkdir()
    marker = tmp_path / "torch-imports"
    (fake / "torch.py").write_text(f"open({str(marker)!r}, 'a').write('imported\\n')\n")
    env = subprocess_env(BARACUDA_DSL_CACHE_DIR=str(tmp_path / "cache"))
    env["PYTHONPATH"] = os.pathsep.join([str(fake), env["PYTHONPATH"]])
    r = subprocess.run([sys.executable, "-"], input=SCRIPT, capture_output=True, text=True,
                       cwd=tmp_path, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "compiled 2" in r.stdout
    assert "Traceback" not in r.stderr and "bootstrapping" not in r.stderr
    # the worker ran neither the script nor the user's torch import: one import, the script's
    assert marker.read_text().splitlines() == ["imported"]
    # the once-per-process notice, on stderr without any logging configuration
    assert r.stderr.count("compiling kernel selftest_scale for sm90a on first use") == 1
    assert "prebuild --arch native" in r.stderr
    assert KernelCache(str(tmp_path / "cache")).count() == {"sm90a": 2}


def test_frames_round_trip(tmp_path):
    path = tmp_path / "frames"
    with open(path, "wb") as f:
        write_frame(f, ("compile", "m", "t", (("a", 1),), "sm90a"))
        write_frame(f, ("exit",))
    with open(path, "rb") as f:
        assert read_frame(f) == ("compile", "m", "t", (("a", 1),), "sm90a")
        assert read_frame(f) == ("exit",)
        assert read_frame(f) is None


@needs_dsl
def test_dead_worker_fails_one_compile_and_is_replaced():
    from baracuda_dsl.errors import CompileError
    from baracuda_dsl.jit import compiler
    from baracuda_dsl.ops import get_template
    from baracuda_dsl.vocabulary import ArchSku

    with selftest_templates(("_selftest_templates", "_selftest_broken")):
        crash = get_template("selftest_crash")
        with pytest.raises(compiler.WorkerDied) as ei:
            compiler.compile_sku(crash, crash.skus()[0], ArchSku.SM80, timeout=300)
        msg = str(ei.value)
        assert "exited (status 3) while compiling" in msg
        assert "selftest_crash: exiting on purpose" in msg      # its stderr, quoted
        assert isinstance(ei.value, CompileError)
        ok = get_template("selftest_scale")
        cubin, meta = compiler.compile_sku(ok, ok.skus()[0], ArchSku.SM80, timeout=300)
        assert cubin[:4] == b"\x7fELF" and meta["ptx_target"] == "sm_80"


def test_worker_that_cannot_start_says_why(monkeypatch):
    """A worker that dies before its handshake: WorkerDied quoting its stderr."""
    from baracuda_dsl.jit import compiler
    from baracuda_dsl.vocabulary import ArchSku

    monkeypatch.setattr(compiler, "WORKER_MODULE", "baracuda_dsl_no_such_worker_module")
    pool = compiler.WorkerPool(ArchSku.SM80, 1)
    try:
        fut = pool.submit("nope", "nope", ())
        with pytest.raises(compiler.WorkerDied) as ei:
            fut.result(timeout=120)
    finally:
        pool.shutdown()
    assert "exited while starting" in str(ei.value)
    assert "No module named baracuda_dsl_no_such_worker_module" in str(ei.value)


def test_dump_folders_of_dead_workers_are_removed(tmp_path):
    """A worker killed before its exit handler leaves its dump folder; the next worker's
    ``prepare_environment`` removes folders whose pid is gone and keeps live and foreign ones."""
    from baracuda_dsl.jit.compile_one import DUMP_PREFIX, remove_stale_dumps

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = tmp_path / f"{DUMP_PREFIX}{dead}-abc"
    live = tmp_path / f"{DUMP_PREFIX}{os.getpid()}-def"
    other = tmp_path / f"{DUMP_PREFIX}legacy"
    for d in (stale, live, other):
        d.mkdir()
        (d / "k.ptx").write_text("x")
    assert remove_stale_dumps(str(tmp_path)) == 1
    assert not stale.exists() and live.exists() and other.exists()
