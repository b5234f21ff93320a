"""Quickstart: the Plan lifecycle on RMSNorm, then the same op through the array namespace,
both checked against a float64 numpy reference.

Run: python examples/quickstart.py   (needs a CUDA GPU; prints a note and exits 0 without one)
"""

import sys

import numpy as np

import baracuda_dsl as bd


def main() -> int:
    if not bd.runtime.has_gpu():
        print("no CUDA GPU visible: nothing to run (kernels can still be prebuilt: "
              "python -m baracuda_dsl prebuild)")
        return 0
    import array_api as xp

    m, n, eps = 64, 4096, 1e-6
    rng = np.random.default_rng(0)
    x_h = rng.standard_normal((m, n)).astype(np.float32)
    w_h = rng.standard_normal(n).astype(np.float32)
    x64 = x_h.astype(np.float64)
    ref = x64 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + eps) * w_h.astype(np.float64)

    # 1. the Plan API: descriptor → select → workspace_size → args → run
    x, w = xp.asarray(x_h), xp.asarray(w_h)              # device copies (any DLPack/CAI object works)
    y = xp.empty((m, n), dtype=xp.float32)
    desc = bd.RMSNormDescriptor(shape=(m, n), normalized_ndim=1, dtype="f32", eps=eps)
    plan = bd.RMSNormPlan.select(desc)                   # validates, picks a kernel SKU
    assert plan.workspace_size() == 0                    # caller-owned scratch bytes (none here)
    args = bd.RMSNormArgs(x=x, y=y, weight=w)
    plan.can_implement(args)                             # shapes / dtypes / devices / alignment
    plan.run(args)                                       # enqueues on the default stream
    print("sku:", plan.sku())
    err = np.linalg.norm(y.to_numpy() - ref) / np.linalg.norm(ref)
    print(f"Plan API   rel. error vs float64: {err:.2e}")

    # 2. the array namespace
    y2 = xp.rms_norm(x, (n,), w, eps=eps)
    err2 = np.linalg.norm(y2.to_numpy() - ref) / np.linalg.norm(ref)
    print(f"array_api  rel. error vs float64: {err2:.2e}")
    ok = err < 1e-5 and err2 < 1e-5
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
