"""Indexing benchmarks on the GPU host: ``IndexSelectPlan`` (embedding lookup, index_select along
axis 0 / 1), ``GatherAxisPlan`` and ``ScatterAddPlan`` against torch in the same run.  Usage
(GPU host, from the repo root): ``python3 -m benchmarks.indexing [--quick] [--out DIR]``; run_all
calls ``run(out_dir, quick, log)`` (section ``indexing``).

Cases (model bytes = what must move at least once):

===================  ===========================================================  ================
embedding            weight 131072 × 4096 bf16, 16384 int64 tokens                2 · 16384·4096·2
index_select ax 0    x 65536 × 1024 f32, 32768 indices → 32768 × 1024             2 · out
index_select ax 1    x 4096 × 8192 f32, 4096 indices → 4096 × 4096                2 · out
gather last axis     x 8192 × 4096 f32, index 8192 × 1024 int64                   2 · out + index
scatter_add          out 8192 × 4096 f32 (+=), src / index 8192 × 4096 (dups)     src + index + 2 · out
===================  ===========================================================  ================

Every result is checked against torch first (bit-exact for the copies, ‖out − ref‖/‖ref‖ in
float64 for scatter_add).  "/ copy" divides model bytes / time by the copy ceiling measured in
the same run; "vs torch" = torch time / ours (> 1: ours faster).
"""

from __future__ import annotations

from . import harness as H

CASES = ("embedding", "index_select ax 0", "index_select ax 1", "gather last axis",
         "scatter_add")
QUICK = ("embedding", "gather last axis")


def _row(label, shape, dtype, t, tt, nbytes, copy_gbs, ok, err=0.0):
    g = H.gbs(nbytes, t.median)
    return dict(case=label, shape=shape, dtype=dtype, ms=t.median, torch_ms=tt.median, gbs=g,
                frac=g / copy_gbs, torch_frac=H.gbs(nbytes, tt.median) / copy_gbs, ok=ok,
                err=err)


def _index_select(torch, copy_gbs, label):
    from baracuda_dsl.ops.indexing.indexing import (IndexSelectArgs, IndexSelectDescriptor,
                                                    IndexSelectPlan)

    if label == "embedding":
        shape, axis, n, dt = (131072, 4096), 0, 16384, torch.bfloat16
    elif label == "index_select ax 0":
        shape, axis, n, dt = (65536, 1024), 0, 32768, torch.float32
    else:
        shape, axis, n, dt = (4096, 8192), 1, 4096, torch.float32
    x = torch.randn(shape, device="cuda", dtype=torch.float32).to(dt)
    idx = torch.randint(0, shape[axis], (n,), device="cuda")
    d = IndexSelectDescriptor(shape, axis, n, "bfloat16" if dt == torch.bfloat16 else "float32")
    plan = IndexSelectPlan.select(d)
    out = torch.empty(d.out_shape, device="cuda", dtype=dt)
    args = IndexSelectArgs(x, idx, out)
    plan.run(args)
    if label == "embedding":
        ref_fn = lambda: torch.nn.functional.embedding(idx, x)  # noqa: E731
    else:
        ref_fn = lambda: torch.index_select(x, axis, idx)  # noqa: E731
    ok = bool(torch.equal(out, ref_fn()))
    t = H.bench(lambda: plan.run(args), reps=15)
    tt = H.bench(ref_fn, reps=15)
    nbytes = 2 * out.numel() * out.element_size() + idx.numel() * 8
    r = _row(label, "x".join(map(str, shape)) + f"[{n}]", str(dt).split(".")[-1], t, tt,
             nbytes, copy_gbs, ok)
    r["sku"] = dict(plan.sku().knobs)
    return r


def _gather(torch, copy_gbs, label):
    from baracuda_dsl.ops.indexing.indexing import (GatherAxisArgs, GatherAxisDescriptor,
                                                    GatherAxisPlan)

    x = torch.randn(8192, 4096, device="cuda")
    idx = torch.randint(0, 4096, (8192, 1024), device="cuda")
    out = torch.empty(8192, 1024, device="cuda")
    plan = GatherAxisPlan.select(GatherAxisDescriptor((8192, 4096), (8192, 1024), 1, "float32"))
    args = GatherAxisArgs(x, idx, out)
    plan.run(args)
    ok = bool(torch.equal(out, torch.gather(x, 1, idx)))
    t = H.bench(lambda: plan.run(args), reps=15)
    tt = H.bench(lambda: torch.gather(x, 1, idx), reps=15)
    nbytes = 2 * out.numel() * 4 + idx.numel() * 8
    return _row(label, "8192x4096[8192x1024]", "float32", t, tt, nbytes, copy_gbs, ok)


def _scatter_add(torch, copy_gbs, label):
    from baracuda_dsl.ops.indexing.indexing import (ScatterAddPlan, ScatterAxisArgs,
                                                    ScatterAxisDescriptor)

    base = torch.randn(8192, 4096, device="cuda")
    src = torch.randn(8192, 4096, device="cuda")
    idx = torch.randint(0, 4096, (8192, 4096), device="cuda")
    out = base.clone()
    plan = ScatterAddPlan.select(ScatterAxisDescriptor((8192, 4096), (8192, 4096), 1, "float32",
                                                       reduce="add"))
    args = ScatterAxisArgs(idx, src, out)
    plan.run(args)
    ref = base.double().scatter_add(1, idx, src.double())
    err = float((out.double() - ref).norm() / ref.norm())
    tout = base.clone()
    t = H.bench(lambda: plan.run(args), reps=10)
    tt = H.bench(lambda: tout.scatter_add_(1, idx, src), reps=10)
    nbytes = src.numel() * 4 + idx.numel() * 8 + 2 * out.numel() * 4
    return _row(label, "8192x4096", "float32", t, tt, nbytes, copy_gbs, err < 1e-5, err)


def _case(torch, copy_gbs, label):
    if label.startswith("embedding") or label.startswith("index_select"):
        return _index_select(torch, copy_gbs, label)
    if label.startswith("gather"):
        return _gather(torch, copy_gbs, label)
    return _scatter_add(torch, copy_gbs, label)


def run(out_dir=None, quick=False, log=print):
    copy = H.copy_bandwidth()["gbs"]
    rows = H.case_rows("indexing", [(c,) for c in (QUICK if quick else CASES)], _case,
                       lambda c, err: dict(case=c[0], shape="—", dtype="—", error=err), copy,
                       log)
    return H.save_json(dict(rows=rows, copy_gbs=copy), out_dir, "bench_indexing.json")


def markdown(res) -> str:
    return H.speed_table(res, lambda r: ("ok" if r["ok"] else "FAIL")
                         + (f" {r['err']:.0e}" if r["err"] else ""))


SECTIONS = (H.Section("indexing", "Gather, index_select, scatter", run, markdown),)


def main(argv=None):
    H.cli_main(__doc__, SECTIONS, argv)


if __name__ == "__main__":
    main()
