"""Run every benchmark in one process on the GPU host and write the results.

    source .gpu/host-env.sh && python3 benchmarks/run_all.py --out $OUT [--quick]

Order: torch/CUDA warm-up, the device-to-device copy ceiling (1 GiB, read + write), the
normalisation benchmarks (bench_norms.py), the elementwise benchmarks (bench_elementwise.py), the
launch-path study (bench_launch.py; design (b) needs benchmarks/aot/build/libbench_aot.so, built on
the DSL machine by benchmarks/aot/build_aot.py), the reduction / scan / sort / counting / layout / pad /
indexing / segment / GEMM (``gemm``: bf16 / f16; ``gemm_lowp``: tf32, int8, fp8) families
(``--families``; bench_<family>.py), then the
copy ceiling again (drift check).  Writes ``DIR/bench.json``
(everything) and ``DIR/RESULTS.md`` (a fragment to paste into benchmarks/RESULTS.md), and prints a
compact table last.  Budget: under 4 minutes on the H100 (``--quick``: about 1 minute).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness as H  # noqa: E402


# families of issue 4 onwards: (name, module, section title); each module has
# run(out_dir, quick, log) -> rows (list or dict with "rows") and markdown(that)
EXTRA = [("softmax", "bench_softmax", "Softmax"), ("reductions", "bench_reductions", "Reductions"), ("scan", "bench_scan", "Scans"),
         ("sort", "bench_sort", "Sorting and top-k"),
         ("counting", "bench_counting", "Counting and sets"),
         ("layout", "bench_layout", "Permute, concat, flip"),
         ("pad", "bench_pad", "Pad, roll, triangle"),
         ("indexing", "bench_indexing", "Gather, index_select, scatter"),
         ("segment", "bench_segment", "Embedding and segment reductions"),
         ("random", "bench_random", "Random numbers and dropout"),
         ("gemm", "bench_gemm", "GEMM (bf16 / f16 vs cuBLAS)"),
         ("gemm_lowp", "bench_gemm_lowp", "GEMM: tf32, int8, fp8 (vs torch.matmul, _int_mm, "
                                           "_scaled_mm)"),
         ("losses", "bench_losses", "Cross-entropy and fused linear CE")]


def _extra_md(res: dict) -> list:
    out = []
    for fam, modname, title in EXTRA:
        r = res.get(fam)
        if r is None:
            continue
        out += [f"### {title}", ""]
        if isinstance(r, dict) and r.get("error"):
            out += [f"(failed: {r['error']})", ""]
            continue
        out += [__import__(modname).markdown(r), ""]
    return out


def _warmup():
    import torch

    a = torch.randn(4096, 4096, device="cuda")
    for _ in range(3):
        (a @ a).sum().item()
    torch.nn.functional.rms_norm(a, (4096,), None, 1e-6)
    torch.cuda.synchronize()


def results_md(res: dict, cmd: str) -> str:
    import bench_elementwise
    import bench_launch
    import bench_norms

    info = res["device"]
    cp0, cp1 = res["copy"], res.get("copy_after") or {}
    lines = [
        f"## {res['date']} — {info.get('gpu')} (driver CUDA {info.get('driver_cuda')}, torch "
        f"{info.get('torch')}, cuda.core {info.get('cuda.core')}, cuda.bindings "
        f"{info.get('cuda.bindings')})",
        "",
        f"Command on the GPU host: `{cmd}`{' (quick subset)' if res.get('quick') else ''} · "
        f"wall {res['wall_s']:.0f} s",
        "",
        f"Copy ceiling measured in the same run: **{cp0['gbs']:.0f} GB/s** (read + write, 1 GiB "
        f"buffers; best sample {cp0['gbs_best']:.0f}"
        + (f"; {cp1['gbs']:.0f} GB/s at the end of the run" if cp1 else "") + ").",
        "",
        "Timing: CUDA events around batches of 8 back-to-back calls (inputs rotated over enough "
        "buffers to exceed the 50 MB L2), warm-up first, median of 25 samples (min / p90 in "
        "bench.json). '/ copy' = model bytes / time / copy ceiling; bytes: row-norm FW x + w (+ b) "
        "+ y, BW dy + x + dx (weight gradients, statistics ignored), channel-norm FW x + y. "
        "'vs torch' = torch eager time / ours (> 1: ours faster). 'rel err' = ‖out − ref‖/‖ref‖ "
        "against a float64 torch reference on the same inputs (BW: max over dx, dw, db).",
        "",
        "### Normalisation",
        "",
        bench_norms.markdown(res["norms"]),
        "### Elementwise",
        "",
        bench_elementwise.markdown(res["elementwise"]) if res["elementwise"]["rows"] else
        "(not run)",
        "### Launch path",
        "",
        bench_launch.markdown(res["launch"]) if res["launch"].get("rows") else "(not run)",
        "",
        *_extra_md(res),
    ]
    return "\n".join(lines) + "\n"


def compact(res: dict) -> str:
    rows = []
    for r in res["norms"]["rows"]:
        if r.get("ms") is None:
            rows.append([r["op"], r["shape"], r["dtype"], "—", "—", "—", r["status"][:60]])
        else:
            rows.append([r["op"], r["shape"], r["dtype"], H.fmt(r["frac"]),
                         H.fmt(r["torch_frac"]), H.fmt(r["speedup"]) + "×",
                         f"{r['relerr']:.0e} {r['status'][:40]}"])
    t = H.md_table(["op", "shape", "dtype", "/copy", "torch/copy", "vs torch", "err status"], rows)
    lrows = [[r["key"], r["path"][:60], H.fmt(r.get("us")), r["status"][:50]]
             for r in res["launch"]["rows"]]
    return (f"copy {res['copy']['gbs']:.0f} GB/s\n" + t + "\n\n" +
            H.md_table(["", "launch path", "µs", "status"], lrows))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description="Run all baracuda-dsl benchmarks (GPU host) and write DIR/bench.json and "
                    "DIR/RESULTS.md.")
    ap.add_argument("--out", required=True, help="output directory (e.g. $OUT)")
    ap.add_argument("--quick", action="store_true", help="one shape per family (~1 minute)")
    ap.add_argument("--aot-lib", default=None,
                    help="AOT shim for design (b) (default benchmarks/aot/build/libbench_aot.so)")
    ap.add_argument("--skip-norms", action="store_true", help="no normalisation benchmarks")
    ap.add_argument("--skip-launch", action="store_true", help="no launch-path study")
    ap.add_argument("--skip-elementwise", action="store_true", help="no elementwise benchmarks")
    ap.add_argument("--families", default=",".join(f for f, _, _ in EXTRA),
                    help="comma-separated extra families to run (default all: "
                         + ",".join(f for f, _, _ in EXTRA) + "; '' for none)")
    ns = ap.parse_args(argv)

    import bench_elementwise
    import bench_launch
    import bench_norms

    t0 = time.perf_counter()
    os.makedirs(ns.out, exist_ok=True)
    _warmup()
    res = dict(date=datetime.date.today().isoformat(), device=H.device_info(), quick=ns.quick,
               argv=sys.argv)
    # the ceiling: the better of two measurements (the first can catch the clocks ramping up;
    # a low ceiling would inflate every '/ copy' fraction)
    res["copy"] = max(H.copy_bandwidth(), H.copy_bandwidth(), key=lambda c: c["gbs"])
    print(f"[{time.perf_counter() - t0:5.1f}s] copy ceiling {res['copy']['gbs']:.0f} GB/s", flush=True)
    if ns.skip_norms:
        res["norms"] = dict(rows=[], host=[])
    else:
        res["norms"] = bench_norms.run(res["copy"]["gbs"], ns.quick,
                                       log=lambda s: print(f"[{time.perf_counter() - t0:5.1f}s] {s}",
                                                           flush=True))
    def log(s):
        print(f"[{time.perf_counter() - t0:5.1f}s] {s}", flush=True)

    res["elementwise"] = (dict(rows=[], host=[]) if ns.skip_elementwise else
                          bench_elementwise.run(res["copy"]["gbs"], ns.quick, log=log))
    res["launch"] = (dict(rows=[]) if ns.skip_launch else
                     bench_launch.run(ns.aot_lib or bench_launch.DEFAULT_AOT, log=log))
    for fam, modname, _title in EXTRA:
        if fam in ns.families.split(","):
            mod = __import__(modname)
            out, err = H.safe(mod.run, ns.out, ns.quick, log)
            res[fam] = dict(rows=[], error=err) if err else out
            if err:
                log(f"{fam}: {err}")
    res["copy_after"] = H.copy_bandwidth()
    res["wall_s"] = time.perf_counter() - t0
    cmd = "python3 benchmarks/run_all.py --out $OUT" + (" --quick" if ns.quick else "")
    md = results_md(res, cmd)
    with open(os.path.join(ns.out, "bench.json"), "w") as f:
        json.dump(res, f, indent=1, default=str)
    with open(os.path.join(ns.out, "RESULTS.md"), "w") as f:
        f.write(md)
    print()
    print(compact(res))
    print(f"\nwrote {ns.out}/bench.json and {ns.out}/RESULTS.md in {res['wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
