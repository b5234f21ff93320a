"""Loading cached cubins and launching their kernels.

A cubin is loaded once per (device, artifact) with ``cuda.core.ObjectCode.from_cubin`` and its
entry fetched with ``get_kernel``.  Launches go through ``cuLaunchKernel`` (cuda.bindings) with a
pre-packed ``void*[]`` (:class:`~baracuda_dsl.abi.ArgPack`): the design measured fastest on the
H100 (ARCHITECTURE.md has the figures).  Kernels needing more than 48 KiB of dynamic shared memory
get their limit raised once at load.
"""

from __future__ import annotations

import threading
from typing import Dict, Sequence, Tuple

from ..abi import ArgPack, Artifact, Param
from ..errors import DriverError
from .device import THREAD_STATE, bind_thread, cuda_core, get_device
from .trace import STATE as TRACE_STATE


class LoadedKernel:
    """A kernel entry resident on one device, ready to launch."""

    __slots__ = ("artifact", "kernel", "handle", "threads", "smem", "cluster", "ordinal", "_pack",
                 "_launch", "_launch_ex", "_local")

    def __init__(self, artifact: Artifact, ordinal: int):
        from cuda.bindings import driver

        get_device(ordinal)
        self.ordinal = ordinal
        obj = cuda_core().ObjectCode.from_cubin(artifact.cubin,
                                                name=artifact.meta.get("template", ""))
        self.kernel = obj.get_kernel(artifact.entry)
        self.artifact = artifact
        self.handle = self.kernel.handle
        self.threads = artifact.threads
        self.smem = artifact.smem_bytes
        self.cluster = int(artifact.meta.get("cluster", 1))
        if self.smem > 48 * 1024:
            err, func = driver.cuKernelGetFunction(self.handle)
            _check("cuKernelGetFunction", err)
            (err,) = driver.cuFuncSetAttribute(
                func, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                self.smem)
            _check("cuFuncSetAttribute", err)
        abi = tuple(Param(n, k) for n, k in artifact.meta["params"])
        self._local = threading.local()
        self._local.pack = ArgPack(abi)
        self._pack = abi
        self._launch = driver.cuLaunchKernel
        self._launch_ex = driver.cuLaunchKernelEx

    def _argpack(self) -> ArgPack:
        p = getattr(self._local, "pack", None)
        if p is None:
            p = self._local.pack = ArgPack(self._pack)
        return p

    def launch(self, grid: Tuple[int, int, int], args: Sequence, stream: int = 0) -> None:
        """Launch on ``stream`` (raw handle) with ``grid`` blocks and the compiled block size;
        SKUs compiled for thread-block clusters go through ``cuLaunchKernelEx`` with the cluster
        dimension attribute (``grid[0]`` must be a multiple of the cluster size)."""
        if getattr(THREAD_STATE, "current", None) != self.ordinal:
            bind_thread(self.ordinal)               # first launch from this thread
        tr = TRACE_STATE.tracer
        if tr is not None:
            tr.launch(self, grid, args, stream)
        addr = self._argpack().set(args)
        if self.cluster == 1:
            (err,) = self._launch(self.handle, grid[0], grid[1], grid[2], self.threads, 1, 1,
                                  self.smem, stream, addr, 0)
        else:
            cfg = self._cluster_config(grid, stream)
            (err,) = self._launch_ex(cfg, self.handle, addr, 0)
        if err:
            raise DriverError(f"cuLaunchKernel({self.artifact.meta.get('template')})", err)

    def _cluster_config(self, grid, stream: int):
        from cuda.bindings import driver

        cfg = getattr(self._local, "cfg", None)
        if cfg is None:
            cfg = driver.CUlaunchConfig()
            attr = driver.CUlaunchAttribute()
            attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            attr.value.clusterDim.x = self.cluster
            attr.value.clusterDim.y = 1
            attr.value.clusterDim.z = 1
            cfg.attrs = [attr]
            cfg.numAttrs = 1
            cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = self.threads, 1, 1
            cfg.sharedMemBytes = self.smem
            self._local.cfg = cfg
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
        cfg.hStream = driver.CUstream(stream)
        return cfg


def _check(call: str, err) -> None:
    if int(err) != 0:
        raise DriverError(call, err)


_LOADED: Dict[Tuple[int, str], LoadedKernel] = {}
_LOCK = threading.Lock()


def load(artifact: Artifact, ordinal: int, key: str) -> LoadedKernel:
    """The artifact's kernel on ``ordinal``, loaded on first use and cached for the process."""
    k = (ordinal, key)
    lk = _LOADED.get(k)
    if lk is None:
        with _LOCK:
            lk = _LOADED.get(k)
            if lk is None:
                lk = _LOADED[k] = LoadedKernel(artifact, ordinal)
    return lk
