"""Attention benchmarks on the GPU host: FlashAttentionPlan forward and backward against torch
``scaled_dot_product_attention`` with its flash (FA2) and cuDNN backends (and flash-attn-4,
``flash_attn.cute``, when it imports) in the same run, in TFLOP/s.  Usage (GPU host, repo
root): ``python3 -m benchmarks.attention [--quick] [--out DIR]``; run_all calls it (section
``attention``).

Cases (issue 19): bf16, B·S = 16K tokens, S ∈ {1K, 4K, 8K, 16K}, head dim 64 / 128 / 256 with
H·D = 2048, causal and not, forward and backward.  FLOPs: 4·B·H·S²·D forward (halved when
causal), 2.5 × that backward (tests/_attention_ref.attention_flops' convention).  Our forward is
checked once per case against torch's flash backend (‖ours − torch‖/‖torch‖ ≤ 1e-2, output
poisoned first); the backward's dq / dk / dv against torch autograd of its flash backend.
"""

from __future__ import annotations

from . import harness as H

SEQS = (1024, 4096, 8192, 16384)
HEAD_DIMS = (64, 128, 256)
TOKENS = 16384
HD = 2048                      # heads · head_dim
QUICK = dict(seqs=(4096, 16384), dims=(128,))


def flops(b, s, h, d, causal, backward=False):
    f = 4.0 * b * h * s * s * d
    if causal:
        f /= 2
    return f * (2.5 if backward else 1.0)


def _torch_sdpa(torch, backend):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    be = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[backend]
    F = torch.nn.functional

    def fw(q, k, v, causal):
        with sdpa_kernel(be):
            return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                  v.transpose(1, 2), is_causal=causal)
    return fw


def _fa4():
    try:
        from flash_attn.cute import flash_attn_func  # noqa: F401
        return flash_attn_func
    except Exception:
        return None


def _case(torch, s, d, causal, log):
    from baracuda_dsl.ops.attention.flash import (FlashAttentionArgs, FlashAttentionDescriptor,
                                                  FlashAttentionPlan)

    b, h = TOKENS // s, HD // d
    dt = torch.bfloat16
    q, k, v, do = (torch.randn(b, s, h, d, device="cuda", dtype=dt) for _ in range(4))
    out = torch.full_like(q, float("nan"))
    lse = torch.empty(b, h, s, device="cuda", dtype=torch.float32)
    fdesc = FlashAttentionDescriptor(b, s, s, h, h, d, "bf16", causal=causal)
    fw = FlashAttentionPlan.select(fdesc)
    fargs = FlashAttentionArgs(q, k, v, out, lse)
    fw.run(fargs)
    rows = []
    tag = f"S={s} d={d} B={b} H={h}{' causal' if causal else ''}"
    flash = _torch_sdpa(torch, "flash")
    ref = flash(q, k, v, causal).transpose(1, 2)
    err = H.rel_err(out, ref)
    tf = flops(b, s, h, d, causal)
    r, e = H.safe(H.bench, lambda: fw.run(fargs), reps=10, batch=4)
    rows.append(_row("FW", tag, "ours", tf, r, e, err))
    if fw.sku().template == "flash_fwd_sm90":      # the mma.sync kernel on the same problem
        from baracuda_dsl import PlanPreference
        from baracuda_dsl.ops.attention.flash import FlashTuning
        fm = FlashAttentionPlan.select(fdesc, PlanPreference(tuning=(FlashTuning("mma"),)))
        o2 = torch.full_like(q, float("nan"))
        margs = FlashAttentionArgs(q, k, v, o2, lse)
        fm.run(margs)
        r, e = H.safe(H.bench, lambda: fm.run(margs), reps=10, batch=4)
        rows.append(_row("FW", tag, "ours mma.sync", tf, r, e, H.rel_err(o2, ref)))
    for name in ("flash", "cudnn"):
        f = _torch_sdpa(torch, name)
        r, e = H.safe(H.bench, lambda: f(q, k, v, causal), reps=10, batch=4)
        rows.append(_row("FW", tag, f"torch {name}", tf, r, e, None))
    fa4 = _fa4()
    if fa4 is not None:
        r, e = H.safe(H.bench, lambda: fa4(q, k, v, causal=causal), reps=10, batch=4)
        rows.append(_row("FW", tag, "flash-attn-4", tf, r, e, None))
    try:
        rows += _backward(torch, q, k, v, do, out, lse, b, s, h, d, causal, tag, flash)
    except Exception as ex:
        rows.append(dict(dir="BW", case=tag, provider="ours",
                         error=f"{type(ex).__name__}: {ex}"[:200]))
    log(f"attention {tag}: " + ", ".join(
        f"{x['dir']} {x['provider']} {H.fmt(x.get('tflops'), '.0f')}" for x in rows))
    return rows


def _backward(torch, q, k, v, do, out, lse, b, s, h, d, causal, tag, flash):
    from baracuda_dsl.ops.attention.flash import (FlashAttentionBackwardArgs,
                                                  FlashAttentionBackwardDescriptor,
                                                  FlashAttentionBackwardPlan)

    rows = []
    bdesc = FlashAttentionBackwardDescriptor(b, s, s, h, h, d, "bf16", causal=causal)
    bw = FlashAttentionBackwardPlan.select(bdesc)
    ws = torch.empty(bw.workspace_size(), dtype=torch.uint8, device="cuda")
    grads = [torch.full_like(t, float("nan")) for t in (q, k, v)]
    bargs = FlashAttentionBackwardArgs(q, k, v, out, do, lse, *grads)
    bw.run(bargs, workspace=ws)
    qr, kr, vr = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    o_t = flash(qr, kr, vr, causal)
    tg = torch.autograd.grad(o_t, (qr, kr, vr), do.transpose(1, 2), retain_graph=True)
    berr = max(H.rel_err(g, t) for g, t in zip(grads, tg))
    tb = flops(b, s, h, d, causal, backward=True)
    r, e = H.safe(H.bench, lambda: bw.run(bargs, workspace=ws), reps=6, batch=2)
    rows.append(_row("BW", tag, "ours", tb, r, e, berr))
    if bw.sku().template == "flash_bwd_sm90":      # the deterministic kernels, same problem
        bd = FlashAttentionBackwardPlan.select(FlashAttentionBackwardDescriptor(
            b, s, s, h, h, d, "bf16", causal=causal, deterministic=True))
        wd = torch.empty(bd.workspace_size(), dtype=torch.uint8, device="cuda")
        g2 = [torch.full_like(t, float("nan")) for t in (q, k, v)]
        dargs = FlashAttentionBackwardArgs(q, k, v, out, do, lse, *g2)
        bd.run(dargs, workspace=wd)
        derr = max(H.rel_err(g, t) for g, t in zip(g2, tg))
        r, e = H.safe(H.bench, lambda: bd.run(dargs, workspace=wd), reps=6, batch=2)
        rows.append(_row("BW", tag, "ours deterministic", tb, r, e, derr))
    for name in ("flash", "cudnn"):
        f = _torch_sdpa(torch, name)

        def one(f=f):
            qx, kx, vx = (t.detach().requires_grad_(True) for t in (q, k, v))
            o = f(qx, kx, vx, causal)
            return o, (qx, kx, vx)
        try:
            o, ins = one()
            g = do.transpose(1, 2)
            r, e = H.safe(H.bench, lambda: torch.autograd.grad(o, ins, g, retain_graph=True),
                          reps=6, batch=2)
        except Exception as ex:          # a backend that refuses the case
            r, e = None, f"{type(ex).__name__}: {ex}"[:120]
        rows.append(_row("BW", tag, f"torch {name}", tb, r, e, None))
    return rows


def _row(direction, tag, provider, fl, t, err_msg, relerr):
    if t is None:
        return dict(dir=direction, case=tag, provider=provider, error=err_msg)
    status = "ok"
    if relerr is not None and not relerr <= 1e-2:
        status = f"FAIL (rel err {relerr:.1e})"
    return dict(dir=direction, case=tag, provider=provider, ms=t.median,
                tflops=fl / (t.median * 1e-3) / 1e12, relerr=relerr, status=status)


def run(out_dir=None, quick=False, log=print) -> dict:
    import time

    torch = H._torch()
    t0 = time.perf_counter()
    seqs = QUICK["seqs"] if quick else SEQS
    dims = QUICK["dims"] if quick else HEAD_DIMS
    rows = []
    for d in dims:
        for s in seqs:
            for causal in (False, True):
                try:
                    rows += _case(torch, s, d, causal, log)
                except Exception as ex:
                    rows.append(dict(dir="FW", case=f"S={s} d={d} causal={causal}",
                                     provider="ours", error=f"{type(ex).__name__}: {ex}"[:200]))
                torch.cuda.empty_cache()
    return H.save_json(dict(rows=rows, device=H.device_info(), wall_s=time.perf_counter() - t0),
                       out_dir, "bench_attention.json")


def markdown(res: dict) -> str:
    """One row per (direction, case): TFLOP/s of ours and each torch backend, ours / best."""
    by = {}
    for r in res["rows"]:
        by.setdefault((r["dir"], r["case"]), {})[r["provider"]] = r
    hdr = ("dir", "case", "ours TFLOP/s", "ours mma.sync (FW) / deterministic (BW)",
           "torch flash", "torch cuDNN", "flash-attn-4", "ours / best torch", "check")
    out = []
    for (dr, case), p in by.items():
        def tf(name):
            x = p.get(name)
            return None if x is None or x.get("error") else x["tflops"]
        ours = p.get("ours", {})
        best = max([v for v in (tf("torch flash"), tf("torch cudnn")) if v] or [None],
                   key=lambda v: v or 0)
        ratio = tf("ours") / best if tf("ours") and best else None
        chk = ours.get("error") or ours.get("status", "—")
        if ours.get("relerr") is not None:
            chk = f"{chk} ({ours['relerr']:.1e})"
        alt = tf("ours mma.sync") if dr == "FW" else tf("ours deterministic")
        out.append([dr, case, H.fmt(tf("ours"), ".0f"), H.fmt(alt, ".0f"),
                    H.fmt(tf("torch flash"), ".0f"),
                    H.fmt(tf("torch cudnn"), ".0f"), H.fmt(tf("flash-attn-4"), ".0f"),
                    H.fmt(ratio), chk])
    return H.md_table(hdr, out) + "\n"


SECTIONS = (H.Section("attention", "Attention (flash FW / BW vs torch SDPA flash / cuDNN)",
                      run, markdown),)

if __name__ == "__main__":
    H.cli_main(__doc__, SECTIONS)
