"""Host cost per call (issue 18): µs per call of small array-API ops and ``plan.run`` on the
namespace, side by side with torch and CuPy in the same process, plus a scikit-learn workload.

Each row times ``n`` calls with ``perf_counter`` after warm-up, in batches of ``--batch``
(default 200) back-to-back calls that start on an idle device: the device is synchronised
between batches, outside the timed region, so the launch queue never fills and the number is the
host's cost of the call path, not the GPU's rate of tiny kernels (with thousands of calls in a
row, a path faster than the GPU's ~5 µs per tiny kernel waits for queue slots); median of
``--trials`` (default 5).  Every provider's
result is checked once against numpy before timing (a row that computes the wrong thing is
reported, not timed).  Goals (issue 18): ``plan.run`` <= 5 µs; every ``xp`` op <= 0.8 × torch's
per-call time; the GEMM plan <= ``torch.matmul``'s host time.

Usage (GPU host, repo root): ``python3 -m benchmarks.bench_launch [--out DIR] [--n 2000]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from . import harness as H

N_ELEM = 1024


BATCH = [200]


def _paired(fns, n: int, trials: int, sync) -> list:
    """Medians like :func:`_timed` for several callables measured in interleaved trials (ours
    and torch alternate, so the VM's drift between them cancels)."""
    for fn in fns:
        _timed(fn, max(50, n // 20), 1, sync)
    runs = [[] for _ in fns]
    for _ in range(trials):
        for k, fn in enumerate(fns):
            runs[k].append(_timed(fn, n, 1, sync, warm=False))
    return [statistics.median(r) for r in runs]


def _timed(fn, n: int, trials: int, sync, warm: bool = True) -> float:
    """Median over ``trials`` of host µs per call: ``n`` calls in batches of ``BATCH[0]``, each
    batch enqueued on an idle device (synchronised before it, outside the timing)."""
    if warm:
        for _ in range(max(50, n // 20)):
            fn()
    sync()
    batch = max(1, min(BATCH[0], n))
    out = []
    for _ in range(trials):
        total, done = 0.0, 0
        while done < n:
            sync()
            t0 = time.perf_counter()
            for _ in range(batch):
                fn()
            total += time.perf_counter() - t0
            done += batch
        out.append(total / done * 1e6)
        sync()
    return statistics.median(out)


def _ops(xp, np_mod, a, b, c, m64, q64, idx):
    """name -> (callable on this provider's arrays, numpy reference callable)."""
    return {
        "add": (lambda: xp.add(a, b), lambda A, B, C, M, Q, I: A + B),
        "exp": (lambda: xp.exp(a), lambda A, B, C, M, Q, I: np.exp(A)),
        "sum": (lambda: xp.sum(a), lambda A, B, C, M, Q, I: A.sum(dtype=np.float64)),
        "a * 2.0": (lambda: a * 2.0, lambda A, B, C, M, Q, I: A * 2.0),
        "where": (lambda: xp.where(c, a, b), lambda A, B, C, M, Q, I: np.where(C, A, B)),
        "mean(axis=0)": (lambda: xp.mean(m64, axis=0),
                         lambda A, B, C, M, Q, I: M.mean(0, dtype=np.float64)),
        "matmul 64x64": (lambda: xp.matmul(m64, q64),
                         lambda A, B, C, M, Q, I: M.astype(np.float64) @ Q),
        "astype f16": (lambda: xp.astype(a, xp.float16),
                       lambda A, B, C, M, Q, I: A.astype(np.float16)),
        "getitem a[idx]": (lambda: a[idx], lambda A, B, C, M, Q, I: A[I]),
    }


def _providers(torch):
    """(name, namespace, to-device, to-host, synchronize) for each provider present."""
    import array_api as xp

    out = [("ours", xp, xp.asarray, lambda t: t.to_numpy(), torch.cuda.synchronize)]
    out.append(("torch", _TorchNS(torch), lambda h: torch.as_tensor(h, device="cuda"),
                lambda t: t.cpu().numpy(), torch.cuda.synchronize))
    try:
        import cupy as cp

        out.append(("cupy", cp, cp.asarray, cp.asnumpy,
                    lambda: cp.cuda.runtime.deviceSynchronize()))
    except Exception as e:  # noqa: BLE001 - reported in the table
        print(f"bench_launch: cupy unavailable ({e})")
    return out


class _TorchNS:
    """The handful of array-API spellings the table uses, on torch."""

    def __init__(self, torch):
        self.t = torch
        self.float16 = torch.float16

    def add(self, a, b):
        return self.t.add(a, b)

    def exp(self, a):
        return self.t.exp(a)

    def sum(self, a):
        return self.t.sum(a)

    def where(self, c, a, b):
        return self.t.where(c, a, b)

    def mean(self, a, axis):
        return self.t.mean(a, dim=axis)

    def matmul(self, a, b):
        return self.t.matmul(a, b)

    def astype(self, a, dt):
        return a.to(dt)


def op_table(torch, n: int, trials: int) -> list:
    """Per op: each provider's call checked once against numpy, then all providers timed in
    interleaved trials (:func:`_paired`)."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal(N_ELEM).astype(np.float32)
    B = rng.standard_normal(N_ELEM).astype(np.float32)
    C = rng.random(N_ELEM) > 0.5
    M = rng.standard_normal((64, 64)).astype(np.float32)
    Q = rng.standard_normal((64, 64)).astype(np.float32)
    Ih = rng.integers(0, N_ELEM, 100)
    calls, rows, syncs = {}, {}, []
    for name, ns, dev, host, sync in _providers(torch):
        syncs.append(sync)
        a, b, c, m, q, idx = dev(A), dev(B), dev(C), dev(M), dev(Q), dev(Ih)
        for op, (fn, ref) in _ops(ns, np, a, b, c, m, q, idx).items():
            try:
                got = np.asarray(host(fn()), np.float64)
                want = np.asarray(ref(A, B, C, M, Q.astype(np.float64), Ih), np.float64)
                if not np.allclose(got, want, rtol=2e-3, atol=1e-3):
                    rows.setdefault(op, {})[name] = "WRONG"
                    continue
                calls.setdefault(op, []).append((name, fn))
            except Exception as e:  # noqa: BLE001 - reported in the table
                rows.setdefault(op, {})[name] = f"{type(e).__name__}: {str(e)[:60]}"

    def sync_all():
        for s in syncs:
            s()

    for op, named in calls.items():
        for (name, _f), us in zip(named, _paired([f for _n, f in named], n, trials, sync_all)):
            rows.setdefault(op, {})[name] = us
    out = []
    for op, r in rows.items():
        ours, t = r.get("ours"), r.get("torch")
        ratio = ours / t if isinstance(ours, float) and isinstance(t, float) else None
        out.append(dict(op=op, ours=ours, torch=t, cupy=r.get("cupy"), ratio=ratio))
    return out


def _plan_calls(torch) -> list:
    """(name, plan.run with pre-built Args, the torch call doing the same work): RMSNorm 1×256
    f32, elementwise add 1K f32, GEMM 64³ bf16."""
    import baracuda_dsl as bd
    from baracuda_dsl.ops.elementwise import ElementwiseArgs, ElementwiseDescriptor, ElementwisePlan

    rows = []
    x = torch.randn(1, 256, device="cuda")
    w = torch.randn(256, device="cuda")
    y = torch.empty_like(x)
    p = bd.RMSNormPlan.select(bd.RMSNormDescriptor((1, 256), 1, "f32", 1e-6, True))
    args = bd.RMSNormArgs(x, y, w)
    rows.append(("RMSNorm 1x256 f32", lambda: p.run(args),
                 lambda: torch.nn.functional.rms_norm(x, (256,), w, 1e-6)))
    a = torch.randn(N_ELEM, device="cuda")
    b = torch.randn(N_ELEM, device="cuda")
    o = torch.empty_like(a)
    pe = ElementwisePlan.select(ElementwiseDescriptor("add", ((N_ELEM,), (N_ELEM,)), bd.f32))
    eargs = ElementwiseArgs([a, b], [o])
    rows.append(("elementwise add 1K f32", lambda: pe.run(eargs), lambda: torch.add(a, b, out=o)))
    g1 = torch.randn(64, 64, device="cuda").to(torch.bfloat16)
    g2 = torch.randn(64, 64, device="cuda").to(torch.bfloat16)
    gc = torch.empty(64, 64, device="cuda", dtype=torch.bfloat16)
    pg = bd.GemmPlan.select(bd.GemmDescriptor(64, 64, 64, bd.bf16))
    ws = torch.empty(max(pg.workspace_size(), 1), dtype=torch.uint8, device="cuda")
    gargs = bd.GemmArgs(g1, g2, gc)
    rows.append(("GemmPlan 64x64x64 bf16", lambda: pg.run(gargs, workspace=ws),
                 lambda: torch.matmul(g1, g2, out=gc)))
    return rows


def plan_table(torch, n: int, trials: int) -> list:
    """plan.run with pre-built Args against the torch call that does the same work."""
    sync = torch.cuda.synchronize
    out = []
    for name, ours, ref in _plan_calls(torch):
        o_us, t_us = _paired([ours, ref], n, trials, sync)
        out.append(dict(op=name, ours=o_us, torch=t_us, ratio=o_us / t_us))
    return out


MODES = ("full path", "records + Python launch", "records + compiled launch")


def _set_mode(mode: str) -> bool:
    """Switch launch records / the KernelCall implementation; False when unavailable."""
    from baracuda_dsl.runtime import launcher, trace

    trace.clear_records()
    trace.set_recording(mode != MODES[0])
    try:
        launcher.use_implementation("compiled" if mode == MODES[2] else "python")
    except Exception:  # noqa: BLE001 - the extension is not built here
        return False
    return True


def path_table(torch, n: int, trials: int) -> list:
    """µs per call of a few namespace ops and plan.run in each mode of :data:`MODES` (the
    full path: every call validates, plans and packs; records: a repeated call replays its
    launch record, through cuda.bindings or through the C extension), torch in the same run."""
    import array_api as xp

    rng = np.random.default_rng(0)
    a = xp.asarray(rng.standard_normal(N_ELEM).astype(np.float32))
    b = xp.asarray(rng.standard_normal(N_ELEM).astype(np.float32))
    m = xp.asarray(rng.standard_normal((64, 64)).astype(np.float32))
    idx = xp.asarray(rng.integers(0, N_ELEM, 100))
    ta, tb = torch.as_tensor(a.to_numpy(), device="cuda"), torch.as_tensor(b.to_numpy(),
                                                                           device="cuda")
    tm, tidx = torch.as_tensor(m.to_numpy(), device="cuda"), torch.as_tensor(idx.to_numpy(),
                                                                             device="cuda")
    def unchecked_take():
        old = xp.set_index_checking(False)
        try:
            return a[idx]
        finally:
            xp.set_index_checking(old)

    cases = [
        ("xp.add", lambda: xp.add(a, b), lambda: torch.add(ta, tb)),
        ("a * 2.0", lambda: a * 2.0, lambda: ta * 2.0),
        ("xp.exp", lambda: xp.exp(a), lambda: torch.exp(ta)),
        ("xp.sum", lambda: xp.sum(a), lambda: torch.sum(ta)),
        ("xp.mean(axis=0) 64x64", lambda: xp.mean(m, axis=0), lambda: torch.mean(tm, dim=0)),
        ("xp.matmul 64x64", lambda: xp.matmul(m, m), lambda: torch.matmul(tm, tm)),
        ("xp.astype f16", lambda: xp.astype(a, xp.float16), lambda: ta.to(torch.float16)),
        ("a[idx] (index check off)", unchecked_take, lambda: ta[tidx]),
    ] + [(f"plan.run {name}", ours, ref) for name, ours, ref in _plan_calls(torch)]
    sync = torch.cuda.synchronize
    rows = {name: dict(op=name) for name, _f, _r in cases}
    for mode in MODES:
        ok = _set_mode(mode)
        for name, fn, ref in cases:
            if not ok:
                rows[name][mode] = "n/a (not built)"
                continue
            ours, theirs = _paired([fn, ref], n, trials, sync)
            rows[name][mode] = ours
            if mode == MODES[2] or "torch" not in rows[name]:
                rows[name]["torch"] = theirs     # torch timed alongside the fastest mode
    _set_mode(MODES[2]) or _set_mode(MODES[1])
    for _ in range(3):                                    # trace, confirm, replay
        xp.add(a, b)
    from array_api._elementwise_functions import binary
    from baracuda_dsl.runtime import trace

    rec = next(r for r in binary.records.table.values() if getattr(r, "confirmed", False))
    call = next(st[1] for st in rec.steps if st[0] == trace.LAUNCH)
    pa, pb = a._ptr, b._ptr
    rows["launch alone"] = dict(op="the replayed launch alone (xp.add's KernelCall)",
                                torch=float("nan"), **{m: "—" for m in MODES})
    rows["launch alone"][MODES[2]] = _timed(lambda: call(0, pa, pa, pb), n, trials, sync)
    return list(rows.values())


def sklearn_rows(torch) -> list:
    """StandardScaler.fit_transform wall ms (median of 5) through array-API dispatch, per
    namespace (ours, torch, CuPy), 2000×50 and 100000×256 float32."""
    os.environ.setdefault("SCIPY_ARRAY_API", "1")  # sklearn's array-API mode needs scipy's too
    try:
        import sklearn
        from sklearn.preprocessing import StandardScaler
    except Exception as e:  # noqa: BLE001
        return [dict(case="sklearn unavailable", error=str(e))]
    import array_api as xp

    makers = [("ours", xp.asarray, torch.cuda.synchronize),
              ("torch", lambda h: torch.as_tensor(h, device="cuda"), torch.cuda.synchronize)]
    try:
        import cupy as cp

        makers.append(("cupy", cp.asarray, cp.cuda.runtime.deviceSynchronize))
    except Exception:  # noqa: BLE001
        pass
    rows = []
    for shape in ((2000, 50), (100000, 256)):
        h = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        row = dict(case=f"StandardScaler {shape[0]}x{shape[1]}")
        for name, mk, sync in makers:
            X = mk(h)
            try:
                with sklearn.config_context(array_api_dispatch=True):
                    StandardScaler().fit_transform(X)
                    sync()
                    ts = []
                    for _ in range(5):
                        t0 = time.perf_counter()
                        StandardScaler().fit_transform(X)
                        sync()
                        ts.append((time.perf_counter() - t0) * 1e3)
                row[name] = statistics.median(ts)
            except Exception as e:  # noqa: BLE001
                row[name] = f"{type(e).__name__}: {str(e)[:60]}"
        rows.append(row)
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--n", type=int, default=2000, help="calls per timed trial")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--batch", type=int, default=200,
                    help="calls per timed batch, each started on an idle device")
    ap.add_argument("--no-sklearn", action="store_true")
    ns = ap.parse_args(argv)
    BATCH[0] = ns.batch
    torch = H._torch()
    H.check_cuda()
    res = dict(device=H.device_info(), n=ns.n, trials=ns.trials, batch=ns.batch)
    res["ops"] = op_table(torch, ns.n, ns.trials)
    res["plans"] = plan_table(torch, ns.n, ns.trials)
    res["paths"] = path_table(torch, ns.n, ns.trials)
    if not ns.no_sklearn:
        res["sklearn"] = sklearn_rows(torch)
    f = lambda v: H.fmt(v, ".1f") if isinstance(v, float) else (v or "—")  # noqa: E731
    print(f"### xp ops on {N_ELEM}-element f32 (64x64 for mean / matmul): host µs per call\n")
    print(H.md_table(["op", "ours", "torch", "CuPy", "ours / torch"],
                     [[r["op"], f(r["ours"]), f(r["torch"]), f(r["cupy"]),
                       H.fmt(r["ratio"], ".2f")] for r in res["ops"]]))
    print("\n### plan.run (pre-built Args) vs the torch call: host µs per call\n")
    print(H.md_table(["plan", "ours", "torch", "ours / torch"],
                     [[r["op"], f(r["ours"]), f(r["torch"]), H.fmt(r["ratio"], ".2f")]
                      for r in res["plans"]]))
    print("\n### launch paths: host µs per call (full path / records + cuda.bindings launch / "
          "records + compiled launch) vs torch (timed in trials interleaved with the compiled "
          "mode's)\n")
    print(H.md_table(["call", *MODES, "torch", "best / torch"],
                     [[r["op"], *[f(r[m]) for m in MODES], f(r["torch"]),
                       H.fmt(min(v for v in (r[m] for m in MODES) if isinstance(v, float))
                             / r["torch"], ".2f")] for r in res["paths"]]))
    print("\n(the last row writes into a's own buffer: it times the C extension + driver "
          "launch that every replay ends with)")
    if "sklearn" in res:
        print("\n### scikit-learn through array-API dispatch: wall ms (median of 5)\n")
        print(H.md_table(["workload", "ours", "torch", "CuPy"],
                         [[r["case"], f(r.get("ours")), f(r.get("torch")), f(r.get("cupy"))]
                          for r in res["sklearn"]]))
    H.save_json(res, ns.out, "bench_launch.json")


if __name__ == "__main__":
    main()
