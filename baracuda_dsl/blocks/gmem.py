"""Global-memory pieces the kernels of many families share: opaque word types, scalar loads and
stores, row offsets over strided outer dims, example pointers and argument lists for
``cute.compile``, and the grouping of per-dim scalar parameters.

A kernel takes its per-dim scalars as tuples of eight Int64 (one tuple per group: extents,
strides, ...); the DSL flattens a tuple into one entry parameter per element, so the entry's
parameter list is the flat ABI of the spec.  The host-side ``launch`` takes the same scalars
flat (``*rest``, the stream last) and regroups them with :func:`groups`.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

#: opaque word type per size in bytes
WORD = {1: cutlass.Uint8, 2: cutlass.Uint16, 4: cutlass.Uint32, 8: cutlass.Uint64,
        16: cutlass.Uint128}


def groups(flat, size: int = 8):
    """``flat`` scalars as consecutive tuples of ``size``."""
    return tuple(tuple(flat[i:i + size]) for i in range(0, len(flat), size))


def split_stream(rest):
    """(scalars, stream) of a launcher's trailing ``*rest`` (the stream comes last)."""
    return rest[:-1], rest[-1]


def gmem_ptr(T, align: int):
    """An example global-memory pointer to ``T`` aligned to ``align`` bytes."""
    from cutlass.cute.runtime import make_ptr

    return make_ptr(T, 16, cute.AddressSpace.gmem, assumed_align=align)


def example_args(ptrs, n_i64: int, tail=()):
    """Example arguments of a launcher: ``ptrs``, ``n_i64`` Int64 ones, ``tail``, a stream."""
    from cutlass.cute.runtime import make_fake_stream

    return list(ptrs) + [Int64(1)] * n_i64 + list(tail) + [make_fake_stream()]


def grouped_launcher(kernel, threads: int, per_thread: int = 1):
    """The host ``launch(src, dst, n, *dims, stream)`` of ``kernel(src, dst, n, *groups(dims))``
    over ``n`` items, ``threads · per_thread`` items per CTA (a 1-D grid)."""
    per = threads * per_thread

    @cute.jit
    def launch(psrc: cute.Pointer, pdst: cute.Pointer, n: Int64, *rest):
        dims, stream = split_stream(rest)
        kernel(psrc, pdst, n, *groups(dims)).launch(
            grid=[Int32((n + per - 1) // per), 1, 1], block=[threads, 1, 1], smem=0,
            stream=stream)

    return launch


def gload(ptr, index):
    """``ptr[index]`` (global memory, scalar)."""
    return cute.make_tensor(ptr + Int64(index), cute.make_layout(1))[0]


def gstore(ptr, index, value):
    """``ptr[index] = value`` (global memory, scalar)."""
    t = cute.make_tensor(ptr + Int64(index), cute.make_layout(1))
    t[0] = value


def row_offset7(row, e, s):
    """Element offset of row ``row`` (Int64) over the 7 outer dims, extents ``e[0..6]``
    (row-major, unused leading dims 1), strides ``s[0..6]``."""
    rem = Int64(row)
    off = Int64(0)
    for d in range(6, 0, -1):
        q = rem // e[d]
        off = off + (rem - q * e[d]) * s[d]
        rem = q
    return off + rem * s[0]


def dims_args(n: int):
    """``n`` Int64 example scalars."""
    return [Int64(1)] * n
