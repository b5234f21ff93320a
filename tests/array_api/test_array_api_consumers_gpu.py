"""Array-API consumers on this namespace (the issue-20 motivation): scikit-learn's PCA (full and
covariance_eigh solvers), LinearDiscriminantAnalysis, Ridge (svd: the solver scikit-learn
dispatches through the array API) and
``randomized_svd`` with ``array_api_dispatch=True``, plus ``vector_norm`` / ``cholesky`` against
NumPy / SciPy — each result compared with the same estimator on NumPy float64 data.  Runs in a
fresh interpreter (``_consumers_workload.py``) because SciPy reads ``SCIPY_ARRAY_API`` once, at
import."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu


def test_sklearn_and_scipy_consumers():
    pytest.importorskip("sklearn")      # on the GPU host a missing package fails (conftest)
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(os.path.dirname(here)),
                                                    env.get("PYTHONPATH", "")) if p)
    r = subprocess.run([sys.executable, os.path.join(here, "_consumers_workload.py")],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    bad = {k: v for k, v in res.items() if not v[0]}
    assert not bad, bad
