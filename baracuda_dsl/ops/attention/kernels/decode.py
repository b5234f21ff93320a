"""Split-KV decode attention (``attn_decode``), ``mma.sync`` on sm80 / sm89 / sm90a:

    s_ρj = scale·q_ρ·k_j            (softcap c > 0: s = c·tanh(s / c)), in base-2 units
    keep  j in [t0, t1) (the split's keys) and lo_ρ <= j <= hi_ρ  (causal / window)
    o_ρ  = Σ_j 2^(s_ρj − m_ρ) v_j / l_ρ,   l_ρ = Σ_j 2^(s_ρj − m_ρ),   lse2_ρ = m_ρ + log2 l_ρ

CTA (4 warps) = (split × row group, kv head hk, sequence b).  Rows ρ = t·G + g of the group
(query token t, query head hk·G + g).  L = cache_seqlens[b] (clamped to [0, cap]); query token
t sits at position L − Sq + t, so hi_ρ = L − Sq + t (causal) or L − 1, lo_ρ = L − Sq + t − left
(window) or 0.  Keys before ``lo_a`` = (L − Sq − left rounded down to 16) are never read; the
rest, [lo_a, L), is cut into ``nsplit`` 16-aligned ranges of ``max(tps, ⌈(L − lo_a)/nsplit⌉
rounded up to 16)`` keys (``tps`` = 0: balanced per sequence).

Per 16-key step of a warp (lane = 4·gi + ci, "group" gi and "column" ci of the MMA fragments):

* K rows ``step + gi`` and ``step + gi + 8``: thread ci loads, per row, the 16-byte vectors
  ``4v + ci`` (v < D/32) — its fragment words.  Inside one thread's fragment, element λ of its
  k slots is head-dim ``(4·(λ div 8) + ci)·8 + λ mod 8``; Q's fragments (loaded once, zero for
  rows past G·Sq) use the same order, so Sᵀ = K·Qᵀ (m16n8k16, f32) is unchanged.
* V rows ``step + 2ci + {0, 1, 8, 9}``: thread gi loads head-dim blocks ``(8u + gi)·B`` of
  ``B`` = 8 elements (4 for D = 96); ``prmt`` pairs the two keys' values of one head-dim into
  the Vᵀ A fragment, so thread (gi, ci) accumulates Oᵀ rows φ(mt, gi), φ(mt, gi + 8) with
  φ(mt, gi + 8h) = (8·((2mt + h) div B) + gi)·B + (2mt + h) mod B.
* scores scaled to base 2 (softcap with the accurate tanh), masked only in steps that cross a
  bound (a warp-uniform test), the row max over the 8 groups by shuffles, P = 2^(s − m)
  converted to the input dtype, transposed with ``movmatrix`` into the B fragment of
  Oᵀ += Vᵀ·Pᵀ.

Keys past the split (or the sequence) are neither loaded (zero-filled, then masked) nor looked
up in the block table.  A row that sees no key keeps m = −∞, l = 0: o = 0, lse = −∞.  The 4 warps'
(m, l, Oᵀ) meet in shared memory; each thread finishes units of (row, 8 head-dims) in a fixed
order (bit-stable) and writes ``out`` (16-byte vectors of the input dtype) and ``lse`` (natural
log) — ``DIRECT`` — or the split's partial o (f32) and lse2 at workspace slot
``row_id·nsplit + split`` (row_id = (b·Hk + hk)·G·Sq + ρ).

Caller contract (FlashDecodePlan): q / k / v / out 16-byte aligned with unit head-dim stride and
other strides multiples of 8 elements; cache_seqlens (and the block table rows) int32 with unit
stride; page sizes multiples of 16.

The inline-PTX helpers here (global vector loads and stores, the MMA, packing, ``movmatrix``)
are shared with ``decode_combine``.
"""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64, Uint32, const_expr
from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import T as IRT, dsl_user_op

from ..specs.decode import (CAUSAL, DIRECT, HAS_LSE, PAGED, SOFTCAP, STEP, THREADS, WARPS,
                            DecodeKnobs, smem_bytes)

LOG2E = math.log2(math.e)
LN2 = math.log(2.0)
NEG_INF = -math.inf
_PTX_TYPE = {"bf16": "bf16", "f16": "f16"}
TYPES = {"f16": cutlass.Float16, "bf16": cutlass.BFloat16}


# ------------------------------------------------------------------------- inline PTX
def _asm(ret, args, code: str, cons: str, loc, ip, side_effects: bool = False):
    return llvm.inline_asm(ret, [a.ir_value(loc=loc, ip=ip) for a in args], code, cons,
                           has_side_effects=side_effects, is_align_stack=False,
                           asm_dialect=llvm.AsmDialect.AD_ATT, loc=loc, ip=ip)


def _words(st, n: int, ty, loc, ip):
    ir_t = IRT.i32() if ty is Uint32 else IRT.f32()
    return tuple(ty(llvm.extractvalue(ir_t, st, [i], loc=loc, ip=ip)) for i in range(n))


@dsl_user_op
def ldg_v4(addr, pred, *, loc=None, ip=None):
    """Four 32-bit words at global byte address ``addr`` (16-byte aligned; read-only, not kept
    in L1), or four zeros when ``pred`` (Int32) is 0 — nothing is read then."""
    st = _asm(llvm.StructType.get_literal([IRT.i32()] * 4), [Int64(addr), Int32(pred)],
              "{ .reg .pred p; setp.ne.b32 p, $5, 0; mov.b32 $0, 0; mov.b32 $1, 0; "
              "mov.b32 $2, 0; mov.b32 $3, 0; "
              "@p ld.global.nc.L1::no_allocate.v4.u32 {$0, $1, $2, $3}, [$4]; }",
              "=r,=r,=r,=r,l,r", loc, ip)
    return _words(st, 4, Uint32, loc, ip)


@dsl_user_op
def ldg_v2(addr, pred, *, loc=None, ip=None):
    """Two 32-bit words at ``addr`` (8-byte aligned), zeros when ``pred`` is 0."""
    st = _asm(llvm.StructType.get_literal([IRT.i32()] * 2), [Int64(addr), Int32(pred)],
              "{ .reg .pred p; setp.ne.b32 p, $3, 0; mov.b32 $0, 0; mov.b32 $1, 0; "
              "@p ld.global.nc.L1::no_allocate.v2.u32 {$0, $1}, [$2]; }",
              "=r,=r,l,r", loc, ip)
    return _words(st, 2, Uint32, loc, ip)


@dsl_user_op
def ldg_f32x4(addr, *, loc=None, ip=None):
    """Four f32 at ``addr`` (16-byte aligned)."""
    st = _asm(llvm.StructType.get_literal([IRT.f32()] * 4), [Int64(addr)],
              "ld.global.nc.v4.f32 {$0, $1, $2, $3}, [$4];", "=f,=f,=f,=f,l", loc, ip)
    return _words(st, 4, Float32, loc, ip)


@dsl_user_op
def ldg_f32(addr, *, loc=None, ip=None):
    """One f32 at ``addr``."""
    return Float32(_asm(IRT.f32(), [Int64(addr)], "ld.global.nc.f32 $0, [$1];", "=f,l",
                        loc, ip))


@dsl_user_op
def ldg_s32(addr, *, loc=None, ip=None):
    """One int32 at ``addr``."""
    return Int32(_asm(IRT.i32(), [Int64(addr)], "ld.global.nc.s32 $0, [$1];", "=r,l", loc, ip))


@dsl_user_op
def stg_v4(addr, w0, w1, w2, w3, *, loc=None, ip=None):
    """Store four 32-bit words at ``addr`` (16-byte aligned)."""
    _asm(None, [Int64(addr), Uint32(w0), Uint32(w1), Uint32(w2), Uint32(w3)],
         "st.global.v4.b32 [$0], {$1, $2, $3, $4};", "l,r,r,r,r", loc, ip, side_effects=True)


@dsl_user_op
def stg_f32x4(addr, x0, x1, x2, x3, *, loc=None, ip=None):
    """Store four f32 at ``addr`` (16-byte aligned)."""
    _asm(None, [Int64(addr), Float32(x0), Float32(x1), Float32(x2), Float32(x3)],
         "st.global.v4.f32 [$0], {$1, $2, $3, $4};", "l,f,f,f,f", loc, ip, side_effects=True)


@dsl_user_op
def stg_f32(addr, x, *, loc=None, ip=None):
    """Store one f32 at ``addr``."""
    _asm(None, [Int64(addr), Float32(x)], "st.global.f32 [$0], $1;", "l,f", loc, ip,
         side_effects=True)


@dsl_user_op
def mma_16816(dt: str, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3, *, loc=None, ip=None):
    """``mma.sync.m16n8k16`` with f16 / bf16 (``dt``) inputs and f32 accumulators: PTX's
    fragments (a: rows gi / gi + 8, k 2ci.. / 2ci + 8..; b: k 2ci.., 2ci + 8..., column gi;
    c: rows gi / gi + 8, columns 2ci, 2ci + 1); returns the 4 new accumulators."""
    args = [Uint32(x) for x in (a0, a1, a2, a3, b0, b1)] + [Float32(x) for x in (c0, c1, c2, c3)]
    st = _asm(llvm.StructType.get_literal([IRT.f32()] * 4), args,
              f"mma.sync.aligned.m16n8k16.row.col.f32.{_PTX_TYPE[dt]}.{_PTX_TYPE[dt]}.f32 "
              "{$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};",
              "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", loc, ip)
    return _words(st, 4, Float32, loc, ip)


@dsl_user_op
def pack2(dt: str, lo, hi, *, loc=None, ip=None):
    """Two f32 rounded (to nearest even) into one f16x2 / bf16x2 word, ``lo`` in the low half."""
    return Uint32(_asm(IRT.i32(), [Float32(hi), Float32(lo)],
                       f"cvt.rn.{_PTX_TYPE[dt]}x2.f32 $0, $1, $2;", "=r,f,f", loc, ip))


@dsl_user_op
def transpose8x8(x, *, loc=None, ip=None):
    """``movmatrix.m8n8.trans.b16``: the warp's 8×8 16-bit matrix (lane 4i + j holds row i,
    columns 2j, 2j + 1) transposed."""
    return Uint32(_asm(IRT.i32(), [Uint32(x)], "movmatrix.sync.aligned.m8n8.trans.b16 $0, $1;",
                       "=r,r", loc, ip, side_effects=True))


@dsl_user_op
def prmt(a, b, sel: int, *, loc=None, ip=None):
    """``prmt.b32`` of the byte pair (a, b) with a constant selector (0x5410: the low halves,
    0x7632: the high halves; ``a``'s in the low half of the result)."""
    return Uint32(_asm(IRT.i32(), [Uint32(a), Uint32(b)], f"prmt.b32 $0, $1, $2, {sel:#x};",
                       "=r,r,r", loc, ip))


# ----------------------------------------------------------------------------- helpers
def warp_max_groups(x):
    """Max over the 8 lanes that share ``lane mod 4`` (xor 4, 8, 16)."""
    for off in (4, 8, 16):
        x = cute.arch.fmax(x, cute.arch.shuffle_sync_bfly(x, offset=off))
    return x


def warp_sum_groups(x):
    """Sum over the 8 lanes that share ``lane mod 4``."""
    for off in (4, 8, 16):
        x = x + cute.arch.shuffle_sync_bfly(x, offset=off)
    return x


@cute.jit
def safe_base(m):
    """``m`` with −∞ replaced by 0 (the offset subtracted before exponentiating)."""
    r = m
    if m == Float32(NEG_INF):
        r = Float32(0.0)
    return r


def v_block(d: int) -> int:
    """Head-dim elements of one V vector a thread loads (8: 16 bytes; 4 when D / 8 is not a
    multiple of 8, i.e. D = 96)."""
    return 8 if d % 64 == 0 else 4


def out_column(mt: int, h: int, gi, block: int):
    """φ(mt, gi + 8h): the head-dim of Oᵀ row gi + 8h of m-tile ``mt`` in thread group gi."""
    lam = 2 * mt + h
    return (8 * (lam // block) + gi) * block + lam % block


# ---------------------------------------------------------------------------------- build
def build(knobs: DecodeKnobs):
    dt = knobs.dtype
    D = knobs.head_dim
    RC = knobs.rows
    NT = RC // 8                 # n8 tiles of query rows
    KV = D // 32                 # 16-byte K vectors a thread loads per key row
    KW = D // 8                  # K fragment words per key row a thread holds (= 4·KV)
    KSTEPS = D // 16             # k16 steps of Sᵀ = K·Qᵀ
    BV = v_block(D)
    VV = D // (8 * BV)           # V vectors a thread loads per key row
    MT = D // 16                 # m16 tiles of Oᵀ (= V words per key row a thread holds)
    V_EARLY = D * RC <= 1024     # V loads issued with K (registers allow) or after Sᵀ
    UNITS = RC * (D // 8)        # epilogue units: (row, 8 head-dims)
    UPT = (UNITS + THREADS - 1) // THREADS
    SMEM = smem_bytes(knobs)
    ROW_F = RC * D               # f32 per warp in the shared Oᵀ partials

    @cute.kernel
    def kernel(pq: cute.Pointer, pk: cute.Pointer, pv: cute.Pointer, po: cute.Pointer,
               plse: cute.Pointer, pseq: cute.Pointer, ptab: cute.Pointer, ppo: cute.Pointer,
               ppl: cute.Pointer, sq: Int32, ratio: Int32, nrows: Int32, nrg: Int32,
               heads_k: Int32, nsplit: Int32, tps: Int32, page: Int32, cap: Int32, qb: Int64,
               qs: Int64, qh: Int64, kb: Int64, ks: Int64, kh: Int64, vb: Int64, vs: Int64,
               vh: Int64, tb: Int64, ob: Int64, os: Int64, oh: Int64, lb: Int64, lh: Int64,
               lt: Int64, smul: Float32, cmul: Float32, left: Int32, flags: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bx, hk, b = cute.arch.block_idx()
        tid = Int32(tidx)
        warp = tid // 32
        lane = tid % 32
        gi = lane // 4
        ci = lane % 4
        split = Int32(bx) // nrg
        rg = Int32(bx) - split * nrg
        b64 = Int64(b)
        hk32 = Int32(hk)

        smem = cutlass.utils.SmemAllocator()
        sO = smem.allocate_tensor(Float32, cute.make_layout(WARPS * ROW_F), byte_alignment=16)
        sM = smem.allocate_tensor(Float32, cute.make_layout(WARPS * RC), byte_alignment=16)
        sL = smem.allocate_tensor(Float32, cute.make_layout(WARPS * RC), byte_alignment=16)

        # ---- this CTA's keys
        L = ldg_s32(pseq.toint() + b64 * 4)
        L = cutlass.max(cutlass.min(L, cap), Int32(0))
        causal = (flags & CAUSAL) != 0
        lo_all = Int32(0)
        if left >= 0:
            lo_all = cutlass.max(L - sq - left, Int32(0))
        lo_a = lo_all - lo_all % STEP
        per = ((L - lo_a + nsplit - 1) // nsplit + STEP - 1) // STEP * STEP
        per = cutlass.max(per, tps)
        t0 = lo_a + split * per
        t1 = cutlass.min(t0 + per, L)
        nsteps = (cutlass.max(t1 - t0, Int32(0)) + STEP - 1) // STEP

        # ---- query rows: Q fragments (B operand, rows gi of each n8 tile) and row bounds
        row0 = rg * RC
        qw = cute.make_rmem_tensor(cute.make_layout((NT, KW), stride=(KW, 1)), Uint32)
        for nt in cutlass.range_constexpr(NT):
            r = row0 + nt * 8 + gi
            ok = r < nrows
            rr = cutlass.select_(ok, r, Int32(0))
            t = rr // ratio
            h = hk32 * ratio + rr - t * ratio
            qa = pq.toint() + (b64 * qb + Int64(t) * qs + Int64(h) * qh) * 2
            for v in cutlass.range_constexpr(KV):
                w = ldg_v4(qa + (Int64(ci) + 4 * v) * 16, Int32(ok))
                for e in cutlass.range_constexpr(4):
                    qw[nt, 4 * v + e] = w[e]
        lo = cute.make_rmem_tensor(cute.make_layout(2 * NT), Int32)
        hi = cute.make_rmem_tensor(cute.make_layout(2 * NT), Int32)
        for nt in cutlass.range_constexpr(NT):
            for j in cutlass.range_constexpr(2):
                t = (row0 + nt * 8 + 2 * ci + j) // ratio
                pos = L - sq + t
                hi[2 * nt + j] = cutlass.select_(causal, pos, L - 1)
                lo[2 * nt + j] = cutlass.select_(left >= 0, pos - left, Int32(0))
        # keys every valid row of the group sees in [full_lo, full_hi): no mask needed there
        t_first = row0 // ratio
        t_last = (cutlass.min(row0 + RC, nrows) - 1) // ratio
        full_hi = t1
        if causal:
            full_hi = cutlass.min(t1, L - sq + t_first + 1)
        full_lo = t0
        if left >= 0:
            full_lo = cutlass.max(t0, L - sq + t_last - left)

        # ---- running state: per (n8 tile, row 2ci + j) max / partial sum; Oᵀ fragments
        m = cute.make_rmem_tensor(cute.make_layout(2 * NT), Float32)
        lsum = cute.make_rmem_tensor(cute.make_layout(2 * NT), Float32)
        m.fill(NEG_INF)
        lsum.fill(0.0)
        acc = cute.make_rmem_tensor(cute.make_layout((4, MT, NT), stride=(1, 4, 4 * MT)),
                                    Float32)
        acc.fill(0.0)
        kw = cute.make_rmem_tensor(cute.make_layout((2, KW), stride=(KW, 1)), Uint32)
        vw = cute.make_rmem_tensor(cute.make_layout((4, MT), stride=(MT, 1)), Uint32)
        s = cute.make_rmem_tensor(cute.make_layout((4, NT), stride=(1, 4)), Float32)
        pf = cute.make_rmem_tensor(cute.make_layout((2, NT), stride=(1, 2)), Uint32)

        paged = (flags & PAGED) != 0
        use_cap = (flags & SOFTCAP) != 0
        kbase = pk.toint() + Int64(hk32) * kh * 2
        vbase = pv.toint() + Int64(hk32) * vh * 2

        for st in cutlass.range(warp, nsteps, WARPS, unroll=1):
            base = t0 + st * STEP
            koff = b64 * kb + Int64(base) * ks
            voff = b64 * vb + Int64(base) * vs
            if paged:
                pidx = base // page
                pg = ldg_s32(ptab.toint() + (b64 * tb + Int64(pidx)) * 4)
                prow = Int64(base - pidx * page)
                koff = Int64(pg) * kb + prow * ks
                voff = Int64(pg) * vb + prow * vs
            nval = t1 - base
            # K rows gi, gi + 8
            for i in cutlass.range_constexpr(2):
                tok = gi + 8 * i
                ka = kbase + (koff + Int64(tok) * ks) * 2
                for v in cutlass.range_constexpr(KV):
                    w = ldg_v4(ka + (Int64(ci) + 4 * v) * 16, Int32(tok < nval))
                    for e in cutlass.range_constexpr(4):
                        kw[i, 4 * v + e] = w[e]
            if const_expr(V_EARLY):
                load_v(vw, vbase, voff, vs, gi, ci, nval, VV, BV)
            # Sᵀ = K·Qᵀ
            s.fill(0.0)
            for kk in cutlass.range_constexpr(KSTEPS):
                for nt in cutlass.range_constexpr(NT):
                    d0, d1, d2, d3 = mma_16816(dt, kw[0, 2 * kk], kw[1, 2 * kk],
                                               kw[0, 2 * kk + 1], kw[1, 2 * kk + 1],
                                               qw[nt, 2 * kk], qw[nt, 2 * kk + 1],
                                               s[0, nt], s[1, nt], s[2, nt], s[3, nt])
                    s[0, nt] = d0
                    s[1, nt] = d1
                    s[2, nt] = d2
                    s[3, nt] = d3
            if const_expr(not V_EARLY):
                load_v(vw, vbase, voff, vs, gi, ci, nval, VV, BV)
            # base-2 scores, masks (only in steps that cross a bound)
            for nt in cutlass.range_constexpr(NT):
                for e in cutlass.range_constexpr(4):
                    x = s[e, nt]
                    if use_cap:
                        x = cmul * cute.math.tanh(x * smul)
                    else:
                        x = x * smul
                    s[e, nt] = x
            if (base < full_lo) | (base + STEP > full_hi):
                for nt in cutlass.range_constexpr(NT):
                    for e in cutlass.range_constexpr(4):
                        tok = base + gi + 8 * (e // 2)
                        keep = (tok < t1) & (tok <= hi[2 * nt + e % 2]) & \
                            (tok >= lo[2 * nt + e % 2])
                        s[e, nt] = cutlass.select_(keep, s[e, nt], Float32(NEG_INF))
            # online softmax per row (rows 2ci, 2ci + 1 of each tile)
            for nt in cutlass.range_constexpr(NT):
                for j in cutlass.range_constexpr(2):
                    mx = warp_max_groups(cute.arch.fmax(s[j, nt], s[2 + j, nt]))
                    mold = m[2 * nt + j]
                    mnew = cute.arch.fmax(mold, mx)
                    ms = safe_base(mnew)
                    alpha = cute.math.exp2(mold - ms, fastmath=True)
                    pa = cute.math.exp2(s[j, nt] - ms, fastmath=True)
                    pb = cute.math.exp2(s[2 + j, nt] - ms, fastmath=True)
                    lsum[2 * nt + j] = lsum[2 * nt + j] * alpha + pa + pb
                    m[2 * nt + j] = mnew
                    s[j, nt] = pa
                    s[2 + j, nt] = pb
                    for mt in cutlass.range_constexpr(MT):
                        acc[j, mt, nt] = acc[j, mt, nt] * alpha
                        acc[2 + j, mt, nt] = acc[2 + j, mt, nt] * alpha
            # Pᵀ fragments: (key gi / gi + 8, rows 2ci, 2ci + 1) → transposed
            for nt in cutlass.range_constexpr(NT):
                pf[0, nt] = transpose8x8(pack2(dt, s[0, nt], s[1, nt]))
                pf[1, nt] = transpose8x8(pack2(dt, s[2, nt], s[3, nt]))
            # Oᵀ += Vᵀ·Pᵀ
            for mt in cutlass.range_constexpr(MT):
                a0 = prmt(vw[0, mt], vw[1, mt], 0x5410)
                a1 = prmt(vw[0, mt], vw[1, mt], 0x7632)
                a2 = prmt(vw[2, mt], vw[3, mt], 0x5410)
                a3 = prmt(vw[2, mt], vw[3, mt], 0x7632)
                for nt in cutlass.range_constexpr(NT):
                    d0, d1, d2, d3 = mma_16816(dt, a0, a1, a2, a3, pf[0, nt], pf[1, nt],
                                               acc[0, mt, nt], acc[1, mt, nt], acc[2, mt, nt],
                                               acc[3, mt, nt])
                    acc[0, mt, nt] = d0
                    acc[1, mt, nt] = d1
                    acc[2, mt, nt] = d2
                    acc[3, mt, nt] = d3

        # ---- the warp's partials into shared memory
        wo = warp * ROW_F
        for nt in cutlass.range_constexpr(NT):
            for j in cutlass.range_constexpr(2):
                lsum[2 * nt + j] = warp_sum_groups(lsum[2 * nt + j])
                if gi == 0:
                    sM[warp * RC + nt * 8 + 2 * ci + j] = m[2 * nt + j]
                    sL[warp * RC + nt * 8 + 2 * ci + j] = lsum[2 * nt + j]
            for mt in cutlass.range_constexpr(MT):
                for e in cutlass.range_constexpr(4):
                    row = nt * 8 + 2 * ci + e % 2
                    col = out_column(mt, e // 2, gi, BV)
                    sO[wo + row * D + col] = acc[e, mt, nt]
        cute.arch.sync_threads()

        # ---- merge the warps (fixed order) and write
        direct = (flags & DIRECT) != 0
        has_lse = (flags & HAS_LSE) != 0
        for it in cutlass.range_constexpr(UPT):
            unit = tid + it * THREADS
            r = unit // (D // 8)
            j8 = unit - r * (D // 8)
            grow = row0 + r
            if (unit < UNITS) & (grow < nrows):
                mm = sM[r]
                for wq in cutlass.range_constexpr(1, WARPS):
                    mm = cute.arch.fmax(mm, sM[wq * RC + r])
                mb = safe_base(mm)
                tot = Float32(0.0)
                o8 = cute.make_rmem_tensor(cute.make_layout(8), Float32)
                o8.fill(0.0)
                for wq in cutlass.range_constexpr(WARPS):
                    wt = cute.math.exp2(sM[wq * RC + r] - mb, fastmath=True)
                    tot = tot + wt * sL[wq * RC + r]
                    for e in cutlass.range_constexpr(8):
                        o8[e] = o8[e] + wt * sO[wq * ROW_F + r * D + j8 * 8 + e]
                inv = Float32(0.0)
                lse2 = Float32(NEG_INF)
                if tot > Float32(0.0):
                    inv = Float32(1.0) / tot
                    lse2 = mm + cute.math.log2(tot, fastmath=True)
                for e in cutlass.range_constexpr(8):
                    o8[e] = o8[e] * inv
                t = grow // ratio
                h = hk32 * ratio + grow - t * ratio
                if direct:
                    oa = po.toint() + (b64 * ob + Int64(t) * os + Int64(h) * oh
                                       + Int64(j8) * 8) * 2
                    stg_v4(oa, pack2(dt, o8[0], o8[1]), pack2(dt, o8[2], o8[3]),
                           pack2(dt, o8[4], o8[5]), pack2(dt, o8[6], o8[7]))
                    if has_lse & (j8 == 0):
                        stg_f32(plse.toint() + (b64 * lb + Int64(h) * lh + Int64(t) * lt) * 4,
                                lse2 * LN2)
                else:
                    slot = ((b64 * Int64(heads_k) + Int64(hk32)) * Int64(nrows) + Int64(grow)) \
                        * Int64(nsplit) + Int64(split)
                    paddr = ppo.toint() + (slot * D + Int64(j8) * 8) * 4
                    stg_f32x4(paddr, o8[0], o8[1], o8[2], o8[3])
                    stg_f32x4(paddr + 16, o8[4], o8[5], o8[6], o8[7])
                    if j8 == 0:
                        stg_f32(ppl.toint() + slot * 4, lse2)

    @cute.jit
    def launch(pq: cute.Pointer, pk: cute.Pointer, pv: cute.Pointer, po: cute.Pointer,
               plse: cute.Pointer, pseq: cute.Pointer, ptab: cute.Pointer, ppo: cute.Pointer,
               ppl: cute.Pointer, sq: Int32, ratio: Int32, nrows: Int32, nrg: Int32,
               heads_k: Int32, nsplit: Int32, tps: Int32, page: Int32, cap: Int32, qb: Int64,
               qs: Int64, qh: Int64, kb: Int64, ks: Int64, kh: Int64, vb: Int64, vs: Int64,
               vh: Int64, tb: Int64, ob: Int64, os: Int64, oh: Int64, lb: Int64, lh: Int64,
               lt: Int64, smul: Float32, cmul: Float32, left: Int32, flags: Int32,
               batch: Int32, stream):
        kernel(pq, pk, pv, po, plse, pseq, ptab, ppo, ppl, sq, ratio, nrows, nrg, heads_k,
               nsplit, tps, page, cap, qb, qs, qh, kb, ks, kh, vb, vs, vh, tb, ob, os, oh, lb,
               lh, lt, smul, cmul, left, flags).launch(
            grid=[nsplit * nrg, heads_k, batch], block=[THREADS, 1, 1], smem=SMEM,
            stream=stream)

    return launch, example_args(TYPES[dt])


@cute.jit
def load_v(vw, vbase, voff, vs, gi, ci, nval, VV: cutlass.Constexpr, BV: cutlass.Constexpr):
    """V rows step + 2ci + {0, 1, 8, 9} (slot j = 0..3), head-dim blocks (8u + gi)·BV of each:
    ``vw[j, :]`` the row's fragment words (zeros past ``nval`` keys)."""
    for j in cutlass.range_constexpr(4):
        tok = 2 * ci + j % 2 + 8 * (j // 2)
        va = vbase + (voff + Int64(tok) * vs) * 2
        ok = Int32(tok < nval)
        for u in cutlass.range_constexpr(VV):
            if const_expr(BV == 8):
                w = ldg_v4(va + (Int64(gi) + 8 * u) * 16, ok)
                for e in cutlass.range_constexpr(4):
                    vw[j, 4 * u + e] = w[e]
            else:
                w = ldg_v2(va + (Int64(gi) + 8 * u) * 8, ok)
                for e in cutlass.range_constexpr(2):
                    vw[j, 2 * u + e] = w[e]


def example_args(T):
    """``cute.compile`` arguments of ``attn_decode``'s launcher (the parameter ABI plus the
    grid's batch extent and a stream)."""
    from cutlass.cute.runtime import make_fake_stream, make_ptr

    def ptr(t, align):
        return make_ptr(t, 16, cute.AddressSpace.gmem, assumed_align=align)

    return ([ptr(T, 16)] * 4 + [ptr(Float32, 4), ptr(Int32, 4), ptr(Int32, 4), ptr(Float32, 16),
                                ptr(Float32, 4)]
            + [Int32(1)] * 9 + [Int64(8)] * 16
            + [Float32(1.0), Float32(1.0), Int32(-1), Int32(0), Int32(1), make_fake_stream()])
