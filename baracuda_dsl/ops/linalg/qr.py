"""QR factorisation on cuSOLVER: ``cusolverDnXgeqrf`` (Householder) then the typed
``{s,d}orgqr`` / ``{c,z}ungqr`` to form Q; R is the upper triangle of the factored matrix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from ...dtypes import DType, float32
from ...errors import InvalidProblemError
from ...runtime import vendor
from .common import (INT32_MAX, TYPED_PREFIX, Slots, VendorPlanBase, check_disjoint_views,
                     check_int32, colmajor_view, copy_views, info_view, init_problem, input_view,
                     out_view, tri_copy, write_identity, zero_bytes)

QR_MODES = ("reduced", "complete", "r")


@dataclass(frozen=True)
class QRDescriptor:
    """A = Q·R for a batch of ``m × n`` matrices, k = min(m, n); ``mode`` "reduced" (Q m×k,
    R k×n), "complete" (Q m×m, R m×n) or "r" (R k×n only); dtypes f32, f64, c64, c128."""

    batch: Tuple[int, ...]
    m: int
    n: int
    dtype: DType = float32
    mode: str = "reduced"

    def __post_init__(self):
        init_problem(self, "QR", ("m", "n"))
        if self.mode not in QR_MODES:
            raise InvalidProblemError(f"QR: mode {self.mode!r} is not one of "
                                      f"{', '.join(QR_MODES)}")

    @property
    def q_shape(self):
        """Q's shape, or None for mode "r"."""
        k = min(self.m, self.n)
        if self.mode == "r":
            return None
        return self.batch + (self.m, self.m if self.mode == "complete" else k)

    @property
    def r_shape(self):
        k = min(self.m, self.n)
        return self.batch + (self.m if self.mode == "complete" else k, self.n)


@dataclass
class QRArgs:
    """a: (*batch, m, n) any strides; q: (*batch, m, k) ("reduced") / (*batch, m, m)
    ("complete"), None for mode "r"; r: (*batch, k, n) / (*batch, m, n), upper triangular with
    ZEROS below; outputs C-contiguous; info: optional int32 (batch), 0 on success (geqrf has no
    numerical failure)."""

    a: object
    q: object
    r: object
    info: object = None


class QRPlan(VendorPlanBase):
    """Householder QR: ``cusolverDnXgeqrf`` per matrix on a column-major copy (extra columns
    up to m for mode "complete"), R = triu of the factored matrix, Q from
    ``{s,d}orgqr`` / ``{c,z}ungqr`` in place.  Q has orthonormal columns (QᴴQ = I); R's
    diagonal may be negative / complex (LAPACK convention, like numpy).  Workspace: the copy
    (batch·m·max(n, q columns) elements), tau (batch·k), info words, the larger library
    buffer.  Math in the dtype."""

    descriptor = QRDescriptor
    _op = "qr"

    def _check(self) -> None:
        d = self.desc
        self._batch = d.batch
        self._k = min(d.m, d.n)
        self._qcols = 0 if d.mode == "r" else (d.m if d.mode == "complete" else self._k)
        self._wcols = max(d.n, self._qcols)
        t = "ungqr" if d.dtype.is_complex else "orgqr"
        self._orgqr = f"{TYPED_PREFIX[d.dtype]}{t}"
        self._template = "cusolverDn.Xgeqrf" + ("" if d.mode == "r" else f"+{t}")
        if self._qcols:
            check_int32("QR", m=d.m, q_columns=self._qcols, lda_times_columns=d.m * self._wcols)

    def _knobs(self) -> tuple:
        return (("mode", self.desc.mode),)

    def _matrix_empty(self) -> bool:
        return self._k == 0

    def _vendor_sizes(self, ordinal: int):
        d = self.desc
        h, p = self.query_handle(ordinal)
        cdt = vendor.data_type(d.dtype)
        lda = max(1, d.m)
        dev, host = vendor.call("cusolverDn", "xgeqrf_buffer_size", h, p, d.m, d.n, cdt, 0, lda,
                                cdt, 0, cdt)
        if self._qcols:
            lwork = vendor.call("cusolverDn", f"{self._orgqr}_buffer_size", h, d.m, self._qcols,
                                self._k, 0, lda, 0)
            dev = max(int(dev), int(lwork) * d.dtype.itemsize)
        return dev, host

    def _slots(self, s: Slots, sizes) -> None:
        d = self.desc
        isz = d.dtype.itemsize
        s.add("a", self._bcount * d.m * self._wcols * isz)
        s.add("tau", self._bcount * self._k * isz)
        s.add("info2", 4)
        s.add("work", sizes[0])

    def _bind(self, args):
        d = self.desc
        a = input_view(args.a, "a", d.batch + (d.m, d.n), d.dtype)
        if d.mode == "r":
            if args.q is not None:
                raise InvalidProblemError("QR: mode 'r' computes no Q; pass q=None")
            q = None
        else:
            q = out_view(args.q, "q", d.q_shape, d.dtype, a.device, "QR")
        r = out_view(args.r, "r", d.r_shape, d.dtype, a.device, "QR")
        info = info_view(args.info, d.batch, a.device, "QR")
        check_disjoint_views([("a", a), ("q", q), ("r", r), ("info", info)], "QR")
        return {"dev": a.device, "a": a, "q": q, "r": r, "info": info}

    def _run_empty(self, bound, stream: int) -> None:
        super()._run_empty(bound, stream)
        d = self.desc
        if d.mode == "complete" and d.m and bound["q"] is not None:   # A is m×0: Q = I
            write_identity(bound["q"].ptr, d.batch, d.m, d.dtype, bound["dev"], self._arch,
                           stream)

    def _run(self, bound, stream: int, base: int, ordinal: int) -> None:
        d = self.desc
        m, n, k, dt, isz = d.m, d.n, self._k, d.dtype, d.dtype.itemsize
        slots, sizes = self._layout(ordinal)
        aptr, tau = slots.ptr(base, "a"), slots.ptr(base, "tau")
        info = self.info_ptrs(bound, slots, base)
        info2, work = slots.ptr(base, "info2"), slots.ptr(base, "work")
        per = m * self._wcols
        if self._wcols > n:     # "complete" with m > n: the extra columns start defined (zero)
            zero_bytes(aptr, self._bcount * per * isz, stream)
        copy_views(bound["a"], colmajor_view(aptr, d.batch, m, n, m, per, dt, ordinal),
                   self._arch, stream)
        h, p = self.handle(ordinal, stream)
        cdt = vendor.data_type(dt)
        hptr = self.host_buffer(ordinal, sizes[1])
        for b in range(self._bcount):
            vendor.call("cusolverDn", "xgeqrf", h, p, m, n, cdt, aptr + b * per * isz, m, cdt,
                        tau + b * k * isz, cdt, work, sizes[0], hptr, sizes[1], info + 4 * b)
        r_rows = d.r_shape[-2]
        tri_copy(colmajor_view(aptr, d.batch, r_rows, n, m, per, dt, ordinal), bound["r"], True,
                 self._arch, stream)
        if not self._qcols:
            return
        lwork = min(sizes[0] // isz, INT32_MAX)
        for b in range(self._bcount):
            vendor.call("cusolverDn", self._orgqr, h, m, self._qcols, k, aptr + b * per * isz, m,
                        tau + b * k * isz, work, lwork, info2)
        copy_views(colmajor_view(aptr, d.batch, m, self._qcols, m, per, dt, ordinal), bound["q"],
                   self._arch, stream)
