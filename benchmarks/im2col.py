"""unfold / fold (im2col / col2im) benchmark on the GPU host: the conv family's ``Im2ColPlan`` /
``Col2ImPlan`` against torch's ``F.unfold`` / ``F.fold`` in the same run.  Usage (GPU host, from
the repo root): ``python3 -m benchmarks.im2col [--quick] [--out DIR]``; run_all may call
``run(out_dir, quick, log)`` (section ``im2col``).

Cases (2-D, NCHW): ResNet-style 3×3 padding 1 over 32×64×56×56 bf16 and 32×128×28×28 stride 2
f32, and a ViT patchify (16×16 blocks, stride 16) of 16×3×224×224 bf16 (``--quick``: the first).
Ours runs the Plan directly (selected once: the steady state of a framework).  Times are
CUDA-event medians (benchmarks/harness.py ``bench``); GB/s counts the bytes of the input read
once plus the output written once; ``host_us``: host µs per call of our ``plan.run`` (enqueue
only).  Each result is checked once against torch's (relative norm error).
"""

from __future__ import annotations

from . import harness as H

#: (name, N, C, H·W, kernel, padding, stride, dtype)
CASES = (
    ("resnet 3x3", 32, 64, 56, 3, 1, 1, "bfloat16"),
    ("resnet 3x3 s2", 32, 128, 28, 3, 1, 2, "float32"),
    ("vit patchify", 16, 3, 224, 16, 0, 16, "bfloat16"),
)


def _case(torch, name, n, c, hw, k, p, s, dtype):
    import torch.nn.functional as F

    from baracuda_dsl.ops.conv import (Col2ImArgs, Col2ImPlan, Im2ColArgs, Im2ColDescriptor,
                                       Im2ColPlan)

    dt = getattr(torch, dtype)
    g = torch.Generator(device="cuda").manual_seed(0)
    desc = Im2ColDescriptor(2, (n, c, hw, hw), k, 1, p, s, dtype)
    x = torch.randn(desc.shape, generator=g, device="cuda").to(dt)
    cols = torch.empty(desc.out_shape, dtype=dt, device="cuda")
    dc = torch.randn(desc.out_shape, generator=g, device="cuda").to(dt)
    y = torch.empty_like(x)
    nbytes = H.bytes_of(x, cols)
    ops = {
        "unfold": (Im2ColPlan.select(desc), Im2ColArgs(x, cols), cols,
                   lambda: F.unfold(x, k, 1, p, s)),
        "fold": (Col2ImPlan.select(desc.to_col2im()), Col2ImArgs(dc, y), y,
                 lambda: F.fold(dc, (hw, hw), k, 1, p, s)),
    }
    rows = []
    for op, (plan, args, out, tfn) in ops.items():

        def ours(plan=plan, args=args):
            plan.run(args)

        ours()
        ref = tfn()
        torch.cuda.synchronize()
        err = H.rel_err(out, ref)
        t_ours = H.bench(ours, reps=20, warm=3, batch=8)
        t_torch = H.bench(tfn, reps=20, warm=3, batch=8)
        host = H.host_us(ours, n=300, warm=20)
        rows.append(dict(case=f"{name} {op}", shape=f"{n}x{c}x{hw}x{hw} {k}x{k} p{p} s{s}",
                         dtype=dtype, ms=t_ours.median, torch_ms=t_torch.median,
                         gbs=H.gbs(nbytes, t_ours.median),
                         torch_gbs=H.gbs(nbytes, t_torch.median),
                         vs_torch=t_torch.median / t_ours.median, host_us=host, relerr=err,
                         ok=err < 2e-2))
    return rows


def cases(quick: bool):
    return CASES[:1] if quick else CASES


def run(out_dir=None, quick=False, log=print):
    torch = H._torch()
    fns = [lambda c=c: _case(torch, *c) for c in cases(quick)]

    def line(r):
        return (f"{r['case']} {r['shape']} {r['dtype']}: {r['ms']:.3f} ms ({r['gbs']:.0f} GB/s) "
                f"vs torch {r['torch_ms']:.3f} ms ({r['torch_gbs']:.0f}) = {r['vs_torch']:.2f}x "
                f"host {r['host_us']:.1f} us relerr {r['relerr']:.1e}")

    rows = H.group_rows("im2col", fns, line, log, empty_cache=True)
    return H.save_json(dict(rows=rows, device=H.device_info()), out_dir, "bench_im2col.json")


def markdown(res: dict) -> str:
    body = []
    for r in res["rows"]:
        if r.get("case") == "error" or r.get("error"):
            body.append((r.get("case", "—"), "—", "—", "—", "—", "—", "—", "—", "—",
                         r.get("error")))
            continue
        body.append((r["case"], r["shape"], r["dtype"], H.fmt(r["ms"], ".3f"),
                     H.fmt(r["gbs"], ".0f"), H.fmt(r["torch_ms"], ".3f"),
                     H.fmt(r["torch_gbs"], ".0f"), H.fmt(r["vs_torch"]),
                     H.fmt(r["host_us"], ".1f"),
                     ("ok" if r["ok"] else "FAIL") + f" ({r['relerr']:.0e})"))
    return H.md_table(("case", "N×C×H×W, kernel, padding, stride", "dtype", "ms", "GB/s",
                       "torch ms", "torch GB/s", "torch ms / ms", "host µs", "vs torch result"),
                      body) + "\n"


SECTIONS = (H.Section("im2col", "unfold / fold (im2col / col2im), 2-D NCHW", run, markdown),)


def main(argv=None):
    H.cli_main(__doc__, SECTIONS, argv)


if __name__ == "__main__":
    main()
