"""Template specs of the copy-based layout family (permute, contiguize, concat, flip, fill,
write-slice): the tiled shared-memory ``transpose`` and the strided ``fill``.  The plain strided
copy they fall back to is ``strided_copy`` (ops/shape/specs/repeat.py).

``transpose`` knobs (:class:`TransposeKnobs`):
``itemsize``  bytes per opaque word (1, 2, 4, 8, 16): one SKU per element size serves every dtype;
              tile 64×64 for 1/2-byte words, 32×32 for 4/8/16-byte words
``batch``     0: a single [A, B] matrix; 1, 2, 4: that many batch dims (smallest knob ≥ the
              collapsed batch rank) decoded from the block index in Int32

``fill`` knobs (:class:`FillKnobs`): ``itemsize`` (1, 2, 4, 8: a 16-byte element is filled as two
8-byte words), ``rank`` (collapsed destination rank 1, 2, 4, 8), ``wide`` (0: Int32 index math,
1: Int64).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ....jit import KernelTemplate, LaunchGeometry, params, register
from .repeat import dims_params

ITEMSIZES = (1, 2, 4, 8, 16)
TRANSPOSE_BATCH = (0, 1, 2, 4)
TRANSPOSE_THREADS = 256
FILL_ITEMSIZES = (1, 2, 4, 8)
FILL_RANKS = (1, 2, 4, 8)
FILL_THREADS, FILL_ILP = 256, 4


@dataclass(frozen=True)
class TransposeKnobs:
    """One ``transpose`` SKU: word size in bytes and the number of batch dims decoded."""

    itemsize: int
    batch: int


@dataclass(frozen=True)
class FillKnobs:
    """One ``fill`` SKU: word size in bytes, collapsed rank knob, Int64 index math."""

    itemsize: int
    rank: int
    wide: int


def tile_for(isz: int) -> int:
    """Transpose tile edge for ``isz``-byte words: 64 for 1/2-byte words, 32 otherwise."""
    return 64 if isz <= 2 else 32


def pad_for(isz: int) -> int:
    """Words of padding per shared-memory tile row (conflict-free column reads)."""
    return max(1, 4 // isz)


def transpose_smem(isz: int) -> int:
    """Dynamic shared memory (bytes) of a ``transpose`` SKU: the padded tile + 16."""
    t = tile_for(isz)
    return t * (t + pad_for(isz)) * isz + 16


def transpose_batch_for(nb: int) -> int:
    return next(k for k in TRANSPOSE_BATCH if k >= nb)


def fill_rank_for(r: int) -> int:
    return next(k for k in FILL_RANKS if k >= max(r, 1))


def fill_blocks(n: int) -> int:
    """CTAs of a ``fill`` launch over ``n`` words (``FILL_ILP`` words per thread)."""
    per = FILL_THREADS * FILL_ILP
    return (n + per - 1) // per


def _transpose_space():
    return (TransposeKnobs(*k) for k in product(ITEMSIZES, TRANSPOSE_BATCH))


def _fill_space():
    return (FillKnobs(*k) for k in product(FILL_ITEMSIZES, FILL_RANKS, (0, 1)))


TRANSPOSE = register(KernelTemplate(
    name="transpose",
    family="shape",
    module="baracuda_dsl.ops.shape.kernels.transpose",
    params=params(f"src:ptr dst:ptr na:i64 nb:i64 sb:i64 da:i64 ta:i64 tb:i64 "
                  f"{dims_params('b', 4)} {dims_params('bs', 4)} {dims_params('bd', 4)}"),
    space=_transpose_space,
    geometry=lambda k: LaunchGeometry(threads=TRANSPOSE_THREADS,
                                      smem_bytes=transpose_smem(k.itemsize)),
    knobs=TransposeKnobs,
))

FILL = register(KernelTemplate(
    name="fill",
    family="shape",
    module="baracuda_dsl.ops.shape.kernels.fill",
    params=params(f"dst:ptr n:i64 v0:i64 v1:i64 odd:i64 {dims_params('o')} {dims_params('d')}"),
    space=_fill_space,
    geometry=lambda k: LaunchGeometry(threads=FILL_THREADS, smem_bytes=0),
    knobs=FillKnobs,
))
