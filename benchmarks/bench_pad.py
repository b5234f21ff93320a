"""Pad / roll / triu benchmarks on the GPU host against torch in the same run.  Usage (GPU host):
``python3 benchmarks/bench_pad.py [--quick] [--out DIR]``; run_all.py calls
``run(out_dir, quick, log)``.

Cases (bytes = the input read once + the output written; triu: the kept half read + all written):

======================  =====================================================================
constant pad            32×64×224×224 bf16 / f32, last two dims padded by (1, 1) / (2, 3)
reflect pad             32×64×224×224 bf16, last two dims padded by (3, 3)
roll flat               2^28 float32 rolled by 12345 (flattened)
roll rows               16384 × 16384 bf16 rolled by 7 along the rows (axis 0)
triu                    8192 × 8192 float32, k = 0
pad backward            reflect (3, 3) on the last two dims of 32×64×224×224 float32
======================  =====================================================================

Every result is checked against torch first (bit-exact for copies, ‖dx − ref‖/‖ref‖ ≤ 1e-5 for
the backward).  "/ copy" divides model bytes / time by the copy ceiling of the run; "vs torch" =
torch time / ours (> 1: ours faster).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness as H  # noqa: E402

IMG = (32, 64, 224, 224)
CASES = [("constant pad", IMG, ((0, 0), (0, 0), (1, 1), (1, 1)), "constant", "bfloat16"),
         ("constant pad", IMG, ((0, 0), (0, 0), (2, 3), (2, 3)), "constant", "float32"),
         ("constant pad", IMG, ((0, 0), (0, 0), (1, 1), (1, 1)), "constant", "float32"),
         ("reflect pad", IMG, ((0, 0), (0, 0), (3, 3), (3, 3)), "reflect", "bfloat16"),
         ("roll flat", (2 ** 28,), (12345,), "roll", "float32"),
         ("roll rows", (16384, 16384), (7, 0), "roll", "bfloat16"),
         ("triu", (8192, 8192), 0, "triu", "float32"),
         ("pad backward", IMG, ((0, 0), (0, 0), (3, 3), (3, 3)), "reflect_bw", "float32")]
QUICK = [CASES[0], CASES[4], CASES[6]]


def _torch_pad_list(pads):
    flat = []
    for lo, hi in reversed(pads):
        flat += [lo, hi]
    while len(flat) > 2 and flat[-1] == 0 and flat[-2] == 0:
        flat = flat[:-2]
    return flat


def _case(torch, copy_gbs, label, shape, param, kind, dt):
    from baracuda_dsl.ops.shape import pad as P

    F = torch.nn.functional
    tdt = getattr(torch, dt)
    x = torch.randn(shape, device="cuda", dtype=torch.float32).to(tdt)
    err = 0.0
    if kind in ("constant", "reflect"):
        d = P.PadDescriptor(shape, param, kind, 0, dt)
        plan = P.PadPlan.select(d)
        out = torch.empty(d.out_shape, device="cuda", dtype=tdt)
        args = P.PadArgs(x, out)
        tp = _torch_pad_list(param)
        ref_fn = lambda: F.pad(x, tp, mode=kind)  # noqa: E731
        nbytes = x.numel() * x.element_size() + out.numel() * out.element_size()
        run = lambda: plan.run(args)  # noqa: E731
        run()
        ok = bool(torch.equal(out, ref_fn()))
    elif kind == "roll":
        d = P.RollDescriptor(shape, param, dt)
        plan = P.RollPlan.select(d)
        out = torch.empty_like(x)
        args = P.RollArgs(x, out)
        ref_fn = lambda: torch.roll(x, param, tuple(range(len(shape))))  # noqa: E731
        nbytes = 2 * x.numel() * x.element_size()
        run = lambda: plan.run(args)  # noqa: E731
        run()
        ok = bool(torch.equal(out, ref_fn()))
    elif kind == "triu":
        d = P.TriDescriptor(shape, param, True, dt)
        plan = P.TriuPlan.select(d)
        out = torch.empty_like(x)
        args = P.TriArgs(x, out)
        ref_fn = lambda: torch.triu(x, param)  # noqa: E731
        nbytes = (x.numel() // 2 + x.numel()) * x.element_size()
        run = lambda: plan.run(args)  # noqa: E731
        run()
        ok = bool(torch.equal(out, ref_fn()))
    else:  # reflect backward
        d = P.PadDescriptor(shape, param, "reflect", 0, dt)
        plan = P.PadBackwardPlan.select(d)
        dy = torch.randn(d.out_shape, device="cuda", dtype=tdt)
        dx = torch.empty_like(x)
        args = P.PadBackwardArgs(dy, dx)
        tp = _torch_pad_list(param)
        xr = x.detach().double().requires_grad_(True)
        F.pad(xr, tp, mode="reflect").backward(dy.double())
        run = lambda: plan.run(args)  # noqa: E731
        run()
        ref = xr.grad
        err = float((dx.double() - ref).norm() / ref.norm())
        ok = err <= 1e-5
        xg = x.detach().requires_grad_(True)
        yg = F.pad(xg, tp, mode="reflect")

        def ref_fn():
            xg.grad = None
            yg.backward(dy, retain_graph=True)
        nbytes = dy.numel() * dy.element_size() + dx.numel() * dx.element_size()
    t = H.bench(run, reps=15)
    tt = H.bench(ref_fn, reps=15)
    gbs = H.gbs(nbytes, t.median)
    return dict(case=label, shape="x".join(map(str, shape)), dtype=dt, sku=str(plan.sku()),
                ms=t.median, torch_ms=tt.median, gbs=gbs, frac=gbs / copy_gbs,
                torch_frac=H.gbs(nbytes, tt.median) / copy_gbs, err=err, ok=ok)


def run(out_dir=None, quick=False, log=print):
    copy = H.copy_bandwidth()["gbs"]
    rows = H.case_rows("pad", QUICK if quick else CASES, _case,
                       lambda c, err: dict(case=c[0], shape="x".join(map(str, c[1])), dtype=c[4],
                                           error=err), copy, log)
    return H.save_json(dict(rows=rows, copy_gbs=copy), out_dir, "bench_pad.json")


def markdown(res) -> str:
    return H.speed_table(res, lambda r: ("ok" if r["ok"] else "FAIL") + f" {r['err']:.0e}")


def main(argv=None):
    H.cli_main(__doc__, run, markdown, argv)


if __name__ == "__main__":
    main()
