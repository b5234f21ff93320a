"""The linalg plans on the GPU (cuSOLVER / cuBLAS through nvmath-python) with torch operands,
every route of each plan (batched and per-matrix LU / solve / inverse; gesvdjBatched, gesvdj
and Xgesvd SVD — fixtures lower the thresholds where the test sizes would not reach a route):
residual checks in float64 numpy — ‖A − L·Lᴴ‖, P·L·U = A, solve / inverse residuals,
‖A − Q·R‖ and QᴴQ = I, ‖U·Σ·Vh − A‖, ‖A·V − V·Λ‖ — bounded by c·n·eps(dtype) (times cond where
the quantity is forward error), for f32 / f64 / c64 / c128, batched and not, odd sizes, strided
inputs, empty problems, NaN-poisoned outputs, and the info words → typed LinAlgErrors."""

import numpy as np
import pytest

from baracuda_dsl.runtime import vendor
from tests._checks import eps, poison, to_numpy

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float64", "complex64", "complex128"]
REAL = {"float32": "float32", "float64": "float64", "complex64": "float32",
        "complex128": "float64"}
CPLX = {"float32": "complex64", "float64": "complex128", "complex64": "complex64",
        "complex128": "complex128"}
SIZES = [1, 3, 17, 64, 100]
BATCHES = [(), (3,)]
C = 40          # constant of the c·n·eps backward-error bounds


def _torch():
    return pytest.importorskip("torch")


def _tol(dtype, n):
    return C * max(n, 1) * eps(dtype)


def _rand(torch, shape, dtype, gen):
    dt = getattr(torch, dtype)
    x = torch.randn(shape, generator=gen, device="cuda", dtype=torch.float64)
    if dt.is_complex:
        x = torch.complex(x, torch.randn(shape, generator=gen, device="cuda",
                                         dtype=torch.float64))
    return x.to(dt)


def _strided(torch, a, how):
    """The values of ``a`` through a non-dense view: "t" column-major (a transposed buffer),
    "s" every other column of a wider buffer; anything else: ``a`` itself."""
    if how == "t":
        return a.transpose(-1, -2).contiguous().transpose(-1, -2)
    if how == "s":
        wide = torch.zeros(a.shape[:-1] + (2 * a.shape[-1],), dtype=a.dtype, device=a.device)
        wide[..., ::2] = a
        return wide[..., ::2]
    return a


def _run(plan, args):
    torch = _torch()
    n = plan.workspace_size()
    ws = torch.empty(n, dtype=torch.uint8, device="cuda") if n else None
    plan.run(args, workspace=ws)
    torch.cuda.synchronize()


def _info(torch, batch):
    return torch.full(batch or (1,), -99, dtype=torch.int32, device="cuda")


def _h(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _rel(x, ref):
    """Normwise ‖x − ref‖ / ‖ref‖ per matrix, the worst of the batch."""
    x, ref = np.asarray(x), np.asarray(ref)
    if not x.size:
        return 0.0
    num = np.linalg.norm((x - ref).reshape(-1, *x.shape[-2:]), axis=(-2, -1))
    den = np.linalg.norm(ref.reshape(-1, *x.shape[-2:]), axis=(-2, -1))
    return float(np.max(num / np.maximum(den, 1e-300)))


def _eye_err(q):
    """‖QᴴQ − I‖ (max over the batch)."""
    g = _h(q) @ q
    return float(np.max(np.abs(g - np.eye(g.shape[-1])))) if g.size else 0.0


def _spd(torch, batch, n, dtype, gen):
    x = _rand(torch, batch + (n, n), dtype, gen)
    return x @ x.conj().transpose(-1, -2) + n * torch.eye(n, device="cuda", dtype=x.dtype)


@pytest.fixture(params=["auto", "per_matrix"])
def lu_route(request, monkeypatch):
    """"auto": the default thresholds (batches of square matrices with n ≤ 512 take cuBLAS
    getrfBatched / getrsBatched); "per_matrix": that route switched off (cusolverDn Xgetrf /
    Xgetrs per matrix, the single-matrix route, for every problem)."""
    from baracuda_dsl.ops.linalg import factor

    if request.param == "per_matrix":
        monkeypatch.setattr(factor, "LU_BATCHED_MAX_N", 0)
    return request.param


def _lu_template(route, batch, m, n, solve):
    batched = route == "auto" and int(np.prod(batch)) > 1 and m == n and 0 < n <= 512
    if solve:
        return "cublas.getrfBatched+getrsBatched" if batched else "cusolverDn.Xgetrf+Xgetrs"
    return "cublas.getrfBatched" if batched else "cusolverDn.Xgetrf"


@pytest.fixture(params=["auto", "jacobi", "gesvd"])
def svd_route(request, monkeypatch):
    """"auto": the default thresholds (gesvdjBatched for batches with m, n ≤ 32, gesvdj per
    matrix otherwise at these sizes); "jacobi": gesvdjBatched off; "gesvd": both Jacobi routes
    off (Xgesvd per matrix)."""
    from baracuda_dsl.ops.linalg import spectral

    if request.param != "auto":
        monkeypatch.setattr(spectral, "GESVDJ_BATCHED_MAX", 0)
    if request.param == "gesvd":
        monkeypatch.setattr(spectral, "GESVDJ_MAX_K", 0)
    return request.param


def _svd_template(route, batch, m, n):
    if route == "gesvd":
        return "cusolverDn.Xgesvd"
    if route == "auto" and int(np.prod(batch)) > 1 and max(m, n) <= 32:
        return "cusolverDn.gesvdjBatched"
    return "cusolverDn.gesvdj"


# ------------------------------------------------------------------------------ Cholesky
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(dtype, upper):
    torch = _torch()
    import baracuda_dsl as bd

    gen = torch.Generator(device="cuda").manual_seed(1)
    cases = [(b, n) for b in BATCHES for n in SIZES] + [((2, 2), 5), ((2,), 130)]
    for k, (batch, n) in enumerate(cases):
        a = _spd(torch, batch, n, dtype, gen)
        plan = bd.CholeskyPlan.select(bd.CholeskyDescriptor(batch, n, dtype, upper))
        out, info = poison(torch, batch + (n, n), dtype), _info(torch, batch)
        _run(plan, bd.CholeskyArgs(_strided(torch, a, "ts-"[k % 3]), out, info))
        A, F = to_numpy(a), to_numpy(out)
        rec = _h(F) @ F if upper else F @ _h(F)
        assert _rel(rec, A) <= _tol(dtype, n), (batch, n, plan.sku())
        other = np.tril(F, -1) if upper else np.triu(F, 1)
        assert not np.any(other), "the other triangle must be zero"
        assert (info.cpu().numpy() == 0).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_not_positive_definite(dtype):
    torch = _torch()
    import baracuda_dsl as bd

    for batch, n in (((3,), 3), ((3,), 200)):
        a = torch.eye(n, dtype=getattr(torch, dtype), device="cuda").repeat(3, 1, 1)
        a[1, 1, 1] = -1.0
        plan = bd.CholeskyPlan.select(bd.CholeskyDescriptor(batch, n, dtype))
        info = _info(torch, batch)
        _run(plan, bd.CholeskyArgs(a, poison(torch, batch + (n, n), dtype), info))
        got = info.cpu().numpy()
        assert got[0] == 0 and got[2] == 0 and got[1] == 2, got
        with pytest.raises(vendor.NotPositiveDefiniteError) as e:
            bd.raise_for_info("cholesky", got, batch)
        assert e.value.batch_index == 1


# ------------------------------------------------------------------------------------ LU
@pytest.mark.parametrize("dtype", DTYPES)
def test_lu(dtype, lu_route):
    torch = _torch()
    import baracuda_dsl as bd

    gen = torch.Generator(device="cuda").manual_seed(2)
    shapes = [(1, 1), (3, 3), (17, 17), (64, 40), (40, 64), (100, 100)]
    cases = [(s, b) for s in shapes for b in BATCHES] + [((64, 64), (2, 16)), ((520, 520), (2,))]
    for k, ((m, n), batch) in enumerate(cases):
        a = _rand(torch, batch + (m, n), dtype, gen)
        kk = min(m, n)
        plan = bd.LUPlan.select(bd.LUDescriptor(batch, m, n, dtype))
        assert plan.sku().template == _lu_template(lu_route, batch, m, n, False)
        lu = poison(torch, batch + (m, n), dtype)
        piv = torch.full(batch + (kk,), -1, dtype=torch.int64, device="cuda")
        info = _info(torch, batch)
        _run(plan, bd.LUArgs(_strided(torch, a, "ts-"[k % 3]), lu, piv, info))
        A = to_numpy(a).reshape(-1, m, n)
        LU, P = to_numpy(lu).reshape(-1, m, n), piv.cpu().numpy().reshape(-1, kk)
        assert ((P >= 1) & (P <= m)).all()
        for b in range(A.shape[0]):
            Lm = np.tril(LU[b], -1)[:, :kk] + np.eye(m, kk)
            Um = np.triu(LU[b])[:kk, :]
            perm = np.arange(m)
            for i, p in enumerate(P[b]):
                perm[[i, p - 1]] = perm[[p - 1, i]]
            assert _rel(Lm @ Um, A[b][perm]) <= _tol(dtype, max(m, n)) * 4, (m, n, b)
        assert (info.cpu().numpy() == 0).all()


# ------------------------------------------------------------------------ solve / inverse
def _well_conditioned(torch, batch, n, dtype, gen):
    a = _rand(torch, batch + (n, n), dtype, gen)
    return a + 3 * (n ** 0.5) * torch.eye(n, device="cuda", dtype=a.dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve(dtype, lu_route):
    torch = _torch()
    import baracuda_dsl as bd

    gen = torch.Generator(device="cuda").manual_seed(3)
    cases = [(b, n, r) for b in BATCHES for n in SIZES for r in (1, 5)]
    cases += [((512,), 64, 1), ((2, 3), 17, 0), ((2,), 520, 3)]
    for k, (batch, n, nrhs) in enumerate(cases):
        a = _well_conditioned(torch, batch, n, dtype, gen)
        b = _rand(torch, batch + (n, nrhs), dtype, gen)
        plan = bd.SolvePlan.select(bd.SolveDescriptor(batch, n, nrhs, dtype))
        assert plan.sku().template == _lu_template(lu_route, batch, n, n, True)
        x, info = poison(torch, batch + (n, nrhs), dtype), _info(torch, batch)
        _run(plan, bd.SolveArgs(_strided(torch, a, "ts-"[k % 3]), _strided(torch, b, "s-t"[k % 3]),
                                x, info))
        A, B, X = to_numpy(a), to_numpy(b), to_numpy(x)
        if nrhs:
            res = np.linalg.norm(A @ X - B) / (np.linalg.norm(A) * np.linalg.norm(X)
                                                 + np.linalg.norm(B))
            assert res <= _tol(dtype, n), (batch, n, nrhs, res)
        assert (info.cpu().numpy() == 0).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [4, 520])
def test_solve_singular(dtype, n):
    torch = _torch()
    import baracuda_dsl as bd

    a = torch.eye(n, dtype=getattr(torch, dtype), device="cuda").repeat(2, 1, 1)
    a[1, 2, 2] = 0.0
    for plan_cls, desc, args in (
            (bd.SolvePlan, bd.SolveDescriptor((2,), n, 1, dtype),
             lambda info: bd.SolveArgs(a, torch.ones((2, n, 1), dtype=a.dtype, device="cuda"),
                                       poison(torch, (2, n, 1), dtype), info)),
            (bd.InversePlan, bd.InverseDescriptor((2,), n, dtype),
             lambda info: bd.InverseArgs(a, poison(torch, (2, n, n), dtype), info)),
            (bd.LUPlan, bd.LUDescriptor((2,), n, n, dtype),
             lambda info: bd.LUArgs(a, poison(torch, (2, n, n), dtype),
                                    torch.empty((2, n), dtype=torch.int64, device="cuda"),
                                    info))):
        plan = plan_cls.select(desc)
        assert plan.sku().template.startswith("cublas." if n <= 512 else "cusolverDn.")
        info = _info(torch, (2,))
        _run(plan, args(info))
        got = info.cpu().numpy()
        assert got[0] == 0 and got[1] == 3, (plan.sku().template, got)
        with pytest.raises(vendor.SingularMatrixError) as e:
            bd.raise_for_info("solve", got, (2,))
        assert e.value.batch_index == 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_inverse(dtype, lu_route):
    torch = _torch()
    import baracuda_dsl as bd

    gen = torch.Generator(device="cuda").manual_seed(4)
    cases = [(b, n) for b in BATCHES for n in SIZES] + [((256,), 32), ((2,), 520)]
    for k, (batch, n) in enumerate(cases):
        a = _well_conditioned(torch, batch, n, dtype, gen)
        plan = bd.InversePlan.select(bd.InverseDescriptor(batch, n, dtype))
        assert plan.sku().template == _lu_template(lu_route, batch, n, n, True)
        out, info = poison(torch, batch + (n, n), dtype), _info(torch, batch)
        _run(plan, bd.InverseArgs(_strided(torch, a, "ts-"[k % 3]), out, info))
        A, X = to_numpy(a), to_numpy(out)
        cond = float(np.max(np.linalg.cond(A.reshape(-1, n, n))))
        assert np.max(np.abs(X @ A - np.eye(n))) <= _tol(dtype, n) * cond, (batch, n)
        assert (info.cpu().numpy() == 0).all()


# ------------------------------------------------------------------------------------ QR
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(dtype, mode):
    torch = _torch()
    import baracuda_dsl as bd

    gen = torch.Generator(device="cuda").manual_seed(5)
    shapes = [(1, 1), (5, 3), (3, 5), (17, 17), (64, 30), (100, 64)]
    for k, ((m, n), batch) in enumerate([(s, b) for s in shapes for b in BATCHES]):
        a = _rand(torch, batch + (m, n), dtype, gen)
        plan = bd.QRPlan.select(bd.QRDescriptor(batch, m, n, dtype, mode))
        d = plan.desc
        q = None if mode == "r" else poison(torch, d.q_shape, dtype)
        r = poison(torch, d.r_shape, dtype)
        _run(plan, bd.QRArgs(_strided(torch, a, "ts-"[k % 3]), q, r))
        A, R = to_numpy(a), to_numpy(r)
        assert not np.any(np.tril(R, -1)), "R must be zero below the diagonal"
        tol = _tol(dtype, max(m, n))
        if q is None:
            # R alone: the R of the reduced factorisation of the same input
            full = bd.QRPlan.select(bd.QRDescriptor(batch, m, n, dtype, "reduced"))
            q2, r2 = poison(torch, full.desc.q_shape, dtype), poison(torch, d.r_shape, dtype)
            _run(full, bd.QRArgs(a, q2, r2))
            assert _rel(R, to_numpy(r2)) <= tol, (m, n)
            continue
        Q = to_numpy(q)
        assert _eye_err(Q) <= tol, (m, n, mode)
        assert _rel(Q @ R, A) <= tol, (m, n, mode)


# ----------------------------------------------------------------------------------- SVD
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("full,uv", [(True, True), (False, True), (True, False)])
def test_svd(dtype, full, uv, svd_route):
    torch = _torch()
    import baracuda_dsl as bd

    gen = torch.Generator(device="cuda").manual_seed(6)
    shapes = [(1, 1), (5, 3), (3, 5), (17, 17), (64, 30), (30, 64), (100, 100)]
    cases = [(s, b) for s in shapes for b in BATCHES]
    cases += [((32, 32), (64,)), ((7, 32), (2, 3)), ((33, 8), (4,))]
    for k, ((m, n), batch) in enumerate(cases):
        a = _rand(torch, batch + (m, n), dtype, gen)
        kk = min(m, n)
        plan = bd.SVDPlan.select(bd.SVDDescriptor(batch, m, n, dtype, full, uv))
        assert plan.sku().template == _svd_template(svd_route, batch, m, n)
        d = plan.desc
        s = poison(torch, batch + (kk,), REAL[dtype])
        u = poison(torch, d.u_shape, dtype) if uv else None
        vh = poison(torch, d.vh_shape, dtype) if uv else None
        info = _info(torch, batch)
        _run(plan, bd.SVDArgs(_strided(torch, a, "ts-"[k % 3]), s, u, vh, info))
        A, S = to_numpy(a), to_numpy(s)
        tol = _tol(dtype, max(m, n))
        ref = np.linalg.svd(A, compute_uv=False)
        assert np.all(np.diff(S, axis=-1) <= 0), "singular values must be descending"
        assert np.max(np.abs(S - ref)) <= tol * np.max(ref), (m, n)
        assert (info.cpu().numpy() == 0).all()
        if uv:
            U, V = to_numpy(u), to_numpy(vh)
            assert _eye_err(U) <= tol and _eye_err(_h(V)) <= tol, (m, n, full)
            rec = (U[..., :, :kk] * S[..., None, :]) @ V[..., :kk, :]
            assert _rel(rec, A) <= tol, (m, n, full)


# ---------------------------------------------------------------------------------- eigh
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("compute_v", [True, False])
def test_eigh(dtype, compute_v):
    torch = _torch()
    import baracuda_dsl as bd

    gen = torch.Generator(device="cuda").manual_seed(7)
    for k, (batch, n) in enumerate([(b, n) for b in BATCHES for n in SIZES]):
        x = _rand(torch, batch + (n, n), dtype, gen)
        a = x + x.conj().transpose(-1, -2)
        junk = torch.triu(_rand(torch, batch + (n, n), dtype, gen), 1) * 1e3
        given = torch.tril(a) + junk               # the upper triangle must not be read
        plan = bd.EighPlan.select(bd.EighDescriptor(batch, n, dtype, compute_v))
        w = poison(torch, batch + (n,), REAL[dtype])
        v = poison(torch, batch + (n, n), dtype) if compute_v else None
        info = _info(torch, batch)
        _run(plan, bd.EighArgs(_strided(torch, given, "ts-"[k % 3]), w, v, info))
        A, W = to_numpy(a), to_numpy(w)
        nrm = float(np.max(np.linalg.norm(A, 2, axis=(-2, -1)))) if A.size else 1.0
        tol = _tol(dtype, n)
        assert np.all(np.diff(W, axis=-1) >= 0), "eigenvalues must be ascending"
        assert np.max(np.abs(W - np.linalg.eigvalsh(A))) <= tol * nrm, (batch, n)
        if compute_v:
            V = to_numpy(v)
            assert _eye_err(V) <= tol, (batch, n)
            assert np.max(np.abs(A @ V - V * W[..., None, :])) <= tol * nrm, (batch, n)
        assert (info.cpu().numpy() == 0).all()


# ----------------------------------------------------------------------------------- eig
@pytest.mark.parametrize("dtype", DTYPES)
def test_eig(dtype):
    torch = _torch()
    import baracuda_dsl as bd

    gen = torch.Generator(device="cuda").manual_seed(8)
    for k, (batch, n) in enumerate([(b, n) for b in BATCHES for n in (1, 3, 17, 64)]):
        a = _rand(torch, batch + (n, n), dtype, gen)
        plan = bd.EigPlan.select(bd.EigDescriptor(batch, n, dtype))
        w = poison(torch, batch + (n,), CPLX[dtype])
        v = poison(torch, batch + (n, n), CPLX[dtype])
        info = _info(torch, batch)
        _run(plan, bd.EigArgs(_strided(torch, a, "ts-"[k % 3]), w, v, info))
        A, W, V = to_numpy(a), to_numpy(w), to_numpy(v)
        nrm = float(np.max(np.linalg.norm(A, 2, axis=(-2, -1))))
        tol = _tol(dtype, n)
        assert np.max(np.abs(np.linalg.norm(V, axis=-2) - 1)) <= tol
        assert np.max(np.abs(A @ V - V * W[..., None, :])) <= tol * nrm, (batch, n)
        ref = np.linalg.eigvals(A)
        # the spectra match as sets: trace and sum of squares are basis independent
        assert np.max(np.abs(W.sum(-1) - ref.sum(-1))) <= tol * nrm * n, (batch, n)
        assert (info.cpu().numpy() == 0).all()
    vplan = bd.EigPlan.select(bd.EigDescriptor((), 5, dtype, compute_v=False))
    a = _rand(torch, (5, 5), dtype, gen)
    w = poison(torch, (5,), CPLX[dtype])
    _run(vplan, bd.EigArgs(a, w))
    got = to_numpy(w)
    ref = np.linalg.eigvals(to_numpy(a))
    # as sets (a conjugate pair's order is arbitrary): each one's nearest in the other
    dist = np.abs(got[:, None] - ref[None, :])
    assert max(dist.min(0).max(), dist.min(1).max()) <= 1e3 * eps(dtype) * np.max(np.abs(ref))


# --------------------------------------------------------------------------------- empty
@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_empty_problems(dtype):
    torch = _torch()
    import baracuda_dsl as bd

    e = lambda *s, dt=dtype: torch.empty(s, dtype=getattr(torch, dt), device="cuda")  # noqa
    for batch in ((0,), (2,)):
        info = torch.full(batch, -99, dtype=torch.int32, device="cuda")
        _run(bd.CholeskyPlan.select(bd.CholeskyDescriptor(batch, 0, dtype)),
             bd.CholeskyArgs(e(*batch, 0, 0), e(*batch, 0, 0), info))
        _run(bd.LUPlan.select(bd.LUDescriptor(batch, 0, 3, dtype)),
             bd.LUArgs(e(*batch, 0, 3), e(*batch, 0, 3), e(*batch, 0, dt="int64"), info))
        _run(bd.SolvePlan.select(bd.SolveDescriptor(batch, 0, 2, dtype)),
             bd.SolveArgs(e(*batch, 0, 0), e(*batch, 0, 2), e(*batch, 0, 2), info))
        _run(bd.InversePlan.select(bd.InverseDescriptor(batch, 0, dtype)),
             bd.InverseArgs(e(*batch, 0, 0), e(*batch, 0, 0), info))
        q = poison(torch, batch + (3, 3), dtype)
        _run(bd.QRPlan.select(bd.QRDescriptor(batch, 3, 0, dtype, "complete")),
             bd.QRArgs(e(*batch, 3, 0), q, e(*batch, 3, 0), info))
        assert np.array_equal(to_numpy(q), np.broadcast_to(np.eye(3), batch + (3, 3)))
        _run(bd.SVDPlan.select(bd.SVDDescriptor(batch, 0, 2, dtype, False)),
             bd.SVDArgs(e(*batch, 0, 2), e(*batch, 0, dt=REAL[dtype]), e(*batch, 0, 0),
                        e(*batch, 0, 2), info))
        _run(bd.EighPlan.select(bd.EighDescriptor(batch, 0, dtype)),
             bd.EighArgs(e(*batch, 0, 0), e(*batch, 0, dt=REAL[dtype]), e(*batch, 0, 0), info))
        _run(bd.EigPlan.select(bd.EigDescriptor(batch, 0, dtype)),
             bd.EigArgs(e(*batch, 0, 0), e(*batch, 0, dt=CPLX[dtype]),
                        e(*batch, 0, 0, dt=CPLX[dtype]), info))
        assert (info.cpu().numpy() == 0).all()
