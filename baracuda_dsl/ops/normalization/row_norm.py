"""Row normalisation plans: RMSNorm and LayerNorm, forward and backward.

The normalised axes are a suffix of the shape (PyTorch ``normalized_shape``): ``normalized_ndim``
trailing dims form rows of ``N`` elements that must be dense (unit stride, row-major); the
leading dims may have any strides as long as they collapse to at most three strided groups
(any slice, transpose or broadcast of batch dims does).  dtypes f32, f16, bf16, f64; weight and
bias have the row's shape and the input dtype; saved statistics (``mean``, ``rstd``) are dense
with one value per row, in f32 (f64 for f64 inputs).  Half types compute in f32.

Kernel choice (:func:`primary_knobs`, the row engine of ``specs/row_norm.py``): rows up to 32768
elements (16384 for f64; backward 8192 / 4096) use the register-resident SKU of the smallest
row-length bucket that fits; on sm90a longer rows up to 8 buckets are split over a thread-block
cluster (the ladders of :class:`RowNormTuning`, passed as ``PlanPreference(tuning=...)``); longer
rows use the loop SKU.  Operands that are not 16-byte aligned (or N not a multiple of the vector
width) run the generic element-wise loop SKU of the same family — same results, lower
bandwidth; ``plan.sku()`` reports the primary SKU.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional, Tuple

from ...common.row_layout import RowLayout, strided_rows
from ...common.rows import Ladder, RowPolicy, ladder_of
from ...dtypes import FP4, DType, float32, float64
from ...errors import DeviceMismatchError, InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import (Plan, align_up, check_dtype, check_finite, check_writable_no_overlap, prod,
                     view_arg)
from ...runtime.device import current_device_ordinal
from ...tensor import TensorView, check_shape
from .specs import row_norm as spec
from ...vocabulary import ArchSku, BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace

_I32_MAX = 2**31 - 1


def stats_dtype(dt: DType) -> DType:
    """Dtype of saved mean / rstd: f64 for f64 inputs, f32 otherwise."""
    return float64 if dt == float64 else float32


@dataclass(frozen=True)
class RowNormTuning:
    """Row-norm kernel choice (``PlanPreference(tuning=RowNormTuning(...))``): the sm90a cluster
    ladders for rows longer than one CTA's register bucket, (CTAs, half-size slices?) in order
    of preference, each rung among the built cluster SKUs (``specs/row_norm.py`` FW_ROWS /
    BW_ROWS ``clusters``).  Defaults from a sweep on the H100 (benchmarks/sweep_row_norm.py): the
    forward prefers 512-thread slices (two CTAs per SM), the backward a 2-CTA cluster of full
    slices up to 16K, then 8 half slices.  Also used by the GroupNorm / InstanceNorm rows."""

    ladder_fw: Ladder = ((4, True), (8, True), (8, False))
    ladder_bw: Ladder = ((2, False), (8, True), (8, False))

    def __post_init__(self):
        object.__setattr__(self, "ladder_fw", ladder_of(self.ladder_fw))
        object.__setattr__(self, "ladder_bw", ladder_of(self.ladder_bw))

    def policy(self, backward: bool = False) -> RowPolicy:
        """The row-engine policy of the forward or backward kernel."""
        return RowPolicy(ladder=self.ladder_bw if backward else self.ladder_fw)


def _norm_dims(shape, normalized_ndim: int, what: str) -> Tuple[Tuple[int, ...], int, int]:
    shape = check_shape(shape, what)
    k = int(normalized_ndim)
    if not 1 <= k <= len(shape):
        raise InvalidProblemError(f"{what}: normalized_ndim={k} must be in 1..{len(shape)} "
                                  f"(a non-empty suffix of the rank-{len(shape)} shape)")
    n = prod(shape[len(shape) - k:])
    m = prod(shape[:len(shape) - k])
    if n > _I32_MAX or m > _I32_MAX:
        raise UnsupportedError(f"{what}: rows ({m}) and row length ({n}) must each be < 2^31")
    return shape, m, n


def primary_knobs(dt: DType, op: str, n: int, arch: ArchSku, tuning: RowNormTuning,
                  backward: bool = False, **extra) -> spec.RowNormKnobs:
    """The row-norm SKU for rows of ``n`` elements: the smallest register bucket that holds the
    row; on sm90a longer rows up to 8 buckets go to the tuning's cluster ladder; longer rows take
    the loop SKU.  ``extra``: further knobs (the per-channel affine of GroupNorm rows)."""
    engine = spec.BW_ROWS if backward else spec.FW_ROWS
    g = engine.choose(dt.short, n, arch is ArchSku.SM90A, tuning.policy(backward))
    return spec.RowNormKnobs.of(g, dtype=dt.short, op=op, **extra)


def generic_knobs(dt: DType, op: str, **extra) -> spec.RowNormKnobs:
    """The element-wise loop SKU of the same op (operands not 16-byte aligned)."""
    return spec.RowNormKnobs.of(spec.FW_ROWS.generic(), dtype=dt.short, op=op, **extra)


def _precision(dt: DType) -> PrecisionGuarantee:
    ct = stats_dtype(dt)
    return PrecisionGuarantee(math_precision=ct, accumulator=ct,
                              bit_stable_on_same_hardware=True, deterministic=True)


def _sku(op_name: str, dt: DType, arch, template: str, knobs) -> KernelSku:
    return KernelSku(OpCategory.NORMALIZATION, op_name, dt, arch, BackendKind.CUTE_DSL,
                     _precision(dt), aux_element=stats_dtype(dt), template=template,
                     knobs=freeze_knobs(knobs))


@functools.lru_cache(maxsize=512)
def _layout(shape, k: int, names, strides) -> RowLayout:
    """The strided row layout of one call (memoised: a pure function of shapes and strides,
    so the hot path pays one dict lookup); UnsupportedError unless the normalised trailing dims
    are dense in every operand."""
    inner_shape = shape[len(shape) - k:]
    for name, st in zip(names, strides):
        expect = 1
        for n_, s_ in zip(reversed(inner_shape), reversed(st[len(shape) - k:])):
            if n_ != 1 and s_ != expect:
                raise UnsupportedError(
                    f"{name}: the normalised trailing dims must be dense (unit stride, "
                    f"row-major); got strides {st} for shape {shape}. Make it "
                    f"contiguous first (array_api does this automatically).")
            expect *= n_
    outer = len(shape) - k
    return strided_rows(prod(inner_shape), shape[:outer], [st[:outer] for st in strides],
                        "the leading (batch) dims")


def _layout_of(desc, named_views) -> RowLayout:
    return _layout(desc.shape, desc.normalized_ndim, tuple(n for n, _ in named_views),
                   tuple(v.strides for _, v in named_views))


def _check_stats(v: Optional[TensorView], name: str, m: int, dt: DType, dev: int) -> None:
    if v is None:
        return
    if v.dtype != dt:
        raise UnsupportedError(f"{name}: saved statistics are {dt.name}, got {v.dtype.name}")
    if v.numel != m or not v.is_contiguous():
        raise InvalidProblemError(f"{name}: must be a dense tensor with one value per row "
                                  f"({m}), got shape {v.shape} strides {v.strides}")
    if v.device != dev:
        raise DeviceMismatchError(f"{name}: on device {v.device}, x is on device {dev}")


def _check_param(v: Optional[TensorView], name: str, pshape, dt: DType, dev: int) -> None:
    if v is None:
        return
    if tuple(v.shape) != tuple(pshape) and v.numel != prod(pshape):
        raise InvalidProblemError(f"{name}: shape {v.shape} != normalized shape {pshape}")
    if not v.is_contiguous():
        raise UnsupportedError(f"{name}: must be contiguous (got strides {v.strides})")
    if v.dtype != dt:
        raise UnsupportedError(f"{name}: dtype {v.dtype.name} != input dtype {dt.name}")
    if v.device != dev:
        raise DeviceMismatchError(f"{name}: on device {v.device}, x is on device {dev}")


# =============================================================================== forward
@dataclass(frozen=True)
class RMSNormDescriptor:
    """y = x / sqrt(mean(x², over the last ``normalized_ndim`` dims) + eps) · weight."""

    shape: Tuple[int, ...]
    normalized_ndim: int = 1
    dtype: DType = float32
    eps: float = 1e-6
    has_weight: bool = True

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, FP4, "RMSNorm"))


@dataclass(frozen=True)
class LayerNormDescriptor:
    """y = (x − mean) / sqrt(var + eps) · weight + bias over the last ``normalized_ndim`` dims
    (biased variance, as PyTorch)."""

    shape: Tuple[int, ...]
    normalized_ndim: int = 1
    dtype: DType = float32
    eps: float = 1e-5
    has_weight: bool = True
    has_bias: bool = True

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, FP4, "LayerNorm"))


@dataclass
class RMSNormArgs:
    """x, y: (*, *normalized); weight: normalized shape; rstd: optional output, one per row."""

    x: object
    y: object
    weight: object = None
    rstd: object = None


@dataclass
class LayerNormArgs:
    """x, y: (*, *normalized); weight, bias: normalized shape; mean, rstd: optional outputs."""

    x: object
    y: object
    weight: object = None
    bias: object = None
    mean: object = None
    rstd: object = None


class _RowNormPlan(Plan):
    _op = "rms"
    _name = "rms_norm"

    def _plan(self) -> None:
        d = self.desc
        who = type(self).__name__
        _, self._m, self._n = _norm_dims(d.shape, d.normalized_ndim, who)
        check_finite(d.eps, f"{who}: eps")
        if d.eps < 0:
            raise InvalidProblemError(f"{who}: eps must be >= 0, got {d.eps}")
        tuning = self.pref.tuning_for(RowNormTuning)
        self._knobs = primary_knobs(d.dtype, self._op, self._n, self._arch, tuning)
        self._generic = generic_knobs(d.dtype, self._op)
        self._sku = _sku(self._name, d.dtype, self._arch, spec.ROW_NORM_FW.name, self._knobs)
        self._records = {}

    def is_empty(self) -> bool:
        return self._m == 0 or self._n == 0

    def _views(self, args):
        d = self.desc
        x = view_arg(args.x, "x", shape=d.shape, dtype=d.dtype)
        dev = x.device
        y = view_arg(args.y, "y", shape=d.shape, dtype=d.dtype, device=dev)
        check_writable_no_overlap(y, "y")
        pshape = d.shape[len(d.shape) - d.normalized_ndim:]
        w = view_arg(args.weight, "weight", optional=True)
        if d.has_weight and w is None:
            raise InvalidProblemError("weight is required: the descriptor says has_weight=True")
        if not d.has_weight and w is not None:
            raise InvalidProblemError("weight given but the descriptor says has_weight=False")
        _check_param(w, "weight", pshape, d.dtype, dev)
        b = None
        mean = None
        if self._op == "ln":
            b = view_arg(args.bias, "bias", optional=True)
            if d.has_bias != (b is not None):
                raise InvalidProblemError(f"bias {'missing' if d.has_bias else 'given'} but the "
                                          f"descriptor says has_bias={d.has_bias}")
            _check_param(b, "bias", pshape, d.dtype, dev)
            mean = view_arg(args.mean, "mean", optional=True)
        rstd = view_arg(args.rstd, "rstd", optional=True)
        sdt = stats_dtype(d.dtype)
        _check_stats(mean, "mean", self._m, sdt, dev)
        _check_stats(rstd, "rstd", self._m, sdt, dev)
        if self._op == "ln" and (mean is None) != (rstd is None):
            raise InvalidProblemError("LayerNorm saves mean and rstd together: pass both or neither")
        return x, y, w, b, mean, rstd

    def _bind(self, args):
        """The checked views, their pointers, and the launch record of their layout (memoised
        per plan by strides, presence of the optional operands, alignment and device: a repeated
        call only re-checks the operands and fills in pointers); a new layout is validated here."""
        views = self._views(args)
        x, y, w, b, mean, rstd = views
        ptrs = (x.ptr, y.ptr, 0 if w is None else w.ptr, 0 if b is None else b.ptr,
                0 if mean is None else mean.ptr, 0 if rstd is None else rstd.ptr)
        aligned = not ((ptrs[0] | ptrs[1] | ptrs[2] | ptrs[3]) & 15)
        key = (x.strides, y.strides, w is None, b is None, rstd is None, aligned, x.device)
        rec = self._records.get(key)
        if rec is None and not self.is_empty():
            _layout_of(self.desc, (("x", x), ("y", y)))
        return views, ptrs, key, rec

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        views, ptrs, key, rec = bound
        if rec is None:
            rec = self._launch_record(key, views, key[5])
        kern, grid, tail = rec
        kern.launch(grid, ptrs + tail, stream)

    def _launch_record(self, key, views, aligned: bool):
        """Kernel, grid and the non-pointer kernel arguments for one layout of the operands."""
        x, y, w, b, _, rstd = views
        k = self._knobs
        lay = _layout_of(self.desc, (("x", x), ("y", y)))
        if not (aligned and lay.gcd % k.vec == 0):
            k = self._generic
        flags = ((spec.HAS_W if w is not None else 0) | (spec.HAS_B if b is not None else 0)
                 | (spec.WRITE_STATS if rstd is not None else 0))
        kern = self._kernel(spec.ROW_NORM_FW, k, x.device)
        grid = (k.blocks(self._m), 1, 1)
        tail = (self._m, self._n, lay.sizes[1], lay.sizes[2]) + lay.flat_strides() + (
            float(self.desc.eps), flags, 1, 0, 1)  # hw, cpg, G: row affine
        if len(self._records) > 64:
            self._records.clear()
        rec = self._records[key] = (kern, grid, tail)
        return rec


class RMSNormPlan(_RowNormPlan):
    """RMSNorm forward. dtypes f32/f16/bf16/f64 (f32 math for half types, f64 for f64); no
    workspace; deterministic and bit-stable (fixed reduction order)."""

    descriptor = RMSNormDescriptor
    _op = "rms"
    _name = "rms_norm"


class LayerNormPlan(_RowNormPlan):
    """LayerNorm forward (two-pass centred variance). dtypes f32/f16/bf16/f64; no workspace;
    deterministic and bit-stable."""

    descriptor = LayerNormDescriptor
    _op = "ln"
    _name = "layer_norm"


# ============================================================================== backward
@dataclass(frozen=True)
class RMSNormBackwardDescriptor:
    """dx = rstd·(g − x̂·mean(g·x̂)), g = w·dy, x̂ = x·rstd; dweight = Σ_rows dy·x̂."""

    shape: Tuple[int, ...]
    normalized_ndim: int = 1
    dtype: DType = float32
    has_weight: bool = True

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, FP4, "RMSNormBackward"))


@dataclass(frozen=True)
class LayerNormBackwardDescriptor:
    """dx = rstd·(g − mean(g) − x̂·mean(g·x̂)), g = w·dy, x̂ = (x − mean)·rstd;
    dweight = Σ_rows dy·x̂, dbias = Σ_rows dy."""

    shape: Tuple[int, ...]
    normalized_ndim: int = 1
    dtype: DType = float32
    has_weight: bool = True
    has_bias: bool = True

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, FP4, "LayerNormBackward"))


@dataclass
class RMSNormBackwardArgs:
    """dy, x, dx: (*, *normalized); rstd: saved by the forward (one per row); weight and the
    output dweight: normalized shape (dweight required iff weight is given)."""

    dy: object
    x: object
    rstd: object
    dx: object
    weight: object = None
    dweight: object = None


@dataclass
class LayerNormBackwardArgs:
    """As RMSNormBackwardArgs plus the saved ``mean`` and the optional output ``dbias``."""

    dy: object
    x: object
    mean: object
    rstd: object
    dx: object
    weight: object = None
    dweight: object = None
    dbias: object = None


class _RowNormBackwardPlan(Plan):
    _op = "rms"
    _name = "rms_norm_backward"

    def _plan(self) -> None:
        d = self.desc
        _, self._m, self._n = _norm_dims(d.shape, d.normalized_ndim, type(self).__name__)
        tuning = self.pref.tuning_for(RowNormTuning)
        self._knobs = primary_knobs(d.dtype, self._op, self._n, self._arch, tuning, backward=True)
        self._generic = generic_knobs(d.dtype, self._op)
        self._csum_knobs = spec.ColumnSumKnobs(d.dtype.short)
        self._sms = _sm_count_or_default()
        self._sku = _sku(self._name, d.dtype, self._arch, spec.ROW_NORM_BW.name, self._knobs)

    # grid / partial rows: a persistent grid of about one full wave of CTAs
    def _ctas(self, knobs) -> int:
        """Persistent grid size (CTAs): about one wave, a multiple of the cluster size; each
        cluster (or CTA) is one row slot per ``rows``."""
        c = knobs.cluster
        per_sm = max(1, 1024 // knobs.threads)
        groups = min((self._m + knobs.rows - 1) // knobs.rows, self._sms * per_sm // c)
        return max(1, groups) * c

    def _needs_partials(self) -> bool:
        d = self.desc
        return d.has_weight or (self._op == "ln" and d.has_bias)

    def _partial_bytes(self, knobs) -> int:
        slots = self._ctas(knobs) // knobs.cluster * knobs.rows
        nb = slots * self._n * stats_dtype(self.desc.dtype).itemsize
        return align_up(nb)

    def workspace_size(self) -> int:
        """dweight (and for LayerNorm dbias) partial rows: P × N in the compute type each, with
        P = persistent CTAs × rows per CTA (≈ one wave on the device); 0 without weight/bias."""
        if not self._needs_partials() or self._n == 0:
            return 0
        per = max(self._partial_bytes(self._knobs), self._partial_bytes(self._generic))
        return per * (2 if self._op == "ln" else 1)

    def is_empty(self) -> bool:
        return self._n == 0

    def _bind(self, args):
        """The checked views and (with rows) their validated row layout."""
        d = self.desc
        dy = view_arg(args.dy, "dy", shape=d.shape, dtype=d.dtype)
        dev = dy.device
        x = view_arg(args.x, "x", shape=d.shape, dtype=d.dtype, device=dev)
        dx = view_arg(args.dx, "dx", shape=d.shape, dtype=d.dtype, device=dev)
        check_writable_no_overlap(dx, "dx")
        pshape = d.shape[len(d.shape) - d.normalized_ndim:]
        w = view_arg(args.weight, "weight", optional=True)
        dw = view_arg(args.dweight, "dweight", optional=True)
        if d.has_weight != (w is not None) or d.has_weight != (dw is not None):
            raise InvalidProblemError(f"weight and dweight must both be given iff has_weight "
                                      f"(descriptor has_weight={d.has_weight})")
        _check_param(w, "weight", pshape, d.dtype, dev)
        _check_param(dw, "dweight", pshape, d.dtype, dev)
        db = None
        mean = None
        sdt = stats_dtype(d.dtype)
        if self._op == "ln":
            db = view_arg(args.dbias, "dbias", optional=True)
            if d.has_bias != (db is not None):
                raise InvalidProblemError(f"dbias must be given iff has_bias (descriptor "
                                          f"has_bias={d.has_bias})")
            _check_param(db, "dbias", pshape, d.dtype, dev)
            mean = view_arg(args.mean, "mean")
            _check_stats(mean, "mean", self._m, sdt, dev)
        rstd = view_arg(args.rstd, "rstd")
        _check_stats(rstd, "rstd", self._m, sdt, dev)
        lay = None
        if self._m and self._n:
            lay = _layout_of(d, (("dy", dy), ("x", x), ("dx", dx)))
        return (dy, x, dx, w, dw, db, mean, rstd), lay

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        (dy, x, dx, w, dw, db, mean, rstd), lay = bound
        k = self._knobs
        dev = x.device
        want = self._needs_partials()
        if self._m:
            if not lay.aligned(k.vec, [v for v in (dy, x, dx, w) if v is not None]) or (
                    want and ws.ptr % 16):
                k = self._generic
            ctas = self._ctas(k)
            part = self._partial_bytes(k)
            dwp = ws.ptr if want else 0
            dbp = ws.ptr + part if (want and self._op == "ln") else 0
            flags = (spec.HAS_W if w is not None else 0) | (spec.WANT_DW if want else 0)
            kern = self._kernel(spec.ROW_NORM_BW, k, dev)
            kern.launch((ctas, 1, 1), [dy.ptr, x.ptr, w.ptr if w is not None else 0,
                                       mean.ptr if mean is not None else 0, rstd.ptr, dx.ptr, dwp,
                                       dbp, self._m, self._n, lay.sizes[1], lay.sizes[2],
                                       *lay.flat_strides(), flags], stream)
            slots = ctas // k.cluster * k.rows
        else:
            part, slots, dwp, dbp = 0, 0, ws.ptr, ws.ptr  # no rows: the column sums write zeros
        if not want:
            return
        csum = self._kernel(spec.COLUMN_SUM, self._csum_knobs, dev)
        grid = ((self._n + spec.COLSUM_COLS - 1) // spec.COLSUM_COLS, 1, 1)
        if dw is not None:
            csum.launch(grid, [dwp, dw.ptr, slots, self._n, self._n], stream)
        if db is not None:
            csum.launch(grid, [dbp, db.ptr, slots, self._n, self._n], stream)


def _sm_count_or_default() -> int:
    """SMs of the current device (the persistent backward grid), 132 without a GPU."""
    try:
        from ...runtime.device import has_gpu, sm_count

        if has_gpu():
            return sm_count(current_device_ordinal())
    except Exception:
        pass
    return 132


class RMSNormBackwardPlan(_RowNormBackwardPlan):
    """RMSNorm backward: dx and (with weight) a deterministic dweight (per-CTA partial rows in the
    workspace, summed in a fixed order). dtypes f32/f16/bf16/f64; f32 math for half types."""

    descriptor = RMSNormBackwardDescriptor
    _op = "rms"
    _name = "rms_norm_backward"


class LayerNormBackwardPlan(_RowNormBackwardPlan):
    """LayerNorm backward: dx, deterministic dweight / dbias. dtypes f32/f16/bf16/f64."""

    descriptor = LayerNormBackwardDescriptor
    _op = "ln"
    _name = "layer_norm_backward"


__all__ = [
    "RMSNormDescriptor", "RMSNormArgs", "RMSNormPlan", "RMSNormBackwardDescriptor",
    "RMSNormBackwardArgs", "RMSNormBackwardPlan", "LayerNormDescriptor", "LayerNormArgs",
    "LayerNormPlan", "LayerNormBackwardDescriptor", "LayerNormBackwardArgs",
    "LayerNormBackwardPlan", "RowNormTuning", "stats_dtype", "primary_knobs", "generic_knobs",
]
