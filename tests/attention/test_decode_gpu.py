"""FlashDecodePlan on the GPU against the float64 reference (tests/_attention_ref.attention per
sequence, the cache cut to its L_b keys, causal bottom-right aligned): both dtypes and every
head dim, ragged cache_seqlens (0, 1, 17, S_max), contiguous and paged caches (shuffled block
table, page sizes 16 and 256, unused table entries pointing at a NaN page), GQA ratios 1 / 4 /
8 / 16, Sq = 1 and 4 (16 and 32 packed rows: one and two row groups), forced splits 1 / 3 / 16
and the heuristic's, sliding windows, softcap, strided q / out / lse (slices of packed
tensors), lse optional, empty problems, bit-stable reruns.

Outputs start as NaN, the workspace as 0xFF bytes, and the cache past each L_b holds NaN
(read, it would poison the output).  Bounds (tests/_checks.py): out errs by half an ulp of the
output dtype relative to itself, plus half an ulp of the input dtype relative to
Σ_j p_j·|v_j| (P is rounded to the input dtype before P·V, as in flash-attention), plus the
score error — the f32 dot products of the tensor cores, (D + 16)·eps32·scale·max_j Σ|q||k_j| —
twice relative to Σ p|v|, plus the f32 sums over the keys, (L/8 + 32)·eps32 relative to Σ p|v|;
lse errs by the score error, the sums' relative error and a few f32 roundings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests import _attention_ref as ref
from tests._checks import assert_equal, assert_within, eps

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")

from baracuda_dsl import PlanPreference  # noqa: E402
from baracuda_dsl.ops.attention.decode import (  # noqa: E402
    DecodeTuning, FlashDecodeArgs, FlashDecodeDescriptor, FlashDecodePlan)

DT = {"f16": torch.float16, "bf16": torch.bfloat16}
NAME = {"f16": "float16", "bf16": "bfloat16"}
EPS32 = eps("float32")


def _rand(g, shape, dt):
    x = torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1
    x = torch.where(x.abs() < 1e-3, torch.full_like(x, 0.25), x)    # non-zero
    return x.to(DT[dt])


class Case:
    """One decode problem: q (B, Sq, Hq, D) on the device (optionally a slice of a packed
    qkv tensor), the logical caches kc / vc (B, S_max, Hk, D) on the host with NaN past each
    L_b, and the device caches (contiguous, or pages + a shuffled block table)."""

    def __init__(self, B, Sq, Hq, Hk, D, seqlens, dt="bf16", smax=None, page=None, seed=0,
                 packed_q=False):
        self.B, self.Sq, self.Hq, self.Hk, self.D, self.dt = B, Sq, Hq, Hk, D, dt
        self.L = [int(x) for x in seqlens]
        self.smax = smax if smax is not None else max(self.L + [1])
        self.page = page
        g = torch.Generator().manual_seed(seed)
        if packed_q:
            self.qkv = _rand(g, (B, Sq, Hq + 2 * Hk, D), dt).cuda()
            self.q = self.qkv[:, :, :Hq]
        else:
            self.q = _rand(g, (B, Sq, Hq, D), dt).cuda()
        self.kc = _rand(g, (B, self.smax, Hk, D), dt)
        self.vc = _rand(g, (B, self.smax, Hk, D), dt)
        for b, n in enumerate(self.L):
            self.kc[b, min(n, self.smax):] = float("nan")
            self.vc[b, min(n, self.smax):] = float("nan")
        self.table = None
        if page is None:
            self.k, self.v = self.kc.cuda(), self.vc.cuda()
        else:
            per = -(-self.smax // page)
            used = [-(-min(n, self.smax) // page) for n in self.L]
            npages = sum(used) + 1                         # + one NaN page for unused entries
            perm = torch.randperm(npages - 1, generator=g).tolist()
            nan_page = npages - 1
            kp = torch.full((npages, page, Hk, D), float("nan"), dtype=DT[dt])
            vp = torch.full_like(kp, float("nan"))
            table = torch.full((B, per), nan_page, dtype=torch.int32)
            at = 0
            for b in range(B):
                for j in range(used[b]):
                    pg = perm[at]
                    at += 1
                    table[b, j] = pg
                    rows = slice(j * page, min((j + 1) * page, self.smax))
                    n = rows.stop - rows.start
                    kp[pg, :n] = self.kc[b, rows]
                    vp[pg, :n] = self.vc[b, rows]
            self.npages, self.per = npages, per
            self.k, self.v, self.table = kp.cuda(), vp.cuda(), table.cuda()
        self.seqlens = torch.tensor(self.L, dtype=torch.int32).cuda()

    def desc(self, **kw):
        msk = kw.pop("max_seqlen_k", min(max(self.L + [0]), self.smax))
        d = dict(dtype=self.dt)
        if self.page is None:
            d["cache_seqlen"] = self.smax
        else:
            d.update(paged=True, num_pages=self.npages, page_size=self.page,
                     pages_per_seq=self.per)
        d.update(kw)
        return FlashDecodeDescriptor(self.B, self.Sq, self.Hq, self.Hk, self.D, msk, **d)

    def run(self, splits=None, lse=True, out=None, lse_t=None, **kw):
        """Run the plan (``splits``: forced count, None: the heuristic); returns (out, lse,
        plan)."""
        tuning = () if splits is None else (DecodeTuning(num_splits=splits),)
        plan = FlashDecodePlan.select(self.desc(**kw), PlanPreference(tuning=tuning))
        if out is None:
            out = torch.full(self.q.shape, float("nan"), dtype=DT[self.dt], device="cuda")
        if lse_t is None and lse:
            lse_t = torch.full((self.B, self.Hq, self.Sq), float("nan"), dtype=torch.float32,
                               device="cuda")
        ws = plan.workspace_size()
        wsb = torch.full((max(ws, 1),), 255, dtype=torch.uint8, device="cuda")
        plan.run(FlashDecodeArgs(self.q, self.k, self.v, self.seqlens, out, lse_t, self.table),
                 workspace=wsb if ws else None)
        torch.cuda.synchronize()
        return out, lse_t, plan

    def reference(self, causal=True, window_left=-1, softcap=0.0, scale=None):
        """(out, lse, Σp|v|, score scale max_j scale·Σ_d|q||k_j|) in float64."""
        q = self.q.detach().double().cpu().numpy()
        kc = self.kc.double().numpy()
        vc = self.vc.double().numpy()
        sc = 1.0 / math.sqrt(self.D) if scale is None else scale
        out = np.zeros(q.shape)
        lse = np.full((self.B, self.Hq, self.Sq), -np.inf)
        mag = np.zeros(q.shape)
        smax = np.zeros((self.B, self.Sq, self.Hq))
        for b in range(self.B):
            L = min(self.L[b], self.smax)
            kw = dict(scale=sc, causal=causal, window=(window_left, -1), softcap=softcap,
                      align="bottom_right")
            o, ls = ref.attention(q[b:b + 1], kc[b:b + 1, :L], vc[b:b + 1, :L], **kw)
            m, _ = ref.attention(q[b:b + 1], kc[b:b + 1, :L], np.abs(vc[b:b + 1, :L]), **kw)
            out[b], lse[b], mag[b] = o[0], ls[0], m[0]
            if L:
                ke = np.repeat(np.abs(kc[b, :L]), self.Hq // self.Hk, axis=1)
                smax[b] = abs(sc) * np.einsum("thd,khd->thk", np.abs(q[b]), ke).max(-1)
        return out, lse, mag, smax


def check(case, res, causal=True, window_left=-1, softcap=0.0, scale=None, what=""):
    out, lse = res[0], res[1]
    r_out, r_lse, mag, smax = case.reference(causal, window_left, softcap, scale)
    dt = NAME[case.dt]
    # score error (natural-log units): the f32 dot products, the scale, exp2 / tanh roundings
    ds = (case.D + 16) * EPS32 * smax + 8 * EPS32 * (1.0 + softcap)
    # f32 sums over the keys: Oᵀ and the row sums (a warp's steps, then 8 groups, 4 warps,
    # the splits), relative to Σ p|v| and to l
    acc = (max(case.L + [0]) / 8 + 32) * EPS32
    u = eps(dt) / 2
    assert_within(out, r_out, dt, u, (u + acc) * mag + 2 * ds[..., None] * mag,
                  what=f"{what} out")
    if lse is not None:
        assert_within(lse, r_lse, "float32", 4 * EPS32,
                      np.transpose(ds, (0, 2, 1)) + acc + 4 * EPS32, what=f"{what} lse")


SEQLENS = [0, 1, 17, 300]          # ragged: empty, one key, odd, S_max


# ------------------------------------------------------------------------------ dtypes, D
@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("d", [64, 96, 128, 192, 256])
def test_dtypes_head_dims(dt, d):
    c = Case(4, 1, 8, 2, d, SEQLENS, dt, seed=d)
    for splits in (1, 3):
        check(c, c.run(splits), what=f"{dt} D{d} splits {splits}")


# --------------------------------------------------------------------- splits, GQA, Sq
@pytest.mark.parametrize("splits", [1, 3, 16])
@pytest.mark.parametrize("sq", [1, 4])
@pytest.mark.parametrize("hq,hk", [(4, 4), (16, 4), (16, 2)])
def test_splits_gqa_sq(splits, sq, hq, hk):
    c = Case(4, sq, hq, hk, 128, [0, 1, 17, 333], "bf16", seed=splits + sq + hq)
    out, lse, plan = c.run(splits)
    assert plan.num_splits == splits
    check(c, (out, lse), what=f"splits {splits} Sq {sq} G {hq // hk}")


@pytest.mark.parametrize("hq,hk,sq,d", [(16, 1, 1, 128), (32, 4, 4, 64), (16, 2, 2, 256),
                                        (32, 8, 4, 192)])
def test_row_groups(hq, hk, sq, d):
    """16 packed rows in one CTA (D <= 128), more rows over several row groups."""
    c = Case(2, sq, hq, hk, d, [257, 40], "f16", seed=hq + d)
    out, lse, plan = c.run(2)
    check(c, (out, lse), what=f"rows {hq // hk * sq} groups {plan.row_groups}")


def test_heuristic_splits_long_cache():
    c = Case(2, 1, 32, 8, 128, [5000, 8192], "bf16", seed=7)
    out, lse, plan = c.run(None)
    assert plan.num_splits > 1
    check(c, (out, lse), what=f"heuristic {plan.num_splits} splits")


# ------------------------------------------------------------------------------- paged
@pytest.mark.parametrize("page", [16, 256])
@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("splits", [1, 3])
def test_paged(page, dt, splits):
    c = Case(4, 4, 16, 4, 128, [0, 1, 17, 700], dt, page=page, seed=page + splits)
    check(c, c.run(splits), what=f"page {page} splits {splits}")


@pytest.mark.parametrize("d", [96, 256])
def test_paged_head_dims(d):
    c = Case(3, 1, 8, 1, d, [1, 500, 31], "bf16", page=16, seed=d)
    check(c, c.run(None), what=f"paged D{d}")


# -------------------------------------------------------------------- window, softcap
@pytest.mark.parametrize("left", [0, 5, 100])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("sq", [1, 4])
def test_window(left, causal, sq):
    c = Case(3, sq, 8, 2, 128, [1, 130, 600], "bf16", seed=left + sq)
    for splits in (1, 3):
        check(c, c.run(splits, causal=causal, window_left=left), causal=causal,
              window_left=left, what=f"window {left} causal {causal} splits {splits}")


@pytest.mark.parametrize("softcap", [5.0, 30.0])
@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_softcap_and_scale(softcap, dt):
    c = Case(2, 4, 8, 2, 64, [300, 77], dt, seed=int(softcap))
    check(c, c.run(3, softcap=softcap), softcap=softcap, what=f"softcap {softcap}")
    check(c, c.run(1, softcap=softcap, scale=0.7, causal=False), softcap=softcap, scale=0.7,
          causal=False, what="softcap + scale")


def test_non_causal_multi_token():
    c = Case(2, 4, 8, 8, 128, [3, 90], "bf16", seed=11)
    check(c, c.run(1, causal=False), causal=False, what="non-causal")


# ---------------------------------------------------------------------- layouts, lse
def test_strided_q_out_lse():
    c = Case(3, 4, 8, 2, 128, [17, 0, 200], "bf16", seed=3, packed_q=True)
    big = torch.full((3, 4, 12, 136), float("nan"), dtype=torch.bfloat16, device="cuda")
    out = big[:, :, 2:10, :128]                              # strided output
    lbig = torch.full((3, 4, 16), float("nan"), dtype=torch.float32, device="cuda")
    lse = lbig.permute(0, 2, 1)[:, 4:12]                     # (B, Hq, Sq), transposed strides
    res = c.run(3, out=out, lse_t=lse)
    check(c, res, what="strided")
    assert torch.isnan(big[:, :, :2]).all() and torch.isnan(big[:, :, 10:]).all()
    assert torch.isnan(big[..., 128:]).all()                 # nothing written outside
    assert torch.isnan(lbig[:, :, :4]).all() and torch.isnan(lbig[:, :, 12:]).all()


def test_strided_cache_views():
    """k / v caches that are slices of one (B, S, 2, Hk, D) kv buffer."""
    c = Case(2, 1, 8, 2, 64, [50, 129], "f16", seed=4)
    kv = torch.stack([c.k, c.v], dim=2)
    c.k, c.v = kv[:, :, 0], kv[:, :, 1]
    check(c, c.run(3), what="kv slices")


@pytest.mark.parametrize("splits", [1, 3])
def test_without_lse(splits):
    c = Case(2, 1, 8, 2, 128, [100, 3], "bf16", seed=5)
    out, lse, _ = c.run(splits, lse=False)
    assert lse is None
    check(c, (out, None), what="no lse")


def test_seqlen_past_capacity_is_clamped():
    """cache_seqlens beyond S_max read only the cache (L_b = S_max)."""
    c = Case(2, 1, 4, 4, 64, [64, 10], "bf16", smax=64, seed=6)
    c.seqlens = torch.tensor([1000, 10], dtype=torch.int32, device="cuda")
    out, lse, _ = c.run(3, max_seqlen_k=64)
    c.L = [64, 10]
    check(c, (out, lse), what="clamped")


# ------------------------------------------------------------------------- edge cases
def test_empty_problems():
    for b, sq, hq, hk in ((0, 1, 8, 2), (2, 0, 8, 2), (2, 1, 0, 0)):
        d = FlashDecodeDescriptor(b, sq, hq, hk, 64, 32, dtype="bf16")
        plan = FlashDecodePlan.select(d)
        q = torch.empty((b, sq, hq, 64), dtype=torch.bfloat16, device="cuda")
        kv = torch.empty((b, 32, hk, 64), dtype=torch.bfloat16, device="cuda")
        plan.run(FlashDecodeArgs(q, kv, kv.clone(), torch.zeros(b, dtype=torch.int32,
                                                                device="cuda"), q.clone()))
    # no keys anywhere: out 0, lse -inf
    c = Case(2, 2, 4, 2, 64, [0, 0], "bf16", smax=16, seed=8)
    out, lse, _ = c.run(None, max_seqlen_k=0)
    assert_equal(out, torch.zeros_like(out))
    assert torch.isneginf(lse).all()


def test_bit_stable_reruns():
    c = Case(3, 4, 16, 4, 128, [1000, 17, 513], "bf16", page=16, seed=9)
    a = c.run(3)
    b = c.run(3)
    assert_equal(a[0], b[0], "out")
    assert_equal(a[1], b[1], "lse")
