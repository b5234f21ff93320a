"""Normalisation benchmarks on the GPU host: baracuda-dsl Plans vs torch eager, same run, same
copy ceiling.  Usage (GPU host, from the repo root): ``python3 -m benchmarks.normalization
[--quick] [--out DIR]`` (``benchmarks.run_all`` runs this with the run's copy ceiling:
``run(copy_gbs, quick, log)``).

Cases: RMSNorm / LayerNorm forward and backward on (M, N) = 32768×4096 and 8192×32768 in bf16 and
f32, forward also 2048×131072 bf16; GroupNorm / BatchNorm forward on NCHW (32, 256, 64, 64) in bf16
and f32 (through ``baracuda_dsl.ops.normalization.channel_norm`` when it is there; otherwise "not available"
rows).  Bytes counted (as /work/shared/reference/ANCHORS.md): forward x + weight (+ bias) + y,
backward dy + x + dx (weight/bias gradients and statistics ignored), channel norms x + y.

Every benchmarked output is checked once against a float64 torch reference (‖out − ref‖/‖ref‖,
output poisoned with NaN first); rows over tolerance are marked FAIL.  Host µs per call is measured
on a small shape (8×4096 bf16; NCHW (2, 64, 8, 8)) for each path, ours and torch's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import harness as H
from .harness import n_sets

EPS = 1e-6
TOL = {"bfloat16": 1e-2, "float16": 5e-3, "float32": 1e-4, "float64": 1e-10}

ROW_FW = [(32768, 4096, "bfloat16"), (32768, 4096, "float32"), (8192, 32768, "bfloat16"),
          (8192, 32768, "float32"), (2048, 131072, "bfloat16")]
ROW_BW = [(32768, 4096, "bfloat16"), (32768, 4096, "float32"), (8192, 32768, "bfloat16"),
          (8192, 32768, "float32")]
CHAN = [((32, 256, 64, 64), "bfloat16"), ((32, 256, 64, 64), "float32")]
GROUPS = 32
QUICK_FW = [(32768, 4096, "bfloat16")]
QUICK_BW = [(32768, 4096, "bfloat16")]
QUICK_CHAN = [((32, 256, 64, 64), "bfloat16")]
SMALL = (8, 4096, "bfloat16")
SMALL_CHAN = ((2, 64, 8, 8), "bfloat16")


def copy_bandwidth() -> float:
    """Device-to-device copy GB/s (read + write, 1 GiB) — a float, for sweep_row_norm.py."""
    return H.copy_bandwidth()["gbs"]


def _bd():
    import baracuda_dsl as bd

    return bd


def _row(op, shape, dt, nbytes, t_ours, t_ref, copy_gbs, err, sku, status="ok", host=None):
    ours_gbs = H.gbs(nbytes, t_ours.median) if t_ours else None
    ref_gbs = H.gbs(nbytes, t_ref.median) if t_ref else None
    tol = TOL.get(dt, 1e-2)
    if status == "ok" and err is not None and not err <= tol:
        status = f"FAIL (rel err {err:.1e} > {tol:.0e})"
    return dict(op=op, shape=shape, dtype=dt, bytes=nbytes,
                ms=t_ours.median if t_ours else None, ms_min=t_ours.min if t_ours else None,
                ms_p90=t_ours.p90 if t_ours else None, gbs=ours_gbs,
                frac=ours_gbs / copy_gbs if ours_gbs else None,
                torch_ms=t_ref.median if t_ref else None,
                torch_frac=ref_gbs / copy_gbs if ref_gbs else None,
                speedup=(t_ref.median / t_ours.median) if (t_ours and t_ref) else None,
                relerr=err, sku=sku, status=status, host_us=host)


def _na(op, shape, dt, msg):
    return dict(op=op, shape=shape, dtype=dt, status=f"not available: {msg}")


# ============================================================================ row norms, forward
def _fw_plan(op, M, N, dt):
    bd = _bd()
    if op == "rms":
        plan = bd.RMSNormPlan.select(bd.RMSNormDescriptor((M, N), 1, dt, EPS, True))
        return plan, lambda x, w, b, y: plan.run(bd.RMSNormArgs(x, y, w))
    plan = bd.LayerNormPlan.select(bd.LayerNormDescriptor((M, N), 1, dt, EPS, True, True))
    return plan, lambda x, w, b, y: plan.run(bd.LayerNormArgs(x, y, w, b))


def _fw_torch(op, N):
    import torch.nn.functional as F

    if op == "rms":
        return lambda x, w, b, y: F.rms_norm(x, (N,), w, EPS)
    return lambda x, w, b, y: F.layer_norm(x, (N,), w, b, EPS)


def bench_fw(op, M, N, dt, copy_gbs):
    import torch

    tdt = getattr(torch, dt)
    isz = tdt.itemsize
    nbytes = (2 * M * N + N * (1 if op == "rms" else 2)) * isz
    sets = []
    for _ in range(n_sets(nbytes)):
        x = torch.randn(M, N, device="cuda", dtype=tdt)
        w = 1 + 0.5 * torch.randn(N, device="cuda", dtype=tdt)
        b = torch.randn(N, device="cuda", dtype=tdt)
        sets.append((x, w, b, torch.empty_like(x)))
    plan, ours = _fw_plan(op, M, N, dt)
    ref = _fw_torch(op, N)
    x, w, b, y = sets[0]
    y.fill_(float("nan"))
    ours(x, w, b, y)
    torch.cuda.synchronize()
    with torch.no_grad():
        r = ref(x.double(), w.double(), b.double(), None)
    err = H.rel_err(y, r)
    del r
    t_ours = H.bench(ours, sets)
    t_ref = H.bench(ref, sets)
    out = _row(f"{op} FW", f"{M}x{N}", dt, nbytes, t_ours, t_ref, copy_gbs, err, str(plan.sku()))
    del sets
    torch.cuda.empty_cache()
    return out


# =========================================================================== row norms, backward
def _stats(x, op):
    import torch

    xd = x.double()
    mean = xd.mean(-1) if op == "ln" else None
    xc = xd - mean[:, None] if op == "ln" else xd
    rstd = torch.rsqrt(xc.pow(2).mean(-1) + EPS)
    return mean, rstd


def bench_bw(op, M, N, dt, copy_gbs):
    import torch
    import torch.nn.functional as F

    bd = _bd()
    tdt = getattr(torch, dt)
    sdt = torch.float64 if dt == "float64" else torch.float32
    nbytes = 3 * M * N * tdt.itemsize
    if op == "rms":
        plan = bd.RMSNormBackwardPlan.select(bd.RMSNormBackwardDescriptor((M, N), 1, dt, True))
    else:
        plan = bd.LayerNormBackwardPlan.select(
            bd.LayerNormBackwardDescriptor((M, N), 1, dt, True, True))
    ws_t = torch.empty(max(plan.workspace_size(), 1), device="cuda", dtype=torch.uint8)
    ws = bd.Workspace(ws_t.data_ptr(), ws_t.numel())
    sets = []
    for _ in range(n_sets(nbytes)):
        x = torch.randn(M, N, device="cuda", dtype=tdt)
        dy = torch.randn(M, N, device="cuda", dtype=tdt)
        w = 1 + 0.5 * torch.randn(N, device="cuda", dtype=tdt)
        mean, rstd = _stats(x, op)
        mean = mean.to(sdt) if mean is not None else None
        sets.append((dy, x, w, mean, rstd.to(sdt), torch.empty_like(x), torch.empty_like(w),
                     torch.empty_like(w)))

    def ours(dy, x, w, mean, rstd, dx, dw, db):
        if op == "rms":
            plan.run(bd.RMSNormBackwardArgs(dy, x, rstd, dx, w, dw), workspace=ws)
        else:
            plan.run(bd.LayerNormBackwardArgs(dy, x, mean, rstd, dx, w, dw, db), workspace=ws)

    # correctness: float64 autograd of the forward on the same inputs
    dy, x, w, mean, rstd, dx, dw, db = sets[0]
    for t in (dx, dw, db):
        t.fill_(float("nan"))
    ours(*sets[0])
    torch.cuda.synchronize()
    xd = x.double().requires_grad_(True)
    wd = w.double().requires_grad_(True)
    if op == "rms":
        yd = F.rms_norm(xd, (N,), wd, EPS)
        gx, gw = torch.autograd.grad(yd, (xd, wd), dy.double())
        errs = [H.rel_err(dx, gx), H.rel_err(dw, gw)]
    else:
        bdd = torch.zeros(N, device="cuda", dtype=torch.float64, requires_grad=True)
        yd = F.layer_norm(xd, (N,), wd, bdd, EPS)
        gx, gw, gb = torch.autograd.grad(yd, (xd, wd, bdd), dy.double())
        errs = [H.rel_err(dx, gx), H.rel_err(dw, gw), H.rel_err(db, gb)]
    del xd, wd, yd, gx, gw
    torch.cuda.empty_cache()
    err = max(errs)

    # torch eager backward: autograd.grad of a retained graph with a fixed dy
    tsets = []
    for dy, x, w, *_ in sets:
        xr = x.detach().clone().requires_grad_(True)
        wr = w.detach().clone().requires_grad_(True)
        if op == "rms":
            yr, ins = F.rms_norm(xr, (N,), wr, EPS), (xr, wr)
        else:
            br = torch.zeros_like(wr).requires_grad_(True)
            yr, ins = F.layer_norm(xr, (N,), wr, br, EPS), (xr, wr, br)
        tsets.append((yr, ins, dy))

    def ref(yr, ins, dy):
        torch.autograd.grad(yr, ins, dy, retain_graph=True)

    t_ours = H.bench(ours, sets)
    t_ref = H.bench(ref, tsets)
    out = _row(f"{op} BW", f"{M}x{N}", dt, nbytes, t_ours, t_ref, copy_gbs, err, str(plan.sku()))
    out["relerr_parts"] = errs
    del sets, tsets
    torch.cuda.empty_cache()
    return out


# ================================================================== channel norms (adaptive)
_FIELD_GUESS = {
    "shape": lambda c: c["shape"], "dtype": lambda c: c["dtype"], "eps": lambda c: c["eps"],
    "num_groups": lambda c: c["groups"], "groups": lambda c: c["groups"],
    "group_count": lambda c: c["groups"], "has_weight": lambda c: True,
    "has_bias": lambda c: True, "training": lambda c: True, "momentum": lambda c: 0.1,
    "channel_axis": lambda c: 1, "axis": lambda c: 1, "normalized_ndim": lambda c: 1,
}


_ALWAYS = ("shape", "dtype", "eps", "num_groups", "groups", "group_count", "has_weight",
           "has_bias", "training")


def _channel_setup(kind, shape, dt):
    """(plan, run(x, w, b, y, extras), torch_fn(x, w, b), extras_factory) for GroupNorm /
    BatchNorm (training mode, running statistics in f32 as torch keeps them) forward."""
    import torch
    import torch.nn.functional as F

    bd = _bd()
    from baracuda_dsl.ops.normalization import channel_norm as cn

    C = shape[1]
    half = dt in ("float16", "bfloat16")
    pdt = "float32" if half else dt
    if kind == "GroupNorm":
        plan = cn.GroupNormPlan.select(cn.GroupNormDescriptor(tuple(shape), GROUPS, dt, 1e-5,
                                                              True, True, param_dtype=pdt))
    else:
        plan = cn.BatchNormPlan.select(cn.BatchNormDescriptor(tuple(shape), dt, 1e-5, 0.1, True,
                                                              True, True, True, param_dtype=pdt))
    wsz = plan.workspace_size()
    ws_t = torch.empty(max(wsz, 1), device="cuda", dtype=torch.uint8)
    ws = bd.Workspace(ws_t.data_ptr(), ws_t.numel(), ws_t) if wsz else None  # owner keeps it alive
    pt = getattr(torch, pdt)

    def extras():
        if kind == "GroupNorm":
            return {}
        return dict(running_mean=torch.zeros(C, device="cuda", dtype=pt),
                    running_var=torch.ones(C, device="cuda", dtype=pt))

    def run(x, w, b, y, ex):
        if kind == "GroupNorm":
            plan.run(cn.GroupNormArgs(x, y, w, b), workspace=ws)
        else:
            plan.run(cn.BatchNormArgs(x, y, w, b, ex["running_mean"], ex["running_var"]),
                     workspace=ws)

    if kind == "GroupNorm":
        def ref(x, w, b, ex=None):
            return F.group_norm(x, GROUPS, w, b, 1e-5)
    else:
        def ref(x, w, b, ex=None):
            return F.batch_norm(x, None, None, w, b, True, 0.1, 1e-5)
    return plan, run, ref, extras


def bench_channel(kind, shape, dt, copy_gbs):
    import torch

    tdt = getattr(torch, dt)
    shp = "x".join(map(str, shape))
    numel = 1
    for s in shape:
        numel *= s
    nbytes = 2 * numel * tdt.itemsize
    C = shape[1]
    (setup, msg) = H.safe(_channel_setup, kind, shape, dt)
    if setup is None:
        return _na(f"{kind} FW", shp, dt, msg)
    plan, run, ref, extras = setup
    sets = []
    for _ in range(n_sets(nbytes)):
        x = torch.randn(*shape, device="cuda", dtype=tdt)
        pdt = torch.float32 if tdt in (torch.float16, torch.bfloat16) else tdt  # param dtype
        w = 1 + 0.5 * torch.randn(C, device="cuda", dtype=pdt)
        b = torch.randn(C, device="cuda", dtype=pdt)
        sets.append((x, w, b, torch.empty_like(x), extras()))
    x, w, b, y, ex = sets[0]
    y.fill_(float("nan"))
    _, msg = H.safe(run, x, w, b, y, ex)
    if msg is not None:
        return _na(f"{kind} FW", shp, dt, msg)
    torch.cuda.synchronize()
    with torch.no_grad():
        r = ref(x.double(), w.double(), b.double())
    err = H.rel_err(y, r)
    del r
    t_ours = H.bench(run, sets)
    tsets = [(x, w.to(x.dtype), b.to(x.dtype)) for (x, w, b, y, ex) in sets]  # torch: one dtype
    t_ref = H.bench(lambda x, w, b: ref(x, w, b), tsets)
    out = _row(f"{kind} FW", shp, dt, nbytes, t_ours, t_ref, copy_gbs, err, str(plan.sku()))
    del sets
    torch.cuda.empty_cache()
    return out


# ===================================================================== host µs, small problems
def host_costs():
    """Host µs per call on small problems (pure host cost of each path), ours and torch's."""
    import torch
    import torch.nn.functional as F

    bd = _bd()
    M, N, dt = SMALL
    tdt = getattr(torch, dt)
    x = torch.randn(M, N, device="cuda", dtype=tdt)
    w = torch.randn(N, device="cuda", dtype=tdt)
    b = torch.randn(N, device="cuda", dtype=tdt)
    y = torch.empty_like(x)
    dy = torch.randn_like(x)
    dx = torch.empty_like(x)
    dw, db = torch.empty_like(w), torch.empty_like(w)
    mean, rstd = _stats(x, "ln")
    mean, rstd = mean.float(), rstd.float()
    out = []

    def add(op, ours, theirs):
        o, m1 = H.safe(H.host_us_best, ours, 2000)
        t, m2 = H.safe(H.host_us_best, theirs, 2000)
        out.append(dict(op=op, shape=f"{M}x{N}", dtype=dt,
                        ours_us=o["median"] if o else None, ours_us_min=o["min"] if o else None,
                        torch_us=t["median"] if t else None, status=m1 or m2 or "ok"))

    for op in ("rms", "ln"):
        plan, fw = _fw_plan(op, M, N, dt)
        ref = _fw_torch(op, N)
        add(f"{op} FW", lambda: fw(x, w, b, y), lambda: ref(x, w, b, y))
    p = bd.RMSNormBackwardPlan.select(bd.RMSNormBackwardDescriptor((M, N), 1, dt, True))
    wst = torch.empty(max(p.workspace_size(), 1), device="cuda", dtype=torch.uint8)
    ws = bd.Workspace(wst.data_ptr(), wst.numel())
    xr = x.detach().clone().requires_grad_(True)
    wr = w.detach().clone().requires_grad_(True)
    yr = F.rms_norm(xr, (N,), wr, EPS)
    add("rms BW", lambda: p.run(bd.RMSNormBackwardArgs(dy, x, rstd, dx, w, dw), workspace=ws),
        lambda: torch.autograd.grad(yr, (xr, wr), dy, retain_graph=True))
    p2 = bd.LayerNormBackwardPlan.select(bd.LayerNormBackwardDescriptor((M, N), 1, dt, True, True))
    wst2 = torch.empty(max(p2.workspace_size(), 1), device="cuda", dtype=torch.uint8)
    ws2 = bd.Workspace(wst2.data_ptr(), wst2.numel())
    br = torch.zeros_like(wr).requires_grad_(True)
    yl = F.layer_norm(xr, (N,), wr, br, EPS)
    add("ln BW", lambda: p2.run(bd.LayerNormBackwardArgs(dy, x, mean, rstd, dx, w, dw, db),
                                workspace=ws2),
        lambda: torch.autograd.grad(yl, (xr, wr, br), dy, retain_graph=True))
    shape, cdt = SMALL_CHAN
    ctdt = getattr(torch, cdt)
    for kind in ("GroupNorm", "BatchNorm"):
        setup, msg = H.safe(_channel_setup, kind, shape, cdt)
        if setup is None:
            out.append(dict(op=f"{kind} FW", shape="x".join(map(str, shape)), dtype=cdt,
                            status=f"not available: {msg}"))
            continue
        _plan, run, ref, extras = setup
        cx = torch.randn(*shape, device="cuda", dtype=ctdt)
        pdt = torch.float32 if ctdt in (torch.float16, torch.bfloat16) else ctdt  # param dtype
        cw, cb = torch.randn(shape[1], device="cuda", dtype=pdt), torch.randn(
            shape[1], device="cuda", dtype=pdt)
        tw, tb = cw.to(ctdt), cb.to(ctdt)  # torch wants one dtype
        cy, ex = torch.empty_like(cx), extras()
        o, m1 = H.safe(H.host_us_best, lambda: run(cx, cw, cb, cy, ex), 2000)
        t, m2 = H.safe(H.host_us_best, lambda: ref(cx, tw, tb), 2000)
        out.append(dict(op=f"{kind} FW", shape="x".join(map(str, shape)), dtype=cdt,
                        ours_us=o["median"] if o else None, ours_us_min=o["min"] if o else None,
                        torch_us=t["median"] if t else None, status=m1 or m2 or "ok"))
    return out


# ================================================================================== driver
def run(copy_gbs: float, quick: bool = False, log=print) -> dict:
    """All norm cases; failures become rows with a status instead of aborting the run."""
    rows = []
    fw, bw, ch = (QUICK_FW, QUICK_BW, QUICK_CHAN) if quick else (ROW_FW, ROW_BW, CHAN)
    for op in ("rms", "ln"):
        for M, N, dt in fw:
            r, msg = H.safe(bench_fw, op, M, N, dt, copy_gbs)
            rows.append(r or _na(f"{op} FW", f"{M}x{N}", dt, msg))
            log(_short(rows[-1]))
        for M, N, dt in bw:
            r, msg = H.safe(bench_bw, op, M, N, dt, copy_gbs)
            rows.append(r or _na(f"{op} BW", f"{M}x{N}", dt, msg))
            log(_short(rows[-1]))
    for kind in ("GroupNorm", "BatchNorm"):
        for shape, dt in ch:
            r, msg = H.safe(bench_channel, kind, shape, dt, copy_gbs)
            rows.append(r or _na(f"{kind} FW", "x".join(map(str, shape)), dt, msg))
            log(_short(rows[-1]))
    host, msg = H.safe(host_costs)
    if host is None:
        host = [dict(op="host costs", status=f"not available: {msg}")]
    return dict(rows=rows, host=host)


def _short(r) -> str:
    if r.get("ms") is None:
        return f"{r['op']:>13} {r['shape']:>14} {r['dtype']:>8}  {r['status']}"
    return (f"{r['op']:>13} {r['shape']:>14} {r['dtype']:>8}  {r['ms']:.3f} ms  "
            f"{r['frac']:.2f} of copy  torch {r['torch_frac']:.2f}  x{r['speedup']:.2f}  "
            f"err {r['relerr']:.1e}  {r['status']}")


def markdown(res: dict) -> str:
    rows = []
    for r in res["rows"]:
        if r.get("ms") is None:
            rows.append([r["op"], r["shape"], r["dtype"], "—", "—", "—", "—", "—", "—", r["status"]])
            continue
        rows.append([r["op"], r["shape"], r["dtype"], H.fmt(r["ms"], ".3f"), H.fmt(r["gbs"], ".0f"),
                     H.fmt(r["frac"]), H.fmt(r["torch_frac"]), H.fmt(r["speedup"]) + "×",
                     H.fmt(r["relerr"], ".1e"), r["status"]])
    t1 = H.md_table(["op", "shape", "dtype", "ms (median)", "GB/s", "/ copy", "torch / copy",
                     "vs torch", "rel err (f64 ref)", "status"], rows)
    hrows = [[h["op"], h.get("shape", ""), h.get("dtype", ""), H.fmt(h.get("ours_us")),
              H.fmt(h.get("ours_us_min")), H.fmt(h.get("torch_us")), h["status"]]
             for h in res["host"]]
    t2 = H.md_table(["op", "shape", "dtype", "ours host µs/call (median of 3)", "ours (min)",
                     "torch eager µs/call", "status"], hrows)
    return t1 + "\n\nHost µs per call on a small problem (2000 back-to-back calls, Args built " \
                "per call):\n\n" + t2 + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="baracuda-dsl normalisation benchmarks vs torch eager")
    ap.add_argument("--out", default=None, help="directory for bench_norms.json and .md")
    ap.add_argument("--quick", action="store_true", help="one shape per family")
    ns = ap.parse_args(argv)
    cp = H.copy_bandwidth()
    print(f"copy ceiling {cp['gbs']:.0f} GB/s")
    res = run(cp["gbs"], ns.quick)
    res["copy"] = cp
    md = markdown(res)
    print(md)
    if ns.out:
        os.makedirs(ns.out, exist_ok=True)
        with open(os.path.join(ns.out, "bench_norms.json"), "w") as f:
            json.dump(res, f, indent=1, default=str)
        with open(os.path.join(ns.out, "bench_norms.md"), "w") as f:
            f.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
