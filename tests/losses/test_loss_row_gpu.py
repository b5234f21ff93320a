"""cosine_embedding / multi_margin / multilabel_margin / triplet_margin losses (FW + BW) on the
GPU against float64 torch references (autograd for the backward)."""

import math

import numpy as np
import pytest

from _loss_gpu_checks import assert_close, run_with_workspace
from baracuda_dsl.ops.losses import loss_row as L

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float64", "bfloat16", "float16"]
SHORT = {"float32": "f32", "float64": "f64", "bfloat16": "bf16", "float16": "f16"}
TOL = {"float32": 3e-5, "float16": 4e-3, "bfloat16": 2.5e-2, "float64": 1e-11}
REDS = ["none", "mean", "sum"]
SHAPES = [(1, 1), (7, 33), (5, 256), (3, 1000), (2, 4099)]


def _torch():
    return pytest.importorskip("torch")


def _gen(seed):
    torch = _torch()
    return torch.Generator(device="cuda").manual_seed(seed)


def _rand(shape, dt, seed, scale=1.0):
    torch = _torch()
    return (torch.randn(shape, generator=_gen(seed), device="cuda", dtype=torch.float64)
            * scale).to(getattr(torch, dt))


def _poison(shape, dt):
    torch = _torch()
    return torch.full(shape, float("nan"), device="cuda", dtype=getattr(torch, dt))


def _out_shape(n, red):
    return (n,) if red == "none" else ()


def _check_empty_batch(out, red):
    """An empty batch: mean → NaN, sum → 0, none → empty (torch returns uninitialised memory
    for multi_margin / multilabel_margin here; ours follows the other losses)."""
    torch = _torch()
    if red == "mean":
        assert torch.isnan(out).all()
    elif red == "sum":
        assert (out == 0).all()


def _dloss(n, red, dt, seed):
    return _rand(_out_shape(n, red), dt, seed)


def _leaf(x):
    return x.detach().double().cpu().requires_grad_(True)


# ------------------------------------------------------------------------------ cosine
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("red", REDS)
def test_cosine_embedding(dt, red):
    torch = _torch()
    F = torch.nn.functional
    for (n, d), margin in zip(SHAPES + [(0, 5)], (0.0, 0.3, -0.2, 0.5, 0.1, 0.0)):
        x1, x2 = _rand((n, d), dt, 1), _rand((n, d), dt, 2)
        if n > 1:
            x2[0] = x1[0]  # cos = 1
        y = (torch.randint(0, 2, (n,), generator=_gen(3), device="cuda") * 2 - 1).to(x1.dtype)
        out = _poison(_out_shape(n, red), dt)
        desc = L.CosineEmbeddingLossDescriptor(n, d, SHORT[dt], margin, red)
        run_with_workspace(L.CosineEmbeddingLossPlan.select(desc), L.CosineEmbeddingLossArgs(x1, x2, y, out))
        a, b = _leaf(x1), _leaf(x2)
        ref = F.cosine_embedding_loss(a, b, y.double().cpu(), margin=margin, reduction=red)
        assert_close(out, ref.detach(), TOL[dt], f"cos fw {n}x{d}")
        if n == 0:
            continue
        g = _dloss(n, red, dt, 4)
        ref.backward(g.double().cpu())
        dx1, dx2 = _poison((n, d), dt), _poison((n, d), dt)
        bdesc = L.CosineEmbeddingLossBackwardDescriptor(n, d, SHORT[dt], margin, red)
        run_with_workspace(L.CosineEmbeddingLossBackwardPlan.select(bdesc),
             L.CosineEmbeddingLossBackwardArgs(g, x1, x2, y, dx1, dx2))
        assert_close(dx1, a.grad, 4 * TOL[dt], "cos dx1")
        assert_close(dx2, b.grad, 4 * TOL[dt], "cos dx2")


# ------------------------------------------------------------------------- multi_margin
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_multi_margin(dt, p, weighted):
    torch = _torch()
    F = torch.nn.functional
    for (n, c), red in zip(SHAPES + [(0, 3)], REDS * 2):
        x = _rand((n, c), dt, 5)
        t = torch.randint(0, c, (n,), generator=_gen(6), device="cuda")
        w = (torch.rand(c, generator=_gen(7), device="cuda") + 0.5).to(x.dtype) if weighted \
            else None
        out = _poison(_out_shape(n, red), dt)
        st = torch.zeros(1, dtype=torch.int32, device="cuda")
        desc = L.MultiMarginLossDescriptor(n, c, SHORT[dt], p, 0.8, weighted, red)
        run_with_workspace(L.MultiMarginLossPlan.select(desc), L.MultiMarginLossArgs(x, t, out, w, st))
        assert st.item() == 0
        if n == 0:
            _check_empty_batch(out, red)
            continue
        a = _leaf(x)
        ref = F.multi_margin_loss(a, t.cpu(), p=p, margin=0.8,
                                  weight=None if w is None else w.double().cpu(), reduction=red)
        assert_close(out, ref.detach(), TOL[dt], f"mm fw {n}x{c}")
        g = _dloss(n, red, dt, 8)
        ref.backward(g.double().cpu())
        dx = _poison((n, c), dt)
        bdesc = L.MultiMarginLossBackwardDescriptor(n, c, SHORT[dt], p, 0.8, weighted, red)
        run_with_workspace(L.MultiMarginLossBackwardPlan.select(bdesc),
             L.MultiMarginLossBackwardArgs(g, x, t, dx, w))
        assert_close(dx, a.grad, 4 * TOL[dt], "mm dx")


def test_multi_margin_bad_and_negative_targets():
    torch = _torch()
    F = torch.nn.functional
    x = _rand((4, 6), "float64", 9)
    t = torch.tensor([1, -1, 6, 2], device="cuda")  # -1 wraps to 5; 6 is out of range
    out = _poison((4,), "float64")
    st = torch.zeros(1, dtype=torch.int32, device="cuda")
    desc = L.MultiMarginLossDescriptor(4, 6, "f64", reduction="none")
    run_with_workspace(L.MultiMarginLossPlan.select(desc), L.MultiMarginLossArgs(x, t, out, None, st))
    assert st.item() == 1
    ref = F.multi_margin_loss(x.cpu(), torch.tensor([1, 5, 0, 2]), reduction="none")
    assert out[2].item() == 0.0
    keep = [0, 1, 3]
    assert_close(out[keep], ref[keep], 1e-12)


# -------------------------------------------------------------------- multilabel_margin
def _ml_targets(n, c, seed):
    rng = np.random.default_rng(seed)
    t = np.full((n, c), -1, dtype=np.int64)
    for r in range(n):
        k = int(rng.integers(0, min(c, 6) + 1))
        t[r, :k] = rng.integers(0, c, k)  # duplicates allowed
    if n and c > 3:
        t[0, :4] = [c - 1, c - 1, -1, 0]  # a duplicate, then entries after -1 are ignored
    return t


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("red", REDS)
def test_multilabel_margin(dt, red):
    torch = _torch()
    F = torch.nn.functional
    for n, c in [(1, 1), (7, 33), (3, 300), (2, 1200), (0, 4)]:
        x = _rand((n, c), dt, 10)
        tn = _ml_targets(n, c, 11)
        t = torch.tensor(tn, device="cuda")
        out = _poison(_out_shape(n, red), dt)
        st = torch.zeros(1, dtype=torch.int32, device="cuda")
        desc = L.MultilabelMarginLossDescriptor(n, c, SHORT[dt], red)
        run_with_workspace(L.MultilabelMarginLossPlan.select(desc), L.MultilabelMarginLossArgs(x, t, out, st))
        assert st.item() == 0
        if n == 0:
            _check_empty_batch(out, red)
            continue
        a = _leaf(x)
        ref = F.multilabel_margin_loss(a, torch.tensor(tn), reduction=red)
        assert_close(out, ref.detach(), TOL[dt], f"mlm fw {n}x{c}")
        g = _dloss(n, red, dt, 12)
        ref.backward(g.double().cpu())
        dx = _poison((n, c), dt)
        bdesc = L.MultilabelMarginLossBackwardDescriptor(n, c, SHORT[dt], red)
        run_with_workspace(L.MultilabelMarginLossBackwardPlan.select(bdesc),
             L.MultilabelMarginLossBackwardArgs(g, x, t, dx))
        assert_close(dx, a.grad, 4 * TOL[dt], "mlm dx")


def test_multilabel_bad_target_sets_status():
    torch = _torch()
    x = _rand((2, 5), "float32", 13)
    t = torch.tensor([[1, 7, 2, -1, -1], [0, -1, -1, -1, -1]], device="cuda")
    out = _poison((2,), "float32")
    st = torch.zeros(1, dtype=torch.int32, device="cuda")
    desc = L.MultilabelMarginLossDescriptor(2, 5, "f32", "none")
    run_with_workspace(L.MultilabelMarginLossPlan.select(desc), L.MultilabelMarginLossArgs(x, t, out, st))
    assert st.item() == 1 and not torch.isnan(out).any()


# ------------------------------------------------------------------------------ triplet
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("p,swap", [(2.0, False), (2.0, True), (1.0, False), (3.0, True),
                                    (1.5, False)])
def test_triplet_margin(dt, p, swap):
    torch = _torch()
    F = torch.nn.functional
    for (n, d), red in zip(SHAPES + [(0, 3)], REDS * 2):
        a, b, c = (_rand((n, d), dt, s) for s in (14, 15, 16))
        out = _poison(_out_shape(n, red), dt)
        desc = L.TripletMarginLossDescriptor(n, d, SHORT[dt], 1.0, p, 1e-6, swap, red)
        run_with_workspace(L.TripletMarginLossPlan.select(desc), L.TripletMarginLossArgs(a, b, c, out))
        ta, tb, tc = _leaf(a), _leaf(b), _leaf(c)
        ref = F.triplet_margin_loss(ta, tb, tc, margin=1.0, p=p, eps=1e-6, swap=swap,
                                    reduction=red)
        assert_close(out, ref.detach(), 2 * TOL[dt], f"trip fw {n}x{d}")
        if n == 0:
            continue
        g = _dloss(n, red, dt, 17)
        ref.backward(g.double().cpu())
        da, db, dc = (_poison((n, d), dt) for _ in range(3))
        bdesc = L.TripletMarginLossBackwardDescriptor(n, d, SHORT[dt], 1.0, p, 1e-6, swap, red)
        run_with_workspace(L.TripletMarginLossBackwardPlan.select(bdesc),
             L.TripletMarginLossBackwardArgs(g, a, b, c, da, db, dc))
        for mine, ref_t, nm in ((da, ta, "da"), (db, tb, "dp"), (dc, tc, "dn")):
            assert_close(mine, ref_t.grad, 8 * TOL[dt], f"trip {nm} {n}x{d}")


# ------------------------------------------------------------------ strided / misc / xp
def test_strided_inputs_and_outputs():
    torch = _torch()
    F = torch.nn.functional
    base = _rand((40, 90), "float32", 18)
    x1 = base[::3, ::2]          # (14, 45), both strides non-unit
    x2 = _rand((45, 14), "float32", 19).t()   # transposed
    y = torch.ones(28, device="cuda")[::2]
    y[3:6] = -1
    outb = _poison((28,), "float32")
    out = outb[::2]
    desc = L.CosineEmbeddingLossDescriptor(14, 45, "f32", 0.1, "none")
    run_with_workspace(L.CosineEmbeddingLossPlan.select(desc), L.CosineEmbeddingLossArgs(x1, x2, y, out))
    ref = F.cosine_embedding_loss(x1.double(), x2.double(), y.double(), margin=0.1,
                                  reduction="none")
    assert_close(out, ref, 3e-5)
    assert torch.isnan(outb[1::2]).all()  # gaps untouched
    a = base[::3, 1::2]
    dxb = _poison((14, 90), "float32")
    dx = dxb[:, ::2]
    t = torch.randint(0, 45, (14,), generator=_gen(20), device="cuda")
    g = _rand((14,), "float32", 21)
    la = _leaf(a)
    F.multi_margin_loss(la, t.cpu(), reduction="none").backward(g.double().cpu())
    bdesc = L.MultiMarginLossBackwardDescriptor(14, 45, "f32", reduction="none")
    run_with_workspace(L.MultiMarginLossBackwardPlan.select(bdesc), L.MultiMarginLossBackwardArgs(g, a, t, dx))
    assert_close(dx, la.grad, 1e-4)
    assert torch.isnan(dxb[:, 1::2]).all()


def test_reductions_bit_identical_reruns():
    torch = _torch()
    x = _rand((3000, 64), "float32", 22)
    t = torch.randint(0, 64, (3000,), generator=_gen(23), device="cuda")
    plan = L.MultiMarginLossPlan.select(L.MultiMarginLossDescriptor(3000, 64, "f32",
                                                                    reduction="sum"))
    outs = []
    for _ in range(3):
        out = _poison((), "float32")
        run_with_workspace(plan, L.MultiMarginLossArgs(x, t, out))
        outs.append(out.item())
    assert outs[0] == outs[1] == outs[2] and math.isfinite(outs[0])


def test_namespace_functions():
    torch = _torch()
    import array_api as xp
    from array_api.losses import _row as R

    F = torch.nn.functional
    rng = np.random.default_rng(24)
    x1, x2 = rng.standard_normal((5, 9)), rng.standard_normal((5, 9))
    y = np.array([1, -1, 1, -1, -1])
    got = R.cosine_embedding_loss(xp.asarray(x1), xp.asarray(x2), xp.asarray(y), margin=0.2)
    ref = F.cosine_embedding_loss(torch.tensor(x1), torch.tensor(x2), torch.tensor(y),
                                  margin=0.2)
    assert abs(float(got.to_numpy()) - ref.item()) < 1e-12
    got = R.cosine_embedding_loss(xp.asarray(x1[0]), xp.asarray(x2[0]), xp.asarray(y[0]),
                                  reduction="none")
    assert got.shape == ()
    x = rng.standard_normal((4, 7))
    t = np.array([0, 6, 3, 3], dtype=np.int32)
    got = R.multi_margin_loss(xp.asarray(x), xp.asarray(t), p=2, reduction="none")
    ref = F.multi_margin_loss(torch.tensor(x), torch.tensor(t).long(), p=2, reduction="none")
    np.testing.assert_allclose(got.to_numpy(), ref.numpy(), rtol=1e-12)
    with pytest.raises(IndexError):
        R.multi_margin_loss(xp.asarray(x), xp.asarray(np.array([0, 7, 1, 1])))
    tn = _ml_targets(4, 7, 25)
    got = R.multilabel_margin_loss(xp.asarray(x), xp.asarray(tn), reduction="sum")
    ref = F.multilabel_margin_loss(torch.tensor(x), torch.tensor(tn), reduction="sum")
    assert abs(float(got.to_numpy()) - ref.item()) < 1e-12
    a, b, c = (rng.standard_normal((6, 5)) for _ in range(3))
    got = R.triplet_margin_loss(xp.asarray(a), xp.asarray(b), xp.asarray(c), swap=True)
    ref = F.triplet_margin_loss(torch.tensor(a), torch.tensor(b), torch.tensor(c), swap=True)
    assert abs(float(got.to_numpy()) - ref.item()) < 1e-12
    with pytest.raises(ValueError):
        R.triplet_margin_loss(xp.asarray(a), xp.asarray(b), xp.asarray(c), reduction="avg")
