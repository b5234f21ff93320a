"""Flash attention backward kernels without a GPU: the parameter ABIs the plan packs, the SKU
space and tile geometry per arch, a float64 numpy emulation of the kernels' tiled algorithm (the
visible tile ranges, the per-block masks, P / dS recomputed from the lse in base 2, the GQA sums
of ``flash_bwd_dkdv``) against ``tests/_attention_ref.attention_backward``, and a cross-compile
sample of every template for every arch."""

import math

import numpy as np
import pytest

from baracuda_dsl import ArchSku
from baracuda_dsl.ops.attention.specs import flash as fwd_spec
from baracuda_dsl.ops.attention.specs import flash_bwd as spec
from tests._attention_ref import attention, attention_backward

LOG2E = math.log2(math.e)
SM89_SMEM = 99 * 1024           # the smallest per-CTA shared memory of the three arches

_TAIL = ["lb", "lh", "slb", "slh", "scale", "softcap", "left", "right", "flags", "dseed", "doff",
         "dthr"]
_STRIDES = ["qb", "qs", "qh", "kb", "ks", "kh", "vb", "vs", "vh", "gb", "gs", "gh"]
ABIS = {
    "flash_bwd_pre": ["o", "do", "delta", "cu_q", "sq", "ob", "os", "oh", "gb", "gs", "gh",
                      "lb", "lh", "flags"],
    "flash_bwd_dkdv": ["q", "k", "v", "do", "lse", "delta", "dk", "dv", "cu_q", "cu_k", "slopes",
                       "sq", "sk", "ratio"] + _STRIDES
                      + ["dkb", "dks", "dkh", "dvb", "dvs", "dvh"] + _TAIL,
    "flash_bwd_dq": ["q", "k", "v", "do", "lse", "delta", "dq", "cu_q", "cu_k", "slopes",
                     "sq", "sk", "ratio"] + _STRIDES + ["dqb", "dqs", "dqh"] + _TAIL,
}
KINDS = {"ptr": ("o", "do", "delta", "cu_q", "q", "k", "v", "lse", "dk", "dv", "dq", "cu_k",
                 "slopes"),
         "i32": ("sq", "sk", "ratio", "left", "right", "flags"), "f32": ("scale", "softcap")}


# ------------------------------------------------------------------------------ ABI, space
def test_abis():
    from baracuda_dsl.ops import get_template
    kn = fwd_spec.FlashKnobs(dtype="bf16", head_dim=128)
    for name, names in ABIS.items():
        abi = get_template(name).abi(kn)
        assert [p.name for p in abi] == names, name
        for p in abi:
            want = next((k for k, v in KINDS.items() if p.name in v), "i64")
            assert p.kind == want, (name, p.name, p.kind)


def test_space_and_geometry():
    from baracuda_dsl.ops import get_template
    for name in ABIS:
        t = get_template(name)
        assert t.family == "attention" and t.knobs is fwd_spec.FlashKnobs
        assert t.module == f"baracuda_dsl.ops.attention.kernels.{name}"
        dropout = 1 if name == "flash_bwd_pre" else 2          # pre never sees P
        for arch in ("sm80", "sm89", "sm90a"):
            skus = list(t.skus(arch))
            assert len(skus) == len(fwd_spec.DTYPES) * len(fwd_spec.HEAD_DIMS) * dropout, \
                (name, arch)
        for kn in t.space():
            g = t.geometry(kn)
            assert g.smem_bytes <= SM89_SMEM and g.cluster == 1, (name, kn)
            assert g.threads == {"flash_bwd_pre": spec.PRE_THREADS,
                                 "flash_bwd_dkdv": spec.DKDV_THREADS,
                                 "flash_bwd_dq": spec.DQ_THREADS}[name]


@pytest.mark.parametrize("d", fwd_spec.HEAD_DIMS)
def test_tiles(d):
    bm, bn = spec.DKDV_TILES[d]
    qm, qn = spec.DQ_TILES[d]
    assert spec.BWD_TILES[d] == (qm, bn)
    kb = 64 if d % 64 == 0 else 32
    for tile, threads in ((bm, spec.DKDV_THREADS), (bn, spec.DKDV_THREADS),
                          (qm, spec.DQ_THREADS), (qn, spec.DQ_THREADS)):
        assert tile % 16 == 0
        assert tile % (threads // (kb // 8)) == 0      # the 16-byte cp.async tile of the rows
    assert qm == 16 * (spec.DQ_THREADS // 32)          # dq: 16 query rows a warp
    # dkdv: S / dP (bm, bn) and dK / dV (bn, d) over 8 warps, 16 rows a warp along M
    warps = spec.DKDV_THREADS // 32
    for m, n in ((bm, bn), (bn, d)):
        wm = min(m // 16, warps)
        assert warps % wm == 0 and m % (16 * wm) == 0 and n % (8 * (warps // wm)) == 0
    st = spec.DKDV_STAGES[d]
    assert st in (1, 2)
    assert spec.dkdv_smem(d) == 2 * (2 * bn * d + 2 * st * bm * d + 2 * bm * bn) + 1024
    assert spec.dq_smem(d) == 2 * (2 * qm * d + 2 * qn * d) + 1024
    assert spec.PRE_THREADS == 4 * spec.PRE_ROWS and d % 32 == 0


# ----------------------------------------------------------- numpy emulation of the kernels
# The formulas below mirror kernels/flash_common.py (key_tile_range, query_tile_range,
# need_mask, load_row_stats, probs_and_grads) and the loops of flash_bwd_dq / flash_bwd_dkdv.
def key_tile_range(m0, row_hi, nk, off, left, right, bn):
    n_end = (nk + bn - 1) // bn
    if right >= 0:
        n_end = min(n_end, max(row_hi + off + right + bn, 0) // bn)
    n_start = max(m0 + off - left, 0) // bn if left >= 0 else 0
    return n_start, n_end


def query_tile_range(c0, c_hi, nq, off, left, right, bm):
    m_end = (nq + bm - 1) // bm
    if left >= 0:
        m_end = min(m_end, max(c_hi - off + left + bm, 0) // bm)
    m_start = max(c0 - off - right, 0) // bm if right >= 0 else 0
    return m_start, m_end


def need_mask(m0, row_hi, c0, nk, off, left, right, bn):
    c1 = c0 + bn - 1
    m = nk - 1 < c1
    if right >= 0:
        m = m or m0 + off + right < c1
    if left >= 0:
        m = m or c0 < row_hi + off - left
    return m


class _Problem:
    """One sequence pair of one batch entry, every head: float64 inputs and the forward's
    (out, lse) from the reference."""

    def __init__(self, q, k, v, do, out, lse, scale, softcap, slopes, left, right, off):
        self.q, self.k, self.v, self.do = q, k, v, do      # (S, H, D)
        self.delta = np.einsum("shd,shd->hs", do, out)    # (Hq, Sq)
        self.lse = lse                                    # (Hq, Sq)
        self.scale, self.softcap, self.slopes = scale, softcap, slopes
        self.left, self.right, self.off = left, right, off
        self.nq, self.nk = q.shape[0], k.shape[0]
        self.ratio = q.shape[1] // k.shape[1]
        self.visits = np.zeros((2, q.shape[1], self.nq, self.nk), np.int64)

    def tile(self, x, r0, rows, h):
        """Rows r0 … r0 + rows − 1 of head h, zero past the sequence (the kernels' smem)."""
        t = np.zeros((rows, x.shape[2]))
        n = max(min(x.shape[0] - r0, rows), 0)
        t[:n] = x[r0:r0 + n, h]
        return t

    def block(self, h, m0, bm, c0, bn, masked, which):
        """P, dS of the (m0 + [0, bm)) × (c0 + [0, bn)) block of query head h."""
        hk = h // self.ratio
        qt, dot = self.tile(self.q, m0, bm, h), self.tile(self.do, m0, bm, h)
        kt, vt = self.tile(self.k, c0, bn, hk), self.tile(self.v, c0, bn, hk)
        rows = m0 + np.arange(bm)[:, None]
        cols = c0 + np.arange(bn)[None, :]
        s = qt @ kt.T
        g = 1.0
        if self.softcap:
            th = np.tanh(s * (self.scale / self.softcap))
            t = self.softcap * LOG2E * th
            g = 1.0 - th * th
        else:
            t = s * (self.scale * LOG2E)
        if self.slopes is not None:
            t = t - self.slopes[h] * LOG2E * np.abs(rows + self.off - cols)
        keep = cols < self.nk
        if self.right >= 0:
            keep = keep & (cols <= rows + self.off + self.right)
        if self.left >= 0:
            keep = keep & (cols >= rows + self.off - self.left)
        keep = np.broadcast_to(keep, (bm, bn))
        if masked:
            t = np.where(keep, t, -np.inf)
        else:   # the block needs no mask: every element of the sequence's rows is kept
            assert keep[(rows < self.nq)[:, 0]].all()
        # load_row_stats: lse·log2 e (+∞ for rows past the sequence or with lse = −∞), delta
        valid = rows[:, 0] < self.nq
        lse = np.full(bm, np.inf)
        delta = np.zeros(bm)
        r = rows[valid, 0]
        lse[valid] = np.where(np.isneginf(self.lse[h, r]), np.inf, self.lse[h, r] * LOG2E)
        delta[valid] = self.delta[h, r]
        p = np.exp2(t - lse[:, None])
        assert np.isfinite(p).all()
        dp = dot @ vt.T
        ds = p * (dp - delta[:, None]) * g
        inside = (rows < self.nq) & (cols < self.nk)
        vr, vc = np.nonzero(inside)
        self.visits[which, h, rows[vr, 0], cols[0, vc]] += 1
        return p, ds, qt, dot, kt

    def dq(self, bm, bn):
        """flash_bwd_dq: per (query tile, query head) the visible key tiles, last first."""
        hq, d = self.q.shape[1], self.q.shape[2]
        dq = np.zeros((self.nq, hq, d))
        for h in range(hq):
            for mb in range((self.nq + bm - 1) // bm):
                m0 = mb * bm
                row_hi = min(m0 + bm, self.nq) - 1
                n_start, n_end = key_tile_range(m0, row_hi, self.nk, self.off, self.left,
                                                self.right, bn)
                acc = np.zeros((bm, d))
                for nbk in range(n_end - 1, n_start - 1, -1):
                    c0 = nbk * bn
                    masked = need_mask(m0, row_hi, c0, self.nk, self.off, self.left, self.right,
                                       bn)
                    _p, ds, _qt, _dot, kt = self.block(h, m0, bm, c0, bn, masked, 0)
                    acc += ds @ kt
                n = row_hi + 1 - m0
                dq[m0:m0 + n, h] = self.scale * acc[:n]
        return dq

    def dkdv(self, bm, bn):
        """flash_bwd_dkdv: per (key tile, kv head) every query head of the group and every
        query tile that can see the key tile."""
        hk, d = self.k.shape[1], self.k.shape[2]
        dk, dv = np.zeros((self.nk, hk, d)), np.zeros((self.nk, hk, d))
        for kh in range(hk):
            for nb in range((self.nk + bn - 1) // bn):
                c0 = nb * bn
                c_hi = min(c0 + bn, self.nk) - 1
                m_start, m_end = query_tile_range(c0, c_hi, self.nq, self.off, self.left,
                                                  self.right, bm)
                n_m = max(m_end - m_start, 0)
                acc_k, acc_v = np.zeros((bn, d)), np.zeros((bn, d))
                for it in range(self.ratio * n_m):
                    g = it // n_m
                    mt = m_start + it - g * n_m
                    h = kh * self.ratio + g
                    m0 = mt * bm
                    row_hi = min(m0 + bm, self.nq) - 1
                    masked = need_mask(m0, row_hi, c0, self.nk, self.off, self.left, self.right,
                                       bn)
                    p, ds, qt, dot, _kt = self.block(h, m0, bm, c0, bn, masked, 1)
                    acc_v += p.T @ dot
                    acc_k += ds.T @ qt
                n = c_hi + 1 - c0
                dk[c0:c0 + n, kh] = self.scale * acc_k[:n]
                dv[c0:c0 + n, kh] = acc_v[:n]
        return dk, dv


def _bounds(causal, window):
    left, right = window
    if causal:
        right = 0 if right < 0 else min(right, 0)
    return left, right


def emulate(q, k, v, do, *, d_tiles, causal=False, window=(-1, -1), softcap=0.0, slopes=None,
            align="bottom_right", cu_q=None, cu_k=None, scale=None):
    """(dq, dk, dv) of the kernels' tiled algorithm in float64 with the tiles of head dim
    ``d_tiles``; also checks that every kept (row, key) pair of a row that sees a key is
    visited exactly once by each kernel."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    left, right = _bounds(causal, window)
    kw = dict(scale=scale, causal=causal, window=window, softcap=softcap, align=align)
    if cu_q is None:
        seqs = [(q[i], k[i], v[i], do[i], None if slopes is None else
                 (slopes if slopes.ndim == 1 else slopes[i])) for i in range(q.shape[0])]
    else:
        seqs = [(q[cu_q[i]:cu_q[i + 1]], k[cu_k[i]:cu_k[i + 1]], v[cu_k[i]:cu_k[i + 1]],
                 do[cu_q[i]:cu_q[i + 1]], None if slopes is None else
                 (slopes if slopes.ndim == 1 else slopes[i])) for i in range(len(cu_q) - 1)]
    outs = []
    for qi, ki, vi, doi, sl in seqs:
        nq, nk = qi.shape[0], ki.shape[0]
        if nq:
            o, lse = attention(qi[None], ki[None], vi[None], alibi_slopes=sl, **kw)
            o, lse = o[0], lse[0]
        else:
            o, lse = np.zeros(qi.shape), np.zeros((qi.shape[1], 0))
        off = nk - nq if align == "bottom_right" else 0
        pb = _Problem(qi, ki, vi, doi, o, lse, scale, softcap, sl, left, right, off)
        dq = pb.dq(*spec.DQ_TILES[d_tiles])
        dk, dv = pb.dkdv(*spec.DKDV_TILES[d_tiles])
        # coverage: each kept pair of a row with a finite lse, once per kernel
        rows = np.arange(nq)[:, None] + off
        cols = np.arange(nk)[None, :]
        keep = np.ones((nq, nk), bool)
        if left >= 0:
            keep &= cols >= rows - left
        if right >= 0:
            keep &= cols <= rows + right
        need = keep[None] & np.isfinite(lse)[:, :, None]
        for which in range(2):
            assert (pb.visits[which][need] == 1).all()
            assert (pb.visits[which] <= 1).all()
        outs.append((dq, dk, dv))
    if cu_q is None:
        return tuple(np.stack([o[j] for o in outs]) for j in range(3))
    return tuple(np.concatenate([o[j] for o in outs]) for j in range(3))


CASES = [
    dict(),
    dict(causal=True),
    dict(causal=True, align="top_left"),
    dict(window=(16, 4)),
    dict(window=(0, 0)),
    dict(window=(70, -1)),
    dict(window=(-1, 3), align="top_left"),
    dict(causal=True, window=(40, 7)),
    dict(softcap=5.0),
    dict(causal=True, softcap=3.0, alibi="heads"),
    dict(window=(33, 20), alibi="batch_heads"),
]
SHAPES = [(100, 130), (130, 100), (64, 64), (1, 77), (150, 31)]


def _rand(rng, shape):
    return rng.standard_normal(shape)


def _case(rng, b, sq, sk, hq, hk, d, kw, varlen=False):
    kw = dict(kw)
    alibi = kw.pop("alibi", None)
    slopes = None
    if alibi == "heads":
        slopes = rng.uniform(0.01, 0.3, hq)
    elif alibi == "batch_heads":
        slopes = rng.uniform(0.01, 0.3, (b, hq))
    if varlen:
        q = _rand(rng, (sq, hq, d))
        k, v = _rand(rng, (sk, hk, d)), _rand(rng, (sk, hk, d))
        do = _rand(rng, (sq, hq, d))
    else:
        q = _rand(rng, (b, sq, hq, d))
        k, v = _rand(rng, (b, sk, hk, d)), _rand(rng, (b, sk, hk, d))
        do = _rand(rng, (b, sq, hq, d))
    return q, k, v, do, slopes, kw


@pytest.mark.parametrize("d_tiles", [64, 256])
@pytest.mark.parametrize("kw", CASES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items())
                         or "plain")
def test_emulation_matches_reference(kw, d_tiles):
    rng = np.random.default_rng(19)
    for sq, sk in SHAPES:
        for hq, hk in ((4, 4), (4, 1), (6, 2)):
            q, k, v, do, slopes, kw2 = _case(rng, 2, sq, sk, hq, hk, 8, kw)
            ref = attention_backward(q, k, v, do, alibi_slopes=slopes, **kw2)
            got = emulate(q, k, v, do, d_tiles=d_tiles, slopes=slopes, **kw2)
            for g, r, n in zip(got, ref, ("dq", "dk", "dv")):
                assert np.isfinite(g).all(), n
                np.testing.assert_allclose(g, r, rtol=1e-9, atol=1e-11,
                                           err_msg=f"{n} {sq}x{sk} {hq}/{hk} {kw}")


@pytest.mark.parametrize("d_tiles", [128, 192])
def test_emulation_varlen(d_tiles):
    rng = np.random.default_rng(7)
    cu_q = [0, 70, 70, 200, 201]          # an empty query sequence and a one-row one
    cu_k = [0, 90, 150, 150, 300]         # an empty key sequence (its rows see nothing)
    for kw in (dict(), dict(causal=True), dict(window=(20, 5), alibi="batch_heads"),
               dict(causal=True, softcap=4.0, align="top_left")):
        q, k, v, do, slopes, kw2 = _case(rng, 4, cu_q[-1], cu_k[-1], 4, 2, 8, kw, varlen=True)
        ref = attention_backward(q, k, v, do, alibi_slopes=slopes, cu_seqlens_q=cu_q,
                                 cu_seqlens_k=cu_k, **kw2)
        got = emulate(q, k, v, do, d_tiles=d_tiles, slopes=slopes, cu_q=cu_q, cu_k=cu_k, **kw2)
        for g, r, n in zip(got, ref, ("dq", "dk", "dv")):
            np.testing.assert_allclose(g, r, rtol=1e-9, atol=1e-11, err_msg=f"{n} {kw}")


def test_fully_masked_rows_give_zero():
    """bottom-right causal with Sq > Sk: the first Sq − Sk rows see no key (lse = −∞); their
    P is 0 (not NaN) and so is their dQ."""
    rng = np.random.default_rng(3)
    q, k, v, do, _, _ = _case(rng, 1, 90, 20, 2, 2, 8, {})
    dq, dk, dv = emulate(q, k, v, do, d_tiles=64, causal=True)
    assert (dq[:, :70] == 0).all() and np.isfinite(dq).all()
    ref = attention_backward(q, k, v, do, causal=True)
    np.testing.assert_allclose(dk, ref[1], rtol=1e-9, atol=1e-11)


# ------------------------------------------------------------------------- cross-compile
SAMPLES = {
    ArchSku.SM80: [("flash_bwd_pre", "f16", 96), ("flash_bwd_dkdv", "bf16", 128),
                   ("flash_bwd_dq", "f16", 64)],
    ArchSku.SM89: [("flash_bwd_pre", "bf16", 256), ("flash_bwd_dkdv", "f16", 192),
                   ("flash_bwd_dq", "bf16", 256)],
    ArchSku.SM90A: [("flash_bwd_pre", "f16", 64), ("flash_bwd_dkdv", "bf16", 256),
                    ("flash_bwd_dq", "bf16", 128)],
}


@pytest.mark.parametrize("arch,name,dtype,d", [(a,) + s for a, ss in SAMPLES.items()
                                               for s in ss])
def test_cross_compile(arch, name, dtype, d):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku
    from baracuda_dsl.ops import get_template

    t = get_template(name)
    kn = fwd_spec.FlashKnobs(dtype=dtype, head_dim=d)
    assert freeze_knobs(kn) in t.skus(arch.value)
    cubin, meta = compile_sku(name, freeze_knobs(kn), arch, timeout=600)
    g = t.geometry(kn)
    assert len(cubin) > 1000 and meta["threads"] == g.threads
    assert meta["smem_bytes"] == g.smem_bytes
