"""Philox random fill of a flat contiguous output: ``y[i] = dist(words of element i)`` for
``i < n`` under the stream definition of :mod:`.philox` (independent of the launch shape).

Thread ``t`` of CTA ``c`` handles the Philox blocks ``b = (c·BPT + j)·THREADS + t``
(``j < BPT``), each giving ``E = 4 / wpe`` consecutive elements ``b·E ...`` stored with one
vector store (the plan requires ``y`` aligned to ``E`` elements), element-wise past the end.

Scalars by ``dist``:
* ``uniform``  a = low, b = high:  low + u·(high − low), u ∈ [0, 1) with 24 (f32), 11 (f16),
  8 (bf16) or 53 (f64) random bits (so [0, 1) stays exact in the output dtype); a result that
  rounds up to ``high`` is replaced by ``low``.  Computed in f32 (f64 for f64).
* ``normal``   a = mean, b = std:   Box–Muller pairs (module docstring of :mod:`.philox`).
* ``gumbel``   a = loc, b = scale:  loc − scale·log(−log u), u = (bits + ½)·2⁻ᵏ ∈ (0, 1) with
  the top k = 23 (f32/f16/bf16, computed in f32) or 52 (f64) bits of the word(s), so that u is
  exact and never 0 or 1 (g is always finite).
* ``bernoulli`` ia = thr:  1 when word < thr (P = thr / 2³²), else 0 (uint8 or float output).
* ``randint``  ia = low, ib = span (mod 2⁶⁴; 0 means 2⁶⁴): low + ⌊w·span / 2ᵏ⌋ for the 32-bit
  (int32, k = 32) or 64-bit (int64, k = 64) word w (Lemire's multiply-shift without rejection:
  each value has probability within span / 2ᵏ relative of uniform).
* ``bits``     raw words (u32) or 64-bit words ``hi·2³² + lo`` (u64).
"""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Float64, Int32, Int64, Uint32, Uint64

from ..specs.random import BPT, THREADS, RandomFillKnobs, words_per_element
from ....blocks.philox import (philox_block, u32_to_unit_float, u32_to_unit_float_open, u64_of,
                     u64_to_unit_double, u64_to_unit_double_open)

STORAGE = {"f32": cutlass.Float32, "f16": cutlass.Float16, "bf16": cutlass.BFloat16,
           "f64": cutlass.Float64, "u8": cutlass.Uint8, "i32": cutlass.Int32,
           "i64": cutlass.Int64, "u32": cutlass.Uint32, "u64": cutlass.Uint64}
#: random mantissa bits of a [0, 1) uniform per output dtype (exact in that dtype)
UBITS = {"f32": 24, "f16": 11, "bf16": 8}


@cute.jit
def unit_f32(w, k: cutlass.Constexpr):
    """[0, 1) with ``k`` random bits (top bits of the word) as Float32."""
    return Float32(Int32(Uint32(w) >> Uint32(32 - k))) * Float32(2.0 ** -k)


@cute.jit
def unit_f32_mid(w, k: cutlass.Constexpr):
    """(0, 1) midpoint variant: (bits + ½)·2⁻ᵏ as Float32 (exact for k ≤ 23)."""
    return (Float32(Int32(Uint32(w) >> Uint32(32 - k))) + Float32(0.5)) * Float32(2.0 ** -k)


def build(knobs: RandomFillKnobs):
    dist = knobs.dist
    dts = knobs.dtype
    T = STORAGE[dts]
    wpe = words_per_element(dist, dts)
    E = 4 // wpe
    f64 = dts == "f64"
    CT = Float64 if f64 else Float32
    PER_CTA = THREADS * BPT
    VA = min(E, 16 // (T.width // 8))   # elements per aligned 16-byte (or smaller) access

    @cute.kernel
    def kernel(py: cute.Pointer, n: Int64, seed: Int64, offset: Int64, a: Float64, b: Float64,
               ia: Int64, ib: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        nblk = (n * Int64(wpe) + Int64(3)) // Int64(4)
        frag = cute.make_rmem_tensor(cute.make_layout(E), T)
        for j in cutlass.range_constexpr(BPT):
            blk = (Int64(bidx) * Int64(BPT) + Int64(j)) * Int64(THREADS) + Int64(tidx)
            if blk < nblk:
                w0, w1, w2, w3 = philox_block(seed, offset, blk)
                ws = [w0, w1, w2, w3]
                # ---- values --------------------------------------------------------------
                if cutlass.const_expr(dist == "uniform"):
                    lo = CT(a)
                    hi = CT(b)
                    for e in cutlass.range_constexpr(E):
                        if cutlass.const_expr(f64):
                            u = u64_to_unit_double(ws[2 * e], ws[2 * e + 1])
                        else:
                            u = unit_f32(ws[e], UBITS[dts])
                        v = lo + u * (hi - lo)
                        tv = T(v)
                        frag[e] = cutlass.select_(CT(tv) >= hi, T(lo), tv)
                elif cutlass.const_expr(dist == "normal"):
                    mu = CT(a)
                    sd = CT(b)
                    for q in cutlass.range_constexpr(2):
                        if cutlass.const_expr(f64):
                            u1 = u64_to_unit_double_open(ws[0], ws[1])
                            u2 = u64_to_unit_double(ws[2], ws[3])
                        else:
                            u1 = u32_to_unit_float_open(ws[2 * q])
                            u2 = u32_to_unit_float(ws[2 * q + 1])
                        r = cute.math.sqrt(CT(-2.0) * cute.math.log(u1))
                        th = CT(2.0 * math.pi) * u2
                        if cutlass.const_expr(q == 0 or not f64):
                            frag[2 * q] = T(mu + sd * (r * cute.math.cos(th)))
                            frag[2 * q + 1] = T(mu + sd * (r * cute.math.sin(th)))
                elif cutlass.const_expr(dist == "gumbel"):
                    loc = CT(a)
                    sc = CT(b)
                    for e in cutlass.range_constexpr(E):
                        if cutlass.const_expr(f64):
                            u = (Float64(Int64(u64_of(ws[2 * e], ws[2 * e + 1]) >> Uint64(12)))
                                 + Float64(0.5)) * Float64(2.0 ** -52)
                        else:
                            u = unit_f32_mid(ws[e], 23)
                        gv = -cute.math.log(-cute.math.log(u))
                        frag[e] = T(loc + sc * gv)
                elif cutlass.const_expr(dist == "bernoulli"):
                    for e in cutlass.range_constexpr(E):
                        hit = Int64(Uint64(ws[e])) < ia
                        if cutlass.const_expr(dts == "u8"):
                            frag[e] = cutlass.select_(hit, cutlass.Uint8(1), cutlass.Uint8(0))
                        else:
                            frag[e] = T(cutlass.select_(hit, CT(1.0), CT(0.0)))
                elif cutlass.const_expr(dist == "randint"):
                    for e in cutlass.range_constexpr(E):
                        if cutlass.const_expr(f64 or dts == "i64"):
                            w64 = u64_of(ws[2 * e], ws[2 * e + 1])
                            sp = Uint64(ib)
                            off = cutlass.select_(sp == Uint64(0), w64, cute.arch.mul_hi(w64, sp))
                            frag[e] = Int64(Uint64(ia) + off)
                        else:
                            off32 = (Uint64(ws[e]) * Uint64(ib)) >> Uint64(32)
                            frag[e] = Int32(Int64(ia) + Int64(off32))
                else:  # bits
                    for e in cutlass.range_constexpr(E):
                        if cutlass.const_expr(dts == "u64"):
                            frag[e] = u64_of(ws[2 * e], ws[2 * e + 1])
                        else:
                            frag[e] = Uint32(ws[e])
                # ---- store ---------------------------------------------------------------
                e0 = blk * Int64(E)
                if e0 + Int64(E) <= n:
                    gout = cute.make_tensor(py + cute.assume(e0, divby=VA), cute.make_layout(E))
                    cute.autovec_copy(frag, gout)
                else:
                    for e in cutlass.range_constexpr(E):
                        if e0 + Int64(e) < n:
                            cute.make_tensor(py + e0 + Int64(e), cute.make_layout(1))[0] = \
                                frag[e]

    @cute.jit
    def launch(py: cute.Pointer, n: Int64, seed: Int64, offset: Int64, a: Float64, b: Float64,
               ia: Int64, ib: Int64, stream):
        nblk = (n * Int64(wpe) + Int64(3)) // Int64(4)
        kernel(py, n, seed, offset, a, b, ia, ib).launch(
            grid=[Int32((nblk + PER_CTA - 1) // PER_CTA), 1, 1], block=[THREADS, 1, 1],
            smem=0, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    args = [make_ptr(T, 16, cute.AddressSpace.gmem, assumed_align=T.width // 8 * VA),
            Int64(1), Int64(0), Int64(0), Float64(0.0), Float64(1.0), Int64(0), Int64(1),
            make_fake_stream()]
    return launch, args
