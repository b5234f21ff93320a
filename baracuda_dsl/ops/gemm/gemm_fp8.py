"""fp8 GEMM (issue 7's ``Fp8GemmPlan``) on Ada / Hopper tensor cores, f32 accumulate:

    c[i, j] = out( scale_a[i] · scale_b[j] · Σ_p a[i, p] · b[p, j]  (+ bias[j]) )

a (m, k) and b (k, n) are float8_e4m3 (e4m3fn: torch.float8_e4m3fn) or float8_e5m2, each
independently; c (m, n) and bias (n,) are ``out_dtype`` (bfloat16, float16 or float32).
Precision: products of fp8 values are exact; the scale / bias math is f32 and c is rounded
once to ``out_dtype`` (round to nearest even: <= 2**-9 relative per element for bf16, 2**-11
for f16; f16 overflows to inf past 65504).  The sum depends on the kernel:

* sm90a wgmma (the default for m > 16): Hopper's fp8 tensor cores keep the running sum with a
  reduced-precision accumulator (like ``torch._scaled_mm(use_fast_accum=True)``; measured on an
  H100: 6e-5 relative at k = 48-64, 2e-4 at k = 208, 5e-4 at k = 1040 against a float64
  reference of the same fp8 inputs, f32 output) — below bf16 output rounding, visible in f32.
* mma.sync (sm90a decode shapes, e5m2 · e5m2; fp8 unpacked to f16, f32 accumulate): an
  f32-accumulated sum (~1e-7·sqrt(k) relative).  sm89's native fp8 mma.sync accumulation has
  not been measured here.

Scales (float32, device, always required): ``scale_a`` of shape (1,) / (1, 1) (per-tensor) or
(m,) / (m, 1) (per-row); ``scale_b`` of shape (1,) / (1, 1) (per-tensor) or (n,) / (1, n)
(per-column) — torch._scaled_mm's conventions.  Epilogues ``identity`` and ``bias`` (bias
added after the scales).

Wired layouts (``torch._scaled_mm``'s): a row-major (unit stride along k, any row stride), b
column-major (unit stride along k, i.e. b = w.T of a row-major (n, k) weight, any column
stride); other layouts raise UnsupportedError (make a k-major copy first).  Alignment: a / b
base pointers 16-byte aligned, k and the leading dims (row stride of a, column stride of b)
multiples of 16 — else UnsupportedError (k) / MisalignedOperandError, before any launch.  k = 0
is not wired.  c has any strides and must not alias a, b, bias or the scales.  Workspace only
for split-K (sm90a small grids, below): float32 (S, m, align_up(n, 4)); deterministic (fixed
k order, no atomics).

Kernels (sm89 and sm90a; sm80 has no fp8 tensor cores → UnsupportedError):

* sm90a, a / b pair in ``specs.gemm_sm90.FP8_PAIRS`` (every pair but e5m2 · e5m2), any m
  → ``gemm_sm90``'s fp8 SKUs: wgmma (QGMMA) m64nNk32 fed by TMA, the
  warp-specialised persistent kernel of ``GemmPlan`` with 128 fp8 elements of k per stage and
  the scales applied to the accumulators; tile 128×256 when it yields >=
  ``SM90_BIG_TILE_MIN_CTAS`` tiles, else 128×128 (``tile="wgmma128x128" / "wgmma128x256"``
  forces one).  Small grids (< ``SPLIT_BELOW_TILES`` tiles of 128×128) split k when each
  split keeps >= ``split_min_k(m)`` of k (measured on an H100 vs torch._scaled_mm, e4m3,
  k = 4096: m = 16 / 1, n = 4096: S = 4 0.47 / 0.52 vs S = 1 0.38 / 0.39 and the mma.sync
  kernel 0.21 / 0.24; m = 128, n = 4096: S = 1 0.52 vs S = 2 0.47, at k = 14336 S = 2 0.72 vs
  S = 1 0.67; m = 16, n = 14336 (112 tiles): unsplit 0.81 vs mma.sync 0.61).  Operands TMA
  cannot take (leading dim 0) fall back to the kernel below.
* otherwise ``gemm_fp8`` (``ops/gemm/specs/gemm_fp8.py``): ``mma.sync`` m16n8k32 fp8 with the
  ``gemm_tf32`` 4-stage cp.async pipeline on 32-bit words.  On sm89 it issues native fp8
  MMAs; on sm90a ptxas lowers each fp8 ``mma.sync`` to fp8→f16 unpacks and two f16 MMAs (so
  there it serves e5m2 · e5m2 and forced mma tiles only).  Tile: 128×128 (×64 bytes of k) when it
  yields >= ``BIG_TILE_MIN_CTAS`` CTAs, else 64×64 (×128 bytes).

Tuning (``PlanPreference(tuning=GemmTuning(...))``): ``tile`` forces the mma.sync tiles "128x128"
/ "64x64" or, on sm90a, "wgmma128x128" / "wgmma128x256"; ``splits`` the split-K count of the
wgmma 128×128 route (1 = off).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple, Optional

from ...dtypes import DType, bfloat16, float8_e4m3, float8_e5m2, float16, float32
from ...errors import InvalidProblemError, MisalignedOperandError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, align_up, check_dtype, check_writable_no_overlap, view_arg
from ...vocabulary import ArchSku, BackendKind, KernelSku, OpCategory, PrecisionGuarantee
from .gemm_sm90_launch import Sm90Launcher
from .specs import gemm as spec_gemm
from .specs import gemm_fp8 as spec
from .specs import gemm_sm90 as spec90
from .split_k import (check_split_workspace, launch_splitk_reduce, whole_block_split,
                      workspace_bytes, workspace_cols)
from .tuning import GemmTuning

FP8_DTYPES = (float8_e4m3, float8_e5m2)
OUT_DTYPES = (bfloat16, float16, float32)
EPILOGUES = ("identity", "bias")
#: arches with fp8 tensor cores
ARCHES = (ArchSku.SM89, ArchSku.SM90A)
#: the 128x128 tile is used when it gives at least this many CTAs (about one H100 wave)
BIG_TILE_MIN_CTAS = 96
#: sm90a: m from this on runs the wgmma kernel (decode shapes included: measured faster than
#: the emulated fp8 mma.sync, see the module docstring)
WGMMA_MIN_M = 1
#: sm90a: the 128x256 wgmma tile when it gives at least this many tiles (one H100 wave)
SM90_BIG_TILE_MIN_CTAS = 132
#: sm90a tile names (``GemmTuning.tile``) -> specs.gemm_sm90 tile knob
SM90_TILES = {"wgmma128x128": "128x128", "wgmma128x256": "128x256"}
#: sm90a small grids (fewer than SPLIT_BELOW_TILES 128×128 tiles) split k over the persistent
#: wgmma kernel when every split keeps >= split_min_k(m) of k: S = min(SPLIT_MAX, SMs // tiles,
#: k // split_min_k(m)); f32 partials in the workspace, ``gemm_splitk_reduce`` adds bias and
#: rounds to out_dtype (as GemmPlan's wgmma split)
SPLIT_BELOW_TILES = 64
SPLIT_MAX = 8
SPLIT_SMS = 132


def split_min_k(m: int) -> int:
    """Least k per split: 1024 for decode-like m <= 64 (weight streaming wants every SM),
    4096 above (the extra reduction launch costs more than the split gains at k = 4096)."""
    return 1024 if m <= 64 else 4096


_I32 = 2 ** 31 - 1
_V = spec.FP8_VEC
#: dtype short name -> the PTX type of the mma (the kernel knob)
_PTX = {"fp8e4m3": "e4m3", "fp8e5m2": "e5m2"}
#: spellings the package's dtype table does not know (torch's e4m3fn, the PTX type names)
_ALIASES = {"float8_e4m3fn": float8_e4m3, "torch.float8_e4m3fn": float8_e4m3,
            "e4m3": float8_e4m3, "e5m2": float8_e5m2}


def _fp8_dtype(dt, what: str) -> DType:
    alias = _ALIASES.get(dt if isinstance(dt, str) else str(dt))
    return check_dtype(alias if alias is not None else dt, FP8_DTYPES, what)


@dataclass(frozen=True)
class Fp8GemmDescriptor:
    """c (m, n) = scale_a · scale_b · (a (m, k) @ b (k, n)) (+ bias) with a_dtype / b_dtype in
    float8_e4m3 / float8_e5m2 and out_dtype in bfloat16 / float16 / float32; ``epilogue`` is
    "identity" or "bias".  k must be a positive multiple of 16."""

    m: int
    n: int
    k: int
    a_dtype: DType = float8_e4m3
    b_dtype: DType = float8_e4m3
    out_dtype: DType = bfloat16
    epilogue: str = "identity"

    def __post_init__(self):
        for name in ("m", "n", "k"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise InvalidProblemError(f"Fp8Gemm: {name} must be an int >= 0, got {v!r}")
            if v > _I32:
                raise UnsupportedError(f"Fp8Gemm: {name} = {v} exceeds 2**31 - 1")
        if self.k == 0 or self.k % _V:
            raise UnsupportedError(f"Fp8Gemm: k = {self.k} is not wired; wired: k a positive "
                                   f"multiple of {_V}")
        object.__setattr__(self, "a_dtype", _fp8_dtype(self.a_dtype, "Fp8Gemm a"))
        object.__setattr__(self, "b_dtype", _fp8_dtype(self.b_dtype, "Fp8Gemm b"))
        object.__setattr__(self, "out_dtype", check_dtype(self.out_dtype, OUT_DTYPES,
                                                          "Fp8Gemm out"))
        if self.epilogue not in EPILOGUES:
            raise UnsupportedError(f"Fp8Gemm: epilogue {self.epilogue!r} is not wired; wired: "
                                   f"{', '.join(EPILOGUES)}")


@dataclass
class Fp8GemmArgs:
    """a (m, k) row-major fp8, b (k, n) column-major fp8, c (m, n) out_dtype (any strides),
    scale_a float32 (1,) / (1, 1) / (m,) / (m, 1), scale_b float32 (1,) / (1, 1) / (n,) /
    (1, n), bias (n,) out_dtype (epilogue "bias" only).  Device views."""

    a: object
    b: object
    c: object
    scale_a: object
    scale_b: object
    bias: object = None


class _Views(NamedTuple):
    """Checked operands of one call: views, leading dims (bytes) and scale strides (elements,
    0 = broadcast)."""

    a: object
    b: object
    c: object
    sa: object
    sb: object
    bias: object
    lda: int
    ldb: int
    sas: int
    sbs: int


def _kmajor_ld(view, rows: int, cols: int, s_rows: int, s_cols: int, name: str, wired: str):
    """Leading dim (bytes) of a k-major operand seen as (rows, k); typed errors otherwise."""
    if not (s_cols == 1 or cols == 1):
        raise UnsupportedError(f"Fp8Gemm: {name} has no unit stride along k; wired: {wired} "
                               f"(make a k-major copy first)")
    ld = s_rows if rows > 1 else align_up(cols, _V)
    if ld < 0:
        raise UnsupportedError(f"Fp8Gemm: {name} has a negative leading dim {ld}; wired: "
                               f"{wired} with a leading dim >= 0")
    if ld % _V:
        raise MisalignedOperandError(f"Fp8Gemm: {name}'s leading dim {ld} is not a multiple "
                                     f"of {_V}")
    if view.ptr % 16:
        raise MisalignedOperandError(f"Fp8Gemm: {name}'s base pointer is not 16-byte aligned")
    return ld


def _scale(obj, name: str, length: int, row: bool, device: int):
    """(view, element stride or 0) of a float32 scale: (1,), (1, 1), (length,) and (length, 1)
    for ``row`` (scale_a) or (1, length) otherwise (scale_b); InvalidProblemError else."""
    v = view_arg(obj, name, device=device)
    if v.dtype is not float32:
        raise InvalidProblemError(f"Fp8Gemm: {name} must be float32, got {v.dtype.name}")
    shp = tuple(v.shape)
    full = (length, 1) if row else (1, length)
    if shp not in ((1,), (1, 1), (length,), full):
        want = f"(1,), (1, 1), ({length},) or {full}"
        raise InvalidProblemError(f"Fp8Gemm: {name} must have shape {want}, got {shp}")
    if math.prod(shp) == 1:
        return v, 0
    return v, v.strides[0] if (len(shp) == 1 or row) else v.strides[1]


class Fp8GemmPlan(Plan):
    """e4m3 / e5m2 GEMM on tensor cores (sm89, sm90a) with per-tensor / per-row / per-column
    float32 scales, optional bias, bf16 / f16 / f32 output.  See the module docstring for
    layouts, alignment, precision, the tile heuristic and the tuning it takes."""

    descriptor = Fp8GemmDescriptor

    def _plan(self) -> None:
        d = self.desc
        tuning = self.pref.tuning_for(GemmTuning)
        tile = tuning.tile
        if self._arch not in ARCHES:
            raise UnsupportedError(f"Fp8Gemm: fp8 tensor cores need sm89 or sm90a, the plan "
                                   f"targets {self._arch.value}; wired: sm89, sm90a")
        pair = (_PTX[d.a_dtype.short], _PTX[d.b_dtype.short])
        wg_ok = self._arch is ArchSku.SM90A and pair in spec90.FP8_PAIRS
        if tile is not None and tile not in spec.FP8_TILES and tile not in SM90_TILES:
            raise UnsupportedError(f"Fp8Gemm: tile {tile!r} is not wired; wired: "
                                   f"{', '.join(spec.FP8_TILES)}, {', '.join(SM90_TILES)}")
        if tile in SM90_TILES and not wg_ok:
            raise UnsupportedError(f"Fp8Gemm: tile {tile} needs sm90a and an a / b type pair "
                                   f"in {spec90.FP8_PAIRS}; this plan: {self._arch.value}, "
                                   f"{pair}")
        if tile is None and wg_ok and d.m >= WGMMA_MIN_M:
            t256 = spec90.num_tiles(d.m, d.n, "128x256")
            tile = "wgmma128x256" if t256 >= SM90_BIG_TILE_MIN_CTAS else "wgmma128x128"
        self._wgmma = None
        if tile in SM90_TILES:
            self._wgmma = spec90.Sm90Knobs(dtype=pair[0], b=pair[1], out=d.out_dtype.short,
                                           a_major="k", b_major="k", tile=SM90_TILES[tile],
                                           cluster=1)
            self._sm90 = Sm90Launcher()
            tile = None
        if tile is None:   # the mma.sync fallback of operands TMA cannot take
            big = math.ceil(d.m / 128) * math.ceil(d.n / 128)
            tile = "128x128" if big >= BIG_TILE_MIN_CTAS else "64x64"
        bm, bn = spec.FP8_TILES[tile][:2]
        if math.ceil(d.m / bm) * math.ceil(d.n / bn) > _I32:
            raise UnsupportedError(f"Fp8Gemm: {d.m}x{d.n} needs more than 2**31 - 1 CTAs of "
                                   f"tile {tile}")
        self._tile = tile
        self._knobs = spec.Fp8Knobs(a=pair[0], b=pair[1], out=d.out_dtype.short, tile=tile)
        self._splits, self._kps = self._split_k(tuning.splits)
        if self._splits > 1:
            self._wgmma = replace(self._wgmma, out="f32")      # partial products
            self._rknobs = spec_gemm.SplitKReduceKnobs(out=d.out_dtype.short, act="none")
        tmpl, knobs = ((spec90.GEMM_SM90, self._wgmma) if self._wgmma is not None
                       else (spec.GEMM_FP8, self._knobs))
        pg = PrecisionGuarantee(math_precision=d.a_dtype, accumulator=float32)
        self._sku = KernelSku(OpCategory.GEMM, "fp8_gemm", d.a_dtype, self._arch,
                              BackendKind.CUTE_DSL, pg, aux_element=d.out_dtype,
                              epilogue=d.epilogue, template=tmpl.name,
                              knobs=freeze_knobs(knobs))

    def _split_k(self, forced: Optional[int]):
        """(S, k blocks of 128 per split) of the wgmma 128×128 route; (1, all) when not split."""
        d = self.desc
        kt = -(-d.k // 128)
        wg128 = self._wgmma is not None and self._wgmma.tile == "128x128"
        if forced is not None and forced > 1 and not wg128:
            raise UnsupportedError("Fp8Gemm: split-K is wired for the sm90a wgmma128x128 route "
                                   "only")
        if not wg128 or forced == 1 or d.m == 0 or d.n == 0:
            return 1, kt
        user = forced is not None
        if forced is None:
            tiles = spec90.num_tiles(d.m, d.n, "128x128")
            if tiles >= SPLIT_BELOW_TILES:
                return 1, kt
            forced = min(SPLIT_MAX, SPLIT_SMS // tiles, d.k // split_min_k(d.m))
            if forced < 2:
                return 1, kt
        return whole_block_split(kt, forced, user=user, m=d.m, n=d.n,
                                 cap=self.pref.max_workspace_bytes, what="Fp8Gemm")

    @property
    def splits(self) -> int:
        """The number of k splits (1 = not split)."""
        return self._splits

    def workspace_size(self) -> int:
        """Bytes of the split-K float32 workspace (splits, m, align_up(n, 4)); 0 unsplit."""
        return (workspace_bytes(self._splits, self.desc.m, self.desc.n) if self._splits > 1
                else 0)

    def is_empty(self) -> bool:
        return self.desc.m == 0 or self.desc.n == 0

    def _bind(self, args) -> _Views:
        if not isinstance(args, Fp8GemmArgs):
            raise InvalidProblemError(f"Fp8GemmPlan needs Fp8GemmArgs, got "
                                      f"{type(args).__name__}")
        d = self.desc
        a = view_arg(args.a, "a", shape=(d.m, d.k), dtype=d.a_dtype)
        b = view_arg(args.b, "b", shape=(d.k, d.n), dtype=d.b_dtype, device=a.device)
        c = view_arg(args.c, "c", shape=(d.m, d.n), dtype=d.out_dtype, device=a.device)
        if c.numel:
            check_writable_no_overlap(c, "c")
        lda = _kmajor_ld(a, d.m, d.k, a.strides[0], a.strides[1], "a", "row-major a")
        ldb = _kmajor_ld(b, d.n, d.k, b.strides[1], b.strides[0], "b", "column-major b")
        sa, sas = _scale(args.scale_a, "scale_a", d.m, True, a.device)
        sb, sbs = _scale(args.scale_b, "scale_b", d.n, False, a.device)
        bias = None
        if d.epilogue == "bias":
            bias = view_arg(args.bias, "bias", shape=(d.n,), dtype=d.out_dtype, device=a.device)
        elif args.bias is not None:
            raise InvalidProblemError("Fp8Gemm: bias given but the epilogue is 'identity' "
                                      "(select with epilogue='bias')")
        return _Views(a, b, c, sa, sb, bias, lda, ldb, sas, sbs)

    def _route(self, v: _Views):
        """(template, knobs, leading dims) of the kernel for checked views ``v``: the sm90a
        wgmma SKU picked by ``_plan`` when TMA can take the operands (leading dims > 0 and
        below 2**36 bytes; alignment is already checked), else the ``mma.sync`` SKU."""
        if self._wgmma is not None and 0 < v.lda < 2 ** 36 and 0 < v.ldb < 2 ** 36:
            return spec90.GEMM_SM90, self._wgmma, (v.lda, v.ldb)
        return spec.GEMM_FP8, self._knobs, None

    def kernel_for(self, args):
        """(template, knobs) the plan launches for these args (checks them first)."""
        tmpl, knobs, _ = self._route(self._bind(args))
        return tmpl, knobs

    def _launch(self, v: _Views, stream: int, ws) -> None:
        tmpl, knobs, lds = self._route(v)
        lk = self._kernel(tmpl, knobs, v.a.device)
        c = v.c
        # a null-free bias pointer (c's) when there is no bias
        bias = ((v.bias.ptr, v.bias.strides[0], 1) if v.bias is not None else (c.ptr, 0, 0))
        if tmpl is spec.GEMM_FP8:
            self._launch_mma(lk, knobs, v, bias, stream)
            return
        d = self.desc
        sc = (v.sa.ptr, v.sas, v.sb.ptr, v.sbs)
        if self._splits < 2:
            self._sm90.launch(lk, knobs, d.m, d.n, d.k, v.a, v.b, c, bias, lds, stream,
                              scales=sc)
            return
        check_split_workspace(ws)
        wsn = workspace_cols(d.n)
        self._sm90.launch(lk, knobs, d.m, d.n, d.k, v.a, v.b, c, bias, lds, stream, scales=sc,
                          split=(self._splits, self._kps, d.m * wsn), cview=(ws.ptr, wsn))
        launch_splitk_reduce(self, self._rknobs, v.a.device, ws, c, bias, self._splits, 1.0,
                             0.0, stream)

    def _launch_mma(self, lk, knobs: spec.Fp8Knobs, v: _Views, bias, stream: int) -> None:
        """Launch ``gemm_fp8`` (k, lda, ldb in 32-bit words)."""
        d = self.desc
        bm, bn = spec.FP8_TILES[knobs.tile][:2]
        grid = (math.ceil(d.m / bm) * math.ceil(d.n / bn), 1, 1)
        c = v.c
        pbias, bs, hb = bias
        lk.launch(grid, [v.a.ptr, v.b.ptr, c.ptr, pbias, v.sa.ptr, v.sb.ptr, d.m, d.n, d.k // 4,
                         v.lda // 4, v.ldb // 4, c.strides[0], c.strides[1], bs, v.sas, v.sbs,
                         hb], stream)
