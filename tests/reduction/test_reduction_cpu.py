"""ReducePlan / ArgReducePlan / ReduceToPlan without a GPU: descriptor validation, the host
geometry (axis canonicalisation, collapse, split into segments) checked by emulating the
kernel's index math in numpy, SKU space, and cross-compiling for sm80 / sm89 / sm90a."""

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.ops.reduction.reductions import (ArgReducePlan, ReduceArgs, ReduceDescriptor,
                                                   ReducePlan, ReduceToDescriptor, ReduceToPlan)
from baracuda_dsl.tensor import contiguous_strides

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


def test_validation():
    d = ReduceDescriptor((4, 5, 6), (0, -1), "sum", "int8")
    assert d.axes == (0, 2) and d.out_shape == (5,) and d.out_dtype == bd.int64
    assert ReduceDescriptor((4,), None, "sum", "u16").out_dtype == bd.uint64
    assert ReduceDescriptor((4,), None, "sum", "bf16").out_dtype == bd.bfloat16
    assert ReduceDescriptor((4,), None, "sum", "i16", keep_dtype=True).out_dtype == bd.int16
    assert ReduceDescriptor((4,), None, "argmax", "f32").out_dtype == bd.int64
    with pytest.raises(bd.InvalidProblemError):
        ReduceDescriptor((4, 5), (0, 0))
    with pytest.raises(bd.InvalidProblemError):
        ReduceDescriptor((4, 5), (2,))
    with pytest.raises(bd.InvalidProblemError):
        ReduceDescriptor((4, 5), None, "median")
    with pytest.raises(bd.UnsupportedError):
        ReduceDescriptor((4, 5), None, "var", "int32")
    with pytest.raises(bd.UnsupportedError):
        ReduceDescriptor((4,), None, "mean", "int32")
    with pytest.raises(bd.UnsupportedError):
        ReduceDescriptor((4,), None, "sum", "complex64")
    with pytest.raises(bd.InvalidProblemError):
        ReducePlan.select(ReduceDescriptor((0, 3), (0,), "max"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        ReducePlan.select(ReduceDescriptor((3,), None, "argmax"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        ArgReducePlan.select(ReduceDescriptor((3,), None, "sum"), PREF)
    with pytest.raises(bd.UnsupportedError):
        ArgReducePlan.select(ReduceDescriptor((3, 4, 5), (0, 1), "argmax"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        ReduceToDescriptor((4, 5), (3,))
    t = ReduceToDescriptor((4, 5, 6), (5, 1))
    assert t.axes == (0, 2)
    assert ReduceToPlan.select(t, PREF).desc == t
    assert ReducePlan.select(ReduceDescriptor((5, 0), (1,), "sum"), PREF).workspace_size() == 0
    p = ReducePlan.select(ReduceDescriptor((4,), None, "sum"), PREF)
    with pytest.raises(bd.DeviceMismatchError):
        p.run(ReduceArgs(np.zeros(4, np.float32), np.zeros((), np.float32)))


def _emulate(plan, a):
    """Run the plan's pass(es) in numpy exactly as the kernel indexes memory (dense input)."""
    g = plan._dense
    flat = a.reshape(-1)

    def run_pass(src, p, op):
        n_out, R, k1, ks0, ks1, r1, rs0, rs1, seg, nseg = p.dims
        out = np.empty(n_out * nseg)
        for item in range(n_out * nseg):
            s, o = divmod(item, n_out)
            base = (o // k1) * ks0 + (o % k1) * ks1
            rr = np.arange(s * seg, min(R, s * seg + seg))
            offs = base + (rr * rs1 if r1 == 1 else (rr // r1) * rs0 + (rr % r1) * rs1)
            vals = src[offs]
            out[item] = vals.sum() if op == "sum" else vals.max()
        return out

    op = plan.desc.op
    part = run_pass(flat, g.p1, op)
    if g.p2 is not None:
        part = run_pass(part, g.p2, op)
    return part.reshape(plan.desc.out_shape)


@pytest.mark.parametrize("shape,axes", [((7,), None), ((33, 5), (0,)), ((4, 5, 6), (0, 2)),
                                        ((4, 5, 6), (1,)), ((3, 4, 5, 6), (1, 3)),
                                        ((2, 3, 4, 5), (0, 1, 2, 3)), ((4100,), None),
                                        ((1500, 3), (0,)), ((3, 5000), (1,))])
@pytest.mark.parametrize("op", ["sum", "max"])
def test_geometry_emulated(shape, axes, op):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape)
    plan = ReducePlan.select(ReduceDescriptor(shape, axes, op, "f64"), PREF)
    kept = [i for i in range(len(shape)) if i not in plan.desc.axes]
    src = np.ascontiguousarray(np.transpose(a, kept + list(plan.desc.axes))) \
        if plan._copy_bytes else a
    ref = getattr(np, op)(a, axis=plan.desc.axes)
    np.testing.assert_allclose(_emulate(plan, src), ref, rtol=1e-12)


def test_split_is_chosen_when_outputs_are_few():
    full = ReducePlan.select(ReduceDescriptor((2**26,), None, "sum", "f32"), PREF)
    assert full._dense.nseg > 100 and full.workspace_size() > 0
    rows = ReducePlan.select(ReduceDescriptor((32768, 4096), (1,), "sum", "bf16"), PREF)
    assert rows._dense.nseg == 1
    col = ReducePlan.select(ReduceDescriptor((4096, 32768), (0,), "sum", "f32"), PREF)
    assert dict(col.sku().knobs)["tpo"] == 1


def test_sku_space():
    from baracuda_dsl.ops import get_template

    skus = get_template("axis_reduce").skus("sm80")
    assert 400 < len(skus) < 520
    assert any(dict(k)["vec"] > 1 for k in skus)
    assert len(set(skus)) == len(skus)


@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for knobs in (dict(op="sum", dtype="bf16", out="bf16", tpo=32, stage2=0, vec=8),
                  dict(op="argmax", dtype="f64", out="f64", tpo=256, stage2=1, vec=1),
                  dict(op="min", dtype="bool", out="bool", tpo=1, stage2=0, vec=1)):
        cubin, meta = compile_sku("axis_reduce", freeze_knobs(knobs), arch, timeout=300)
        assert len(cubin) > 1000 and meta["threads"] == 256


def test_backward_validation():
    from baracuda_dsl.ops.reduction.reductions_bw import (ReduceBackwardArgs,
                                                          ReduceBackwardDescriptor,
                                                          ReduceBackwardPlan)

    d = ReduceBackwardDescriptor((4, 5, 6), (0, 2), "var", "bf16", correction=1)
    assert d.out_shape == (5,) and d.keep_shape == (1, 5, 1)
    p = ReduceBackwardPlan.select(d, PREF)
    assert p.workspace_size() > 0 and p.sku().op == "var_bw"
    assert ReduceBackwardPlan.select(ReduceBackwardDescriptor((4, 5), None, "sum"),
                                     PREF).workspace_size() == 0
    with pytest.raises(bd.UnsupportedError):
        ReduceBackwardDescriptor((4,), None, "prod")
    with pytest.raises(bd.UnsupportedError):
        ReduceBackwardDescriptor((4,), None, "sum", "int32")
    q = ReduceBackwardPlan.select(ReduceBackwardDescriptor((4,), None, "max"), PREF)
    with pytest.raises(bd.DeviceMismatchError):
        q.run(ReduceBackwardArgs(np.zeros((), np.float32), np.zeros(4, np.float32)))


def test_composites_select():
    from baracuda_dsl.ops.reduction.composites import (BoolReduceDescriptor, BoolReducePlan,
                                                       CountReducePlan, StatReducePlan,
                                                       TraceDescriptor, TracePlan)

    for op in ("var", "std", "logsumexp", "norm2"):
        p = ReducePlan.select(ReduceDescriptor((8, 300), (1,), op, "bf16", correction=1), PREF)
        assert isinstance(p, StatReducePlan) and p.workspace_size() >= 8 * 300 * 4
        assert p.precision_guarantee().accumulator == bd.float32
    assert ReducePlan.select(ReduceDescriptor((8, 0), (1,), "logsumexp"), PREF).workspace_size()
    from baracuda_dsl.ops.reduction.axis_reduce import AxisReducePlan

    with pytest.raises(bd.InvalidProblemError):   # the kernel plan serves no statistic
        AxisReducePlan.select(ReduceDescriptor((8, 3), (1,), "var"), PREF)
    with pytest.raises(bd.InvalidProblemError):   # nor the statistic plan a plain sum
        StatReducePlan.select(ReduceDescriptor((8, 3), (1,), "sum"), PREF)
    b = BoolReducePlan.select(BoolReduceDescriptor((4, 5), (1,), "all", "f16"), PREF)
    assert b.desc.out_dtype.name == "bool" and b.workspace_size() >= 20
    c = CountReducePlan.select(BoolReduceDescriptor((4, 5), None, "count_nonzero", "c64"), PREF)
    assert c.desc.out_dtype == bd.int64 and c.desc.out_shape == ()
    with pytest.raises(bd.InvalidProblemError):
        BoolReducePlan.select(BoolReduceDescriptor((4,), None, "count_nonzero"), PREF)
    with pytest.raises(bd.UnsupportedError):
        BoolReduceDescriptor((4,), None, "any", "complex128")
    t = TracePlan.select(TraceDescriptor((3, 4, 5), -2, "int32"), PREF)
    assert t.out_shape == (3,) and t.out_dtype == bd.int64 and t.desc.diag_len == 2
    with pytest.raises(bd.InvalidProblemError):
        TraceDescriptor((4,))
