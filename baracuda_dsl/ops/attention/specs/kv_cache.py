"""Template spec of the KV-cache append kernel (``ops/attention/kv_cache.py``:
KvCacheAppendPlan).

``kv_append``  copies k_new (B, S_new, Hk, D) and v_new (B, S_new, Hk, Dv) into the cache at
               token positions ``p = cache_seqlens[b] + t``.  Elements are opaque words of
               ``itemsize`` bytes (1, 2, 4, 8, 16: :class:`KvAppendKnobs`), so one SKU serves
               every dtype of that width, and the plan widens unit-stride aligned rows into
               16-byte words.  Grid ``(blocks, 2)``: y = 0 copies k, y = 1 copies v (an operand
               pair that is absent has ``total = 0``); thread ``t`` of block ``g`` copies word
               ``w`` of row ``(b, t, h)``: item ``g·THREADS + t = ((b·S + t)·Hk + h)·words + w``.

Destinations (``smax`` is S_max, or the page size of a paged cache): contiguous cache
((B, S_max, Hk, D): ``cb``, ``cs``, ``ch`` are the batch, position and head strides) — row
``b·cb + p·cs + h·ch``, written when ``0 <= p < S_max``; paged cache (flag :data:`PAGED`;
(num_pages, page_size, Hk, D): ``cb`` is the page stride) —
``page = block_table[b·tb + (p div page_size)·tp]``, row ``page·cb + (p mod page_size)·cs +
h·ch``, written when ``p >= 0``, ``p div page_size < max_pages`` and ``0 <= page < num_pages``
(the block table is never read past ``max_pages``).  A row that is not written sets
``status[0] = 1`` when :data:`HAS_STATUS` (never cleared).
"""

from __future__ import annotations

from dataclasses import dataclass

from ....jit import KernelTemplate, LaunchGeometry, params, register

ITEMSIZES = (1, 2, 4, 8, 16)
THREADS = 128

#: flag bits
PAGED = 1
HAS_STATUS = 2


@dataclass(frozen=True)
class KvAppendKnobs:
    """One ``kv_append`` SKU: the copied word's size in bytes."""

    itemsize: int


def _space():
    return (KvAppendKnobs(itemsize=i) for i in ITEMSIZES)


_SIDE = "total{x}:i64 words{x}:i32 nb{x}:i64 nt{x}:i64 nh{x}:i64 cb{x}:i64 cs{x}:i64 ch{x}:i64 "

KV_APPEND = register(KernelTemplate(
    name="kv_append",
    family="attention",
    module="baracuda_dsl.ops.attention.kernels.kv_cache",
    params=params("kn:ptr vn:ptr kc:ptr vc:ptr seqlens:ptr table:ptr status:ptr flags:i32 "
                  "S:i32 Hk:i32 smax:i32 npages:i32 maxpages:i32 sl:i64 tb:i64 tp:i64 "
                  + _SIDE.format(x="k") + _SIDE.format(x="v").strip()),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=KvAppendKnobs,
))
