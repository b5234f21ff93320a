"""The linalg extension's factorisations and solvers, on the linalg family's vendor Plans
(cuSOLVER through nvmath-python; ``baracuda_dsl.ops.linalg``): ``cholesky qr svd svdvals eigh
eigvalsh eig eigvals solve inv det slogdet`` and the LU extension ``lu_factor``.

Dtypes: float32 / float64 / complex64 / complex128 run on the solver in their own precision;
float16 / bfloat16 inputs are computed in float32 and the results cast back; integer and bool
inputs raise TypeError (the standard asks for floating-point inputs).  Every function takes
stacks of matrices (leading batch dims; ``solve`` broadcasts them).

Errors: a solver's ``info`` words are read back after the call (one small device→host copy, which
waits for the stream) and a failed matrix raises a typed :class:`LinAlgError` subclass —
``NotPositiveDefiniteError`` (cholesky), ``SingularMatrixError`` (solve, inv),
``NoConvergenceError`` (svd, eigh, eig) — naming the first failing matrix of the stack.
``det`` / ``slogdet`` of a singular matrix are not errors (0 and (0, -inf)).  Inside a CUDA graph
capture, or after :func:`set_error_checking(False) <set_error_checking>`, nothing is read back.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from baracuda_dsl.ops.elementwise.elementwise import broadcast_shapes
from baracuda_dsl.ops.linalg import (CholeskyArgs, CholeskyDescriptor, CholeskyPlan, EigArgs,
                                     EigDescriptor, EighArgs, EighDescriptor, EighPlan, EigPlan,
                                     InverseArgs, InverseDescriptor, InversePlan, LUArgs,
                                     LUDescriptor, LUPlan, QRArgs, QRDescriptor, QRPlan,
                                     SolveArgs, SolveDescriptor, SolvePlan, SVDArgs,
                                     SVDDescriptor, SVDPlan, raise_for_info)
from baracuda_dsl.runtime.stream import AMBIENT

from . import _dispatch
from . import _dtypes as _dt
from . import _plans
from ._array_object import Array
from ._manipulation_functions import reshape as _reshape
from ._data_type_functions import result_type

#: ``ERROR_CHECKING[0]``: read the solvers' info words back and raise (``set_error_checking``)
ERROR_CHECKING = [True]

_REAL_OF = {_dt.complex64: _dt.float32, _dt.complex128: _dt.float64}
_COMPLEX_OF = {_dt.float32: _dt.complex64, _dt.float64: _dt.complex128,
               _dt.complex64: _dt.complex64, _dt.complex128: _dt.complex128}


def set_error_checking(enabled: bool) -> bool:
    """Turn the read-back of solver info words on or off (extension); returns the old setting.
    Off: no host synchronisation, and a failed factorisation leaves NaN / garbage silently."""
    old = ERROR_CHECKING[0]
    ERROR_CHECKING[0] = bool(enabled)
    return old


class EighResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class EigResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class QRResult(NamedTuple):
    Q: Array
    R: Array


class SVDResult(NamedTuple):
    U: Array
    S: Array
    Vh: Array


class SlogdetResult(NamedTuple):
    sign: Array
    logabsdet: Array


class LUResult(NamedTuple):
    LU: Array
    pivots: Array


# ----------------------------------------------------------------------------------- helpers
def matrix_operand(x, fn: str, *, square: bool = False) -> Array:
    """``x`` checked as a (stack of) matrices with a floating dtype, in the dtype the solver
    runs in (float16 / bfloat16 → float32)."""
    _plans.check_operand(x, fn)
    if x.ndim < 2:
        raise ValueError(f"{fn}: x must have at least two dimensions, got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{fn}: x must be (..., M, M) square matrices, got shape {x.shape}")
    if not _dt.isdtype(x.dtype, ("real floating", "complex floating")):
        raise TypeError(f"{fn}: x must have a floating-point dtype, got {x.dtype.name}")
    if x.dtype in (_dt.float16, _dt.bfloat16):
        x = _dispatch.cast(x, _dt.float32)
    return x


def restore(res: Array, like) -> Array:
    """``res`` cast back to a half-precision input dtype ``like`` (else unchanged)."""
    if like in (_dt.float16, _dt.bfloat16) and res.dtype != like:
        return _dispatch.cast(res, like)
    return res


def real_dtype(dt):
    """The real dtype of the same precision."""
    return _REAL_OF.get(dt, dt)


def _empty(shape, dt, x: Array) -> Array:
    return Array._empty(tuple(shape), dt, x.device)


def _run(plan_cls, desc, make_args, x: Array, op: str, batch) -> None:
    """Select (cached) and run a linalg plan with an info array, then raise on a failed matrix
    (unless checking is off, or a graph is being captured)."""
    plan = _plans.select(plan_cls, desc)
    check = ERROR_CHECKING[0] and AMBIENT.arena is None
    info = _empty(batch if batch else (1,), _dt.int32, x) if check else None
    _plans.run(plan, make_args(info), x)
    if check and math.prod(batch) and op:
        raise_for_info(op, info.to_numpy(), tuple(batch))


def _batch(x: Array):
    return tuple(x.shape[:-2])


# ------------------------------------------------------------------------------ functions
def cholesky(x, /, *, upper: bool = False) -> Array:
    """Cholesky factor of Hermitian positive-definite matrices: x = L·Lᴴ (``upper``: x = Uᴴ·U);
    the other triangle of the result is zero.  cuSOLVER potrf (batched potrf for stacks of
    small matrices).  NotPositiveDefiniteError when a leading minor is not positive definite.
    Only the lower (``upper``: upper) triangle of x is read."""
    like = getattr(x, "dtype", None)
    x = matrix_operand(x, "cholesky", square=True)
    out = _empty(x.shape, x.dtype, x)
    b = _batch(x)
    _run(CholeskyPlan, CholeskyDescriptor(b, x.shape[-1], x.dtype, bool(upper)),
         lambda info: CholeskyArgs(x, out, info), x, "cholesky", b)
    return restore(out, like)


def lu_factor(x, /) -> LUResult:
    """LU factorisation with partial pivoting (extension, like ``torch.linalg.lu_factor``):
    ``LU`` (..., M, N) packs unit-lower L and upper U; ``pivots`` (..., min(M, N)) int64, 1-based
    LAPACK row interchanges.  cuSOLVER getrf.  A singular matrix is not an error here (U has a
    zero on its diagonal)."""
    like = getattr(x, "dtype", None)
    x = matrix_operand(x, "lu_factor")
    b, m, n = _batch(x), x.shape[-2], x.shape[-1]
    lu = _empty(x.shape, x.dtype, x)
    piv = _empty(b + (min(m, n),), _dt.int64, x)
    _run(LUPlan, LUDescriptor(b, m, n, x.dtype), lambda info: LUArgs(x, lu, piv, info), x,
         "", b)
    return LUResult(restore(lu, like), piv)


def solve(x1, x2, /) -> Array:
    """X with x1·X = x2 for square x1 (..., M, M); x2 (..., M, K) (batch dims broadcast) or (M,)
    (one right-hand side).  cuSOLVER getrf + getrs.  SingularMatrixError for an exactly singular
    x1 (no condition number check: an ill-conditioned x1 gives an inaccurate X, as in LAPACK)."""
    _plans.check_operand(x2, "solve")
    like = result_type(x1.dtype, x2.dtype) if isinstance(x1, Array) else None
    x1 = matrix_operand(x1, "solve", square=True)
    if not _dt.isdtype(x2.dtype, ("real floating", "complex floating")):
        raise TypeError(f"solve: x2 must have a floating-point dtype, got {x2.dtype.name}")
    dt = result_type(x1.dtype, x2.dtype if x2.dtype not in (_dt.float16, _dt.bfloat16)
                         else _dt.float32)
    if x1.device != x2.device:
        from baracuda_dsl.errors import DeviceMismatchError
        raise DeviceMismatchError(f"solve: x1 is on {x1.device}, x2 on {x2.device}")
    m = x1.shape[-1]
    vector = x2.ndim == 1
    if vector:
        if x2.shape[0] != m:
            raise ValueError(f"solve: x2 of shape {x2.shape} does not match x1 {x1.shape}")
        x2 = _reshape(x2, (m, 1))
    elif x2.ndim < 2 or x2.shape[-2] != m:
        raise ValueError(f"solve: x2 must be (..., {m}, K) or ({m},), got shape {x2.shape}")
    b = tuple(broadcast_shapes(x1.shape[:-2], x2.shape[:-2]))
    from ._manipulation_functions import broadcast_to

    a = broadcast_to(_as(x1, dt), b + (m, m))
    rhs = broadcast_to(_as(x2, dt), b + (m, x2.shape[-1]))
    out = _empty(rhs.shape, dt, a)
    _run(SolvePlan, SolveDescriptor(b, m, rhs.shape[-1], dt),
         lambda info: SolveArgs(a, rhs, out, info), a, "solve", b)
    if vector:
        out = _reshape(out, b + (m,))
    return restore(out, like)


def _as(x: Array, dt) -> Array:
    return x if x.dtype == dt else _dispatch.cast(x, dt)


def inv(x, /) -> Array:
    """The inverse of square matrices x (..., M, M).  cuSOLVER getrf + getrs on the identity.
    SingularMatrixError for an exactly singular matrix."""
    like = getattr(x, "dtype", None)
    x = matrix_operand(x, "inv", square=True)
    out = _empty(x.shape, x.dtype, x)
    b = _batch(x)
    _run(InversePlan, InverseDescriptor(b, x.shape[-1], x.dtype),
         lambda info: InverseArgs(x, out, info), x, "inverse", b)
    return restore(out, like)


def qr(x, /, *, mode: str = "reduced") -> QRResult:
    """QR factorisation x = Q·R (..., M, N): ``mode='reduced'`` Q (..., M, K), R (..., K, N) with
    K = min(M, N); ``'complete'`` Q (..., M, M), R (..., M, N).  Q has orthonormal columns, R is
    upper triangular.  cuSOLVER geqrf + orgqr / ungqr."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    like = getattr(x, "dtype", None)
    x = matrix_operand(x, "qr")
    b, m, n = _batch(x), x.shape[-2], x.shape[-1]
    k = m if mode == "complete" else min(m, n)
    q = _empty(b + (m, k), x.dtype, x)
    r = _empty(b + (k, n), x.dtype, x)
    _run(QRPlan, QRDescriptor(b, m, n, x.dtype, mode), lambda info: QRArgs(x, q, r, info), x,
         "qr", b)
    return QRResult(restore(q, like), restore(r, like))


def _svd(x, full_matrices: bool, compute_uv: bool):
    like = getattr(x, "dtype", None)
    x = matrix_operand(x, "svd" if compute_uv else "svdvals")
    b, m, n = _batch(x), x.shape[-2], x.shape[-1]
    k = min(m, n)
    s = _empty(b + (k,), real_dtype(x.dtype), x)
    u = vh = None
    if compute_uv:
        u = _empty(b + (m, m if full_matrices else k), x.dtype, x)
        vh = _empty(b + (n if full_matrices else k, n), x.dtype, x)
    _run(SVDPlan, SVDDescriptor(b, m, n, x.dtype, bool(full_matrices), compute_uv),
         lambda info: SVDArgs(x, s, u, vh, info), x, "svd", b)
    return like, u, s, vh


def svd(x, /, *, full_matrices: bool = True) -> SVDResult:
    """Singular value decomposition x = U·diag(S)·Vh of (..., M, N) matrices: S (..., K) real,
    descending, K = min(M, N); U (..., M, M) and Vh (..., N, N) (``full_matrices=False``:
    (..., M, K) and (..., K, N)).  cuSOLVER gesvd (gesvdj batched for stacks of small
    matrices).  Singular vectors are unique only up to a phase per pair."""
    like, u, s, vh = _svd(x, full_matrices, True)
    return SVDResult(restore(u, like), restore(s, real_dtype(like) if like else like),
                     restore(vh, like))


def svdvals(x, /) -> Array:
    """The singular values of (..., M, N) matrices, (..., min(M, N)) real, descending."""
    like, _u, s, _vh = _svd(x, False, False)
    return restore(s, real_dtype(like) if like else like)


def _eigh(x, compute_v: bool, fn: str):
    like = getattr(x, "dtype", None)
    x = matrix_operand(x, fn, square=True)
    b, n = _batch(x), x.shape[-1]
    w = _empty(b + (n,), real_dtype(x.dtype), x)
    v = _empty(x.shape, x.dtype, x) if compute_v else None
    _run(EighPlan, EighDescriptor(b, n, x.dtype, compute_v), lambda info: EighArgs(x, w, v, info),
         x, "eigh", b)
    return like, w, v


def eigh(x, /) -> EighResult:
    """Eigen-decomposition of Hermitian / symmetric matrices (..., M, M): eigenvalues (..., M)
    real, ascending; eigenvectors (..., M, M), column i for eigenvalue i, orthonormal.  Only the
    lower triangle of x is read.  cuSOLVER syevd / heevd (syevBatched for stacks)."""
    like, w, v = _eigh(x, True, "eigh")
    return EighResult(restore(w, real_dtype(like) if like else like), restore(v, like))


def eigvalsh(x, /) -> Array:
    """The eigenvalues of Hermitian / symmetric matrices, (..., M) real, ascending."""
    like, w, _ = _eigh(x, False, "eigvalsh")
    return restore(w, real_dtype(like) if like else like)


def _eig(x, compute_v: bool, fn: str):
    x = matrix_operand(x, fn, square=True)
    b, n = _batch(x), x.shape[-1]
    ct = _COMPLEX_OF[x.dtype]
    w = _empty(b + (n,), ct, x)
    v = _empty(x.shape, ct, x) if compute_v else None
    _run(EigPlan, EigDescriptor(b, n, x.dtype, compute_v), lambda info: EigArgs(x, w, v, info),
         x, "eig", b)
    return w, v


def eig(x, /) -> EigResult:
    """Eigen-decomposition of general square matrices (the 2025.12 standard's ``eig``):
    eigenvalues (..., M) and right eigenvectors (..., M, M) (unit 2-norm columns), complex
    (complex64 for float32 / complex64 input, complex128 otherwise), in no particular order.
    cuSOLVER geev."""
    w, v = _eig(x, True, "eig")
    return EigResult(w, v)


def eigvals(x, /) -> Array:
    """The eigenvalues of general square matrices, complex (..., M) (see ``eig``)."""
    w, _ = _eig(x, False, "eigvals")
    return w


def _lu_parts(x: Array, fn: str):
    """(diagonal of U, parity of the row interchanges as 0 / 1 int64, batch) of LU(x)."""
    from ._creation_functions import arange
    from ._manipulation_functions import diagonal_view
    from ._elementwise_functions import not_equal, remainder
    from ._searching_functions import count_nonzero

    b, n = _batch(x), x.shape[-1]
    lu = _empty(x.shape, x.dtype, x)
    piv = _empty(b + (n,), _dt.int64, x)
    _run(LUPlan, LUDescriptor(b, n, n, x.dtype), lambda info: LUArgs(x, lu, piv, info), x, "", b)
    d = diagonal_view(lu, 0)
    swaps = count_nonzero(not_equal(piv, arange(1, n + 1, dtype=_dt.int64, device=x.device)),
                          axis=-1)
    return d, remainder(swaps, 2), b


def det(x, /) -> Array:
    """Determinant of square matrices (..., M, M), from LU: ∏ diag(U) · (−1)^(row swaps).  Real
    dtypes multiply the diagonal directly (overflow / underflow like numpy); complex ones form
    the product from Σ log|u| and Σ arg u.  A singular matrix gives 0; a 0×0 matrix gives 1."""
    from ._elementwise_functions import (add, atan2, cos, exp, imag, log, multiply, real, sin,
                                         subtract, abs as _abs)
    from ._statistical_functions import prod, sum as _sum

    like = getattr(x, "dtype", None)
    x = matrix_operand(x, "det", square=True)
    d, parity, _b = _lu_parts(x, "det")
    sign = subtract(1, multiply(parity, 2))                    # int64 ±1
    if x.dtype in (_dt.float32, _dt.float64):
        res = multiply(prod(d, axis=-1), _dispatch.cast(sign, x.dtype))
    else:
        rt = real_dtype(x.dtype)
        mag = exp(_sum(log(_abs(d)), axis=-1))
        ang = _sum(atan2(imag(d), real(d)), axis=-1)
        mag = multiply(mag, _dispatch.cast(sign, rt))
        res = add(multiply(mag, cos(ang)), multiply(multiply(mag, sin(ang)), 1j))
        res = _as(res, x.dtype)
    return restore(res, like)


def slogdet(x, /) -> SlogdetResult:
    """(sign, log|det|) of square matrices (..., M, M), from LU: log|det| = Σ log|u_ii| (real),
    sign = ±1 (real) or ∏ u/|u| (complex, unit modulus) times (−1)^(row swaps).  A singular
    matrix gives sign 0 and log|det| = −inf; a 0×0 matrix gives (1, 0)."""
    from ._creation_functions import zeros_like
    from ._elementwise_functions import (add, atan2, cos, equal, imag, log, multiply, real,
                                         sign as _sign, sin, subtract, abs as _abs)
    from ._searching_functions import where
    from ._statistical_functions import prod, sum as _sum
    from ._utility_functions import any as _any

    like = getattr(x, "dtype", None)
    x = matrix_operand(x, "slogdet", square=True)
    d, parity, _b = _lu_parts(x, "slogdet")
    rt = real_dtype(x.dtype)
    a = _abs(d)
    logabs = _sum(log(a), axis=-1)
    perm = _dispatch.cast(subtract(1, multiply(parity, 2)), rt)
    singular = _any(equal(a, 0), axis=-1)
    if x.dtype in (_dt.float32, _dt.float64):
        s = multiply(prod(_sign(d), axis=-1), perm)
    else:
        ang = _sum(atan2(imag(d), real(d)), axis=-1)
        s = add(multiply(cos(ang), perm), multiply(multiply(sin(ang), perm), 1j))
        s = _as(s, x.dtype)
    s = where(singular, zeros_like(s), s)
    return SlogdetResult(restore(s, like), restore(logabs, real_dtype(like) if like else like))
