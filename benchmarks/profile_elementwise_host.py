"""Developer tool: where the host time of one small elementwise op goes (GPU host).
Times each layer of ``xp.add(x, y)`` on 16-element arrays, then prints a cProfile of the whole
call.  Usage (from the repo root): ``python3 -m benchmarks.profile_elementwise_host``."""

import cProfile
import pstats
import time

import numpy as np
import torch

import array_api as xp
import baracuda_dsl as bd
from array_api import _dispatch
from array_api._array_object import Array, tensor_view
from baracuda_dsl.ops.elementwise.specs.elementwise import ELEMENTWISE


def _time(label, fn, n=5000):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    dt = (time.perf_counter() - t0) / n * 1e6
    torch.cuda.synchronize()
    print(f"{label:<44} {dt:7.2f} us/call")
    return dt


def main():
    a = xp.asarray(np.arange(16, dtype=np.float32))
    b = xp.asarray(np.ones(16, dtype=np.float32))
    ta, tb = torch.arange(16, device="cuda", dtype=torch.float32), torch.ones(16, device="cuda")
    to = torch.empty_like(ta)
    plan = bd.ElementwisePlan.select(bd.ElementwiseDescriptor("add", ((16,), (16,)), "f32"))
    args = bd.ElementwiseArgs([ta, tb], [to])
    va, vb, vo = tensor_view(a), tensor_view(b), tensor_view(Array._empty(
        (16,), xp.float32, a.device))
    kern = plan._kernel(ELEMENTWISE, plan._knobs["flat"], 0)
    # the flat add SKU takes (specs.elementwise.param_groups): o0 a b n smask fa fb ga gb ia ib
    launch_args = [vo.ptr, va.ptr, vb.ptr, 16, 0] + [0.0] * 4 + [0] * 2
    _time("torch.add(ta, tb)", lambda: torch.add(ta, tb))
    _time("kernel.launch (packed args)", lambda: kern.launch((1, 1, 1), launch_args, 0))
    _time("Array._empty((16,), f32)", lambda: Array._empty((16,), xp.float32, a.device))
    _time("plan._launch_views (trusted views)",
          lambda: plan._launch_views([va, vb], [vo], 0, 0, fresh=True))
    _time("plan.run(torch Args)", lambda: plan.run(args))
    _time("_dispatch.apply('add', [a, b])", lambda: _dispatch.apply("add", [a, b], xp.float32))
    _time("xp.add(a, b)", lambda: xp.add(a, b))
    _time("a + b", lambda: a + b)
    _time("a + 1.0", lambda: a + 1.0)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(3000):
        xp.add(a, b)
    pr.disable()
    torch.cuda.synchronize()
    pstats.Stats(pr).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
