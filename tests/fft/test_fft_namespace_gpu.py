"""``array_api.fft`` on the GPU against ``numpy.fft`` (float64 / complex128 references on the
same rounded inputs): every transform with n / s padding and trimming, every norm, arbitrary
axes, strided inputs, dtype promotion, hfft / ihfft, empty arrays, the frequency helpers and
the shifts."""

import numpy as np
import pytest

from tests.fft._bounds import bound
from tests._checks import assert_close, assert_equal

pytestmark = pytest.mark.gpu


def _xp():
    import array_api as xp
    from array_api import fft

    return xp, fft


def _check(out, ref, lengths, dtype_name, what=""):
    r = np.asarray(ref)
    scale = float(np.sqrt(np.mean(np.abs(r) ** 2))) if r.size else 0.0
    assert_close(out.to_numpy(), r, bound(lengths, dtype_name), 0.0,
                 scale=np.full(r.shape, scale), what=what)


def _rand(rng, shape, dtype):
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _ref_in(a):
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


ONE_D = [((64,), {}), ((5, 97), dict(norm="ortho")), ((5, 97), dict(n=128)),
         ((5, 97), dict(n=50, axis=-1)), ((12, 7), dict(axis=0, norm="forward")),
         ((3, 10, 4), dict(axis=1, n=13)), ((1000,), dict(n=1))]


@pytest.mark.parametrize("name", ["fft", "ifft"])
@pytest.mark.parametrize("shape,kw", ONE_D)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_fft_ifft(name, shape, kw, dtype):
    xp, F = _xp()
    a = _rand(np.random.default_rng(1), shape, dtype)
    out = getattr(F, name)(xp.asarray(a), **kw)
    ref = getattr(np.fft, name)(_ref_in(a), **kw)
    assert out.dtype == getattr(xp, dtype) and out.shape == ref.shape
    n = ref.shape[kw.get("axis", -1)]
    _check(out, ref, [n], dtype, f"{name} {shape} {kw}")


@pytest.mark.parametrize("shape,kw", ONE_D)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rfft_ihfft(shape, kw, dtype):
    xp, F = _xp()
    a = _rand(np.random.default_rng(2), shape, dtype)
    cdt = "complex64" if dtype == "float32" else "complex128"
    for name in ("rfft", "ihfft"):
        out = getattr(F, name)(xp.asarray(a), **kw)
        ref = getattr(np.fft, name)(_ref_in(a), **kw)
        assert out.dtype == getattr(xp, cdt) and out.shape == ref.shape
        n = kw.get("n", shape[kw.get("axis", -1)])
        _check(out, ref, [n], dtype, f"{name} {shape} {kw}")


@pytest.mark.parametrize("shape,kw", [((5, 33), {}), ((5, 33), dict(n=64)),
                                      ((5, 33), dict(n=65, norm="ortho")),
                                      ((5, 33), dict(n=20)), ((9, 4), dict(axis=0, n=17)),
                                      ((4, 3), dict(n=1, norm="forward"))])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_irfft_hfft(shape, kw, dtype):
    xp, F = _xp()
    rng = np.random.default_rng(3)
    rdt = "float32" if dtype == "complex64" else "float64"
    axis = kw.get("axis", -1)
    n = kw.get("n", 2 * (shape[axis] - 1))
    # a Hermitian-consistent half spectrum of length n//2+1 (then padded / trimmed to shape)
    full = list(shape)
    full[axis] = n
    half = np.fft.rfft(rng.standard_normal(full), axis=axis)
    a = np.zeros(shape, np.complex128)
    m = min(shape[axis], half.shape[axis])
    sl = [slice(None)] * len(shape)
    sl[axis] = slice(0, m)
    a[tuple(sl)] = half[tuple(sl)]
    a = a.astype(dtype)
    out = F.irfft(xp.asarray(a), **kw)
    ref = np.fft.irfft(_ref_in(a), **kw)
    assert out.dtype == getattr(xp, rdt) and out.shape == ref.shape
    _check(out, ref, [n], dtype, f"irfft {shape} {kw}")
    ca = np.conj(a)
    out = F.hfft(xp.asarray(ca), **kw)
    ref = np.fft.hfft(_ref_in(ca), **kw)
    assert out.dtype == getattr(xp, rdt) and out.shape == ref.shape
    _check(out, ref, [n], dtype, f"hfft {shape} {kw}")


N_D = [((16, 24), {}), ((6, 7, 8), dict(axes=(0, 2))), ((6, 7, 8), dict(axes=(2, 0))),
       ((3, 4, 5, 6), dict(axes=(0, 1, 2, 3), norm="ortho")),
       ((3, 4, 5, 6), dict(axes=(1, 3), s=(6, 3))), ((3, 4, 5), dict(s=(7, 9))),
       ((2, 3, 4, 5, 3), dict(axes=(4, 0, 2, 1), norm="forward")),
       ((4, 5, 6), dict(axes=(-1, 1), s=(8, -1)))]


def _np_kw(kw, shape, irfft=False):
    """numpy's spelling of kw (s = -1 resolved; s without axes: the last len(s) axes)."""
    kw = dict(kw)
    if "s" in kw:
        ax = kw.get("axes", tuple(range(len(shape) - len(kw["s"]), len(shape))))
        s = []
        for i, (v, a) in enumerate(zip(kw["s"], ax)):
            if v == -1:
                v = 2 * (shape[a] - 1) if irfft and i == len(ax) - 1 else shape[a]
            s.append(v)
        kw["s"], kw["axes"] = s, ax
    return kw


@pytest.mark.parametrize("name", ["fftn", "ifftn"])
@pytest.mark.parametrize("shape,kw", N_D)
def test_fftn_ifftn(name, shape, kw):
    xp, F = _xp()
    a = _rand(np.random.default_rng(4), shape, "complex64")
    out = getattr(F, name)(xp.asarray(a), **kw)
    nkw = _np_kw(kw, shape)
    ref = getattr(np.fft, name)(_ref_in(a), **nkw)
    assert out.dtype == xp.complex64 and out.shape == ref.shape
    ax = nkw.get("axes", range(len(shape)))
    _check(out, ref, [ref.shape[i] for i in ax], "complex64", f"{name} {shape} {kw}")


@pytest.mark.parametrize("shape,kw", N_D)
def test_rfftn_irfftn(shape, kw):
    xp, F = _xp()
    a = _rand(np.random.default_rng(5), shape, "float64")
    out = F.rfftn(xp.asarray(a), **kw)
    nkw = _np_kw(kw, shape)
    ref = np.fft.rfftn(a, **nkw)
    assert out.dtype == xp.complex128 and out.shape == ref.shape
    ax = list(nkw.get("axes", range(len(shape))))
    lengths = [nkw["s"][i] if "s" in nkw else shape[a_] for i, a_ in enumerate(ax)]
    _check(out, ref, lengths, "float64", f"rfftn {shape} {kw}")
    # back: irfftn of that spectrum (Hermitian) with the real sizes
    back = F.irfftn(out, s=tuple(lengths), axes=tuple(ax), norm=kw.get("norm", "backward"))
    bref = np.fft.irfftn(ref, s=lengths, axes=ax, norm=kw.get("norm", "backward"))
    assert back.dtype == xp.float64 and back.shape == bref.shape
    _check(back, bref, lengths, "float64", f"irfftn {shape} {kw}")


def test_round_trips():
    xp, F = _xp()
    rng = np.random.default_rng(6)
    a = _rand(rng, (4, 33, 10), "complex128")
    x = xp.asarray(a)
    _check(F.ifft(F.fft(x, axis=1), axis=1), a, [33], "complex128")
    _check(F.ifftn(F.fftn(x)), a, [4, 33, 10], "complex128")
    r = rng.standard_normal((6, 11))
    xr = xp.asarray(r)
    _check(F.irfft(F.rfft(xr), n=11), r, [11], "float64")
    _check(F.irfftn(F.rfftn(xr), s=(6, 11), axes=(0, 1)), r, [6, 11], "float64")
    _check(F.hfft(F.ihfft(xr), n=11), r, [11], "float64")


def test_strided_inputs():
    xp, F = _xp()
    a = _rand(np.random.default_rng(7), (8, 40), "complex64")
    x = xp.asarray(a)
    _check(F.fft(x[:, ::2]), np.fft.fft(_ref_in(a[:, ::2])), [20], "complex64")
    _check(F.fft(x.T, axis=0), np.fft.fft(_ref_in(a.T), axis=0), [40], "complex64")
    _check(F.fftn(x[::-1, 3:30]), np.fft.fftn(_ref_in(a[::-1, 3:30])), [8, 27], "complex64")
    r = np.random.default_rng(8).standard_normal((10, 12)).astype(np.float32)
    xr = xp.asarray(r)
    _check(F.rfft(xr[::3, 1:], axis=0), np.fft.rfft(_ref_in(r[::3, 1:]), axis=0), [4],
           "float32")


def test_real_inputs_promote_to_complex():
    xp, F = _xp()
    r = np.random.default_rng(9).standard_normal((3, 16))
    out = F.fft(xp.asarray(r.astype(np.float32)))
    assert out.dtype == xp.complex64
    _check(out, np.fft.fft(r.astype(np.float32).astype(np.float64)), [16], "complex64")
    out = F.ifftn(xp.asarray(r))
    assert out.dtype == xp.complex128
    _check(out, np.fft.ifftn(r), [3, 16], "complex128")
    out = F.rfft(xp.asarray(r.astype(np.float16)))
    assert out.dtype == xp.complex64
    _check(out, np.fft.rfft(r.astype(np.float16).astype(np.float64)), [16], "complex64")


def test_empty_arrays():
    xp, F = _xp()
    x = xp.zeros((0, 8), dtype=xp.complex64)
    assert F.fft(x).shape == (0, 8)
    assert F.rfft(xp.zeros((0, 8), dtype=xp.float32)).shape == (0, 5)
    assert F.irfft(x).shape == (0, 14)
    assert F.fftn(x, axes=(1,)).shape == (0, 8)
    with pytest.raises(ValueError):
        F.fft(x, axis=0)                 # n = 0 points
    with pytest.raises(TypeError):
        F.rfft(x)
    with pytest.raises(TypeError):
        F.fft(xp.zeros((4,), dtype=xp.int32))


@pytest.mark.parametrize("n", [1, 2, 7, 8, 101])
@pytest.mark.parametrize("dtype", [None, "float32", "float64"])
def test_frequencies(n, dtype):
    xp, F = _xp()
    dt = None if dtype is None else getattr(xp, dtype)
    f = F.fftfreq(n, d=0.3, dtype=dt)
    assert f.dtype == (xp.float32 if dtype is None else dt) and f.shape == (n,)
    want = np.fft.fftfreq(n, 0.3).astype(dtype or "float32")
    assert_equal(f.to_numpy(), want)
    g = F.rfftfreq(n, d=2.0, dtype=dt, device=f.device)
    assert g.shape == (n // 2 + 1,) and g.device == f.device
    assert_equal(g.to_numpy(), np.fft.rfftfreq(n, 2.0).astype(dtype or "float32"))


@pytest.mark.parametrize("shape,axes", [((7,), None), ((4, 5), None), ((4, 5), 0),
                                        ((4, 5, 6), (2, 0)), ((3, 8), (-1,))])
def test_shifts(shape, axes):
    xp, F = _xp()
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = xp.asarray(a)
    assert_equal(F.fftshift(x, axes=axes).to_numpy(), np.fft.fftshift(a, axes=axes))
    assert_equal(F.ifftshift(x, axes=axes).to_numpy(), np.fft.ifftshift(a, axes=axes))
    assert_equal(F.ifftshift(F.fftshift(x, axes=axes), axes=axes).to_numpy(), a)
