"""Scan benchmarks on the GPU host: baracuda-dsl ScanPlan vs torch.cumsum, same run, same copy
ceiling.  Usage (GPU host, from the repo root): ``python3 -m benchmarks.scan [--quick]
[--out DIR]``; run_all calls ``run(out_dir, quick, log)`` (section ``scan``).

Cases: cumsum along the last axis of 32768×4096 in f32 and bf16 (one CTA per row, vectorised),
a 1-D cumsum of 2^28 f32 (one row split over ~1024 CTAs, reduce-then-scan: 1.5 passes), a column
cumsum along axis 0 of 4096×32768 f32 (one thread per column, chunked), and cummax / logcumsumexp
32768×4096 f32; plus the backward of cumsum (a reverse scan) on 32768×4096 f32.  Bytes counted:
input + output (indices too for cummax).  Every output is checked once against a float64 torch
reference (‖out − ref‖/‖ref‖ on the poisoned output); rows over tolerance are marked FAIL.
Reported: ms, GB/s, fraction of the measured copy bandwidth, speed-up over torch.
"""

from __future__ import annotations

import json
import os

from . import harness as H

TOL = {"bfloat16": 2e-2, "float32": 1e-4}
CASES = [  # (label, shape, axis, op, dtype)
    ("cumsum", (32768, 4096), 1, "cumsum", "float32"),
    ("cumsum", (32768, 4096), 1, "cumsum", "bfloat16"),
    ("cumsum 1-D", (2**28,), 0, "cumsum", "float32"),
    ("cumsum axis 0", (4096, 32768), 0, "cumsum", "float32"),
    ("cummax", (32768, 4096), 1, "cummax", "float32"),
    ("logcumsumexp", (32768, 4096), 1, "logcumsumexp", "float32"),
    ("cumsum bw", (32768, 4096), 1, "cumsum_bw", "float32"),
]
QUICK = CASES[:3]


def _torch_ref_fn(torch, op, x, axis):
    if op == "cumsum":
        return lambda: torch.cumsum(x, axis)
    if op == "cummax":
        return lambda: torch.cummax(x, axis)
    if op == "logcumsumexp":
        return lambda: torch.logcumsumexp(x, axis)
    return lambda: torch.cumsum(x.flip(axis), axis).flip(axis)   # cumsum backward


def _bench(label, shape, axis, op, dt):
    import torch

    from baracuda_dsl.ops.scan.scan import (ScanArgs, ScanBackwardArgs, ScanBackwardDescriptor,
                                            ScanBackwardPlan, ScanDescriptor, ScanPlan)

    tdt = getattr(torch, dt)
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(shape, generator=g, device="cuda").to(tdt)
    out = torch.full(shape, float("nan"), dtype=tdt, device="cuda")
    idx = torch.empty(shape, dtype=torch.int64, device="cuda") if op == "cummax" else None
    if op == "cumsum_bw":
        plan = ScanBackwardPlan.select(ScanBackwardDescriptor(shape, axis, "cumsum", dt))
        args = ScanBackwardArgs(x, out)
    else:
        plan = ScanPlan.select(ScanDescriptor(shape, axis, op, dt))
        args = ScanArgs(x, out, idx)
    nws = plan.workspace_size()
    ws = torch.empty(nws, dtype=torch.uint8, device="cuda") if nws else None
    plan.run(args, workspace=ws)
    torch.cuda.synchronize()
    x64 = x.double()
    if op == "cumsum_bw":
        ref = torch.cumsum(x64.flip(axis), axis).flip(axis)
    elif op == "cummax":
        ref = torch.cummax(x64, axis)[0]
    elif op == "logcumsumexp":
        ref = torch.logcumsumexp(x64, axis)
    else:
        ref = torch.cumsum(x64, axis)
    err = H.rel_err(out, ref)
    del ref, x64
    torch.cuda.empty_cache()
    t_ours = H.bench(lambda: plan.run(args, workspace=ws), reps=15, warm=2, batch=4)
    t_ref = H.bench(_torch_ref_fn(torch, op, x, axis), reps=15, warm=2, batch=4)
    nbytes = H.bytes_of(x, out, idx)
    sku = plan.sku()
    return dict(op=label, shape="x".join(map(str, shape)), dtype=dt, ms=t_ours.median,
                gbs=H.gbs(nbytes, t_ours.median), torch_ms=t_ref.median,
                torch_gbs=H.gbs(nbytes, t_ref.median), vs_torch=t_ref.median / t_ours.median,
                err=err, sku=str(sku),
                status="ok" if err <= TOL.get(dt, 1e-2) else f"FAIL (rel err {err:.1e})")


def _na(label, shape, dt, msg):
    return dict(op=label, shape="x".join(map(str, shape)), dtype=dt, ms=None,
                status=f"not available: {msg}")


def run(out_dir=None, quick=False, log=print):
    """Run every case; returns the list of result rows (also written to ``out_dir``)."""
    import torch

    H.check_cuda()
    copy = H.copy_bandwidth()
    log(f"copy bandwidth {copy['gbs']:.0f} GB/s")
    rows = []
    for label, shape, axis, op, dt in (QUICK if quick else CASES):
        res, msg = H.safe(_bench, label, shape, axis, op, dt)
        r = res or _na(label, shape, dt, msg)
        if r.get("gbs"):
            r["frac_copy"] = r["gbs"] / copy["gbs"]
            r["torch_frac_copy"] = r["torch_gbs"] / copy["gbs"]
        r["copy_gbs"] = copy["gbs"]
        rows.append(r)
        log(_short(r))
        torch.cuda.empty_cache()
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "bench_scan.json"), "w") as f:
            json.dump(dict(rows=rows, device=H.device_info(), copy=copy), f, indent=1,
                      default=str)
        with open(os.path.join(out_dir, "bench_scan.md"), "w") as f:
            f.write(markdown(rows))
    return rows


def _short(r) -> str:
    if r.get("ms") is None:
        return f"{r['op']:14s} {r['shape']:>12s} {r['dtype']:9s} {r['status']}"
    return (f"{r['op']:14s} {r['shape']:>12s} {r['dtype']:9s} {r['ms']:.3f} ms "
            f"{r['gbs']:.0f} GB/s ({r['frac_copy']:.2f} of copy)  torch {r['torch_gbs']:.0f} GB/s"
            f"  vs torch {r['vs_torch']:.2f}x  {r['status']}")


def markdown(rows) -> str:
    hdr = ["op", "shape", "dtype", "ms", "GB/s", "frac of copy", "torch GB/s", "torch frac",
           "vs torch", "status"]
    body = [[r["op"], r["shape"], r["dtype"], H.fmt(r.get("ms"), ".3f"), H.fmt(r.get("gbs"), ".0f"),
             H.fmt(r.get("frac_copy")), H.fmt(r.get("torch_gbs"), ".0f"),
             H.fmt(r.get("torch_frac_copy")), H.fmt(r.get("vs_torch")), r["status"]] for r in rows]
    return H.md_table(hdr, body) + "\n"


SECTIONS = (H.Section("scan", "Scans", run, markdown),)


def main(argv=None):
    H.cli_main(__doc__, SECTIONS, argv)


if __name__ == "__main__":
    main()
