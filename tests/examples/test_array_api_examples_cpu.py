"""examples/sklearn_array_api.py and examples/scipy_array_api.py on the array API's strict CPU
namespace (``--xp array_api_strict``), small sizes: every scikit-learn / SciPy call they make
stays inside the standard and every result passes the example's own float64 check.  Each example
runs in a child process, so ``SCIPY_ARRAY_API=1`` is in place before SciPy is imported (another
test of the same session may have imported SciPy without it).  Skips without scikit-learn /
SciPy / array-api-strict (not dependencies of the project)."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run_example(name: str, *args: str, timeout: int = 600) -> str:
    """stdout of ``python examples/<name>.py *args`` (SCIPY_ARRAY_API=1); fails on a non-zero
    exit status or a missing "OK:" line."""
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / f"{name}.py"), *args],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)
    assert proc.returncode == 0, f"{name} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    assert "\nOK: " in proc.stdout, proc.stdout
    return proc.stdout


@pytest.fixture(autouse=True)
def _libraries():
    pytest.importorskip("array_api_strict")
    pytest.importorskip("scipy")


@pytest.mark.parametrize("solver", ["covariance_eigh", "full"])
def test_sklearn_example_on_array_api_strict(solver):
    pytest.importorskip("sklearn")
    out = run_example("sklearn_array_api", "--xp", "array_api_strict", "--rows", "3000",
                      "--features", "24", "--components", "8", "--pca-solver", solver,
                      "--repeats", "1")
    for stage in ("StandardScaler", f"PCA ({solver})", "LDA fit+predict", "Ridge fit+predict",
                  "total"):
        assert f"| {stage} |" in out


def test_scipy_example_on_array_api_strict():
    out = run_example("scipy_array_api", "--xp", "array_api_strict", "--rows", "2000",
                      "--cols", "64", "--repeats", "1")
    for call in ("special.logsumexp", "stats.skew", "fft.irfft(rfft)", "cluster.vq.whiten"):
        assert f"| {call} |" in out


def test_a_failed_check_exits_1_and_no_gpu_exits_0():
    """A check that fails makes main() return 1 (here: a tolerance nothing can meet); without a
    GPU ``--xp array_api`` prints a note and returns 0 (the examples' house style)."""
    code = (
        "import importlib.util, sys\n"
        "spec = importlib.util.spec_from_file_location('ex', 'examples/scipy_array_api.py')\n"
        "ex = importlib.util.module_from_spec(spec); spec.loader.exec_module(ex)\n"
        "from baracuda_dsl.runtime import has_gpu\n"
        "assert has_gpu() or ex.main(['--rows', '8']) == 0\n"
        "ex.TOLERANCE = -1.0\n"
        "sys.exit(ex.main(['--xp', 'array_api_strict', '--rows', '16', '--cols', '8',\n"
        "                  '--repeats', '1', '--only', 'special.softmax']))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, SCIPY_ARRAY_API="1"), cwd=ROOT, timeout=300)
    assert proc.returncode == 1, f"{proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    assert "MISMATCH: special.softmax" in proc.stdout, proc.stdout
