"""Histogram-family benchmarks on the GPU host: BincountPlan / HistogramPlan against torch in the
same run.  Usage (GPU host, from the repo root):
``python3 -m benchmarks.histogram [--quick] [--out DIR]``; run_all calls ``run(out_dir, quick,
log)`` (section ``histogram``).  The sets (``unique_*``) are in benchmarks/sorting.py.

Cases (bytes = the values read once, plus the weights when weighted; outputs are tiny):

=====================  ======================================================================
bincount               2^26 int32 values in [0, 1000) (shared-memory bins) and in [0, 2^20)
                       (global atomics); unweighted, vs torch.bincount(x, minlength=bins)
histc                  2^26 float32, 100 uniform bins over [-3, 3], vs torch.histc
=====================  ======================================================================

Every result is checked exactly against torch before timing.  "vs torch" = torch time / ours.
"""

from __future__ import annotations

from . import harness as H

N = 2 ** 26


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


def run(out_dir=None, quick: bool = False, log=print) -> dict:
    """Bincount (``quick``: the shared-memory case only) and histc rows, each under harness.safe."""
    torch = H._torch()
    rows = H.group_rows("histogram", (lambda: _bincount_rows(torch, quick),
                                      lambda: [_histc_row(torch)]), H.ms_line, log)
    return H.save_json(dict(rows=rows), out_dir, "bench_histogram.json")


SECTIONS = (H.Section("histogram", "Bincount and histogram", run, H.ms_table),)


def main(argv=None):
    H.cli_main(__doc__, SECTIONS, argv)


if __name__ == "__main__":
    main()
