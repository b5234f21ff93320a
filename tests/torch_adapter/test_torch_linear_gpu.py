"""baracuda_dsl.torch's linear custom op on the GPU: values and gradients against torch's
F.linear in float64 (autograd), gradcheck in float64, torch.library.opcheck, and a Linear /
RMSNorm / cross-entropy model under torch.compile(fullgraph=True) against torch's modules."""

import pytest

from _gpu_helpers import assert_terms_close, randn

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "bfloat16", "float16", "float64"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_linear_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(1)
    for lead, n_in, n_out, has_bias in (((4, 9), 64, 96, True), ((33,), 40, 24, False),
                                        ((2, 3, 5), 128, 256, True), ((0,), 16, 8, True)):
        x = randn(torch, lead + (n_in,), dtype, gen).requires_grad_(True)
        w = randn(torch, (n_out, n_in), dtype, gen, n_in ** -0.5).requires_grad_(True)
        b = randn(torch, (n_out,), dtype, gen).requires_grad_(True) if has_bias else None
        dy = randn(torch, lead + (n_out,), dtype, gen)
        xd = x.detach().double().requires_grad_(True)
        wd = w.detach().double().requires_grad_(True)
        bd_ = b.detach().double().requires_grad_(True) if has_bias else None
        y = bt.linear(x, w, b)
        yr = F.linear(xd, wd, bd_)
        y.backward(dy)
        yr.backward(dy.double())
        m = x.numel() // n_in
        what = f"linear {dtype} {lead} {n_in}->{n_out} bias={has_bias}"
        ysc = F.linear(xd.detach().abs(), wd.detach().abs(),
                       None if bd_ is None else bd_.detach().abs())
        assert_terms_close(y.detach(), yr.detach(), dtype, terms=2 * n_in + 4, scale=ysc,
                           what=what)
        gy = dy.double().abs()
        assert_terms_close(x.grad, xd.grad, dtype, terms=2 * n_out + 4,
                           scale=gy @ wd.detach().abs(), what=f"{what} dx")
        wsc = gy.reshape(-1, n_out).t() @ xd.detach().abs().reshape(-1, n_in)
        assert_terms_close(w.grad, wd.grad, dtype, terms=2 * m + 4, scale=wsc,
                           what=f"{what} dw")
        if has_bias:
            assert_terms_close(b.grad, bd_.grad, dtype, terms=2 * m + 4,
                               scale=gy.reshape(-1, n_out).sum(0), what=f"{what} db")


def test_gradcheck_and_opcheck():
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    gen = torch.Generator(device="cuda").manual_seed(2)
    x = randn(torch, (3, 8), "float64", gen).requires_grad_(True)
    w = randn(torch, (5, 8), "float64", gen).requires_grad_(True)
    b = randn(torch, (5,), "float64", gen).requires_grad_(True)
    assert torch.autograd.gradcheck(bt.linear, (x, w, b))
    assert torch.autograd.gradcheck(lambda a, c: bt.linear(a, c), (x, w))
    for dtype in ("float32", "bfloat16"):
        a = randn(torch, (2, 6, 32), dtype, gen).requires_grad_(True)
        c = randn(torch, (48, 32), dtype, gen).requires_grad_(True)
        d = randn(torch, (48,), dtype, gen).requires_grad_(True)
        torch.library.opcheck(torch.ops.baracuda.linear.default, (a, c, d))
        torch.library.opcheck(torch.ops.baracuda.linear.default, (a, c, None))


def test_tiny_model_under_compile():
    """Embedding-free two-layer MLP with RMSNorm and cross-entropy: baracuda modules compiled
    with fullgraph=True against the same model built from torch's modules."""
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    torch.manual_seed(0)

    def model(lin, norm):
        return torch.nn.Sequential(lin(64, 128), norm(128), lin(128, 100))

    ours = model(bt.Linear, bt.RMSNorm).cuda()
    ref = model(torch.nn.Linear, torch.nn.RMSNorm).cuda()
    ref.load_state_dict(ours.state_dict())
    x = torch.randn(16, 64, device="cuda")
    t = torch.randint(0, 100, (16,), device="cuda")
    loss_ours = torch.compile(lambda v: bt.cross_entropy(ours(v), t), fullgraph=True)(x)
    loss_ref = torch.nn.functional.cross_entropy(ref(x), t)
    loss_ours.backward()
    loss_ref.backward()
    assert torch.allclose(loss_ours, loss_ref, rtol=1e-5, atol=1e-5)
    for (n1, p1), (_, p2) in zip(ours.named_parameters(), ref.named_parameters()):
        assert torch.allclose(p1.grad, p2.grad, rtol=1e-4, atol=1e-5), n1
