"""Counting and set benchmarks on the GPU host: BincountPlan / HistogramPlan and the namespace's
``unique_*`` against torch in the same run.  Usage (GPU host):
``python3 benchmarks/bench_counting.py [--quick] [--out DIR]``; run_all.py calls ``run(quick)``.

Cases (bytes = the values read once, plus the weights when weighted; outputs are tiny):

=====================  ======================================================================
bincount               2^26 int32 values in [0, 1000) (shared-memory bins) and in [0, 2^20)
                       (global atomics); unweighted, vs torch.bincount(x, minlength=bins)
histc                  2^26 float32, 100 uniform bins over [-3, 3], vs torch.histc
unique                 xp.unique_all on 2^24 int32 in [0, 2^20) vs torch.unique(sorted=True,
                       return_inverse=True, return_counts=True) (ours also returns indices)
=====================  ======================================================================

Every result is checked exactly against torch before timing.  "vs torch" = torch time / ours.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness as H  # noqa: E402

N = 2 ** 26
N_UNIQUE = 2 ** 24


def _bincount_rows(torch, quick):
    from baracuda_dsl.ops.histogram.histogram import BincountDescriptor, BincountPlan, CountArgs

    rows = []
    for bins in ((1000,) if quick else (1000, 2 ** 20)):
        x = torch.randint(0, bins, (N,), device="cuda", dtype=torch.int32)
        out = torch.empty(bins, device="cuda", dtype=torch.int64)
        plan = BincountPlan.select(BincountDescriptor(N, bins, "int32"))
        args = CountArgs(x, out)
        plan.run(args)
        ok = torch.equal(out, torch.bincount(x, minlength=bins))
        t = H.bench(lambda: plan.run(args), reps=15)
        tt = H.bench(lambda: torch.bincount(x, minlength=bins), reps=15)
        rows.append(dict(case=f"bincount int32 → {bins} bins", n=N, ms=t.median,
                         torch_ms=tt.median, gbs=H.gbs(4 * N, t.median), ok=ok))
    return rows


def _histc_row(torch):
    from baracuda_dsl.ops.histogram.histogram import CountArgs, HistogramDescriptor, HistogramPlan

    x = torch.randn(N, device="cuda")
    out = torch.empty(100, device="cuda", dtype=torch.int64)
    plan = HistogramPlan.select(HistogramDescriptor(N, 100, "f32", "uniform", -3.0, 3.0))
    args = CountArgs(x, out)
    plan.run(args)
    ref = torch.histc(x, 100, -3, 3)
    # torch bins in float32, we in float64: a value within rounding of an edge may land in the
    # neighbouring bin, so allow 1e-5 of the elements to move
    ok = int((out.double() - ref.double()).abs().sum()) <= max(4, N // 100000)
    t = H.bench(lambda: plan.run(args), reps=15)
    tt = H.bench(lambda: torch.histc(x, 100, -3, 3), reps=15)
    return dict(case="histc f32 → 100 bins", n=N, ms=t.median, torch_ms=tt.median,
                gbs=H.gbs(4 * N, t.median), ok=ok)


def _unique_row(torch):
    import array_api as xp

    t_x = torch.randint(0, 2 ** 20, (N_UNIQUE,), device="cuda", dtype=torch.int32)
    x = xp.from_dlpack(t_x)
    r = xp.unique_all(x)
    v, inv, cnt = torch.unique(t_x, sorted=True, return_inverse=True, return_counts=True)
    ok = (torch.equal(torch.from_dlpack(r.values), v)
          and torch.equal(torch.from_dlpack(r.counts), cnt)
          and torch.equal(torch.from_dlpack(r.inverse_indices), inv))
    t = H.bench(lambda: xp.unique_all(x), reps=10, batch=2)
    tt = H.bench(lambda: torch.unique(t_x, sorted=True, return_inverse=True,
                                      return_counts=True), reps=10, batch=2)
    return dict(case="unique_all int32 (2^20 distinct)", n=N_UNIQUE, ms=t.median,
                torch_ms=tt.median, gbs=H.gbs(4 * N_UNIQUE, t.median), ok=ok)


def run(out_dir=None, quick: bool = False, log=print) -> dict:
    torch = H._torch()
    rows = H.group_rows("counting", (lambda: _bincount_rows(torch, quick),
                                     lambda: [_histc_row(torch)], lambda: [_unique_row(torch)]),
                        lambda r: f"{r['case']}: {r['ms']:.3f} ms (torch {r['torch_ms']:.3f}) "
                                  f"ok={r['ok']}", log)
    return H.save_json(dict(rows=rows), out_dir, "bench_counting.json")


def markdown(res: dict) -> str:
    out = []
    for r in res["rows"]:
        if "error" in r:
            out.append((r["case"], "—", "—", "—", "—", r["error"]))
            continue
        out.append((r["case"], f"{r['n']:,}", H.fmt(r["ms"], ".3f"), H.fmt(r["torch_ms"], ".3f"),
                    H.fmt(r["torch_ms"] / r["ms"]), "ok" if r["ok"] else "FAIL"))
    return H.md_table(("case", "elements", "ours ms", "torch ms", "vs torch", "check"), out) + "\n"


def main():
    H.cli_main(__doc__, run, markdown)


if __name__ == "__main__":
    main()
