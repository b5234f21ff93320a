"""Backward (vector–Jacobian products) of the FFTs, for autograd frameworks built on this
namespace (extensions in ``xp.fft``): ``fft_backward`` (fft / ifft / fftn / ifftn),
``rfftn_backward`` (rfft / rfftn) and ``irfftn_backward`` (irfft / irfftn).

Convention: PyTorch's (the conjugate Wirtinger gradient of a real loss).  Each transform is linear,
so its backward is its adjoint, another FFT with the *dual* norm (backward ↔ forward, ortho ↔
ortho): the adjoint of ``fftn(·, norm)`` is ``ifftn(·, dual norm)`` and the other way round.
Zero padding / trimming by ``s`` / ``n`` becomes trimming / zero padding of the gradient.

- c2c: gx = ifftn(g, axes, dual) (fftn's; ``inverse=True``: fftn(g, axes, dual)), resized to x.
- r2c (``rfftn``): gx = Re ifftn(ĝ, axes, dual), ĝ = g zero-padded from n//2 + 1 to n along the
  last axis (the bins rfft drops carry no gradient).
- c2r (``irfftn``): gy = w ∘ rfftn(g, axes, dual) with w = 2 for the bins 0 < k < n/2 that stand
  for two conjugate bins of the full spectrum, 1 for k = 0 and k = n/2; then resized to y.
Cost: one FFT of the gradient's size (plus a pad / weight pass).
"""

from __future__ import annotations

import operator

import numpy as np

from . import _dtypes as _dt
from . import _fft_functions as _fft
from ._array_object import Array
from ._fft_functions import resize_axes

_DUAL = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _norm_axes(axes, ndim: int, what: str) -> list:
    if axes is None:
        return list(range(ndim))
    axes = [axes] if isinstance(axes, int) else list(axes)
    out = []
    for a in axes:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"{what}: axis {a} out of range for {ndim} dimensions")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: repeated axes {axes}")
    return out


def _dual(norm: str, what: str) -> str:
    if norm not in _DUAL:
        raise ValueError(f"{what}: norm must be 'backward', 'ortho' or 'forward', got {norm!r}")
    return _DUAL[norm]


def _resize(x: Array, axes: list, extents) -> Array:
    return resize_axes(x, list(axes), list(extents))


def _check_grad(g, what: str) -> Array:
    if not isinstance(g, Array):
        raise TypeError(f"{what}: grad must be an array_api Array, got {type(g).__name__}")
    return g


def fft_backward(grad: Array, x_shape, *, axes=None, norm: str = "backward",
                  inverse: bool = False, real_input: bool = False) -> Array:
    """Gradient of x for y = fftn(x, s, axes, norm) (``inverse``: ifftn) given gy = ``grad``
    (y's shape): the dual-norm inverse transform of grad over ``axes`` (the same axes as the
    forward; None: all), trimmed / zero-padded back to ``x_shape``; ``real_input``: x was real
    (promoted by fft), so its gradient is the real part."""
    from ._elementwise_functions import real

    what = "fft_backward"
    grad = _check_grad(grad, what)
    ax = _norm_axes(axes, grad.ndim, what)
    dual = _dual(norm, what)
    if ax:
        g = (_fft.fftn if inverse else _fft.ifftn)(grad, axes=ax, norm=dual)
    else:
        g = grad
    g = _resize(g, ax, [x_shape[a] for a in ax])
    return real(g) if real_input and _dt.isdtype(g.dtype, "complex floating") else g


def rfftn_backward(grad: Array, x_shape, *, s=None, axes=None, norm: str = "backward") -> Array:
    """Gradient of the real x for y = rfftn(x, s, axes, norm) given gy = ``grad`` (y's shape,
    the last axis of ``axes`` halved to n//2 + 1): Re ifftn(ĝ, axes, dual norm) with ĝ = grad
    zero-padded to the full length n along the last axis, resized to ``x_shape``.  ``s``: the
    forward's ``s`` (None: x's extents)."""
    from ._elementwise_functions import real

    what = "rfftn_backward"
    grad = _check_grad(grad, what)
    ax = _norm_axes(axes, grad.ndim, what)
    if not ax:
        raise ValueError(f"{what}: rfftn transforms at least one axis")
    sizes = [x_shape[a] for a in ax] if s is None else [int(v) for v in s]
    g = _resize(grad, [ax[-1]], [sizes[-1]])
    g = _fft.ifftn(g, axes=ax, norm=_dual(norm, what))
    return _resize(real(g), ax, [x_shape[a] for a in ax])


def irfftn_backward(grad: Array, y_shape, *, s=None, axes=None, norm: str = "backward") -> Array:
    """Gradient of the complex y for x = irfftn(y, s, axes, norm) given gx = ``grad`` (x's real
    shape: the last axis has the output length n): w ∘ rfftn(grad, axes, dual norm), w = 2 on
    the bins 0 < k < n/2 (each the half of a conjugate pair), 1 elsewhere, resized to
    ``y_shape`` (y's last axis may have been padded / trimmed to n//2 + 1)."""
    from ._creation_functions import asarray
    from ._elementwise_functions import multiply

    what = "irfftn_backward"
    grad = _check_grad(grad, what)
    if not _dt.isdtype(grad.dtype, "real floating"):
        raise TypeError(f"{what}: grad must be real (irfftn's output), got {grad.dtype.name}")
    ax = _norm_axes(axes, grad.ndim, what)
    if not ax:
        raise ValueError(f"{what}: irfftn transforms at least one axis")
    n = grad.shape[ax[-1]] if s is None else int(s[-1])
    g = _fft.rfftn(grad, axes=ax, norm=_dual(norm, what))
    half = n // 2 + 1
    w = np.ones(half, np.float64)
    w[1:(n + 1) // 2] = 2.0
    shape = [1] * grad.ndim
    shape[ax[-1]] = half
    rt = _dt.float64 if g.dtype == _dt.complex128 else _dt.float32
    g = multiply(g, asarray(w.reshape(shape), dtype=rt, device=grad.device))
    return _resize(g, ax, [y_shape[a] for a in ax])
