"""Template spec of the Hopper (sm90a) GEMM behind ``GemmPlan`` and ``Fp8GemmPlan``:
``gemm_sm90``.

``wgmma`` (warpgroup MMA, f16 / bf16 or fp8 inputs, f32 accumulate) fed by TMA bulk-tensor
loads into 128-byte-swizzled shared memory through an mbarrier pipeline; warp-specialised
(warpgroup 0 is the
producer — one warp issues the TMA loads — warpgroups 1 and 2 are the consumers, each owning 64
rows of the CTA tile) and persistent over output tiles (grid = min(tiles, SMs), static stride
schedule, grouped rasterisation as in ``specs.gemm.raster``).

Kernel ABI: the two operands arrive as CUtensorMap descriptors passed by value (param kind
``tmap``: ``.param .align 64 .b8 [128]``) of a seen as (m, k) and b seen as (n, k): 2-D, the
operand's contiguous dim first, box :func:`operand_box`, 128-byte swizzle, L2 promotion 128 B,
zero fill out of bounds — the layout ``ops/gemm/gemm_sm90_launch.operand_layout`` builds and
``ops/gemm/tensor_maps.py`` encodes with the driver (``cuTensorMapEncodeTiled``, cached per layout,
only the base address patched per call).  tests/gemm/test_gemm_sm90_cpu.py checks that layout
against the TMA atoms the DSL builds for the kernel (the fields of its host-side descriptor).

Knobs:

* ``dtype`` ``f16`` / ``bf16``; ``out`` the input dtype or ``f32`` (c and bias);
* fp8: ``dtype`` = a's type ``e4m3`` / ``e5m2``, ``b`` = b's type (:data:`FP8_PAIRS`), ``out``
  ``bf16`` / ``f16`` / ``f32``; both operands k-major (wgmma's rule for 8-bit types); the
  epilogue scales the accumulator by ``sa[i·sas] · sb[j·sbs]`` (float32 per-row / per-column
  scales, stride 0 = per-tensor) before alpha, bias and the activation;
* ``a_major`` ``k`` (a (m, k) with unit stride along k) or ``m``; ``b_major`` ``k`` (b (k, n)
  with unit stride along k, the nn.Linear weight layout) or ``n``;
* ``tile`` in :data:`TILES`: ``128x128`` (128×128×64, 6 stages), ``128x256`` (128×256×64,
  4 stages) or ``128x64`` (128×64×64, 8 stages; 16-bit inputs, k-major a and b: small grids) — k per stage is one 128-byte swizzle row, so 128 for fp8 (:func:`block_k`);
* ``cluster`` 1, or 2 (16-bit ``128x256`` with a k-major a only): thread-block clusters of 2 CTAs
  along m that share the b tile — each loads half of it with a TMA multicast into both CTAs'
  shared memory (a third less L2→SM traffic per CTA); the two CTAs walk tile pairs (2i, 2i+1)
  of one column (the odd one past m, if any, loads zeros and stores nothing).

alpha, beta, the bias switch and the epilogue word ``epi`` (activation code :data:`ACT_CODES`
in bits 0-1, :data:`EPI_VEC` = c / bias allow 16-byte vectors, see :func:`epi_word`) are
run-time parameters (the scale pointers are read by the fp8 SKUs only), and so is split-K
(``splits`` k ranges of ``kps`` k blocks each, partial products ``zc`` elements apart — the
plan runs it with the f32-output SKU into its workspace and reduces with
``gemm_splitk_reduce``):
2 dtypes × 2 outs × 2 × 2 majors × 2 tiles = 32 SKUs plus 8 cluster SKUs (2 dtypes × 2 outs ×
2 b majors) plus 18 fp8 SKUs (3 type pairs × 3 outs × 2 tiles) plus 4 narrow-tile SKUs (2 dtypes
× 2 outs) = 62, sm90a only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ....jit import KernelTemplate, LaunchGeometry, params, register

#: tile name -> (bM, bN, bK, stages)
TILES = {
    "128x128": (128, 128, 64, 6),
    "128x256": (128, 256, 64, 4),
    "128x64": (128, 64, 64, 8),
}
#: the narrow tile for small grids (split-K over more, thinner column blocks): 16-bit inputs,
#: both operands k-major (the nn.Linear layout) only
NARROW_TILE = "128x64"
DTYPES = ("f16", "bf16")
#: fp8 SKUs (``dtype`` = a's type, knob ``b`` = b's type): wgmma takes both operands k-major
#: only; e5m2 x e5m2 (no use in fp8 training recipes) runs on the mma.sync fp8 kernel
FP8_PAIRS = (("e4m3", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "e4m3"))
FP8_OUTS = ("bf16", "f16", "f32")
#: element bytes per dtype knob
ITEMSIZE = {"f16": 2, "bf16": 2, "e4m3": 1, "e5m2": 1}


def block_k(tile: str, dtype: str) -> int:
    """k extent of one pipeline stage: one 128-byte swizzle row (64 16-bit / 128 fp8 elements)."""
    return TILES[tile][2] * 2 // ITEMSIZE[dtype]


A_MAJORS = ("k", "m")
B_MAJORS = ("k", "n")
#: run-time activation codes of the ``act`` parameter
ACT_CODES = {"none": 0, "relu": 1, "gelu": 2, "silu": 3}
#: ``epi`` bit: c has unit column stride, and its base and row stride allow 16-byte accesses
#: (and bias, if read, is dense and 16-byte aligned likewise): the epilogue then reads / writes
#: each thread's 16 consecutive columns of a staged chunk as 16-byte vectors
EPI_VEC = 4
#: epilogue staging: each consumer warpgroup moves its 64 × bN accumulators through shared memory
#: in chunks of 64 × EPI_CW f32 (row stride EPI_LD: the padding makes the fragment writes
#: bank-conflict-free); per chunk each thread then owns EPI_SEG consecutive columns of one row
EPI_CW = 32
EPI_LD = EPI_CW + 8
EPI_SEG = 16


def epi_word(act: str, c_ptr: int, csm: int, csn: int, m: int, out_itemsize: int,
             bias_ptr=None, bs: int = 1) -> int:
    """The kernel's ``epi`` parameter: activation code | EPI_VEC when 16-byte vector c (and
    bias) accesses are aligned."""
    ok = (csn == 1 and c_ptr % 16 == 0 and ((csm * out_itemsize) % 16 == 0 or m == 1))
    if bias_ptr is not None:
        ok = ok and bs == 1 and bias_ptr % 16 == 0
    return ACT_CODES[act] | (EPI_VEC if ok else 0)


#: 1 producer warpgroup + 2 consumer warpgroups
THREADS = 384
#: grouped rasterisation: tiles walk GROUP_M tile rows down m, then along n
GROUP_M = 8
#: shared-memory bytes beyond the operand stages: mbarriers + 1024-byte alignment slack
SMEM_EXTRA = 1024 + 256
#: the two consumer warpgroups' epilogue staging chunks (f32)
EPI_SMEM = 2 * 64 * EPI_LD * 4


def smem_bytes(tile: str) -> int:
    bm, bn, bk, st = TILES[tile]
    return st * (bm + bn) * bk * 2 + EPI_SMEM + SMEM_EXTRA


def num_tiles(m: int, n: int, tile: str) -> int:
    bm, bn = TILES[tile][:2]
    return -(-m // bm) * -(-n // bn)


@dataclass(frozen=True)
class Sm90Knobs:
    """Knobs of ``gemm_sm90``: ``dtype`` (a's type: f16 / bf16, or e4m3 / e5m2), ``out`` (c and
    bias), operand majors ``a_major`` (k / m) and ``b_major`` (k / n), ``tile`` (a :data:`TILES`
    name), ``cluster`` (1, or 2: b multicast over a CTA pair) and, for the fp8 SKUs only, ``b``
    (b's type; None = ``dtype``)."""

    dtype: str
    out: str
    a_major: str
    b_major: str
    tile: str
    cluster: int
    b: Optional[str] = None

    @property
    def b_dtype(self) -> str:
        """b's element type (``b`` for the fp8 SKUs, else ``dtype``)."""
        return self.dtype if self.b is None else self.b


def _outs(dt):
    return (dt, "f32")


#: the tile that has a 2-CTA cluster variant (a_major k)
CLUSTER_TILE = "128x256"


def _space():
    for dt in DTYPES:
        for out in _outs(dt):
            yield Sm90Knobs(dtype=dt, out=out, a_major="k", b_major="k", tile=NARROW_TILE,
                            cluster=1)
    for tile in ("128x128", "128x256"):
        for a, b in FP8_PAIRS:
            for out in FP8_OUTS:
                yield Sm90Knobs(dtype=a, b=b, out=out, a_major="k", b_major="k", tile=tile,
                                cluster=1)
        for dt in DTYPES:
            for out in _outs(dt):
                for am in A_MAJORS:
                    for bm in B_MAJORS:
                        yield Sm90Knobs(dtype=dt, out=out, a_major=am, b_major=bm, tile=tile,
                                        cluster=1)
                        if tile == CLUSTER_TILE and am == "k":
                            yield Sm90Knobs(dtype=dt, out=out, a_major=am, b_major=bm,
                                            tile=tile, cluster=2)


GEMM_SM90 = register(KernelTemplate(
    name="gemm_sm90",
    family="gemm",
    module="baracuda_dsl.ops.gemm.kernels.gemm_sm90",
    params=params("ta:tmap tb:tmap c:ptr bias:ptr sa:ptr sb:ptr m:i32 n:i32 k:i32 csm:i64 "
                  "csn:i64 bs:i64 sas:i64 sbs:i64 alpha:f32 beta:f32 has_bias:i32 epi:i32 "
                  "splits:i32 kps:i32 zc:i64"),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=smem_bytes(k.tile),
                                      cluster=k.cluster),
    knobs=Sm90Knobs,
    arch_ok=lambda k, arch: arch == "sm90a",
))


# ------------------------------------------------------------------ operand descriptors
def operand_box(kmajor: bool, rows_tile: int, bk: int = 64, mcast: int = 1, itemsize: int = 2):
    """(box0, box1) of an operand's descriptor: box0 along the contiguous dim (one 128-byte
    swizzle row: 64 16-bit or 128 fp8 elements), box1 along the other: the tile's rows for a
    k-major operand, bk for an m/n-major one (the DSL then issues rows_tile / 64 loads per
    stage); a multicast operand's box1 is split over its ``mcast`` CTAs (checked against the
    DSL by the CPU test)."""
    row = 128 // itemsize
    return (row, rows_tile // mcast) if kmajor else (row, bk // mcast)
