"""Softmax family without a GPU: descriptor / select validation, SKU choice per row length,
SKU-space sizes, numpy emulation of the algorithms, cross-compile of samples per arch."""

import math

import numpy as np
import pytest

from baracuda_dsl import ArchSku, PlanPreference
from baracuda_dsl.errors import InvalidProblemError, UnsupportedError
from baracuda_dsl.ops.softmax.softmax import (SoftmaxBackwardDescriptor, SoftmaxBackwardPlan,
                                              SoftmaxDescriptor, SoftmaxPlan, SoftmaxTuning,
                                              SparsemaxBackwardDescriptor, SparsemaxBackwardPlan,
                                              SparsemaxDescriptor, SparsemaxPlan)
from baracuda_dsl.ops.softmax.softmax import _layout
from baracuda_dsl.ops.softmax.specs import softmax as spec

LOG2E_T = 1.4426950408889634

PREF = PlanPreference(arch=ArchSku.SM90A)
P80 = PlanPreference(arch=ArchSku.SM80)
FW_PLANS = [(SoftmaxPlan, SoftmaxDescriptor), (SparsemaxPlan, SparsemaxDescriptor)]
BW_PLANS = [(SoftmaxBackwardPlan, SoftmaxBackwardDescriptor),
            (SparsemaxBackwardPlan, SparsemaxBackwardDescriptor)]


@pytest.mark.parametrize("plan,desc", FW_PLANS + BW_PLANS)
def test_select_validation(plan, desc):
    p = plan.select(desc((8, 4096), "bf16"), PREF)
    assert p.sku().arch is ArchSku.SM90A and p.workspace_size() == 0
    assert p.precision_guarantee().deterministic
    assert dict(p.sku().knobs)["chunks"] > 0
    with pytest.raises(UnsupportedError):
        desc((8, 64), "int32")
    with pytest.raises(InvalidProblemError):
        desc((8, 64), "f32", 1.5)
    with pytest.raises(InvalidProblemError):
        plan.select(desc((8, -1), "f32"), PREF)
    with pytest.raises(InvalidProblemError):
        plan.select(desc((1,) * 9, "f32"), PREF)
    with pytest.raises(InvalidProblemError):
        plan.select(desc((8, 64), "f32", 2), PREF)
    with pytest.raises(InvalidProblemError):
        plan.select(desc((), "f32"), PREF)
    with pytest.raises(UnsupportedError):
        plan.select(desc((2**31, 2), "f32"), PREF)
    with pytest.raises(InvalidProblemError):
        plan.select(SoftmaxDescriptor((8, 4)) if desc is not SoftmaxDescriptor
                    else SparsemaxDescriptor((8, 4)), PREF)
    # negative axis and a middle axis select fine
    assert plan.select(desc((4, 5, 6), "f32", -2), PREF)._n == 5
    assert plan.select(desc((4, 5, 6), "f32", 0), PREF)._m == 30


def test_empty_problems():
    for shape, axis in (((0, 16), -1), ((4, 0), -1), ((0,), 0), ((3, 0, 2), 1)):
        for plan, desc in FW_PLANS + BW_PLANS:
            assert plan.select(desc(shape, "f32", axis), PREF).is_empty()


def test_log_flags_and_names():
    p = SoftmaxPlan.select(SoftmaxDescriptor((4, 100), "f16", log=True), PREF)
    assert p.sku().op == "log_softmax" and p._runtime_flag() == spec.LOG
    q = SoftmaxBackwardPlan.select(SoftmaxBackwardDescriptor((4, 100), "f16", log=True), PREF)
    assert q._runtime_flag() == spec.MODE_LOG
    r = SparsemaxBackwardPlan.select(SparsemaxBackwardDescriptor((4, 100), "f16"), PREF)
    assert r._runtime_flag() == spec.MODE_SPARSEMAX and r.sku().template == "softmax_bw"
    assert SparsemaxPlan.select(SparsemaxDescriptor((4, 100)), PREF).sku().template == \
        "sparsemax_fw"


def _knobs(plan) -> spec.SoftmaxKnobs:
    """The plan's primary SKU as a knobs instance."""
    return plan._template.thaw(plan.sku().knobs)


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16", "f64"])
def test_bucket_choice_covers_row(dt):
    ladders = SoftmaxTuning()
    for n in (1, 7, 33, 511, 512, 513, 1000, 4096, 4097, 8193, 16385, 32768, 32769, 70000,
              131072, 262144, 262145, 10**6):
        for plan, desc, bw in ((SoftmaxPlan, SoftmaxDescriptor, False),
                               (SoftmaxBackwardPlan, SoftmaxBackwardDescriptor, True),
                               (SparsemaxPlan, SparsemaxDescriptor, False),
                               (SparsemaxBackwardPlan, SparsemaxBackwardDescriptor, True)):
            engine = spec.BW_ROWS if bw else spec.FW_ROWS
            cap = engine.caps[dt]
            sparse = plan is SparsemaxPlan
            for pref in (PREF, P80):
                p = plan.select(desc((3, n), dt), pref)
                k = _knobs(p)
                ladder = [engine.cluster(dt, c, h).capacity
                          for c, h in ladders.policy(dt, bw).ladder]
                limit = cap if (sparse or pref is P80) else max([cap] + ladder)
                if n <= limit:
                    assert k.chunks > 0 and k.capacity >= n, (plan, n, k)
                    # the smallest fitting bucket / cluster
                    assert k.capacity < 4 * max(n, 512), (plan, n, k)
                else:
                    assert k.chunks == 0 and k.cluster == 1
                if pref is P80 or sparse:
                    assert k.cluster == 1
                assert p.sku().knobs in plan._template.skus(
                    "sm90a" if pref is PREF else "sm80"), k
    # the benchmark shapes on sm90a (ladder from the sweep): bf16 one CTA to 32K, then clusters
    # of full 32K-element slices (1024 threads) to 256K
    for n in (4096, 32768):
        k = _knobs(SoftmaxPlan.select(SoftmaxDescriptor((8, n), "bf16"), PREF))
        assert k.chunks > 0 and k.cluster == 1, k
    for n, c in ((65536, 2), (131072, 4), (262144, 8)):
        k = _knobs(SoftmaxPlan.select(SoftmaxDescriptor((8, n), "bf16"), PREF))
        assert (k.cluster, k.tpr, k.capacity) == (c, 1024, 32768 * c), k


def test_ladder_tuning():
    """SoftmaxTuning(single_cta_max_fw=..., ladder_fw=...) (set from benchmarks/sweep_softmax.py)
    moves rows to half-size clusters on sm90a; every choice stays inside the prebuilt space;
    sm80 unchanged; the SKU space does not depend on the tuning."""
    tuning = SoftmaxTuning(ladder_fw=((2, True), (4, True), (8, True), (8, False)),
                           single_cta_max_fw={"bf16": 16384, "f32": 16384})
    assert hash(tuning) == hash(SoftmaxTuning(ladder_fw=[(2, True), (4, True), (8, True),
                                                         (8, False)],
                                              single_cta_max_fw=(("f32", 16384),
                                                                 ("bf16", 16384))))
    pref = PlanPreference(arch=ArchSku.SM90A, tuning=tuning)
    space = spec.SOFTMAX_FW.skus("sm90a")
    for dt in ("bf16", "f32", "f16", "f64"):
        for n in (4096, 16384, 16385, 32768, 65536, 131072, 131073, 262144, 262145):
            p = SoftmaxPlan.select(SoftmaxDescriptor((2, n), dt), pref)
            k = _knobs(p)
            assert p.sku().knobs in space, k
            if n > 8 * spec.FW_ROWS.caps[dt]:
                assert k.chunks == 0
                continue
            assert k.chunks > 0 and k.capacity >= n, (dt, n, k)
            one = 16384 if dt in ("bf16", "f32") else spec.FW_ROWS.caps[dt]
            assert (k.cluster == 1) == (n <= one), (dt, n, k)
            if dt in ("bf16", "f32") and 16384 < n <= 131072:
                assert k.capacity // k.cluster == 16384, (dt, n, k)  # half slices
    p80 = PlanPreference(arch=ArchSku.SM80, tuning=tuning)
    k = _knobs(SoftmaxPlan.select(SoftmaxDescriptor((2, 32768), "bf16"), p80))
    assert k.cluster == 1 and k.chunks > 0
    # backward unaffected
    k = _knobs(SoftmaxBackwardPlan.select(SoftmaxBackwardDescriptor((2, 32768), "bf16"), pref))
    assert k.cluster == 1
    # a per-dtype forward ladder; a rung that is not built is refused at select
    byd = PlanPreference(arch=ArchSku.SM90A, tuning=SoftmaxTuning(
        ladder_fw_by_dtype={"bf16": ((8, True),)}))
    k = _knobs(SoftmaxPlan.select(SoftmaxDescriptor((2, 65536), "bf16"), byd))
    assert (k.cluster, k.tpr) == (8, 512), k
    k = _knobs(SoftmaxPlan.select(SoftmaxDescriptor((2, 65536), "f16"), byd))
    assert (k.cluster, k.tpr) == (2, 1024), k
    bad = PlanPreference(arch=ArchSku.SM90A, tuning=SoftmaxTuning(ladder_bw=((2, True),)))
    with pytest.raises(UnsupportedError):
        SoftmaxBackwardPlan.select(SoftmaxBackwardDescriptor((2, 65536), "bf16"), bad)


def test_sku_space_sizes():
    from baracuda_dsl.ops import get_template

    total = {}
    for arch in ("sm80", "sm89", "sm90a"):
        total[arch] = sum(len(get_template(n).skus(arch))
                          for n in ("softmax_fw", "softmax_bw", "sparsemax_fw"))
    # sm90a FW: 31 + 3 ladder clusters × 4 dtypes + 3 half-size sweep clusters × 4 dtypes
    assert total["sm90a"] == 55 + 41 + 31 and total["sm80"] == total["sm89"] == 31 + 29 + 31
    assert max(total.values()) <= 150
    for n in ("softmax_fw", "softmax_bw", "sparsemax_fw"):
        for k in get_template(n).skus("sm90a"):
            k = get_template(n).thaw(k)
            g = get_template(n).geometry(k)
            assert g.threads <= 1024 and g.smem_bytes < 48 * 1024
            if n == "sparsemax_fw":  # data-dependent step counts: one row per multi-warp CTA
                assert k.tpr <= 32 or k.rows == 1


def test_layout_rules():
    g = _layout((4, 6, 8), 2, ("x", "y"), ((48, 8, 1), (48, 8, 1)))
    assert g.sizes == (1, 1, 24) and g.strides == ((0, 0, 8), (0, 0, 8))
    # axis in the middle with unit stride (a transposed view)
    g = _layout((4, 8, 6), 1, ("x", "y"), ((48, 1, 8), (48, 1, 8)))
    assert g.sizes == (1, 1, 24) and g.strides[0] == (0, 0, 8)
    g = _layout((4, 8, 6), 1, ("x", "y"), ((100, 1, 8), (48, 1, 8)))
    assert g.sizes == (1, 4, 6) and g.strides == ((0, 100, 8), (0, 48, 8))
    with pytest.raises(UnsupportedError):
        _layout((4, 8), 1, ("x", "y"), ((1, 4), (8, 1)))
    with pytest.raises(UnsupportedError):  # 4 strided outer groups
        _layout((2, 3, 5, 7, 8), 4, ("x",), ((1000, 200, 30, 9, 1),))
    # broadcast input rows (stride 0) are fine; gcd spots odd strides
    assert _layout((4, 8), 1, ("x",), ((0, 1),)).gcd == 8
    assert _layout((4, 8), 1, ("x",), ((9, 1),)).gcd == 1


# ---------------------------------------------------------------- numpy emulation
def _michelot(x):
    """The kernel's sparsemax τ search (numpy emulation, f64)."""
    tau = x.max() - 1.0
    k_old = x.size + 1
    steps = 0
    while True:
        sup = x > tau
        s, k = x[sup].sum(), sup.sum()
        go = k < k_old and k > 0
        k_old = k
        tau = (s - 1.0) / k if k > 0 else tau
        steps += 1
        if not go:
            return tau, steps


def _sparsemax_sort(x):
    z = np.sort(x)[::-1]
    cs = np.cumsum(z)
    ks = np.arange(1, x.size + 1)
    k = ks[1 + ks * z > cs].max()
    return (cs[k - 1] - 1) / k


def test_michelot_matches_sort_based_sparsemax():
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 33, 1000, 4097):
        for scale in (0.01, 1.0, 30.0):
            x = rng.standard_normal(n) * scale
            tau, steps = _michelot(x)
            assert abs(tau - _sparsemax_sort(x)) < 1e-12 * max(1.0, abs(tau))
            y = np.maximum(x - tau, 0)
            assert abs(y.sum() - 1) < 1e-9 and steps <= n + 1
    # ties and constant rows
    tau, _ = _michelot(np.full(10, 3.0))
    assert np.allclose(np.maximum(3.0 - tau, 0), 0.1)


def test_online_softmax_emulation():
    """The loop SKU's per-thread running (max, rescaled sum) merged over threads equals the
    direct log-sum-exp, including −inf entries and all −inf threads."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal(1000) * 20
    x[::7] = -np.inf
    x[100:300] = -np.inf

    def safe(m):
        return 0.0 if m == -math.inf else m

    pairs = []
    for t in range(16):  # 16 "threads", batches of 8
        m, s = -math.inf, 0.0
        for b in range(t * 8, x.size, 128):
            batch = x[b:b + 8]
            mb = max(m, batch.max())
            s = s * math.exp(m - safe(mb)) + np.exp(batch - safe(mb)).sum()
            m = mb
        pairs.append((m, s))
    M = max(p[0] for p in pairs)
    S = sum(s * math.exp(m - safe(M)) for m, s in pairs)
    assert M == x.max()
    assert abs(S - np.exp(x - x.max()).sum()) < 1e-12 * S


def test_exp_shift_form_for_huge_values():
    """exp(x − m) must be exp2((x − m)·log2 e): the fused form fma(x, log2 e, −m·log2 e) leaves
    the rounding error of m·log2 e (≈ 1e31 at m = 1e38 in f32), which exp2 turns into inf / 0."""
    f32 = np.float32
    x = f32(1e38)
    ml = f32(x * f32(LOG2E_T))
    # the FMA: exact product (fits f64) minus the rounded pre-scaled max
    fused = float(x) * float(f32(LOG2E_T)) - float(ml)
    assert abs(fused) > 1e20  # exp2 of that is inf or 0: the old NaN rows
    diff = (x - x) * f32(LOG2E_T)
    assert diff == 0.0


def _register_mode(x, threads):
    """numpy f32 emulation of the register-mode forward: each thread's (max, Σ exp(x − own max))
    with its exps kept, pairs merged (max, rescaled sums), then y = e · exp(m_t − M) / S."""
    f32 = np.float32

    def safe(m):
        return f32(0.0) if m == -np.inf else m

    def ex(v, ms):
        with np.errstate(over="ignore", invalid="ignore"):
            return np.exp2((v - ms) * f32(LOG2E_T)).astype(f32)

    parts = np.array_split(x.astype(f32), threads)
    ms = [p.max() if p.size else f32(-np.inf) for p in parts]
    es = [ex(p, safe(m)) for p, m in zip(parts, ms)]
    M = max(ms)
    with np.errstate(invalid="ignore"):
        S = sum(f32(e.sum()) * ex(f32(m), safe(M)) for e, m in zip(es, ms))
        return np.concatenate([e * (ex(f32(m), safe(M)) / S) for e, m in zip(es, ms)])


def test_register_mode_emulation_extremes():
    rng = np.random.default_rng(2)
    for n in (33, 4096):
        base = (rng.standard_normal(n) * 3 + 0.3).astype(np.float32)
        rows = [base.copy() for _ in range(4)]
        rows[0][::3] = 1e38
        rows[1][::2] = -np.inf
        rows[2][:] = -np.inf
        rows[3][5] = -1e38
        for r, x in enumerate(rows):
            y = _register_mode(x, 16)
            if r == 2:
                assert np.isnan(y).all()
                continue
            xd = x.astype(np.float64)
            ref = np.exp(xd - xd.max())
            ref /= ref.sum()
            assert np.isfinite(y).all()
            assert np.allclose(y, ref, rtol=1e-5, atol=1e-30)
            if r == 1:
                assert (y[::2] == 0).all()


# ----------------------------------------------------------------- cross-compile
SAMPLES = [
    ("softmax_fw", dict(dtype="bf16", vec=8, tpr=128, rows=1, chunks=4, cluster=1)),
    ("softmax_fw", dict(dtype="f16", vec=1, tpr=256, rows=1, chunks=0, cluster=1)),
    ("softmax_bw", dict(dtype="f32", vec=4, tpr=512, rows=1, chunks=0, cluster=1)),
    ("sparsemax_fw", dict(dtype="bf16", vec=8, tpr=32, rows=4, chunks=2, cluster=1)),
    ("sparsemax_fw", dict(dtype="f64", vec=2, tpr=512, rows=1, chunks=0, cluster=1)),
]
SM90A_ONLY = [
    ("softmax_fw", dict(dtype="bf16", vec=8, tpr=1024, rows=1, chunks=4, cluster=8)),
    ("softmax_bw", dict(dtype="bf16", vec=8, tpr=1024, rows=1, chunks=4, cluster=8)),
    # a half-size sweep cluster (512-thread slices)
    ("softmax_fw", dict(dtype="bf16", vec=8, tpr=512, rows=1, chunks=4, cluster=2)),
]


@pytest.mark.parametrize("arch", [ArchSku.SM80, ArchSku.SM89, ArchSku.SM90A])
def test_cross_compile(arch, monkeypatch):
    pytest.importorskip("cutlass")

    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.ops import get_template
    from baracuda_dsl.jit.compiler import compile_sku

    samples = SAMPLES + (SM90A_ONLY if arch is ArchSku.SM90A else [])
    for name, knobs in samples:
        assert freeze_knobs(knobs) in get_template(name).skus(arch.value), (name, knobs)
        cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=600)
        assert len(cubin) > 1000 and meta["threads"] == knobs["tpr"] * knobs["rows"]
        assert meta["cluster"] == knobs["cluster"]
