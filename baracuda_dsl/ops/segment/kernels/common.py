"""CuTe DSL helpers the segment kernels share: scalar loads, typed selects and the clamped
[lo, hi) range of one segment / bag read from an offsets array."""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Float64, Int32, Int64

#: DSL type of each element / accumulator dtype short name
ELEMENT = {"f32": Float32, "f16": cutlass.Float16, "bf16": cutlass.BFloat16, "f64": Float64,
           "i32": Int32, "i64": Int64}


@cute.jit
def load1(p: cute.Pointer, off: Int64):
    """The element at ``p + off``."""
    return cute.make_tensor(p + off, cute.make_layout(1))[0]


def sel(c, a, b):
    """``a if c else b`` in ``a``'s type."""
    return type(a)(cutlass.select_(c, a, type(a)(b)))


@cute.jit
def clamped_range(poff: cute.Pointer, s: Int64, n: Int64, nofs: Int64, os: Int64):
    """[lo, hi) of segment ``s``: ``off[s]`` to ``off[s+1]`` (``n`` past the last of the ``nofs``
    entries, stride ``os``), both clamped into [0, n] with hi >= lo, so garbage offsets never
    reach outside the rows."""
    lo = Int64(load1(poff, s * os))
    hi = n
    if s + Int64(1) < nofs:
        hi = Int64(load1(poff, (s + Int64(1)) * os))
    lo = sel(lo < Int64(0), Int64(0), lo)
    lo = sel(lo > n, n, lo)
    hi = sel(hi > n, n, hi)
    hi = sel(hi < lo, lo, hi)
    return lo, hi
