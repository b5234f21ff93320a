"""array_api creation functions, astype and DLPack on the GPU, against numpy / array-api-strict:
arange, linspace, eye, full, zeros/ones(_like), meshgrid, tril/triu (batched, k offsets), astype,
asarray copy semantics, DLPack round trips with torch / cupy (zero copy, write through one and
read through the other) and host copies for numpy (``np.from_dlpack(x, device='cpu')``)."""

import numpy as np
import pytest

import array_api as xp
from array_api import _creation_functions as cf
from array_api import _data_type_functions as dtf
from _gpu_helpers import assert_close, assert_equal
from tests._checks import bounds

pytestmark = pytest.mark.gpu

DTYPES = ["bool", "int8", "uint8", "int32", "int64", "uint64", "float16", "bfloat16", "float32",
          "float64", "complex64", "complex128"]


def _np(name):
    return np.float32 if name == "bfloat16" else getattr(np, name)


def _host(x):
    a = x.to_numpy()
    return a.astype(np.float32) if x.dtype == xp.bfloat16 else a


def _ref(a, name):
    """The exact (float64 / complex128) values the host computes, for floating ``name``; the
    values in ``name`` otherwise."""
    a = np.asarray(a)
    if name.startswith("complex"):
        return a.astype(np.complex128)
    if name.startswith(("float", "bfloat")):
        return a.astype(np.float64)
    return a.astype(_np(name))


def _check(x, ref, name, exact=False):
    """dtype, shape, and every element: integers / bool / ``exact`` values bit for bit; floats
    within half an ulp of ``name`` of the exact value (rounded once: the creation functions
    compute in float64 on the host; bfloat16 is rounded through float32 on the host, a double
    rounding: + eps(float32))."""
    assert x.dtype == getattr(xp, name) and x.shape == ref.shape
    got = _host(x)
    if exact or name not in ("float16", "bfloat16", "float32", "float64", "complex64",
                             "complex128"):
        assert_equal(got, ref, what=name)
        return
    rtol, atol = bounds(name, compute="float32", terms=1) if name == "bfloat16" else bounds(name)
    assert_close(got, ref, rtol, atol, what=name)


@pytest.mark.parametrize("name", ["int8", "int32", "int64", "uint64", "float16", "bfloat16",
                                  "float32", "float64", "complex64"])
def test_arange(name):
    dt = getattr(xp, name)
    for args in [(0,), (7,), (3, 40, 5), (40, 3, -4), (5, 5)]:
        if name.startswith("u") and args[-1] == -4:
            args = (3, 40, 4)
        _check(cf.arange(*args, dtype=dt), _ref(np.arange(*args), name), name)
    if name[0] in "fc":
        _check(cf.arange(-1.0, 1.0, 0.25, dtype=dt), _ref(np.arange(-1.0, 1.0, 0.25), name), name)
    assert cf.arange(4).dtype == xp.int64 and cf.arange(0.5, 3).dtype == xp.float32


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64", "complex64",
                                  "complex128"])
def test_linspace(name):
    dt = getattr(xp, name)
    for args, kw in [((0, 1, 11), {}), ((-3, 5, 7), {"endpoint": False}), ((2, 2, 1), {}),
                     ((0, 1, 0), {})]:
        _check(cf.linspace(*args, dtype=dt, **kw), _ref(np.linspace(*args, **kw), name), name)
    if name.startswith("complex"):
        _check(cf.linspace(1j, 3 + 1j, 5, dtype=dt), _ref(np.linspace(1j, 3 + 1j, 5), name),
               name)


@pytest.mark.parametrize("name", DTYPES)
def test_eye_full_zeros_ones(name):
    dt, npd = getattr(xp, name), _np(name)
    for n, m, k in [(4, None, 0), (3, 5, 1), (5, 3, -2), (4, 4, 7), (4, 6, -9), (0, 3, 0),
                    (1, 1, 0)]:
        _check(cf.eye(n, m, k=k, dtype=dt), np.eye(n, m, k=k, dtype=npd), name, exact=True)
    value = {"b": True, "i": -7, "u": 9, "f": 1.5, "c": 1 - 2j}[dt.kind]
    for shape in [(), (0,), (5,), (3, 0, 2), (33, 17)]:
        _check(xp.full(shape, value, dtype=dt), np.full(shape, value, npd), name, exact=True)
        _check(xp.zeros(shape, dtype=dt), np.zeros(shape, npd), name, exact=True)
        _check(xp.ones(shape, dtype=dt), np.ones(shape, npd), name, exact=True)
    big = xp.full((1 << 18,), value, dtype=dt)  # large enough for the fill-kernel path
    _check(big, np.full(1 << 18, value, npd), name, exact=True)
    x = xp.zeros((2, 3), dtype=dt)
    for fn, ref in [(xp.zeros_like, np.zeros), (xp.ones_like, np.ones)]:
        y = fn(x)
        assert y.dtype == dt and y.device == x.device
        _check(y, ref((2, 3), npd), name, exact=True)
    _check(xp.full_like(x, value), np.full((2, 3), value, npd), name, exact=True)
    assert xp.empty_like(x).shape == (2, 3) and xp.empty_like(x).dtype == dt


def test_full_with_array_value_and_defaults():
    v = xp.asarray(np.float16(2.5))
    y = xp.full((3,), v)
    assert y.dtype == xp.float16 and y.to_numpy().tolist() == [2.5] * 3
    assert xp.full((2,), True).dtype == xp.bool and xp.full((2,), 3).dtype == xp.int64
    assert xp.full((2,), 1.0).dtype == xp.float32 and xp.full((2,), 1j).dtype == xp.complex64


@pytest.mark.parametrize("name", ["bool", "int16", "bfloat16", "float32", "complex64"])
def test_tril_triu_batched(name):
    dt = getattr(xp, name)
    rng = np.random.default_rng(0)
    for shape in [(4, 4), (3, 5), (6, 2), (2, 3, 4, 5), (0, 3), (2, 0, 4)]:
        a = (rng.standard_normal(shape) * 10).astype(_np(name))
        x = xp.asarray(a, dtype=dt)
        ref = _host(x)
        for k in (-7, -2, -1, 0, 1, 3, 9):
            _check(cf.tril(x, k=k), np.tril(ref, k), name, exact=True)
            _check(cf.triu(x, k=k), np.triu(ref, k), name, exact=True)
    x = xp.asarray(np.arange(24, dtype=np.float32).reshape(4, 6))
    v = x[::-1, ::2]  # strided input
    np.testing.assert_array_equal(cf.tril(v, k=1).to_numpy(), np.tril(v.to_numpy(), 1))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid(indexing):
    import array_api_strict as xs

    a, b, c = np.arange(3.0), np.arange(4.0) * 2, np.arange(2.0) - 5
    ours = cf.meshgrid(xp.asarray(a), xp.asarray(b)[::-1], xp.asarray(c), indexing=indexing)
    ref = xs.meshgrid(xs.asarray(a), xs.asarray(b[::-1]), xs.asarray(c), indexing=indexing)
    assert isinstance(ours, list) and len(ours) == 3
    for o, r in zip(ours, ref):
        assert o.dtype == xp.float64 and o.is_contiguous()
        np.testing.assert_array_equal(o.to_numpy(), np.asarray(r))
    src = xp.asarray(a)
    g = cf.meshgrid(src, indexing=indexing)[0]
    g[0] = 42.0  # a copy: the input is unchanged
    assert src.to_numpy().tolist() == [0.0, 1.0, 2.0]
    assert cf.meshgrid(xp.asarray(a), xp.zeros((0,), dtype=xp.float64))[0].shape == (0, 3)


@pytest.mark.parametrize("src,dst", [("float32", "float16"), ("float32", "bfloat16"),
                                     ("int32", "float64"), ("float64", "int16"),
                                     ("bool", "float32"), ("int8", "uint8"),
                                     ("float32", "complex64"), ("complex64", "complex128"),
                                     ("uint8", "bool")])
def test_astype(src, dst):
    a = np.array([0, 1, -2, 3.75, 100, -0.5], np.float64)
    if src[0] in "ub":
        a = np.abs(a)  # float → unsigned of negatives is undefined
    x = xp.asarray(a, dtype=getattr(xp, src))
    y = dtf.astype(x, getattr(xp, dst))
    ref = _ref(_host(x), dst)  # the exact source values (floats: one rounding into dst)
    _check(y, ref, dst)
    assert dtf.astype(x, x.dtype, copy=False) is x
    z = dtf.astype(x, x.dtype)
    assert z is not x and z._ptr != x._ptr


def test_asarray_copy_semantics():
    x = xp.asarray(np.arange(6, dtype=np.float32))
    assert xp.asarray(x) is x and xp.asarray(x, copy=False) is x
    y = xp.asarray(x, copy=True)
    assert y._ptr != x._ptr
    x[0] = 9.0
    assert y.to_numpy()[0] == 0.0  # the copy does not alias
    d = xp.asarray(x, dtype=xp.float64)
    assert d.dtype == xp.float64 and d.to_numpy().tolist() == [9, 1, 2, 3, 4, 5]
    with pytest.raises(ValueError):
        xp.asarray(x, dtype=xp.float64, copy=False)
    with pytest.raises(ValueError):
        xp.asarray([1.0], copy=False)
    s = xp.asarray([xp.asarray(np.int8(3)), 4])  # nested 0-D arrays keep their dtype
    assert s.dtype == xp.int8 and s.to_numpy().tolist() == [3, 4]
    with pytest.raises(OverflowError):
        xp.asarray([2**63])


def test_dlpack_torch_round_trips():
    torch = pytest.importorskip("torch")
    t = torch.zeros(8, device="cuda", dtype=torch.float32)
    x = xp.from_dlpack(t)
    assert x._ptr == t.data_ptr()
    x[2:4] = 5.0  # write through the Array, read through torch
    torch.cuda.synchronize()
    assert t.tolist() == [0, 0, 5, 5, 0, 0, 0, 0]
    t[0] = 3.0  # write through torch, read through the Array
    torch.cuda.synchronize()
    assert x.to_numpy()[0] == 3.0
    u = torch.from_dlpack(x)
    assert u.data_ptr() == t.data_ptr()
    c = xp.from_dlpack(t, copy=True)
    assert c._ptr != t.data_ptr() and c.to_numpy().tolist() == t.tolist()
    a = xp.asarray(t)  # asarray of a CUDA tensor is zero copy too
    assert a._ptr == t.data_ptr()
    h = xp.from_dlpack(torch.arange(5, dtype=torch.bfloat16))  # host producer: copied
    assert h.dtype == xp.bfloat16 and h.to_numpy().astype(np.float32).tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(BufferError):
        xp.from_dlpack(torch.arange(5), copy=False)
    with pytest.raises(BufferError):
        xp.from_dlpack(t, device="cpu")


def test_dlpack_cupy_round_trip():
    cp = pytest.importorskip("cupy")
    a = cp.zeros(6, dtype=cp.int32)
    x = xp.from_dlpack(a)
    assert x._ptr == a.data.ptr
    x[1] = 7
    assert cp.asnumpy(a).tolist() == [0, 7, 0, 0, 0, 0]
    b = cp.from_dlpack(x)
    b[5] = -1
    assert x.to_numpy().tolist() == [0, 7, 0, 0, 0, -1]


def test_dlpack_numpy_host_copy():
    x = xp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    h = np.from_dlpack(x.mT, device="cpu")  # served through dl_device=(kDLCPU, 0)
    np.testing.assert_array_equal(h, np.arange(12, dtype=np.float32).reshape(3, 4).T)
    with pytest.raises(BufferError):
        x.__dlpack__(dl_device=(1, 0), copy=False)
    torch = pytest.importorskip("torch")
    b = xp.asarray([1.5, -2.0], dtype=xp.bfloat16)
    t = torch.utils.dlpack.from_dlpack(b.__dlpack__(dl_device=(1, 0)))
    assert t.device.type == "cpu" and t.float().tolist() == [1.5, -2.0]


def test_array_namespace_and_info():
    compat = pytest.importorskip("array_api_compat")
    x = cf.arange(3)
    assert compat.array_namespace(x) is xp
    info = xp.__array_namespace_info__()
    assert info.default_device() == x.device and x.device in info.devices()
