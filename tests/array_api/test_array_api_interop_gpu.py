"""``__cuda_array_interface__`` (CAI v3) on the GPU: CuPy takes Arrays zero-copy (same pointer,
writes through either side), strided / transposed / offset views keep their values, empty arrays,
bool and integer dtypes, the consumer keeps the memory alive; bfloat16 / fp8 have no CAI (DLPack
only).  Numba, where installed, reads the same views."""

import gc

import numpy as np
import pytest

import array_api as xp
import baracuda_dsl as bd

pytestmark = pytest.mark.gpu


def _cp():
    return pytest.importorskip("cupy")


def test_cupy_asarray_shares_memory():
    cp = _cp()
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = xp.asarray(a)
    c = cp.asarray(x)
    assert c.data.ptr == x._ptr and c.shape == (4, 6) and c.dtype == np.float32
    np.testing.assert_array_equal(cp.asnumpy(c), a)
    c[1, 2] = -5.0                     # write through cupy, read through the Array
    a[1, 2] = -5.0
    np.testing.assert_array_equal(x.to_numpy(), a)
    x[3] = 7.0                         # write through the Array, read through cupy
    a[3] = 7.0
    np.testing.assert_array_equal(cp.asnumpy(c), a)
    cai = x.__cuda_array_interface__
    assert cai["version"] == 3 and cai["stream"] == 1 and cai["data"] == (x._ptr, False)


def test_cupy_strided_and_offset_views():
    cp = _cp()
    a = np.arange(5 * 8, dtype=np.float64).reshape(5, 8)
    x = xp.asarray(a)
    views = {"step2": (x[:, ::2], a[:, ::2]), "T": (x.T, a.T), "mT": (x.mT, a.T),
             "offset": (x[2:, 3:], a[2:, 3:]), "row": (x[3], a[3]),
             "col": (x[:, 5], a[:, 5]), "step_offset": (x[1::2, 1::3], a[1::2, 1::3])}
    for name, (v, want) in views.items():
        c = cp.asarray(v)
        assert c.data.ptr == v._ptr, name
        assert c.shape == want.shape and c.strides == tuple(8 * s for s in v.strides), name
        np.testing.assert_array_equal(cp.asnumpy(c), want, err_msg=name)
    off = x[2:, 3:]
    assert off._ptr == x._ptr + (2 * 8 + 3) * 8
    assert cp.asarray(off).data.ptr == x._ptr + (2 * 8 + 3) * 8
    assert x[:, ::2].__cuda_array_interface__["strides"] == (64, 16)
    assert x.__cuda_array_interface__["strides"] is None
    c = cp.asarray(x[:, ::2])          # a write through a strided view lands in place
    c[...] = -1.0
    a[:, ::2] = -1.0
    np.testing.assert_array_equal(x.to_numpy(), a)


def test_cupy_keeps_memory_alive():
    cp = _cp()
    x = xp.asarray(np.arange(1 << 16, dtype=np.int32))
    c = cp.asarray(x[1::2])
    del x
    gc.collect()
    xp.ones((1 << 16,), dtype=xp.int32)    # would reuse a freed block of the same size class
    np.testing.assert_array_equal(cp.asnumpy(c), np.arange(1, 1 << 16, 2, dtype=np.int32))


def test_cupy_empty_bool_int():
    cp = _cp()
    e = xp.zeros((0, 3), dtype=xp.float32)
    assert e.__cuda_array_interface__["data"] == (0, False)
    ce = cp.asarray(e)
    assert ce.shape == (0, 3) and ce.dtype == np.float32 and ce.size == 0
    assert cp.asarray(xp.asarray(np.zeros((4, 5), np.int16))[:, 2:2]).shape == (4, 0)
    m = np.array([[True, False, True], [False, False, True]])
    cm = cp.asarray(xp.asarray(m))
    assert cm.dtype == np.bool_
    np.testing.assert_array_equal(cp.asnumpy(cm), m)
    np.testing.assert_array_equal(cp.asnumpy(cp.asarray(xp.asarray(m).T)), m.T)
    for npd in (np.int8, np.uint8, np.int32, np.int64, np.uint64):
        a = (np.arange(12) * 7 % 11).astype(npd).reshape(3, 4)
        x = xp.asarray(a)
        c = cp.asarray(x[:, 1::2])
        assert c.dtype == npd and c.data.ptr == x._ptr + a.itemsize
        np.testing.assert_array_equal(cp.asnumpy(c), a[:, 1::2])
    z = cp.asarray(xp.asarray(np.complex64(1 - 2j)))
    assert z.shape == () and complex(z) == 1 - 2j


def test_no_cai_for_bf16_and_fp8():
    cp = _cp()
    b = xp.asarray([1.5, -2.0], dtype=xp.bfloat16)
    assert not hasattr(b, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="DLPack"):
        b.__cuda_array_interface__
    for dt in (bd.float8_e4m3, bd.float8_e5m2):
        assert not hasattr(xp.empty((2, 3), dtype=dt), "__cuda_array_interface__")
    assert hasattr(b, "__dlpack__")
    assert cp.asarray(xp.asarray([1.5], dtype=xp.float16)).dtype == np.float16


def test_numba_reads_views():
    cuda = pytest.importorskip("numba.cuda")
    a = np.arange(20, dtype=np.float32).reshape(4, 5)
    x = xp.asarray(a)
    for v, want in ((x, a), (x[:, ::2], a[:, ::2]), (x.T, a.T), (x[1:, 2:], a[1:, 2:])):
        assert cuda.is_cuda_array(v)
        d = cuda.as_cuda_array(v)
        assert d.__cuda_array_interface__["data"][0] == v._ptr
        np.testing.assert_array_equal(d.copy_to_host(), want)
    assert not cuda.is_cuda_array(xp.asarray([1.0], dtype=xp.bfloat16))
