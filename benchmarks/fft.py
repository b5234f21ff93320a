"""FFT benchmark on the GPU host: the fft family's FFTPlan (cuFFT through nvmath-python) and
``array_api.fft`` against ``torch.fft`` and ``cupy.fft`` in the same run.  Usage (GPU host, from
the repo root): ``python3 -m benchmarks.fft [--quick] [--out DIR]``; run_all may call
``run(out_dir, quick, log)`` (section ``fft``).

Cases (every one about 2^26 elements in total, so small transforms are batched to fill the chip;
the 4096² image is 2^24):

=====================  ======================================================================
c2c 1-D                complex64, n = 2^10, 2^12, …, 2^24 (``--quick``: 2^10, 2^16, 2^22),
                       batch 2^26 / n, along the last (contiguous) axis
r2c 1-D                float32 → complex64, n = 2^10, 2^16, 2^22 (``--quick``: 2^16)
c2c 2-D                complex64 images 16 × 2048 × 2048 and 4096 × 4096 (fft2 over the last
                       two axes)
r2c 2-D                float32 16 × 2048 × 2048 (rfft2)
=====================  ======================================================================

Providers: ``plan`` (FFTPlan.run into a preallocated output with a preallocated workspace: the
vendor call, our Python and launch path), ``xp`` (``array_api.fft``: plus result allocation and
the cached plan lookup), ``torch`` (``torch.fft``), ``cupy`` (``cupy.fft``, when installed).
Times are CUDA-event medians of back-to-back calls after a warm-up (benchmarks/harness.py
``bench``).  GB/s counts the bytes read (input) + written (output) once — the traffic floor of
one pass, not what cuFFT actually moves (large sizes take several passes).  "vs torch" = torch
ms / ms.  Each provider's result is checked once against torch's in float64:
‖out − torch‖/‖torch‖ < 1e-5 (complex64 / float32).
"""

from __future__ import annotations

import math

from . import harness as H

TOTAL = 2 ** 26


def cases(quick: bool):
    """(label, kind, shape, axes, dtype name) of each case."""
    out = []
    c2c = (10, 16, 22) if quick else tuple(range(10, 25, 2))
    for k in c2c:
        n = 2 ** k
        out.append((f"c2c 1-D n=2^{k}", "c2c", (TOTAL // n, n), (-1,), "complex64"))
    for k in ((16,) if quick else (10, 16, 22)):
        n = 2 ** k
        out.append((f"r2c 1-D n=2^{k}", "r2c", (TOTAL // n, n), (-1,), "float32"))
    out.append(("c2c 2-D 16x2048²", "c2c", (16, 2048, 2048), (-2, -1), "complex64"))
    if not quick:
        out.append(("c2c 2-D 4096²", "c2c", (4096, 4096), (-2, -1), "complex64"))
        out.append(("r2c 2-D 16x2048²", "r2c", (16, 2048, 2048), (-2, -1), "float32"))
    return out


def _providers(torch, kind, axes, x, out_like):
    """{name: (callable returning a result, to_torch(result))}."""
    from array_api import fft as xfft
    import array_api as xp
    from baracuda_dsl.ops.fft import FFTArgs, FFTDescriptor, FFTPlan

    dims = tuple(a % x.ndim for a in axes)
    desc = FFTDescriptor(tuple(x.shape), dims, kind, str(x.dtype).replace("torch.", ""))
    plan = FFTPlan.select(desc)
    out = torch.empty(desc.out_shape, dtype=out_like, device="cuda")
    ws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8, device="cuda")
    args = FFTArgs(x, out)
    ax = xp.from_dlpack(x)
    one = len(dims) == 1

    def run_plan():
        plan.run(args, workspace=ws)
        return out

    if kind == "c2c":
        ours_xp = (lambda: xfft.fft(ax, axis=dims[0])) if one else \
            (lambda: xfft.fftn(ax, axes=dims))
        tor = (lambda: torch.fft.fft(x, dim=dims[0])) if one else \
            (lambda: torch.fft.fftn(x, dim=dims))
    else:
        ours_xp = (lambda: xfft.rfft(ax, axis=dims[0])) if one else \
            (lambda: xfft.rfftn(ax, axes=dims))
        tor = (lambda: torch.fft.rfft(x, dim=dims[0])) if one else \
            (lambda: torch.fft.rfftn(x, dim=dims))
    res = {"plan": (run_plan, lambda r: r),
           "xp": (ours_xp, lambda r: torch.from_dlpack(r)),
           "torch": (tor, lambda r: r)}
    try:
        import cupy as cp
    except ImportError:
        cp = None
    if cp is not None:
        cx = cp.from_dlpack(x)
        if kind == "c2c":
            cf = (lambda: cp.fft.fft(cx, axis=dims[0])) if one else \
                (lambda: cp.fft.fftn(cx, axes=dims))
        else:
            cf = (lambda: cp.fft.rfft(cx, axis=dims[0])) if one else \
                (lambda: cp.fft.rfftn(cx, axes=dims))
        res["cupy"] = (cf, lambda r: torch.from_dlpack(r))
    return res, plan


def _case(torch, label, kind, shape, axes, _dtname):
    g = torch.Generator(device="cuda").manual_seed(0)
    if kind == "c2c":
        x = torch.randn(shape, dtype=torch.complex64, device="cuda", generator=g)
        out_dt = torch.complex64
    else:
        x = torch.randn(shape, dtype=torch.float32, device="cuda", generator=g)
        out_dt = torch.complex64
    provs, plan = _providers(torch, kind, axes, x, out_dt)
    ref = None
    rows = []
    out_elems = math.prod(plan.desc.out_shape)
    nbytes = x.numel() * x.element_size() + out_elems * 8
    big = x.numel() * x.element_size() >= 2 ** 28
    reps, warm, nb = (8, 1, 2) if big else (15, 2, 4)
    for name in ("torch",) + tuple(k for k in provs if k != "torch"):
        fn, to_torch = provs[name]
        r, err = H.safe(fn)
        if err is None:
            torch.cuda.synchronize()
            got = to_torch(r)
            if name == "torch":
                ref = got.clone()
                relerr = 0.0
            else:
                relerr = H.rel_err(got, ref) if ref is not None else float("nan")
            del r, got
            t, err = H.safe(H.bench, fn, reps=reps, warm=warm, batch=nb)
        if err is not None:
            rows.append(dict(case=label, provider=name, n=x.numel(), error=err))
            continue
        rows.append(dict(case=label, provider=name, n=x.numel(), ms=t.median,
                         gbs=H.gbs(nbytes, t.median), relerr=relerr,
                         ok=bool(relerr < 1e-5),
                         workspace=plan.workspace_size() if name == "plan" else None))
    tms = {r["provider"]: r.get("ms") for r in rows}
    for r in rows:
        if r.get("ms") and tms.get("torch"):
            r["vs_torch"] = tms["torch"] / r["ms"]
    return rows


def run(out_dir=None, quick: bool = False, log=print) -> dict:
    """Every case of :func:`cases` (each under harness.safe), with the copy ceiling of the run."""
    torch = H._torch()
    copy = H.copy_bandwidth()
    fns = [lambda c=c: _case(torch, *c) for c in cases(quick)]

    def line(r):
        if r.get("error"):
            return f"{r.get('case')} {r.get('provider')}: {r['error']}"
        return (f"{r['case']} {r['provider']}: {r['ms']:.3f} ms {r['gbs']:.0f} GB/s "
                f"vs torch {H.fmt(r.get('vs_torch'))} relerr {r['relerr']:.1e} ok={r['ok']}")

    rows = H.group_rows("fft", fns, line, log, empty_cache=True)
    return H.save_json(dict(copy=copy, rows=rows, device=H.device_info()), out_dir,
                       "bench_fft.json")


def markdown(res: dict) -> str:
    body = []
    for r in res["rows"]:
        if r.get("case") == "error" or r.get("error"):
            body.append((r.get("case", "—"), r.get("provider", "—"), "—", "—", "—",
                         r.get("error")))
            continue
        body.append((r["case"], r["provider"], H.fmt(r["ms"], ".3f"), H.fmt(r["gbs"], ".0f"),
                     H.fmt(r.get("vs_torch")),
                     ("ok" if r["ok"] else "FAIL") + f" ({r['relerr']:.0e})"))
    copy = res.get("copy", {}).get("gbs")
    head = f"Copy ceiling this run: {H.fmt(copy, '.0f')} GB/s.\n\n" if copy else ""
    return head + H.md_table(("case", "provider", "ms", "GB/s (in+out)", "torch ms / ms",
                              "check vs torch"), body) + "\n"


SECTIONS = (H.Section("fft", "FFT (cuFFT)", run, markdown),)


def main(argv=None):
    H.cli_main(__doc__, SECTIONS, argv)


if __name__ == "__main__":
    main()
