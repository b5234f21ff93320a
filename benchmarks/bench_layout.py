"""Layout benchmarks on the GPU host: permute (tiled transpose), concat and flip against torch in
the same run.  Usage (GPU host): ``python3 benchmarks/bench_layout.py [--quick] [--out DIR]``;
run_all.py calls ``run(out_dir, quick, log)``.

Cases (bytes = input read once + output written once):

=====================  ======================================================================
transpose 2-D          16384 × 16384 float32 and bfloat16, perm (1, 0)
permute 4-D            64 × 256 × 56 × 56 bfloat16, perms (0, 2, 3, 1) and (0, 3, 1, 2)
concat                 4 × (4096 × 4096) float32 along axis 0 and axis 1
flip                   16384 × 4096 float32 along axis 0 and axis 1
=====================  ======================================================================

Every result is checked bit-exactly against torch first.  "/ copy" divides bytes / time by the
device-to-device copy ceiling of the run (torch ``dst.copy_(src)`` of 1 GiB); "/ same-size
copy" divides the time of a torch ``copy_`` of the same bytes by ours; "vs torch" = torch time /
ours (> 1: ours faster).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness as H  # noqa: E402

CASES = [("transpose", (16384, 16384), (1, 0), "float32"),
         ("transpose", (16384, 16384), (1, 0), "bfloat16"),
         ("permute", (64, 256, 56, 56), (0, 2, 3, 1), "bfloat16"),
         ("permute", (64, 56, 56, 256), (0, 3, 1, 2), "bfloat16"),
         ("permute", (64, 64, 128, 128), (0, 2, 3, 1), "float32"),
         ("concat", (4096, 4096), 0, "float32"),
         ("concat", (4096, 4096), 1, "float32"),
         ("flip", (16384, 4096), (0,), "float32"),
         ("flip", (16384, 4096), (1,), "float32")]
QUICK = [CASES[0], CASES[2], CASES[6]]


def _rand(torch, shape, dt):
    return torch.randn(shape, device="cuda", dtype=torch.float32).to(getattr(torch, dt))


def _case(torch, copy_gbs, kind, shape, arg, dt):
    from baracuda_dsl.ops.shape import layout as L

    if kind in ("transpose", "permute"):
        x = _rand(torch, shape, dt)
        d = L.PermuteDescriptor(shape, arg, dt)
        plan = L.PermutePlan.select(d)
        out = torch.empty(d.out_shape, device="cuda", dtype=x.dtype)
        args = L.PermuteArgs(x, out)
        ref_fn = lambda: x.permute(*arg).contiguous()  # noqa: E731
        nbytes = 2 * x.numel() * x.element_size()
        label = f"perm {arg}"
    elif kind == "concat":
        xs = [_rand(torch, shape, dt) for _ in range(4)]
        d = L.ConcatDescriptor((shape,) * 4, arg, dt)
        plan = L.ConcatPlan.select(d)
        out = torch.empty(d.out_shape, device="cuda", dtype=xs[0].dtype)
        args = L.ConcatArgs(xs, out)
        ref_fn = lambda: torch.cat(xs, dim=arg)  # noqa: E731
        nbytes = 2 * out.numel() * out.element_size()
        label = f"4 × axis {arg}"
    else:
        x = _rand(torch, shape, dt)
        d = L.FlipDescriptor(shape, arg, dt)
        plan = L.FlipPlan.select(d)
        out = torch.empty_like(x)
        args = L.FlipArgs(x, out)
        ref_fn = lambda: torch.flip(x, dims=arg)  # noqa: E731
        nbytes = 2 * x.numel() * x.element_size()
        label = f"axes {arg}"
    plan.run(args)
    ok = bool(torch.equal(out.view(torch.uint8) if out.dtype == torch.bool else out, ref_fn()))
    kern = ",".join(sorted(set(plan.kernels_for(args))))
    t = H.bench(lambda: plan.run(args), reps=15)
    tt = H.bench(ref_fn, reps=15)
    cs = torch.empty(nbytes // 2, device="cuda", dtype=torch.uint8).random_(0, 255)
    cd = torch.empty_like(cs)
    tc = H.bench(lambda: cd.copy_(cs), reps=15)
    gbs = H.gbs(nbytes, t.median)
    return dict(same_copy_frac=tc.median / t.median,case=kind, shape="x".join(map(str, shape)), arg=label, dtype=dt, kernel=kern,
                ms=t.median, torch_ms=tt.median, gbs=gbs, frac=gbs / copy_gbs,
                torch_frac=H.gbs(nbytes, tt.median) / copy_gbs, ok=ok)


def run(out_dir=None, quick=False, log=print):
    copy = H.copy_bandwidth()["gbs"]
    rows = H.case_rows("layout", QUICK if quick else CASES, _case,
                       lambda c, err: dict(case=c[0], shape="x".join(map(str, c[1])),
                                           arg=str(c[2]), dtype=c[3], error=err), copy, log)
    return H.save_json(dict(rows=rows, copy_gbs=copy), out_dir, "bench_layout.json")


def markdown(res) -> str:
    body = []
    for r in res["rows"]:
        if r.get("error"):
            body.append((r["case"], r["shape"], r["arg"], r["dtype"], "—", "—", "—", "—", "—",
                         "—", "—", r["error"]))
            continue
        body.append((r["case"], r["shape"], r["arg"], r["dtype"], r["kernel"],
                     H.fmt(r["ms"], ".3f"), f"{r['gbs']:.0f}", H.fmt(r["frac"]),
                     H.fmt(r["same_copy_frac"]), H.fmt(r["torch_frac"]),
                     H.fmt(r["torch_ms"] / r["ms"]),
                     "ok" if r["ok"] else "FAIL"))
    return (f"copy ceiling {res['copy_gbs']:.0f} GB/s\n\n"
            + H.md_table(("case", "shape", "arg", "dtype", "kernel", "ms", "GB/s", "/ copy",
                          "/ same-size copy", "torch / copy", "vs torch", "check"), body) + "\n")


def main(argv=None):
    H.cli_main(__doc__, run, markdown, argv)


if __name__ == "__main__":
    main()
