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

import functools
import inspect
import operator

from baracuda_dsl.errors import UnsupportedError

from . import _copy
from ._array_object import Array
from ._creation_functions import eye
from ._linear_algebra_functions import matmul, matrix_transpose, outer, tensordot, vecdot
from ._manipulation_functions import ascontiguousarray, broadcast_to, diagonal_view
from ._plans import check_operand
from ._reduction_extensions import trace

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
    check_operand(x, "diagonal")
    if x.ndim < 2:
        raise ValueError("diagonal: x must have at least two dimensions")
    return diagonal_view(x, operator.index(offset))


def matrix_power(x, n, /) -> Array:
    """x raised to the integer power ``n`` >= 0 over the last two (square) axes, by repeated
    squaring with ``matmul`` (about 2·log2(n) GEMMs); n = 0 gives identity matrices of x's
    dtype.  n < 0 needs ``inv``: UnsupportedError."""
    check_operand(x, "matrix_power")
    if isinstance(n, bool):
        raise TypeError("matrix_power: n must be an int")
    n = operator.index(n)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"matrix_power: x must be (..., M, M), got shape {x.shape}")
    if n < 0:
        raise UnsupportedError("matrix_power: negative powers need linalg.inv, which is not "
                               f"wired; wired linalg functions: {', '.join(WIRED)}")
    if n == 0:
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
        result = _copy.contiguous_copy(x)
    return result


def _unwired(fn):
    """Decorate a stub with the standard's signature: calling it raises UnsupportedError (a
    NotImplementedError) naming the wired linalg functions; introspection (inspect.signature,
    the conformance suite's signature tests) sees the standard's parameters."""
    name = fn.__name__

    @functools.wraps(fn)
    def stub(*args, **kwargs):
        inspect.signature(fn).bind(*args, **kwargs)  # a wrong call is a TypeError first
        raise UnsupportedError(f"linalg.{name} is not wired in this namespace; wired linalg "
                               f"functions: {', '.join(WIRED)}")

    stub.__doc__ = (f"Not wired: raises UnsupportedError (a NotImplementedError) naming the wired "
                    f"linalg functions ({', '.join(WIRED)}).")
    return stub


@_unwired
def cholesky(x, /, *, upper=False): ...
@_unwired
def cross(x1, x2, /, *, axis=-1): ...
@_unwired
def det(x, /): ...
@_unwired
def eigh(x, /): ...
@_unwired
def eigvalsh(x, /): ...
@_unwired
def inv(x, /): ...
@_unwired
def matrix_norm(x, /, *, keepdims=False, ord="fro"): ...
@_unwired
def matrix_rank(x, /, *, rtol=None): ...
@_unwired
def pinv(x, /, *, rtol=None): ...
@_unwired
def qr(x, /, *, mode="reduced"): ...
@_unwired
def slogdet(x, /): ...
@_unwired
def solve(x1, x2, /): ...
@_unwired
def svd(x, /, *, full_matrices=True): ...
@_unwired
def svdvals(x, /): ...
@_unwired
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2): ...
