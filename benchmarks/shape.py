"""Shape-family benchmarks on the GPU host against torch in the same run: permute (tiled
transpose), concat and flip (section ``layout``); pad, roll, triu and the pad backward (section
``pad``).  Usage (GPU host, from the repo root):
``python3 -m benchmarks.shape [--quick] [--out DIR] [--sections layout,pad]``; run_all calls
``run_layout`` and ``run_pad`` with ``(out_dir, quick, log)``.

Layout cases (bytes = input read once + output written once):

=====================  ======================================================================
transpose 2-D          16384 × 16384 float32 and bfloat16, perm (1, 0)
permute 4-D            64 × 256 × 56 × 56 bfloat16, perms (0, 2, 3, 1) and (0, 3, 1, 2)
concat                 4 × (4096 × 4096) float32 along axis 0 and axis 1
flip                   16384 × 4096 float32 along axis 0 and axis 1
=====================  ======================================================================

Every layout result is checked bit-exactly against torch first.  "/ copy" divides bytes / time
by the device-to-device copy ceiling of the run (torch ``dst.copy_(src)`` of 1 GiB); "/ same-size
copy" divides the time of a torch ``copy_`` of the same bytes by ours; "vs torch" = torch time /
ours (> 1: ours faster).

Pad cases (bytes = the input read once + the output written; triu: the kept half read + all
written):

======================  =====================================================================
constant pad            32×64×224×224 bf16 / f32, last two dims padded by (1, 1) / (2, 3)
reflect pad             32×64×224×224 bf16, last two dims padded by (3, 3)
roll flat               2^28 float32 rolled by 12345 (flattened)
roll rows               16384 × 16384 bf16 rolled by 7 along the rows (axis 0)
triu                    8192 × 8192 float32, k = 0
pad backward            reflect (3, 3) on the last two dims of 32×64×224×224 float32; again
                        with ``PadTuning(fast_2d=False)`` (the general ``pad_bw`` kernel the
                        ``pad_bw2d`` fast path replaces)
======================  =====================================================================

Every pad result is checked against torch first (bit-exact for copies, ‖dx − ref‖/‖ref‖ ≤ 1e-5
for the backward).  "/ copy" divides model bytes / time by the copy ceiling of the run; "vs
torch" = torch time / ours (> 1: ours faster).
"""

from __future__ import annotations

from . import harness as H

# -- permute, concat, flip ----------------------------------------------------------------------
LAYOUT_CASES = [("transpose", (16384, 16384), (1, 0), "float32"),
         ("transpose", (16384, 16384), (1, 0), "bfloat16"),
         ("permute", (64, 256, 56, 56), (0, 2, 3, 1), "bfloat16"),
         ("permute", (64, 56, 56, 256), (0, 3, 1, 2), "bfloat16"),
         ("permute", (64, 64, 128, 128), (0, 2, 3, 1), "float32"),
         ("concat", (4096, 4096), 0, "float32"),
         ("concat", (4096, 4096), 1, "float32"),
         ("flip", (16384, 4096), (0,), "float32"),
         ("flip", (16384, 4096), (1,), "float32")]
LAYOUT_QUICK = [LAYOUT_CASES[0], LAYOUT_CASES[2], LAYOUT_CASES[6]]


def _rand(torch, shape, dt):
    return torch.randn(shape, device="cuda", dtype=torch.float32).to(getattr(torch, dt))


def _layout_case(torch, copy_gbs, kind, shape, arg, dt):
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


def run_layout(out_dir=None, quick=False, log=print):
    """Permute / concat / flip rows against this section's own copy ceiling."""
    copy = H.copy_bandwidth()["gbs"]
    rows = H.case_rows("layout", LAYOUT_QUICK if quick else LAYOUT_CASES, _layout_case,
                       lambda c, err: dict(case=c[0], shape="x".join(map(str, c[1])),
                                           arg=str(c[2]), dtype=c[3], error=err), copy, log)
    return H.save_json(dict(rows=rows, copy_gbs=copy), out_dir, "bench_layout.json")


def markdown_layout(res) -> str:
    """The layout table (kernels, fraction of copy and of a same-size copy, check)."""
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


# -- pad, roll, triu ---------------------------------------------------------------------------
IMG = (32, 64, 224, 224)
PAD_CASES = [("constant pad", IMG, ((0, 0), (0, 0), (1, 1), (1, 1)), "constant", "bfloat16"),
         ("constant pad", IMG, ((0, 0), (0, 0), (2, 3), (2, 3)), "constant", "float32"),
         ("constant pad", IMG, ((0, 0), (0, 0), (1, 1), (1, 1)), "constant", "float32"),
         ("reflect pad", IMG, ((0, 0), (0, 0), (3, 3), (3, 3)), "reflect", "bfloat16"),
         ("roll flat", (2 ** 28,), (12345,), "roll", "float32"),
         ("roll rows", (16384, 16384), (7, 0), "roll", "bfloat16"),
         ("triu", (8192, 8192), 0, "triu", "float32"),
         ("pad backward", IMG, ((0, 0), (0, 0), (3, 3), (3, 3)), "reflect_bw", "float32"),
         # the general pad_bw kernel that the pad_bw2d fast path replaces (PadTuning(fast_2d=False))
         ("pad backward (generic pad_bw)", IMG, ((0, 0), (0, 0), (3, 3), (3, 3)),
          "reflect_bw_generic", "float32")]
PAD_QUICK = [PAD_CASES[0], PAD_CASES[4], PAD_CASES[6]]


def _torch_pad_list(pads):
    flat = []
    for lo, hi in reversed(pads):
        flat += [lo, hi]
    while len(flat) > 2 and flat[-1] == 0 and flat[-2] == 0:
        flat = flat[:-2]
    return flat


def _pad_case(torch, copy_gbs, label, shape, param, kind, dt):
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
    else:  # reflect backward (reflect_bw_generic: the general pad_bw kernel, forced)
        from baracuda_dsl import PlanPreference

        d = P.PadDescriptor(shape, param, "reflect", 0, dt)
        plan = (P.PadBackwardPlan.select(d, PlanPreference(tuning=P.PadTuning(fast_2d=False)))
                if kind == "reflect_bw_generic" else P.PadBackwardPlan.select(d))
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


def run_pad(out_dir=None, quick=False, log=print):
    """Pad / roll / triu / pad-backward rows against this section's own copy ceiling."""
    copy = H.copy_bandwidth()["gbs"]
    rows = H.case_rows("pad", PAD_QUICK if quick else PAD_CASES, _pad_case,
                       lambda c, err: dict(case=c[0], shape="x".join(map(str, c[1])), dtype=c[4],
                                           error=err), copy, log)
    return H.save_json(dict(rows=rows, copy_gbs=copy), out_dir, "bench_pad.json")


def markdown_pad(res) -> str:
    """The pad table (harness.speed_table; check = ok / FAIL and the backward's rel err)."""
    return H.speed_table(res, H.ok_err)


SECTIONS = (H.Section("layout", "Permute, concat, flip", run_layout, markdown_layout),
            H.Section("pad", "Pad, roll, triangle", run_pad, markdown_pad))


def main(argv=None):
    H.cli_main(__doc__, SECTIONS, argv)


if __name__ == "__main__":
    main()
