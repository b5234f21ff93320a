"""array_api linear algebra without a GPU: the standard's shape / axes / dtype rules of
``matmul``, ``tensordot``, ``vecdot``, ``outer``, ``linear`` (checked against numpy), the
``linalg`` extension module, and the GEMM driver end to end on a *host-memory fake device*:
allocation and copies are redirected to host memory, ``GemmPlan``'s launch is replaced by a
numpy emulation of its formula reading / writing the views' strided memory, and the few
elementwise / reduction helpers the drivers call (cast, multiply, conj, sum, max, min, dense
copies) by numpy equivalents — so the batching, folding, 1-D promotion, transposed-view,
complex-part and integer-exactness logic runs for real."""

import ctypes
import inspect
import itertools
import math

import numpy as np
import pytest

import array_api as xp
import baracuda_dsl as bd
from array_api import _device as _dev
from array_api import _gemm_extensions as gx
from array_api import _linear_algebra_functions as la
from array_api import linalg
from baracuda_dsl.tensor import TensorView, contiguous_strides


# ------------------------------------------------------------------------ pure shape logic
def _np_result(fn):
    try:
        return fn(), None
    except (ValueError, TypeError) as e:  # numpy's shape errors
        return None, type(e)


SHAPES = [(3,), (4,), (3, 4), (4, 3), (4, 5), (2, 3, 4), (2, 4, 5), (1, 4, 5), (5, 1, 4, 2),
          (6, 2, 4, 5), (0, 4), (4, 0), (2, 0, 4, 5), (1,), (1, 1)]


@pytest.mark.parametrize("s1,s2", list(itertools.product(SHAPES, SHAPES)))
def test_matmul_shapes_match_numpy(s1, s2):
    ref, err = _np_result(lambda: np.matmul(np.zeros(s1), np.zeros(s2)).shape)
    if err is not None:
        with pytest.raises(ValueError):
            la.matmul_shapes(s1, s2)
    else:
        assert la.matmul_shapes(s1, s2)[-1] == ref
    with pytest.raises(ValueError):
        la.matmul_shapes((), s2)


TD_CASES = [((3, 4, 5), (4, 5, 6), 2), ((3, 4), (4, 5), 1), ((3, 4), (5, 6), 0),
            ((2, 3), (2, 3), 2), ((3, 4, 5), (5, 4, 2), ([1, 2], [1, 0])),
            ((3, 4, 5), (5, 3), ([0, 2], [1, 0])), ((3, 4, 5), (6, 4), ([-2], [-1])),
            ((3, 4), (4, 3), (1, 0)), ((2, 3, 4), (3, 2), ([0, 1], [1, 0])),
            ((3,), (3,), 1), ((3,), (4,), 0), ((2, 0), (0, 5), 1)]


@pytest.mark.parametrize("s1,s2,axes", TD_CASES)
def test_tensordot_axes_match_numpy(s1, s2, axes):
    ax1, ax2 = la.tensordot_axes(s1, s2, axes)
    ref = np.tensordot(np.zeros(s1), np.zeros(s2), axes=axes).shape
    free1 = [s1[d] for d in range(len(s1)) if d not in ax1]
    free2 = [s2[d] for d in range(len(s2)) if d not in ax2]
    assert tuple(free1 + free2) == ref


def test_tensordot_axes_errors():
    for s1, s2, axes, exc in [((3, 4), (4, 5), -1, ValueError), ((3, 4), (4, 5), 3, ValueError),
                              ((3, 4), (5, 5), 1, ValueError), ((3, 4), (4, 5), True, TypeError),
                              ((3, 4), (4, 5), ([1], [0, 1]), ValueError),
                              ((3, 4), (4, 5), ([2], [0]), ValueError),
                              ((3, 4), (4, 4), ([1, 1], [0, 1]), ValueError),
                              ((3, 4), (4, 5), ([1.0], [0]), TypeError),
                              ((3, 4), (4, 5), "ab", TypeError),
                              ((3, 4), (4, 5), ([1], [0], [0]), TypeError)]:
        with pytest.raises(exc):
            la.tensordot_axes(s1, s2, axes)


def test_vecdot_axis_rules():
    assert la.vecdot_axis((2, 3, 4), (3, 4), -1) == (-1, (2, 3))
    assert la.vecdot_axis((2, 3, 4), (3, 4), -2) == (-2, (2, 4))
    assert la.vecdot_axis((2, 3, 4), (3, 4), 0) == (-2, (2, 4))    # 0 → -N with N = 2
    assert la.vecdot_axis((5,), (5,), 0) == (-1, ())
    assert la.vecdot_axis((1, 5), (4, 5), -1) == (-1, (4,))
    for s1, s2, axis, exc in [((3,), (4,), -1, ValueError), ((2, 3), (3,), -2, ValueError),
                              ((2, 3), (2, 3), 2, ValueError), ((1, 3), (4, 3), 0, ValueError),
                              ((2, 3), (4, 3), -1, ValueError), ((2, 3), (2, 3), 1.0, TypeError),
                              ((), (3,), -1, ValueError)]:
        with pytest.raises(exc):
            la.vecdot_axis(s1, s2, axis)


def test_integer_exactness_bound():
    assert la.int_exact_bound_ok(2 ** 23 - 1, 2 ** 15, 2 ** 15)
    assert not la.int_exact_bound_ok(2 ** 23, 2 ** 15, 2 ** 15)
    assert la.int_exact_bound_ok(10 ** 6, 128, 255)
    assert not la.int_exact_bound_ok(2, 2 ** 31, 2 ** 31)
    assert la._max_abs_dtype(bd.int8) == 128 and la._max_abs_dtype(bd.uint16) == 65535


# ------------------------------------------------------------------ errors before any work
def _fake(shape, dtype=xp.float32, strides=None):
    st = contiguous_strides(shape) if strides is None else strides
    return xp.Array._new(1 << 20, shape, st, dtype, xp.Device(0), None)


def test_dtype_and_shape_errors():
    f, i, b = _fake((3, 3)), _fake((3, 3), xp.int32), _fake((3, 3), xp.bool)
    cases = [(lambda: la.matmul(b, b), TypeError),
             (lambda: la.matmul(f, i), TypeError),          # int × float: no promotion
             (lambda: la.matmul(f, _fake((4, 3))), ValueError),
             (lambda: la.matmul(_fake(()), f), ValueError),
             (lambda: la.matmul(_fake((2, 3, 3)), _fake((4, 3, 3))), ValueError),
             (lambda: la.matmul(f, np.ones((3, 3))), TypeError),
             (lambda: la.matmul(_fake((3, 3), bd.dtypes.float8_e4m3), f), bd.UnsupportedError),
             (lambda: la.tensordot(b, b, axes=1), TypeError),
             (lambda: la.tensordot(f, _fake((4, 3)), axes=1), ValueError),
             (lambda: la.vecdot(f, _fake((3, 4))), ValueError),
             (lambda: la.vecdot(f, i), TypeError),
             (lambda: la.vecdot(b, b), TypeError),
             (lambda: linalg.outer(f, f), ValueError),
             (lambda: linalg.outer(_fake((3,), xp.bool), _fake((3,), xp.bool)), TypeError),
             (lambda: gx.linear(f, f, activation="tanh"), bd.UnsupportedError),
             (lambda: gx.linear(i, i), TypeError),
             (lambda: gx.linear(_fake((3, 3), xp.complex64), _fake((3, 3), xp.complex64)),
              bd.UnsupportedError),
             (lambda: gx.linear(f, _fake((3,))), ValueError),
             (lambda: gx.linear(f, _fake((2, 4))), ValueError),
             (lambda: gx.linear(_fake(()), f), ValueError),
             (lambda: gx.linear(f, f, _fake((4,))), ValueError),
             ]
    for call, exc in cases:
        with pytest.raises(exc):
            call()
    assert f.__matmul__(3) is NotImplemented and f.__rmatmul__(2.0) is NotImplemented
    assert f.__imatmul__([1]) is NotImplemented
    with pytest.raises(TypeError):
        f @ 2


def test_namespace_exports():
    """The lines the lead adds to array_api/__init__.py."""
    for mod, name in ((la, "matmul"), (la, "tensordot"), (la, "vecdot"),
                      (la, "matrix_transpose"), (gx, "linear")):
        assert getattr(xp, name) is getattr(mod, name), name
        assert name in xp.__all__
    assert xp.linalg is linalg and "linalg" in xp.__all__


#: the 2024.12 standard's linalg functions and their parameters (as the spec stubs spell them)
_SPEC = {
    "cholesky": ["x", "upper"], "cross": ["x1", "x2", "axis"], "det": ["x"],
    "diagonal": ["x", "offset"], "eigh": ["x"], "eigvalsh": ["x"], "inv": ["x"],
    "matmul": ["x1", "x2"], "matrix_norm": ["x", "keepdims", "ord"],
    "matrix_power": ["x", "n"], "matrix_rank": ["x", "rtol"], "matrix_transpose": ["x"],
    "outer": ["x1", "x2"], "pinv": ["x", "rtol"], "qr": ["x", "mode"], "slogdet": ["x"],
    "solve": ["x1", "x2"], "svd": ["x", "full_matrices"], "svdvals": ["x"],
    "tensordot": ["x1", "x2", "axes"], "trace": ["x", "offset", "dtype"],
    "vecdot": ["x1", "x2", "axis"], "vector_norm": ["x", "axis", "keepdims", "ord"],
}


def test_linalg_module():
    assert set(linalg.STANDARD) == set(_SPEC)
    assert set(linalg.__all__) == set(linalg.STANDARD + linalg.EXTENSIONS)
    for name, params in _SPEC.items():
        fn = getattr(linalg, name)
        assert list(inspect.signature(fn).parameters) == params, name
    assert linalg.matmul is la.matmul and linalg.tensordot is la.tensordot
    assert linalg.vecdot is la.vecdot and linalg.matrix_transpose is xp.matrix_transpose
    assert linalg.trace is xp.trace
    # argument checks that come before any plan: dtype, rank, squareness, options
    for fn in (linalg.cholesky, linalg.det, linalg.eigh, linalg.eigvalsh, linalg.inv,
               linalg.slogdet, linalg.eig, linalg.eigvals):
        with pytest.raises(ValueError):
            fn(_fake((3, 4)))
        with pytest.raises(ValueError):
            fn(_fake((3,)))
        with pytest.raises(TypeError):
            fn(_fake((3, 3), xp.int32))
        with pytest.raises(TypeError):
            fn(np.eye(3))
    for fn in (linalg.qr, linalg.svd, linalg.svdvals, linalg.pinv, linalg.matrix_rank,
               linalg.lu_factor):
        with pytest.raises(TypeError):
            fn(_fake((3, 3), xp.int64))
    with pytest.raises(ValueError):
        linalg.qr(_fake((3, 3)), mode="r")
    with pytest.raises(ValueError):
        linalg.solve(_fake((3, 3)), _fake((4,)))
    with pytest.raises(ValueError):
        linalg.solve(_fake((3, 3)), _fake((2, 4, 2)))
    with pytest.raises(ValueError):
        linalg.cross(_fake((4, 3)), _fake((4, 2)))
    with pytest.raises(ValueError):
        linalg.cross(_fake((3, 4)), _fake((3, 4)), axis=0)     # must be negative
    with pytest.raises(ValueError):
        linalg.matrix_norm(_fake((3, 3)), ord=3)
    with pytest.raises(ValueError):
        linalg.vector_norm(_fake((3, 3)), axis=(0, 0))
    with pytest.raises(TypeError):
        linalg.vector_norm(_fake((3, 3), xp.int32))
    # the standard's signatures (the conformance suite's test_signatures checks them)
    assert list(inspect.signature(linalg.vector_norm).parameters) == ["x", "axis", "keepdims",
                                                                       "ord"]
    assert list(inspect.signature(linalg.cross).parameters) == ["x1", "x2", "axis"]
    assert "rtol" in inspect.signature(linalg.pinv).parameters
    x = _fake((2, 3, 4))
    for off in (-3, -1, 0, 1, 2, 4):
        d = linalg.diagonal(x, offset=off)
        ref = np.diagonal(np.zeros((2, 3, 4)), offset=off, axis1=-2, axis2=-1)
        assert d.shape == ref.shape
        if d.shape[-1]:
            i0, j0 = (0, off) if off >= 0 else (-off, 0)
            assert d._ptr == x._ptr + (i0 * 4 + j0) * 4 and d.strides == (12, 5)
    with pytest.raises(ValueError):
        linalg.diagonal(_fake((3,)))
    with pytest.raises(ValueError):
        linalg.matrix_power(_fake((3, 4)), 2)
    with pytest.raises(TypeError):
        linalg.matrix_power(_fake((3, 3)), 1.5)


# ------------------------------------------------------------------------ fake host device
_NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8,
       "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u16": np.uint16,
       "u32": np.uint32, "u64": np.uint64, "c64": np.complex64, "c128": np.complex128}


def _host(v: TensorView) -> np.ndarray:
    """A writable numpy view of a strided TensorView whose pointer is host memory."""
    npd = np.dtype(_NP[v.dtype.short])
    if v.numel == 0:
        return np.empty(v.shape, npd)
    lo, hi = v.span_elements()
    isz = npd.itemsize
    buf = np.frombuffer((ctypes.c_char * ((hi - lo + 1) * isz)).from_address(v.ptr + lo * isz),
                        npd)
    return np.lib.stride_tricks.as_strided(buf[-lo:], v.shape, tuple(s * isz for s in v.strides))


def _gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


class _Recorder:
    def __init__(self):
        self.gemms = []


@pytest.fixture
def fake(monkeypatch):
    import baracuda_dsl.ops.gemm.gemm as gm
    from array_api import _copy, _dispatch, _elementwise_functions as ef
    from array_api import _plans, _statistical_functions as sf

    keep = []
    rec = _Recorder()

    def allocate(nbytes, device):
        a = np.zeros(int(nbytes) + 512, np.uint8)
        keep.append(a)
        return (a.ctypes.data + 255) // 256 * 256, a

    def memset(ptr, pattern, count, stream=0):
        n = count * len(pattern)
        np.frombuffer((ctypes.c_char * n).from_address(ptr), np.uint8)[:] = np.tile(
            np.frombuffer(pattern, np.uint8), count)
        return True

    def launch(self, bound, stream, ws):
        a, b, c, bias = bound
        d = self.desc
        rec.gemms.append((d, a, b, c))
        r = d.alpha * (_host(a).astype(np.float64) @ _host(b).astype(np.float64))
        if d.beta:
            r = r + d.beta * _host(c).astype(np.float64)
        if bias is not None:
            r = r + _host(bias).astype(np.float64)
        r = {"bias_relu": lambda t: np.maximum(t, 0), "bias_gelu": _gelu,
             "bias_silu": lambda t: t / (1 + np.exp(-t))}.get(d.epilogue, lambda t: t)(r)
        _host(c)[...] = r

    def copy_strided(ptr, shape, strides, dtype, ordinal, owner, dst_ptr):
        src = TensorView(ptr, shape, strides, dtype, ordinal)
        dst = TensorView(dst_ptr, shape, contiguous_strides(shape), dtype, ordinal)
        _host(dst)[...] = _host(src)

    def from_np(arr, dt):
        arr = np.array(np.asarray(arr).astype(np.dtype(_NP[dt.short])), order="C")
        out = xp.Array._empty(arr.shape, dt, xp.Device(0))
        if arr.size:
            ctypes.memmove(out._ptr, arr.ctypes.data, arr.nbytes)
        return out

    def cast(x, dt):
        return from_np(_host(x.__baracuda_view__()), dt)

    monkeypatch.setattr(_dev, "allocate", allocate)
    monkeypatch.setattr(_dev, "htod", lambda p, h: ctypes.memmove(p, h.ctypes.data, h.nbytes))
    monkeypatch.setattr(_dev, "dtoh", lambda h, p: ctypes.memmove(h.ctypes.data, p, h.nbytes))
    monkeypatch.setattr(_dev, "memset", memset)
    monkeypatch.setattr(bd.plan, "plan_arch", lambda pref: bd.ArchSku.SM90A)
    monkeypatch.setattr(gm.GemmPlan, "_launch", launch)
    monkeypatch.setattr(_copy, "copy_strided", copy_strided)
    monkeypatch.setattr(_dispatch, "cast", cast)
    monkeypatch.setattr(ef, "multiply", lambda a, b: from_np(
        _host(a.__baracuda_view__()) * _host(b.__baracuda_view__()), a.dtype))
    monkeypatch.setattr(ef, "conj", lambda a: from_np(np.conj(_host(a.__baracuda_view__())),
                                                      a.dtype))

    def red(fn):
        def f(x, axis=None, dtype=None, keepdims=False):
            h = _host(x.__baracuda_view__())
            r = fn(h, axis=axis) if dtype is None else fn(h, axis=axis, dtype=np.int64)
            return from_np(np.asarray(r), dtype or x.dtype)
        return f

    monkeypatch.setattr(sf, "sum", red(np.sum))
    monkeypatch.setattr(sf, "max", red(np.max))
    monkeypatch.setattr(sf, "min", red(np.min))
    _plans.select.cache_clear()
    yield rec
    _plans.select.cache_clear()


def _dev_array(a, dt=None):
    return xp.asarray(a) if dt is None else xp.asarray(a, dtype=dt)


RNG = np.random.default_rng(0)


def _rand(shape, npd=np.float64):
    return RNG.standard_normal(shape).astype(npd)


def _close(x, ref, rtol=1e-12):
    got = x.to_numpy().astype(np.float64) if x.dtype.kind != "c" else x.to_numpy()
    assert got.shape == np.shape(ref), (got.shape, np.shape(ref))
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("s1,s2", [((5,), (5,)), ((5,), (5, 3)), ((4, 5), (5,)),
                                   ((4, 5), (5, 3)), ((2, 4, 5), (5, 3)), ((5,), (2, 5, 3)),
                                   ((2, 1, 4, 5), (3, 5, 6)), ((3, 4, 5), (1, 5, 6)),
                                   ((2, 3, 4, 5), (2, 1, 5, 6)), ((0, 4, 5), (5, 2)),
                                   ((4, 0), (0, 3)), ((1, 5), (5, 1))])
def test_fake_matmul_broadcasting(fake, s1, s2):
    a, b = _rand(s1), _rand(s2)
    r = la.matmul(_dev_array(a), _dev_array(b))
    _close(r, np.matmul(a, b))
    assert r.dtype == xp.float64


def test_fake_matmul_paths(fake):
    a, w = _rand((2, 3, 4, 5)), _rand((5, 6))
    fake.gemms.clear()
    _close(la.matmul(_dev_array(a), _dev_array(w)), a @ w)
    assert len(fake.gemms) == 1 and fake.gemms[0][0].m == 24       # batch folded into M
    bb = _rand((3, 5, 6))
    fake.gemms.clear()
    _close(la.matmul(_dev_array(a), _dev_array(bb)), a @ bb)
    assert len(fake.gemms) == 6 and all(g[0].m == 4 for g in fake.gemms)   # launch loop
    # non-collapsible batch dims (x1 broadcast on the outer dim, x2 on the inner one)
    x1, x2 = _rand((1, 3, 4, 5)), _rand((2, 1, 5, 6))
    fake.gemms.clear()
    _close(la.matmul(_dev_array(x1), _dev_array(x2)), x1 @ x2)
    assert len(fake.gemms) == 6
    # transposed / sliced / negative-stride views are used in place
    m = _rand((7, 9))
    d = _dev_array(m)
    fake.gemms.clear()
    _close(d.mT @ d, m.T @ m)
    assert fake.gemms[0][1].strides == (1, 9)
    m2 = _rand((9, 5))
    e = _dev_array(m2)
    _close(d[::2, ::-1] @ e[::-1, ::2], m[::2, ::-1] @ m2[::-1, ::2])
    _close(la.matmul(d[1], d.mT), m[1] @ m.T)


def test_fake_matmul_dtypes(fake):
    a, b = _rand((3, 4, 6)), _rand((6, 5))
    r = la.matmul(_dev_array(a, xp.float32), _dev_array(b, xp.float64))
    assert r.dtype == xp.float64
    _close(r, a.astype(np.float32).astype(np.float64) @ b)
    h = la.matmul(_dev_array(a, xp.float16), _dev_array(b, xp.float16))
    assert h.dtype == xp.float16
    _close(h, a.astype(np.float16).astype(np.float64) @ b.astype(np.float16), rtol=5e-3)
    # a half operand with no unit stride is made dense first (tensor-core ready)
    hv = _dev_array(_rand((8, 12)), xp.float16)[::2, ::3]
    fake.gemms.clear()
    la.matmul(hv, _dev_array(_rand((4, 2)), xp.float16))
    assert 1 in fake.gemms[-1][1].strides
    # complex: four real GEMMs over strided part views
    ca = _rand((2, 3, 4)) + 1j * _rand((2, 3, 4))
    cb = _rand((4, 5)) + 1j * _rand((4, 5))
    fake.gemms.clear()
    rc = la.matmul(_dev_array(ca, xp.complex128), _dev_array(cb, xp.complex128))
    assert rc.dtype == xp.complex128 and len(fake.gemms) == 4
    np.testing.assert_allclose(rc.to_numpy(), ca @ cb, rtol=1e-12, atol=1e-12)
    r64 = la.matmul(_dev_array(ca[0].astype(np.complex64)), _dev_array(cb, xp.complex128))
    np.testing.assert_allclose(r64.to_numpy(), ca[0].astype(np.complex64) @ cb, rtol=1e-6)


def test_fake_matmul_integers(fake):
    a = RNG.integers(-128, 128, (3, 4, 7)).astype(np.int8)
    b = RNG.integers(0, 256, (7, 5)).astype(np.uint8)
    r = la.matmul(_dev_array(a), _dev_array(b))
    assert r.dtype == xp.int16
    np.testing.assert_array_equal(r.to_numpy(), (a.astype(np.int64) @ b).astype(np.int16))
    s = RNG.integers(-100, 100, (4, 7)).astype(np.int8)
    r8 = la.matmul(_dev_array(s), _dev_array(s.T.copy()))
    np.testing.assert_array_equal(r8.to_numpy(), s @ s.T)                  # wraps like numpy
    big = RNG.integers(-2 ** 20, 2 ** 20, (4, 9)).astype(np.int64)
    r64 = la.matmul(_dev_array(big), _dev_array(big.T.copy()))
    np.testing.assert_array_equal(r64.to_numpy(), big @ big.T)
    u = RNG.integers(0, 2 ** 20, (3, 9)).astype(np.uint32)
    np.testing.assert_array_equal(la.matmul(_dev_array(u), _dev_array(u.T.copy())).to_numpy(),
                                  u @ u.T)
    huge = RNG.integers(-2 ** 62, 2 ** 62, (2, 3, 5))                     # elementwise path
    hb = RNG.integers(-2 ** 62, 2 ** 62, (5, 4))
    fake.gemms.clear()
    np.testing.assert_array_equal(la.matmul(_dev_array(huge), _dev_array(hb)).to_numpy(),
                                  huge @ hb)                                # wraps like numpy
    assert fake.gemms == []
    wide = np.full((257, 256), 2 ** 40, np.int64)                           # too big for it
    with pytest.raises(bd.UnsupportedError):
        la.matmul(_dev_array(wide), _dev_array(wide[:256].T.copy()))
    fake.gemms.clear()
    ok = RNG.integers(-2 ** 20, 2 ** 20, (257, 256))                        # value-checked
    np.testing.assert_array_equal(la.matmul(_dev_array(ok), _dev_array(ok[:256].T.copy()))
                                  .to_numpy(), ok @ ok[:256].T)
    assert len(fake.gemms) == 1
    z = np.zeros((2, 3), np.int64)
    z[0, 0] = 2 ** 62
    np.testing.assert_array_equal(                                          # x2 all zero
        la.matmul(_dev_array(z), _dev_array(np.zeros((3, 2), np.int64))).to_numpy(), 0)


@pytest.mark.parametrize("s1,s2,axes", TD_CASES)
def test_fake_tensordot(fake, s1, s2, axes):
    a, b = _rand(s1), _rand(s2)
    _close(la.tensordot(_dev_array(a), _dev_array(b), axes=axes),
           np.tensordot(a, b, axes=axes))


def test_fake_tensordot_views_and_copies(fake):
    a, b = _rand((3, 4, 5)), _rand((4, 5, 6))
    da, db = _dev_array(a), _dev_array(b)
    fake.gemms.clear()
    _close(la.tensordot(da, db), np.tensordot(a, b))
    g = fake.gemms[0]
    assert (g[0].m, g[0].n, g[0].k) == (3, 6, 20) and g[1].ptr == da._ptr   # views, no copy
    pa = xp.permute_dims(da, (2, 0, 1))
    _close(la.tensordot(pa, db, axes=([2, 0], [0, 1])),
           np.tensordot(a.transpose(2, 0, 1), b, axes=([2, 0], [0, 1])))


def test_fake_vecdot_outer_linear(fake):
    a, b = _rand((2, 3, 4)), _rand((3, 4))
    for axis in (-1, -2, 0, 1):
        ax = axis - 2 if axis >= 0 else axis
        ref = np.sum(np.moveaxis(a, ax, -1) * np.moveaxis(b, ax, -1), axis=-1)
        _close(la.vecdot(_dev_array(a), _dev_array(b), axis=axis), ref)
    ca = _rand((3, 4)) + 1j * _rand((3, 4))
    cb = _rand((4,)) + 1j * _rand((4,))
    np.testing.assert_allclose(la.vecdot(_dev_array(ca), _dev_array(cb)).to_numpy(),
                               np.sum(np.conj(ca) * cb, axis=-1), rtol=1e-12)
    ia = RNG.integers(-100, 100, (5, 6)).astype(np.int8)
    r = la.vecdot(_dev_array(ia), _dev_array(ia))
    assert r.dtype == xp.int8
    np.testing.assert_array_equal(r.to_numpy(), np.sum(ia.astype(np.int64) ** 2, -1)
                                  .astype(np.int8))
    x, y = _rand((5,)), _rand((7,))
    _close(linalg.outer(_dev_array(x), _dev_array(y)), np.outer(x, y))
    xx, w, bias = _rand((2, 3, 5)), _rand((4, 5)), _rand((4,))
    ref = xx @ w.T
    _close(gx.linear(_dev_array(xx), _dev_array(w)), ref)
    _close(gx.linear(_dev_array(xx), _dev_array(w), _dev_array(bias)), ref + bias)
    for act, fn in (("relu", lambda t: np.maximum(t, 0)), ("gelu", _gelu),
                    ("silu", lambda t: t / (1 + np.exp(-t)))):
        _close(gx.linear(_dev_array(xx), _dev_array(w), _dev_array(bias), activation=act),
               fn(ref + bias))
        _close(gx.linear(_dev_array(xx), _dev_array(w), activation=act), fn(ref))
    fake.gemms.clear()
    _close(gx.linear(_dev_array(xx)[:, ::-1], _dev_array(w)), xx[:, ::-1] @ w.T)  # copy path
    assert fake.gemms[0][0].m == 6
    _close(gx.linear(_dev_array(xx[0, 0]), _dev_array(w)), xx[0, 0] @ w.T)
    assert gx.linear(_dev_array(np.zeros((0, 5))), _dev_array(w)).shape == (0, 4)


def test_fake_operators_and_matrix_power(fake):
    m = _rand((4, 4))
    d = _dev_array(m)
    _close(d @ d, m @ m)
    t = _dev_array(m.copy())
    t2 = t
    t @= d
    assert t is t2
    _close(t, m @ m)
    with pytest.raises(ValueError):
        t @= _dev_array(_rand((4, 3)))               # result shape (4, 3) != (4, 4)
    with pytest.raises(TypeError):
        f = _dev_array(m.astype(np.float32))
        f @= d                                       # result dtype float64
    for n in (1, 2, 3, 5):
        _close(linalg.matrix_power(d, n), np.linalg.matrix_power(m, n), rtol=1e-10)
