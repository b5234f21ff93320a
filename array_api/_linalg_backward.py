"""Backward (vector–Jacobian products) of the linalg factorisations and solvers, for autograd
frameworks built on this namespace (extensions in ``xp.linalg``): ``inv_backward
solve_backward det_backward slogdet_backward cholesky_backward eigh_backward svd_backward
svdvals_backward qr_backward``.

Convention: PyTorch's — for a real function of complex inputs the gradient is the conjugate
Wirtinger derivative (∂L/∂Re + i ∂L/∂Im): for a holomorphic f, gA = g·conj(f′(A)) (det:
gA = g·conj(det A)·A⁻ᴴ).  Every formula is written with Aᴴ (the conjugate
transpose; Aᵀ for real dtypes).  Costs: one or two ``solve`` / ``inv`` / a few GEMMs per call —
the same cuSOLVER / GEMM paths as the forward functions (float32 / float64 / complex64 /
complex128).  Inputs are the forward's outputs (saved tensors) and the output gradients; a
gradient that is None counts as zero.
"""

from __future__ import annotations

from . import _dispatch
from . import _dtypes as _dt
from ._array_object import Array
from ._manipulation_functions import reshape as _reshape
from ._linalg_factorizations import inv, solve


def _h(x: Array) -> Array:
    """Conjugate transpose of the last two axes."""
    from ._elementwise_functions import conj

    return conj(x.mT) if _dt.isdtype(x.dtype, "complex floating") else x.mT


def _is_complex(x: Array) -> bool:
    return _dt.isdtype(x.dtype, "complex floating")


def _as(x: Array, dt) -> Array:
    return x if x.dtype == dt else _dispatch.cast(x, dt)


def _diag_embed(v: Array) -> Array:
    """(..., n) → (..., n, n) with v on the diagonal."""
    from . import _elementwise_functions as ew
    from ._creation_functions import eye
    from ._manipulation_functions import expand_dims

    return ew.multiply(expand_dims(v, axis=-1), eye(v.shape[-1], dtype=v.dtype, device=v.device))


def inv_backward(ainv: Array, grad: Array) -> Array:
    """Y = A⁻¹: gA = −Yᴴ·gY·Yᴴ (``ainv`` = Y)."""
    from . import _elementwise_functions as ew
    from ._linear_algebra_functions import matmul

    yh = _h(ainv)
    return ew.negative(matmul(matmul(yh, grad), yh))


def solve_backward(a: Array, x: Array, grad: Array):
    """X = A⁻¹B (``solve(a, b)``, X (..., n, k)): gB = A⁻ᴴ·gX (one more solve), gA = −gB·Xᴴ.
    Returns (gA, gB); a 1-D right-hand side's X / gX are (n,) and gB is (n,) too."""
    from ._linear_algebra_functions import matmul
    from . import _elementwise_functions as ew

    vector = x.ndim == 1
    xm = _reshape(x, x.shape + (1,)) if vector else x
    gm = _reshape(grad, grad.shape + (1,)) if vector else grad
    gb = solve(_h(a), gm)
    ga = ew.negative(matmul(gb, _h(xm)))
    if vector:
        gb = _reshape(gb, x.shape if a.ndim == 2 else gb.shape[:-1])
    return ga, gb


def det_backward(a: Array, d: Array, grad: Array) -> Array:
    """d = det(A): gA = (g·conj(d))·A⁻ᴴ (A must be invertible: SingularMatrixError otherwise —
    the adjugate form for singular A is not provided)."""
    from . import _elementwise_functions as ew
    from ._manipulation_functions import expand_dims

    w = ew.multiply(grad, ew.conj(d) if _is_complex(d) else d)
    w = expand_dims(expand_dims(w, axis=-1), axis=-1)
    return ew.multiply(w, _h(inv(a)))


def slogdet_backward(a: Array, grad_logabsdet: Array) -> Array:
    """(sign, log|det A|): gA = g·A⁻ᴴ for the log|det| output (the sign has zero gradient for
    real A; for complex A its phase gradient is not provided)."""
    from . import _elementwise_functions as ew
    from ._manipulation_functions import expand_dims

    g = _as(grad_logabsdet, a.dtype) if _is_complex(a) else grad_logabsdet
    return ew.multiply(expand_dims(expand_dims(g, axis=-1), axis=-1), _h(inv(a)))


def _phi(x: Array) -> Array:
    """tril(x) with the diagonal halved."""
    from . import _elementwise_functions as ew
    from ._creation_functions import tril

    lo = tril(x)
    return ew.subtract(lo, ew.multiply(_diag_embed(_diag(lo)), 0.5))


def _diag(x: Array) -> Array:
    from ._manipulation_functions import diagonal_view

    return diagonal_view(x, 0)


def cholesky_backward(l: Array, grad: Array, upper: bool = False) -> Array:
    """A = L·Lᴴ (L lower; ``upper``: the factor given is U = Lᴴ and so is the gradient):
    gA = ½(S + Sᴴ) with S = L⁻ᴴ·Φ(Lᴴ·gL)·L⁻¹, Φ = the lower triangle with its diagonal halved
    (Murray 2016; only gL's lower triangle is used)."""
    from ._creation_functions import tril
    from ._linear_algebra_functions import matmul
    from . import _elementwise_functions as ew

    if upper:
        l, grad = _h(l), _h(grad)
    li = inv(l)
    p = _phi(matmul(_h(l), tril(grad)))
    s = matmul(matmul(_h(li), p), li)
    return ew.multiply(ew.add(s, _h(s)), 0.5)


def _gap(w: Array) -> Array:
    """F_ij = 1 / (w_j − w_i) off the diagonal, 0 on it (w real, (..., n))."""
    from . import _elementwise_functions as ew
    from ._manipulation_functions import expand_dims
    from ._searching_functions import where
    from ._creation_functions import eye

    diff = ew.subtract(expand_dims(w, axis=-2), expand_dims(w, axis=-1))
    on = eye(w.shape[-1], dtype=_dt.bool, device=w.device)
    safe = where(on, ew.add(diff, 1.0), diff)
    return where(on, ew.multiply(diff, 0.0), ew.divide(1.0, safe))


def eigh_backward(w: Array, v: Array, grad_w=None, grad_v=None) -> Array:
    """A = V·diag(w)·Vᴴ (``eigh``): gA = V·(diag(gw) + F ∘ ½(Vᴴ·gV − (Vᴴ·gV)ᴴ))·Vᴴ with
    F_ij = 1/(w_j − w_i) (0 on the diagonal); a Hermitian result.  Degenerate eigenvalues make
    the eigenvector term infinite, as in every framework."""
    from ._linear_algebra_functions import matmul
    from . import _elementwise_functions as ew

    inner = None
    if grad_v is not None:
        vg = matmul(_h(v), grad_v)
        skew = ew.multiply(ew.subtract(vg, _h(vg)), 0.5)
        inner = ew.multiply(skew, _as(_gap(w), v.dtype))
    if grad_w is not None:
        dg = _as(_diag_embed(grad_w), v.dtype)
        inner = dg if inner is None else ew.add(inner, dg)
    if inner is None:
        from ._creation_functions import zeros_like
        return zeros_like(v)
    return matmul(matmul(v, inner), _h(v))


def svdvals_backward(u: Array, vh: Array, grad_s: Array) -> Array:
    """S = svdvals(A) with A = U·diag(S)·Vh (reduced): gA = U·diag(gS)·Vh."""
    from ._linear_algebra_functions import matmul
    from . import _elementwise_functions as ew
    from ._manipulation_functions import expand_dims

    return matmul(ew.multiply(u, expand_dims(_as(grad_s, u.dtype), axis=-2)), vh)


def svd_backward(u: Array, s: Array, vh: Array, grad_u=None, grad_s=None, grad_vh=None):
    """Reduced SVD A = U·diag(S)·Vh of real (..., m, n) matrices, k = min(m, n) (Townsend 2016):
    gA = U·[(F∘(UᵀgU − gUᵀU))·S + diag(gS) + S·(F∘(VᵀgV − gVᵀV))]·Vᵀ
         + (I − UUᵀ)·gU·S⁻¹·Vᵀ + U·S⁻¹·gVᵀ·(I − VVᵀ),   F_ij = 1/(s_j² − s_i²) (0 on the
    diagonal), gV = gVhᵀ.  Repeated or zero singular values make the vector terms infinite.
    Complex dtypes: UnsupportedError (their phase term is not provided)."""
    from baracuda_dsl.errors import UnsupportedError
    from ._linear_algebra_functions import matmul
    from . import _elementwise_functions as ew
    from ._manipulation_functions import expand_dims

    if _is_complex(u):
        raise UnsupportedError("svd_backward: complex dtypes are not wired (wired: float32, "
                               "float64); svdvals_backward takes complex inputs")
    if grad_u is None and grad_vh is None:
        if grad_s is None:
            from ._creation_functions import zeros
            return zeros(u.shape[:-1] + vh.shape[-1:], dtype=u.dtype, device=u.device)
        return svdvals_backward(u, vh, grad_s)
    v = vh.mT
    gv = grad_vh.mT if grad_vh is not None else None
    f = _gap(ew.multiply(s, s))
    s_row = expand_dims(s, axis=-2)              # (..., 1, k): scales columns
    s_col = expand_dims(s, axis=-1)              # (..., k, 1): scales rows
    inner = None
    if grad_u is not None:
        ug = matmul(u.mT, grad_u)
        inner = ew.multiply(ew.multiply(f, ew.subtract(ug, ug.mT)), s_row)
    if gv is not None:
        vg = matmul(v.mT, gv)
        t = ew.multiply(s_col, ew.multiply(f, ew.subtract(vg, vg.mT)))
        inner = t if inner is None else ew.add(inner, t)
    if grad_s is not None:
        inner = ew.add(inner, _diag_embed(grad_s))
    ga = matmul(matmul(u, inner), vh)
    if grad_u is not None and u.shape[-2] > u.shape[-1]:
        proj = ew.subtract(grad_u, matmul(u, matmul(u.mT, grad_u)))
        ga = ew.add(ga, matmul(ew.divide(proj, s_row), vh))
    if gv is not None and v.shape[-2] > v.shape[-1]:
        proj = ew.subtract(gv, matmul(v, matmul(v.mT, gv)))
        ga = ew.add(ga, matmul(u, ew.divide(proj, s_row).mT))
    return ga


def qr_backward(q: Array, r: Array, grad_q=None, grad_r=None) -> Array:
    """Reduced QR A = Q·R with m ≥ n (or complete QR of a square A):
    gA = (gQ + Q·copyltu(M))·R⁻ᴴ with M = R·gRᴴ − gQᴴ·Q and copyltu(M) = the lower triangle of M
    mirrored to the upper (Hermitian), i.e. tril(M, −1) + tril(M, −1)ᴴ + Re diag(M)
    (Walter & Lehmann; the same as torch's).  R must be invertible (full column rank).
    m < n: UnsupportedError."""
    from baracuda_dsl.errors import UnsupportedError
    from ._creation_functions import tril, zeros_like
    from ._linear_algebra_functions import matmul
    from . import _elementwise_functions as ew

    m, n = q.shape[-2], r.shape[-1]
    if m < n or q.shape[-1] != r.shape[-2] or r.shape[-2] != n:
        raise UnsupportedError("qr_backward: wired for reduced QR with m >= n (and complete QR "
                               f"of square matrices); got Q {q.shape}, R {r.shape}")
    mm = zeros_like(r)
    if grad_r is not None:
        mm = matmul(r, _h(grad_r))
    if grad_q is not None:
        mm = ew.subtract(mm, matmul(_h(grad_q), q))
    low = tril(mm, k=-1)
    d = _diag(mm)
    dre = ew.real(d) if _is_complex(d) else d
    sym = ew.add(ew.add(low, _h(low)), _as(_diag_embed(dre), mm.dtype))
    b = matmul(q, sym)
    if grad_q is not None:
        b = ew.add(b, grad_q)
    # B·R⁻ᴴ = (R⁻¹·Bᴴ)ᴴ = solve(R, Bᴴ)ᴴ
    return _h(solve(r, _h(b)))
