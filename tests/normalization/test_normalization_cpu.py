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
