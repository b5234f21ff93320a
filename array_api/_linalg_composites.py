"""The linalg extension's functions built from other namespace functions: the norms
(``vector_norm``, ``matrix_norm``, ``cond``), ``cross``, ``matrix_rank``, ``pinv``, ``lstsq`` and
``matrix_power``.  Norms and ``cross`` are reductions / elementwise kernels of this package (no
vendor library); ``matrix_rank`` / ``pinv`` / ``lstsq`` / 2-norms run on the SVD, ``cond`` and
negative ``matrix_power`` on ``inv``.
"""

from __future__ import annotations

import math
import operator
from typing import NamedTuple

from baracuda_dsl.ops.elementwise.elementwise import broadcast_shapes

from . import _copy
from . import _dispatch
from . import _dtypes as _dt
from . import _plans
from ._array_object import Array
from ._manipulation_functions import reshape as _reshape
from ._data_type_functions import result_type
from ._reduce import reduction_axes
from ._linalg_factorizations import inv, matrix_operand, real_dtype, restore, svd, svdvals

_INF = float("inf")


def _abs(x: Array) -> Array:
    from ._elementwise_functions import abs as _a
    return _a(x)


def _floating(x, fn: str) -> Array:
    _plans.check_operand(x, fn)
    if not _dt.isdtype(x.dtype, ("real floating", "complex floating")):
        raise TypeError(f"{fn}: x must have a floating-point dtype, got {x.dtype.name}")
    return x


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2) -> Array:
    """Vector p-norm over ``axis`` (None: all elements; an int or a tuple of axes):
    ord = 2: sqrt(Σ|x|²) (a scaled reduction), 1: Σ|x|, inf: max|x|, -inf: min|x|, 0: the count
    of non-zeros, any other p: (Σ|x|^p)^(1/p).  The result has the real dtype of x (float16 /
    bfloat16 accumulate in float32)."""
    from ._elementwise_functions import not_equal, pow as _pow
    from ._reduce import stat_reduce
    from ._statistical_functions import max as _max, min as _min, sum as _sum

    x = _floating(x, "vector_norm")
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"vector_norm: ord must be an int or a float, got {type(ord).__name__}")
    axes = reduction_axes(axis, x.ndim)
    rt = real_dtype(x.dtype)
    a = _abs(x) if x.dtype != rt or ord != 2 else x
    if ord == 2:
        if math.prod(x.shape[i] for i in axes) == 0:
            return _sum(_abs(x), axis=axes, keepdims=keepdims)
        return stat_reduce("norm2", _abs(x) if x.dtype != rt else x, axes, keepdims)
    if ord == 1:
        return _sum(a, axis=axes, keepdims=keepdims)
    if ord == _INF:
        return _max(a, axis=axes, keepdims=keepdims)
    if ord == -_INF:
        return _min(a, axis=axes, keepdims=keepdims)
    if ord == 0:
        return _dispatch.cast(_sum(_dispatch.cast(not_equal(a, 0), rt), axis=axes,
                                   keepdims=keepdims), rt)
    p = float(ord)
    return _pow(_sum(_pow(a, p), axis=axes, keepdims=keepdims), 1.0 / p)


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro") -> Array:
    """Matrix norm over the last two axes: 'fro' sqrt(Σ|x|²), 'nuc' Σσ, 2 / -2 the largest /
    smallest singular value, 1 / -1 max / min column sum of |x|, inf / -inf max / min row sum.
    Real dtype of x; ``keepdims`` keeps (..., 1, 1)."""
    from ._manipulation_functions import expand_dims
    from ._statistical_functions import max as _max, min as _min, sum as _sum

    x = _floating(x, "matrix_norm")
    if x.ndim < 2:
        raise ValueError(f"matrix_norm: x must have at least two dimensions, got {x.shape}")
    nd = x.ndim
    if ord == "fro":
        return vector_norm(x, axis=(nd - 2, nd - 1), keepdims=keepdims, ord=2)
    if ord in ("nuc", 2, -2):
        s = svdvals(x)
        r = _sum(s, axis=-1) if ord == "nuc" else (_max(s, axis=-1) if ord == 2
                                                   else _min(s, axis=-1))
        if keepdims:
            r = expand_dims(expand_dims(r, axis=-1), axis=-1)
        return r
    if ord in (1, -1, _INF, -_INF):
        inner = -2 if ord in (1, -1) else -1          # sum down columns (1) or along rows (inf)
        sums = _sum(_abs(x), axis=inner, keepdims=True)
        outer = nd - 1 if ord in (1, -1) else nd - 2
        pick = _max if ord in (1, _INF) else _min
        r = pick(sums, axis=outer, keepdims=True)
        if not keepdims:
            r = _reshape(r, x.shape[:-2])
        return r
    raise ValueError(f"matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, "
                     f"got {ord!r}")


def cond(x, /, *, p=None) -> Array:
    """Condition number of square (p other than None / 2 / -2) or any matrices (extension, like
    numpy.linalg.cond): p None / 2: σ_max/σ_min, -2: σ_min/σ_max (SVD); 'fro', 'nuc', 1, -1,
    inf, -inf: ‖x‖·‖x⁻¹‖ in that norm.  A singular matrix gives inf (2-norms) or raises
    SingularMatrixError (the others)."""
    from ._elementwise_functions import divide, multiply
    from ._statistical_functions import max as _max, min as _min

    x = _floating(x, "cond")
    if p in (None, 2, -2):
        s = svdvals(x)
        hi, lo = _max(s, axis=-1), _min(s, axis=-1)
        return divide(lo, hi) if p == -2 else divide(hi, lo)
    return multiply(matrix_norm(x, ord=p), matrix_norm(inv(x), ord=p))


def cross(x1, x2, /, *, axis: int = -1) -> Array:
    """Cross product of 3-element vectors along ``axis`` (a negative int): (a1b2 − a2b1,
    a2b0 − a0b2, a0b1 − a1b0); the other axes broadcast, ``axis`` must have size 3 in both (no
    broadcasting along it).  Numeric dtypes; type promotion of x1 and x2."""
    from ._elementwise_functions import multiply, subtract
    from ._manipulation_functions import broadcast_to, stack

    _plans.check_operand(x1, "cross")
    _plans.check_operand(x2, "cross")
    for x in (x1, x2):
        if not _dt.isdtype(x.dtype, "numeric"):
            raise TypeError(f"cross: inputs must have a numeric dtype, got {x.dtype.name}")
    axis = operator.index(axis)
    nd = min(x1.ndim, x2.ndim)
    if not -nd <= axis < 0:
        raise ValueError(f"cross: axis must be a negative int in [-{nd}, -1], got {axis}")
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(f"cross: the axis {axis} must have size 3 in both inputs, got "
                         f"{x1.shape} and {x2.shape}")
    dt = result_type(x1.dtype, x2.dtype)
    shape = tuple(broadcast_shapes(x1.shape, x2.shape))
    a, b = broadcast_to(x1, shape), broadcast_to(x2, shape)
    if a.dtype != dt:
        a = _dispatch.cast(a, dt)
    if b.dtype != dt:
        b = _dispatch.cast(b, dt)
    ax = len(shape) + axis

    def comp(v: Array, i: int) -> Array:
        return v[(slice(None),) * ax + (i,)]

    c = [subtract(multiply(comp(a, j), comp(b, k)), multiply(comp(a, k), comp(b, j)))
         for j, k in ((1, 2), (2, 0), (0, 1))]
    return stack(c, axis=ax)


def _default_rtol(x: Array, rtol):
    if rtol is not None:
        return rtol
    return max(x.shape[-2], x.shape[-1]) * _dt.finfo(real_dtype(x.dtype)).eps


def _rtol_times(smax: Array, rtol) -> Array:
    """rtol · σ_max with ``rtol`` a float or an array broadcasting against the stack shape."""
    from ._elementwise_functions import multiply
    from ._manipulation_functions import expand_dims

    if isinstance(rtol, Array):
        return multiply(smax, expand_dims(_dispatch.cast(rtol, smax.dtype), axis=-1))
    return multiply(smax, float(rtol))


def matrix_rank(x, /, *, rtol=None) -> Array:
    """Number of singular values of (..., M, N) matrices above rtol·σ_max (default rtol:
    max(M, N)·eps of x's dtype; a float or an array broadcasting against the stack); int64."""
    from ._elementwise_functions import greater
    from ._searching_functions import count_nonzero
    from ._statistical_functions import max as _max

    x = matrix_operand(x, "matrix_rank")
    if 0 in x.shape[-2:]:
        from ._creation_functions import zeros
        return zeros(x.shape[:-2], dtype=_dt.int64, device=x.device)
    s = svdvals(x)
    tol = _rtol_times(_max(s, axis=-1, keepdims=True), _default_rtol(x, rtol))
    return _dispatch.cast(count_nonzero(greater(s, tol), axis=-1), _dt.int64)


def _conj_t(x: Array) -> Array:
    from ._elementwise_functions import conj

    t = x.mT
    return conj(t) if _dt.isdtype(x.dtype, "complex floating") else t


def pinv(x, /, *, rtol=None) -> Array:
    """Moore–Penrose pseudo-inverse of (..., M, N) matrices, (..., N, M), from the SVD:
    V·diag(1/σ where σ > rtol·σ_max else 0)·Uᴴ (default rtol: max(M, N)·eps)."""
    from ._elementwise_functions import divide, greater, multiply
    from ._linear_algebra_functions import matmul
    from ._manipulation_functions import expand_dims
    from ._searching_functions import where
    from ._creation_functions import zeros, zeros_like

    like = getattr(x, "dtype", None)
    x = matrix_operand(x, "pinv")
    m, n = x.shape[-2], x.shape[-1]
    if m == 0 or n == 0:
        return restore(zeros(x.shape[:-2] + (n, m), dtype=x.dtype, device=x.device), like)
    u, s, vh = svd(x, full_matrices=False)
    from ._statistical_functions import max as _max
    tol = _rtol_times(_max(s, axis=-1, keepdims=True), _default_rtol(x, rtol))
    keep = greater(s, tol)
    sinv = where(keep, divide(1.0, where(keep, s, 1.0)), zeros_like(s))
    v_scaled = multiply(_conj_t(vh), expand_dims(_dispatch.cast(sinv, x.dtype)
                                                 if x.dtype != s.dtype else sinv, axis=-2))
    return restore(matmul(v_scaled, _conj_t(u)), like)


class LstsqResult(NamedTuple):
    solution: Array
    residuals: Array
    rank: Array
    singular_values: Array


def lstsq(x1, x2, /, *, rcond=None) -> LstsqResult:
    """Least-squares solution of x1·X ≈ x2 (extension, like numpy / torch ``lstsq`` with the
    SVD driver): x1 (..., M, N), x2 (..., M, K) or (M,); X = pinv(x1, rcond)·x2 (..., N, K);
    ``residuals`` Σ|x1·X − x2|² per column (..., K) when M > N, else shape (..., 0); ``rank``
    int64 (...); ``singular_values`` (..., min(M, N))."""
    from ._elementwise_functions import greater, multiply, subtract
    from ._linear_algebra_functions import matmul
    from ._searching_functions import count_nonzero
    from ._statistical_functions import max as _max, sum as _sum

    x1 = matrix_operand(x1, "lstsq")
    _plans.check_operand(x2, "lstsq")
    vector = x2.ndim == 1
    b = _reshape(x2, (x2.shape[0], 1)) if vector else x2
    if b.ndim < 2 or b.shape[-2] != x1.shape[-2]:
        raise ValueError(f"lstsq: x2 must be (..., {x1.shape[-2]}, K) or ({x1.shape[-2]},), got "
                         f"{x2.shape}")
    dt = result_type(x1.dtype, b.dtype)
    a = x1 if x1.dtype == dt else _dispatch.cast(x1, dt)
    b = b if b.dtype == dt else _dispatch.cast(b, dt)
    sol = matmul(pinv(a, rtol=rcond), b)
    s = svdvals(a)
    m, n = a.shape[-2], a.shape[-1]
    if min(m, n):
        tol = _rtol_times(_max(s, axis=-1, keepdims=True), _default_rtol(a, rcond))
        rank = _dispatch.cast(count_nonzero(greater(s, tol), axis=-1), _dt.int64)
    else:
        from ._creation_functions import zeros
        rank = zeros(a.shape[:-2], dtype=_dt.int64, device=a.device)
    if m > n:
        r = _abs(subtract(matmul(a, sol), b))
        res = _sum(multiply(r, r), axis=-2)
    else:
        from ._creation_functions import empty
        res = empty(tuple(broadcast_shapes(a.shape[:-2], b.shape[:-2])) + (0,),
                    dtype=real_dtype(dt), device=a.device)
    if vector:
        sol = _reshape(sol, sol.shape[:-1])
        res = _reshape(res, res.shape[:-1])
    return LstsqResult(sol, res, rank, s)


def matrix_power(x, n, /) -> Array:
    """x raised to the integer power ``n`` over the last two (square) axes by repeated squaring
    with ``matmul`` (about 2·log2|n| GEMMs); n = 0 gives identity matrices of x's dtype, n < 0
    powers ``inv(x)`` (SingularMatrixError for a singular x)."""
    from ._creation_functions import eye
    from ._linear_algebra_functions import matmul
    from ._manipulation_functions import ascontiguousarray, broadcast_to

    _plans.check_operand(x, "matrix_power")
    if isinstance(n, bool):
        raise TypeError("matrix_power: n must be an int")
    n = operator.index(n)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"matrix_power: x must be (..., M, M), got shape {x.shape}")
    if n == 0:
        e = eye(x.shape[-1], dtype=x.dtype, device=x.device)
        return ascontiguousarray(broadcast_to(e, x.shape))
    if n < 0:
        x, n = inv(x), -n
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
