"""The DLPack C ABI as ctypes: the tensor structs of ``dlpack.h`` (legacy ``DLManagedTensor``
and the 1.x ``DLManagedTensorVersioned``), the device type codes used here, the capsule names and
the two CPython capsule calls that read a capsule (``PyCapsule_IsValid``,
``PyCapsule_GetPointer``, taking the capsule object).

Shared by the consumer side (:func:`baracuda_dsl.tensor.as_view`) and the producer side
(``array_api._dlpack``); nothing here allocates or frees.
"""

from __future__ import annotations

import ctypes
from typing import Optional

#: ``DLDeviceType`` codes (dlpack.h)
KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13

#: capsule names: a legacy ``DLManagedTensor`` and a 1.x ``DLManagedTensorVersioned``
CAPSULE_NAME = b"dltensor"
CAPSULE_NAME_VERSIONED = b"dltensor_versioned"


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
capsule_pointer.restype = ctypes.c_void_p
capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
capsule_is_valid.restype = ctypes.c_int
capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


def capsule_tensor(capsule) -> Optional[DLTensor]:
    """The ``DLTensor`` inside an unconsumed DLPack capsule (versioned or legacy), or None when
    ``capsule`` is no such capsule.  The struct stays owned by the capsule."""
    for name, struct in ((CAPSULE_NAME_VERSIONED, DLManagedTensorVersioned),
                         (CAPSULE_NAME, DLManagedTensor)):
        if capsule_is_valid(capsule, name):
            return struct.from_address(capsule_pointer(capsule, name)).dl_tensor
    return None
