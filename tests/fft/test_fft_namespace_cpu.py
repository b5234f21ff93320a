"""``array_api.fft`` without a GPU: signatures, argument errors, and the shapes / dtypes /
descriptors every function produces, checked against ``numpy.fft`` on the host.  Device work is
replaced by stand-ins: arrays are metadata over fake addresses, plan runs are recorded, casts /
conj / zeros / slice assignment / roll return arrays of the right shape and dtype."""

import inspect

import numpy as np
import pytest

from array_api import fft as xfft
from array_api import _fft_functions as xfn
from array_api import _dtypes as _dt
from array_api._array_object import Array
from array_api._device import Device
from baracuda_dsl.ops.fft import FFTDescriptor
from baracuda_dsl.tensor import contiguous_strides

NAMES = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
         "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


class FakeArray(Array):
    """An Array over a fake address; slice assignment is recorded, not run."""

    __slots__ = ()
    writes: list = []

    def __setitem__(self, key, value):
        FakeArray.writes.append((tuple(self.shape), key, tuple(value.shape)))


_NEXT = [1 << 20]


def fake(shape, dtype):
    shape = tuple(shape)
    _NEXT[0] += 1 << 16
    return FakeArray._new(_NEXT[0], shape, contiguous_strides(shape), dtype, Device(0), None)


class Recorder:
    def __init__(self):
        self.runs = []

    def select(self, cls, desc):
        assert isinstance(desc, FFTDescriptor)
        return desc

    def run(self, plan, args, device):
        self.runs.append((plan, tuple(args.x.shape), args.x.dtype, tuple(args.out.shape),
                          args.out.dtype))

    check_operand = staticmethod(xfn._plans.check_operand)


class Empty:
    @staticmethod
    def _empty(shape, dtype, device):
        return fake(shape, dtype)


@pytest.fixture
def rec(monkeypatch):
    r = Recorder()
    FakeArray.writes = []
    monkeypatch.setattr(xfn, "_plans", r)
    monkeypatch.setattr(xfn, "Array", Empty)
    monkeypatch.setattr(xfn, "zeros", lambda shape, dtype, device: fake(shape, dtype))
    monkeypatch.setattr(xfn, "astype", lambda x, dt, copy=True: fake(x.shape, dt))
    monkeypatch.setattr(xfn, "conj", lambda x: fake(x.shape, x.dtype))
    monkeypatch.setattr(xfn, "asarray", lambda a, dtype=None, device=None, copy=None:
                        (a, dtype, device) if not isinstance(a, Array) else fake(a.shape,
                                                                                  a.dtype))
    monkeypatch.setattr(xfn, "roll", lambda x, shift, axis: ("roll", shift, axis))
    return r


def test_names_and_signatures():
    assert sorted(xfft.__all__) == sorted(NAMES + ["fft_backward", "rfftn_backward",
                                                   "irfftn_backward"])
    for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
        sig = inspect.signature(getattr(xfft, name))
        p = list(sig.parameters.values())
        assert [q.name for q in p] == ["x", "n", "axis", "norm"]
        assert p[0].kind is inspect.Parameter.POSITIONAL_ONLY
        assert all(q.kind is inspect.Parameter.KEYWORD_ONLY for q in p[1:])
        assert (p[1].default, p[2].default, p[3].default) == (None, -1, "backward")
    for name in ("fftn", "ifftn", "rfftn", "irfftn"):
        p = list(inspect.signature(getattr(xfft, name)).parameters.values())
        assert [q.name for q in p] == ["x", "s", "axes", "norm"]
        assert (p[1].default, p[2].default, p[3].default) == (None, None, "backward")
        assert all(q.kind is inspect.Parameter.KEYWORD_ONLY for q in p[1:])
    for name in ("fftfreq", "rfftfreq"):
        p = list(inspect.signature(getattr(xfft, name)).parameters.values())
        assert [q.name for q in p] == ["n", "d", "dtype", "device"]
        assert p[0].kind is inspect.Parameter.POSITIONAL_ONLY
        assert (p[1].default, p[2].default, p[3].default) == (1.0, None, None)
    for name in ("fftshift", "ifftshift"):
        p = list(inspect.signature(getattr(xfft, name)).parameters.values())
        assert [q.name for q in p] == ["x", "axes"] and p[1].default is None


C64, C128, F32, F64 = _dt.complex64, _dt.complex128, _dt.float32, _dt.float64
NP = {C64: np.complex64, C128: np.complex128, F32: np.float32, F64: np.float64,
      _dt.float16: np.float32, _dt.bfloat16: np.float32}


def _np_ref(name, shape, kw):
    """numpy's output shape for the same call on zeros."""
    z = np.zeros(shape, np.complex128 if name in ("fft", "ifft", "fftn", "ifftn", "irfft",
                                                  "irfftn", "hfft") else np.float64)
    return getattr(np.fft, name)(z, **kw).shape


ONE_D = [
    ((16,), {}), ((5, 7), dict(axis=0)), ((5, 7), dict(n=4)), ((5, 7), dict(n=12, axis=0)),
    ((3, 1, 9), dict(n=1, axis=-1, norm="ortho")), ((2, 3, 4), dict(axis=1, norm="forward")),
    ((0, 8), {}), ((6, 2), dict(n=3)),
]


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
@pytest.mark.parametrize("shape,kw", ONE_D)
@pytest.mark.parametrize("dt", [C64, C128, F32, F64])
def test_one_d_shapes_and_dtypes(rec, name, shape, kw, dt):
    real_in = name in ("rfft", "ihfft")
    x = fake(shape, dt)
    if real_in and dt in (C64, C128):
        with pytest.raises(TypeError):
            getattr(xfft, name)(x, **kw)
        return
    try:
        want_shape = _np_ref(name, shape, kw)
    except ValueError:
        with pytest.raises(ValueError):
            getattr(xfft, name)(x, **kw)
        return
    out = getattr(xfft, name)(x, **kw)
    assert tuple(out.shape) == want_shape
    single = dt in (C64, F32)
    if name in ("fft", "ifft", "rfft", "ihfft"):
        assert out.dtype == (C64 if single else C128)
    else:
        assert out.dtype == (F32 if single else F64)
    if 0 not in shape:
        (desc, xs, xdt, os, odt), = rec.runs
        assert os == want_shape and odt == out.dtype
        n = kw.get("n")
        ax = kw.get("axis", -1) % len(shape)
        if name in ("irfft", "hfft"):
            m = n if n is not None else 2 * (shape[ax] - 1)
            assert desc.kind == "c2r" and desc.out_last == m and xs[ax] == m // 2 + 1
        else:
            assert xs[ax] == (n if n is not None else shape[ax])
        norm = kw.get("norm", "backward")
        if name in ("hfft", "ihfft"):
            norm = {"backward": "forward", "forward": "backward"}.get(norm, norm)
        assert desc.norm == norm and desc.axes == (ax,)
        assert desc.inverse == (name in ("ifft", "irfft", "hfft"))


N_D = [
    ((4, 6), {}), ((4, 6), dict(axes=(0,))), ((4, 6), dict(axes=(1, 0))),
    ((2, 3, 4, 5), dict(axes=(0, 2))), ((2, 3, 4, 5), dict(axes=(3, 1, 0, 2), norm="ortho")),
    ((2, 3, 4), dict(s=(5, 2), axes=(0, 2))), ((2, 3, 4), dict(s=(3, 7), axes=(-1, 0))),
    ((2, 3, 4), dict(s=(-1, 6), axes=(1, 2))), ((3, 4, 5), dict(s=(2, 2))),
    ((2, 3, 4, 5, 6), {}),
]


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
@pytest.mark.parametrize("shape,kw", N_D)
def test_n_d_shapes_and_dtypes(rec, name, shape, kw):
    dt = F64 if name == "rfftn" else C64
    x = fake(shape, dt)
    npkw = dict(kw)
    if "s" in npkw:
        ax = npkw.get("axes", list(range(len(shape) - len(npkw["s"]), len(shape))))
        npkw["s"] = [shape[a] if v == -1 and not (name == "irfftn" and i == len(ax) - 1)
                     else (2 * (shape[a] - 1) if v == -1 else v)
                     for i, (v, a) in enumerate(zip(npkw["s"], ax))]
        npkw["axes"] = ax
    want = _np_ref(name, shape, npkw)
    out = getattr(xfft, name)(x, **kw)
    assert tuple(out.shape) == want
    assert out.dtype == {"fftn": C64, "ifftn": C64, "rfftn": C128, "irfftn": F32}[name]
    (desc, xs, xdt, os, odt), = rec.runs
    assert os == want
    axes = kw.get("axes")
    if axes is None:
        axes = range(len(shape) - len(kw["s"]), len(shape)) if "s" in kw else range(len(shape))
    assert desc.axes == tuple(a % len(shape) for a in axes)


def test_padding_builds_a_zero_array_and_trimming_a_view(rec):
    x = fake((4, 6), C64)
    xfft.fft(x, n=9)
    (shape, key, vshape), = FakeArray.writes
    assert shape == (4, 9) and vshape == (4, 6)
    assert rec.runs[-1][1] == (4, 9)
    FakeArray.writes = []
    xfft.fft(x, n=3)
    assert FakeArray.writes == [] and rec.runs[-1][1] == (4, 3)
    xfft.irfft(x, n=20)                         # input padded to 20//2+1 = 11
    assert FakeArray.writes[-1][0] == (4, 11) and rec.runs[-1][3] == (4, 20)


def test_real_inputs_promote(rec):
    out = xfft.fft(fake((8,), F32))
    assert out.dtype == C64 and rec.runs[-1][2] == C64
    assert xfft.fft(fake((8,), F64)).dtype == C128
    assert xfft.fft(fake((8,), _dt.float16)).dtype == C64
    assert xfft.rfft(fake((8,), _dt.bfloat16)).dtype == C64
    assert xfft.irfft(fake((8,), F64)).dtype == F64


@pytest.mark.parametrize("name", NAMES[:10])
@pytest.mark.parametrize("dt", [_dt.int32, _dt.int64, _dt.uint8, _dt.bool])
def test_non_floating_inputs_are_type_errors(rec, name, dt):
    with pytest.raises(TypeError):
        getattr(xfft, name)(fake((8,), dt))


@pytest.mark.parametrize("name", NAMES[:10])
def test_non_arrays_are_type_errors(rec, name):
    with pytest.raises(TypeError):
        getattr(xfft, name)(np.zeros(8, np.complex64))


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_one_d_argument_errors(rec, name):
    dt = F32 if name in ("rfft", "ihfft") else C64
    f = getattr(xfft, name)
    x = fake((4, 8), dt)
    for bad in ("none", None, "Ortho", 1):
        with pytest.raises(ValueError):
            f(x, norm=bad)
    for n in (0, -3):
        with pytest.raises(ValueError):
            f(x, n=n)
    for n in (2.0, True, "4"):
        with pytest.raises(TypeError):
            f(x, n=n)
    for axis in (2, -3):
        with pytest.raises(ValueError):
            f(x, axis=axis)
    with pytest.raises(TypeError):
        f(x, axis=1.0)
    with pytest.raises(ValueError):
        f(fake((), dt))
    assert rec.runs == []


def test_irfft_of_a_single_element_axis_needs_n(rec):
    with pytest.raises(ValueError):
        xfft.irfft(fake((4, 1), C64))
    with pytest.raises(ValueError):
        xfft.hfft(fake((4, 1), C64))
    assert xfft.irfft(fake((4, 1), C64), n=1).shape == (4, 1)


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
def test_n_d_argument_errors(rec, name):
    dt = F32 if name == "rfftn" else C64
    f = getattr(xfft, name)
    x = fake((4, 6, 8), dt)
    with pytest.raises(ValueError):
        f(x, axes=(0, 0))                       # repeated
    with pytest.raises(ValueError):
        f(x, axes=(0, -3))                      # repeated after normalising
    with pytest.raises(ValueError):
        f(x, axes=(3,))
    with pytest.raises(ValueError):
        f(x, s=(4, 4), axes=(0,))               # s / axes mismatch
    with pytest.raises(ValueError):
        f(x, s=(4, 0), axes=(0, 1))
    with pytest.raises(ValueError):
        f(x, s=(1, 2, 3, 4))                    # more sizes than axes
    with pytest.raises(TypeError):
        f(x, s=4, axes=(0,))
    with pytest.raises(ValueError):
        f(x, norm="ortho ")
    assert rec.runs == []


def test_empty_axes(rec):
    out = xfft.fftn(fake((3, 4), C64), axes=())
    assert out.shape == (3, 4) and rec.runs == []
    with pytest.raises(ValueError):
        xfft.rfftn(fake((3, 4), F32), axes=())


@pytest.mark.parametrize("n", [1, 2, 7, 8, 100])
@pytest.mark.parametrize("d", [1.0, 0.25, 3])
def test_fftfreq_values(rec, n, d):
    a, dt, dev = xfft.fftfreq(n, d=d)
    assert dt == F32 and dev is None and a.shape == (n,)
    np.testing.assert_allclose(a, np.fft.fftfreq(n, d), rtol=1e-15, atol=0)
    a, dt, dev = xfft.rfftfreq(n, d=d, dtype=F64, device="cuda:0")
    assert dt == F64 and dev == "cuda:0" and a.shape == (n // 2 + 1,)
    np.testing.assert_allclose(a, np.fft.rfftfreq(n, d), rtol=1e-15, atol=0)


def test_fftfreq_errors(rec):
    for f in (xfft.fftfreq, xfft.rfftfreq):
        with pytest.raises(ValueError):
            f(0)
        with pytest.raises(TypeError):
            f(4.0)
        with pytest.raises(TypeError):
            f(4, dtype=C64)
        with pytest.raises(TypeError):
            f(4, dtype=_dt.int32)
        with pytest.raises(TypeError):
            f(4, d="x")


def test_shift_logic(rec):
    x = fake((4, 5, 7), F32)
    assert xfft.fftshift(x) == ("roll", (2, 2, 3), (0, 1, 2))
    assert xfft.ifftshift(x) == ("roll", (-2, -2, -3), (0, 1, 2))
    assert xfft.fftshift(x, axes=-1) == ("roll", (3,), (2,))
    assert xfft.ifftshift(x, axes=(1, 0)) == ("roll", (-2, -2), (1, 0))
    with pytest.raises(ValueError):
        xfft.fftshift(x, axes=3)
    with pytest.raises(TypeError):
        xfft.fftshift(np.zeros(3))
    # rank 0 / no axes: a copy
    z = xfft.fftshift(fake((), F32))
    assert isinstance(z, Array) and z.shape == ()


def test_shift_matches_numpy_roll_semantics():
    # the shifts fftshift / ifftshift use are numpy's
    for n in range(1, 9):
        a = np.arange(n)
        np.testing.assert_array_equal(np.roll(a, n // 2), np.fft.fftshift(a))
        np.testing.assert_array_equal(np.roll(a, -(n // 2)), np.fft.ifftshift(a))
