"""Fractional max pooling backward.

``gather``: one thread per element of ``dx`` (N, C, Id, Ih, Iw), summing ``dy[o]`` over the
candidate outputs ``o`` (per dim :func:`.pool_extra.frac_candidates`, a superset of the windows
that can hold the element) whose saved index equals the element's flattened spatial index, in a
fixed order (d, h, w ascending): deterministic, no atomics.  Exact for indices written by the
forward (each lies in its output's window); an index outside its window is not gathered.

``atomic`` (the seed's scatter, three stages, one launch each): stage 0 zeroes the target (dx
itself for f32 / f64, the f32 workspace for f16 / bf16), stage 1 adds ``dy[o]`` at
``target[n, c, idx[o]]`` with atomic adds (one thread per output; out-of-range indices skipped),
stage 2 (half types) converts the workspace into ``dx``.  Non-deterministic (atomics).

Accumulation in f32 (f64 for f64); Int64 index math.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int64

from ....blocks.gmem import example_args, gload, gmem_ptr, gstore
from ....blocks.reduction_base import compute_type, element_type
from ....blocks.image_index import decompose_ncdhw as decompose
from ..specs.fractional import BW_GROUPS, FractionalBwKnobs
from .pool_common import element_index
from .pool_extra import frac_candidates, launcher4


def build(knobs: FractionalBwKnobs):
    T = element_type(knobs.dtype)
    CT = compute_type(knobs.dtype)
    gather = knobs.method == "gather"
    half = knobs.dtype in ("f16", "bf16")
    TT = CT if half else T          # the atomic target's element type

    @cute.kernel
    def kernel(pdy: cute.Pointer, pdx: cute.Pointer, pidx: cute.Pointer, pws: cute.Pointer,
               n: Int64, e, k, gs, js, xs, ts, fl):
        _, C, Id, Ih, Iw, Od, Oh, Ow = e
        kd, kh, kw = k
        cl, stage = fl
        i = element_index()
        if i < n:
            if cutlass.const_expr(gather):
                b, c, zd, zh, zw = decompose(i, C, Id, Ih, Iw, cl)
                fd, cd = frac_candidates(zd, Id, Od, kd)
                fh, ch = frac_candidates(zh, Ih, Oh, kh)
                fw, cw = frac_candidates(zw, Iw, Ow, kw)
                gbase = b * gs[0] + c * gs[1]
                jbase = b * js[0] + c * js[1]
                me = (zd * Ih + zh) * Iw + zw
                acc = CT(0.0)
                for a in cutlass.range(cd):
                    od = fd + a
                    for bb in cutlass.range(ch):
                        oh = fh + bb
                        grow = gbase + od * gs[2] + oh * gs[3]
                        jrow = jbase + od * js[2] + oh * js[3]
                        for cc in cutlass.range(cw):
                            ow = fw + cc
                            hit = Int64(gload(pidx, jrow + ow * js[4])) == me
                            g = CT(gload(pdy, grow + ow * gs[4]))
                            acc = acc + CT(cutlass.select_(hit, g, CT(0.0)))
                gstore(pdx, b * xs[0] + c * xs[1] + zd * xs[2] + zh * xs[3] + zw * xs[4], T(acc))
            else:
                tgt = pws if cutlass.const_expr(half) else pdx
                if stage == Int64(1):
                    b, c, od, oh, ow = decompose(i, C, Od, Oh, Ow, cl)
                    j = Int64(gload(pidx, b * js[0] + c * js[1] + od * js[2] + oh * js[3]
                                    + ow * js[4]))
                    if (j >= Int64(0)) & (j < Id * Ih * Iw):
                        zw = j % Iw
                        q = j // Iw
                        zh = q % Ih
                        zd = q // Ih
                        g = CT(gload(pdy, b * gs[0] + c * gs[1] + od * gs[2] + oh * gs[3]
                                     + ow * gs[4]))
                        off = b * ts[0] + c * ts[1] + zd * ts[2] + zh * ts[3] + zw * ts[4]
                        cute.arch.atomic_add((tgt + off).llvm_ptr, TT(g))
                else:
                    b, c, zd, zh, zw = decompose(i, C, Id, Ih, Iw, cl)
                    off = b * ts[0] + c * ts[1] + zd * ts[2] + zh * ts[3] + zw * ts[4]
                    if stage == Int64(0):
                        gstore(tgt, off, TT(0.0))
                    else:
                        gstore(pdx, b * xs[0] + c * xs[1] + zd * xs[2] + zh * xs[3]
                               + zw * xs[4], T(gload(tgt, off)))

    isz = T.width // 8
    args = example_args([gmem_ptr(T, isz), gmem_ptr(T, isz), gmem_ptr(Int64, 8),
                         gmem_ptr(CT, CT.width // 8)], 1 + sum(BW_GROUPS))
    return launcher4(kernel, BW_GROUPS), args
