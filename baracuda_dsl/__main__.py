"""Command line.

``python -m baracuda_dsl prebuild [--arch sm80,sm89,sm90a] [--ops FAMILY,...] [--jobs N]
[--cache-dir DIR] [--list [-v]]``
    compile every kernel SKU of the chosen op families for each arch into the cubin cache (no GPU
    needed: CuTe DSL cross-compiles); ``--list`` only shows the SKUs and what is cached.
    Exit status: 0 all built, 1 some SKU failed, 2 bad arguments / no CuTe DSL.

``python -m baracuda_dsl info [--cache-dir DIR]``
    versions, visible GPUs and their arch SKU, the cache and what it holds, whether JIT is on.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

#: failed SKUs listed one line each before the rest are only counted
MAX_ERROR_LINES = 50


def _consoles():
    from rich.console import Console

    out, err = Console(), Console(stderr=True)
    # rich wraps to 80 columns when the output is not a terminal; keep table cells whole in logs
    if not out.is_terminal:
        out = Console(width=160)
    if not err.is_terminal:
        err = Console(stderr=True, width=160)
    return out, err


def _parse_arches(text: str):
    from .vocabulary import ArchSku

    arches = []
    for a in text.split(","):
        if a.strip():
            sku = ArchSku.parse(a)
            if sku not in arches:
                arches.append(sku)
    return arches


def _cmd_prebuild(ns) -> int:
    from rich.table import Table

    from .errors import UnsupportedError
    from .jit import KernelCache, installed_dsl_version, knob_key
    from .jit.prebuild import plan_jobs, prebuild
    from .ops import all_families, all_templates

    out, err = _consoles()
    try:
        arches = _parse_arches(ns.arch)
    except UnsupportedError as e:
        err.print(f"[red]error:[/] {e}", highlight=False)
        return 2
    if not arches:
        err.print("[red]error:[/] --arch names no arch", highlight=False)
        return 2
    fams = None
    if ns.ops:
        fams = list(dict.fromkeys(f.strip() for f in ns.ops.split(",") if f.strip()))
        unknown = [f for f in fams if f not in all_families()]
        if unknown or not fams:
            err.print(f"[red]error:[/] unknown op famil{'y' if len(unknown) == 1 else 'ies'} "
                      f"{', '.join(unknown) or repr(ns.ops)}; known: {', '.join(all_families())}",
                      highlight=False)
            return 2
    if ns.jobs is not None and ns.jobs < 1:
        err.print(f"[red]error:[/] --jobs must be >= 1, got {ns.jobs}", highlight=False)
        return 2
    cache = KernelCache(ns.cache_dir)
    if ns.prune:
        n = cache.prune(all_templates(fams))
        err.print(f"prebuild: pruned {n} stale cache entr{'y' if n == 1 else 'ies'}",
                  highlight=False)

    if ns.list:
        table = Table(title=f"kernel SKUs (cached in {cache.root})")
        table.add_column("family")
        table.add_column("template")
        if ns.verbose:
            table.add_column("SKU knobs")
        for a in arches:
            table.add_column(f"{a.value} cached", justify="right")
        n_all = 0
        for t in all_templates(fams):
            if ns.verbose:
                every = list(dict.fromkeys(k for a in arches for k in t.skus(a.value)))
                for k in every:
                    cells = []
                    for a in arches:
                        if k not in t.skus(a.value):
                            cells.append("-")
                        else:
                            cells.append("yes" if cache.get(t, k, a.value) else "no")
                    table.add_row(t.family, t.name, knob_key(k), *cells)
                n_all += len(every)
            else:
                cells = []
                for a in arches:
                    ks = t.skus(a.value)
                    hit = sum(cache.get(t, k, a.value) is not None for k in ks)
                    cells.append(f"{hit}/{len(ks)}")
                table.add_row(t.family, t.name, *cells)
        out.print(table)
        total = sum(len(t.skus(a.value)) for t in all_templates(fams) for a in arches)
        out.print(f"{total} SKU builds over {', '.join(a.value for a in arches)}", highlight=False)
        return 0

    if installed_dsl_version() is None:
        err.print("[red]error:[/] prebuild needs CuTe DSL (pip install nvidia-cutlass-dsl); "
                  "this host can only run kernels that are already cached", highlight=False)
        return 2
    jobs = ns.jobs or os.cpu_count() or 1
    work = plan_jobs(all_templates(fams), arches, cache)
    todo = sum(not j.cached for j in work)
    err.print(f"prebuild: {len(work)} SKUs over {', '.join(a.value for a in arches)}, "
              f"{len(work) - todo} already cached, {todo} to compile with {jobs} worker(s) "
              f"into {cache.root}", highlight=False)
    t0 = time.perf_counter()
    try:
        tally = prebuild(all_templates(fams), arches, jobs, cache, err)
    except KeyboardInterrupt:
        err.print("prebuild: interrupted (finished SKUs are cached)", highlight=False)
        return 130
    wall = time.perf_counter() - t0
    table = Table(title=f"prebuild summary ({wall:.1f} s wall, {jobs} worker(s))")
    for c in ("family", "arch", "compiled", "already cached", "failed", "compile s"):
        table.add_column(c, justify="left" if c in ("family", "arch") else "right")
    order = {a.value: i for i, a in enumerate(arches)}
    rows = sorted(tally.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 99)))
    for (fam, arch), t in rows:
        table.add_row(fam, arch, str(t.compiled), str(t.cached),
                      f"[red]{t.failed}[/]" if t.failed else "0", f"{t.seconds:.1f}")
    out.print(table)
    errors = [e for _, t in rows for e in t.errors]
    for e in errors[:MAX_ERROR_LINES]:
        err.print(f"[red]FAILED[/] {e}", highlight=False, markup=True, soft_wrap=True)
    if len(errors) > MAX_ERROR_LINES:
        err.print(f"... and {len(errors) - MAX_ERROR_LINES} more failed SKUs", highlight=False)
    if errors:
        err.print(f"prebuild: {len(errors)} SKU(s) failed", highlight=False)
        return 1
    return 0


def _cmd_info(ns) -> int:
    from ._version import __version__
    from .jit import KernelCache, installed_dsl_version, jit_enabled
    from .ops import all_templates
    from .vocabulary import ArchSku

    def ver(dist):
        try:
            from importlib.metadata import version

            return version(dist)
        except Exception:
            return "not installed"

    def line(key, val):
        print(f"{key:<18}{val}")

    line("baracuda-dsl", __version__)
    line("CuTe DSL", installed_dsl_version() or "not installed (runs cached kernels only)")
    line("cuda-core", ver("cuda-core"))
    line("cuda-bindings", ver("cuda-bindings"))
    line("python", sys.version.split()[0])
    try:
        from .runtime import device_count

        n = device_count()
    except Exception as e:  # pragma: no cover - depends on the machine
        n = 0
        line("GPUs", f"none ({type(e).__name__}: {e})")
    if n == 0:
        line("GPUs", "none visible (prebuild still works: it cross-compiles)")
    for i in range(n):
        try:
            from .runtime import device_arch, device_name

            line(f"GPU {i}", f"{device_name(i)} -> {device_arch(i).value}")
        except Exception as e:
            line(f"GPU {i}", f"no kernel SKUs ({e})")
    cache = KernelCache(ns.cache_dir)
    line("cache", cache.root + ("" if os.path.isdir(cache.root) else " (empty, not created yet)"))
    counts = cache.count()
    known = {a.value: sum(len(t.skus(a.value)) for t in all_templates()) for a in ArchSku}
    parts = [f"{a}: {counts.get(a, 0)} (of {known[a]} SKUs)" for a in known]
    parts += [f"{a}: {c}" for a, c in sorted(counts.items()) if a not in known]
    line("cached entries", ", ".join(parts))
    if not jit_enabled():
        jit = "disabled (BARACUDA_DSL_JIT=0): a miss raises KernelNotCachedError"
    elif installed_dsl_version() is None:
        jit = "impossible here (no CuTe DSL): a miss raises KernelNotCachedError"
    else:
        jit = "enabled (BARACUDA_DSL_JIT)"
    line("JIT on cache miss", jit)
    return 0


def _cmd_archive(ns) -> int:
    """``pack``: the cache (all arches, or ``--arch``) into one xz tarball, to ship prebuilt
    kernels to a deployed host; ``unpack``: extract such a tarball into the cache root.  Entries
    carry their own sha256, so a damaged entry is rejected (and rebuilt) when first used."""
    import tarfile

    from .jit.cache import default_cache_dir

    root = os.path.abspath(ns.cache_dir or default_cache_dir())
    if ns.cmd == "pack":
        arches = None if ns.arch is None else {a.strip() for a in ns.arch.split(",")}
        n = 0
        with tarfile.open(ns.archive, "w:xz", preset=6) as tar:
            for dirpath, _, files in sorted(os.walk(root)):
                rel = os.path.relpath(dirpath, root)
                parts = rel.split(os.sep)
                if arches is not None and (len(parts) < 2 or parts[1] not in arches):
                    continue
                for f in sorted(files):
                    if f.endswith(".bkc"):
                        tar.add(os.path.join(dirpath, f), arcname=os.path.join(rel, f))
                        n += 1
        print(f"packed {n} cached kernels from {root} into {ns.archive} "
              f"({os.path.getsize(ns.archive) / 2**20:.1f} MiB)")
        return 0 if n else 1
    os.makedirs(root, exist_ok=True)
    n = 0
    with tarfile.open(ns.archive, "r:*") as tar:
        members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(".bkc")
                   and not m.name.startswith(("/", "..")) and ".." not in m.name.split("/")]
        tar.extractall(root, members=members)
        n = len(members)
    print(f"unpacked {n} cached kernels into {root}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m baracuda_dsl",
                                description="baracuda-dsl: CuTe DSL kernels behind a Plan API")
    sub = p.add_subparsers(dest="cmd", required=True)
    pb = sub.add_parser("prebuild", help="compile kernel SKUs into the cache (no GPU needed)",
                        description="Compile every kernel SKU of the chosen op families for each "
                                    "arch into the cubin cache. Exit 1 if any SKU failed.")
    pb.add_argument("--arch", default="sm80,sm89,sm90a",
                    help="comma-separated arches (default: sm80,sm89,sm90a)")
    pb.add_argument("--ops", default=None, metavar="FAMILY,...",
                    help="comma-separated op families (default: all)")
    pb.add_argument("--jobs", "-j", type=int, default=None,
                    help="compiles running at once (default: CPU count)")
    pb.add_argument("--cache-dir", default=None, help="cache root (default: "
                                                      "$BARACUDA_DSL_CACHE_DIR or the user cache)")
    pb.add_argument("--list", action="store_true",
                    help="only list the SKUs and how many are cached, compile nothing")
    pb.add_argument("--verbose", "-v", action="store_true", help="with --list: one row per SKU")
    pb.add_argument("--prune", action="store_true",
                    help="first delete cached entries of the chosen families that no current SKU "
                         "maps to (kernel source changed, SKU left the space)")
    pi = sub.add_parser("info", help="versions, GPUs and the kernel cache")
    pi.add_argument("--cache-dir", default=None, help="cache root to describe")
    pk = sub.add_parser("pack", help="pack the kernel cache into an .tar.xz archive")
    pk.add_argument("archive")
    pk.add_argument("--arch", default=None, help="only these arches (comma-separated)")
    pk.add_argument("--cache-dir", default=None, help="cache root to pack")
    pu = sub.add_parser("unpack", help="unpack a kernel-cache archive into the cache root")
    pu.add_argument("archive")
    pu.add_argument("--cache-dir", default=None, help="cache root to fill")
    ns = p.parse_args(argv)
    if ns.cmd in ("pack", "unpack"):
        return _cmd_archive(ns)
    return _cmd_prebuild(ns) if ns.cmd == "prebuild" else _cmd_info(ns)


if __name__ == "__main__":
    sys.exit(main())
