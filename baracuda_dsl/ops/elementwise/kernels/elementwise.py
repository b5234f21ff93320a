"""The elementwise kernel: loads up to four operands, applies one formula of the op table
(:mod:`.elementwise_ops`) and stores up to three outputs.

``flat`` path: every array operand is dense with the output's element count; thread ``t`` of block
``b`` handles vectors ``(b·ILP + j)·THREADS + t`` (``j < ILP``) of ``VEC`` elements, loaded with one
16-byte access each (all loads first, then the math, then the stores); the last partial vector is
done element by element.  ``s4`` / ``s8`` paths: each thread handles ``ILP`` elements of the dense
output index space, decomposed over the collapsed extents ``e[8-R..7]`` into per-operand offsets
(strides in elements, any sign, 0 = broadcast); ``s4`` does that in Int32.  Bit ``k`` of
``smask`` makes input ``k`` a scalar taken from the parameters ``f/g/i`` instead of memory.

The kernel takes one :class:`Group` per parameter group of the spec
(:func:`~..specs.elementwise.param_groups`: outputs, inputs, size, scalars, params, extents,
strides); a group the SKU does not take is passed as None."""

from __future__ import annotations

from typing import Optional

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Float64, Int32, Int64, const_expr

from ..specs.elementwise import (ILP, MAX_PARAMS, OUTPUTS, STRIDED_RANK as RANK, THREADS,
                                 ElementwiseKnobs, param_groups, scalar_slots, vec_width)
from . import elementwise_ops as ew
from .elementwise_bw import BACKWARD

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


class Group(tuple):
    """One parameter group of the kernel (:data:`~..specs.elementwise.GROUPS`): a tuple of DSL
    pointers / scalars.  Its ``str`` is how the DSL names those members passed one by one
    (joined by ``_``), so the kernel entry's mangled name, and with it the PTX, does not depend
    on how the parameters are grouped."""

    def __str__(self) -> str:
        return "_".join(str(v).replace(" ", "") for v in self)


def group(values) -> Optional[Group]:
    """``values`` as a Group; None (a static argument: no parameters) when there are none."""
    return Group(values) if values else None


_EXAMPLE = {"i32": Int32(0), "i64": Int64(0), "f64": Float64(0.0)}


def build(knobs: ElementwiseKnobs):
    """The SKU's host launcher and example arguments for ``cute.compile``: the launcher takes
    one :class:`Group` (or None) per parameter group of the spec, then the stream."""
    spec = knobs.spec
    dt = knobs.dtype
    ins, outs = knobs.in_dtypes, knobs.out_dtypes
    NIN, NOUT = spec.nin, spec.nout
    kind, ct, bits = kind_of(dt)
    okind, oct_, _ = kind_of(outs[0])
    fn = ew.FORWARD[spec.name] if spec.name in ew.FORWARD else BACKWARD[spec.name]
    VEC = vec_width(knobs)
    FLAT = knobs.path == "flat"
    VGROUP = knobs.path == "v4"
    UNIT = VEC if FLAT or VGROUP else 1  # elements per fragment column
    R = RANK if knobs.path == "s8" else 4  # dims the index math walks
    I = Int64 if knobs.path == "s8" else Int32
    pct = Float64 if ct is Float64 else Float32  # parameter compute type (floats)
    win = [WORDS.get(d, 1) for d in ins]
    wout = [WORDS.get(d, 1) for d in outs]

    SLOTS = scalar_slots(knobs)

    def scalar_operands(scalars):
        """(smask, f, g, i) of the ``scalars`` group (f / g / i: one value per slot)."""
        return (scalars[0],) + tuple(scalars[1 + q * SLOTS:1 + (q + 1) * SLOTS] for q in range(3))

    def float_params(params):
        """The ``params`` group padded with zeros to MAX_PARAMS (None: the SKU takes none)."""
        given = [] if params is None else list(params)
        return given + [0.0] * (MAX_PARAMS - len(given))

    def apply(fin, j, e, prm, put):
        """The op on element ``e`` of fragment column ``j``; ``put(k, words)`` takes output k."""
        vals = [to_compute(ins[k], [fin[k][e * win[k] + w, j] for w in range(win[k])])
                for k in range(NIN)]
        cx = ew.Ctx(kind, ct, bits, [pct(p) for p in prm], okind, oct_, STORAGE[dt],
                    STORAGE[outs[0]])
        res = fn(cx, *vals)
        for k in range(NOUT):
            put(k, from_compute(outs[k], res[k]))

    def into(fout, j, e):
        """A ``put`` writing output k's words into element ``e`` of its fragment column ``j``."""
        def put(k, ws):
            for w in range(wout[k]):
                fout[k][e * wout[k] + w, j] = ws[w]
        return put

    def store_to(outputs, offsets, valid):
        """A ``put`` storing output k's element at ``offsets[k]`` when ``valid``."""
        return lambda k, ws: store_elem(outputs[k], Int64(offsets[k]), valid, ws[0],
                                        ws[wout[k] - 1], wout[k])

    @cute.kernel
    def kernel(outputs: Group, inputs: Group, size: Group, scalars: Group,
               params: Optional[Group], extents: Optional[Group], strides: Optional[Group]):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        n = size[0]
        smask, sf, sg, si = scalar_operands(scalars)
        prm = float_params(params)
        # storage fragments: (words per element · UNIT, ILP) per operand
        fin = [cute.make_rmem_tensor(cute.make_layout((UNIT * win[k], ILP)), STORAGE[ins[k]])
               for k in range(NIN)]
        fout = [cute.make_rmem_tensor(cute.make_layout((UNIT * wout[k], ILP)), STORAGE[outs[k]])
                for k in range(NOUT)]
        if const_expr(FLAT):
            base = (Int64(bidx) * ILP) * THREADS + Int64(tidx)
            for k in cutlass.range_constexpr(NIN):
                W = win[k]
                sw = from_compute(ins[k], scalar_value(ins[k], sf[k], sg[k], si[k]))
                scal = ((smask >> k) & 1) != 0
                for j in cutlass.range_constexpr(ILP):
                    load_flat(inputs[k], fin[k], j, (base + j * THREADS) * VEC, n, scal, sw[0],
                              sw[W - 1], VEC, W)
            for j in cutlass.range_constexpr(ILP):
                for e in cutlass.range_constexpr(VEC):
                    apply(fin, j, e, prm, into(fout, j, e))
            for k in cutlass.range_constexpr(NOUT):
                for j in cutlass.range_constexpr(ILP):
                    store_flat(outputs[k], fout[k], j, (base + j * THREADS) * VEC, n, VEC,
                               wout[k])
        else:
            per_operand = [strides[q * RANK:(q + 1) * RANK] for q in range(len(strides) // RANK)]
            sout, sin_ = per_operand[:len(OUTPUTS)], per_operand[len(OUTPUTS):]
            ex = [I(extents[RANK - R + q]) for q in range(R)]
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
                ooff.append([offset(coords, sout[k][RANK - R:], I) for k in range(NOUT)])
                for k in cutlass.range_constexpr(NIN):
                    W = win[k]
                    sw = from_compute(ins[k], scalar_value(ins[k], sf[k], sg[k], si[k]))
                    scal = ((smask >> k) & 1) != 0
                    off = Int64(offset(coords, sin_[k][RANK - R:], I))
                    if const_expr(VGROUP):
                        inner0 = sin_[k][RANK - 1] == Int64(0)
                        load_group(inputs[k], fin[k], j, off, valid[j], inner0, scal, sw[0],
                                   sw[W - 1], VEC, W)
                    else:
                        load_elem(inputs[k], fin[k], j, off, valid[j], scal, sw[0], sw[W - 1],
                                  W)
            for j in cutlass.range_constexpr(ILP):
                for e in cutlass.range_constexpr(UNIT):
                    if const_expr(VGROUP):
                        apply(fin, j, e, prm, into(fout, j, e))
                    else:
                        apply(fin, j, e, prm, store_to(outputs, ooff[j], valid[j]))
                if const_expr(VGROUP):
                    for k in cutlass.range_constexpr(NOUT):
                        store_group(outputs[k], fout[k], j, Int64(ooff[j][k]), valid[j], VEC,
                                    wout[k])

    per_block = THREADS * ILP * UNIT

    @cute.jit
    def launch(outputs: Group, inputs: Group, size: Group, scalars: Group,
               params: Optional[Group], extents: Optional[Group], strides: Optional[Group],
               stream):
        kernel(outputs, inputs, size, scalars, params, extents, strides).launch(
            grid=[Int32((size[0] + per_block - 1) // per_block), 1, 1], block=[THREADS, 1, 1],
            smem=0, stream=stream)

    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def pointer(dts, k):
        """An example pointer to operand ``k`` of ``dts`` (bytes for unused slots)."""
        st = STORAGE[dts[k]] if k < len(dts) else cutlass.Uint8
        return make_ptr(st, 16, cute.AddressSpace.gmem,
                        assumed_align=16 if FLAT or VGROUP else st.width // 8)

    out_ptrs, in_ptrs, *numbers = param_groups(knobs)
    args = [group([pointer(outs, k) for k in range(len(out_ptrs))]),
            group([pointer(ins, k) for k in range(len(in_ptrs))])]
    args += [group([_EXAMPLE[p.kind] for p in g]) for g in numbers]
    return launch, args + [make_fake_stream()]
