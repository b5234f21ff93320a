"""``array_api.linalg``: the standard's linear algebra extension (2024.12).

Wired (GPU, see ``array_api._linear_algebra_functions`` for dtypes and precision):
``matmul``, ``matrix_transpose``, ``outer``, ``tensordot``, ``vecdot`` (the same functions as
the main namespace), ``trace`` (strided diagonal view + ``sum``), ``diagonal`` (a strided view,
no copy) and ``matrix_power`` for integer exponents n >= 0 (repeated squaring with matmul;
n = 0 gives the identity in x's dtype).

Not wired: the factorisations and solvers — ``cholesky cross det eigh eigvalsh inv
matrix_norm matrix_rank pinv qr slogdet solve svd svdvals vector_norm`` (and ``matrix_power``
with n < 0, which needs ``inv``).  The extension rules ask an implementation to aim to
provide every function of an extension it exposes, so these names **exist** and raise
``UnsupportedError`` (a ``NotImplementedError``) naming what is wired, rather than being absent:
``hasattr(xp, "linalg")`` then tells a consumer the extension is there, and a call to an
unwired function fails loudly with the list instead of an ``AttributeError``.
"""

from __future__ import annotations

import operator

from baracuda_dsl.errors import UnsupportedError

from ._array_object import Array
from ._linear_algebra_functions import matmul, matrix_transpose, outer, tensordot, vecdot
from ._statistical_functions import trace

WIRED = ("diagonal", "matmul", "matrix_power", "matrix_transpose", "outer", "tensordot",
         "trace", "vecdot")
NOT_WIRED = ("cholesky", "cross", "det", "eigh", "eigvalsh", "inv", "matrix_norm",
             "matrix_rank", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "vector_norm")

__all__ = ["diagonal", "matmul", "matrix_power", "matrix_transpose", "outer", "tensordot",
           "trace", "vecdot",
           "cholesky", "cross", "det", "eigh", "eigvalsh", "inv", "matrix_norm", "matrix_rank",
           "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "vector_norm"]


def diagonal(x, /, *, offset: int = 0) -> Array:
    """The ``offset`` diagonal of the last two axes (batched): a strided view of x
    (shape (..., k)); offset > 0 above the main diagonal, < 0 below."""
    if not isinstance(x, Array):
        raise TypeError(f"diagonal: expected an array_api Array, got {type(x).__name__}")
    if x.ndim < 2:
        raise ValueError("diagonal: x must have at least two dimensions")
    off = operator.index(offset)
    r, c = x.shape[-2:]
    sr, sc = x.strides[-2:]
    i0, j0 = (0, off) if off >= 0 else (-off, 0)
    k = max(0, min(r - i0, c - j0))
    start = (i0 * sr + j0 * sc) if k else 0
    return x._view(start, x.shape[:-2] + (k,), x.strides[:-2] + (sr + sc,))


def matrix_power(x, n, /) -> Array:
    """x raised to the integer power ``n`` >= 0 over the last two (square) axes, by repeated
    squaring with ``matmul`` (about 2·log2(n) GEMMs); n = 0 gives identity matrices of x's
    dtype.  n < 0 needs ``inv``: UnsupportedError."""
    if not isinstance(x, Array):
        raise TypeError(f"matrix_power: expected an array_api Array, got {type(x).__name__}")
    if isinstance(n, bool):
        raise TypeError("matrix_power: n must be an int")
    n = operator.index(n)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"matrix_power: x must be (..., M, M), got shape {x.shape}")
    if n < 0:
        raise UnsupportedError("matrix_power: negative powers need linalg.inv, which is not "
                               f"wired; wired linalg functions: {', '.join(WIRED)}")
    if n == 0:
        from ._creation_functions import eye
        from ._manipulation_functions import ascontiguousarray, broadcast_to

        e = eye(x.shape[-1], dtype=x.dtype, device=x.device)
        return ascontiguousarray(broadcast_to(e, x.shape))
    result = None
    base = x
    while True:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if not n:
            break
        base = matmul(base, base)
    if result is x:
        from ._manipulation_functions import _contiguous_copy

        result = _contiguous_copy(x)
    return result


def _unwired(name: str):
    def fn(*args, **kwargs):
        raise UnsupportedError(f"linalg.{name} is not wired in this namespace; wired linalg "
                               f"functions: {', '.join(WIRED)}")

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Not wired: raises UnsupportedError (a NotImplementedError) naming the wired "
                  f"linalg functions ({', '.join(WIRED)}).")
    return fn


cholesky = _unwired("cholesky")
cross = _unwired("cross")
det = _unwired("det")
eigh = _unwired("eigh")
eigvalsh = _unwired("eigvalsh")
inv = _unwired("inv")
matrix_norm = _unwired("matrix_norm")
matrix_rank = _unwired("matrix_rank")
pinv = _unwired("pinv")
qr = _unwired("qr")
slogdet = _unwired("slogdet")
solve = _unwired("solve")
svd = _unwired("svd")
svdvals = _unwired("svdvals")
vector_norm = _unwired("vector_norm")
