"""examples/sklearn_array_api.py and examples/scipy_array_api.py on the GPU (``--xp
array_api``), small sizes: scikit-learn's and SciPy's array-API dispatch computes with
``import array_api as xp`` arrays and every result passes the example's own check against the
float64 numpy reference (per-result bounds that follow float32; predicted labels).  Each example
runs in a child process, so ``SCIPY_ARRAY_API=1`` is in place before SciPy is imported."""

import os
import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run_example(name: str, *args: str, timeout: int = 900) -> str:
    """stdout of ``python examples/<name>.py --xp array_api *args``; fails on a non-zero exit
    status or a missing "OK:" line (an example that found no GPU prints none)."""
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / f"{name}.py"), "--xp",
                           "array_api", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=timeout)
    assert proc.returncode == 0, f"{name} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    assert "\nOK: " in proc.stdout, proc.stdout
    return proc.stdout


@pytest.mark.parametrize("solver", ["covariance_eigh", "full"])
def test_sklearn_pipeline_on_array_api(solver):
    pytest.importorskip("sklearn")
    pytest.importorskip("scipy")
    out = run_example("sklearn_array_api", "--rows", "20000", "--features", "64",
                      "--components", "16", "--pca-solver", solver, "--repeats", "1")
    for stage in ("StandardScaler", f"PCA ({solver})", "LDA fit+predict", "Ridge fit+predict"):
        assert f"| {stage} |" in out


def test_scipy_calls_on_array_api():
    pytest.importorskip("scipy")
    out = run_example("scipy_array_api", "--rows", "20000", "--cols", "256", "--repeats", "1")
    for call in ("special.logsumexp", "stats.kurtosis", "fft.rfft", "cluster.vq.whiten"):
        assert f"| {call} |" in out
