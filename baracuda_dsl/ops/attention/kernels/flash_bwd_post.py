"""dq = scale · dq_acc (f32 → the input dtype) after ``flash_bwd_sm90``'s atomic accumulation.

One warp per query row of a head (grid (ceil(sq / POST_ROWS), Hq, B), 128 threads = POST_ROWS
rows); lanes stride over the head dim.  Rows past the sequence (varlen: from cu_q) are skipped.
"""

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64

from ..specs.flash import FlashKnobs
from ..specs.flash_bwd_sm90 import POST_ROWS
from .flash_common import TYPES, seq_bounds


def build(knobs: FlashKnobs):
    T = TYPES[knobs.dtype]
    D = knobs.head_dim

    @cute.kernel
    def kernel(pa: cute.Pointer, pq: cute.Pointer, pcuq: cute.Pointer, sq: Int32, ab: Int64,
               as_: Int64, ah: Int64, qb: Int64, qs: Int64, qh: Int64, scale: Float32,
               flags: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        mb, h, b = cute.arch.block_idx()
        q0, nq = seq_bounds(pcuq, b, flags, sq)
        row = Int32(mb) * POST_ROWS + Int32(tidx) // 32
        lane = Int32(tidx) % 32
        if row < nq:
            bb = Int64(b)
            if (flags & 1) != 0:
                bb = Int64(0)
            src = cute.make_tensor(pa + (bb * ab + Int64(q0 + row) * as_ + Int64(h) * ah),
                                   cute.make_layout(D))
            dst = cute.make_tensor(pq + (bb * qb + Int64(q0 + row) * qs + Int64(h) * qh),
                                   cute.make_layout(D))
            for c in cutlass.range_constexpr(D // 32):
                dst[c * 32 + lane] = T(src[c * 32 + lane] * scale)

    @cute.jit
    def launch(pa: cute.Pointer, pq: cute.Pointer, pcuq: cute.Pointer, sq: Int32, ab: Int64,
               as_: Int64, ah: Int64, qb: Int64, qs: Int64, qh: Int64, scale: Float32,
               flags: Int32, blocks: Int32, heads: Int32, batch: Int32, stream):
        kernel(pa, pq, pcuq, sq, ab, as_, ah, qb, qs, qh, scale, flags).launch(
            grid=[blocks, heads, batch], block=[128, 1, 1], stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    args = [make_ptr(Float32, 16, cute.AddressSpace.gmem, assumed_align=4),
            make_ptr(T, 16, cute.AddressSpace.gmem, assumed_align=2),
            make_ptr(Int32, 16, cute.AddressSpace.gmem, assumed_align=4), Int32(1)]
    args += [Int64(8)] * 6 + [Float32(1.0), Int32(0), Int32(1), Int32(1), Int32(1),
                              make_fake_stream()]
    return launch, args
