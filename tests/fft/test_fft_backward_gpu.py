"""``xp.fft.*_backward`` on the GPU against central finite differences in complex128 /
float64: for L(x) = Re Σ conj(G)·f(x) the directional derivative (L(x + εD) − L(x − εD)) / 2ε
must equal Re Σ conj(gx)·D with gx the backward's result (PyTorch's convention) — for fft /
ifft / fftn over some axes with padding and trimming, every norm, rfft / rfftn and irfft / irfftn
(perturbing the bins irfft reads as free complex numbers: 0 < k < n/2)."""

import numpy as np
import pytest

from _fd_checks import check_directional as _check, dev64 as _d, host as _h, inner as _ip

pytestmark = pytest.mark.gpu

NORMS = ["backward", "ortho", "forward"]


def _xp():
    import array_api as xp
    return xp


def _c(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("s,axes", [(None, (-1,)), ((12,), (1,)), ((5, 9), (0, 2)),
                                    ((4, 6, 7), None)])
def test_fft_backward(norm, inverse, s, axes):
    xp = _xp()
    rng = np.random.default_rng(1)
    x = _c(rng, (4, 8, 7))
    fn = xp.fft.ifftn if inverse else xp.fft.fftn
    y = fn(_d(x), s=s, axes=axes, norm=norm)
    g = _c(rng, y.shape)
    gx = xp.fft.fft_backward(_d(g), x.shape, axes=axes if axes is not None else
                             (None if s is None else tuple(range(-len(s), 0))),
                             norm=norm, inverse=inverse)
    assert gx.shape == x.shape
    _check(lambda v: _ip(g, _h(fn(_d(v), s=s, axes=axes, norm=norm))), x, _c(rng, x.shape),
           _h(gx))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("shape,s,axes", [((3, 10), None, (-1,)), ((3, 9), (12,), (-1,)),
                                          ((5, 6, 8), (4, 7), (0, 2))])
def test_rfft_backward(norm, shape, s, axes):
    xp = _xp()
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape)
    y = xp.fft.rfftn(_d(x), s=s, axes=axes, norm=norm)
    g = _c(rng, y.shape)
    gx = xp.fft.rfftn_backward(_d(g), x.shape, s=s, axes=axes, norm=norm)
    assert gx.shape == x.shape and str(gx.dtype) == "float64"
    _check(lambda v: _ip(g, _h(xp.fft.rfftn(_d(v), s=s, axes=axes, norm=norm))), x,
           rng.standard_normal(shape), _h(gx))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [10, 11])
def test_irfft_backward(norm, n):
    xp = _xp()
    rng = np.random.default_rng(3)
    y = _c(rng, (3, n // 2 + 1))
    y[:, 0] = y[:, 0].real
    if n % 2 == 0:
        y[:, -1] = y[:, -1].real
    x = xp.fft.irfft(_d(y), n=n, norm=norm)
    g = rng.standard_normal(x.shape)
    gy = xp.fft.irfftn_backward(_d(g), y.shape, s=(n,), axes=(-1,), norm=norm)
    assert gy.shape == y.shape
    d = _c(rng, y.shape)
    d[:, 0] = d[:, 0].real                       # bins whose imaginary part irfft drops
    if n % 2 == 0:
        d[:, -1] = d[:, -1].real
    _check(lambda v: float(np.sum(g * _h(xp.fft.irfft(_d(v), n=n, norm=norm)))), y, d, _h(gy))
