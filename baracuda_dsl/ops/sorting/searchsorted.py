"""searchsorted: insertion indices of queries into sorted boundaries (numpy / torch semantics).

``out[q] = #{ i : b[row, i] < v }`` (side ``left``) or ``#{ i : b[row, i] <= v }`` (``right``)
for each query value ``v``, where the order is numpy's: NaN sorts last, -0.0 == +0.0.
Boundaries: 1-D (``n``; queries of any shape, rank ≤ 8) or batched ``(B..., n)`` with
queries ``(B..., m)`` (torch.searchsorted).  Optional ``sorter`` (int64, the boundaries'
shape): ``b[row, sorter[row, i]]`` is the sorted sequence.  One thread per query, a
branch-free binary search of ``bit_length(n)`` steps.  Output dense int64 (or int32).
dtypes: bool, int8..int64, uint8..uint64, f16, bf16, f32, f64.  Operands may have any
strides; batched boundaries (and sorter) whose batch dims do not collapse to one stride are
first copied into the workspace (workspace_size()).  Exact and deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from ...dtypes import DType, float32, int32, int64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, align_up, check_dtype, collapse_dims, prod, view_arg
from ...tensor import TensorView, check_shape, contiguous_strides
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace
from .sort import SORT_DTYPES
from .specs import sort as spec
from .specs.sort import SearchsortedKnobs


@dataclass(frozen=True)
class SearchsortedDescriptor:
    """``boundaries_shape`` (rank ≥ 1), ``queries_shape``, element ``dtype`` of both, ``side``
    ('left' / 'right'), ``out_dtype`` (int64 / int32), ``has_sorter``."""

    boundaries_shape: Tuple[int, ...]
    queries_shape: Tuple[int, ...]
    dtype: DType = float32
    side: str = "left"
    out_dtype: DType = int64
    has_sorter: bool = False

    def __post_init__(self):
        object.__setattr__(self, "boundaries_shape", tuple(self.boundaries_shape))
        object.__setattr__(self, "queries_shape", tuple(self.queries_shape))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, SORT_DTYPES, "Searchsorted"))
        object.__setattr__(self, "out_dtype", check_dtype(self.out_dtype, (int64, int32),
                                                          "Searchsorted out"))


@dataclass
class SearchsortedArgs:
    """boundaries, queries: any strides; out: dense, queries' shape, out_dtype; sorter: int64,
    boundaries' shape (when has_sorter)."""

    boundaries: object
    queries: object
    out: object
    sorter: object = None


def _rows_form(shape, strides):
    """(row stride, col stride) of a (B..., n) view whose batch dims collapse to one, else None."""
    lead, lead_st = shape[:-1], strides[:-1]
    cs = collapse_dims(lead, lead_st)
    if len(cs[0]) > 1:
        return None
    row = cs[1][0] if cs[0] else 0
    return row, strides[-1]


class SearchsortedPlan(Plan):
    """out = searchsorted(boundaries, queries, side, sorter) (numpy order: NaN last)."""

    descriptor = SearchsortedDescriptor

    def _plan(self) -> None:
        desc = self.desc
        b = check_shape(desc.boundaries_shape, "Searchsorted: boundaries")
        q = check_shape(desc.queries_shape, "Searchsorted: queries")
        if not b:
            raise InvalidProblemError("Searchsorted: boundaries must have rank >= 1")
        if desc.side not in ("left", "right"):
            raise InvalidProblemError(f"Searchsorted: side must be 'left' or 'right', got "
                                      f"{desc.side!r}")
        if not isinstance(desc.has_sorter, bool):
            raise InvalidProblemError("Searchsorted: has_sorter must be a bool")
        if len(b) > 1 and (len(q) != len(b) or q[:-1] != b[:-1]):
            raise InvalidProblemError(f"Searchsorted: batched boundaries {b} need queries with "
                                      f"the same leading dims, got {q}")
        self._b, self._q = b, q
        self._n = b[-1]
        self._rows = prod(b[:-1])
        self._total = prod(q)
        self._m = q[-1] if len(b) > 1 else max(self._total, 1)
        if self._n >= 2**62:
            raise UnsupportedError("Searchsorted: boundaries too long")
        self._knobs = SearchsortedKnobs(desc.dtype.short, desc.out_dtype.short)
        self._copy_b = len(b) > 2
        nb = prod(b)
        self._ws_b = align_up(nb * desc.dtype.itemsize) if self._copy_b else 0
        self._ws = self._ws_b + (nb * 8 if (self._copy_b and desc.has_sorter) else 0)
        prec = PrecisionGuarantee(math_precision=desc.dtype, accumulator=desc.out_dtype,
                                  bit_stable_on_same_hardware=True, deterministic=True)
        self._sku = KernelSku(OpCategory.INDEXING, "searchsorted", desc.dtype, self._arch,
                              BackendKind.CUTE_DSL, prec, aux_element=desc.out_dtype,
                              template=spec.SEARCHSORTED.name, knobs=freeze_knobs(self._knobs))

    def workspace_size(self) -> int:
        """0, or — for boundaries of rank ≥ 3 — room to densify boundaries (and sorter) when
        their batch dims do not collapse to one stride."""
        return self._ws

    def is_empty(self) -> bool:
        return self._total == 0

    def _bind(self, args):
        d = self.desc
        b = view_arg(args.boundaries, "boundaries", shape=self._b, dtype=d.dtype)
        q = view_arg(args.queries, "queries", shape=self._q, dtype=d.dtype, device=b.device)
        out = view_arg(args.out, "out", shape=self._q, dtype=d.out_dtype, device=b.device)
        if out.numel and not out.is_contiguous():
            raise UnsupportedError(f"out: must be dense row-major (got strides {out.strides})")
        srt = None
        if d.has_sorter:
            srt = view_arg(args.sorter, "sorter", shape=self._b, dtype=int64, device=b.device)
        elif args.sorter is not None:
            raise InvalidProblemError("Searchsorted: sorter given but has_sorter=False")
        return b, q, out, srt

    def _dense(self, v: TensorView, ptr: int, stream: int):
        """Copy ``v`` into the dense buffer at ``ptr``; returns a (row, col) stride form."""
        from ..shape.repeat import StridedCopyArgs, strided_copy_plan

        dst = TensorView(ptr, tuple(v.shape), contiguous_strides(v.shape), v.dtype, v.device)
        strided_copy_plan(tuple(v.shape), v.dtype).run(StridedCopyArgs(v, dst), stream=stream)
        return self._b[-1], 1

    def _launch(self, bound, s: int, ws: Workspace) -> None:
        b, q, out, srt = bound
        bptr, sptr = b.ptr, (srt.ptr if srt is not None else 0)
        bform = _rows_form(self._b, tuple(b.strides))
        if bform is None:
            bform = self._dense(b, ws.ptr, s)
            bptr = ws.ptr
        sform = (0, 0)
        if srt is not None:
            sform = _rows_form(self._b, tuple(srt.strides))
            if sform is None:
                sform = self._dense(srt, ws.ptr + self._ws_b, s)
                sptr = ws.ptr + self._ws_b
        qshape = self._q or (1,)
        qstr = tuple(q.strides) if self._q else (0,)
        pad = 8 - len(qshape)
        qe = (1,) * pad + tuple(qshape)
        qs = (0,) * pad + tuple(qstr)
        t = spec.ELEM_THREADS
        right = int(self.desc.side == "right")
        lk = self._kernel(spec.SEARCHSORTED, self._knobs, b.device)
        lk.launch((-(-self._total // t), 1, 1),
                  [bptr, q.ptr, sptr, out.ptr, self._n, self._m, self._total,
                   int(self._n).bit_length(), right, int(srt is not None), bform[0], bform[1],
                   sform[0], sform[1], *qe, *qs], s)
