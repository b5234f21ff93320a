"""Cross-entropy benchmarks on the GPU host: CrossEntropyPlan FW / BW vs torch eager,
torch.compile and quack (if ``import quack`` works), same run, same copy ceiling; and the fused
linear + cross-entropy (time and peak memory) vs unfused (our GEMM + our CE, and torch).
Usage (GPU host, from the repo root): ``python3 -m benchmarks.losses [--quick] [--out DIR]``;
run_all calls ``run(out_dir, quick, log)`` (section ``losses``).

Bytes counted: forward logits read once + targets + per-row losses (reduction none, so every
path writes the same output; the mean adds one tiny fixed-order pass); backward logits + dlogits
+ targets (+ lse).  Each of our outputs is checked once against a float64 torch reference.
"""

from __future__ import annotations

from . import harness as H

CASES = [(32768, 4096, "bfloat16"), (8192, 32768, "bfloat16"), (32768, 4096, "float32"),
         (8192, 32768, "float32"), (2048, 131072, "bfloat16"), (1024, 262144, "bfloat16")]
QUICK = [(32768, 4096, "bfloat16")]
TOL = {"bfloat16": 1e-2, "float16": 3e-3, "float32": 1e-4, "float64": 1e-10}
LCE = (8192, 4096, 128256, "bfloat16")
LCE_QUICK = (4096, 2048, 32768, "bfloat16")


def _ce():
    from baracuda_dsl.ops.losses import cross_entropy as ce

    return ce


def _quack_ce():
    try:
        from quack.cross_entropy import cross_entropy as qce  # type: ignore
        return qce
    except Exception:  # noqa: BLE001 - optional
        return None


def _setup(torch, M, N, dt):
    x = (torch.randn((M, N), device="cuda") * 2).to(getattr(torch, dt))
    t = torch.randint(0, N, (M,), device="cuda")
    return x, t


def _fw_row(torch, copy_gbs, M, N, dt):
    ce = _ce()
    F = torch.nn.functional
    x, t = _setup(torch, M, N, dt)
    ct = torch.float32
    plan = ce.CrossEntropyPlan.select(ce.CrossEntropyDescriptor(M, N, dt, reduction="none"))
    loss = torch.full((M,), float("nan"), dtype=x.dtype, device="cuda")
    lse = torch.empty((M,), dtype=ct, device="cuda")
    args = ce.CrossEntropyArgs(x, t, loss, lse=lse)
    plan.run(args)
    err = H.rel_err(loss, F.cross_entropy(x.double(), t, reduction="none"))
    nbytes = H.bytes_of(x, t, loss)
    sets = H.n_sets(nbytes)
    data = [(ce.CrossEntropyArgs(*_setup(torch, M, N, dt), torch.empty_like(loss),
                                 lse=torch.empty_like(lse)),) for _ in range(sets - 1)]
    data = [(args,)] + data
    t_ours = H.bench(lambda a: plan.run(a), data)
    tsets = [(a.logits, a.target) for (a,) in data]
    t_torch = H.bench(lambda xx, tt: F.cross_entropy(xx, tt, reduction="none"), tsets)
    t_comp = None
    try:
        cf = torch.compile(lambda xx, tt: F.cross_entropy(xx.float(), tt, reduction="none"))
        t_comp = H.bench(cf, tsets)
    except Exception:  # noqa: BLE001
        pass
    t_q = None
    qce = _quack_ce()
    if qce is not None:
        try:
            t_q = H.bench(lambda xx, tt: qce(xx, tt), tsets)
        except Exception:  # noqa: BLE001
            t_q = None
    row = _row("CE fw", M, N, dt, nbytes, t_ours, t_torch, t_comp, t_q, copy_gbs, err,
               str(plan.sku()))
    if 16384 < N <= 32768:
        # tuning probe: the same row over a 2-CTA cluster (CrossEntropyTuning's
        # prefer_cluster_above)
        try:
            pref = _tuned(ce.CrossEntropyTuning(prefer_cluster_above=16384))
            alt = ce.CrossEntropyPlan.select(ce.CrossEntropyDescriptor(M, N, dt,
                                                                       reduction="none"), pref)
            row["cluster2_frac"] = H.gbs(nbytes, H.bench(lambda a: alt.run(a), data).median) / (
                copy_gbs)
        except Exception as e:  # noqa: BLE001
            row["cluster2_frac"] = f"{type(e).__name__}"
    if dt in ("bfloat16", "float16") and N >= 4096:
        # tuning probe: the "wide" f16/bf16 SKU for this row (CrossEntropyTuning.wide_half_above;
        # see benchmarks/sweep_cross_entropy.py for the full sweep)
        try:
            pref = _tuned(ce.CrossEntropyTuning(wide_half_above=0))
            alt = ce.CrossEntropyPlan.select(ce.CrossEntropyDescriptor(M, N, dt,
                                                                       reduction="none"), pref)
            if alt._knobs != plan._knobs:
                row["wide_frac"] = H.gbs(nbytes, H.bench(lambda a: alt.run(a), data).median) / (
                    copy_gbs)
        except Exception as e:  # noqa: BLE001
            row["wide_frac"] = f"{type(e).__name__}"
    return row


def _tuned(tuning):
    """The default preference with ``tuning`` (a probe of another kernel choice)."""
    from baracuda_dsl import PlanPreference

    return PlanPreference(tuning=tuning)


def _bw_row(torch, copy_gbs, M, N, dt):
    ce = _ce()
    F = torch.nn.functional
    x, t = _setup(torch, M, N, dt)
    lse = torch.logsumexp(x.float(), 1)
    g = torch.ones((1,), dtype=x.dtype, device="cuda")
    tw = torch.full((1,), float(M), dtype=torch.float32, device="cuda")
    dx = torch.full_like(x, float("nan"))
    plan = ce.CrossEntropyBackwardPlan.select(ce.CrossEntropyBackwardDescriptor(M, N, dt))
    args = ce.CrossEntropyBackwardArgs(x, t, lse, g, dx, total_weight=tw)
    plan.run(args)
    xd = x.double().requires_grad_(True)
    F.cross_entropy(xd, t).backward()
    err = H.rel_err(dx, xd.grad)
    del xd
    nbytes = H.bytes_of(x, t, dx, lse)
    sets = H.n_sets(nbytes)
    data = [(args,)]
    for _ in range(sets - 1):
        x2, t2 = _setup(torch, M, N, dt)
        data.append((ce.CrossEntropyBackwardArgs(x2, t2, torch.logsumexp(x2.float(), 1), g,
                                                 torch.empty_like(x2), total_weight=tw),))
    t_ours = H.bench(lambda a: plan.run(a), data)
    # torch: the aten backward kernel of log_softmax + nll (what autograd runs)
    lsm = [torch.log_softmax(a.logits, 1) for (a,) in data]
    go = torch.full((M,), 1.0 / M, dtype=x.dtype, device="cuda")

    def torch_bw(y, tt):
        gl = torch.zeros_like(y).scatter_(1, tt[:, None], -go[:, None])
        return torch._log_softmax_backward_data(gl, y, 1, y.dtype)

    t_torch = H.bench(torch_bw, [(y, a.target) for y, (a,) in zip(lsm, data)])
    return _row("CE bw", M, N, dt, nbytes, t_ours, t_torch, None, None, copy_gbs, err,
                str(plan.sku()))


def _row(case, M, N, dt, nbytes, t_ours, t_torch, t_comp, t_q, copy_gbs, err, sku):
    ours = H.gbs(nbytes, t_ours.median)
    tol = TOL[dt]
    status = "ok" if err is not None and err <= tol else f"FAIL (rel err {err:.1e})"
    fr = lambda t: None if t is None else H.gbs(nbytes, t.median) / copy_gbs  # noqa: E731
    return dict(case=case, shape=f"{M}×{N}", dtype=dt, ms=t_ours.median, gbs=ours,
                frac=ours / copy_gbs, torch_ms=t_torch.median if t_torch else None,
                torch_frac=fr(t_torch), compile_frac=fr(t_comp), quack_frac=fr(t_q),
                err=err, check=status, sku=sku)


def _lce_rows(torch, quick):
    """Fused linear CE FW+BW vs unfused (our GEMM + our CE, torch) : time and peak memory."""
    from baracuda_dsl.ops.gemm import gemm as G
    from baracuda_dsl.ops.losses import linear_cross_entropy as lce

    ce = _ce()
    F = torch.nn.functional
    n, k, v, dt = LCE_QUICK if quick else LCE
    tdt = getattr(torch, dt)
    x = (torch.randn((n, k), device="cuda") * 0.05).to(tdt)
    W = (torch.randn((v, k), device="cuda") * 0.05).to(tdt)
    t = torch.randint(0, v, (n,), device="cuda")
    rows = []

    def peak(fn):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fn()
        torch.cuda.synchronize()
        return (torch.cuda.max_memory_allocated() - base) / 2**20

    # fused
    fp = lce.LinearCrossEntropyPlan.select(lce.LinearCrossEntropyDescriptor(n, k, v, dt))
    bp = lce.LinearCrossEntropyBackwardPlan.select(lce.LinearCrossEntropyBackwardDescriptor(
        n, k, v, dt))
    loss = torch.empty((1,), dtype=tdt, device="cuda")
    lse = torch.empty((n,), dtype=torch.float32, device="cuda")
    tw = torch.empty((1,), dtype=torch.float32, device="cuda")
    g = torch.ones((1,), dtype=tdt, device="cuda")

    def fused():
        ws = torch.empty(max(fp.workspace_size(), bp.workspace_size()), dtype=torch.uint8,
                         device="cuda")
        fp.run(lce.LinearCrossEntropyArgs(x, W, t, loss, lse, tw), workspace=ws)
        dx = torch.empty_like(x)
        dW = torch.empty_like(W)
        bp.run(lce.LinearCrossEntropyBackwardArgs(x, W, t, lse, g, dx, dW, tw), workspace=ws)

    mem = peak(fused)
    tm = H.bench(fused, reps=5, warm=1, batch=1).median
    ref = F.cross_entropy((x.float() @ W.float().T), t)
    fused()
    rows.append(dict(case=f"fused linear CE fw+bw {n}×{k}×{v} {dt}", ms=tm, peak_mib=mem,
                     err=abs(loss.float().item() - ref.item()) / abs(ref.item())))

    # unfused: our GEMM + our CE (forward only logits) + our CE backward + GEMMs
    def ours_unfused():
        z = torch.empty((n, v), dtype=tdt, device="cuda")
        gp = G.GemmPlan.select(G.GemmDescriptor(n, v, k, dt))
        gp.run(G.GemmArgs(x, W.T, z))
        cp = ce.CrossEntropyPlan.select(ce.CrossEntropyDescriptor(n, v, dt))
        ws = torch.empty(max(cp.workspace_size(), 1), dtype=torch.uint8, device="cuda")
        cp.run(ce.CrossEntropyArgs(z, t, loss, lse=lse, total_weight=tw), workspace=ws)
        dz = torch.empty_like(z)
        ce.CrossEntropyBackwardPlan.select(ce.CrossEntropyBackwardDescriptor(n, v, dt)).run(
            ce.CrossEntropyBackwardArgs(z, t, lse, g, dz, total_weight=tw))
        dx = torch.empty_like(x)
        dW = torch.empty_like(W)
        G.GemmPlan.select(G.GemmDescriptor(n, k, v, dt)).run(G.GemmArgs(dz, W, dx))
        G.GemmPlan.select(G.GemmDescriptor(v, k, n, dt)).run(G.GemmArgs(dz.T, x, dW))

    r, err = H.safe(lambda: (peak(ours_unfused), H.bench(ours_unfused, reps=5, warm=1,
                                                          batch=1).median))
    rows.append(dict(case="unfused: our GEMM + our CE", ms=r[1] if r else None,
                     peak_mib=r[0] if r else None, err=None, error=err))

    def torch_unfused():
        xx = x.detach().requires_grad_(True)
        ww = W.detach().requires_grad_(True)
        F.cross_entropy(xx @ ww.T, t).backward()

    r, err = H.safe(lambda: (peak(torch_unfused), H.bench(torch_unfused, reps=5, warm=1,
                                                           batch=1).median))
    rows.append(dict(case="torch eager (matmul + cross_entropy, autograd)",
                     ms=r[1] if r else None, peak_mib=r[0] if r else None, err=None, error=err))
    return rows


def run(out_dir=None, quick: bool = False, log=print) -> dict:
    torch = H._torch()
    copy = H.copy_bandwidth()["gbs"]
    cases = QUICK if quick else CASES

    def err_row(case, e):
        return dict(case="CE", shape=f"{case[0]}×{case[1]}", dtype=case[2], error=e)

    rows = H.case_rows("CE fw", cases, _fw_row, err_row, copy, log)
    rows += H.case_rows("CE bw", cases[:4], _bw_row, err_row, copy, log)
    lrows, err = H.safe(_lce_rows, torch, quick)
    return H.save_json(dict(copy_gbs=copy, rows=rows,
                            lce=lrows or [dict(case="fused linear CE", error=err)]),
                       out_dir, "bench_losses.json")


def markdown(res: dict) -> str:
    body = []
    for r in res["rows"]:
        if r.get("error"):
            body.append((r.get("case", "?"), r["shape"], r["dtype"], "—", "—", "—", "—", "—",
                         "—", r["error"]))
            continue
        body.append((r["case"], r["shape"], r["dtype"], H.fmt(r["ms"], ".3f"),
                     f"{r['gbs']:.0f}", H.fmt(r["frac"]), H.fmt(r["torch_frac"]),
                     H.fmt(r["compile_frac"]), H.fmt(r["quack_frac"]), r["check"]))
    out = [f"copy ceiling {res['copy_gbs']:.0f} GB/s", "",
           H.md_table(("case", "shape", "dtype", "ms", "GB/s", "/ copy", "torch / copy",
                       "compile / copy", "quack / copy", "check"), body), ""]
    lb = []
    for r in res["lce"]:
        lb.append((r["case"], H.fmt(r.get("ms"), ".2f"), H.fmt(r.get("peak_mib"), ".0f"),
                   H.fmt(r.get("err"), ".1e"), r.get("error") or ""))
    out.append(H.md_table(("fused linear CE", "ms (fw+bw)", "peak MiB", "rel err", "error"), lb))
    return "\n".join(out) + "\n"


SECTIONS = (H.Section("losses", "Cross-entropy and fused linear CE", run, markdown),)


def main(argv=None):
    H.cli_main(__doc__, SECTIONS, argv)


if __name__ == "__main__":
    main()
