"""Pooling benchmarks on the GPU host against torch in the same run (section ``pool``).  Usage
(GPU host, from the repo root): ``python3 -m benchmarks.pool [--quick] [--out DIR]``; run_all
calls ``run(out_dir, quick, log)``.

Cases (bytes = the input read once + the outputs written once; max forward with indices adds
the int64 indices; backward = dy (+ indices) read + dx written):

==========================  ===================================================================
max 3×3 s2 p1 (ResNet stem)  128×64×112×112 bf16, NCHW and NHWC (channels_last), with and
                             without indices (torch always writes them on CUDA)
avg 2×2 s2                   64×128×128×128 float32, NCHW
adaptive avg → 1×1           1024×2048×7×7 bf16 (a classifier head), NCHW
max / avg backward           the stem / 2×2 cases above, float32 / bf16
==========================  ===================================================================

Every result is checked against torch first (max values and indices bit-exact, avg and the
backward by ‖out − ref‖/‖ref‖ in float64).  "/ copy" divides bytes / time by the copy ceiling of
the run (torch ``dst.copy_(src)`` of 1 GiB); "vs torch" = torch time / ours (> 1: ours faster).
"""

from __future__ import annotations

from . import harness as H

STEM = (128, 64, 112, 112)
#: (label, op, shape, kernel, stride, padding, dtype, layout, with_indices, backward)
CASES = [
    ("max 3x3 s2 p1", "max", STEM, 3, 2, 1, "bfloat16", "NCHW", False, False),
    ("max 3x3 s2 p1 +idx", "max", STEM, 3, 2, 1, "bfloat16", "NCHW", True, False),
    ("max 3x3 s2 p1 NHWC", "max", STEM, 3, 2, 1, "bfloat16", "NHWC", False, False),
    ("avg 2x2 s2", "avg", (64, 128, 128, 128), 2, 2, 0, "float32", "NCHW", False, False),
    ("adaptive avg 1x1", "adaptive_avg", (1024, 2048, 7, 7), 1, 1, 0, "bfloat16", "NCHW", False,
     False),
    ("max 3x3 s2 p1 backward", "max", STEM, 3, 2, 1, "float32", "NCHW", True, True),
    ("avg 2x2 s2 backward", "avg", (64, 128, 128, 128), 2, 2, 0, "bfloat16", "NCHW", False,
     True),
]
QUICK = [CASES[0], CASES[3], CASES[5]]


def _fwd(torch, d, x, layout, with_idx, op, k, s, p):
    from baracuda_dsl.ops.pooling import (AdaptivePoolPlan, PoolArgs, PoolPlan)

    F = torch.nn.functional
    mf = torch.channels_last if layout == "NHWC" else torch.contiguous_format
    plan = (AdaptivePoolPlan if op == "adaptive_avg" else PoolPlan).select(d)
    y = torch.empty(d.out_shape, device="cuda", dtype=x.dtype).contiguous(memory_format=mf)
    idx = torch.empty(d.out_shape, device="cuda", dtype=torch.int64).contiguous(
        memory_format=mf) if with_idx else None
    args = PoolArgs(x, y, idx)
    if op == "max":
        ref_fn = lambda: F.max_pool2d(x, k, s, p, return_indices=True)  # noqa: E731
    elif op == "avg":
        ref_fn = lambda: F.avg_pool2d(x, k, s, p)  # noqa: E731
    else:
        ref_fn = lambda: F.adaptive_avg_pool2d(x, 1)  # noqa: E731
    plan.run(args)
    ref = ref_fn()
    if op == "max":
        ok = bool(torch.equal(y, ref[0])) and (idx is None or bool(torch.equal(idx, ref[1])))
        err = 0.0 if ok else float("inf")
    else:
        err = H.rel_err(y, ref)
        ok = err <= (1e-2 if x.dtype == torch.bfloat16 else 1e-6)
    nbytes = H.bytes_of(x, y) + (H.bytes_of(idx) if idx is not None else 0)
    return plan, args, ref_fn, nbytes, ok, err


def _bwd(torch, d, x, op, k, s, p):
    from baracuda_dsl.ops.pooling import PoolArgs, PoolBackwardArgs, PoolBackwardPlan, PoolPlan

    F = torch.nn.functional
    dy = torch.randn(d.out_shape, device="cuda", dtype=torch.float32).to(x.dtype)
    dx = torch.empty_like(x)
    idx = None
    if op == "max":
        idx = torch.empty(d.out_shape, device="cuda", dtype=torch.int64)
        PoolPlan.select(d).run(PoolArgs(x, torch.empty_like(dy), idx))
    plan = PoolBackwardPlan.select(d)
    args = PoolBackwardArgs(dy, dx, idx)
    plan.run(args)
    xr = x.detach().double().requires_grad_(True)
    yr = F.max_pool2d(xr, k, s, p) if op == "max" else F.avg_pool2d(xr, k, s, p)
    yr.backward(dy.double())
    err = H.rel_err(dx, xr.grad)
    ok = err <= (1e-2 if x.dtype == torch.bfloat16 else 1e-6)
    del xr, yr
    xg = x.detach().requires_grad_(True)
    yg = F.max_pool2d(xg, k, s, p) if op == "max" else F.avg_pool2d(xg, k, s, p)

    def ref_fn():
        xg.grad = None
        yg.backward(dy, retain_graph=True)

    nbytes = H.bytes_of(dy, dx) + (H.bytes_of(idx) if idx is not None else 0)
    return plan, args, ref_fn, nbytes, ok, err


def _case(torch, copy_gbs, label, op, shape, k, s, p, dt, layout, with_idx, backward):
    from baracuda_dsl.ops.pooling import AdaptivePoolDescriptor, PoolDescriptor

    tdt = getattr(torch, dt)
    mf = torch.channels_last if layout == "NHWC" else torch.contiguous_format
    x = torch.randn(shape, device="cuda", dtype=torch.float32).to(tdt).contiguous(memory_format=mf)
    short = {"bfloat16": "bf16", "float32": "f32", "float16": "f16"}[dt]
    if op == "adaptive_avg":
        d = AdaptivePoolDescriptor(2, shape, 1, "avg", short, layout)
    else:
        d = PoolDescriptor(2, shape, k, s, p, op=op, dtype=short, layout=layout)
    if backward:
        plan, args, ref_fn, nbytes, ok, err = _bwd(torch, d, x, op, k, s, p)
    else:
        plan, args, ref_fn, nbytes, ok, err = _fwd(torch, d, x, layout, with_idx, op, k, s, p)
    torch.cuda.synchronize()
    t = H.bench(lambda: plan.run(args), reps=15)
    tt = H.bench(ref_fn, reps=15)
    gbs = H.gbs(nbytes, t.median)
    return dict(case=label, shape="x".join(map(str, shape)) + f" {layout}", dtype=dt,
                sku=str(plan.sku()), ms=t.median, torch_ms=tt.median, gbs=gbs,
                frac=gbs / copy_gbs, torch_frac=H.gbs(nbytes, tt.median) / copy_gbs, err=err,
                ok=ok, mb=nbytes / 1e6)


def run(out_dir=None, quick=False, log=print):
    """Every pooling row against this section's own copy ceiling."""
    copy = H.copy_bandwidth()["gbs"]
    rows = H.case_rows("pool", QUICK if quick else CASES, _case,
                       lambda c, err: dict(case=c[0], shape="x".join(map(str, c[2])),
                                           dtype=c[6], error=err), copy, log)
    return H.save_json(dict(rows=rows, copy_gbs=copy), out_dir, "bench_pool.json")


SECTIONS = (H.Section("pool", "Pooling", run, H.copy_speed_markdown),)


def main(argv=None):
    H.cli_main(__doc__, SECTIONS, argv)


if __name__ == "__main__":
    main()
