"""Shared pieces of the sorting kernels (CuTe DSL, trace-time helpers).

Order-preserving keys: every sortable dtype maps to an unsigned bit pattern ``key`` of
``bits`` = 8·itemsize bits (held in a Uint32, or a Uint64 for 64-bit dtypes) such that
``a < b  ⇔  key(a) < key(b)`` as unsigned integers:

    unsigned, bool   key = u
    signed           key = u ^ signbit
    float            key = u ^ (signbit set ? all ones : signbit);  ±0 → key(+0) = signbit;
                     every NaN → all ones (sorts after +inf: NaNs last, numpy / torch)
    descending       key = ~key (within ``bits``): the reversed order, NaNs first (torch)

Rows are addressed by up to 7 outer dims (extents ``e``, strides per operand); the sorted axis
is the last logical dim with its own stride.  :func:`row_offset7` decomposes a row number.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Uint8, Uint16, Uint32, Uint64

from ....blocks.gmem import gload, gstore

#: dtype short name → (bits, kind)   kind: 'f' float, 'i' signed, 'u' unsigned / bool
KEY_INFO = {"bool": (8, "u"), "i8": (8, "i"), "i16": (16, "i"), "i32": (32, "i"),
            "i64": (64, "i"), "u8": (8, "u"), "u16": (16, "u"), "u32": (32, "u"),
            "u64": (64, "u"), "f16": (16, "f"), "bf16": (16, "f"), "f32": (32, "f"),
            "f64": (64, "f")}
#: float dtype → bit pattern of +inf (largest non-NaN magnitude pattern)
INF_BITS = {"f16": 0x7C00, "bf16": 0x7F80, "f32": 0x7F800000, "f64": 0x7FF0000000000000}
WORD = {8: Uint8, 16: Uint16, 32: Uint32, 64: Uint64}


def key_type(bits: int):
    """Register type of a key of ``bits`` bits."""
    return Uint64 if bits > 32 else Uint32


def sel(cond, a, b, T):
    """Trace-time select returning a ``T``."""
    return T(cutlass.select_(cond, T(a), T(b)))


def make_key(w, desc, short: str):
    """Order-preserving key (see module doc) of the raw word ``w`` of dtype ``short``;
    ``desc`` (Int32, 0/1) inverts it for a descending order."""
    bits, kind = KEY_INFO[short]
    KT = key_type(bits)
    full = (1 << bits) - 1
    sign = 1 << (bits - 1)
    u = KT(w)
    if kind == "i":
        key = u ^ KT(sign)
    elif kind == "u":
        key = u
    else:
        a = u & KT(sign - 1)
        neg = (u & KT(sign)) != KT(0)
        key = sel(neg, (~u) & KT(full), u | KT(sign), KT)
        key = sel(a == KT(0), KT(sign), key, KT)
        key = sel(a > KT(INF_BITS[short]), KT(full), key, KT)
    return sel(desc != Int32(0), (~key) & KT(full), key, KT)


def key_needs_source(key, short: str):
    """True (Boolean) where the value cannot be rebuilt from its (ascending) key: floats whose
    key is the canonical zero (±0 merged) or NaN (payload merged); False for other dtypes."""
    bits, kind = KEY_INFO[short]
    KT = key_type(bits)
    if kind != "f":
        return None
    return (key == KT(1 << (bits - 1))) | (key == KT((1 << bits) - 1))


@cute.jit
def store_column(k, src_i, c, short: cutlass.Constexpr, desc, want_vals, want_idx, psrc, soff,
                 sa, pvals, pidx, ooff, oa):
    """Output column ``c`` of a sorted row: ``pvals[ooff + c·oa]`` = the value behind its key
    ``k`` (a descending key flipped back; floats whose key merged values, ±0 and NaN, read the
    source word ``psrc[soff + src_i·sa]``) and ``pidx[ooff + c·oa]`` = ``src_i``, each when
    wanted."""
    bits, kind = KEY_INFO[short]
    KT = key_type(bits)
    if want_vals != Int32(0):
        k = sel(desc != Int32(0), (~k) & KT((1 << bits) - 1), k, KT)
        w = decode_key(k, short)
        if cutlass.const_expr(kind == "f"):
            if key_needs_source(k, short):
                w = WORD[bits](gload(psrc, soff + src_i * sa))
        gstore(pvals, ooff + c * oa, w)
    if want_idx != Int32(0):
        gstore(pidx, ooff + c * oa, src_i)


def decode_key(key, short: str):
    """Inverse of :func:`make_key` (ascending key) for every non-merged value: the raw word."""
    bits, kind = KEY_INFO[short]
    KT = key_type(bits)
    full = (1 << bits) - 1
    sign = 1 << (bits - 1)
    if kind == "i":
        u = key ^ KT(sign)
    elif kind == "u":
        u = key
    else:
        u = sel((key & KT(sign)) != KT(0), key ^ KT(sign), (~key) & KT(full), KT)
    return WORD[bits](u)
