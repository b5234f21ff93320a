"""Gather / scatter along one axis (torch.gather, take_along_axis, scatter, scatter_add,
scatter_reduce).  For every coordinate ``c`` of the index shape (``n`` elements, decomposed
row-major over the extents ``d[8-R..7]``)

    j = idx[Σ c_k·is_k];  j += m if j < 0;  A = a + Σ c_k·as_k + j·asa;  B = b + Σ c_k·bs_k
    gather:  *B = *A             (*B = 0, all bits, when j is bad)
    assign:  *A = *B             zero: *A = 0      add / amax / amin: atomic *A op= *B

(``as_axis`` is 0: the plan passes the indexed operand's axis stride as ``asa``.)  A bad ``j``
(outside [0, m) after the wrap) is skipped by the scatters and sets ``status[0] = 1`` when
``has_status != 0``.  Copy modes move opaque ``itemsize`` words (dtype-agnostic); the atomic
modes work on the element dtype: add (f32, f64, f16, bf16, i32, i64: ``red.global.add``),
amax / amin (i32, i64 integer atomics; f32 through the DSL's bit-cast float max / min).  The
coordinate decomposition runs in Int32 when ``wide == 0`` (n < 2^31); offsets are Int64.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, const_expr

from ....blocks.gmem import WORD, example_args, gmem_ptr, groups, split_stream
from ..specs.indexing import AXIS_THREADS as THREADS, GatherAxisKnobs

ELEM = {"f32": cutlass.Float32, "f64": cutlass.Float64, "f16": cutlass.Float16,
        "bf16": cutlass.BFloat16, "i32": Int32, "i64": Int64}


def build(knobs: GatherAxisKnobs):
    mode = knobs.mode
    R = knobs.rank
    I = Int64 if knobs.wide else Int32
    IX = Int32 if knobs.index == "i32" else Int64
    copy = mode in ("gather", "assign", "zero")
    T = WORD[knobs.itemsize] if copy else ELEM[knobs.dtype]
    is_float = knobs.dtype in ("f32", "f64", "f16", "bf16")

    @cute.kernel
    def kernel(pa: cute.Pointer, pidx: cute.Pointer, pb: cute.Pointer, pst: cute.Pointer,
               has_status: Int32, n: Int64, m: Int64, asa: Int64, dd, sa, si, sb):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        ext = [I(dd[8 - R + k]) for k in range(R)]
        i = I(bidx) * I(THREADS) + I(tidx)
        if i < I(n):
            rem = i
            offa = Int64(0)
            offi = Int64(0)
            offb = Int64(0)
            for k in cutlass.range_constexpr(R - 1, 0, -1):
                q = rem // ext[k]
                c = Int64(rem - q * ext[k])
                offa = offa + c * sa[8 - R + k]
                offi = offi + c * si[8 - R + k]
                offb = offb + c * sb[8 - R + k]
                rem = q
            c0 = Int64(rem)
            offa = offa + c0 * sa[8 - R]
            offi = offi + c0 * si[8 - R]
            offb = offb + c0 * sb[8 - R]
            j = Int64(cute.make_tensor(pidx + offi, cute.make_layout(1))[0])
            j = cutlass.select_(j < Int64(0), j + m, j)
            ok = (j >= Int64(0)) & (j < m)
            if ok:
                ga = cute.make_tensor(pa + (offa + j * asa), cute.make_layout(1))
                if const_expr(mode == "gather"):
                    cute.make_tensor(pb + offb, cute.make_layout(1))[0] = ga[0]
                elif const_expr(mode == "assign"):
                    ga[0] = cute.make_tensor(pb + offb, cute.make_layout(1))[0]
                elif const_expr(mode == "zero"):
                    ga[0] = T(Int32(0) * Int32(tidx))
                else:
                    v = cute.make_tensor(pb + offb, cute.make_layout(1))[0]
                    pe = pa + (offa + j * asa)
                    if const_expr(mode == "add"):
                        cute.arch.atomic_add(pe.llvm_ptr, v)
                    elif const_expr(mode == "amax"):
                        if const_expr(is_float):
                            cute.arch.atomic_fmax(pe.llvm_ptr, v)
                        else:
                            cute.arch.atomic_max(pe.llvm_ptr, v)
                    else:
                        if const_expr(is_float):
                            cute.arch.atomic_fmin(pe.llvm_ptr, v)
                        else:
                            cute.arch.atomic_min(pe.llvm_ptr, v)
            else:
                if const_expr(mode == "gather"):
                    cute.make_tensor(pb + offb, cute.make_layout(1))[0] = T(Int32(0) * Int32(tidx))
                if has_status != Int32(0):
                    cute.make_tensor(pst, cute.make_layout(1))[0] = Int32(1)

    @cute.jit
    def launch(pa: cute.Pointer, pidx: cute.Pointer, pb: cute.Pointer, pst: cute.Pointer,
               has_status: Int32, n: Int64, m: Int64, asa: Int64, *rest):
        dims, stream = split_stream(rest)
        kernel(pa, pidx, pb, pst, has_status, n, m, asa, *groups(dims)).launch(
            grid=[Int32((n + THREADS - 1) // THREADS), 1, 1], block=[THREADS, 1, 1], smem=0,
            stream=stream)

    isz = knobs.itemsize
    ptrs = [gmem_ptr(T, isz), gmem_ptr(IX, IX.width // 8), gmem_ptr(T, isz), gmem_ptr(Int32, 4),
            Int32(0)]
    return launch, example_args(ptrs, 35)
