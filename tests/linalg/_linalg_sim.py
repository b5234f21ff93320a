"""A numpy stand-in for the device under the linalg plans (CPU tests): a byte arena that device
pointers index, cuSOLVER routines re-implemented in numpy with the library's column-major
conventions (leading dimensions, 1-based int64 pivots, info words), and the shape / elementwise
plans' launches replaced by numpy copies.  The plans' own code — validation, workspace layout,
the views they build, the order of calls — runs unchanged, so their index arithmetic is
checked end to end against numpy references without a GPU."""

from __future__ import annotations

import ctypes

import numpy as np

from baracuda_dsl.tensor import TensorView, contiguous_strides

BASE = 1 << 24          # fake device address of the arena's first byte (0 stays "null")
_NP = {0: np.float32, 1: np.float64, 4: np.complex64, 5: np.complex128}


class Arena:
    """Fake device memory: ``alloc`` returns addresses, ``view`` numpy views of them."""

    def __init__(self, nbytes: int = 64 << 20):
        self.mem = np.zeros(nbytes, np.uint8)
        self.top = 0
        self.side = {}      # geqrf → orgqr: the Q of each factored matrix (by address)
        self.calls = []     # (routine, ...) in call order
        self.getrs_info = 0  # the host info getrsBatched reports (tests set it < 0)

    def alloc(self, nbytes: int) -> int:
        ptr = BASE + self.top
        self.top += -(-max(int(nbytes), 1) // 256) * 256 + 256
        assert self.top <= self.mem.size, "arena full"
        return ptr

    def raw(self, ptr: int, shape, strides_elems, npdt) -> np.ndarray:
        npdt = np.dtype(npdt)
        off = ptr - BASE
        assert off >= 0, f"pointer {ptr:#x} is not in the arena"
        bstr = tuple(int(s) * npdt.itemsize for s in strides_elems)
        shape = tuple(int(s) for s in shape)
        if any(s == 0 for s in shape):
            return np.zeros(shape, npdt)
        span = sum((n - 1) * s for n, s in zip(shape, bstr)) + npdt.itemsize
        assert off + span <= self.mem.size
        return np.ndarray(shape, npdt, buffer=self.mem, offset=off, strides=bstr)

    def of(self, v: TensorView) -> np.ndarray:
        return self.raw(v.ptr, v.shape, v.strides, v.dtype.to_numpy())

    def cm(self, ptr: int, rows: int, cols: int, ld: int, code: int) -> np.ndarray:
        """Column-major matrix view (rows × cols, leading dimension ld)."""
        return self.raw(ptr, (rows, cols), (1, ld), _NP[code])

    def put(self, host: np.ndarray, dt) -> TensorView:
        """A dense device copy of ``host`` (dtype ``dt``: a baracuda DType)."""
        host = np.ascontiguousarray(host, dt.to_numpy())
        ptr = self.alloc(host.nbytes)
        v = TensorView(ptr, host.shape, contiguous_strides(host.shape), dt, 0)
        self.of(v)[...] = host
        return v

    def empty(self, shape, dt, fill=np.nan) -> TensorView:
        shape = tuple(shape)
        n = int(np.prod(shape)) if shape else 1
        ptr = self.alloc(n * dt.itemsize)
        v = TensorView(ptr, shape, contiguous_strides(shape), dt, 0)
        if n:
            a = self.of(v)
            a[...] = fill if dt.kind in "fc" else -7
        return v

    def i32(self, ptr: int, count: int) -> np.ndarray:
        return self.raw(ptr, (count,), (1,), np.int32)


# ------------------------------------------------------------------------- fake cuSOLVER
def _herm_lower(a):
    return np.tril(a) + np.conj(np.tril(a, -1)).T


def _potrf(ar, A, n, info_ptr, uplo=0):
    """potrf on the column-major matrix A: uplo 0 (lower) H = L·Lᴴ, L into the lower triangle;
    uplo 1 (upper) H = Uᴴ·U from the upper triangle, U into it; the other triangle untouched."""
    W = np.array(A, np.complex128 if np.iscomplexobj(A) else np.float64)
    H = _herm_lower(W) if uplo == 0 else _herm_lower(np.conj(W).T)
    bad = 0
    for k in range(1, n + 1):
        try:
            np.linalg.cholesky(H[:k, :k])
        except np.linalg.LinAlgError:
            bad = k
            break
    if not bad:
        L = np.linalg.cholesky(H)
        if uplo == 0:
            A[...] = np.where(np.tril(np.ones((n, n), bool)), L, A)
        else:
            A[...] = np.where(np.triu(np.ones((n, n), bool)), np.conj(L).T, A)
    ar.i32(info_ptr, 1)[0] = bad


def _getrf(A):
    """In-place LU with partial pivoting (LAPACK getrf semantics); returns (ipiv 1-based, info)."""
    m, n = A.shape
    W = np.array(A, np.complex128 if np.iscomplexobj(A) else np.float64)
    k = min(m, n)
    piv = np.zeros(k, np.int64)
    info = 0
    for j in range(k):
        p = j + int(np.argmax(np.abs(W[j:, j])))
        piv[j] = p + 1
        if W[p, j] == 0:
            info = info or j + 1
            continue
        if p != j:
            W[[j, p], :] = W[[p, j], :]
        W[j + 1:, j] /= W[j, j]
        W[j + 1:, j + 1:] -= np.outer(W[j + 1:, j], W[j, j + 1:])
    A[...] = W
    return piv, info


def _getrs(LU, piv, B):
    n = LU.shape[0]
    X = np.array(B, np.complex128 if np.iscomplexobj(B) else np.float64)
    for j in range(n):
        p = int(piv[j]) - 1
        if p != j:
            X[[j, p], :] = X[[p, j], :]
    L = np.tril(LU, -1) + np.eye(n)
    U = np.triu(LU)
    try:
        X = np.linalg.solve(U, np.linalg.solve(L, X)) if n else X
    except np.linalg.LinAlgError:        # exact zero pivot: the library divides by it
        X[...] = np.inf
    B[...] = X


_TYPED = {"s": 0, "d": 1, "c": 4, "z": 5}
_GESVDJ_INFO = 33       # the fake gesvdjInfo_t
_LWORK = 48             # elements the fake typed gesvdj buffer-size queries ask for


def _host_i32(addr: int) -> np.ndarray:
    """The host int32 at ``addr`` (getrsBatched's host info word)."""
    return np.ctypeslib.as_array((ctypes.c_int32 * 1).from_address(addr))


def _gesvdj(ar, code, jobz, econ, m, n, A, lda, S, U, ldu, V, ldv, info):
    """One gesvdj (cuSOLVER semantics): S descending, U (m × m, or m × k with econ) and V —
    V itself, NOT Vᴴ — (n × n, or n × k), column-major; A destroyed; info 0."""
    assert lda >= max(1, m) and ldu >= max(1, m) and ldv >= max(1, n)
    k = min(m, n)
    M = np.array(ar.cm(A, m, n, lda, code))
    Uf, Sv, VT = np.linalg.svd(M, full_matrices=not econ)
    ar.raw(S, (k,), (1,), _NP[{0: 0, 1: 1, 4: 0, 5: 1}[code]])[...] = Sv
    if jobz == 1:
        ar.cm(U, m, Uf.shape[1], ldu, code)[...] = Uf
        Vm = np.conj(VT).T
        ar.cm(V, n, Vm.shape[1], ldv, code)[...] = Vm
    ar.cm(A, m, n, lda, code)[...] = 9.0
    ar.i32(info, 1)[0] = 0


def make_fake_call(ar: Arena):
    def call(lib, fn, *a):
        ar.calls.append((fn,) + tuple(a))
        if lib == "cublas":
            return blas_call(fn, *a)
        assert lib == "cusolverDn", lib
        if fn == "create_gesvdj_info":
            return _GESVDJ_INFO
        if fn == "xgesvdj_set_sort_eig":
            assert a == (_GESVDJ_INFO, 1)
            return None
        if fn[1:] == "gesvdj_batched_buffer_size":
            assert a[-2] == _GESVDJ_INFO and a[-1] >= 1
            return _LWORK * a[-1]
        if fn[1:] == "gesvdj_buffer_size":
            assert a[-1] == _GESVDJ_INFO
            return _LWORK
        if fn.endswith("buffer_size"):
            if fn in ("xpotrf_buffer_size", "xgeqrf_buffer_size", "xsyevd_buffer_size",
                      "xsyev_batched_buffer_size"):
                return (512, 0)
            if fn in ("xgetrf_buffer_size", "xgesvd_buffer_size", "xgeev_buffer_size"):
                return (512, 64)
            return 16           # typed orgqr / ungqr: lwork in elements
        if fn == "xpotrf":
            h, p, uplo, n, dt, A, lda, ct, dw, dws, hw, hws, info = a
            assert uplo in (0, 1) and dt == ct and lda >= max(1, n) and dws >= 512
            _potrf(ar, ar.cm(A, n, n, lda, dt), n, info, uplo)
            return None
        if fn.endswith("potrf_batched"):
            h, uplo, n, aarray, lda, info, batch = a
            code = {"s": 0, "d": 1, "c": 4, "z": 5}[fn[0]]
            ptrs = ar.raw(aarray, (batch,), (1,), np.uint64)
            for b in range(batch):
                _potrf(ar, ar.cm(int(ptrs[b]), n, n, lda, code), n, info + 4 * b, uplo)
            return None
        if fn == "xgetrf":
            h, p, m, n, dt, A, lda, ipiv, ct, dw, dws, hw, hws, info = a
            assert lda >= max(1, m) and hws >= 64 and hw != 0
            piv, inf = _getrf(ar.cm(A, m, n, lda, dt))
            ar.raw(ipiv, (len(piv),), (1,), np.int64)[...] = piv
            ar.i32(info, 1)[0] = inf
            return None
        if fn == "xgetrs":
            h, p, trans, n, nrhs, dt, A, lda, ipiv, dtb, B, ldb, info = a
            assert trans == 0 and dt == dtb
            piv = ar.raw(ipiv, (n,), (1,), np.int64)
            _getrs(ar.cm(A, n, n, lda, dt), piv, ar.cm(B, n, nrhs, ldb, dtb))
            ar.i32(info, 1)[0] = 0
            return None
        if fn == "xgeqrf":
            h, p, m, n, dt, A, lda, dtt, tau, ct, dw, dws, hw, hws, info = a
            M = ar.cm(A, m, n, lda, dt)
            Q, R = np.linalg.qr(np.array(M), mode="complete")
            ar.side[A] = Q
            # garbage below the diagonal, where the library keeps its reflectors
            M[...] = np.where(np.triu(np.ones((m, n), bool)), R, 7.0)
            ar.i32(info, 1)[0] = 0
            return None
        if fn[1:] in ("orgqr", "ungqr"):
            h, m, n, k, A, lda, tau, work, lwork, info = a
            assert lwork >= 16
            code = {"s": 0, "d": 1, "c": 4, "z": 5}[fn[0]]
            ar.cm(A, m, n, lda, code)[...] = ar.side.pop(A)[:, :n]
            ar.i32(info, 1)[0] = 0
            return None
        if fn == "xgesvd":
            (h, p, jobu, jobvt, m, n, dt, A, lda, dts, s, dtu, u, ldu, dtv, vt, ldvt, ct,
             dw, dws, hw, hws, info) = a
            assert m >= n and jobu == jobvt and hw != 0
            M = np.array(ar.cm(A, m, n, lda, dt))
            U, S, VT = np.linalg.svd(M, full_matrices=(jobu == ord("A")))
            ar.raw(s, (n,), (1,), _NP[dts])[...] = S
            if jobu != ord("N"):
                ar.cm(u, m, U.shape[1], ldu, dtu)[...] = U
                ar.cm(vt, n, n, ldvt, dtv)[...] = VT
            ar.cm(A, m, n, lda, dt)[...] = 3.0           # gesvd destroys A
            ar.i32(info, 1)[0] = 0
            return None
        if fn in ("xsyevd", "xsyev_batched"):
            if fn == "xsyevd":
                (h, p, jobz, uplo, n, dt, A, lda, dtw, w, ct, dw, dws, hw, hws, info), batch = \
                    a, 1
            else:
                h, p, jobz, uplo, n, dt, A, lda, dtw, w, ct, dw, dws, hw, hws, info, batch = a
            assert uplo == 0
            isz, rsz = np.dtype(_NP[dt]).itemsize, np.dtype(_NP[dtw]).itemsize
            for b in range(batch):
                M = ar.cm(A + b * lda * n * isz, n, n, lda, dt)
                W, V = np.linalg.eigh(_herm_lower(np.array(M)), UPLO="L")
                ar.raw(w + b * n * rsz, (n,), (1,), _NP[dtw])[...] = W
                M[...] = V if jobz == 1 else 5.0
                ar.i32(info + 4 * b, 1)[0] = 0
            return None
        if fn == "xgeev":
            (h, p, jobvl, jobvr, n, dta, A, lda, dtw, w, dtvl, vl, ldvl, dtvr, vr, ldvr, ct,
             dw, dws, hw, hws, info) = a
            assert jobvl == 0 and vl == 0 and dta in (4, 5) and dta == dtw == dtvr and hw != 0
            W, V = np.linalg.eig(np.array(ar.cm(A, n, n, lda, dta)))
            ar.raw(w, (n,), (1,), _NP[dtw])[...] = W
            if jobvr == 1:
                ar.cm(vr, n, n, ldvr, dtvr)[...] = V
            ar.i32(info, 1)[0] = 0
            return None
        if fn[1:] == "gesvdj":
            h, jobz, econ, m, n, A, lda, S, U, ldu, V, ldv, work, lwork, info, params = a
            assert params == _GESVDJ_INFO and lwork >= _LWORK and work and econ in (0, 1)
            assert m >= n, "the plan factors the tall form"
            _gesvdj(ar, _TYPED[fn[0]], jobz, econ, m, n, A, lda, S, U, ldu, V, ldv, info)
            return None
        if fn[1:] == "gesvdj_batched":
            h, jobz, m, n, A, lda, S, U, ldu, V, ldv, work, lwork, info, params, batch = a
            assert params == _GESVDJ_INFO and lwork >= _LWORK * batch and work
            assert m <= 32 and n <= 32 and m >= n
            code = _TYPED[fn[0]]
            isz = np.dtype(_NP[code]).itemsize
            rsz = isz if code in (0, 1) else isz // 2
            k = min(m, n)
            for b in range(batch):       # contiguous: A lda·n, S k, U ldu·m, V ldv·n apart
                _gesvdj(ar, code, jobz, 0, m, n, A + b * lda * n * isz, lda,
                        S + b * k * rsz, U + b * ldu * m * isz, ldu, V + b * ldv * n * isz,
                        ldv, info + 4 * b)
            return None
        raise AssertionError(f"unexpected vendor call {fn}")

    def blas_call(fn, *a):
        code = _TYPED[fn[0]]
        if fn[1:] == "getrf_batched":
            h, n, aarray, lda, piv, info, batch = a
            assert h == 44 and lda >= max(1, n) and piv, "pivoting must be on"
            ptrs = ar.raw(aarray, (batch,), (1,), np.uint64)
            for b in range(batch):
                p, inf = _getrf(ar.cm(int(ptrs[b]), n, n, lda, code))
                ar.raw(piv + 4 * n * b, (n,), (1,), np.int32)[...] = p     # int32, n apart
                ar.i32(info + 4 * b, 1)[0] = inf
            return None
        if fn[1:] == "getrs_batched":
            h, trans, n, nrhs, aarray, lda, piv, barray, ldb, info, batch = a
            assert h == 44 and trans == 0 and lda >= max(1, n) and ldb >= max(1, n)
            assert not (BASE <= info < BASE + ar.mem.size), "getrsBatched's info is a HOST int"
            pa = ar.raw(aarray, (batch,), (1,), np.uint64)
            pb = ar.raw(barray, (batch,), (1,), np.uint64)
            for b in range(batch):
                _getrs(ar.cm(int(pa[b]), n, n, lda, code),
                       ar.raw(piv + 4 * n * b, (n,), (1,), np.int32),
                       ar.cm(int(pb[b]), n, nrhs, ldb, code))
            _host_i32(info)[0] = ar.getrs_info
            return None
        raise AssertionError(f"unexpected cuBLAS call {fn}")

    return call


def install(monkeypatch, ar: Arena) -> None:
    """Route every vendor call, memset, host→device copy and sub-plan launch of the linalg plans
    to the arena (the sub-plans still select and bind for real: their checks run)."""
    from baracuda_dsl.ops.elementwise.elementwise import ElementwisePlan
    from baracuda_dsl.ops.linalg import common, factor, spectral
    from baracuda_dsl.ops.shape.layout import FillPlan, WriteSlicePlan
    from baracuda_dsl.ops.shape.pad import TriPlan
    from baracuda_dsl.runtime import memory, vendor

    monkeypatch.setattr(vendor, "call", make_fake_call(ar))
    monkeypatch.setattr(vendor, "solver_handle", lambda ordinal, stream: 11)
    monkeypatch.setattr(vendor, "solver_params", lambda ordinal: 22)
    monkeypatch.setattr(vendor, "blas_handle", lambda ordinal, stream: 44)
    monkeypatch.setattr(spectral, "_GESVDJ", spectral._GesvdjInfos())

    def memset_d8(ptr, value, nbytes, stream=0):
        ar.raw(ptr, (nbytes,), (1,), np.uint8)[...] = value

    def htod(ptr, host, stream):
        ar.raw(ptr, (host.nbytes,), (1,), np.uint8)[...] = host.view(np.uint8).reshape(-1)

    monkeypatch.setattr(memory, "memset_d8", memset_d8)
    monkeypatch.setattr(common, "htod_async", htod)
    monkeypatch.setattr(factor, "htod_async", htod)

    def copy_launch(self, pairs, stream, ws):
        for src, dst in pairs:
            ar.of(dst)[...] = np.array(ar.of(src))

    def tri_launch(self, bound, stream, ws):
        x, out = bound
        f = np.triu if self.desc.upper else np.tril
        ar.of(out)[...] = f(np.array(ar.of(x)), self.desc.k)

    def fill_launch(self, out, stream, ws):
        ar.of(out)[...] = self.desc.value

    def ew_launch(self, bound, stream, ws):
        ins, outs, dev = bound
        assert self.desc.op in ("conj", "cast")
        if self.desc.op == "cast":          # e.g. cuBLAS's int32 pivots → int64
            assert ins[0].dtype != outs[0].dtype
            ar.of(outs[0])[...] = np.array(ar.of(ins[0])).astype(outs[0].dtype.to_numpy())
        else:
            ar.of(outs[0])[...] = np.conj(np.array(ar.of(ins[0])))

    monkeypatch.setattr(WriteSlicePlan, "_launch", copy_launch)
    monkeypatch.setattr(TriPlan, "_launch", tri_launch)
    monkeypatch.setattr(FillPlan, "_launch", fill_launch)
    monkeypatch.setattr(ElementwisePlan, "_launch", ew_launch)
