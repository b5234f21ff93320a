"""Device helpers the flash-attention kernels share (the forwards ``flash_fwd`` /
``flash_fwd_sm90``, the backwards ``flash_bwd_dkdv`` / ``flash_bwd_dq`` / ``flash_bwd_sm90``):
element types, swizzled tiles and their ``cp.async`` copies, mma.sync fragment views, quad
reductions, sequence bounds, visible tile ranges, the block-mask test, predicated tile loads,
the score constants, the per-row statistics (lse, delta) and the recomputation of P and dS
from the scores.

Conventions are the forward's (``flash_fwd.py``): scores in base-2 units
t = scale·log2 e·q·k (softcap c: c·log2 e·tanh(scale·q·k / c)), minus slope·log2 e·|i + off − j|
(ALiBi), −∞ outside  i + off − left <= j <= i + off + right  (a negative bound is open) and past
the key sequence.
"""

# no ``from __future__ import annotations``: the DSL reads annotations as types

import math
from types import SimpleNamespace

import cutlass
import cutlass.cute as cute
from cutlass import Boolean, Float32, Int32, Int64, Uint64

from ....blocks.sm90.invariant import LoopInvariant
from ....blocks.philox import philox_block
from ..specs.flash import ALIBI, BOTTOM_RIGHT, SOFTCAP, VARLEN



TYPES = {"f16": cutlass.Float16, "bf16": cutlass.BFloat16}
LOG2E = math.log2(math.e)
LN2 = math.log(2.0)


def atom_width(d: int) -> int:
    """Columns of the shared-memory swizzle atom of a (rows, d) 16-bit tile."""
    return 64 if d % 64 == 0 else 32


def smem_tile(rows: int, d: int):
    """Swizzled (rows, d) layout of a 16-bit tile (atoms of 8 × 64 | 32): bank-conflict-free
    ``ldmatrix`` reads and 16-byte ``cp.async`` writes (inside a kernel trace)."""
    kb = atom_width(d)
    atom = cute.make_composed_layout(cute.make_swizzle(3 if kb == 64 else 2, 3, 3), 0,
                                     cute.make_layout((8, kb), stride=(kb, 1)))
    return cute.tile_to_shape(atom, (rows, d), (0, 1))


def g2s_copy(T, kb: int, threads: int):
    """16-byte ``cp.async`` tiled copy of a (rows, d) tile: kb / 8 threads along a row."""
    atom = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp(
        cache_mode=cute.nvgpu.LoadCacheMode.GLOBAL), T, num_bits_per_copy=128)
    tk = kb // 8
    return cute.make_tiled_copy_tv(atom, cute.make_layout((threads // tk, tk), stride=(tk, 1)),
                                   cute.make_layout((1, 8)))


def mn_view(t):
    """(rows, cols) view of an m16n8 accumulator fragment ((2, 2), MMA_M, MMA_N): rows =
    (row half, MMA_M), cols = (column pair, MMA_N)."""
    lay = cute.make_layout(t.layout.shape)
    mn = cute.make_layout(((lay.shape[0][1], lay.shape[1]), (lay.shape[0][0], lay.shape[2])),
                          stride=((lay.stride[0][1], lay.stride[1]),
                                  (lay.stride[0][0], lay.stride[2])))
    return cute.make_tensor(t.iterator, cute.composition(t.layout, mn))


def a_view(p):
    """The A-operand view ((2, 2, 2), MMA_M, MMA_N / 2) of an m16n8 accumulator-shaped fragment
    (P as the A operand of O += P·V: two n8 accumulator tiles make one k16 A tile)."""
    d = cute.logical_divide(p.layout, (None, None, 2))
    lay = cute.make_layout(((d.shape[0], d.shape[2][0]), d.shape[1], d.shape[2][1]),
                           stride=((d.stride[0], d.stride[2][0]), d.stride[1], d.stride[2][1]))
    return cute.make_tensor(p.iterator, lay)


def quad_reduce(v, op):
    """Reduce over the 4 threads of a quad (they hold one row of an m16n8 fragment)."""
    v = op(v, cute.arch.shuffle_sync_bfly(v, offset=2))
    return op(v, cute.arch.shuffle_sync_bfly(v, offset=1))


@cute.jit
def seq_bounds(pcu: cute.Pointer, b: Int32, flags: Int32, n_fixed: Int32):
    """(first row, rows) of batch entry b: from cu_seqlens when VARLEN, else (0, n_fixed)."""
    start = Int32(0)
    n = n_fixed
    if (flags & VARLEN) != 0:
        cu = cute.make_tensor(pcu + b, cute.make_layout(2))
        start = cu[0]
        n = cu[1] - cu[0]
    return start, n


def staged_tile(rows: int, d: int, stages: int):
    """(rows, d, stages) shared-memory layout: ``stages`` copies of the forward's swizzled
    ``smem_tile(rows, d)`` one after the other (inside a kernel trace)."""
    kb = atom_width(d)
    atom = cute.make_composed_layout(cute.make_swizzle(3 if kb == 64 else 2, 3, 3), 0,
                                     cute.make_layout((8, kb), stride=(kb, 1)))
    return cute.tile_to_shape(atom, (rows, d, stages), (0, 1, 2))


@cute.jit
def key_tile_range(m0: Int32, row_hi: Int32, nk: Int32, off: Int32, left: Int32, right: Int32,
                   bn: cutlass.Constexpr):
    """[n_start, n_end): the key tiles (bn rows) that query rows m0 … row_hi can see."""
    n_end = (nk + bn - 1) // bn
    if right >= 0:
        n_end = cutlass.min(n_end, cutlass.max(row_hi + off + right + bn, 0) // bn)
    n_start = Int32(0)
    if left >= 0:
        n_start = cutlass.max(m0 + off - left, 0) // bn
    return n_start, n_end


@cute.jit
def query_tile_range(c0: Int32, c_hi: Int32, nq: Int32, off: Int32, left: Int32, right: Int32,
                     bm: cutlass.Constexpr):
    """[m_start, m_end): the query tiles (bm rows) with a row that sees a key of c0 … c_hi
    (row i sees key j iff j − off − right <= i <= j − off + left)."""
    m_end = (nq + bm - 1) // bm
    if left >= 0:
        m_end = cutlass.min(m_end, cutlass.max(c_hi - off + left + bm, 0) // bm)
    m_start = Int32(0)
    if right >= 0:
        m_start = cutlass.max(c0 - off - right, 0) // bm
    return m_start, m_end


@cute.jit
def need_mask(m0: Int32, row_hi: Int32, c0: Int32, nk: Int32, off: Int32, left: Int32,
              right: Int32, bn: cutlass.Constexpr):
    """Whether the (query rows m0 … row_hi) × (key tile c0 … c0 + bn − 1) block has a masked
    element: the tile crosses the key sequence's end or a window bound (uniform per CTA)."""
    c1 = c0 + bn - 1
    m = cute.elem_less(nk - 1, c1)
    if right >= 0:
        m = m | cute.elem_less(m0 + off + right, c1)
    if left >= 0:
        m = m | cute.elem_less(c0, row_hi + off - left)
    return m


@cute.jit
def copy_rows(g2s: cute.TiledCopy, src: cute.Tensor, dst: cute.Tensor, coords: cute.Tensor,
              n: Int32):
    """``cp.async`` the rows of a (rows, d) tile partition whose row index is below n; zero the
    shared-memory rows past it."""
    for r in cutlass.range_constexpr(cute.size(dst, mode=[1])):
        if cute.elem_less(coords[0, r, 0][0], n):
            cute.copy(g2s, src[None, r, None], dst[None, r, None])
        else:
            dst[None, r, None].fill(0)


@cute.jit
def load_tile(g2s: cute.TiledCopy, thr, ptr: cute.Pointer, row_stride, n: Int32,
              rows: cutlass.Constexpr, d: cutlass.Constexpr, tile: Int32, dst: cute.Tensor,
              coords: cute.Tensor):
    """``cp.async`` tile ``tile`` (rows × d) of the (n, d) matrix at ptr (16-byte aligned, row
    stride a multiple of 8 elements) into the shared-memory partition dst; rows past n zeroed.
    ``thr`` is g2s's slice of this thread, coords the partition of the tile's identity."""
    m = cute.make_tensor(ptr.align(16), cute.make_layout((n, d), stride=(row_stride, 1)))
    copy_rows(g2s, thr.partition_S(cute.local_tile(m, (rows, d), (tile, 0))), dst, coords, n)


@cute.jit
def smem_gemm(mma: cute.TiledMma, acc: cute.Tensor, cpa: cute.TiledCopy, tas: cute.Tensor,
              tar: cute.Tensor, ra: cute.Tensor, cpb: cute.TiledCopy, tbs: cute.Tensor,
              tbr: cute.Tensor, rb: cute.Tensor):
    """acc += A·Bᵀ over the k blocks of shared-memory operands: ``ldmatrix`` of block k + 1
    while block k multiplies."""
    nkb = cute.size(tas, mode=[2])
    cute.copy(cpa, tas[None, None, 0], tar[None, None, 0])
    cute.copy(cpb, tbs[None, None, 0], tbr[None, None, 0])
    for kk in cutlass.range_constexpr(nkb):
        if cutlass.const_expr(kk + 1 < nkb):
            cute.copy(cpa, tas[None, None, kk + 1], tar[None, None, kk + 1])
            cute.copy(cpb, tbs[None, None, kk + 1], tbr[None, None, kk + 1])
        cute.gemm(mma, acc, ra[None, None, kk], rb[None, None, kk], acc)


@cute.jit
def reg_a_gemm(mma: cute.TiledMma, acc: cute.Tensor, ra: cute.Tensor, cpb: cute.TiledCopy,
               tbs: cute.Tensor, tbr: cute.Tensor, rb: cute.Tensor):
    """acc += A·Bᵀ with A already in registers (an A-operand view of a converted accumulator)."""
    nkb = cute.size(ra, mode=[2])
    cute.copy(cpb, tbs[None, None, 0], tbr[None, None, 0])
    for kk in cutlass.range_constexpr(nkb):
        if cutlass.const_expr(kk + 1 < nkb):
            cute.copy(cpb, tbs[None, None, kk + 1], tbr[None, None, kk + 1])
        cute.gemm(mma, acc, ra[None, None, kk], rb[None, None, kk], acc)


@cute.jit
def score_consts(pslope: cute.Pointer, b: Int32, h: Int32, slb: Int64, slh: Int64,
                 scale: Float32, softcap: Float32, flags: Int32):
    """The score transform's constants for query head h of batch entry b: ALiBi slope (base 2),
    softcap multipliers, the plain scale (base 2) and the flags as Booleans."""
    slope2 = Float32(0.0)
    if (flags & ALIBI) != 0:
        sl = cute.make_tensor(pslope + (Int64(b) * slb + Int64(h) * slh), cute.make_layout(1))
        slope2 = Float32(sl[0]) * LOG2E
    cap_in = Float32(0.0)
    cap_out = Float32(0.0)
    if (flags & SOFTCAP) != 0:
        cap_in = scale / softcap
        cap_out = softcap * LOG2E
    return slope2, cap_in, cap_out, scale * LOG2E


def make_consts(slope2, cap_in, cap_out, s_mul, flags, drop=None):
    """Bundle the score constants (a namespace the traced helpers read); ``drop``: the
    :class:`Dropout` of the (batch entry, query head), or None."""
    return SimpleNamespace(slope2=slope2, cap_in=cap_in, cap_out=cap_out, s_mul=s_mul,
                           use_cap=(flags & SOFTCAP) != 0, use_alibi=(flags & ALIBI) != 0,
                           drop=drop)


@cute.jit
def diag_offset(nq: Int32, nk: Int32, flags: Int32):
    """off = nk − nq when the masks align to the bottom-right corner, else 0."""
    off = Int32(0)
    if (flags & BOTTOM_RIGHT) != 0:
        off = nk - nq
    return off


@cute.jit
def load_row_stats(r_lse: cute.Tensor, r_delta: cute.Tensor, rows: cute.Tensor,
                   plse: cute.Pointer, pdelta: cute.Pointer, base: Int64, m0: Int32, nq: Int32):
    """Per accumulator row r (query row m0 + rows[r, 0][0]): r_lse ← lse·log2 e and
    r_delta ← delta, read at base + row.  A row past the sequence or fully masked (lse = −∞)
    gets r_lse = +∞ (so P = exp2(t − r_lse) = 0 for every t, −∞ included) and r_delta = 0."""
    for r in cutlass.range_constexpr(cute.size(r_lse)):
        row = m0 + rows[r, 0][0]
        l2 = Float32.inf
        dl = Float32(0.0)
        if cute.elem_less(row, nq):
            gl = cute.make_tensor(plse + (base + Int64(row)), cute.make_layout(1))
            gd = cute.make_tensor(pdelta + (base + Int64(row)), cute.make_layout(1))
            lse = gl[0]
            dl = gd[0]
            if lse != -Float32.inf:
                l2 = lse * LOG2E
        r_lse[r] = l2
        r_delta[r] = dl


@cute.jit
def probs_and_grads(S: cute.Tensor, dP: cute.Tensor, coords: cute.Tensor, m0: Int32, c0: Int32,
                    r_lse: cute.Tensor, r_delta: cute.Tensor, nk: Int32, off: Int32,
                    left: Int32, right: Int32, masked: Boolean, sc: SimpleNamespace):
    """In place on (rows, cols) accumulator views: S (raw q·k) ← P = exp2(t − lse·log2 e),
    dP ← dS = P·(dP − delta) (softcap: ·(1 − tanh²)); with dropout (``sc.drop``, factor Z of
    :func:`dropout_factor`) S ← P·Z and dS = P·(dP·Z − delta).  Element (r, c) is query row
    m0 + coords[r, 0][0], key c0 + coords[0, c][1]; ``masked`` (uniform) applies the window and
    key-end masks."""
    for r in cutlass.range_constexpr(cute.size(S, mode=[0])):
        row = m0 + coords[r, 0][0]
        l2 = r_lse[r]
        dl = r_delta[r]
        lo = row + off - left
        hi = row + off + right
        for c in cutlass.range_constexpr(cute.size(S, mode=[1])):
            col = c0 + coords[0, c][1]
            t = S[r, c]
            g = Float32(1.0)
            if sc.use_cap:
                th = cute.math.tanh(t * sc.cap_in, fastmath=True)
                t = sc.cap_out * th
                g = Float32(1.0) - th * th
            else:
                t = t * sc.s_mul
            if sc.use_alibi:
                dist = row + off - col
                dist = cutlass.max(dist, -dist)
                t = t - sc.slope2 * Float32(dist)
            if masked:
                keep = cute.elem_less(col, nk)
                if right >= 0:
                    keep = keep & (col <= hi)
                if left >= 0:
                    keep = keep & (col >= lo)
                t = cutlass.select_(keep, t, -Float32.inf)
            p = cute.math.exp2(t - l2, fastmath=True)
            if cutlass.const_expr(sc.drop is not None):
                z = dropout_factor(sc.drop, row, col)
                S[r, c] = p * z
                dP[r, c] = p * (dP[r, c] * z - dl) * g
            else:
                S[r, c] = p
                dP[r, c] = p * (dP[r, c] - dl) * g


class SoftmaxParams(LoopInvariant):
    """The per-CTA constants of :func:`softmax_tile`: first query row ``m0``, keys ``nk``,
    alignment offset, window bounds, last valid row, base-2 score scale, softcap in / out
    factors, base-2 ALiBi slope and the two feature switches."""

    def __init__(self, m0, nk, off, left, right, row_hi, s_mul, cap_in, cap_out, slope2,
                 use_cap, use_alibi, drop=None):
        self.drop = drop
        self.m0, self.nk, self.off, self.left, self.right = m0, nk, off, left, right
        self.row_hi, self.s_mul, self.cap_in, self.cap_out = row_hi, s_mul, cap_in, cap_out
        self.slope2, self.use_cap, self.use_alibi = slope2, use_cap, use_alibi


@cute.jit
def softmax_tile(S, tScS, row_max, row_sum, alpha, c0, p: SoftmaxParams,
                 bn: cutlass.Constexpr):
    """Scores of the key tile at column ``c0`` (the mn view ``S`` of an mma.sync or wgmma
    accumulator, tile coordinates ``tScS``) →
    base-2 units (softcap, ALiBi), −∞ outside the window / sequence (only when the tile crosses
    a boundary), then the online softmax: ``S`` ← exp2(t − m), ``row_max`` / ``row_sum``
    updated, ``alpha`` ← the factor the output rows must be rescaled by; with dropout
    (``p.drop``) S is then multiplied by the elements' dropout factors."""
    masked = need_mask(p.m0, p.row_hi, c0, p.nk, p.off, p.left, p.right, bn)
    for r in cutlass.range_constexpr(cute.size(S, mode=[0])):
        row = p.m0 + tScS[r, 0][0]
        for c in cutlass.range_constexpr(cute.size(S, mode=[1])):
            t = S[r, c]
            if p.use_cap:
                t = p.cap_out * cute.math.tanh(t * p.cap_in, fastmath=True)
            else:
                t = t * p.s_mul
            if p.use_alibi:
                dist = row + p.off - (c0 + tScS[0, c][1])
                dist = cutlass.max(dist, -dist)
                t = t - p.slope2 * Float32(dist)
            S[r, c] = t
        if masked:
            lo = row + p.off - p.left
            hi = row + p.off + p.right
            for c in cutlass.range_constexpr(cute.size(S, mode=[1])):
                col = c0 + tScS[0, c][1]
                keep = cute.elem_less(col, p.nk)
                if p.right >= 0:
                    keep = keep & (col <= hi)
                if p.left >= 0:
                    keep = keep & (col >= lo)
                S[r, c] = cutlass.select_(keep, S[r, c], -Float32.inf)
        srow = S[r, None].load()
        mx = quad_reduce(srow.reduce(cute.ReductionOp.MAX, -Float32.inf, 0), cute.arch.fmax)
        mnew = cute.arch.fmax(row_max[r], mx)
        muse = mnew
        if mnew == -Float32.inf:
            muse = Float32(0.0)
        alpha[r] = cute.math.exp2(row_max[r] - muse, fastmath=True)
        pe = cute.math.exp2(srow - muse, fastmath=True)
        row_sum[r] = row_sum[r] * alpha[r] + pe.reduce(cute.ReductionOp.ADD, Float32(0.0), 0)
        row_max[r] = mnew
        S[r, None] = pe
        if cutlass.const_expr(p.drop is not None):
            # attention dropout: after the row sum (the normaliser sees every key)
            for c in cutlass.range_constexpr(cute.size(S, mode=[1])):
                S[r, c] = S[r, c] * dropout_factor(p.drop, row, c0 + tScS[0, c][1])


@cute.jit
def batch_index(b: Int32, flags: Int32):
    """The batch index the batch strides multiply: b, or 0 for variable-length batches (whose
    rows start at their cu_seqlens offset)."""
    bb = Int64(b)
    if (flags & VARLEN) != 0:
        bb = Int64(0)
    return bb


@cute.jit
def query_tile_keys(m0: Int32, nq: Int32, nk: Int32, flags: Int32, left: Int32, right: Int32,
                    bm: cutlass.Constexpr, bn: cutlass.Constexpr):
    """(off, row_hi, n_start, n_end, n_iters) of the query tile at row m0: the diagonal offset,
    its last valid row and the key tiles [n_start, n_end) its rows can see."""
    off = diag_offset(nq, nk, flags)
    row_hi = cutlass.min(m0 + bm, nq) - 1
    n_start, n_end = key_tile_range(m0, row_hi, nk, off, left, right, bn)
    return off, row_hi, n_start, n_end, cutlass.max(n_end - n_start, 0)


def rows_view(ptr, bb, row0, head, sb, ss, sh, n, d: int):
    """(n, d) view of the rows row0 … row0 + n − 1 of one (batch bb, head) slice of a
    (B, S, H, d) operand with element strides (sb, ss, sh, 1): 16-byte aligned, row stride a
    multiple of 8 elements (the plans' contract)."""
    p = ptr + (bb * sb + Int64(row0) * ss + Int64(head) * sh)
    return cute.make_tensor(p.align(16), cute.make_layout((n, d),
                                                          stride=(cute.assume(ss, divby=8), 1)))


class Dropout(LoopInvariant):
    """Attention dropout of one (batch entry b, query head h): element (row i, key j), both
    counted within the sequence, has index e = ((b·Hq + h)·sq + i)·sk + j (sq, sk: the launch's
    sequence extents) and is kept iff word e mod 4 of Philox4x32-10 block e div 4 of the stream
    (seed, offset) (``blocks/philox.py``) is >= ``thr`` = round(p·2³²); kept
    elements are scaled by 1 / (1 − thr·2⁻³²)."""

    def __init__(self, seed, offset, thr, b, h, hq, sq, sk):
        self.seed, self.offset, self.thr = seed, offset, thr
        self.ebase = (Int64(b) * Int64(hq) + Int64(h)) * Int64(sq)
        self.sk = Int64(sk)
        self.scale = Float32(1.0) / (Float32(1.0) - Float32(thr) * Float32(2.0 ** -32))


@cute.jit
def dropout_factor(d: Dropout, row: Int32, col: Int32):
    """1 / (1 − p) where element (row, col) is kept, 0 where it is dropped (:class:`Dropout`)."""
    e = (d.ebase + Int64(row)) * d.sk + Int64(col)
    w0, w1, w2, w3 = philox_block(d.seed, d.offset, e >> Int64(2))
    k = Int32(e & Int64(3))
    w = cutlass.select_(k == 0, w0, cutlass.select_(k == 1, w1, cutlass.select_(k == 2, w2, w3)))
    return cutlass.select_(Uint64(w) >= Uint64(d.thr), d.scale, Float32(0.0))
