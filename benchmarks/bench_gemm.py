"""GEMM benchmarks on the GPU host: GemmPlan (first version: mma.sync + cp.async on every arch)
against torch.matmul (cuBLAS) in the same run.  Usage (GPU host):
``python3 benchmarks/bench_gemm.py [--quick] [--out DIR]``; run_all.py calls ``run(out, quick)``.

Cases, bf16 and f16, row-major a (m, k), b given as the (k, n) transpose of a row-major (n, k)
weight (the nn.Linear layout) and as a row-major (k, n) matrix for the squares:

=====================  ======================================================================
square                 m = n = k ∈ {2048, 4096, 8192}
LLM                    m ∈ {1, 16, 128, 4096} × (n, k) ∈ {(4096, 4096), (14336, 4096)}
=====================  ======================================================================

TFLOP/s = 2·m·n·k / time; "vs cuBLAS" = torch time / ours (1.0 = parity).  Every case is
checked against torch (relative Frobenius error < 2e-2) before timing.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness as H  # noqa: E402

SQUARES = (2048, 4096, 8192)
LLM_M = (1, 16, 128, 4096)
LLM_NK = ((4096, 4096), (14336, 4096))


def _case(torch, dtype, m, n, k, weight_layout):
    from baracuda_dsl.plans.gemm import GemmArgs, GemmDescriptor, GemmPlan

    tdt = getattr(torch, dtype)
    a = torch.randn((m, k), device="cuda").to(tdt)
    if weight_layout:
        b = torch.randn((n, k), device="cuda").to(tdt).t()    # (k, n), unit stride along k
    else:
        b = torch.randn((k, n), device="cuda").to(tdt)
    c = torch.empty((m, n), device="cuda", dtype=tdt)
    plan = GemmPlan.select(GemmDescriptor(m, n, k, dtype))
    args = GemmArgs(a, b, c)
    tmpl, knobs = plan.kernel_for(args)
    plan.run(args)
    ref = torch.matmul(a, b)
    err = H.rel_err(c, ref)
    reps = 10 if m * n * k >= 2 ** 36 else 25
    t = H.bench(lambda: plan.run(args), reps=reps)
    tt = H.bench(lambda: torch.matmul(a, b, out=c), reps=reps)
    fl = 2.0 * m * n * k
    kind = "NT" if weight_layout else "NN"
    return dict(case=f"{dtype} {kind} m={m} n={n} k={k}", ms=t.median, torch_ms=tt.median,
                tflops=fl / t.median / 1e9, torch_tflops=fl / tt.median / 1e9,
                kernel=f"{tmpl.name}:{knobs.get('tile', 'simt')}", err=err, ok=err < 2e-2)


def _rows(torch, dtype, quick):
    rows = []
    for s in (SQUARES[:2] if quick else SQUARES):
        rows.append(_case(torch, dtype, s, s, s, False))
    for n, k in (LLM_NK[:1] if quick else LLM_NK):
        for m in LLM_M:
            rows.append(_case(torch, dtype, m, n, k, True))
    return rows


def run(out_dir=None, quick: bool = False, log=print) -> dict:
    torch = H._torch()
    dts = ("bfloat16",) if quick else ("bfloat16", "float16")
    fns = [(lambda d=d: _rows(torch, d, quick)) for d in dts]
    rows = H.group_rows("gemm", fns,
                        lambda r: f"{r['case']}: {r['tflops']:.1f} TFLOP/s (cuBLAS "
                                  f"{r['torch_tflops']:.1f}, x{r['torch_ms'] / r['ms']:.2f}) "
                                  f"{r['kernel']} ok={r['ok']}", log, empty_cache=True)
    return H.save_json(dict(rows=rows), out_dir, "bench_gemm.json")


def markdown(res: dict) -> str:
    out = []
    for r in res["rows"]:
        if "error" in r:
            out.append((r["case"], "—", "—", "—", "—", "—", r["error"]))
            continue
        out.append((r["case"], r["kernel"], H.fmt(r["ms"], ".3f"), H.fmt(r["tflops"], ".1f"),
                    H.fmt(r["torch_tflops"], ".1f"), H.fmt(r["torch_ms"] / r["ms"]),
                    "ok" if r["ok"] else f"FAIL ({r['err']:.2e})"))
    return H.md_table(("case", "kernel", "ours ms", "TFLOP/s", "cuBLAS TFLOP/s", "vs cuBLAS",
                       "check"), out) + "\n"


def main():
    H.cli_main(__doc__, run, markdown)


if __name__ == "__main__":
    main()
