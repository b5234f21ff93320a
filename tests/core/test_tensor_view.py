"""CPU tests of TensorView and as_view: shape validation, contiguity, spans, host-array rejection,
and DLPack / __cuda_array_interface__ parsing with hand-made CUDA descriptors (no GPU needed: the
views are only parsed, never dereferenced)."""

import ctypes

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl import dlpack
from baracuda_dsl import dtypes as dt
from baracuda_dsl import tensor as tv
from baracuda_dsl.errors import (DeviceMismatchError, InvalidProblemError, MisalignedOperandError,
                                 UnsupportedError)
from baracuda_dsl.tensor import MAX_RANK, TensorView, as_view, check_shape, contiguous_strides


# ----------------------------------------------------------------------------- shapes
def test_check_shape_accepts_rank_up_to_8_and_zero_extents():
    assert check_shape(()) == ()
    assert check_shape([2, 0, 3]) == (2, 0, 3)
    assert check_shape((1,) * MAX_RANK) == (1,) * 8
    assert check_shape((np.int64(4), 5)) == (4, 5)


@pytest.mark.parametrize("shape", [(1,) * 9, (2,) * 12])
def test_rank_above_8_is_invalid(shape):
    with pytest.raises(InvalidProblemError, match="rank"):
        check_shape(shape)
    with pytest.raises(InvalidProblemError):
        TensorView(0x1000, shape, (1,) * len(shape), bd.float32)


@pytest.mark.parametrize("shape", [(-1,), (3, -2), (0, -1, 4)])
def test_negative_extent_is_invalid(shape):
    with pytest.raises(InvalidProblemError, match="negative"):
        TensorView(0x1000, shape, (1,) * len(shape), bd.float32)


def test_bad_shape_type_and_stride_count():
    with pytest.raises(InvalidProblemError):
        check_shape(5)
    with pytest.raises(InvalidProblemError, match="strides"):
        TensorView(0x1000, (2, 2), (1,), bd.float32)


@pytest.mark.parametrize("shape,want", [
    ((), ()), ((5,), (1,)), ((2, 3, 4), (12, 4, 1)), ((3, 0, 2), (2, 2, 1)), ((1, 7), (7, 1)),
])
def test_contiguous_strides(shape, want):
    assert contiguous_strides(shape) == want


# ----------------------------------------------------------------------------- layout queries
def test_contiguity():
    assert TensorView(0x1000, (2, 3), (3, 1), bd.float32).is_contiguous()
    assert not TensorView(0x1000, (3, 2), (1, 3), bd.float32).is_contiguous()  # transposed
    assert not TensorView(0x1000, (2, 3), (4, 1), bd.float32).is_contiguous()  # padded rows
    assert not TensorView(0x1000, (4,), (2,), bd.float32).is_contiguous()      # step 2
    assert not TensorView(0x1000, (4,), (0,), bd.float32).is_contiguous()      # broadcast
    # extents of 1 may carry any stride
    assert TensorView(0x1000, (1, 3), (999, 1), bd.float32).is_contiguous()
    assert TensorView(0x1000, (3, 1), (1, -5), bd.float32).is_contiguous()
    assert TensorView(0x1000, (), (), bd.float32).is_contiguous()


def test_numel_ndim_itemsize():
    v = TensorView(0x1000, (2, 3, 4), (12, 4, 1), bd.bfloat16, device=3)
    assert (v.ndim, v.numel, v.itemsize, v.device) == (3, 24, 2, 3)
    assert TensorView(0, (), (), bd.float64).numel == 1
    assert TensorView(0, (5, 0), (0, 1), bd.float64).numel == 0


@pytest.mark.parametrize("shape,strides,itemsize_dtype,span,nbytes", [
    ((2, 3), (3, 1), bd.float32, (0, 5), 24),
    ((2, 3), (8, 1), bd.float32, (0, 10), 44),          # padded rows: last row ends early
    ((3, 2), (1, 3), bd.float16, (0, 5), 12),           # transposed
    ((4,), (-1,), bd.float32, (-3, 0), 16),             # walks backwards
    ((2, 3), (-3, 1), bd.float64, (-3, 2), 48),
    ((5, 4), (0, 1), bd.float32, (0, 3), 16),           # broadcast rows
    ((0, 4), (4, 1), bd.float32, (0, -1), 0),           # empty
    ((), (), bd.int8, (0, 0), 1),                       # scalar
])
def test_span_and_required_bytes(shape, strides, itemsize_dtype, span, nbytes):
    v = TensorView(0x1000, shape, strides, itemsize_dtype)
    assert v.span_elements() == span
    assert v.required_bytes() == nbytes


def test_with_shape_keeps_identity_fields():
    owner = object()
    v = TensorView(0x2000, (4, 6), (6, 1), bd.float16, 2, 48, owner)
    w = v.with_shape((6, 4), (1, 6))
    assert (w.ptr, w.dtype, w.device, w.capacity_bytes) == (0x2000, bd.float16, 2, 48)
    assert w.owner is owner and w.shape == (6, 4) and not w.is_contiguous()
    with pytest.raises(InvalidProblemError):
        v.with_shape((-1, 6), (6, 1))


def test_view_is_frozen_and_owner_not_compared():
    a = TensorView(0x1000, (2,), (1,), bd.float32, owner=object())
    b = TensorView(0x1000, (2,), (1,), bd.float32, owner=object())
    assert a == b
    with pytest.raises(Exception):
        a.ptr = 0


# ----------------------------------------------------------------------------- host arrays
def test_numpy_array_is_device_mismatch():
    with pytest.raises(DeviceMismatchError, match="not a CUDA GPU"):
        as_view(np.zeros((2, 2), np.float32))
    with pytest.raises(DeviceMismatchError):
        as_view(np.zeros((), np.float64))


def test_numpy_dlpack_capsules_are_device_mismatch():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    with pytest.raises(DeviceMismatchError, match="not a CUDA GPU"):
        tv._view_from_capsule(a.__dlpack__(), a)
    with pytest.raises(DeviceMismatchError):  # versioned capsule (DLPack 1.x)
        tv._view_from_capsule(a.__dlpack__(max_version=(1, 0)), a)


def test_host_dlpack_producer_is_rejected_via_device():
    class HostDL:
        def __dlpack__(self, stream=None):
            raise AssertionError("must be rejected before exporting")

        def __dlpack_device__(self):
            return (1, 0)  # kDLCPU

    with pytest.raises(DeviceMismatchError):
        as_view(HostDL())


def test_unviewable_objects():
    with pytest.raises(InvalidProblemError):
        as_view(object())
    with pytest.raises(InvalidProblemError):
        as_view([1.0, 2.0])
    with pytest.raises(InvalidProblemError):
        tv._view_from_capsule("not a capsule", None)


def test_tensor_view_passes_through_and_baracuda_view_hook():
    v = TensorView(0x1000, (3,), (1,), bd.float32)
    assert as_view(v) is v

    class Own:
        def __baracuda_view__(self):
            return v

    assert as_view(Own()) is v


# ----------------------------------------------------------------------------- fake CUDA DLPack
_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class _FakeCudaTensor:
    """Builds a DLPack capsule describing CUDA memory (never dereferenced)."""

    def __init__(self, data, shape, strides, code_bits, device=(2, 0), byte_offset=0,
                 versioned=False):
        self.n = len(shape)
        self.shape = (ctypes.c_int64 * max(self.n, 1))(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * max(self.n, 1))(*strides)
        dl = dlpack.DLTensor()
        dl.data = data
        dl.device = dlpack.DLDevice(*device)
        dl.ndim = self.n
        dl.dtype = dlpack.DLDataType(code_bits[0], code_bits[1], 1)
        dl.shape = ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64))
        dl.strides = (ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64))
                      if self.strides is not None else None)
        dl.byte_offset = byte_offset
        self.versioned = versioned
        if versioned:
            self.mt = dlpack.DLManagedTensorVersioned()
            self.mt.version = dlpack.DLPackVersion(1, 0)
            self.mt.dl_tensor = dl
            self.name = b"dltensor_versioned"
        else:
            self.mt = dlpack.DLManagedTensor()
            self.mt.dl_tensor = dl
            self.name = b"dltensor"
        self.device = device

    def __dlpack__(self, stream=None, **kw):
        return _PyCapsule_New(ctypes.addressof(self.mt), self.name, None)

    def __dlpack_device__(self):
        return self.device


@pytest.mark.parametrize("versioned", [False, True])
def test_cuda_dlpack_capsule_parsing(versioned):
    f = _FakeCudaTensor(0x7F0000000000, (4, 5), (10, 2), (4, 16), device=(2, 1), byte_offset=64,
                        versioned=versioned)
    v = tv._view_from_capsule(f.__dlpack__(), f)
    assert v.ptr == 0x7F0000000000 + 64
    assert (v.shape, v.strides, v.dtype, v.device) == ((4, 5), (10, 2), bd.bfloat16, 1)
    assert not v.is_contiguous()
    assert v.owner[0] is f  # the producer (and capsule) stay alive with the view
    # the same through as_view (the producer reports a CUDA device)
    w = as_view(f)
    assert (w.ptr, w.shape, w.strides, w.dtype) == (v.ptr, v.shape, v.strides, v.dtype)


def test_cuda_dlpack_without_strides_is_row_major():
    f = _FakeCudaTensor(0x10000, (3, 4, 5), None, (2, 32))
    v = tv._view_from_capsule(f.__dlpack__(), f)
    assert v.strides == (20, 5, 1) and v.dtype is bd.float32 and v.is_contiguous()


def test_cuda_managed_dlpack_is_accepted_and_bad_dtype_is_not():
    f = _FakeCudaTensor(0x10000, (8,), (1,), (2, 64), device=(13, 0))  # kDLCUDAManaged
    assert tv._view_from_capsule(f.__dlpack__(), f).dtype is bd.float64
    g = _FakeCudaTensor(0x10000, (8,), (1,), (2, 24))  # 24-bit float: not a dtype
    with pytest.raises(UnsupportedError):
        tv._view_from_capsule(g.__dlpack__(), g)
    h = _FakeCudaTensor(0x10000, (8,), (1,), (2, 32), device=(1, 0))  # CPU
    with pytest.raises(DeviceMismatchError):
        tv._view_from_capsule(h.__dlpack__(), h)


def test_wrongly_named_capsule_is_invalid():
    f = _FakeCudaTensor(0x10000, (2,), (1,), (2, 32))
    cap = _PyCapsule_New(ctypes.addressof(f.mt), b"used_dltensor", None)
    with pytest.raises(InvalidProblemError, match="capsule"):
        tv._view_from_capsule(cap, f)


# ----------------------------------------------------------------------------- CUDA array interface
class _FakeCAI:
    def __init__(self, shape, typestr, strides=None, ptr=0x20000):
        self.__cuda_array_interface__ = dict(shape=shape, typestr=typestr, strides=strides,
                                             data=(ptr, False), version=3)


def test_cuda_array_interface_parsing():
    v = as_view(_FakeCAI((3, 4), "<f4", strides=(32, 4)))
    assert (v.ptr, v.shape, v.strides, v.dtype) == (0x20000, (3, 4), (8, 1), bd.float32)
    assert not v.is_contiguous() and v.required_bytes() == (2 * 8 + 3 + 1) * 4
    c = as_view(_FakeCAI((2, 3), "<f2"))
    assert c.strides == (3, 1) and c.dtype is bd.float16 and c.is_contiguous()
    n = as_view(_FakeCAI((4,), "<i8", strides=(-8,)))
    assert n.strides == (-1,) and n.dtype is dt.int64


def test_cuda_array_interface_stride_not_a_multiple_of_itemsize():
    with pytest.raises(MisalignedOperandError, match="stride"):
        as_view(_FakeCAI((3, 4), "<f4", strides=(18, 4)))


def test_cuda_array_interface_with_unknown_typestr_and_no_dlpack():
    with pytest.raises(InvalidProblemError):
        as_view(_FakeCAI((2,), "|V2"))
