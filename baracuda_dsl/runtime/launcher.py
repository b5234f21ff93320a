"""Pre-packed kernel launches: the cache-hit path of launch records.

A :class:`KernelCall` is one launch of a loaded kernel with everything fixed except a few
parameter slots (pointers, scalar operands): kernel handle, grid, block, dynamic shared memory and
the packed parameter buffer are built once; ``call(stream, *values)`` writes the values into
their slots and launches.  Two implementations, same interface:

* compiled (``_launch_ext``, a small C extension built by ``setup.py``): copies the buffer to the
  stack, writes the values, calls ``cuLaunchKernel`` directly;
* pure Python (the fallback where the extension is not built or libcuda is not loadable): a
  per-thread copy of the buffer, one ``struct.pack_into`` for the slots, ``cuLaunchKernel``
  through cuda.bindings.

``BARACUDA_DSL_LAUNCH=python`` forces the pure-Python path; :func:`implementation` says which
one is active and :func:`use_implementation` switches (benchmarks compare both).  Kernels launched with thread-block clusters
always take the Python path (``cuLaunchKernelEx``).
"""

from __future__ import annotations

import ctypes
import os
import struct
import threading
from typing import Sequence, Tuple

from ..abi import ArgPack, Param
from ..errors import DriverError
from .device import THREAD_STATE, bind_thread

#: the patch kind of each scalar parameter kind
PATCH_KIND = {"ptr": "Q", "i64": "q", "i32": "i", "f32": "f", "f64": "d"}


def _load_ext():
    if os.environ.get("BARACUDA_DSL_LAUNCH", "").lower() == "python":
        return None
    try:
        from ._launch_ext import Call
    except ImportError:
        return None
    return Call


_EXT = _load_ext()
_COMPILED = _EXT


def implementation() -> str:
    """"compiled" (the C extension) or "python" (cuda.bindings): what new KernelCalls use."""
    return "compiled" if _EXT is not None else "python"


def use_implementation(name: str) -> str:
    """Make new KernelCalls use ``name`` ("compiled" or "python"; benchmarks compare them);
    returns the previous one.  UnsupportedError for "compiled" when the extension is not built."""
    global _EXT
    old = implementation()
    if name == "python":
        _EXT = None
    elif name == "compiled":
        if _COMPILED is None:
            from ..errors import UnsupportedError

            raise UnsupportedError("the compiled launch path (runtime/_launch_ext) is not built "
                                   "or libcuda is not loadable; wired: python")
        _EXT = _COMPILED
    else:
        raise ValueError(f"unknown launch implementation {name!r}; wired: compiled, python")
    return old


def layout(abi: Sequence[Param]) -> Tuple[Tuple[int, ...], ArgPack]:
    """(byte offset of each parameter's slot, an ArgPack of that layout) for ``abi``."""
    pack = ArgPack(abi)
    base = ctypes.addressof(pack._cbuf) + pack._base
    return tuple(a - base for a in pack._array[:len(abi)]), pack


class KernelCall:
    """One launch of ``kernel`` (a runtime.module.LoadedKernel) on ``grid`` with the parameter
    ``values`` (ABI order), of which the ``patches`` — (byte offset in the parameter buffer,
    kind: ``Q`` u64 / pointer, ``q`` i64, ``i`` i32, ``f`` f32, ``d`` f64) — are given anew on
    each call: ``call(stream, *patch_values)``.  :func:`layout` gives the slot offsets (a TMA
    descriptor's base address is a ``Q`` patch inside its 128-byte slot)."""

    __slots__ = ("kernel", "grid", "patches", "_ordinal", "_impl", "_local", "_tmpl",
                 "_patch_fmt", "_handle", "_threads", "_smem")

    def __init__(self, kernel, grid: Tuple[int, int, int], values: Sequence,
                 patches: Sequence[Tuple[int, str]]):
        abi = tuple(Param(n, k) for n, k in kernel.artifact.meta["params"])
        self.kernel, self.grid = kernel, tuple(grid)
        self.patches = tuple(patches)
        self._ordinal = kernel.ordinal
        offs, pack = layout(abi)
        pack.set(values)
        size = len(pack._buf) - pack._base
        self._tmpl = bytes(pack._buf[pack._base:pack._base + size])
        kinds = "".join(k for _o, k in self.patches)
        self._impl = None
        if _EXT is not None and kernel.cluster == 1:
            self._impl = _EXT(int(kernel.handle), self.grid, kernel.threads, kernel.smem,
                                   self._tmpl, offs, tuple(o for o, _k in self.patches), kinds)
        # the pure-Python path: one Struct per run of adjacent slots (a Struct's pad bytes
        # would overwrite the fixed values between runs)
        order = sorted(range(len(self.patches)), key=lambda j: self.patches[j][0])
        runs, pos = [], None
        for j in order:
            o, kind = self.patches[j]
            if pos is not None and o < pos:
                raise ValueError(f"overlapping launch patches {self.patches}")
            if pos is None or o > pos:
                runs.append([o, "<", []])
            run = runs[-1]
            run[1] += kind
            run[2].append(j)
            pos = o + struct.calcsize("<" + kind)
        self._patch_fmt = tuple((o, struct.Struct(fmt), tuple(js)) for o, fmt, js in runs)
        self._local = threading.local()
        self._handle = kernel.handle
        self._threads, self._smem = kernel.threads, kernel.smem

    def __call__(self, stream: int, *values) -> None:
        if getattr(THREAD_STATE, "current", None) != self._ordinal:
            bind_thread(self._ordinal)
        impl = self._impl
        if impl is not None:
            err = impl.launch(stream, *values)
            if err:
                raise DriverError(f"cuLaunchKernel({self.kernel.artifact.meta.get('template')})",
                                  err)
            return
        self._launch_python(stream, values)

    def _launch_python(self, stream: int, values) -> None:
        loc = self._local
        buf = getattr(loc, "buf", None)
        if buf is None:
            buf = self._thread_buffer()
        for at, st, order in self._patch_fmt:
            st.pack_into(buf[0], at, *[values[j] for j in order])
        k = self.kernel
        if k.cluster == 1:
            (err,) = k._launch(self._handle, self.grid[0], self.grid[1], self.grid[2],
                               self._threads, 1, 1, self._smem, stream, buf[1], 0)
        else:
            cfg = k._cluster_config(self.grid, stream)
            (err,) = k._launch_ex(cfg, self._handle, buf[1], 0)
        if err:
            raise DriverError(f"cuLaunchKernel({k.artifact.meta.get('template')})", err)

    def _thread_buffer(self):
        """This thread's (parameter buffer, void** address), made from the template once."""
        abi = tuple(Param(n, k) for n, k in self.kernel.artifact.meta["params"])
        _offs, pack = layout(abi)
        # the parameter bytes only: this pack's alignment offset (``_base``) may differ from
        # the template's, so the template's trailing slack may not fit after it
        n = pack._fmt.size
        pack._buf[pack._base:pack._base + n] = self._tmpl[:n]
        buf = self._local.buf = (memoryview(pack._buf)[pack._base:], pack.address, pack)
        return buf
