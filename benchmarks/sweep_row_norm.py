"""Developer tool: time every prebuilt SKU of the row-norm templates that can serve a shape, to
choose the plans' tuning (``baracuda_dsl.RowNormTuning``: the sm90a cluster ladders).  Usage (GPU
host): ``python3 -m benchmarks.sweep_row_norm``.

Each candidate is run through the real plan (selected with ``PlanPreference(tuning=TUNING)``)
with its kernel choice overridden, checked against torch (float64) and timed with the same
batched CUDA-event method as benchmarks/normalization.py; ``*`` marks the plan's own pick under ``TUNING``.
To adopt a result, change the defaults of ``RowNormTuning`` (ops/normalization/row_norm.py).
"""

from __future__ import annotations

import argparse
import dataclasses

import torch

import baracuda_dsl as bd
from baracuda_dsl.common.rows import RowGeometry
from baracuda_dsl.ops.normalization.specs import row_norm as spec
from .harness import n_sets, time_ms
from .normalization import copy_bandwidth


#: the tuning record the plans are selected with (edit to try another ladder)
TUNING = bd.RowNormTuning()
PREF = bd.PlanPreference(tuning=TUNING)


def candidates(template, dtype: str, op: str, n: int, arch: str):
    """The vectorised row-affine SKUs of (dtype, op) that serve rows of ``n``."""
    for frozen in template.skus(arch):
        k = template.thaw(frozen)
        if k.dtype == dtype and k.op == op and k.affine == "row" and k.vec > 1 and (
                k.chunks == 0 or k.capacity >= n):
            yield k


def geometry(k) -> dict:
    """The row-geometry knobs of ``k`` (what distinguishes the candidates)."""
    return {f.name: getattr(k, f.name) for f in dataclasses.fields(RowGeometry)}


def sweep_fw(op, M, N, dt, copy):
    tdt = getattr(torch, dt)
    nb = (2 * M * N + N) * tdt.itemsize
    sets = [(torch.randn(M, N, device="cuda", dtype=tdt), torch.randn(N, device="cuda", dtype=tdt),
             torch.empty(M, N, device="cuda", dtype=tdt)) for _ in range(n_sets(nb))]
    Desc, Plan, Args = ((bd.RMSNormDescriptor, bd.RMSNormPlan, bd.RMSNormArgs) if op == "rms" else
                        (bd.LayerNormDescriptor, bd.LayerNormPlan, bd.LayerNormArgs))
    kw = {} if op == "rms" else {"has_bias": False}
    plan = Plan.select(Desc((M, N), 1, dt, 1e-6, True, **kw), PREF)
    short = bd.dtypes.dtype(dt).short
    primary = plan._knobs
    out = []
    for k in candidates(spec.ROW_NORM_FW, short, op, N, plan._arch.value):
        plan._knobs, plan._records = k, {}  # launch records memoise the kernel
        fn = lambda x, w, y: plan.run(Args(x, y, w))  # noqa: E731
        x, w, y = sets[0]
        fn(x, w, y)
        ref = (torch.nn.functional.rms_norm(x.double(), (N,), w.double(), 1e-6) if op == "rms" else
               torch.nn.functional.layer_norm(x.double(), (N,), w.double(), None, 1e-6))
        err = ((y.double() - ref).norm() / ref.norm()).item()
        ms = time_ms(fn, sets)
        out.append((nb / ms / 1e6 / copy, err, k, k == primary))
    plan._knobs, plan._records = primary, {}
    return out


def sweep_bw(op, M, N, dt, copy):
    tdt = getattr(torch, dt)
    sdt = torch.float64 if dt == "float64" else torch.float32
    nb = 3 * M * N * tdt.itemsize
    Desc, Plan, Args = ((bd.RMSNormBackwardDescriptor, bd.RMSNormBackwardPlan,
                         bd.RMSNormBackwardArgs) if op == "rms" else
                        (bd.LayerNormBackwardDescriptor, bd.LayerNormBackwardPlan,
                         bd.LayerNormBackwardArgs))
    kw = {} if op == "rms" else {"has_bias": False}
    plan = Plan.select(Desc((M, N), 1, dt, True, **kw), PREF)
    sets = []
    for _ in range(n_sets(nb)):
        x = torch.randn(M, N, device="cuda", dtype=tdt)
        xd = x.double()
        mean = xd.mean(-1) if op == "ln" else torch.zeros(M, device="cuda", dtype=torch.float64)
        rstd = torch.rsqrt((xd - mean[:, None]).pow(2).mean(-1) + 1e-6)
        sets.append((torch.randn(M, N, device="cuda", dtype=tdt), x, mean.to(sdt), rstd.to(sdt),
                     torch.randn(N, device="cuda", dtype=tdt), torch.empty(M, N, device="cuda",
                                                                           dtype=tdt),
                     torch.empty(N, device="cuda", dtype=tdt)))
    short = bd.dtypes.dtype(dt).short
    primary = plan._knobs
    out = []
    for k in candidates(spec.ROW_NORM_BW, short, op, N, plan._arch.value):
        plan._knobs = k
        ws = torch.empty(max(plan._partial_bytes(k) * 2, plan.workspace_size(), 1), device="cuda",
                         dtype=torch.uint8)
        wsv = bd.Workspace(ws.data_ptr(), ws.numel())

        def fn(dy, x, mean, rstd, w, dx, dw):
            if op == "rms":
                plan.run(Args(dy, x, rstd, dx, w, dw), workspace=wsv)
            else:
                plan.run(Args(dy, x, mean, rstd, dx, w, dw), workspace=wsv)

        fn(*sets[0])
        dy, x, mean, rstd, w, dx, dw = sets[0]
        xr = x.double().requires_grad_(True)
        wr = w.double().requires_grad_(True)
        yr = (torch.nn.functional.rms_norm(xr, (N,), wr, 1e-6) if op == "rms" else
              torch.nn.functional.layer_norm(xr, (N,), wr, None, 1e-6))
        gx, gw = torch.autograd.grad(yr, (xr, wr), dy.double())
        err = max(((dx.double() - gx).norm() / gx.norm()).item(),
                  ((dw.double() - gw).norm() / gw.norm()).item())
        ms = time_ms(fn, sets)
        out.append((nb / ms / 1e6 / copy, err, k, k == primary, ws))
    plan._knobs = primary
    return [(a, b, c, d) for a, b, c, d, _ in out]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--which", default="fw,bw")
    ns = ap.parse_args()
    copy = copy_bandwidth()
    print(f"plans selected with {TUNING}  (* = the plan's pick)")
    cases = [(2048, 131072, "bfloat16"), (8192, 32768, "bfloat16"), (16384, 16384, "bfloat16"),
             (32768, 4096, "bfloat16"), (8192, 32768, "float32"), (32768, 4096, "float32")]
    for which in ns.which.split(","):
        fn = sweep_fw if which == "fw" else sweep_bw
        for op in ("rms", "ln"):
            for M, N, dt in cases:
                res = sorted(fn(op, M, N, dt, copy), key=lambda r: -r[0])
                print(f"\n{op} {which.upper()} {M}x{N} {dt}")
                for frac, err, k, cur in res[:4]:
                    print(f"  {'*' if cur else ' '} {frac:.3f} of copy  err {err:.1e}  "
                          f"{geometry(k)}")


if __name__ == "__main__":
    main()
