"""The launch-path study (ARCHITECTURE.md records its figures): host µs per launch of one tiny
cached cubin — the ``row_norm_fw`` SKU the RMSNorm plan picks for (M=1, N=256, f32, no weight) —
through every way this project could launch it, plus torch references, in one run.

(a0) ctypes straight into libcuda ``cuLaunchKernel``, pre-packed ``void**``
(a1) ``cuda.core.launch`` with a ``LaunchConfig`` and numpy-scalar args (pointers as numpy.uint64)
(a2) ``cuda.bindings`` ``cuLaunchKernel`` with a pre-packed ``void**`` (our ArgPack, packed once)
(a2+) the same, re-packing the 18 values every call (``LoadedKernel.launch``: what plans do)
(a3) ``plan.run(args)`` with pre-built Args (validation + views + launch)
(a4) ``plan.run(RMSNormArgs(x, y))`` building the Args from torch tensors every call
(b1) the DSL's AOT export (``export_to_c`` shim + libcuda_dialect_runtime, built by
     benchmarks/aot/build_aot.py) called through ctypes with 22 typed arguments
(b2) the same shim's packed entry (``void**`` filled once) called through ctypes with one argument
(b3) the same shim called in a C loop (no Python): the floor of design (b)
torch.add on 1024 floats and torch rms_norm on 1×256 as references.

Every path's output is checked once against torch (poisoned first).  Usage (GPU host, from the
repo root): ``python3 -m benchmarks.launch [--aot-lib benchmarks/aot/build/libbench_aot.so]``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys

from . import harness as H

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_AOT = os.path.join(HERE, "aot", "build", "libbench_aot.so")
M, N, EPS = 1, 256, 1e-6
N_CALLS = 2000


def _values(x, y):
    """The row_norm_fw ABI values for a dense (1, 256) problem without weight or stats (checked
    against the template's declared ABI: a raw void** with too few slots would crash the driver)."""
    from baracuda_dsl.ops.normalization.specs import row_norm as spec

    vals = [x.data_ptr(), y.data_ptr(), 0, 0, 0, 0, M, N, 1, 1, N, N, N, N, N, N, EPS, 0,
            1, 0, 1]  # hw, cpg, G: row affine
    if len(vals) != len(spec.ROW_NORM_FW.params):
        raise RuntimeError(f"benchmarks.launch: {len(vals)} values for a {len(spec.ROW_NORM_FW.params)}"
                           f"-parameter kernel ABI; update _values")
    return vals


class _Checker:
    def __init__(self, x, y):
        import torch.nn.functional as F

        self.x, self.y = x, y
        self.ref = F.rms_norm(x.double(), (N,), None, EPS)

    def __call__(self, launch_once) -> float:
        import torch

        self.y.fill_(float("nan"))
        launch_once()
        torch.cuda.synchronize()
        return H.rel_err(self.y, self.ref)


def _aot(lib_path: str, x, y):
    """Load the AOT shim; return (dict of callables, info) or raise."""
    import torch

    if not os.path.isfile(lib_path):
        raise FileNotFoundError(f"{lib_path} missing: build it on the DSL machine with "
                                f"`python benchmarks/aot/build_aot.py` and carry benchmarks/aot/build")
    meta_path = os.path.join(os.path.dirname(lib_path), "bench_aot.json")
    meta = json.load(open(meta_path)) if os.path.isfile(meta_path) else {}
    torch.cuda.synchronize()  # primary context exists before the static runtime attaches to it
    lib = ctypes.CDLL(lib_path)
    lib.bench_aot_load.restype = ctypes.c_int
    err = lib.bench_aot_load()
    if err:
        raise RuntimeError(f"bench_aot_load: CUDA error {err}")
    vp, i32, i64, f64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64, ctypes.c_double
    lib.bench_aot_launch.argtypes = [vp] * 6 + [i32] * 4 + [i64] * 6 + [f64] + [i32] * 4 + [vp]
    lib.bench_aot_launch.restype = ctypes.c_int
    lib.bench_aot_launch_packed.argtypes = [vp]
    lib.bench_aot_launch_packed.restype = None
    lib.bench_aot_loop_ns.argtypes = [ctypes.c_int, vp, vp, i32, i32, vp]
    lib.bench_aot_loop_ns.restype = ctypes.c_double
    vals = _values(x, y)
    typed = list(vals)  # ctypes converts per argtypes
    f = lib.bench_aot_launch

    def b1():
        f(*typed, None)

    # packed: one slot per value + stream + status, pointer array filled once
    cvals = [vp(v) for v in vals[:6]] + [i32(v) for v in vals[6:10]] + \
            [i64(v) for v in vals[10:16]] + [f64(vals[16])] + [i32(v) for v in vals[17:21]] + \
            [vp(None), i32(0)]
    arr = (vp * len(cvals))(*[ctypes.addressof(c) for c in cvals])
    status = cvals[-1]
    g = lib.bench_aot_launch_packed

    def b2():
        g(arr)

    def b1_checked():
        r = f(*typed, None)
        if r:
            raise RuntimeError(f"AOT launch returned CUDA error {r}")

    def b2_checked():
        g(arr)
        if status.value:
            raise RuntimeError(f"AOT packed launch returned CUDA error {status.value}")

    def b3(n=N_CALLS):
        for _ in range(3):
            lib.bench_aot_loop_ns(100, vals[0], vals[1], M, N, None)
        torch.cuda.synchronize()
        res = sorted(lib.bench_aot_loop_ns(n, vals[0], vals[1], M, N, None) for _ in range(3))
        torch.cuda.synchronize()
        if res[0] < 0:
            raise RuntimeError(f"AOT C loop: CUDA error {-res[0]:.0f}")
        return dict(median=res[1] / 1e3, min=res[0] / 1e3, trials=[r / 1e3 for r in res])

    return dict(b1=b1, b2=b2, b1_checked=b1_checked, b2_checked=b2_checked, b3=b3), meta


def run(aot_lib: str = DEFAULT_AOT, log=print) -> dict:
    import numpy as np
    import torch
    import torch.nn.functional as F

    import baracuda_dsl as bd
    from baracuda_dsl.runtime.device import get_device

    x = torch.randn(M, N, device="cuda", dtype=torch.float32)
    y = torch.empty_like(x)
    check = _Checker(x, y)
    plan = bd.RMSNormPlan.select(bd.RMSNormDescriptor((M, N), 1, "float32", EPS, False))
    args = bd.RMSNormArgs(x, y)
    plan.run(args)
    torch.cuda.synchronize()
    from baracuda_dsl.jit import freeze_knobs, kernel
    from baracuda_dsl.ops.normalization.specs import row_norm as spec

    lk = kernel(spec.ROW_NORM_FW, freeze_knobs(plan._knobs), 0, plan._arch)
    vals = _values(x, y)
    rows = []

    def measure(key, label, fn, checked=None):
        err, msg = H.safe(check, checked or fn)
        if msg is None and not err <= 1e-5:
            msg = f"FAIL: rel err {err:.1e}"
        t, msg2 = (None, None)
        if msg is None or msg.startswith("FAIL"):
            t, msg2 = H.safe(H.host_us_best, fn, N_CALLS)
        rows.append(dict(key=key, path=label, us=t["median"] if t else None,
                         us_min=t["min"] if t else None, relerr=err,
                         status=msg or msg2 or "ok"))
        log(f"{key:>5} {label:<70} {H.fmt(rows[-1]['us'])} µs  {rows[-1]['status']}")

    # (a0) ctypes -> libcuda
    def a0_setup():
        from baracuda_dsl.abi import ArgPack

        cu = ctypes.CDLL("libcuda.so.1")
        fn = cu.cuLaunchKernel
        vp, u = ctypes.c_void_p, ctypes.c_uint
        fn.argtypes = [vp, u, u, u, u, u, u, u, vp, vp, vp]
        fn.restype = ctypes.c_int
        pack = ArgPack(lk._pack)
        addr = pack.set(vals)
        h = int(lk.handle)
        keep = pack

        def a0():
            fn(h, 1, 1, 1, lk.threads, 1, 1, lk.smem, None, addr, None)

        def a0_checked():
            r = fn(h, 1, 1, 1, lk.threads, 1, 1, lk.smem, None, addr, None)
            if r:
                raise RuntimeError(f"cuLaunchKernel (ctypes): CUDA error {r}")
            keep.address  # noqa: B018  (keeps the pack alive)
        return a0, a0_checked

    s, msg = H.safe(a0_setup)
    if s:
        measure("a0", "ctypes → libcuda cuLaunchKernel, pre-packed void**", s[0], s[1])
    else:
        rows.append(dict(key="a0", path="ctypes → libcuda cuLaunchKernel", status=msg))

    # (a1) cuda.core.launch
    def a1_setup():
        from cuda.core import LaunchConfig, launch

        stream = get_device(0).default_stream
        cfg = LaunchConfig(grid=(1, 1, 1), block=(lk.threads, 1, 1), shmem_size=lk.smem)
        conv = {"ptr": np.uint64, "i32": np.int32, "i64": np.int64, "f32": np.float32,
                "f64": np.float64}
        cargs = tuple(conv[p.kind](v) for p, v in zip(lk._pack, vals))
        kern = lk.kernel
        return lambda: launch(stream, cfg, kern, *cargs)

    f, msg = H.safe(a1_setup)
    if f:
        measure("a1", "cuda.core.launch, LaunchConfig + numpy-scalar args", f)
    else:
        rows.append(dict(key="a1", path="cuda.core.launch", status=msg))

    # (a2) cuda.bindings cuLaunchKernel, pre-packed
    from cuda.bindings import driver

    from baracuda_dsl.abi import ArgPack

    pack = ArgPack(lk._pack)
    addr = pack.set(vals)
    h = lk.handle
    cul = driver.cuLaunchKernel

    def a2():
        cul(h, 1, 1, 1, lk.threads, 1, 1, lk.smem, 0, addr, 0)

    def a2_checked():
        (e,) = cul(h, 1, 1, 1, lk.threads, 1, 1, lk.smem, 0, addr, 0)
        if int(e):
            raise RuntimeError(f"cuLaunchKernel: {e}")

    measure("a2", "cuda.bindings cuLaunchKernel, pre-packed void** (ArgPack packed once)", a2,
            a2_checked)
    measure("a2+", "cuda.bindings cuLaunchKernel, ArgPack re-packed per call (LoadedKernel.launch)",
            lambda: lk.launch((1, 1, 1), vals, 0))
    measure("a3", "plan.run(args), Args pre-built", lambda: plan.run(args))
    measure("a4", "plan.run(RMSNormArgs(x, y)), Args built from torch tensors per call",
            lambda: plan.run(bd.RMSNormArgs(x, y)))

    # (b) AOT
    aot, msg = H.safe(_aot, aot_lib, x, y)
    if aot is None:
        for k in ("b1", "b2", "b3"):
            rows.append(dict(key=k, path="DSL AOT export_to_c shim", status=f"not available: {msg}"))
        aot_meta = None
    else:
        fns, aot_meta = aot
        measure("b1", "DSL AOT shim via ctypes, 22 typed args (export_to_c wrapper)", fns["b1"],
                fns["b1_checked"])
        measure("b2", "DSL AOT shim via ctypes, pre-packed void** (1 arg)", fns["b2"],
                fns["b2_checked"])
        r, msg = H.safe(fns["b3"])
        rows.append(dict(key="b3", path="DSL AOT shim in a C loop (no Python): floor of (b)",
                         us=r["median"] if r else None, us_min=r["min"] if r else None,
                         status=msg or "ok"))
        log(f"   b3 {rows[-1]['path']:<70} {H.fmt(rows[-1].get('us'))} µs  {rows[-1]['status']}")

    a = torch.randn(1024, device="cuda")
    t = H.host_us_best(lambda: torch.add(a, a), N_CALLS)
    rows.append(dict(key="ref", path="torch.add on 1024 floats (reference)", us=t["median"],
                     us_min=t["min"], status="ok"))
    t = H.host_us_best(lambda: F.rms_norm(x, (N,), None, EPS), N_CALLS)
    rows.append(dict(key="ref", path="torch rms_norm on 1×256 (reference)", us=t["median"],
                     us_min=t["min"], status="ok"))
    torch.cuda.synchronize()
    return dict(rows=rows, sku=str(plan.sku()), aot=aot_meta, calls=N_CALLS)


def markdown(res: dict) -> str:
    rows = [[r["key"], r["path"], H.fmt(r.get("us")), H.fmt(r.get("us_min")),
             H.fmt(r.get("relerr"), ".0e"), r["status"]] for r in res["rows"]]
    head = (f"Host µs per launch of one tiny cached cubin ({res.get('sku')}; M=1, N=256), "
            f"{res.get('calls')} back-to-back calls after warm-up, median / min of 3 trials:\n\n")
    return head + H.md_table(["", "path", "µs / call", "min", "rel err", "status"], rows) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="launch-path study: host µs per launch")
    ap.add_argument("--aot-lib", default=DEFAULT_AOT, help="libbench_aot.so from build_aot.py")
    ap.add_argument("--out", default=None)
    ns = ap.parse_args(argv)
    res = run(ns.aot_lib)
    md = markdown(res)
    print(md)
    if ns.out:
        os.makedirs(ns.out, exist_ok=True)
        with open(os.path.join(ns.out, "bench_launch.json"), "w") as f:
            json.dump(res, f, indent=1, default=str)
        with open(os.path.join(ns.out, "bench_launch.md"), "w") as f:
            f.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
