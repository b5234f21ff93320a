"""Low-precision GEMM benchmarks (tf32, int8, fp8) against torch, measured interleaved.

Ours and torch run in the same process on the GPU host, timed like bench_gemm.py (its
:func:`bench_gemm.interleaved`).  Usage::

    python3 benchmarks/bench_gemm_lowp.py [--quick] [--kinds tf32,int8,fp8] [--match SUBSTR,...]
                                          [--out DIR]

run_all.py calls ``run(out, quick, log)`` (family ``gemm_lowp``).  a is row-major (m, k); "NT"
rows take b = w.T of a row-major (n, k) weight (the nn.Linear layout), "NN" rows a row-major
(k, n) b.

* tf32: ``GemmPlan(GemmDescriptor(m, n, k, float32, allow_tf32=True))`` vs ``torch.matmul``
  with ``torch.backends.cuda.matmul.allow_tf32 = True`` (restored after); error vs the strict
  f32 ``torch.matmul`` (tf32 ≈ 3e-4; ok < 2e-3).  Shapes 4096³ and 8192³ (NN), m ∈ {16, 4096}
  × (n, k) = (4096, 4096) (NT).  TFLOP/s.
* int8: ``IntGemmPlan`` (s8 · s8 → s32) vs ``torch._int_mm``; ok = bit-equal to torch's int32.
  Shapes 4096³, 8192³, m ∈ {4096, 16384} × (14336, 4096).  TOPS.
* fp8: ``Fp8GemmPlan`` (e4m3 · e4m3 → bf16) with per-tensor scales and with per-row scales vs
  ``torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=bfloat16)`` (torch's scales: () per
  tensor, (m, 1) / (1, n) per row, views of ours); ok = rel err vs torch < 1e-2.  Shapes
  4096³, 8192³, m ∈ {16, 128, 4096, 16384} × (n, k) ∈ {(4096, 4096), (14336, 4096)}.  TFLOP/s.
  "vs torch" is against torch's default ``use_fast_accum=False``; the ``use_fast_accum=True``
  rate (cuBLAS without periodic promotion of the fp8 sums) is an extra column.

All int8 / fp8 rows are NT (both operands k-major, which both libraries need).  When the fp8 plan
module is missing or the plan raises UnsupportedError (e.g. not wired for this device), its rows
say "skipped: ..." instead of failing.  ``--quick``: 4096³ of each kind (4 rows).
Budget: about 30 s on an H100 (28 rows, about 1 s each).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_gemm as G  # noqa: E402
import harness as H  # noqa: E402

KINDS = ("tf32", "int8", "fp8")
TF32_CASES = ((4096, 4096, 4096, False), (8192, 8192, 8192, False),
              (16, 4096, 4096, True), (4096, 4096, 4096, True))
INT8_CASES = ((4096, 4096, 4096), (8192, 8192, 8192), (4096, 14336, 4096), (16384, 14336, 4096))
FP8_SQUARES = (4096, 8192)
FP8_M = (16, 128, 4096, 16384)
FP8_NK = ((4096, 4096), (14336, 4096))
TF32_TOL = 2e-3
FP8_TOL = 1e-2


def fp8_cases(quick: bool):
    """(m, n, k, per_row) in run order."""
    shapes = [(s, s, s) for s in (FP8_SQUARES[:1] if quick else FP8_SQUARES)]
    if not quick:
        shapes += [(m, n, k) for n, k in FP8_NK for m in FP8_M]
    return [(m, n, k, pr) for m, n, k in shapes for pr in (False, True)]


def _out_ok(fn) -> bool:
    """Whether ``fn`` (a torch call with ``out=``, a preallocated output) runs on this torch."""
    return H.safe(fn)[1] is None


def _timed(row, fns, flops, unit, extra=()):
    """Time ``fns`` (ours, torch, then one per name in ``extra``) interleaved into ``row``."""
    ts = G.interleaved(fns)
    row.update(ms=ts[0].median, torch_ms=ts[1].median, ms_min=ts[0].min, torch_ms_min=ts[1].min,
               rounds=ts[0].samples, batch=ts[0].batch, unit=unit,
               rate=flops / ts[0].median / 1e9, torch_rate=flops / ts[1].median / 1e9)
    for key, t in zip(extra, ts[2:]):
        row.update({f"{key}_ms": t.median, f"{key}_rate": flops / t.median / 1e9})
    return row


# -- tf32 ------------------------------------------------------------------------------------
def _tf32(torch, m, n, k, nt):
    from baracuda_dsl.ops.gemm.gemm import GemmArgs, GemmDescriptor, GemmPlan

    ns = G.n_sets_for(4 * m * k, 4 * n * k, 4 * m * n)
    sets = []
    for _ in range(ns):
        a = torch.randn((m, k), device="cuda")
        b = torch.randn((n, k), device="cuda").t() if nt else torch.randn((k, n), device="cuda")
        sets.append((a, b, torch.empty((m, n), device="cuda")))
    plan = GemmPlan.select(GemmDescriptor(m, n, k, "float32", allow_tf32=True))
    args = [GemmArgs(*s) for s in sets]
    tmpl, knobs = plan.kernel_for(args[0])
    a, b, c = sets[0]
    old = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        ref = torch.matmul(a, b)                         # strict f32
        plan.run(args[0])
        err = G.rel_err_chunked(c, ref)
        del ref
        torch.backends.cuda.matmul.allow_tf32 = True
        row = dict(case=f"tf32 {'NT' if nt else 'NN'} m={m} n={n} k={k}", kind="tf32", m=m,
                   n=n, k=k, kernel=G.kernel_name(tmpl, knobs), err=err, ok=err < TF32_TOL,
                   sets=ns)
        return _timed(row, [G.rotating(plan.run, [(x,) for x in args]),
                            G.rotating(lambda a, b, c: torch.mm(a, b, out=c), sets)],
                      2.0 * m * n * k, "TFLOP/s")
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


# -- int8 ------------------------------------------------------------------------------------
def _int8(torch, m, n, k):
    from baracuda_dsl.ops.gemm.gemm_int import IntGemmArgs, IntGemmDescriptor, IntGemmPlan

    ns = G.n_sets_for(m * k, n * k, 4 * m * n)
    sets = []
    for _ in range(ns):
        a = torch.randint(-128, 128, (m, k), device="cuda", dtype=torch.int8)
        b = torch.randint(-128, 128, (n, k), device="cuda", dtype=torch.int8).t()
        sets.append((a, b, torch.empty((m, n), device="cuda", dtype=torch.int32),
                     torch.empty((m, n), device="cuda", dtype=torch.int32)))
    plan = IntGemmPlan.select(IntGemmDescriptor(m, n, k))
    args = [IntGemmArgs(a, b, c) for a, b, c, _ in sets]
    tmpl, knobs = plan.kernel_for(args[0])
    a, b, c, ct = sets[0]
    plan.run(args[0])
    ref = torch._int_mm(a, b)
    exact = bool(torch.equal(c, ref))
    err = G.rel_err_chunked(c.double(), ref.double()) if not exact else 0.0
    del ref
    row = dict(case=f"int8 NT m={m} n={n} k={k}", kind="int8", m=m, n=n, k=k,
               kernel=G.kernel_name(tmpl, knobs), err=err, ok=exact, sets=ns)
    if not _out_ok(lambda: torch._int_mm(a, b, out=ct)):
        tsets = [(x, y) for x, y, _, _ in sets]
        torch_fn = G.rotating(lambda x, y: torch._int_mm(x, y), tsets)
    else:
        torch_fn = G.rotating(lambda x, y, z: torch._int_mm(x, y, out=z),
                              [(x, y, z) for x, y, _, z in sets])
    return _timed(row, [G.rotating(plan.run, [(x,) for x in args]), torch_fn],
                  2.0 * m * n * k, "TOPS")


# -- fp8 -------------------------------------------------------------------------------------
def _fp8_module():
    """(module, None) or (None, reason)."""
    try:
        from baracuda_dsl.ops.gemm import gemm_fp8
    except Exception as e:  # noqa: BLE001 - any import failure skips the fp8 rows
        return None, f"{type(e).__name__}: {e}".splitlines()[0][:200]
    return gemm_fp8, None


def _fp8(torch, F, m, n, k, per_row):
    from baracuda_dsl.errors import UnsupportedError

    f8 = torch.float8_e4m3fn
    case = f"fp8 e4m3 NT m={m} n={n} k={k} {'per-row' if per_row else 'per-tensor'}"
    ns = G.n_sets_for(m * k, n * k, 2 * m * n)
    sets = []
    for _ in range(ns):
        a = torch.randn((m, k), device="cuda").to(f8)
        b = torch.randn((n, k), device="cuda").to(f8).t()           # (k, n) column-major
        sa = torch.rand((m if per_row else 1,), device="cuda") + 0.5
        sb = torch.rand((n if per_row else 1,), device="cuda") + 0.5
        # torch's scale shapes: () per tensor, (m, 1) / (1, n) per row (views of ours)
        tsa, tsb = (sa.view(m, 1), sb.view(1, n)) if per_row else (sa.view(()), sb.view(()))
        sets.append((a, b, torch.empty((m, n), device="cuda", dtype=torch.bfloat16), sa, sb,
                     tsa, tsb, torch.empty((m, n), device="cuda", dtype=torch.bfloat16)))
    try:
        plan = F.Fp8GemmPlan.select(F.Fp8GemmDescriptor(m, n, k))
        args = [F.Fp8GemmArgs(a, b, c, sa, sb) for a, b, c, sa, sb, _, _, _ in sets]
        plan.can_implement(args[0])
    except UnsupportedError as e:
        return dict(case=case, kind="fp8", skipped=f"UnsupportedError: {e}".splitlines()[0][:200])
    kt, _ = H.safe(plan.kernel_for, args[0])
    kernel = G.kernel_name(*kt) if kt else plan.sku().template
    a, b, c, sa, sb, tsa, tsb, ct = sets[0]
    go = G.runner(torch, plan)                       # split-K plans need a workspace
    go(args[0])
    ref = torch._scaled_mm(a, b, tsa, tsb, out_dtype=torch.bfloat16)
    err = G.rel_err_chunked(c, ref)
    del ref
    if getattr(plan, "splits", 1) > 1:
        kernel += f" split{plan.splits}"
    row = dict(case=case, kind="fp8", m=m, n=n, k=k, per_row=per_row, kernel=kernel, err=err,
               ok=err < FP8_TOL, sets=ns)
    use_out = _out_ok(lambda: torch._scaled_mm(a, b, tsa, tsb, out_dtype=torch.bfloat16,
                                               out=ct))

    def torch_fn(fast: bool):
        def f(x, y, s1, s2, z):
            if use_out:
                return torch._scaled_mm(x, y, s1, s2, out_dtype=torch.bfloat16,
                                        use_fast_accum=fast, out=z)
            return torch._scaled_mm(x, y, s1, s2, out_dtype=torch.bfloat16, use_fast_accum=fast)
        return G.rotating(f, [(x, y, s1, s2, z) for x, y, _, _, _, s1, s2, z in sets])

    fns = [G.rotating(go, [(x,) for x in args]), torch_fn(False)]
    # cuBLAS's fast-accumulation mode (no periodic promotion of the fp8 MMA sums) as a third
    # column: the headline ratio is against torch's default (use_fast_accum=False)
    fast_ok = H.safe(lambda: torch._scaled_mm(a, b, tsa, tsb, out_dtype=torch.bfloat16,
                                              use_fast_accum=True))[1] is None
    if fast_ok:
        fns.append(torch_fn(True))
    return _timed(row, fns, 2.0 * m * n * k, "TFLOP/s", extra=("torch_fast",) if fast_ok else ())


# -- driver ----------------------------------------------------------------------------------
def _line(r) -> str:
    if r.get("skipped"):
        return f"{r['case']}: skipped ({r['skipped']})"
    return (f"{r['case']}: {r['kernel']} {r['ms']:.4f} ms {r['rate']:.1f} {r['unit']} (torch "
            f"{r['torch_rate']:.1f}, x{r['torch_ms'] / r['ms']:.2f}"
            + (f"; fast-accum {r['torch_fast_rate']:.1f}" if "torch_fast_rate" in r else "")
            + f") err {r['err']:.1e}"
            f"{'' if r['ok'] else ' FAIL'}")


def run(out_dir=None, quick: bool = False, log=print, kinds=KINDS, match=()) -> dict:
    """Rows of every kind in ``kinds`` (tf32, int8, fp8) whose case name matches ``match``
    (bench_gemm.wanted), each under harness.safe."""
    torch = H._torch()
    t0 = time.perf_counter()
    G.warm_gpu(torch)
    jobs = []
    if "tf32" in kinds:
        jobs += [(f"tf32 {'NT' if nt else 'NN'} m={m} n={n} k={k}", _tf32, (m, n, k, nt))
                 for m, n, k, nt in (TF32_CASES[:1] if quick else TF32_CASES)]
    if "int8" in kinds:
        jobs += [(f"int8 NT m={m} n={n} k={k}", _int8, (m, n, k))
                 for m, n, k in (INT8_CASES[:1] if quick else INT8_CASES)]
    rows = []
    if "fp8" in kinds:
        F, why = _fp8_module()
        for m, n, k, pr in fp8_cases(quick):
            case = f"fp8 e4m3 NT m={m} n={n} k={k} {'per-row' if pr else 'per-tensor'}"
            if F is None:
                jobs.append((case, None, f"fp8 plan module unavailable ({why})"))
            else:
                jobs.append((case, lambda torch, *c, F=F: _fp8(torch, F, *c), (m, n, k, pr)))
    for case, fn, c in jobs:
        if not G.wanted(case, match):
            continue
        if fn is None:
            r = dict(case=case, kind=case.split()[0], skipped=c)
        else:
            r, err = H.safe(fn, torch, *c)
            if err:
                r = dict(case=case, kind=case.split()[0], error=err)
        log(f"gemm_lowp: {r['case']}: {r['error']}" if r.get("error") else
            f"gemm_lowp: {_line(r)}")
        rows.append(r)
        torch.cuda.empty_cache()
    return H.save_json(dict(rows=rows, wall_s=time.perf_counter() - t0), out_dir,
                       "bench_gemm_lowp.json")


def markdown(res: dict) -> str:
    """One table row per case (kind, shape and scale mode in the first column)."""
    out = []
    for r in res["rows"]:
        if r.get("error") or r.get("skipped"):
            msg = r.get("error") or f"skipped: {r['skipped']}"
            out.append([r["case"]] + ["—"] * 7 + [msg])
            continue
        out.append([r["case"], r["kernel"], H.fmt(r["ms"], ".4f"),
                    f"{H.fmt(r['rate'], '.1f')} {r['unit']}", H.fmt(r["torch_rate"], ".1f"),
                    H.fmt(r["torch_ms"] / r["ms"]), H.fmt(r.get("torch_fast_rate"), ".1f"),
                    "exact" if r["kind"] == "int8" and r["ok"] else H.fmt(r["err"], ".1e"),
                    "ok" if r["ok"] else "FAIL"])
    return H.md_table(("case", "kernel", "ours ms", "ours rate", "torch rate", "vs torch",
                       "torch fast-accum rate", "rel err", "check"), out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="4096³ of each kind (smoke test)")
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help="comma-separated subset of " + ",".join(KINDS))
    ap.add_argument("--match", default="",
                    help="comma-separated substrings of case names to run (e.g. 'per-row'); "
                         "default all")
    ap.add_argument("--out", help="directory for bench_gemm_lowp.json")
    a = ap.parse_args(argv)
    match = tuple(x for x in a.match.split(",") if x)
    H.check_cuda()
    print(markdown(run(a.out, a.quick, kinds=tuple(a.kinds.split(",")), match=match)))


if __name__ == "__main__":
    main()
