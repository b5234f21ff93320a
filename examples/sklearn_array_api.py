"""scikit-learn on GPU arrays: a StandardScaler → PCA → LinearDiscriminantAnalysis / Ridge
pipeline run by scikit-learn's array-API dispatch on ``import array_api as xp`` arrays, checked
against the same pipeline on numpy and timed next to it.

The data is synthetic (``--rows`` × ``--features`` float32, default 200000 × 64): four classes
whose means differ in a few directions, plus correlated noise with a decaying spectrum (so the
principal components are well separated), and a continuous target for the regression.  The
pipeline, with ``sklearn.config_context(array_api_dispatch=True)`` (SciPy's array-API support,
``SCIPY_ARRAY_API=1``, is switched on by this script before SciPy is imported):

1. ``StandardScaler().fit(X).transform(X)``;
2. ``PCA(--components, svd_solver=--pca-solver).fit(Xs).transform(Xs)`` (``covariance_eigh``:
   an ``xp.linalg.eigh`` of the features × features covariance; ``full``: an
   ``xp.linalg.svd`` of the whole data matrix);
3. ``LinearDiscriminantAnalysis(solver="svd")`` fit on the components, then ``predict`` and
   ``predict_proba``;
4. ``Ridge(solver="svd")`` fit on the components, then ``predict``.

Every fitted attribute and prediction is compared with the same pipeline run by numpy in float64
(the reference): the largest absolute difference and that difference relative to the largest
reference magnitude are printed for the namespace under test and for numpy in float32 (what
float32 itself costs), and the namespace's relative difference must stay within a multiple of
float32's epsilon (``TOLERANCE``); predicted labels may differ on at most 2 rows or a fraction
``LABEL_SLACK`` of them (points on a decision boundary may go either way in float32).
Principal components are defined up to sign, so components / projections / Ridge coefficients
are compared after aligning each component's sign with the reference (scikit-learn's
``svd_flip`` makes them agree already; the alignment only keeps a tie from failing the check).

Timing: wall-clock milliseconds of each stage, median of ``--repeats`` runs after one warm-up,
each stage ending with a device synchronisation (``baracuda_dsl.runtime.stream.synchronize``
for ``array_api``), so a number covers host dispatch and device work; numpy runs the same
pipeline in float32 on the CPU.

``--xp array_api_strict`` runs the same code on the array API's strict CPU reference namespace:
a dry run that shows the scikit-learn calls stay inside the standard (no GPU needed).

Run (GPU host, repo root):
    source .gpu/host-env.sh && python3 examples/sklearn_array_api.py
    python3 examples/sklearn_array_api.py --xp array_api_strict --rows 20000   # anywhere
With ``--xp array_api`` and no CUDA GPU it prints a note and exits 0.  Exit status 1 when a
check fails.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # before scipy (imported by sklearn) loads

EPS32 = float(np.finfo(np.float32).eps)
#: allowed |got - ref| / max|ref|, in float32 epsilons, per result (see the module docstring)
TOLERANCE = {"scaler": 64, "pca": 4096, "lda": 8192, "ridge": 4096}
#: fraction of rows whose predicted label may differ from the float64 reference (2 rows always may)
LABEL_SLACK = 1e-3
NAMESPACES = ("array_api", "array_api_strict")


def make_data(rows: int, features: int, classes: int = 4, seed: int = 0):
    """(X float32 rows × features, y int64 labels, t float32 regression target), numpy."""
    rng = np.random.default_rng(seed)
    k = min(6, features)                                      # the same model at every size
    means = np.zeros((classes, features))
    means[:, :k] = 1.5 * rng.standard_normal((classes, k))
    q, _ = np.linalg.qr(rng.standard_normal((features, features)))
    spectrum = 2.0 * 0.9 ** np.arange(features)               # well-separated components
    w = rng.standard_normal(features) / np.sqrt(features)
    y = rng.integers(0, classes, rows).astype(np.int64)
    noise = (rng.standard_normal((rows, features)) * spectrum) @ q.T
    x = (means[y] + noise + 3.0).astype(np.float32)           # offset: the scaler has work
    t = (x.astype(np.float64) @ w + 0.1 * rng.standard_normal(rows)).astype(np.float32)
    return x, y, t


def load_namespace(name: str):
    """(namespace module, to-numpy function, synchronise function) for ``--xp name``."""
    if name == "array_api":
        import array_api as xp
        from baracuda_dsl.runtime.stream import synchronize

        return xp, lambda a: np.asarray(a.to_numpy()), synchronize
    if name == "array_api_strict":
        import warnings

        import array_api_strict as xp

        # scikit-learn's incremental variance divides 0 / 0 on purpose (numpy hides the warning
        # with errstate, which the array API has no equivalent of) and masks the result
        warnings.filterwarnings("ignore", "invalid value encountered in divide", RuntimeWarning,
                                module="array_api_strict")
        return xp, np.from_dlpack, lambda: None
    raise ValueError(f"unknown namespace {name!r} (expected one of {', '.join(NAMESPACES)})")


def pipeline(x, y, t, *, components: int, pca_solver: str, sync, times: dict | None = None):
    """Run the four stages on ``x, y, t`` (arrays of any namespace scikit-learn accepts) and
    return the results by name; with ``times``, append each stage's wall ms to
    ``times[stage]`` (``sync`` is called at the end of each stage)."""
    import sklearn
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.linear_model import Ridge
    from sklearn.preprocessing import StandardScaler

    out = {}
    clock = [time.perf_counter()]

    def stage(name):
        sync()
        now = time.perf_counter()
        if times is not None:
            times.setdefault(name, []).append((now - clock[0]) * 1e3)
        clock[0] = now

    with sklearn.config_context(array_api_dispatch=True):
        scaler = StandardScaler().fit(x)
        xs = scaler.transform(x)
        out.update(scaler_mean=scaler.mean_, scaler_scale=scaler.scale_, scaler_output=xs)
        stage("StandardScaler")
        pca = PCA(components, svd_solver=pca_solver).fit(xs)
        z = pca.transform(xs)
        out.update(pca_variance=pca.explained_variance_, pca_components=pca.components_,
                   pca_projection=z)
        stage(f"PCA ({pca_solver})")
        lda = LinearDiscriminantAnalysis(solver="svd").fit(z, y)
        out.update(lda_labels=lda.predict(z), lda_proba=lda.predict_proba(z),
                   lda_decision=lda.decision_function(z))
        stage("LDA fit+predict")
        ridge = Ridge(alpha=1.0, solver="svd").fit(z, t)
        out.update(ridge_coef=ridge.coef_, ridge_intercept=ridge.intercept_,
                   ridge_prediction=ridge.predict(z))
        stage("Ridge fit+predict")
    return out


def _signs(components: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """±1 per principal component that aligns ``components`` (k × d) with ``ref``."""
    s = np.sign(np.sum(components * ref, axis=1))
    return np.where(s == 0, 1.0, s)


def _aligned(res: dict) -> dict:
    """Host float64 copies of ``res`` (already numpy), principal-component signs left as is."""
    return {k: np.asarray(v, dtype=np.float64) if np.asarray(v).dtype.kind == "f" else
            np.asarray(v) for k, v in res.items()}


def differences(res: dict, ref: dict) -> dict:
    """name -> (max abs diff, max abs diff / max |ref|) of ``res`` against ``ref`` (numpy dicts;
    labels: (rows that differ, their fraction)), after aligning component signs."""
    res, ref = _aligned(res), _aligned(ref)
    s = _signs(res["pca_components"], ref["pca_components"])
    res["pca_components"] = res["pca_components"] * s[:, None]
    res["pca_projection"] = res["pca_projection"] * s
    res["ridge_coef"] = res["ridge_coef"] * s
    out = {}
    for k, r in ref.items():
        g = res[k]
        if g.shape != r.shape:
            raise AssertionError(f"{k}: shape {g.shape} != reference {r.shape}")
        if k == "lda_labels":
            bad = int(np.count_nonzero(g != r))
            out[k] = (bad, bad / max(r.size, 1))
            continue
        d = float(np.max(np.abs(g - r))) if r.size else 0.0
        out[k] = (d, d / max(float(np.max(np.abs(r))) if r.size else 0.0, 1e-300))
    return out


def _limit(key: str) -> float:
    return LABEL_SLACK if key == "lda_labels" else TOLERANCE[key.split("_")[0]] * EPS32


def run(xp_name: str = "array_api", rows: int = 200_000, features: int = 64,
        components: int = 16, pca_solver: str = "covariance_eigh", repeats: int = 5,
        seed: int = 0) -> dict:
    """The whole example: returns ``{"diffs": {name: (ours, numpy32)}, "failures": [...],
    "times": {stage: (numpy32 ms, ours ms)}}`` (``failures`` empty when every check passes)."""
    xp, to_numpy, sync = load_namespace(xp_name)
    x, y, t = make_data(rows, features, seed=seed)
    kw = dict(components=components, pca_solver=pca_solver)

    ref = pipeline(x.astype(np.float64), y, t.astype(np.float64), sync=lambda: None, **kw)
    xd, yd, td = xp.asarray(x), xp.asarray(y), xp.asarray(t)
    sync()
    got = {k: to_numpy(v) for k, v in pipeline(xd, yd, td, sync=sync, **kw).items()}
    host = pipeline(x, y, t, sync=lambda: None, **kw)
    for k, v in got.items():
        if np.asarray(v).dtype != np.asarray(host[k]).dtype:
            raise AssertionError(f"{k}: dtype {np.asarray(v).dtype} on {xp_name}, "
                                 f"{np.asarray(host[k]).dtype} on numpy")
    ours, np32 = differences(got, ref), differences(host, ref)
    failures = [f"{k}: {ours[k][1]:.2e} > {_limit(k):.2e}" for k in ref
                if not (ours[k][1] <= _limit(k) or k == "lda_labels" and ours[k][0] <= 2)]

    times_ours, times_np = {}, {}
    for _ in range(repeats + 1):                               # the first run is the warm-up
        pipeline(x, y, t, sync=lambda: None, times=times_np, **kw)
        pipeline(xd, yd, td, sync=sync, times=times_ours, **kw)
    times = {k: (statistics.median(times_np[k][1:]), statistics.median(times_ours[k][1:]))
             for k in times_ours}
    times["total"] = tuple(sum(v[i] for v in times.values()) for i in (0, 1))
    return {"diffs": {k: (ours[k], np32[k]) for k in ref}, "failures": failures,
            "times": times}


def report(result: dict, xp_name: str) -> str:
    """The two markdown tables (accuracy, timing) of a :func:`run` result."""
    lines = [f"| result | {xp_name} max abs | {xp_name} rel | numpy f32 rel | limit |",
             "|---|---:|---:|---:|---:|"]
    for k, ((a, r), (_a32, r32)) in result["diffs"].items():
        if k == "lda_labels":
            lines.append(f"| {k} (rows differing) | {a} | {r:.1e} | {r32:.1e} | "
                         f"{LABEL_SLACK:.0e} |")
        else:
            lines.append(f"| {k} | {a:.2e} | {r:.2e} | {r32:.2e} | {_limit(k):.1e} |")
    lines += ["", f"| stage | numpy f32 ms | {xp_name} ms | speed-up |", "|---|---:|---:|---:|"]
    for k, (tn, to) in result["times"].items():
        lines.append(f"| {k} | {tn:.2f} | {to:.2f} | {tn / to if to else float('nan'):.2f}x |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xp", default="array_api", choices=NAMESPACES,
                    help="the array namespace scikit-learn computes with")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=64)
    ap.add_argument("--components", type=int, default=16, help="PCA components kept")
    ap.add_argument("--pca-solver", default="covariance_eigh", choices=("covariance_eigh", "full"))
    ap.add_argument("--repeats", type=int, default=5, help="timed runs per stage (median)")
    ns = ap.parse_args(argv)
    if ns.repeats < 1 or ns.rows < 8 or not 2 <= ns.components <= ns.features:
        ap.error("need --repeats >= 1, --rows >= 8 and 2 <= --components <= --features")
    if ns.xp == "array_api":
        from baracuda_dsl.runtime import has_gpu

        if not has_gpu():
            print("no CUDA GPU visible: nothing to run (try --xp array_api_strict for a CPU dry "
                  "run of the same scikit-learn calls)")
            return 0
    import sklearn

    print(f"scikit-learn {sklearn.__version__}, numpy {np.__version__}, {ns.xp}; "
          f"{ns.rows} x {ns.features} float32, PCA({ns.components}, {ns.pca_solver}); "
          f"wall ms: median of {ns.repeats} after 1 warm-up, synchronised\n")
    result = run(ns.xp, ns.rows, ns.features, ns.components, ns.pca_solver, ns.repeats)
    print(report(result, ns.xp))
    if result["failures"]:
        print("\nMISMATCH: " + "; ".join(result["failures"]))
        return 1
    print("\nOK: every result within its float32 tolerance of the float64 reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
