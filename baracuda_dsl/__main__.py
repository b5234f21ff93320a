"""Command line (``baracuda-dsl`` or ``python -m baracuda_dsl``; ``--version``).

``prebuild [--arch native|sm80,sm89,sm90a] [--set core|all] [--ops FAMILY,...]
[--templates NAME,...] [--dtypes bf16,...] [--shard K/N] [--jobs N] [--cache-dir DIR]
[--list [-v]] [--prune]``
    compile the selected kernel SKUs for each arch into the cubin cache (no GPU needed: CuTe DSL
    cross-compiles).  Default arch: ``native`` (the visible GPUs' arches) on a GPU host, all
    three elsewhere; default set: ``core`` (see :mod:`baracuda_dsl.jit.tiers`).  ``--list`` /
    ``-v`` only show the SKUs and what is cached.
    Exit status: 0 all built, 1 some SKU failed, 2 bad arguments / no CuTe DSL.

``info [--cache-dir DIR]``
    versions, visible GPUs and their arch SKU, the cache and what it holds (current entries and
    stale ones: another DSL version or older kernel sources), whether JIT is on.

``pack ARCHIVE [--arch A,...]`` / ``unpack ARCHIVE``
    ship a prebuilt cache as one .tar.xz; unpack keeps the entries this install can use and says
    what it skipped.

``wheel --arch ARCH [--out DIR]``
    the cache of one arch as an installable wheel (``baracuda-dsl-kernels-<arch>``).
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


ALL_ARCHES = "sm80,sm89,sm90a"


def _native_arches():
    """The arch SKUs of the visible GPUs (empty without a GPU)."""
    from .runtime import device_arch, device_count

    try:
        n = device_count()
    except Exception:  # noqa: BLE001 - no driver: no GPU
        return []
    return list(dict.fromkeys(device_arch(i) for i in range(n)))


def _parse_arches(text: str):
    """Arch SKUs from ``sm80,sm90a`` or ``native``; UnsupportedError for an unknown name."""
    from .errors import UnsupportedError
    from .vocabulary import ArchSku

    arches = []
    for a in text.split(","):
        a = a.strip()
        if a == "native":
            native = _native_arches()
            if not native:
                raise UnsupportedError("--arch native: no CUDA GPU is visible here; name the "
                                       f"arches instead (e.g. --arch {ALL_ARCHES})")
            arches += [x for x in native if x not in arches]
        elif a:
            sku = ArchSku.parse(a)
            if sku not in arches:
                arches.append(sku)
    return arches


def _parse_list(text):
    return None if text is None else list(dict.fromkeys(x.strip() for x in text.split(",")
                                                        if x.strip()))


def _parse_shard(text: str):
    """``K/N`` -> (K, N) with 1 <= K <= N; ValueError otherwise."""
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard {text!r}: expected K/N, e.g. 1/4") from None
    if not (n >= 1 and 1 <= k <= n):
        raise ValueError(f"--shard {text}: need 1 <= K <= N")
    return k, n


def _cmd_prebuild(ns) -> int:
    from rich.table import Table

    from .errors import UnsupportedError
    from .jit import KernelCache, installed_dsl_version, knob_key
    from .jit.prebuild import Selection, plan_jobs, prebuild
    from .ops import all_families, all_templates

    out, err = _consoles()

    def fail(msg):
        err.print(f"[red]error:[/] {msg}", highlight=False)
        return 2

    arch_text = ns.arch
    if arch_text is None:
        arch_text = "native" if _native_arches() else ALL_ARCHES
    try:
        arches = _parse_arches(arch_text)
    except UnsupportedError as e:
        return fail(e)
    if not arches:
        return fail("--arch names no arch")
    fams = None
    if ns.ops:
        fams = _parse_list(ns.ops)
        unknown = [f for f in fams if f not in all_families()]
        if unknown or not fams:
            return fail(f"unknown op famil{'y' if len(unknown) == 1 else 'ies'} "
                        f"{', '.join(unknown) or repr(ns.ops)}; known: {', '.join(all_families())}")
    if ns.jobs is not None and ns.jobs < 1:
        return fail(f"--jobs must be >= 1, got {ns.jobs}")
    templates = all_templates(fams)
    if ns.templates is not None:
        names = _parse_list(ns.templates)
        unknown = [n for n in names if n not in {t.name for t in templates}]
        if unknown or not names:
            return fail(f"unknown template(s) {', '.join(unknown) or repr(ns.templates)}"
                        f"{' in ' + ','.join(fams) if fams else ''}; known: "
                        f"{', '.join(t.name for t in templates)}")
        templates = [t for t in templates if t.name in names]
    try:
        k, n = _parse_shard(ns.shard)
        dts = _parse_list(ns.dtypes)
        selection = Selection(ns.set, None if dts is None else frozenset(dts), k, n)
    except ValueError as e:
        return fail(e)
    cache = KernelCache(ns.cache_dir)
    if ns.prune:
        n = cache.prune(all_templates(fams))
        err.print(f"prebuild: pruned {n} stale cache entr{'y' if n == 1 else 'ies'}",
                  highlight=False)

    if ns.list or ns.verbose:
        table = Table(title=f"kernel SKUs (cached in {cache.root})")
        table.add_column("family")
        table.add_column("template")
        if ns.verbose:
            table.add_column("SKU knobs")
        for a in arches:
            table.add_column(f"{a.value} cached", justify="right")
        jobs_by = {}
        for j in plan_jobs(templates, arches, cache, selection):
            jobs_by.setdefault((j.template.name, j.arch), []).append(j)
        total = 0
        for t in templates:
            if ns.verbose:
                every = list(dict.fromkeys(j.knobs for a in arches
                                           for j in jobs_by.get((t.name, a), ())))
                cached = {a: {j.knobs: j.cached for j in jobs_by.get((t.name, a), ())}
                          for a in arches}
                for k in every:
                    cells = ["-" if k not in cached[a] else ("yes" if cached[a][k] else "no")
                             for a in arches]
                    table.add_row(t.family, t.name, knob_key(k), *cells)
            else:
                cells = []
                for a in arches:
                    js = jobs_by.get((t.name, a), ())
                    cells.append(f"{sum(j.cached for j in js)}/{len(js)}")
                if any(jobs_by.get((t.name, a)) for a in arches):
                    table.add_row(t.family, t.name, *cells)
            total += sum(len(jobs_by.get((t.name, a), ())) for a in arches)
        out.print(table)
        out.print(f"{total} SKU builds over {', '.join(a.value for a in arches)} "
                  f"({_describe(selection)})", highlight=False)
        return 0

    if installed_dsl_version() is None:
        err.print("[red]error:[/] prebuild needs CuTe DSL (pip install nvidia-cutlass-dsl); "
                  "this host can only run kernels that are already cached", highlight=False)
        return 2
    jobs = ns.jobs or os.cpu_count() or 1
    work = plan_jobs(templates, arches, cache, selection)
    todo = sum(not j.cached for j in work)
    err.print(f"prebuild: {len(work)} SKUs ({_describe(selection)}) over "
              f"{', '.join(a.value for a in arches)}, {len(work) - todo} already cached, {todo} to "
              f"compile with {jobs} worker(s) into {cache.root}", highlight=False)
    t0 = time.perf_counter()
    try:
        tally = prebuild(templates, arches, jobs, cache, err, selection)
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


def _describe(sel) -> str:
    """One phrase for a prebuild selection: 'core set', 'all SKUs, dtypes bf16, shard 1/4'."""
    parts = ["core set (the rest compiles on first use)" if sel.which == "core" else "all SKUs"]
    if sel.dtypes is not None:
        parts.append("dtypes " + ",".join(sorted(sel.dtypes)))
    if sel.count > 1:
        parts.append(f"shard {sel.index}/{sel.count}")
    return ", ".join(parts)


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
    from .jit.inventory import inventory
    from .jit.tiers import select

    inv = inventory(cache.root, all_templates())
    for a in ArchSku:
        c = inv.get(a.value, {})
        n_all = sum(len(t.skus(a.value)) for t in all_templates())
        n_core = sum(len(select(t, t.skus(a.value), a.value)) for t in all_templates())
        text = f"{c.get('current', 0)} current (of {n_all} SKUs, {n_core} in the core set)"
        stale = {k: c.get(k, 0) for k in ("other-dsl", "stale", "unknown") if c.get(k)}
        if stale:
            text += "; not usable here: " + ", ".join(
                f"{v} {'built by another DSL version' if k == 'other-dsl' else k}"
                for k, v in stale.items()) + " (prebuild --prune removes stale ones)"
        line(f"cached {a.value}", text)
    for a, c in sorted(inv.items()):
        if a not in {x.value for x in ArchSku}:
            line(f"cached {a}", f"{sum(c.values())} entries of an unknown arch")
    roots = getattr(cache, "readonly_roots", None)
    for r in (roots() if callable(roots) else roots or ()):
        line("kernel package", r)
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
    kernels to a deployed host; ``unpack``: extract such a tarball into the cache root, keeping
    only the entries this install can use (see :mod:`baracuda_dsl.jit.inventory`) unless
    ``--all``.  Entries carry their own sha256, so a damaged one is rejected (and rebuilt) when
    first used."""
    import tarfile
    from collections import Counter

    from .jit.cache import atomic_file, default_cache_dir, entries, installed_dsl_version
    from .jit.inventory import LiveNames, classify
    from .ops import all_templates

    _, err = _consoles()
    root = os.path.abspath(ns.cache_dir or default_cache_dir())
    if ns.cmd == "pack":
        arches = None if ns.arch is None else set(_parse_list(ns.arch))
        files = [(path, rel) for path, rel, arch in entries(root)
                 if arches is None or arch in arches]
        if not files:
            err.print(f"[red]error:[/] no cached kernels{' for ' + ','.join(sorted(arches)) if arches else ''}"
                      f" in {root}: nothing to pack (run prebuild first); no archive written",
                      highlight=False)
            return 1
        with atomic_file(ns.archive) as f, tarfile.open(fileobj=f, mode="w:xz", preset=6) as tar:
            for path, arc in files:
                tar.add(path, arcname=arc)
        print(f"packed {len(files)} cached kernels from {root} into {ns.archive} "
              f"({os.path.getsize(ns.archive) / 2**20:.1f} MiB)")
        return 0
    if not os.path.isfile(ns.archive):
        err.print(f"[red]error:[/] no such archive: {ns.archive}", highlight=False)
        return 2
    try:
        tar = tarfile.open(ns.archive, "r:*")
    except (tarfile.TarError, OSError) as e:
        err.print(f"[red]error:[/] {ns.archive} is not a kernel-cache archive ({e})",
                  highlight=False)
        return 2
    live, ver = LiveNames(all_templates()), installed_dsl_version()
    kinds: Counter = Counter()
    keep = []
    with tar:
        for m in tar.getmembers():
            if not (m.isfile() and m.name.endswith(".bkc")) or m.name.startswith(("/", "..")) \
                    or ".." in m.name.split("/"):
                continue
            kind = classify(m.name, live, ver)
            kinds[kind] += 1
            if kind == "current" or ns.all:
                keep.append(m)
        os.makedirs(root, exist_ok=True)
        tar.extractall(root, members=keep)
    print(f"unpacked {len(keep)} cached kernels into {root}")
    skipped = {k: v for k, v in kinds.items() if k != "current"}
    if skipped:
        why = {"other-dsl": f"built by another CuTe DSL version than the installed {ver}",
               "stale": "built from other kernel sources than this install's (or SKUs it no "
                        "longer has)",
               "unknown": "of templates this install does not have"}
        for k, v in skipped.items():
            err.print(f"unpack: {v} entr{'y' if v == 1 else 'ies'} {why[k]}"
                      f"{' (unpacked anyway: --all)' if ns.all else ' skipped'}", highlight=False)
    if not kinds:
        err.print(f"[red]error:[/] {ns.archive} holds no cached kernels", highlight=False)
        return 1
    if not kinds.get("current"):
        err.print("[red]error:[/] nothing in the archive is usable by this install "
                  "(rebuild it with this version: python -m baracuda_dsl prebuild, then pack)",
                  highlight=False)
        return 1
    return 0


def _cmd_wheel(ns) -> int:
    """``wheel``: the cache of one arch as an installable wheel of prebuilt kernels."""
    from .errors import BaracudaError
    from .jit.cache import default_cache_dir
    from .jit.kernel_wheel import build_kernel_wheel
    from .ops import all_templates

    _, err = _consoles()
    try:
        (arch,) = [a.value for a in _parse_arches(ns.arch)]
    except ValueError:
        err.print("[red]error:[/] wheel takes exactly one arch (one wheel per arch)",
                  highlight=False)
        return 2
    except BaracudaError as e:
        err.print(f"[red]error:[/] {e}", highlight=False)
        return 2
    root = os.path.abspath(ns.cache_dir or default_cache_dir())
    try:
        path = build_kernel_wheel(root, arch, ns.out, templates=all_templates(), console=err)
    except (BaracudaError, ValueError, OSError) as e:
        err.print(f"[red]error:[/] {e}", highlight=False)
        return 1
    print(f"wrote {path} ({os.path.getsize(path) / 2**20:.1f} MiB); install it with "
          f"pip install {path}")
    return 0


def _prog() -> str:
    """How the user invoked us, for the usage line."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "baracuda-dsl" if name.startswith("baracuda-dsl") else "python -m baracuda_dsl"


def main(argv=None) -> int:
    from ._version import __version__

    p = argparse.ArgumentParser(prog=_prog(),
                                description="baracuda-dsl: CuTe DSL kernels behind a Plan API")
    p.add_argument("--version", action="version", version=f"baracuda-dsl {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    pb = sub.add_parser("prebuild", help="compile kernel SKUs into the cache (no GPU needed)",
                        description="Compile the selected kernel SKUs for each arch into the "
                                    "cubin cache. Exit 1 if any SKU failed.")
    pb.add_argument("--arch", default=None,
                    help=f"comma-separated arches, or native (default: native on a GPU host, "
                         f"else {ALL_ARCHES})")
    pb.add_argument("--set", default="core", choices=("core", "all"),
                    help="core: the SKUs ML models use (default; the rest compiles on first "
                         "use); all: every SKU")
    pb.add_argument("--ops", default=None, metavar="FAMILY,...",
                    help="comma-separated op families (default: all)")
    pb.add_argument("--templates", default=None, metavar="NAME,...",
                    help="only these kernel templates (names as in --list)")
    pb.add_argument("--dtypes", default=None, metavar="DTYPE,...",
                    help="only SKUs whose data dtypes are all among these (bf16,f16,f32,...)")
    pb.add_argument("--shard", default="1/1", metavar="K/N",
                    help="build part K of N (N machines build disjoint parts; pack / unpack "
                         "merge them)")
    pb.add_argument("--jobs", "-j", type=int, default=None,
                    help="compiles running at once (default: CPU count)")
    pb.add_argument("--cache-dir", default=None, help="cache root (default: "
                                                      "$BARACUDA_DSL_CACHE_DIR or the user cache)")
    pb.add_argument("--list", action="store_true",
                    help="only list the SKUs and how many are cached, compile nothing")
    pb.add_argument("--verbose", "-v", action="store_true",
                    help="list one row per SKU (implies --list)")
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
    pu.add_argument("--all", action="store_true",
                    help="also unpack entries this install cannot use (other DSL version, "
                         "other kernel sources)")
    pw = sub.add_parser("wheel", help="build an installable wheel of one arch's prebuilt kernels")
    pw.add_argument("--arch", required=True, help="the arch (sm80, sm89, sm90a or native)")
    pw.add_argument("--out", default="dist", help="output folder (default: dist)")
    pw.add_argument("--cache-dir", default=None, help="cache root to take the kernels from")
    ns = p.parse_args(argv)
    if ns.cmd in ("pack", "unpack"):
        return _cmd_archive(ns)
    if ns.cmd == "wheel":
        return _cmd_wheel(ns)
    return _cmd_prebuild(ns) if ns.cmd == "prebuild" else _cmd_info(ns)


if __name__ == "__main__":
    sys.exit(main())
