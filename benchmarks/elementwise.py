"""Elementwise benchmarks on the GPU host: baracuda-dsl ``ElementwisePlan`` vs torch eager, same
run, same copy ceiling.  Usage (GPU host, from the repo root):
``python3 -m benchmarks.elementwise [--quick] [--out DIR]`` (``benchmarks.run_all`` runs it with
the run's copy ceiling: ``run(copy_gbs, quick, log)``).

Bandwidth cases (bytes = every operand read once + the output written):

=====================  ======================================================================
unary                  exp, gelu (erf form), silu on 2^28 elements, bf16 and f32
binary                 add, multiply on 2^28 elements, bf16 and f32
broadcast              (M, N) + (N,) bias add, M = 65536, N = 4096, bf16 and f32
transposed operand     a + b.T on 16384 × 16384 bf16 (the s4 strided path)
cast                   f32 → bf16 on 2^28 elements
=====================  ======================================================================

Every output is NaN-poisoned, computed once and checked against a float64 torch reference
(‖out − ref‖/‖ref‖, chunked); rows over tolerance are marked FAIL.  Timing: harness.bench (CUDA
events around batches of back-to-back calls, warm-up, median of 25 samples); "/ copy" divides the
model bytes / time by the device-to-device copy bandwidth of the same run; "vs torch" = torch
eager time / ours (> 1: ours faster).  torch eager uses ``out=`` where torch offers it.

Host µs per op: the namespace on tiny arrays (16 float32 elements: ``xp.add(x, y)``, ``x + y``,
``xp.add(x, 1.0)``, ``xp.exp(x)``, and ``plan.run`` with pre-built Args as the floor) against
torch eager's same op on tensors of the same size: a loop of 1000 calls, one
``cuda.synchronize`` at the end inside the timed region, divided by 1000; median (and min) of
three trials.  The ratio ours / torch is reported against the goal of ≤ 0.8.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from . import harness as H
from .harness import n_sets

N_BIG = 2 ** 28
BCAST = (65536, 4096)
TRANS = 16384
TOL = {"bfloat16": 1e-2, "float16": 5e-3, "float32": 1e-5, "float64": 1e-10}
HOST_GOAL = 0.8
HOST_N = 1000
TINY = 16

UNARY = [(op, dt) for op in ("exp", "gelu", "silu") for dt in ("bfloat16", "float32")]
BINARY = [(op, dt) for op in ("add", "multiply") for dt in ("bfloat16", "float32")]
QUICK_UNARY = [("gelu", "bfloat16")]
QUICK_BINARY = [("add", "bfloat16")]


def _torch():
    import torch

    return torch


def _plan(op, shapes, dt, out_dtype=None):
    from baracuda_dsl.ops.elementwise.elementwise import ElementwiseDescriptor, ElementwisePlan

    return ElementwisePlan.select(ElementwiseDescriptor(op, tuple(shapes), dt, out_dtype))


def _args(ins, outs):
    from baracuda_dsl.ops.elementwise.elementwise import ElementwiseArgs

    return ElementwiseArgs(list(ins), list(outs))


def _torch_fn(op):
    """(torch eager call writing / returning the result, float64 reference) for ``op``."""
    torch = _torch()
    F = torch.nn.functional
    eager = {
        "exp": lambda x, o: torch.exp(x, out=o),
        "gelu": lambda x, o: F.gelu(x),
        "silu": lambda x, o: F.silu(x),
        "add": lambda a, b, o: torch.add(a, b, out=o),
        "multiply": lambda a, b, o: torch.mul(a, b, out=o),
        "cast": lambda x, o: o.copy_(x),
    }[op]
    ref = {
        "exp": torch.exp, "gelu": F.gelu, "silu": F.silu, "add": torch.add,
        "multiply": torch.mul, "cast": lambda x: x,
    }[op]
    return eager, ref


def _rel_err_rows(out, ref_fn, ins, rows_per_chunk=2048) -> float:
    """‖out − ref‖/‖ref‖ over 2-D ``out`` computed in row chunks (float64 reference of the
    matching input rows; inputs already expanded to out's shape); inf on NaN / inf in out."""
    torch = _torch()
    num = den = 0.0
    for r0 in range(0, out.shape[0], rows_per_chunk):
        r1 = min(out.shape[0], r0 + rows_per_chunk)
        o = out[r0:r1].to(torch.float64)
        if not bool(torch.isfinite(o).all()):
            return float("inf")
        r = ref_fn(*(x[r0:r1].to(torch.float64) for x in ins))
        num += float((o - r).pow(2).sum())
        den += float(r.pow(2).sum())
    return (num ** 0.5) / (den ** 0.5) if den > 0 else num ** 0.5


def _row(case, shape, dt, nbytes, t_ours, t_ref, copy_gbs, err, sku, path, status="ok",
         out_dt=None):
    ours = H.gbs(nbytes, t_ours.median) if t_ours else None
    theirs = H.gbs(nbytes, t_ref.median) if t_ref else None
    tol = TOL.get(out_dt or dt, 1e-2)
    if status == "ok" and err is not None and not err <= tol:
        status = f"FAIL (rel err {err:.1e} > {tol:.0e})"
    return dict(case=case, shape=shape, dtype=dt, bytes=nbytes, path=path,
                ms=t_ours.median if t_ours else None, ms_min=t_ours.min if t_ours else None,
                ms_p90=t_ours.p90 if t_ours else None, gbs=ours,
                frac=ours / copy_gbs if ours else None,
                torch_ms=t_ref.median if t_ref else None, torch_gbs=theirs,
                torch_frac=theirs / copy_gbs if theirs else None,
                speedup=(t_ref.median / t_ours.median) if (t_ours and t_ref) else None,
                relerr=err, sku=sku, status=status)


def _na(case, shape, dt, msg):
    return dict(case=case, shape=shape, dtype=dt, status=f"not available: {msg}")


def _path_of(plan, ins, outs) -> str:
    """The kernel path the plan picks for this call layout (flat / s4 / fallback)."""
    from baracuda_dsl.tensor import as_view

    try:
        iv = [as_view(x) for x in ins]
        ov = [as_view(o) for o in outs]
        path, _, _ = plan._layout(iv, ov)
        return path or "fallback"
    except Exception:  # noqa: BLE001 - informational only
        return "?"


def _bench_case(case, op, dt, make_sets, shapes, nbytes, copy_gbs, out_dtype=None,
                expand=None):
    """Time one case.  ``make_sets()`` → list of (inputs, output) on the device; ``expand``
    maps the inputs to out-shaped views for the reference check."""
    torch = _torch()
    plan = _plan("cast" if out_dtype else op, shapes, dt, out_dtype)
    sets = make_sets()
    eager, ref_fn = _torch_fn("cast" if out_dtype else op)

    def ours(ins, out):
        plan.run(_args(ins, (out,)))

    def theirs(ins, out):
        eager(*ins, out)

    ins, out = sets[0]
    out.fill_(float("nan"))
    ours(ins, out)
    torch.cuda.synchronize()
    view_ins = expand(ins) if expand else ins
    err = _rel_err_rows(out.reshape(out.shape[0], -1) if out.dim() > 1 else out.view(-1, 4096),
                        ref_fn, [v.reshape(out.shape[0], -1) if out.dim() > 1 else
                                 v.reshape(-1, 4096) for v in view_ins])
    path = _path_of(plan, ins, (out,))
    t_ours = H.bench(ours, sets)
    t_ref = H.bench(theirs, sets)
    shp = "x".join(map(str, out.shape))
    row = _row(case, shp, dt, nbytes, t_ours, t_ref, copy_gbs, err, str(plan.sku()), path,
               out_dt=out_dtype)
    del sets
    torch.cuda.empty_cache()
    return row


def bench_unary(op, dt, copy_gbs, n=N_BIG):
    torch = _torch()
    tdt = getattr(torch, dt)
    nbytes = 2 * n * tdt.itemsize

    def make():
        return [((torch.randn(n, device="cuda", dtype=tdt),), torch.empty(n, device="cuda",
                                                                            dtype=tdt))
                for _ in range(n_sets(nbytes))]

    return _bench_case(f"{op}", op, dt, make, [(n,)], nbytes, copy_gbs)


def bench_binary(op, dt, copy_gbs, n=N_BIG):
    torch = _torch()
    tdt = getattr(torch, dt)
    nbytes = 3 * n * tdt.itemsize

    def make():
        return [((torch.randn(n, device="cuda", dtype=tdt),
                  torch.randn(n, device="cuda", dtype=tdt) + 0.5),
                 torch.empty(n, device="cuda", dtype=tdt)) for _ in range(n_sets(nbytes))]

    return _bench_case(op, op, dt, make, [(n,), (n,)], nbytes, copy_gbs)


def bench_broadcast(dt, copy_gbs, shape=BCAST):
    torch = _torch()
    tdt = getattr(torch, dt)
    M, N = shape
    nbytes = (2 * M * N + N) * tdt.itemsize

    def make():
        return [((torch.randn(M, N, device="cuda", dtype=tdt),
                  torch.randn(N, device="cuda", dtype=tdt)),
                 torch.empty(M, N, device="cuda", dtype=tdt)) for _ in range(n_sets(nbytes))]

    return _bench_case("add (M,N)+(N,)", "add", dt, make, [(M, N), (N,)], nbytes, copy_gbs,
                       expand=lambda ins: (ins[0], ins[1].expand(M, N)))


def bench_transposed(dt, copy_gbs, n=TRANS):
    torch = _torch()
    tdt = getattr(torch, dt)
    nbytes = 3 * n * n * tdt.itemsize

    def make():
        return [((torch.randn(n, n, device="cuda", dtype=tdt),
                  torch.randn(n, n, device="cuda", dtype=tdt).t()),
                 torch.empty(n, n, device="cuda", dtype=tdt)) for _ in range(n_sets(nbytes))]

    return _bench_case("add a + b.T", "add", dt, make, [(n, n), (n, n)], nbytes, copy_gbs)


def bench_cast(copy_gbs, n=N_BIG):
    torch = _torch()
    nbytes = n * (4 + 2)

    def make():
        return [((torch.randn(n, device="cuda", dtype=torch.float32),),
                 torch.empty(n, device="cuda", dtype=torch.bfloat16))
                for _ in range(n_sets(nbytes))]

    return _bench_case("cast f32→bf16", "cast", "float32", make, [(n,)], nbytes, copy_gbs,
                       out_dtype="bfloat16")


# ============================================================================ host µs per op
def _loop_us(fn, n=HOST_N) -> float:
    """Host µs per call of ``fn`` (harness.host_us: enqueue cost of back-to-back calls)."""
    return H.host_us(fn, n=n)


def _loop_best(fn, trials=3) -> dict:
    v = sorted(_loop_us(fn) for _ in range(trials))
    return dict(median=statistics.median(v), min=v[0], trials=v)


def host_costs():
    """Host µs per op on 16-element float32 arrays: the namespace vs torch eager."""
    import numpy as np

    torch = _torch()
    a = np.arange(TINY, dtype=np.float32)
    tx = torch.from_numpy(a).cuda()
    ty = torch.from_numpy(a + 1).cuda()
    to = torch.empty_like(tx)
    out = []

    def add(name, ours, theirs, check=None):
        o, m1 = H.safe(_loop_best, ours)
        t, m2 = H.safe(_loop_best, theirs)
        status = m1 or m2 or "ok"
        if status == "ok" and check is not None:
            ok, m3 = H.safe(check)
            status = "ok" if ok else f"FAIL ({m3 or 'wrong result'})"
        ratio = (o["median"] / t["median"]) if (o and t) else None
        out.append(dict(op=name, n=TINY, ours_us=o["median"] if o else None,
                        ours_us_min=o["min"] if o else None,
                        torch_us=t["median"] if t else None, ratio=ratio,
                        meets_goal=(ratio is not None and ratio <= HOST_GOAL), status=status))

    try:
        import array_api as xp

        x, y = xp.asarray(a), xp.asarray(a + 1)
    except Exception as e:  # noqa: BLE001 - reported as a row
        out.append(dict(op="xp (namespace)", n=TINY, status=f"not available: {e}"[:300]))
        x = y = xp = None
    if xp is not None:
        add("xp.add(x, y)", lambda: xp.add(x, y), lambda: torch.add(tx, ty),
            lambda: np.array_equal(xp.add(x, y).to_numpy(), a + (a + 1)))
        add("x + y", lambda: x + y, lambda: tx + ty,
            lambda: np.array_equal((x + y).to_numpy(), a + (a + 1)))
        add("xp.add(x, 1.0)", lambda: xp.add(x, 1.0), lambda: torch.add(tx, 1.0),
            lambda: np.array_equal(xp.add(x, 1.0).to_numpy(), a + np.float32(1)))
        add("xp.exp(x)", lambda: xp.exp(x), lambda: torch.exp(tx),
            lambda: np.allclose(xp.exp(x).to_numpy(), np.exp(a), rtol=1e-6))
    plan = _plan("add", [(TINY,), (TINY,)], "float32")
    args = _args((tx, ty), (to,))
    add("plan.run(pre-built Args)", lambda: plan.run(args),
        lambda: torch.add(tx, ty, out=to))
    return out


# ================================================================================== driver
def run(copy_gbs: float, quick: bool = False, log=print) -> dict:
    """All cases; failures become rows with a status instead of aborting the run."""
    rows = []

    def do(fn, case, shape, dt, *a):
        r, msg = H.safe(fn, *a)
        rows.append(r or _na(case, shape, dt, msg))
        log(_short(rows[-1]))

    for op, dt in (QUICK_UNARY if quick else UNARY):
        do(bench_unary, op, str(N_BIG), dt, op, dt, copy_gbs)
    for op, dt in (QUICK_BINARY if quick else BINARY):
        do(bench_binary, op, str(N_BIG), dt, op, dt, copy_gbs)
    for dt in (("bfloat16",) if quick else ("bfloat16", "float32")):
        do(bench_broadcast, "add (M,N)+(N,)", "x".join(map(str, BCAST)), dt, dt, copy_gbs)
    if not quick:
        do(bench_transposed, "add a + b.T", f"{TRANS}x{TRANS}", "bfloat16", "bfloat16",
           copy_gbs)
    do(bench_cast, "cast f32→bf16", str(N_BIG), "float32", copy_gbs)
    host, msg = H.safe(host_costs)
    if host is None:
        host = [dict(op="host costs", status=f"not available: {msg}")]
    for h in host:
        log(f"host {h['op']:>26}: ours {H.fmt(h.get('ours_us'))} µs, torch "
            f"{H.fmt(h.get('torch_us'))} µs, ratio {H.fmt(h.get('ratio'))}  {h['status']}")
    return dict(rows=rows, host=host)


def _short(r) -> str:
    if r.get("ms") is None:
        return f"{r['case']:>16} {r['shape']:>12} {r['dtype']:>8}  {r['status']}"
    return (f"{r['case']:>16} {r['shape']:>12} {r['dtype']:>8}  {r['ms']:.3f} ms  "
            f"{r['frac']:.2f} of copy  torch {r['torch_frac']:.2f}  x{r['speedup']:.2f}  "
            f"[{r['path']}] err {r['relerr']:.1e}  {r['status']}")


def markdown(res: dict) -> str:
    rows = []
    for r in res["rows"]:
        if r.get("ms") is None:
            rows.append([r["case"], r["shape"], r["dtype"], "—", "—", "—", "—", "—", "—", "—",
                         r["status"]])
            continue
        rows.append([r["case"], r["shape"], r["dtype"], r["path"], H.fmt(r["ms"], ".3f"),
                     H.fmt(r["gbs"], ".0f"), H.fmt(r["frac"]), H.fmt(r["torch_frac"]),
                     H.fmt(r["speedup"]) + "×", H.fmt(r["relerr"], ".1e"), r["status"]])
    t1 = H.md_table(["case", "elements / shape", "dtype", "path", "ms (median)", "GB/s",
                     "/ copy", "torch / copy", "vs torch", "rel err (f64 ref)", "status"], rows)
    hrows = [[h["op"], h.get("n", ""), H.fmt(h.get("ours_us")), H.fmt(h.get("ours_us_min")),
              H.fmt(h.get("torch_us")), H.fmt(h.get("ratio")),
              ("yes" if h.get("meets_goal") else "no") if h.get("ratio") is not None else "—",
              h["status"]] for h in res["host"]]
    t2 = H.md_table(["op", "elements", "ours µs/op (median of 3)", "ours (min)",
                     "torch eager µs/op", "ours / torch", f"≤ {HOST_GOAL}", "status"], hrows)
    return (t1 + f"\n\nHost µs per op on {TINY}-element float32 arrays ({HOST_N} back-to-back "
            "calls, enqueue time; the device keeps up):\n\n" + t2 + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="baracuda-dsl elementwise benchmarks vs torch eager")
    ap.add_argument("--out", default=None, help="directory for bench_elementwise.json and .md")
    ap.add_argument("--quick", action="store_true", help="a few cases only")
    ns = ap.parse_args(argv)
    cp = max(H.copy_bandwidth(), H.copy_bandwidth(), key=lambda c: c["gbs"])
    print(f"copy ceiling {cp['gbs']:.0f} GB/s")
    res = run(cp["gbs"], ns.quick)
    res["copy"] = cp
    res["device"] = H.device_info()
    md = markdown(res)
    print(md)
    if ns.out:
        os.makedirs(ns.out, exist_ok=True)
        with open(os.path.join(ns.out, "bench_elementwise.json"), "w") as f:
            json.dump(res, f, indent=1, default=str)
        with open(os.path.join(ns.out, "bench_elementwise.md"), "w") as f:
            f.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
