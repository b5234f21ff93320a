"""SciPy on GPU arrays: functions of ``scipy.special``, ``scipy.stats``, ``scipy.fft`` and
``scipy.cluster.vq`` that support the array API standard, called with ``import array_api as xp``
arrays (``SCIPY_ARRAY_API=1``, set by this script before SciPy is imported), checked against the
same calls on numpy and timed next to them.

The data is synthetic: ``--rows`` × ``--cols`` float32 (default 100000 × 256) drawn from gamma
distributions whose shape varies by column, so every statistic has something to measure (means
away from zero, real skew and excess kurtosis).  The calls (``CALLS``):

- ``scipy.special``: ``logsumexp``, ``softmax``, ``log_softmax`` along the rows (axis 1);
- ``scipy.stats``: ``zscore``, ``moment(order=3)``, ``skew``, ``kurtosis``, ``variation``
  down the columns (axis 0);
- ``scipy.fft``: ``rfft`` along the rows and the round trip ``irfft(rfft(x))`` (SciPy hands both
  to the namespace's ``fft`` extension, cuFFT here);
- ``scipy.cluster.vq.whiten`` (each column divided by its standard deviation).

Each result is compared with the same call on the float64 numpy copy of the data (the
reference): the largest absolute difference and that difference relative to the largest
reference magnitude are printed for the namespace under test and for numpy in float32 (what
float32 itself costs); the namespace's relative difference must stay within ``limit(call,
rows)`` (a multiple of float32's epsilon, see ``TOLERANCE``).  Timing: wall-clock milliseconds
per call, median of ``--repeats`` runs after one warm-up, each ending with a device
synchronisation (``baracuda_dsl.runtime.stream.synchronize`` for ``array_api``), against
numpy float32 on the CPU.

``--xp array_api_strict`` runs the same code on the array API's strict CPU reference namespace:
a dry run that shows the SciPy calls stay inside the standard (no GPU needed).

Run (GPU host, repo root):
    source .gpu/host-env.sh && python3 examples/scipy_array_api.py
    python3 examples/scipy_array_api.py --xp array_api_strict --rows 20000   # anywhere
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

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # must be set before scipy is imported

EPS32 = float(np.finfo(np.float32).eps)
#: allowed |got - ref| / max|ref|, in float32 epsilons: a call along the rows (axis 1, a few
#: hundred elements) gets ``TOLERANCE``; one down the columns (axis 0, a sum of ``rows`` terms,
#: centred powers for the moments) gets ``COLUMN_TOLERANCE * sqrt(rows)``, the typical growth
#: of a float32 sum's rounding error with its length
TOLERANCE = 256
COLUMN_TOLERANCE = 16
NAMESPACES = ("array_api", "array_api_strict")


def _special(name):
    def call(x):
        import scipy.special

        return getattr(scipy.special, name)(x, axis=1)
    return call


def _stats(name, **kw):
    def call(x):
        import scipy.stats

        return getattr(scipy.stats, name)(x, axis=0, **kw)
    return call


def _rfft(x):
    import scipy.fft

    return scipy.fft.rfft(x, axis=1)


def _fft_round_trip(x):
    import scipy.fft

    return scipy.fft.irfft(scipy.fft.rfft(x, axis=1), n=x.shape[1], axis=1)


def _whiten(x):
    import scipy.cluster.vq

    return scipy.cluster.vq.whiten(x)


#: calls that reduce down the columns (axis 0): their tolerance grows with ``--rows``
COLUMN_CALLS = ("stats.zscore", "stats.moment(3)", "stats.skew", "stats.kurtosis",
                "stats.variation", "cluster.vq.whiten")
#: name -> function of one (rows × cols) array
CALLS = {
    "special.logsumexp": _special("logsumexp"),
    "special.softmax": _special("softmax"),
    "special.log_softmax": _special("log_softmax"),
    "stats.zscore": _stats("zscore"),
    "stats.moment(3)": _stats("moment", order=3),
    "stats.skew": _stats("skew"),
    "stats.kurtosis": _stats("kurtosis"),
    "stats.variation": _stats("variation"),
    "fft.rfft": _rfft,
    "fft.irfft(rfft)": _fft_round_trip,
    "cluster.vq.whiten": _whiten,
}


def make_data(rows: int, cols: int, seed: int = 0) -> np.ndarray:
    """rows × cols float32: column j ~ Gamma(shape 1 + 4 j / cols, scale 1)."""
    rng = np.random.default_rng(seed)
    return rng.gamma(1.0 + 4.0 * np.arange(cols) / cols, 1.0, (rows, cols)).astype(np.float32)


def load_namespace(name: str):
    """(namespace module, to-numpy function, synchronise function) for ``--xp name``."""
    if name == "array_api":
        import array_api as xp
        from baracuda_dsl.runtime.stream import synchronize

        return xp, lambda a: np.asarray(a.to_numpy()), synchronize
    if name == "array_api_strict":
        import array_api_strict as xp

        return xp, np.from_dlpack, lambda: None
    raise ValueError(f"unknown namespace {name!r} (expected one of {', '.join(NAMESPACES)})")


def difference(got: np.ndarray, ref: np.ndarray):
    """(max |got - ref|, that / max |ref|) in float64 (complex: modulus of the difference)."""
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape:
        raise AssertionError(f"shape {got.shape} != reference {ref.shape}")
    kind = np.complex128 if ref.dtype.kind == "c" or got.dtype.kind == "c" else np.float64
    d = np.abs(got.astype(kind) - ref.astype(kind))
    if not np.all(np.isfinite(d)):
        return float("inf"), float("inf")
    a = float(np.max(d)) if d.size else 0.0
    return a, a / max(float(np.max(np.abs(ref))) if ref.size else 0.0, 1e-300)


def limit(name: str, rows: int) -> float:
    """The largest |got - ref| / max|ref| allowed for call ``name`` on ``rows`` rows."""
    if name in COLUMN_CALLS:
        return max(TOLERANCE, COLUMN_TOLERANCE * rows ** 0.5) * EPS32
    return TOLERANCE * EPS32


def _median_ms(fn, x, sync, repeats: int) -> float:
    fn(x)                                                      # warm-up
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(x)
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def run(xp_name: str = "array_api", rows: int = 100_000, cols: int = 256, repeats: int = 5,
        only=None, seed: int = 0) -> dict:
    """The whole example: ``{"rows": {call: dict(ours=(abs, rel), numpy32=(abs, rel),
    numpy_ms=, ours_ms=)}, "failures": [...]}`` (``failures`` empty when every check passes)."""
    xp, to_numpy, sync = load_namespace(xp_name)
    host = make_data(rows, cols, seed)
    host64 = host.astype(np.float64)
    dev = xp.asarray(host)
    sync()
    out, failures = {}, []
    for name in only or CALLS:
        fn = CALLS[name]
        ref = np.asarray(fn(host64))
        got, got32 = to_numpy(fn(dev)), np.asarray(fn(host))
        if got.dtype != got32.dtype:
            failures.append(f"{name}: dtype {got.dtype} on {xp_name}, {got32.dtype} on numpy")
        ours = difference(got, ref)
        if not ours[1] <= limit(name, rows):
            failures.append(f"{name}: {ours[1]:.2e} > {limit(name, rows):.2e}")
        out[name] = dict(ours=ours, numpy32=difference(got32, ref), limit=limit(name, rows),
                         numpy_ms=_median_ms(fn, host, lambda: None, repeats),
                         ours_ms=_median_ms(fn, dev, sync, repeats))
    return {"rows": out, "failures": failures}


def report(result: dict, xp_name: str) -> str:
    """A markdown table of a :func:`run` result."""
    lines = [f"| call | {xp_name} max abs | {xp_name} rel | numpy f32 rel | limit | "
             f"numpy f32 ms | {xp_name} ms | speed-up |", "|---" + "|---:" * 7 + "|"]
    for k, r in result["rows"].items():
        tn, to = r["numpy_ms"], r["ours_ms"]
        speed = tn / to if to else float("nan")
        lines.append(f"| {k} | {r['ours'][0]:.2e} | {r['ours'][1]:.2e} | {r['numpy32'][1]:.2e} "
                     f"| {r['limit']:.1e} | {tn:.2f} | {to:.2f} | {speed:.2f}x |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xp", default="array_api", choices=NAMESPACES,
                    help="the array namespace SciPy computes with")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--cols", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=5, help="timed runs per call (median)")
    ap.add_argument("--only", default=None, help="comma list of: " + ", ".join(CALLS))
    ns = ap.parse_args(argv)
    only = [c.strip() for c in ns.only.split(",") if c.strip()] if ns.only else None
    if only is not None and (not only or set(only) - set(CALLS)):
        ap.error(f"--only: expected names among {', '.join(CALLS)} (got {ns.only!r})")
    if ns.repeats < 1 or ns.rows < 4 or ns.cols < 2:
        ap.error("need --repeats >= 1, --rows >= 4 and --cols >= 2")
    if ns.xp == "array_api":
        from baracuda_dsl.runtime import has_gpu

        if not has_gpu():
            print("no CUDA GPU visible: nothing to run (try --xp array_api_strict for a CPU dry "
                  "run of the same SciPy calls)")
            return 0
    import scipy

    print(f"scipy {scipy.__version__}, numpy {np.__version__}, {ns.xp}; {ns.rows} x {ns.cols} "
          f"float32; wall ms: median of {ns.repeats} after 1 warm-up, synchronised; errors "
          f"relative to max |float64 reference|\n")
    result = run(ns.xp, ns.rows, ns.cols, ns.repeats, only)
    print(report(result, ns.xp))
    if result["failures"]:
        print("\nMISMATCH: " + "; ".join(result["failures"]))
        return 1
    print("\nOK: every result within its float32 tolerance of the float64 reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
