"""Histogram extensions (numpy / torch, not in the standard): ``bincount`` (numpy/torch),
``histogram`` (numpy) and ``histc`` (torch), dispatching to BincountPlan / HistogramPlan.

Sizes that depend on the data (``max(x) + 1`` bins, the data range of ``histogram`` /
``histc`` when none is given) are read back from a device reduction — one synchronising read.
Counts are int64; weighted results are float64 (numpy) or the weights' dtype (torch's ``histc``
has no weights).  Strided inputs are made dense first only when they are not 1-D views.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from baracuda_dsl.errors import InvalidProblemError, UnsupportedError
from baracuda_dsl.ops.histogram.histogram import (BincountDescriptor, BincountPlan, CountArgs,
                                                  HistogramDescriptor, HistogramPlan)

from . import _dispatch
from . import _dtypes as _dt
from . import _plans
from ._array_object import Array, tensor_view
from ._creation_functions import asarray
from ._elementwise_functions import divide
from ._manipulation_functions import flatten
from ._statistical_functions import max as amax, min as amin, sum as asum

__all__ = ["bincount", "histogram", "histc"]


def _weights(w, n: int):
    if w is None:
        return None
    w = flatten(w, "weights")
    if w.size != n:
        raise InvalidProblemError(f"weights has {w.size} elements, x has {n}")
    if w.dtype not in (_dt.float32, _dt.float16, _dt.bfloat16, _dt.float64):
        w = _dispatch.cast(w, _dt.float64)
    return w


def _scalar(a: Array) -> float:
    return a.to_numpy().reshape(()).item()


def bincount(x: Array, /, weights: Array = None, minlength: int = 0) -> Array:
    """Occurrences of each value 0..max(x) of a 1-D non-negative integer array (at least
    ``minlength`` bins): int64 counts, or float64 weight sums (numpy) when ``weights`` is given.
    Negative values raise ValueError."""
    if not isinstance(x, Array):
        raise TypeError(f"x must be an array_api Array, got {type(x).__name__}")
    if x.ndim != 1:
        raise ValueError(f"bincount: x must be 1-D, got shape {x.shape}")
    if not _dt.isdtype(x.dtype, "integral"):
        if x.dtype == _dt.bool:
            x = _dispatch.cast(x, _dt.uint8)
        else:
            raise UnsupportedError(f"bincount of {x.dtype}: integer inputs only")
    if int(minlength) < 0:
        raise ValueError("bincount: minlength must be non-negative")
    n = x.size
    top = -1
    if n:
        if _dt.isdtype(x.dtype, "signed integer") and _scalar(amin(x)) < 0:
            raise ValueError("bincount: x must not contain negative values")
        top = int(_scalar(amax(x)))
    bins = builtins.max(top + 1, int(minlength))
    w = _weights(weights, n)
    desc = BincountDescriptor(n, bins, x.dtype, None if w is None else w.dtype)
    out = Array._empty((bins,), desc.out_dtype, x.device)
    _plans.select(BincountPlan, desc).run(CountArgs(tensor_view(x), tensor_view(out),
                                                    None if w is None else tensor_view(w)))
    if w is not None and out.dtype != _dt.float64:
        out = _dispatch.cast(out, _dt.float64)
    return out


def _data_range(x: Array):
    if x.size == 0:
        return 0.0, 1.0
    return float(_scalar(amin(x))), float(_scalar(amax(x)))


def histogram(x: Array, /, bins=10, range=None, weights: Array = None,  # noqa: A002
              density: bool = False):
    """numpy.histogram of the flattened ``x``: ``bins`` equal-width bins over ``range`` (default
    the data's [min, max]) or an increasing 1-D edge array; returns (hist, bin_edges) with
    bin_edges float64.  hist: int64 counts, float64 weight sums, or a float64 density."""
    flat = flatten(x)
    if flat.dtype in (_dt.complex64, _dt.complex128, _dt.bool):
        raise UnsupportedError(f"histogram of {flat.dtype}: real numeric inputs only")
    if isinstance(bins, Array) or not isinstance(bins, (int, np.integer)):
        edges = np.asarray(bins.to_numpy() if isinstance(bins, Array) else bins, np.float64)
        if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) < 0):
            raise ValueError("histogram: bins must be an int or a 1-D increasing edge array")
    else:
        nb = int(bins)
        if nb < 1:
            raise ValueError("histogram: bins must be positive")
        lo, hi = (_data_range(flat) if range is None else (float(range[0]), float(range[1])))
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ValueError(f"histogram: range [{lo}, {hi}] is not finite")
        if lo > hi:
            raise ValueError("histogram: max must be larger than min in range")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = np.linspace(lo, hi, nb + 1)
    e = asarray(edges, dtype=_dt.float64, device=flat.device)
    w = _weights(weights, flat.size)
    desc = HistogramDescriptor(flat.size, edges.size - 1, flat.dtype, "edges",
                               weights=None if w is None else w.dtype)
    out = Array._empty((desc.bins,), desc.out_dtype, flat.device)
    _plans.select(HistogramPlan, desc).run(CountArgs(tensor_view(flat), tensor_view(out),
                                                     None if w is None else tensor_view(w),
                                                     tensor_view(e)))
    if w is not None or density:
        out = _dispatch.cast(out, _dt.float64)
    if density:
        widths = asarray(np.diff(edges), dtype=_dt.float64, device=flat.device)
        out = divide(divide(out, widths), asum(out))
    return out, e


def histc(x: Array, /, bins: int = 100, min: float = 0.0, max: float = 0.0) -> Array:  # noqa: A002
    """torch.histc: ``bins`` equal bins over [min, max] (both 0 → the data's range); values
    outside are ignored.  Float inputs; the result has x's dtype (counts as floats)."""
    flat = flatten(x)
    if not _dt.isdtype(flat.dtype, "real floating"):
        raise UnsupportedError(f"histc of {flat.dtype}: real floating inputs only")
    if int(bins) < 1:
        raise ValueError("histc: bins must be positive")
    lo, hi = float(min), float(max)
    if lo == 0.0 and hi == 0.0:
        lo, hi = _data_range(flat)
    if lo > hi:
        raise ValueError("histc: max must be larger than min")
    if lo == hi:
        lo, hi = lo - 1.0, hi + 1.0
    desc = HistogramDescriptor(flat.size, int(bins), flat.dtype, "uniform", lo, hi)
    out = Array._empty((desc.bins,), _dt.int64, flat.device)
    _plans.select(HistogramPlan, desc).run(CountArgs(tensor_view(flat), tensor_view(out)))
    return _dispatch.cast(out, flat.dtype)
