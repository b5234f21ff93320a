"""Template spec of the Hopper (sm90a) GEMM behind ``GemmPlan``: ``gemm_sm90``.

``wgmma`` (warpgroup MMA, f16 / bf16 inputs, f32 accumulate) fed by TMA bulk-tensor loads into
128-byte-swizzled shared memory through an mbarrier pipeline; warp-specialised (warpgroup 0 is the
producer — one warp issues the TMA loads — warpgroups 1 and 2 are the consumers, each owning 64
rows of the CTA tile) and persistent over output tiles (grid = min(tiles, SMs), static stride
schedule, grouped rasterisation as in ``templates.gemm.raster``).

Kernel ABI: the two operands arrive as CUtensorMap descriptors passed by value (param kind
``tmap``: ``.param .align 64 .b8 [128]``), encoded on the host by
:func:`operand_tmap` (pure Python) with exactly the bits the DSL's own host code writes for the
same operand — the DSL packs the 128-byte descriptor itself (it does not call
cuTensorMapEncodeTiled); tests/test_gemm_sm90_cpu.py compiles probes whose shapes are constants,
reads the folded descriptor words from the DSL's lowered host IR and compares them with
:func:`operand_tmap`.  No DSL / compiler / driver encode call is needed at run time.

Knobs:

* ``dtype`` ``f16`` / ``bf16``; ``out`` the input dtype or ``f32`` (c and bias);
* ``a_major`` ``k`` (a (m, k) with unit stride along k) or ``m``; ``b_major`` ``k`` (b (k, n)
  with unit stride along k, the nn.Linear weight layout) or ``n``;
* ``tile`` in :data:`TILES`: ``128x128`` (128×128×64, 6 stages) or ``128x256`` (128×256×64,
  4 stages);
* ``cluster`` 1, or 2 (``128x256`` with a k-major a only): thread-block clusters of 2 CTAs
  along m that share the b tile — each loads half of it with a TMA multicast into both CTAs'
  shared memory (a third less L2→SM traffic per CTA); the two CTAs walk tile pairs (2i, 2i+1)
  of one column (the odd one past m, if any, loads zeros and stores nothing).

alpha, beta, the bias switch and the epilogue word ``epi`` (activation code :data:`ACT_CODES`
in bits 0-1, :data:`EPI_PAIRS` = c / bias allow paired stores, see :func:`epi_word`) are
run-time parameters:
2 dtypes × 2 outs × 2 × 2 majors × 2 tiles = 32 SKUs plus 8 cluster SKUs (2 dtypes × 2 outs ×
2 b majors) = 40, sm90a only.
"""

from __future__ import annotations

import struct

from ..jit import KernelTemplate, LaunchGeometry, params, register

#: tile name -> (bM, bN, bK, stages)
TILES = {
    "128x128": (128, 128, 64, 6),
    "128x256": (128, 256, 64, 4),
}
DTYPES = ("f16", "bf16")
A_MAJORS = ("k", "m")
B_MAJORS = ("k", "n")
#: run-time activation codes of the ``act`` parameter
ACT_CODES = {"none": 0, "relu": 1, "gelu": 2, "silu": 3}
#: ``epi`` bit: c has unit column stride, c's base and row stride allow 2-element aligned
#: accesses (and bias, if read, is dense and aligned likewise): the epilogue then reads / writes
#: adjacent column pairs of the accumulator fragment as one vector
EPI_PAIRS = 4


def epi_word(act: str, c_ptr: int, csm: int, csn: int, m: int, out_itemsize: int,
             bias_ptr=None, bs: int = 1) -> int:
    """The kernel's ``epi`` parameter: activation code | EPI_PAIRS when paired c (and bias)
    accesses are aligned."""
    pair = 2 * out_itemsize
    ok = csn == 1 and c_ptr % pair == 0 and (csm % 2 == 0 or m == 1)
    if bias_ptr is not None:
        ok = ok and bs == 1 and bias_ptr % pair == 0
    return ACT_CODES[act] | (EPI_PAIRS if ok else 0)
#: 1 producer warpgroup + 2 consumer warpgroups
THREADS = 384
#: grouped rasterisation: tiles walk GROUP_M tile rows down m, then along n
GROUP_M = 8
#: shared-memory bytes beyond the operand stages: mbarriers + 1024-byte alignment slack
SMEM_EXTRA = 1024 + 256


def smem_bytes(tile: str) -> int:
    bm, bn, bk, st = TILES[tile]
    return st * (bm + bn) * bk * 2 + SMEM_EXTRA


def num_tiles(m: int, n: int, tile: str) -> int:
    bm, bn = TILES[tile][:2]
    return -(-m // bm) * -(-n // bn)


def _outs(dt):
    return (dt, "f32")


#: the tile that has a 2-CTA cluster variant (a_major k)
CLUSTER_TILE = "128x256"


def _space():
    for tile in TILES:
        for dt in DTYPES:
            for out in _outs(dt):
                for am in A_MAJORS:
                    for bm in B_MAJORS:
                        yield dict(dtype=dt, out=out, a_major=am, b_major=bm, tile=tile,
                                   cluster=1)
                        if tile == CLUSTER_TILE and am == "k":
                            yield dict(dtype=dt, out=out, a_major=am, b_major=bm, tile=tile,
                                       cluster=2)


GEMM_SM90 = register(KernelTemplate(
    name="gemm_sm90",
    family="gemm",
    module="baracuda_dsl.kernels.gemm_sm90",
    params=params("ta:tmap tb:tmap c:ptr bias:ptr m:i32 n:i32 k:i32 csm:i64 csn:i64 bs:i64 "
                  "alpha:f32 beta:f32 has_bias:i32 epi:i32"),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=smem_bytes(k["tile"]),
                                      cluster=int(k.get("cluster", 1))),
    sources=("baracuda_dsl.kernels.gemm_simt",),
    arch_ok=lambda k, arch: arch == "sm90a",
))


# ------------------------------------------------------------------ host TMA descriptor encoding
#: element type code of the descriptor (bits 8..11 of word 1), as the DSL encodes it
_TMAP_DTYPE = {"f16": 3, "bf16": 5}
#: the rest of word 1's low half for these operands: rank 2, 128-byte swizzle, interleave none,
#: L2 promotion and zero OOB fill exactly as the DSL sets them (read off its host code)
_TMAP_FLAGS = 0x46012
_M64 = (1 << 64) - 1
_ADDR_MASK = (1 << 53) - 1
_TMAP = struct.Struct("<16Q")


def operand_box(kmajor: bool, rows_tile: int, bk: int = 64, mcast: int = 1):
    """(box0, box1) of an operand's descriptor: box0 along the contiguous dim (64 elements =
    one 128-byte swizzle row), box1 along the other: the tile's rows for a k-major operand, bk
    for an m/n-major one (the DSL then issues rows_tile / 64 loads per stage); a multicast
    operand's box1 is split over its ``mcast`` CTAs (checked against the DSL by the CPU test)."""
    return (64, rows_tile // mcast) if kmajor else (64, bk // mcast)


def operand_tmap(addr: int, dtype: str, kmajor: bool, rows: int, k: int, ld: int,
                 rows_tile: int, bk: int = 64, mcast: int = 1) -> bytes:
    """The 128-byte CUtensorMap the ``gemm_sm90`` kernel expects for one operand seen as
    (rows, k) with unit stride along k (``kmajor``) or along rows, leading dim ``ld`` elements
    (a multiple of 8), base ``addr`` (16-byte aligned); box = :func:`operand_box` (``mcast``:
    the cluster size of a multicast operand).  Bit-identical
    to the DSL's host encoding (words 0..7; words 8..15 are zero)."""
    d0, d1 = (k, rows) if kmajor else (rows, k)
    stride = ld * 2                                  # 16-bit elements
    box0, box1 = operand_box(kmajor, rows_tile, bk, mcast)
    big = 1 if (d1 - 1) * stride + d0 * 2 >= 131072 else 0
    return _TMAP.pack(
        ((addr >> 4) & _ADDR_MASK) << 4,
        (_TMAP_FLAGS | (_TMAP_DTYPE[dtype] << 8) | (big << 21) | ((stride >> 4) << 32)) & _M64,
        0,
        ((stride >> 36) & 15) << 32,
        ((d0 - 1) & 0xFFFFFFFF) | (((d1 - 1) << 32) & _M64),
        0,
        ((box0 - 1) << 56) & _M64,
        box1 - 1,
        0, 0, 0, 0, 0, 0, 0, 0)
