"""GEMM benchmarks on the GPU host: GemmPlan against torch.matmul (cuBLAS) in the same run.  On
an sm90a device the default plan takes the wgmma/TMA kernel (``gemm_sm90``) when m > 16 and the
grid has enough tiles (plans/gemm.py says when); every sm90a row also times each sm90a kernel
on the same operands — wgmma 128x128, wgmma 128x256, the 2-CTA cluster SKU (128x256, b
multicast; opt-in until measured) and the mma.sync kernel with its own tile heuristic — in
TFLOP/s, so the selection heuristic can be re-tuned from one run.  Usage (GPU host):
``python3 benchmarks/bench_gemm.py [--quick] [--out DIR]``; run_all.py calls ``run(out, quick)``.

Cases, bf16 and f16, row-major a (m, k), b given as the (k, n) transpose of a row-major (n, k)
weight (the nn.Linear layout) and as a row-major (k, n) matrix for the squares:

=====================  ======================================================================
square                 m = n = k ∈ {2048, 4096, 6144, 8192}
LLM                    m ∈ {1, 16, 128, 4096, 16384} × (n, k) ∈ {(4096, 4096), (14336, 4096),
                       (4096, 14336)}
=====================  ======================================================================

TFLOP/s = 2·m·n·k / time; "vs cuBLAS" = torch time / ours (1.0 = parity).  Every case is
checked against torch (relative Frobenius error < 2e-2) before timing.
"""

from __future__ import annotations

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness as H  # noqa: E402

SQUARES = (2048, 4096, 6144, 8192)
LLM_M = (1, 16, 128, 4096, 16384)
LLM_NK = ((4096, 4096), (14336, 4096), (4096, 14336))


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
    row = dict(case=f"{dtype} {kind} m={m} n={n} k={k}", ms=t.median, torch_ms=tt.median,
               tflops=fl / t.median / 1e9, torch_tflops=fl / tt.median / 1e9,
               kernel=f"{tmpl.name}:{knobs.get('tile', 'simt')}", err=err, ok=err < 2e-2)
    if plan.sku().arch.value == "sm90a":
        # every sm90a GEMM kernel on the same operands, so the tile heuristic can be re-tuned
        mma_tile = ("16x32" if m <= 16 else
                    "128x128" if math.ceil(m / 128) * math.ceil(n / 128) >= 96 else "64x64")
        for key, tile in (("w128", "wgmma128x128"), ("w256", "wgmma128x256"),
                          ("c2", "wgmma128x256c2"), ("mma", mma_tile)):
            p2 = GemmPlan.select(GemmDescriptor(m, n, k, dtype), tile=tile)
            p2.run(args)
            e2 = H.rel_err(c, ref)
            t2 = H.bench(lambda: p2.run(args), reps=reps)
            row[f"{key}_tflops"] = fl / t2.median / 1e9 if e2 < 2e-2 else float("nan")
    return row


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
                                  f"{r['kernel']} ok={r['ok']}"
                                  + (f" | wgmma128x128 {r['w128_tflops']:.1f}, wgmma128x256 "
                                     f"{r['w256_tflops']:.1f}, c2 {r['c2_tflops']:.1f}, "
                                     f"mma.sync {r['mma_tflops']:.1f}"
                                     if "w128_tflops" in r else ""),
                        log, empty_cache=True)
    return H.save_json(dict(rows=rows), out_dir, "bench_gemm.json")


def markdown(res: dict) -> str:
    out = []
    for r in res["rows"]:
        if "error" in r:
            out.append((r["case"], "—", "—", "—", "—", "—", r["error"]))
            continue
        out.append((r["case"], r["kernel"], H.fmt(r["ms"], ".3f"), H.fmt(r["tflops"], ".1f"),
                    H.fmt(r["torch_tflops"], ".1f"), H.fmt(r["torch_ms"] / r["ms"]),
                    H.fmt(r.get("w128_tflops"), ".1f"), H.fmt(r.get("w256_tflops"), ".1f"),
                    H.fmt(r.get("c2_tflops"), ".1f"), H.fmt(r.get("mma_tflops"), ".1f"),
                    "ok" if r["ok"] else f"FAIL ({r['err']:.2e})"))
    return H.md_table(("case", "kernel", "ours ms", "TFLOP/s", "cuBLAS TFLOP/s", "vs cuBLAS",
                       "wgmma128x128", "wgmma128x256", "wgmma128x256c2", "mma.sync", "check"),
                      out) + "\n"


def main():
    H.cli_main(__doc__, run, markdown)


if __name__ == "__main__":
    main()
