"""Image-family benchmarks on the GPU host against torch in the same run (section ``image``):
interpolate forward / backward in the modes models use, and grid_sample.  Usage (GPU host, from
the repo root): ``python3 -m benchmarks.image [--quick] [--out DIR]``; run_all calls
``run(out_dir, quick, log)``.

Cases (bytes = the input read once + the output written once; grid_sample adds the grid):

=============================  ================================================================
bilinear ×2 (NCHW, NHWC)       32×64×128×128 bf16 → 256×256
nearest ×2                     16×64×128×128 float32 → 256×256
bicubic ×2                     16×32×128×128 float32 → 256×256
area ½                         32×64×256×256 float32 → 128×128
bilinear antialias ½           16×3×1024×1024 float32 → 512×512
bilinear ×2 backward           the bilinear ×2 case in float32 (dy read, dx written); the default
                               deterministic gather, and the atomic scatter
                               (``InterpolateTuning(deterministic=False)``) in float32 / bf16
grid_sample bilinear           16×32×256×256 float32, a random grid of the same size
=============================  ================================================================

Every result is checked against torch first (‖out − ref‖/‖ref‖ in float64).  "/ copy" divides
bytes / time by the copy ceiling of the run (torch ``dst.copy_(src)`` of 1 GiB); "vs torch" =
torch time / ours (> 1: ours faster).
"""

from __future__ import annotations

from . import harness as H

#: (label, shape, size, mode, antialias, dtype, layout, backward)
INTERP = [
    ("bilinear x2", (32, 64, 128, 128), (256, 256), "bilinear", False, "bfloat16", "NCHW", False),
    ("bilinear x2 NHWC", (32, 64, 128, 128), (256, 256), "bilinear", False, "bfloat16", "NHWC",
     False),
    ("nearest x2", (16, 64, 128, 128), (256, 256), "nearest", False, "float32", "NCHW", False),
    ("bicubic x2", (16, 32, 128, 128), (256, 256), "bicubic", False, "float32", "NCHW", False),
    ("area 1/2", (32, 64, 256, 256), (128, 128), "area", False, "float32", "NCHW", False),
    ("bilinear antialias 1/2", (16, 3, 1024, 1024), (512, 512), "bilinear", True, "float32",
     "NCHW", False),
    ("bilinear x2 backward", (32, 64, 128, 128), (256, 256), "bilinear", False, "float32", "NCHW",
     True),
    ("bilinear x2 backward, atomic", (32, 64, 128, 128), (256, 256), "bilinear", False, "float32",
     "NCHW", "atomic"),
    ("bilinear x2 backward, atomic", (32, 64, 128, 128), (256, 256), "bilinear", False,
     "bfloat16", "NCHW", "atomic"),
]
GRID = [("grid_sample bilinear", (16, 32, 256, 256), "float32")]
QUICK = INTERP[:1] + INTERP[-1:]
SHORT = {"bfloat16": "bf16", "float32": "f32", "float16": "f16", "float64": "f64"}


def _interp_case(torch, copy_gbs, label, shape, size, mode, aa, dt, layout, backward):
    from baracuda_dsl import PlanPreference
    from baracuda_dsl.ops.image import (InterpolateArgs, InterpolateBackwardArgs,
                                        InterpolateBackwardPlan, InterpolateDescriptor,
                                        InterpolatePlan, InterpolateTuning)

    F = torch.nn.functional
    tdt = getattr(torch, dt)
    mf = torch.channels_last if layout == "NHWC" else torch.contiguous_format
    ac = None if mode in ("nearest", "area") else False
    d = InterpolateDescriptor(shape, size, None, mode, ac, None, aa, SHORT[dt], layout)
    x = torch.randn(shape, device="cuda").to(tdt).contiguous(memory_format=mf)
    kw = dict(size=size, mode=mode, align_corners=ac, antialias=aa)
    if backward:
        dy = torch.randn(d.out_shape, device="cuda").to(tdt).contiguous(memory_format=mf)
        dx = torch.empty_like(x)
        plan = InterpolateBackwardPlan.select(d, PlanPreference(
            tuning=InterpolateTuning(deterministic=backward != "atomic")))
        ws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8, device="cuda")
        args = InterpolateBackwardArgs(dy, dx)
        plan.run(args, workspace=ws)
        xr = x.detach().double().requires_grad_(True)
        F.interpolate(xr, **kw).backward(dy.double())
        err = H.rel_err(dx, xr.grad)
        del xr
        xg = x.detach().requires_grad_(True)
        yg = F.interpolate(xg, **kw)

        def ref_fn():
            xg.grad = None
            yg.backward(dy, retain_graph=True)

        nbytes = H.bytes_of(dy, dx)
    else:
        y = torch.empty(d.out_shape, device="cuda", dtype=tdt).contiguous(memory_format=mf)
        plan = InterpolatePlan.select(d)
        args = InterpolateArgs(x, y)
        plan.run(args)
        err = H.rel_err(y, F.interpolate(x.double(), **kw))
        ref_fn = lambda: F.interpolate(x, **kw)  # noqa: E731
        nbytes = H.bytes_of(x, y)
    ok = err <= (2e-2 if dt == "bfloat16" else 1e-5)
    torch.cuda.synchronize()
    wsv = ws if backward else None
    t = H.bench(lambda: plan.run(args, workspace=wsv), reps=15)
    tt = H.bench(ref_fn, reps=15)
    gbs = H.gbs(nbytes, t.median)
    return dict(case=label, shape="x".join(map(str, shape)) + f"→{size[0]}x{size[1]} {layout}",
                dtype=dt, sku=str(plan.sku()), ms=t.median, torch_ms=tt.median, gbs=gbs,
                frac=gbs / copy_gbs, torch_frac=H.gbs(nbytes, tt.median) / copy_gbs, err=err,
                ok=ok)


def _grid_case(torch, copy_gbs, label, shape, dt):
    from baracuda_dsl.ops.image import GridSampleArgs, GridSampleDescriptor, GridSamplePlan

    F = torch.nn.functional
    tdt = getattr(torch, dt)
    n, c, h, w = shape
    x = torch.randn(shape, device="cuda").to(tdt)
    grid = (torch.rand((n, h, w, 2), device="cuda") * 2.2 - 1.1).to(tdt)
    d = GridSampleDescriptor(shape, tuple(grid.shape), "bilinear", "zeros", False, SHORT[dt])
    y = torch.empty(d.out_shape, device="cuda", dtype=tdt)
    plan = GridSamplePlan.select(d)
    args = GridSampleArgs(x, grid, y)
    plan.run(args)
    err = H.rel_err(y, F.grid_sample(x.double(), grid.double(), "bilinear", "zeros", False))
    torch.cuda.synchronize()
    ref_fn = lambda: F.grid_sample(x, grid, "bilinear", "zeros", False)  # noqa: E731
    t = H.bench(lambda: plan.run(args), reps=15)
    tt = H.bench(ref_fn, reps=15)
    nbytes = H.bytes_of(x, grid, y)
    gbs = H.gbs(nbytes, t.median)
    return dict(case=label, shape="x".join(map(str, shape)), dtype=dt, sku=str(plan.sku()),
                ms=t.median, torch_ms=tt.median, gbs=gbs, frac=gbs / copy_gbs,
                torch_frac=H.gbs(nbytes, tt.median) / copy_gbs, err=err, ok=err <= 1e-5)


def run(out_dir=None, quick=False, log=print):
    """Every image row against this section's own copy ceiling."""
    copy = H.copy_bandwidth()["gbs"]
    interp = QUICK[:1] if quick else INTERP
    rows = H.case_rows("image", interp, _interp_case,
                       lambda c, err: dict(case=c[0], shape="x".join(map(str, c[1])),
                                           dtype=c[5], error=err), copy, log)
    rows += H.case_rows("image", GRID, _grid_case,
                        lambda c, err: dict(case=c[0], shape="x".join(map(str, c[1])),
                                            dtype=c[2], error=err), copy, log)
    return H.save_json(dict(rows=rows, copy_gbs=copy), out_dir, "bench_image.json")


SECTIONS = (H.Section("image", "Interpolate and grid_sample", run,
                      H.copy_speed_markdown),)


def main(argv=None):
    H.cli_main(__doc__, SECTIONS, argv)


if __name__ == "__main__":
    main()
