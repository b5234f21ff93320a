"""Command line: ``python -m baracuda_dsl prebuild`` (fill the kernel cache, no GPU needed) and
``python -m baracuda_dsl info`` (versions, GPUs, cache)."""

from __future__ import annotations

import argparse
import os
import sys
import time


def _cmd_prebuild(ns) -> int:
    from rich.console import Console
    from rich.table import Table

    from .errors import UnsupportedError
    from .jit import KernelCache, all_families, all_templates
    from .jit.prebuild import plan_jobs, prebuild
    from .vocabulary import ArchSku

    out = Console()
    err = Console(stderr=True)
    try:
        arches = [ArchSku.parse(a) for a in ns.arch.split(",") if a.strip()]
    except UnsupportedError as e:
        err.print(f"[red]error:[/] {e}")
        return 2
    fams = None
    if ns.ops:
        fams = [f.strip() for f in ns.ops.split(",") if f.strip()]
        unknown = sorted(set(fams) - set(all_families()))
        if unknown:
            err.print(f"[red]error:[/] unknown op famil{'y' if len(unknown) == 1 else 'ies'} "
                      f"{', '.join(unknown)}; known: {', '.join(all_families())}")
            return 2
    cache = KernelCache(ns.cache_dir)
    if ns.list:
        table = Table(title=f"kernel SKUs ({cache.root})")
        for c in ("family", "template", "SKUs", *[a.value + " cached" for a in arches]):
            table.add_column(c)
        for t in all_templates(fams):
            ks = t.skus()
            table.add_row(t.family, t.name, str(len(ks)),
                          *[f"{sum(cache.get(t, k, a.value) is not None for k in t.skus(a.value))}"
                            f"/{len(t.skus(a.value))}" for a in arches])
        out.print(table)
        return 0
    jobs = ns.jobs or os.cpu_count() or 1
    n = len(plan_jobs(fams, arches, cache))
    err.print(f"prebuild: {n} SKU builds ({', '.join(a.value for a in arches)}) into {cache.root} "
              f"with {jobs} worker(s) per arch")
    t0 = time.perf_counter()
    tally = prebuild(fams, arches, jobs, cache, err)
    table = Table(title=f"prebuild summary ({time.perf_counter() - t0:.1f} s wall)")
    for c in ("family", "arch", "compiled", "already cached", "failed", "compile s"):
        table.add_column(c, justify="right" if c not in ("family", "arch") else "left")
    failed = 0
    for (fam, arch), t in sorted(tally.items()):
        failed += t.failed
        table.add_row(fam, arch, str(t.compiled), str(t.cached),
                      f"[red]{t.failed}[/]" if t.failed else "0", f"{t.seconds:.1f}")
    out.print(table)
    for (fam, arch), t in sorted(tally.items()):
        for e in t.errors[:5]:
            err.print(f"[red]FAILED[/] {e}")
    return 1 if failed else 0


def _cmd_info(ns) -> int:
    from ._version import __version__
    from .jit import KernelCache, installed_dsl_version, jit_enabled

    def ver(dist):
        try:
            from importlib.metadata import version

            return version(dist)
        except Exception:
            return "not installed"

    print(f"baracuda-dsl      {__version__}")
    print(f"CuTe DSL          {installed_dsl_version() or 'not installed (cached kernels only)'}")
    print(f"cuda-core         {ver('cuda-core')}")
    print(f"cuda-bindings     {ver('cuda-bindings')}")
    try:
        from .runtime import device_arch, device_count, device_name

        n = device_count()
    except Exception as e:  # pragma: no cover - depends on the machine
        n = 0
        print(f"GPUs              none ({e})")
    if n == 0:
        print("GPUs              none visible (prebuild still works: it cross-compiles)")
    for i in range(n):
        try:
            print(f"GPU {i}             {device_name(i)} -> {device_arch(i).value}")
        except Exception as e:
            print(f"GPU {i}             unsupported ({e})")
    cache = KernelCache(ns.cache_dir)
    counts = cache.count()
    print(f"cache             {cache.root}")
    print("cached SKUs       " + (", ".join(f"{a}: {c}" for a, c in sorted(counts.items()))
                                  if counts else "none"))
    print(f"JIT on cache miss {'enabled' if jit_enabled() else 'disabled (BARACUDA_DSL_JIT=0)'}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m baracuda_dsl",
                                description="baracuda-dsl: CuTe DSL kernels behind a Plan API")
    sub = p.add_subparsers(dest="cmd", required=True)
    pb = sub.add_parser("prebuild", help="compile kernel SKUs into the cache (no GPU needed)")
    pb.add_argument("--arch", default="sm80,sm89,sm90a",
                    help="comma-separated arches (default: sm80,sm89,sm90a)")
    pb.add_argument("--ops", default=None, help="comma-separated op families (default: all)")
    pb.add_argument("--jobs", type=int, default=None, help="worker processes per arch "
                                                           "(default: CPU count)")
    pb.add_argument("--cache-dir", default=None, help="cache root (default: "
                                                      "$BARACUDA_DSL_CACHE_DIR or the user cache)")
    pb.add_argument("--list", action="store_true", help="list the SKUs and cache state only")
    pi = sub.add_parser("info", help="versions, GPUs and the kernel cache")
    pi.add_argument("--cache-dir", default=None)
    ns = p.parse_args(argv)
    return _cmd_prebuild(ns) if ns.cmd == "prebuild" else _cmd_info(ns)


if __name__ == "__main__":
    sys.exit(main())
