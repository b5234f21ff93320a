"""Template specs of the copy-based layout family (permute, contiguize, concat, flip, fill,
write-slice): the tiled shared-memory ``transpose`` and the strided ``fill``.  The plain strided
copy they fall back to is ``strided_copy`` (ops/shape/specs/repeat.py).

``transpose`` knobs:
``itemsize``  bytes per opaque word (1, 2, 4, 8, 16): one SKU per element size serves every dtype;
              tile 64×64 for 1/2-byte words, 32×32 for 4/8/16-byte words
``batch``     0: a single [A, B] matrix; 1, 2, 4: that many batch dims (smallest knob ≥ the
              collapsed batch rank) decoded from the block index in Int32

``fill`` knobs: ``itemsize`` (1, 2, 4, 8: a 16-byte element is filled as two 8-byte words),
``rank`` (collapsed destination rank 1, 2, 4, 8), ``wide`` (0: Int32 index math, 1: Int64).
"""

from __future__ import annotations

from ....jit import KernelTemplate, LaunchGeometry, params, register

ITEMSIZES = (1, 2, 4, 8, 16)
TRANSPOSE_BATCH = (0, 1, 2, 4)
TRANSPOSE_THREADS = 256
FILL_ITEMSIZES = (1, 2, 4, 8)
FILL_RANKS = (1, 2, 4, 8)
FILL_THREADS, FILL_ILP = 256, 4


def tile_for(isz: int) -> int:
    """Transpose tile edge for ``isz``-byte words (mirrors ops/shape/kernels/transpose.py)."""
    return 64 if isz <= 2 else 32


def pad_for(isz: int) -> int:
    return max(1, 4 // isz)


def transpose_smem(isz: int) -> int:
    t = tile_for(isz)
    return t * (t + pad_for(isz)) * isz + 16


def transpose_batch_for(nb: int) -> int:
    return next(k for k in TRANSPOSE_BATCH if k >= nb)


def fill_rank_for(r: int) -> int:
    return next(k for k in FILL_RANKS if k >= max(r, 1))


def _transpose_space():
    for isz in ITEMSIZES:
        for b in TRANSPOSE_BATCH:
            yield dict(itemsize=isz, batch=b)


def _fill_space():
    for isz in FILL_ITEMSIZES:
        for r in FILL_RANKS:
            for w in (0, 1):
                yield dict(itemsize=isz, rank=r, wide=w)


def _dims(prefix: str, k: int = 8) -> str:
    return " ".join(f"{prefix}{i}:i64" for i in range(k))


TRANSPOSE = register(KernelTemplate(
    name="transpose",
    family="shape",
    module="baracuda_dsl.ops.shape.kernels.transpose",
    params=params(f"src:ptr dst:ptr na:i64 nb:i64 sb:i64 da:i64 ta:i64 tb:i64 {_dims('b', 4)} "
                  f"{_dims('bs', 4)} {_dims('bd', 4)}"),
    space=_transpose_space,
    geometry=lambda k: LaunchGeometry(threads=TRANSPOSE_THREADS,
                                      smem_bytes=transpose_smem(k["itemsize"])),
))

FILL = register(KernelTemplate(
    name="fill",
    family="shape",
    module="baracuda_dsl.ops.shape.kernels.fill",
    params=params(f"dst:ptr n:i64 v0:i64 v1:i64 odd:i64 {_dims('o')} {_dims('d')}"),
    space=_fill_space,
    geometry=lambda k: LaunchGeometry(threads=FILL_THREADS, smem_bytes=0),
))
