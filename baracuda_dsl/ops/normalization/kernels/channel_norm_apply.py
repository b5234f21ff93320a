"""Channel-norm apply pass (BatchNorm / GroupNorm / InstanceNorm, FW and BW): element-wise.

The dense (N, C, S) tensor is walked as ``total_v`` vectors of ``vec`` elements (S is a multiple
of vec on the vector path); vector i belongs to row r = i // Sv (Sv = S / vec) and entry
e = r mod E (E = C for BatchNorm, N·C for GroupNorm).  Per entry the finalize kernel left
``emu``, ``ea``, ``eb``, ``ec`` (compute type) in the workspace:

    fw:  y  = (x − emu[e])·ea[e] + ec[e]
    bw:  dx = ea[e]·dy − eb[e]·(x − emu[e]) − ec[e]

x − mean is formed first, so large-mean inputs lose nothing to cancellation.  Each CTA covers
``APPLY_UNROLL`` consecutive blocks of ``threads`` vectors (coalesced 16-byte accesses).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, const_expr

from ..specs.channel_norm import APPLY_THREADS, APPLY_UNROLL, ChannelVecKnobs
from ....blocks.reduction_base import compute_type, element_type
from ....blocks.gmem import gmem_ptr


def build(knobs: ChannelVecKnobs):
    dt, vec, mode = knobs.dtype, knobs.vec, knobs.mode
    T = element_type(dt)
    CT = compute_type(dt)
    bw = mode == "bw"
    THREADS, U = APPLY_THREADS, APPLY_UNROLL

    @cute.kernel
    def kernel(px: cute.Pointer, pdy: cute.Pointer, pout: cute.Pointer, pemu: cute.Pointer,
               pea: cute.Pointer, peb: cute.Pointer, pec: cute.Pointer, total_v: Int64,
               Sv: Int64, E: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        lin = cute.make_layout(1 << 30)
        emu = cute.make_tensor(pemu, lin)
        ea = cute.make_tensor(pea, lin)
        eb = cute.make_tensor(peb, lin)
        ec = cute.make_tensor(pec, lin)
        bl = cute.make_layout((vec, U), stride=(1, vec))
        rx = cute.make_rmem_tensor(bl, T)
        rd = cute.make_rmem_tensor(bl, T)
        blk = Int64(bidx) * (THREADS * U) + Int64(tidx)
        for uu in cutlass.range_constexpr(U):
            vi = blk + uu * THREADS
            if vi < total_v:
                off = vi * vec
                if const_expr(vec > 1):
                    off = cute.assume(off, divby=vec)
                gx = cute.make_tensor(px + off, cute.make_layout(vec))
                cute.autovec_copy(gx, rx[None, uu])
                if const_expr(bw):
                    gd = cute.make_tensor(pdy + off, cute.make_layout(vec))
                    cute.autovec_copy(gd, rd[None, uu])
        for uu in cutlass.range_constexpr(U):
            vi = blk + uu * THREADS
            if vi < total_v:
                e = Int32((vi // Sv) % Int64(E))
                m = emu[e]
                a = ea[e]
                c = ec[e]
                if const_expr(bw):
                    b = eb[e]
                    for k in cutlass.range_constexpr(vec):
                        rx[k, uu] = T(a * CT(rd[k, uu]) - b * (CT(rx[k, uu]) - m) - c)
                else:
                    for k in cutlass.range_constexpr(vec):
                        rx[k, uu] = T((CT(rx[k, uu]) - m) * a + c)
                off = vi * vec
                if const_expr(vec > 1):
                    off = cute.assume(off, divby=vec)
                go = cute.make_tensor(pout + off, cute.make_layout(vec))
                cute.autovec_copy(rx[None, uu], go)

    @cute.jit
    def launch(px: cute.Pointer, pdy: cute.Pointer, pout: cute.Pointer, pemu: cute.Pointer,
               pea: cute.Pointer, peb: cute.Pointer, pec: cute.Pointer, total_v: Int64,
               Sv: Int64, E: Int32, blocks: Int32, stream):
        kernel(px, pdy, pout, pemu, pea, peb, pec, total_v, Sv, E).launch(
            grid=[blocks, 1, 1], block=[THREADS, 1, 1], smem=0, stream=stream)

    align = T.width // 8 * vec
    t_ = [gmem_ptr(T, align) for _ in range(3)]
    c_ = [gmem_ptr(CT, CT.width // 8) for _ in range(4)]
    args = t_ + c_ + [Int64(1), Int64(1), Int32(1), Int32(1), cute.runtime.make_fake_stream()]
    return launch, args
