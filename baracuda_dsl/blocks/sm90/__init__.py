"""Hopper (sm90a) CuTe DSL building blocks shared by the warp-specialised TMA + wgmma kernels
(``ops/gemm/kernels/gemm_sm90.py`` today; attention, convolution and grouped GEMM next):

- :mod:`.tma`        operand shared / global layouts, TMA load atoms, the per-CTA partitions of
                     two operands (b optionally multicast over a cluster) and their loads;
- :mod:`.pipeline`   the TMA → mbarrier stage pipeline: its creation, the producer warp's loop
                     over work units, and the consumer warpgroups' wgmma mainloop of one unit;
- :mod:`.scheduler`  the persistent tile scheduler: grouped rasterisation of (tile, split) work
                     units over a grid of CTAs / clusters;
- :mod:`.epilogue`   the shared-memory epilogue: accumulator chunks staged through shared memory
                     so every thread finishes consecutive columns of one row (the finishing math
                     is the kernel's hook).

Each piece is a trace-time function or class (no kernel of its own): call them from inside a
``@cute.kernel`` / ``@cute.jit``; ``@cute.jit`` pieces are inlined where they are called."""
