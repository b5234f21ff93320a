"""Scans along one axis: cumsum, cumprod, cummax, cummin, logcumsumexp, and their backwards.

``ScanPlan`` — ``out[..., ℓ, ...] = x[..., 0, ...] ⊕ … ⊕ x[..., ℓ, ...]`` along ``axis`` of a
rank ≤ 8 input with any strides (0, negative), into an output view of any non-overlapping
strides (dense or not).  Options: ``exclusive`` (the array API's ``include_initial=True``: the
output axis has ``L + 1`` entries, ``out[0]`` = identity, ``out[ℓ+1]`` = inclusive prefix of
ℓ; with ``reverse`` the identity is at ``out[L]``) and ``reverse`` (scan from the end:
``out[ℓ] = x[ℓ] ⊕ … ⊕ x[L-1]``).

==============  ===============================================  ===============================
op              dtypes                                           output
==============  ===============================================  ===============================
cumsum/cumprod  f32 f16 bf16 f64; int8..int64, uint8..uint64,    input dtype for floats; int64
                bool                                             (signed, bool) / uint64 (uint)
cummax/cummin   the same                                         values (input dtype) + int64
                                                                 indices (torch.cummax: ties →
                                                                 last index, NaN propagates)
logcumsumexp    f32 f16 bf16 f64                                 input dtype
==============  ===============================================  ===============================

Half types compute in f32, f64 in f64, integers in 64 bits (wrapping like numpy).
``exclusive`` is wired for cumsum, cumprod and logcumsumexp.  Output dtypes other than the
defaults are the caller's cast (the array namespace casts).

``ScanBackwardPlan`` — dx from dy: cumsum → the opposite-direction cumsum of dy; cumprod → a
reverse affine recurrence (exact with zeros, no division: dx_i = y_{i-1}·(dy_i + U_{i+1}),
U_i = x_i·(dy_i + U_{i+1})); cummax / cummin → a segmented reverse sum over runs of equal
indices (dx_k = Σ_{j: idx_j = k} dy_j, no atomics); logcumsumexp → a reverse scaled signed sum
(dx_i = Σ_{j≥i} dy_j·exp(x_i − y_j), each term ≤ |dy_j|).  Float dtypes.

Kernels (``ops/scan/specs/scan.py``): one template, paths ``vec`` (unit axis stride, aligned:
16-byte accesses, one CTA per row), ``row`` (any strides), ``col`` (one thread per row; the
coalesced path when the axis is not the fastest-varying dim, and the short-row path).  Few
long rows are split into chunks scanned reduce-then-scan (chunk totals → workspace, then each
chunk rescanned with the ordered combination of the preceding totals): deterministic,
bit-identical reruns, for every dtype — chosen over a decoupled look-back, which is faster (one
pass instead of 1.5) but order-deterministic for integers only.  ``workspace_size()`` is the
chunk-total buffer (0 when no split is possible for the shape).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional, Tuple

from ...dtypes import ALL_DTYPES, DType, dtype as as_dtype, float32, int64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import (Plan, align_up, check_dtype, check_writable_no_overlap, collapse_dims,
                     norm_axis, prod, view_arg)
from ...tensor import TensorView, check_shape
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace
from .specs import scan as spec
from .specs.scan import ScanKnobs

FW_OPS = {"cumsum": "sum", "cumprod": "prod", "cummax": "max", "cummin": "min",
          "logcumsumexp": "lse"}
BW_OPS = {"cumsum": "sum", "cumprod": "prod_bw", "cummax": "max_bw", "cummin": "max_bw",
          "logcumsumexp": "lse_bw"}
EXCLUSIVE_OPS = ("cumsum", "cumprod", "logcumsumexp")
INDEX_OPS = ("cummax", "cummin")
TARGET_CTAS = 1024          # split long rows until about this many CTAs run
_BY_SHORT = {d.short: d for d in ALL_DTYPES}


def _wired(op: str):
    return tuple(_BY_SHORT[d] for d, _ in spec.op_dtypes(FW_OPS[op]))


def default_out_dtype(op: str, dt: DType) -> DType:
    """Output value dtype of ``op`` on ``dt``: int64 / uint64 for integer and bool sums and
    products (array API), the input dtype otherwise."""
    if op in ("cumsum", "cumprod"):
        return _BY_SHORT[spec.acc_out(dt.short)]
    return dt


def _flag(v, name: str, what: str) -> bool:
    if not isinstance(v, bool):
        raise InvalidProblemError(f"{what}: {name} must be a bool, got {v!r}")
    return v


def _precision(dt: DType, op: str) -> PrecisionGuarantee:
    if dt.is_floating:
        acc = dt if dt.short == "f64" else float32
    else:
        acc = _BY_SHORT["u64" if dt.short.startswith("u") else "i64"]
    return PrecisionGuarantee(math_precision=acc, accumulator=acc,
                              bit_stable_on_same_hardware=True, deterministic=True)


# --------------------------------------------------------------------------- launch geometry
def _nchunk_row(F: int, L: int, tile: int) -> Tuple[int, int]:
    """(nchunk, chunk) for the row paths: split only when there are few rows."""
    if F >= TARGET_CTAS // 2 or L <= 2 * tile:
        return 1, max(L, 1)
    want = min(-(-L // tile), -(-TARGET_CTAS // F))
    chunk = -(-(-(-L // want)) // tile) * tile
    return -(-L // chunk), chunk


def _nchunk_col(F: int, L: int) -> Tuple[int, int]:
    ctas = -(-F // spec.COL_THREADS)
    if ctas >= TARGET_CTAS // 2 or L <= 256:
        return 1, max(L, 1)
    want = min(-(-L // 64), -(-TARGET_CTAS // ctas))
    chunk = -(-(-(-L // want)) // spec.COL_ILP) * spec.COL_ILP
    return -(-L // chunk), chunk


def workspace_bound(F: int, L: int) -> int:
    """Largest chunk-total buffer any path may need for F rows of length L (bytes)."""
    if F == 0 or L == 0:
        return 0
    n = 1
    for tile in (spec.THREADS * e for e in (1, 2, 4, 8, 16)):
        n = max(n, _nchunk_row(F, L, tile)[0])
    n = max(n, _nchunk_col(F, L)[0])
    if n == 1:
        return 0
    return 2 * align_up(F * n * 8)


class _Launch:
    """One launch record: knobs, grid, chunking and the scalar tail of the ABI."""

    __slots__ = ("knobs", "kflags", "grid", "nchunk", "chunk", "F", "scalars", "ptr_off",
                 "ws1_off")

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)


@functools.lru_cache(maxsize=2048)
def _geometry(op: str, dt: str, odt: str, shape, axis: int, L: int, reverse: bool, fw: bool,
              ops, exclusive: bool = False):
    """Launch record for rows of ``shape`` along ``axis`` (extent ``L`` of the scan).
    ``ops``: per operand (a, b, c, o, oi) (strides, pointer mod 16, itemsize, axis length) or
    None when unused."""
    outer = [i for i in range(len(shape)) if i != axis]
    oshape = [shape[i] for i in outer]
    sets = [[(o[0][i] if o else 0) for i in outer] for o in ops]
    # fastest-varying (smallest |x stride|) outer dim last: coalesced fibers on the col path
    order = sorted(range(len(outer)), key=lambda j: -abs(sets[0][j]))
    cs = collapse_dims([oshape[j] for j in order], *[[s[j] for j in order] for s in sets])
    ext, css = cs[0], cs[1:]
    if len(ext) > 7:
        raise UnsupportedError("scan: more than 7 non-collapsible outer dims")
    F = prod(ext)
    if F >= 2**31 - 1:
        raise UnsupportedError(f"scan: {F} rows exceed the grid limit (2^31 - 1)")
    pad = 7 - len(ext)
    e7 = (1,) * pad + tuple(ext)
    outer7 = [(0,) * pad + tuple(s) for s in css]
    phys = [(o[0][axis] if (o and shape) else 0) for o in ops]
    knob_op = FW_OPS.get(op, op) if fw else BW_OPS[op]
    vec = spec.vec_width(dt, odt)
    kflags = 0
    # col: short rows, or an axis that is not the fastest-varying dim (threads across rows are
    # coalesced; chunks supply the parallelism) unless there are too few rows to fill a warp
    if L <= 32 or (abs(phys[0]) != 1 and F >= 32):
        path = "col"
    else:
        path = "row"
        # vec: unit physical axis stride, aligned rows; reversal in the kernel (not with an
        # exclusive output, whose mirror image is shifted by one element)
        if ((fw or knob_op == "sum") and not (reverse and exclusive) and L % vec == 0
                and phys[0] == 1 and phys[3] == 1 and (ops[4] is None or phys[4] == 1)):
            okv = all((o is None) or (o[1] % 16 == 0 and all(st % vec == 0 for st in outer7[k]))
                      for k, o in enumerate(ops) if k in (0, 3, 4))
            if okv:
                path = "vec"
    # axis strides and pointer offsets (bytes) of the logical (scan-order) views
    ax, off = [], []
    for o, s in zip(ops, phys):
        if reverse and path != "vec" and o:
            off.append((o[3] - 1) * s * o[2] if o[3] > 0 else 0)
            s = -s
        else:
            off.append(0)
        ax.append(s)
    if reverse and path == "vec":
        kflags = spec.REVERSE
    knobs = ScanKnobs(knob_op, dt, odt, path, vec if path == "vec" else 1)
    if path == "col":
        nchunk, chunk = _nchunk_col(F, L)
        grid = (-(-F // spec.COL_THREADS), nchunk, 1)
    else:
        nchunk, chunk = _nchunk_row(F, L, spec.tile_elems(knobs))
        grid = (F, nchunk, 1)
    scalars = [L, F, nchunk, chunk]
    strides = []
    for k in range(5):
        strides += [ax[k]] + list(outer7[k])
    ws1_off = align_up(F * nchunk * 8) if nchunk > 1 else 0
    return _Launch(knobs=knobs, kflags=kflags, grid=grid, nchunk=nchunk, chunk=chunk, F=F,
                   scalars=(scalars, list(e7), strides), ptr_off=tuple(off), ws1_off=ws1_off)


def _opdesc(v: Optional[TensorView], length: int):
    if v is None:
        return None
    return (tuple(v.strides), v.ptr % 16, v.dtype.itemsize, length)


class _ScanPlanBase(Plan):
    """Shared select and launch path of ScanPlan and ScanBackwardPlan (``_fw``: the forward
    combine ops and output dtype; else the backward ops, output in the input dtype)."""

    _fw = True
    _what = "Scan"

    def _plan(self) -> None:
        d = self.desc
        shape, axis = _check_axis_shape(d.in_shape, d.axis, self._what)
        self._shape, self._axis = shape, axis
        dt = self._dt = d.dtype
        odt = self._odt = d.out_dtype if self._fw else dt
        self._L = shape[axis]
        self._F = prod(s for i, s in enumerate(shape) if i != axis)
        self._ws = workspace_bound(self._F, self._L)
        cap = self.pref.max_workspace_bytes
        if cap is not None and self._ws > cap:
            raise UnsupportedError(f"{self._what}: needs {self._ws} workspace bytes > the "
                                   f"preference's max_workspace_bytes={cap}")
        knobs = ScanKnobs((FW_OPS if self._fw else BW_OPS)[d.op], dt.short, odt.short, "row", 1)
        self._sku = KernelSku(OpCategory.SCAN, d.op if self._fw else d.op + "_backward", dt,
                              self._arch, BackendKind.CUTE_DSL, _precision(dt, d.op),
                              aux_element=odt if self._fw else None, template=spec.SCAN.name,
                              knobs=freeze_knobs(knobs))

    def workspace_size(self) -> int:
        return self._ws

    def _run_scan(self, fw: bool, views, L: int, reverse: bool, exclusive: bool, stream: int,
                  ws) -> None:
        d = self.desc
        op = d.op
        shape = self._shape
        ops = tuple(_opdesc(v, (L + 1 if (k == 3 and exclusive) else L))
                    for k, v in enumerate(views))
        g = _geometry(op, self._dt.short, self._odt.short, shape, self._axis, L, reverse, fw, ops,
                      exclusive)
        if g.nchunk > 1 and ws.nbytes < 2 * g.ws1_off:
            raise UnsupportedError("scan: workspace smaller than this layout needs")
        lk = self._kernel(spec.SCAN, g.knobs, views[0].device)
        ptrs = []
        for k, v in enumerate(views):
            ptrs.append(views[0].ptr if v is None else v.ptr + g.ptr_off[k])
        w0 = ws.ptr if g.nchunk > 1 else views[0].ptr
        w1 = ws.ptr + g.ws1_off if g.nchunk > 1 else views[0].ptr
        head, e7, strides = g.scalars
        flags = (spec.EXCLUSIVE if exclusive else 0) | g.kflags
        pos0, dpos = ((L - 1, -1) if reverse else (0, 1))
        phases = (1, 2) if g.nchunk > 1 else (0,)
        for ph in phases:
            lk.launch(g.grid, ptrs + [w0, w1] + head + [ph, flags, pos0, dpos] + e7 + strides,
                      stream)


def _check_axis_shape(shape, axis, what):
    shape = check_shape(shape, what)
    ax = norm_axis(axis, len(shape), what)
    return shape, ax


# ==================================================================================== forward
@dataclass(frozen=True)
class ScanDescriptor:
    """A scan ``op`` (cumsum, cumprod, cummax, cummin, logcumsumexp) along ``axis`` of an input
    of ``shape`` (rank ≤ 8; a 0-d input scans as shape (1,)) and ``dtype``; ``exclusive`` (output
    axis L + 1, identity first — include_initial) and ``reverse`` (scan from the end).
    ``out_dtype`` (None = default) must equal :func:`default_out_dtype`."""

    shape: Tuple[int, ...]
    axis: int = -1
    op: str = "cumsum"
    dtype: DType = float32
    exclusive: bool = False
    reverse: bool = False
    out_dtype: Optional[DType] = None

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))
        if self.op not in FW_OPS:
            raise InvalidProblemError(f"Scan: unknown op {self.op!r}; wired: {', '.join(FW_OPS)}")
        object.__setattr__(self, "dtype", check_dtype(self.dtype, _wired(self.op),
                                                      f"Scan {self.op}"))
        _flag(self.exclusive, "exclusive", "Scan")
        _flag(self.reverse, "reverse", "Scan")
        if self.exclusive and self.op not in EXCLUSIVE_OPS:
            raise UnsupportedError(f"Scan: exclusive {self.op} is not wired; wired: "
                                   f"{', '.join(EXCLUSIVE_OPS)}")
        dflt = default_out_dtype(self.op, self.dtype)
        od = dflt if self.out_dtype is None else as_dtype(self.out_dtype)
        if od != dflt:
            raise UnsupportedError(f"Scan {self.op}[{self.dtype.name}]: out_dtype {od.name} is not "
                                   f"wired; wired: {dflt.name} (cast the input or the result)")
        object.__setattr__(self, "out_dtype", od)

    @property
    def in_shape(self) -> Tuple[int, ...]:
        return self.shape if self.shape else (1,)

    @property
    def out_shape(self) -> Tuple[int, ...]:
        s = self.in_shape
        if not self.exclusive:
            return tuple(self.shape) if self.shape else (1,)
        ax = self.axis % len(s)
        return s[:ax] + (s[ax] + 1,) + s[ax + 1:]


@dataclass
class ScanArgs:
    """x: input (any strides); out: values (shape ``desc.out_shape``, any non-overlapping
    strides); indices: int64, shape of x (cummax / cummin only; required for them)."""

    x: object
    out: object
    indices: object = None


class ScanPlan(_ScanPlanBase):
    """Scan along one axis (see module doc).  Workspace: the chunk-total buffer when few long
    rows are split over several CTAs (``workspace_size()``).  Deterministic, bit-identical
    reruns (the association order depends on the shape only)."""

    descriptor = ScanDescriptor

    def is_empty(self) -> bool:
        return self._F == 0 or (self._L == 0 and not self.desc.exclusive)

    def _bind(self, args):
        d = self.desc
        x = view_arg(args.x, "x", dtype=d.dtype)
        if tuple(x.shape) not in (tuple(d.shape), self._shape):
            raise InvalidProblemError(f"x: shape {x.shape} != expected {d.shape}")
        out = view_arg(args.out, "out", dtype=d.out_dtype, device=x.device)
        if tuple(out.shape) != tuple(d.out_shape) and not (out.shape == () and d.shape == ()
                                                           and not d.exclusive):
            raise InvalidProblemError(f"out: shape {out.shape} != expected {d.out_shape}")
        check_writable_no_overlap(out, "out")
        idx = None
        if d.op in INDEX_OPS:
            if args.indices is None:
                raise InvalidProblemError(f"Scan {d.op}: indices (int64, shape {d.shape}) are "
                                          f"required")
            idx = view_arg(args.indices, "indices", dtype=int64, device=x.device)
            if tuple(idx.shape) not in (tuple(d.shape), self._shape):
                raise InvalidProblemError(f"indices: shape {idx.shape} != expected {d.shape}")
            check_writable_no_overlap(idx, "indices")
        elif args.indices is not None:
            raise InvalidProblemError(f"Scan {d.op}: indices are only produced by cummax/cummin")
        x, out, idx = (_as_rank(v, self._shape, self._axis, d.exclusive and k == 1)
                       for k, v in enumerate((x, out, idx)))
        return x, out, idx

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        x, out, idx = bound
        d = self.desc
        self._run_scan(True, (x, None, None, out, idx), self._L, d.reverse, d.exclusive, stream,
                       ws)


def _as_rank(v: Optional[TensorView], shape, axis, exclusive: bool) -> Optional[TensorView]:
    """0-d operands as shape (1,)."""
    if v is None or v.shape:
        return v
    return TensorView._trusted(v.ptr, (1,), (0,), v.dtype, v.device, v.owner)


# =================================================================================== backward
@dataclass(frozen=True)
class ScanBackwardDescriptor:
    """Gradient of ``ScanDescriptor(shape, axis, op, dtype, exclusive, reverse)`` for float
    dtypes (f32 f16 bf16 f64).  ``exclusive`` is wired for cumsum."""

    shape: Tuple[int, ...]
    axis: int = -1
    op: str = "cumsum"
    dtype: DType = float32
    exclusive: bool = False
    reverse: bool = False

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))
        if self.op not in BW_OPS:
            raise InvalidProblemError(f"ScanBackward: unknown op {self.op!r}; wired: "
                                      f"{', '.join(BW_OPS)}")
        fl = tuple(_BY_SHORT[d] for d in spec.FLOATS)
        object.__setattr__(self, "dtype", check_dtype(self.dtype, fl, f"ScanBackward {self.op}"))
        _flag(self.exclusive, "exclusive", "ScanBackward")
        _flag(self.reverse, "reverse", "ScanBackward")
        if self.exclusive and self.op != "cumsum":
            raise UnsupportedError(f"ScanBackward: exclusive {self.op} is not wired; wired: cumsum")

    @property
    def in_shape(self) -> Tuple[int, ...]:
        return self.shape if self.shape else (1,)

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return ScanDescriptor(self.shape, self.axis, self.op, self.dtype, self.exclusive,
                              self.reverse).out_shape


@dataclass
class ScanBackwardArgs:
    """dy: gradient of the forward output (``desc.out_shape``); dx: gradient of x (shape of x,
    any non-overlapping strides).  Also: x (cumprod, logcumsumexp), y = forward output
    (cumprod, logcumsumexp), indices (cummax / cummin: the forward's int64 indices)."""

    dy: object
    dx: object
    x: object = None
    y: object = None
    indices: object = None


_BW_NEEDS = {"cumsum": (), "cumprod": ("x", "y"), "cummax": ("indices",),
             "cummin": ("indices",), "logcumsumexp": ("x", "y")}


class ScanBackwardPlan(_ScanPlanBase):
    """dx of a scan (see module doc); one scan launch (two with a chunk split) in the opposite
    direction of the forward.  Deterministic, bit-identical reruns."""

    descriptor = ScanBackwardDescriptor
    _fw = False
    _what = "ScanBackward"

    def is_empty(self) -> bool:
        return self._F == 0 or self._L == 0

    def _bind(self, args):
        d = self.desc
        sh = self._shape
        dy = view_arg(args.dy, "dy", dtype=d.dtype)
        dev = dy.device
        if tuple(dy.shape) not in (tuple(d.out_shape), ) and not (not d.shape and dy.numel == 1):
            raise InvalidProblemError(f"dy: shape {dy.shape} != expected {d.out_shape}")
        dx = view_arg(args.dx, "dx", dtype=d.dtype, device=dev)
        if tuple(dx.shape) not in (tuple(d.shape), sh):
            raise InvalidProblemError(f"dx: shape {dx.shape} != expected {d.shape}")
        check_writable_no_overlap(dx, "dx")
        need = _BW_NEEDS[d.op]
        got = {}
        for name in ("x", "y", "indices"):
            v = getattr(args, name)
            if name in need:
                if v is None:
                    raise InvalidProblemError(f"ScanBackward {d.op}: {name} is required")
                got[name] = view_arg(v, name, dtype=int64 if name == "indices" else d.dtype,
                                     device=dev)
                if tuple(got[name].shape) not in (tuple(d.shape), sh):
                    raise InvalidProblemError(f"{name}: shape {got[name].shape} != expected "
                                              f"{d.shape}")
            else:
                got[name] = None
        dy = _as_rank(dy, sh, self._axis, False)
        dx = _as_rank(dx, sh, self._axis, False)
        got = {k: _as_rank(v, sh, self._axis, False) for k, v in got.items()}
        return dy, dx, got

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        dy, dx, got = bound
        d = self.desc
        L, ax = self._L, self._axis
        if d.exclusive:
            # the inclusive positions of the L + 1 outputs: dy[1:] forward, dy[:L] reverse
            shift = 0 if d.reverse else 1
            dy = TensorView._trusted(dy.ptr + shift * dy.strides[ax] * dy.dtype.itemsize,
                                     sh_with(dy.shape, ax, L), dy.strides, dy.dtype, dy.device,
                                     dy.owner)
        rev = not d.reverse
        if d.op == "cumsum":
            views = (dy, None, None, dx, None)
        elif d.op == "cumprod":
            views = (got["x"], dy, got["y"], dx, None)
        elif d.op in INDEX_OPS:
            views = (got["indices"], dy, None, dx, None)
        else:
            views = (got["x"], dy, got["y"], dx, None)
        # positions: the kernel's pos0/dpos follow the scan direction; indices are physical
        self._run_scan(False, views, L, rev, False, stream, ws)


def sh_with(shape, axis, n):
    s = list(shape)
    s[axis] = n
    return tuple(s)
