"""FlashDecodePlan without a GPU: descriptor and operand validation (one typed error each), the
SKU space and the rows / row-group choice, the split heuristic and the tuning record, the exact
workspace size and launch arguments (``launches`` fixture), a lane-level numpy emulation of the
``attn_decode`` / ``attn_decode_combine`` algorithms (PTX fragment layouts of ``mma.m16n8k16``,
``movmatrix`` and ``prmt``, the kernels' load permutations, splits, masks, the warp merge)
against the float64 reference, and a cross-compile sample of both templates per arch."""

import math

import numpy as np
import pytest

from baracuda_dsl import ArchSku, PlanPreference
from baracuda_dsl.dtypes import bfloat16, float16, float32, int32
from baracuda_dsl.errors import (InvalidProblemError, MisalignedOperandError, UnsupportedError,
                                 WorkspaceTooSmallError)
from baracuda_dsl.ops.attention.decode import (DecodeTuning, FlashDecodeArgs,
                                               FlashDecodeDescriptor, FlashDecodePlan,
                                               choose_num_splits)
from baracuda_dsl.ops.attention.specs import decode as spec
from baracuda_dsl.tensor import TensorView
from baracuda_dsl.vocabulary import Workspace
from tests._attention_ref import attention

PREF = PlanPreference(arch=ArchSku.SM90A, tuning=DecodeTuning(sm_count=132))


def pref(**kw):
    kw.setdefault("sm_count", 132)
    return PlanPreference(arch=ArchSku.SM90A, tuning=DecodeTuning(**kw))


def view(ptr, shape, dtype=bfloat16, strides=None):
    if strides is None:
        strides, acc = [], 1
        for n in reversed(shape):
            strides.insert(0, acc)
            acc *= max(n, 1)
    return TensorView(ptr, shape, strides, dtype, 0)


def desc(**kw):
    base = dict(batch=4, seqlen_q=1, heads_q=32, heads_k=8, head_dim=128, max_seqlen_k=4096)
    base.update(kw)
    return FlashDecodeDescriptor(**base)


# ------------------------------------------------------------------------- validation
def test_descriptor_validation():
    d = desc()
    assert d.group == 4 and d.rows == 4 and d.capacity == 4096 and d.cache_seqlen == 4096
    assert math.isclose(d.softmax_scale, 1 / math.sqrt(128))
    assert desc(scale=0.25).softmax_scale == 0.25
    assert desc(cache_seqlen=5000).kv_shape() == (4, 5000, 8, 128)
    p = desc(paged=True, num_pages=100, page_size=256, pages_per_seq=16)
    assert p.kv_shape() == (100, 256, 8, 128) and p.table_shape() == (4, 16)
    assert p.capacity == 4096 and p.cache_seqlen == 0
    assert desc(window_left=100, seqlen_q=4).window_keys == 100 + 4 + 15
    with pytest.raises(UnsupportedError, match="FlashAttentionPlan"):
        desc(seqlen_q=17)
    with pytest.raises(UnsupportedError, match="SdpaPlan"):
        desc(dtype="f32")
    with pytest.raises(UnsupportedError, match="SdpaPlan"):
        desc(head_dim=80)
    with pytest.raises(UnsupportedError, match="SdpaPlan"):
        desc(head_dim_v=64)
    with pytest.raises(UnsupportedError):
        desc(dtype="int32")
    with pytest.raises(InvalidProblemError, match="multiple"):
        desc(heads_k=3)
    with pytest.raises(InvalidProblemError):
        desc(batch=-1)
    with pytest.raises(InvalidProblemError):
        desc(seqlen_q=1.0)
    with pytest.raises(InvalidProblemError):
        desc(window_left=-2)
    with pytest.raises(InvalidProblemError):
        desc(softcap=-1.0)
    with pytest.raises(InvalidProblemError):
        desc(softcap=float("nan"))
    with pytest.raises(InvalidProblemError):
        desc(scale=float("inf"))
    with pytest.raises(InvalidProblemError, match="capacity"):
        desc(cache_seqlen=1000)
    with pytest.raises(InvalidProblemError, match="capacity"):
        desc(paged=True, num_pages=10, page_size=16, pages_per_seq=4)
    with pytest.raises(UnsupportedError, match="multiples of 16"):
        desc(paged=True, num_pages=10, page_size=24, pages_per_seq=200)
    with pytest.raises(InvalidProblemError):
        desc(paged=True, num_pages=10, page_size=0, pages_per_seq=200)
    with pytest.raises(InvalidProblemError):
        desc(paged=True, num_pages=0, page_size=256, pages_per_seq=16)
    with pytest.raises(InvalidProblemError):
        desc(paged=True, num_pages=10, page_size=256, pages_per_seq=16, cache_seqlen=4096)
    with pytest.raises(InvalidProblemError, match="paged=True"):
        desc(page_size=256)
    with pytest.raises(UnsupportedError):
        desc(max_seqlen_k=2**31)
    with pytest.raises(UnsupportedError):
        desc(batch=70000)
    with pytest.raises(InvalidProblemError):
        FlashDecodePlan.select(object(), PREF)
    # empty problems are valid descriptors
    for d in (desc(batch=0), desc(seqlen_q=0), desc(heads_q=0, heads_k=0), desc(max_seqlen_k=0)):
        assert d.batch >= 0


def test_tuning_validation():
    assert DecodeTuning(num_splits=3).num_splits == 3
    with pytest.raises(InvalidProblemError):
        DecodeTuning(num_splits=2, tokens_per_split=64)
    with pytest.raises(InvalidProblemError):
        DecodeTuning(num_splits=-1)
    with pytest.raises(InvalidProblemError):
        DecodeTuning(max_splits=0)
    with pytest.raises(InvalidProblemError):
        DecodeTuning(wave_efficiency=1.5)
    hash(DecodeTuning(num_splits=3))


def _args(d, **over):
    q = view(0x100000, d.q_shape())
    k = view(0x10000000, d.kv_shape())
    v = view(0x20000000, d.kv_shape())
    seq = view(0x300000, (d.batch,), int32)
    o = view(0x400000, d.q_shape())
    lse = view(0x500000, d.lse_shape(), float32)
    a = dict(q=q, k_cache=k, v_cache=v, cache_seqlens=seq, out=o, lse=lse)
    if d.paged:
        a["block_table"] = view(0x600000, d.table_shape(), int32)
    a.update(over)
    return FlashDecodeArgs(**a)


def test_operand_errors(launches):
    d = desc()
    plan = FlashDecodePlan.select(d, pref(num_splits=1))
    with pytest.raises(InvalidProblemError):                     # wrong shape
        plan.run(_args(d, q=view(0x100000, (4, 2, 32, 128))))
    with pytest.raises(UnsupportedError):                        # wrong dtype
        plan.run(_args(d, k_cache=view(0x10000000, d.kv_shape(), float16)))
    with pytest.raises(UnsupportedError, match="unit stride"):
        plan.run(_args(d, v_cache=view(0x20000000, d.kv_shape(),
                                       strides=(4096 * 2048, 2048, 256, 2))))
    with pytest.raises(UnsupportedError, match="multiples of 8"):
        plan.run(_args(d, k_cache=view(0x10000000, d.kv_shape(),
                                       strides=(4096 * 8 * 132, 8 * 132, 132, 1))))
    with pytest.raises(MisalignedOperandError):
        plan.run(_args(d, q=view(0x100008, d.q_shape())))
    with pytest.raises(MisalignedOperandError):
        plan.run(_args(d, out=view(0x400004, d.q_shape())))
    with pytest.raises(InvalidProblemError, match="overlaps"):
        plan.run(_args(d, out=view(0x100000, d.q_shape())))
    with pytest.raises(InvalidProblemError, match="overlaps"):
        plan.run(_args(d, lse=view(0x400000, d.lse_shape(), float32)))
    with pytest.raises(InvalidProblemError, match="broadcast"):
        plan.run(_args(d, out=view(0x400000, d.q_shape(), strides=(0, 4096, 128, 1))))
    with pytest.raises(UnsupportedError):                        # cache_seqlens int64
        plan.run(_args(d, cache_seqlens=view(0x300000, (4,), "int64")))
    with pytest.raises(UnsupportedError, match="contiguous"):
        plan.run(_args(d, cache_seqlens=view(0x300000, (4,), int32, strides=(2,))))
    with pytest.raises(UnsupportedError):                        # lse f16
        plan.run(_args(d, lse=view(0x500000, d.lse_shape(), float16)))
    with pytest.raises(InvalidProblemError, match="paged"):
        plan.run(_args(d, block_table=view(0x600000, (4, 16), int32)))
    with pytest.raises(InvalidProblemError):                     # argument missing
        plan.run(_args(d, cache_seqlens=None))
    p = desc(paged=True, num_pages=64, page_size=256, pages_per_seq=16)
    pplan = FlashDecodePlan.select(p, pref(num_splits=1))
    with pytest.raises(InvalidProblemError):                     # paged without a block table
        pplan.run(_args(p, block_table=None))
    with pytest.raises(UnsupportedError, match="contiguous"):
        pplan.run(_args(p, block_table=view(0x600000, (4, 16), int32, strides=(32, 2))))
    split = FlashDecodePlan.select(d, pref(num_splits=4))
    with pytest.raises(WorkspaceTooSmallError):
        split.run(_args(d))
    with pytest.raises(WorkspaceTooSmallError):
        split.run(_args(d), workspace=_ws(split.workspace_size() - 256))
    with pytest.raises(MisalignedOperandError):
        split.run(_args(d), workspace=_ws(split.workspace_size(), 0x7000008))
    assert not launches


def _ws(nbytes, ptr=0x7000000):
    return Workspace(ptr, nbytes)


# ------------------------------------------------------------------- SKUs and the choice
def test_sku_space():
    from baracuda_dsl.ops import get_template

    for arch in ("sm80", "sm89", "sm90a"):
        dec = get_template("attn_decode").skus(arch)
        comb = get_template("attn_decode_combine").skus(arch)
        assert len(dec) == 2 * (5 + 3) and len(comb) == 2
    for k in spec._space():
        g = spec.ATTN_DECODE.geometry(k)
        assert g.threads == spec.THREADS and g.smem_bytes <= 48 * 1024
        assert k.rows == 8 or k.head_dim <= spec.WIDE_MAX_D
        assert 1 <= spec.ctas_per_sm(k) <= 4


@pytest.mark.parametrize("hd", spec.HEAD_DIMS)
def test_rows_and_row_groups(hd):
    from baracuda_dsl.jit import freeze_knobs

    space = set(spec.ATTN_DECODE.skus("sm90a"))
    for hq, hk, sq in ((8, 8, 1), (32, 8, 1), (64, 8, 1), (32, 8, 2), (32, 8, 4), (64, 8, 4),
                       (16, 1, 1), (16, 1, 16), (4, 4, 16)):
        d = desc(heads_q=hq, heads_k=hk, seqlen_q=sq, head_dim=hd)
        plan = FlashDecodePlan.select(d, PREF)
        rows = plan._knobs.rows
        assert freeze_knobs(plan._knobs) in space and plan.sku().knobs == freeze_knobs(plan._knobs)
        r = (hq // hk) * sq
        if r <= 8:
            assert rows == 8 and plan.row_groups == 1
        elif hd <= 128:
            assert rows == 16 and plan.row_groups == -(-r // 16)
        else:
            assert rows == 8 and plan.row_groups == -(-r // 8)


def test_split_heuristic():
    t = DecodeTuning()
    slots = 132 * 3
    # small grids split until the GPU is full; big grids do not split
    assert choose_num_splits(16 * 8, 4096, slots, t) == 3
    assert choose_num_splits(64 * 8, 8192, slots, t) >= 1
    for ctas in (1, 7, 32, 128, 200, 396, 512, 1000, 5000):
        for keys in (0, 15, 256, 1000, 4096, 65536):
            s = choose_num_splits(ctas, keys, slots, t)
            assert 1 <= s <= max(1, min(t.max_splits, keys // t.min_tokens_per_split))
            waves = ctas * s / slots
            if ctas * t.max_splits >= slots and keys >= t.max_splits * t.min_tokens_per_split:
                assert waves / math.ceil(waves) >= 0.8, (ctas, keys, s)
    # below one wave the efficiency grows with the splits: within 90 % of the most
    assert 0.9 * t.max_splits <= choose_num_splits(1, 100000, slots, t) <= t.max_splits
    assert choose_num_splits(1, 300, slots, t) == 1              # min tokens per split
    assert choose_num_splits(1, 100000, slots, DecodeTuning(max_splits=8)) == 8
    assert choose_num_splits(0, 100, slots, t) == 1
    # through the plan: 16 sequences x 8 kv heads on 132 SMs
    assert FlashDecodePlan.select(desc(batch=16), PREF).num_splits == 3
    assert FlashDecodePlan.select(desc(batch=16, max_seqlen_k=300), PREF).num_splits == 1
    # a window bounds the keys a CTA reads, so no split is shorter than the minimum
    assert FlashDecodePlan.select(desc(batch=1, max_seqlen_k=65536, window_left=500),
                                  PREF).num_splits == 2
    # the SM count is the tuning's, the device's, or the arch default
    assert FlashDecodePlan.select(desc(batch=16), pref(sm_count=8)).num_splits == 2


def test_forced_splits_and_workspace():
    d = desc(batch=3, seqlen_q=2, max_seqlen_k=1000)
    rows = 3 * 32 * 2
    for n in (1, 3, 16):
        plan = FlashDecodePlan.select(d, pref(num_splits=n))
        assert plan.num_splits == n and plan._tps == 0
        want = 0 if n == 1 else (-(-n * rows * 128 * 4 // 256) * 256 + -(-n * rows * 4 // 256)
                                 * 256)
        assert plan.workspace_size() == want
        assert bool(plan._flags & spec.DIRECT) == (n == 1)
    plan = FlashDecodePlan.select(d, pref(tokens_per_split=100))  # rounded up to 112
    assert plan._tps == 112 and plan.num_splits == 9
    # max_workspace_bytes caps the heuristic, refuses a forced count that does not fit
    big = desc(batch=1, max_seqlen_k=65536)
    free = FlashDecodePlan.select(big, PREF)
    assert free.num_splits > 1
    capped = FlashDecodePlan.select(big, PlanPreference(
        arch=ArchSku.SM90A, max_workspace_bytes=free.workspace_bytes(2),
        tuning=DecodeTuning(sm_count=132)))
    assert capped.num_splits == 2 and capped.workspace_size() <= free.workspace_bytes(2)
    with pytest.raises(UnsupportedError, match="max_workspace_bytes"):
        FlashDecodePlan.select(big, PlanPreference(
            arch=ArchSku.SM90A, max_workspace_bytes=1000, tuning=DecodeTuning(num_splits=4)))


def test_launch_arguments(launches):
    d = desc(batch=2, seqlen_q=2, heads_q=16, heads_k=2, head_dim=64, max_seqlen_k=1000,
             cache_seqlen=1024, window_left=100, softcap=30.0, scale=0.5)
    plan = FlashDecodePlan.select(d, pref(num_splits=3))
    a = _args(d)
    ws = plan.workspace_size()
    plan.run(a, workspace=_ws(ws))
    (n1, k1, g1, a1, _), (n2, k2, g2, a2, _) = launches
    assert n1 == "attn_decode" and k1 == {"dtype": "bf16", "head_dim": 64, "rows": 16}
    assert g1 == (3 * 1, 2, 2)
    rows_total = 2 * 16 * 2
    assert a1[:9] == [0x100000, 0x10000000, 0x20000000, 0x400000, 0x500000, 0x300000, 0, 0x7000000,
                      0x7000000 + 3 * rows_total * 64 * 4]
    assert a1[9:18] == [2, 8, 16, 1, 2, 3, 0, 0, 1024]          # sq ratio rows nrg hk n tps page cap
    assert a1[18:21] == [2 * 16 * 64, 16 * 64, 64]               # q (b, s, h)
    assert a1[21:24] == [1024 * 2 * 64, 2 * 64, 64]              # k (b, s, h)
    assert a1[27] == 0                                           # no block table
    assert a1[31:34] == [16 * 2, 2, 1]                           # lse (b, h, t)
    assert math.isclose(a1[34], 0.5 / 30.0, rel_tol=1e-12)
    assert math.isclose(a1[35], 30.0 * math.log2(math.e), rel_tol=1e-12)
    assert a1[36] == 100 and a1[37] == spec.CAUSAL | spec.SOFTCAP | spec.HAS_LSE
    assert n2 == "attn_decode_combine" and k2 == {"dtype": "bf16"}
    assert g2 == (-(-rows_total // spec.COMBINE_WARPS), 1, 1)
    assert a2[:4] == [a1[7], a1[8], 0x400000, 0x500000]
    assert a2[4:10] == [rows_total, 3, 64, 16, 2, 8]
    assert a2[10:16] == a1[28:34] and a2[16] == spec.HAS_LSE


def test_launch_arguments_paged_direct(launches):
    d = desc(batch=3, seqlen_q=1, heads_q=8, heads_k=8, head_dim=256, max_seqlen_k=500,
             paged=True, num_pages=40, page_size=16, pages_per_seq=32, causal=False)
    plan = FlashDecodePlan.select(d, pref(num_splits=1))
    assert plan.workspace_size() == 0
    plan.run(_args(d, lse=None))
    (name, knobs, grid, a, _), = launches
    assert knobs == {"dtype": "bf16", "head_dim": 256} and grid == (1, 8, 3)
    assert a[4] == 0 and a[6] == 0x600000 and a[7:9] == [0, 0]
    assert a[9:18] == [1, 1, 1, 1, 8, 1, 0, 16, 512]
    assert a[21:24] == [16 * 8 * 256, 8 * 256, 256]              # page, row, head strides
    assert a[27] == 32                                           # block table row stride
    assert math.isclose(a[34], math.log2(math.e) / 16, rel_tol=1e-12) and a[35] == 1.0
    assert a[36] == -1 and a[37] == spec.PAGED | spec.DIRECT


def test_strided_views_and_unit_extents(launches):
    # q / out slices of packed tensors; extent-1 dims may have any stride
    d = desc(batch=1, seqlen_q=1, heads_q=8, heads_k=2, head_dim=128, max_seqlen_k=64)
    plan = FlashDecodePlan.select(d, pref(num_splits=1))
    q = view(0x100000, d.q_shape(), strides=(3, 7, 384, 1))
    kv = view(0x10000000, d.kv_shape(), strides=(99, 4 * 128, 2 * 128, 1))
    plan.run(_args(d, q=q, k_cache=kv))
    (_, _, _, a, _), = launches
    assert a[18:21] == [0, 0, 384] and a[21:24] == [0, 512, 256]


def test_empty_problems(launches):
    for d in (desc(batch=0), desc(seqlen_q=0), desc(heads_q=0, heads_k=0)):
        plan = FlashDecodePlan.select(d, PREF)
        assert plan.is_empty() and plan.workspace_size() == 0
        plan.run(_args(d))
    assert not launches
    # no keys at all: one launch writes out = 0 and lse = -inf
    d = desc(max_seqlen_k=0)
    plan = FlashDecodePlan.select(d, PREF)
    assert plan.num_splits == 1
    plan.run(_args(d))
    assert len(launches) == 1


# ---------------------------------------------------------- numpy emulation of the kernels
LANE = np.arange(32)
GI, CI = LANE // 4, LANE % 4


def _round(x, dt):
    import ml_dtypes

    t = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}[dt]
    return np.asarray(x, np.float32).astype(t).astype(np.float64)


def _mma(a, b, c):
    """PTX mma.m16n8k16 (row.col) on per-lane fragments: a (32, 4 regs, 2 halves), b (32, 2,
    2), c (32, 4); float64 products and sums."""
    A, B, C = np.zeros((16, 16)), np.zeros((16, 8)), np.zeros((16, 8))
    for r in range(4):
        for e in range(2):
            A[GI + 8 * (r % 2), 2 * CI + e + 8 * (r // 2)] = a[:, r, e]
    for r in range(2):
        for e in range(2):
            B[2 * CI + e + 8 * r, GI] = b[:, r, e]
    for i in range(4):
        C[GI + 8 * (i // 2), 2 * CI + i % 2] = c[:, i]
    Dm = A @ B + C
    return np.stack([Dm[GI + 8 * (i // 2), 2 * CI + i % 2] for i in range(4)], axis=1)


def _movmatrix(x):
    """movmatrix.m8n8.trans.b16: x (32, 2) with lane 4i + j holding row i, columns 2j, 2j + 1."""
    M = np.zeros((8, 8))
    for e in range(2):
        M[GI, 2 * CI + e] = x[:, e]
    T = M.T
    return np.stack([T[GI, 2 * CI + e] for e in range(2)], axis=1)


def _out_column(mt, h, gi, bv):
    lam = 2 * mt + h
    return (8 * (lam // bv) + gi) * bv + lam % bv


class _Problem:
    """A decode problem in float64 with data rounded to ``dt``; paged or contiguous."""

    def __init__(self, rng, B, Sq, Hq, Hk, D, seqlens, dt, paged=None, causal=True, left=-1,
                 softcap=0.0):
        self.B, self.Sq, self.Hq, self.Hk, self.D, self.dt = B, Sq, Hq, Hk, D, dt
        self.L = list(seqlens)
        self.causal, self.left, self.softcap = causal, left, softcap
        smax = max(max(self.L), 1)
        self.q = _round(rng.standard_normal((B, Sq, Hq, D)), dt)
        self.k = _round(rng.standard_normal((B, smax, Hk, D)), dt)
        self.v = _round(rng.standard_normal((B, smax, Hk, D)), dt)
        self.paged = paged
        if paged:
            per = -(-smax // paged)
            perm = rng.permutation(B * per)
            self.table = perm.reshape(B, per)
            self.pages = np.full((B * per, paged, Hk, D), np.nan)
            for b in range(B):
                for p in range(smax):
                    self.pages[self.table[b, p // paged], p % paged] = self.k[b, p]
            self.vpages = np.full_like(self.pages, np.nan)
            for b in range(B):
                for p in range(smax):
                    self.vpages[self.table[b, p // paged], p % paged] = self.v[b, p]
        # the cache past each L_b is never to be read
        for b in range(B):
            self.k[b, self.L[b]:] = np.nan
            self.v[b, self.L[b]:] = np.nan
            if paged:
                for p in range(self.L[b], smax):
                    self.pages[self.table[b, p // paged], p % paged] = np.nan
                    self.vpages[self.table[b, p // paged], p % paged] = np.nan

    def rows(self, which, b, hk, base, toks, ok):
        """The kernel's view of key rows base + toks (zeros where not ok), as it addresses
        them: the step's page, then row (base mod page) + tok."""
        out = np.zeros((32, self.D))
        if self.paged:
            page = self.table[b, base // self.paged]
            prow = base % self.paged + toks
            assert (prow[ok] < self.paged).all(), "a step crossed a page"
            src = (self.pages if which == "k" else self.vpages)[page]
            out[ok] = src[prow[ok], hk]
        else:
            src = self.k if which == "k" else self.v
            out[ok] = src[b, base + toks[ok], hk]
        return out

    def reference(self):
        out = np.zeros((self.B, self.Sq, self.Hq, self.D))
        lse = np.full((self.B, self.Hq, self.Sq), -np.inf)
        mag = np.zeros_like(out)
        for b in range(self.B):
            L = self.L[b]
            kw = dict(scale=1 / math.sqrt(self.D), causal=self.causal, window=(self.left, -1),
                      softcap=self.softcap, align="bottom_right")
            o, ls = attention(self.q[b:b + 1], self.k[b:b + 1, :L], self.v[b:b + 1, :L], **kw)
            m, _ = attention(self.q[b:b + 1], self.k[b:b + 1, :L], np.abs(self.v[b:b + 1, :L]),
                             **kw)
            out[b], lse[b], mag[b] = o[0], ls[0], m[0]
        return out, lse, mag


def _emulate_cta(P, b, hk, rg, split, nsplit, tps, rc):
    """One attn_decode CTA, lane by lane as kernels/decode.py computes it: returns
    {row: (o (D,), lse2)} for the group's valid rows."""
    D, dt = P.D, P.dt
    NT, KV, KW, KSTEPS = rc // 8, D // 32, D // 8, D // 16
    BV = 8 if D % 64 == 0 else 4
    VV, MT = D // (8 * BV), D // 16
    ratio, sq, nrows = P.Hq // P.Hk, P.Sq, (P.Hq // P.Hk) * P.Sq
    scale = 1 / math.sqrt(D)
    if P.softcap:
        smul, cmul = scale / P.softcap, P.softcap * math.log2(math.e)
    else:
        smul, cmul = scale * math.log2(math.e), 1.0
    left = P.left
    L = P.L[b]
    lo_all = max(L - sq - left, 0) if left >= 0 else 0
    lo_a = lo_all - lo_all % 16
    per = max(((L - lo_a + nsplit - 1) // nsplit + 15) // 16 * 16, tps)
    t0 = lo_a + split * per
    t1 = min(t0 + per, L)
    nsteps = (max(t1 - t0, 0) + 15) // 16
    row0 = rg * rc
    # Q fragments
    qw = np.zeros((NT, 32, KW, 2))
    for nt in range(NT):
        r = row0 + nt * 8 + GI
        ok = r < nrows
        rr = np.where(ok, r, 0)
        t, h = rr // ratio, hk * ratio + rr % ratio
        rowsq = np.where(ok[:, None], P.q[b, t, h], 0.0)
        for v in range(KV):
            for e in range(4):
                for half in range(2):
                    qw[nt, :, 4 * v + e, half] = rowsq[LANE, (CI + 4 * v) * 8 + 2 * e + half]
    lo = np.zeros((2 * NT, 32), int)
    hi = np.zeros((2 * NT, 32), int)
    for nt in range(NT):
        for j in range(2):
            t = (row0 + nt * 8 + 2 * CI + j) // ratio
            pos = L - sq + t
            hi[2 * nt + j] = pos if P.causal else L - 1
            lo[2 * nt + j] = pos - left if left >= 0 else 0
    t_first = row0 // ratio
    t_last = (min(row0 + rc, nrows) - 1) // ratio
    full_hi = min(t1, L - sq + t_first + 1) if P.causal else t1
    full_lo = max(t0, L - sq + t_last - left) if left >= 0 else t0
    sO = np.zeros((4, rc, D))
    sM = np.full((4, rc), -np.inf)
    sL = np.zeros((4, rc))
    for w in range(4):
        m = np.full((2 * NT, 32), -np.inf)
        lsum = np.zeros((2 * NT, 32))
        acc = np.zeros((MT, NT, 32, 4))
        for st in range(w, nsteps, 4):
            base = t0 + 16 * st
            nval = t1 - base
            kw = np.zeros((2, 32, KW, 2))
            for i in range(2):
                tok = GI + 8 * i
                rows = P.rows("k", b, hk, base, tok, tok < nval)
                for v in range(KV):
                    for e in range(4):
                        for half in range(2):
                            kw[i, :, 4 * v + e, half] = rows[LANE, (CI + 4 * v) * 8 + 2 * e + half]
            vw = np.zeros((4, 32, MT, 2))
            for j in range(4):
                tok = 2 * CI + j % 2 + 8 * (j // 2)
                rows = P.rows("v", b, hk, base, tok, tok < nval)
                for u in range(VV):
                    for e in range(BV // 2):
                        for half in range(2):
                            vw[j, :, (BV // 2) * u + e, half] = \
                                rows[LANE, (GI + 8 * u) * BV + 2 * e + half]
            s = np.zeros((NT, 32, 4))
            for kk in range(KSTEPS):
                for nt in range(NT):
                    a = np.stack([kw[0, :, 2 * kk], kw[1, :, 2 * kk], kw[0, :, 2 * kk + 1],
                                  kw[1, :, 2 * kk + 1]], axis=1)
                    bb = np.stack([qw[nt, :, 2 * kk], qw[nt, :, 2 * kk + 1]], axis=1)
                    s[nt] = _mma(a, bb, s[nt])
            s = cmul * np.tanh(s * smul) if P.softcap else s * smul
            if base < full_lo or base + 16 > full_hi:
                for nt in range(NT):
                    for e in range(4):
                        tok = base + GI + 8 * (e // 2)
                        keep = (tok < t1) & (tok <= hi[2 * nt + e % 2]) & (tok >= lo[2 * nt + e % 2])
                        s[nt][:, e] = np.where(keep, s[nt][:, e], -np.inf)
            else:   # the uniform test may only skip steps where nothing is masked
                assert np.isfinite(s).all()
            for nt in range(NT):
                for j in range(2):
                    mx = np.maximum(s[nt][:, j], s[nt][:, 2 + j])
                    mx = np.array([mx[CI == c].max() for c in CI])      # over the 8 groups
                    mnew = np.maximum(m[2 * nt + j], mx)
                    ms = np.where(mnew == -np.inf, 0.0, mnew)
                    alpha = np.exp2(m[2 * nt + j] - ms)
                    pa, pb = np.exp2(s[nt][:, j] - ms), np.exp2(s[nt][:, 2 + j] - ms)
                    lsum[2 * nt + j] = lsum[2 * nt + j] * alpha + pa + pb
                    m[2 * nt + j] = mnew
                    s[nt][:, j], s[nt][:, 2 + j] = pa, pb
                    acc[:, nt, :, j] *= alpha
                    acc[:, nt, :, 2 + j] *= alpha
            pf = np.zeros((2, NT, 32, 2))
            for nt in range(NT):
                pf[0, nt] = _movmatrix(np.stack([_round(s[nt][:, 0], dt), _round(s[nt][:, 1], dt)], 1))
                pf[1, nt] = _movmatrix(np.stack([_round(s[nt][:, 2], dt), _round(s[nt][:, 3], dt)], 1))
            for mt in range(MT):
                a = np.stack([np.stack([vw[0, :, mt, 0], vw[1, :, mt, 0]], 1),   # prmt 0x5410
                              np.stack([vw[0, :, mt, 1], vw[1, :, mt, 1]], 1),   # prmt 0x7632
                              np.stack([vw[2, :, mt, 0], vw[3, :, mt, 0]], 1),
                              np.stack([vw[2, :, mt, 1], vw[3, :, mt, 1]], 1)], axis=1)
                for nt in range(NT):
                    acc[mt, nt] = _mma(a, np.stack([pf[0, nt], pf[1, nt]], 1), acc[mt, nt])
        for nt in range(NT):
            for j in range(2):
                tot = np.array([lsum[2 * nt + j][CI == c].sum() for c in CI])
                for lane in range(4):                               # gi == 0
                    sM[w, nt * 8 + 2 * lane + j] = m[2 * nt + j][lane]
                    sL[w, nt * 8 + 2 * lane + j] = tot[lane]
            for mt in range(MT):
                for e in range(4):
                    row = nt * 8 + 2 * CI + e % 2
                    col = _out_column(mt, e // 2, GI, BV)
                    sO[w, row, col] = acc[mt, nt, :, e]
    res = {}
    for r in range(rc):
        grow = row0 + r
        if grow >= nrows:
            continue
        mm = sM[:, r].max()
        mb = 0.0 if mm == -np.inf else mm
        wt = np.exp2(sM[:, r] - mb)
        tot = (wt * sL[:, r]).sum()
        o = (wt[:, None] * sO[:, r]).sum(0)
        if tot > 0:
            res[grow] = (o / tot, mm + math.log2(tot))
        else:
            res[grow] = (o * 0.0, -np.inf)
    return res


def _emulate(P, nsplit, tps=0):
    rc = 8 if P.Hq // P.Hk * P.Sq <= 8 or P.D > 128 else 16
    nrows = P.Hq // P.Hk * P.Sq
    nrg = -(-nrows // rc)
    out = np.full((P.B, P.Sq, P.Hq, P.D), np.nan)
    lse = np.full((P.B, P.Hq, P.Sq), np.nan)
    ratio = P.Hq // P.Hk
    for b in range(P.B):
        for hk in range(P.Hk):
            parts = {}
            for split in range(nsplit):
                for rg in range(nrg):
                    for row, val in _emulate_cta(P, b, hk, rg, split, nsplit, tps, rc).items():
                        parts.setdefault(row, []).append(val)
            for row, vals in parts.items():
                assert len(vals) == nsplit
                t, h = row // ratio, hk * ratio + row % ratio
                if nsplit == 1:
                    o, l2 = vals[0]
                else:                                   # attn_decode_combine
                    ls = np.array([v[1] for v in vals])
                    mx = ls.max()
                    tot = np.exp2(ls - (0.0 if mx == -np.inf else mx)).sum()
                    l2 = mx + math.log2(tot) if tot > 0 else -np.inf
                    wts = np.exp2(ls - (0.0 if l2 == -np.inf else l2))
                    o = sum(wgt * v[0] for wgt, v in zip(wts, vals))
                out[b, t, h] = _round(o, P.dt)
                lse[b, h, t] = l2 * math.log(2.0)
    return out, lse


EMU_CASES = [
    # D, Hq, Hk, Sq, seqlens, paged, causal, left, softcap, splits
    (64, 4, 1, 1, [17, 40, 0], None, True, -1, 0.0, 1),
    (96, 8, 2, 1, [33, 1], None, True, -1, 0.0, 3),
    (128, 8, 2, 4, [50, 3], 16, True, -1, 0.0, 2),              # rows 16, L < Sq
    (128, 16, 1, 2, [37], None, True, 9, 0.0, 1),               # rows 32: two row groups
    (256, 4, 2, 2, [64, 20], 32, False, -1, 12.0, 3),           # rows 8 only for D = 256
    (192, 8, 1, 2, [45], None, True, 20, 0.0, 16),              # more splits than keys
    (64, 8, 8, 1, [31, 16, 1], 16, False, 5, 0.0, 1),
]


@pytest.mark.parametrize("case", EMU_CASES, ids=lambda c: f"D{c[0]}-{c[1]}x{c[2]}-sq{c[3]}")
@pytest.mark.parametrize("dt", ["bf16", "f16"])
def test_kernel_emulation_matches_reference(case, dt):
    """The fragment-level emulation of attn_decode (+ combine) equals the float64 attention
    up to P's rounding to the input dtype and out's final rounding: a wrong fragment layout,
    permutation, mask or merge gives O(1) errors."""
    D, hq, hk, sq, seqlens, paged, causal, left, cap, splits = case
    rng = np.random.default_rng(D + hq + sq + splits)
    P = _Problem(rng, len(seqlens), sq, hq, hk, D, seqlens, dt, paged=paged, causal=causal,
                 left=left, softcap=cap)
    out, lse = _emulate(P, splits)
    ref, ref_lse, mag = P.reference()
    u = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11}[dt]
    err = np.abs(out - ref)
    assert np.isfinite(out).all() and np.isfinite(ref).all()
    assert (err <= u * np.abs(ref) + 2 * u * mag + 1e-9).all(), err.max()
    fin = np.isfinite(ref_lse)
    assert (np.isfinite(lse) == fin).all() and (lse[~fin] == -np.inf).all()
    assert np.allclose(lse[fin], ref_lse[fin], rtol=0, atol=1e-9)
    # fully masked queries (no key: L = 0, or L < Sq under causal) give exactly 0
    assert (out[~np.isfinite(ref_lse).transpose(0, 2, 1)] == 0).all()


def test_emulation_forced_tokens_per_split():
    rng = np.random.default_rng(5)
    P = _Problem(rng, 2, 1, 4, 2, 64, [70, 33], "bf16")
    out, _ = _emulate(P, nsplit=3, tps=32)      # FlashDecodePlan: ⌈max_seqlen_k / 32⌉ splits
    ref, _, mag = P.reference()
    assert (np.abs(out - ref) <= 2.0 ** -8 * (np.abs(ref) + 2 * mag) + 1e-9).all()


# ----------------------------------------------------------------------- cross-compile
SAMPLES = {
    ArchSku.SM80: [("attn_decode", dict(dtype="bf16", head_dim=128)),
                   ("attn_decode", dict(dtype="f16", head_dim=64, rows=16)),
                   ("attn_decode_combine", dict(dtype="bf16"))],
    ArchSku.SM89: [("attn_decode", dict(dtype="f16", head_dim=96, rows=16)),
                   ("attn_decode", dict(dtype="bf16", head_dim=192)),
                   ("attn_decode_combine", dict(dtype="f16"))],
    ArchSku.SM90A: [("attn_decode", dict(dtype="bf16", head_dim=256)),
                    ("attn_decode", dict(dtype="bf16", head_dim=128, rows=16)),
                    ("attn_decode_combine", dict(dtype="bf16"))],
}


@pytest.mark.parametrize("arch", [ArchSku.SM80, ArchSku.SM89, ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku
    from baracuda_dsl.ops import get_template

    for name, kn in SAMPLES[arch]:
        assert freeze_knobs(kn) in get_template(name).skus(arch.value), (name, kn)
        cubin, meta = compile_sku(name, freeze_knobs(kn), arch, timeout=600)
        assert len(cubin) > 1000
        assert meta["threads"] == (spec.THREADS if name == "attn_decode"
                                   else spec.COMBINE_THREADS)
