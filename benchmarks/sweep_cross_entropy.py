"""Developer tool: time every prebuilt cross-entropy forward SKU that can serve a shape, to set
the plans' tuning (``baracuda_dsl.CrossEntropyTuning``: ``wide_half_above``,
``prefer_cluster_above``, ``loop_above``, ``ladder``).  Usage (GPU host)::

    python3 -m benchmarks.sweep_cross_entropy [--mode plain|smooth] [--top 6] [--quick]

Candidates per shape (all inside the template's SKU space, so prebuild has them): the register
buckets that hold the row (up to 4× its length), the f16/bf16 "wide" buckets (half the threads,
twice the elements per thread), on sm90a the cluster ladder and the wide clusters, and the
vectorised loop.  Each candidate runs through the real plan (selected with
``PlanPreference(tuning=TUNING)``; its pick is the "default") with its kernel choice overridden
(``plan._knobs``), is checked against torch float64 and timed like benchmarks/losses.py (bytes =
logits + targets + per-row losses, reduction none).  The last lines print the tuning values the
data supports.
"""

from __future__ import annotations

import argparse
from . import harness as H

CASES = [(32768, 4096, "bfloat16"), (16384, 8192, "bfloat16"), (16384, 16384, "bfloat16"),
         (8192, 32768, "bfloat16"), (4096, 65536, "bfloat16"), (2048, 131072, "bfloat16"),
         (1024, 262144, "bfloat16"), (32768, 4096, "float32"), (8192, 32768, "float32"),
         (2048, 131072, "float32")]
QUICK = [(8192, 32768, "bfloat16"), (2048, 131072, "bfloat16")]
TOL = {"bfloat16": 1e-2, "float16": 3e-3, "float32": 1e-4, "float64": 1e-10}


def _tuning():
    """The tuning record the plans are selected with (edit to try other thresholds)."""
    from baracuda_dsl.ops.losses.cross_entropy import CrossEntropyTuning

    return CrossEntropyTuning()


def candidates(short: str, mode: str, n: int, arch: str):
    from baracuda_dsl.ops.losses.specs import cross_entropy as spec

    t = spec.CROSS_ENTROPY_FW
    for frozen in t.skus(arch):
        k = t.thaw(frozen)
        if k.dtype != short or k.mode != mode or k.vec == 1:
            continue
        if k.chunks == 0 or n <= k.capacity <= 4 * max(n, 1024):
            yield k


def geometry(k) -> dict:
    """The row-geometry knobs of ``k``."""
    import dataclasses

    from baracuda_dsl.common.rows import RowGeometry

    return {f.name: getattr(k, f.name) for f in dataclasses.fields(RowGeometry)}


def kind(k) -> str:
    """loop / bucket / wide / (wide-)clusterC."""
    from baracuda_dsl.common.rows import RowGeometry
    from baracuda_dsl.ops.losses.specs import cross_entropy as spec

    if k.chunks == 0:
        return "loop"
    rows, w = spec.FW_ROWS, spec.FW_ROWS.wide
    g = RowGeometry.of(k)
    wide = k.dtype in w.dtypes and (
        any(g == rows.wide_bucket(k.dtype, c) for c in w.buckets)
        or any(g == rows.wide_cluster(k.dtype, c) for c in w.clusters))
    base = "wide" if wide else "bucket"
    return base if k.cluster == 1 else f"{base}-cluster{k.cluster}"


def sweep(torch, M, N, dt, mode, copy_gbs):
    from baracuda_dsl import PlanPreference
    from baracuda_dsl.ops.losses import cross_entropy as ce

    F = torch.nn.functional
    ls = 0.1 if mode == "smooth" else 0.0
    plan = ce.CrossEntropyPlan.select(ce.CrossEntropyDescriptor(M, N, dt, reduction="none",
                                                                label_smoothing=ls),
                                      PlanPreference(tuning=_tuning()))
    default = plan._knobs

    def mk():
        x = (torch.randn((M, N), device="cuda") * 2).to(getattr(torch, dt))
        t = torch.randint(0, N, (M,), device="cuda")
        return ce.CrossEntropyArgs(x, t, torch.full((M,), float("nan"), dtype=x.dtype,
                                                    device="cuda"))

    a0 = mk()
    nbytes = H.bytes_of(a0.logits, a0.target, a0.loss)
    data = [(a0,)] + [(mk(),) for _ in range(H.n_sets(nbytes) - 1)]
    ref = F.cross_entropy(a0.logits.double(), a0.target, reduction="none", label_smoothing=ls)
    out = []
    for k in candidates(default.dtype, default.mode, N, plan._arch.value):
        plan._knobs = k
        a0.loss.fill_(float("nan"))
        try:
            plan.run(a0)
            err = H.rel_err(a0.loss, ref)
            ms = H.bench(lambda a: plan.run(a), data).median
        except Exception as e:  # noqa: BLE001 - report and go on
            out.append((0.0, float("nan"), k, f"{type(e).__name__}: {e}"[:80]))
            continue
        ok = "" if err <= TOL[dt] else f"FAIL err {err:.1e}"
        out.append((H.gbs(nbytes, ms) / copy_gbs, err, k, ok))
    plan._knobs = default
    return default, sorted(out, key=lambda r: -r[0])


def main():
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="plain", choices=("plain", "smooth"))
    ap.add_argument("--top", type=int, default=6)
    ap.add_argument("--quick", action="store_true")
    ns = ap.parse_args()
    copy_gbs = H.copy_bandwidth()["gbs"]
    print(f"copy bandwidth {copy_gbs:.0f} GB/s; mode {ns.mode}; plans selected with {_tuning()}")
    best = {}
    for M, N, dt in (QUICK if ns.quick else CASES):
        default, res = sweep(torch, M, N, dt, ns.mode, copy_gbs)
        print(f"\nCE FW {M}x{N} {dt}")
        dfrac = next((r[0] for r in res if r[2] == default), None)
        for frac, err, k, note in res[:ns.top]:
            mark = "  <- default" if k == default else ""
            print(f"  {frac:.3f} of copy  err {err:.1e}  {kind(k):16s} {geometry(k)} {note}{mark}")
        if dfrac is not None and all(r[2] != default for r in res[:ns.top]):
            print(f"  default {dfrac:.3f} of copy  {kind(default)} {geometry(default)}")
        if res:
            best[(N, dt)] = (kind(res[0][2]), res[0][0], dfrac)
    print("\nbest kind per shape (frac, default frac):")
    for (N, dt), (kd, fr, dfr) in sorted(best.items()):
        print(f"  {dt:9s} N={N:7d}: {kd:16s} {fr:.3f} (default {dfr})")
    half = [(N, kd) for (N, dt), (kd, _, _) in best.items() if dt in ("bfloat16", "float16")]
    wide = sorted(N for N, kd in half if kd.startswith("wide"))
    if wide:
        print(f"suggestion: CrossEntropyTuning(wide_half_above={min(wide) - 1}) if every half row "
              f"length >= {min(wide)} prefers a wide SKU above (check the table)")
    else:
        print("suggestion: keep CrossEntropyTuning(wide_half_above=None)")


if __name__ == "__main__":
    main()
