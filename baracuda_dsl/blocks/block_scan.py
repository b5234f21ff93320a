"""Block-wide scans of the CTA's threads (thread order), shared by the scan, compaction and
radix-sort kernels."""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32


@cute.jit
def block_exclusive_scan(v, buf, warps: cutlass.Constexpr):
    """Exclusive prefix sum of the Int32 ``v`` over the CTA (``warps``·32 threads, thread
    order); ``buf`` is a shared Int32 tensor of ≥ ``warps`` slots.  Returns (exclusive, total);
    ends with a barrier so ``buf`` may be reused at once."""
    tidx, _, _ = cute.arch.thread_idx()
    lane = Int32(tidx) % Int32(32)
    warp = Int32(tidx) // Int32(32)
    x = Int32(v)
    for o in cutlass.range_constexpr(5):
        y = cute.arch.shuffle_sync_up(x, 1 << o)
        if lane >= Int32(1 << o):
            x = x + y
    if lane == Int32(31):
        buf[warp] = x
    cute.arch.barrier()
    pre = Int32(0)
    tot = Int32(0)
    for w in cutlass.range_constexpr(warps):
        s = buf[w]
        if Int32(w) < warp:
            pre = pre + s
        tot = tot + s
    cute.arch.barrier()
    return pre + x - Int32(v), tot
