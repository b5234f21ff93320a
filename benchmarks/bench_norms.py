"""Row-norm benchmarks on the GPU: baracuda-dsl Plans vs torch eager, with the copy ceiling and the
launch-path study, all measured in one run.  Usage: ``python3 benchmarks/bench_norms.py --out DIR``.

Timing: CUDA events around each call, warm-up, median of many repetitions, inputs rotated among
enough buffers that the working set exceeds the 50 MB L2.  Bytes counted: FW x + w + y,
BW dy + x + dx (weight gradients and statistics ignored), as in shared/reference/ANCHORS.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import time

import torch

import baracuda_dsl as bd

L2 = 50 * 2**20


def time_ms(fn, sets, reps=15, warm=3, batch=8):
    """Median milliseconds per call: each sample times ``batch`` back-to-back calls (rotating through
    argument ``sets``) between two CUDA events, so host overhead overlaps GPU work as in real use."""
    for i in range(warm * batch):
        fn(*sets[i % len(sets)])
    torch.cuda.synchronize()
    ts = []
    for r in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        for i in range(batch):
            fn(*sets[(r * batch + i) % len(sets)])
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) / batch)
    return statistics.median(ts)


def copy_bandwidth():
    """Device-to-device copy GB/s counting bytes read + written (1 GiB buffers)."""
    n = 2**30
    src = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src), [()], reps=10, batch=2)
    return 2 * n / ms / 1e6


def n_sets(nbytes):
    return max(1, min(6, -(-3 * L2 // max(nbytes, 1))))


def host_us(fn, n=2000):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / n * 1e6


def bench_fw(op, M, N, dt, copy_gbs):
    tdt = getattr(torch, dt)
    nbytes = (2 * M * N + N) * tdt.itemsize
    k = n_sets(nbytes)
    sets = []
    for i in range(k):
        x = torch.randn(M, N, device="cuda", dtype=tdt)
        w = torch.randn(N, device="cuda", dtype=tdt)
        b = torch.randn(N, device="cuda", dtype=tdt)
        sets.append((x, w, b, torch.empty_like(x)))
    if op == "rms":
        plan = bd.RMSNormPlan.select(bd.RMSNormDescriptor((M, N), 1, dt, 1e-6, True))
        ours = lambda x, w, b, y: plan.run(bd.RMSNormArgs(x, y, w))  # noqa: E731
        ref = lambda x, w, b, y: torch.nn.functional.rms_norm(x, (N,), w, 1e-6)  # noqa: E731
    else:
        plan = bd.LayerNormPlan.select(bd.LayerNormDescriptor((M, N), 1, dt, 1e-6, True, True))
        ours = lambda x, w, b, y: plan.run(bd.LayerNormArgs(x, y, w, b))  # noqa: E731
        ref = lambda x, w, b, y: torch.nn.functional.layer_norm(x, (N,), w, b, 1e-6)  # noqa: E731
    x, w, b, y = sets[0]
    ours(x, w, b, y)
    r = ref(x, w, b, y).double()
    err = ((y.double() - r).norm() / r.norm()).item()
    t_ours = time_ms(ours, sets)
    t_ref = time_ms(ref, sets)
    gbs = nbytes / t_ours / 1e6
    return dict(op=f"{op} FW", shape=f"{M}x{N}", dtype=dt, ms=t_ours, gbs=gbs,
                frac=gbs / copy_gbs, torch_frac=nbytes / t_ref / 1e6 / copy_gbs,
                speedup=t_ref / t_ours, relerr=err, sku=str(plan.sku()))


def bench_bw(op, M, N, dt, copy_gbs):
    tdt = getattr(torch, dt)
    nbytes = 3 * M * N * tdt.itemsize
    k = n_sets(nbytes)
    sdt = torch.float64 if dt == "float64" else torch.float32
    if op == "rms":
        plan = bd.RMSNormBackwardPlan.select(bd.RMSNormBackwardDescriptor((M, N), 1, dt, True))
    else:
        plan = bd.LayerNormBackwardPlan.select(bd.LayerNormBackwardDescriptor((M, N), 1, dt, True,
                                                                              True))
    ws = torch.empty(max(plan.workspace_size(), 1), device="cuda", dtype=torch.uint8)
    wsv = bd.Workspace(ws.data_ptr(), ws.numel())
    sets = []
    for i in range(k):
        x = torch.randn(M, N, device="cuda", dtype=tdt)
        dy = torch.randn(M, N, device="cuda", dtype=tdt)
        w = torch.randn(N, device="cuda", dtype=tdt)
        xd = x.double()
        mean = xd.mean(-1) if op == "ln" else torch.zeros(M, device="cuda", dtype=torch.float64)
        rstd = torch.rsqrt((xd - mean[:, None]).pow(2).mean(-1) + 1e-6)
        sets.append((dy, x, w, mean.to(sdt), rstd.to(sdt), torch.empty_like(x),
                     torch.empty_like(w), torch.empty_like(w)))

    def ours(dy, x, w, mean, rstd, dx, dw, db):
        if op == "rms":
            plan.run(bd.RMSNormBackwardArgs(dy, x, rstd, dx, w, dw), workspace=wsv)
        else:
            plan.run(bd.LayerNormBackwardArgs(dy, x, mean, rstd, dx, w, dw, db), workspace=wsv)

    tsets = []
    for dy, x, w, *_ in sets:
        xr = x.detach().clone().requires_grad_(True)
        wr = w.detach().clone().requires_grad_(True)
        br = torch.zeros_like(wr).requires_grad_(True)
        if op == "rms":
            yr = torch.nn.functional.rms_norm(xr, (N,), wr, 1e-6)
            ins = (xr, wr)
        else:
            yr = torch.nn.functional.layer_norm(xr, (N,), wr, br, 1e-6)
            ins = (xr, wr, br)
        tsets.append((yr, ins, dy))

    def ref(yr, ins, dy):
        torch.autograd.grad(yr, ins, dy, retain_graph=True)

    ours(*sets[0])
    yr, ins, dy = tsets[0]
    g = torch.autograd.grad(yr, ins, dy, retain_graph=True)
    err = ((sets[0][5].double() - g[0].double()).norm() / g[0].double().norm()).item()
    t_ours = time_ms(ours, sets)
    t_ref = time_ms(ref, tsets)
    gbs = nbytes / t_ours / 1e6
    return dict(op=f"{op} BW", shape=f"{M}x{N}", dtype=dt, ms=t_ours, gbs=gbs,
                frac=gbs / copy_gbs, torch_frac=nbytes / t_ref / 1e6 / copy_gbs,
                speedup=t_ref / t_ours, relerr=err, sku=str(plan.sku()))


def launch_study():
    """Host µs per launch of the smallest row-norm SKU through each launch path."""
    import numpy as np
    from cuda.core import LaunchConfig, launch

    from baracuda_dsl.jit import freeze_knobs, kernel
    from baracuda_dsl.templates import row_norm as spec

    x = torch.randn(1, 256, device="cuda")
    y = torch.empty_like(x)
    plan = bd.RMSNormPlan.select(bd.RMSNormDescriptor((1, 256), 1, "f32", 1e-6, False))
    args = bd.RMSNormArgs(x, y)
    plan.run(args)
    lk = kernel(spec.ROW_NORM_FW, freeze_knobs(plan._knobs), 0, plan._arch)
    vals = [x.data_ptr(), y.data_ptr(), 0, 0, 0, 0, 1, 256, 1, 1, 256, 256, 256, 256, 256, 256,
            1e-6, 0]
    res = {}
    res["cuLaunchKernel, pre-packed void** (ArgPack)"] = host_us(lambda: lk.launch((1, 1, 1), vals, 0))
    dev = bd.runtime.get_device(0)
    s = dev.default_stream
    cfg = LaunchConfig(grid=(1, 1, 1), block=(lk.threads, 1, 1), shmem_size=lk.smem)
    core_args = (np.uint64(x.data_ptr()), np.uint64(y.data_ptr()), np.uint64(0), np.uint64(0),
                 np.uint64(0), np.uint64(0), np.int32(1), np.int32(256), np.int32(1), np.int32(1),
                 *[np.int64(256)] * 6, np.float64(1e-6), np.int32(0))
    res["cuda.core.launch, numpy scalars"] = host_us(lambda: launch(s, cfg, lk.kernel, *core_args))
    res["plan.run(prebuilt Args)"] = host_us(lambda: plan.run(args))
    res["plan.run(Args built from torch tensors)"] = host_us(
        lambda: plan.run(bd.RMSNormArgs(x, y)))
    a = torch.randn(1024, device="cuda")
    res["torch.add (1024 floats), reference"] = host_us(lambda: torch.add(a, a))
    res["torch rms_norm (1x256), reference"] = host_us(
        lambda: torch.nn.functional.rms_norm(x, (256,), None, 1e-6))
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--quick", action="store_true")
    ns = ap.parse_args()
    dev = torch.cuda.get_device_name()
    copy = copy_bandwidth()
    rows = []
    fw_cases = [(32768, 4096, "bfloat16"), (8192, 32768, "bfloat16"), (2048, 131072, "bfloat16"),
                (32768, 4096, "float32"), (16384, 8192, "float16")]
    bw_cases = [(32768, 4096, "bfloat16"), (8192, 32768, "bfloat16"), (32768, 4096, "float32")]
    if ns.quick:
        fw_cases, bw_cases = fw_cases[:1], bw_cases[:1]
    for op in ("rms", "ln"):
        for M, N, dt in fw_cases:
            rows.append(bench_fw(op, M, N, dt, copy))
            print(rows[-1], flush=True)
        for M, N, dt in bw_cases:
            rows.append(bench_bw(op, M, N, dt, copy))
            print(rows[-1], flush=True)
    launch = launch_study()
    stamp = datetime.date.today().isoformat()
    md = [f"## Row normalisation — {stamp}, {dev}", "",
          f"Command: `python3 benchmarks/bench_norms.py` · copy ceiling measured in the same run: "
          f"**{copy:.0f} GB/s** (read + write, 1 GiB)", "",
          "| op | shape | dtype | ms | GB/s | / copy | torch / copy | speed-up vs torch | rel err |",
          "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['op']} | {r['shape']} | {r['dtype']} | {r['ms']:.3f} | {r['gbs']:.0f} | "
                  f"{r['frac']:.2f} | {r['torch_frac']:.2f} | {r['speedup']:.2f}× | "
                  f"{r['relerr']:.1e} |")
    md += ["", "Host µs per call (tiny problem, 2000 back-to-back enqueues, median of one run):", "",
           "| path | µs |", "|---|---|"]
    md += [f"| {k} | {v:.2f} |" for k, v in launch.items()]
    text = "\n".join(md) + "\n"
    print(text)
    os.makedirs(ns.out, exist_ok=True)
    with open(os.path.join(ns.out, "RESULTS_norms.md"), "w") as f:
        f.write(text)
    with open(os.path.join(ns.out, "bench_norms.json"), "w") as f:
        json.dump(dict(device=dev, copy_gbs=copy, rows=rows, launch_us=launch), f, indent=1)


if __name__ == "__main__":
    main()
