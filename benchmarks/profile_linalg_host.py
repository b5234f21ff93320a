"""Developer tool: the cost of one batched linalg call (512 × 64² float32 SPD) — namespace
``xp.linalg.cholesky`` / ``solve`` with and without the info read-back, ``CholeskyPlan.run``
(wall, device and host-enqueue µs per call) against ``torch.linalg.cholesky`` — and a cProfile of
the namespace call and of ``plan.run``.  Usage (GPU host, from the repo root):
``python3 -m benchmarks.profile_linalg_host``."""

import cProfile
import io
import pstats
import time

import numpy as np
import torch

import array_api as xp
import baracuda_dsl as bd

def wall(f, n=200):
    """Wall µs per call of ``f`` (200 calls after 20 warm-ups, synchronised at both ends)."""
    for _ in range(20):
        f()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


def main():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 64, 64)).astype(np.float32)
    spd = a @ a.transpose(0, 2, 1) + 64 * np.eye(64, dtype=np.float32)
    A = xp.asarray(spd); B = xp.asarray(rng.standard_normal((512, 64, 1)).astype(np.float32))
    tA = torch.from_dlpack(A)

    cases = {
      "xp.cholesky": lambda: xp.linalg.cholesky(A),
      "torch.cholesky": lambda: torch.linalg.cholesky(tA),
      "xp.solve": lambda: xp.linalg.solve(A, B),
    }
    for k, f in cases.items(): print(f"{k}: {wall(f):.1f} us/call (wall, incl. device)")
    old = xp.linalg.set_error_checking(False)
    for k in ("xp.cholesky", "xp.solve"): print(f"{k} (no info check): {wall(cases[k]):.1f} us/call")
    xp.linalg.set_error_checking(old)
    # plan level
    L = xp.empty_like(A)
    plan = bd.CholeskyPlan.select(bd.CholeskyDescriptor((512,), 64, bd.float32))
    ws = xp.empty((max(plan.workspace_size(), 1),), dtype=xp.uint8)
    args = bd.CholeskyArgs(A, L)
    print(f"CholeskyPlan.run: {wall(lambda: plan.run(args, workspace=ws)):.1f} us/call; sku {plan.sku()}")
    # device time per call with CUDA events (plan.run only)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record();
    for _ in range(100): plan.run(args, workspace=ws)
    e1.record(); e1.synchronize(); print(f"CholeskyPlan.run device: {e0.elapsed_time(e1)*10:.1f} us/call")
    # host-only (no sync): enqueue time
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(100): plan.run(args, workspace=ws)
    t1 = time.perf_counter(); torch.cuda.synchronize()
    print(f"CholeskyPlan.run host enqueue: {(t1 - t) / 100 * 1e6:.1f} us/call")
    for name, f in (("xp.cholesky", cases["xp.cholesky"]), ("plan", lambda: plan.run(args, workspace=ws))):
        pr = cProfile.Profile(); pr.enable()
        for _ in range(200): f()
        pr.disable(); s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(18)
        print(f"--- profile {name}"); print(s.getvalue()[-3500:])


if __name__ == "__main__":
    main()
