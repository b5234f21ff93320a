"""Template spec of the 1-D index gather / scatter kernel behind ``GatherPlan`` and
``ScatterPlan`` (the set functions use them; the indexing family builds on them).

Knobs (:class:`GatherKnobs`): ``itemsize`` (1, 2, 4, 8, 16: opaque words, so one SKU serves every
dtype of that size), ``mode`` (``gather``: dst[i] = src[idx[i]]; ``scatter``: dst[idx[i]] =
src[i]) and ``index`` (``i32`` or ``i64`` index dtype).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ....jit import KernelTemplate, LaunchGeometry, params, register

THREADS = 256
ITEMSIZES = (1, 2, 4, 8, 16)
MODES = ("gather", "scatter")
INDEX = ("i32", "i64")


@dataclass(frozen=True)
class GatherKnobs:
    """One ``gather`` SKU: word size in bytes, gather / scatter, index dtype (i32 / i64)."""

    itemsize: int
    mode: str
    index: str


GATHER = register(KernelTemplate(
    name="gather",
    family="indexing",
    module="baracuda_dsl.ops.indexing.kernels.gather",
    params=params("src:ptr idx:ptr dst:ptr n:i64 m:i64 ss:i64 xs:i64 ds:i64"),
    space=lambda: (GatherKnobs(*k) for k in product(ITEMSIZES, MODES, INDEX)),
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=GatherKnobs,
))
