"""Softmax benchmarks on the GPU host: SoftmaxPlan / SoftmaxBackwardPlan against torch eager,
torch.compile and quack (when importable) in the same run, as fractions of this run's copy
ceiling.  Usage (GPU host, from the repo root): ``python3 -m benchmarks.softmax [--quick]
[--out DIR]``; run_all calls ``run(out_dir, quick, log)`` (section ``softmax``).

Cases (rows × row length, as /work/shared/reference/ANCHORS.md): softmax FW and BW at
32768×4096, 8192×32768, 2048×131072 (bf16), 32768×4096 (f32) and one 256K-wide row case
(512×262144 bf16).  Bytes counted: FW x + y, BW dy + y + dx.  torch.compile runs only for rows
≤ 32768 (as the anchors); quack is skipped silently when ``import quack`` fails.  Each of our
outputs is checked once against a float64 torch reference (‖out − ref‖/‖ref‖, output poisoned
with NaN first); rows over tolerance are marked FAIL.
"""

from __future__ import annotations

from . import harness as H

TOL = {"bfloat16": 1e-2, "float16": 3e-3, "float32": 1e-4, "float64": 1e-10}
CASES = [(32768, 4096, "bfloat16"), (8192, 32768, "bfloat16"), (2048, 131072, "bfloat16"),
         (32768, 4096, "float32"), (512, 262144, "bfloat16")]
QUICK = [(32768, 4096, "bfloat16"), (2048, 131072, "bfloat16")]


def _quack():
    try:
        from quack import softmax as q_sm  # noqa: F401

        return q_sm
    except Exception:
        return None


_COMPILED = {}


def _compiled(fn):
    if fn not in _COMPILED:
        import torch

        _COMPILED[fn] = torch.compile(fn)
    return _COMPILED[fn]


def _t_sm(x):
    import torch

    return torch.softmax(x, dim=-1)


def _providers_fw(torch, x, y, plan, args_of, N):
    out = [("ours", lambda x_, y_: plan.run(args_of(x_, y_))),
           ("torch", lambda x_, y_: torch.softmax(x_, -1))]
    if N <= 32768:
        out.append(("torch.compile", lambda x_, y_: _compiled(_t_sm)(x_)))
    q = _quack()
    if q is not None:
        out.append(("quack", lambda x_, y_: q(x_)))
    return out


def _fw_rows(torch, copy_gbs, M, N, dt):
    from baracuda_dsl.ops.softmax.softmax import SoftmaxArgs, SoftmaxDescriptor, SoftmaxPlan

    tdt = getattr(torch, dt)
    nbytes = 2 * M * N * tdt.itemsize
    sets = [(torch.randn(M, N, device="cuda", dtype=tdt) * 2,
             torch.empty(M, N, device="cuda", dtype=tdt)) for _ in range(H.n_sets(nbytes))]
    plan = SoftmaxPlan.select(SoftmaxDescriptor((M, N), dt))
    x, y = sets[0]
    y.fill_(float("nan"))
    plan.run(SoftmaxArgs(x, y))
    torch.cuda.synchronize()
    err = H.rel_err(y, torch.softmax(x.double(), -1))
    rows = []
    for name, fn in _providers_fw(torch, x, y, plan, SoftmaxArgs, N):
        r, e = H.safe(H.bench, fn, sets, reps=15)
        rows.append(_row("softmax FW", M, N, dt, name, nbytes, r, e, copy_gbs,
                         err if name == "ours" else None, plan.sku() if name == "ours" else None))
    return rows


def _bw_rows(torch, copy_gbs, M, N, dt):
    from baracuda_dsl.ops.softmax.softmax import (SoftmaxBackwardArgs, SoftmaxBackwardDescriptor,
                                                  SoftmaxBackwardPlan)

    tdt = getattr(torch, dt)
    nbytes = 3 * M * N * tdt.itemsize
    sets = []
    for _ in range(H.n_sets(nbytes)):
        x = torch.randn(M, N, device="cuda", dtype=tdt) * 2
        sets.append((torch.randn(M, N, device="cuda", dtype=tdt), torch.softmax(x, -1),
                     torch.empty(M, N, device="cuda", dtype=tdt)))
    plan = SoftmaxBackwardPlan.select(SoftmaxBackwardDescriptor((M, N), dt))
    dy, y, dx = sets[0]
    dx.fill_(float("nan"))
    plan.run(SoftmaxBackwardArgs(dy, y, dx))
    torch.cuda.synchronize()
    yd, dyd = y.double(), dy.double()
    err = H.rel_err(dx, yd * (dyd - (dyd * yd).sum(-1, keepdim=True)))
    del yd, dyd
    rows = []
    r, e = H.safe(H.bench, lambda a, b, c: plan.run(SoftmaxBackwardArgs(a, b, c)), sets, reps=15)
    rows.append(_row("softmax BW", M, N, dt, "ours", nbytes, r, e, copy_gbs, err, plan.sku()))
    # torch eager: the backward kernel itself (aten._softmax_backward_data)
    r, e = H.safe(H.bench, lambda a, b, c: torch._softmax_backward_data(a, b, -1, b.dtype),
                  sets, reps=15)
    rows.append(_row("softmax BW", M, N, dt, "torch", nbytes, r, e, copy_gbs, None, None))
    if N <= 32768:
        def tc_bw(a, b):
            return b * (a - (a * b).sum(-1, keepdim=True))

        r, e = H.safe(H.bench, lambda a, b, c: _compiled(tc_bw)(a, b), sets, reps=15)
        rows.append(_row("softmax BW", M, N, dt, "torch.compile", nbytes, r, e, copy_gbs, None,
                         None))
    q = _quack()
    if q is not None:
        def quack_bw():
            xr = sets[0][1].detach().clone().requires_grad_(True)
            yq = q(xr)
            return H.bench(lambda: torch.autograd.grad(yq, xr, sets[0][0], retain_graph=True),
                           reps=15)

        # autograd through quack's softmax runs its backward kernel only (y is saved)
        r, e = H.safe(quack_bw)
        rows.append(_row("softmax BW", M, N, dt, "quack", nbytes, r, e, copy_gbs, None, None))
    return rows


def _row(op, M, N, dt, provider, nbytes, t, err_msg, copy_gbs, relerr, sku):
    if t is None:
        return dict(case=op, shape=f"{M}x{N}", dtype=dt, provider=provider, error=err_msg)
    g = H.gbs(nbytes, t.median)
    status = "ok"
    if relerr is not None and not relerr <= TOL[dt]:
        status = f"FAIL (rel err {relerr:.1e})"
    return dict(case=op, shape=f"{M}x{N}", dtype=dt, provider=provider, bytes=nbytes,
                ms=t.median, ms_min=t.min, gbs=g, frac=g / copy_gbs, relerr=relerr,
                sku=None if sku is None else str(dict(sku.knobs)), status=status)


def run(out_dir=None, quick: bool = False, log=print) -> dict:
    torch = H._torch()
    copy = H.copy_bandwidth()
    log(f"softmax: copy ceiling {copy['gbs']:.0f} GB/s")
    cases = QUICK if quick else CASES
    fns = []
    for M, N, dt in cases:
        fns.append(lambda M=M, N=N, dt=dt: _fw_rows(torch, copy["gbs"], M, N, dt))
    for M, N, dt in cases:
        fns.append(lambda M=M, N=N, dt=dt: _bw_rows(torch, copy["gbs"], M, N, dt))

    def line(r):
        if r.get("error"):
            return f"{r.get('case')} {r.get('shape')} {r.get('provider')}: {r['error']}"
        return (f"{r['case']} {r['shape']} {r['dtype']} {r['provider']}: {r['ms']:.3f} ms "
                f"{r['gbs']:.0f} GB/s = {r['frac']:.2f} of copy {r['status']}")

    rows = H.group_rows("softmax", fns, line, log, empty_cache=True)
    return H.save_json(dict(copy=copy, quack=_quack() is not None, rows=rows), out_dir,
                       "bench_softmax.json")


def markdown(res: dict) -> str:
    body = []
    for r in res["rows"]:
        if r.get("case") == "error" or r.get("error"):
            body.append((r.get("case", "?"), r.get("shape", "—"), r.get("dtype", "—"),
                         r.get("provider", "—"), "—", "—", "—", r.get("error")))
            continue
        body.append((r["case"], r["shape"], r["dtype"], r["provider"], H.fmt(r["ms"], ".3f"),
                     f"{r['gbs']:.0f}", H.fmt(r["frac"]), r["status"]))
    head = (f"Copy ceiling {res['copy']['gbs']:.0f} GB/s; quack "
            f"{'present' if res.get('quack') else 'not importable'}.\n\n")
    return head + H.md_table(("case", "shape", "dtype", "provider", "ms", "GB/s", "/ copy",
                              "check"), body) + "\n"


SECTIONS = (H.Section("softmax", "Softmax", run, markdown),)


def main(argv=None):
    H.cli_main(__doc__, SECTIONS, argv)


if __name__ == "__main__":
    main()
