"""DLPack: export of device arrays (``DLManagedTensor`` / ``DLManagedTensorVersioned`` capsules
built with ctypes), host-copy export for ``dl_device=(kDLCPU, 0)`` requests, and reading host
(kDLCPU) producers into numpy for ``from_dlpack`` / ``asarray``.

The managed struct, its shape/stride arrays and a reference to the exported Array live in a
module table keyed by the struct's address; the deleter (called by the consumer, or by the capsule
destructor when nobody consumed it) drops that entry.
"""

from __future__ import annotations

import ctypes
import logging

import numpy as np

from baracuda_dsl.dlpack import (CAPSULE_NAME, CAPSULE_NAME_VERSIONED, KDL_CPU, KDL_CUDA,
                                  KDL_CUDA_HOST, DLDataType, DLDevice, DLManagedTensor,
                                  DLManagedTensorVersioned, DLPackVersion, capsule_tensor)
from baracuda_dsl.dtypes import DType, from_dlpack_code
from baracuda_dsl.tensor import contiguous_strides

_DELETER_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

_LIVE: dict = {}


@_DELETER_T
def _deleter(addr):
    """Release one export.  Runs inside the consumer's C code (any thread), so it never raises:
    a failure while dropping the exported Array is reported on the ``baracuda_dsl`` logger."""
    try:
        entry = _LIVE.pop(addr, None)
        del entry                       # the exported Array may free its memory here
    except BaseException as e:          # noqa: BLE001 - nothing may escape a C callback
        try:
            logging.getLogger("baracuda_dsl").warning(
                "DLPack deleter: releasing an export failed: %s: %s", type(e).__name__, e)
        except BaseException:           # noqa: BLE001 - interpreter shutdown
            pass


_DELETER_ADDR = ctypes.cast(_deleter, ctypes.c_void_p).value

# the capsule calls on a raw ``PyObject *`` (what a capsule destructor receives)
_IsValid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_GetPointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_CapsuleNew = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))


@ctypes.PYFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(cap):
    # an unconsumed capsule still carries its original name: release the export
    for name in (CAPSULE_NAME, CAPSULE_NAME_VERSIONED):
        if _IsValid(cap, name):
            addr = _GetPointer(cap, name)
            _LIVE.pop(addr, None)
            return


_DTOR_ADDR = ctypes.cast(_capsule_destructor, ctypes.c_void_p).value


def export(ptr: int, shape, strides, dtype, ordinal: int, owner, versioned: bool,
           copied: bool = False, device_type: int = KDL_CUDA):
    """A DLPack capsule over memory ``ptr`` (shape / strides in elements) on DLPack device
    ``(device_type, ordinal)`` (CUDA by default); ``owner`` is kept alive until the consumer
    calls the deleter."""
    ndim = len(shape)
    shp = (ctypes.c_int64 * max(ndim, 1))(*shape)
    st = (ctypes.c_int64 * max(ndim, 1))(*strides)
    m = DLManagedTensorVersioned() if versioned else DLManagedTensor()
    t = m.dl_tensor
    t.data = ptr
    t.device = DLDevice(device_type, ordinal)
    t.ndim = ndim
    t.dtype = DLDataType(dtype.dlpack[0], dtype.dlpack[1], 1)
    t.shape = ctypes.cast(shp, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(st, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = 0
    m.manager_ctx = None
    m.deleter = _DELETER_ADDR
    if versioned:
        m.version = DLPackVersion(1, 0)
        m.flags = 2 if copied else 0  # DLPACK_FLAG_BITMASK_IS_COPIED
    addr = ctypes.addressof(m)
    _LIVE[addr] = (m, shp, st, owner)
    name = CAPSULE_NAME_VERSIONED if versioned else CAPSULE_NAME
    return _CapsuleNew(addr, name, _DTOR_ADDR)


def export_host(arr, versioned: bool, copy):
    """Serve a ``__dlpack__(dl_device=(kDLCPU, 0))`` request: copy ``arr`` to a dense host
    buffer (its raw storage, so bfloat16 / fp8 keep their DLPack codes) and export that buffer
    as a kDLCPU capsule flagged as copied.  ``copy=False`` raises BufferError: moving device
    memory to the host always copies."""
    if copy is False:
        raise BufferError("__dlpack__: exporting a CUDA array to the host (kDLCPU) needs a copy "
                          "(copy=False given)")
    host = np.ascontiguousarray(arr.to_numpy(raw=True))
    return export(host.ctypes.data, host.shape, contiguous_strides(host.shape), arr.dtype, 0,
                  host, versioned, True, KDL_CPU)


def host_array(obj) -> "tuple[np.ndarray, DType]":
    """(numpy copy of the raw storage, DType) of a host (kDLCPU / kDLCUDAHost) DLPack producer,
    any dtype (bfloat16 / fp8 come back as uint16 / uint8 storage).  The capsule is not
    consumed, so the producer's capsule destructor releases its export."""
    try:
        cap = obj.__dlpack__(max_version=(1, 0))
    except TypeError:
        cap = obj.__dlpack__()
    t = capsule_tensor(cap)
    if t is None:
        raise TypeError("__dlpack__ did not return a DLPack capsule")
    if t.device.device_type not in (KDL_CPU, KDL_CUDA_HOST):
        raise BufferError(f"host_array: producer is on DLPack device {t.device.device_type}")
    dt = from_dlpack_code(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    shape = tuple(int(t.shape[i]) for i in range(t.ndim))
    strides = (tuple(int(t.strides[i]) for i in range(t.ndim)) if t.strides
               else contiguous_strides(shape))
    raw = dt.to_numpy()
    n = 1
    for d in shape:
        n *= d
    if n == 0:
        return np.empty(shape, raw), dt
    lo = sum((d - 1) * s for d, s in zip(shape, strides) if s < 0)
    hi = sum((d - 1) * s for d, s in zip(shape, strides) if s > 0)
    base = (t.data or 0) + t.byte_offset + lo * dt.itemsize
    buf = (ctypes.c_char * ((hi - lo + 1) * dt.itemsize)).from_address(base)
    flat = np.frombuffer(buf, raw)
    view = np.lib.stride_tricks.as_strided(flat[-lo:] if lo else flat, shape,
                                           tuple(s * dt.itemsize for s in strides))
    out = np.array(view, copy=True)
    del view, flat, buf, cap
    return out, dt
