"""max_unpool kernels (torch.nn.functional.max_unpool*d), 1-/2-/3-D padded in front to three
dims; ``e`` = (N, C, Id, Ih, Iw, Od, Oh, Ow) with I the pooled extents (x, dx) and O the unpooled
ones (y, dy); indices are int64 positions in the flattened unpooled plane ``(d·Oh + h)·Ow + w``.

``fw`` stage 0: one thread per element of ``y``, writing 0.  Stage 1: one thread per element of
``x``: ``y[n, c, idx] = x``; an index outside ``[0, Od·Oh·Ow)`` is skipped and sets
``status[0] = 1`` when ``has_status``.  Two elements with the same index race (the last writer
wins, in no defined order: torch's CUDA kernel has the same race).
``bw``: one thread per element of ``dx``: ``dx = dy[n, c, idx]`` (0 and the status flag for an
out-of-range index).  Deterministic; bit-exact copies; Int64 index math.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

from ....blocks.gmem import example_args, gload, gmem_ptr, gstore
from ....blocks.reduction_base import element_type
from ....blocks.image_index import decompose_ncdhw as decompose
from ..specs.unpool import GROUPS, UnpoolKnobs
from .pool_common import element_index
from .pool_extra import launcher4


def build(knobs: UnpoolKnobs):
    T = element_type(knobs.dtype)
    fw = knobs.direction == "fw"

    @cute.kernel
    def kernel(px: cute.Pointer, py: cute.Pointer, pidx: cute.Pointer, pst: cute.Pointer,
               n: Int64, e, xs, ys, js, fl):
        _, C, Id, Ih, Iw, Od, Oh, Ow = e
        cl, stage, has_status = fl
        i = element_index()
        if i < n:
            if cutlass.const_expr(fw):
                if stage == Int64(0):
                    b, c, od, oh, ow = decompose(i, C, Od, Oh, Ow, cl)
                    gstore(py, b * ys[0] + c * ys[1] + od * ys[2] + oh * ys[3] + ow * ys[4],
                           T(0.0))
                else:
                    b, c, zd, zh, zw = decompose(i, C, Id, Ih, Iw, cl)
                    j = Int64(gload(pidx, b * js[0] + c * js[1] + zd * js[2] + zh * js[3]
                                    + zw * js[4]))
                    if (j >= Int64(0)) & (j < Od * Oh * Ow):
                        ow = j % Ow
                        q = j // Ow
                        oh = q % Oh
                        od = q // Oh
                        v = gload(px, b * xs[0] + c * xs[1] + zd * xs[2] + zh * xs[3]
                                  + zw * xs[4])
                        gstore(py, b * ys[0] + c * ys[1] + od * ys[2] + oh * ys[3] + ow * ys[4],
                               v)
                    else:
                        if has_status != Int64(0):
                            gstore(pst, 0, Int32(1))
            else:
                b, c, zd, zh, zw = decompose(i, C, Id, Ih, Iw, cl)
                j = Int64(gload(pidx, b * js[0] + c * js[1] + zd * js[2] + zh * js[3]
                                + zw * js[4]))
                ok = (j >= Int64(0)) & (j < Od * Oh * Ow)
                jj = Int64(cutlass.select_(ok, j, Int64(0)))
                ow = jj % Ow
                q = jj // Ow
                oh = q % Oh
                od = q // Oh
                v = gload(py, b * ys[0] + c * ys[1] + od * ys[2] + oh * ys[3] + ow * ys[4])
                gstore(px, b * xs[0] + c * xs[1] + zd * xs[2] + zh * xs[3] + zw * xs[4],
                       T(cutlass.select_(ok, v, T(0.0))))
                if (j < Int64(0)) | (j >= Od * Oh * Ow):
                    if has_status != Int64(0):
                        gstore(pst, 0, Int32(1))

    isz = T.width // 8
    args = example_args([gmem_ptr(T, isz), gmem_ptr(T, isz), gmem_ptr(Int64, 8),
                         gmem_ptr(Int32, 4)], 1 + sum(GROUPS))
    return launcher4(kernel, GROUPS), args
