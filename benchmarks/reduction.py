"""Reduction benchmarks on the GPU host: ``ReducePlan`` / ``ArgReducePlan`` against torch in the
same run.  Usage (GPU host, from the repo root): ``python3 -m benchmarks.reduction [--quick]
[--out DIR]``; run_all calls ``run(out_dir, quick, log)`` (section ``reductions``).

Cases (bytes = the input read once + the output written):

=====================  ======================================================================
full sum               2^28 float32 (1 GiB) and bfloat16 → one value (split two-pass)
row sum                32768 × 4096 bfloat16 / float32 over the last axis
column sum             4096 × 32768 float32 over axis 0
argmax rows            32768 × 4096 float32 over the last axis
var rows (namespace)   xp.var over the last axis of 32768 × 4096 float32 (composite: 3 passes)
=====================  ======================================================================

Every result is checked against a float64 torch reference first (‖out − ref‖/‖ref‖; exact
indices for argmax).  "/ copy" divides model bytes / time by the copy ceiling of the run;
"vs torch" = torch time / ours (> 1: ours faster).
"""

from __future__ import annotations

from . import harness as H

TOL = {"float32": 1e-5, "bfloat16": 1e-2}
CASES = [("full sum", (2 ** 28,), None, "sum", "float32"),
         ("full sum", (2 ** 28,), None, "sum", "bfloat16"),
         ("row sum", (32768, 4096), (1,), "sum", "bfloat16"),
         ("row sum", (32768, 4096), (1,), "sum", "float32"),
         ("column sum", (4096, 32768), (0,), "sum", "float32"),
         ("argmax rows", (32768, 4096), (1,), "argmax", "float32")]
QUICK = [CASES[0], CASES[2], CASES[4]]


def _case(torch, copy_gbs, label, shape, axes, op, dt):
    from baracuda_dsl.ops.reduction.reductions import (ArgReducePlan, ReduceArgs, ReduceDescriptor,
                                                       ReducePlan)

    tdt = getattr(torch, dt)
    x = torch.randn(shape, device="cuda", dtype=torch.float32).to(tdt)
    d = ReduceDescriptor(shape, axes, op, dt)
    arg = op == "argmax"
    plan = (ArgReducePlan if arg else ReducePlan).select(d)
    out = torch.empty(d.out_shape, device="cuda",
                      dtype=torch.int64 if arg else tdt)
    ws = torch.empty(max(plan.workspace_size(), 1), device="cuda", dtype=torch.uint8)
    args = ReduceArgs(x, None, out) if arg else ReduceArgs(x, out)
    plan.run(args, workspace=ws)
    dims = tuple(range(len(shape))) if axes is None else axes
    if arg:
        ref_fn = lambda: torch.argmax(x, dim=dims[0])  # noqa: E731
        ok = bool(torch.equal(out, ref_fn()))
        err = 0.0
    else:
        ref = x.double().sum(dim=dims)
        err = float((out.double() - ref).norm() / ref.norm().clamp_min(1e-30))
        ok = err <= TOL[dt] * (10 if axes is None else 1)
        ref_fn = lambda: torch.sum(x, dim=dims)  # noqa: E731
    t = H.bench(lambda: plan.run(args, workspace=ws), reps=15)
    tt = H.bench(ref_fn, reps=15)
    nbytes = x.numel() * x.element_size() + out.numel() * out.element_size()
    gbs = H.gbs(nbytes, t.median)
    return dict(case=label, shape="x".join(map(str, shape)), dtype=dt, ms=t.median,
                torch_ms=tt.median, gbs=gbs, frac=gbs / copy_gbs,
                torch_frac=H.gbs(nbytes, tt.median) / copy_gbs, err=err, ok=ok)


def _var_case(torch, copy_gbs):
    import array_api as xp

    tx = torch.randn(32768, 4096, device="cuda")
    x = xp.from_dlpack(tx)
    v = torch.from_dlpack(xp.var(x, axis=1))
    ref = tx.double().var(dim=1, unbiased=False)
    err = float((v.double() - ref).norm() / ref.norm())
    t = H.bench(lambda: xp.var(x, axis=1), reps=10, batch=2)
    tt = H.bench(lambda: torch.var(tx, dim=1, unbiased=False), reps=10, batch=2)
    nbytes = tx.numel() * 4
    gbs = H.gbs(nbytes, t.median)
    return dict(case="var rows (xp)", shape="32768x4096", dtype="float32", ms=t.median,
                torch_ms=tt.median, gbs=gbs, frac=gbs / copy_gbs,
                torch_frac=H.gbs(nbytes, tt.median) / copy_gbs, err=err, ok=err <= 1e-5)


def run(out_dir=None, quick=False, log=print):
    torch = H._torch()
    copy = H.copy_bandwidth()["gbs"]
    rows = H.case_rows("reduce", QUICK if quick else CASES, _case,
                       lambda c, err: dict(case=c[0], shape="x".join(map(str, c[1])), dtype=c[4],
                                           error=err), copy, log)
    if not quick:
        r, err = H.safe(_var_case, torch, copy)
        rows.append(r or dict(case="var rows (xp)", shape="32768x4096", dtype="float32",
                              error=err))
        log(f"reduce: {rows[-1]}")
    return H.save_json(dict(rows=rows, copy_gbs=copy), out_dir, "bench_reductions.json")


def markdown(res) -> str:
    return H.speed_table(res, lambda r: ("ok" if r["ok"] else "FAIL") + f" {r['err']:.0e}")


SECTIONS = (H.Section("reductions", "Reductions", run, markdown),)


def main(argv=None):
    H.cli_main(__doc__, SECTIONS, argv)


if __name__ == "__main__":
    main()
