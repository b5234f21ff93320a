"""array_api without a GPU: type promotion / result_type / can_cast against array-api-strict for
every pair of the standard's 13 dtypes plus the float16 / bfloat16 extension rules, isdtype,
finfo / iinfo against numpy, the inspection API, argument validation of the creation functions
(everything that raises before device work), and host-side creation paths (asarray defaults,
full, arange, linspace, host DLPack) on a host-memory fake device (allocation / memset / copies
redirected to numpy buffers; no kernel is launched)."""

import ctypes
import itertools

import array_api_strict as xs
import numpy as np
import pytest

import array_api as xp
from array_api import _creation_functions as cf
from array_api import _data_type_functions as dtf
from array_api import _device as _dev
from array_api import _promotion as pr
from baracuda_dsl.errors import UnsupportedError

NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float32", "float64", "complex64", "complex128"]
OURS = {n: getattr(xp, n) for n in NAMES}
STRICT = {n: getattr(xs, n) for n in NAMES}


def _strict_result(a, b):
    try:
        return xs.result_type(STRICT[a], STRICT[b])
    except TypeError:
        return None


# ------------------------------------------------------------------------- promotion
@pytest.mark.parametrize("a,b", list(itertools.product(NAMES, NAMES)))
def test_promotion_table_matches_strict(a, b):
    ref = _strict_result(a, b)
    if ref is None:
        with pytest.raises(TypeError):
            pr.promote_types(OURS[a], OURS[b])
        with pytest.raises(TypeError):
            dtf.result_type(OURS[a], OURS[b])
    else:
        assert pr.promote_types(OURS[a], OURS[b]).name == str(ref).split(".")[-1] == \
            dtf.result_type(OURS[a], OURS[b]).name
    assert dtf.can_cast(OURS[a], OURS[b]) == xs.can_cast(STRICT[a], STRICT[b])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("scalar", [True, 3, -2.5, 1 + 1j])
def test_result_type_with_python_scalars_matches_strict(name, scalar):
    try:
        ref = xs.result_type(STRICT[name], scalar)
    except TypeError:
        ref = None
    if ref is None:
        with pytest.raises(TypeError):
            dtf.result_type(OURS[name], scalar)
    else:
        assert dtf.result_type(OURS[name], scalar).name == str(ref).split(".")[-1]


def test_half_type_extension_rules():
    f16, bf16, f32, f64 = xp.float16, xp.bfloat16, xp.float32, xp.float64
    assert dtf.result_type(f16, f16) == f16 and dtf.result_type(bf16, bf16) == bf16
    assert dtf.result_type(f16, bf16) == f32 and dtf.result_type(bf16, f32) == f32
    assert dtf.result_type(f16, f64) == f64 and dtf.result_type(bf16, xp.complex64) == xp.complex64
    assert dtf.result_type(bf16, xp.complex128) == xp.complex128
    assert dtf.result_type(f16, 2.5) == f16 and dtf.result_type(bf16, 1) == bf16
    assert dtf.result_type(f16, 1j) == xp.complex64
    for other in (xp.int8, xp.uint8, xp.bool):
        with pytest.raises(TypeError):
            dtf.result_type(f16, other)
    assert dtf.can_cast(f16, f32) and dtf.can_cast(bf16, f64) and not dtf.can_cast(f32, f16)
    assert not dtf.can_cast(f16, bf16) and not dtf.can_cast(xp.int8, f16)
    assert dtf.can_cast(bf16, xp.complex64)


def test_result_type_and_can_cast_arguments():
    x = xp.Array._new(1 << 20, (3,), (1,), xp.int16, xp.Device(0), None)  # no memory needed
    assert dtf.result_type(x, xp.int32, 7) == xp.int32 and dtf.can_cast(x, xp.int64)
    assert not dtf.can_cast(x, xp.uint16)
    with pytest.raises(ValueError):
        dtf.result_type(1, 2.0)  # scalars only
    with pytest.raises(TypeError):
        dtf.can_cast("int8", xp.int16)
    with pytest.raises(TypeError):
        dtf.can_cast(xp.int8, np.int16)
    with pytest.raises(TypeError):
        dtf.result_type(xp.int8, [1])


def test_astype_validation_before_device_work():
    x = xp.Array._new(1 << 20, (3,), (1,), xp.complex64, xp.Device(0), None)
    assert dtf.astype(x, xp.complex64, copy=False) is x
    for dt in (xp.float32, xp.int8, xp.bool):
        with pytest.raises(TypeError):
            dtf.astype(x, dt)
    with pytest.raises(TypeError):
        dtf.astype(np.zeros(3), xp.float32)
    with pytest.raises(UnsupportedError):
        dtf.astype(x, xp.complex128, device=xp.Device(1))


# ------------------------------------------------------------------------- isdtype, finfo, iinfo
KIND_MEMBERS = {
    "bool": {"bool"},
    "signed integer": {"int8", "int16", "int32", "int64"},
    "unsigned integer": {"uint8", "uint16", "uint32", "uint64"},
    "integral": {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"},
    "real floating": {"float32", "float64"},
    "complex floating": {"complex64", "complex128"},
}
KIND_MEMBERS["numeric"] = (KIND_MEMBERS["integral"] | KIND_MEMBERS["real floating"]
                           | KIND_MEMBERS["complex floating"])


@pytest.mark.parametrize("kind", list(KIND_MEMBERS))
def test_isdtype_kinds_match_strict(kind):
    for n in NAMES:
        assert xp.isdtype(OURS[n], kind) == (n in KIND_MEMBERS[kind]) == \
            xs.isdtype(STRICT[n], kind)
    ext = xp.isdtype(xp.float16, kind)
    assert ext == (kind in ("real floating", "numeric")) == xp.isdtype(xp.bfloat16, kind)
    assert xp.isdtype(xp.int8, (kind, "bool")) == ("int8" in KIND_MEMBERS[kind])


def test_isdtype_errors():
    assert xp.isdtype(xp.float32, xp.float32) and not xp.isdtype(xp.float32, xp.float64)
    with pytest.raises(ValueError):
        xp.isdtype(xp.float32, "floating")
    with pytest.raises(TypeError):
        xp.isdtype("float32", "numeric")
    with pytest.raises(TypeError):
        xp.isdtype(xp.float32, 3)


@pytest.mark.parametrize("name,npd", [("float16", np.float16), ("float32", np.float32),
                                      ("float64", np.float64), ("complex64", np.float32),
                                      ("complex128", np.float64)])
def test_finfo_matches_numpy(name, npd):
    fi, ref = xp.finfo(getattr(xp, name)), np.finfo(npd)
    assert (fi.bits, fi.eps, fi.max, fi.min, fi.smallest_normal) == (
        ref.bits, float(ref.eps), float(ref.max), float(ref.min), float(ref.smallest_normal))
    assert fi.dtype == getattr(xp, npd.__name__)  # complex → its real component
    assert all(type(v) is float for v in (fi.eps, fi.max, fi.min, fi.smallest_normal))
    if name == "float16":
        return  # array-api-strict has no float16
    s = xs.finfo(getattr(xs, name))
    assert (fi.eps, fi.max, fi.smallest_normal) == (s.eps, s.max, s.smallest_normal)


def _format_limits(ebits, mbits, has_inf):
    """(bits, eps, max, smallest_normal) of a binary float format, from its definition; without
    infinities (e4m3 "fn") the all-ones exponent holds numbers too, except the NaN pattern."""
    bias = 2 ** (ebits - 1) - 1
    if has_inf:
        mx = (2 - 2.0 ** -mbits) * 2.0 ** bias
    else:
        mx = (2 - 2.0 ** (1 - mbits)) * 2.0 ** (2 ** ebits - 1 - bias)
    return 1 + ebits + mbits, 2.0 ** -mbits, mx, 2.0 ** (1 - bias)


def test_finfo_half_and_fp8_types():
    for ours, fmt in ((xp.bfloat16, (8, 7, True)), (xp._dtypes.float8_e4m3, (4, 3, False)),
                      (xp._dtypes.float8_e5m2, (5, 2, True))):
        bits, eps, mx, tiny = _format_limits(*fmt)
        fi = xp.finfo(ours)
        assert (fi.bits, fi.eps, fi.max, fi.min, fi.smallest_normal) == (bits, eps, mx, -mx, tiny)
        assert fi.dtype == ours
    x = xp.Array._new(1 << 20, (2,), (1,), xp.float16, xp.Device(0), None)
    assert xp.finfo(x).eps == float(np.finfo(np.float16).eps)
    for bad in (xp.int32, xp.bool):
        with pytest.raises(TypeError):
            xp.finfo(bad)


def test_finfo_matches_torch():
    torch = pytest.importorskip("torch")
    for ours, theirs in ((xp.bfloat16, torch.bfloat16),
                         (xp._dtypes.float8_e4m3, torch.float8_e4m3fn),
                         (xp._dtypes.float8_e5m2, torch.float8_e5m2)):
        fi, ref = xp.finfo(ours), torch.finfo(theirs)
        assert (fi.bits, fi.eps, fi.max, fi.min, fi.smallest_normal) == (
            ref.bits, ref.eps, ref.max, ref.min, ref.smallest_normal)


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                  "uint64"])
def test_iinfo_matches_numpy(name):
    ii, ref = xp.iinfo(getattr(xp, name)), np.iinfo(getattr(np, name))
    assert (ii.bits, ii.max, ii.min) == (ref.bits, int(ref.max), int(ref.min))
    assert ii.dtype == getattr(xp, name) and type(ii.max) is int
    with pytest.raises(TypeError):
        xp.iinfo(xp.float32)


# ------------------------------------------------------------------------- inspection
def test_namespace_info():
    info = xp.__array_namespace_info__()
    caps = info.capabilities()
    # x[mask] / x[mask] = v, nonzero and unique_* are supported; rank is capped at 8
    assert caps == {"boolean indexing": True, "data-dependent shapes": True,
                    "max dimensions": 8}
    assert all(callable(getattr(xp, f)) for f in ("nonzero", "unique_values", "unique_all"))
    with pytest.raises(ValueError, match="rank 9"):
        xp.zeros((1,) * (caps["max dimensions"] + 1))
    assert info.default_dtypes() == {"real floating": xp.float32, "complex floating":
                                     xp.complex64, "integral": xp.int64, "indexing": xp.int64}
    assert info.default_dtypes(device=xp.Device(0))["integral"] == xp.int64
    # the inspection API lists the standard's 13 dtypes; float16 / bfloat16 are extensions
    assert set(info.dtypes()) == set(NAMES)
    assert set(info.dtypes(kind="real floating")) == {"float32", "float64"}
    assert set(info.dtypes(kind=("bool", "unsigned integer"))) == {"bool", "uint8", "uint16",
                                                                   "uint32", "uint64"}
    assert all(info.dtypes()[n] is OURS[n] for n in NAMES)
    assert isinstance(info.devices(), list)
    with pytest.raises(ValueError):
        info.dtypes(kind="floaty")
    with pytest.raises(ValueError):
        info.dtypes(device="cpu")


# ------------------------------------------------------------------------- validation (no device)
@pytest.fixture
def no_device(monkeypatch):
    """Any allocation or copy fails the test: validation must raise first."""
    def boom(*a, **k):
        raise AssertionError("device work before validation")

    for name in ("allocate", "htod", "dtoh", "memset"):
        monkeypatch.setattr(_dev, name, boom)


@pytest.mark.parametrize("call,exc", [
    (lambda: xp.empty((2, -1)), ValueError),
    (lambda: xp.zeros(-3), ValueError),
    (lambda: xp.ones((2, 2.0)), TypeError),
    (lambda: xp.empty((1,) * 9), ValueError),
    (lambda: xp.zeros((2,), dtype="floaty"), UnsupportedError),
    (lambda: xp.zeros((2,), dtype=3), TypeError),
    (lambda: xp.full((2,), 1.5, dtype=xp.int32), TypeError),
    (lambda: xp.full((2,), True, dtype=xp.int32), TypeError),
    (lambda: xp.full((2,), 1, dtype=xp.bool), TypeError),
    (lambda: xp.full((2,), 1j, dtype=xp.float32), TypeError),
    (lambda: xp.full((2,), 300, dtype=xp.int8), OverflowError),
    (lambda: xp.full((2,), -1, dtype=xp.uint8), OverflowError),
    (lambda: xp.full((2,), 2**63), OverflowError),
    (lambda: xp.full((2,), "a"), TypeError),
    (lambda: xp.full((2,), [1, 2]), TypeError),
    (lambda: xp.full((-2,), 1.0), ValueError),
    (lambda: cf.arange(0, 10, 0), ValueError),
    (lambda: cf.arange(0.0, 1.0, 0.0), ValueError),
    (lambda: cf.arange(5, dtype=xp.bool), TypeError),
    (lambda: cf.arange(0, 2.5, dtype=xp.int32), TypeError),
    (lambda: cf.arange(1j), TypeError),
    (lambda: cf.arange(250, 260, dtype=xp.int8), OverflowError),
    (lambda: cf.linspace(0, 1, -1), ValueError),
    (lambda: cf.linspace(0, 1, 2.0), TypeError),
    (lambda: cf.linspace(0, 1, 3, dtype=xp.int32), TypeError),
    (lambda: cf.linspace(0, 1j, 3, dtype=xp.float32), TypeError),
    (lambda: cf.linspace("a", 1, 3), TypeError),
    (lambda: cf.eye(-1), ValueError),
    (lambda: cf.eye(2, -3), ValueError),
    (lambda: cf.eye(2.5), TypeError),
    (lambda: cf.eye(2, k=1.0), TypeError),
    (lambda: cf.meshgrid(np.zeros(3)), TypeError),
    (lambda: cf.tril(np.zeros((3, 3))), TypeError),
    (lambda: xp.asarray([1, 2], copy=False), ValueError),
    (lambda: xp.asarray(np.zeros(3), copy=False), ValueError),
    (lambda: xp.asarray(2**64), OverflowError),
    (lambda: xp.asarray([1, -2**63 - 1]), OverflowError),
    (lambda: xp.asarray([-1, 2**63]), OverflowError),
    (lambda: xp.asarray([300], dtype=xp.uint8), OverflowError),
    (lambda: xp.asarray(["a"]), TypeError),
    (lambda: xp.asarray(np.array(["a"])), TypeError),
    (lambda: xp.asarray(object()), TypeError),
    (lambda: xp.asarray([[1, 2], [3]]), ValueError),
    (lambda: xp.asarray([1], dtype="floaty"), UnsupportedError),
    (lambda: xp.asarray([1], copy="yes"), TypeError),
    (lambda: xp.from_dlpack(np.zeros(3), copy=False), BufferError),
    (lambda: xp.from_dlpack(np.zeros(3), device="cpu"), BufferError),
    (lambda: xp.from_dlpack([1, 2]), TypeError),
    (lambda: xp.zeros_like(np.zeros(3)), TypeError),
])
def test_creation_validation_raises_before_device_work(no_device, call, exc):
    with pytest.raises(exc):
        call()


def test_validation_of_arrays_without_memory(no_device):
    x1 = xp.Array._new(1 << 20, (3,), (1,), xp.float32, xp.Device(0), None)
    x2 = xp.Array._new(1 << 20, (2, 2), (2, 1), xp.float32, xp.Device(0), None)
    i1 = xp.Array._new(1 << 20, (3,), (1,), xp.int32, xp.Device(0), None)
    for call, exc in [(lambda: cf.meshgrid(x1, i1), ValueError),
                      (lambda: cf.meshgrid(x1, x2), ValueError),
                      (lambda: cf.meshgrid(x1, indexing="yx"), ValueError),
                      (lambda: cf.tril(x1), ValueError), (lambda: cf.triu(x1), ValueError),
                      (lambda: cf.tril(x2, k=0.5), TypeError),
                      (lambda: xp.asarray(x1, dtype=xp.float64, copy=False), ValueError),
                      (lambda: xp.asarray(x1, device=xp.Device(1), copy=False), ValueError),
                      (lambda: xp.from_dlpack(x1, device=xp.Device(1), copy=False), BufferError),
                      (lambda: xp.from_dlpack(x1, device="cpu"), BufferError),
                      (lambda: xp.asarray(x1, device=xp.Device(1)), UnsupportedError)]:
        with pytest.raises(exc):
            call()
    assert xp.asarray(x1) is x1 and xp.asarray(x1, dtype=xp.float32, copy=False) is x1
    assert xp.from_dlpack(x1) is x1 and cf.meshgrid() == []


# ------------------------------------------------------------------------- fake host device
@pytest.fixture
def fake_device(monkeypatch):
    keep = []

    def allocate(nbytes, device):
        a = np.zeros(int(nbytes) + 512, np.uint8)
        keep.append(a)
        return (a.ctypes.data + 255) // 256 * 256, a

    def memset(ptr, pattern, count, stream=0):
        n = count * len(pattern)
        np.frombuffer((ctypes.c_char * n).from_address(ptr), np.uint8)[:] = np.tile(
            np.frombuffer(pattern, np.uint8), count)
        return True

    monkeypatch.setattr(_dev, "allocate", allocate)
    monkeypatch.setattr(_dev, "htod", lambda p, h: ctypes.memmove(p, h.ctypes.data, h.nbytes))
    monkeypatch.setattr(_dev, "dtoh", lambda h, p: ctypes.memmove(h.ctypes.data, p, h.nbytes))
    monkeypatch.setattr(_dev, "memset", memset)


def test_asarray_default_dtypes_and_values(fake_device):
    cases = [(True, xp.bool), (3, xp.int64), (2.5, xp.float32), (1 + 2j, xp.complex64),
             ([1, 2], xp.int64), ([[1.5], [2]], xp.float32), ([True, False], xp.bool),
             ([], xp.float32), ([1j, 2], xp.complex64), (2**63 - 1, xp.int64),
             (np.float64(1.5), xp.float64), (np.arange(3, dtype=np.uint16), xp.uint16),
             (np.array([1.0], np.float16), xp.float16)]
    for obj, dt in cases:
        x = xp.asarray(obj)
        assert x.dtype == dt, obj
        ref = np.asarray(obj)
        np.testing.assert_array_equal(x.to_numpy(), ref.astype(x.dtype.numpy))
        assert x.shape == ref.shape
    assert xp.asarray([2**63], dtype=xp.uint64).to_numpy()[0] == 2**63
    assert xp.asarray([1, 2**64], dtype=xp.float64).to_numpy()[1] == 2.0**64
    b = xp.asarray([0.1, -2.75], dtype=xp.bfloat16)
    np.testing.assert_allclose(b.to_numpy(), [0.1, -2.75], rtol=2**-8)
    with pytest.raises(ValueError):
        xp.asarray([np.nan], dtype=xp.int32)


def test_asarray_nested_zero_d_arrays_and_numpy_dlpack(fake_device):
    a, b = xp.asarray(np.int8(3)), xp.asarray(np.int8(-4))
    x = xp.asarray([[a, 1], [b, 2]])
    assert x.dtype == xp.int8 and x.to_numpy().tolist() == [[3, 1], [-4, 2]]
    f = xp.asarray([xp.asarray(np.float32(1.5)), xp.asarray(np.float64(2.0))])
    assert f.dtype == xp.float64 and f.to_numpy().tolist() == [1.5, 2.0]
    with pytest.raises(TypeError):
        xp.asarray([a, 1.5])  # int8 array with a float scalar: no promotion
    w = xp.from_dlpack(np.arange(5.0)[::-2])
    assert w.dtype == xp.float64 and w.to_numpy().tolist() == [4.0, 2.0, 0.0]


def test_asarray_from_torch_host_tensors(fake_device):
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.bfloat16).reshape(2, 3)[:, ::2]
    y = xp.asarray(t)
    assert y.dtype == xp.bfloat16 and y.to_numpy().tolist() == [[0, 2], [3, 5]]
    z = xp.from_dlpack(torch.arange(4, dtype=torch.int16))
    assert z.dtype == xp.int16 and z.to_numpy().tolist() == [0, 1, 2, 3]
    assert xp.asarray(t, dtype=xp.float32).to_numpy().tolist() == [[0, 2], [3, 5]]


def test_full_zeros_ones_on_fake_device(fake_device):
    for dt in (xp.bool, xp.int8, xp.uint64, xp.float16, xp.bfloat16, xp.float64, xp.complex128):
        host = np.float32 if dt == xp.bfloat16 else dt.numpy
        np.testing.assert_array_equal(xp.zeros((2, 3), dtype=dt).to_numpy(), np.zeros((2, 3), host))
        np.testing.assert_array_equal(xp.ones((4,), dtype=dt).to_numpy(), np.ones(4, host))
    assert xp.full((2,), True).dtype == xp.bool and xp.full((2,), 7).dtype == xp.int64
    assert xp.full((), 2.5).dtype == xp.float32 and xp.full(3, 1j).dtype == xp.complex64
    np.testing.assert_array_equal(xp.full((3,), -0.0, dtype=xp.float32).to_numpy(),
                                  np.full(3, -0.0, np.float32))
    assert np.signbit(xp.full((1,), -0.0).to_numpy()[0])
    v = xp.full((2,), xp.asarray(np.int16(-5)))
    assert v.dtype == xp.int16 and v.to_numpy().tolist() == [-5, -5]
    assert xp.full((2,), 3, dtype=xp.float64).to_numpy().tolist() == [3.0, 3.0]
    src = xp.zeros((2, 5), dtype=xp.int32)
    like = xp.full_like(src, 4)
    assert like.dtype == xp.int32 and like.shape == (2, 5) and like.device == src.device
    assert xp.ones_like(src, dtype=xp.float16).dtype == xp.float16


_OUR_DEFAULT = {"float64": "float32", "complex128": "complex64"}  # strict's defaults → ours


def _compare(ours, ref, kw, rtol):
    """``ref`` is strict's (numpy's for float16 / bfloat16) result; without ``dtype=`` our
    default float / complex dtypes are the 32-bit ones (strict's are 64-bit)."""
    want = kw.get("dtype") or _OUR_DEFAULT.get(ref.dtype.name, ref.dtype.name)
    assert ours.dtype.name == want and ours.shape == ref.shape
    np.testing.assert_allclose(ours.to_numpy(), ref.astype(ours.to_numpy().dtype), rtol=rtol)


def _ref(fn, args, kw):
    dt = kw.get("dtype")
    if dt in ("float16", "bfloat16"):
        return getattr(np, fn)(*args, **{**kw, "dtype": np.float64})
    return np.asarray(getattr(xs, fn)(*args, **{**kw, **({"dtype": getattr(xs, dt)} if dt
                                                          else {})}))


@pytest.mark.parametrize("args,kw", [((5,), {}), ((2, 11, 3), {}), ((10, 2, -3), {}),
                                     ((1.5,), {}), ((0, 1, 0.1), {}), ((3, 3), {}),
                                     ((5, 0), {}), ((-2.5, 2.5, 0.5), {"dtype": "float64"}),
                                     ((0, 100, 7), {"dtype": "int8"}),
                                     ((1, 10, 2), {"dtype": "float16"}),
                                     ((0.0, 1.0, 0.125), {"dtype": "bfloat16"}),
                                     ((2**62, 2**62 + 5), {}),
                                     ((2**63, 2**63 + 3), {"dtype": "uint64"})])
def test_arange_vs_strict(fake_device, args, kw):
    ours = cf.arange(*args, **{k: getattr(xp, v) for k, v in kw.items()})
    ref = _ref("arange", args, kw)
    if ref.dtype.kind in "iu":
        assert ours.to_numpy().tolist() == ref.tolist()  # exact, no float64 detour
    _compare(ours, ref, kw, 1e-6)


@pytest.mark.parametrize("args,kw", [((0, 1, 5), {}), ((2, -3, 7), {"endpoint": False}),
                                     ((0, 1, 0), {}), ((1, 1, 1), {}),
                                     ((0, 1j, 4), {}), ((-1, 1, 9), {"dtype": "float64"}),
                                     ((0, 10, 6), {"dtype": "float16"}),
                                     ((1, 2 + 2j, 3), {"dtype": "complex128"})])
def test_linspace_vs_strict(fake_device, args, kw):
    ours = cf.linspace(*args, **{k: getattr(xp, v) if k == "dtype" else v for k, v in kw.items()})
    _compare(ours, _ref("linspace", args, kw), kw, 1e-3 if "float16" in kw.values() else 1e-6)


class _HostExport:
    """What Array.__dlpack__ does for dl_device=(kDLCPU, 0)."""

    def __init__(self, arr, copy=None):
        self.arr, self.copy = arr, copy

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from array_api._dlpack import export_host

        versioned = max_version is not None and max_version[0] >= 1
        return export_host(self.arr, versioned, self.copy if copy is None else copy)

    def __dlpack_device__(self):
        return (1, 0)


def test_host_dlpack_export(fake_device):
    x = xp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    h = np.from_dlpack(_HostExport(x))
    np.testing.assert_array_equal(h, np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(BufferError):
        np.from_dlpack(_HostExport(x, copy=False))




def test_host_dlpack_export_bfloat16_to_torch(fake_device):
    torch = pytest.importorskip("torch")
    bf = xp.asarray([1.5, -2.0], dtype=xp.bfloat16)
    t = torch.from_dlpack(_HostExport(bf))
    assert t.dtype == torch.bfloat16 and t.float().tolist() == [1.5, -2.0]