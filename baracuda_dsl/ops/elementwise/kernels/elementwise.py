"""The elementwise kernel: loads up to four operands, applies one formula of the op table
(:mod:`.elementwise_ops`) and stores up to three outputs.

``flat`` path: every array operand is dense with the output's element count; thread ``t`` of block
``b`` handles vectors ``(b·ILP + j)·THREADS + t`` (``j < ILP``) of ``VEC`` elements, loaded with one
16-byte access each (all loads first, then the math, then the stores); the last partial vector is
done element by element.  ``s4`` / ``s8`` paths: each thread handles ``ILP`` elements of the dense
output index space, decomposed over the collapsed extents ``e[8-R..7]`` into per-operand offsets
(strides in elements, any sign, 0 = broadcast); ``s4`` does that in Int32.  Bit ``k`` of
``smask`` makes input ``k`` a scalar taken from the parameters ``f/g/i`` instead of memory.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Float64, Int32, Int64, const_expr

from ..specs.elementwise import ILP, OPS, THREADS, vec_width
from . import elementwise_ops as ew

STORAGE = {"bool": cutlass.Uint8, "i8": cutlass.Int8, "i16": cutlass.Int16, "i32": cutlass.Int32,
           "i64": cutlass.Int64, "u8": cutlass.Uint8, "u16": cutlass.Uint16,
           "u32": cutlass.Uint32, "u64": cutlass.Uint64, "f16": cutlass.Float16,
           "bf16": cutlass.BFloat16, "f32": Float32, "f64": Float64, "c64": Float32,
           "c128": Float64, "fp8e4m3": cutlass.Float8E4M3FN, "fp8e5m2": cutlass.Float8E5M2}
WORDS = {"c64": 2, "c128": 2}
_INT_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}


def kind_of(dt: str):
    """(kind letter, compute type, integer bits) of a dtype short name."""
    if dt == "bool":
        return "b", cutlass.Boolean, 1
    if dt in _INT_BITS:
        return dt[0], STORAGE[dt], _INT_BITS[dt]
    if dt in ("c64", "c128"):
        return "c", STORAGE[dt], 0
    return "f", (Float64 if dt == "f64" else Float32), 0


def to_compute(dt: str, words):
    """Storage words of one element → the op-table value (see elementwise_ops)."""
    kind, ct, _ = kind_of(dt)
    if kind == "b":
        return words[0] != cutlass.Uint8(0)
    if kind == "c":
        return (ct(words[0]), ct(words[1]))
    if kind == "f":
        return ct(words[0])
    return words[0]


def from_compute(dt: str, value):
    """Op-table value → the storage words of one element of dtype ``dt``."""
    kind, _, _ = kind_of(dt)
    st = STORAGE[dt]
    if kind == "b":
        return [st(cutlass.select_(value, st(1), st(0)))]
    if kind == "c":
        return [st(value[0]), st(value[1])]
    return [st(value)]


def scalar_value(dt: str, f, g, i):
    """The op-table value of a scalar operand passed by value (f: float part, g: imaginary part,
    i: integer / bool part)."""
    kind, ct, _ = kind_of(dt)
    if kind == "b":
        return i != Int64(0)
    if kind in "iu":
        return ct(i)
    if kind == "c":
        return (ct(f), ct(g))
    return ct(f)


def offset(coords, strides, I):
    """Σ coords[q]·strides[q] in the index type ``I`` (trace-time helper)."""
    off = I(0)
    for q in range(len(coords)):
        off = off + coords[q] * I(strides[q])
    return off


@cute.jit
def load_flat(p, frag, j: cutlass.Constexpr, e0, n, scal, s0, s1, VEC: cutlass.Constexpr,
              W: cutlass.Constexpr):
    """frag[:, j] = the VEC elements at element index e0 (one 16-byte access when the vector is
    whole, element-wise past the end), or the scalar (s0, s1) broadcast when ``scal``."""
    if scal:
        for e in cutlass.range_constexpr(VEC):
            frag[e * W, j] = s0
            if const_expr(W == 2):
                frag[e * W + 1, j] = s1
    else:
        if e0 + VEC <= n:
            g = cute.make_tensor(p + cute.assume(e0 * W, divby=VEC * W),
                                 cute.make_layout(VEC * W))
            cute.autovec_copy(g, frag[None, j])
        elif e0 < n:
            for e in cutlass.range_constexpr(VEC):
                if e0 + e < n:
                    for w in cutlass.range_constexpr(W):
                        g1 = cute.make_tensor(p + (e0 + e) * W + w, cute.make_layout(1))
                        frag[e * W + w, j] = g1[0]


@cute.jit
def store_flat(p, frag, j: cutlass.Constexpr, e0, n, VEC: cutlass.Constexpr,
               W: cutlass.Constexpr):
    """The VEC elements at element index e0 = frag[:, j] (predicated past the end)."""
    if e0 + VEC <= n:
        g = cute.make_tensor(p + cute.assume(e0 * W, divby=VEC * W), cute.make_layout(VEC * W))
        cute.autovec_copy(frag[None, j], g)
    elif e0 < n:
        for e in cutlass.range_constexpr(VEC):
            if e0 + e < n:
                for w in cutlass.range_constexpr(W):
                    g1 = cute.make_tensor(p + (e0 + e) * W + w, cute.make_layout(1))
                    g1[0] = frag[e * W + w, j]


def decompose(i, ex, I):
    """Row-major coordinates of the dense index ``i`` over the extents ``ex`` (trace-time)."""
    R = len(ex)
    coords = [None] * R
    rem = i
    for q in range(R - 1, 0, -1):
        qq = rem // ex[q]
        coords[q] = rem - qq * ex[q]
        rem = qq
    coords[0] = rem
    return coords


@cute.jit
def load_group(p, frag, j: cutlass.Constexpr, off, valid, inner0, scal, s0, s1,
               VEC: cutlass.Constexpr, W: cutlass.Constexpr):
    """frag[:, j] = VEC consecutive elements at offset ``off`` (one 16-byte access), the element
    at ``off`` repeated when the operand's innermost stride is 0, or the scalar."""
    if scal:
        for e in cutlass.range_constexpr(VEC):
            frag[e * W, j] = s0
            if const_expr(W == 2):
                frag[e * W + 1, j] = s1
    elif valid:
        if inner0:
            g1 = cute.make_tensor(p + off * W, cute.make_layout(W))
            for e in cutlass.range_constexpr(VEC):
                for w in cutlass.range_constexpr(W):
                    frag[e * W + w, j] = g1[w]
        else:
            g = cute.make_tensor(p + cute.assume(off * W, divby=VEC * W),
                                 cute.make_layout(VEC * W))
            cute.autovec_copy(g, frag[None, j])


@cute.jit
def store_group(p, frag, j: cutlass.Constexpr, off, valid, VEC: cutlass.Constexpr,
                W: cutlass.Constexpr):
    """VEC consecutive elements at offset ``off`` = frag[:, j] (one 16-byte access)."""
    if valid:
        g = cute.make_tensor(p + cute.assume(off * W, divby=VEC * W), cute.make_layout(VEC * W))
        cute.autovec_copy(frag[None, j], g)


@cute.jit
def load_elem(p, frag, j: cutlass.Constexpr, off, valid, scal, s0, s1, W: cutlass.Constexpr):
    """frag[:, j] = the element at offset ``off`` (or the scalar when ``scal``)."""
    if scal:
        frag[0, j] = s0
        if const_expr(W == 2):
            frag[1, j] = s1
    elif valid:
        for w in cutlass.range_constexpr(W):
            g1 = cute.make_tensor(p + off * W + w, cute.make_layout(1))
            frag[w, j] = g1[0]


@cute.jit
def store_elem(p, off, valid, s0, s1, W: cutlass.Constexpr):
    """Store one element (words s0[, s1]) at offset ``off`` when ``valid``."""
    if valid:
        g0 = cute.make_tensor(p + off * W, cute.make_layout(1))
        g0[0] = s0
        if const_expr(W == 2):
            g1 = cute.make_tensor(p + off * W + 1, cute.make_layout(1))
            g1[0] = s1


def build(knobs: dict):
    spec = OPS[knobs["op"]]
    dt = knobs["dtype"]
    path = knobs["path"]
    ins = spec.in_dtypes(dt)
    outs = spec.out_dtypes(dt, knobs.get("out"))
    NIN, NOUT = spec.nin, spec.nout
    kind, ct, bits = kind_of(dt)
    okind, oct_, _ = kind_of(outs[0])
    fn = ew.FORWARD[spec.name] if spec.name in ew.FORWARD else __import__(
        "baracuda_dsl.ops.elementwise.kernels.elementwise_bw", fromlist=["BACKWARD"]).BACKWARD[spec.name]
    VEC = vec_width(knobs)
    FLAT = path == "flat"
    VGROUP = path == "v4"
    UNIT = VEC if VGROUP else 1  # elements per thread-level unit on the strided paths
    R = 8 if path == "s8" else 4
    I = Int64 if path == "s8" else Int32
    pct = Float64 if ct is Float64 else Float32  # parameter compute type (floats)

    def formula(vals, p0, p1, p2):
        cx = ew.Ctx(kind, ct, bits, [pct(p0), pct(p1), pct(p2)], okind, oct_, STORAGE[dt],
                    STORAGE[outs[0]])
        return fn(cx, *vals)

    @cute.kernel
    def kernel(o0: cute.Pointer, o1: cute.Pointer, o2: cute.Pointer, a: cute.Pointer,
               b: cute.Pointer, c: cute.Pointer, d: cute.Pointer, n: Int64, smask: Int32,
               fa: Float64, fb: Float64, fc: Float64, fd: Float64,
               ga: Float64, gb: Float64, gc: Float64, gd: Float64,
               ia: Int64, ib: Int64, ic: Int64, id_: Int64, p0: Float64, p1: Float64,
               p2: Float64,
               e0: Int64, e1: Int64, e2: Int64, e3: Int64, e4: Int64, e5: Int64, e6: Int64,
               e7: Int64,
               so00: Int64, so01: Int64, so02: Int64, so03: Int64, so04: Int64, so05: Int64,
               so06: Int64, so07: Int64,
               so10: Int64, so11: Int64, so12: Int64, so13: Int64, so14: Int64, so15: Int64,
               so16: Int64, so17: Int64,
               so20: Int64, so21: Int64, so22: Int64, so23: Int64, so24: Int64, so25: Int64,
               so26: Int64, so27: Int64,
               sa0: Int64, sa1: Int64, sa2: Int64, sa3: Int64, sa4: Int64, sa5: Int64,
               sa6: Int64, sa7: Int64,
               sb0: Int64, sb1: Int64, sb2: Int64, sb3: Int64, sb4: Int64, sb5: Int64,
               sb6: Int64, sb7: Int64,
               sc0: Int64, sc1: Int64, sc2: Int64, sc3: Int64, sc4: Int64, sc5: Int64,
               sc6: Int64, sc7: Int64,
               sd0: Int64, sd1: Int64, sd2: Int64, sd3: Int64, sd4: Int64, sd5: Int64,
               sd6: Int64, sd7: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        pin = [a, b, c, d]
        pout = [o0, o1, o2]
        sf = [fa, fb, fc, fd]
        sg = [ga, gb, gc, gd]
        si = [ia, ib, ic, id_]
        # storage fragments: (words per element · VEC, ILP) per operand
        fin = [cute.make_rmem_tensor(
            cute.make_layout(((VEC if FLAT or VGROUP else 1) * WORDS.get(ins[k], 1), ILP)),
            STORAGE[ins[k]]) for k in range(NIN)]
        fout = [cute.make_rmem_tensor(
            cute.make_layout(((VEC if FLAT or VGROUP else 1) * WORDS.get(outs[k], 1), ILP)),
            STORAGE[outs[k]]) for k in range(NOUT)]
        if const_expr(FLAT):
            base = (Int64(bidx) * ILP) * THREADS + Int64(tidx)
            for k in cutlass.range_constexpr(NIN):
                W = WORDS.get(ins[k], 1)
                sw = from_compute(ins[k], scalar_value(ins[k], sf[k], sg[k], si[k]))
                scal = ((smask >> k) & 1) != 0
                for j in cutlass.range_constexpr(ILP):
                    load_flat(pin[k], fin[k], j, (base + j * THREADS) * VEC, n, scal, sw[0],
                              sw[W - 1], VEC, W)
            for j in cutlass.range_constexpr(ILP):
                for e in cutlass.range_constexpr(VEC):
                    vals = [to_compute(ins[k], [fin[k][e * WORDS.get(ins[k], 1) + w, j]
                                                for w in range(WORDS.get(ins[k], 1))])
                            for k in range(NIN)]
                    res = formula(vals, p0, p1, p2)
                    for k in cutlass.range_constexpr(NOUT):
                        W = WORDS.get(outs[k], 1)
                        ws = from_compute(outs[k], res[k])
                        for w in cutlass.range_constexpr(W):
                            fout[k][e * W + w, j] = ws[w]
            for k in cutlass.range_constexpr(NOUT):
                for j in cutlass.range_constexpr(ILP):
                    store_flat(pout[k], fout[k], j, (base + j * THREADS) * VEC, n, VEC,
                               WORDS.get(outs[k], 1))
        else:
            ext = [e0, e1, e2, e3, e4, e5, e6, e7]
            sin_ = [[sa0, sa1, sa2, sa3, sa4, sa5, sa6, sa7],
                    [sb0, sb1, sb2, sb3, sb4, sb5, sb6, sb7],
                    [sc0, sc1, sc2, sc3, sc4, sc5, sc6, sc7],
                    [sd0, sd1, sd2, sd3, sd4, sd5, sd6, sd7]]
            sout = [[so00, so01, so02, so03, so04, so05, so06, so07],
                    [so10, so11, so12, so13, so14, so15, so16, so17],
                    [so20, so21, so22, so23, so24, so25, so26, so27]]
            ex = [I(ext[8 - R + q]) for q in range(R)]
            base = I(bidx) * I(ILP * THREADS) + I(tidx)
            if const_expr(VGROUP):
                # v4: thread-level unit = a group of VEC consecutive elements of one row
                nn = I(n) // I(VEC)
            else:
                nn = I(n)
            valid = [base + I(j * THREADS) < nn for j in range(ILP)]
            ooff = []
            for j in cutlass.range_constexpr(ILP):
                # coordinates of the unit's first element (0 for units past the end)
                first = I(cutlass.select_(valid[j], base + I(j * THREADS), I(0)))
                if const_expr(VGROUP):
                    first = first * I(VEC)
                coords = decompose(first, ex, I)
                ooff.append([offset(coords, sout[k][8 - R:], I) for k in range(NOUT)])
                for k in cutlass.range_constexpr(NIN):
                    W = WORDS.get(ins[k], 1)
                    sw = from_compute(ins[k], scalar_value(ins[k], sf[k], sg[k], si[k]))
                    scal = ((smask >> k) & 1) != 0
                    off = Int64(offset(coords, sin_[k][8 - R:], I))
                    if const_expr(VGROUP):
                        load_group(pin[k], fin[k], j, off, valid[j], sin_[k][7] == Int64(0),
                                   scal, sw[0], sw[W - 1], VEC, W)
                    else:
                        load_elem(pin[k], fin[k], j, off, valid[j], scal, sw[0], sw[W - 1], W)
            for j in cutlass.range_constexpr(ILP):
                for e in cutlass.range_constexpr(UNIT):
                    vals = [to_compute(ins[k], [fin[k][e * WORDS.get(ins[k], 1) + w, j]
                                                for w in range(WORDS.get(ins[k], 1))])
                            for k in range(NIN)]
                    res = formula(vals, p0, p1, p2)
                    for k in cutlass.range_constexpr(NOUT):
                        W = WORDS.get(outs[k], 1)
                        ws = from_compute(outs[k], res[k])
                        if const_expr(VGROUP):
                            for w in cutlass.range_constexpr(W):
                                fout[k][e * W + w, j] = ws[w]
                        else:
                            store_elem(pout[k], Int64(ooff[j][k]), valid[j], ws[0], ws[W - 1],
                                       W)
                if const_expr(VGROUP):
                    for k in cutlass.range_constexpr(NOUT):
                        store_group(pout[k], fout[k], j, Int64(ooff[j][k]), valid[j], VEC,
                                    WORDS.get(outs[k], 1))

    per_block = THREADS * ILP * (VEC if FLAT or VGROUP else 1)

    @cute.jit
    def launch(o0: cute.Pointer, o1: cute.Pointer, o2: cute.Pointer, a: cute.Pointer,
               b: cute.Pointer, c: cute.Pointer, d: cute.Pointer, n: Int64, smask: Int32,
               fa: Float64, fb: Float64, fc: Float64, fd: Float64,
               ga: Float64, gb: Float64, gc: Float64, gd: Float64,
               ia: Int64, ib: Int64, ic: Int64, id_: Int64, p0: Float64, p1: Float64,
               p2: Float64,
               e0: Int64, e1: Int64, e2: Int64, e3: Int64, e4: Int64, e5: Int64, e6: Int64,
               e7: Int64,
               so00: Int64, so01: Int64, so02: Int64, so03: Int64, so04: Int64, so05: Int64,
               so06: Int64, so07: Int64,
               so10: Int64, so11: Int64, so12: Int64, so13: Int64, so14: Int64, so15: Int64,
               so16: Int64, so17: Int64,
               so20: Int64, so21: Int64, so22: Int64, so23: Int64, so24: Int64, so25: Int64,
               so26: Int64, so27: Int64,
               sa0: Int64, sa1: Int64, sa2: Int64, sa3: Int64, sa4: Int64, sa5: Int64,
               sa6: Int64, sa7: Int64,
               sb0: Int64, sb1: Int64, sb2: Int64, sb3: Int64, sb4: Int64, sb5: Int64,
               sb6: Int64, sb7: Int64,
               sc0: Int64, sc1: Int64, sc2: Int64, sc3: Int64, sc4: Int64, sc5: Int64,
               sc6: Int64, sc7: Int64,
               sd0: Int64, sd1: Int64, sd2: Int64, sd3: Int64, sd4: Int64, sd5: Int64,
               sd6: Int64, sd7: Int64, stream):
        kernel(o0, o1, o2, a, b, c, d, n, smask, fa, fb, fc, fd, ga, gb, gc, gd, ia, ib, ic,
               id_, p0, p1, p2, e0, e1, e2, e3, e4, e5, e6, e7,
               so00, so01, so02, so03, so04, so05, so06, so07,
               so10, so11, so12, so13, so14, so15, so16, so17,
               so20, so21, so22, so23, so24, so25, so26, so27,
               sa0, sa1, sa2, sa3, sa4, sa5, sa6, sa7, sb0, sb1, sb2, sb3, sb4, sb5, sb6, sb7,
               sc0, sc1, sc2, sc3, sc4, sc5, sc6, sc7, sd0, sd1, sd2, sd3, sd4, sd5, sd6,
               sd7).launch(grid=[Int32((n + per_block - 1) // per_block), 1, 1],
                           block=[THREADS, 1, 1], smem=0, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(dts, k):
        st = STORAGE[dts[k]] if k < len(dts) else cutlass.Uint8
        return make_ptr(st, 16, cute.AddressSpace.gmem, assumed_align=16 if FLAT or VGROUP else (
            STORAGE[dts[k]].width // 8 if k < len(dts) else 1))

    args = ([ptr(outs, k) for k in range(3)] + [ptr(ins, k) for k in range(4)] +
            [Int64(1), Int32(0)] + [Float64(0.0)] * 8 + [Int64(0)] * 4 + [Float64(0.0)] * 3 +
            [Int64(1)] * 8 + [Int64(0)] * 56 + [make_fake_stream()])
    return launch, args
