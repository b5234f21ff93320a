"""Index-remapping layout ops: pad (constant / reflect / replicate / circular), roll, triu / tril,
and their backward plans.

``PadPlan``: ``out`` (dense, ``desc.out_shape``) from ``x`` (any strides, negative included), with
``out.shape[d] = n_d + lo_d + hi_d`` and, for ``q = c - lo_d``:

    constant   q outside [0, n) → ``value``; negative pads crop
    replicate  x[clamp(q, 0, n-1)]                       (pads >= 0, n >= 1 where padded)
    reflect    x[-q] for q < 0, x[2(n-1) - q] for q >= n (torch semantics: 0 <= pad < n)
    circular   x[q mod n] (true modulo: ANY pad size, negative pads crop; torch requires
               pad <= n, this is the periodic extension that agrees with torch where torch is
               defined; n >= 1 where padded)

``RollPlan``: ``out[c] = x[(c - shift) mod n]`` per dim (``shifts``: one int per dim, 0 = not
rolled) — the circular remap with ``lo = shift mod n``.  ``TriuPlan`` / ``TrilPlan``: ``out[..., i,
j] = x[..., i, j]`` where ``j - i >= k`` (triu) / ``j - i <= k`` (tril), else zero (all bits
zero: right for every dtype).  Every dtype (bool, ints, floats, fp8, complex): the kernels copy
opaque 1/2/4/8/16-byte words, so results are bit-exact and deterministic; a unit-stride innermost
dim that is un-padded — or, for constant / circular / roll, padded and shifted by whole words —
is copied in words of up to 16 bytes (the vectorised path).

Backward (dtypes f32, f16, bf16, f64): ``PadBackwardPlan`` ``dx[i] = Σ_{p : map(p) = i} dy[p]``
over all padded dims in one kernel, each element summing its sources in a fixed order (f32
accumulation for half types, f64 for f64; deterministic, no atomics); constant pads >= 0 are a
strided slice copy.  ``RollBackwardPlan`` = roll by ``-shifts``; ``TriBackwardPlan`` = the same
mask on ``dy``.  No plan needs a workspace.  Rank ≤ 8; ``dy`` may have any strides, every output
is dense row-major.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Tuple

import numpy as np

from ...dtypes import FP4, DType, decode_minifloat, encode_minifloat, float32
from ...errors import InvalidProblemError, UnsupportedError
from ...plan import Plan, check_dtype, prod
from ...tensor import TensorView, check_shape, contiguous_strides
from .repeat import (COPY_DTYPES, StridedCopyArgs, StridedCopyDescriptor, StridedCopyPlan,
                     dense_grad_views, io_views, pad_dims, shape_sku)
from .specs import pad_bw2d as bw2d
from .specs import remap as spec
from .specs import repeat as rspec

__all__ = [
    "PAD_MODES", "PadDescriptor", "PadArgs", "PadPlan", "PadBackwardArgs", "PadBackwardPlan",
    "RollDescriptor", "RollArgs", "RollPlan", "RollBackwardArgs", "RollBackwardPlan",
    "TriDescriptor", "TriArgs", "TriPlan", "TriuPlan", "TrilPlan", "TriBackwardArgs",
    "TriBackwardPlan", "PadTuning", "pad_out_shape", "pad_source_index", "pads_from_torch",
]

PAD_MODES = spec.PAD_MODES
_I32_SAFE = 2**31 - 1 - 4096
_EXT_SAFE = 2**29


# ------------------------------------------------------------------------------ index math
def pad_source_index(c, n: int, lo: int, mode: str):
    """The source coordinate of output coordinate(s) ``c`` (int or numpy array) along one dim of
    extent ``n`` padded by ``lo`` in front, and whether it is in range (only constant mode can be
    out of range).  The exact math of the kernels (host reference for tests)."""
    q = np.asarray(c, dtype=np.int64) - lo
    if mode == "constant":
        return q, (q >= 0) & (q < n)
    ok = np.ones(q.shape, bool)
    if mode == "replicate":
        return np.clip(q, 0, n - 1), ok
    if mode == "reflect":
        q = np.where(q < 0, -q, q)
        return np.where(q >= n, 2 * (n - 1) - q, q), ok
    if mode == "circular":
        return np.mod(q, n), ok
    raise InvalidProblemError(f"pad: unknown mode {mode!r}")


def pad_out_shape(shape, pads) -> Tuple[int, ...]:
    """``n_d + lo_d + hi_d`` per dim."""
    return tuple(int(n) + int(lo) + int(hi) for n, (lo, hi) in zip(shape, pads))


def pads_from_torch(flat, rank: int) -> Tuple[Tuple[int, int], ...]:
    """torch.nn.functional.pad's flat list ``(lo_last, hi_last, lo_prev, hi_prev, ...)`` as one
    ``(lo, hi)`` pair per dim of a rank-``rank`` tensor (dims it does not name get (0, 0))."""
    flat = tuple(flat)
    if len(flat) % 2 or len(flat) // 2 > rank:
        raise InvalidProblemError(f"pad: a flat pad list needs an even length <= 2·rank "
                                  f"({2 * rank}), got {len(flat)}")
    pairs = [(0, 0)] * rank
    for k in range(len(flat) // 2):
        pairs[rank - 1 - k] = (flat[2 * k], flat[2 * k + 1])
    return tuple(pairs)


def _check_pads(pads, shape, mode: str, what: str) -> Tuple[Tuple[int, int], ...]:
    try:
        pp = tuple((lo, hi) for lo, hi in pads)
    except (TypeError, ValueError):
        raise InvalidProblemError(f"{what}: pads must be a sequence of (lo, hi) pairs, one per dim, "
                                  f"got {pads!r}") from None
    for lo, hi in pp:
        for v in (lo, hi):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise InvalidProblemError(f"{what}: pads must be ints, got {pads!r}")
    pp = tuple((int(lo), int(hi)) for lo, hi in pp)
    if len(pp) != len(shape):
        raise InvalidProblemError(f"{what}: {len(pp)} (lo, hi) pairs for a rank-{len(shape)} "
                                  f"shape; need one per dim")
    for d, ((lo, hi), n) in enumerate(zip(pp, shape)):
        if n + lo + hi < 0:
            raise InvalidProblemError(f"{what}: dim {d} of extent {n} padded by ({lo}, {hi}) has a "
                                      f"negative output extent")
        if mode == "constant":
            continue
        padded = lo != 0 or hi != 0
        if mode in ("reflect", "replicate") and (lo < 0 or hi < 0):
            raise InvalidProblemError(f"{what}: {mode} pads must be >= 0 (dim {d}: ({lo}, {hi}))")
        if padded and n < 1:
            raise InvalidProblemError(f"{what}: {mode} padding needs a non-empty dim (dim {d} has "
                                      f"extent 0)")
        if mode == "reflect" and padded and (lo >= n or hi >= n):
            raise InvalidProblemError(f"{what}: reflect pads must be < the dim extent (dim {d}: "
                                      f"extent {n}, pads ({lo}, {hi}))")
    return pp


# ------------------------------------------------------------------------------ fill value
def _fill_bits(value, dt: DType) -> int:
    """The bit pattern (little-endian int) of ``value`` in ``dt``; InvalidProblemError when it is
    not representable (out-of-range ints, non-0/1 bools, finite values overflowing a float type,
    complex values for real types)."""
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    if isinstance(value, complex) or np.iscomplexobj(value):
        if dt.kind != "c" and complex(value).imag != 0:
            raise InvalidProblemError(f"pad value {value!r} is not representable in {dt.name}")
        if dt.kind != "c":
            value = complex(value).real
    try:
        if dt.kind == "c":
            v = complex(value)
        else:
            v = float(value) if not isinstance(value, (int, np.integer)) else int(value)
    except (TypeError, ValueError):
        raise InvalidProblemError(f"pad value must be a number, got {value!r}") from None
    bad = InvalidProblemError(f"pad value {value!r} is not representable in {dt.name}")
    if dt.kind == "b":
        if v not in (0, 1):
            raise bad
        return int(v)
    if dt.kind in "iu":
        if isinstance(v, float) and (not math.isfinite(v) or v != int(v)):
            raise bad
        info = np.iinfo(dt.to_numpy())
        if not info.min <= int(v) <= info.max:
            raise bad
        return int(v) & ((1 << (8 * dt.itemsize)) - 1)
    if dt.kind == "c":
        arr = np.array([v], dtype=dt.to_numpy())
        if (math.isfinite(v.real) and not np.isfinite(arr.real[0])) or (
                math.isfinite(v.imag) and not np.isfinite(arr.imag[0])):
            raise bad
        return int.from_bytes(arr.tobytes(), "little")
    try:
        f = float(v)
    except OverflowError:                    # an int past float64's range
        raise bad from None
    if dt.numpy is not None:
        with np.errstate(over="ignore"):
            arr = np.array([f], dtype=dt.to_numpy())
        if math.isfinite(f) and not np.isfinite(arr[0]):
            raise bad
        return int.from_bytes(arr.tobytes(), "little")
    # bf16 / fp8: rounded to nearest-even exactly from the float64 value (no torch, no float32 step)
    bits = encode_minifloat(f, dt)
    if math.isfinite(f) and not math.isfinite(decode_minifloat(bits, dt)):
        raise bad
    return bits


# ------------------------------------------------------------------------------- geometry
class _RemapGeometry:
    """Knobs and launch scalars of one pad_remap / tri_mask launch (memoised)."""

    __slots__ = ("knobs", "dims", "nrows", "ncb", "grid", "f0", "f1", "kd", "width", "n")

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)

    def scalars(self):
        return [self.nrows, self.ncb, *self.dims, self.f0, self.f1, self.kd]


def _signed64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


@functools.lru_cache(maxsize=1024)
def _remap_geometry(mode: str, out_shape, in_shape, los, in_strides, isz: int, src_mod: int,
                    dst_mod: int, fill: int = 0, kd: int = 0) -> _RemapGeometry:
    """Collapse, widen and tile one remap problem.  ``los``: the per-dim low pads (roll: the
    shift mod n); ``fill``: the element bit pattern (constant mode); ``kd``: tri diagonal."""
    tri = mode in spec.TRI_MODES
    dims = []
    r = len(out_shape)
    for d, (o, e, lo, s) in enumerate(zip(out_shape, in_shape, los, in_strides)):
        if mode == "circular" and e > 0:
            lo = lo % e
        keep = tri and d >= r - 2
        if not keep and o == 1 and e == 1 and lo == 0:
            continue
        dims.append([o, e, lo, s, keep or lo != 0 or o != e])
    # merge adjacent un-padded dims that are contiguous in the source
    merged = []
    for dm in dims:
        if merged and not dm[4] and not merged[-1][4] and merged[-1][3] == dm[3] * dm[1]:
            p = merged[-1]
            merged[-1] = [p[0] * dm[0], p[1] * dm[1], 0, dm[3], False]
            continue
        merged.append(dm)
    if not merged:
        merged = [[1, 1, 0, 0, False]]
    o = [m[0] for m in merged]
    e = [m[1] for m in merged]
    ll = [m[2] for m in merged]
    s = [m[3] for m in merged]
    width = isz
    # words of w elements along a unit-stride innermost dim: un-padded, or padded / rolled by
    # whole words in a mode that moves words intact (constant, circular)
    word_ok = not merged[-1][4] or mode in ("constant", "circular")
    if not tri and word_ok and s[-1] == 1:
        w = 16 // isz
        while w > 1:
            wb = w * isz
            if (o[-1] % w == 0 and e[-1] % w == 0 and ll[-1] % w == 0
                    and all(x % w == 0 for x in s[:-1]) and src_mod % wb == 0
                    and dst_mod % wb == 0):
                width = wb
                o[-1] //= w
                e[-1] //= w
                ll[-1] //= w
                s = [x // w for x in s[:-1]] + [1]
                fill = sum(fill << (8 * isz * k) for k in range(w))
                break
            w //= 2
    if len(o) == 1:
        o, e, ll, s = [1] + o, [1] + e, [0] + ll, [0] + s
    if mode == "circular" and all(oi - li <= 2 * ei for oi, ei, li in zip(o, e, ll)):
        mode = "circular1"      # every coordinate wraps at most once: no remainder needed
    rank = spec.rank_for(len(o))
    n = prod(o)
    nrows, wcols = prod(o[:-1]), o[-1]
    # tile: the one that wastes fewer idle lanes on the row tail
    candidates = []
    for t in spec.TILES:
        tr, tc = spec.tile_dims(t, width)
        ncb = -(-wcols // tc) if wcols else 0
        eff = wcols / (ncb * tc) if ncb else 1.0
        candidates.append((eff >= 0.9 and t == "row", eff, t, tr, ncb))
    _, _, tile, tr, ncb = max(candidates)
    grid = -(-nrows // tr) * ncb
    if grid > 2**31 - 1:
        raise UnsupportedError(f"remap copy of {n} words exceeds the grid limit")
    span = sum((ei - 1) * abs(si) for ei, si in zip(e, s) if ei > 0)
    big = max([abs(x) for x in o + e + ll] + [abs(kd)])
    wide = 0 if (n < _I32_SAFE and span < _I32_SAFE and big < _EXT_SAFE) else 1
    dims = pad_dims(o, 1) + pad_dims(e, 1) + pad_dims(ll, 0) + pad_dims(s, 0)
    knobs = spec.RemapKnobs(itemsize=width, mode=mode, rank=rank, wide=wide, tile=tile)
    return _RemapGeometry(knobs=knobs, dims=dims, nrows=nrows, ncb=ncb, grid=grid,
                          f0=_signed64(fill), f1=_signed64(fill >> 64), kd=kd, width=width, n=n)


class _RemapPlan(Plan):
    """Shared plan and launch path of pad / roll / triu / tril (forward and backward): ``_plan``
    sets ``_mode``, ``_in_shape``, ``_out_shape``, ``_los`` (and ``_fill``, ``_kd``) then calls
    :meth:`_plan_remap`; ``_io`` names the Args fields (input any strides, output dense)."""

    _template = spec.PAD
    _io = ("x", "out")
    _fill = 0
    _kd = 0

    def _plan_remap(self, op: str) -> None:
        self._n = prod(self._out_shape)
        geo = _remap_geometry(self._mode, self._out_shape, self._in_shape, self._los,
                              contiguous_strides(self._in_shape), self.desc.dtype.itemsize, 0, 0,
                              self._fill, self._kd)
        self._sku = shape_sku(self, op, self._template, geo.knobs)

    def is_empty(self) -> bool:
        return self._n == 0

    def _bind(self, args):
        return io_views(self.desc, args, self._io, self._in_shape, self._out_shape)

    def _launch(self, bound, stream: int, ws) -> None:
        src, dst = bound
        geo = _remap_geometry(self._mode, self._out_shape, self._in_shape, self._los,
                              tuple(src.strides), src.itemsize, src.ptr % 16, dst.ptr % 16,
                              self._fill, self._kd)
        kern = self._kernel(self._template, geo.knobs, dst.device)
        kern.launch((geo.grid, 1, 1), [src.ptr, dst.ptr, *geo.scalars()], stream)


# ==================================================================================== Pad
@dataclass(frozen=True)
class PadDescriptor:
    """Pad ``shape`` (x's shape, rank ≤ 8) by ``pads`` — one ``(lo, hi)`` pair per dim, numpy
    style — in ``mode`` (constant, reflect, replicate, circular) with the constant ``value``
    (must be representable in ``dtype``; ignored by the other modes).  Any dtype for the forward,
    f32/f16/bf16/f64 for the backward.  Validation (InvalidProblemError): output extents >= 0;
    reflect/replicate pads >= 0 and a non-empty padded dim; reflect pads < the extent; circular
    any pad (true modulo) on a non-empty padded dim; constant any pad (negative crops)."""

    shape: Tuple[int, ...]
    pads: Tuple[Tuple[int, int], ...]
    mode: str = "constant"
    value: object = 0
    dtype: DType = float32

    def __post_init__(self):
        shape = check_shape(self.shape, "Pad: x")
        object.__setattr__(self, "shape", shape)
        if self.mode not in PAD_MODES:
            raise InvalidProblemError(f"Pad: mode {self.mode!r} is not one of {', '.join(PAD_MODES)}")
        object.__setattr__(self, "pads", _check_pads(self.pads, shape, self.mode, "Pad"))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, COPY_DTYPES, "Pad"))
        if self.mode == "constant":
            _fill_bits(self.value, self.dtype)

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return pad_out_shape(self.shape, self.pads)


@dataclass
class PadArgs:
    """x: input (any strides); out: dense output of shape ``desc.out_shape``."""

    x: object
    out: object


class PadPlan(_RemapPlan):
    """out = pad(x) (see the module doc for the modes); every dtype, bit-exact, deterministic;
    no workspace; x any strides, out dense."""

    descriptor = PadDescriptor

    def _plan(self) -> None:
        d = self.desc
        self._mode = d.mode
        self._in_shape, self._out_shape = d.shape, d.out_shape
        self._los = tuple(lo for lo, _ in d.pads)
        self._fill = _fill_bits(d.value, d.dtype) if d.mode == "constant" else 0
        self._plan_remap("pad")


@dataclass
class PadBackwardArgs:
    """dy: gradient of the pad output (``desc.out_shape``, any strides); dx: dense, x's shape."""

    dy: object
    dx: object


@functools.lru_cache(maxsize=1024)
def _bw_geometry(mode: str, in_shape, out_shape, los, dy_strides):
    """(rank knob, 32 dim scalars) of one pad_bw launch: dx extents, dy extents, low pads
    (circular: reduced mod n), dy strides, un-padded contiguous dims merged."""
    dims = []
    for n, p, lo, s in zip(in_shape, out_shape, los, dy_strides):
        if mode == "circular" and n > 0:
            lo = lo % n
        padded = lo != 0 or p != n
        if not padded and n == 1:
            continue
        if dims and not padded and not dims[-1][4] and dims[-1][3] == s * n:
            q = dims[-1]
            dims[-1] = [q[0] * n, q[1] * n, 0, s, False]
            continue
        dims.append([n, p, lo, s, padded])
    if not dims:
        dims = [[1, 1, 0, 0, False]]
    rank = spec.bw_rank_for(len(dims))
    cols = list(zip(*dims))
    return rank, (pad_dims(cols[0], 1) + pad_dims(cols[1], 1) + pad_dims(cols[2], 0)
                  + pad_dims(cols[3], 0))


@functools.lru_cache(maxsize=1024)
def _bw2d_geometry(mode: str, in_shape, out_shape, los, dy_strides):
    """Launch (grid, 11 scalars) of the ``pad_bw2d`` fast path, or None when it does not apply:
    a mode it serves, only the last two dims padded, every extent non-zero, dy's leading dims
    collapsible into one batch stride, every index / offset within Int32."""
    r = len(in_shape)
    if mode not in bw2d.BW2D_MODES or r < 1 or prod(in_shape) == 0 or prod(out_shape) == 0:
        return None
    if any(lo != 0 or p != n for n, p, lo in zip(in_shape[:-2], out_shape[:-2], los[:-2])):
        return None
    if r == 1:
        h, ph, lh, sh = 1, 1, 0, 0
    else:
        h, ph, lh, sh = in_shape[-2], out_shape[-2], los[-2], dy_strides[-2]
    w, pw, lw, sw = in_shape[-1], out_shape[-1], los[-1], dy_strides[-1]
    if mode == "circular":
        lh, lw = lh % h, lw % w
    lead = [(n, s) for n, s in zip(in_shape[:-2], dy_strides[:-2]) if n != 1]
    if any(lead[k][1] != lead[k + 1][1] * lead[k + 1][0] for k in range(len(lead) - 1)):
        return None
    nb = prod(in_shape[:-2])
    sb = lead[-1][1] if lead else 0
    nrows = nb * h
    span = (nb - 1) * abs(sb) + (ph - 1) * abs(sh) + (pw - 1) * abs(sw)
    big = max(h, w, ph, pw, abs(lh), abs(lw))
    if nrows * w >= _I32_SAFE or span >= _I32_SAFE or big >= _EXT_SAFE:
        return None
    ncb = -(-w // bw2d.BW2D_COLS)
    grid = -(-nrows // bw2d.BW2D_WARPS) * ncb
    if grid > 2**31 - 1:
        return None
    return grid, (nrows, ncb, h, w, ph, pw, lh, lw, sb, sh, sw)


@dataclass(frozen=True)
class PadTuning:
    """Pad backward kernel choice (``PlanPreference(tuning=PadTuning(...))``): ``fast_2d=False``
    runs the general ``pad_bw`` kernel where the ``pad_bw2d`` fast path would serve (same
    summation order, the same bits: a comparison switch)."""

    fast_2d: bool = True


class PadBackwardPlan(Plan):
    """Gradient of pad: ``dx[i] = Σ_{p : map(p) = i} dy[p]`` (all padded dims in one pass, each
    element summing its sources in a fixed order: deterministic, no atomics, no workspace);
    f32/f16/bf16/f64 (f32 accumulation for half types, f64 for f64).  Constant mode with pads
    >= 0 is a strided slice copy (exact).  Reflect / replicate / circular with at most the last
    two dims padded run ``pad_bw2d`` (a warp per dx row, Int32 math, same summation order: the
    same bits) when dy's leading dims collapse into one batch stride and every offset fits
    Int32; anything else runs the general ``pad_bw`` kernel."""

    descriptor = PadDescriptor

    def _plan(self) -> None:
        d = self.desc
        check_dtype(d.dtype, FP4, "PadBackward")
        self._los = tuple(lo for lo, _ in d.pads)
        self._out_shape = d.out_shape
        self._n = prod(d.shape)
        dense = contiguous_strides(self._out_shape)
        if d.mode == "constant" and all(lo >= 0 and hi >= 0 for lo, hi in d.pads):
            # the gradient is the slice of dy the input was copied to
            self._copy = StridedCopyPlan.select(StridedCopyDescriptor(d.shape, d.dtype), self.pref)
            self._sku = shape_sku(self, "pad_backward", rspec.STRIDED_COPY)
            return
        self._copy = None
        self._knobs2d = None
        fast = self.pref.tuning_for(PadTuning).fast_2d
        if fast and _bw2d_geometry(d.mode, d.shape, self._out_shape, self._los, dense) is not None:
            self._knobs2d = bw2d.PadBw2dKnobs(dtype=d.dtype.short, mode=d.mode)
            self._sku = shape_sku(self, "pad_backward", bw2d.PAD_BW2D, self._knobs2d, summed=True)
            return
        rank, _ = _bw_geometry(d.mode, d.shape, self._out_shape, self._los, dense)
        self._sku = shape_sku(self, "pad_backward", spec.PAD_BW, self._rank_knobs(rank),
                              summed=True)

    def _rank_knobs(self, rank: int) -> spec.PadBwKnobs:
        d = self.desc
        return spec.PadBwKnobs(dtype=d.dtype.short, mode=d.mode, rank=rank)

    def is_empty(self) -> bool:
        return self._n == 0

    def _bind(self, args):
        return dense_grad_views(self.desc, args, self._out_shape)

    def _launch(self, bound, stream: int, ws) -> None:
        dy, dx = bound
        d = self.desc
        if self._copy is not None:
            off = sum(lo * s for lo, s in zip(self._los, dy.strides))
            src = TensorView(dy.ptr + off * dy.itemsize, d.shape, dy.strides, d.dtype, dy.device,
                             owner=dy.owner)
            self._copy.run(StridedCopyArgs(src, dx), stream)
            return
        if self._knobs2d is not None:
            g = _bw2d_geometry(d.mode, d.shape, self._out_shape, self._los, tuple(dy.strides))
            if g is not None:
                kern = self._kernel(bw2d.PAD_BW2D, self._knobs2d, dx.device)
                kern.launch((g[0], 1, 1), [dy.ptr, dx.ptr, *g[1]], stream)
                return
        rank, dims = _bw_geometry(d.mode, d.shape, self._out_shape, self._los, tuple(dy.strides))
        kern = self._kernel(spec.PAD_BW, self._rank_knobs(rank), dx.device)
        t = spec.BW_THREADS
        kern.launch(((self._n + t - 1) // t, 1, 1), [dy.ptr, dx.ptr, self._n, *dims], stream)


# =================================================================================== Roll
def _check_shifts(shifts, rank: int, what: str) -> Tuple[int, ...]:
    try:
        sh = tuple(shifts)
    except TypeError:
        raise InvalidProblemError(f"{what}: shifts must be a sequence of ints, got {shifts!r}") from None
    if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in sh):
        raise InvalidProblemError(f"{what}: shifts must be ints, got {shifts!r}")
    if len(sh) != rank:
        raise InvalidProblemError(f"{what}: {len(sh)} shifts for a rank-{rank} shape; need one "
                                  f"per dim (0 = not rolled)")
    return tuple(int(v) for v in sh)


@dataclass(frozen=True)
class RollDescriptor:
    """Roll ``shape`` (rank ≤ 8) by ``shifts`` — one int per dim, 0 = not rolled, any sign and
    size — any ``dtype``: ``out[c] = x[(c - shift) mod n]``."""

    shape: Tuple[int, ...]
    shifts: Tuple[int, ...]
    dtype: DType = float32

    def __post_init__(self):
        shape = check_shape(self.shape, "Roll: x")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "shifts", _check_shifts(self.shifts, len(shape), "Roll"))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, COPY_DTYPES, "Roll"))

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return self.shape


@dataclass
class RollArgs:
    """x: input (any strides); out: dense, same shape."""

    x: object
    out: object


@dataclass
class RollBackwardArgs:
    """dy: gradient of the roll output (any strides); dx: dense, same shape."""

    dy: object
    dx: object


class RollPlan(_RemapPlan):
    """torch.roll: ``out[c] = x[(c - shift) mod n]`` per dim (circular remap); every dtype,
    bit-exact; no workspace; x any strides, out dense."""

    descriptor = RollDescriptor
    _mode = "circular"
    _sign = 1

    def _plan(self) -> None:
        d = self.desc
        if self._sign < 0:
            check_dtype(d.dtype, FP4, "RollBackward")
        self._in_shape = self._out_shape = d.shape
        self._los = tuple((self._sign * s) % n if n else 0 for s, n in zip(d.shifts, d.shape))
        self._plan_remap("roll" if self._sign > 0 else "roll_backward")


class RollBackwardPlan(RollPlan):
    """Gradient of roll: ``dx = roll(dy, -shifts)`` (same kernel; f32/f16/bf16/f64, exact)."""

    _sign = -1
    _io = ("dy", "dx")


# ============================================================================ triu / tril
@dataclass(frozen=True)
class TriDescriptor:
    """triu (``upper=True``: keep ``j - i >= k``) / tril (keep ``j - i <= k``) of the last two
    dims of ``shape`` (rank 2..8, leading dims batched), any ``dtype``; zeros are all-bits-zero."""

    shape: Tuple[int, ...]
    k: int = 0
    upper: bool = True
    dtype: DType = float32

    def __post_init__(self):
        shape = check_shape(self.shape, "Tri: x")
        if len(shape) < 2:
            raise InvalidProblemError(f"triu/tril need rank >= 2, got shape {shape}")
        object.__setattr__(self, "shape", shape)
        if isinstance(self.k, bool) or not isinstance(self.k, (int, np.integer)):
            raise InvalidProblemError(f"triu/tril: k must be an int, got {self.k!r}")
        object.__setattr__(self, "k", int(self.k))
        object.__setattr__(self, "upper", bool(self.upper))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, COPY_DTYPES, "Tri"))

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return self.shape


@dataclass
class TriArgs:
    """x: input (any strides); out: dense, same shape."""

    x: object
    out: object


@dataclass
class TriBackwardArgs:
    """dy: gradient of the triu/tril output (any strides); dx: dense, same shape."""

    dy: object
    dx: object


class TriPlan(_RemapPlan):
    """``out = triu(x, k)`` if ``desc.upper`` else ``tril(x, k)``: masked copy, every dtype,
    bit-exact, masked elements never read; no workspace; x any strides, out dense."""

    descriptor = TriDescriptor
    _template = spec.TRI
    _upper = None
    _backward = False

    def _plan(self) -> None:
        d = self.desc
        name = type(self).__name__
        if self._upper is not None and d.upper != self._upper:
            raise InvalidProblemError(f"{name} needs TriDescriptor(upper={self._upper})")
        if self._backward:
            check_dtype(d.dtype, FP4, "TriBackward")
        self._mode = "triu" if d.upper else "tril"
        self._in_shape = self._out_shape = d.shape
        self._los = (0,) * len(d.shape)
        rows, cols = d.shape[-2], d.shape[-1]
        self._kd = max(-rows - 1, min(cols + 1, d.k))   # same mask, fits Int32 math
        self._plan_remap(self._mode + ("_backward" if self._backward else ""))


class TriuPlan(TriPlan):
    """torch.triu: keep ``j - i >= k`` (requires ``TriDescriptor(upper=True)``)."""

    _upper = True


class TrilPlan(TriPlan):
    """torch.tril: keep ``j - i <= k`` (requires ``TriDescriptor(upper=False)``)."""

    _upper = False


class TriBackwardPlan(TriPlan):
    """Gradient of triu/tril: ``dx`` = the same mask applied to ``dy`` (f32/f16/bf16/f64, exact;
    args ``TriBackwardArgs(dy, dx)``)."""

    _backward = True
    _io = ("dy", "dx")

