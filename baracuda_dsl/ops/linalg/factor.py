"""Cholesky, LU, linear solve and inverse on cuSOLVER (64-bit generic API) and cuBLAS:
potrfBatched for batches of small Cholesky problems, cuBLAS getrfBatched / getrsBatched for
batches of small LU / solve / inverse problems.

Every plan copies the (any-strided, row-major) input into a column-major buffer of its
workspace, runs the library there, and copies the result out into the caller's dense outputs;
``info`` words (int32, one per matrix) go to the caller's ``info`` array or the workspace.
Numerical failures are reported through ``info`` only (the run never synchronises): read it
back and call :func:`~baracuda_dsl.ops.linalg.common.raise_for_info`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

import numpy as np

from ...dtypes import DType, float32, int32, int64
from ...plan import prod
from ...runtime import vendor
from .common import (FILL_LOWER, INT32_MAX, OP_N, TYPED_PREFIX, Slots, VendorPlanBase,
                     cast_copy, check_disjoint_views, colmajor_view, conj_copy, copy_views,
                     dense_view, htod_async, info_view, init_problem, input_view, out_view,
                     pointer_array, rowmajor_view, tri_copy, write_identity)

#: potrfBatched (one launch for the whole batch) when the batch has more than one matrix and
#: n is at most this; Xpotrf per matrix otherwise
CHOLESKY_BATCHED_MAX_N = 128
#: cuBLAS getrfBatched (+ getrsBatched for solve / inverse: one launch each for the whole batch)
#: when the batch has more than one SQUARE matrix and n is at most this; cusolverDnXgetrf
#: (+ Xgetrs) per matrix otherwise (single matrices, large n, LU of non-square matrices)
LU_BATCHED_MAX_N = 512


def _lu_batched(batch, m: int, n: int) -> bool:
    """True when the cuBLAS batched LU route applies (see :data:`LU_BATCHED_MAX_N`)."""
    bc = prod(batch)
    return 1 < bc <= INT32_MAX and m == n and 0 < n <= LU_BATCHED_MAX_N


def _check_getrs_info(host_info: np.ndarray) -> None:
    """getrsBatched reports argument errors through a HOST int (0 = all arguments valid); a
    non-zero value is a bug of the plan: VendorError."""
    v = int(host_info[0])
    if v:
        raise vendor.VendorError("cublas.getrsBatched", f"info {v} (argument {-v} rejected)")


# =============================================================================== Cholesky
@dataclass(frozen=True)
class CholeskyDescriptor:
    """A = L·Lᴴ (``upper=False``: out = L, lower) or A = Uᴴ·U (``upper=True``: out = U = Lᴴ)
    for a batch of Hermitian positive-definite ``n × n`` matrices; dtypes f32, f64, c64, c128;
    ``batch`` any leading dims (rank ≤ 8 in total)."""

    batch: Tuple[int, ...]
    n: int
    dtype: DType = float32
    upper: bool = False

    def __post_init__(self):
        init_problem(self, "Cholesky", ("n",), ("upper",))


@dataclass
class CholeskyArgs:
    """a: (*batch, n, n), any strides — only its LOWER triangle is read (like numpy); out:
    (*batch, n, n) C-contiguous, the factor with the other triangle ZERO; info: optional int32
    (batch) array (shape () or (1,) without batch): 0, or k > 0 when the leading minor of order
    k is not positive definite (out is then not a factor)."""

    a: object
    out: object
    info: object = None


class CholeskyPlan(VendorPlanBase):
    """Cholesky factorisation on cuSOLVER: ``cusolverDnXpotrf`` per matrix, or one
    ``{s,d,c,z}potrfBatched`` for batches of more than one matrix with n ≤ 128 (the sku's
    template says which).  Always factors the lower triangle (uplo = lower on the column-major
    copy); U = Lᴴ is the transposed (conjugated) copy.  Workspace: the column-major copy
    (batch·n² elements), the device pointer array (batched route), info words and the library's
    buffer.  Math in the dtype; not bit-stable."""

    descriptor = CholeskyDescriptor
    _op = "cholesky"

    def _check(self) -> None:
        d = self.desc
        self._batch = d.batch
        bc = prod(d.batch)
        self._batched = bc > 1 and 0 < d.n <= CHOLESKY_BATCHED_MAX_N and bc <= 2**31 - 1
        self._template = ("cusolverDn.potrfBatched" if self._batched else "cusolverDn.Xpotrf")

    def _vendor_sizes(self, ordinal: int):
        if self._batched:
            return (0, 0)
        d = self.desc
        h, p = self.query_handle(ordinal)
        dt = vendor.data_type(d.dtype)
        return vendor.call("cusolverDn", "xpotrf_buffer_size", h, p, FILL_LOWER, d.n, dt, 0,
                           max(1, d.n), dt)

    def _slots(self, s: Slots, sizes) -> None:
        d = self.desc
        s.add("a", self._bcount * d.n * d.n * d.dtype.itemsize)
        s.add("ptrs", 8 * self._bcount if self._batched else 0)
        s.add("work", sizes[0])

    def _bind(self, args):
        d = self.desc
        shp = d.batch + (d.n, d.n)
        a = input_view(args.a, "a", shp, d.dtype)
        out = out_view(args.out, "out", shp, d.dtype, a.device, "Cholesky")
        info = info_view(args.info, d.batch, a.device, "Cholesky")
        check_disjoint_views([("a", a), ("out", out), ("info", info)], "Cholesky")
        return {"dev": a.device, "a": a, "out": out, "info": info}

    def _run(self, bound, stream: int, base: int, ordinal: int) -> None:
        # A is transpose-copied into the column-major buffer and factored LOWER.  (Copying it
        # as it is and factoring the buffer's UPPER triangle — M = Aᵀ = conj(A) — saves the
        # transposes, but measured slower on the H100 for 512 × 64², 446 against 394 µs.)
        d = self.desc
        n, dt, isz = d.n, d.dtype, d.dtype.itemsize
        slots, sizes = self._layout(ordinal)
        aptr = slots.ptr(base, "a")
        info = self.info_ptrs(bound, slots, base)
        per = n * n
        copy_views(bound["a"], colmajor_view(aptr, d.batch, n, n, n, per, dt, ordinal),
                   self._arch, stream)
        h, p = self.handle(ordinal, stream)
        if self._batched:
            pptr = slots.ptr(base, "ptrs")
            self._ptr_host = pointer_array(self._bcount, (aptr, per * isz))
            htod_async(pptr, self._ptr_host, stream)
            vendor.call("cusolverDn", f"{TYPED_PREFIX[dt]}potrf_batched", h, FILL_LOWER, n, pptr,
                        n, info, self._bcount)
        else:
            cdt = vendor.data_type(dt)
            work = slots.ptr(base, "work")
            hbytes = sizes[1]
            hptr = self.host_buffer(ordinal, hbytes)
            for b in range(self._bcount):
                vendor.call("cusolverDn", "xpotrf", h, p, FILL_LOWER, n, cdt, aptr + b * per * isz,
                            n, cdt, work, sizes[0], hptr, hbytes, info + 4 * b)
        out = bound["out"]
        if not d.upper:
            tri_copy(colmajor_view(aptr, d.batch, n, n, n, per, dt, ordinal), out, False,
                     self._arch, stream)
        else:
            # U = Lᴴ: the column-major L read row-major is Lᵀ; conjugate complex factors
            tri_copy(rowmajor_view(aptr, d.batch, n, n, n, per, dt, ordinal), out, True,
                     self._arch, stream)
            if dt.is_complex:
                conj_copy(out, out, self._arch, stream)


# ===================================================================================== LU
@dataclass(frozen=True)
class LUDescriptor:
    """P·A = L·U with partial pivoting for a batch of ``m × n`` matrices (L unit lower
    trapezoidal, U upper); dtypes f32, f64, c64, c128."""

    batch: Tuple[int, ...]
    m: int
    n: int
    dtype: DType = float32

    def __post_init__(self):
        init_problem(self, "LU", ("m", "n"))


@dataclass
class LUArgs:
    """a: (*batch, m, n) any strides; lu: (*batch, m, n) C-contiguous, packed L\\U (the unit
    diagonal of L not stored); pivots: int64 (*batch, min(m, n)) C-contiguous, 1-based LAPACK /
    torch convention (row i was swapped with row pivots[i] - 1, in order); info: optional int32
    (batch): 0, or k > 0 when U[k-1, k-1] is exactly zero.  A zero pivot is NOT an error for LU
    (det is 0 then): callers computing det must not call ``raise_for_info("lu", ...)``."""

    a: object
    lu: object
    pivots: object
    info: object = None


class LUPlan(VendorPlanBase):
    """LU factorisation with partial pivoting on a column-major copy, by one of two routes
    (the sku's template says which):

    - ``cublas.getrfBatched``: batches of more than one square matrix with n ≤
      :data:`LU_BATCHED_MAX_N` — one ``{s,d,c,z}getrfBatched`` for the whole batch (device
      pointer array uploaded per run); its int32 pivots are widened into ``pivots`` by the
      elementwise ``cast`` (int32 → int64);
    - ``cusolverDn.Xgetrf``: per matrix otherwise, pivots written straight into ``pivots``.

    Pivots are int64, 1-based either way.  Workspace: the copy (batch·m·n elements), info
    words, and the pointer array + int32 pivots (batched) or the library's buffer (per
    matrix).  Math in the dtype."""

    descriptor = LUDescriptor
    _op = "lu"

    def _check(self) -> None:
        d = self.desc
        self._batch = d.batch
        self._k = min(d.m, d.n)
        self._batched = _lu_batched(d.batch, d.m, d.n)
        self._template = "cublas.getrfBatched" if self._batched else "cusolverDn.Xgetrf"

    def _matrix_empty(self) -> bool:
        return self._k == 0

    def _vendor_sizes(self, ordinal: int):
        return self.getrf_sizes(ordinal, self.desc.m, self.desc.n)

    def _slots(self, s: Slots, sizes) -> None:
        d = self.desc
        s.add("a", self._bcount * d.m * d.n * d.dtype.itemsize)
        s.add("ptrs", 8 * self._bcount if self._batched else 0)
        s.add("piv32", 4 * self._bcount * self._k if self._batched else 0)
        s.add("work", sizes[0])

    def _bind(self, args):
        d = self.desc
        shp = d.batch + (d.m, d.n)
        a = input_view(args.a, "a", shp, d.dtype)
        lu = out_view(args.lu, "lu", shp, d.dtype, a.device, "LU")
        piv = out_view(args.pivots, "pivots", d.batch + (self._k,), int64, a.device, "LU")
        info = info_view(args.info, d.batch, a.device, "LU")
        check_disjoint_views([("a", a), ("lu", lu), ("pivots", piv), ("info", info)], "LU")
        return {"dev": a.device, "a": a, "lu": lu, "pivots": piv, "info": info}

    def _run(self, bound, stream: int, base: int, ordinal: int) -> None:
        d = self.desc
        m, n, dt, isz = d.m, d.n, d.dtype, d.dtype.itemsize
        slots, sizes = self._layout(ordinal)
        aptr = slots.ptr(base, "a")
        info = self.info_ptrs(bound, slots, base)
        per = m * n
        cm = colmajor_view(aptr, d.batch, m, n, m, per, dt, ordinal)
        copy_views(bound["a"], cm, self._arch, stream)
        if self._batched:
            # square: m == n; int32 pivots, n per matrix, then widened into the caller's int64
            pptr, piv32 = slots.ptr(base, "ptrs"), slots.ptr(base, "piv32")
            self._ptr_host = pointer_array(self._bcount, (aptr, per * isz))
            htod_async(pptr, self._ptr_host, stream)
            h = vendor.blas_handle(ordinal, stream)
            vendor.call("cublas", f"{TYPED_PREFIX[dt]}getrf_batched", h, n, pptr, n, piv32,
                        info, self._bcount)
            cast_copy(dense_view(piv32, d.batch + (n,), int32, ordinal), bound["pivots"],
                      self._arch, stream)
        else:
            h, p = self.handle(ordinal, stream)
            cdt = vendor.data_type(dt)
            work = slots.ptr(base, "work")
            hptr = self.host_buffer(ordinal, sizes[1])
            piv = bound["pivots"].ptr
            for b in range(self._bcount):
                vendor.call("cusolverDn", "xgetrf", h, p, m, n, cdt, aptr + b * per * isz, m,
                            piv + 8 * b * self._k, cdt, work, sizes[0], hptr, sizes[1],
                            info + 4 * b)
        copy_views(cm, bound["lu"], self._arch, stream)


# ================================================================================== Solve
class _GetrsPlan(VendorPlanBase):
    """Shared path of SolvePlan and InversePlan: getrf on a column-major copy of A, then getrs
    on a column-major right-hand side (B, or the identity), copied out into the output.

    Routes (the sku's template says which): ``cublas.getrfBatched+getrsBatched`` — one launch
    each for the whole batch, device pointer arrays (A's, then B's) uploaded per run, int32
    pivots — for batches of more than one matrix with n ≤ :data:`LU_BATCHED_MAX_N`;
    ``cusolverDn.Xgetrf+Xgetrs`` per matrix (int64 pivots) otherwise."""

    _nrhs = 0

    def _route(self) -> None:
        d = self.desc
        self._batched = _lu_batched(d.batch, d.n, d.n)
        self._template = ("cublas.getrfBatched+getrsBatched" if self._batched
                          else "cusolverDn.Xgetrf+Xgetrs")
        self._getrs_info = np.zeros(1, np.int32)      # getrsBatched's host info word

    def _vendor_sizes(self, ordinal: int):
        return self.getrf_sizes(ordinal, self.desc.n, self.desc.n)

    def _slots(self, s: Slots, sizes) -> None:
        d = self.desc
        isz, bc = d.dtype.itemsize, self._bcount
        s.add("a", bc * d.n * d.n * isz)
        s.add("b", bc * d.n * self._nrhs * isz)
        s.add("piv", bc * d.n * (4 if self._batched else 8))
        s.add("ptrs", 16 * bc if self._batched else 0)
        s.add("info2", 0 if self._batched else 4)
        s.add("work", sizes[0])

    def _prepare_rhs(self, bound, bptr: int, ordinal: int, stream: int) -> None:
        raise NotImplementedError

    def _run(self, bound, stream: int, base: int, ordinal: int) -> None:
        d = self.desc
        n, r, dt, isz = d.n, self._nrhs, d.dtype, d.dtype.itemsize
        slots, sizes = self._layout(ordinal)
        aptr, bptr = slots.ptr(base, "a"), slots.ptr(base, "b")
        piv = slots.ptr(base, "piv")
        info = self.info_ptrs(bound, slots, base)
        copy_views(bound["a"], colmajor_view(aptr, d.batch, n, n, n, n * n, dt, ordinal),
                   self._arch, stream)
        if r:
            self._prepare_rhs(bound, bptr, ordinal, stream)
        if self._batched:
            self._run_batched(aptr, bptr, piv, info, slots.ptr(base, "ptrs"), ordinal, stream)
        else:
            h, p = self.handle(ordinal, stream)
            cdt = vendor.data_type(dt)
            work, info2 = slots.ptr(base, "work"), slots.ptr(base, "info2")
            hptr = self.host_buffer(ordinal, sizes[1])
            for b in range(self._bcount):
                ab = aptr + b * n * n * isz
                pb = piv + b * n * 8
                vendor.call("cusolverDn", "xgetrf", h, p, n, n, cdt, ab, n, pb, cdt, work,
                            sizes[0], hptr, sizes[1], info + 4 * b)
                if r:
                    vendor.call("cusolverDn", "xgetrs", h, p, OP_N, n, r, cdt, ab, n, pb, cdt,
                                bptr + b * n * r * isz, n, info2)
        if r:
            copy_views(colmajor_view(bptr, d.batch, n, r, n, n * r, dt, ordinal), bound["x"],
                       self._arch, stream)

    def _run_batched(self, aptr: int, bptr: int, piv: int, info: int, pptr: int, ordinal: int,
                     stream: int) -> None:
        """getrfBatched on the A pointers (int32 pivots, n per matrix; info per matrix into
        ``info``), then getrsBatched on the B pointers (the second half of the array)."""
        d = self.desc
        n, r, bc, isz = d.n, self._nrhs, self._bcount, d.dtype.itemsize
        pre = TYPED_PREFIX[d.dtype]
        self._ptr_host = pointer_array(bc, (aptr, n * n * isz), (bptr, n * r * isz))
        htod_async(pptr, self._ptr_host, stream)
        h = vendor.blas_handle(ordinal, stream)
        vendor.call("cublas", f"{pre}getrf_batched", h, n, pptr, n, piv, info, bc)
        if r:
            self._getrs_info[0] = 0
            vendor.call("cublas", f"{pre}getrs_batched", h, OP_N, n, r, pptr, n, piv,
                        pptr + 8 * bc, n, int(self._getrs_info.ctypes.data), bc)
            _check_getrs_info(self._getrs_info)


@dataclass(frozen=True)
class SolveDescriptor:
    """X = A⁻¹·B for a batch of square ``n × n`` A and ``n × nrhs`` B; dtypes f32, f64, c64,
    c128."""

    batch: Tuple[int, ...]
    n: int
    nrhs: int
    dtype: DType = float32

    def __post_init__(self):
        init_problem(self, "Solve", ("n", "nrhs"))


@dataclass
class SolveArgs:
    """a: (*batch, n, n) and b: (*batch, n, nrhs), any strides; x: (*batch, n, nrhs)
    C-contiguous; info: optional int32 (batch): 0, or k > 0 when A is singular (U[k-1, k-1] is
    exactly zero; x then holds inf / nan)."""

    a: object
    b: object
    x: object
    info: object = None


class SolvePlan(_GetrsPlan):
    """Linear solve through LU on column-major copies of A and B: one cuBLAS
    ``getrfBatched`` + ``getrsBatched`` for batches of more than one matrix with n ≤
    :data:`LU_BATCHED_MAX_N`, else ``cusolverDnXgetrf`` + ``cusolverDnXgetrs`` per matrix (the
    sku's template says which).  Workspace: both copies, pivots (int32 batched / int64), the
    pointer arrays (batched), info words, the library's buffer (per matrix).  Math in the
    dtype; backward stable (error ~ cond(A)·n·eps)."""

    descriptor = SolveDescriptor
    _op = "solve"

    def _check(self) -> None:
        self._batch = self.desc.batch
        self._nrhs = self.desc.nrhs
        self._route()

    def _bind(self, args):
        d = self.desc
        a = input_view(args.a, "a", d.batch + (d.n, d.n), d.dtype)
        b = input_view(args.b, "b", d.batch + (d.n, d.nrhs), d.dtype, a.device)
        x = out_view(args.x, "x", d.batch + (d.n, d.nrhs), d.dtype, a.device, "Solve")
        info = info_view(args.info, d.batch, a.device, "Solve")
        check_disjoint_views([("a", a), ("x", x), ("info", info)], "Solve")
        check_disjoint_views([("b", b), ("x", x), ("info", info)], "Solve")
        return {"dev": a.device, "a": a, "b": b, "x": x, "info": info}

    def _prepare_rhs(self, bound, bptr: int, ordinal: int, stream: int) -> None:
        d = self.desc
        copy_views(bound["b"], colmajor_view(bptr, d.batch, d.n, d.nrhs, d.n, d.n * d.nrhs,
                                             d.dtype, ordinal), self._arch, stream)


@dataclass(frozen=True)
class InverseDescriptor:
    """A⁻¹ for a batch of square ``n × n`` matrices; dtypes f32, f64, c64, c128."""

    batch: Tuple[int, ...]
    n: int
    dtype: DType = float32

    def __post_init__(self):
        init_problem(self, "Inverse", ("n",))


@dataclass
class InverseArgs:
    """a: (*batch, n, n) any strides; out: (*batch, n, n) C-contiguous; info: optional int32
    (batch): 0, or k > 0 when A is singular (out then holds inf / nan)."""

    a: object
    out: object
    info: object = None


class InversePlan(_GetrsPlan):
    """Matrix inverse: LU then a solve on the identity (built in the workspace with a memset
    and a diagonal fill) — cuBLAS ``getrfBatched`` + ``getrsBatched`` for batches of more than
    one matrix with n ≤ :data:`LU_BATCHED_MAX_N`, else ``cusolverDnXgetrf`` +
    ``cusolverDnXgetrs`` per matrix (the sku's template says which).  Workspace: the copy of
    A, the identity / solution (batch·n² elements each), pivots, the pointer arrays (batched),
    info words, the library's buffer (per matrix).  Math in the dtype; error ~ cond(A)·n·eps
    relative to ‖A⁻¹‖."""

    descriptor = InverseDescriptor
    _op = "inverse"

    def _check(self) -> None:
        self._batch = self.desc.batch
        self._nrhs = self.desc.n
        self._route()

    def _bind(self, args):
        d = self.desc
        shp = d.batch + (d.n, d.n)
        a = input_view(args.a, "a", shp, d.dtype)
        out = out_view(args.out, "out", shp, d.dtype, a.device, "Inverse")
        info = info_view(args.info, d.batch, a.device, "Inverse")
        check_disjoint_views([("a", a), ("out", out), ("info", info)], "Inverse")
        return {"dev": a.device, "a": a, "x": out, "info": info}

    def _prepare_rhs(self, bound, bptr: int, ordinal: int, stream: int) -> None:
        d = self.desc
        write_identity(bptr, d.batch, d.n, d.dtype, ordinal, self._arch, stream)
