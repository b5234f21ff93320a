"""baracuda_dsl.torch's rotary embedding and dropout custom ops on the GPU: rope values and
gradients against a float64 reference (rotate-half / interleaved pairs, partial rotary dims,
position ids, strided views of a fused QKV tensor), dropout's mask statistics, scale, backward
and reproducibility, torch.autograd.gradcheck in float64, torch.library.opcheck, and both under
torch.compile(fullgraph=True)."""

import math

import pytest

from _gpu_helpers import assert_terms_close, randn

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "bfloat16", "float16", "float64"]


def _rope_ref(torch, x, cos, sin, pos, interleaved):
    """float64 rope of x (B, S, H, D) with tables (S_tab, r/2) and positions (B, S)."""
    xd = x.double()
    r = 2 * cos.shape[1]
    c = cos.double()[pos][:, :, None, :]                     # (B, S, 1, r/2)
    s = sin.double()[pos][:, :, None, :]
    out = xd.clone()
    if interleaved:
        a, b = xd[..., 0:r:2], xd[..., 1:r:2]
        out[..., 0:r:2] = a * c - b * s
        out[..., 1:r:2] = b * c + a * s
    else:
        a, b = xd[..., :r // 2], xd[..., r // 2:r]
        out[..., :r // 2] = a * c - b * s
        out[..., r // 2:r] = b * c + a * s
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("interleaved", [False, True])
def test_rope_matches_reference(dtype, interleaved):
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    gen = torch.Generator(device="cuda").manual_seed(1)
    tdt = torch.float64 if dtype == "float64" else torch.float32
    for b, s, h, d, r, with_ids in ((2, 17, 3, 64, 64, False), (1, 33, 2, 128, 96, True),
                                    (3, 5, 1, 32, 16, True), (0, 4, 2, 64, 64, False)):
        cos, sin = bt.rope_tables(64, r, 10000.0, device="cuda", dtype=tdt)
        # a strided view: the q part of a fused (B, S, H + 2, D) tensor
        full = randn(torch, (b, s, h + 2, d), dtype, gen)
        x = full[:, :, :h].requires_grad_(False)
        xg = x.detach().clone().requires_grad_(True)
        ids = None
        pos = torch.arange(s, device="cuda").expand(b, s)
        if with_ids:
            pos = torch.randint(0, 64, (b, s), generator=gen, device="cuda")
            ids = pos
        y = bt.rope(x, cos, sin, ids, interleaved)
        ref = _rope_ref(torch, x, cos, sin, pos, interleaved)
        what = f"rope {dtype} interleaved={interleaved} {(b, s, h, d, r)}"
        assert y.shape == x.shape and y.dtype == x.dtype and y.is_contiguous()
        assert_terms_close(y, ref, dtype, terms=4, scale=ref.abs() + x.double().abs(), what=what)
        dy = randn(torch, x.shape, dtype, gen)
        yg = bt.rope(xg, cos, sin, ids, interleaved)
        yg.backward(dy)
        # the adjoint of a rotation is the rotation by the opposite angle (sin negated)
        dref = _rope_ref(torch, dy, cos, -sin, pos, interleaved)
        assert_terms_close(xg.grad, dref, dtype, terms=4, scale=dref.abs() + dy.double().abs(),
                           what=f"{what} dx")


def test_rope_gradcheck_opcheck_compile():
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    gen = torch.Generator(device="cuda").manual_seed(2)
    cos, sin = bt.rope_tables(16, 8, device="cuda", dtype=torch.float64)
    x = randn(torch, (2, 5, 3, 8), "float64", gen).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a: bt.rope(a, cos, sin), (x,))
    c32, s32 = bt.rope_tables(64, 64, device="cuda")
    xb = randn(torch, (2, 16, 4, 64), "bfloat16", gen).requires_grad_(True)
    torch.library.opcheck(torch.ops.baracuda.rope.default, (xb, c32, s32, None, False))
    f = torch.compile(lambda a: bt.rope(a, c32, s32).float().square().sum(), fullgraph=True)
    loss = f(xb)
    loss.backward()
    ref = _rope_ref(torch, xb.detach(), c32, s32,
                    torch.arange(16, device="cuda").expand(2, 16), False).square().sum()
    assert abs(loss.item() - ref.item()) <= 2e-2 * ref.item()
    # rotation preserves norms: d(Σ rope(x)²)/dx = 2x
    assert torch.allclose(xb.grad.double(), 2 * xb.detach().double(), rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_mask_scale_backward(dtype):
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    gen = torch.Generator(device="cuda").manual_seed(3)
    for shape, p in (((257, 129), 0.1), ((4, 1000, 3), 0.5), ((0, 8), 0.3), ((1000,), 0.9)):
        x = (randn(torch, shape, dtype, gen).abs() + 0.5).requires_grad_(True)
        torch.manual_seed(11)
        y = bt.dropout(x, p, True)
        n = x.numel()
        keep = y != 0
        scale = 1.0 / (1.0 - p)
        what = f"dropout {dtype} {shape} p={p}"
        # kept elements are x / (1 - p) rounded once; dropped ones are exactly 0
        ref = torch.where(keep, x.detach().double() * scale, torch.zeros_like(x, dtype=torch.float64))
        assert_terms_close(y, ref, dtype, terms=1, what=what)
        if n:
            k = int(keep.sum())
            sd = math.sqrt(n * p * (1 - p))
            assert abs(k - n * (1 - p)) <= 6 * sd + 1, (what, k, n)
        torch.manual_seed(11)
        assert torch.equal(bt.dropout(x.detach(), p, True), y.detach()), f"{what}: not repeatable"
        dy = randn(torch, shape, dtype, gen)
        y.backward(dy)
        dref = torch.where(keep, dy.double() * scale, torch.zeros_like(dy, dtype=torch.float64))
        assert_terms_close(x.grad, dref, dtype, terms=1, what=f"{what} dx")
    x = randn(torch, (8, 8), dtype, gen)
    assert bt.dropout(x, 0.5, False) is x
    assert torch.equal(bt.dropout(x, 1.0, True), torch.zeros_like(x))


def test_dropout_gradcheck_opcheck_compile():
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    from baracuda_dsl.torch.dropout import new_seed

    gen = torch.Generator(device="cuda").manual_seed(4)
    x = randn(torch, (6, 7), "float64", gen).requires_grad_(True)
    seed = new_seed()
    op = torch.ops.baracuda.dropout.default
    assert torch.autograd.gradcheck(lambda a: op(a, 0.3, seed), (x,))
    xb = randn(torch, (64, 33), "bfloat16", gen).requires_grad_(True)
    torch.library.opcheck(op, (xb, 0.25, seed))
    m = bt.Dropout(0.25)
    f = torch.compile(lambda a: m(a).float().sum(), fullgraph=True)
    loss = f(xb)
    loss.backward()
    kept = xb.grad != 0
    assert torch.allclose(xb.grad[kept].float(), torch.full_like(xb.grad[kept].float(), 4 / 3),
                          rtol=1e-2)
    frac = float(kept.float().mean())
    assert 0.6 < frac < 0.9, frac
    m.eval()
    assert m(xb) is xb
