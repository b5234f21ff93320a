"""DLPack export: builds ``DLManagedTensor`` / ``DLManagedTensorVersioned`` capsules with ctypes.

The managed struct, its shape/stride arrays and a reference to the exported Array live in a
module table keyed by the struct's address; the deleter (called by the consumer, or by the capsule
destructor when nobody consumed it) drops that entry.
"""

from __future__ import annotations

import ctypes

from baracuda_dsl.tensor import _DLDataType, _DLDevice, _DLPackVersion, _DLTensor

_KDL_CUDA = 2
_DELETER_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class _ManagedVersioned(ctypes.Structure):
    _fields_ = [("version", _DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", _DLTensor)]


_LIVE: dict = {}


@_DELETER_T
def _deleter(addr):
    _LIVE.pop(addr, None)


_DELETER_ADDR = ctypes.cast(_deleter, ctypes.c_void_p).value

_NAME = b"dltensor"
_NAME_V = b"dltensor_versioned"
_IsValid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_GetPointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_CapsuleNew = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))


@ctypes.PYFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(cap):
    # an unconsumed capsule still carries its original name: release the export
    for name in (_NAME, _NAME_V):
        if _IsValid(cap, name):
            addr = _GetPointer(cap, name)
            _LIVE.pop(addr, None)
            return


_DTOR_ADDR = ctypes.cast(_capsule_destructor, ctypes.c_void_p).value


def export(ptr: int, shape, strides, dtype, ordinal: int, owner, versioned: bool,
           copied: bool = False):
    """A DLPack capsule over device memory ``ptr`` (shape / strides in elements); ``owner`` is
    kept alive until the consumer calls the deleter."""
    ndim = len(shape)
    shp = (ctypes.c_int64 * max(ndim, 1))(*shape)
    st = (ctypes.c_int64 * max(ndim, 1))(*strides)
    m = _ManagedVersioned() if versioned else _Managed()
    t = m.dl_tensor
    t.data = ptr
    t.device = _DLDevice(_KDL_CUDA, ordinal)
    t.ndim = ndim
    t.dtype = _DLDataType(dtype.dlpack[0], dtype.dlpack[1], 1)
    t.shape = ctypes.cast(shp, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(st, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = 0
    m.manager_ctx = None
    m.deleter = _DELETER_ADDR
    if versioned:
        m.version = _DLPackVersion(1, 0)
        m.flags = 2 if copied else 0  # DLPACK_FLAG_BITMASK_IS_COPIED
    addr = ctypes.addressof(m)
    _LIVE[addr] = (m, shp, st, owner)
    return _CapsuleNew(addr, _NAME_V if versioned else _NAME, _DTOR_ADDR)
