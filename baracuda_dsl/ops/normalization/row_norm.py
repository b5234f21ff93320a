"""Row normalisation plans: RMSNorm and LayerNorm, forward and backward.

The normalised axes are a suffix of the shape (PyTorch ``normalized_shape``): ``normalized_ndim``
trailing dims form rows of ``N`` elements that must be dense (unit stride, row-major); the
leading dims may have any strides as long as they collapse to at most three strided groups
(any slice, transpose or broadcast of batch dims does).  dtypes f32, f16, bf16, f64; weight and
bias have the row's shape and the input dtype; saved statistics (``mean``, ``rstd``) are dense
with one value per row, in f32 (f64 for f64 inputs).  Half types compute in f32.

Kernel choice: rows up to 32768 elements (16384 for f64) use the register-resident SKU of the
smallest row-length bucket that fits; longer rows use the loop SKU.  Operands that are not
16-byte aligned (or N not a multiple of the vector width) run the generic element-wise loop SKU
of the same family — same results, lower bandwidth; ``plan.sku()`` reports the primary SKU.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Optional, Tuple

from ...dtypes import FP4, DType, float32, float64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import (Plan, align_up, check_dtype, check_finite, check_writable_no_overlap,
                     collapse_dims, plan_arch, prod, resolve_pref, view_arg)
from ...runtime.device import current_device_ordinal
from ...tensor import TensorView, check_shape
from .specs import row_norm as spec
from ...vocabulary import ArchSku, BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace

_I32_MAX = 2**31 - 1


def stats_dtype(dt: DType) -> DType:
    """Dtype of saved mean / rstd: f64 for f64 inputs, f32 otherwise."""
    return float64 if dt == float64 else float32


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


def _primary_knobs(dt: DType, op: str, n: int, arch, backward: bool = False) -> dict:
    """Smallest register bucket that holds the row; on sm90a rows up to 8 buckets long are split
    over a thread-block cluster; longer rows take the loop SKU."""
    cap = (spec.register_cap_bw if backward else spec.register_cap)(dt.short)
    if n <= cap:
        b = next(c for c in spec.BUCKETS if c >= n)
        return dict(dtype=dt.short, op=op, cluster=1, **spec.bucket_config(dt.short, b, backward))
    if arch is ArchSku.SM90A:
        for c, half in (spec.CLUSTER_LADDER_BW if backward else spec.CLUSTER_LADDER_FW):
            if n <= cap // (2 if half else 1) * c:
                return dict(dtype=dt.short, op=op,
                            **spec.cluster_config(dt.short, c, backward, half))
    return dict(dtype=dt.short, op=op, cluster=1, **spec.loop_config(dt.short, True))


def _generic_knobs(dt: DType, op: str) -> dict:
    return dict(dtype=dt.short, op=op, cluster=1, **spec.loop_config(dt.short, False))


def _precision(dt: DType) -> PrecisionGuarantee:
    ct = stats_dtype(dt)
    return PrecisionGuarantee(math_precision=ct, accumulator=ct,
                              bit_stable_on_same_hardware=True, deterministic=True)


def _sku(op_name: str, dt: DType, arch, template: str, knobs: dict) -> KernelSku:
    return KernelSku(OpCategory.NORMALIZATION, op_name, dt, arch, BackendKind.CUTE_DSL,
                     _precision(dt), aux_element=stats_dtype(dt), template=template,
                     knobs=freeze_knobs(knobs))


class _RowGeometry:
    """How the tensors of one call map onto (rows × N): up to 3 outer stride groups per tensor
    (``sizes``, ``strides``) and ``gcd``, the gcd of N and every outer stride (the vector path
    needs it to be a multiple of the vector width).  Pure function of shapes and strides, so it
    is memoised: the hot path pays one dict lookup."""

    __slots__ = ("sizes", "strides", "gcd")

    def __init__(self, sizes, strides, g):
        self.sizes, self.strides, self.gcd = sizes, strides, g

    def aligned(self, vec: int, views) -> bool:
        return self.gcd % vec == 0 and all(v.ptr % 16 == 0 for v in views)


@functools.lru_cache(maxsize=512)
def _row_geometry(shape, k: int, names, strides) -> _RowGeometry:
    outer = shape[:len(shape) - k]
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
    col = collapse_dims(outer, *[st[:len(outer)] for st in strides])
    oshape, ostrides = col[0], col[1:]
    if len(oshape) > 3:
        raise UnsupportedError(
            f"the leading (batch) dims collapse to {len(oshape)} strided groups; at most 3 are "
            f"wired. Make the operands contiguous first (array_api does this automatically).")
    pad = 3 - len(oshape)
    sizes = (1,) * pad + tuple(oshape)
    groups = tuple((0,) * pad + tuple(st) for st in ostrides)
    g = math.gcd(prod(inner_shape), *[s for st in groups for s in st])
    return _RowGeometry(sizes, groups, g)


def _geometry_of(desc, named_views) -> _RowGeometry:
    return _row_geometry(desc.shape, desc.normalized_ndim, tuple(n for n, _ in named_views),
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
        from ...errors import DeviceMismatchError

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
        from ...errors import DeviceMismatchError

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

    @classmethod
    def select(cls, desc, pref=None):
        pref = resolve_pref(pref)
        shape, m, n = _norm_dims(desc.shape, desc.normalized_ndim, cls.__name__)
        check_finite(desc.eps, f"{cls.__name__}: eps")
        if desc.eps < 0:
            raise InvalidProblemError(f"{cls.__name__}: eps must be >= 0, got {desc.eps}")
        arch = plan_arch(pref)
        knobs = _primary_knobs(desc.dtype, cls._op, n, arch)
        plan = cls(desc, pref, _sku(cls._name, desc.dtype, arch, spec.ROW_NORM_FW.name, knobs))
        plan._arch, plan._m, plan._n, plan._knobs = arch, m, n, knobs
        plan._generic = _generic_knobs(desc.dtype, cls._op)
        plan._records = {}
        return plan

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

    def can_implement(self, args) -> None:
        x, y, *_ = self._views(args)
        if not self.is_empty():
            _geometry_of(self.desc, (("x", x), ("y", y)))

    def run(self, args, stream=None, workspace=None) -> None:
        # can_implement is folded into _launch's view building (one pass over the args)
        from ...runtime.stream import stream_handle

        views = self._views(args)
        if self.is_empty():
            return
        self._launch_views(views, stream_handle(stream))

    def _launch_views(self, views, stream: int) -> None:
        x, y, w, b, mean, rstd = views
        ptrs = (x.ptr, y.ptr, 0 if w is None else w.ptr, 0 if b is None else b.ptr,
                0 if mean is None else mean.ptr, 0 if rstd is None else rstd.ptr)
        aligned = not ((ptrs[0] | ptrs[1] | ptrs[2] | ptrs[3]) & 15)
        key = (x.strides, y.strides, w is None, b is None, rstd is None, aligned, x.device)
        rec = self._records.get(key)
        if rec is None:
            rec = self._launch_record(key, x, y, w, b, rstd, aligned)
        kern, grid, tail = rec
        kern.launch(grid, ptrs + tail, stream)

    def _launch_record(self, key, x, y, w, b, rstd, aligned: bool):
        """Kernel, grid and the non-pointer kernel arguments for one layout of the operands
        (memoised per plan: the hot path only fills in the pointers)."""
        k = self._knobs
        geo = _geometry_of(self.desc, (("x", x), ("y", y)))
        if not (aligned and geo.gcd % k["vec"] == 0):
            k = self._generic
        flags = ((spec.HAS_W if w is not None else 0) | (spec.HAS_B if b is not None else 0)
                 | (spec.WRITE_STATS if rstd is not None else 0))
        kern = self._kernel(spec.ROW_NORM_FW, k, x.device)
        (xs0, xs1, xs2), (ys0, ys1, ys2) = geo.strides
        grid = ((self._m + k["rows"] - 1) // k["rows"] * k["cluster"], 1, 1)
        tail = (self._m, self._n, geo.sizes[1], geo.sizes[2], xs0, xs1, xs2, ys0, ys1, ys2,
                float(self.desc.eps), flags, 1, 0, 1)  # hw, cpg, G: row affine
        if len(self._records) > 64:
            self._records.clear()
        rec = self._records[key] = (kern, grid, tail)
        return rec


class RMSNormPlan(_RowNormPlan):
    """RMSNorm forward. dtypes f32/f16/bf16/f64 (f32 math for half types, f64 for f64); no
    workspace; deterministic and bit-stable (fixed reduction order)."""

    _op = "rms"
    _name = "rms_norm"


class LayerNormPlan(_RowNormPlan):
    """LayerNorm forward (two-pass centred variance). dtypes f32/f16/bf16/f64; no workspace;
    deterministic and bit-stable."""

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

    @classmethod
    def select(cls, desc, pref=None):
        pref = resolve_pref(pref)
        shape, m, n = _norm_dims(desc.shape, desc.normalized_ndim, cls.__name__)
        arch = plan_arch(pref)
        knobs = _primary_knobs(desc.dtype, cls._op, n, arch, backward=True)
        plan = cls(desc, pref, _sku(cls._name, desc.dtype, arch, spec.ROW_NORM_BW.name, knobs))
        plan._arch, plan._m, plan._n, plan._knobs = arch, m, n, knobs
        plan._generic = _generic_knobs(desc.dtype, cls._op)
        plan._csum_knobs = dict(dtype=desc.dtype.short)
        plan._sms = _sm_count_or_default(pref)
        return plan

    # grid / partial rows: a persistent grid of about one full wave of CTAs
    def _ctas(self, knobs) -> int:
        """Persistent grid size (CTAs): about one wave, a multiple of the cluster size; each
        cluster (or CTA) is one row slot per ``rows``."""
        threads = knobs["tpr"] * knobs["rows"]
        c = knobs["cluster"]
        per_sm = max(1, 1024 // threads)
        groups = min((self._m + knobs["rows"] - 1) // knobs["rows"], self._sms * per_sm // c)
        return max(1, groups) * c

    def _needs_partials(self) -> bool:
        d = self.desc
        return d.has_weight or (self._op == "ln" and getattr(d, "has_bias", False))

    def _partial_bytes(self, knobs) -> int:
        slots = self._ctas(knobs) // knobs["cluster"] * knobs["rows"]
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

    def _views(self, args):
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
        return dy, x, dx, w, dw, db, mean, rstd

    def can_implement(self, args) -> None:
        dy, x, dx, *_ = self._views(args)
        if self._m and self._n:
            _geometry_of(self.desc, (("dy", dy), ("x", x), ("dx", dx)))

    def run(self, args, stream=None, workspace=None) -> None:
        from ...runtime.stream import stream_handle

        views = self._views(args)
        ws = self.check_workspace(workspace)
        if self.is_empty():
            return
        self._launch_views(views, stream_handle(stream), ws)

    def _launch_views(self, views, stream: int, ws: Workspace) -> None:
        dy, x, dx, w, dw, db, mean, rstd = views
        k = self._knobs
        dev = x.device
        want = self._needs_partials()
        if self._m:
            geo = _geometry_of(self.desc, (("dy", dy), ("x", x), ("dx", dx)))
            if not geo.aligned(k["vec"], [v for v in (dy, x, dx, w) if v is not None]) or (
                    want and ws.ptr % 16):
                k = self._generic
            ctas = self._ctas(k)
            part = self._partial_bytes(k)
            dwp = ws.ptr if want else 0
            dbp = ws.ptr + part if (want and self._op == "ln") else 0
            flags = (spec.HAS_W if w is not None else 0) | (spec.WANT_DW if want else 0)
            kern = self._kernel(spec.ROW_NORM_BW, k, dev)
            (a0, a1, a2), (b0, b1, b2), (c0, c1, c2) = geo.strides
            kern.launch((ctas, 1, 1), [dy.ptr, x.ptr, w.ptr if w is not None else 0,
                                       mean.ptr if mean is not None else 0, rstd.ptr, dx.ptr, dwp,
                                       dbp, self._m, self._n, geo.sizes[1], geo.sizes[2],
                                       a0, a1, a2, b0, b1, b2, c0, c1, c2, flags], stream)
            slots = ctas // k["cluster"] * k["rows"]
        else:
            part, slots, dwp, dbp = 0, 0, ws.ptr, ws.ptr  # no rows: the column sums write zeros
        if not want:
            return
        csum = self._kernel(spec.COLUMN_SUM, self._csum_knobs, dev)
        grid = ((self._n + 31) // 32, 1, 1)
        if dw is not None:
            csum.launch(grid, [dwp, dw.ptr, slots, self._n, self._n], stream)
        if db is not None:
            csum.launch(grid, [dbp, db.ptr, slots, self._n, self._n], stream)


def _sm_count_or_default(pref) -> int:
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

    _op = "rms"
    _name = "rms_norm_backward"


class LayerNormBackwardPlan(_RowNormBackwardPlan):
    """LayerNorm backward: dx, deterministic dweight / dbias. dtypes f32/f16/bf16/f64."""

    _op = "ln"
    _name = "layer_norm_backward"


__all__ = [
    "RMSNormDescriptor", "RMSNormArgs", "RMSNormPlan", "RMSNormBackwardDescriptor",
    "RMSNormBackwardArgs", "RMSNormBackwardPlan", "LayerNormDescriptor", "LayerNormArgs",
    "LayerNormPlan", "LayerNormBackwardDescriptor", "LayerNormBackwardArgs",
    "LayerNormBackwardPlan", "stats_dtype",
]
