"""baracuda_dsl.torch's RMSNorm / LayerNorm custom ops on the GPU: values and gradients against
torch's own ops in float64 (autograd), torch.autograd.gradcheck in float64, torch.library.opcheck
(schema, fake kernel, autograd registration, AOT dispatch), the nn modules, and a block under
torch.compile(fullgraph=True)."""

import pytest

from _gpu_helpers import assert_terms_close, randn

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "bfloat16", "float16", "float64"]
SHAPES = [((4, 7, 64), 1), ((3, 5, 2, 48), 2), ((1, 1000), 1), ((0, 32), 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["rms", "layer"])
def test_matches_torch_forward_and_backward(dtype, kind):
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(1)
    for shape, k in SHAPES:
        ns = shape[len(shape) - k:]
        x = randn(torch, shape, dtype, gen).requires_grad_(True)
        w = (1 + 0.1 * randn(torch, ns, dtype, gen)).requires_grad_(True)
        b = randn(torch, ns, dtype, gen).requires_grad_(True)
        dy = randn(torch, shape, dtype, gen)
        xd, wd, bd_ = (t.detach().double().requires_grad_(True) for t in (x, w, b))
        if kind == "rms":
            y = bt.rms_norm(x, ns, w, 1e-6)
            yr = F.rms_norm(xd, ns, wd, 1e-6)
            ins, refs = (x, w), (xd, wd)
        else:
            y = bt.layer_norm(x, ns, w, b, 1e-5)
            yr = F.layer_norm(xd, ns, wd, bd_, 1e-5)
            ins, refs = (x, w, b), (xd, wd, bd_)
        y.backward(dy)
        yr.backward(dy.double())
        n = 1
        for e in ns:
            n *= e
        what = f"{kind} {dtype} {shape}"
        assert y.dtype == x.dtype and y.shape == x.shape
        # y = x̂·w (+ b): the rounding is relative to |x̂·w| + |b|, not to |y| (cancellation);
        # the row statistics sum n terms
        ysc = ((yr - bd_).abs() + bd_.abs()) if kind == "layer" else yr.abs()
        assert_terms_close(y.detach(), yr.detach(), dtype, terms=8 + 2 * n,
                           scale=ysc.detach(), what=what)
        dymax = float(dy.double().abs().max()) if dy.numel() else 0.0
        for got, ref, name in zip(ins, refs, ("x", "weight", "bias")):
            assert got.grad is not None, f"{what}: no gradient for {name}"
            terms = 8 + (2 * x.numel() // max(n, 1) if name != "x" else 2 * n)
            assert_terms_close(got.grad, ref.grad, dtype, terms=terms,
                               scale=ref.grad.abs() + dymax, what=f"{what} d{name}")


def test_gradcheck_float64():
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    gen = torch.Generator(device="cuda").manual_seed(2)
    x = randn(torch, (3, 16), "float64", gen).requires_grad_(True)
    w = randn(torch, (16,), "float64", gen).requires_grad_(True)
    b = randn(torch, (16,), "float64", gen).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, c: bt.rms_norm(a, 16, c, 1e-6), (x, w))
    assert torch.autograd.gradcheck(lambda a, c, d: bt.layer_norm(a, 16, c, d), (x, w, b))
    assert torch.autograd.gradcheck(lambda a: bt.rms_norm(a, 16, None, 1e-6), (x,))


def test_opcheck():
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    assert bt.rms_norm is not None                          # importing registers the ops

    gen = torch.Generator(device="cuda").manual_seed(3)
    for dtype in ("float32", "bfloat16"):
        x = randn(torch, (4, 3, 32), dtype, gen).requires_grad_(True)
        w = randn(torch, (32,), dtype, gen).requires_grad_(True)
        b = randn(torch, (32,), dtype, gen).requires_grad_(True)
        torch.library.opcheck(torch.ops.baracuda.rms_norm.default, (x, w, 1, 1e-6))
        torch.library.opcheck(torch.ops.baracuda.rms_norm.default, (x, None, 1, 1e-6))
        torch.library.opcheck(torch.ops.baracuda.layer_norm.default, (x, w, b, 1, 1e-5))
        torch.library.opcheck(torch.ops.baracuda.layer_norm.default, (x, None, None, 1, 1e-5))


def test_modules_and_compile_fullgraph():
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    torch.manual_seed(0)
    d = 64

    class Block(torch.nn.Module):
        def __init__(self, norm):
            super().__init__()
            self.norm1 = norm(d)
            self.lin = torch.nn.Linear(d, d)
            self.norm2 = norm(d)

        def forward(self, x):
            return self.norm2(x + self.lin(self.norm1(x)))

    for ours, theirs in ((bt.RMSNorm, torch.nn.RMSNorm), (bt.LayerNorm, torch.nn.LayerNorm)):
        a = Block(ours).cuda()
        r = Block(theirs).cuda()
        r.load_state_dict(a.state_dict())
        x = torch.randn(8, 16, d, device="cuda")
        compiled = torch.compile(a, fullgraph=True)
        y = compiled(x)
        yr = r(x)
        assert torch.allclose(y, yr, rtol=1e-4, atol=1e-4), (ours.__name__,
                                                            (y - yr).abs().max().item())
        y.sum().backward()
        yr.sum().backward()
        for (n1, p1), (n2, p2) in zip(a.named_parameters(), r.named_parameters()):
            assert n1 == n2
            assert torch.allclose(p1.grad, p2.grad, rtol=1e-3, atol=1e-3), (ours.__name__, n1)
