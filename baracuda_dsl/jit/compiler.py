"""Compiling kernel SKUs with CuTe DSL, always in worker processes.

``CUTE_DSL_ARCH`` is read when ``cutlass`` is imported, so each target arch gets its own pool of
*spawned* workers whose environment is set before that import (with no GPU visible the DSL would
otherwise target sm_100a).  The parent process never imports the DSL: a host that only runs cached
kernels needs neither the DSL nor a compiler.

A worker imports the template's spec module (which registers it), instantiates the kernel
(``module.build(knobs)``), compiles it with ``cute.compile``,
takes the cubin, PTX and entry name from the compiled object, checks the entry's parameters
against the template's declared ABI and its ``.reqntid`` against the declared block size, and
returns ``(cubin, meta)``.
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import multiprocessing as mp
import os
import re
import shutil
import tempfile
import threading
import time
import traceback
from typing import Dict, Optional, Tuple, Union

from ..errors import CompileError
from ..vocabulary import ArchSku
from .template import KernelTemplate, Knobs, registered

_POOLS: Dict[Tuple[str, int], cf.ProcessPoolExecutor] = {}
_POOL_LOCK = threading.Lock()


def _worker_init(cute_arch: str) -> None:
    os.environ["CUTE_DSL_ARCH"] = cute_arch
    os.environ["CUTE_DSL_KEEP"] = "cubin,ptx"
    dump = tempfile.mkdtemp(prefix="baracuda-dsl-dump-")
    os.environ["CUTE_DSL_DUMP_DIR"] = dump
    # removed when the worker exits (multiprocessing runs its finalizers, not atexit, there)
    from multiprocessing import util

    util.Finalize(None, shutil.rmtree, args=(dump,), kwargs=dict(ignore_errors=True),
                  exitpriority=0)
    # The DSL's own file cache would hand back objects without artifacts; we cache ourselves.
    os.environ.setdefault("CUTE_DSL_DISABLE_FILE_CACHING", "1")


def _compile_in_worker(spec: str, template_name: str, knobs: Knobs,
                       arch: str) -> Tuple[bytes, Dict]:
    """Runs inside a worker: returns (cubin, meta) or raises CompileError with the DSL's message."""
    import hashlib
    import importlib

    from ..abi import check_abi, ptx_entry_params
    from .cache import installed_dsl_version
    from .template import template_for

    t = template_for(spec, template_name)
    src_hash = t.source_hash()  # of the source this worker imports (first use in the process)
    t0 = time.perf_counter()
    try:
        import cutlass.cute as cute

        mod = importlib.import_module(t.module)
        fn, args = mod.build(t.thaw(knobs))
        compiled = cute.compile(fn, *args)
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
        abi = t.abi(t.thaw(knobs))
        check_abi(abi, ptx_entry_params(ptx, entry))
    except ValueError as e:
        raise CompileError(f"{template_name}({knobs}): {e}") from None
    geom = t.geometry(t.thaw(knobs))
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


def _pool(arch: ArchSku, jobs: int) -> cf.ProcessPoolExecutor:
    key = (arch.value, jobs)
    with _POOL_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            pool = cf.ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn"),
                                          initializer=_worker_init, initargs=(arch.cute_arch,))
            _POOLS[key] = pool
        return pool


def submit(template: Union[KernelTemplate, str], knobs: Knobs, arch: ArchSku,
           jobs: int = 1) -> cf.Future:
    """Queue one compile on the arch's worker pool; the future yields (cubin, meta).
    ``template`` is a template or the name of one registered in this process."""
    t = template if isinstance(template, KernelTemplate) else registered(template)
    return _pool(arch, jobs).submit(_compile_in_worker, t.spec, t.name, knobs, arch.value)


def compile_sku(template: Union[KernelTemplate, str], knobs: Knobs, arch: ArchSku,
                timeout: Optional[float] = None) -> Tuple[bytes, Dict]:
    """Compile one SKU for ``arch`` in a (reused) worker process and wait for it."""
    return submit(template, knobs, arch, 1).result(timeout=timeout)


def shutdown(arch: Optional[ArchSku] = None, wait: bool = True) -> None:
    """Stop the worker pools of ``arch`` (every pool when None); prebuild frees each arch's
    workers once its SKUs are done."""
    with _POOL_LOCK:
        for key in [k for k in _POOLS if arch is None or k[0] == arch.value]:
            _POOLS.pop(key).shutdown(wait=wait, cancel_futures=True)


atexit.register(shutdown)
