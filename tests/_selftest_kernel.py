"""Test-only CuTe DSL kernel: ``y[i] = s * x[i]`` for ``i < n`` (one element per thread, the
template's block size).  Used by the cache / JIT / prebuild tests so they do not depend on the
library's own kernels."""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64


def build(knobs):
    T = getattr(cutlass, {"f32": "Float32", "f16": "Float16"}[knobs.dtype])
    THREADS = knobs.threads

    @cute.kernel
    def kernel(px: cute.Pointer, py: cute.Pointer, n: Int32, s: Float32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = Int64(bidx) * THREADS + Int64(tidx)
        if i < Int64(n):
            x = cute.make_tensor(px + i, cute.make_layout(1))
            y = cute.make_tensor(py + i, cute.make_layout(1))
            y[0] = T(Float32(x[0]) * s)

    @cute.jit
    def launch(px: cute.Pointer, py: cute.Pointer, n: Int32, s: Float32, stream):
        kernel(px, py, n, s).launch(grid=[(n + THREADS - 1) // THREADS, 1, 1],
                                    block=[THREADS, 1, 1], smem=0, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    args = [make_ptr(T, 16, cute.AddressSpace.gmem, assumed_align=T.width // 8),
            make_ptr(T, 16, cute.AddressSpace.gmem, assumed_align=T.width // 8),
            Int32(1), Float32(1.0), make_fake_stream()]
    return launch, args
