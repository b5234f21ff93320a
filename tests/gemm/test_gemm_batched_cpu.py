"""BatchedGemmPlan / GroupedGemmPlan without a GPU: descriptor and argument validation, the
per-entry views the launch loop hands to GemmPlan (offsets, stride-0 broadcast, per-entry or
shared bias), validation before the first launch, empty entries skipped, SKU reporting."""

import pytest

import baracuda_dsl as bd
from baracuda_dsl.dtypes import bfloat16, float16, float32, float64
from baracuda_dsl.ops.gemm.gemm import GemmDescriptor, GemmPlan
from baracuda_dsl.ops.gemm.gemm_batched import (BatchedGemmArgs, BatchedGemmDescriptor,
                                                BatchedGemmPlan, GroupedGemmArgs,
                                                GroupedGemmDescriptor, GroupedGemmPlan)
from baracuda_dsl.tensor import TensorView, contiguous_strides
from _gemm_helpers import tuned

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)
BASE = 1 << 20


def tv(shape, dtype, strides=None, off=0, dev=0):
    st = contiguous_strides(shape) if strides is None else strides
    return TensorView(BASE + off, shape, st, dtype, dev)


@pytest.fixture
def record(monkeypatch):
    """GemmPlan.run records (plan, args, stream) instead of launching."""
    calls = []

    def run(self, args, stream=None, workspace=None):
        self.can_implement(args)
        calls.append((self, args, stream))

    monkeypatch.setattr(GemmPlan, "run", run)
    return calls


def test_batched_descriptor_validation():
    d = BatchedGemmDescriptor(3, 4, 5, 6, "bf16")
    assert d.dtype is bfloat16 and d.out_dtype is bfloat16 and not d.has_bias
    assert d.gemm == GemmDescriptor(4, 5, 6, bfloat16)
    assert hash(d) == hash(BatchedGemmDescriptor(3, 4, 5, 6, bfloat16))
    e = BatchedGemmDescriptor(0, 4, 5, 6, "f16", out_dtype="f32", alpha=2, beta=1,
                              epilogue="bias_gelu")
    assert e.out_dtype is float32 and e.alpha == 2.0 and e.has_bias
    for bad in (dict(batch=-1), dict(batch=1.0), dict(batch=True), dict(m=-2), dict(k=None)):
        kw = dict(batch=1, m=1, n=1, k=1, dtype="f32")
        kw.update(bad)
        with pytest.raises(bd.InvalidProblemError):
            BatchedGemmDescriptor(**kw)
    with pytest.raises(bd.UnsupportedError):
        BatchedGemmDescriptor(2 ** 31, 1, 1, 1, "f32")
    with pytest.raises(bd.UnsupportedError):
        BatchedGemmDescriptor(1, 1, 1, 1, "int8")
    with pytest.raises(bd.UnsupportedError):
        BatchedGemmDescriptor(1, 1, 1, 1, "bf16", out_dtype="f16")
    with pytest.raises(bd.UnsupportedError):
        BatchedGemmDescriptor(1, 1, 1, 1, "f32", epilogue="bias_tanh")
    with pytest.raises(bd.InvalidProblemError):
        BatchedGemmDescriptor(1, 1, 1, 1, "f32", beta=float("inf"))
    with pytest.raises(bd.InvalidProblemError):
        BatchedGemmPlan.select(GemmDescriptor(1, 1, 1, "f32"), PREF)


def test_batched_select_reports_gemm_sku():
    p = BatchedGemmPlan.select(BatchedGemmDescriptor(8, 4096, 4096, 4096, "bf16"), PREF)
    g = GemmPlan.select(GemmDescriptor(4096, 4096, 4096, "bf16"), PREF)
    assert p.sku() == g.sku() and p.gemm_plan.sku() == g.sku()
    assert p.workspace_size() == 0 and p.precision_guarantee().accumulator is float32
    q = BatchedGemmPlan.select(BatchedGemmDescriptor(2, 64, 64, 64, "f16"),
                               tuned(PREF, tile="simt"))
    assert q.sku().template == "gemm_simt"
    with pytest.raises(bd.UnsupportedError):
        BatchedGemmPlan.select(BatchedGemmDescriptor(2, 64, 64, 64, "f32"),
                               tuned(PREF, tile="128x128"))
    for arch in bd.ArchSku:
        r = BatchedGemmPlan.select(BatchedGemmDescriptor(2, 64, 64, 64, "f64"),
                                   bd.PlanPreference(arch=arch))
        assert r.sku().arch is arch
    assert BatchedGemmPlan.select(BatchedGemmDescriptor(0, 5, 5, 5, "f32"), PREF).is_empty()
    assert BatchedGemmPlan.select(BatchedGemmDescriptor(3, 0, 5, 5, "f32"), PREF).is_empty()
    assert not BatchedGemmPlan.select(BatchedGemmDescriptor(3, 5, 5, 0, "f32"),
                                      PREF).is_empty()


def test_batched_args_validation(record):
    B, m, n, k = 3, 8, 16, 32
    p = BatchedGemmPlan.select(BatchedGemmDescriptor(B, m, n, k, "f32", epilogue="bias"), PREF)
    a, b, c = tv((B, m, k), float32), tv((B, k, n), float32), tv((B, m, n), float32)
    bias = tv((n,), float32)
    p.can_implement(BatchedGemmArgs(a, b, c, bias))
    p.can_implement(BatchedGemmArgs(a, b, c, tv((B, n), float32)))
    bad = [
        (BatchedGemmArgs(a, b, c), bd.InvalidProblemError),                      # no bias
        (BatchedGemmArgs(tv((B, m, k + 1), float32), b, c, bias), bd.InvalidProblemError),
        (BatchedGemmArgs(tv((B + 1, m, k), float32), b, c, bias), bd.InvalidProblemError),
        (BatchedGemmArgs(tv((m, k), float32), b, c, bias), bd.InvalidProblemError),  # rank
        (BatchedGemmArgs(a, tv((B, k, n), float64), c, bias), bd.UnsupportedError),
        (BatchedGemmArgs(a, b, tv((B, m, n), float16), bias), bd.UnsupportedError),
        (BatchedGemmArgs(a, b, c, tv((n + 1,), float32)), bd.InvalidProblemError),
        (BatchedGemmArgs(a, b, c, tv((B, 1, n), float32)), bd.InvalidProblemError),
        (BatchedGemmArgs(a, b, c, tv((n,), float64)), bd.UnsupportedError),
        # c broadcast over the batch (stride 0): outputs may not broadcast
        (BatchedGemmArgs(a, b, tv((B, m, n), float32, (0, n, 1)), bias),
         bd.InvalidProblemError),
        (BatchedGemmArgs(a, tv((B, k, n), float32, dev=1), c, bias), bd.DeviceMismatchError),
        ("args", bd.InvalidProblemError),
    ]
    for args, exc in bad:
        with pytest.raises(exc):
            p.can_implement(args)
        with pytest.raises(exc):
            p.run(args)
    assert record == []                                       # nothing launched
    q = BatchedGemmPlan.select(BatchedGemmDescriptor(B, m, n, k, "f32"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        q.can_implement(BatchedGemmArgs(a, b, c, bias))       # bias with identity


def test_batched_entry_views(record):
    B, m, n, k = 4, 3, 5, 7
    p = BatchedGemmPlan.select(BatchedGemmDescriptor(B, m, n, k, "f64", beta=0.5,
                                                     epilogue="bias_relu"), PREF)
    a = tv((B, m, k), float64)
    b = tv((B, k, n), float64, (0, 1, k), off=1 << 16)        # shared, column-major
    c = tv((B, m, n), float64, (m * n + 3, n, 1), off=1 << 17)  # padded batch stride
    bias = tv((B, n), float64, off=1 << 18)
    p.run(BatchedGemmArgs(a, b, c, bias), stream=7)
    assert len(record) == B
    for i, (plan, ga, s) in enumerate(record):
        assert plan is p.gemm_plan and s == 7
        assert ga.a.ptr == BASE + i * m * k * 8 and ga.a.shape == (m, k)
        assert ga.a.strides == (k, 1)
        assert ga.b.ptr == BASE + (1 << 16) and ga.b.strides == (1, k)   # broadcast
        assert ga.c.ptr == BASE + (1 << 17) + i * (m * n + 3) * 8 and ga.c.strides == (n, 1)
        assert ga.bias.ptr == BASE + (1 << 18) + i * n * 8 and ga.bias.shape == (n,)
    record.clear()
    shared = tv((n,), float64, off=1 << 18)
    p.run(BatchedGemmArgs(a, b, c, shared))
    assert [ga.bias.ptr for _, ga, _ in record] == [BASE + (1 << 18)] * B
    record.clear()
    # empty problems launch nothing but are still validated
    e = BatchedGemmPlan.select(BatchedGemmDescriptor(0, m, n, k, "f64"), PREF)
    e.run(BatchedGemmArgs(tv((0, m, k), float64), tv((0, k, n), float64),
                          tv((0, m, n), float64)))
    with pytest.raises(bd.InvalidProblemError):
        e.run(BatchedGemmArgs(tv((1, m, k), float64), tv((0, k, n), float64),
                              tv((0, m, n), float64)))
    assert record == []


def test_batched_entry_checked_against_gemm_before_launch(record, monkeypatch):
    # an error only the per-entry GemmPlan check finds must come before any launch
    B, m, n, k = 3, 4, 4, 4
    p = BatchedGemmPlan.select(BatchedGemmDescriptor(B, m, n, k, "f32"), PREF)
    seen = []

    def can_implement(self, args):
        seen.append(args)
        raise bd.UnsupportedError("entry refused")

    monkeypatch.setattr(GemmPlan, "can_implement", can_implement)
    with pytest.raises(bd.UnsupportedError):
        p.run(BatchedGemmArgs(tv((B, m, k), float32), tv((B, k, n), float32),
                              tv((B, m, n), float32)))
    assert len(seen) == 1 and record == []


def test_grouped_descriptor_validation():
    d = GroupedGemmDescriptor([(4, 8, 16), [0, 8, 16]], "f16", out_dtype="f32")
    assert d.problems == ((4, 8, 16), (0, 8, 16)) and d.out_dtype is float32
    assert d.gemm(1) == GemmDescriptor(0, 8, 16, float16, float32)
    assert hash(d) == hash(GroupedGemmDescriptor(((4, 8, 16), (0, 8, 16)), float16, float32))
    assert GroupedGemmDescriptor((), "f32").problems == ()
    for probs in ("abc", 3, [(1, 2)], [(1, 2, 3, 4)], [(1, -2, 3)], [(1, 2.0, 3)],
                  [(True, 1, 1)], ["abc"]):
        with pytest.raises(bd.InvalidProblemError):
            GroupedGemmDescriptor(probs, "f32")
    with pytest.raises(bd.UnsupportedError):
        GroupedGemmDescriptor([(1, 1, 1)], "int32")
    with pytest.raises(bd.UnsupportedError):
        GroupedGemmDescriptor([(1, 1, 1)], "f32", epilogue="relu")
    with pytest.raises(bd.InvalidProblemError):
        GroupedGemmPlan.select(BatchedGemmDescriptor(1, 1, 1, 1, "f32"), PREF)


def test_grouped_select_and_run(record):
    probs = [(128, 256, 64), (0, 256, 64), (7, 256, 64), (128, 256, 64), (33, 256, 64)]
    d = GroupedGemmDescriptor(probs, "bf16", epilogue="bias_silu")
    p = GroupedGemmPlan.select(d, PREF)
    assert len(p.gemm_plans) == len(probs)
    assert p.gemm_plans[0] is p.gemm_plans[3]                  # one plan per distinct shape
    assert p.sku() == p.gemm_plans[0].sku() and not p.is_empty()
    assert p.gemm_plans[1].is_empty()
    a_l = [tv((m, k), bfloat16, off=g << 20) for g, (m, n, k) in enumerate(probs)]
    b_l = [tv((k, n), bfloat16, (1, k)) for m, n, k in probs]  # shared column-major weight
    c_l = [tv((m, n), bfloat16, off=(g << 20) + (1 << 19)) for g, (m, n, k) in enumerate(probs)]
    bias_l = [tv((n,), bfloat16) for m, n, k in probs]
    p.run(GroupedGemmArgs(a_l, b_l, c_l, bias_l), stream=3)
    assert [ga.a.shape[0] for _, ga, _ in record] == [128, 7, 128, 33]   # m = 0 skipped
    assert all(s == 3 for _, _, s in record)
    assert [ga.c.ptr for _, ga, _ in record] == [c_l[g].ptr for g in (0, 2, 3, 4)]
    record.clear()
    # every problem is validated before the first launch
    bad_c = list(c_l)
    bad_c[4] = tv((34, 256), bfloat16)
    with pytest.raises(bd.InvalidProblemError):
        p.run(GroupedGemmArgs(a_l, b_l, bad_c, bias_l))
    with pytest.raises(bd.InvalidProblemError):
        p.run(GroupedGemmArgs(a_l, b_l, c_l))                  # bias_list missing
    with pytest.raises(bd.InvalidProblemError):
        p.run(GroupedGemmArgs(a_l[:-1], b_l, c_l, bias_l))     # length
    with pytest.raises(bd.InvalidProblemError):
        p.run(GroupedGemmArgs(a_l, b_l, "c", bias_l))
    other = list(a_l)
    other[2] = tv((7, 64), bfloat16, dev=1)
    with pytest.raises(bd.DeviceMismatchError):
        p.run(GroupedGemmArgs(other, b_l, c_l, bias_l))
    with pytest.raises(bd.InvalidProblemError):
        p.run("args")
    assert record == []
    q = GroupedGemmPlan.select(GroupedGemmDescriptor(probs, "bf16"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        q.can_implement(GroupedGemmArgs(a_l, b_l, c_l, bias_l))   # bias with identity
    q.run(GroupedGemmArgs(a_l, b_l, c_l))
    assert len(record) == 4


def test_grouped_empty():
    p = GroupedGemmPlan.select(GroupedGemmDescriptor((), "f32"), PREF)
    assert p.is_empty() and p.gemm_plans == () and p.sku().template == "gemm_simt"
    p.run(GroupedGemmArgs([], [], []))
    z = GroupedGemmPlan.select(GroupedGemmDescriptor([(0, 3, 3), (3, 0, 3)], "f32"), PREF)
    assert z.is_empty()
    z.run(GroupedGemmArgs([tv((0, 3), float32), tv((3, 3), float32)],
                          [tv((3, 3), float32), tv((3, 0), float32)],
                          [tv((0, 3), float32), tv((3, 0), float32)]))


# ------------------------------------------------------------------ batched gemm_mma launch
def test_batched_one_launch(launches, record):
    B, m, n, k = 7, 16, 64, 96
    p = BatchedGemmPlan.select(BatchedGemmDescriptor(B, m, n, k, "bf16", alpha=2.0, beta=0.5,
                                                     epilogue="bias_relu"), PREF)
    assert p.gemm_plan.splits == 1 and p.workspace_size() == 0
    a = tv((B, m, k), bfloat16, (0, k, 1))                            # broadcast a
    b = tv((B, k, n), bfloat16, (k * n + 64, 1, k), off=1 << 16)      # per entry, k-major
    c = tv((B, m, n), bfloat16, (m * n + 3, 1, m), off=1 << 18)       # strided c, odd stride
    bias = tv((B, n), bfloat16, (n + 1, 1), off=1 << 19)
    args = BatchedGemmArgs(a, b, c, bias)
    t, kn, batched = p.kernel_for(args)
    assert t.name == "gemm_mma" and batched and kn.tile == "16x32"
    p.run(args, stream=9)
    assert record == []                                               # no per-entry loop
    (name, kn, grid, la, s), = launches
    assert name == "gemm_mma" and kn["act"] == "relu" and kn["out"] == "bf16" and s == 9
    assert grid == (2, B, 1)
    assert la == [a.ptr, b.ptr, c.ptr, bias.ptr, m, n, k, k, k, 1, m, 1, 2.0, 0.5, 1,
                  0, k * n + 64, m * n + 3, n + 1, k]
    launches.clear()
    # shared bias (n,): bias batch offset 0; no bias: c's pointer, switched off
    p.run(BatchedGemmArgs(a, b, c, tv((n,), bfloat16, off=1 << 19)))
    assert launches[0][3][3] == BASE + (1 << 19) and launches[0][3][18] == 0
    launches.clear()
    q = BatchedGemmPlan.select(BatchedGemmDescriptor(B, m, n, k, "f16"), PREF)
    a16, b16 = tv((B, m, k), float16), tv((B, k, n), float16, (0, n, 1))   # broadcast b
    c16 = tv((B, m, n), float16)
    q.run(BatchedGemmArgs(a16, b16, c16))
    (_, kn, grid, la, _), = launches
    assert kn["b_major"] == "n" and la[3] == c16.ptr and la[11] == 0 and la[14] == 0
    assert la[15:] == [m * k, 0, m * n, 0, k]


def test_batched_chunks(launches, record):
    B, m = 140000, 8
    p = BatchedGemmPlan.select(BatchedGemmDescriptor(B, m, m, m, "bf16"), PREF)
    a = tv((B, m, m), bfloat16)
    b = tv((B, m, m), bfloat16, (0, m, 1))
    c = tv((B, m, m), bfloat16, off=1 << 24)
    p.run(BatchedGemmArgs(a, b, c))
    assert [x[2] for x in launches] == [(1, 65535, 1), (1, 65535, 1), (1, B - 2 * 65535, 1)]
    for i, (_, _, _, la, _) in enumerate(launches):
        z0 = i * 65535
        assert la[0] == a.ptr + z0 * m * m * 2 and la[1] == b.ptr
        assert la[2] == c.ptr + z0 * m * m * 2 and la[15:18] == [m * m, 0, m * m]
    assert record == []


def test_batched_loop_fallbacks(launches, record):
    B, m, n, k = 3, 16, 64, 96
    p = BatchedGemmPlan.select(BatchedGemmDescriptor(B, m, n, k, "bf16"), PREF)
    # a batch stride of 4 elements (8 bytes): entries differ in alignment -> per-entry loop
    a = tv((B, m, k), bfloat16, (m * k + 4, k, 1))
    args = BatchedGemmArgs(a, tv((B, k, n), bfloat16), tv((B, m, n), bfloat16))
    assert p.kernel_for(args)[2] is False
    p.run(args)
    assert len(record) == B and launches == []
    record.clear()
    # large entries on sm90a take the wgmma kernel: loop
    w = BatchedGemmPlan.select(BatchedGemmDescriptor(2, 1024, 1024, 256, "bf16"), PREF)
    wa = BatchedGemmArgs(tv((2, 1024, 256), bfloat16), tv((2, 256, 1024), bfloat16),
                         tv((2, 1024, 1024), bfloat16))
    assert w.kernel_for(wa)[0].name == "gemm_sm90" and w.kernel_for(wa)[2] is False
    w.run(wa)
    assert len(record) == 2 and launches == []


def test_batched_split_k_only_for_batch_1(record):
    from baracuda_dsl.vocabulary import Workspace

    one = BatchedGemmPlan.select(BatchedGemmDescriptor(1, 16, 4096, 4096, "bf16"), PREF)
    assert one.gemm_plan.splits == 4 and one.workspace_size() == 4 * 16 * 4096 * 4
    args = BatchedGemmArgs(tv((1, 16, 4096), bfloat16), tv((1, 4096, 4096), bfloat16),
                           tv((1, 16, 4096), bfloat16))
    assert one.kernel_for(args)[2] is False
    with pytest.raises(bd.WorkspaceTooSmallError):
        one.run(args)
    one.run(args, workspace=Workspace(1 << 30, one.workspace_size()))
    assert len(record) == 1
    assert BatchedGemmPlan.select(BatchedGemmDescriptor(1, 16, 4096, 4096, "bf16"),
                                  tuned(PREF, splits=3)).gemm_plan.splits == 3
    many = BatchedGemmPlan.select(BatchedGemmDescriptor(2, 16, 4096, 4096, "bf16"), PREF)
    assert many.gemm_plan.splits == 1 and many.workspace_size() == 0
    with pytest.raises(bd.UnsupportedError):
        BatchedGemmPlan.select(BatchedGemmDescriptor(2, 16, 4096, 4096, "bf16"),
                               tuned(PREF, splits=2))
