"""Compiling one kernel SKU with CuTe DSL — what a compiler worker (:mod:`.worker`) runs.

``compile_one`` imports the template's spec module (which registers it), instantiates the kernel
(``module.build(knobs)``), compiles it with ``cute.compile``, takes the cubin, PTX and entry name
from the compiled object, checks the entry's parameters against the template's declared ABI and
its ``.reqntid`` against the declared block size, and returns ``(cubin, meta)``.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib
import os
import re
import shutil
import tempfile
import time
import traceback
from typing import Dict, Tuple

from ..errors import CompileError
from .template import Knobs


DUMP_PREFIX = "baracuda-dsl-dump-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:          # exists, owned by someone else
        return True
    return True


def remove_stale_dumps(root: str | None = None) -> int:
    """Remove dump folders left by compiler workers that died without running their exit
    handler (killed, crashed): folders ``<prefix><pid>-*`` whose process is gone.  Returns the
    number removed."""
    root = root or tempfile.gettempdir()
    gone = 0
    try:
        names = os.listdir(root)
    except OSError:
        return 0
    for name in names:
        if not name.startswith(DUMP_PREFIX):
            continue
        pid = name[len(DUMP_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
            gone += 1
    return gone


def prepare_environment() -> None:
    """Set the DSL's environment before ``cutlass`` is imported: keep the cubin and PTX in a
    private dump folder (removed at exit; folders of workers that died without exiting are
    removed by the next worker) and turn the DSL's own file cache off (it would hand back
    objects without artifacts; this package caches by itself)."""
    os.environ["CUTE_DSL_KEEP"] = "cubin,ptx"
    remove_stale_dumps()
    dump = tempfile.mkdtemp(prefix=f"{DUMP_PREFIX}{os.getpid()}-")
    os.environ["CUTE_DSL_DUMP_DIR"] = dump
    atexit.register(shutil.rmtree, dump, ignore_errors=True)
    os.environ.setdefault("CUTE_DSL_DISABLE_FILE_CACHING", "1")


def compile_one(spec: str, template_name: str, knobs: Knobs, arch: str) -> Tuple[bytes, Dict]:
    """(cubin, meta) of one SKU, or CompileError with the DSL's message."""
    from ..abi import check_abi, ptx_entry_params
    from .cache import installed_dsl_version
    from .template import template_for

    t = template_for(spec, template_name)
    src_hash = t.source_hash()  # of the source this worker imports (first use in the process)
    t0 = time.perf_counter()
    try:
        import cutlass.cute as cute

        kn = t.thaw(knobs)
        mod = importlib.import_module(t.module)
        fn, args = mod.build(kn)
        # no host JIT engine: we never call the kernel through the DSL (byte-identical cubin and
        # PTX, measured; saves building the host module's execution engine)
        compiled = cute.compile(fn, *args, no_jit_engine=True)
        cubin = compiled.artifacts.CUBIN
        ptx = compiled.artifacts.PTX
        entries = list(compiled.kernel_info.keys())
    except Exception as e:  # the DSL raises many exception types; report them uniformly
        raise CompileError(f"{template_name}({knobs}) for {arch}: {type(e).__name__}: {e}\n"
                           f"{traceback.format_exc(limit=6)}") from None
    if not cubin or not ptx:
        raise CompileError(f"{template_name}: the DSL returned no cubin/PTX (CUTE_DSL_KEEP ignored?)")
    if len(entries) != 1:
        raise CompileError(f"{template_name}: expected one kernel per template, got {entries}")
    entry = entries[0]
    try:
        abi = t.abi(kn)
        check_abi(abi, ptx_entry_params(ptx, entry))
    except ValueError as e:
        raise CompileError(f"{template_name}({knobs}): {e}") from None
    geom = t.geometry(kn)
    m = re.search(r"\.entry\s+" + re.escape(entry) + r"\s*\(.*?\)\s*\.reqntid\s+(\d+)", ptx, re.S)
    if m is not None and int(m.group(1)) != geom.threads:
        raise CompileError(f"{template_name}({knobs}): kernel compiled for {m.group(1)} threads, "
                           f"template geometry says {geom.threads}")
    meta = {
        "entry": entry,
        "params": [[p.name, p.kind] for p in abi],
        "threads": geom.threads,
        "smem_bytes": geom.smem_bytes,
        "cluster": geom.cluster,
        "compile_seconds": round(time.perf_counter() - t0, 3),
        "source_hash": src_hash,
        "dsl_version": installed_dsl_version(),
        "ptx_sha256": hashlib.sha256(ptx.encode() if isinstance(ptx, str) else ptx).hexdigest(),
        "ptx_target": (re.search(r"\.target\s+(\S+)", ptx) or [None, None])[1],
    }
    return bytes(cubin), meta
