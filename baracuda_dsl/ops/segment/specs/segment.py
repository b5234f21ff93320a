"""Template specs of the segment-reduction family (segment_sum / mean / max / min / prod over
sorted or unsorted ids, index_add, embedding backward, embedding_bag forward and backward).

Kernels (``ops/segment/kernels/segment_*.py``; knob types below):

``segment_keys``     ids (int32 / int64, any stride) → int32 keys: the id wrapped once
                     (−m ≤ i < 0 → i + m), ``m`` for a bad id (sorts last; status word ← 1).
``segment_offsets``  sorted int32 keys → int64 offsets ``off[s]`` = first position with
                     key ≥ s, s ∈ [0, m] (a binary search per segment; no atomics).
``segment_reduce``   the core: out[b, s, c] = ⊕_{k ∈ [off[s], off[s+1])} w[k]·src[b, row(k), c]
                     in increasing k (fixed order: bit-stable), row(k) = perm[k] or k.  Knobs
                     ``op`` (sum mean max min prod), ``dtype`` (f32 f16 bf16 f64 i32 i64; mean
                     floats only), ``index`` (i32 / i64: the perm and offsets arrays), ``vec``
                     (1 or 16 bytes of columns per thread) and ``tps`` (threads per segment:
                     1, 4, 16, 32, 128; a CTA of 128 threads covers 128/tps segments).
``segment_bw``       gather-form backward of a segment reduction: dx[b, k, c] = dy[b, id(k), c]
                     (sum), / count (mean), or where arg[b, id(k), c] == k (max / min).
``segment_bag``      embedding_bag helpers: ``count`` (1 / non-padding count per bag) and ``map``
                     (per sorted position: its bag and its weight).

Accumulation: float32 for f16 / bf16 / f32, float64 for f64, int64 for int32 / int64.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ....jit import KernelTemplate, LaunchGeometry, params, register

THREADS = 128
PREP_THREADS = 256    # segment_keys / segment_offsets / segment_bag
OPS = ("sum", "mean", "max", "min", "prod")
FLOAT_DTYPES = ("f32", "f16", "bf16", "f64")
INT_DTYPES = ("i32", "i64")
DTYPES = FLOAT_DTYPES + INT_DTYPES
ITEMSIZE = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i32": 4, "i64": 8}
INDEX = ("i32", "i64")
TPS = (1, 4, 16, 32, 128)
BW_OPS = ("sum", "mean", "arg")

# flag bits of segment_reduce
F_PERM = 1        # row(k) = perm[k] (else k)
F_KEYS = 2        # include k only when keys[k] == s (robust sorted path)
F_W = 4           # multiply each row by w[k] (accumulator dtype)
F_ACC = 8         # out = out + alpha·result for non-empty segments (index_add)
F_ARGOUT = 16     # write the int64 row of the first extreme (max / min) to arg
F_STATUS = 32     # store 1 into status[0] on a bad row index
F_WRAP = 64       # wrap a negative row index once (user indices)
F_PAD_ROW = 128   # skip rows with row(k) == pad (embedding_bag forward)
F_PAD_SEG = 256   # segment s == pad is written as zero (embedding backward)
F_ARGIN = 1024    # keep a term only where argin[row(k), c] == s, once per row (bag max bw)
F_ZERO_EMPTY = 2048  # empty max / min segment → 0 (embedding_bag) instead of the identity


@dataclass(frozen=True)
class SegmentKeysKnobs:
    """The ``segment_keys`` SKU of an id dtype (``kind`` is always ``keys``)."""

    kind: str
    index: str


@dataclass(frozen=True)
class SegmentOffsetsKnobs:
    """The one ``segment_offsets`` SKU (``kind`` is always ``offsets``)."""

    kind: str


@dataclass(frozen=True)
class SegmentBagKnobs:
    """One ``segment_bag`` SKU: helper (``count`` / ``map``), index dtype, accumulator dtype."""

    kind: str
    index: str
    acc: str


@dataclass(frozen=True)
class SegmentReduceKnobs:
    """One ``segment_reduce`` SKU: op, element dtype, perm / offsets index dtype, columns per
    thread access (1 or a 16-byte vector), threads per segment."""

    op: str
    dtype: str
    index: str
    vec: int
    tps: int


@dataclass(frozen=True)
class SegmentBwKnobs:
    """One ``segment_bw`` SKU: backward op (sum / mean / arg) and element dtype."""

    op: str
    dtype: str


def acc_of(dt: str) -> str:
    """Accumulator dtype short name."""
    return "f64" if dt == "f64" else ("f32" if dt in ("f32", "f16", "bf16") else "i64")


def vec_of(dt: str) -> int:
    """Columns per 16-byte vector."""
    return 16 // ITEMSIZE[dt]


def _op_dtypes(ops):
    """(op, dtype) pairs wired for ``ops`` (mean: float dtypes only)."""
    return [(op, dt) for op, dt in product(ops, DTYPES) if not (op == "mean" and dt in INT_DTYPES)]


def _reduce_space():
    for op, dt in _op_dtypes(OPS):
        for ix, vec, tps in product(INDEX, (1, vec_of(dt)), TPS):
            yield SegmentReduceKnobs(op, dt, ix, vec, tps)


def _bw_space():
    return (SegmentBwKnobs(op, dt) for op, dt in _op_dtypes(BW_OPS))


SEGMENT_KEYS = register(KernelTemplate(
    name="segment_keys",
    family="segment",
    module="baracuda_dsl.ops.segment.kernels.segment_prep",
    params=params("ids:ptr keys:ptr status:ptr n:i64 m:i64 xs:i64 has_status:i32"),
    space=lambda: (SegmentKeysKnobs("keys", ix) for ix in INDEX),
    geometry=lambda k: LaunchGeometry(threads=PREP_THREADS, smem_bytes=0),
    knobs=SegmentKeysKnobs,
))

SEGMENT_OFFSETS = register(KernelTemplate(
    name="segment_offsets",
    family="segment",
    module="baracuda_dsl.ops.segment.kernels.segment_prep",
    params=params("keys:ptr off:ptr n:i64 m:i64"),
    space=lambda: iter([SegmentOffsetsKnobs("offsets")]),
    geometry=lambda k: LaunchGeometry(threads=PREP_THREADS, smem_bytes=0),
    knobs=SegmentOffsetsKnobs,
))

SEGMENT_BAG = register(KernelTemplate(
    name="segment_bag",
    family="segment",
    module="baracuda_dsl.ops.segment.kernels.segment_prep",
    params=params("perm:ptr offs:ptr idx:ptr psw:ptr inv:ptr rows:ptr w:ptr n:i64 nofs:i64 "
                  "nbags:i64 os:i64 xs:i64 pws:i64 pad:i64 m:i64 flags:i32"),
    space=lambda: (SegmentBagKnobs(*k) for k in product(("count", "map"), INDEX, ("f32", "f64"))),
    geometry=lambda k: LaunchGeometry(threads=PREP_THREADS, smem_bytes=0),
    knobs=SegmentBagKnobs,
))

SEGMENT_REDUCE = register(KernelTemplate(
    name="segment_reduce",
    family="segment",
    module="baracuda_dsl.ops.segment.kernels.segment_reduce",
    params=params("src:ptr perm:ptr keys:ptr off:ptr w:ptr out:ptr arg:ptr status:ptr "
                  "nseg:i64 nofs:i64 n:i64 m:i64 C:i64 srs:i64 scs:i64 sbs:i64 ors:i64 "
                  "ocs:i64 obs:i64 ps:i64 os:i64 wsd:i64 pad:i64 b0:i64 alpha:f64 flags:i32"),
    space=_reduce_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=SegmentReduceKnobs,
))

SEGMENT_BW = register(KernelTemplate(
    name="segment_bw",
    family="segment",
    module="baracuda_dsl.ops.segment.kernels.segment_bw",
    params=params("dy:ptr keys:ptr off:ptr arg:ptr dx:ptr n:i64 nseg:i64 C:i64 dyrs:i64 "
                  "dycs:i64 dybs:i64 dxrs:i64 dxcs:i64 dxbs:i64 b0:i64"),
    space=_bw_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=SegmentBwKnobs,
))
