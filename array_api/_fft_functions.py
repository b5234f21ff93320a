"""The standard's Fourier transforms (2024.12 ``fft`` extension), on cuFFT; gathered with their
backward (``_fft_backward``) by ``array_api.fft``.

``fft ifft fftn ifftn rfft irfft rfftn irfftn hfft ihfft`` run :class:`baracuda_dsl.ops.fft.FFTPlan`
(cuFFT through nvmath-python; any axes, any input strides, cuFFT calls of rank ≤ 3 chained for
more axes); ``fftfreq rfftfreq`` build the frequencies on the host in float64 (NumPy's formula)
and upload them; ``fftshift ifftshift`` are ``roll`` by half of each axis.  Extensions:
``fft_backward rfftn_backward irfftn_backward`` (the transforms' adjoints, for autograd;
``array_api._fft_backward``).

Semantics as NumPy's ``numpy.fft`` and the standard:

- ``n`` / ``s`` zero-pad or trim the input along the transformed axes (``s[i] == -1``: keep that
  axis' size; ``irfft*`` / ``hfft``: ``n`` is the OUTPUT length of the last axis, default
  ``2·(M − 1)``, and the input is padded / trimmed to ``n//2 + 1``); a length < 1 is a
  ValueError; ``s`` without ``axes`` uses the last ``len(s)`` axes (NumPy's rule);
- ``norm``: "backward" (forward ×1, inverse ×1/N), "ortho" (×1/√N), "forward" (forward ×1/N,
  inverse ×1); anything else is a ValueError;
- ``axes``: ints in ``[-ndim, ndim)``, any order (the last one is the halved axis of ``rfftn`` /
  ``irfftn``), no repeats (ValueError);
- dtypes: ``fft ifft fftn ifftn`` take complex64 / complex128 (real floating inputs are
  promoted to the complex dtype of matching precision: float16 / bfloat16 / float32 →
  complex64, float64 → complex128); ``rfft rfftn ihfft`` take real floating (complex → TypeError;
  float16 / bfloat16 compute in float32) and return complex of matching precision; ``irfft
  irfftn hfft`` take complex (real floating promoted as above) and return real of matching
  precision; bool / integer inputs are a TypeError everywhere;
- ``hfft(x, n, norm) = irfft(conj(x), n, swapped norm)``, ``ihfft(x, n, norm) =
  conj(rfft(x, n, swapped norm))`` (backward ↔ forward), as NumPy.

Results are new dense arrays; empty batches give empty results.  Precision: cuFFT in the
component type (float32 or float64), errors O(log2 N)·eps relative to the data's norm.
"""

from __future__ import annotations

import operator

import numpy as np

from baracuda_dsl.tensor import contiguous_strides

from . import _dtypes as _dt
from . import _plans
from ._array_object import Array
from ._creation_functions import asarray, zeros
from ._data_type_functions import astype
from ._elementwise_functions import conj
from ._manipulation_functions import roll

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

NORMS = ("backward", "ortho", "forward")
_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}
_REAL_FLOATS = (_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64)


# ------------------------------------------------------------------------- argument checks
def _check_norm(norm, name: str) -> str:
    if not isinstance(norm, str) or norm not in NORMS:
        raise ValueError(f"{name}: norm must be one of {', '.join(map(repr, NORMS))}, got "
                         f"{norm!r}")
    return norm


def _check_length(n, name: str, what: str = "n") -> int:
    if isinstance(n, bool):
        raise TypeError(f"{name}: {what} must be an int, got {n!r}")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"{name}: {what} must be an int, got {n!r}") from None
    if n < 1:
        raise ValueError(f"{name}: invalid number of data points ({n}) specified")
    return n


def _axis(axis, ndim: int, name: str) -> int:
    if isinstance(axis, bool):
        raise TypeError(f"{name}: axis must be an int, got {axis!r}")
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name}: axis must be an int, got {axis!r}") from None
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of range for a rank-{ndim} array")
    return axis % ndim


def _axes(s, axes, ndim: int, name: str) -> list:
    """The transformed axes (order kept) for ``s`` / ``axes`` as NumPy's ``fftn``."""
    if axes is None:
        if s is None:
            return list(range(ndim))
        s = _seq(s, name, "s")
        if len(s) > ndim:
            raise ValueError(f"{name}: s has {len(s)} entries for a rank-{ndim} array")
        return list(range(ndim - len(s), ndim))
    if isinstance(axes, int) and not isinstance(axes, bool):
        axes = (axes,)
    out = [_axis(a, ndim, name) for a in _seq(axes, name, "axes")]
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axis in axes {tuple(axes)}")
    return out


def _seq(v, name: str, what: str) -> tuple:
    try:
        return tuple(v)
    except TypeError:
        raise TypeError(f"{name}: {what} must be a sequence of ints, got {v!r}") from None


def _sizes(x, s, axes: list, name: str, real_out: bool) -> list:
    """The logical transform length of each axis: ``s`` (−1: the input's; None: the input's,
    with ``2·(M − 1)`` for the last axis when ``real_out``)."""
    if s is None:
        sizes = [x.shape[a] for a in axes]
        if real_out and axes:
            sizes[-1] = 2 * (sizes[-1] - 1)
    else:
        s = _seq(s, name, "s")
        if len(s) != len(axes):
            raise ValueError(f"{name}: s has {len(s)} entries but {len(axes)} axes are "
                             f"transformed")
        sizes = []
        for k, (v, a) in enumerate(zip(s, axes)):
            if isinstance(v, bool):
                raise TypeError(f"{name}: s must hold ints, got {s!r}")
            v = operator.index(v)
            if v == -1:
                v = x.shape[a]
                if real_out and k == len(axes) - 1:
                    v = 2 * (v - 1)
            sizes.append(v)
    return [_check_length(v, name, "s" if s is not None else "n") for v in sizes]


def _complex_input(x, name: str) -> Array:
    """x as complex64 / complex128 (real floating inputs promoted); TypeError otherwise."""
    _plans.check_operand(x, name)
    if x.dtype in (_dt.complex64, _dt.complex128):
        return x
    if x.dtype in _REAL_FLOATS:
        return astype(x, _dt.complex128 if x.dtype == _dt.float64 else _dt.complex64)
    raise TypeError(f"{name}: x must have a floating-point dtype (complex64 / complex128, or a "
                    f"real floating dtype, promoted), got {x.dtype.name}")


def _real_input(x, name: str) -> Array:
    """x as float32 / float64 (float16 / bfloat16 promoted); TypeError otherwise."""
    _plans.check_operand(x, name)
    if x.dtype in (_dt.float32, _dt.float64):
        return x
    if x.dtype in (_dt.float16, _dt.bfloat16):
        return astype(x, _dt.float32)
    raise TypeError(f"{name}: x must have a real floating-point dtype, got {x.dtype.name}")


def resize_axes(x: Array, axes: list, extents: list) -> Array:
    """x trimmed (a view) or zero-padded (a new array) to ``extents`` along ``axes``."""
    if all(x.shape[a] == e for a, e in zip(axes, extents)):
        return x
    key = [slice(None)] * x.ndim
    shape = list(x.shape)
    for a, e in zip(axes, extents):
        key[a] = slice(0, min(e, x.shape[a]))
        shape[a] = e
    view = x[tuple(key)]
    if tuple(shape) == tuple(view.shape):
        return view
    out = zeros(tuple(shape), dtype=x.dtype, device=x.device)
    out[tuple(key)] = view
    return out


def _transform(name: str, x: Array, kind: str, axes: list, sizes: list, norm: str,
               inverse: bool) -> Array:
    """Run the FFTPlan of ``kind`` over ``axes`` with logical lengths ``sizes`` (c2r: the last
    is the real output length) on x (already of the kind's input dtype)."""
    from baracuda_dsl.ops.fft import FFTArgs, FFTDescriptor, FFTPlan

    extents = list(sizes)
    if kind == "c2r":
        extents[-1] = sizes[-1] // 2 + 1
    xr = resize_axes(x, axes, extents)
    dense = xr.strides == contiguous_strides(xr.shape)
    desc = FFTDescriptor(tuple(xr.shape), tuple(axes), kind, xr.dtype, inverse, norm,
                         sizes[-1] if kind == "c2r" else None, dense)
    plan = _plans.select(FFTPlan, desc)
    out = Array._empty(desc.out_shape, desc.out_dtype, x.device)
    _plans.run(plan, FFTArgs(xr, out), x.device)
    return out


def _one_axis(x, axis, name: str) -> list:
    if x.ndim == 0:
        raise ValueError(f"{name}: x must have at least one dimension")
    return [_axis(axis, x.ndim, name)]


# ------------------------------------------------------------------------- complex transforms
def _c2c1(name: str, x, n, axis, norm, inverse: bool) -> Array:
    norm = _check_norm(norm, name)
    x = _complex_input(x, name)
    axes = _one_axis(x, axis, name)
    sizes = [x.shape[axes[0]] if n is None else n]
    sizes = [_check_length(sizes[0], name)]
    return _transform(name, x, "c2c", axes, sizes, norm, inverse)


def _c2cn(name: str, x, s, axes, norm, inverse: bool) -> Array:
    norm = _check_norm(norm, name)
    x = _complex_input(x, name)
    ax = _axes(s, axes, x.ndim, name)
    if not ax:
        return astype(x, x.dtype, copy=True)
    sizes = _sizes(x, s, ax, name, real_out=False)
    return _transform(name, x, "c2c", ax, sizes, norm, inverse)


def fft(x: Array, /, *, n=None, axis: int = -1, norm: str = "backward") -> Array:
    """One-dimensional DFT along ``axis``: ``X[k] = Σ_j x[j]·exp(−2πi·jk/n)`` (``n`` pads /
    trims the axis).  Complex in, same complex dtype out (real floating promoted)."""
    return _c2c1("fft", x, n, axis, norm, False)


def ifft(x: Array, /, *, n=None, axis: int = -1, norm: str = "backward") -> Array:
    """One-dimensional inverse DFT along ``axis``: ``x[j] = (1/n)·Σ_k X[k]·exp(+2πi·jk/n)``
    ("backward" norm)."""
    return _c2c1("ifft", x, n, axis, norm, True)


def fftn(x: Array, /, *, s=None, axes=None, norm: str = "backward") -> Array:
    """n-dimensional DFT over ``axes`` (default: all), each padded / trimmed to ``s``."""
    return _c2cn("fftn", x, s, axes, norm, False)


def ifftn(x: Array, /, *, s=None, axes=None, norm: str = "backward") -> Array:
    """n-dimensional inverse DFT over ``axes`` (default: all), each padded / trimmed to ``s``."""
    return _c2cn("ifftn", x, s, axes, norm, True)


# ------------------------------------------------------------------------- real transforms
def rfft(x: Array, /, *, n=None, axis: int = -1, norm: str = "backward") -> Array:
    """DFT of a real signal along ``axis``: the ``n//2 + 1`` non-negative frequencies.  Real
    floating in, complex of matching precision out; complex input is a TypeError."""
    norm = _check_norm(norm, "rfft")
    x = _real_input(x, "rfft")
    axes = _one_axis(x, axis, "rfft")
    size = _check_length(x.shape[axes[0]] if n is None else n, "rfft")
    return _transform("rfft", x, "r2c", axes, [size], norm, False)


def irfft(x: Array, /, *, n=None, axis: int = -1, norm: str = "backward") -> Array:
    """Inverse of ``rfft``: ``n`` real outputs (default ``2·(M − 1)``) from the first
    ``n//2 + 1`` entries of x along ``axis`` (padded / trimmed).  Complex in, real of matching
    precision out."""
    norm = _check_norm(norm, "irfft")
    x = _complex_input(x, "irfft")
    axes = _one_axis(x, axis, "irfft")
    size = _check_length(2 * (x.shape[axes[0]] - 1) if n is None else n, "irfft")
    return _transform("irfft", x, "c2r", axes, [size], norm, True)


def rfftn(x: Array, /, *, s=None, axes=None, norm: str = "backward") -> Array:
    """n-dimensional DFT of a real array: full transforms over ``axes[:-1]``, the
    ``s[-1]//2 + 1`` non-negative frequencies along ``axes[-1]``."""
    norm = _check_norm(norm, "rfftn")
    x = _real_input(x, "rfftn")
    ax = _axes(s, axes, x.ndim, "rfftn")
    if not ax:
        raise ValueError("rfftn: at least one axis must be transformed")
    sizes = _sizes(x, s, ax, "rfftn", real_out=False)
    return _transform("rfftn", x, "r2c", ax, sizes, norm, False)


def irfftn(x: Array, /, *, s=None, axes=None, norm: str = "backward") -> Array:
    """Inverse of ``rfftn``: real output of sizes ``s`` (default: the input's, ``2·(M − 1)``
    along ``axes[-1]``)."""
    norm = _check_norm(norm, "irfftn")
    x = _complex_input(x, "irfftn")
    ax = _axes(s, axes, x.ndim, "irfftn")
    if not ax:
        raise ValueError("irfftn: at least one axis must be transformed")
    sizes = _sizes(x, s, ax, "irfftn", real_out=True)
    return _transform("irfftn", x, "c2r", ax, sizes, norm, True)


def hfft(x: Array, /, *, n=None, axis: int = -1, norm: str = "backward") -> Array:
    """DFT of a Hermitian-symmetric signal given by its first half: ``irfft(conj(x), n)`` with
    the norm's direction swapped ("backward": no scaling).  Complex in, real out."""
    norm = _check_norm(norm, "hfft")
    x = _complex_input(x, "hfft")
    axes = _one_axis(x, axis, "hfft")
    size = _check_length(2 * (x.shape[axes[0]] - 1) if n is None else n, "hfft")
    extent = size // 2 + 1
    xr = resize_axes(x, axes, [extent])
    return _transform("hfft", conj(xr), "c2r", axes, [size], _SWAP[norm], True)


def ihfft(x: Array, /, *, n=None, axis: int = -1, norm: str = "backward") -> Array:
    """Inverse of ``hfft``: ``conj(rfft(x, n))`` with the norm's direction swapped ("backward":
    ×1/n).  Real floating in, complex out."""
    norm = _check_norm(norm, "ihfft")
    x = _real_input(x, "ihfft")
    axes = _one_axis(x, axis, "ihfft")
    size = _check_length(x.shape[axes[0]] if n is None else n, "ihfft")
    return conj(_transform("ihfft", x, "r2c", axes, [size], _SWAP[norm], False))


# ------------------------------------------------------------------------- helpers
def _freq_dtype(dtype, name: str):
    if dtype is None:
        return _dt.float32
    dt = _dt.as_dtype(dtype)
    if dt not in _REAL_FLOATS:
        raise TypeError(f"{name}: dtype must be a real floating-point dtype, got {dt.name}")
    return dt


def _check_spacing(d, name: str) -> float:
    if isinstance(d, bool):
        raise TypeError(f"{name}: d must be a real number, got {d!r}")
    try:
        return float(d)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: d must be a real number, got {d!r}") from None


def fftfreq(n: int, /, *, d: float = 1.0, dtype=None, device=None) -> Array:
    """The sample frequencies of an ``n``-point DFT with spacing ``d``:
    ``[0, 1, …, ⌈n/2⌉−1, −⌊n/2⌋, …, −1] / (d·n)``, shape ``(n,)``, ``dtype`` (default float32),
    computed in float64 on the host and rounded once."""
    n = _check_length(n, "fftfreq")
    d = _check_spacing(d, "fftfreq")
    dt = _freq_dtype(dtype, "fftfreq")
    k = np.arange(n, dtype=np.int64)
    k = np.where(k < (n + 1) // 2, k, k - n)
    return asarray(k * (1.0 / (n * d)), dtype=dt, device=device)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype=None, device=None) -> Array:
    """The non-negative sample frequencies of an ``n``-point real DFT (``rfft``):
    ``[0, 1, …, ⌊n/2⌋] / (d·n)``, shape ``(n//2 + 1,)``, ``dtype`` (default float32)."""
    n = _check_length(n, "rfftfreq")
    d = _check_spacing(d, "rfftfreq")
    dt = _freq_dtype(dtype, "rfftfreq")
    k = np.arange(n // 2 + 1, dtype=np.int64)
    return asarray(k * (1.0 / (n * d)), dtype=dt, device=device)


def _shift(name: str, x, axes, sign: int) -> Array:
    _plans.check_operand(x, name)
    if axes is None:
        ax = list(range(x.ndim))
    else:
        if isinstance(axes, int) and not isinstance(axes, bool):
            axes = (axes,)
        ax = [_axis(a, x.ndim, name) for a in _seq(axes, name, "axes")]
    if not ax:
        return asarray(x, copy=True)
    shifts = tuple(sign * (x.shape[a] // 2) for a in ax)
    return roll(x, shifts, axis=tuple(ax))


def fftshift(x: Array, /, *, axes=None) -> Array:
    """The zero-frequency term moved to the centre: ``roll`` by ``n//2`` along each of ``axes``
    (default: all).  Same dtype and shape."""
    return _shift("fftshift", x, axes, 1)


def ifftshift(x: Array, /, *, axes=None) -> Array:
    """Inverse of ``fftshift``: ``roll`` by ``−(n//2)`` along each of ``axes``."""
    return _shift("ifftshift", x, axes, -1)

