"""Template specs of the sorting family (sort, argsort, msort, top-k, kthvalue, their
backwards, searchsorted).

``sort_rows``      small-row fast path: one CTA per row, register-blocked bitonic network
                   (8 pairs per thread, one shared-memory round trip per 3 stages) over
                   (key, index) pairs; knobs ``dtype`` (13 sortable dtypes), ``bucket`` (row
                   capacity N: 64, 256, 1024, 4096)
``radix_keys``     long rows, step 1: strided gather → order-preserving keys + int32 indices in
                   the workspace; knob ``dtype``
``radix_upsweep``  per (tile, row) 256-bin digit histogram of one 8-bit pass; knob ``kbits``
``radix_scan``     per (digit, row) exclusive scan of the tile counts + digit totals
``radix_scatter``  stable scatter of one pass (warp match ranking); knob ``kbits`` (32, 64)
``sort_select``    top-k / kthvalue of rows ≤ 4096 without a full sort: per-row radix select
                   in shared memory (+ bitonic sort of the k survivors); knobs ``dtype``,
                   ``kb`` (0: kthvalue, else the survivor bucket 64 / 256 / 1024 ≥ k)
``sort_gather``    long-row output: values decoded from the sorted keys (gathered from the
                   input by index where the key merged values: float ±0, NaN), int64
                   indices; knob ``dtype``
``sort_scatter_bw`` backward: ``mode=zero`` clears dx, ``mode=scatter`` dx[idx] = dy; knob
                   ``itemsize`` (2, 4, 8)
``searchsorted``   one thread per query, branch-free binary search; knobs ``dtype``, ``out``
                   (i32 / i64)
"""

from __future__ import annotations

from dataclasses import dataclass

from ....jit import KernelTemplate, LaunchGeometry, params, register
from .sort_network import BUCKET_THREADS

SORT_DTYPES = ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
               "f16", "bf16", "f32", "f64")
KEY_BITS = {"bool": 8, "i8": 8, "u8": 8, "i16": 16, "u16": 16, "f16": 16, "bf16": 16,
            "i32": 32, "u32": 32, "f32": 32, "i64": 64, "u64": 64, "f64": 64}
BUCKETS = (64, 256, 1024, 4096)
RADIX_THREADS = 256
RADIX_ITEMS = 16
RADIX_TILE = RADIX_THREADS * RADIX_ITEMS       # keys per (tile, row) CTA
RADIX_BINS = 256
ELEM_THREADS = 256
COLS_PER_CTA = 2048                             # radix_keys / sort_gather: 256 × 8
MAX_GRID_Y = 65535


@dataclass(frozen=True)
class SortRowsKnobs:
    """``sort_rows``: key ``dtype`` and row capacity ``bucket`` (64, 256, 1024, 4096)."""

    dtype: str
    bucket: int


@dataclass(frozen=True)
class SortSelectKnobs:
    """``sort_select``: key ``dtype`` and ``kb`` (0: kthvalue, else the survivor bucket)."""

    dtype: str
    kb: int


@dataclass(frozen=True)
class SortDtypeKnobs:
    """``radix_keys`` and ``sort_gather``: the key ``dtype`` alone."""

    dtype: str


@dataclass(frozen=True)
class RadixPassKnobs:
    """``radix_upsweep`` and ``radix_scatter``: ``kbits``, the key word width (32, 64)."""

    kbits: int


@dataclass(frozen=True)
class RadixScanKnobs:
    """``radix_scan``: ``threads`` per CTA (one SKU)."""

    threads: int


@dataclass(frozen=True)
class ScatterBackwardKnobs:
    """``sort_scatter_bw``: element ``itemsize`` (2, 4, 8) and ``mode`` (zero / scatter)."""

    itemsize: int
    mode: str


@dataclass(frozen=True)
class SearchsortedKnobs:
    """``searchsorted``: element ``dtype`` and output index type ``out`` (i32 / i64)."""

    dtype: str
    out: str


def bucket_for(n: int):
    """Smallest small-row bucket holding ``n`` elements, or None (radix path)."""
    return next((b for b in BUCKETS if b >= n), None)


def kbits_for(short: str) -> int:
    return 64 if KEY_BITS[short] > 32 else 32


def sort_rows_smem(knobs: SortRowsKnobs) -> int:
    kb = 8 if KEY_BITS[knobs.dtype] > 32 else 4
    return knobs.bucket * (kb + 4) + 64


def scatter_smem(knobs: RadixPassKnobs) -> int:
    """radix_scatter: staged tile (keys + int32 indices), 2 × 256 digit offsets, 8 × 257 warp
    histograms, scan slots, alignment slack."""
    return RADIX_TILE * (knobs.kbits // 8 + 4) + 2 * RADIX_BINS * 4 + 8 * 257 * 4 + 192


def _d(prefix: str, k: int = 7) -> str:
    return " ".join(f"{prefix}{i}:i64" for i in range(k))


SORT_ROWS = register(KernelTemplate(
    name="sort_rows", family="sorting", module="baracuda_dsl.ops.sorting.kernels.sort_rows",
    params=params("src:ptr vals:ptr idx:ptr n:i64 rows:i64 desc:i32 want_vals:i32 want_idx:i32 "
                  f"col0:i64 ncols:i64 sa:i64 oa:i64 {_d('e')} {_d('s')} {_d('o')}"),
    space=lambda: (SortRowsKnobs(d, b) for d in SORT_DTYPES for b in BUCKETS),
    geometry=lambda k: LaunchGeometry(threads=BUCKET_THREADS[k.bucket],
                                      smem_bytes=sort_rows_smem(k)),
    knobs=SortRowsKnobs,
))

SELECT_KB = (0, 64, 256, 1024)
SELECT_MAX_N = 4096


def select_passes(bits: int):
    """The digit passes of sort_select's radix select, most significant first: ``(is_position
    digit, shift)`` — 8-bit digits of the ``bits``-bit key, then the two 8-bit digits of the
    12-bit position that break ties."""
    return [(False, s) for s in range(bits - 8, -1, -8)] + [(True, 8), (True, 0)]


def select_smem(knobs: SortSelectKnobs) -> int:
    """sort_select: row keys, bins, scan slots, state, survivors (see kernels/sort_select.py)."""
    kbytes = 8 if KEY_BITS[knobs.dtype] > 32 else 4
    kb = knobs.kb
    surv = 0 if kb == 0 else kb * (8 if kbytes == 4 else 12)
    return SELECT_MAX_N * kbytes + 256 * 4 + 8 * 4 + 32 + surv + 128


SORT_SELECT = register(KernelTemplate(
    name="sort_select", family="sorting", module="baracuda_dsl.ops.sorting.kernels.sort_select",
    params=params("src:ptr vals:ptr idx:ptr n:i64 k:i64 rows:i64 desc:i32 want_vals:i32 "
                  f"want_idx:i32 sa:i64 oa:i64 {_d('e')} {_d('s')} {_d('o')}"),
    space=lambda: (SortSelectKnobs(d, b) for d in SORT_DTYPES for b in SELECT_KB),
    geometry=lambda k: LaunchGeometry(threads=256, smem_bytes=select_smem(k)),
    knobs=SortSelectKnobs,
))

RADIX_KEYS = register(KernelTemplate(
    name="radix_keys", family="sorting", module="baracuda_dsl.ops.sorting.kernels.radix_keys",
    params=params(f"src:ptr keys:ptr idx:ptr n:i64 row0:i64 desc:i32 sa:i64 {_d('e')} {_d('s')}"),
    space=lambda: (SortDtypeKnobs(d) for d in SORT_DTYPES),
    geometry=lambda k: LaunchGeometry(threads=ELEM_THREADS),
    knobs=SortDtypeKnobs,
))

RADIX_UPSWEEP = register(KernelTemplate(
    name="radix_upsweep", family="sorting", module="baracuda_dsl.ops.sorting.kernels.radix_upsweep",
    params=params("keys:ptr counts:ptr n:i64 tiles:i64 row0:i64 shift:i32"),
    space=lambda: (RadixPassKnobs(b) for b in (32, 64)),
    geometry=lambda k: LaunchGeometry(threads=RADIX_THREADS, smem_bytes=RADIX_BINS * 4 + 64),
    knobs=RadixPassKnobs,
))

RADIX_SCAN = register(KernelTemplate(
    name="radix_scan", family="sorting", module="baracuda_dsl.ops.sorting.kernels.radix_scan",
    params=params("counts:ptr totals:ptr tiles:i64 row0:i64"),
    space=lambda: (RadixScanKnobs(RADIX_THREADS),),
    geometry=lambda k: LaunchGeometry(threads=RADIX_THREADS, smem_bytes=128),
    knobs=RadixScanKnobs,
))

RADIX_SCATTER = register(KernelTemplate(
    name="radix_scatter", family="sorting", module="baracuda_dsl.ops.sorting.kernels.radix_scatter",
    params=params("keys_in:ptr idx_in:ptr keys_out:ptr idx_out:ptr counts:ptr totals:ptr "
                  "n:i64 tiles:i64 row0:i64 shift:i32"),
    space=lambda: (RadixPassKnobs(b) for b in (32, 64)),
    geometry=lambda k: LaunchGeometry(threads=RADIX_THREADS, smem_bytes=scatter_smem(k)),
    knobs=RadixPassKnobs,
))

SORT_GATHER = register(KernelTemplate(
    name="sort_gather", family="sorting", module="baracuda_dsl.ops.sorting.kernels.sort_gather",
    params=params("src:ptr vals:ptr idx_ws:ptr keys_ws:ptr idx:ptr n:i64 row0:i64 desc:i32 "
                  "want_vals:i32 want_idx:i32 col0:i64 ncols:i64 sa:i64 oa:i64 "
                  f"{_d('e')} {_d('s')} {_d('o')}"),
    space=lambda: (SortDtypeKnobs(d) for d in SORT_DTYPES),
    geometry=lambda k: LaunchGeometry(threads=ELEM_THREADS),
    knobs=SortDtypeKnobs,
))

SORT_SCATTER_BW = register(KernelTemplate(
    name="sort_scatter_bw", family="sorting", module="baracuda_dsl.ops.sorting.kernels.sort_scatter_bw",
    params=params("dy:ptr idx:ptr dx:ptr n:i64 total:i64 ncols:i64 ya:i64 ia:i64 xa:i64 "
                  f"{_d('e')} {_d('y')} {_d('i')} {_d('x')}"),
    space=lambda: (ScatterBackwardKnobs(i, m) for i in (2, 4, 8) for m in ("zero", "scatter")),
    geometry=lambda k: LaunchGeometry(threads=ELEM_THREADS),
    knobs=ScatterBackwardKnobs,
))

SEARCHSORTED = register(KernelTemplate(
    name="searchsorted", family="sorting", module="baracuda_dsl.ops.sorting.kernels.searchsorted",
    params=params("bnd:ptr q:ptr sorter:ptr out:ptr n:i64 m:i64 total:i64 steps:i32 right:i32 "
                  f"has_sorter:i32 brow:i64 bcol:i64 srow:i64 scol:i64 {_d('qe', 8)} {_d('qs', 8)}"),
    space=lambda: (SearchsortedKnobs(d, o) for d in SORT_DTYPES for o in ("i32", "i64")),
    geometry=lambda k: LaunchGeometry(threads=ELEM_THREADS),
    knobs=SearchsortedKnobs,
))
