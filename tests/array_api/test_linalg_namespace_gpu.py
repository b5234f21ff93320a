"""``xp.linalg``'s factorisations, solvers, norms and composites on the GPU against float64 numpy.

Factorisations are checked by residuals in float64 from the device results (‖A − LLᴴ‖, ‖A − QR‖,
‖QᴴQ − I‖, ‖UΣVᴴ − A‖, ‖AV − VΛ‖, ‖AX − B‖ relative to ‖A‖·‖X‖ ...) with bounds c·n·eps of
the dtype; values (singular values, eigenvalues, det, norms) against numpy's float64 results with
the same kind of bound (eigen / singular values are well conditioned: |δλ| ≤ ‖δA‖); every
dtype the solvers take (float32 / float64 / complex64 / complex128), a half dtype through its
float32 path, stacks (batched) and unbatched, odd sizes, empty matrices and stacks, strided
(transposed) inputs; the typed errors of a non-positive-definite / singular matrix.
"""

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float64", "complex64", "complex128"]
REAL = {"float32": "float32", "float64": "float64", "complex64": "float32",
        "complex128": "float64"}
EPS = {"float32": 2.0 ** -23, "float64": 2.0 ** -52, "complex64": 2.0 ** -23,
       "complex128": 2.0 ** -52, "float16": 2.0 ** -10}


def _xp():
    import array_api as xp
    return xp


def _rand(rng, shape, dtype):
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    return a


def _dev(a, dtype):
    xp = _xp()
    return xp.asarray(np.ascontiguousarray(a), dtype=getattr(xp, dtype))


def _h(x):
    a = np.asarray(x.to_numpy())
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def _rounded(a, dtype):
    """The float64/complex128 values the device sees for host ``a`` in ``dtype``."""
    np_dt = {"float32": np.float32, "float64": np.float64, "complex64": np.complex64,
             "complex128": np.complex128, "float16": np.float16}[dtype]
    r = np.asarray(a).astype(np_dt)
    return r.astype(np.complex128 if r.dtype.kind == "c" else np.float64)


def _hermitian_pd(rng, batch, n, dtype):
    a = _rand(rng, batch + (n, n), dtype)
    return a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)


def _rel(x, ref):
    den = max(np.linalg.norm(ref), 1e-300)
    return np.linalg.norm(x - ref) / den


def _bound(dtype, n, c=30.0):
    return c * max(n, 1) * EPS[dtype]


def _ct(a):
    return np.conj(np.swapaxes(a, -1, -2))


SHAPES = [((), 1), ((), 17), ((3,), 8), ((2, 2), 33), ((), 100)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch,n", SHAPES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(dtype, batch, n, upper):
    xp = _xp()
    rng = np.random.default_rng(n)
    a = _rounded(_hermitian_pd(rng, batch, n, dtype), dtype)
    f = _h(xp.linalg.cholesky(_dev(a, dtype), upper=upper))
    l = _ct(f) if upper else f
    assert np.all(np.triu(l, 1) == 0)
    assert _rel(l @ _ct(l), a) < _bound(dtype, n)


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
def test_cholesky_not_positive_definite(dtype):
    import baracuda_dsl as bd
    xp = _xp()
    a = np.stack([np.eye(4), np.diag([1.0, -1.0, 1.0, 1.0])])
    with pytest.raises(bd.NotPositiveDefiniteError) as ei:
        xp.linalg.cholesky(_dev(a, dtype))
    assert ei.value.batch_index == 1 and ei.value.info == 2
    assert isinstance(ei.value, xp.linalg.LinAlgError) and isinstance(ei.value, ValueError)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch,m,n", [((), 5, 5), ((3,), 9, 4), ((2,), 4, 9), ((), 64, 64),
                                       ((), 1, 7)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr(dtype, batch, m, n, mode):
    xp = _xp()
    rng = np.random.default_rng(m * 100 + n)
    a = _rounded(_rand(rng, batch + (m, n), dtype), dtype)
    q, r = xp.linalg.qr(_dev(a, dtype), mode=mode)
    q, r = _h(q), _h(r)
    k = m if mode == "complete" else min(m, n)
    assert q.shape == batch + (m, k) and r.shape == batch + (k, n)
    assert np.all(np.tril(r, -1) == 0)
    assert _rel(q @ r, a) < _bound(dtype, max(m, n))
    assert np.abs(_ct(q) @ q - np.eye(k)).max() < _bound(dtype, max(m, n))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch,m,n", [((), 6, 6), ((4,), 7, 3), ((2,), 3, 7), ((), 100, 40),
                                       ((8,), 32, 32), ((), 40, 100), ((5,), 64, 64)])
@pytest.mark.parametrize("full", [True, False])
def test_svd(dtype, batch, m, n, full):
    xp = _xp()
    rng = np.random.default_rng(m * 7 + n)
    a = _rounded(_rand(rng, batch + (m, n), dtype), dtype)
    u, s, vh = xp.linalg.svd(_dev(a, dtype), full_matrices=full)
    u, s, vh = _h(u), _h(s), _h(vh)
    k = min(m, n)
    assert s.shape == batch + (k,)
    assert u.shape == batch + ((m, m) if full else (m, k))
    assert vh.shape == batch + ((n, n) if full else (k, n))
    ref = np.linalg.svd(a, compute_uv=False)
    tol = _bound(dtype, max(m, n))
    assert np.abs(s - ref).max() <= tol * ref.max()
    assert np.all(np.diff(s, axis=-1) <= tol * ref.max())
    rec = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
    assert _rel(rec, a) < tol
    assert np.abs(_ct(u) @ u - np.eye(u.shape[-1])).max() < tol
    assert np.abs(vh @ _ct(vh) - np.eye(vh.shape[-2])).max() < tol
    sv = _h(xp.linalg.svdvals(_dev(a, dtype)))
    assert np.abs(sv - ref).max() <= tol * ref.max()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch,n", SHAPES)
def test_eigh(dtype, batch, n):
    xp = _xp()
    rng = np.random.default_rng(n + 5)
    a = _rand(rng, batch + (n, n), dtype)
    a = np.tril(a, -1) + _ct(np.tril(a, -1)) + np.real(a) * np.eye(n)   # Hermitian
    a = _rounded(a, dtype)
    w, v = xp.linalg.eigh(_dev(a, dtype))
    w, v = _h(w), _h(v)
    ref = np.linalg.eigvalsh(a)
    tol = _bound(dtype, n) * max(np.abs(ref).max(), 1.0)
    assert np.abs(w - ref).max() <= tol
    assert np.linalg.norm(a @ v - v * w[..., None, :]) <= tol * np.sqrt(n * max(1, np.prod(batch)))
    assert np.abs(_ct(v) @ v - np.eye(n)).max() < _bound(dtype, n)
    w2 = _h(xp.linalg.eigvalsh(_dev(a, dtype)))
    assert np.abs(w2 - ref).max() <= tol


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch,n", [((), 1), ((), 9), ((3,), 16), ((), 64)])
def test_eig(dtype, batch, n):
    xp = _xp()
    rng = np.random.default_rng(n + 9)
    a = _rounded(_rand(rng, batch + (n, n), dtype), dtype)
    w, v = xp.linalg.eig(_dev(a, dtype))
    assert str(w.dtype) in ("complex64", "complex128") and w.shape == batch + (n,)
    w, v = _h(w), _h(v)
    scale = np.linalg.norm(a, axis=(-2, -1)).max()
    tol = _bound(dtype, n, c=100.0) * scale
    res = np.linalg.norm(a @ v - v * w[..., None, :], axis=-2)      # per eigenpair
    assert res.max() <= tol
    assert np.allclose(np.linalg.norm(v, axis=-2), 1.0, atol=_bound(dtype, n))
    ref = np.linalg.eigvals(a).reshape(-1, n)
    got = _h(xp.linalg.eigvals(_dev(a, dtype))).reshape(-1, n)
    # as sets (a conjugate pair's order is arbitrary): each one's nearest in the other
    dist = np.abs(got[:, :, None] - ref[:, None, :])
    assert max(dist.min(1).max(), dist.min(2).max()) <= np.sqrt(tol) + tol


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape1,shape2", [((5, 5), (5,)), ((5, 5), (5, 3)),
                                           ((3, 7, 7), (7, 2)), ((2, 1, 4, 4), (3, 4, 1)),
                                           ((64, 64), (64, 64)), ((0, 3, 3), (3, 2))])
def test_solve(dtype, shape1, shape2):
    xp = _xp()
    rng = np.random.default_rng(sum(shape1))
    a = _rand(rng, shape1, dtype) + 4 * np.eye(shape1[-1])
    a, b = _rounded(a, dtype), _rounded(_rand(rng, shape2, dtype), dtype)
    x = _h(xp.linalg.solve(_dev(a, dtype), _dev(b, dtype)))
    ref = np.linalg.solve(a, b if len(shape2) > 1 else b[..., None])
    if len(shape2) == 1:
        ref = ref[..., 0]
    assert x.shape == ref.shape
    if x.size:
        n = shape1[-1]
        cond = np.linalg.cond(a).max()
        assert _rel(x, ref) < _bound(dtype, n) * cond


def test_solve_singular():
    import baracuda_dsl as bd
    xp = _xp()
    a = np.stack([np.eye(3), np.array([[1.0, 2, 3], [2, 4, 6], [0, 0, 1]])])
    with pytest.raises(bd.SingularMatrixError) as ei:
        xp.linalg.solve(_dev(a, "float64"), _dev(np.ones((2, 3, 1)), "float64"))
    assert ei.value.batch_index == 1
    with pytest.raises(bd.SingularMatrixError):
        xp.linalg.inv(_dev(a, "float32"))


@pytest.mark.parametrize("dtype", DTYPES + ["float16"])
@pytest.mark.parametrize("batch,n", [((), 1), ((), 6), ((4,), 9), ((), 65), ((0,), 3),
                                     ((2,), 0)])
def test_inv_det_slogdet(dtype, batch, n):
    xp = _xp()
    rng = np.random.default_rng(n + 3)
    # det of order 1 (no overflow in float32 / float16 for n = 65)
    a = _rounded(_rand(rng, batch + (n, n), dtype) / (2 * np.sqrt(n)) + np.eye(n), dtype)
    d = _dev(a, dtype)
    tol = _bound(dtype, n, c=50.0)
    inv = _h(xp.linalg.inv(d))
    assert inv.shape == a.shape and str(xp.linalg.inv(d).dtype) == dtype
    if inv.size:
        assert np.abs(inv @ a - np.eye(n)).max() < tol * np.linalg.cond(a).max()
    det = _h(xp.linalg.det(d))
    ref = np.linalg.det(a)
    assert det.shape == batch
    assert np.all(np.abs(det - ref) <= tol * np.abs(ref) + 1e-300)
    sign, logabs = xp.linalg.slogdet(d)
    rs, rl = np.linalg.slogdet(a)
    assert np.all(np.abs(_h(sign) - rs) <= tol) and np.all(np.abs(_h(logabs) - rl) <= tol * n)


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
def test_det_singular_and_strided(dtype):
    xp = _xp()
    a = np.array([[[1.0, 2, 3], [2, 4, 6], [1, 0, 1]], [[0, 1, 0], [1, 0, 0], [0, 0, 2]]])
    d = _dev(a, dtype)
    assert np.allclose(_h(xp.linalg.det(d)), [0.0, -2.0])
    s, l = xp.linalg.slogdet(d)
    assert _h(s)[0] == 0 and _h(l)[0] == -np.inf and np.isclose(_h(s)[1], -1)
    # a transposed (strided) view: det(Aᵀ) = det(A)
    assert np.allclose(_h(xp.linalg.det(d.mT)), [0.0, -2.0], atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_inputs(dtype):
    xp = _xp()
    rng = np.random.default_rng(11)
    a = _rounded(_rand(rng, (6, 12, 12), dtype) + 5 * np.eye(12), dtype)
    d = _dev(a, dtype)[::2, :, :].mT             # every other matrix, transposed
    ref = np.swapaxes(a[::2], -1, -2)
    tol = _bound(dtype, 12, c=50.0)
    assert np.abs(_h(xp.linalg.inv(d)) @ ref - np.eye(12)).max() < tol * np.linalg.cond(ref).max()
    q, r = xp.linalg.qr(d)
    assert _rel(_h(q) @ _h(r), ref) < tol
    assert np.abs(_h(xp.linalg.svdvals(d)) - np.linalg.svd(ref, compute_uv=False)).max() \
        < tol * np.abs(ref).max() * 12


@pytest.mark.parametrize("dtype", DTYPES)
def test_norms(dtype):
    xp = _xp()
    rng = np.random.default_rng(2)
    a = _rounded(_rand(rng, (3, 7, 5), dtype), dtype)
    d = _dev(a, dtype)
    tol = _bound(dtype, 35)
    for ord_ in (2, 1, 0, -1, float("inf"), -float("inf"), 3, 0.5):
        for axis in (None, -1, (0, 2)):
            got = xp.linalg.vector_norm(d, axis=axis, ord=ord_)
            assert str(got.dtype) == REAL[dtype]
            got = _h(got)
            ref = np.linalg.norm(a.reshape(-1) if axis is None else a, ord=ord_,
                                 axis=axis if axis is not None else None) \
                if not isinstance(axis, tuple) else _vnorm(a, axis, ord_)
            assert np.allclose(got, ref, rtol=tol * 4, atol=0), (ord_, axis)
    for ord_ in ("fro", "nuc", 1, -1, 2, -2, float("inf"), -float("inf")):
        got = xp.linalg.matrix_norm(d, ord=ord_, keepdims=True)
        assert got.shape == (3, 1, 1) and str(got.dtype) == REAL[dtype]
        ref = np.linalg.norm(a, ord=ord_, axis=(-2, -1), keepdims=True)
        assert np.allclose(_h(got), ref, rtol=tol * 10, atol=0), ord_
    c = _h(xp.linalg.cond(d[:, :5, :5]))
    assert np.allclose(c, np.linalg.cond(a[:, :5, :5]), rtol=1e-2 if "32" in dtype or
                       dtype == "complex64" else 1e-8)


def _vnorm(a, axis, ord_):
    b = np.moveaxis(a, axis, tuple(range(-len(axis), 0)))
    b = b.reshape(b.shape[:-len(axis)] + (-1,))
    return np.linalg.norm(b, ord=ord_, axis=-1)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "complex128"])
def test_cross(dtype):
    xp = _xp()
    rng = np.random.default_rng(4)
    a = (rng.integers(-9, 9, (4, 3, 5)) if dtype == "int64"
         else _rounded(_rand(rng, (4, 3, 5), dtype), dtype))
    b = (rng.integers(-9, 9, (3, 5)) if dtype == "int64"
         else _rounded(_rand(rng, (3, 5), dtype), dtype))
    got = xp.linalg.cross(_dev(a, dtype), _dev(b, dtype), axis=-2)
    ref = np.cross(a, b, axis=-2)
    assert got.shape == ref.shape and str(got.dtype) == dtype
    assert np.allclose(_h(got), ref, rtol=1e-5 if "32" in dtype else 1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_pinv_rank_lstsq(dtype):
    xp = _xp()
    rng = np.random.default_rng(6)
    u = _rand(rng, (2, 9, 3), dtype)
    v = _rand(rng, (2, 3, 6), dtype)
    a = _rounded(u @ v, dtype)                                   # rank 3, 9 x 6
    d = _dev(a, dtype)
    assert _h(xp.linalg.matrix_rank(d)).tolist() == [3, 3]
    assert str(xp.linalg.matrix_rank(d).dtype) == "int64"
    p = _h(xp.linalg.pinv(d))
    ref = np.linalg.pinv(a, rcond=1e-5 if "32" in dtype else 1e-10)
    assert _rel(p, ref) < (1e-3 if "32" in dtype else 1e-8)
    b = _rounded(_rand(rng, (2, 9, 2), dtype), dtype)
    sol, res, rank, s = xp.linalg.lstsq(d, _dev(b, dtype))
    assert _rel(_h(sol), ref @ b) < (1e-3 if "32" in dtype else 1e-8)
    assert _h(rank).tolist() == [3, 3] and res.shape == (2, 2)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matrix_power_negative(dtype):
    xp = _xp()
    rng = np.random.default_rng(8)
    a = _rounded(rng.standard_normal((3, 5, 5)) + 4 * np.eye(5), dtype)
    got = _h(xp.linalg.matrix_power(_dev(a, dtype), -3))
    ref = np.linalg.matrix_power(a, -3)
    assert _rel(got, ref) < _bound(dtype, 5, c=200.0) * np.linalg.cond(a).max() ** 3


def test_empty_shapes():
    xp = _xp()
    z = xp.zeros((0, 4, 4), dtype=xp.float64)
    assert xp.linalg.cholesky(z).shape == (0, 4, 4)
    assert xp.linalg.svd(z).S.shape == (0, 4)
    assert xp.linalg.eigh(z).eigenvalues.shape == (0, 4)
    e = xp.zeros((2, 0, 0), dtype=xp.float32)
    assert _h(xp.linalg.det(e)).tolist() == [1.0, 1.0]
    s, l = xp.linalg.slogdet(e)
    assert _h(s).tolist() == [1.0, 1.0] and _h(l).tolist() == [0.0, 0.0]
    assert xp.linalg.inv(e).shape == (2, 0, 0)
    assert xp.linalg.qr(xp.zeros((3, 0), dtype=xp.float32)).Q.shape == (3, 0)


def test_info_reports_extensions():
    xp = _xp()
    assert xp.__array_namespace_info__().extensions() == ["fft", "linalg"]
    assert hasattr(xp, "fft") and hasattr(xp, "linalg")


def test_plans_report_vendor_sku():
    import baracuda_dsl as bd
    from baracuda_dsl.ops.linalg import CholeskyDescriptor, CholeskyPlan
    p = CholeskyPlan.select(CholeskyDescriptor((), 64, bd.float32))
    assert p.sku().backend is bd.BackendKind.VENDOR and "potrf" in p.sku().template.lower()
    assert p.workspace_size() > 0
