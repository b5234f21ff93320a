"""Device pieces the sdpa kernels share (``sdpa_fwd``, ``sdpa_bwd``, ``sdpa_bwd_dkdv``): element
and compute types, the strided dot product, one (query, key) score with softcap and mask, the
causal key / query bounds and the shared chunk buffer.

Scores (the formula of ``tests/_attention_ref.attention``)::

    raw = scale · Σ_d q[d]·k[d]             (compute type, d ascending)
    s   = softcap · tanh(raw / softcap)     (SOFTCAP)
    s   = −∞ where the bool mask is False   (MASK_BOOL; the dot is then skipped)
    s  += mask                              (MASK_ADD: input dtype, MASK_F32: f32)

An additive −∞ leaves s = −∞ (masked).  The causal mask never reaches :func:`score`: the
kernels bound their key loop (``j < j_end``) or query loop (``i >= i_start``) instead, which
drops exactly the pairs with ``j > i + off``.  Every load is a scalar load at an element offset
(strides in elements, i64), so no alignment beyond the element size is assumed.
"""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute
from cutlass import Boolean, Float32, Float64, Int32, Int64, Uint8

from ..specs.sdpa import BOTTOM_RIGHT, CAUSAL, MASK_ADD, MASK_BOOL, MASK_F32, SOFTCAP
from ....blocks.gmem import gload, gmem_ptr

TYPES = {"f16": cutlass.Float16, "bf16": cutlass.BFloat16, "f32": Float32, "f64": Float64}
NEG_INF = -math.inf


def types(dtype: str):
    """(element type, compute type) of an sdpa SKU: f64 computes in f64, the rest in f32."""
    return TYPES[dtype], (Float64 if dtype == "f64" else Float32)


def alloc_chunk(ct, n: int):
    """A shared (n,) buffer of the compute type (one value per thread of a chunk)."""
    smem = cutlass.utils.SmemAllocator()
    return smem.allocate_tensor(ct, cute.make_layout(n), byte_alignment=16)


@cute.jit
def dot(pa: cute.Pointer, sa: Int64, pb: cute.Pointer, sb: Int64, n: Int32, acc):
    """``acc + Σ_{d < n} a[d·sa]·b[d·sb]`` in ``acc``'s type, d ascending (fixed order)."""
    CT = type(acc)
    for d in cutlass.range(n):
        dd = Int64(d)
        acc = acc + CT(gload(pa, dd * sa)) * CT(gload(pb, dd * sb))
    return acc


@cute.jit
def score_params(scale: Float64, softcap: Float64, flags: Int32, CT: cutlass.Constexpr):
    """(scale, softcap, 1 / softcap) in the compute type (1 / softcap only under SOFTCAP)."""
    cap = CT(softcap)
    icap = CT(0.0)
    if (flags & SOFTCAP) != 0:
        icap = CT(1.0) / cap
    return CT(scale), cap, icap


@cute.jit
def score(pq: cute.Pointer, qd: Int64, pk: cute.Pointer, kd: Int64, D: Int32,
          pm: cute.Pointer, moff: Int64, sc, cap, icap, flags: Int32):
    """(s, dcap) of the query row at ``pq`` and the key row at ``pk`` (feature strides ``qd``,
    ``kd``): the final score, −∞ where masked, and ds/draw of the softcap (1 − tanh², 1 without
    softcap).  ``moff``: the mask entry's element offset from ``pm`` (read only under a mask
    flag; the pointer is re-typed to bytes / f32 here, so offsets count elements of the mask's
    own type)."""
    CT = type(sc)
    s = CT(NEG_INF)
    dcap = CT(1.0)
    keep = Boolean(True)
    if (flags & MASK_BOOL) != 0:
        keep = gload(cute.recast_ptr(pm, dtype=Uint8), moff) != Uint8(0)
    if keep:
        raw = dot(pq, qd, pk, kd, D, CT(0.0)) * sc
        s = raw
        if (flags & SOFTCAP) != 0:
            t = cute.math.tanh(raw * icap)
            s = cap * t
            dcap = CT(1.0) - t * t
        if (flags & MASK_ADD) != 0:
            s = s + CT(gload(pm, moff))
        if (flags & MASK_F32) != 0:
            s = s + CT(gload(cute.recast_ptr(pm, dtype=Float32).align(4), moff))
    return s, dcap


@cute.jit
def causal_offset(sq: Int32, sk: Int32, flags: Int32):
    """``off``: Sk − Sq for BOTTOM_RIGHT, else 0 (the causal rule keeps j <= i + off)."""
    off = Int32(0)
    if (flags & BOTTOM_RIGHT) != 0:
        off = sk - sq
    return off


@cute.jit
def key_end(i: Int32, sq: Int32, sk: Int32, flags: Int32):
    """Keys ``j < key_end`` are the ones query row ``i`` may see under the causal rule (all
    ``sk`` without CAUSAL); 0 when none."""
    end = sk
    if (flags & CAUSAL) != 0:
        end = cutlass.max(cutlass.min(i + causal_offset(sq, sk, flags) + 1, sk), 0)
    return end


@cute.jit
def query_start(j: Int32, sq: Int32, sk: Int32, flags: Int32):
    """Query rows ``i >= query_start`` are the ones that may see key ``j`` under the causal
    rule (0 without CAUSAL); ``sq`` when none."""
    start = Int32(0)
    if (flags & CAUSAL) != 0:
        start = cutlass.min(cutlass.max(j - causal_offset(sq, sk, flags), 0), sq)
    return start


def example_args(T, CT, kinds: str, n_i64: int):
    """``cute.compile`` arguments of an sdpa launcher: one pointer per letter of ``kinds``
    (``e``: element type, ``c``: compute type; aligned to their element size only), the seven
    i32 extents, ``n_i64`` i64 strides, scale, softcap, flags, the grid's y / z extents and a
    stream."""
    from cutlass.cute.runtime import make_fake_stream

    ptrs = [gmem_ptr(X, X.width // 8) for X in (T if k == "e" else CT for k in kinds)]
    return (ptrs + [Int32(1)] * 7 + [Int64(1)] * n_i64
            + [Float64(1.0), Float64(0.0), Int32(0), Int32(1), Int32(1), make_fake_stream()])
