"""Unique values of a 1-D array without a host round trip: ``UniquePlan`` (sorted, like
``torch.unique(sorted=True)`` / the array API's ``unique_*``) and ``UniqueConsecutivePlan``
(collapse runs of equal neighbours, ``torch.unique_consecutive``).

Outputs are sized for the worst case (n unique values); the plan writes the number of unique
values K into the int64 device scalar ``count`` and the first K entries of

* ``values``  — the unique values (ascending for UniquePlan, run order for the consecutive one),
* ``indices`` — int64 index in x of each value's first occurrence (optional),
* ``inverse`` — int64, for every element of x the position of its value in ``values``
  (optional; ``values[inverse] == x``),
* ``counts``  — int64 occurrences (run lengths) of each value (optional).

Entries past K are unspecified.  Equality is ``==``: every NaN is its own value, -0.0 equals
+0.0 (the first occurrence's bits are kept).  dtypes: bool, every integer dtype, f32 f16 bf16
f64 (what SortPlan orders).  ``x`` is a 1-D view with any stride; outputs dense.

Pipeline (all on ``stream``, deterministic): stable SortPlan (values + permutation) → group-start
flags ``s[i] != s[i-1]`` (ElementwisePlan) → CompactPlan (K and the start positions) → GatherPlan
(values, first indices) → ``starts[K] = n`` (ScatterPlan of one element) and ``counts =
starts[j+1] − starts[j]`` (ElementwisePlan) → inclusive ScanPlan of the flags − 1, scattered
through the permutation (inverse).  Workspace: ``workspace_size()`` bytes (sorted copy,
permutation, flags, starts, group ids and the sub-plans' scratch).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...dtypes import DType, bool_ as bool_dt, int64
from ...errors import InvalidProblemError
from ...plan import align_up, check_dtype, view_arg
from ...tensor import TensorView
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace
from ..elementwise.elementwise import ElementwiseArgs, ElementwiseDescriptor, ElementwisePlan
from ..indexing.gather import GatherPlan, IndexCopyArgs, IndexCopyDescriptor, ScatterPlan
from ..reduction.composites import CompositePlan
from ..scan.compaction import CompactArgs, CompactDescriptor, CompactPlan
from ..scan.scan import ScanArgs, ScanDescriptor, ScanPlan
from .sort import SORT_DTYPES, SortArgs, SortDescriptor, SortPlan


@dataclass(frozen=True)
class UniqueDescriptor:
    """``n`` elements (1-D input) of ``dtype``; which optional outputs are produced."""

    n: int
    dtype: DType
    return_index: bool = False
    return_inverse: bool = False
    return_counts: bool = False

    def __post_init__(self):
        if not isinstance(self.n, int) or isinstance(self.n, bool) or self.n < 0:
            raise InvalidProblemError(f"Unique: n must be an int >= 0, got {self.n!r}")
        object.__setattr__(self, "dtype", check_dtype(self.dtype, SORT_DTYPES, "Unique"))
        for f in ("return_index", "return_inverse", "return_counts"):
            if not isinstance(getattr(self, f), bool):
                raise InvalidProblemError(f"Unique: {f} must be a bool")


@dataclass
class UniqueArgs:
    """x: (n,) any stride; values: (n,) dense; count: (1,) int64; indices / inverse / counts:
    (n,) dense int64, given exactly when the descriptor asks for them."""

    x: object
    values: object
    count: object
    indices: object = None
    inverse: object = None
    counts: object = None


def _sub(v: TensorView, start: int, stop: int) -> TensorView:
    s = v.strides[0]
    return TensorView._trusted(v.ptr + start * s * v.itemsize, (stop - start,), (s,), v.dtype,
                               v.device, None)


class UniquePlan(CompositePlan):
    """Sorted unique values (+ first indices, inverse, counts) of a 1-D array; see module doc."""

    descriptor = UniqueDescriptor
    _consecutive = False

    def _plan(self) -> None:
        desc, pref = self.desc, self.pref
        n, dt = desc.n, desc.dtype
        m = max(n, 1)
        self._sort = None if self._consecutive else SortPlan.select(
            SortDescriptor((m,), 0, dt), pref)
        self._ne = ElementwisePlan.select(ElementwiseDescriptor(
            "not_equal", ((max(n - 1, 1),), (max(n - 1, 1),)), dt, None, (), None), pref)
        self._compact = CompactPlan.select(CompactDescriptor((m,), bool_dt, "flat"), pref)
        self._gather_v = GatherPlan.select(IndexCopyDescriptor(m, m, dt), pref)
        self._gather_i = GatherPlan.select(IndexCopyDescriptor(m, m, int64), pref)
        self._scatter1 = ScatterPlan.select(IndexCopyDescriptor(1, m + 1, int64), pref)
        self._scatter_i = ScatterPlan.select(IndexCopyDescriptor(m, m, int64), pref)
        self._diff = ElementwisePlan.select(ElementwiseDescriptor(
            "subtract", ((m,), (m,)), int64, None, (), None), pref)
        self._dec = ElementwisePlan.select(ElementwiseDescriptor(
            "subtract", ((m,), None), int64, None, (), None), pref)
        self._scan = ScanPlan.select(ScanDescriptor((m,), 0, "cumsum", bool_dt), pref)
        # workspace: sorted copy, permutation, flags, starts, n, group ids, then the sub-plans'
        for name, nbytes in (("s", 0 if self._consecutive else m * dt.itemsize),
                             ("perm", 0 if self._consecutive else m * 8),
                             ("flags", m), ("starts", (m + 1) * 8), ("nval", 8),
                             ("group", m * 8)):
            self._slot(name, nbytes)
        sub = max(self._compact.workspace_size(), self._scan.workspace_size(),
                  0 if self._sort is None else self._sort.workspace_size())
        self._ws = self._off + align_up(sub)
        pg = PrecisionGuarantee(math_precision=dt, accumulator=int64)
        self._sku = KernelSku(OpCategory.SORT, "unique_consecutive" if self._consecutive else
                              "unique", dt, self._arch, BackendKind.CUTE_DSL, pg,
                              aux_element=int64, template="composite")

    def is_empty(self) -> bool:
        return False  # the count (0 for an empty x) is always written

    def _bind(self, args):
        d = self.desc
        x = view_arg(args.x, "x", shape=(d.n,), dtype=d.dtype)
        dev = x.device

        def out(obj, name, dt, want):
            v = view_arg(obj, name, shape=(d.n,), dtype=dt, device=dev, optional=True)
            if want and v is None:
                raise InvalidProblemError(f"{name} is required by this descriptor")
            if not want and v is not None:
                raise InvalidProblemError(f"{name} given to a plan selected without it")
            if v is not None and d.n > 1 and v.strides[0] != 1:
                raise InvalidProblemError(f"{name} must be dense (stride 1)")
            return v

        vals = out(args.values, "values", d.dtype, True)
        cnt = view_arg(args.count, "count", dtype=int64, device=dev)
        if cnt.numel != 1:
            raise InvalidProblemError(f"count must hold one int64, got shape {cnt.shape}")
        return (x, vals, cnt, out(args.indices, "indices", int64, d.return_index),
                out(args.inverse, "inverse", int64, d.return_inverse),
                out(args.counts, "counts", int64, d.return_counts))

    def _launch(self, bound, st: int, ws: Workspace) -> None:
        from ...runtime.memory import memset_d8

        x, vals, cnt, idx, inv, counts = bound
        n, dev = self.desc.n, x.device
        if n == 0:
            memset_d8(cnt.ptr, 0, 8, st)
            return

        def tmp(name, length, dt):
            return self._tmp(ws, name, (length,), dt, dev)

        sub = self._sub_ws(ws)
        if self._consecutive:
            s, perm = x, None
        else:
            s, perm = tmp("s", n, self.desc.dtype), tmp("perm", n, int64)
            self._sort.run(SortArgs(x, s, perm), st, sub)
        flags = tmp("flags", n, bool_dt)
        memset_d8(flags.ptr, 1, 1, st)
        if n > 1:
            self._ne.run(ElementwiseArgs([_sub(s, 1, n), _sub(s, 0, n - 1)], [_sub(flags, 1, n)]),
                         st)
        starts = tmp("starts", n + 1, int64)
        # the gathers below run over all n slots (the count stays on the device): zero the slots
        # past the count so they read index 0, never uninitialised workspace
        memset_d8(starts.ptr, 0, (n + 1) * 8, st)
        self._compact.run_count(CompactArgs(flags, cnt), st, sub)
        self._compact.run_scatter(CompactArgs(flags, cnt, _sub(starts, 0, n)), st, sub)
        self._gather_v.run(IndexCopyArgs(s, _sub(starts, 0, n), vals), st)
        if idx is not None:
            if perm is None:  # the run starts themselves (starts − 0)
                self._dec.run(ElementwiseArgs([_sub(starts, 0, n), 0], [idx]), st)
            else:
                self._gather_i.run(IndexCopyArgs(perm, _sub(starts, 0, n), idx), st)
        if counts is not None:
            from ...runtime.memory import memset

            nval = tmp("nval", 1, int64)  # n as an int64: two 32-bit word memsets
            for half, word in ((0, n & 0xFFFFFFFF), (4, n >> 32)):
                memset(4, nval.ptr + half, word, 1, st)
            k = TensorView._trusted(cnt.ptr, (1,), (1,), int64, dev, None)
            self._scatter1.run(IndexCopyArgs(nval, k, starts), st)
            self._diff.run(ElementwiseArgs([_sub(starts, 1, n + 1), _sub(starts, 0, n)],
                                           [counts]), st)
        if inv is not None:
            group = tmp("group", n, int64)
            self._scan.run(ScanArgs(flags, group), st, sub)
            if perm is None:
                self._dec.run(ElementwiseArgs([group, 1], [inv]), st)
            else:
                self._dec.run(ElementwiseArgs([group, 1], [group]), st)
                self._scatter_i.run(IndexCopyArgs(group, perm, inv), st)


class UniqueConsecutivePlan(UniquePlan):
    """Unique values of consecutive runs (no sort): values in run order, ``indices`` the run
    starts, ``inverse`` the run number of every element, ``counts`` the run lengths."""

    _consecutive = True
