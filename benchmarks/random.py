"""Random-number and dropout benchmarks on the GPU host: RandomPlan (Philox4x32-10) and
DropoutPlan / DropoutBackwardPlan against torch in the same run.  Usage (GPU host, from
the repo root): ``python3 -m benchmarks.random [--quick] [--out DIR]``; run_all calls
``run(out_dir, quick, log)`` (section ``random``).

Cases (2^28 elements; 2^26 with ``--quick``; bytes = what the kernel must move):

=====================  ======================================================================
uniform f32            RandomPlan uniform [0, 1) vs torch.rand            (4 B written / elem)
normal f32             RandomPlan normal (Box–Muller) vs torch.randn       (4 B written / elem)
dropout bf16 FW        DropoutPlan p = 0.1 vs F.dropout(training=True)    (2 B read + 2 B written)
dropout bf16 BW        DropoutBackwardPlan (mask regenerated) vs torch's
                       grad_out·mask·scale with the stored bool mask     (2 B read + 2 B written)
=====================  ======================================================================

"/ copy" = GB/s over the device-to-device copy bandwidth of the same run; "vs torch" = torch
time / ours.  Checks: uniform in [0, 1) with mean ≈ ½, normal mean ≈ 0 / var ≈ 1, dropout's kept
fraction ≈ 1 − p and y = x·keep/(1−p) on the kept elements, BW equal to FW applied to dy.
"""

from __future__ import annotations

from . import harness as H

N = 2 ** 28
N_QUICK = 2 ** 26
P = 0.1


def _row(case, dtype, n, nbytes, t, tt, copy_gbs, ok, err=0.0):
    g = H.gbs(nbytes, t.median)
    return dict(case=case, shape=f"{n}", dtype=dtype, ms=t.median, torch_ms=tt.median, gbs=g,
                frac=g / copy_gbs, torch_frac=H.gbs(nbytes, tt.median) / copy_gbs, ok=ok,
                err=err)


def _uniform(torch, copy_gbs, n):
    from baracuda_dsl.ops.random.random import RandomArgs, RandomDescriptor, RandomPlan

    out = torch.empty(n, device="cuda")
    plan = RandomPlan.select(RandomDescriptor((n,), "uniform", "float32"))
    args = RandomArgs(out, 1234, 0)
    plan.run(args)
    m = out.double().mean().item()
    ok = bool(out.min().item() >= 0 and out.max().item() < 1 and abs(m - 0.5) < 1e-3)
    t = H.bench(lambda: plan.run(args), reps=15)
    tt = H.bench(lambda: torch.rand(n, device="cuda", out=out), reps=15)
    return _row("uniform [0,1)", "float32", n, 4 * n, t, tt, copy_gbs, ok, abs(m - 0.5))


def _normal(torch, copy_gbs, n):
    from baracuda_dsl.ops.random.random import RandomArgs, RandomDescriptor, RandomPlan

    out = torch.empty(n, device="cuda")
    plan = RandomPlan.select(RandomDescriptor((n,), "normal", "float32"))
    args = RandomArgs(out, 1234, 0)
    plan.run(args)
    m = out.double().mean().item()
    v = out.double().var().item()
    ok = bool(abs(m) < 1e-3 and abs(v - 1) < 1e-3)
    t = H.bench(lambda: plan.run(args), reps=15)
    tt = H.bench(lambda: torch.randn(n, device="cuda", out=out), reps=15)
    return _row("normal N(0,1)", "float32", n, 4 * n, t, tt, copy_gbs, ok, abs(v - 1))


def _dropout(torch, copy_gbs, n):
    import torch.nn.functional as F

    from baracuda_dsl.ops.random.random import (DropoutArgs, DropoutBackwardArgs,
                                                DropoutBackwardDescriptor, DropoutBackwardPlan,
                                                DropoutDescriptor, DropoutPlan)

    x = torch.randn(n, device="cuda").to(torch.bfloat16)
    y = torch.empty_like(x)
    mask = torch.empty(n, dtype=torch.uint8, device="cuda")
    fw = DropoutPlan.select(DropoutDescriptor((n,), "bfloat16", P))
    fw.run(DropoutArgs(x, y, 7, 0, mask))
    keep = mask.bool()
    frac = 1 - keep.float().mean().item()
    scale = torch.tensor(1 / (1 - P), dtype=torch.float32, device="cuda")
    ok_fw = abs(frac - P) < 1e-3 and torch.equal(
        y[keep], (x[keep].float() * scale).to(torch.bfloat16)) and not y[~keep].any()
    del keep
    dx = torch.empty_like(x)
    bw = DropoutBackwardPlan.select(DropoutBackwardDescriptor((n,), "bfloat16", P))
    bargs = DropoutBackwardArgs(x, dx, 7, 0)
    bw.run(bargs)
    ok_bw = bool(torch.equal(dx, y))
    del mask
    args = DropoutArgs(x, y, 7, 0)
    t = H.bench(lambda: fw.run(args), reps=15)
    tt = H.bench(lambda: F.dropout(x, P, training=True), reps=15)
    rows = [_row(f"dropout FW p={P}", "bfloat16", n, 4 * n, t, tt, copy_gbs, bool(ok_fw),
                 abs(frac - P))]
    # torch's backward: grad·mask·scale with the mask it saved (native_dropout_backward)
    tmask = torch.rand(n, device="cuda") > P
    t = H.bench(lambda: bw.run(bargs), reps=15)
    tt = H.bench(lambda: torch.ops.aten.native_dropout_backward(x, tmask, 1 / (1 - P)),
                 reps=15)
    rows.append(_row(f"dropout BW p={P}", "bfloat16", n, 4 * n, t, tt, copy_gbs, ok_bw))
    return rows


def run(out_dir=None, quick: bool = False, log=print) -> dict:
    torch = H._torch()
    copy = H.copy_bandwidth()["gbs"]
    n = N_QUICK if quick else N
    rows = []
    for fn in (_uniform, _normal):
        r, err = H.safe(fn, torch, copy, n)
        rows.append(r or dict(case=fn.__name__[1:], shape=f"{n}", dtype="float32", error=err))
        log(f"random: {rows[-1]}")
        torch.cuda.empty_cache()
    r, err = H.safe(_dropout, torch, copy, n)
    rows += r or [dict(case="dropout", shape=f"{n}", dtype="bfloat16", error=err)]
    for row in rows[-2:]:
        log(f"random: {row}")
    torch.cuda.empty_cache()
    return H.save_json(dict(rows=rows, copy_gbs=copy), out_dir, "bench_random.json")


def markdown(res) -> str:
    return H.speed_table(res, lambda r: ("ok" if r["ok"] else "FAIL") + f" {r['err']:.0e}")


SECTIONS = (H.Section("random", "Random numbers and dropout", run, markdown),)


def main(argv=None):
    H.cli_main(__doc__, SECTIONS, argv)


if __name__ == "__main__":
    main()
