"""Channel normalisation plans: BatchNorm, GroupNorm, InstanceNorm — forward and backward.

x is a dense, contiguous (N, C, *spatial) tensor (rank 2..8; S = product of the spatial dims);
outputs (y, dx) are dense as well (UnsupportedError otherwise).  dtypes f32, f16, bf16, f64; math
and accumulation in f32 (f64 for f64).  weight / bias / running stats / dweight / dbias are 1-D
of length C (contiguous) in ``param_dtype`` (the input dtype, or f32 for f16/bf16 inputs); saved
mean / rstd are dense in the compute type (f32, f64 for f64): one per channel (BatchNorm) or per
(n, group) (GroupNorm / InstanceNorm, shape (N, G) or N·G elements).

Pipeline (no atomics, fixed reduction order: deterministic, bit-identical reruns):
  1. ``channel_norm_partial``: CTA (unit, chunk) writes a partial — (count, mean, M2) forward
     (Chan combination, never E[x²] − E[x]²), (Σdy, Σdy·(x−mean)) backward — to the workspace;
  2. ``channel_norm_finalize``: one thread per entry merges its unit's partials in order, writes
     saved stats / running stats / dweight / dbias and per-entry coefficients;
  3. ``channel_norm_apply``: element-wise y (or dx) from the per-entry coefficients.
Units / chunking depend only on the descriptor, so the workspace size and the result do too.
16-byte vector paths when S is a multiple of 16/itemsize and x, dy, y/dx are 16-byte aligned,
element-wise paths otherwise (same results up to summation order).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional, Tuple

from ...dtypes import FP4, DType, float32, float64
from ...dtypes import dtype as as_dtype
from ...errors import DeviceMismatchError, InvalidProblemError, UnsupportedError
from ...common.rows import max_vec
from ...jit import freeze_knobs
from ...plan import (Plan, align_up, check_dtype, check_finite, check_writable_no_overlap, prod,
                     view_arg)
from ...tensor import TensorView, check_shape
from .row_norm import RowNormTuning, generic_knobs, primary_knobs
from .specs import channel_norm as spec
from .specs import row_norm as rspec
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace

_I32_MAX = 2**31 - 1
#: most chunks per reduction unit (the partial kernel's grid y)
MAX_K = 65535


@dataclass(frozen=True)
class ChannelNormTuning:
    """Chunking of the channel norms' reduction units (``PlanPreference(tuning=...)``): about
    ``target_ctas`` partial CTAs in all, each chunk at least ``min_chunk`` elements (rounded up
    to a multiple of 64 elements, which any vector width divides).  Chunking depends only on the
    descriptor and this record, so the workspace size and the result do too."""

    target_ctas: int = 1024
    min_chunk: int = 4096


def stats_dtype(dt: DType) -> DType:
    """Dtype of saved mean / rstd and of the workspace partials: f64 for f64, f32 otherwise."""
    return float64 if dt == float64 else float32


def chunking(unit_elems: int, units: int,
             tuning: ChannelNormTuning = ChannelNormTuning()) -> Tuple[int, int]:
    """(chunk elements, K chunks) for ``units`` reduction units of ``unit_elems`` elements each."""
    if unit_elems == 0 or units == 0:
        return 64, 0
    kd = max(1, -(-tuning.target_ctas // units))
    chunk = max(tuning.min_chunk, -(-unit_elems // kd), -(-unit_elems // MAX_K))
    chunk = -(-chunk // 64) * 64
    return chunk, -(-unit_elems // chunk)


def _param_dtype(dt: DType, pdt, what: str) -> DType:
    p = dt if pdt is None else as_dtype(pdt)
    allowed = [as_dtype(s) for s in spec.param_dtypes(dt.short)]
    if p not in allowed:
        raise UnsupportedError(f"{what}: param_dtype {p.name} with input {dt.name} is not wired; "
                               f"wired: {', '.join(a.name for a in allowed)}")
    return p


@functools.lru_cache(maxsize=256)
def _dims(shape, what: str) -> Tuple[int, int, int]:
    shape = check_shape(shape, what)
    if len(shape) < 2:
        raise InvalidProblemError(f"{what}: input must be (N, C, *spatial) with rank >= 2, "
                                  f"got shape {shape}")
    n, c, s = shape[0], shape[1], prod(shape[2:])
    if n * c > _I32_MAX:
        raise UnsupportedError(f"{what}: N·C = {n * c} must be < 2^31")
    return n, c, s


def _precision(dt: DType) -> PrecisionGuarantee:
    ct = stats_dtype(dt)
    return PrecisionGuarantee(math_precision=ct, accumulator=ct,
                              bit_stable_on_same_hardware=True, deterministic=True)


def _check_dense(v: TensorView, name: str) -> None:
    if not v.is_contiguous():
        raise UnsupportedError(f"{name}: only dense contiguous (N, C, *spatial) tensors are wired "
                               f"(got strides {v.strides} for shape {v.shape}); make it "
                               f"contiguous first")


def _vec1d(obj, name: str, n: int, dt: DType, dev: int, optional: bool = True):
    v = view_arg(obj, name, optional=optional)
    if v is None:
        return None
    if v.numel != n:
        raise InvalidProblemError(f"{name}: needs {n} elements, got shape {v.shape}")
    if v.dtype != dt:
        raise UnsupportedError(f"{name}: dtype {v.dtype.name} != expected {dt.name}")
    if not v.is_contiguous():
        raise UnsupportedError(f"{name}: must be contiguous (got strides {v.strides})")
    if v.device != dev:
        raise DeviceMismatchError(f"{name}: on device {v.device}, x is on device {dev}")
    return v


def _ptr(v) -> int:
    return 0 if v is None else v.ptr


class _Layout:
    """Workspace regions (byte offsets) of one plan; sizes depend only on the descriptor."""

    def __init__(self, regions):
        self.off = {}
        o = 0
        for name, nbytes in regions:
            self.off[name] = o
            o += align_up(nbytes)
        self.total = o


class _ChannelNormBase(Plan):
    """Shared select / geometry logic.  Subclasses set ``_kind`` ('bn' or 'gn'), ``_bw`` and
    ``_check(n, c, s)``: the descriptor checks of the op, returning the statistics group count."""

    _kind = "bn"
    _bw = False
    _op = "batch_norm"

    def _plan(self) -> None:
        d = self.desc
        who = type(self).__name__
        groups = self._check(*_dims(tuple(d.shape), who))
        self._pdt = _param_dtype(d.dtype, d.param_dtype, who)
        self._setup(groups)
        self._sku = KernelSku(OpCategory.NORMALIZATION, self._op, d.dtype, self._arch,
                              BackendKind.CUTE_DSL, _precision(d.dtype),
                              aux_element=stats_dtype(d.dtype), template=spec.APPLY.name,
                              knobs=freeze_knobs(self._kv))

    def _check(self, n: int, c: int, s: int) -> int:
        raise NotImplementedError

    # -- geometry ------------------------------------------------------------------------
    def _setup(self, groups: int):
        d = self.desc
        n, c, s = _dims(tuple(d.shape), type(self).__name__)
        self._n, self._c, self._s = n, c, s
        self._g = groups
        self._cpg = c // groups if groups else 1
        ct = stats_dtype(d.dtype)
        self._ct = ct
        if self._kind == "bn":
            self._e = c                     # entries: channels
            self._us = c                    # statistics groups
            self._count = n * s
            # fw and bw reduce the same units: channel c = N segments of S at stride C·S
            self._units_p, self._segs, self._L, self._ubase = c, n, s, s
        else:
            self._e = n * c                 # entries: (n, c) rows
            self._us = n * groups
            self._count = self._cpg * s
            if self._bw:                    # bw: one unit per row (per-channel dweight / dbias)
                self._units_p, self._segs, self._L, self._ubase = n * c, 1, s, s
            else:                           # fw: one unit per (n, group), contiguous
                self._units_p, self._segs, self._L = n * groups, 1, self._cpg * s
                self._ubase = self._cpg * s
        unit_elems = self._segs * self._L
        if unit_elems > _I32_MAX:
            raise UnsupportedError(f"{type(self).__name__}: {unit_elems} elements per reduction "
                                   f"unit; at most 2^31 - 1 are wired")
        self._chunk, self._k = chunking(unit_elems, self._units_p,
                                        self.pref.tuning_for(ChannelNormTuning))
        P = 2 if self._bw else 3
        nent = 4 if self._bw else 3
        self._ws = _Layout([("ent", nent * self._e * ct.itemsize),
                            ("stats", 2 * self._us * ct.itemsize),
                            ("part", self._units_p * self._k * P * ct.itemsize)])
        dt = d.dtype.short
        mode = "bw" if self._bw else "fw"
        self._kv = spec.ChannelVecKnobs(dt, mode, max_vec(dt))
        self._k1 = spec.ChannelVecKnobs(dt, mode, 1)
        self._kf = spec.ChannelFinalizeKnobs(dt, self._pdt.short, mode)
        self._kf_fw = spec.ChannelFinalizeKnobs(dt, self._pdt.short, "fw")

    def workspace_size(self) -> int:
        """Bytes: per-entry coefficients (3 or 4 × E values; E = C for BatchNorm, N·C for
        Group/InstanceNorm) + saved-stat scratch (2 × stat groups) + partials (units × K × 3
        forward / 2 backward), each in the compute type and rounded up to 256 bytes."""
        return self._ws.total

    def is_empty(self) -> bool:
        return self._n * self._c * self._s == 0

    def _vector_ok(self, views) -> bool:
        vec = max_vec(self.desc.dtype.short)
        return self._s % vec == 0 and all(v.ptr % 16 == 0 for v in views)

    # -- launches ------------------------------------------------------------------------
    def _launch_partial(self, dev, vector: bool, x, dy, mean_ptr, ws: Workspace, stream):
        if self._k == 0:
            return
        kn = self._kv if vector else self._k1
        vec = kn.vec
        kern = self._kernel(spec.PARTIAL, kn, dev)
        cpg = self._cpg if self._kind == "gn" else 1
        g = self._g if self._kind == "gn" else 1
        kern.launch((self._units_p, self._k, 1),
                    [x.ptr, _ptr(dy), mean_ptr, ws.ptr + self._ws.off["part"], self._L // vec,
                     self._segs * self._L // vec, self._chunk // vec, self._k, self._ubase,
                     self._c * self._s, self._c, g, cpg], stream)

    def _launch_finalize(self, dev, knobs, ptrs, flags, ws: Workspace, stream, momentum=0.0,
                         eps=0.0, empty=False):
        """ptrs: dict of w, b, rm, rv, smean, srstd, dw, db (0 when absent)."""
        ct = self._ct.itemsize
        ent = ws.ptr + self._ws.off["ent"]
        e = self._e
        cpg = self._cpg if self._kind == "gn" else 1
        g = self._g if self._kind == "gn" else 1
        nn = 0 if empty else (self._n if self._kind == "gn" else 1)
        threads = max(e, self._c)
        blocks = max(1, -(-threads // spec.FINALIZE_THREADS))
        kern = self._kernel(spec.FINALIZE, knobs, dev)
        kern.launch((blocks, 1, 1),
                    [ws.ptr + self._ws.off["part"], ptrs.get("w", 0), ptrs.get("b", 0),
                     ptrs.get("rm", 0), ptrs.get("rv", 0), ptrs["smean"], ptrs["srstd"],
                     ent, ent + e * ct, ent + 2 * e * ct, ent + 3 * e * ct if self._bw else
                     ent + 2 * e * ct, ptrs.get("dw", 0), ptrs.get("db", 0), e, self._c, g, cpg,
                     0 if empty else self._k, nn, float(self._count), float(eps),
                     float(momentum), flags],
                    stream)

    def _launch_apply(self, dev, vector: bool, x, dy, out, ws: Workspace, stream):
        kn = self._kv if vector else self._k1
        vec = kn.vec
        ct = self._ct.itemsize
        ent = ws.ptr + self._ws.off["ent"]
        e = self._e
        total_v = self._n * self._c * self._s // vec
        per = spec.APPLY_THREADS * spec.APPLY_UNROLL
        blocks = -(-total_v // per)
        if blocks > _I32_MAX:
            raise UnsupportedError(f"{type(self).__name__}: tensor too large for one launch")
        kern = self._kernel(spec.APPLY, kn, dev)
        if self._bw:
            ea, eb, ec = ent + e * ct, ent + 2 * e * ct, ent + 3 * e * ct
        else:
            ea, eb, ec = ent + e * ct, ent + e * ct, ent + 2 * e * ct
        kern.launch((blocks, 1, 1), [x.ptr, _ptr(dy), out.ptr, ent, ea, eb, ec, total_v,
                                     self._s // vec, e], stream)


# ============================================================================ descriptors
def _norm_desc(self, what):
    object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))
    object.__setattr__(self, "dtype", check_dtype(self.dtype, FP4, what))
    if self.param_dtype is not None:
        object.__setattr__(self, "param_dtype", as_dtype(self.param_dtype))


@dataclass(frozen=True)
class BatchNormDescriptor:
    """BatchNorm forward over a dense (N, C, *spatial) input:
    y = (x − mean_c)·rstd_c·weight_c + bias_c, rstd = 1/sqrt(var + eps).

    ``training`` (or ``track_running_stats=False``) uses batch statistics (biased variance over
    N × spatial); with ``training and track_running_stats`` the running stats are updated in place:
    running = (1 − momentum)·running + momentum·batch (unbiased variance for running_var, as
    PyTorch).  Otherwise (inference) the running stats are used."""

    shape: Tuple[int, ...]
    dtype: DType = float32
    eps: float = 1e-5
    momentum: float = 0.1
    training: bool = True
    has_weight: bool = True
    has_bias: bool = True
    track_running_stats: bool = True
    param_dtype: Optional[DType] = None

    def __post_init__(self):
        _norm_desc(self, "BatchNorm")


@dataclass(frozen=True)
class GroupNormDescriptor:
    """GroupNorm forward: statistics per (n, group) over (C/G, *spatial) (biased variance);
    y = (x − mean)·rstd·weight_c + bias_c.  ``num_groups`` must divide C."""

    shape: Tuple[int, ...]
    num_groups: int = 1
    dtype: DType = float32
    eps: float = 1e-5
    has_weight: bool = True
    has_bias: bool = True
    param_dtype: Optional[DType] = None

    def __post_init__(self):
        _norm_desc(self, "GroupNorm")


@dataclass(frozen=True)
class InstanceNormDescriptor:
    """InstanceNorm forward = GroupNorm with one group per channel (statistics per (n, c) over
    the spatial dims).  Only ``use_input_stats=True`` is wired (running statistics are neither
    used nor updated; use_input_stats=False raises UnsupportedError)."""

    shape: Tuple[int, ...]
    dtype: DType = float32
    eps: float = 1e-5
    has_weight: bool = False
    has_bias: bool = False
    use_input_stats: bool = True
    param_dtype: Optional[DType] = None

    def __post_init__(self):
        _norm_desc(self, "InstanceNorm")


@dataclass
class BatchNormArgs:
    """x, y: (N, C, *spatial) dense; weight, bias, running_mean, running_var: (C,) in
    param_dtype (running stats updated in place in training); save_mean, save_rstd: optional
    (C,) outputs in the compute type (batch statistics for the backward)."""

    x: object
    y: object
    weight: object = None
    bias: object = None
    running_mean: object = None
    running_var: object = None
    save_mean: object = None
    save_rstd: object = None


@dataclass
class GroupNormArgs:
    """x, y: (N, C, *spatial) dense; weight, bias: (C,); mean, rstd: optional (N, G) outputs in
    the compute type."""

    x: object
    y: object
    weight: object = None
    bias: object = None
    mean: object = None
    rstd: object = None


InstanceNormArgs = GroupNormArgs


class _ForwardPlan(_ChannelNormBase):
    def _views(self, args, stats_names):
        d = self.desc
        x = view_arg(args.x, "x", shape=d.shape, dtype=d.dtype)
        dev = x.device
        y = view_arg(args.y, "y", shape=d.shape, dtype=d.dtype, device=dev)
        _check_dense(x, "x")
        _check_dense(y, "y")
        check_writable_no_overlap(y, "y")
        w = _vec1d(args.weight, "weight", self._c, self._pdt, dev)
        b = _vec1d(args.bias, "bias", self._c, self._pdt, dev)
        if d.has_weight != (w is not None):
            raise InvalidProblemError(f"weight {'missing' if d.has_weight else 'given'} but the "
                                      f"descriptor says has_weight={d.has_weight}")
        if d.has_bias != (b is not None):
            raise InvalidProblemError(f"bias {'missing' if d.has_bias else 'given'} but the "
                                      f"descriptor says has_bias={d.has_bias}")
        sm = _vec1d(getattr(args, stats_names[0]), stats_names[0], self._us, self._ct, dev)
        sr = _vec1d(getattr(args, stats_names[1]), stats_names[1], self._us, self._ct, dev)
        return x, y, w, b, sm, sr, dev

    def _run_fw(self, x, y, w, b, sm, sr, dev, ws, stream, rm=None, rv=None, batch_stats=True,
                update=False, momentum=0.0):
        vector = self._vector_ok([x, y])
        st = ws.ptr + self._ws.off["stats"]
        ct = self._ct.itemsize
        ptrs = dict(w=_ptr(w), b=_ptr(b), rm=_ptr(rm), rv=_ptr(rv),
                    smean=sm.ptr if sm is not None else st,
                    srstd=sr.ptr if sr is not None else st + self._us * ct)
        if batch_stats:
            self._launch_partial(dev, vector, x, None, 0, ws, stream)
        flags = (spec.ENTRIES | (spec.HAS_W if w is not None else 0)
                 | (spec.HAS_B if b is not None else 0)
                 | (spec.TRAINING if batch_stats else 0) | (spec.UPDATE_RUNNING if update else 0))
        self._launch_finalize(dev, self._kf, ptrs, flags, ws, stream, momentum, self.desc.eps)
        self._launch_apply(dev, vector, x, None, y, ws, stream)


class BatchNormPlan(_ForwardPlan):
    """BatchNorm forward (training: batch stats + optional running-stat update; inference: running
    stats).  dtypes f32/f16/bf16/f64 (f32 math for half types); weight/bias/running stats in
    param_dtype; workspace: see workspace_size(); deterministic, bit-stable."""

    descriptor = BatchNormDescriptor
    _kind, _bw, _op = "bn", False, "batch_norm"

    def _check(self, n: int, c: int, s: int) -> int:
        d = self.desc
        check_finite(d.eps, "BatchNorm: eps")
        check_finite(d.momentum, "BatchNorm: momentum")
        if d.eps < 0:
            raise InvalidProblemError(f"BatchNorm: eps must be >= 0, got {d.eps}")
        batch = d.training or not d.track_running_stats
        if batch and n * s == 1 and c > 0:
            raise InvalidProblemError("BatchNorm: expected more than 1 value per channel when "
                                      f"using batch statistics (input shape {d.shape})")
        return c

    def _bind(self, args):
        d = self.desc
        x, y, w, b, sm, sr, dev = self._views(args, ("save_mean", "save_rstd"))
        rm = _vec1d(args.running_mean, "running_mean", self._c, self._pdt, dev)
        rv = _vec1d(args.running_var, "running_var", self._c, self._pdt, dev)
        if d.track_running_stats and (rm is None or rv is None):
            raise InvalidProblemError("BatchNorm: running_mean and running_var are required when "
                                      "track_running_stats=True")
        if not d.track_running_stats and (rm is not None or rv is not None):
            raise InvalidProblemError("BatchNorm: running stats given but the descriptor says "
                                      "track_running_stats=False")
        return x, y, w, b, sm, sr, dev, rm, rv

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        x, y, w, b, sm, sr, dev, rm, rv = bound
        d = self.desc
        batch = d.training or not d.track_running_stats
        self._run_fw(x, y, w, b, sm, sr, dev, ws, stream, rm, rv, batch,
                     d.training and d.track_running_stats, d.momentum)


class GroupNormPlan(_ForwardPlan):
    """GroupNorm forward. dtypes f32/f16/bf16/f64 (f32 math for half types); weight/bias (C,) in
    param_dtype; optional saved mean/rstd (N, G) in the compute type; workspace: see
    workspace_size(); deterministic, bit-stable."""

    descriptor = GroupNormDescriptor
    _kind, _bw, _op = "gn", False, "group_norm"

    def _check(self, n: int, c: int, s: int) -> int:
        d = self.desc
        g = _groups(d, c, type(self).__name__)
        check_finite(d.eps, "GroupNorm: eps")
        if d.eps < 0:
            raise InvalidProblemError(f"GroupNorm: eps must be >= 0, got {d.eps}")
        return g

    def _plan(self) -> None:
        super()._plan()
        self._select_rows()

    def _select_rows(self):
        """Single-pass path: with a dense input each (n, group) is one contiguous row of
        (C/G)·S elements, normalised by the LayerNorm row kernel with per-channel weights
        (x read once instead of twice).  Chosen at select; used at run when aligned."""
        dt = self.desc.dtype
        L = self._cpg * self._s
        extra = dict(affine="chan", pdt=self._pdt.short)
        tuning = self.pref.tuning_for(RowNormTuning)
        self._row_knobs = primary_knobs(dt, "ln", L, self._arch, tuning, **extra)
        self._row_generic = generic_knobs(dt, "ln", **extra)
        self._row_len = L
        self._sku = KernelSku(OpCategory.NORMALIZATION, self._op, dt, self._arch,
                              BackendKind.CUTE_DSL, _precision(dt), aux_element=stats_dtype(dt),
                              template=rspec.ROW_NORM_FW.name,
                              knobs=freeze_knobs(self._row_knobs))

    def _bind(self, args):
        return self._views(args, ("mean", "rstd"))

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        self._run_rows(*bound, ws, stream)

    def _run_rows(self, x, y, w, b, sm, sr, dev, ws, stream):
        k = self._row_knobs
        aligned = (self._s % k.vec == 0 and x.ptr % 16 == 0 and y.ptr % 16 == 0)
        if not aligned:
            k = self._row_generic
        st = ws.ptr + self._ws.off["stats"]
        ct = self._ct.itemsize
        mean_p = sm.ptr if sm is not None else st
        rstd_p = sr.ptr if sr is not None else st + self._us * ct
        flags = (rspec.HAS_W if w is not None else 0) | (rspec.HAS_B if b is not None else 0) | (
            rspec.WRITE_STATS if (sm is not None or sr is not None) else 0)
        kern = self._kernel(rspec.ROW_NORM_FW, k, dev)
        rows = self._n * self._g
        L = self._row_len
        grid = (k.blocks(rows), 1, 1)
        # rows are contiguous: one stride group (s1 = 1, s2 = rows, stride L)
        kern.launch(grid, [x.ptr, y.ptr, _ptr(w), _ptr(b), mean_p, rstd_p, rows, L, 1, rows,
                           0, 0, L, 0, 0, L, float(self.desc.eps), flags, self._s, self._cpg,
                           self._g], stream)


def _groups(desc, c: int, what: str) -> int:
    if isinstance(desc, (InstanceNormDescriptor, InstanceNormBackwardDescriptor)):
        return c
    g = int(desc.num_groups)
    if g <= 0 or (c % g) != 0:
        raise InvalidProblemError(f"{what}: num_groups={g} must be positive and divide C={c}")
    return g


class InstanceNormPlan(GroupNormPlan):
    """InstanceNorm forward (GroupNorm kernels with G = C; input statistics only — running
    statistics are not supported, use_input_stats=False raises UnsupportedError)."""

    descriptor = InstanceNormDescriptor
    _op = "instance_norm"

    def _check(self, n: int, c: int, s: int) -> int:
        if not self.desc.use_input_stats:
            raise UnsupportedError("InstanceNorm: only use_input_stats=True is wired (running "
                                   "statistics are not supported)")
        if s == 1 and n * c > 0:
            raise InvalidProblemError("InstanceNorm: expected more than 1 spatial element "
                                      f"(input shape {self.desc.shape})")
        return super()._check(n, c, s)


# ============================================================================== backward
@dataclass(frozen=True)
class BatchNormBackwardDescriptor:
    """BatchNorm backward.  Training (batch statistics, saved mean / rstd):
    dx = w·rstd·(dy − mean(dy) − x̂·mean(dy·x̂)), x̂ = (x − mean)·rstd; inference (running stats,
    rstd = 1/sqrt(running_var + eps)): dx = dy·w·rstd.  Both: dweight = Σ dy·x̂, dbias = Σ dy over
    N × spatial."""

    shape: Tuple[int, ...]
    dtype: DType = float32
    eps: float = 1e-5
    training: bool = True
    has_weight: bool = True
    param_dtype: Optional[DType] = None

    def __post_init__(self):
        _norm_desc(self, "BatchNormBackward")


@dataclass(frozen=True)
class GroupNormBackwardDescriptor:
    """GroupNorm backward: with g = w_c·dy, x̂ = (x − mean)·rstd per (n, group),
    dx = rstd·(g − mean_group(g) − x̂·mean_group(g·x̂)); dweight_c = Σ dy·x̂, dbias_c = Σ dy."""

    shape: Tuple[int, ...]
    num_groups: int = 1
    dtype: DType = float32
    has_weight: bool = True
    param_dtype: Optional[DType] = None

    def __post_init__(self):
        _norm_desc(self, "GroupNormBackward")


@dataclass(frozen=True)
class InstanceNormBackwardDescriptor:
    """InstanceNorm backward (GroupNorm backward with G = C)."""

    shape: Tuple[int, ...]
    dtype: DType = float32
    has_weight: bool = False
    param_dtype: Optional[DType] = None

    def __post_init__(self):
        _norm_desc(self, "InstanceNormBackward")


@dataclass
class BatchNormBackwardArgs:
    """dy, x, dx: (N, C, *spatial) dense; weight (C,) if has_weight; training: save_mean,
    save_rstd (C,) in the compute type from the forward; inference: running_mean, running_var
    (C,) in param_dtype; dweight, dbias: optional (C,) outputs in param_dtype."""

    dy: object
    x: object
    dx: object
    weight: object = None
    save_mean: object = None
    save_rstd: object = None
    running_mean: object = None
    running_var: object = None
    dweight: object = None
    dbias: object = None


@dataclass
class GroupNormBackwardArgs:
    """dy, x, dx: (N, C, *spatial) dense; mean, rstd: saved (N, G) statistics (compute type);
    weight (C,) if has_weight; dweight, dbias: optional (C,) outputs in param_dtype."""

    dy: object
    x: object
    mean: object
    rstd: object
    dx: object
    weight: object = None
    dweight: object = None
    dbias: object = None


InstanceNormBackwardArgs = GroupNormBackwardArgs


class _BackwardPlan(_ChannelNormBase):
    _bw = True

    def is_empty(self) -> bool:
        """Never: with no elements the backward still writes zero dweight / dbias."""
        return False

    def _common(self, args):
        d = self.desc
        dy = view_arg(args.dy, "dy", shape=d.shape, dtype=d.dtype)
        dev = dy.device
        x = view_arg(args.x, "x", shape=d.shape, dtype=d.dtype, device=dev)
        dx = view_arg(args.dx, "dx", shape=d.shape, dtype=d.dtype, device=dev)
        for v, nm in ((dy, "dy"), (x, "x"), (dx, "dx")):
            _check_dense(v, nm)
        check_writable_no_overlap(dx, "dx")
        w = _vec1d(args.weight, "weight", self._c, self._pdt, dev)
        if d.has_weight != (w is not None):
            raise InvalidProblemError(f"weight {'missing' if d.has_weight else 'given'} but the "
                                      f"descriptor says has_weight={d.has_weight}")
        dw = _vec1d(args.dweight, "dweight", self._c, self._pdt, dev)
        db = _vec1d(args.dbias, "dbias", self._c, self._pdt, dev)
        return dy, x, dx, w, dw, db, dev

    def _run_bw(self, dy, x, dx, w, dw, db, dev, smean_ptr, srstd_ptr, ws, stream,
                training=True):
        want = (spec.WANT_DW if dw is not None else 0) | (spec.WANT_DB if db is not None else 0)
        ptrs = dict(w=_ptr(w), smean=smean_ptr, srstd=srstd_ptr, dw=_ptr(dw), db=_ptr(db))
        if self._n * self._c * self._s == 0:
            if want and self._c:  # no elements: dweight / dbias are zeros
                self._launch_finalize(dev, self._kf, ptrs, want, ws, stream, empty=True)
            return
        vector = self._vector_ok([dy, x, dx])
        if training or want:
            self._launch_partial(dev, vector, x, dy, smean_ptr, ws, stream)
        flags = (spec.ENTRIES | want | (spec.HAS_W if w is not None else 0)
                 | (spec.TRAINING if training else 0))
        self._launch_finalize(dev, self._kf, ptrs, flags, ws, stream)
        self._launch_apply(dev, vector, x, dy, dx, ws, stream)


class BatchNormBackwardPlan(_BackwardPlan):
    """BatchNorm backward (training and inference).  dtypes f32/f16/bf16/f64 (f32 math for half
    types); workspace: see workspace_size(); deterministic dweight/dbias (no atomics)."""

    descriptor = BatchNormBackwardDescriptor
    _kind, _op = "bn", "batch_norm_backward"

    def _check(self, n: int, c: int, s: int) -> int:
        d = self.desc
        check_finite(d.eps, "BatchNormBackward: eps")
        if d.eps < 0:
            raise InvalidProblemError(f"BatchNormBackward: eps must be >= 0, got {d.eps}")
        return c

    def _bind(self, args):
        dy, x, dx, w, dw, db, dev = self._common(args)
        if self.desc.training:
            sm = _vec1d(args.save_mean, "save_mean", self._c, self._ct, dev, optional=False)
            sr = _vec1d(args.save_rstd, "save_rstd", self._c, self._ct, dev, optional=False)
            rm = rv = None
        else:
            sm = sr = None
            rm = _vec1d(args.running_mean, "running_mean", self._c, self._pdt, dev,
                        optional=False)
            rv = _vec1d(args.running_var, "running_var", self._c, self._pdt, dev,
                        optional=False)
        return dy, x, dx, w, dw, db, dev, sm, sr, rm, rv

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        dy, x, dx, w, dw, db, dev, sm, sr, rm, rv = bound
        if self.desc.training:
            self._run_bw(dy, x, dx, w, dw, db, dev, sm.ptr, sr.ptr, ws, stream, True)
            return
        # inference: mean / rstd from the running stats into the workspace first
        st = ws.ptr + self._ws.off["stats"]
        st_r = st + self._us * self._ct.itemsize
        if self._c:
            self._launch_finalize(dev, self._kf_fw, dict(rm=rm.ptr, rv=rv.ptr, smean=st,
                                                         srstd=st_r), 0, ws, stream, 0.0,
                                  self.desc.eps)
        self._run_bw(dy, x, dx, w, dw, db, dev, st, st_r, ws, stream, False)


class GroupNormBackwardPlan(_BackwardPlan):
    """GroupNorm backward from the saved (N, G) mean / rstd.  dtypes f32/f16/bf16/f64; workspace:
    see workspace_size(); deterministic dweight/dbias (no atomics)."""

    descriptor = GroupNormBackwardDescriptor
    _kind, _op = "gn", "group_norm_backward"

    def _check(self, n: int, c: int, s: int) -> int:
        return _groups(self.desc, c, type(self).__name__)

    def _bind(self, args):
        dy, x, dx, w, dw, db, dev = self._common(args)
        sm = _vec1d(args.mean, "mean", self._us, self._ct, dev, optional=False)
        sr = _vec1d(args.rstd, "rstd", self._us, self._ct, dev, optional=False)
        return dy, x, dx, w, dw, db, dev, sm, sr

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        dy, x, dx, w, dw, db, dev, sm, sr = bound
        self._run_bw(dy, x, dx, w, dw, db, dev, sm.ptr, sr.ptr, ws, stream)


class InstanceNormBackwardPlan(GroupNormBackwardPlan):
    """InstanceNorm backward (GroupNorm backward kernels with G = C)."""

    descriptor = InstanceNormBackwardDescriptor
    _op = "instance_norm_backward"


__all__ = [
    "ChannelNormTuning",
    "BatchNormDescriptor", "BatchNormArgs", "BatchNormPlan",
    "BatchNormBackwardDescriptor", "BatchNormBackwardArgs", "BatchNormBackwardPlan",
    "GroupNormDescriptor", "GroupNormArgs", "GroupNormPlan",
    "GroupNormBackwardDescriptor", "GroupNormBackwardArgs", "GroupNormBackwardPlan",
    "InstanceNormDescriptor", "InstanceNormArgs", "InstanceNormPlan",
    "InstanceNormBackwardDescriptor", "InstanceNormBackwardArgs", "InstanceNormBackwardPlan",
]
