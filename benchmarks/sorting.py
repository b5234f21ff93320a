"""Sorting-family benchmarks on the GPU host: baracuda-dsl SortPlan / ArgsortPlan / TopkPlan /
KthvaluePlan vs torch.sort / torch.argsort / torch.topk / torch.kthvalue and cupy.sort /
cupy.argsort, and the namespace's ``unique_all`` vs torch.unique, same run.
Usage (GPU host, from the repo root):
``python3 -m benchmarks.sorting [--quick] [--out DIR] [--sections sort,unique]``; run_all calls
``run`` (section ``sort``) and ``run_unique`` (section ``unique``) with ``(out_dir, quick, log)``.

Sort cases: f32 keys, one row of 2^24, 2^26, 2^28 keys (the radix path) and 4096 rows × 4096 (the
small-row bitonic path); sort = values + int64 indices, argsort = indices only; top-k (k = 64
of 4096 × 4096, k = 1024 of 2^24).  Reported: ms (median), keys/s (Gkeys/s) and ours / theirs
speed ratio (> 1 means faster).  Every timed output is checked once against torch (values
exact; argsort equal to torch's stable argsort).

Unique case: xp.unique_all on 2^24 int32 in [0, 2^20) vs torch.unique(sorted=True,
return_inverse=True, return_counts=True) (ours also returns indices); checked exactly against
torch before timing; "vs torch" = torch time / ours.
"""

from __future__ import annotations

import json
import os

from . import harness as H

SIZES = [(1, 2**24), (1, 2**26), (1, 2**28), (4096, 4096)]
QUICK = [(1, 2**24), (4096, 4096)]
TOPK = [(4096, 4096, 64), (1, 2**24, 1024)]
KTH = [(4096, 4096, 2048)]
N_UNIQUE = 2 ** 24


def _cupy():
    try:
        import cupy

        return cupy
    except Exception:  # noqa: BLE001
        return None


def _bench_sort(rows, n, op):
    import torch

    from baracuda_dsl.ops.sorting.sort import (ArgsortArgs, ArgsortDescriptor, ArgsortPlan,
                                               SortArgs, SortDescriptor, SortPlan)

    shape = (rows, n) if rows > 1 else (n,)
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.rand(shape, device="cuda", generator=g)
    idx = torch.empty(shape, dtype=torch.int64, device="cuda")
    vals = torch.empty_like(x) if op == "sort" else None
    if op == "sort":
        plan = SortPlan.select(SortDescriptor(shape, -1, "float32"))
        args = SortArgs(x, vals, idx)
    else:
        plan = ArgsortPlan.select(ArgsortDescriptor(shape, -1, "float32"))
        args = ArgsortArgs(x, idx)
    ws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8, device="cuda")
    ours = H.bench(lambda: plan.run(args, workspace=ws), reps=10, warm=2, batch=2)
    ref = torch.sort(x, dim=-1, stable=True)
    ok = torch.equal(idx, ref.indices) and (vals is None or torch.equal(vals, ref.values))
    if op == "sort":
        t_torch = H.bench(lambda: torch.sort(x, dim=-1, stable=True), reps=10, warm=2, batch=2)
    else:
        t_torch = H.bench(lambda: torch.argsort(x, dim=-1, stable=True), reps=10, warm=2,
                          batch=2)
    del ref
    cp = _cupy()
    t_cupy = None
    if cp is not None:
        xc = cp.asarray(x)
        fn = (lambda: cp.sort(xc, axis=-1)) if op == "sort" else (lambda: cp.argsort(xc, axis=-1))
        t_cupy, _ = H.safe(H.bench, fn, reps=10, warm=2, batch=2)
    keys = rows * n
    row = dict(op=op, shape="x".join(map(str, shape)), dtype="float32", ms=ours.median,
               gkeys=keys / ours.median / 1e6, torch_ms=t_torch.median,
               torch_gkeys=keys / t_torch.median / 1e6,
               vs_torch=t_torch.median / ours.median,
               cupy_ms=t_cupy.median if t_cupy else None,
               vs_cupy=(t_cupy.median / ours.median) if t_cupy else None,
               sku=str(plan.sku()), status="ok" if ok else "FAIL (differs from torch.sort)")
    return row


def _bench_topk(rows, n, k):
    import torch

    from baracuda_dsl.ops.sorting.sort import TopkArgs, TopkDescriptor, TopkPlan

    shape = (rows, n) if rows > 1 else (n,)
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.rand(shape, device="cuda", generator=g)
    d = TopkDescriptor(shape, k, -1, "float32", True)
    plan = TopkPlan.select(d)
    v = torch.empty(d.out_shape, device="cuda")
    i = torch.empty(d.out_shape, dtype=torch.int64, device="cuda")
    ws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8, device="cuda")
    args = TopkArgs(x, v, i)
    ours = H.bench(lambda: plan.run(args, workspace=ws), reps=10, warm=2, batch=2)
    ref = torch.topk(x, k, dim=-1)
    ok = torch.equal(v, ref.values) and torch.equal(torch.gather(x, -1, i), v)
    t_torch = H.bench(lambda: torch.topk(x, k, dim=-1), reps=10, warm=2, batch=2)
    keys = rows * n
    return dict(op=f"topk k={k}", shape="x".join(map(str, shape)), dtype="float32",
                ms=ours.median, gkeys=keys / ours.median / 1e6, torch_ms=t_torch.median,
                torch_gkeys=keys / t_torch.median / 1e6, vs_torch=t_torch.median / ours.median,
                cupy_ms=None, vs_cupy=None, sku=str(plan.sku()),
                status="ok" if ok else "FAIL (differs from torch.topk)")


def _bench_kthvalue(rows, n, k):
    import torch

    from baracuda_dsl.ops.sorting.sort import KthvalueArgs, KthvalueDescriptor, KthvaluePlan

    shape = (rows, n)
    g = torch.Generator(device="cuda").manual_seed(2)
    x = torch.rand(shape, device="cuda", generator=g)
    d = KthvalueDescriptor(shape, k, -1, "float32", False)
    plan = KthvaluePlan.select(d)
    v = torch.empty(d.out_shape, device="cuda")
    i = torch.empty(d.out_shape, dtype=torch.int64, device="cuda")
    ws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8, device="cuda")
    args = KthvalueArgs(x, v, i)
    ours = H.bench(lambda: plan.run(args, workspace=ws), reps=10, warm=2, batch=2)
    ref = torch.kthvalue(x, k, dim=-1)
    ok = torch.equal(v, ref.values) and torch.equal(torch.gather(x, -1, i[:, None])[:, 0], v)
    t_torch = H.bench(lambda: torch.kthvalue(x, k, dim=-1), reps=10, warm=2, batch=2)
    keys = rows * n
    return dict(op=f"kthvalue k={k}", shape="x".join(map(str, shape)), dtype="float32",
                ms=ours.median, gkeys=keys / ours.median / 1e6, torch_ms=t_torch.median,
                torch_gkeys=keys / t_torch.median / 1e6, vs_torch=t_torch.median / ours.median,
                cupy_ms=None, vs_cupy=None, sku=str(plan.sku()),
                status="ok" if ok else "FAIL (differs from torch.kthvalue)")


def _free():
    import gc

    import torch

    gc.collect()
    torch.cuda.empty_cache()
    cp = _cupy()
    if cp is not None:
        cp.get_default_memory_pool().free_all_blocks()


def _na(op, shape, msg):
    return dict(op=op, shape=shape, dtype="float32", ms=None, status=f"not available: {msg}")


def run(out_dir=None, quick=False, log=print):
    """Run every case; returns the list of result rows (also written to ``out_dir``)."""
    H.check_cuda()
    rows = []
    for r, n in (QUICK if quick else SIZES):
        for op in ("sort", "argsort"):
            res, msg = H.safe(_bench_sort, r, n, op)
            rows.append(res or _na(op, f"{r}x{n}", msg))
            log(_short(rows[-1]))
            _free()
    for r, n, k in (TOPK[:1] if quick else TOPK):
        res, msg = H.safe(_bench_topk, r, n, k)
        rows.append(res or _na(f"topk k={k}", f"{r}x{n}", msg))
        log(_short(rows[-1]))
    for r, n, k in KTH:
        res, msg = H.safe(_bench_kthvalue, r, n, k)
        rows.append(res or _na(f"kthvalue k={k}", f"{r}x{n}", msg))
        log(_short(rows[-1]))
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "bench_sort.json"), "w") as f:
            json.dump(dict(rows=rows, device=H.device_info()), f, indent=1, default=str)
        with open(os.path.join(out_dir, "bench_sort.md"), "w") as f:
            f.write(markdown(rows))
    return rows


def _short(r) -> str:
    if r.get("ms") is None:
        return f"{r['op']:12s} {r['shape']:>12s}  {r['status']}"
    cupy = f" vs cupy {r['vs_cupy']:.2f}x" if r.get("vs_cupy") else ""
    return (f"{r['op']:12s} {r['shape']:>12s}  {r['ms']:.3f} ms  {r['gkeys']:.2f} Gkeys/s  "
            f"vs torch {r['vs_torch']:.2f}x{cupy}  {r['status']}")


def markdown(rows) -> str:
    head = ["op", "shape", "ms", "Gkeys/s", "torch ms", "ours/torch speed", "cupy ms",
            "ours/cupy speed", "status"]
    body = [[r["op"], r["shape"], H.fmt(r.get("ms"), ".3f"), H.fmt(r.get("gkeys")),
             H.fmt(r.get("torch_ms"), ".3f"), H.fmt(r.get("vs_torch")),
             H.fmt(r.get("cupy_ms"), ".3f"), H.fmt(r.get("vs_cupy")), r["status"]]
            for r in rows]
    return H.md_table(head, body)


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


def run_unique(out_dir=None, quick: bool = False, log=print) -> dict:
    """The unique_all row (the same case with ``quick``), under harness.safe."""
    torch = H._torch()
    rows = H.group_rows("unique", (lambda: [_unique_row(torch)],), H.ms_line, log)
    return H.save_json(dict(rows=rows), out_dir, "bench_unique.json")


SECTIONS = (H.Section("sort", "Sorting and top-k", run, markdown),
            H.Section("unique", "Sets (unique)", run_unique, H.ms_table))


def main(argv=None):
    H.cli_main(__doc__, SECTIONS, argv)


if __name__ == "__main__":
    main()
