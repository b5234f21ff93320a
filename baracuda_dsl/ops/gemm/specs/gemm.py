"""Template specs of the GEMM kernels behind ``GemmPlan`` (first version, issue 7).

``gemm_mma`` — tensor-core GEMM for f16 / bf16 inputs with f32 accumulation: Ampere-style
``mma.sync`` m16n8k16 atoms, ``ldmatrix`` shared→register loads and a multistage ``cp.async``
global→shared pipeline (runs on sm80, sm89 and sm90a; the sm90a wgmma/TMA kernel comes later).
Knobs:

* ``dtype``   input dtype (``f16`` / ``bf16``); ``out`` output dtype (``f16`` / ``bf16`` = the input
  dtype, or ``f32``);
* ``a_major`` ``k`` (a (m, k) row-major: unit stride along k) or ``m`` (column-major);
* ``b_major`` ``k`` (b (k, n) column-major: unit stride along k) or ``n`` (row-major);
* ``act``     epilogue activation ``none`` / ``relu`` / ``gelu`` (erf form) / ``silu``; the bias
  add (before the activation) and ``beta·c`` are run-time switches, so identity and bias share a
  SKU;
* ``tile``    CTA tile name in :data:`TILES` (``128x128``: 128×128×32, 4 stages, 4 warps;
  ``64x64``: 64×64×32, 4 stages, 4 warps, for small grids; ``16x32``: 16×32×128, 4 stages,
  2 warps, for decode shapes m <= 16 — k-major a only).

c has arbitrary (run-time) strides: the epilogue stores element-wise from the accumulators.
Batch index ``block_idx.y`` (grid (tiles, batches, 1), batches <= 65535 per launch): the
element offsets ``za``, ``zb``, ``zc``, ``zbias`` per index move a, b, c, bias (0 broadcasts);
the launch's last index has k extent ``k_last`` (the split-K residue; = k otherwise).  Used by
split-K (index = split, into an f32 workspace) and by BatchedGemmPlan (index = batch entry).

``gemm_splitk_reduce`` — c = act(alpha · Σ_s ws[s] + beta · c + bias) over the f32 split-K
workspace (splits, m, wsn) (wsn = n rounded up to 4: 16-byte vector reads), splits summed in
order (deterministic), any c strides.  Knobs ``out`` (f16, bf16, f32) and ``act``: 12 SKUs.

``gemm_simt`` — tiled FFMA / DFMA GEMM with arbitrary strides on every operand: strict f32 (no
tf32), f64 (f64 accumulate), and the fallback of f16 / bf16 problems the mma path cannot take
(misaligned pointers or leading dims, contiguous extents not a multiple of 8, k = 0).
Knobs ``dtype`` (f16, bf16, f32, f64), ``out`` (the input dtype or f32) and ``act``.

Shapes, strides, alpha, beta and the bias switch are run-time parameters; the SKU count is
2 dtypes × 2 outs × 4 acts × (2 × 2 majors × 2 tiles + 2 b majors for the decode tile) = 160
mma SKUs plus 28 SIMT SKUs plus 12 split-K reduction SKUs = 200 per arch (the same on sm80,
sm89, sm90a).
"""

from __future__ import annotations

from dataclasses import dataclass

from ....jit import KernelTemplate, LaunchGeometry, params, register

#: tile name -> (bM, bN, bK, stages, warps along m, warps along n)
TILES = {
    "128x128": (128, 128, 32, 4, 2, 2),
    "64x64": (64, 64, 32, 4, 2, 2),
    "16x32": (16, 32, 128, 4, 1, 2),
}
#: the decode tile (m <= 16: many narrow CTAs with deep k stages to stream the weight) exists
#: for k-major a only (activations); the plan uses 64x64 for an m-major a instead
DECODE_TILE = "16x32"
MMA_DTYPES = ("f16", "bf16")
ACTS = ("none", "relu", "gelu", "silu")
A_MAJORS = ("k", "m")
B_MAJORS = ("k", "n")
#: the cp.async vector: 16 bytes = 8 half elements; contiguous extents and leading dims of the
#: mma path must be multiples of it and the base pointers 16-byte aligned
MMA_VEC = 8

#: rasterisation of the mma kernel's 1-D grid: CTAs walk GROUP_M tiles down m, then along n
GROUP_M = 8


def raster(bid: int, tiles_m: int, tiles_n: int):
    """(tile_m, tile_n) of CTA ``bid`` (pure-Python reference of the kernel's index math)."""
    per_group = GROUP_M * tiles_n
    first_m = (bid // per_group) * GROUP_M
    gsz = min(tiles_m - first_m, GROUP_M)
    r = bid % per_group
    return first_m + r % gsz, r // gsz


SIMT_DTYPES = ("f16", "bf16", "f32", "f64")
SIMT_BM = 128
SIMT_BN = 128
SIMT_BK = 8
SIMT_THREADS = 256  # 16 × 16 threads, 8 × 8 outputs each


def mma_threads(tile: str) -> int:
    t = TILES[tile]
    return 32 * t[4] * t[5]


def mma_smem(tile: str) -> int:
    bm, bn, bk, st = TILES[tile][:4]
    return st * (bm + bn) * bk * 2 + 128


def simt_smem(dtype: str) -> int:
    isz = 8 if dtype == "f64" else 4
    return ((SIMT_BM + 4) * SIMT_BK + SIMT_BN * SIMT_BK) * isz + 128


@dataclass(frozen=True)
class MmaKnobs:
    """Knobs of ``gemm_mma``: input ``dtype`` (f16 / bf16), ``out`` (the input dtype or f32),
    operand majors ``a_major`` (k / m) and ``b_major`` (k / n), epilogue ``act`` and ``tile``
    (a :data:`TILES` name)."""

    dtype: str
    out: str
    a_major: str
    b_major: str
    act: str
    tile: str


@dataclass(frozen=True)
class SimtKnobs:
    """Knobs of ``gemm_simt``: input ``dtype`` (f16 / bf16 / f32 / f64), ``out`` (the input
    dtype or f32) and epilogue ``act``."""

    dtype: str
    out: str
    act: str


@dataclass(frozen=True)
class SplitKReduceKnobs:
    """Knobs of ``gemm_splitk_reduce``: ``out`` (f16 / bf16 / f32) and epilogue ``act``."""

    out: str
    act: str


def _outs(dt):
    return (dt,) if dt == "f32" else (dt, "f32")


def _mma_space():
    for tile in TILES:
        for dt in MMA_DTYPES:
            for out in _outs(dt):
                for am in (("k",) if tile == DECODE_TILE else A_MAJORS):
                    for bm in B_MAJORS:
                        for act in ACTS:
                            yield MmaKnobs(dtype=dt, out=out, a_major=am, b_major=bm, act=act,
                                           tile=tile)


def _simt_space():
    for dt in SIMT_DTYPES:
        for out in _outs(dt):
            for act in ACTS:
                yield SimtKnobs(dtype=dt, out=out, act=act)


GEMM_MMA = register(KernelTemplate(
    name="gemm_mma",
    family="gemm",
    module="baracuda_dsl.ops.gemm.kernels.gemm_mma",
    params=params("a:ptr b:ptr c:ptr bias:ptr m:i32 n:i32 k:i32 lda:i64 ldb:i64 csm:i64 "
                  "csn:i64 bs:i64 alpha:f32 beta:f32 has_bias:i32 za:i64 zb:i64 zc:i64 "
                  "zbias:i64 k_last:i32"),
    space=_mma_space,
    geometry=lambda k: LaunchGeometry(threads=mma_threads(k.tile), smem_bytes=mma_smem(k.tile)),
    knobs=MmaKnobs,
))

GEMM_SIMT = register(KernelTemplate(
    name="gemm_simt",
    family="gemm",
    module="baracuda_dsl.ops.gemm.kernels.gemm_simt",
    params=params("a:ptr b:ptr c:ptr bias:ptr m:i32 n:i32 k:i32 sam:i64 sak:i64 sbk:i64 "
                  "sbn:i64 csm:i64 csn:i64 bs:i64 alpha:f64 beta:f64 has_bias:i32"),
    space=_simt_space,
    geometry=lambda k: LaunchGeometry(threads=SIMT_THREADS, smem_bytes=simt_smem(k.dtype)),
    knobs=SimtKnobs,
))

#: split-K reduction: threads per CTA and workspace elements (one 16-byte f32 vector) per thread
SPLITK_THREADS = 256
SPLITK_VEC = 4
SPLITK_OUTS = ("f16", "bf16", "f32")


def _splitk_space():
    for out in SPLITK_OUTS:
        for act in ACTS:
            yield SplitKReduceKnobs(out=out, act=act)


GEMM_SPLITK_REDUCE = register(KernelTemplate(
    name="gemm_splitk_reduce",
    family="gemm",
    module="baracuda_dsl.ops.gemm.kernels.gemm_splitk",
    params=params("ws:ptr c:ptr bias:ptr m:i32 n:i32 splits:i32 wsn:i64 csm:i64 csn:i64 bs:i64 "
                  "alpha:f32 beta:f32 has_bias:i32"),
    space=_splitk_space,
    geometry=lambda k: LaunchGeometry(threads=SPLITK_THREADS, smem_bytes=0),
    knobs=SplitKReduceKnobs,
))


def splitk_blocks(m: int, wsn: int) -> int:
    """CTAs of the split-K reduction over an (m, wsn) workspace slice (wsn a multiple of
    SPLITK_VEC): one vector of SPLITK_VEC columns per thread."""
    return -(-(m * wsn // SPLITK_VEC) // SPLITK_THREADS)
