"""Template spec of ``gemm_fp8`` (behind ``Fp8GemmPlan``, issue 7): e4m3 / e5m2 GEMM on Ada /
Hopper tensor cores, ``mma.sync`` m16n8k32 with f32 accumulate, k-major a (row-major) and b
(column-major), the ``gemm_tf32`` cp.async pipeline run on 32-bit words (4 fp8 along k), and a
scaled float epilogue  c = scale_a[i] · scale_b[j] · acc (+ bias[j])  stored as bf16 / f16 / f32.

Knobs: ``a`` / ``b`` (``e4m3`` / ``e5m2``), ``out`` (``bf16`` / ``f16`` / ``f32``) and ``tile``
(``128x128``: 128×128×64 bytes of k, 4 stages; ``64x64``: 64×64×128 bytes, 4 stages; 4 warps
each).  SKU count 2 × 2 × 3 × 2 = 24 per arch, on sm89 and sm90a only (the fp8 ``mma.sync``
needs sm_89; there are no sm80 SKUs).
"""

from __future__ import annotations

from dataclasses import dataclass

from ....jit import KernelTemplate, LaunchGeometry, params, register
from .gemm_tf32 import TF32_TILES, operand_smem

#: tile -> (bM, bN, bK in 32-bit words, stages, warps m, warps n): the tf32 / int8 tiles
FP8_TILES = dict(TF32_TILES)
FP8_TYPES = ("e4m3", "e5m2")
FP8_OUTS = ("bf16", "f16", "f32")
#: byte granularity of k, lda, ldb and the a / b base pointers (one 16-byte cp.async vector)
FP8_VEC = 16
#: arches with the fp8 m16n8k32 mma.sync
FP8_ARCHES = ("sm89", "sm90a")


@dataclass(frozen=True)
class Fp8Knobs:
    """Knobs of ``gemm_fp8``: operand types ``a`` / ``b`` (e4m3 / e5m2), ``out`` (bf16 / f16 /
    f32) and ``tile`` (an :data:`FP8_TILES` name)."""

    a: str
    b: str
    out: str
    tile: str


def fp8_threads(tile: str) -> int:
    t = FP8_TILES[tile]
    return 32 * t[4] * t[5]


def fp8_smem(knobs: Fp8Knobs) -> int:
    """Dynamic shared memory (bytes) of a ``gemm_fp8`` SKU: its padded word stages."""
    bm, bn, bk, st = FP8_TILES[knobs.tile][:4]
    return st * 4 * (operand_smem(True, bm, bk) + operand_smem(True, bn, bk)) + 256


def _space():
    for tile in FP8_TILES:
        for a in FP8_TYPES:
            for b in FP8_TYPES:
                for out in FP8_OUTS:
                    yield Fp8Knobs(a=a, b=b, out=out, tile=tile)


GEMM_FP8 = register(KernelTemplate(
    name="gemm_fp8",
    family="gemm",
    module="baracuda_dsl.ops.gemm.kernels.gemm_fp8",
    params=params("a:ptr b:ptr c:ptr bias:ptr sa:ptr sb:ptr m:i32 n:i32 k:i32 lda:i64 ldb:i64 "
                  "csm:i64 csn:i64 bs:i64 sas:i64 sbs:i64 has_bias:i32"),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=fp8_threads(k.tile), smem_bytes=fp8_smem(k)),
    knobs=Fp8Knobs,
    arch_ok=lambda k, arch: arch in FP8_ARCHES,
))
