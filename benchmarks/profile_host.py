"""Developer tool: where the host time of one small ``plan.run`` goes (cProfile, GPU host).
Usage (from the repo root): ``python3 -m benchmarks.profile_host``."""

import cProfile
import pstats
import time

import torch

import baracuda_dsl as bd


def main():
    x = torch.randn(1, 256, device="cuda")
    w = torch.randn(256, device="cuda")
    y = torch.empty_like(x)
    plan = bd.RMSNormPlan.select(bd.RMSNormDescriptor((1, 256), 1, "f32", 1e-6, True))
    args = bd.RMSNormArgs(x, y, w)
    for _ in range(200):
        plan.run(args)
    torch.cuda.synchronize()
    n = 5000
    t0 = time.perf_counter()
    for _ in range(n):
        plan.run(args)
    dt = (time.perf_counter() - t0) / n * 1e6
    torch.cuda.synchronize()
    print(f"plan.run: {dt:.2f} us/call")
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(n):
        plan.run(args)
    pr.disable()
    torch.cuda.synchronize()
    pstats.Stats(pr).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
