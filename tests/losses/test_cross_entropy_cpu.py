"""CPU tests for the cross-entropy / NLL / fused linear cross-entropy plans: descriptor
validation, SKU choice and space, and cross-compiles of samples of every template."""

import dataclasses

import pytest

import baracuda_dsl as bd
from baracuda_dsl.dtypes import bfloat16, float16, float32, float64, int32, int64, uint8
from baracuda_dsl.errors import InvalidProblemError, UnsupportedError
from baracuda_dsl.ops import get_template
from baracuda_dsl.ops.losses.cross_entropy import (CrossEntropyBackwardDescriptor,
                                                   CrossEntropyBackwardPlan, CrossEntropyDescriptor,
                                                   CrossEntropyPlan, CrossEntropyTuning,
                                                   NLLLossBackwardDescriptor, NLLLossBackwardPlan,
                                                   NLLLossDescriptor, NLLLossPlan)
from baracuda_dsl.ops.losses.specs import cross_entropy as spec


PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)
PREF80 = bd.PlanPreference(arch=bd.ArchSku.SM80)


# ------------------------------------------------------------------------------ validation
@pytest.mark.parametrize("kw, err", [
    (dict(dtype=int32), UnsupportedError),
    (dict(dtype=uint8), UnsupportedError),
    (dict(index_dtype=float32), UnsupportedError),
    (dict(index_dtype=uint8), UnsupportedError),
    (dict(reduction="avg"), InvalidProblemError),
    (dict(reduction="batchmean"), InvalidProblemError),
    (dict(target="soft"), InvalidProblemError),
    (dict(label_smoothing=-0.1), InvalidProblemError),
    (dict(label_smoothing=1.5), InvalidProblemError),
    (dict(label_smoothing=float("nan")), InvalidProblemError),
    (dict(ignore_index=1.5), InvalidProblemError),
    (dict(ignore_index=True), InvalidProblemError),
    (dict(target="prob", ignore_index=0), UnsupportedError),
    (dict(target="prob", ignore_index=3), UnsupportedError),
])
def test_descriptor_validation(kw, err):
    base = dict(n=4, c=10, dtype=float32)
    base.update(kw)
    with pytest.raises(err):
        CrossEntropyDescriptor(**base)


@pytest.mark.parametrize("n, c, err", [(-1, 4, InvalidProblemError), (4, 0, InvalidProblemError),
                                       (4.0, 4, InvalidProblemError),
                                       (2**31, 4, UnsupportedError),
                                       (4, 2**31, UnsupportedError)])
def test_bad_shapes(n, c, err):
    with pytest.raises(err):
        CrossEntropyDescriptor(n, c, float32)
    with pytest.raises(err):
        NLLLossDescriptor(n, c, float32)


def test_descriptor_ok_and_modes():
    assert CrossEntropyDescriptor(4, 10, "bf16").mode == "plain"
    assert CrossEntropyDescriptor(4, 10, "f32", label_smoothing=0.1).mode == "smooth"
    assert CrossEntropyDescriptor(4, 10, "f32", target="prob").mode == "prob"
    # as torch: a negative ignore_index is accepted (and ignored) with probability targets
    assert CrossEntropyDescriptor(4, 10, "f32", target="prob", ignore_index=-7).mode == "prob"
    assert NLLLossDescriptor(4, 10, "f16").mode == "nll"
    d = CrossEntropyDescriptor(0, 10, float64, index_dtype="int32")
    assert d.index_dtype == int32 and hash(d) == hash(CrossEntropyDescriptor(0, 10, float64,
                                                                             index_dtype=int32))
    with pytest.raises(InvalidProblemError):
        CrossEntropyPlan.select(NLLLossDescriptor(4, 10), PREF)
    with pytest.raises(InvalidProblemError):
        NLLLossPlan.select(CrossEntropyDescriptor(4, 10), PREF)


def test_workspace_sizes():
    p = CrossEntropyPlan.select(CrossEntropyDescriptor(1000, 10, bfloat16), PREF)
    assert p.workspace_size() == 2 * 4096
    p = CrossEntropyPlan.select(CrossEntropyDescriptor(1000, 10, float64, reduction="sum"), PREF)
    assert p.workspace_size() == 2 * 8192
    assert CrossEntropyPlan.select(CrossEntropyDescriptor(1000, 10, reduction="none"),
                                   PREF).workspace_size() == 0
    assert CrossEntropyBackwardPlan.select(CrossEntropyBackwardDescriptor(1000, 10),
                                           PREF).workspace_size() == 0


def test_args_validation_without_gpu():
    np = pytest.importorskip("numpy")
    p = CrossEntropyPlan.select(CrossEntropyDescriptor(4, 10, float32), PREF)
    x = np.zeros((4, 10), np.float32)
    t = np.zeros((4,), np.int64)
    loss = np.zeros((1,), np.float32)
    # host arrays are rejected before launch (no GPU involved)
    with pytest.raises(bd.BaracudaError):
        p.run(bd.CrossEntropyArgs(x, t, loss) if hasattr(bd, "CrossEntropyArgs") else
              __import__("baracuda_dsl.ops.losses.cross_entropy", fromlist=["x"]).CrossEntropyArgs(
                  x, t, loss))


# ------------------------------------------------------------------------------ SKU choice
def _frozen(k):
    from baracuda_dsl.jit import freeze_knobs

    return freeze_knobs(k)


@pytest.mark.parametrize("dt, c, want", [
    (bfloat16, 7, dict(tpr=32, rows=4, chunks=1, vec=8, cluster=1)),
    (bfloat16, 4096, dict(tpr=128, rows=1, chunks=4, vec=8, cluster=1)),
    (float32, 4096, dict(tpr=256, rows=1, chunks=4, vec=4, cluster=1)),
    (bfloat16, 32768, dict(tpr=1024, chunks=4, cluster=1)),
    (bfloat16, 65536, dict(tpr=512, chunks=4, cluster=4)),
    (bfloat16, 131072, dict(tpr=512, chunks=0, cluster=1)),   # > LOOP_ABOVE: the loop
    (float32, 262144, dict(tpr=512, chunks=0, cluster=1)),
    (bfloat16, 300000, dict(tpr=512, chunks=0, cluster=1)),
    (float64, 16384, dict(tpr=1024, chunks=8, vec=2, cluster=1)),
])
def test_fw_sku_choice(dt, c, want):
    p = CrossEntropyPlan.select(CrossEntropyDescriptor(8, c, dt), PREF)
    for key, val in want.items():
        assert getattr(p._knobs, key) == val, (key, p._knobs)
    assert p.sku().template == "cross_entropy_fw"
    assert p.sku().knobs == _frozen(p._knobs)
    assert p.sku().knobs in get_template("cross_entropy_fw").skus("sm90a")


def test_wide_knob():
    wide = CrossEntropyTuning(wide_half_above=2048)
    pref = bd.PlanPreference(arch=bd.ArchSku.SM90A, tuning=wide)
    pref80 = bd.PlanPreference(arch=bd.ArchSku.SM80, tuning=wide)
    fw = get_template("cross_entropy_fw").skus("sm90a")
    for c, want in ((4096, dict(tpr=64, chunks=8, cluster=1)),
                    (32768, dict(tpr=512, chunks=8, cluster=1)),
                    (65536, dict(tpr=512, chunks=8, cluster=2)),
                    (131072, dict(tpr=512, chunks=8, cluster=4)),
                    (262144, dict(tpr=512, chunks=8, cluster=8))):
        for mode_kw in (dict(), dict(label_smoothing=0.1)):
            p = CrossEntropyPlan.select(CrossEntropyDescriptor(8, c, bfloat16, **mode_kw), pref)
            assert {k: getattr(p._knobs, k) for k in want} == want, (c, p._knobs)
            assert _frozen(p._knobs) in fw
    # f32, short rows, sm80 beyond one CTA: unchanged
    assert CrossEntropyPlan.select(CrossEntropyDescriptor(8, 4096, float32), pref)._knobs.tpr \
        == 256
    assert CrossEntropyPlan.select(CrossEntropyDescriptor(8, 1024, bfloat16), pref)._knobs.tpr \
        == 32
    p = CrossEntropyPlan.select(CrossEntropyDescriptor(8, 131072, bfloat16), pref80)
    assert p._knobs.chunks == 0
    p = CrossEntropyPlan.select(CrossEntropyDescriptor(8, 32768, float16), pref80)
    assert p._knobs.tpr == 512 and _frozen(p._knobs) in get_template(
        "cross_entropy_fw").skus("sm80")
    # the default tuning keeps the regular buckets
    p = CrossEntropyPlan.select(CrossEntropyDescriptor(8, 4096, bfloat16), PREF)
    assert (p._knobs.tpr, p._knobs.chunks) == (128, 4)


def test_cluster_tuning():
    """prefer_cluster_above sends rows above it to the ladder even within one CTA's bucket (and
    beyond loop_above); loop_above moves the loop threshold; a rung that is not built is refused;
    the SKU space is the same whatever the tuning."""
    fw = get_template("cross_entropy_fw").skus("sm90a")
    pref = bd.PlanPreference(arch=bd.ArchSku.SM90A,
                             tuning=CrossEntropyTuning(prefer_cluster_above=16384))
    for c, want in ((16384, (1, 512)), (16385, (2, 512)), (32768, (2, 512)), (65536, (4, 512)),
                    (100000, (8, 512)), (262144, (8, 1024)), (262145, (1, 512))):
        p = CrossEntropyPlan.select(CrossEntropyDescriptor(8, c, bfloat16), pref)
        assert (p._knobs.cluster, p._knobs.tpr) == want, (c, p._knobs)
        assert _frozen(p._knobs) in fw
    p = CrossEntropyPlan.select(CrossEntropyDescriptor(8, 100000, bfloat16), PREF)
    assert (p._knobs.cluster, p._knobs.chunks) == (1, 0)  # the default: loop above 65536
    more = bd.PlanPreference(arch=bd.ArchSku.SM90A, tuning=CrossEntropyTuning(loop_above=None))
    p = CrossEntropyPlan.select(CrossEntropyDescriptor(8, 100000, bfloat16), more)
    assert p._knobs.cluster == 8 and _frozen(p._knobs) in fw
    bad = bd.PlanPreference(arch=bd.ArchSku.SM90A,
                            tuning=CrossEntropyTuning(ladder=((2, False),)))
    with pytest.raises(UnsupportedError):
        CrossEntropyPlan.select(CrossEntropyDescriptor(8, 40000, bfloat16), bad)


def test_no_clusters_off_sm90a():
    p = CrossEntropyPlan.select(CrossEntropyDescriptor(8, 131072, bfloat16), PREF80)
    assert p._knobs.cluster == 1 and p._knobs.chunks == 0
    for k in get_template("cross_entropy_fw").skus("sm80"):
        assert dict(k)["cluster"] == 1


def test_bw_and_nll_sku_choice():
    p = CrossEntropyBackwardPlan.select(CrossEntropyBackwardDescriptor(
        8, 4096, bfloat16, label_smoothing=0.1), PREF)
    assert p._knobs.mode == "smooth" and p._knobs.chunks == 4
    p = NLLLossBackwardPlan.select(NLLLossBackwardDescriptor(8, 100000, float32), PREF)
    assert p._knobs.mode == "nll" and p._knobs.chunks == 0
    p = NLLLossPlan.select(NLLLossDescriptor(8, 100, float16), PREF)
    assert p._knobs == spec.CrossEntropyKnobs.of(spec.NLL_FW_GEO, dtype="f16", mode="nll")


def test_generic_choice():
    from baracuda_dsl.ops.losses.cross_entropy import generic_knobs

    assert generic_knobs(bfloat16, "plain", 10) == spec.CrossEntropyKnobs.of(
        spec.SMALL_GENERIC, dtype="bf16", mode="plain")
    assert generic_knobs(float32, "prob", 50257).tpr == 256
    p = CrossEntropyPlan.select(CrossEntropyDescriptor(8, 10, bfloat16), PREF)
    assert p._generic.tpr == 32 and p._generic.rows == 4


def test_sku_space_sizes():
    fw = get_template("cross_entropy_fw")
    bw = get_template("cross_entropy_bw")
    # per dtype: 8 buckets (7 for f64) + 4 cluster SKUs + 3 loops, × 3 modes, + 1 NLL; the
    # half dtypes add 4 wide buckets and 3 wide clusters per mode
    per = {"f32": 15, "f16": 15, "bf16": 15, "f64": 14}
    wide = {"f32": 0, "f16": 7, "bf16": 7, "f64": 0}
    assert len(fw.skus("sm90a")) == sum(3 * (v + wide[d]) + 1 for d, v in per.items())
    assert len(fw.skus("sm80")) == sum(3 * (v - 4 + (4 if wide[d] else 0)) + 1
                                       for d, v in per.items())
    assert len(bw.skus("sm90a")) == sum(4 * (v - 4) for v in per.values())
    assert len(get_template("cross_entropy_reduce").skus("sm90a")) == 4
    assert len(get_template("lce_chunk").skus("sm80")) == 2 * 2 * 4


# ------------------------------------------------------------------------- linear CE plans
def test_linear_ce_plans():
    import baracuda_dsl.ops.losses.linear_cross_entropy as lce
    import baracuda_dsl.ops.gemm.gemm  # noqa: F401  (GemmPlan)
    with pytest.raises(InvalidProblemError):
        lce.LinearCrossEntropyDescriptor(4, 0, 10)
    with pytest.raises(InvalidProblemError):
        lce.LinearCrossEntropyDescriptor(4, 8, 10, reduction="avg")
    with pytest.raises(UnsupportedError):
        lce.LinearCrossEntropyDescriptor(4, 8, 10, dtype=int64)
    with pytest.raises(UnsupportedError):
        lce.LinearCrossEntropyDescriptor(2**20, 8, 10, chunk=4096)
    p = lce.LinearCrossEntropyPlan.select(lce.LinearCrossEntropyDescriptor(
        8192, 4096, 128256, bfloat16), PREF)
    z = 8192 * 4096 * 4
    assert z <= p.workspace_size() < z + 8 * 2**20
    assert len(p._chunks) == 32 and p._chunks[-1] == (31 * 4096, 128256 - 31 * 4096)
    b = lce.LinearCrossEntropyBackwardPlan.select(lce.LinearCrossEntropyBackwardDescriptor(
        8192, 4096, 128256, bfloat16), PREF)
    assert b.workspace_size() >= z + 8192 * 4096 * 2 + 8192 * 4096 * 4
    # last chunk 128256 - 31·4096 = 1280 columns: still the vector SKU
    assert p._lce_knobs(1280).vec == 4 and p._lce_knobs(1281).vec == 1


# ------------------------------------------------------------------------------ namespace
def test_namespace_exports():
    m = pytest.importorskip("array_api.losses._cross_entropy")
    assert set(m.__all__) == {"cross_entropy", "nll_loss", "linear_cross_entropy"}


# ---------------------------------------------------------------------------- cross-compile
SAMPLES = [
    ("cross_entropy_fw", dict(dtype="bf16", mode="plain", vec=8, tpr=128, rows=1, chunks=4,
                              cluster=1)),
    ("cross_entropy_fw", dict(dtype="bf16", mode="smooth", vec=8, tpr=512, rows=1, chunks=8,
                              cluster=1)),
    ("cross_entropy_fw", dict(dtype="f32", mode="smooth", vec=4, tpr=512, rows=1, chunks=0,
                              cluster=1)),
    ("cross_entropy_fw", dict(dtype="f16", mode="nll", vec=1, tpr=1, rows=128, chunks=0,
                              cluster=1)),
    ("cross_entropy_bw", dict(dtype="bf16", mode="prob", vec=8, tpr=32, rows=4, chunks=2,
                              cluster=1)),
    ("cross_entropy_reduce", dict(dtype="f64")),
    ("cross_entropy_fw", dict(dtype="bf16", mode="smooth", vec=1, tpr=32, rows=4, chunks=0,
                              cluster=1)),
    ("cross_entropy_bw", dict(dtype="f32", mode="plain", vec=1, tpr=32, rows=4, chunks=0,
                              cluster=1)),
    ("lce_chunk", dict(dtype="f32", op="bw", ddt="bf16", vec=4, tpr=512, rows=1, chunks=0,
                       cluster=1)),
]


@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    samples = SAMPLES if arch is bd.ArchSku.SM90A else SAMPLES[::3]
    for name, knobs in samples:
        cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=600)
        assert len(cubin) > 1000


def test_cross_compile_cluster_sm90a():
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for k in (dict(dtype="bf16", mode="prob", vec=8, tpr=512, rows=1, chunks=4, cluster=4),
              dict(dtype="f16", mode="plain", vec=8, tpr=512, rows=1, chunks=8, cluster=8)):
        cubin, meta = compile_sku("cross_entropy_fw", freeze_knobs(k), bd.ArchSku.SM90A,
                                  timeout=600)
        assert len(cubin) > 1000 and meta["cluster"] == k["cluster"]


# ----------------------------------------------- host path with fake views and a fake kernel
class _Rec:
    """Stands in for a loaded kernel: records (template, knobs, grid, args)."""

    def __init__(self, log, template, knobs):
        self.log, self.template, self.knobs = log, template, knobs

    def launch(self, grid, args, stream=0):
        n = len(get_template(self.template.name).params)
        assert len(args) == n, (self.template.name, len(args), n)
        self.log.append((self.template.name, dataclasses.asdict(self.knobs), grid, tuple(args)))


def _fake(plan):
    log = []
    plan._kernel = lambda t, k, o: _Rec(log, t, k)
    return log


def _tv(ptr, shape, dt, strides=None):
    from baracuda_dsl.tensor import TensorView, contiguous_strides

    return TensorView(ptr, shape, strides or contiguous_strides(shape), dt, 0)


def test_host_path_fw_bw():
    from baracuda_dsl.ops.losses.cross_entropy import CrossEntropyArgs, CrossEntropyBackwardArgs
    from baracuda_dsl.vocabulary import Workspace

    n, c = 6, 4096
    p = CrossEntropyPlan.select(CrossEntropyDescriptor(n, c, bfloat16, label_smoothing=0.1,
                                                       has_weight=True, index_dtype=int32), PREF)
    log = _fake(p)
    x = _tv(0x10000, (n, c), bfloat16, (c + 8, 1))
    t = _tv(0x90000, (n,), int32)
    w = _tv(0xA0000, (c,), bfloat16)
    loss = _tv(0xB0000, (), bfloat16)
    lse = _tv(0xC0000, (n,), float32)
    tw = _tv(0xD0000, (1,), float32)
    st = _tv(0xE0000, (1,), int32)
    ws = Workspace(0x100000, p.workspace_size(), None)
    p.run(CrossEntropyArgs(x, t, loss, w, lse, tw, st), workspace=ws)
    (n1, k1, g1, a1), (n2, k2, g2, a2) = log
    assert n1 == "cross_entropy_fw" and k1["mode"] == "smooth" and k1["vec"] == 8
    assert g1 == (n, 1, 1)
    assert a1[:9] == (x.ptr, t.ptr, w.ptr, 0, 0, ws.ptr, ws.ptr + p.workspace_size() // 2,
                      lse.ptr, st.ptr)
    assert a1[9:] == (n, c, c + 8, 0, 1, -100, 0.1,
                      spec.HAS_W | spec.HAS_STATUS | spec.WRITE_LSE | spec.WRITE_ROWS)
    assert n2 == "cross_entropy_reduce" and a2[2:] == (loss.ptr, tw.ptr, n, 1,
                                                       spec.RED_MEAN | spec.RED_TW)
    # misaligned row stride → the generic SKU
    log.clear()
    x2 = _tv(0x10000, (n, c), bfloat16, (c + 3, 1))
    p.run(CrossEntropyArgs(x2, t, loss, w, lse, tw, st), workspace=ws)
    assert log[0][1]["vec"] == 1
    # workspace too small / wrong operands
    with pytest.raises(bd.WorkspaceTooSmallError):
        p.run(CrossEntropyArgs(x, t, loss, w, lse, tw, st))
    with pytest.raises(UnsupportedError):
        p.run(CrossEntropyArgs(x, _tv(0x90000, (n,), int64), loss, w), workspace=ws)
    with pytest.raises(InvalidProblemError):
        p.run(CrossEntropyArgs(x, t, loss, None), workspace=ws)
    with pytest.raises(InvalidProblemError):
        p.run(CrossEntropyArgs(x, t, _tv(0xB0000, (n,), bfloat16), w), workspace=ws)
    with pytest.raises(UnsupportedError):
        p.run(CrossEntropyArgs(_tv(0x10000, (n, c), bfloat16, (1, n)), t, loss, w), workspace=ws)
    # backward: one launch, int64 targets read as two words, mean divides by total_weight
    b = CrossEntropyBackwardPlan.select(CrossEntropyBackwardDescriptor(n, c, float32), PREF)
    log = _fake(b)
    x = _tv(0x10000, (n, c), float32)
    t = _tv(0x90000, (n,), int64)
    g = _tv(0xF0000, (1,), float32)
    dx = _tv(0x200000, (n, c), float32)
    with pytest.raises(InvalidProblemError):  # mean needs total_weight
        b.run(CrossEntropyBackwardArgs(x, t, lse, g, dx))
    b.run(CrossEntropyBackwardArgs(x, t, lse, g, dx, total_weight=tw))
    (nm, k, grid, a), = log
    assert nm == "cross_entropy_bw" and k["mode"] == "plain" and k["chunks"] == 4
    assert a[14] == 2 and a[-1] == spec.G_MEAN


def test_host_path_prob_none_and_nll():
    from baracuda_dsl.ops.losses.cross_entropy import (CrossEntropyArgs, NLLLossArgs,
                                                       NLLLossBackwardArgs)

    n, c = 5, 100
    p = CrossEntropyPlan.select(CrossEntropyDescriptor(n, c, float32, target="prob",
                                                       reduction="none"), PREF)
    log = _fake(p)
    x = _tv(0x10000, (n, c), float32)
    pr = _tv(0x20000, (n, c), float32)
    loss = _tv(0x30000, (n,), float32)
    p.run(CrossEntropyArgs(x, pr, loss))
    (nm, k, grid, a), = log
    assert k["mode"] == "prob" and a[1] == 0 and a[3] == pr.ptr and a[4] == loss.ptr
    assert a[-1] == spec.WRITE_LOSS
    # empty n with mean still writes the (NaN) mean through the reduction kernel
    e = CrossEntropyPlan.select(CrossEntropyDescriptor(0, c, float32), PREF)
    log = _fake(e)
    from baracuda_dsl.vocabulary import Workspace

    e.run(CrossEntropyArgs(_tv(0x10000, (0, c), float32), _tv(0x90000, (0,), int64),
                           _tv(0x30000, (), float32)),
          workspace=Workspace(0x100000, e.workspace_size(), None))
    assert [r[0] for r in log] == ["cross_entropy_reduce"]
    q = NLLLossPlan.select(NLLLossDescriptor(n, c, float32, "sum"), PREF)
    log = _fake(q)
    q.run(NLLLossArgs(x, _tv(0x90000, (n,), int64), _tv(0x30000, (1,), float32)),
          workspace=Workspace(0x100000, q.workspace_size(), None))
    assert log[0][1]["mode"] == "nll" and log[0][2] == (1, 1, 1)
    qb = NLLLossBackwardPlan.select(NLLLossBackwardDescriptor(n, c, float32, "none"), PREF)
    log = _fake(qb)
    qb.run(NLLLossBackwardArgs(_tv(0x90000, (n,), int64), _tv(0x30000, (n,), float32),
                               _tv(0x40000, (n, c), float32)))
    assert log[0][3][0] == 0 and log[0][3][-1] == spec.G_ROW


def test_host_path_linear_ce():
    import baracuda_dsl.ops.losses.linear_cross_entropy as lce
    import baracuda_dsl.ops.gemm.gemm  # noqa: F401  (GemmPlan)
    from baracuda_dsl.vocabulary import Workspace

    n, k, v, ch = 8, 64, 1000, 256
    p = lce.LinearCrossEntropyPlan.select(lce.LinearCrossEntropyDescriptor(
        n, k, v, bfloat16, "mean", -100, int64, ch), PREF)
    log = _fake(p)
    gl = []

    class _G:
        def __init__(self, key):
            self.key = key

        def run(self, args, stream=None, ws=None):
            if self.key == "cast":
                gl.append(("cast",))
                return
            gl.append((self.key, args.a.shape, args.b.shape, args.b.strides, args.c.shape,
                       args.c.strides))

        def workspace_size(self):
            return 0

    p._gp = lambda *key, **kw: _G((key, tuple(sorted(kw.items()))))
    x = _tv(0x10000, (n, k), bfloat16)
    W = _tv(0x100000, (v, k), bfloat16)
    t = _tv(0x90000, (n,), int64)
    loss = _tv(0x30000, (), bfloat16)
    p.run(lce.LinearCrossEntropyArgs(x, W, t, loss),
          workspace=Workspace(0x1000000, p.workspace_size(), None))
    assert len(gl) == 4 and gl[0][2] == (k, ch) and gl[0][3] == (1, k)
    assert gl[-1][2] == (k, v - 3 * ch) and gl[-1][5] == (ch, 1)
    names = [r[0] for r in log]
    assert names == ["lce_chunk"] * 4 + ["cross_entropy_reduce"]
    flags = [r[3][-1] for r in log[:4]]
    assert flags[0] & spec.LCE_FIRST and flags[3] & spec.LCE_LAST and not flags[1] & 3
    assert log[3][1]["vec"] == 4  # last chunk: 232 columns, 232 % 4 == 0 → still vector
    assert log[3][3][8] == v - 3 * ch and log[3][3][11] == 3 * ch and log[3][3][12] == v
    b = lce.LinearCrossEntropyBackwardPlan.select(lce.LinearCrossEntropyBackwardDescriptor(
        n, k, v, bfloat16, "mean", -100, int64, ch), PREF)
    log = _fake(b)
    gl.clear()
    b._gp = lambda *key, **kw: _G((key, tuple(sorted(kw.items()))))
    b._cast = _G("cast")
    g = _tv(0xF0000, (1,), bfloat16)
    tw = _tv(0xD0000, (1,), float32)
    lse = _tv(0xC0000, (n,), float32)
    b.run(lce.LinearCrossEntropyBackwardArgs(x, W, t, lse, g, _tv(0x200000, (n, k), bfloat16),
                                             _tv(0x300000, (v, k), bfloat16), tw),
          workspace=Workspace(0x1000000, b.workspace_size(), None))
    assert len(gl) == 4 * 3 + 1 and gl[-1][0] == "cast"
    assert gl[1][0][1] == (("beta", 0.0), ("out_dtype", float32))
    assert gl[4][0][1] == (("beta", 1.0), ("out_dtype", float32))
    assert [r[0] for r in log] == ["lce_chunk"] * 4
