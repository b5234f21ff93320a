"""Packed two-byte helpers shared by the row kernels that keep 16-bit inputs packed in registers
(softmax forward, cross-entropy forward): the max of a ``bf16x2`` / ``f16x2`` word's two halves in
f32, read with bit operations / ``cvt`` in inline PTX — each half explicitly, never through a
recast of a register tensor — so a word whose low half is −inf (or whose halves differ in any
way) still yields the larger half."""

from __future__ import annotations

import cutlass.cute as cute
from cutlass import Float32, Uint32

_BF16 = ("{ .reg .b32 lo, hi; shl.b32 lo, {$r0}, 16; and.b32 hi, {$r0}, 0xFFFF0000; "
         "max.f32 {$w0}, lo, hi; }")
_F16 = ("{ .reg .b16 l, h; .reg .f32 a, b; mov.b32 {l, h}, {$r0}; cvt.f32.f16 a, l; "
        "cvt.f32.f16 b, h; max.f32 {$w0}, a, b; }")


def pair_max(word, dtype_short: str):
    """max(low half, high half) of a packed bf16x2 / f16x2 ``word`` (Uint32) as Float32 (exact:
    both formats widen to f32 exactly; a NaN half is dropped as by max.f32)."""
    return cute.arch.inline_ptx(_BF16 if dtype_short == "bf16" else _F16,
                                write_only_types=[Float32], read_only_args=[Uint32(word)])
