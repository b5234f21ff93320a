"""General matrix multiply (first version of issue 7's ``GemmPlan``):

    c = act(alpha · (a @ b) + beta · c + bias)        a (m, k), b (k, n), c (m, n), bias (n,)

dtypes: float16 / bfloat16 (tensor cores, f32 accumulate), float32 (strict IEEE f32 FFMA by
default; ``allow_tf32=True`` runs it on tensor cores in tf32, see below), float64 (DFMA, f64
accumulate); ``out_dtype`` (c and bias) is the input dtype or float32.
Epilogues ``identity``, ``bias``, ``bias_relu``, ``bias_gelu`` (erf form), ``bias_silu``: the bias
is added after alpha / beta and before the activation; c is read only when beta != 0 (so it may
hold garbage otherwise).  Deterministic (no atomics, fixed k order, also when split); workspace
only for split-K (below).

Operand layouts are found at run time from the views' strides, so one plan serves every
transpose: a may be row-major (unit stride along k) or column-major (unit stride along m), b
row-major (unit stride along n) or column-major (unit stride along k) — the kernel SKU has the
two majors as knobs (4 layouts, no host-side transposes); c may have any strides.

Kernel choice (``GemmPlan.kernel_for(args)`` reports it):

* sm90a (Hopper), f16 / bf16, m > ``DECODE_MAX_M`` and at least ``SM90_MIN_TILES`` 128×128
  tiles → ``gemm_sm90`` (wgmma + TMA + mbarrier pipeline, warp-specialised, persistent;
  ``ops/gemm/specs/gemm_sm90.py``) when the operands are TMA-legal: k >= 1; a and b have a unit
  stride in one dim; base pointers 16-byte aligned; leading dims multiples of 8 elements (16
  bytes), > 0 and < 2**36 elements (no contiguous-extent rule: TMA zero-fills out of bounds).
  Tile: ``wgmma128x256c2`` (128×256×64, 4 stages, 2-CTA clusters sharing the b tile by TMA
  multicast; the 1-CTA ``wgmma128x256`` SKU for an m-major a) when it yields at least
  ``SM90_BIG_TILE_MIN_CTAS`` 128×256 tiles (a full wave on an H100), else ``wgmma128x128``
  (128×128×64, 6 stages).  The cluster SKU was measured equal to the 1-CTA one at 4096² and
  8192² and 2-8 % faster at the LLM shapes (16384 × 14336 × 4096: 623 vs 588 TFLOP/s bf16,
  4096 × 4096 × 14336: 695 vs 652), so it is the default; ``GemmTuning(tile=...)`` forces
  either.  Grid = min(work units, SMs) (clusters: min(tile pairs, resident clusters)); the two
  operand CUtensorMaps come from the driver (``cuTensorMapEncodeTiled``), encoded once per
  operand layout and base-address-patched per call (``ops/gemm/tensor_maps.py``), and are passed
  by value.  ``epi`` tells the kernel
  whether c (and bias) allow 16-byte vector accesses (unit column stride, aligned).
  Under one wave of 128×128 tiles with m > ``NARROW_MIN_M`` (64): ``wgmma128x64`` (the narrow
  tile, twice the CTAs; k-major a and b, else 128×128; measurements next to NARROW_MIN_M).
  Smaller m with fewer than ``SM90_MIN_TILES`` 128×128 tiles and k >= ``WG_SPLIT_MIN_K`` run
  ``wgmma128x128`` split over k when every split keeps >= ``WG_SPLIT_MIN_KB_SMALL_M`` k blocks:
  S = min(``SPLIT_MAX``, SMs // tiles, k blocks // that); the persistent kernel walks (tile,
  split) work units writing f32 partial products into the workspace, then
  ``gemm_splitk_reduce`` finishes as below (forced splits: ``wgmma128x128`` or
  ``wgmma128x64``).  Decode shapes (m <= 16) and operands TMA cannot take stay on
  the paths below.
* f16 / bf16 → ``gemm_mma`` (``mma.sync`` m16n8k16 + ``ldmatrix`` + a 4-stage ``cp.async``
  pipeline; sm80, sm89, sm90a) when every operand qualifies: k >= 1; a and b have a unit
  stride in one dim; their base pointers are 16-byte aligned; their leading dims are multiples
  of 8 elements and >= 0; and the contiguous extent (k for the k-major operand, m or n
  otherwise) is a multiple of 8.  Tile: 16×32×128 for m <= 16 (decode: narrow CTAs, deep k
  stages to stream the weight; k-major a only, else 64×64), 128×128×32 when it yields
  >= ``BIG_TILE_MIN_CTAS`` CTAs, else 64×64×32.  On an H100 this Ampere-style path is expected
  around 50-65 % of cuBLAS bf16 at 4096³ (cuBLAS uses wgmma); the sm90a wgmma/TMA kernel of
  issue 7 replaces it there for large grids.  The kernel has a batch index (``block_idx.y``,
  element offsets za / zb / zc / zbias per index, ``k_last`` = the k extent of the launch's
  last index) used by split-K and by ``BatchedGemmPlan``.

  **Split-K** (small grids; also the reduction of the wgmma split above): the k range is cut
  into S splits (every split but the last
  ``ks`` long, a multiple of the tile's bK by default; the last takes k - (S-1)·ks); one launch
  computes the S partial products with the ``out=f32, act=none`` SKU (alpha 1, no bias; batch
  index = split) into a float32 workspace (S, m, align_up(n, 4)), then ``gemm_splitk_reduce``
  writes c = act(alpha · Σ_s ws[s] + beta · c + bias), summing s = 0, 1, … in order
  (deterministic).  ``workspace_size()`` = S · m · align_up(n, 4) · 4 bytes (256-aligned; the
  workspace pointer must be 16-byte aligned), 0 when not split.  Default S (``plan.splits``):
  with ctas = the tile's grid and SMs / per_sm = ``SPLIT_SMS`` / ``SPLIT_CTAS_PER_SM`` of the
  arch (sm90a 132 / 4, sm80 108 / 3, sm89 84 / 2: the SMs of an H100 SXM / A100 / mid-size Ada
  part and how many 16×32 decode CTAs (49 KB of shared memory) fit in one SM),
  S = min(``SPLIT_MAX`` = 8, SMs · per_sm // ctas, k // ``SPLIT_MIN_K`` (512)), no split when
  that is < 2 (i.e. split only grids of at most SMs · per_sm / 2 CTAs — about 2 per SM — with
  k >= 1024), when the tile is 128×128 (it is chosen for >= 96 CTAs; ``SPLIT_TILES`` are the
  16×32 and 64×64 tiles, whose shared memory lets per_sm CTAs reside), or when the workspace
  would exceed ``PlanPreference.max_workspace_bytes``.  Why:
  on an H100 (bf16, vs cuBLAS in the same run) the unsplit decode tile reached only 0.52-0.56
  at m = 1 / 16, n = k = 4096 (128 CTAs: one per SM, too few bytes in flight) but 0.91-0.96 at
  n = 14336 (448 CTAs, 3.4 per SM); m = 128, n = 4096 (64×64 tile, 128 CTAs) reached 0.38-0.47
  at k = 4096 / 14336.  With the rule these grids run 4 splits (512 CTAs, one wave of 4 per SM).
  The split route reads each partial product once more (S · m · n · 8 bytes of traffic), small
  next to the weight for the shapes it fires on.  ``GemmTuning(splits=S)`` forces S (1 = off;
  S > 1 needs f16 / bf16 on a mma.sync tile or ``wgmma128x128``; the granularity drops from bK
  down to 8 when k is too short for S splits of bK; on the wgmma kernel splits are whole
  64-blocks of k).  On sm90a, m > 16 now takes the wgmma route above, so this mma.sync split
  serves the decode tile there (m <= 16: 4 splits at n = 4096, 0.89-0.97 × cuBLAS measured).
* float32 with ``allow_tf32=True`` (like ``torch.backends.cuda.matmul.allow_tf32``; ignored for
  the other dtypes) → ``gemm_tf32`` (``mma.sync`` m16n8k8 tf32: inputs rounded to tf32 with
  round-to-nearest (ties away), f32 accumulate: relative error ≈ 1e-4..5e-4 for O(1) data;
  sm80, sm89, sm90a; every a / b layout; ``ops/gemm/specs/gemm_tf32.py``) when every operand
  qualifies: k >= 1, unit stride in one dim, 16-byte aligned base, leading dim a multiple of
  4 elements, contiguous extent a multiple of 4.  Tile 128×128×16 when it yields
  >= ``BIG_TILE_MIN_CTAS`` CTAs and a is k-major, else 64×64×32 (no decode tile; a forced tile
  is "128x128", "64x64" or "simt").  Operands it cannot take run on ``gemm_simt`` in strict f32.
* everything else (strict f32, f64, misaligned / odd-strided half operands, negative strides, k = 0)
  → ``gemm_simt`` (128×128 tiles, 8×8 outputs per thread, arbitrary strides, predicated).

Tuning (``PlanPreference(tuning=GemmTuning(tile=..., splits=...))``, ``ops/gemm/tuning.py``):
``tile`` ("128x128", "64x64", "16x32", "simt", or on sm90a "wgmma128x64" / "wgmma128x128" /
"wgmma128x256" / "wgmma128x256c2") forces the tile; "simt" forces the SIMT kernel for every
layout; a forced mma.sync tile keeps sm90a problems off the wgmma kernel; ``splits`` forces the
split-K count (above).
``plan.sku()`` describes the GEMM kernel chosen for the preferred (aligned) layouts (when split:
the f32 partial-product SKU; the reduction is ``gemm_splitk_reduce``); the majors are run-time
knobs and left out of it.  c must not alias a, b or bias.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from ...dtypes import DType, bfloat16, float16, float32, float64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import (Plan, check_dtype, check_finite, check_writable_no_overlap, view_arg)
from ...vocabulary import ArchSku, BackendKind, KernelSku, OpCategory, PrecisionGuarantee
from .gemm_sm90_launch import Sm90Launcher, operand_options, tma_layout
from .specs import gemm as spec
from .specs import gemm_sm90 as spec90
from .specs import gemm_tf32 as spec32
from .split_k import (check_split_workspace, launch_splitk_reduce, split_extent,
                      whole_block_split, workspace_bytes, workspace_cols)
from .tuning import GemmTuning

DTYPES = (float16, bfloat16, float32, float64)
HALF = (float16, bfloat16)
EPILOGUES = ("identity", "bias", "bias_relu", "bias_gelu", "bias_silu")
_ACT = {"identity": "none", "bias": "none", "bias_relu": "relu", "bias_gelu": "gelu",
        "bias_silu": "silu"}
#: the 128×128 tile is used when it gives at least this many CTAs (about one wave on an H100)
BIG_TILE_MIN_CTAS = 96
#: m up to this uses the decode tile 16×32×128 (k-major a; 64×64 for an m-major a)
DECODE_MAX_M = 16
#: sm90a: the 128×256 wgmma tile when it gives at least this many tiles (one H100 wave)
SM90_BIG_TILE_MIN_CTAS = 132
#: sm90a: the wgmma kernel needs at least this many 128×128 tiles (half an H100 wave); smaller
#: grids (e.g. m = 128, n = 4096: 32 tiles) keep the mma.sync 64×64 tile, which fills the SMs
SM90_MIN_TILES = 64
#: sm90a tile names (``GemmTuning.tile``) -> (specs.gemm_sm90 tile knob, cluster size)
SM90_TILES = {"wgmma128x128": ("128x128", 1), "wgmma128x64": ("128x64", 1),
              "wgmma128x256": ("128x256", 1),
              "wgmma128x256c2": ("128x256", 2)}
#: split-K (mma.sync route): SMs assumed per arch (A100, a mid-size Ada part, H100 SXM) and the
#: CTAs per SM a split grid may reach (the 16×32 decode tile's 49 KB of shared memory: 3 fit in
#: an A100 SM's 164 KB, 2 in Ada's 100 KB, 4 in an H100's 227 KB) — a split grid stays one wave
SPLIT_SMS = {ArchSku.SM80: 108, ArchSku.SM89: 84, ArchSku.SM90A: 132}
SPLIT_CTAS_PER_SM = {ArchSku.SM80: 3, ArchSku.SM89: 2, ArchSku.SM90A: 4}
#: the tiles split by default (the small-grid ones; 128×128 only when forced)
SPLIT_TILES = ("64x64", "16x32")
#: at most this many default splits, each of at least SPLIT_MIN_K of k
SPLIT_MAX = 8
SPLIT_MIN_K = 512
#: the most splits ``GemmTuning(splits=S)`` accepts
SPLIT_MAX_FORCED = 64
#: sm90a small grids (m > DECODE_MAX_M, fewer than SM90_MIN_TILES 128×128 tiles) with k of at
#: least WG_SPLIT_MIN_K run the wgmma 128×128 SKU, split over k when each split keeps at least
#: WG_SPLIT_MIN_KB k blocks of 64 (one work unit per (tile, split) of the persistent grid).
#: Measured on an H100 (bf16, vs cuBLAS): m = 128, n = 4096, k = 4096: S = 1 / 2 / 4 give
#: 0.62 / 0.65 / 0.55; k = 14336: 0.75 / 0.93 / 0.91; m = 128, n = 2048, k = 8192: S = 4 0.76
#: (S = 1 0.41); m = 256, n = 4096 (64 tiles) is best unsplit (0.79 vs 0.63 at S = 2) and is
#: not in this route.  The mma.sync 64×64 split route measured 0.47-0.73 on the same shapes.
WG_SPLIT_MIN_K = 1024
WG_SPLIT_MIN_KB = 32
#: ... and 16 k blocks per split for m <= NARROW_MIN_M (m = 64 / 32, n = 4096, k = 4096: S = 4
#: 0.52 / 0.51 vs S = 2 0.42 / 0.37)
WG_SPLIT_MIN_KB_SMALL_M = 16
#: sm90a, m > NARROW_MIN_M and under one wave (SM90_BIG_TILE_MIN_CTAS) of 128×128 tiles: the
#: narrow 128×64 wgmma tile, unsplit (k-major a and b; else 128×128).  Measured on an H100 (bf16,
#: vs cuBLAS): m = 128, n = 4096, k = 4096: 0.92 (128×128: 0.62 unsplit, 0.68 at S = 2);
#: k = 14336: 0.99 (0.93 at S = 2); m = 256, n = 4096: 1.08 (0.74); m = 128, n = 14336: 0.93
#: (equal); at m = 64 / 32 the split 128×128 route stays ahead (0.52 vs 0.48)
NARROW_MIN_M = 64
_I32 = 2 ** 31 - 1
_GRID_Y = 65535


@dataclass(frozen=True)
class GemmDescriptor:
    """c (m, n) = act(alpha · a (m, k) @ b (k, n) + beta · c + bias); ``dtype`` of a and b
    (float16, bfloat16, float32, float64), ``out_dtype`` of c and bias (None = dtype, or
    float32), ``epilogue`` in identity / bias / bias_relu / bias_gelu / bias_silu."""

    m: int
    n: int
    k: int
    dtype: DType
    out_dtype: Optional[DType] = None
    alpha: float = 1.0
    beta: float = 0.0
    epilogue: str = "identity"
    #: float32 only: run on tensor cores in tf32 (10-bit mantissa inputs, f32 accumulate), like
    #: ``torch.backends.cuda.matmul.allow_tf32``; False (default) keeps strict IEEE f32
    allow_tf32: bool = False

    def __post_init__(self):
        for name in ("m", "n", "k"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise InvalidProblemError(f"Gemm: {name} must be an int >= 0, got {v!r}")
            if v > _I32:
                raise UnsupportedError(f"Gemm: {name} = {v} exceeds 2**31 - 1")
        dt = check_dtype(self.dtype, DTYPES, "Gemm")
        object.__setattr__(self, "dtype", dt)
        out = dt if self.out_dtype is None else check_dtype(self.out_dtype, DTYPES,
                                                            "Gemm out_dtype")
        if out not in (dt, float32):
            raise UnsupportedError(f"Gemm: out_dtype {out.name} is not wired for dtype "
                                   f"{dt.name}; wired: {dt.name}, float32")
        object.__setattr__(self, "out_dtype", out)
        object.__setattr__(self, "alpha", check_finite(self.alpha, "Gemm alpha"))
        object.__setattr__(self, "beta", check_finite(self.beta, "Gemm beta"))
        if self.epilogue not in EPILOGUES:
            raise UnsupportedError(f"Gemm: epilogue {self.epilogue!r} is not wired; wired: "
                                   f"{', '.join(EPILOGUES)}")
        if not isinstance(self.allow_tf32, bool):
            raise InvalidProblemError(f"Gemm: allow_tf32 must be a bool, got "
                                      f"{self.allow_tf32!r}")

    @property
    def uses_tf32(self) -> bool:
        """True when the tf32 tensor-core path is allowed (float32 input, ``allow_tf32``)."""
        return self.allow_tf32 and self.dtype is float32

    @property
    def has_bias(self) -> bool:
        return self.epilogue != "identity"


@dataclass
class GemmArgs:
    """a (m, k), b (k, n), c (m, n) output (read when beta != 0), bias (n,) for the bias
    epilogues (out_dtype).  Device views with any strides (transposes are views)."""

    a: object
    b: object
    c: object
    bias: object = None


def sku_knobs(knobs) -> tuple:
    """The knobs a GEMM plan's KernelSku reports: the SKU's canonical knobs without the operand
    majors (run-time choices of the plan, left out of its SKU)."""
    return tuple(kv for kv in freeze_knobs(knobs) if kv[0] not in ("a_major", "b_major"))


def _mma_layout(view, rows: int, cols: int, s_rows: int, s_cols: int,
                vec: int = spec.MMA_VEC):
    """(major, ld) of the first mma-eligible layout of an operand (16-byte vectors of ``vec``
    elements), or None."""
    if view.ptr % 16:
        return None
    for major, ld in operand_options(rows, cols, s_rows, s_cols, vec):
        contig = cols if major == "k" else rows
        if ld >= 0 and ld % vec == 0 and contig % vec == 0:
            return major, ld
    return None


class GemmPlan(Plan):
    """c = act(alpha · a @ b + beta · c + bias) for f16 / bf16 (tensor cores, f32 accumulate),
    strict f32 and f64; any operand strides; workspace only for split-K (``splits`` > 1: f32
    (splits, m, align_up(n, 4))).  See the module docstring for the kernel choice, the tile and
    the split-K heuristics; ``GemmTuning(tile=..., splits=...)`` in the preference forces them."""

    descriptor = GemmDescriptor

    def _plan(self) -> None:
        d = self.desc
        tuning = self.pref.tuning_for(GemmTuning)
        tile, splits = tuning.tile, tuning.splits
        if splits is not None and splits > SPLIT_MAX_FORCED:
            raise UnsupportedError(f"Gemm: splits = {splits} exceeds {SPLIT_MAX_FORCED}")
        if tile is not None and tile not in (*spec.TILES, "simt", *SM90_TILES):
            raise UnsupportedError(f"Gemm: tile {tile!r} is not wired; wired: "
                                   f"{', '.join(spec.TILES)}, simt, {', '.join(SM90_TILES)}")
        if tile in SM90_TILES and self._arch is not ArchSku.SM90A:
            raise UnsupportedError(f"Gemm: tile {tile} needs sm90a (wgmma); this plan targets "
                                   f"{self._arch.value}")
        self._wg_split = False
        if d.uses_tf32:
            if tile not in (None, "simt", *spec32.TF32_TILES):
                raise UnsupportedError(f"Gemm: tile {tile} is not wired for tf32; wired: "
                                       f"{', '.join(spec32.TF32_TILES)}, simt")
            if tile is None:
                big = math.ceil(d.m / 128) * math.ceil(d.n / 128)
                tile = spec32.BIG_TILE if big >= BIG_TILE_MIN_CTAS else "64x64"
        elif d.dtype not in HALF:
            if tile not in (None, "simt"):
                raise UnsupportedError(f"Gemm: tile {tile} needs float16 / bfloat16 inputs "
                                       f"(tensor cores); {d.dtype.name} runs on the SIMT kernel")
            tile = "simt"
        elif tile is None:
            tile = self._default_half_tile(splits)
        self._tile = tile
        self._act = _ACT[d.epilogue]
        self._knob_memo = {}
        self._splits, self._ks = self._split_k(splits)
        if tile in SM90_TILES:
            self._sm90 = Sm90Launcher()
        acc = float64 if d.dtype is float64 else float32
        pg = PrecisionGuarantee(math_precision=d.dtype, accumulator=acc)
        if tile == "simt":
            tmpl, knobs = spec.GEMM_SIMT, self._simt_knobs()
        elif d.uses_tf32:
            tmpl, knobs = spec32.GEMM_TF32, self._tf32_knobs("k", "k")
        elif tile in SM90_TILES:
            tmpl, knobs = spec90.GEMM_SM90, self._sm90_knobs("k", "k", self._splits > 1)
        else:
            tmpl, knobs = spec.GEMM_MMA, self._mma_knobs("k", "n", self._splits > 1)
        self._sku = KernelSku(OpCategory.GEMM, "gemm", d.dtype, self._arch,
                              BackendKind.CUTE_DSL, pg, aux_element=d.out_dtype,
                              epilogue=d.epilogue, template=tmpl.name, knobs=sku_knobs(knobs))

    def _default_half_tile(self, splits: Optional[int]) -> str:
        """The f16 / bf16 tile of the module docstring's rules (sets ``_wg_split`` when the
        wgmma 128×128 route is chosen to split a small grid over k)."""
        d = self.desc
        big = math.ceil(d.m / 128) * math.ceil(d.n / 128)
        t256 = spec90.num_tiles(d.m, d.n, "128x256")
        hopper = self._arch is ArchSku.SM90A and d.m > DECODE_MAX_M
        if hopper and big >= SM90_MIN_TILES and t256 >= SM90_BIG_TILE_MIN_CTAS:
            return "wgmma128x256c2"
        if hopper and d.m > NARROW_MIN_M and big < SM90_BIG_TILE_MIN_CTAS and splits in (None, 1):
            return "wgmma128x64"             # under a wave of 128x128 tiles: narrow tiles
        if hopper and big >= SM90_MIN_TILES:
            return "wgmma128x128"
        if hopper and d.k >= WG_SPLIT_MIN_K:
            self._wg_split = True            # small grid: split over k (_split_k)
            return "wgmma128x128"
        if d.m <= DECODE_MAX_M:
            return spec.DECODE_TILE
        return "128x128" if big >= BIG_TILE_MIN_CTAS else "64x64"

    # -- split-K ------------------------------------------------------------------------------
    def _split_k(self, forced: Optional[int]):
        """(S, ks): the number of k splits and the k extent of every split but the last (which
        takes k - (S-1)·ks >= 1); (1, k) when not split.  See the module docstring."""
        d = self.desc
        mma = self._tile in spec.TILES and d.dtype in HALF
        wg = self._tile in ("wgmma128x128", "wgmma128x64") and d.dtype in HALF
        if forced is not None and forced > 1 and not (mma or wg):
            raise UnsupportedError(
                f"Gemm: split-K is wired for float16 / bfloat16 on the mma.sync tiles "
                f"({', '.join(spec.TILES)}), wgmma128x128 and wgmma128x64; this plan runs tile "
                f"{self._tile} for {d.dtype.name}")
        if wg:
            return self._split_wgmma(forced)
        if not mma or d.m == 0 or d.n == 0 or d.k == 0 or forced == 1:
            return 1, d.k
        bm, bn, bk = spec.TILES[self._tile][:3]
        cap = self.pref.max_workspace_bytes
        if forced is None:
            if self._tile not in SPLIT_TILES:
                return 1, d.k
            ctas = math.ceil(d.m / bm) * math.ceil(d.n / bn)
            want = min(SPLIT_MAX, SPLIT_SMS[self._arch] * SPLIT_CTAS_PER_SM[self._arch] // ctas,
                       d.k // SPLIT_MIN_K)
            if want < 2:
                return 1, d.k
            ks = split_extent(d.k, want, bk)
            S = math.ceil(d.k / ks)
            if S < 2 or (cap is not None and workspace_bytes(S, d.m, d.n) > cap):
                return 1, d.k
            return S, ks
        if cap is not None and workspace_bytes(forced, d.m, d.n) > cap:
            raise UnsupportedError(f"Gemm: {forced} splits need "
                                   f"{workspace_bytes(forced, d.m, d.n)} bytes of workspace > "
                                   f"max_workspace_bytes={cap}")
        for g in sorted({bk, 64, 32, 16, spec.MMA_VEC}, reverse=True):
            if g > bk:
                continue
            ks = split_extent(d.k, forced, g)
            if math.ceil(d.k / ks) == forced:
                return forced, ks
        raise InvalidProblemError(f"Gemm: k = {d.k} cannot be split {forced} ways (every split "
                                  f"but the last takes a multiple of {spec.MMA_VEC} of k)")

    def _split_wgmma(self, forced: Optional[int]):
        """(S, ks) of the wgmma 128×128 route: every split but the last covers ks = kps · 64 of
        k (whole k blocks).  Default (only when ``_plan`` picked this route for a small grid):
        S = min(SPLIT_MAX, SMs // tiles, k blocks // WG_SPLIT_MIN_KB), none below 2."""
        d = self.desc
        if forced == 1 or d.m == 0 or d.n == 0 or d.k == 0:
            return 1, d.k
        kt = -(-d.k // 64)
        user = forced is not None
        if forced is None:
            if not self._wg_split:
                return 1, d.k
            tiles = spec90.num_tiles(d.m, d.n, "128x128")
            min_kb = WG_SPLIT_MIN_KB_SMALL_M if d.m <= NARROW_MIN_M else WG_SPLIT_MIN_KB
            forced = min(SPLIT_MAX, SPLIT_SMS[self._arch] // tiles, kt // min_kb)
            if forced < 2:
                return 1, d.k
        S, kps = whole_block_split(kt, forced, user=user, m=d.m, n=d.n,
                                   cap=self.pref.max_workspace_bytes, what="Gemm")
        return (S, kps * 64) if S > 1 else (1, d.k)

    @property
    def splits(self) -> int:
        """The number of k splits (1 = not split)."""
        return self._splits

    def workspace_size(self) -> int:
        """Bytes of the split-K float32 workspace (splits, m, align_up(n, 4)); 0 when not
        split."""
        if self._splits < 2:
            return 0
        return workspace_bytes(self._splits, self.desc.m, self.desc.n)

    # -- knobs (memoised per plan: the choice is made once per operand layout) ---------------
    def _simt_knobs(self) -> spec.SimtKnobs:
        key = ("simt",)
        kn = self._knob_memo.get(key)
        if kn is None:
            d = self.desc
            kn = self._knob_memo[key] = spec.SimtKnobs(dtype=d.dtype.short,
                                                       out=d.out_dtype.short, act=self._act)
        return kn

    def _tf32_knobs(self, a_major: str, b_major: str) -> spec32.Tf32Knobs:
        key = ("tf32", a_major, b_major)
        kn = self._knob_memo.get(key)
        if kn is None:
            tile = self._tile
            if a_major != "k":
                tile = "64x64"          # the 128x128 tf32 tile exists for k-major a only
            kn = self._knob_memo[key] = spec32.Tf32Knobs(a_major=a_major, b_major=b_major,
                                                         act=self._act, tile=tile)
        return kn

    def _sm90_knobs(self, a_major: str, b_major: str, part: bool = False) -> spec90.Sm90Knobs:
        """Knobs of the wgmma SKU; ``part``: the split-K partial-product SKU (f32 out)."""
        key = ("sm90", a_major, b_major, part)
        kn = self._knob_memo.get(key)
        if kn is None:
            d = self.desc
            tile, cluster = SM90_TILES[self._tile]
            if a_major != "k":
                cluster = 1             # the cluster SKUs exist for a k-major a only
            if tile == spec90.NARROW_TILE and (a_major, b_major) != ("k", "k"):
                tile = "128x128"        # the narrow tile exists for k-major a and b only
            kn = self._knob_memo[key] = spec90.Sm90Knobs(
                dtype=d.dtype.short, out="f32" if part else d.out_dtype.short, a_major=a_major,
                b_major=b_major, tile=tile, cluster=cluster)
        return kn

    def _reduce_knobs(self) -> spec.SplitKReduceKnobs:
        key = ("splitk",)
        kn = self._knob_memo.get(key)
        if kn is None:
            kn = self._knob_memo[key] = spec.SplitKReduceKnobs(out=self.desc.out_dtype.short,
                                                               act=self._act)
        return kn

    def _mma_knobs(self, a_major: str, b_major: str, part: bool = False) -> spec.MmaKnobs:
        """Knobs of the mma.sync SKU; ``part``: the split-K partial-product SKU (f32 out, no
        activation)."""
        key = ("mma", a_major, b_major, part)
        kn = self._knob_memo.get(key)
        if kn is None:
            d = self.desc
            tile = self._tile
            if tile in SM90_TILES:
                tile = "128x128"        # operands TMA cannot take: the mma.sync kernel
            if tile == spec.DECODE_TILE and a_major != "k":
                tile = "64x64"          # the decode tile exists for k-major a only
            kn = self._knob_memo[key] = spec.MmaKnobs(
                dtype=d.dtype.short, out="f32" if part else d.out_dtype.short, a_major=a_major,
                b_major=b_major, act="none" if part else self._act, tile=tile)
        return kn

    # -- args ---------------------------------------------------------------------------------
    def is_empty(self) -> bool:
        return self.desc.m == 0 or self.desc.n == 0

    def _bind(self, args):
        """The checked views (a, b, c, bias) of ``args``."""
        if not isinstance(args, GemmArgs):
            raise InvalidProblemError(f"GemmPlan needs GemmArgs, got {type(args).__name__}")
        d = self.desc
        a = view_arg(args.a, "a", shape=(d.m, d.k), dtype=d.dtype)
        b = view_arg(args.b, "b", shape=(d.k, d.n), dtype=d.dtype, device=a.device)
        c = view_arg(args.c, "c", shape=(d.m, d.n), dtype=d.out_dtype, device=a.device)
        check_writable_no_overlap(c, "c")
        bias = None
        if d.has_bias:
            bias = view_arg(args.bias, "bias", shape=(d.n,), dtype=d.out_dtype, device=a.device)
        elif args.bias is not None:
            raise InvalidProblemError("Gemm: bias given but the epilogue is 'identity'")
        return a, b, c, bias

    def kernel_for(self, args):
        """(template, knobs) of the GEMM kernel the plan launches for these args (checks them
        first); when split (``splits`` > 1) the partial-product SKU, followed by
        ``gemm_splitk_reduce``."""
        return self.route(*self._bind(args))[:2]

    def route(self, a, b, c, bias):
        """(template, knobs, leading dims or None) of the GEMM kernel for checked views (the
        operand layouts decide: TMA / mma.sync / tf32 eligibility, else SIMT)."""
        d = self.desc
        if self._tile in SM90_TILES and d.k >= 1:
            la = tma_layout(a, d.m, d.k, a.strides[0], a.strides[1])
            lb = tma_layout(b, d.n, d.k, b.strides[1], b.strides[0])
            if la is not None and lb is not None:
                am = "k" if la[0] == "k" else "m"
                bm = "k" if lb[0] == "k" else "n"
                return (spec90.GEMM_SM90, self._sm90_knobs(am, bm, self._splits > 1),
                        (la[1], lb[1]))
        if d.uses_tf32:
            if self._tile != "simt" and d.k >= 1:
                la = _mma_layout(a, d.m, d.k, a.strides[0], a.strides[1], spec32.TF32_VEC)
                lb = _mma_layout(b, d.n, d.k, b.strides[1], b.strides[0], spec32.TF32_VEC)
                if la is not None and lb is not None:
                    am = "k" if la[0] == "k" else "m"
                    bm = "k" if lb[0] == "k" else "n"
                    return spec32.GEMM_TF32, self._tf32_knobs(am, bm), (la[1], lb[1])
        elif self._tile != "simt" and d.k >= 1:
            la = _mma_layout(a, d.m, d.k, a.strides[0], a.strides[1])
            lb = _mma_layout(b, d.n, d.k, b.strides[1], b.strides[0])
            if la is not None and lb is not None:
                am = "k" if la[0] == "k" else "m"
                bm = "k" if lb[0] == "k" else "n"
                return (spec.GEMM_MMA, self._mma_knobs(am, bm, self._splits > 1),
                        (la[1], lb[1]))
        if math.ceil(d.n / spec.SIMT_BN) > _GRID_Y:
            raise UnsupportedError(f"Gemm: n = {d.n} needs more than {_GRID_Y} CTA columns on "
                                   f"the SIMT kernel")
        return spec.GEMM_SIMT, self._simt_knobs(), None

    def _launch(self, bound, stream: int, ws) -> None:
        a, b, c, bias = bound
        d = self.desc
        tmpl, knobs, lds = self.route(a, b, c, bias)
        if self._splits > 1:
            check_split_workspace(ws)
        lk = self._kernel(tmpl, knobs, a.device)
        # a null-free bias pointer (c's) when there is no bias
        pbias, bs, hb = (bias.ptr, bias.strides[0], 1) if bias is not None else (c.ptr, 0, 0)
        if tmpl is spec90.GEMM_SM90 and self._splits < 2:
            self._sm90.launch(lk, knobs, d.m, d.n, d.k, a, b, c, (pbias, bs, hb), lds, stream,
                              act=self._act, alpha=d.alpha, beta=d.beta)
        elif tmpl is spec90.GEMM_SM90:
            # split-K on the persistent wgmma kernel: (tile, split) work units write f32 partial
            # products into the workspace, then the reduction + epilogue into c
            wsn = workspace_cols(d.n)
            self._sm90.launch(lk, knobs, d.m, d.n, d.k, a, b, c, (pbias, bs, hb), lds, stream,
                              split=(self._splits, self._ks // 64, d.m * wsn),
                              cview=(ws.ptr, wsn))
            self._reduce(a.device, ws, c, (pbias, bs, hb), stream)
        elif tmpl is spec.GEMM_MMA:
            bm, bn = spec.TILES[knobs.tile][:2]
            tiles = math.ceil(d.m / bm) * math.ceil(d.n / bn)
            if self._splits < 2:
                lk.launch((tiles, 1, 1), [a.ptr, b.ptr, c.ptr, pbias, d.m, d.n, d.k, lds[0],
                                          lds[1], c.strides[0], c.strides[1], bs, d.alpha,
                                          d.beta, hb, 0, 0, 0, 0, d.k], stream)
                return
            # split-K: S partial products (batch index = split) into the f32 workspace, then
            # the reduction + epilogue into c
            S, ks = self._splits, self._ks
            wsn = workspace_cols(d.n)
            # element stride along k of each operand in the kernel's view
            ska = 1 if knobs.a_major == "k" else lds[0]
            skb = 1 if knobs.b_major == "k" else lds[1]
            lk.launch((tiles, S, 1), [a.ptr, b.ptr, ws.ptr, ws.ptr, d.m, d.n, ks, lds[0],
                                      lds[1], wsn, 1, 0, 1.0, 0.0, 0, ks * ska, ks * skb,
                                      d.m * wsn, 0, d.k - (S - 1) * ks], stream)
            self._reduce(a.device, ws, c, (pbias, bs, hb), stream)
        elif tmpl is spec32.GEMM_TF32:
            bm, bn = spec32.TF32_TILES[knobs.tile][:2]
            grid = (math.ceil(d.m / bm) * math.ceil(d.n / bn), 1, 1)
            lk.launch(grid, [a.ptr, b.ptr, c.ptr, pbias, d.m, d.n, d.k, lds[0], lds[1],
                             c.strides[0], c.strides[1], bs, d.alpha, d.beta, hb], stream)
        else:
            grid = (math.ceil(d.m / spec.SIMT_BM), math.ceil(d.n / spec.SIMT_BN), 1)
            lk.launch(grid, [a.ptr, b.ptr, c.ptr, pbias, d.m, d.n, d.k, a.strides[0],
                             a.strides[1], b.strides[0], b.strides[1], c.strides[0],
                             c.strides[1], bs, d.alpha, d.beta, hb], stream)

    def _reduce(self, device, ws, c, bias, stream) -> None:
        """``gemm_splitk_reduce``: c = act(alpha · Σ_s ws[s] + beta · c + bias)."""
        d = self.desc
        launch_splitk_reduce(self, self._reduce_knobs(), device, ws, c, bias, self._splits,
                             d.alpha, d.beta, stream)
