"""Finite-difference checks of backward formulas (the linalg / fft ``*_backward`` GPU tests):
for a real loss L the directional derivative (L(x + εD) − L(x − εD)) / 2ε must equal
Re Σ conj(g)·D, g the backward's gradient (PyTorch's conjugate-Wirtinger convention).  Central
differences in float64 / complex128 are O(ε²) accurate."""

import numpy as np

EPS = 1e-6
TOL = 1e-6


def dev64(a):
    """Host ``a`` as a float64 / complex128 ``array_api`` array."""
    import array_api as xp

    return xp.asarray(np.ascontiguousarray(a),
                      dtype=xp.complex128 if np.iscomplexobj(a) else xp.float64)


def host(x):
    """A device array on the host (numpy)."""
    return np.asarray(x.to_numpy())


def inner(g, d) -> float:
    """Re Σ conj(g)·d."""
    return float(np.real(np.sum(np.conj(g) * d)))


def check_directional(loss, x, d, grad, eps: float = EPS, tol: float = TOL) -> None:
    """Assert the central difference of ``loss`` at ``x`` along ``d`` matches ``grad``."""
    fd = (loss(x + eps * d) - loss(x - eps * d)) / (2 * eps)
    an = inner(grad, d)
    assert abs(fd - an) <= tol * max(1.0, abs(fd)), (fd, an)
