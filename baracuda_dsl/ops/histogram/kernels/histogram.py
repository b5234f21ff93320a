"""Counting kernel: ``out[bin(x[i])] += w[i]`` (or 1) for every element of a strided 1-D input.

Bins: ``bincount`` — the integer value itself, kept when 0 ≤ v < bins; ``uniform`` —
``floor((v − lo) · scale)`` for lo ≤ v ≤ hi (v == hi → the last bin), in float64; ``edges`` —
the largest i with edges[i] ≤ v by a branch-free binary search over the ``bins + 1`` float64
edges, kept when edges[0] ≤ v ≤ edges[bins] (v == edges[bins] → the last bin).  NaN is never
counted.  Grid-stride loop; with ``priv`` set each CTA first counts into a shared-memory
histogram (shared atomics) and then adds its non-zero bins to ``out`` with global atomics.
Integer counts are exact and deterministic; float weight sums depend on atomic order.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Float64, Int32, Int64

from ..specs.histogram import SMEM_BINS, THREADS, acc_short

_TYPES = {"i8": cutlass.Int8, "i16": cutlass.Int16, "i32": cutlass.Int32, "i64": cutlass.Int64,
          "u8": cutlass.Uint8, "u16": cutlass.Uint16, "u32": cutlass.Uint32,
          "u64": cutlass.Uint64, "f32": Float32, "f16": cutlass.Float16,
          "bf16": cutlass.BFloat16, "f64": Float64}


def build(knobs):
    """``knobs``: a :class:`~baracuda_dsl.ops.histogram.specs.histogram.HistogramKnobs`."""
    mode = knobs.mode
    VT = _TYPES[knobs.dtype]
    weighted = knobs.weights != "none"
    WT = _TYPES[knobs.weights] if weighted else Float32
    AT = {"i64": Int64, "f32": Float32, "f64": Float64}[acc_short(knobs.weights)]

    def sel(cond, a, b):
        return type(a)(cutlass.select_(cond, a, type(a)(b)))

    @cute.jit
    def bin_of(v, pedges: cute.Pointer, bins: Int32, nsteps: Int32, lo: Float64, hi: Float64,
               scale: Float64):
        """Branch-free: the bin of value ``v``, or -1 when it is not counted."""
        if cutlass.const_expr(mode == "bincount"):
            iv = Int64(v)
            ok = (iv >= Int64(0)) & (iv < Int64(bins))
            return sel(ok, Int32(iv), Int32(-1))
        f = Float64(v)
        if cutlass.const_expr(mode == "uniform"):
            ok = (f >= lo) & (f <= hi)
            b = Int32(sel(ok, (f - lo) * scale, Float64(-1.0)))
        else:
            edges = cute.make_tensor(pedges, cute.make_layout(bins + 1))
            ok = (f >= edges[0]) & (f <= edges[bins])
            pos = Int32(0)
            for s in cutlass.range(nsteps):
                nxt = pos + ((Int32(1) << (nsteps - 1 - s)))
                take = (nxt <= bins) & (edges[sel(nxt <= bins, nxt, bins)] <= f)
                pos = sel(take, nxt, pos)
            b = sel(ok, pos, Int32(-1))
        return sel(b >= bins, bins - 1, b)

    @cute.jit
    def add_to_bin(hist: cute.Tensor, pout: cute.Pointer, b: Int32, val, priv: Int32):
        if priv != 0:
            cute.arch.atomic_add(hist.iterator + b, val)
        else:
            cute.arch.atomic_add(pout + Int64(b), val)

    @cute.kernel
    def kernel(px: cute.Pointer, pw: cute.Pointer, pedges: cute.Pointer, pout: cute.Pointer,
               n: Int64, xs: Int64, ws: Int64, bins: Int32, nsteps: Int32, lo: Float64,
               hi: Float64, scale: Float64, priv: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        gdim, _, _ = cute.arch.grid_dim()
        smem = cutlass.memory.SmemAllocator()
        hist = smem.allocate_tensor(AT, cute.make_layout(SMEM_BINS), byte_alignment=16)
        if priv != 0:
            for z in cutlass.range(tidx, bins, THREADS):
                hist[z] = AT(0)
            cute.arch.barrier()
        nchunks = Int32((n + Int64(THREADS - 1)) // Int64(THREADS))
        for c in cutlass.range(bidx, nchunks, gdim):
            i = Int64(c) * Int64(THREADS) + Int64(tidx)
            if i < n:
                xv = cute.make_tensor(px + i * xs, cute.make_layout(1))[0]
                k = bin_of(xv, pedges, bins, nsteps, lo, hi, scale)
                if k >= 0:
                    val = AT(1)
                    if cutlass.const_expr(weighted):
                        val = AT(cute.make_tensor(pw + i * ws, cute.make_layout(1))[0])
                    add_to_bin(hist, pout, k, val, priv)
        if priv != 0:
            cute.arch.barrier()
            for j in cutlass.range(tidx, bins, THREADS):
                v = hist[j]
                if v != AT(0):
                    cute.arch.atomic_add(pout + Int64(j), v)

    @cute.jit
    def launch(px: cute.Pointer, pw: cute.Pointer, pedges: cute.Pointer, pout: cute.Pointer,
               n: Int64, xs: Int64, ws: Int64, bins: Int32, nsteps: Int32, lo: Float64,
               hi: Float64, scale: Float64, priv: Int32, grid: Int32, stream):
        kernel(px, pw, pedges, pout, n, xs, ws, bins, nsteps, lo, hi, scale, priv).launch(
            grid=[grid, 1, 1], block=[THREADS, 1, 1],
            smem=SMEM_BINS * (AT.width // 8) + 64, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=max(t.width // 8, 1))

    args = [ptr(VT), ptr(WT), ptr(Float64), ptr(AT), Int64(1), Int64(1), Int64(1), Int32(1),
            Int32(1), Float64(0.0), Float64(1.0), Float64(1.0), Int32(1), Int32(1),
            make_fake_stream()]
    return launch, args
