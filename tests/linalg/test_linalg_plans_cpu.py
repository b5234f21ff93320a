"""The linalg plans without a GPU: descriptor validation, SKUs, workspace layout, operand checks,
``raise_for_info``, empty problems, and every plan run end to end on a numpy stand-in for the
device and cuSOLVER (tests/linalg/_linalg_sim.py), against numpy references — which checks the
column-major copies, transposes, conjugations, leading dimensions and per-matrix addressing the
plans compute."""

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.dtypes import complex64, complex128, float16, float32, float64, int32, int64
from baracuda_dsl.errors import (DeviceMismatchError, InvalidProblemError, UnsupportedError,
                                 WorkspaceTooSmallError)
from baracuda_dsl.ops import linalg as L
from baracuda_dsl.ops.linalg.common import raise_for_info
from baracuda_dsl.runtime import vendor
from baracuda_dsl.tensor import TensorView
from baracuda_dsl.vocabulary import ArchSku, BackendKind, OpCategory, PlanPreference, Workspace

from tests.linalg import _linalg_sim as sim

PREF = PlanPreference(arch=ArchSku.SM90A)
DTYPES = [float32, float64, complex64, complex128]
TOL = {float32: 2e-4, complex64: 2e-4, float64: 1e-10, complex128: 1e-10}
REAL = {float32: float32, float64: float64, complex64: float32, complex128: float64}
CPLX = {float32: complex64, float64: complex128, complex64: complex64, complex128: complex128}


def _descs():
    return [
        (L.CholeskyPlan, L.CholeskyDescriptor((2,), 4, float32)),
        (L.LUPlan, L.LUDescriptor((2,), 4, 3, float32)),
        (L.SolvePlan, L.SolveDescriptor((2,), 4, 2, float32)),
        (L.InversePlan, L.InverseDescriptor((2,), 4, float32)),
        (L.QRPlan, L.QRDescriptor((2,), 4, 3, float32)),
        (L.SVDPlan, L.SVDDescriptor((2,), 4, 3, float32)),
        (L.EighPlan, L.EighDescriptor((2,), 4, float32)),
        (L.EigPlan, L.EigDescriptor((2,), 4, float32)),
    ]


# ------------------------------------------------------------------------------ validation
@pytest.mark.parametrize("make", [
    lambda dt: L.CholeskyDescriptor((), 3, dt), lambda dt: L.LUDescriptor((), 3, 3, dt),
    lambda dt: L.SolveDescriptor((), 3, 1, dt), lambda dt: L.InverseDescriptor((), 3, dt),
    lambda dt: L.QRDescriptor((), 3, 3, dt), lambda dt: L.SVDDescriptor((), 3, 3, dt),
    lambda dt: L.EighDescriptor((), 3, dt), lambda dt: L.EigDescriptor((), 3, dt)])
def test_unwired_dtypes_name_the_wired_ones(make):
    for bad in (float16, "bf16", int32):
        with pytest.raises(UnsupportedError) as e:
            make(bad)
        for name in ("float32", "float64", "complex64", "complex128"):
            assert name in str(e.value)
    for dt in DTYPES + ["f32", "c128"]:
        make(dt)


def test_bad_shapes():
    for bad in [lambda: L.CholeskyDescriptor((), -1), lambda: L.LUDescriptor((), 3, -2),
                lambda: L.SolveDescriptor((2,), 3, -1), lambda: L.CholeskyDescriptor((-1,), 3),
                lambda: L.InverseDescriptor((1,) * 7, 3), lambda: L.QRDescriptor((2,), 3.0, 3),
                lambda: L.SVDDescriptor("ab", 3, 3), lambda: L.EighDescriptor((True,), 3),
                lambda: L.QRDescriptor((), 3, 3, mode="full"),
                lambda: L.SVDDescriptor((), 3, 3, full_matrices=1),
                lambda: L.EighDescriptor((), 3, compute_v="yes"),
                lambda: L.CholeskyDescriptor((), 3, upper=None)]:
        with pytest.raises(InvalidProblemError):
            bad()
    L.InverseDescriptor((1,) * 6, 3)          # rank 8: the limit
    assert L.LUDescriptor(4, 2, 2).batch == (4,)


@pytest.mark.parametrize("plan,desc", _descs())
def test_sku_names_the_vendor_routine(plan, desc):
    p = plan.select(desc, PREF)
    sku = p.sku()
    assert sku.backend is BackendKind.VENDOR and sku.category is OpCategory.LINALG
    assert sku.template.split(".")[0] in ("cusolverDn", "cublas") and sku.arch is ArchSku.SM90A
    assert "." in sku.template and dict(sku.knobs).get("route", "") in ("", *ROUTES)
    assert sku.element is float32 and not sku.precision_guarantee.bit_stable_on_same_hardware
    assert p.recordable is False
    with pytest.raises(InvalidProblemError):
        plan.select(L.CholeskyDescriptor((), 2) if plan is not L.CholeskyPlan
                    else L.LUDescriptor((), 2, 2), PREF)


ROUTES = ("batched", "per_matrix", "single", "jacobi", "gesvd")


def test_routes():
    t = lambda p, d: p.select(d, PREF).sku().template  # noqa: E731
    assert t(L.CholeskyPlan, L.CholeskyDescriptor((4,), 64)) == "cusolverDn.potrfBatched"
    assert t(L.CholeskyPlan, L.CholeskyDescriptor((4,), 129)) == "cusolverDn.Xpotrf"
    assert t(L.CholeskyPlan, L.CholeskyDescriptor((), 8)) == "cusolverDn.Xpotrf"
    assert t(L.LUPlan, L.LUDescriptor((), 3, 3)) == "cusolverDn.Xgetrf"
    assert t(L.LUPlan, L.LUDescriptor((1,), 3, 3)) == "cusolverDn.Xgetrf"
    assert t(L.LUPlan, L.LUDescriptor((2,), 3, 3)) == "cublas.getrfBatched"
    assert t(L.LUPlan, L.LUDescriptor((2, 2), 512, 512)) == "cublas.getrfBatched"
    assert t(L.LUPlan, L.LUDescriptor((2,), 513, 513)) == "cusolverDn.Xgetrf"
    assert t(L.LUPlan, L.LUDescriptor((2,), 4, 3)) == "cusolverDn.Xgetrf"     # not square
    assert t(L.SolvePlan, L.SolveDescriptor((), 3, 3)) == "cusolverDn.Xgetrf+Xgetrs"
    assert t(L.SolvePlan, L.SolveDescriptor((512,), 64, 1)) == "cublas.getrfBatched+getrsBatched"
    assert t(L.SolvePlan, L.SolveDescriptor((2,), 600, 1)) == "cusolverDn.Xgetrf+Xgetrs"
    assert t(L.InversePlan, L.InverseDescriptor((3,), 5)) == "cublas.getrfBatched+getrsBatched"
    assert t(L.InversePlan, L.InverseDescriptor((1, 1), 5)) == "cusolverDn.Xgetrf+Xgetrs"
    assert t(L.SVDPlan, L.SVDDescriptor((2,), 32, 5)) == "cusolverDn.gesvdjBatched"
    assert t(L.SVDPlan, L.SVDDescriptor((2,), 33, 5)) == "cusolverDn.gesvdj"
    assert t(L.SVDPlan, L.SVDDescriptor((), 8, 8)) == "cusolverDn.gesvdj"
    assert t(L.SVDPlan, L.SVDDescriptor((2,), 1024, 2000)) == "cusolverDn.gesvdj"
    assert t(L.SVDPlan, L.SVDDescriptor((), 1025, 1025)) == "cusolverDn.Xgesvd"
    assert t(L.QRPlan, L.QRDescriptor((), 3, 3, complex64)) == "cusolverDn.Xgeqrf+ungqr"
    assert t(L.QRPlan, L.QRDescriptor((), 3, 3, float64)) == "cusolverDn.Xgeqrf+orgqr"
    assert t(L.QRPlan, L.QRDescriptor((), 3, 3, mode="r")) == "cusolverDn.Xgeqrf"
    assert t(L.SVDPlan, L.SVDDescriptor((), 3, 3)) == "cusolverDn.gesvdj"
    assert t(L.EighPlan, L.EighDescriptor((2,), 3)) == "cusolverDn.XsyevBatched"
    assert t(L.EighPlan, L.EighDescriptor((1,), 3)) == "cusolverDn.Xsyevd"
    assert t(L.EigPlan, L.EigDescriptor((), 3)) == "cusolverDn.Xgeev"
    assert L.SVDPlan.select(L.SVDDescriptor((), 3, 3, complex64), PREF).sku().aux_element is \
        float32
    assert L.EigPlan.select(L.EigDescriptor((), 3, float64), PREF).sku().aux_element is \
        complex128


def test_public_names_exported():
    for name in L.__all__:
        assert getattr(bd, name) is getattr(L, name)
    from baracuda_dsl.ops import FAMILIES

    assert "linalg" in FAMILIES


# --------------------------------------------------------------------------- raise_for_info
def test_raise_for_info():
    raise_for_info("cholesky", np.zeros((2, 3), np.int32), (2, 3))
    raise_for_info("svd", np.zeros(0, np.int32), (0,))
    info = np.zeros((2, 3), np.int32)
    info[1, 0], info[1, 2] = 4, 2
    with pytest.raises(vendor.NotPositiveDefiniteError) as e:
        raise_for_info("cholesky", info, (2, 3))
    assert e.value.batch_index == 3 and e.value.info == 4 and "(1, 0)" in str(e.value)
    assert isinstance(e.value, ValueError) and isinstance(e.value, vendor.LinAlgError)
    for op in ("lu", "solve", "inverse", "inv"):
        with pytest.raises(vendor.SingularMatrixError) as e:
            raise_for_info(op, np.array([0, 0, 5], np.int32), (3,))
        assert e.value.batch_index == 2 and e.value.info == 5
    for op in ("svd", "eigh", "eig"):
        with pytest.raises(vendor.NoConvergenceError):
            raise_for_info(op, np.array([1], np.int32), ())
    with pytest.raises(vendor.VendorError):
        raise_for_info("cholesky", np.array([0, -3], np.int32), (2,))
    with pytest.raises(vendor.VendorError):
        raise_for_info("qr", np.array([2], np.int32), ())
    with pytest.raises(InvalidProblemError):
        raise_for_info("det", np.zeros(1, np.int32), ())
    with pytest.raises(InvalidProblemError):
        raise_for_info("lu", np.zeros(1, np.float32), ())


# ----------------------------------------------------------------------- operand checks
@pytest.fixture
def arena(monkeypatch):
    ar = sim.Arena()
    sim.install(monkeypatch, ar)
    return ar


def _ws(ar, plan):
    n = plan.workspace_size()
    return Workspace(ar.alloc(n), n)


def test_operand_checks(arena):
    ar = arena
    p = L.CholeskyPlan.select(L.CholeskyDescriptor((2,), 3, float64), PREF)
    a = ar.put(np.eye(3)[None].repeat(2, 0), float64)
    out = ar.empty((2, 3, 3), float64)
    ws = _ws(ar, p)
    with pytest.raises(InvalidProblemError):       # wrong shape
        p.run(L.CholeskyArgs(a, ar.empty((2, 3, 2), float64)), 0, ws)
    with pytest.raises(UnsupportedError):          # wrong dtype
        p.run(L.CholeskyArgs(a, ar.empty((2, 3, 3), float32)), 0, ws)
    strided = out.with_shape((2, 3, 3), (9, 1, 3))
    with pytest.raises(UnsupportedError):          # output not C-contiguous
        p.run(L.CholeskyArgs(a, strided), 0, ws)
    with pytest.raises(InvalidProblemError):       # output aliases the input
        p.run(L.CholeskyArgs(a, a), 0, ws)
    with pytest.raises(DeviceMismatchError):
        other = TensorView(out.ptr, out.shape, out.strides, float64, 1)
        p.run(L.CholeskyArgs(a, other), 0, ws)
    with pytest.raises(InvalidProblemError):       # info shape
        p.run(L.CholeskyArgs(a, out, ar.empty((3,), int32)), 0, ws)
    with pytest.raises(UnsupportedError):          # info dtype
        p.run(L.CholeskyArgs(a, out, ar.empty((2,), int64)), 0, ws)
    with pytest.raises(WorkspaceTooSmallError):
        p.run(L.CholeskyArgs(a, out), 0, Workspace(ws.ptr, ws.nbytes - 1))
    with pytest.raises(WorkspaceTooSmallError):
        p.run(L.CholeskyArgs(a, out), 0, None)
    assert not ar.calls                             # nothing ran
    p.run(L.CholeskyArgs(a, out, ar.empty((2,), int32)), 0, ws)
    # no-batch info may be () or (1,)
    p1 = L.CholeskyPlan.select(L.CholeskyDescriptor((), 3, float64), PREF)
    for shp in ((), (1,)):
        p1.run(L.CholeskyArgs(a.with_shape((3, 3), (3, 1)), ar.empty((3, 3), float64),
                              ar.empty(shp, int32)), 0, _ws(ar, p1))
    lu = L.LUPlan.select(L.LUDescriptor((), 3, 3, float32), PREF)
    a32 = ar.put(np.eye(3), float32)
    with pytest.raises(UnsupportedError):          # pivots must be int64
        lu.run(L.LUArgs(a32, ar.empty((3, 3), float32), ar.empty((3,), int32)), 0, _ws(ar, lu))
    qr = L.QRPlan.select(L.QRDescriptor((), 3, 3, float32, "r"), PREF)
    with pytest.raises(InvalidProblemError):       # mode r takes no q
        qr.run(L.QRArgs(a32, ar.empty((3, 3), float32), ar.empty((3, 3), float32)), 0,
               _ws(ar, qr))
    sv = L.SVDPlan.select(L.SVDDescriptor((), 3, 3, float32), PREF)
    with pytest.raises(InvalidProblemError):       # u required with compute_uv
        sv.run(L.SVDArgs(a32, ar.empty((3,), float32)), 0, _ws(ar, sv))
    with pytest.raises(UnsupportedError):          # s is real
        sv.run(L.SVDArgs(a32, ar.empty((3,), complex64), ar.empty((3, 3), float32),
                         ar.empty((3, 3), float32)), 0, _ws(ar, sv))
    ev = L.EigPlan.select(L.EigDescriptor((), 3, float32, compute_v=False), PREF)
    with pytest.raises(InvalidProblemError):       # v given though compute_v=False
        ev.run(L.EigArgs(a32, ar.empty((3,), complex64), ar.empty((3, 3), complex64)), 0,
               _ws(ar, ev))
    with pytest.raises(UnsupportedError):          # w is complex
        ev.run(L.EigArgs(a32, ar.empty((3,), float32)), 0, _ws(ar, ev))


def test_empty_batch_launches_nothing(arena):
    ar = arena
    for plan, desc in _descs():
        d = type(desc)(**{**desc.__dict__, "batch": (0, 2)})
        p = plan.select(d, PREF)
        assert p.workspace_size() == 0 and p.is_empty()
    p = L.CholeskyPlan.select(L.CholeskyDescriptor((0,), 3), PREF)
    p.run(L.CholeskyArgs(ar.empty((0, 3, 3), float32), ar.empty((0, 3, 3), float32)), 0, None)
    s = L.SVDPlan.select(L.SVDDescriptor((3, 0), 4, 2), PREF)
    s.run(L.SVDArgs(ar.empty((3, 0, 4, 2), float32), ar.empty((3, 0, 2), float32),
                    ar.empty((3, 0, 4, 4), float32), ar.empty((3, 0, 2, 2), float32)), 0, None)
    assert not ar.calls


def test_empty_matrices_zero_info_and_identities(arena):
    ar = arena
    info = ar.empty((3,), int32)
    p = L.CholeskyPlan.select(L.CholeskyDescriptor((3,), 0), PREF)
    p.run(L.CholeskyArgs(ar.empty((3, 0, 0), float32), ar.empty((3, 0, 0), float32), info), 0,
          _ws(ar, p))
    assert (ar.of(info) == 0).all() and not ar.calls
    q = L.QRPlan.select(L.QRDescriptor((2,), 3, 0, complex64, "complete"), PREF)
    qo, ro = ar.empty((2, 3, 3), complex64), ar.empty((2, 3, 0), complex64)
    q.run(L.QRArgs(ar.empty((2, 3, 0), complex64), qo, ro), 0, _ws(ar, q))
    assert np.array_equal(ar.of(qo), np.broadcast_to(np.eye(3), (2, 3, 3)))
    s = L.SVDPlan.select(L.SVDDescriptor((), 2, 0, float64), PREF)
    u, vh = ar.empty((2, 2), float64), ar.empty((0, 0), float64)
    s.run(L.SVDArgs(ar.empty((2, 0), float64), ar.empty((0,), float64), u, vh), 0, _ws(ar, s))
    assert np.array_equal(ar.of(u), np.eye(2))
    assert not ar.calls


# ------------------------------------------------------------------ simulated end to end
def _rand(rng, shape, dt):
    x = rng.standard_normal(shape)
    if dt.is_complex:
        x = x + 1j * rng.standard_normal(shape)
    return x


def _strided_input(ar, host, dt, transposed):
    """A device view of ``host`` that is not dense: the transpose of a dense buffer, or every
    other column of a wider one."""
    if transposed:
        t = ar.put(np.swapaxes(host, -1, -2), dt)
        st = list(t.strides)
        st[-1], st[-2] = st[-2], st[-1]
        return t.with_shape(host.shape, tuple(st))
    wide = np.zeros(host.shape[:-1] + (2 * host.shape[-1],), host.dtype)
    wide[..., ::2] = host
    w = ar.put(wide, dt)
    st = list(w.strides)
    st[-1] = 2
    return w.with_shape(host.shape, tuple(st))


CASES = [((), 3), ((2,), 4), ((2, 3), 1), ((3,), 5)]


def _close(got, ref, dt, what):
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape, (what, got.shape, ref.shape)
    assert np.all(np.isfinite(got)), f"{what}: unwritten (NaN) elements"
    err = np.max(np.abs(got - ref)) if got.size else 0.0
    assert err <= TOL[dt] * max(1.0, np.max(np.abs(ref)) if ref.size else 1.0), (what, err)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_sim_cholesky(arena, dt, upper):
    ar, rng = arena, np.random.default_rng(0)
    for k, (batch, n) in enumerate(CASES + [((3,), 130)]):
        if n == 130 and dt is not float64:
            continue
        x = _rand(rng, batch + (n, n), dt)
        a = x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)
        p = L.CholeskyPlan.select(L.CholeskyDescriptor(batch, n, dt, upper), PREF)
        ai = _strided_input(ar, a, dt, k % 2 == 0)
        out, info = ar.empty(batch + (n, n), dt), ar.empty(batch or (1,), int32)
        p.run(L.CholeskyArgs(ai, out, info), 0, _ws(ar, p))
        ref = np.linalg.cholesky(a)
        if upper:
            ref = np.conj(np.swapaxes(ref, -1, -2))
        _close(ar.of(out), ref, dt, f"cholesky {batch} {n}")
        assert (ar.of(info) == 0).all()
    # not positive definite → info = order of the failing minor, per matrix
    a = np.stack([np.eye(3), np.diag([1.0, -1.0, 1.0])])
    p = L.CholeskyPlan.select(L.CholeskyDescriptor((2,), 3, dt), PREF)
    info = ar.empty((2,), int32)
    p.run(L.CholeskyArgs(ar.put(a, dt), ar.empty((2, 3, 3), dt), info), 0, _ws(ar, p))
    assert list(ar.of(info)) == [0, 2]
    with pytest.raises(vendor.NotPositiveDefiniteError) as e:
        raise_for_info("cholesky", np.array(ar.of(info)), (2,))
    assert e.value.batch_index == 1


def _perm_from_pivots(piv, m):
    perm = np.arange(m)
    for i, p in enumerate(piv):
        perm[[i, p - 1]] = perm[[p - 1, i]]
    return perm


def _route(plan) -> str:
    return dict(plan.sku().knobs)["route"]


def _vendor_calls(ar):
    return [c[0] for c in ar.calls if not c[0].endswith("buffer_size")]


@pytest.mark.parametrize("dt", DTYPES)
def test_sim_lu(arena, dt):
    ar, rng = arena, np.random.default_rng(1)
    cases = [((), 3, 3, "per_matrix"), ((2,), 5, 3, "per_matrix"), ((2, 2), 3, 5, "per_matrix"),
             ((1,), 1, 1, "per_matrix"), ((3,), 4, 4, "batched"), ((2, 3), 1, 1, "batched"),
             ((2,), 6, 6, "batched")]
    for k, (batch, m, n, route) in enumerate(cases):
        a = _rand(rng, batch + (m, n), dt)
        if route == "batched" and n > 1:
            a[..., 0, 0] = 0.0          # a zero first pivot candidate: pivoting must swap
        p = L.LUPlan.select(L.LUDescriptor(batch, m, n, dt), PREF)
        assert _route(p) == route, (batch, m, n)
        kk = min(m, n)
        lu, piv = ar.empty(batch + (m, n), dt), ar.empty(batch + (kk,), int64)
        info = ar.empty(batch or (1,), int32)
        ar.calls.clear()
        p.run(L.LUArgs(_strided_input(ar, a, dt, k % 2 == 1), lu, piv, info), 0, _ws(ar, p))
        calls = _vendor_calls(ar)
        if route == "batched":
            # one launch for the batch; the int32 pivots widened by the cast
            assert calls == [f"{_PRE[dt]}getrf_batched"], calls
            assert p.sku().template == "cublas.getrfBatched"
        else:
            assert calls == ["xgetrf"] * int(np.prod(batch)), calls
        LU, P = np.array(ar.of(lu)).reshape(-1, m, n), np.array(ar.of(piv)).reshape(-1, kk)
        assert ((P >= 1) & (P <= m)).all(), P
        if route == "batched" and n > 1:
            assert (P[:, 0] != 1).all(), "the zero pivot candidate was not swapped away"
        for b, A in enumerate(a.reshape(-1, m, n)):
            Lm = np.tril(LU[b], -1)[:, :kk] + np.eye(m, kk)
            Um = np.triu(LU[b])[:kk, :]
            perm = _perm_from_pivots(P[b], m)
            _close(Lm @ Um, A[perm], dt, f"lu {batch} {m}x{n}")
        assert (ar.of(info) == 0).all()
    # a singular matrix in a batched LU: info = the zero pivot's (1-based) index, not an error
    p = L.LUPlan.select(L.LUDescriptor((2,), 3, 3, dt), PREF)
    a = np.stack([np.eye(3), np.diag([1.0, 2.0, 0.0])])
    info = ar.empty((2,), int32)
    p.run(L.LUArgs(ar.put(a, dt), ar.empty((2, 3, 3), dt), ar.empty((2, 3), int64), info), 0,
          _ws(ar, p))
    assert list(ar.of(info)) == [0, 3]


_PRE = {float32: "s", float64: "d", complex64: "c", complex128: "z"}


@pytest.fixture(params=["auto", "per_matrix"])
def lu_route(request, monkeypatch):
    """"auto": the default thresholds (batches take the cuBLAS batched route);
    "per_matrix": the batched route switched off (cusolverDn per matrix for every batch)."""
    from baracuda_dsl.ops.linalg import factor

    if request.param == "per_matrix":
        monkeypatch.setattr(factor, "LU_BATCHED_MAX_N", 0)
    return request.param


@pytest.mark.parametrize("dt", DTYPES)
def test_sim_solve_and_inverse(arena, dt, lu_route):
    ar, rng = arena, np.random.default_rng(2)
    for k, (batch, n) in enumerate(CASES + [((1,), 3), ((5,), 7)]):
        want = "batched" if lu_route == "auto" and int(np.prod(batch)) > 1 else "per_matrix"
        a = _rand(rng, batch + (n, n), dt) + 3 * np.eye(n)
        if n > 1:
            a[..., [0, 1], :] = a[..., [1, 0], :]      # pivoting matters
        b = _rand(rng, batch + (n, 2), dt)
        p = L.SolvePlan.select(L.SolveDescriptor(batch, n, 2, dt), PREF)
        assert _route(p) == want, (batch, n)
        x = ar.empty(batch + (n, 2), dt)
        ar.calls.clear()
        p.run(L.SolveArgs(_strided_input(ar, a, dt, k % 2 == 0), _strided_input(
            ar, b, dt, k % 2 == 1), x), 0, _ws(ar, p))
        if want == "batched":
            assert _vendor_calls(ar) == [f"{_PRE[dt]}getrf_batched", f"{_PRE[dt]}getrs_batched"]
        _close(ar.of(x), np.linalg.solve(a, b), dt, f"solve {batch} {n}")
        q = L.InversePlan.select(L.InverseDescriptor(batch, n, dt), PREF)
        assert _route(q) == want
        inv = ar.empty(batch + (n, n), dt)
        q.run(L.InverseArgs(_strided_input(ar, a, dt, k % 2 == 1), inv), 0, _ws(ar, q))
        _close(ar.of(inv), np.linalg.inv(a), dt, f"inv {batch} {n}")
    # singular → info > 0
    p = L.SolvePlan.select(L.SolveDescriptor((2,), 2, 1, dt), PREF)
    info = ar.empty((2,), int32)
    a = np.stack([np.eye(2), np.array([[1.0, 2.0], [2.0, 4.0]])])
    p.run(L.SolveArgs(ar.put(a, dt), ar.put(np.ones((2, 2, 1)), dt), ar.empty((2, 2, 1), dt),
                      info), 0, _ws(ar, p))
    assert ar.of(info)[0] == 0 and ar.of(info)[1] == 2
    # nrhs = 0: factor only, info still written
    for batch in ((), (2,)):
        p = L.SolvePlan.select(L.SolveDescriptor(batch, 2, 0, dt), PREF)
        info = ar.empty(batch or (1,), int32)
        ar.calls.clear()
        p.run(L.SolveArgs(ar.put(np.broadcast_to(np.eye(2), batch + (2, 2)), dt),
                          ar.empty(batch + (2, 0), dt), ar.empty(batch + (2, 0), dt), info), 0,
              _ws(ar, p))
        assert (ar.of(info) == 0).all()
        assert not [c for c in _vendor_calls(ar) if "getrs" in c]


def test_sim_getrs_batched_host_info_is_checked(arena):
    ar = arena
    p = L.SolvePlan.select(L.SolveDescriptor((2,), 3, 1, float64), PREF)
    assert _route(p) == "batched"
    ar.getrs_info = -4
    with pytest.raises(vendor.VendorError) as e:
        p.run(L.SolveArgs(ar.put(np.eye(3)[None].repeat(2, 0), float64),
                          ar.put(np.ones((2, 3, 1)), float64), ar.empty((2, 3, 1), float64)), 0,
              _ws(ar, p))
    assert "getrsBatched" in str(e.value)


def test_sim_batched_pointer_arrays(arena):
    """The device pointer arrays the batched LU routes upload: A's (then B's) matrices, one per
    batch element, in flat batch order, inside the workspace."""
    ar = arena
    p = L.SolvePlan.select(L.SolveDescriptor((2, 2), 3, 2, complex64), PREF)
    ws = _ws(ar, p)
    a = np.broadcast_to(np.eye(3) * 2, (2, 2, 3, 3))
    ar.calls.clear()
    p.run(L.SolveArgs(ar.put(a, complex64), ar.put(np.ones((2, 2, 3, 2)), complex64),
                      ar.empty((2, 2, 3, 2), complex64)), 0, ws)
    (_, _, n, aarray, lda, piv, _, batch), rs = ar.calls[0], ar.calls[1]
    assert (n, lda, batch) == (3, 3, 4) and rs[0] == "cgetrs_batched"
    assert rs[5] == aarray and rs[7] == piv and rs[8] == aarray + 8 * 4    # A's, then B's
    ptrs = np.array(ar.raw(aarray, (8,), (1,), np.uint64)).astype(np.int64)
    assert (np.diff(ptrs[:4]) == 9 * 8).all() and (np.diff(ptrs[4:]) == 6 * 8).all()
    lo, hi = ws.ptr, ws.ptr + ws.nbytes
    assert all(lo <= int(x) < hi for x in ptrs) and lo <= aarray < hi and lo <= piv < hi


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_sim_qr(arena, dt, mode):
    ar, rng = arena, np.random.default_rng(3)
    for k, (batch, m, n) in enumerate([((), 4, 3), ((2,), 3, 5), ((2, 2), 4, 4), ((), 1, 3)]):
        a = _rand(rng, batch + (m, n), dt)
        p = L.QRPlan.select(L.QRDescriptor(batch, m, n, dt, mode), PREF)
        d = p.desc
        q = None if mode == "r" else ar.empty(d.q_shape, dt)
        r = ar.empty(d.r_shape, dt)
        p.run(L.QRArgs(_strided_input(ar, a, dt, k % 2 == 0), q, r), 0, _ws(ar, p))
        Qr, Rr = np.linalg.qr(a, mode="complete" if mode == "complete" else "reduced")
        _close(ar.of(r), Rr, dt, f"qr r {mode} {batch} {m}x{n}")
        if q is not None:
            _close(ar.of(q), Qr, dt, f"qr q {mode} {batch} {m}x{n}")


@pytest.fixture(params=["auto", "jacobi", "gesvd"])
def svd_route(request, monkeypatch):
    """"auto": default thresholds (gesvdjBatched for batches of small matrices, gesvdj
    otherwise here); "jacobi": gesvdjBatched off; "gesvd": both Jacobi routes off."""
    from baracuda_dsl.ops.linalg import spectral

    if request.param != "auto":
        monkeypatch.setattr(spectral, "GESVDJ_BATCHED_MAX", 0)
    if request.param == "gesvd":
        monkeypatch.setattr(spectral, "GESVDJ_MAX_K", 0)
    return request.param


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("full", [True, False])
def test_sim_svd(arena, dt, full, svd_route):
    ar, rng = arena, np.random.default_rng(4)
    for k, (batch, m, n) in enumerate([((), 4, 3), ((2,), 3, 5), ((2, 2), 4, 4), ((), 1, 3),
                                       ((3,), 6, 2), ((2,), 2, 7), ((1,), 5, 5)]):
        a = _rand(rng, batch + (m, n), dt)
        kk = min(m, n)
        for uv in (True, False):
            p = L.SVDPlan.select(L.SVDDescriptor(batch, m, n, dt, full, uv), PREF)
            want = svd_route
            if svd_route == "auto":
                want = "batched" if int(np.prod(batch)) > 1 else "jacobi"
            assert _route(p) == want, (batch, m, n, p.sku().template)
            d = p.desc
            s = ar.empty(batch + (kk,), REAL[dt])
            u = ar.empty(d.u_shape, dt) if uv else None
            vh = ar.empty(d.vh_shape, dt) if uv else None
            info = ar.empty(batch or (1,), int32)
            ar.calls.clear()
            p.run(L.SVDArgs(_strided_input(ar, a, dt, k % 2 == 1), s, u, vh, info), 0,
                  _ws(ar, p))
            calls = _vendor_calls(ar)
            if want == "batched":
                assert calls.count(f"{_PRE[dt]}gesvdj_batched") == 1, calls
            elif want == "jacobi":
                assert calls.count(f"{_PRE[dt]}gesvdj") == int(np.prod(batch)), calls
            _close(ar.of(s), np.linalg.svd(a, compute_uv=False), dt, f"svd s {batch} {m}x{n}")
            assert (ar.of(info) == 0).all()
            if uv:
                U, V = np.array(ar.of(u)), np.array(ar.of(vh))
                S = np.array(ar.of(s))
                rec = (U[..., :, :kk] * S[..., None, :]) @ V[..., :kk, :]
                _close(rec, a, dt, f"svd U S Vh {batch} {m}x{n} full={full}")
                eye_u = np.conj(np.swapaxes(U, -1, -2)) @ U
                _close(eye_u, np.broadcast_to(np.eye(U.shape[-1]), eye_u.shape), dt, "UᴴU")
                eye_v = V @ np.conj(np.swapaxes(V, -1, -2))
                _close(eye_v, np.broadcast_to(np.eye(V.shape[-2]), eye_v.shape), dt, "VhVhᴴ")


def test_sim_svd_batched_chunks(arena, monkeypatch):
    """gesvdjBatched runs in chunks of GESVDJ_BATCH_CHUNK matrices (info / S / U / V offsets
    per chunk)."""
    from baracuda_dsl.ops.linalg import spectral

    monkeypatch.setattr(spectral, "GESVDJ_BATCH_CHUNK", 2)
    ar, rng = arena, np.random.default_rng(9)
    a = _rand(rng, (5, 4, 3), complex128)
    p = L.SVDPlan.select(L.SVDDescriptor((5,), 4, 3, complex128, False), PREF)
    s, u, vh = ar.empty((5, 3), float64), ar.empty((5, 4, 3), complex128), \
        ar.empty((5, 3, 3), complex128)
    info = ar.empty((5,), int32)
    ar.calls.clear()
    p.run(L.SVDArgs(ar.put(a, complex128), s, u, vh, info), 0, _ws(ar, p))
    assert [c[-1] for c in ar.calls if c[0] == "zgesvdj_batched"] == [2, 2, 1]
    U, S, V = np.array(ar.of(u)), np.array(ar.of(s)), np.array(ar.of(vh))
    _close((U * S[..., None, :]) @ V, a, complex128, "chunked svd")
    assert (ar.of(info) == 0).all()


@pytest.mark.parametrize("dt", DTYPES)
def test_sim_eigh(arena, dt):
    ar, rng = arena, np.random.default_rng(5)
    for k, (batch, n) in enumerate(CASES):
        x = _rand(rng, batch + (n, n), dt)
        a = x + np.conj(np.swapaxes(x, -1, -2))
        junk = np.triu(_rand(rng, batch + (n, n), dt), 1) * 100    # upper triangle is not read
        for cv in (True, False):
            p = L.EighPlan.select(L.EighDescriptor(batch, n, dt, cv), PREF)
            w = ar.empty(batch + (n,), REAL[dt])
            v = ar.empty(batch + (n, n), dt) if cv else None
            info = ar.empty(batch or (), int32)
            p.run(L.EighArgs(_strided_input(ar, np.tril(a) + junk, dt, k % 2 == 0), w, v, info),
                  0, _ws(ar, p))
            W = np.array(ar.of(w))
            _close(W, np.linalg.eigvalsh(a), dt, f"eigh w {batch} {n}")
            if cv:
                V = np.array(ar.of(v))
                _close(a @ V, V * W[..., None, :], dt, f"eigh AV=VΛ {batch} {n}")
            assert (ar.of(info) == 0).all()


@pytest.mark.parametrize("dt", DTYPES)
def test_sim_eig(arena, dt):
    ar, rng = arena, np.random.default_rng(6)
    for k, (batch, n) in enumerate(CASES):
        a = _rand(rng, batch + (n, n), dt)
        p = L.EigPlan.select(L.EigDescriptor(batch, n, dt), PREF)
        w = ar.empty(batch + (n,), CPLX[dt])
        v = ar.empty(batch + (n, n), CPLX[dt])
        p.run(L.EigArgs(_strided_input(ar, a, dt, k % 2 == 1), w, v), 0, _ws(ar, p))
        W, V = np.array(ar.of(w)), np.array(ar.of(v))
        _close(a @ V, V * W[..., None, :], dt, f"eig AV=VΛ {batch} {n}")
        _close(np.linalg.norm(V, axis=-2), np.ones(batch + (n,)), dt, "unit columns")


def test_workspace_slots_are_aligned_and_cover_the_copies(arena):
    p = L.SVDPlan.select(L.SVDDescriptor((3,), 5, 7, complex128), PREF)
    n = p.workspace_size()
    assert n % 256 == 0
    # copy of A + U (7×7) + Vᴴ (5×5) for 3 matrices, info words, the (fake) library buffer
    assert n >= 16 * 3 * (35 + 49 + 25) + 512
