"""Quickstart: the Plan lifecycle on RMSNorm, checked against a float64 numpy reference.

Run: python3 examples/quickstart.py   (needs a CUDA GPU and torch; exits cleanly without a GPU)
"""

import sys

import numpy as np

import baracuda_dsl as bd


def main() -> int:
    if not bd.runtime.has_gpu():
        print("no CUDA GPU visible: nothing to run (prebuild still works: "
              "python -m baracuda_dsl prebuild)")
        return 0
    import torch

    m, n = 64, 4096
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    desc = bd.RMSNormDescriptor(shape=(m, n), normalized_ndim=1, dtype="bf16", eps=1e-6)
    plan = bd.RMSNormPlan.select(desc)            # validates, picks a kernel SKU
    assert plan.workspace_size() == 0
    plan.run(bd.RMSNormArgs(x, y, weight=w))      # checks args, launches
    torch.cuda.synchronize()
    print("sku:", plan.sku())
    xd = x.double().cpu().numpy()
    ref = xd / np.sqrt((xd ** 2).mean(-1, keepdims=True) + 1e-6) * w.double().cpu().numpy()
    err = np.linalg.norm(y.double().cpu().numpy() - ref) / np.linalg.norm(ref)
    print(f"relative error vs float64 numpy: {err:.2e}")
    return 0 if err < 2e-2 else 1


if __name__ == "__main__":
    sys.exit(main())
