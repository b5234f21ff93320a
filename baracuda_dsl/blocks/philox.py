"""Counter-based Philox4x32-10 (Salmon, Moraes, Dror, Shaw, SC'11 "Parallel random numbers: as
easy as 1, 2, 3") as CuTe DSL device helpers, plus the word → number converters every random
kernel of this package uses.

Philox4x32-10
-------------
State: a 128-bit counter ``(c0, c1, c2, c3)`` (little-endian 32-bit words) and a 64-bit key
``(k0, k1)``.  One round::

    (hi0, lo0) = 0xD2511F53 · c0      (64-bit product; hi = upper, lo = lower 32 bits)
    (hi1, lo1) = 0xCD9E8D57 · c2
    c = (hi1 ^ c1 ^ k0,  lo1,  hi0 ^ c3 ^ k1,  lo0)

ten rounds, the key bumped by the Weyl constants (k0 += 0x9E3779B9, k1 += 0xBB67AE85, mod 2³²)
between consecutive rounds.  Known answers (Random123 ``kat_vectors``):
counter 0, key 0 → ``6627e8d5 e169c58d bc57ac4c 9b00dbd8``.

The stream (independent of grid size, block size and items per thread)
----------------------------------------------------------------------
A draw is defined by a 64-bit ``seed`` and a block ``offset`` (0 ≤ offset < 2⁶², checked by
the plans), both chosen by the caller (the :class:`array_api.random.Generator` keeps them).
The key is ``(k0, k1) = (seed mod 2³², seed div 2³² mod 2³²)``; Philox *block* ``b`` of the draw is
Philox4x32-10 at counter ``offset + b`` taken as a 128-bit integer (so
``c0 = (offset+b) mod 2³²``, ``c1 = (offset+b) div 2³²``, ``c2 = c3 = 0``), giving the four words
``w[4b], w[4b+1], w[4b+2], w[4b+3]``.  The flat word stream ``w[0], w[1], ...`` is consumed by
the elements of the (C-order, flat) output in order, ``wpe`` words per element:

* ``wpe = 1`` (uniform / normal / gumbel of f32, f16, bf16; randint int32; bits uint32;
  bernoulli of every output dtype; dropout of every dtype): element ``i`` uses word
  ``i mod 4`` of block ``i div 4``.
* ``wpe = 2`` (uniform / normal / gumbel of f64; randint int64; bits uint64): element ``i``
  uses words ``(lo, hi) = (2(i mod 2), 2(i mod 2)+1)`` of block ``i div 2`` as the 64-bit word
  ``hi·2³² + lo``.

Values from the word(s) ``w`` of element ``i`` (see :mod:`.random_fill` for the scalars):
uniform f32/f16/bf16 ``(w >> (32−k))·2⁻ᵏ`` with k = 24/11/8, f64 ``(w64 >> 11)·2⁻⁵³``;
gumbel ``−log(−log u)`` with ``u = ((w >> 9) + ½)·2⁻²³`` (f64: ``((w64 >> 12) + ½)·2⁻⁵²``);
bernoulli(p) ``w < round(p·2³²)``; dropout keeps ``w ≥ round(p·2³²)``; randint
``low + ⌊w·span/2³²⌋`` (int64: ``⌊w64·span/2⁶⁴⌋``).

A draw of ``n`` elements therefore consumes ``ceil(n·wpe / 4)`` blocks; a generator advances its
offset by that count, so successive draws never reuse a counter.  Normals (Box–Muller) pair
elements ``2j`` and ``2j+1``: with the pair's two (``wpe=1``) or four (``wpe=2``) words giving
``u1 ∈ (0, 1]`` (first word/dword) and ``u2 ∈ [0, 1)`` (second), ``r = sqrt(−2 ln u1)``,
element ``2j`` = ``r·cos(2π u2)`` and element ``2j+1`` = ``r·sin(2π u2)``.  Each element only
depends on its own block, so every value is a pure function of (seed, offset, i).

Converters (exact in binary floating point)
-------------------------------------------
* ``u32_to_unit_float(r)``       = (r >> 8) · 2⁻²⁴        ∈ [0, 1)   (24 random bits, f32)
* ``u32_to_unit_float_open(r)``  = ((r >> 8) + 1) · 2⁻²⁴  ∈ (0, 1]
* ``u64_to_unit_double(lo, hi)`` = ((hi·2³² + lo) >> 11) · 2⁻⁵³ ∈ [0, 1)   (53 bits, f64)
* ``u64_to_unit_double_open(lo, hi)`` = that + 2⁻⁵³ ∈ (0, 1]
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Float64, Int64, Uint32, Uint64

M0 = 0xD2511F53
M1 = 0xCD9E8D57
W0 = 0x9E3779B9
W1 = 0xBB67AE85
ROUNDS = 10


@cute.jit
def mulhilo32(a, m: cutlass.Constexpr):
    """(hi, lo) of the 64-bit product of the Uint32 ``a`` and the constant ``m``
    (``mul.hi.u32`` + a wrapping 32-bit multiply: plain 64-bit products made LLVM widen the
    whole round to 64-bit arithmetic)."""
    x = Uint32(a)
    mm = Uint32(m)
    return cute.arch.mul_hi(x, mm), x * mm


@cute.jit
def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """The four Uint32 output words of Philox4x32-10 for counter (c0..c3), key (k0, k1)."""
    x0 = Uint32(c0)
    x1 = Uint32(c1)
    x2 = Uint32(c2)
    x3 = Uint32(c3)
    ka = Uint32(k0)
    kb = Uint32(k1)
    for r in cutlass.range_constexpr(ROUNDS):
        if cutlass.const_expr(r > 0):
            ka = ka + Uint32(W0)
            kb = kb + Uint32(W1)
        hi0, lo0 = mulhilo32(x0, M0)
        hi1, lo1 = mulhilo32(x2, M1)
        y0 = hi1 ^ x1 ^ ka
        y2 = hi0 ^ x3 ^ kb
        x0 = y0
        x1 = lo1
        x2 = y2
        x3 = lo0
    return x0, x1, x2, x3


@cute.jit
def philox_block(seed: Int64, offset: Int64, b: Int64):
    """The four words of block ``b`` of the stream (seed, offset) (module docstring)."""
    s = Uint64(seed)
    c = Uint64(offset) + Uint64(b)
    return philox4x32_10(Uint32(c), Uint32(c >> Uint64(32)), Uint32(0), Uint32(0),
                         Uint32(s), Uint32(s >> Uint64(32)))


@cute.jit
def u32_to_unit_float(r):
    """(r >> 8)·2⁻²⁴: uniform in [0, 1) as Float32 (exact)."""
    return Float32(cutlass.Int32(Uint32(r) >> Uint32(8))) * Float32(2.0 ** -24)


@cute.jit
def u32_to_unit_float_open(r):
    """((r >> 8) + 1)·2⁻²⁴: uniform in (0, 1] as Float32 (exact; safe for log)."""
    return Float32(cutlass.Int32(Uint32(r) >> Uint32(8)) + cutlass.Int32(1)) * \
        Float32(2.0 ** -24)


@cute.jit
def u64_of(lo, hi):
    """The Uint64 ``hi·2³² + lo``."""
    return (Uint64(Uint32(hi)) << Uint64(32)) | Uint64(Uint32(lo))


@cute.jit
def u64_to_unit_double(lo, hi):
    """((hi·2³² + lo) >> 11)·2⁻⁵³: uniform in [0, 1) as Float64 (exact)."""
    return Float64(Int64(u64_of(lo, hi) >> Uint64(11))) * Float64(2.0 ** -53)


@cute.jit
def u64_to_unit_double_open(lo, hi):
    """(((hi·2³² + lo) >> 11) + 1)·2⁻⁵³: uniform in (0, 1] as Float64."""
    return Float64(Int64(u64_of(lo, hi) >> Uint64(11)) + Int64(1)) * Float64(2.0 ** -53)
