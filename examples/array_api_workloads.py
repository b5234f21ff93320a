"""Realistic scikit-learn and SciPy workloads through the array API standard, timed on three
namespaces in the same process: ours (``import array_api as xp``), torch and CuPy.

Each workload (StandardScaler / MinMaxScaler / Normalizer ``fit_transform``, pairwise
``euclidean_distances`` and ``rbf_kernel``, ``LabelBinarizer``, ``scipy.special.logsumexp`` and
``softmax`` along axis 1) gets the same input on every namespace (float32; int64 labels for
LabelBinarizer), made once from one numpy array outside the timed region.  scikit-learn runs with
``array_api_dispatch=True`` and SciPy with ``SCIPY_ARRAY_API=1``, so the library computes with
the namespace of its input (torch / CuPy through the library's own array-api-compat wrapping).
Each result is checked once against the same call on the numpy/float64 copy of the input (rtol
1e-4, atol 1e-4 × max|ref|); a mismatch is reported as "WRONG (...)" instead of a time.
Timing: 3 warm-up calls, then the median of ``--repeats`` wall-clock runs, each ending with a
device synchronize (so a number is the whole call: host dispatch and device work).  A workload
that raises on a namespace is reported as "error: <type: message>"; a namespace that is not
installed (or has no GPU support) as "n/a".

Run (GPU host, repo root; the script sets SCIPY_ARRAY_API=1 itself when unset):
    SCIPY_ARRAY_API=1 python3 examples/array_api_workloads.py --out /tmp/x
Without a CUDA GPU it prints a note and exits 0.
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import time
from typing import Callable, NamedTuple

import numpy as np

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # must be set before scipy / sklearn are imported

RTOL = 1e-4
WARMUP = 3


# --- workloads: name -> (make, {size: inputs}); make() imports the library and returns the
# --- function under test, inputs(rng) returns its numpy arguments

def _lib(module: str, attr: str, wrap=None):
    """make() for ``module.attr`` (scikit-learn gets ``array_api_dispatch=True``), passed through
    ``wrap`` when given."""
    def make():
        if module.startswith("sklearn"):
            importlib.import_module("sklearn").set_config(array_api_dispatch=True)
        obj = getattr(importlib.import_module(module), attr)
        return wrap(obj) if wrap else obj
    return make


def _fit_transform(cls):
    return lambda X: cls().fit_transform(X)


def _axis1(fn):
    return lambda X: fn(X, axis=1)


def _floats(*shapes):
    return lambda rng: [rng.standard_normal(s).astype(np.float32) for s in shapes]


def _labels(n: int, classes: int = 10):
    return lambda rng: [rng.integers(0, classes, n).astype(np.int64)]


ROWS = {"small": _floats((2000, 50)), "medium": _floats((100000, 256))}
PAIRS = {"small": _floats((2000, 64), (500, 64)), "medium": _floats((20000, 256), (2000, 256))}

PRE, PAIRWISE = "sklearn.preprocessing", "sklearn.metrics.pairwise"
WORKLOADS = {
    "StandardScaler": (_lib(PRE, "StandardScaler", _fit_transform), ROWS),
    "MinMaxScaler": (_lib(PRE, "MinMaxScaler", _fit_transform), ROWS),
    "Normalizer": (_lib(PRE, "Normalizer", _fit_transform), ROWS),
    "euclidean_distances": (_lib(PAIRWISE, "euclidean_distances"), PAIRS),
    "rbf_kernel": (_lib(PAIRWISE, "rbf_kernel"), PAIRS),
    "LabelBinarizer": (_lib(PRE, "LabelBinarizer", _fit_transform),
                       {"small": _labels(2000), "medium": _labels(100000)}),
    "logsumexp": (_lib("scipy.special", "logsumexp", _axis1), ROWS),
    "softmax": (_lib("scipy.special", "softmax", _axis1), ROWS),
}


# --- namespaces

class Namespace(NamedTuple):
    asarray: Callable  # numpy array -> this namespace's device array
    sync: Callable     # wait for all device work


def namespaces() -> dict:
    """name -> Namespace, or None where the library (or its GPU support) is missing."""
    out = {"ours": None, "torch": None, "cupy": None}
    try:
        import array_api as xp
        from baracuda_dsl.runtime.stream import synchronize

        out["ours"] = Namespace(xp.asarray, synchronize)
    except Exception as e:  # noqa: BLE001 - reported as n/a
        print(f"ours unavailable: {e}", file=sys.stderr)
    try:
        import torch

        if torch.cuda.is_available():
            out["torch"] = Namespace(lambda h: torch.as_tensor(h, device="cuda"),
                                     torch.cuda.synchronize)
    except Exception as e:  # noqa: BLE001
        print(f"torch unavailable: {e}", file=sys.stderr)
    try:
        import cupy

        out["cupy"] = Namespace(cupy.asarray, lambda: cupy.cuda.Device().synchronize())
    except Exception as e:  # noqa: BLE001
        print(f"cupy unavailable: {e}", file=sys.stderr)
    return out


def to_numpy(a) -> np.ndarray:
    """Host copy of a result from any of the namespaces (or numpy)."""
    if hasattr(a, "to_numpy"):       # ours
        return np.asarray(a.to_numpy())
    if hasattr(a, "get"):            # cupy
        return a.get()
    if hasattr(a, "detach"):         # torch
        return a.detach().cpu().numpy()
    return np.asarray(a)


# --- measuring

def _error(e: BaseException) -> str:
    return "error: " + f"{type(e).__name__}: {str(e)[:60]}".replace("\n", " ")


def mismatch(got: np.ndarray, ref: np.ndarray):
    """None when ``got`` matches ``ref`` to float32 accuracy, else a short reason."""
    if got.shape != ref.shape:
        return f"shape {got.shape} != {ref.shape}"
    got, ref = got.astype(np.float64), ref.astype(np.float64)
    atol = RTOL * (float(np.nanmax(np.abs(ref))) if ref.size else 0.0)
    if np.allclose(got, ref, rtol=RTOL, atol=atol, equal_nan=True):
        return None
    err = np.abs(got - ref) / (np.abs(ref) + atol + 1e-300)
    return f"max rel err {np.nanmax(err):.1e}"


def measure(fn: Callable, args: list, sync: Callable, ref: np.ndarray, repeats: int):
    """Median wall ms of ``fn(*args)`` + sync, or "WRONG (...)" if the first result is off."""
    bad = mismatch(to_numpy(fn(*args)), ref)
    if bad:
        return f"WRONG ({bad})"
    for _ in range(WARMUP):
        fn(*args)
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(*args)
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def run_workload(name: str, size: str, spaces: dict, repeats: int) -> dict:
    make, sizes = WORKLOADS[name]
    host = sizes[size](np.random.default_rng(0))
    row = dict(workload=name, size=" vs ".join("x".join(map(str, a.shape)) for a in host))
    try:
        fn = make()
        ref = to_numpy(fn(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in host]))
    except Exception as e:  # noqa: BLE001 - the numpy reference failed: every column says so
        return {**row, **{k: (_error(e) if ns else "n/a") for k, ns in spaces.items()}}
    for key, ns in spaces.items():
        if ns is None:
            row[key] = "n/a"
            continue
        try:
            args = [ns.asarray(a) for a in host]
            ns.sync()
            row[key] = measure(fn, args, ns.sync, ref, repeats)
        except Exception as e:  # noqa: BLE001 - reported in the table, keep going
            row[key] = _error(e)
        args = None  # free this namespace's inputs before the next one allocates
    return row


# --- reporting

def table(rows: list) -> str:
    def cell(v) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v).replace("|", "\\|")

    lines = ["| workload | size | ours ms | torch ms | cupy ms | ours/torch |",
             "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        ours, torch_ms = r["ours"], r["torch"]
        ratio = f"{ours / torch_ms:.2f}" if isinstance(ours, float) and isinstance(
            torch_ms, float) else "—"
        lines.append("| " + " | ".join(cell(r[k]) for k in (
            "workload", "size", "ours", "torch", "cupy")) + f" | {ratio} |")
    return "\n".join(lines)


def versions() -> str:
    out = []
    for mod in ("numpy", "sklearn", "scipy", "torch", "cupy"):
        try:
            out.append(f"{mod} {__import__(mod).__version__}")
        except Exception:  # noqa: BLE001
            out.append(f"{mod} n/a")
    return ", ".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="directory for workloads.md")
    ap.add_argument("--sizes", default="small,medium", help="comma list of: small, medium")
    ap.add_argument("--only", default=None, help="comma list of: " + ", ".join(WORKLOADS))
    ap.add_argument("--repeats", type=int, default=7, help="timed runs per cell (median)")
    ns = ap.parse_args(argv)
    sizes = [s.strip() for s in ns.sizes.split(",") if s.strip()]
    if not sizes or set(sizes) - {"small", "medium"}:
        ap.error(f"--sizes: expected a comma list of small, medium (got {ns.sizes!r})")
    names = [w.strip() for w in ns.only.split(",") if w.strip()] if ns.only else list(WORKLOADS)
    if not names or set(names) - set(WORKLOADS):
        ap.error(f"--only: expected names among {', '.join(WORKLOADS)} (got {ns.only!r})")
    if ns.repeats < 1:
        ap.error("--repeats must be >= 1")

    from baracuda_dsl.runtime import has_gpu  # False without a driver or a device

    if not has_gpu():
        print("no CUDA GPU visible: nothing to measure (run this on a GPU host)")
        return 0

    spaces = namespaces()
    rows = []
    for name in names:
        for size in sizes:
            rows.append(run_workload(name, size, spaces, ns.repeats))
            print(f"  done {name} {size}", file=sys.stderr, flush=True)
    md = (f"### array-API workloads: wall ms per call (median of {ns.repeats} after {WARMUP} "
          f"warm-up, synchronized), float32\n\n{versions()}\n\n{table(rows)}\n")
    print(md)
    if ns.out:
        os.makedirs(ns.out, exist_ok=True)
        path = os.path.join(ns.out, "workloads.md")
        with open(path, "w") as f:
            f.write(md)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
