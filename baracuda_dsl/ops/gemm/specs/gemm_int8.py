"""Template spec of ``gemm_int8`` (behind ``IntGemmPlan``, issue 7): s8 / u8 GEMM on tensor cores,
``mma.sync`` m16n8k32 with s32 accumulate, k-major a (row-major) and b (column-major), the
``gemm_tf32`` cp.async pipeline run on 32-bit words (4 int8 along k).

Knobs: ``a`` / ``b`` (``s8`` / ``u8``), ``out`` (``i32``: exact int32 c; ``f32``: dequantised
c = scale_a[i] · scale_b[j] · acc) and ``tile`` (``128x128``: 128×128×64 bytes of k, 4 stages;
``64x64``: 64×64×128 bytes, 4 stages; 4 warps each).  SKU count 4 × 2 × 2 = 16 per arch.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....jit import KernelTemplate, LaunchGeometry, params, register
from .gemm_tf32 import TF32_TILES, operand_smem

#: tile -> (bM, bN, bK in 32-bit words, stages, warps m, warps n): the tf32 tiles
INT8_TILES = dict(TF32_TILES)
INT_TYPES = ("s8", "u8")
#: byte granularity of k, lda, ldb and the base pointers (one 16-byte cp.async vector)
INT8_VEC = 16


@dataclass(frozen=True)
class Int8Knobs:
    """Knobs of ``gemm_int8``: PTX operand types ``a`` / ``b`` (s8 / u8), ``out`` (i32 exact, f32
    dequantised) and ``tile`` (an :data:`INT8_TILES` name)."""

    a: str
    b: str
    out: str
    tile: str


def int8_smem(knobs: Int8Knobs) -> int:
    """Dynamic shared memory (bytes) of a ``gemm_int8`` SKU: its padded word stages."""
    bm, bn, bk, st = INT8_TILES[knobs.tile][:4]
    return st * 4 * (operand_smem(True, bm, bk) + operand_smem(True, bn, bk)) + 256


def _space():
    for tile in INT8_TILES:
        for a in INT_TYPES:
            for b in INT_TYPES:
                for out in ("i32", "f32"):
                    yield Int8Knobs(a=a, b=b, out=out, tile=tile)


GEMM_INT8 = register(KernelTemplate(
    name="gemm_int8",
    family="gemm",
    module="baracuda_dsl.ops.gemm.kernels.gemm_int8",
    params=params("a:ptr b:ptr c:ptr sa:ptr sb:ptr m:i32 n:i32 k:i32 lda:i64 ldb:i64 csm:i64 "
                  "csn:i64 sas:i64 sbs:i64"),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=32 * INT8_TILES[k.tile][4] * INT8_TILES[k.tile][5],
                                      smem_bytes=int8_smem(k)),
    knobs=Int8Knobs,
))
