"""Appending new keys / values to a KV cache (KvCacheAppendPlan), contiguous or paged.

For every batch entry ``b``, new token ``t < S_new`` and kv head ``h``::

    p = cache_seqlens[b] + t
    contiguous:  k_cache[b, p, h, :] = k_new[b, t, h, :]            (0 <= p < S_max)
    paged:       page = block_table[b, p // page_size]              (p // page_size < max_pages)
                 k_cache[page, p % page_size, h, :] = k_new[b, t, h, :]   (0 <= page < num_pages)

and likewise v (its own head dim ``Dv``).  ``cache_seqlens`` (B,) int32 is a device tensor the
plan only reads (it is **not** advanced: the caller adds ``S_new`` after the run, as flash-attn's
``cache_seqlens`` convention).  A row whose position is negative or past the cache (``p >=
S_max``; a page index past ``max_pages_per_seq``; a block-table entry outside
``[0, num_pages)``) is never written — nothing outside the cache is touched, and the block table
is never read past its row — and when the Args' optional ``status`` (a device int32, >= 1
element) is given the kernel stores 1 into ``status[0]`` (never clears it: zero it first).

Shapes: k_new (B, S_new, Hk, D), v_new (B, S_new, Hk, Dv), any strides with a unit-stride last
dim (else UnsupportedError); contiguous caches (B, S_max, Hk, D[v]); paged caches (num_pages,
page_size, Hk, D[v]) with ``page_size`` a multiple of 16 and ``block_table`` (B,
max_pages_per_seq) int32.  k_new / k_cache (or v_new / v_cache) may both be None to append only
the other pair.  dtypes f16, bf16, f32, f64, float8_e4m3, float8_e5m2: the copy is bit-exact
(opaque words; one SKU per word size — 16-byte words when every row, stride and pointer allows,
else the widest that does).  The caches may not overlap each other or any input.  No workspace;
deterministic (each element written once, by one thread).  One launch for k and v together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from ...common.status import status_view
from ...dtypes import (DType, bfloat16, float8_e4m3, float8_e5m2, float16, float32, float64,
                       int32)
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, check_dtype, view_arg
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace
from ..shape.layout import check_disjoint, check_no_self_overlap
from .checks import check_extent, check_unit_last
from .specs import kv_cache as spec

__all__ = ["KvCacheAppendDescriptor", "KvCacheAppendArgs", "KvCacheAppendPlan"]

_I32_MAX = 2**31 - 1
DTYPES = (float16, bfloat16, float32, float64, float8_e4m3, float8_e5m2)
PAGE_MULTIPLE = 16


@dataclass(frozen=True)
class KvCacheAppendDescriptor:
    """Append ``seqlen_new`` tokens of ``kv_heads`` heads (``head_dim``; values ``head_dim_v``,
    None = head_dim) for ``batch`` sequences, elements of ``dtype``.  The cache is contiguous
    with ``max_seqlen`` positions, or paged: ``num_pages`` pages of ``page_size`` (a multiple of
    16) positions, ``max_pages_per_seq`` block-table entries per sequence.  Give either
    ``max_seqlen`` or the three paged fields."""

    batch: int
    seqlen_new: int
    kv_heads: int
    head_dim: int
    dtype: DType = float16
    head_dim_v: Optional[int] = None
    max_seqlen: Optional[int] = None
    num_pages: Optional[int] = None
    page_size: Optional[int] = None
    max_pages_per_seq: Optional[int] = None

    def __post_init__(self):
        for f in ("batch", "seqlen_new", "kv_heads", "head_dim"):
            check_extent(getattr(self, f), f"KvCacheAppend.{f}")
        if self.head_dim_v is None:
            object.__setattr__(self, "head_dim_v", self.head_dim)
        check_extent(self.head_dim_v, "KvCacheAppend.head_dim_v")
        object.__setattr__(self, "dtype", check_dtype(self.dtype, DTYPES, "KvCacheAppend"))
        paged = (self.num_pages, self.page_size, self.max_pages_per_seq)
        if self.max_seqlen is not None:
            if any(x is not None for x in paged):
                raise InvalidProblemError("KvCacheAppend: give max_seqlen (contiguous cache) or "
                                          "num_pages / page_size / max_pages_per_seq (paged), "
                                          "not both")
            check_extent(self.max_seqlen, "KvCacheAppend.max_seqlen")
            return
        if any(x is None for x in paged):
            raise InvalidProblemError("KvCacheAppend: a contiguous cache needs max_seqlen; a "
                                      "paged one num_pages, page_size and max_pages_per_seq")
        check_extent(self.num_pages, "KvCacheAppend.num_pages")
        check_extent(self.max_pages_per_seq, "KvCacheAppend.max_pages_per_seq")
        ps = check_extent(self.page_size, "KvCacheAppend.page_size")
        if ps == 0 or ps % PAGE_MULTIPLE:
            raise InvalidProblemError(f"KvCacheAppend: page_size must be a positive multiple of "
                                      f"{PAGE_MULTIPLE}, got {ps}")

    @property
    def paged(self) -> bool:
        return self.max_seqlen is None

    def cache_shape(self, dim: int) -> Tuple[int, ...]:
        """Shape of the k (``dim = head_dim``) or v cache."""
        if self.paged:
            return (self.num_pages, self.page_size, self.kv_heads, dim)
        return (self.batch, self.max_seqlen, self.kv_heads, dim)


@dataclass
class KvCacheAppendArgs:
    """k_new / v_new (inputs), k_cache / v_cache (written in place), cache_seqlens ((B,) int32,
    read only), block_table ((B, max_pages_per_seq) int32; paged caches only), status (optional
    int32 device word, set to 1 when a row falls outside the cache)."""

    k_new: object
    v_new: object
    k_cache: object
    v_cache: object
    cache_seqlens: object
    block_table: object = None
    status: object = None


class KvCacheAppendPlan(Plan):
    """KV-cache append (module docstring): bit-exact word copies, one read of k_new / v_new and
    one write of the touched cache rows; no workspace; deterministic."""

    descriptor = KvCacheAppendDescriptor

    def _plan(self) -> None:
        d = self.desc
        self._isz = d.dtype.itemsize
        self._sku = KernelSku(OpCategory.ATTENTION, "kv_cache_append", d.dtype, self._arch,
                              BackendKind.CUTE_DSL,
                              PrecisionGuarantee(math_precision=d.dtype, accumulator=d.dtype,
                                                 bit_stable_on_same_hardware=True,
                                                 deterministic=True),
                              layout="paged" if d.paged else "contiguous",
                              template=spec.KV_APPEND.name,
                              knobs=freeze_knobs(spec.KvAppendKnobs(itemsize=16)))

    def is_empty(self) -> bool:
        d = self.desc
        return d.batch * d.seqlen_new * d.kv_heads == 0 or (d.head_dim == 0 and
                                                             d.head_dim_v == 0)

    def _bind(self, args: KvCacheAppendArgs):
        d = self.desc
        sides = []
        dev = None
        for name, dim in (("k", d.head_dim), ("v", d.head_dim_v)):
            new, cache = getattr(args, f"{name}_new"), getattr(args, f"{name}_cache")
            if new is None and cache is None:
                sides.append(None)
                continue
            if new is None or cache is None:
                raise InvalidProblemError(f"{name}_new and {name}_cache must both be given or "
                                          f"both be None")
            nv = view_arg(new, f"{name}_new", shape=(d.batch, d.seqlen_new, d.kv_heads, dim),
                          dtype=d.dtype, device=dev)
            dev = nv.device
            cv = view_arg(cache, f"{name}_cache", shape=d.cache_shape(dim), dtype=d.dtype,
                          device=dev)
            check_unit_last(nv, f"{name}_new")
            check_unit_last(cv, f"{name}_cache")
            check_no_self_overlap(cv, f"{name}_cache")
            sides.append((nv, cv, dim))
        if sides == [None, None]:
            raise InvalidProblemError("KvCacheAppend: give k_new / k_cache or v_new / v_cache")
        seq = view_arg(args.cache_seqlens, "cache_seqlens", shape=(d.batch,), dtype=int32,
                       device=dev)
        inputs = [("cache_seqlens", seq)]
        table = None
        if d.paged:
            if args.block_table is None:
                raise InvalidProblemError("block_table is required for a paged cache")
            table = view_arg(args.block_table, "block_table",
                             shape=(d.batch, d.max_pages_per_seq), dtype=int32, device=dev)
            inputs.append(("block_table", table))
        elif args.block_table is not None:
            raise InvalidProblemError("block_table is given but the descriptor describes a "
                                      "contiguous cache (max_seqlen)")
        st = status_view(args.status, dev)
        if st is not None:
            inputs.append(("status", st))
        for s in sides:
            if s is not None:
                inputs.append(("new keys / values", s[0]))
        caches = [(n, s[1]) for n, s in zip(("k_cache", "v_cache"), sides) if s is not None]
        for cname, cv in caches:
            for iname, iv in inputs:
                check_disjoint(iv, cv, f"KvCacheAppend: {cname} overlaps {iname}")
        if len(caches) == 2:
            check_disjoint(caches[0][1], caches[1][1], "KvCacheAppend: k_cache overlaps v_cache")
        return sides, seq, table, st

    def _word(self, sides) -> int:
        """The widest word (bytes) every present side's rows, strides and pointers allow."""
        isz = self._isz
        for w in spec.ITEMSIZES[::-1]:
            if w < isz:
                break
            ok = True
            for s in sides:
                if s is None or s[2] == 0:
                    continue
                nv, cv, dim = s
                if (dim * isz) % w or (nv.ptr | cv.ptr) % w:
                    ok = False
                    break
                if any((st * isz) % w for st in nv.strides[:3] + cv.strides[:3]):
                    ok = False
                    break
            if ok:
                return w
        return isz

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        sides, seq, table, st = bound
        d = self.desc
        w = self._word(sides)
        k = w // self._isz
        ptrs, side_args, totals = [], [], []
        dev = seq.device
        for s in sides:
            if s is None or s[2] == 0:
                ptrs += [0, 0]
                side_args.append([0, 0, 0, 0, 0, 0, 0, 0])
                totals.append(0)
                continue
            nv, cv, dim = s
            words = dim * self._isz // w
            total = d.batch * d.seqlen_new * d.kv_heads * words
            ptrs += [nv.ptr, cv.ptr]
            side_args.append([total, words] + [x // k for x in nv.strides[:3]]
                             + [x // k for x in cv.strides[:3]])
            totals.append(total)
        most = max(totals)
        if most == 0:
            return
        blocks = -(-most // spec.THREADS)
        if blocks > _I32_MAX:
            raise UnsupportedError(f"kv_append: {most} words exceed the grid limit")
        flags = (spec.PAGED if d.paged else 0) | (spec.HAS_STATUS if st is not None else 0)
        if d.paged:
            smax, npages, maxpages = d.page_size, d.num_pages, d.max_pages_per_seq
            tb, tp = table.strides
        else:
            smax, npages, maxpages, tb, tp = d.max_seqlen, 0, 0, 0, 0
        kern = self._kernel(spec.KV_APPEND, spec.KvAppendKnobs(itemsize=w), dev)
        kern.launch((blocks, 2, 1), [
            ptrs[0], ptrs[2], ptrs[1], ptrs[3], seq.ptr, 0 if table is None else table.ptr,
            0 if st is None else st.ptr, flags, d.seqlen_new, d.kv_heads, smax, npages,
            maxpages, seq.strides[0], tb, tp] + side_args[0] + side_args[1], stream)
