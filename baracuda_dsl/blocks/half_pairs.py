"""Packed two-byte helpers shared by the row kernels that keep 16-bit inputs packed in registers
(softmax forward and backward, cross-entropy forward): the max of a ``bf16x2`` / ``f16x2`` word's
two halves in f32, read with bit operations / ``cvt`` in inline PTX — each half explicitly, never
through a recast of a register tensor — so a word whose low half is −inf (or whose halves differ
in any way) still yields the larger half; and an opaque copy of packed words that keeps the
compiler from holding early f32 conversions alive."""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Uint32

_BF16 = ("{ .reg .b32 lo, hi; shl.b32 lo, {$r0}, 16; and.b32 hi, {$r0}, 0xFFFF0000; "
         "max.f32 {$w0}, lo, hi; }")
_F16 = ("{ .reg .b16 l, h; .reg .f32 a, b; mov.b32 {l, h}, {$r0}; cvt.f32.f16 a, l; "
        "cvt.f32.f16 b, h; max.f32 {$w0}, a, b; }")


#: a packed word of two −inf halves
NEG_INF2 = {"bf16": 0xFF80FF80, "f16": 0xFC00FC00}
_MAX2 = "{ .reg .b32 t; mov.b32 t, {$r0}; max.%s {$w0}, t, {$r1}; }"  # the mov admits an immediate


def packed_max(acc, word, dtype_short: str):
    """Half-wise max of two packed bf16x2 / f16x2 words (Uint32; ``max.bf16x2`` / ``max.f16x2``,
    exact)."""
    return cute.arch.inline_ptx(_MAX2 % ("bf16x2" if dtype_short == "bf16" else "f16x2"),
                                write_only_types=[Uint32], read_only_args=[acc, word])


def pair_max(word, dtype_short: str):
    """max(low half, high half) of a packed bf16x2 / f16x2 ``word`` (Uint32) as Float32 (exact:
    both formats widen to f32 exactly; a NaN half is dropped as by max.f32)."""
    return cute.arch.inline_ptx(_BF16 if dtype_short == "bf16" else _F16,
                                write_only_types=[Float32], read_only_args=[Uint32(word)])


@cute.jit
def opaque_copy(src, c: cutlass.Constexpr, dst, words: cutlass.Constexpr):
    """dst ← src[:, c] (``words`` 32-bit words) through opaque register moves: a later pass
    re-widens two-byte values from their packed words instead of keeping an earlier pass's f32
    conversions alive across a reduction (which would double the register footprint)."""
    sw = cute.recast_tensor(src, Uint32)
    dw = cute.recast_tensor(dst, Uint32)
    for i in cutlass.range_constexpr(words):
        dw[i] = cute.arch.inline_ptx("mov.b32 {$w0}, {$r0};", write_only_types=[Uint32],
                                     read_only_args=[sw[i, c]])
