"""Template specs of the indexing family (``ops/indexing/indexing.py``): row gather (index_select /
embedding / take), gather / scatter along an axis (torch.gather, take_along_axis, scatter,
scatter_add, scatter_reduce) and one_hot.

Index policy shared by every template: an index ``i`` of an axis of extent ``m`` is wrapped once
(``-m <= i < 0`` → ``i + m``); anything still outside ``[0, m)`` is *bad*: gathers write an
all-bits-zero word, scatters skip it, and when ``has_status != 0`` the kernel stores ``1`` into
the int32 word ``status[0]``.  No template ever touches memory outside its operands.

``index_rows``  out[o, i, r] = x[o, idx[i], r] (rows of ``rlen`` words; :class:`IndexRowsKnobs`)
    ``itemsize``  1, 2, 4, 8, 16: opaque words (the plan widens a unit-stride aligned row into
                  16-byte words), so one SKU serves every dtype
    ``index``     i32 / i64 index dtype
    ``tpr``       threads per row chunk (1, 8, 32, 128): a chunk is ``tpr · ILP`` words; a CTA of
                  ``THREADS`` threads handles ``THREADS / tpr`` row chunks; tpr 1 (rows of
                  ≤ ILP words): a thread copies one word of each of ILP rows

``gather_axis`` a[c with c[axis] ← idx[c]] ⟷ b[c] for every coordinate c of idx's shape
    (:class:`GatherAxisKnobs`)
    ``mode``      gather (b = a[...]), assign / add / amax / amin / mul (a[...] op= b), zero
                  (a[...] = 0: the scatter backward's "scattered positions get no gradient")
    ``itemsize``  word size for gather / assign / zero (dtype-agnostic); the element size else
    ``dtype``     ``any`` for the copy modes; the element dtype for the atomic modes
    ``rank``      collapsed rank served (1, 2, 4, 8)
    ``wide``      0: Int32 coordinate decomposition (numel < 2^31), 1: Int64 (rank 8 only;
                  offsets are always Int64)
    ``index``     i32 / i64

``one_hot``     out[r, c] = (idx[r] == c) ? one : 0 as opaque ``itemsize`` words (``one`` is the
                bit pattern of 1 in the output dtype, passed as an i64); idx any strides (rank
                knob 1, 2, 4, 8 over idx's collapsed shape); ``index`` i32 / i64
                (:class:`OneHotKnobs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ....jit import KernelTemplate, LaunchGeometry, params, register
from ...shape.specs.repeat import dims_params

ITEMSIZES = (1, 2, 4, 8, 16)
INDEX = ("i32", "i64")
RANKS = (1, 2, 4, 8)

# ---------------------------------------------------------------------------- index_rows
ROW_THREADS = 128
ROW_ILP = 4
TPRS = (1, 8, 32, 128)


@dataclass(frozen=True)
class IndexRowsKnobs:
    """One ``index_rows`` SKU: word size in bytes, index dtype, threads per row chunk."""

    itemsize: int
    index: str
    tpr: int


def tpr_for(rlen: int) -> int:
    """Threads per row chunk for rows of ``rlen`` words: the smallest tpr whose chunk
    (tpr · ILP words) holds the row, capped at a full CTA."""
    for t in TPRS:
        if t * ROW_ILP >= rlen:
            return t
    return TPRS[-1]


def rows_grid(tpr: int, rows: int, rlen: int):
    """(row groups, chunks per row) of an index_rows launch (grid = groups · chunks): tpr 1 —
    a group is THREADS · ILP rows and a chunk one word; else a group is THREADS / tpr rows and a
    chunk tpr · ILP words."""
    if tpr == 1:
        return -(-rows // (ROW_THREADS * ROW_ILP)), rlen
    return -(-rows // (ROW_THREADS // tpr)), -(-rlen // (tpr * ROW_ILP))


def rank_for(r: int) -> int:
    """Smallest rank knob serving a collapsed rank ``r`` (0 → 1)."""
    return next(k for k in RANKS if k >= max(r, 1))


def _rows_space():
    return (IndexRowsKnobs(*k) for k in product(ITEMSIZES, INDEX, TPRS))


INDEX_ROWS = register(KernelTemplate(
    name="index_rows",
    family="indexing",
    module="baracuda_dsl.ops.indexing.kernels.index_rows",
    params=params("x:ptr idx:ptr out:ptr status:ptr has_status:i32 rows:i64 nidx:i64 rlen:i64 "
                  "m:i64 xso:i64 xsm:i64 xsr:i64 xis:i64 oso:i64 osi:i64 osr:i64 chunks:i64"),
    space=_rows_space,
    geometry=lambda k: LaunchGeometry(threads=ROW_THREADS, smem_bytes=0),
    knobs=IndexRowsKnobs,
))

# --------------------------------------------------------------------------- gather_axis
AXIS_THREADS = 256
COPY_MODES = ("gather", "assign", "zero")
#: atomic modes -> element dtypes wired (shorts)
ATOMIC_DTYPES = {
    "add": ("f32", "f64", "f16", "bf16", "i32", "i64"),
    "amax": ("f32", "i32", "i64"),
    "amin": ("f32", "i32", "i64"),
}
_ISZ = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i32": 4, "i64": 8}


@dataclass(frozen=True)
class GatherAxisKnobs:
    """One ``gather_axis`` SKU: mode, word / element size in bytes, element dtype (``any`` for
    the copy modes), collapsed rank knob, Int64 coordinate math, index dtype."""

    mode: str
    itemsize: int
    dtype: str
    rank: int
    wide: int
    index: str


def _axis_space():
    for r in RANKS:
        for w in ((0, 1) if r == 8 else (0,)):
            for ix in INDEX:
                for mode, isz in product(COPY_MODES, ITEMSIZES):
                    yield GatherAxisKnobs(mode, isz, "any", r, w, ix)
                for mode, dts in ATOMIC_DTYPES.items():
                    for dt in dts:
                        yield GatherAxisKnobs(mode, _ISZ[dt], dt, r, w, ix)


def atomic_arch_ok(mode: str, dtype: str, arch: str) -> bool:
    """bf16 atomic add (``red.global.add.noftz.bf16``) exists on sm90 only."""
    return not (mode == "add" and dtype == "bf16" and arch != "sm90a")


def axis_arch_ok(k: GatherAxisKnobs, arch: str) -> bool:
    """Whether the ``gather_axis`` SKU ``k`` exists on ``arch`` (:func:`atomic_arch_ok`)."""
    return atomic_arch_ok(k.mode, k.dtype, arch)


GATHER_AXIS = register(KernelTemplate(
    name="gather_axis",
    family="indexing",
    module="baracuda_dsl.ops.indexing.kernels.gather_axis",
    params=params(f"a:ptr idx:ptr b:ptr status:ptr has_status:i32 n:i64 m:i64 asa:i64 "
                  f"{dims_params('d')} {dims_params('as')} {dims_params('is')} "
                  f"{dims_params('bs')}"),
    space=_axis_space,
    geometry=lambda k: LaunchGeometry(threads=AXIS_THREADS, smem_bytes=0),
    knobs=GatherAxisKnobs,
    arch_ok=axis_arch_ok,
))

# ------------------------------------------------------------------------------- one_hot
HOT_THREADS = 256
HOT_ITEMSIZES = (1, 2, 4, 8)


@dataclass(frozen=True)
class OneHotKnobs:
    """One ``one_hot`` SKU: output word size in bytes, index dtype, collapsed index rank knob."""

    itemsize: int
    index: str
    rank: int


def _hot_space():
    return (OneHotKnobs(*k) for k in product(HOT_ITEMSIZES, INDEX, RANKS))


ONE_HOT = register(KernelTemplate(
    name="one_hot",
    family="indexing",
    module="baracuda_dsl.ops.indexing.kernels.one_hot",
    params=params(f"idx:ptr out:ptr status:ptr has_status:i32 n:i64 classes:i64 one:i64 "
                  f"{dims_params('d')} {dims_params('is')}"),
    space=_hot_space,
    geometry=lambda k: LaunchGeometry(threads=HOT_THREADS, smem_bytes=0),
    knobs=OneHotKnobs,
))
