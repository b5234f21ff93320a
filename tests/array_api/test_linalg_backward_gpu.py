"""``xp.linalg.*_backward`` on the GPU against central finite differences in float64 /
complex128: for a loss L(A) = Re Σ conj(G)·f(A) (phase- and sign-invariant forms for eigen /
singular vectors) the directional derivative (L(A + εD) − L(A − εD)) / 2ε must equal
Re Σ conj(gA)·D, the gradient the backward returns (PyTorch's convention), within 1e-6
relative — central differences are O(ε²) accurate and the forward runs in float64."""

import numpy as np
import pytest

from _fd_checks import check_directional as _check, dev64 as _d, host as _h, inner as _ip

pytestmark = pytest.mark.gpu


def _xp():
    import array_api as xp
    return xp


def _rand(rng, shape, complex_):
    a = rng.standard_normal(shape)
    return a + 1j * rng.standard_normal(shape) if complex_ else a


def _herm(x):
    return (x + np.conj(np.swapaxes(x, -1, -2))) / 2


@pytest.mark.parametrize("cplx", [False, True])
def test_inv_solve_det_slogdet(cplx):
    xp = _xp()
    rng = np.random.default_rng(1)
    a = _rand(rng, (2, 5, 5), cplx) + 4 * np.eye(5)
    b = _rand(rng, (2, 5, 3), cplx)
    g = _rand(rng, (2, 5, 5), cplx)
    da = _rand(rng, a.shape, cplx)
    # inv
    y = xp.linalg.inv(_d(a))
    _check(lambda m: _ip(g, _h(xp.linalg.inv(_d(m)))), a, da,
           _h(xp.linalg.inv_backward(y, _d(g))))
    # solve (both operands)
    gx = _rand(rng, (2, 5, 3), cplx)
    db = _rand(rng, b.shape, cplx)
    x = xp.linalg.solve(_d(a), _d(b))
    ga, gb = xp.linalg.solve_backward(_d(a), x, _d(gx))
    _check(lambda m: _ip(gx, _h(xp.linalg.solve(_d(m), _d(b)))), a, da, _h(ga))
    _check(lambda m: _ip(gx, _h(xp.linalg.solve(_d(a), _d(m)))), b, db, _h(gb))
    # det
    gd = _rand(rng, (2,), cplx)
    det = xp.linalg.det(_d(a))
    _check(lambda m: _ip(gd, _h(xp.linalg.det(_d(m)))), a, da,
           _h(xp.linalg.det_backward(_d(a), det, _d(gd))))
    # slogdet (the log|det| output)
    gl = rng.standard_normal(2)
    _check(lambda m: _ip(gl, _h(xp.linalg.slogdet(_d(m)).logabsdet)), a, da,
           _h(xp.linalg.slogdet_backward(_d(a), _d(gl))))


@pytest.mark.parametrize("cplx", [False, True])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_backward(cplx, upper):
    xp = _xp()
    rng = np.random.default_rng(2)
    m = _rand(rng, (3, 6, 6), cplx)
    a = m @ np.conj(np.swapaxes(m, -1, -2)) + 6 * np.eye(6)
    g = _rand(rng, a.shape, cplx)
    g = np.triu(g) if upper else np.tril(g)
    da = _herm(_rand(rng, a.shape, cplx))
    lf = xp.linalg.cholesky(_d(a), upper=upper)
    ga = _h(xp.linalg.cholesky_backward(lf, _d(g), upper=upper))
    _check(lambda x: _ip(g, _h(xp.linalg.cholesky(_d(x), upper=upper))), a, da, ga)


@pytest.mark.parametrize("cplx", [False, True])
def test_eigh_backward(cplx):
    xp = _xp()
    rng = np.random.default_rng(3)
    a = _herm(_rand(rng, (2, 6, 6), cplx))
    gw = rng.standard_normal((2, 6))
    gmat = rng.standard_normal((2, 6, 6))          # loss Σ G∘|V|²: invariant to phases
    da = _herm(_rand(rng, a.shape, cplx))

    def loss(x):
        w, v = xp.linalg.eigh(_d(x))
        return float(np.sum(gw * _h(w)) + np.sum(gmat * np.abs(_h(v)) ** 2))

    w, v = xp.linalg.eigh(_d(a))
    gv = 2 * gmat * _h(v)
    ga = _h(xp.linalg.eigh_backward(w, v, _d(gw), _d(gv)))
    _check(loss, a, da, ga)


@pytest.mark.parametrize("shape", [(5, 5), (7, 4), (4, 7)])
def test_svd_backward(shape):
    xp = _xp()
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2,) + shape)
    k = min(shape)
    gs = rng.standard_normal((2, k))
    gu = rng.standard_normal((2, shape[0], k))
    gv = rng.standard_normal((2, k, shape[1]))
    da = rng.standard_normal(a.shape)

    def loss(x):
        u, s, vh = xp.linalg.svd(_d(x), full_matrices=False)
        return float(np.sum(gs * _h(s)) + np.sum(gu * _h(u) ** 2) + np.sum(gv * _h(vh) ** 2))

    u, s, vh = xp.linalg.svd(_d(a), full_matrices=False)
    ga = _h(xp.linalg.svd_backward(u, s, vh, _d(2 * gu * _h(u)), _d(gs), _d(2 * gv * _h(vh))))
    _check(loss, a, da, ga)
    # singular values alone (complex too)
    c = _rand(rng, (3, 4), True)
    gsv = rng.standard_normal(3)
    u2, _s2, vh2 = xp.linalg.svd(_d(c), full_matrices=False)
    _check(lambda x: float(np.sum(gsv * _h(xp.linalg.svdvals(_d(x))))), c,
           _rand(rng, c.shape, True), _h(xp.linalg.svdvals_backward(u2, vh2, _d(gsv))))


@pytest.mark.parametrize("cplx", [False, True])
@pytest.mark.parametrize("shape", [(6, 6), (8, 5)])
def test_qr_backward(cplx, shape):
    xp = _xp()
    rng = np.random.default_rng(5)
    a = _rand(rng, (2,) + shape, cplx)
    k = shape[1]
    gq = _rand(rng, (2, shape[0], k), cplx)
    gr = np.triu(_rand(rng, (2, k, k), cplx))
    da = _rand(rng, a.shape, cplx)

    def loss(x):
        q, r = xp.linalg.qr(_d(x))
        return _ip(gq, _h(q)) + _ip(gr, _h(r))

    q, r = xp.linalg.qr(_d(a))
    _check(loss, a, da, _h(xp.linalg.qr_backward(q, r, _d(gq), _d(gr))))
