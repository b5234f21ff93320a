"""Template specs for the row-normalisation kernels (RMSNorm, LayerNorm; FW and BW) and the
deterministic column reduction that finishes their weight/bias gradients.

A row is the product of the normalised trailing dims (length ``N``, unit stride); up to three
strided groups of outer dims address the rows.  Knobs (:class:`RowNormKnobs`):

``dtype``   element type (f32, f16, bf16, f64); math and accumulation in f32 (f64 for f64)
``op``      ``rms`` or ``ln``
``vec``, ``tpr``, ``rows``, ``chunks``, ``cluster``
            the row geometry (:class:`~baracuda_dsl.common.rows.RowGeometry`): the SKU serves
            ``N <= tpr·chunks·vec·cluster`` from registers; ``chunks = 0`` is loop mode for any
            ``N`` (the row is re-read from global memory/L2).  Forward buckets go up to 32768
            (16384 for f64), backward ones to 8192 (4096 for f64): backward also keeps per-column
            weight/bias gradient accumulators in registers.  Clusters (sm90a) split longer rows
            over 2–8 CTAs.
``affine``  (forward LayerNorm only) ``chan``: one weight/bias per channel slice of the row,
            for GroupNorm / InstanceNorm rows; ``pdt`` is then the weight dtype
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ....common.rows import ByDtype, RowEngine, RowGeometry
from ....dtypes import FP4
from ....jit import KernelTemplate, LaunchGeometry, params, register

DTYPES = tuple(d.short for d in FP4)
OPS = ("rms", "ln")
#: row-length buckets kept in registers; f64 stops one bucket earlier (register budget)
BUCKETS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
SLOTS = 4  # reduction slots: two values × two parities (the backward loop alternates)

#: forward: four 16-byte vectors a thread, up to 1024 threads a row (more vectors beyond);
#: cluster slices (sm90a) of half the largest bucket (512 threads for two-byte types: two CTAs
#: per SM) and of full size
FW_ROWS = RowEngine(
    slots=SLOTS, buckets=BUCKETS, caps=ByDtype(32768, 32768, 32768, 16384),
    per_thread=ByDtype.vectors(4), max_tpr=1024,
    clusters=((4, True), (8, True), (8, False)))
#: backward: also keeps dw/db accumulators per column, so 16 elements a thread (8 for f64) at
#: most 512 threads a row
BW_ROWS = RowEngine(
    slots=SLOTS, buckets=BUCKETS, caps=ByDtype(8192, 8192, 8192, 4096),
    per_thread=ByDtype(16, 16, 16, 8), max_tpr=512,
    clusters=((2, False), (8, True), (8, False)))


@dataclass(frozen=True)
class RowNormKnobs(RowGeometry):
    """Knobs of ``row_norm_fw`` / ``row_norm_bw``: the row geometry, the element type, the op,
    and (forward LayerNorm of GroupNorm rows) the per-channel affine and its weight dtype."""

    dtype: str
    op: str
    affine: str = "row"
    pdt: Optional[str] = None


def _space(engine: RowEngine):
    for dt in DTYPES:
        for op in OPS:
            for g in engine.space(dt):
                yield RowNormKnobs.of(g, dtype=dt, op=op)


def _fw_space():
    """Row-affine SKUs, then forward LayerNorm SKUs with per-channel affine (GroupNorm /
    InstanceNorm rows): weights in the input dtype or, for half inputs, f32 (``pdt``)."""
    yield from _space(FW_ROWS)
    for k in _space(FW_ROWS):
        if k.op == "ln":
            for pdt in ((k.dtype, "f32") if k.dtype in ("f16", "bf16") else (k.dtype,)):
                yield RowNormKnobs.of(k, dtype=k.dtype, op="ln", affine="chan", pdt=pdt)


ROW_NORM_FW = register(KernelTemplate(
    name="row_norm_fw",
    family="normalization",
    module="baracuda_dsl.ops.normalization.kernels.row_norm",
    params=params("x:ptr y:ptr w:ptr b:ptr mean:ptr rstd:ptr M:i32 N:i32 s1:i32 s2:i32 "
                  "x0:i64 x1:i64 x2:i64 y0:i64 y1:i64 y2:i64 eps:f64 flags:i32 hw:i32 cpg:i32 "
                  "G:i32"),
    space=_fw_space,
    geometry=FW_ROWS.launch,
    knobs=RowNormKnobs,
    arch_ok=RowNormKnobs.arch_ok,
))

ROW_NORM_BW = register(KernelTemplate(
    name="row_norm_bw",
    family="normalization",
    module="baracuda_dsl.ops.normalization.kernels.row_norm_bw",
    params=params("dy:ptr x:ptr w:ptr mean:ptr rstd:ptr dx:ptr dwp:ptr dbp:ptr M:i32 N:i32 "
                  "s1:i32 s2:i32 dy0:i64 dy1:i64 dy2:i64 x0:i64 x1:i64 x2:i64 dx0:i64 dx1:i64 "
                  "dx2:i64 flags:i32"),
    space=lambda: _space(BW_ROWS),
    geometry=BW_ROWS.launch,
    knobs=RowNormKnobs,
    arch_ok=RowNormKnobs.arch_ok,
))


@dataclass(frozen=True)
class ColumnSumKnobs:
    """Knobs of ``column_sum``: the output element type (partials in its compute type)."""

    dtype: str


#: column_sum block: 32 columns × 8 row groups
COLSUM_COLS, COLSUM_GROUPS = 32, 8

COLUMN_SUM = register(KernelTemplate(
    name="column_sum",
    family="normalization",
    module="baracuda_dsl.ops.normalization.kernels.column_sum",
    params=params("src:ptr dst:ptr G:i32 N:i32 ld:i64"),
    space=lambda: (ColumnSumKnobs(dt) for dt in DTYPES),
    geometry=lambda k: LaunchGeometry(threads=COLSUM_COLS * COLSUM_GROUPS,
                                      smem_bytes=COLSUM_COLS * COLSUM_GROUPS * 8 + 64),
    knobs=ColumnSumKnobs,
))

#: flag bits shared by the FW/BW kernels and their plans
HAS_W, HAS_B, WRITE_STATS, WANT_DW = 1, 2, 4, 8
