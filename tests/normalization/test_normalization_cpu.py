"""Descriptor / select validation of the row-norm plans (no GPU: select for an explicit arch)."""

import pytest

import baracuda_dsl as bd

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


@pytest.mark.parametrize("plan,desc", [
    (bd.RMSNormPlan, bd.RMSNormDescriptor),
    (bd.LayerNormPlan, bd.LayerNormDescriptor),
])
def test_forward_select_validation(plan, desc):
    p = plan.select(desc((8, 4096), 1, "bf16"), PREF)
    assert p.sku().arch is bd.ArchSku.SM90A and p.workspace_size() == 0
    assert p.precision_guarantee().deterministic
    assert dict(p.sku().knobs)["chunks"] > 0  # register bucket for 4096
    assert dict(plan.select(desc((2, 100000), 1, "f32"), PREF).sku().knobs)["cluster"] == 8
    assert dict(plan.select(desc((2, 300000), 1, "f32"), PREF).sku().knobs)["chunks"] == 0
    with pytest.raises(bd.UnsupportedError):
        desc((8, 64), 1, "int32")
    with pytest.raises(bd.InvalidProblemError):
        plan.select(desc((8, -1), 1, "f32"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        plan.select(desc((1,) * 9, 1, "f32"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        plan.select(desc((8, 64), 0, "f32"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        plan.select(desc((8, 64), 3, "f32"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        plan.select(desc((8, 64), 1, "f32", float("nan")), PREF)
    with pytest.raises(bd.UnsupportedError):
        plan.select(desc((2**31, 2), 1, "f32"), PREF)


def test_bucket_choice_covers_row():
    from baracuda_dsl.ops.normalization.specs.row_norm import (BW_ROWS, FW_ROWS, ROW_NORM_BW,
                                                               ROW_NORM_FW)

    for n in (1, 255, 256, 257, 4096, 4097, 32768, 32769, 100000, 262144):
        p = bd.RMSNormPlan.select(bd.RMSNormDescriptor((4, n), 1, "f16"), PREF)
        for plan, limit, t in ((p, 8 * FW_ROWS.caps["f16"], ROW_NORM_FW),
                               (bd.RMSNormBackwardPlan.select(
                                   bd.RMSNormBackwardDescriptor((4, n), 1, "f16"), PREF),
                                8 * BW_ROWS.caps["f16"], ROW_NORM_BW)):
            k = t.thaw(plan.sku().knobs)
            assert plan.sku().knobs in t.skus("sm90a")
            if n <= limit:  # register bucket, possibly split over a cluster
                assert k.capacity >= n and k.chunks > 0
            else:  # loop SKU serves any length
                assert k.chunks == 0
    # clusters only on sm90a: sm80 takes the loop SKU for long rows
    p80 = bd.RMSNormPlan.select(bd.RMSNormDescriptor((4, 100000), 1, "f16"),
                                bd.PlanPreference(arch=bd.ArchSku.SM80))
    assert dict(p80.sku().knobs)["chunks"] == 0 and dict(p80.sku().knobs)["cluster"] == 1


def test_backward_workspace_and_validation():
    p = bd.LayerNormBackwardPlan.select(
        bd.LayerNormBackwardDescriptor((1024, 512), 1, "f32", True, True), PREF)
    assert p.workspace_size() > 0 and p.workspace_size() % 256 == 0
    q = bd.RMSNormBackwardPlan.select(bd.RMSNormBackwardDescriptor((1024, 512), 1, "f32", False),
                                      PREF)
    assert q.workspace_size() == 0
    with pytest.raises(bd.UnsupportedError):
        bd.RMSNormBackwardDescriptor((4, 4), 1, "int8")


def test_args_validation_without_gpu():
    """Host arrays are rejected with a typed error before anything is launched."""
    np = pytest.importorskip("numpy")
    p = bd.RMSNormPlan.select(bd.RMSNormDescriptor((4, 64), 1, "f32", 1e-6, False), PREF)
    x = np.ones((4, 64), np.float32)
    with pytest.raises(bd.DeviceMismatchError):
        p.run(bd.RMSNormArgs(x, x))
    with pytest.raises(bd.WorkspaceTooSmallError):
        bw = bd.RMSNormBackwardPlan.select(bd.RMSNormBackwardDescriptor((4, 64), 1, "f32", True),
                                           PREF)
        v = bd.TensorView(0x10000, (4, 64), (64, 1), bd.float32)
        w = bd.TensorView(0x20000, (64,), (1,), bd.float32)
        r = bd.TensorView(0x30000, (4,), (1,), bd.float32)
        bw.run(bd.RMSNormBackwardArgs(v, v, r, bd.TensorView(0x40000, (4, 64), (64, 1),
                                                             bd.float32), w,
                                      bd.TensorView(0x50000, (64,), (1,), bd.float32)))
    with pytest.raises(bd.InvalidProblemError):
        y = bd.TensorView(0x10000, (4, 64), (0, 1), bd.float32)  # broadcast output
        p.run(bd.RMSNormArgs(bd.TensorView(0x20000, (4, 64), (64, 1), bd.float32), y))


def test_row_norm_tuning():
    """RowNormTuning's ladders pick among the built cluster SKUs (the SKU space does not depend
    on them); a rung that is not built is refused at select; GroupNorm rows follow it too."""
    from baracuda_dsl.ops.normalization.specs.row_norm import ROW_NORM_BW, ROW_NORM_FW

    t = bd.RowNormTuning(ladder_fw=[(8, False)], ladder_bw=((8, True),))
    assert t.ladder_fw == ((8, False),) and hash(t) == hash(bd.RowNormTuning(((8, False),),
                                                                              ((8, True),)))
    pref = bd.PlanPreference(arch=bd.ArchSku.SM90A, tuning=t)
    p = bd.RMSNormPlan.select(bd.RMSNormDescriptor((2, 40000), 1, "f32"), pref)
    k = ROW_NORM_FW.thaw(p.sku().knobs)
    assert (k.cluster, k.tpr, k.capacity) == (8, 1024, 8 * 32768)
    assert p.sku().knobs in ROW_NORM_FW.skus("sm90a")
    # the default ladder: 4 half-size slices (512 threads for two-byte types)
    k = ROW_NORM_FW.thaw(bd.RMSNormPlan.select(bd.RMSNormDescriptor((2, 40000), 1, "f32"),
                                               PREF).sku().knobs)
    assert (k.cluster, k.capacity) == (4, 4 * 16384)
    k = ROW_NORM_FW.thaw(bd.RMSNormPlan.select(bd.RMSNormDescriptor((2, 40000), 1, "bf16"),
                                               PREF).sku().knobs)
    assert (k.cluster, k.tpr, k.capacity) == (4, 512, 4 * 16384)
    q = bd.LayerNormBackwardPlan.select(bd.LayerNormBackwardDescriptor((2, 9000), 1, "f32"), pref)
    k = ROW_NORM_BW.thaw(q.sku().knobs)
    assert (k.cluster, k.capacity) == (8, 8 * 4096) and q.sku().knobs in ROW_NORM_BW.skus("sm90a")
    # GroupNorm rows of (C/G)·S = 64·1024 elements
    g = bd.GroupNormPlan.select(bd.GroupNormDescriptor((2, 64, 32, 32), 1, "f32"), pref)
    k = ROW_NORM_FW.thaw(g.sku().knobs)
    assert (k.cluster, k.affine, k.pdt) == (8, "chan", "f32")
    assert g.sku().knobs in ROW_NORM_FW.skus("sm90a")
    bad = bd.PlanPreference(arch=bd.ArchSku.SM90A, tuning=bd.RowNormTuning(ladder_fw=((2, True),)))
    with pytest.raises(bd.UnsupportedError):
        bd.RMSNormPlan.select(bd.RMSNormDescriptor((2, 40000), 1, "f32"), bad)
    # off sm90a the ladder is not used
    p80 = bd.PlanPreference(arch=bd.ArchSku.SM80, tuning=bad.tuning)
    k = ROW_NORM_FW.thaw(bd.RMSNormPlan.select(bd.RMSNormDescriptor((2, 40000), 1, "f32"),
                                               p80).sku().knobs)
    assert (k.cluster, k.chunks) == (1, 0)


def test_row_engine_spaces():
    """The row engines' SKU geometries: no repeats, buckets up to the cap, capacities of the
    cluster slices, the launch geometry of the row kernels."""
    from baracuda_dsl.common.rows import RowGeometry
    from baracuda_dsl.ops.normalization.specs.row_norm import BW_ROWS, FW_ROWS

    for engine in (FW_ROWS, BW_ROWS):
        for dt in ("f32", "f16", "bf16", "f64"):
            space = list(engine.space(dt))
            assert len(space) == len(set(space))
            regs = [g for g in space if g.chunks and g.cluster == 1]
            assert max(g.capacity for g in regs) == engine.caps[dt]
            for c, half in engine.clusters:
                g = engine.cluster(dt, c, half)
                assert g in space and g.capacity == engine.caps[dt] // (2 if half else 1) * c
            assert RowGeometry(1, 256, 1, 0, 1) in space  # the generic loop
    g = FW_ROWS.cluster("bf16", 4, True)
    geo = FW_ROWS.launch(g)
    assert (geo.threads, geo.cluster) == (512, 4)
    assert geo.smem_bytes == (512 // 32) * 4 * 8 + 64 + 4 * 4 * 8 + 64
    assert g.blocks(10) == 40 and not g.arch_ok("sm80") and g.arch_ok("sm90a")
