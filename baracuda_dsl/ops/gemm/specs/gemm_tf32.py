"""Template spec of ``gemm_tf32``: float32 GEMM on tensor cores (``GemmDescriptor(...,
allow_tf32=True)``, like ``torch.backends.cuda.matmul.allow_tf32``), issue 7.

Ampere ``mma.sync`` m16n8k8 tf32 atoms (inputs rounded f32 → tf32 with ``cvt.rna``, f32
accumulate), a 4-stage ``cp.async`` global→shared pipeline into padded (bank-conflict-free)
shared buffers, and the same element-wise epilogue as ``gemm_mma`` (alpha, beta·c, bias,
relu / gelu / silu; output float32).  Runs on sm80, sm89 and sm90a.

Knobs: ``a_major`` (``k``: a (m, k) row-major, ``m``: column-major), ``b_major`` (``k``: b (k, n)
column-major, ``n``: row-major), ``act`` (none / relu / gelu / silu) and ``tile`` in
:data:`TF32_TILES` (``128x128``: 128×128×16, 4 stages, 4 warps — k-major a only; ``64x64``:
64×64×32, 4 stages, 4 warps, every layout).  SKU count: 4 acts × (2 b majors for 128x128 +
4 layouts for 64x64) = 24 per arch.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....jit import KernelTemplate, LaunchGeometry, params, register

#: tile name -> (bM, bN, bK, stages, warps along m, warps along n)
TF32_TILES = {
    "128x128": (128, 128, 16, 4, 2, 2),
    "64x64": (64, 64, 32, 4, 2, 2),
}
#: the 128x128 tile exists for k-major a only (m-major a uses 64x64)
BIG_TILE = "128x128"
ACTS = ("none", "relu", "gelu", "silu")
#: the cp.async vector: 16 bytes = 4 f32; leading dims and contiguous extents must be multiples
TF32_VEC = 4
#: shared row padding (elements) of k-major / mn-major operand buffers (conflict-free fragments)
PAD_K = 4
PAD_MN = 8


@dataclass(frozen=True)
class Tf32Knobs:
    """Knobs of ``gemm_tf32``: operand majors ``a_major`` (k / m) and ``b_major`` (k / n),
    epilogue ``act`` and ``tile`` (a :data:`TF32_TILES` name)."""

    a_major: str
    b_major: str
    act: str
    tile: str


def tf32_threads(tile: str) -> int:
    t = TF32_TILES[tile]
    return 32 * t[4] * t[5]


def operand_smem(kmajor: bool, mn: int, bk: int) -> int:
    """Elements of one stage of one operand's padded shared buffer."""
    return mn * (bk + PAD_K) if kmajor else (mn + PAD_MN) * bk


def tf32_smem(knobs: Tf32Knobs) -> int:
    """Dynamic shared memory (bytes) of a ``gemm_tf32`` SKU: its padded f32 operand stages."""
    bm, bn, bk, st = TF32_TILES[knobs.tile][:4]
    return st * 4 * (operand_smem(knobs.a_major == "k", bm, bk)
                     + operand_smem(knobs.b_major == "k", bn, bk)) + 256


def _space():
    for tile in TF32_TILES:
        for am in (("k",) if tile == BIG_TILE else ("k", "m")):
            for bm in ("k", "n"):
                for act in ACTS:
                    yield Tf32Knobs(a_major=am, b_major=bm, act=act, tile=tile)


GEMM_TF32 = register(KernelTemplate(
    name="gemm_tf32",
    family="gemm",
    module="baracuda_dsl.ops.gemm.kernels.gemm_tf32",
    params=params("a:ptr b:ptr c:ptr bias:ptr m:i32 n:i32 k:i32 lda:i64 ldb:i64 csm:i64 "
                  "csn:i64 bs:i64 alpha:f32 beta:f32 has_bias:i32"),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=tf32_threads(k.tile), smem_bytes=tf32_smem(k)),
    knobs=Tf32Knobs,
))
