"""Template spec of the 1-D index gather / scatter kernel behind ``GatherPlan`` and
``ScatterPlan`` (the set functions use them; the indexing family builds on them).

Knobs: ``itemsize`` (1, 2, 4, 8, 16: opaque words, so one SKU serves every dtype of that size),
``mode`` (``gather``: dst[i] = src[idx[i]]; ``scatter``: dst[idx[i]] = src[i]) and ``index``
(``i32`` or ``i64`` index dtype).
"""

from __future__ import annotations

from ....jit import KernelTemplate, LaunchGeometry, params, register

THREADS = 256
ITEMSIZES = (1, 2, 4, 8, 16)
MODES = ("gather", "scatter")
INDEX = ("i32", "i64")


def _space():
    for isz in ITEMSIZES:
        for mode in MODES:
            for ix in INDEX:
                yield dict(itemsize=isz, mode=mode, index=ix)


GATHER = register(KernelTemplate(
    name="gather",
    family="indexing",
    module="baracuda_dsl.ops.indexing.kernels.gather",
    params=params("src:ptr idx:ptr dst:ptr n:i64 m:i64 ss:i64 xs:i64 ds:i64"),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
))
