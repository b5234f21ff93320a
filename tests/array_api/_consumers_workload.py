"""Run by test_array_api_consumers_gpu.py in a fresh interpreter (SCIPY_ARRAY_API=1 must be set
before SciPy / scikit-learn are imported): scikit-learn and SciPy functions that need the linalg
extension, each on an ``array_api`` array and on the same data in NumPy (float64), compared.
Prints one JSON line: {name: [ok, max relative difference or the error]}."""

import json
import os
import sys

os.environ["SCIPY_ARRAY_API"] = "1"

import numpy as np  # noqa: E402


def _np(x):
    return np.asarray(x.to_numpy()) if hasattr(x, "to_numpy") else np.asarray(x)


def _rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def main():
    import sklearn
    import scipy
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.linear_model import Ridge
    from sklearn.utils.extmath import randomized_svd

    import array_api as xp

    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 12)) @ rng.standard_normal((12, 12))
    y = (X[:, 0] + 0.1 * rng.standard_normal(400) > 0).astype(np.int64)
    t = X @ rng.standard_normal(12) + 0.01 * rng.standard_normal(400)
    Xd, yd, td = xp.asarray(X), xp.asarray(y), xp.asarray(t)
    out = {}

    def case(name, fn, tol=1e-8):
        try:
            with sklearn.config_context(array_api_dispatch=True):
                got = fn(Xd, yd, td)
            ref = fn(X, y, t)
            err = max(_rel(_np(g), r) for g, r in zip(got, ref))
            out[name] = [err <= tol, err]
        except Exception as e:  # noqa: BLE001 - reported, the test fails on it
            out[name] = [False, f"{type(e).__name__}: {e}"[:300]]

    def pca(solver):
        def fn(a, _y, _t):
            p = PCA(n_components=5, svd_solver=solver).fit(a)
            return [p.explained_variance_, np.abs(_np(p.transform(a))[:, :2])]
        return fn

    case("PCA(full)", pca("full"))
    case("PCA(covariance_eigh)", pca("covariance_eigh"))
    case("LinearDiscriminantAnalysis(svd)",
         lambda a, b, _t: [LinearDiscriminantAnalysis(solver="svd").fit(a, b).predict_proba(a)],
         tol=1e-6)
    case("Ridge(svd)", lambda a, _y, c: [Ridge(alpha=1.0, solver="svd").fit(a, c).coef_])
    case("randomized_svd", lambda a, _y, _t: [randomized_svd(a, 4, random_state=0)[1]], tol=1e-6)

    def vnorm(a, _y, _t):
        nspace = xp if hasattr(a, "to_numpy") else np
        return [nspace.linalg.vector_norm(a, axis=0) if nspace is xp
                else np.linalg.norm(a, axis=0)]
    case("linalg.vector_norm", vnorm)
    import scipy.linalg as sla

    def chol(a, _y, _t):
        g = a.T @ a
        return [xp.linalg.cholesky(g) if hasattr(a, "to_numpy") else sla.cholesky(g, lower=True)]
    case("cholesky vs scipy.linalg", chol)
    out["_versions"] = [True, f"sklearn {sklearn.__version__}, scipy {scipy.__version__}"]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
