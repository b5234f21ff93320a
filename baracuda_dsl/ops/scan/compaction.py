"""Stream compaction: the positions of the non-zero elements of a mask (``nonzero``).

``CompactPlan`` over a mask of ``shape`` (rank ≤ 8, any strides, any dtype but complex128;
non-zero test ``x != 0``: -0.0 is zero, NaN is non-zero, complex is non-zero when either part
is) produces

* the count of non-zero elements as an int64 device scalar (``run_count``), and
* their int64 positions in row-major order (``run_scatter``): ``mode="flat"`` → flat row-major
  indices, shape ``(count,)``; ``mode="coords"`` → coordinates, shape ``(ndim, count)`` (the
  standard's ``nonzero`` is the rows of it).  Output views may have any strides; entries beyond
  the output's extent are dropped (so a short buffer never overflows).

The size is data-dependent: call ``run_count``, read the count (a device → host sync, the
caller's), allocate the output, call ``run_scatter`` with the same workspace (it keeps the
per-tile offsets).  ``run`` does both when ``args.out`` is given.

Kernels: ``compact`` phase 0 (per-tile counts of 4096 elements), the scan plan (exclusive
cumsum of the counts → tile offsets and the total), ``compact`` phase 2 (total → count) and
phase 1 (each tile re-tests its elements and writes positions at its offset plus the CTA
exclusive prefix).  A strided mask is first gathered dense into the workspace.  Integer counts,
fixed order: deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from ...dtypes import ALL_DTYPES, DType, int32, int64
from ...errors import InvalidProblemError
from ...jit import freeze_knobs
from ...plan import Plan, align_up, check_dtype, check_writable_no_overlap, prod, view_arg
from ...runtime.stream import stream_handle
from ...tensor import TensorView, check_shape, contiguous_strides
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace
from .scan import ScanArgs, ScanDescriptor, ScanPlan
from .specs import scan as spec
from .specs.scan import CompactKnobs

MASK_DTYPES = tuple(d for d in ALL_DTYPES if d.itemsize in spec.COMPACT_ISZ)
MODES = ("flat", "coords")


def zero_mask(dt: DType) -> int:
    """Bits of a ``dt`` word that decide "non-zero" (float sign bits dropped), as a signed
    64-bit value for the kernel's Int64 parameter."""
    bits = 8 * dt.itemsize
    m = (1 << bits) - 1
    if dt.is_floating:
        m &= ~(1 << (bits - 1))
    elif dt.is_complex:  # complex64: two f32 parts
        m = 0x7FFFFFFF7FFFFFFF
    return m - (1 << 64) if m >= 1 << 63 else m


@dataclass(frozen=True)
class CompactDescriptor:
    """Mask ``shape`` (rank ≤ 8) and ``dtype``; ``mode`` "flat" (flat indices) or "coords"
    (coordinates, shape (ndim, count); needs ndim ≥ 1)."""

    shape: Tuple[int, ...]
    dtype: DType = ALL_DTYPES[0]
    mode: str = "coords"

    def __post_init__(self):
        object.__setattr__(self, "shape", check_shape(self.shape, "Compact: mask"))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, MASK_DTYPES, "Compact"))
        if self.mode not in MODES:
            raise InvalidProblemError(f"Compact: mode must be one of {MODES}, got {self.mode!r}")
        if self.mode == "coords" and not self.shape:
            raise InvalidProblemError("Compact: coordinates of a 0-d mask are undefined (use "
                                      "mode='flat')")


@dataclass
class CompactArgs:
    """mask: any strides; count: int64 device scalar (1 element) receiving the count; out:
    int64 positions ((count,) flat / (ndim, count) coords), optional for ``run``."""

    mask: object
    count: object
    out: object = None


class CompactPlan(Plan):
    """Stream compaction (see module doc).  Workspace: the dense mask copy (strided masks), tile
    counts and offsets, and the offsets scan's workspace."""

    descriptor = CompactDescriptor

    def _plan(self) -> None:
        desc = self.desc
        self._knobs = CompactKnobs(desc.dtype.itemsize)
        self._sku = KernelSku(OpCategory.SCAN, "compact", desc.dtype, self._arch,
                              BackendKind.CUTE_DSL, PrecisionGuarantee(int64, int64, True, True),
                              aux_element=int64, template=spec.COMPACT.name,
                              knobs=freeze_knobs(self._knobs))
        self._n = n = prod(desc.shape)
        self._ntiles = nt = -(-n // spec.COMPACT_TILE)
        self._scan = ScanPlan.select(ScanDescriptor((nt,), 0, "cumsum", int32, exclusive=True),
                                     self.pref)
        isz = desc.dtype.itemsize
        self._o_mask = 0
        self._o_counts = align_up(n * isz)
        self._o_offs = self._o_counts + align_up((nt + 1) * 4)
        self._o_scan = self._o_offs + align_up((nt + 1) * 8)
        self._ws = self._o_scan + self._scan.workspace_size()

    def workspace_size(self) -> int:
        return self._ws

    def is_empty(self) -> bool:
        return False  # the count (0) is always written

    def _mask(self, args) -> TensorView:
        d = self.desc
        m = view_arg(args.mask, "mask", dtype=d.dtype)
        if tuple(m.shape) != d.shape:
            raise InvalidProblemError(f"mask: shape {m.shape} != expected {d.shape}")
        return m

    def _count(self, args, dev) -> TensorView:
        c = view_arg(args.count, "count", dtype=int64, device=dev)
        if c.numel != 1:
            raise InvalidProblemError(f"count: must hold exactly one int64, got shape {c.shape}")
        return c

    def _out(self, args, dev):
        d = self.desc
        o = view_arg(args.out, "out", dtype=int64, device=dev)
        if d.mode == "flat":
            if o.ndim != 1:
                raise InvalidProblemError(f"out: flat mode needs shape (count,), got {o.shape}")
            return o, 0, o.shape[0], o.strides[0]
        nd = len(d.shape)
        if o.ndim != 2 or o.shape[0] != nd:
            raise InvalidProblemError(f"out: coords mode needs shape ({nd}, count), got {o.shape}")
        return o, o.strides[0], o.shape[1], o.strides[1]

    def _bind(self, args):
        """(mask, count, (out, coordinate stride, capacity, entry stride) or None)."""
        m = self._mask(args)
        cnt = self._count(args, m.device)
        out = None
        if args.out is not None:
            out = self._out(args, m.device)
            check_writable_no_overlap(out[0], "out")
        return m, cnt, out

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        """The count, then the positions when ``args.out`` was given."""
        m, cnt, out = bound
        self._count_into(m, cnt, stream, ws)
        if out is not None:
            self._scatter_into(m, out, stream, ws)

    def _lk(self, dev):
        return self._kernel(spec.COMPACT, self._knobs, dev)

    def _launch_phase(self, lk, dev_ptrs, phase, n, out=(0, 0, 0, 0, 0), stream=0):
        mask, counts, offs, outp, cnt = dev_ptrs
        ndim, cap, sd, sk = out[1:]
        shape8 = (1,) * (8 - len(self.desc.shape)) + tuple(self.desc.shape)
        grid = (n // spec.COMPACT_TILE + 1, 1, 1)
        lk.launch(grid, [mask, counts, offs, outp, cnt, n, zero_mask(self.desc.dtype), phase,
                         ndim, cap, sd, sk, *shape8], stream)

    def run_count(self, args, stream=None, workspace=None) -> None:
        """Count the non-zero elements into ``args.count`` (and keep the tile offsets in the
        workspace for :meth:`run_scatter`)."""
        m = self._mask(args)
        cnt = self._count(args, m.device)
        self._count_into(m, cnt, stream_handle(stream), self.check_workspace(workspace))

    def run_scatter(self, args, stream=None, workspace=None) -> None:
        """Write the positions into ``args.out`` (after :meth:`run_count` with this workspace,
        on the same stream)."""
        m = self._mask(args)
        ws = self.check_workspace(workspace)
        if args.out is None:
            raise InvalidProblemError("run_scatter: out is required")
        out = self._out(args, m.device)
        check_writable_no_overlap(out[0], "out")
        self._scatter_into(m, out, stream_handle(stream), ws)

    def _count_into(self, m: TensorView, cnt: TensorView, st: int, ws: Workspace) -> None:
        from ..shape.repeat import StridedCopyArgs, StridedCopyDescriptor, StridedCopyPlan

        d = self.desc
        mptr = m.ptr
        if self._n and not m.is_contiguous():
            dense = TensorView._trusted(ws.ptr + self._o_mask, d.shape,
                                        contiguous_strides(d.shape), d.dtype, m.device, None)
            StridedCopyPlan.select(StridedCopyDescriptor(d.shape, d.dtype), self.pref).run(
                StridedCopyArgs(m, dense), stream=st)
            mptr = dense.ptr
        lk = self._lk(m.device)
        counts, offs = ws.ptr + self._o_counts, ws.ptr + self._o_offs
        ptrs = (mptr, counts, offs, offs, cnt.ptr)
        self._launch_phase(lk, ptrs, 0, self._n, stream=st)
        nt = self._ntiles
        cv = TensorView._trusted(counts, (nt,), (1,), int32, m.device, None)
        ov = TensorView._trusted(offs, (nt + 1,), (1,), int64, m.device, None)
        sws = self._scan.workspace_size()
        self._scan.run(ScanArgs(cv, ov), stream=st,
                       workspace=Workspace(ws.ptr + self._o_scan, sws) if sws else None)
        self._launch_phase(lk, ptrs, 2, nt, stream=st)

    def _scatter_into(self, m: TensorView, out, st: int, ws: Workspace) -> None:
        o, sd, cap, sk = out
        if cap == 0 or self._n == 0:
            return
        mptr = m.ptr if m.is_contiguous() else ws.ptr + self._o_mask
        nd = 0 if self.desc.mode == "flat" else len(self.desc.shape)
        offs = ws.ptr + self._o_offs
        self._launch_phase(self._lk(m.device), (mptr, ws.ptr + self._o_counts, offs, o.ptr, o.ptr),
                           1, self._n, out=(0, nd, cap, sd, sk), stream=st)
