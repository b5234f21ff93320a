"""Dense linear algebra benchmark on the GPU host: ``xp.linalg`` (the linalg family's cuSOLVER
Plans) against ``torch.linalg`` and ``cupy.linalg`` in the same run.  Usage (GPU host, from the
repo root): ``python3 -m benchmarks.linalg [--quick] [--out DIR]``; run_all may call
``run(out_dir, quick, log)`` (section ``linalg``).

Cases: cholesky, solve (one right-hand side), qr, svd, eigh on a stack of 512 (svd: 256) 64×64 matrices and on one large matrix (4096; svd and
eigh 2048), float32 (and float64 for the single Cholesky).  Inputs are well-conditioned
(A·Aᴴ + n·I for cholesky / eigh, A + n·I for solve).  Times are CUDA-event medians of a few
back-to-back calls after a warm-up (benchmarks/harness.py ``bench``); each call includes the
namespace's result allocation and, for ours, the info read-back (one device→host copy, as
torch's ``linalg.cholesky`` / ``solve`` also check).  GFLOP/s uses the textbook operation counts
(cholesky n³/3, LU + solve 2n³/3 + 2n²k, QR 4n³/3, the others as time only).  Each provider's
result is checked once: a residual in float64 (‖A − LLᴴ‖/‖A‖ etc.).
"""

from __future__ import annotations

from . import harness as H

BATCHED = dict(batch=512, n=64)
SINGLE = 4096
SINGLE_SLOW = 2048     # svd / eigh of one matrix


def _flops(op, batch, n):
    per = {"cholesky": n ** 3 / 3, "solve": 2 * n ** 3 / 3 + 2 * n * n, "qr": 4 * n ** 3 / 3}
    return per.get(op, 0.0) * batch


def _inputs(torch, op, batch, n, dtype):
    g = torch.Generator(device="cuda").manual_seed(0)
    shape = ((batch,) if batch > 1 else ()) + (n, n)
    a = torch.randn(shape, device="cuda", dtype=dtype, generator=g)
    if op in ("cholesky", "eigh"):
        a = a @ a.mT + n * torch.eye(n, device="cuda", dtype=dtype)
    elif op == "solve":
        a = a + n * torch.eye(n, device="cuda", dtype=dtype)
    b = torch.randn(shape[:-1] + (1,), device="cuda", dtype=dtype, generator=g)
    return a, b


def _residual(torch, op, a, out):
    """‖·‖-relative residual of ``out`` (the op's result, torch tensors) for input ``a``."""
    a = a.double()
    if op == "cholesky":
        l = out.double()
        return float(torch.linalg.norm(l @ l.mT - a) / torch.linalg.norm(a))
    if op == "solve":
        x, b = out
        return float(torch.linalg.norm(a @ x.double() - b.double()) /
                     (torch.linalg.norm(a) * torch.linalg.norm(x.double())))
    if op == "qr":
        q, r = (t.double() for t in out)
        return float(torch.linalg.norm(q @ r - a) / torch.linalg.norm(a))
    if op == "svd":
        u, s, vh = (t.double() for t in out)
        return float(torch.linalg.norm((u * s[..., None, :]) @ vh - a) / torch.linalg.norm(a))
    if op == "eigh":
        w, v = (t.double() for t in out)
        return float(torch.linalg.norm(a @ v - v * w[..., None, :]) / torch.linalg.norm(a))
    raise ValueError(op)


def _providers(torch, xp, cp, op):
    """{name: (fn(a, b) -> result, to_torch(result))} for ``op``."""
    def tt(x):
        return torch.from_dlpack(x)

    ours = {
        "cholesky": (lambda a, b: xp.linalg.cholesky(a), tt),
        "solve": (lambda a, b: (xp.linalg.solve(a, b), b), lambda r: (tt(r[0]), tt(r[1]))),
        "qr": (lambda a, b: xp.linalg.qr(a), lambda r: (tt(r[0]), tt(r[1]))),
        "svd": (lambda a, b: xp.linalg.svd(a, full_matrices=False),
                lambda r: tuple(tt(t) for t in r)),
        "eigh": (lambda a, b: xp.linalg.eigh(a), lambda r: (tt(r[0]), tt(r[1]))),
    }[op]
    tor = {
        "cholesky": (lambda a, b: torch.linalg.cholesky(a), lambda r: r),
        "solve": (lambda a, b: (torch.linalg.solve(a, b), b), lambda r: r),
        "qr": (lambda a, b: torch.linalg.qr(a), lambda r: r),
        "svd": (lambda a, b: torch.linalg.svd(a, full_matrices=False), lambda r: r),
        "eigh": (lambda a, b: torch.linalg.eigh(a), lambda r: r),
    }[op]
    out = {"ours": ours, "torch": tor}
    if cp is not None:
        out["cupy"] = ({
            "cholesky": lambda a, b: cp.linalg.cholesky(a),
            "solve": lambda a, b: (cp.linalg.solve(a, b), b),
            "qr": lambda a, b: cp.linalg.qr(a),
            "svd": lambda a, b: cp.linalg.svd(a, full_matrices=False),
            "eigh": lambda a, b: cp.linalg.eigh(a),
        }[op], lambda r: tuple(tt(t) for t in r) if isinstance(r, tuple) else tt(r))
    return out


def _case(torch, copy_gbs, op, batch, n, dtname):
    import array_api as xp
    try:
        import cupy as cp
    except ImportError:
        cp = None
    dtype = getattr(torch, dtname)
    a, b = _inputs(torch, op, batch, n, dtype)
    args = {"ours": (xp.from_dlpack(a), xp.from_dlpack(b)), "torch": (a, b)}
    if cp is not None:
        args["cupy"] = (cp.from_dlpack(a), cp.from_dlpack(b))
    rows = []
    big = batch == 1 and n >= 2048
    reps, warm, nb = (3, 1, 1) if big else (10, 2, 4)
    for name, (fn, to_torch) in _providers(torch, xp, cp, op).items():
        res = fn(*args[name])
        torch.cuda.synchronize()
        err = _residual(torch, op, a, to_torch(res))
        t, e = H.safe(H.bench, lambda: fn(*args[name]), reps=reps, warm=warm, batch=nb)
        if e is not None:
            rows.append(dict(case=op, shape=f"{batch}x{n}x{n}", dtype=dtname, provider=name,
                             error=e))
            continue
        fl = _flops(op, batch, n)
        rows.append(dict(case=op, shape=f"{batch}x{n}x{n}", dtype=dtname, provider=name,
                         ms=t.median, gflops=fl / t.median / 1e6 if fl else None, relerr=err,
                         ok=err < (1e-4 if dtname == "float32" else 1e-12)))
    tms = {r["provider"]: r.get("ms") for r in rows}
    for r in rows:
        if r.get("ms") and tms.get("torch"):
            r["vs_torch"] = tms["torch"] / r["ms"]
        if r.get("ms") and tms.get("cupy"):
            r["vs_cupy"] = tms["cupy"] / r["ms"]
    return rows


def cases(quick: bool):
    bb, bn = BATCHED["batch"], BATCHED["n"]
    out = []
    for op in ("cholesky", "solve", "qr", "eigh", "svd"):
        out.append((op, bb // 2 if op == "svd" else bb, bn, "float32"))
        if not quick:
            out.append((op, 1, SINGLE_SLOW if op in ("svd", "eigh") else SINGLE, "float32"))
    if not quick:
        out.append(("cholesky", 1, SINGLE, "float64"))
    return out


def run(out_dir=None, quick=False, log=print):
    torch = H._torch()
    copy = H.copy_bandwidth()
    fns = [lambda c=c: _case(torch, copy["gbs"], *c) for c in cases(quick)]

    def line(r):
        if r.get("error"):
            return f"{r.get('case')} {r.get('shape')} {r.get('provider')}: {r['error']}"
        return (f"{r['case']} {r['shape']} {r['dtype']} {r['provider']}: {r['ms']:.3f} ms "
                f"vs torch {H.fmt(r.get('vs_torch'))} vs cupy {H.fmt(r.get('vs_cupy'))} "
                f"relerr {r['relerr']:.1e} ok={r['ok']}")

    rows = H.group_rows("linalg", fns, line, log, empty_cache=True)
    return H.save_json(dict(copy=copy, rows=rows, device=H.device_info()), out_dir,
                       "bench_linalg.json")


def markdown(res: dict) -> str:
    body = []
    for r in res["rows"]:
        if r.get("case") == "error" or r.get("error"):
            body.append((r.get("case", "—"), r.get("shape", "—"), r.get("dtype", "—"),
                         r.get("provider", "—"), "—", "—", "—", "—", r.get("error")))
            continue
        body.append((r["case"], r["shape"], r["dtype"], r["provider"], H.fmt(r["ms"], ".3f"),
                     H.fmt(r.get("gflops"), ".0f"), H.fmt(r.get("vs_torch")),
                     H.fmt(r.get("vs_cupy")),
                     ("ok" if r["ok"] else "FAIL") + f" ({r['relerr']:.0e})"))
    return H.md_table(("op", "batch×n×n", "dtype", "provider", "ms", "GFLOP/s", "torch ms / ms",
                       "cupy ms / ms", "residual"), body) + "\n"


SECTIONS = (H.Section("linalg", "Dense linear algebra (cuSOLVER)", run, markdown),)


def main(argv=None):
    H.cli_main(__doc__, SECTIONS, argv)


if __name__ == "__main__":
    main()
