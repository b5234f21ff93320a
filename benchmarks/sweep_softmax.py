"""Developer tool: time every prebuilt softmax SKU that can serve a wide-row shape, to choose the
forward's row-length ladder (single CTA vs cluster, full vs half-size slices) from data.
Usage (GPU host): ``python3 -m benchmarks.sweep_softmax [--which fw,bw] [--quick]``.

Each candidate runs through the real plan (selected with ``PlanPreference(tuning=TUNING)``)
with its kernel choice overridden (``plan._knobs``; the plan's launch records are reset), is
checked once against torch (float64; err column) and timed with the batched CUDA-event method of
benchmarks/softmax.py (harness.bench), rotating through enough input sets to stay out of L2.
Candidates: the vectorised register buckets that hold the row, every cluster SKU (full and
half-size slices: ``ops/softmax/specs/softmax.py`` FW_ROWS / BW_ROWS ``clusters``, all in the
prebuilt space) and the vectorised loop SKU.  The plan's pick under ``TUNING`` is marked ``*``.
To adopt a result, change the defaults of ``baracuda_dsl.SoftmaxTuning`` (ops/softmax/softmax.py):
``ladder_fw`` / ``ladder_fw_by_dtype`` (order of (CTAs, half) rungs) and ``single_cta_max_fw``
(per dtype: longest row kept in one CTA on sm90a); the summary prints the fastest per shape.
"""

from __future__ import annotations

import argparse
from . import harness as H

CASES = [(32768, 4096, "bfloat16"), (8192, 32768, "bfloat16"), (4096, 65536, "bfloat16"),
         (2048, 131072, "bfloat16"), (512, 262144, "bfloat16"), (32768, 4096, "float32"),
         (8192, 32768, "float32"), (2048, 131072, "float32")]
QUICK = [(8192, 32768, "bfloat16"), (2048, 131072, "bfloat16"), (512, 262144, "bfloat16")]


def _tuning():
    """The tuning record the plans are selected with (edit to try another ladder)."""
    from baracuda_dsl.ops.softmax.softmax import SoftmaxTuning

    return SoftmaxTuning()


def _pref():
    from baracuda_dsl import PlanPreference

    return PlanPreference(tuning=_tuning())


def candidates(template, dtype: str, n: int, arch: str):
    for frozen in template.skus(arch):
        k = template.thaw(frozen)
        if k.dtype != dtype or k.vec == 1:
            continue
        if k.chunks == 0 or k.capacity >= n:
            # skip register SKUs far larger than the row (same code, idle lanes / CTAs)
            if k.chunks and k.capacity >= 4 * n:
                continue
            yield k


def _label(k) -> str:
    from baracuda_dsl.ops.softmax.specs import softmax as spec

    if k.chunks == 0:
        return f"loop tpr={k.tpr}"
    c = k.cluster
    half = c > 1 and k.capacity // c < spec.FW_ROWS.caps[k.dtype]
    return (f"{'cluster ' + str(c) if c > 1 else 'one CTA'}{' half' if half else ''} "
            f"tpr={k.tpr} chunks={k.chunks} cap={k.capacity}")


def sweep_fw(torch, M, N, dt):
    from baracuda_dsl.ops.softmax.softmax import SoftmaxArgs, SoftmaxDescriptor, SoftmaxPlan

    tdt = getattr(torch, dt)
    nb = 2 * M * N * tdt.itemsize
    sets = [(torch.randn(M, N, device="cuda", dtype=tdt) * 2,
             torch.empty(M, N, device="cuda", dtype=tdt)) for _ in range(H.n_sets(nb))]
    plan = SoftmaxPlan.select(SoftmaxDescriptor((M, N), dt), _pref())
    primary = plan._knobs
    ref = torch.softmax(sets[0][0].double(), -1)
    out = []
    for k in candidates(plan._template, primary.dtype, N, plan._arch.value):
        plan._knobs, plan._records = k, {}

        def fn(x, y):
            plan.run(SoftmaxArgs(x, y))

        x, y = sets[0]
        y.fill_(float("nan"))
        fn(x, y)
        torch.cuda.synchronize()
        err = H.rel_err(y, ref)
        ms = H.time_ms(fn, sets, reps=15)
        out.append((nb / ms / 1e6, err, k, k == primary))
    plan._knobs, plan._records = primary, {}
    return out


def sweep_bw(torch, M, N, dt):
    from baracuda_dsl.ops.softmax.softmax import (SoftmaxBackwardArgs, SoftmaxBackwardDescriptor,
                                                  SoftmaxBackwardPlan)

    tdt = getattr(torch, dt)
    nb = 3 * M * N * tdt.itemsize
    sets = []
    for _ in range(H.n_sets(nb)):
        x = torch.randn(M, N, device="cuda", dtype=tdt) * 2
        sets.append((torch.randn(M, N, device="cuda", dtype=tdt), torch.softmax(x, -1),
                     torch.empty(M, N, device="cuda", dtype=tdt)))
    plan = SoftmaxBackwardPlan.select(SoftmaxBackwardDescriptor((M, N), dt), _pref())
    primary = plan._knobs
    dy, y, _ = sets[0]
    yd, dyd = y.double(), dy.double()
    ref = yd * (dyd - (dyd * yd).sum(-1, keepdim=True))
    out = []
    for k in candidates(plan._template, primary.dtype, N, plan._arch.value):
        plan._knobs, plan._records = k, {}

        def fn(a, b, c):
            plan.run(SoftmaxBackwardArgs(a, b, c))

        sets[0][2].fill_(float("nan"))
        fn(*sets[0])
        torch.cuda.synchronize()
        err = H.rel_err(sets[0][2], ref)
        ms = H.time_ms(fn, sets, reps=15)
        out.append((nb / ms / 1e6, err, k, k == primary))
    plan._knobs, plan._records = primary, {}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--which", default="fw", help="fw, bw or fw,bw")
    ap.add_argument("--quick", action="store_true", help="three bf16 wide-row shapes only")
    ns = ap.parse_args(argv)
    torch = H._torch()
    H.check_cuda()
    copy = H.copy_bandwidth()["gbs"]
    print(f"copy ceiling {copy:.0f} GB/s; plans selected with {_tuning()}")
    best = {}
    for which in ns.which.split(","):
        fn = sweep_fw if which == "fw" else sweep_bw
        for M, N, dt in (QUICK if ns.quick else CASES):
            res = sorted(fn(torch, M, N, dt), key=lambda r: -r[0])
            print(f"\nsoftmax {which.upper()} {M}x{N} {dt}  (* = current plan choice)")
            for gbs, err, k, cur in res:
                print(f"  {'*' if cur else ' '} {gbs / copy:.3f} of copy  {gbs:6.0f} GB/s  "
                      f"err {err:.1e}  {_label(k)}")
            if res:
                best[(which, dt, N)] = res[0][2]
            torch.cuda.empty_cache()
    print("\nfastest per shape (SoftmaxTuning: ladder_fw, ladder_fw_by_dtype, single_cta_max_fw):")
    for (which, dt, N), k in best.items():
        print(f"  {which} {dt} N={N}: {_label(k)}")


if __name__ == "__main__":
    main()
