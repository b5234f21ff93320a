"""What the linalg plans share: descriptor checks, the base plan of every cuSOLVER-backed plan
(lazy vendor workspace query, workspace slots, per-matrix ``info`` words), the copies between
the caller's row-major strided operands and the column-major buffers the library works on, and
:func:`raise_for_info`.

Layout conventions.  An operand is a row-major strided view ``(*batch, rows, cols)`` (any
strides for inputs).  cuSOLVER works on column-major matrices: a matrix ``A`` (``m × n``) is
copied into the workspace as a dense column-major buffer (leading dimension ``m``), which is the
same bytes as a dense row-major ``Aᵀ``.  :func:`colmajor_view` is the row-major view of such a
buffer (strides ``(1, ld)`` over the matrix dims), so copying that view into a dense output
transposes back.  Every copy runs the shape family's prebuilt copy kernels (WriteSlicePlan,
TriPlan, FillPlan) or the elementwise ``conj``; no kernel of this family exists.
"""

from __future__ import annotations

import functools
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...dtypes import DType, complex64, complex128, float32, float64, int32
from ...errors import InvalidProblemError, UnsupportedError, WorkspaceTooSmallError
from ...plan import Plan, align_up, check_dtype, prod, view_arg
from ...runtime import trace
from ...runtime import vendor
from ...tensor import MAX_RANK, TensorView, contiguous_strides
from ...vocabulary import (BackendKind, KernelSku, OpCategory, PlanPreference,
                           PrecisionGuarantee)

#: real dtype of each vendor dtype (the type of singular values / Hermitian eigenvalues)
REAL_OF = {float32: float32, float64: float64, complex64: float32, complex128: float64}
#: complex dtype of each vendor dtype (the type of general eigenvalues / eigenvectors)
COMPLEX_OF = {float32: complex64, float64: complex128, complex64: complex64,
              complex128: complex128}
#: cuBLAS / cuSOLVER enum values (cublasFillMode_t, cusolverEigMode_t, cublasOperation_t)
FILL_LOWER, FILL_UPPER = 0, 1
EIG_NOVECTOR, EIG_VECTOR = 0, 1
OP_N, OP_T, OP_C = 0, 1, 2
#: the typed (s/d/c/z) routine prefix of each dtype
TYPED_PREFIX = {float32: "s", float64: "d", complex64: "c", complex128: "z"}
INT32_MAX = 2**31 - 1


# ------------------------------------------------------------------------ descriptor checks
def check_batch(batch, what: str) -> Tuple[int, ...]:
    """``batch`` as a tuple of non-negative ints (InvalidProblemError otherwise)."""
    if isinstance(batch, (int, np.integer)) and not isinstance(batch, bool):
        batch = (batch,)
    try:
        out = tuple(batch)
    except TypeError:
        raise InvalidProblemError(f"{what}: batch must be a tuple of ints, got {batch!r}") from None
    res = []
    for b in out:
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)):
            raise InvalidProblemError(f"{what}: batch must be a tuple of ints, got {batch!r}")
        if b < 0:
            raise InvalidProblemError(f"{what}: negative batch extent in {out}")
        res.append(int(b))
    return tuple(res)


def check_extent(v, name: str, what: str) -> int:
    """A matrix extent: a non-negative int (InvalidProblemError otherwise)."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise InvalidProblemError(f"{what}: {name} must be an int, got {v!r}")
    if v < 0:
        raise InvalidProblemError(f"{what}: negative extent {name}={v}")
    return int(v)


def check_rank(batch: Tuple[int, ...], what: str, extra: int = 2) -> None:
    """InvalidProblemError when ``batch`` plus ``extra`` matrix dims exceed rank 8."""
    if len(batch) + extra > MAX_RANK:
        raise InvalidProblemError(f"{what}: rank {len(batch) + extra} > {MAX_RANK} is not "
                                  f"supported (batch {batch})")


def check_flag(v, name: str, what: str) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise InvalidProblemError(f"{what}: {name} must be a bool, got {v!r}")
    return bool(v)


def init_problem(desc, what: str, extents: Sequence[str], flags: Sequence[str] = ()) -> None:
    """The shared ``__post_init__`` of the linalg descriptors: ``batch`` (tuple of ints ≥ 0),
    the named ``extents`` (ints ≥ 0), rank ≤ 8, ``dtype`` one of f32 / f64 / c64 / c128 and the
    named boolean ``flags``."""
    batch = check_batch(desc.batch, what)
    object.__setattr__(desc, "batch", batch)
    for e in extents:
        object.__setattr__(desc, e, check_extent(getattr(desc, e), e, what))
    check_rank(batch, what)
    object.__setattr__(desc, "dtype", check_dtype(desc.dtype, vendor.VENDOR_DTYPES, what))
    for f in flags:
        object.__setattr__(desc, f, check_flag(getattr(desc, f), f, what))


# ------------------------------------------------------------------------------ info words
#: op name → LinAlgError subclass raised for info > 0 (None: info > 0 is not a numerical
#: failure of that routine, so it is reported as a VendorError)
INFO_ERRORS = {
    "cholesky": vendor.NotPositiveDefiniteError,
    "lu": vendor.SingularMatrixError, "solve": vendor.SingularMatrixError,
    "inverse": vendor.SingularMatrixError, "inv": vendor.SingularMatrixError,
    "svd": vendor.NoConvergenceError, "eigh": vendor.NoConvergenceError,
    "eig": vendor.NoConvergenceError, "qr": None, "triangular_solve": None,
}

_INFO_TEXT = {
    vendor.NotPositiveDefiniteError: "is not positive definite (the leading minor of order {v} "
                                     "is not positive)",
    vendor.SingularMatrixError: "is singular (U[{w}, {w}] is exactly zero)",
    vendor.NoConvergenceError: "did not converge (solver info {v}: off-diagonal elements left, "
                               "or min(m, n) + 1 for the Jacobi SVD)",
}


def raise_for_info(op: str, info, batch_shape=()) -> None:
    """Host-side check of the per-matrix ``info`` words a linalg plan wrote (a numpy int array
    of ``batch_shape`` elements, or one element when there is no batch): return when every word
    is 0, else raise for the FIRST failing matrix (flat batch order):

    - info > 0: ``NotPositiveDefiniteError`` (op "cholesky"), ``SingularMatrixError`` ("lu",
      "solve", "inverse" / "inv"), ``NoConvergenceError`` ("svd", "eigh", "eig"), each with
      ``batch_index`` (flat index) and ``info``; for "qr" / "triangular_solve" a positive info
      is not a numerical outcome: VendorError;
    - info < 0: argument ``-info`` was rejected by the library — a bug: VendorError.

    Note: LU of a singular matrix is not an error (U has an exact zero pivot; det is 0 then):
    callers computing det from LUPlan must not call ``raise_for_info("lu", ...)``."""
    if op not in INFO_ERRORS:
        raise InvalidProblemError(f"raise_for_info: unknown op {op!r}; known: "
                                  f"{', '.join(sorted(INFO_ERRORS))}")
    flat = np.asarray(info).reshape(-1)
    if flat.dtype.kind not in "iu":
        raise InvalidProblemError(f"raise_for_info: info must be an integer array, got "
                                  f"{flat.dtype}")
    bad = np.flatnonzero(flat != 0)
    if not len(bad):
        return
    i = int(bad[0])
    v = int(flat[i])
    shape = tuple(int(s) for s in batch_shape)
    where = f"matrix {tuple(int(x) for x in np.unravel_index(i, shape))}" if shape and \
        prod(shape) == flat.size else ("the matrix" if flat.size == 1 else f"matrix {i}")
    cls = INFO_ERRORS[op]
    if v < 0 or cls is None:
        raise vendor.VendorError(f"cusolverDn ({op})", f"{where}: info {v} (argument {-v} "
                                 f"rejected)" if v < 0 else f"{where}: unexpected info {v}")
    raise cls(f"{op}: {where} " + _INFO_TEXT[cls].format(v=v, w=v - 1), batch_index=i, info=v)


# ------------------------------------------------------------------------------ views
def batch_strides(batch: Tuple[int, ...], per: int) -> Tuple[int, ...]:
    """Element strides of a dense batch of blocks of ``per`` elements."""
    return tuple(s * per for s in contiguous_strides(batch))


def colmajor_view(ptr: int, batch, rows: int, cols: int, ld: int, per: int, dt: DType,
                  dev: int) -> TensorView:
    """Row-major view ``(*batch, rows, cols)`` of column-major matrices with leading dimension
    ``ld``, one every ``per`` elements from ``ptr``."""
    return TensorView(ptr, tuple(batch) + (rows, cols), batch_strides(batch, per) + (1, ld), dt,
                      dev)


def rowmajor_view(ptr: int, batch, rows: int, cols: int, ld: int, per: int, dt: DType,
                  dev: int) -> TensorView:
    """Row-major view ``(*batch, rows, cols)`` of row-major matrices (row stride ``ld``), one
    every ``per`` elements from ``ptr`` (a column-major buffer read as its transpose)."""
    return TensorView(ptr, tuple(batch) + (rows, cols), batch_strides(batch, per) + (ld, 1), dt,
                      dev)


def dense_view(ptr: int, shape, dt: DType, dev: int) -> TensorView:
    shape = tuple(shape)
    return TensorView(ptr, shape, contiguous_strides(shape), dt, dev)


def byte_span(v: TensorView) -> Tuple[int, int]:
    lo, hi = v.span_elements()
    return v.ptr + lo * v.itemsize, v.ptr + (hi + 1) * v.itemsize


def check_disjoint_views(views: Sequence[Tuple[str, Optional[TensorView]]], what: str) -> None:
    """InvalidProblemError when the memory of two of the named views intersects (conservative:
    byte ranges; empty and absent views are skipped)."""
    live = [(n, v, byte_span(v)) for n, v in views if v is not None and v.numel]
    for i in range(len(live)):
        for j in range(i + 1, len(live)):
            (na, _, (a0, a1)), (nb, _, (b0, b1)) = live[i], live[j]
            if a0 < b1 and b0 < a1:
                raise InvalidProblemError(f"{what}: {na} and {nb} overlap in memory; outputs "
                                          f"must not alias the input or each other")


def out_view(obj, name: str, shape, dt: DType, dev: int, what: str) -> TensorView:
    """An output operand: ``shape``, dtype ``dt``, on device ``dev``, dense row-major
    (UnsupportedError otherwise: stage strided outputs through a dense temporary)."""
    v = view_arg(obj, name, shape=tuple(shape), dtype=dt, device=dev)
    if v.numel and not v.is_contiguous():
        raise UnsupportedError(f"{what}: output {name} must be C-contiguous (dense row-major); "
                               f"got strides {v.strides} for shape {v.shape}")
    return v


def info_view(obj, batch: Tuple[int, ...], dev: int, what: str) -> Optional[TensorView]:
    """The optional ``info`` operand: int32, shape ``batch`` (``()`` or ``(1,)`` when there is no
    batch), C-contiguous, on ``dev``; None when not given."""
    if obj is None:
        return None
    v = view_arg(obj, "info", dtype=int32, device=dev)
    ok = tuple(v.shape) == tuple(batch) or (not batch and tuple(v.shape) in ((), (1,)))
    if not ok:
        raise InvalidProblemError(f"{what}: info has shape {tuple(v.shape)}, expected the batch "
                                  f"shape {tuple(batch)}" + (" (or () / (1,))" if not batch
                                                             else ""))
    if v.numel and not v.is_contiguous():
        raise UnsupportedError(f"{what}: info must be C-contiguous")
    return v


# ---------------------------------------------------------------------- workspace layout
class Slots:
    """A workspace laid out as named slots, each starting 256-byte aligned."""

    def __init__(self):
        self.offsets: Dict[str, int] = {}
        self.total = 0

    def add(self, name: str, nbytes: int) -> None:
        self.offsets[name] = self.total
        self.total += align_up(max(int(nbytes), 0))

    def ptr(self, base: int, name: str) -> int:
        return base + self.offsets[name]


# ----------------------------------------------------------------- sub-plans (prebuilt DSL)
@functools.lru_cache(maxsize=512)
def _copy_plan(shape, dt, arch):
    from ..shape.layout import WriteSliceDescriptor, WriteSlicePlan

    return WriteSlicePlan.select(WriteSliceDescriptor(shape, dt), PlanPreference(arch=arch))


@functools.lru_cache(maxsize=256)
def _tri_plan(shape, dt, upper, arch):
    from ..shape.pad import TriDescriptor, TriPlan

    return TriPlan.select(TriDescriptor(shape, 0, upper, dt), PlanPreference(arch=arch))


@functools.lru_cache(maxsize=256)
def _fill_plan(shape, dt, value, arch):
    from ..shape.layout import FillDescriptor, FillPlan

    return FillPlan.select(FillDescriptor(shape, dt, value), PlanPreference(arch=arch))


@functools.lru_cache(maxsize=256)
def _conj_plan(shape, dt, arch):
    from ..elementwise.elementwise import ElementwiseDescriptor, ElementwisePlan

    return ElementwisePlan.select(ElementwiseDescriptor("conj", (shape,), dt),
                                  PlanPreference(arch=arch))


@functools.lru_cache(maxsize=256)
def _cast_plan(shape, src_dt, dst_dt, arch):
    from ..elementwise.elementwise import ElementwiseDescriptor, ElementwisePlan

    return ElementwisePlan.select(ElementwiseDescriptor("cast", (shape,), src_dt,
                                                        out_dtype=dst_dt),
                                  PlanPreference(arch=arch))


def cast_copy(src: TensorView, dst: TensorView, arch, stream: int) -> None:
    """``dst = src`` converted to ``dst``'s dtype (the elementwise ``cast`` op; e.g. cuBLAS's
    int32 pivots into the caller's int64 pivots)."""
    if not src.numel:
        return
    from ..elementwise.elementwise import ElementwiseArgs

    _cast_plan(tuple(src.shape), src.dtype, dst.dtype, arch).run(ElementwiseArgs([src], [dst]),
                                                                 stream=stream)


def pointer_array(count: int, *blocks: Tuple[int, int]) -> np.ndarray:
    """The device pointer array of a cuBLAS / cuSOLVER ``*Batched`` routine: for each
    ``(first, step)`` block the ``count`` addresses ``first + i·step`` (uint64), the blocks one
    after the other (e.g. the A pointers, then the B pointers)."""
    idx = np.arange(count, dtype=np.uint64)
    return np.concatenate([idx * np.uint64(step) + np.uint64(first) for first, step in blocks]
                          or [np.zeros(0, np.uint64)])


def copy_views(src: TensorView, dst: TensorView, arch, stream: int) -> None:
    """``dst = src`` for two strided views of one shape and dtype (dst non-overlapping, the two
    disjoint): the shape family's write-slice copy (transpose kernel where the unit dims
    differ)."""
    if not src.numel:
        return
    from ..shape.layout import WriteSliceArgs

    _copy_plan(tuple(src.shape), src.dtype, arch).run(WriteSliceArgs(src, dst), stream=stream)


def tri_copy(src: TensorView, dst: TensorView, upper: bool, arch, stream: int) -> None:
    """``dst = triu(src)`` (``upper``) or ``tril(src)``: src any strides, dst dense."""
    if not src.numel:
        return
    from ..shape.pad import TriArgs

    _tri_plan(tuple(src.shape), src.dtype, bool(upper), arch).run(TriArgs(src, dst),
                                                                  stream=stream)


def fill(dst: TensorView, value, arch, stream: int) -> None:
    """``dst[...] = value`` (any non-overlapping strides)."""
    if not dst.numel:
        return
    from ..shape.layout import FillArgs

    _fill_plan(tuple(dst.shape), dst.dtype, value, arch).run(FillArgs(dst), stream=stream)


def conj_copy(src: TensorView, dst: TensorView, arch, stream: int) -> None:
    """``dst = conj(src)`` for complex dtypes (any strides; dst may alias src), a plain copy for
    real ones."""
    if not src.numel:
        return
    if not src.dtype.is_complex:
        copy_views(src, dst, arch, stream)
        return
    from ..elementwise.elementwise import ElementwiseArgs

    _conj_plan(tuple(src.shape), src.dtype, arch).run(ElementwiseArgs([src], [dst]),
                                                      stream=stream)


def zero_bytes(ptr: int, nbytes: int, stream: int) -> None:
    """cuMemsetD8Async(ptr, 0, nbytes)."""
    if nbytes:
        from ...runtime.memory import memset_d8

        memset_d8(ptr, 0, nbytes, stream)


def write_identity(ptr: int, batch, n: int, dt: DType, dev: int, arch, stream: int) -> None:
    """Dense identity matrices ``(*batch, n, n)`` at ``ptr`` (zeros, then ones on the diagonal;
    row- and column-major alike)."""
    count = prod(batch) * n * n
    if not count:
        return
    zero_bytes(ptr, count * dt.itemsize, stream)
    diag = TensorView(ptr, tuple(batch) + (n,), batch_strides(batch, n * n) + (n + 1,), dt, dev)
    fill(diag, 1, arch, stream)


# ---------------------------------------------------------------------------- base plan
def vendor_precision(dt: DType) -> PrecisionGuarantee:
    """A cuSOLVER routine's contract: math and accumulation in the dtype (its real type for
    complex data); not promised bit-stable nor scheduling-independent (the library picks
    blockings and streams internally)."""
    r = REAL_OF[dt]
    return PrecisionGuarantee(math_precision=r, accumulator=r, bit_stable_on_same_hardware=False,
                              deterministic=False)


class VendorPlanBase(Plan):
    """Base of the cuSOLVER-backed linalg plans.

    A subclass implements ``_check()`` (validate ``self.desc``; set ``self._batch``,
    ``self._op``, ``self._template`` and whatever else it needs), ``_slots(slots, sizes)``
    (declare its workspace slots; ``sizes`` is the vendor ``(device bytes, host bytes)`` or
    ``(0, 0)`` when nothing runs), ``_vendor_sizes(ordinal)`` (query the library; needs a GPU;
    called only for non-empty problems), ``_bind`` and ``_run(bound, stream, ws_ptr, ordinal)``.

    ``workspace_size()`` queries the library lazily (first call, cached per device); select
    never touches a GPU.  Runs are not recordable (a launch record only replays DSL launches).
    A problem whose batch is empty returns without launching; a batch of empty matrices only
    zeroes the ``info`` words (``_run_empty``)."""

    recordable = False
    _op = ""
    _template = ""

    def _plan(self) -> None:
        self._batch: Tuple[int, ...] = ()
        self._check()
        self._bcount = prod(self._batch)
        self._layouts: Dict[int, Tuple[Slots, Tuple[int, int]]] = {}
        self._host: Dict[int, np.ndarray] = {}
        self._sku = KernelSku(OpCategory.LINALG, self._op, self.desc.dtype, self._arch,
                              BackendKind.VENDOR, vendor_precision(self.desc.dtype),
                              aux_element=self._aux_element(), template=self._template,
                              knobs=self._knobs())

    # -- hooks ---------------------------------------------------------------------------
    def _check(self) -> None:
        raise NotImplementedError

    def _aux_element(self) -> Optional[DType]:
        return None

    #: plans with a batched and a per-matrix route set this in ``_check`` (None: one route)
    _batched: Optional[bool] = None

    def _knobs(self) -> tuple:
        """The sku's knobs: the route of two-route plans."""
        if self._batched is None:
            return ()
        return (("route", "batched" if self._batched else "per_matrix"),)

    def _matrix_empty(self) -> bool:
        """True when every matrix of the batch is empty (nothing for the library to do):
        ``desc.n == 0`` unless a plan says otherwise."""
        return self.desc.n == 0

    def getrf_sizes(self, ordinal: int, m: int, n: int) -> Tuple[int, int]:
        """(device, host) bytes of Xgetrf on an m × n column-major matrix ((0, 0) on the
        batched route, which needs no library workspace)."""
        if self._batched:
            return (0, 0)
        h, p = self.query_handle(ordinal)
        dt = vendor.data_type(self.desc.dtype)
        return vendor.call("cusolverDn", "xgetrf_buffer_size", h, p, m, n, dt, 0, max(1, m), dt)

    def _vendor_sizes(self, ordinal: int) -> Tuple[int, int]:
        raise NotImplementedError

    def _slots(self, s: Slots, sizes: Tuple[int, int]) -> None:
        raise NotImplementedError

    def _run(self, bound, stream: int, base: int, ordinal: int) -> None:
        raise NotImplementedError

    def _run_empty(self, bound, stream: int) -> None:
        """Batch of empty matrices: info words 0 (when the caller passed an info array)."""
        info = bound.get("info")
        if info is not None:
            zero_bytes(info.ptr, info.numel * 4, stream)

    # -- workspace ------------------------------------------------------------------------
    def _layout(self, ordinal: Optional[int] = None) -> Tuple[Slots, Tuple[int, int]]:
        if ordinal is None:
            from ...runtime.device import current_device_ordinal

            ordinal = current_device_ordinal()
        hit = self._layouts.get(ordinal)
        if hit is None:
            sizes = (0, 0)
            if self._bcount and not self._matrix_empty():
                sizes = tuple(int(x) for x in self._vendor_sizes(ordinal))
            s = Slots()
            s.add("info", 4 * max(self._bcount, 1))
            self._slots(s, sizes)
            hit = self._layouts[ordinal] = (s, sizes)
        return hit

    def workspace_size(self) -> int:
        """Bytes of device scratch ``run`` needs: the column-major copies, pivots / tau /
        factor buffers, one int32 info word per matrix and the library's own workspace (queried
        from cuSOLVER on first call, on the current device; 0 for an empty batch)."""
        if not self._bcount:
            return 0
        return self._layout()[0].total

    def is_empty(self) -> bool:
        return self._bcount == 0

    def host_buffer(self, ordinal: int, nbytes: int) -> int:
        """Address of this plan's host workspace for the library (numpy-owned; 0 if none).
        Shared by the plan's runs: do not run one plan concurrently from several threads."""
        if not nbytes:
            return 0
        buf = self._host.get(ordinal)
        if buf is None or buf.nbytes < nbytes:
            buf = self._host[ordinal] = np.empty(int(nbytes), np.uint8)
        return int(buf.ctypes.data)

    def _launch(self, bound, stream: int, ws) -> None:
        trace.refuse("vendor call")
        if self._matrix_empty():
            self._run_empty(bound, stream)
            return
        ordinal = bound["dev"]
        slots, _ = self._layout(ordinal)
        if ws.nbytes < slots.total:      # another device asked for more than the current one
            raise WorkspaceTooSmallError(slots.total, ws.nbytes)
        self._run(bound, stream, ws.ptr, ordinal)

    def info_ptrs(self, bound, slots: Slots, base: int) -> int:
        """Address of the info words (the caller's array, else the workspace slot)."""
        info = bound.get("info")
        return info.ptr if info is not None else slots.ptr(base, "info")

    def handle(self, ordinal: int, stream: int) -> Tuple[int, int]:
        """(cusolverDn handle bound to ``stream``, cusolverDnParams) for ``ordinal``."""
        return vendor.solver_handle(ordinal, stream), vendor.solver_params(ordinal)

    def query_handle(self, ordinal: int) -> Tuple[int, int]:
        """(handle, params) for a buffer-size query (bound to the default stream)."""
        return vendor.solver_handle(ordinal, 0), vendor.solver_params(ordinal)


def check_int32(what: str, **extents: int) -> None:
    """UnsupportedError when a typed (32-bit) cuSOLVER routine cannot take these extents."""
    for k, v in extents.items():
        if v > INT32_MAX:
            raise UnsupportedError(f"{what}: {k}={v} exceeds the 32-bit limit of the typed "
                                   f"cuSOLVER routine")


def input_view(obj, name: str, shape, dt: DType, dev: Optional[int] = None) -> TensorView:
    """An input operand: ``shape`` and dtype ``dt`` (any strides), on ``dev`` when given."""
    return view_arg(obj, name, shape=tuple(shape), dtype=dt, device=dev)


def views_of(**kw) -> List[Tuple[str, Optional[TensorView]]]:
    return list(kw.items())


def htod_async(ptr: int, host: np.ndarray, stream: int) -> None:
    """cuMemcpyHtoDAsync of the C-contiguous ``host`` array to ``ptr`` on ``stream`` (pageable
    source: the driver stages it before returning; the caller keeps ``host`` alive anyway)."""
    if not host.nbytes:
        return
    from cuda.bindings import driver

    from ...errors import DriverError

    (err,) = driver.cuMemcpyHtoDAsync(ptr, host.ctypes.data, host.nbytes, stream)
    if err:
        raise DriverError("cuMemcpyHtoDAsync", err)
