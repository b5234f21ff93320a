"""Convolution benchmark on the GPU host: the conv family's cuDNN Plans (forward, data gradient,
filter gradient) against torch's (cuDNN) convolutions in the same run.  Usage (GPU host, from
the repo root): ``python3 -m benchmarks.conv [--quick] [--out DIR]``; run_all may call
``run(out_dir, quick, log)`` (section ``conv``).

Cases: ResNet-50 layer shapes, batch 32, bfloat16, NHWC (torch: ``channels_last``):
56×56×64 3×3, 28×28×128 3×3 stride 2 (from 56×56), 14×14×256 1×1 (→ 1024), 7×7×512 3×3
(``--quick``: the first two); UNet layers of a 256×256 image, batch 8: 256²×64 3×3,
64²×256 3×3, 32²×512 3×3 (→ 1024), 256²×128 3×3 (→ 64).  Ours runs the Plan directly (selected once, workspace allocated
once: the steady state of a framework), torch runs ``F.conv2d`` / ``torch.ops.aten.
convolution_backward`` with ``torch.backends.cudnn.benchmark`` off (heuristic choice, like
ours).  Times are CUDA-event medians (benchmarks/harness.py ``bench``); TFLOP/s counts
2·MACs; ``host_us``: host µs per call of our ``plan.run`` (enqueue only).  Each result is
checked once against torch's (relative norm error).
"""

from __future__ import annotations

from . import harness as H

#: (name, C, H·W in, K, kernel, stride)
LAYERS = (
    ("res2 3x3", 64, 56, 64, 3, 1),
    ("res3 3x3 s2", 128, 56, 128, 3, 2),
    ("res4 1x1", 256, 14, 1024, 1, 1),
    ("res5 3x3", 512, 7, 512, 3, 1),
)
BATCH = 32
#: UNet (2-D, 256×256 input) layers: (name, C, H·W in, K, kernel, stride), batch 8
UNET = (
    ("unet enc1 3x3", 64, 256, 64, 3, 1),
    ("unet enc3 3x3", 256, 64, 256, 3, 1),
    ("unet mid 3x3", 512, 32, 1024, 3, 1),
    ("unet dec1 3x3", 128, 256, 64, 3, 1),
)
UNET_BATCH = 8


def _case(torch, name, c, hw, k, r, s, batch=BATCH):
    import torch.nn.functional as F

    from baracuda_dsl.ops.conv import (ConvArgs, ConvBackwardDataArgs, ConvBackwardDataPlan,
                                       ConvBackwardFilterArgs, ConvBackwardFilterPlan,
                                       ConvDescriptor, ConvPlan)

    torch.backends.cudnn.benchmark = False
    cl = torch.channels_last
    dt = torch.bfloat16
    g = torch.Generator(device="cuda").manual_seed(0)
    pad = r // 2
    desc = ConvDescriptor(2, batch, c, k, (hw, hw), r, s, pad, dtype="bf16", layout="NHWC")
    x = torch.randn(desc.x_shape, generator=g, device="cuda").to(dt).contiguous(memory_format=cl)
    w = torch.randn(desc.w_shape, generator=g, device="cuda").to(dt).contiguous(memory_format=cl)
    dy = torch.randn(desc.y_shape, generator=g, device="cuda").to(dt).contiguous(
        memory_format=cl)
    y = torch.empty_like(dy)
    dx = torch.empty_like(x)
    dw = torch.empty_like(w)
    flops = 2 * desc.macs
    conv_args = ([s, s], [pad, pad], [1, 1], False, [0, 0], 1)
    ops = {
        "fwd": (ConvPlan, ConvArgs(x, w, y), y,
                lambda: F.conv2d(x, w, stride=s, padding=pad)),
        "dgrad": (ConvBackwardDataPlan, ConvBackwardDataArgs(dy, w, dx), dx,
                  lambda: torch.ops.aten.convolution_backward(
                      dy, x, w, None, *conv_args, [True, False, False])[0]),
        "wgrad": (ConvBackwardFilterPlan, ConvBackwardFilterArgs(x, dy, dw), dw,
                  lambda: torch.ops.aten.convolution_backward(
                      dy, x, w, None, *conv_args, [False, True, False])[1]),
    }
    rows = []
    for op, (cls, args, out, tfn) in ops.items():
        plan = cls.select(desc)
        n = plan.workspace_size()
        ws = torch.empty(max(n, 1), dtype=torch.uint8, device="cuda")

        def ours(plan=plan, args=args, ws=ws):
            plan.run(args, workspace=ws)

        ours()
        ref = tfn()
        torch.cuda.synchronize()
        err = H.rel_err(out, ref)
        t_ours = H.bench(ours, reps=20, warm=3, batch=8)
        t_torch = H.bench(tfn, reps=20, warm=3, batch=8)
        host = H.host_us(ours, n=300, warm=20)
        rows.append(dict(case=f"{name} {op}", shape=f"{batch}x{c}x{hw}x{hw} k{k} {r}x{r} s{s}",
                         dtype="bfloat16", ms=t_ours.median, torch_ms=t_torch.median,
                         tflops=flops / t_ours.median / 1e9,
                         torch_tflops=flops / t_torch.median / 1e9,
                         vs_torch=t_torch.median / t_ours.median, host_us=host, relerr=err,
                         ok=err < 2e-2, workspace=n))
    return rows


def cases(quick: bool):
    if quick:
        return LAYERS[:2]
    return LAYERS + tuple(u + (UNET_BATCH,) for u in UNET)


def run(out_dir=None, quick=False, log=print):
    torch = H._torch()
    fns = [lambda c=c: _case(torch, *c) for c in cases(quick)]

    def line(r):
        return (f"{r['case']} {r['shape']}: {r['ms']:.3f} ms ({r['tflops']:.0f} TFLOP/s) vs "
                f"torch {r['torch_ms']:.3f} ms ({r['torch_tflops']:.0f}) = "
                f"{r['vs_torch']:.2f}x host {r['host_us']:.1f} us relerr {r['relerr']:.1e}")

    rows = H.group_rows("conv", fns, line, log, empty_cache=True)
    return H.save_json(dict(rows=rows, device=H.device_info()), out_dir, "bench_conv.json")


def markdown(res: dict) -> str:
    body = []
    for r in res["rows"]:
        if r.get("case") == "error" or r.get("error"):
            body.append((r.get("case", "—"), "—", "—", "—", "—", "—", "—", "—", r.get("error")))
            continue
        body.append((r["case"], r["shape"], H.fmt(r["ms"], ".3f"), H.fmt(r["tflops"], ".0f"),
                     H.fmt(r["torch_ms"], ".3f"), H.fmt(r["torch_tflops"], ".0f"),
                     H.fmt(r["vs_torch"]), H.fmt(r["host_us"], ".1f"),
                     ("ok" if r["ok"] else "FAIL") + f" ({r['relerr']:.0e})"))
    return H.md_table(("case", "N×C×H×W, K, kernel, stride", "ms", "TFLOP/s", "torch ms",
                       "torch TFLOP/s", "torch ms / ms", "host µs", "vs torch result"),
                      body) + "\n"


SECTIONS = (H.Section("conv", "Convolution (cuDNN), ResNet-50 and UNet layers, bf16 NHWC", run,
                      markdown),)


def main(argv=None):
    H.cli_main(__doc__, SECTIONS, argv)


if __name__ == "__main__":
    main()
