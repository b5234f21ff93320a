"""Template specs of the ALiBi bias kernels (``ops/attention/alibi.py``: AlibiPlan and
AlibiBackwardPlan).

``alibi_fw``  bias[b, h, i, j] = −slope[b, h]·|i + off − j| (``off = Sk − Sq`` bottom-right
              aligned, 0 top-left): one thread per unit of a row ``(b, h, i)`` of ``Sk``
              elements — a 16-byte vector (``VEC``: the output 16-byte aligned, its row strides
              multiples of ``V = 16 / itemsize``, unit column stride, ``Sk % V == 0``) or one
              element.  Knobs (:class:`AlibiKnobs`): the output ``dtype`` (f16, bf16, f32,
              f64; the value computed in f32, f64 for f64); slopes are f32, read at
              ``b·sb + h·sh`` (``sb = 0``: one slope per head for every batch).
``alibi_bw``  dslope[k] = Σ dbias[b', h, i, j]·(−|i + off − j|) over the rows of slope ``k =
              bk·Hq + h`` (rows ``r < nrows``: ``b' = bk + r div Sq``, ``i = r mod Sq``; a
              per-head slope sums every batch).  Deterministic two-pass reduction, no atomics:
              ``mode`` :data:`REDUCE` — CTA ``(k, c)`` (grid ``nslopes · nchunks``) adds rows
              ``[c·rpc, (c + 1)·rpc)`` of slope k, thread-strided over (row, unit) items, then
              warp shuffles and the warps in order; it writes ``part[k·nchunks + c]`` (compute
              type) or, with :data:`DIRECT` (``nchunks == 1``), ``dslopes[k]`` in f32.  ``mode``
              :data:`FINISH` — thread ``k`` adds ``part[k, 0 .. nchunks)`` in order into
              ``dslopes[k]``.  Accumulation in f32 (f64 for f64 dbias).
"""

from __future__ import annotations

from dataclasses import dataclass

from ....jit import KernelTemplate, LaunchGeometry, params, register

DTYPES = ("f16", "bf16", "f32", "f64")
ITEMSIZE = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8}
FW_THREADS = 128
BW_THREADS = 256

#: flag bits
VEC = 1        # 16-byte vector units
DIRECT = 2     # backward: one chunk per slope, write dslopes directly
#: backward modes
REDUCE, FINISH = 0, 1


@dataclass(frozen=True)
class AlibiKnobs:
    """One ``alibi_fw`` SKU: the bias dtype."""

    dtype: str


@dataclass(frozen=True)
class AlibiBackwardKnobs:
    """One ``alibi_bw`` SKU: the dbias dtype (both templates' kernels live in
    ``kernels/alibi.py``; its ``build`` tells them apart by the knobs type)."""

    dtype: str


def vec_of(dtype: str) -> int:
    """Elements of ``dtype`` in one 16-byte vector."""
    return 16 // ITEMSIZE[dtype]


def _space():
    return (AlibiKnobs(dtype=d) for d in DTYPES)


def _bw_space():
    return (AlibiBackwardKnobs(dtype=d) for d in DTYPES)


ALIBI_FW = register(KernelTemplate(
    name="alibi_fw",
    family="attention",
    module="baracuda_dsl.ops.attention.kernels.alibi",
    params=params("slopes:ptr bias:ptr flags:i32 total:i64 upr:i32 H:i32 Sq:i32 Sk:i32 off:i32 "
                  "sb:i64 sh:i64 ob:i64 oh:i64 oi:i64 oj:i64"),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=FW_THREADS, smem_bytes=0),
    knobs=AlibiKnobs,
))

#: warp partials (8-byte slots) + alignment slack
BW_SMEM = (BW_THREADS // 32) * 8 + 64

ALIBI_BW = register(KernelTemplate(
    name="alibi_bw",
    family="attention",
    module="baracuda_dsl.ops.attention.kernels.alibi",
    params=params("dbias:ptr part:ptr dslopes:ptr mode:i32 flags:i32 nslopes:i32 nchunks:i32 "
                  "rpc:i64 nrows:i64 upr:i32 H:i32 Sq:i32 Sk:i32 off:i32 db:i64 dh:i64 di:i64 "
                  "dj:i64 gb:i64 gh:i64"),
    space=_bw_space,
    geometry=lambda k: LaunchGeometry(threads=BW_THREADS, smem_bytes=BW_SMEM),
    knobs=AlibiBackwardKnobs,
))
