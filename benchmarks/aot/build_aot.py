"""Build design (b) of the launch-path study: the CuTe DSL's own AOT export of one kernel.

Run HERE (the machine with CuTe DSL, gcc and the CUDA toolkit), not on the GPU host:

    python benchmarks/aot/build_aot.py            # -> benchmarks/aot/build/libbench_aot.so

Steps: instantiate the ``row_norm_fw`` SKU the RMSNorm plan picks for (M=1, N=256, f32) from
``baracuda_dsl.ops.normalization.kernels.row_norm``; ``cute.compile`` it for sm_90a (``CUTE_DSL_ARCH``, set before
the DSL is imported); ``export_to_c`` writes ``bench_aot.h`` (host launch wrapper, module
load/unload) and ``bench_aot.o`` (x86-64 host launch shim with the cubin embedded); gcc links that
object, ``shim.c`` (ctypes-facing entry points), the DSL's ``libcuda_dialect_runtime_static.a``
and the CUDA toolkit's ``libcudart_static.a`` into ``build/libbench_aot.so``, whose only run-time
dependencies are libc/libdl/libpthread/librt (cudart_static dlopens ``libcuda.so.1``).  The GPU
host loads it with ctypes (benchmarks/launch.py); ``build/bench_aot.json`` records the knobs,
the ABI and the name of the packed-argument entry.

The export needs the host function's ``stream`` parameter annotated as ``cuda.CUstream`` (the C
header generator refuses an unannotated one); the kernel module leaves it unannotated, so the
annotation is added to the built function here before compiling.  Generated files stay in
``build/`` (git-ignored).
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PREFIX = "bench_aot"


def sku_knobs():
    """The knobs RMSNormPlan picks for (1, 256) f32 on sm90a (launch.py times the same SKU)."""
    from baracuda_dsl.dtypes import float32
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.ops.normalization.row_norm import RowNormTuning, primary_knobs
    from baracuda_dsl.vocabulary import ArchSku

    return dict(freeze_knobs(primary_knobs(float32, "rms", 256, ArchSku.SM90A, RowNormTuning())))


def find_cuda_home() -> str:
    cands = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    cands += sorted(glob.glob("/usr/local/cuda-*"), reverse=True)
    for c in cands:
        if c and os.path.isfile(os.path.join(c, "include", "cuda_runtime.h")):
            for lib in ("lib64", "lib", "targets/x86_64-linux/lib"):
                if os.path.isfile(os.path.join(c, lib, "libcudart_static.a")):
                    return c
    raise SystemExit("build_aot: no CUDA toolkit with include/cuda_runtime.h and libcudart_static.a "
                     "found (set CUDA_HOME)")


def cudart_static_dir(home: str) -> str:
    for lib in ("lib64", "lib", "targets/x86_64-linux/lib"):
        if os.path.isfile(os.path.join(home, lib, "libcudart_static.a")):
            return os.path.join(home, lib)
    raise AssertionError


def dsl_runtime_static() -> str:
    import nvidia_cutlass_dsl

    base = list(nvidia_cutlass_dsl.__path__)[0]  # a namespace package: no __file__
    hits = sorted(glob.glob(os.path.join(base, "**", "libcuda_dialect_runtime_static.a"),
                            recursive=True))
    hits = [h for h in hits if "stubs" not in h]
    if not hits:
        raise SystemExit(f"build_aot: libcuda_dialect_runtime_static.a not found under {base}")
    return hits[0]


def export(build: str, knobs: dict) -> dict:
    """cute.compile the SKU for sm_90a and export_to_c into ``build``; returns metadata."""
    os.environ["CUTE_DSL_ARCH"] = "sm_90a"
    os.environ.setdefault("CUTE_DSL_DISABLE_FILE_CACHING", "1")
    import cuda.bindings.driver as cuda
    import cutlass.cute as cute
    import cutlass.cute.export  # noqa: F401  (registers the export provider)

    from baracuda_dsl.jit.cache import installed_dsl_version
    from baracuda_dsl.ops import get_template
    from baracuda_dsl.ops.normalization.kernels import row_norm

    t0 = time.perf_counter()
    fn, args = row_norm.build(get_template("row_norm_fw").thaw(tuple(sorted(knobs.items()))))
    raw = inspect.unwrap(fn)
    sig = inspect.signature(raw)
    if "stream" not in sig.parameters:
        raise SystemExit(f"build_aot: row_norm.build's host function has no 'stream' parameter: {sig}")
    raw.__annotations__["stream"] = cuda.CUstream
    compiled = cute.compile(fn, *args)
    compiled.export_to_c(build, PREFIX)
    t = get_template("row_norm_fw")
    return dict(template=t.name, knobs=knobs, source_hash=t.source_hash(),
                params=[[p.name, p.kind] for p in t.params], arch="sm90a",
                dsl_version=installed_dsl_version(), compile_seconds=round(time.perf_counter() - t0, 2),
                host_params=list(sig.parameters))


def link(build: str, cuda_home: str, rt_static: str) -> str:
    header = open(os.path.join(build, PREFIX + ".h")).read()
    m = re.search(r"void\s+(_mlir_" + PREFIX + r"__mlir_ciface_\w+)\s*\(\s*void\s*\*\*", header)
    if m is None:
        raise SystemExit("build_aot: packed-argument entry not found in the generated header")
    ciface = m.group(1)
    if "cute_dsl_" + PREFIX + "_wrapper" not in header:
        raise SystemExit("build_aot: generated header lacks cute_dsl_bench_aot_wrapper (DSL changed?)")
    so = os.path.join(build, "lib" + PREFIX + ".so")
    cmd = ["gcc", "-O2", "-fPIC", "-shared", "-o", so,
           f"-DBENCH_AOT_CIFACE={ciface}", "-I", build, "-I", os.path.join(cuda_home, "include"),
           os.path.join(HERE, "shim.c"), os.path.join(build, PREFIX + ".o"), rt_static,
           "-L" + cudart_static_dir(cuda_home), "-lcudart_static", "-ldl", "-lpthread", "-lrt",
           "-Wl,--no-undefined", "-Wl,--exclude-libs,ALL", "-static-libgcc"]
    print("+", " ".join(cmd))
    subprocess.run(cmd, check=True)
    return ciface


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(HERE, "build"))
    ns = ap.parse_args(argv)
    sys.path.insert(0, ROOT)
    build = os.path.abspath(ns.build_dir)
    if os.path.isdir(build):
        shutil.rmtree(build)
    os.makedirs(build)
    if shutil.which("gcc") is None:
        raise SystemExit("build_aot: gcc not found")
    cuda_home = find_cuda_home()
    rt_static = dsl_runtime_static()
    knobs = sku_knobs()
    meta = export(build, knobs)
    meta["ciface"] = link(build, cuda_home, rt_static)
    meta["cuda_home"] = cuda_home
    meta["dsl_runtime"] = rt_static
    so = os.path.join(build, "lib" + PREFIX + ".so")
    meta["so_sha256"] = hashlib.sha256(open(so, "rb").read()).hexdigest()
    needed = subprocess.run(["readelf", "-d", so], capture_output=True, text=True).stdout
    meta["needed"] = re.findall(r"\(NEEDED\).*\[(.*)\]", needed)
    with open(os.path.join(build, PREFIX + ".json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"built {so} ({os.path.getsize(so)} bytes); needs {meta['needed']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
