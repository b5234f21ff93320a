"""Counting plans: ``BincountPlan`` (torch.bincount / numpy.bincount) and ``HistogramPlan``
(numpy.histogram over explicit edges, torch.histc over equal bins).

``BincountPlan``: ``out[v] = Σ_{i: x[i] = v} w[i]`` (or the count) for ``0 ≤ v < bins``; values
outside [0, bins) are not counted (the namespace sizes ``bins`` from ``max(x) + 1`` and rejects
negative values before the launch).  ``x``: a 1-D view of any integer dtype, any stride.
``HistogramPlan``: ``mode="edges"`` — ``bins + 1`` increasing float64 edges, bin i holds
``edges[i] ≤ v < edges[i+1]`` and the last bin also ``v == edges[bins]`` (numpy); ``mode="uniform"``
— ``bins`` equal bins over ``[lo, hi]`` (torch.histc: ``floor((v − lo)·bins/(hi − lo))``, ``v ==
hi`` in the last bin).  Values outside the range and NaN are not counted.  ``x``: 1-D, f32 f16
bf16 f64 or any integer dtype, any stride.

Outputs (dense, ``bins`` long): int64 counts, or weight sums — float32 for f32/f16/bf16 weights,
float64 for f64 weights.  Integer counts are exact and deterministic (integer atomics); float weight
sums use float atomics, so their rounding depends on the order (``PrecisionGuarantee
.deterministic`` is False for weighted plans).  Each CTA counts up to 4096 bins in shared memory
first.  No workspace.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from ...dtypes import DType, FP4, dtype as as_dtype, float32, float64, int64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, check_dtype, view_arg
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace
from .specs import histogram as spec
from .specs.histogram import HistogramKnobs

_INT = tuple(as_dtype(s) for s in spec.INT_VALUES)
_FLOAT = tuple(as_dtype(s) for s in spec.FLOAT_VALUES)
_MAX_BINS = 2**31 - 2


def _out_dtype(weights: Optional[DType]) -> DType:
    return int64 if weights is None else (float64 if weights is float64 else float32)


def _check_counts(n, bins, what):
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise InvalidProblemError(f"{what}: n must be an int >= 0, got {n!r}")
    if not isinstance(bins, int) or isinstance(bins, bool) or not 0 <= bins <= _MAX_BINS:
        raise InvalidProblemError(f"{what}: bins must be an int in [0, {_MAX_BINS}], got {bins!r}")


@dataclass(frozen=True)
class BincountDescriptor:
    """``n`` integer values (1-D) counted into ``bins`` bins; ``weights`` None or a float dtype."""

    n: int
    bins: int
    dtype: DType
    weights: Optional[DType] = None

    def __post_init__(self):
        _check_counts(self.n, self.bins, "Bincount")
        object.__setattr__(self, "dtype", check_dtype(self.dtype, _INT, "Bincount values"))
        if self.weights is not None:
            object.__setattr__(self, "weights", check_dtype(self.weights, FP4, "Bincount weights"))

    @property
    def out_dtype(self) -> DType:
        return _out_dtype(self.weights)


@dataclass(frozen=True)
class HistogramDescriptor:
    """``n`` values (1-D) into ``bins`` bins: ``mode="edges"`` (numpy.histogram; edges passed in
    the Args) or ``mode="uniform"`` over [lo, hi] (torch.histc); ``weights`` None or float."""

    n: int
    bins: int
    dtype: DType
    mode: str = "edges"
    lo: float = 0.0
    hi: float = 1.0
    weights: Optional[DType] = None

    def __post_init__(self):
        _check_counts(self.n, self.bins, "Histogram")
        object.__setattr__(self, "dtype", check_dtype(self.dtype, _FLOAT + _INT, "Histogram values"))
        if self.weights is not None:
            object.__setattr__(self, "weights", check_dtype(self.weights, FP4, "Histogram weights"))
        if self.mode not in ("edges", "uniform"):
            raise InvalidProblemError(f"Histogram: mode must be 'edges' or 'uniform', got {self.mode!r}")
        if self.mode == "uniform":
            lo, hi = float(self.lo), float(self.hi)
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise InvalidProblemError(f"Histogram: uniform range needs finite lo < hi, got "
                                          f"[{self.lo}, {self.hi}]")
        elif self.bins == 0:
            raise InvalidProblemError("Histogram: edges mode needs bins >= 1 (at least 2 edges)")

    @property
    def out_dtype(self) -> DType:
        return _out_dtype(self.weights)


@dataclass
class CountArgs:
    """x: 1-D values (any stride); out: dense ``bins`` output (zeroed by the plan); weights:
    optional 1-D, same length; edges: dense float64 ``bins + 1`` (HistogramPlan edges mode)."""

    x: object
    out: object
    weights: object = None
    edges: object = None


class _CountPlan(Plan):
    """The one counting launch behind BincountPlan and HistogramPlan; ``_range()`` gives the
    kernel's mode and the [lo, hi] range of uniform bins."""

    def _range(self):
        raise NotImplementedError

    def _plan(self) -> None:
        desc = self.desc
        mode, self._lo, self._hi = self._range()
        self._mode = mode
        self._knobs = HistogramKnobs(mode, desc.dtype.short,
                                     "none" if desc.weights is None else desc.weights.short)
        pg = PrecisionGuarantee(math_precision=float64 if mode != "bincount" else int64,
                                accumulator=desc.out_dtype,
                                bit_stable_on_same_hardware=desc.weights is None,
                                deterministic=desc.weights is None)
        self._sku = KernelSku(OpCategory.SORT, self._op, desc.dtype, self._arch,
                              BackendKind.CUTE_DSL, pg, aux_element=desc.weights,
                              template=spec.HISTOGRAM.name, knobs=freeze_knobs(self._knobs))

    def is_empty(self) -> bool:
        return self.desc.bins == 0

    def _bind(self, args):
        d = self.desc
        x = view_arg(args.x, "x", shape=(d.n,), dtype=d.dtype)
        out = view_arg(args.out, "out", shape=(d.bins,), dtype=d.out_dtype, device=x.device)
        if d.bins and out.strides[0] != 1:
            raise UnsupportedError("out must be dense (stride 1)")
        w = view_arg(args.weights, "weights", shape=(d.n,), dtype=d.weights, device=x.device,
                     optional=True)
        if (w is None) != (d.weights is None):
            raise InvalidProblemError("weights given to a plan selected without weights (or the "
                                      "reverse)")
        e = None
        if self._mode == "edges":
            e = view_arg(args.edges, "edges", shape=(d.bins + 1,), dtype=float64,
                         device=x.device)
            if e.strides[0] != 1:
                raise UnsupportedError("edges must be dense (stride 1)")
        return x, w, e, out

    def _launch(self, bound, s: int, ws: Workspace) -> None:
        from ...runtime.device import sm_count
        from ...runtime.memory import memset_d8

        x, w, e, out = bound
        d = self.desc
        memset_d8(out.ptr, 0, d.bins * out.itemsize, s)
        if d.n == 0:
            return
        lo, hi = self._lo, self._hi
        scale = d.bins / (hi - lo)
        nsteps = max(d.bins, 1).bit_length()
        per = spec.THREADS
        grid = max(1, min((d.n + per - 1) // per, 8 * sm_count(x.device)))
        lk = self._kernel(spec.HISTOGRAM, self._knobs, x.device)
        lk.launch((grid, 1, 1), [x.ptr, w.ptr if w is not None else x.ptr,
                                 e.ptr if e is not None else x.ptr, out.ptr, d.n, x.strides[0],
                                 w.strides[0] if w is not None else 0, d.bins, nsteps, lo, hi,
                                 scale, 1 if d.bins <= spec.SMEM_BINS else 0], s)


class BincountPlan(_CountPlan):
    """Counts (int64) or weight sums of non-negative integer values per value; see the module
    docstring.  Exact and deterministic without weights; float atomics with weights."""

    descriptor = BincountDescriptor
    _op = "bincount"

    def _range(self):
        return "bincount", 0.0, 1.0


class HistogramPlan(_CountPlan):
    """Histogram counts (int64) or weight sums over explicit float64 edges (numpy) or equal bins
    over [lo, hi] (torch.histc); see the module docstring."""

    descriptor = HistogramDescriptor
    _op = "histogram"

    def _range(self):
        d = self.desc
        return d.mode, float(d.lo), float(d.hi)
