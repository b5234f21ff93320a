"""Run every benchmark in one process on the GPU host and write the results.

    source .gpu/host-env.sh && python3 -m benchmarks.run_all --out $OUT [--quick]
                                                     [--families a,b,...] [--skip-launch]

(from the repo root; the benchmarks are a package, so run them as modules).  Order: torch/CUDA
warm-up, the device-to-device copy ceiling (1 GiB, read + write), the normalisation benchmarks
(benchmarks/normalization.py), the elementwise benchmarks (benchmarks/elementwise.py), the
launch-path study (benchmarks/launch.py; design (b) needs benchmarks/aot/build/libbench_aot.so,
built on the DSL machine by benchmarks/aot/build_aot.py), the other families in the order of
:data:`LATER` (benchmarks/<family>.py, each module's ``SECTIONS``: one results table per
section; gemm's ``gemm`` is bf16 / f16, ``gemm_lowp`` tf32, int8, fp8), then the copy ceiling
again (drift check).  ``--families`` picks families by their names in baracuda_dsl/ops (default
all).  Writes ``DIR/bench.json`` (everything, one key per section) and ``DIR/RESULTS.md`` (a
fragment to paste into benchmarks/RESULTS.md), and prints a compact table last.  Budget: under 4
minutes on the H100 (``--quick``: about 1 minute).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import sys
import time

from . import elementwise, launch, normalization
from . import harness as H

#: the families after the launch study, in run order; each benchmarks/<family>.py has
#: ``SECTIONS`` (harness.Section: bench.json key, RESULTS.md title, run, markdown)
LATER = ("softmax", "reduction", "scan", "sorting", "histogram", "shape", "indexing", "segment",
         "random", "gemm", "losses", "attention", "attention_decode", "linalg", "fft",
         "conv", "im2col", "pool", "image")
#: every family run_all knows (``--families``): normalization and elementwise run first, with the
#: run's copy ceiling, and their tables head the RESULTS.md fragment
FAMILIES = ("normalization", "elementwise") + LATER


def _sections(families) -> list:
    """The harness.Section of each chosen family of :data:`LATER`, in run order."""
    out = []
    for fam in LATER:
        if fam in families:
            out += importlib.import_module(f".{fam}", __package__).SECTIONS
    return out


def _extra_md(res: dict) -> list:
    out = []
    for sec in _sections(LATER):
        r = res.get(sec.key)
        if r is None:
            continue
        out += [f"### {sec.title}", ""]
        if isinstance(r, dict) and r.get("error"):
            out += [f"(failed: {r['error']})", ""]
            continue
        out += [sec.markdown(r), ""]
    return out


def _warmup():
    import torch

    a = torch.randn(4096, 4096, device="cuda")
    for _ in range(3):
        (a @ a).sum().item()
    torch.nn.functional.rms_norm(a, (4096,), None, 1e-6)
    torch.cuda.synchronize()


def results_md(res: dict, cmd: str) -> str:
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
        normalization.markdown(res["norms"]),
        "### Elementwise",
        "",
        elementwise.markdown(res["elementwise"]) if res["elementwise"]["rows"] else
        "(not run)",
        "### Launch path",
        "",
        launch.markdown(res["launch"]) if res["launch"].get("rows") else "(not run)",
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
    ap.add_argument("--skip-launch", action="store_true", help="no launch-path study")
    ap.add_argument("--families", default=",".join(FAMILIES),
                    help="comma-separated families to run (default all: " + ",".join(FAMILIES)
                         + "; '' for none)")
    ns = ap.parse_args(argv)
    families = [f for f in ns.families.split(",") if f]
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        ap.error(f"unknown famil{'y' if len(unknown) == 1 else 'ies'} {','.join(unknown)}; "
                 f"choose from {','.join(FAMILIES)}")

    t0 = time.perf_counter()
    os.makedirs(ns.out, exist_ok=True)
    _warmup()
    res = dict(date=datetime.date.today().isoformat(), device=H.device_info(), quick=ns.quick,
               argv=sys.argv)
    # the ceiling: the better of two measurements (the first can catch the clocks ramping up;
    # a low ceiling would inflate every '/ copy' fraction)
    res["copy"] = max(H.copy_bandwidth(), H.copy_bandwidth(), key=lambda c: c["gbs"])
    print(f"[{time.perf_counter() - t0:5.1f}s] copy ceiling {res['copy']['gbs']:.0f} GB/s", flush=True)

    def log(s):
        print(f"[{time.perf_counter() - t0:5.1f}s] {s}", flush=True)

    res["norms"] = (normalization.run(res["copy"]["gbs"], ns.quick, log=log)
                    if "normalization" in families else dict(rows=[], host=[]))
    res["elementwise"] = (elementwise.run(res["copy"]["gbs"], ns.quick, log=log)
                          if "elementwise" in families else dict(rows=[], host=[]))
    res["launch"] = (dict(rows=[]) if ns.skip_launch else
                     launch.run(ns.aot_lib or launch.DEFAULT_AOT, log=log))
    for sec in _sections(families):
        out, err = H.safe(sec.run, ns.out, ns.quick, log)
        res[sec.key] = dict(rows=[], error=err) if err else out
        if err:
            log(f"{sec.key}: {err}")
    res["copy_after"] = H.copy_bandwidth()
    res["wall_s"] = time.perf_counter() - t0
    cmd = "python3 -m benchmarks.run_all --out $OUT" + (" --quick" if ns.quick else "")
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
