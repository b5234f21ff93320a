"""``launch_all --dry-run``: run the cases on a machine without a GPU.

The namespace allocates host memory (numpy buffers; host ↔ "device" copies are memmoves),
plans select for sm90a, and every kernel is a stand-in that packs its arguments with the SKU's
declared ABI (``abi.ArgPack``: a wrong argument count or type raises) and records the launch
(template, knobs, grid, cluster, shared memory).  The driver calls the few CUDA driver entry
points the plans use directly (memsets, synchronisation, events, the cluster occupancy query)
reach a stand-in too; the sm90a GEMM's TMA descriptors come from a fake encoder.  Kernels do
nothing, so results are not checked — a dry run validates each case's use of the public API
(descriptors, Args, plan selection, workspaces, argument packing) and the kernel coverage.

Patches the process it runs in for good: only for ``launch_all --dry-run``."""

from __future__ import annotations

import ctypes
import sys
import types

import numpy as np

_KEEP = []          # host buffers stay alive for the whole run


def _host_alloc(nbytes: int) -> int:
    a = np.zeros(int(nbytes) + 512, np.uint8)
    _KEEP.append(a)
    return (a.ctypes.data + 255) // 256 * 256


def _fill(ptr: int, pattern: bytes, count: int) -> None:
    n = count * len(pattern)
    if n:
        buf = (ctypes.c_char * n).from_address(ptr)
        np.frombuffer(buf, np.uint8)[:] = np.tile(np.frombuffer(pattern, np.uint8), count)


class _FakeBuffer:
    """Stands in for a cuda.core Buffer from the pool."""

    def __init__(self, nbytes):
        self.size = max(int(nbytes), 1)
        self.handle = _host_alloc(self.size)

    def close(self, stream=None):
        pass


class _FakeDriver(types.ModuleType):
    """The driver entry points the package calls directly; anything else raises (so a dry run
    says which call it cannot emulate)."""

    def __init__(self, real):
        super().__init__("cuda.bindings.driver")
        self._real = real

    def __getattr__(self, name):
        if name.startswith("cu") and not name.startswith("cuda"):
            raise RuntimeError(f"dry run: driver.{name} is not emulated")
        if self._real is None:
            raise AttributeError(name)
        return getattr(self._real, name)

    @staticmethod
    def cuInit(flags):
        return (0,)

    @staticmethod
    def cuDeviceGetCount():
        return (0, 1)

    @staticmethod
    def cuCtxSynchronize():
        return (0,)

    @staticmethod
    def cuStreamSynchronize(stream):
        return (0,)

    @staticmethod
    def cuMemsetD8Async(ptr, value, n, stream=0):
        _fill(int(ptr), bytes([int(value) & 0xFF]), int(n))
        return (0,)

    @staticmethod
    def cuMemsetD16Async(ptr, value, n, stream=0):
        _fill(int(ptr), int(value).to_bytes(2, "little"), int(n))
        return (0,)

    @staticmethod
    def cuMemsetD32Async(ptr, value, n, stream=0):
        _fill(int(ptr), int(value).to_bytes(4, "little"), int(n))
        return (0,)

    @staticmethod
    def cuMemcpyHtoD(dst, src, n):
        ctypes.memmove(int(dst), int(src), int(n))
        return (0,)

    @staticmethod
    def cuMemcpyDtoH(dst, src, n):
        ctypes.memmove(int(dst), int(src), int(n))
        return (0,)

    @staticmethod
    def cuEventCreate(flags):
        return (0, 1)

    @staticmethod
    def cuEventRecord(ev, stream):
        return (0,)

    @staticmethod
    def cuStreamWaitEvent(stream, ev, flags):
        return (0,)

    @staticmethod
    def cuEventDestroy(ev):
        return (0,)

    @staticmethod
    def cuKernelGetFunction(handle):
        return (1, None)           # not available: the cluster occupancy query falls back


class _FakeDevice:
    name = "dry-run (no GPU)"

    def set_current(self):
        pass

    def sync(self):
        pass


class _FakeKernel:
    """A loaded kernel that packs its arguments with the SKU's ABI and records the launch."""

    def __init__(self, art, ordinal, rec):
        from baracuda_dsl.abi import ArgPack, Param

        self.rec = rec
        self.artifact = art
        self.ordinal = ordinal
        self.handle = 0
        self.threads = art.threads
        self.smem = art.smem_bytes
        self.cluster = int(art.meta.get("cluster", 1))
        self._pack = ArgPack(tuple(Param(n, k) for n, k in art.meta["params"]))

    def launch(self, grid, args, stream=0):
        grid = tuple(int(g) for g in grid)
        if len(grid) != 3 or min(grid) < 1 or grid[0] % self.cluster:
            raise RuntimeError(f"dry run: bad grid {grid} for {self.artifact.meta['template']} "
                               f"(cluster {self.cluster})")
        self._pack.set(list(args))
        self.rec.add(self.artifact.meta["template"], self.artifact.meta["knobs"], grid, self.cluster,
                self.smem)

    def _cluster_config(self, grid, stream):
        return None


def install(rec) -> None:
    """Patch this process for a dry run (see the module docstring); the stand-in kernels report
    their launches to ``rec.add(template, knobs, grid, cluster, smem)``."""
    import array_api._device as D
    import baracuda_dsl.jit as J
    import baracuda_dsl.ops.gemm.gemm_sm90_launch as G
    import baracuda_dsl.runtime as R
    import baracuda_dsl.runtime.device as RD
    import baracuda_dsl.runtime.memory as RM
    import baracuda_dsl.runtime.module as RMod
    import baracuda_dsl.runtime.stream as RS
    from baracuda_dsl.abi import Artifact
    from baracuda_dsl.jit import knob_key
    from baracuda_dsl.ops.gemm.tensor_maps import TensorMapCache
    from baracuda_dsl.vocabulary import ArchSku

    # the CUDA driver entry points called directly
    try:
        import cuda.bindings as cb
        real = getattr(cb, "driver", None)
        if real is None:
            import cuda.bindings.driver as real
    except Exception:  # noqa: BLE001 - no cuda-bindings here: a bare stand-in
        cb, real = None, None
    fake = _FakeDriver(real)
    sys.modules["cuda.bindings.driver"] = fake
    if cb is not None:
        cb.driver = fake

    # devices: one sm90a device, 132 SMs, contexts need no binding
    dev = _FakeDevice()
    for mod in (RD, R):
        mod.has_gpu = lambda: True
        mod.device_count = lambda: 1
        mod.get_device = lambda ordinal=0: dev
        mod.sm_count = lambda ordinal=0: 132
        mod.device_name = lambda ordinal=0: dev.name
        mod.device_arch = lambda ordinal=0: ArchSku.SM90A
        mod.resolve_arch = (lambda override=None, ordinal=None: ArchSku.SM90A if override is None
                            else (override if isinstance(override, ArchSku)
                                  else ArchSku.parse(str(override))))
        mod.synchronize = lambda stream=None: None
    RD.bind_thread = lambda ordinal=0: dev
    RD.THREAD_STATE.current = 0
    RS.synchronize = lambda stream=None: None

    # memory: host buffers for the pool and the namespace
    RM.allocate = lambda nbytes, stream=None, ordinal=None: _FakeBuffer(nbytes)
    RM.as_core_stream = lambda stream, ordinal: None
    RM.memset_d8 = lambda ptr, value, nbytes, stream=0: _fill(int(ptr), bytes([value & 0xFF]),
                                                              int(nbytes))

    def allocate(nbytes, device):
        ptr = _host_alloc(max(int(nbytes), 1))
        return ptr, None

    D.allocate = allocate       # memset / htod / dtoh stay real: they reach the fake driver

    # kernels: the SKU's metadata from its template, a stand-in loaded kernel
    def artifact(t, knobs, arch, allow_jit=None):
        kn = t.thaw(knobs)
        g = t.geometry(kn)
        meta = {"entry": f"dry_{t.name}", "params": [[p.name, p.kind] for p in t.abi(kn)],
                "threads": g.threads, "smem_bytes": g.smem_bytes, "cluster": g.cluster,
                "template": t.name, "knobs": knob_key(knobs), "arch": getattr(arch, "value", arch)}
        return Artifact(b"", meta)

    J.artifact = artifact
    RMod.load = lambda art, ordinal, key: _FakeKernel(art, ordinal, rec)

    # the sm90a GEMM's TMA descriptors: the base address at byte 0, then layout bytes
    def encode(layout, address):
        body = (repr(layout).encode() * 8)[:120].ljust(120, b"\0")
        return int(address).to_bytes(8, "little") + body

    G.TENSOR_MAPS = TensorMapCache(encode=encode)
