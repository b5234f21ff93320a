"""Singular values and eigenvalues on cuSOLVER: SVD (``gesvdjBatched`` for batches of small
matrices, ``gesvdj`` (Jacobi) per matrix up to min(m, n) = 1024, ``cusolverDnXgesvd`` beyond),
Hermitian eigendecomposition (``cusolverDnXsyevd`` / ``cusolverDnXsyevBatched``) and the
general eigendecomposition (``cusolverDnXgeev``)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Tuple

from ...dtypes import DType, float32
from ...errors import InvalidProblemError
from ...plan import prod
from ...runtime import vendor
from .common import (COMPLEX_OF, EIG_NOVECTOR, EIG_VECTOR, FILL_LOWER, INT32_MAX, REAL_OF,
                     TYPED_PREFIX, Slots, VendorPlanBase, batch_strides, check_disjoint_views, colmajor_view,
                     conj_copy, copy_views, dense_view, info_view, init_problem, input_view,
                     out_view, rowmajor_view, write_identity, zero_bytes)
from ...tensor import TensorView


def _optional_out(obj, name: str, wanted: bool, shape, dt, dev: int, what: str, flag: str):
    """An output that exists only when ``flag`` is on (None otherwise; InvalidProblemError when
    given although the flag is off, or missing although it is on)."""
    if not wanted:
        if obj is not None:
            raise InvalidProblemError(f"{what}: {name} is not computed ({flag}=False); pass "
                                      f"{name}=None")
        return None
    if obj is None:
        raise InvalidProblemError(f"{what}: argument {name} is required ({flag}=True)")
    return out_view(obj, name, shape, dt, dev, what)


# ==================================================================================== SVD
#: gesvdjBatched (one launch per chunk of the batch) when the batch has more than one matrix
#: and both m and n are at most this (the routine's limit)
GESVDJ_BATCHED_MAX = 32
#: matrices per gesvdjBatched call (its workspace grows with the count; int32 lwork)
GESVDJ_BATCH_CHUNK = 1 << 16
#: gesvdj (one-sided Jacobi) per matrix when min(m, n) is at most this (and m·n stays well
#: inside the typed routine's int32 range); Xgesvd (QR iteration) beyond
GESVDJ_MAX_K = 1024
GESVDJ_MAX_ELEMENTS = 1 << 28


class _GesvdjInfos(threading.local):
    def __init__(self):
        self.info = 0


_GESVDJ = _GesvdjInfos()


def gesvdj_info() -> int:
    """This thread's ``gesvdjInfo_t`` (created on first use, never destroyed, like the library
    handles): default tolerance (machine epsilon of the dtype) and sweeps (100), singular
    values sorted descending.  One per thread: the routines write their residual / sweep count
    into it."""
    if not _GESVDJ.info:
        info = vendor.call("cusolverDn", "create_gesvdj_info")
        vendor.call("cusolverDn", "xgesvdj_set_sort_eig", info, 1)
        _GESVDJ.info = info
    return _GESVDJ.info


@dataclass(frozen=True)
class SVDDescriptor:
    """A = U·diag(s)·Vh for a batch of ``m × n`` matrices, k = min(m, n): s real, descending;
    ``full_matrices`` U m×m and Vh n×n (else m×k and k×n); ``compute_uv=False``: s only;
    dtypes f32, f64, c64, c128 (s in the real type)."""

    batch: Tuple[int, ...]
    m: int
    n: int
    dtype: DType = float32
    full_matrices: bool = True
    compute_uv: bool = True

    def __post_init__(self):
        init_problem(self, "SVD", ("m", "n"), ("full_matrices", "compute_uv"))

    @property
    def k(self) -> int:
        return min(self.m, self.n)

    @property
    def u_shape(self):
        return self.batch + (self.m, self.m if self.full_matrices else self.k)

    @property
    def vh_shape(self):
        return self.batch + (self.n if self.full_matrices else self.k, self.n)


@dataclass
class SVDArgs:
    """a: (*batch, m, n) any strides; s: real (*batch, k), descending; u: (*batch, m, m or k)
    and vh: (*batch, n or k, n) when compute_uv (None otherwise); outputs C-contiguous; info:
    optional int32 (batch): 0, or > 0 when the bidiagonal QR iteration did not converge."""

    a: object
    s: object
    u: object = None
    vh: object = None
    info: object = None


class SVDPlan(VendorPlanBase):
    """SVD on cuSOLVER, by one of three routes (the sku's template says which):

    - ``cusolverDn.gesvdjBatched``: batches of more than one matrix with m, n ≤ 32 — one
      Jacobi launch per chunk of :data:`GESVDJ_BATCH_CHUNK` matrices (full U / V always: the
      reduced factors are copied out of them);
    - ``cusolverDn.gesvdj``: per matrix (one-sided Jacobi, ``econ`` for the reduced factors)
      when min(m, n) ≤ :data:`GESVDJ_MAX_K`;
    - ``cusolverDn.Xgesvd``: per matrix (QR iteration, jobu / jobvt 'A', 'S' or 'N') beyond.

    Every route factors a tall M × N matrix (M = max(m, n) ≥ N = min(m, n)): a wide A is
    factored as Aᴴ = U'·S·V'ᴴ and U = V', Vh = U'ᴴ are copied out.  The Jacobi routes return
    V (not Vᴴ): Vh is its conjugate transpose, taken in the copy out.  A Jacobi run that does
    not converge reports info = min(m, n) + 1 (NoConvergenceError through raise_for_info).
    Workspace: the column-major copy (batch·M·N), U and V / Vᴴ buffers (batch·M·(M or N) and
    batch·N²; always for the Jacobi routes, with compute_uv for Xgesvd), info words, the
    library's buffer.  Math in the dtype (real type for s); not bit-stable."""

    descriptor = SVDDescriptor
    _op = "svd"

    def _check(self) -> None:
        d = self.desc
        self._batch = d.batch
        bc = prod(d.batch)
        self._tall = d.m >= d.n
        self._M, self._N = (d.m, d.n) if self._tall else (d.n, d.m)
        self._ucols = self._M if d.full_matrices else self._N
        job = (ord("A") if d.full_matrices else ord("S")) if d.compute_uv else ord("N")
        self._job = job
        if 1 < bc <= INT32_MAX and max(d.m, d.n) <= GESVDJ_BATCHED_MAX:
            self._route = "batched"
        elif d.k <= GESVDJ_MAX_K and d.m * d.n <= GESVDJ_MAX_ELEMENTS:
            self._route = "jacobi"
        else:
            self._route = "gesvd"
        self._template = {"batched": "cusolverDn.gesvdjBatched", "jacobi": "cusolverDn.gesvdj",
                          "gesvd": "cusolverDn.Xgesvd"}[self._route]
        self._jobz = EIG_VECTOR if d.compute_uv else EIG_NOVECTOR
        # gesvdj computes the reduced factors (econ) unless the full U is wanted — also
        # without vectors, so that the unused U buffer stays M × N
        self._econ = 0 if (d.full_matrices and d.compute_uv) else 1
        # Jacobi routes: columns of the U buffer (gesvdjBatched has no econ mode)
        self._ubuf = self._M if (self._route == "batched" or not self._econ) else self._N
        self._chunk = min(bc, GESVDJ_BATCH_CHUNK) if self._route == "batched" else 1

    def _aux_element(self):
        return REAL_OF[self.desc.dtype]

    def _knobs(self) -> tuple:
        return (("route", self._route), ("jobs", chr(self._job)),
                ("transposed", not self._tall))

    def _matrix_empty(self) -> bool:
        return self.desc.k == 0

    def _vendor_sizes(self, ordinal: int):
        d = self.desc
        M, N = self._M, self._N
        if self._route == "gesvd":
            h, p = self.query_handle(ordinal)
            cdt, rdt = vendor.data_type(d.dtype), vendor.data_type(REAL_OF[d.dtype])
            return vendor.call("cusolverDn", "xgesvd_buffer_size", h, p, self._job, self._job,
                               M, N, cdt, 0, M, rdt, 0, cdt, 0, M, cdt, 0, N, cdt)
        h, _ = self.query_handle(ordinal)
        pre = TYPED_PREFIX[d.dtype]
        if self._route == "batched":
            lwork = vendor.call("cusolverDn", f"{pre}gesvdj_batched_buffer_size", h, self._jobz,
                                M, N, 0, M, 0, 0, M, 0, N, gesvdj_info(), self._chunk)
        else:
            lwork = vendor.call("cusolverDn", f"{pre}gesvdj_buffer_size", h, self._jobz,
                                self._econ, M, N, 0, M, 0, 0, M, 0, N, gesvdj_info())
        return (int(lwork) * d.dtype.itemsize, 0)

    def _slots(self, s: Slots, sizes) -> None:
        d = self.desc
        isz, bc, M, N = d.dtype.itemsize, self._bcount, self._M, self._N
        s.add("a", bc * M * N * isz)
        if self._route == "gesvd":
            s.add("u", bc * M * self._ucols * isz if d.compute_uv else 0)
            s.add("vt", bc * N * N * isz if d.compute_uv else 0)
        else:
            s.add("u", bc * M * self._ubuf * isz)
            s.add("vt", bc * N * N * isz)
        s.add("work", sizes[0])

    def _bind(self, args):
        d = self.desc
        a = input_view(args.a, "a", d.batch + (d.m, d.n), d.dtype)
        s = out_view(args.s, "s", d.batch + (d.k,), REAL_OF[d.dtype], a.device, "SVD")
        u = _optional_out(args.u, "u", d.compute_uv, d.u_shape, d.dtype, a.device, "SVD",
                          "compute_uv")
        vh = _optional_out(args.vh, "vh", d.compute_uv, d.vh_shape, d.dtype, a.device, "SVD",
                           "compute_uv")
        info = info_view(args.info, d.batch, a.device, "SVD")
        check_disjoint_views([("a", a), ("s", s), ("u", u), ("vh", vh), ("info", info)], "SVD")
        return {"dev": a.device, "a": a, "s": s, "u": u, "vh": vh, "info": info}

    def _run_empty(self, bound, stream: int) -> None:
        super()._run_empty(bound, stream)
        d = self.desc
        if d.compute_uv and d.full_matrices:       # k = 0: U = I(m), Vh = I(n)
            for name, size in (("u", d.m), ("vh", d.n)):
                if size:
                    write_identity(bound[name].ptr, d.batch, size, d.dtype, bound["dev"],
                                   self._arch, stream)

    def _run(self, bound, stream: int, base: int, ordinal: int) -> None:
        d = self.desc
        dt = d.dtype
        M, N = self._M, self._N
        slots, sizes = self._layout(ordinal)
        aptr = slots.ptr(base, "a")
        if self._tall:      # column-major A (M = m, N = n)
            copy_views(bound["a"], colmajor_view(aptr, d.batch, d.m, d.n, d.m, M * N, dt,
                                                 ordinal), self._arch, stream)
        else:               # column-major Aᴴ (n × m) = dense row-major conj(A)
            conj_copy(bound["a"], dense_view(aptr, d.batch + (d.m, d.n), dt, ordinal),
                      self._arch, stream)
        if self._route == "gesvd":
            self._run_gesvd(bound, stream, base, ordinal, slots, sizes)
        else:
            self._run_jacobi(bound, stream, base, ordinal, slots, sizes)

    def _run_jacobi(self, bound, stream: int, base: int, ordinal: int, slots: Slots,
                    sizes) -> None:
        """gesvdjBatched / gesvdj on the column-major M × N copy: S straight into ``s``, U
        (M × ubuf) and V (N × N, NOT Vᴴ) into the workspace, then copied out."""
        d = self.desc
        dt, isz, rsz = d.dtype, d.dtype.itemsize, REAL_OF[d.dtype].itemsize
        M, N, k, ub = self._M, self._N, d.k, self._ubuf
        aptr, uptr, vptr, work = (slots.ptr(base, x) for x in ("a", "u", "vt", "work"))
        info = self.info_ptrs(bound, slots, base)
        sptr = bound["s"].ptr
        lwork = sizes[0] // isz
        h, _ = self.handle(ordinal, stream)
        params = gesvdj_info()
        pre = TYPED_PREFIX[dt]
        if self._route == "batched":
            for c0 in range(0, self._bcount, self._chunk):
                cnt = min(self._chunk, self._bcount - c0)
                vendor.call("cusolverDn", f"{pre}gesvdj_batched", h, self._jobz, M, N,
                            aptr + c0 * M * N * isz, M, sptr + c0 * k * rsz,
                            uptr + c0 * M * ub * isz, M, vptr + c0 * N * N * isz, N, work,
                            lwork, info + 4 * c0, params, cnt)
        else:
            for b in range(self._bcount):
                vendor.call("cusolverDn", f"{pre}gesvdj", h, self._jobz, self._econ, M, N,
                            aptr + b * M * N * isz, M, sptr + b * k * rsz,
                            uptr + b * M * ub * isz, M, vptr + b * N * N * isz, N, work, lwork,
                            info + 4 * b, params)
        if not d.compute_uv:
            return
        uc = self._ucols        # columns of U (tall) / rows of Vh (wide) the caller wants
        if self._tall:
            # U: the first uc columns of the column-major U buffer
            copy_views(colmajor_view(uptr, d.batch, d.m, uc, M, M * ub, dt, ordinal),
                       bound["u"], self._arch, stream)
            # Vh = Vᴴ: the column-major V (n × n) read row-major is Vᵀ; conjugated
            conj_copy(rowmajor_view(vptr, d.batch, d.n, d.n, N, N * N, dt, ordinal),
                      bound["vh"], self._arch, stream)
        else:
            # A = V'·S·U'ᴴ: U = V' (m × m, column-major, ld N = m)
            copy_views(colmajor_view(vptr, d.batch, d.m, d.m, N, N * N, dt, ordinal),
                       bound["u"], self._arch, stream)
            # Vh = U'ᴴ: the first uc columns of U' (n × ub, ld M = n) read row-major, conjugated
            conj_copy(rowmajor_view(uptr, d.batch, uc, d.n, M, M * ub, dt, ordinal),
                      bound["vh"], self._arch, stream)

    def _run_gesvd(self, bound, stream: int, base: int, ordinal: int, slots: Slots,
                   sizes) -> None:
        """Xgesvd per matrix on the column-major M × N copy (U and Vᴴ into the workspace)."""
        d = self.desc
        dt, isz, rsz = d.dtype, d.dtype.itemsize, REAL_OF[d.dtype].itemsize
        M, N, k, uc = self._M, self._N, d.k, self._ucols
        aptr, uptr, vtptr = (slots.ptr(base, x) for x in ("a", "u", "vt"))
        info = self.info_ptrs(bound, slots, base)
        work = slots.ptr(base, "work")
        h, p = self.handle(ordinal, stream)
        cdt, rdt = vendor.data_type(dt), vendor.data_type(REAL_OF[dt])
        hptr = self.host_buffer(ordinal, sizes[1])
        uv = d.compute_uv
        sptr = bound["s"].ptr
        for b in range(self._bcount):
            vendor.call("cusolverDn", "xgesvd", h, p, self._job, self._job, M, N, cdt,
                        aptr + b * M * N * isz, M, rdt, sptr + b * k * rsz,
                        cdt, uptr + b * M * uc * isz if uv else 0, M,
                        cdt, vtptr + b * N * N * isz if uv else 0, N,
                        cdt, work, sizes[0], hptr, sizes[1], info + 4 * b)
        if not uv:
            return
        if self._tall:
            copy_views(colmajor_view(uptr, d.batch, d.m, uc, M, M * uc, dt, ordinal),
                       bound["u"], self._arch, stream)
            copy_views(colmajor_view(vtptr, d.batch, d.n, d.n, N, N * N, dt, ordinal),
                       bound["vh"], self._arch, stream)
        else:
            # U = V' = (V'ᴴ)ᴴ: the column-major V'ᴴ (m × m) read row-major, conjugated
            conj_copy(rowmajor_view(vtptr, d.batch, d.m, d.m, N, N * N, dt, ordinal),
                      bound["u"], self._arch, stream)
            # Vh = U'ᴴ: the column-major U' (n × uc) read row-major is U'ᵀ (uc × n)
            conj_copy(rowmajor_view(uptr, d.batch, uc, d.n, M, M * uc, dt, ordinal),
                      bound["vh"], self._arch, stream)


# =================================================================================== Eigh
#: cusolverDnXsyevBatched limits n·lda·batch to the int32 range: larger batches are chunked
SYEV_BATCHED_LIMIT = INT32_MAX


@dataclass(frozen=True)
class EighDescriptor:
    """A = V·diag(w)·Vᴴ for a batch of Hermitian ``n × n`` matrices (the LOWER triangle is
    read, like numpy): w real ascending, V unitary (columns = eigenvectors) when
    ``compute_v``; dtypes f32, f64, c64, c128 (w in the real type)."""

    batch: Tuple[int, ...]
    n: int
    dtype: DType = float32
    compute_v: bool = True

    def __post_init__(self):
        init_problem(self, "Eigh", ("n",), ("compute_v",))


@dataclass
class EighArgs:
    """a: (*batch, n, n) any strides (lower triangle read); w: real (*batch, n), ascending;
    v: (*batch, n, n) when compute_v (None otherwise), columns = eigenvectors; outputs
    C-contiguous; info: optional int32 (batch): 0, or > 0 when the solver did not converge."""

    a: object
    w: object
    v: object = None
    info: object = None


class EighPlan(VendorPlanBase):
    """Hermitian eigendecomposition: ``cusolverDnXsyevd`` (divide and conquer) for a single
    matrix, ``cusolverDnXsyevBatched`` for batches (chunked so n²·chunk fits int32).  uplo =
    lower on a column-major copy.  Workspace: the copy (batch·n²; holds V after the call), info
    words, the library's buffer.  Math in the dtype (real type for w); not bit-stable."""

    descriptor = EighDescriptor
    _op = "eigh"

    def _check(self) -> None:
        d = self.desc
        self._batch = d.batch
        bc = prod(d.batch)
        self._batched = bc > 1
        per = max(d.n * d.n, 1)
        self._chunk = max(1, min(bc, SYEV_BATCHED_LIMIT // per)) if self._batched else 1
        self._template = "cusolverDn.XsyevBatched" if self._batched else "cusolverDn.Xsyevd"
        self._jobz = EIG_VECTOR if d.compute_v else EIG_NOVECTOR

    def _aux_element(self):
        return REAL_OF[self.desc.dtype]

    def _knobs(self) -> tuple:
        return (("route", "batched" if self._batched else "single"),
                ("vectors", bool(self.desc.compute_v)))

    def _vendor_sizes(self, ordinal: int):
        d = self.desc
        h, p = self.query_handle(ordinal)
        cdt, rdt = vendor.data_type(d.dtype), vendor.data_type(REAL_OF[d.dtype])
        if self._batched:
            return vendor.call("cusolverDn", "xsyev_batched_buffer_size", h, p, self._jobz,
                               FILL_LOWER, d.n, cdt, 0, d.n, rdt, 0, cdt, self._chunk)
        return vendor.call("cusolverDn", "xsyevd_buffer_size", h, p, self._jobz, FILL_LOWER, d.n,
                           cdt, 0, d.n, rdt, 0, cdt)

    def _slots(self, s: Slots, sizes) -> None:
        d = self.desc
        s.add("a", self._bcount * d.n * d.n * d.dtype.itemsize)
        s.add("work", sizes[0])

    def _bind(self, args):
        d = self.desc
        shp = d.batch + (d.n, d.n)
        a = input_view(args.a, "a", shp, d.dtype)
        w = out_view(args.w, "w", d.batch + (d.n,), REAL_OF[d.dtype], a.device, "Eigh")
        v = _optional_out(args.v, "v", d.compute_v, shp, d.dtype, a.device, "Eigh", "compute_v")
        info = info_view(args.info, d.batch, a.device, "Eigh")
        check_disjoint_views([("a", a), ("w", w), ("v", v), ("info", info)], "Eigh")
        return {"dev": a.device, "a": a, "w": w, "v": v, "info": info}

    def _run(self, bound, stream: int, base: int, ordinal: int) -> None:
        d = self.desc
        n, dt, isz, rsz = d.n, d.dtype, d.dtype.itemsize, REAL_OF[d.dtype].itemsize
        slots, sizes = self._layout(ordinal)
        aptr, work = slots.ptr(base, "a"), slots.ptr(base, "work")
        info = self.info_ptrs(bound, slots, base)
        cm = colmajor_view(aptr, d.batch, n, n, n, n * n, dt, ordinal)
        copy_views(bound["a"], cm, self._arch, stream)
        h, p = self.handle(ordinal, stream)
        cdt, rdt = vendor.data_type(dt), vendor.data_type(REAL_OF[dt])
        hptr = self.host_buffer(ordinal, sizes[1])
        wptr = bound["w"].ptr
        if self._batched:
            for c0 in range(0, self._bcount, self._chunk):
                cnt = min(self._chunk, self._bcount - c0)
                vendor.call("cusolverDn", "xsyev_batched", h, p, self._jobz, FILL_LOWER, n, cdt,
                            aptr + c0 * n * n * isz, n, rdt, wptr + c0 * n * rsz, cdt, work,
                            sizes[0], hptr, sizes[1], info + 4 * c0, cnt)
        else:
            for b in range(self._bcount):
                vendor.call("cusolverDn", "xsyevd", h, p, self._jobz, FILL_LOWER, n, cdt,
                            aptr + b * n * n * isz, n, rdt, wptr + b * n * rsz, cdt, work,
                            sizes[0], hptr, sizes[1], info + 4 * b)
        if d.compute_v:
            copy_views(cm, bound["v"], self._arch, stream)


# ==================================================================================== Eig
@dataclass(frozen=True)
class EigDescriptor:
    """A·V = V·diag(w) for a batch of general ``n × n`` matrices: w complex, V complex right
    eigenvectors (unit 2-norm columns, largest component real) when ``compute_v``; dtypes f32,
    f64, c64, c128 (w / V in c64 for f32 / c64 input, c128 for f64 / c128)."""

    batch: Tuple[int, ...]
    n: int
    dtype: DType = float32
    compute_v: bool = True

    def __post_init__(self):
        init_problem(self, "Eig", ("n",), ("compute_v",))

    @property
    def out_dtype(self) -> DType:
        return COMPLEX_OF[self.dtype]


@dataclass
class EigArgs:
    """a: (*batch, n, n) any strides; w: complex (*batch, n) (order as the solver returns it:
    unsorted); v: complex (*batch, n, n) right eigenvectors as columns when compute_v (None
    otherwise); outputs C-contiguous; info: optional int32 (batch): 0, or > 0 when the QR
    algorithm did not converge."""

    a: object
    w: object
    v: object = None
    info: object = None


class EigPlan(VendorPlanBase):
    """General eigendecomposition: ``cusolverDnXgeev`` (complex arithmetic: a real input is
    first widened into a zero-filled complex copy), per matrix; left eigenvectors are not
    computed.  Needs a host workspace (numpy, owned by the plan).  Workspace: the complex
    column-major copy (batch·n²), the eigenvector buffer (batch·n²) when compute_v, info words,
    the library's buffer.  Math in the complex dtype; not bit-stable."""

    descriptor = EigDescriptor
    _op = "eig"
    _template = "cusolverDn.Xgeev"

    def _check(self) -> None:
        d = self.desc
        self._batch = d.batch
        self._cdtype = COMPLEX_OF[d.dtype]
        self._jobvr = EIG_VECTOR if d.compute_v else EIG_NOVECTOR

    def _aux_element(self):
        return self._cdtype

    def _knobs(self) -> tuple:
        return (("vectors", bool(self.desc.compute_v)),)

    def _vendor_sizes(self, ordinal: int):
        d = self.desc
        h, p = self.query_handle(ordinal)
        c = vendor.data_type(self._cdtype)
        return vendor.call("cusolverDn", "xgeev_buffer_size", h, p, EIG_NOVECTOR, self._jobvr,
                           d.n, c, 0, d.n, c, 0, c, 0, d.n, c, 0, d.n, c)

    def _slots(self, s: Slots, sizes) -> None:
        d = self.desc
        csz = self._cdtype.itemsize
        s.add("a", self._bcount * d.n * d.n * csz)
        s.add("vr", self._bcount * d.n * d.n * csz if d.compute_v else 0)
        s.add("work", sizes[0])

    def _bind(self, args):
        d = self.desc
        shp = d.batch + (d.n, d.n)
        a = input_view(args.a, "a", shp, d.dtype)
        w = out_view(args.w, "w", d.batch + (d.n,), self._cdtype, a.device, "Eig")
        v = _optional_out(args.v, "v", d.compute_v, shp, self._cdtype, a.device, "Eig",
                          "compute_v")
        info = info_view(args.info, d.batch, a.device, "Eig")
        check_disjoint_views([("a", a), ("w", w), ("v", v), ("info", info)], "Eig")
        return {"dev": a.device, "a": a, "w": w, "v": v, "info": info}

    def _run(self, bound, stream: int, base: int, ordinal: int) -> None:
        d = self.desc
        n, cd = d.n, self._cdtype
        csz = cd.itemsize
        slots, sizes = self._layout(ordinal)
        aptr, vrptr, work = (slots.ptr(base, x) for x in ("a", "vr", "work"))
        info = self.info_ptrs(bound, slots, base)
        if d.dtype.is_complex:
            copy_views(bound["a"], colmajor_view(aptr, d.batch, n, n, n, n * n, cd, ordinal),
                       self._arch, stream)
        else:
            # zero-filled complex copy, the real parts written through a real view (stride 2)
            zero_bytes(aptr, self._bcount * n * n * csz, stream)
            re = TensorView(aptr, d.batch + (n, n), batch_strides(d.batch, 2 * n * n)
                            + (2, 2 * n), d.dtype, ordinal)
            copy_views(bound["a"], re, self._arch, stream)
        h, p = self.handle(ordinal, stream)
        c = vendor.data_type(cd)
        hptr = self.host_buffer(ordinal, sizes[1])
        wptr = bound["w"].ptr
        for b in range(self._bcount):
            off = b * n * n * csz
            vendor.call("cusolverDn", "xgeev", h, p, EIG_NOVECTOR, self._jobvr, n, c, aptr + off,
                        n, c, wptr + b * n * csz, c, 0, n, c,
                        vrptr + off if d.compute_v else 0, n, c, work, sizes[0], hptr, sizes[1],
                        info + 4 * b)
        if d.compute_v:
            copy_views(colmajor_view(vrptr, d.batch, n, n, n, n * n, cd, ordinal), bound["v"],
                       self._arch, stream)
