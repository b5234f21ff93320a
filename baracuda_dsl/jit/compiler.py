"""Compiling kernel SKUs with CuTe DSL, always in compiler worker processes.

A worker is a child process running ``python -m baracuda_dsl.jit.worker`` (see
:mod:`.worker` for its protocol), started with ``subprocess`` rather than ``multiprocessing``:
it never re-imports the user's ``__main__`` (a script without an ``if __name__ ==
"__main__":`` guard, ``python - <<EOF`` or a notebook cell works) nor anything the user's program
had loaded (torch, jax).  ``CUTE_DSL_ARCH`` is read when ``cutlass`` is imported, so each arch has
its own :class:`WorkerPool`; its workers stay up (warm: the DSL import, about a second, is paid
once per worker) until :func:`shutdown`.  The calling process never imports the DSL: a host that
only runs cached kernels needs neither the DSL nor a compiler.

A worker that dies mid-compile (a crash in the compiler, a kill) fails that one compile with a
:class:`~baracuda_dsl.errors.CompileError` quoting the end of its stderr; the next compile
starts a fresh worker.
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import os
import queue
import subprocess
import sys
import tempfile
import threading
from typing import Dict, List, Optional, Tuple, Union

from ..errors import CompileError
from ..vocabulary import ArchSku
from .template import KernelTemplate, Knobs, registered
from .worker import read_frame, write_frame

#: bytes of a dead worker's stderr quoted in the error
STDERR_TAIL = 3000
#: the module a worker runs (``python -m``)
WORKER_MODULE = "baracuda_dsl.jit.worker"


class WorkerDied(CompileError):
    """A compiler worker exited before answering (crash, kill, or it could not start)."""


def _child_env(arch: ArchSku) -> Dict[str, str]:
    """The worker's environment: ours, its arch, and our import path (so it finds this package,
    out-of-tree template modules and nothing else first: no script folder in front)."""
    path = [p or os.getcwd() for p in sys.path]
    env = dict(os.environ)
    env["CUTE_DSL_ARCH"] = arch.cute_arch
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(path))
    env["PYTHONSAFEPATH"] = "1"          # 3.11+: no cwd / script folder prepended to sys.path
    return env


class _Worker:
    """One running compiler process for one arch."""

    def __init__(self, arch: ArchSku):
        self.arch = arch
        self.log = tempfile.TemporaryFile()           # its stderr, kept for error messages
        self.proc = subprocess.Popen(
            [sys.executable, "-m", WORKER_MODULE], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.log, env=_child_env(arch), close_fds=True)
        hello = self._read()
        if hello is None or hello[0] != "ready":
            msg = hello[1] if hello is not None else "it exited while starting"
            self.proc.wait()
            tail = self.stderr_tail()
            self.close()
            raise WorkerDied(f"compiler worker for {arch.value}: {msg}{tail}")

    def _read(self):
        try:
            return read_frame(self.proc.stdout)
        except (OSError, EOFError, ValueError):
            return None

    def stderr_tail(self) -> str:
        """The end of the worker's stderr, as a message suffix ('' when it wrote nothing)."""
        try:
            self.log.seek(0, os.SEEK_END)
            size = self.log.tell()
            self.log.seek(max(0, size - STDERR_TAIL))
            text = self.log.read().decode(errors="replace").strip()
        except (OSError, ValueError):
            return ""
        return f"\n--- compiler worker stderr (last {STDERR_TAIL} bytes) ---\n{text}" if text else ""

    def compile(self, spec: str, name: str, knobs: Knobs) -> Tuple[bytes, Dict]:
        """Compile one SKU; CompileError from the DSL, WorkerDied if the process went away."""
        try:
            write_frame(self.proc.stdin, ("compile", spec, name, knobs, self.arch.value))
        except (OSError, ValueError):
            reply = None
        else:
            reply = self._read()
        if reply is None:
            # the pipe's end can be seen before the process is reaped: give it a moment, so the
            # message names the exit status rather than None
            try:
                code = self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = self.proc.poll()
            raise WorkerDied(f"{name}({knobs}) for {self.arch.value}: the compiler worker exited "
                             f"(status {code}) while compiling{self.stderr_tail()}")
        try:                                           # keep only the next compile's stderr
            self.log.seek(0)
            self.log.truncate()
        except OSError:
            pass
        if reply[0] == "ok":
            return reply[1], reply[2]
        raise CompileError(reply[1])

    def close(self) -> None:
        """Ask the worker to exit; kill it if it does not within a few seconds."""
        try:
            if self.proc.poll() is None:
                write_frame(self.proc.stdin, ("exit",))
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            for s in (self.proc.stdin, self.proc.stdout):
                try:
                    s.close()
                except (OSError, ValueError):
                    pass
            self.log.close()


class WorkerPool:
    """Up to ``size`` warm compiler workers of one arch, fed from one queue; each worker is started
    on its first request and restarted after it dies."""

    def __init__(self, arch: ArchSku, size: int):
        self.arch = arch
        self.size = max(int(size), 1)
        self._queue: "queue.Queue" = queue.Queue()
        self._threads: List[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, spec: str, name: str, knobs: Knobs) -> cf.Future:
        """Queue one compile; the future yields ``(cubin, meta)``."""
        fut: cf.Future = cf.Future()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"the {self.arch.value} compiler pool is shut down")
            self._queue.put((fut, spec, name, knobs))
            if len(self._threads) < self.size:
                th = threading.Thread(target=self._serve, daemon=True,
                                      name=f"baracuda-dsl-compile-{self.arch.value}")
                th.start()
                self._threads.append(th)
        return fut

    def _serve(self) -> None:
        worker: Optional[_Worker] = None
        try:
            while True:
                item = self._queue.get()
                if item is None:
                    return
                fut, spec, name, knobs = item
                if not fut.set_running_or_notify_cancel():
                    continue
                try:
                    if worker is None:
                        worker = _Worker(self.arch)
                    fut.set_result(worker.compile(spec, name, knobs))
                except WorkerDied as e:
                    if worker is not None:
                        worker.close()
                    worker = None
                    fut.set_exception(e)
                except BaseException as e:  # noqa: BLE001 - handed to the caller
                    fut.set_exception(e)
        finally:
            if worker is not None:
                worker.close()

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        """Stop the workers (after the queued compiles, or cancelling them)."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        if cancel_futures:
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[0].cancel()
        for _ in threads:
            self._queue.put(None)
        if wait:
            for th in threads:
                th.join()


_POOLS: Dict[Tuple[str, int], WorkerPool] = {}
_POOL_LOCK = threading.Lock()


def _pool(arch: ArchSku, jobs: int) -> WorkerPool:
    key = (arch.value, jobs)
    with _POOL_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            pool = _POOLS[key] = WorkerPool(arch, jobs)
        return pool


def submit(template: Union[KernelTemplate, str], knobs: Knobs, arch: ArchSku,
           jobs: int = 1) -> cf.Future:
    """Queue one compile on the arch's worker pool; the future yields (cubin, meta).
    ``template`` is a template or the name of one registered in this process."""
    t = template if isinstance(template, KernelTemplate) else registered(template)
    return _pool(arch, jobs).submit(t.spec, t.name, knobs)


def compile_sku(template: Union[KernelTemplate, str], knobs: Knobs, arch: ArchSku,
                timeout: Optional[float] = None) -> Tuple[bytes, Dict]:
    """Compile one SKU for ``arch`` in a (reused) worker process and wait for it."""
    return submit(template, knobs, arch, 1).result(timeout=timeout)


def shutdown(arch: Optional[ArchSku] = None, wait: bool = True) -> None:
    """Stop the worker pools of ``arch`` (every pool when None), cancelling queued compiles;
    prebuild frees each arch's workers once its SKUs are done."""
    with _POOL_LOCK:
        pools = [_POOLS.pop(k) for k in [k for k in _POOLS if arch is None or k[0] == arch.value]]
    for p in pools:
        p.shutdown(wait=wait, cancel_futures=True)


atexit.register(shutdown)
