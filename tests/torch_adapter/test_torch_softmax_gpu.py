"""baracuda_dsl.torch's softmax / log_softmax and cross-entropy custom ops on the GPU: values and
gradients against torch's own ops in float64 (autograd), gradcheck in float64,
torch.library.opcheck, the CrossEntropyLoss module under torch.compile(fullgraph=True)."""

import pytest

from _gpu_helpers import assert_terms_close, randn

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "bfloat16", "float16", "float64"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_matches_torch(dtype, log):
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    gen = torch.Generator(device="cuda").manual_seed(1)
    for shape, dim in (((4, 7, 130), -1), ((5, 33), 0), ((3, 1000), 1), ((2, 6, 9), 1)):
        x = randn(torch, shape, dtype, gen, 3.0).requires_grad_(True)
        dy = randn(torch, shape, dtype, gen)
        xd = x.detach().double().requires_grad_(True)
        fn = bt.log_softmax if log else bt.softmax
        ref = torch.log_softmax if log else torch.softmax
        y = fn(x, dim)
        yr = ref(xd, dim)
        y.backward(dy)
        yr.backward(dy.double())
        n = shape[dim]
        what = f"{'log_' if log else ''}softmax {dtype} {shape} dim {dim}"
        sc = (yr.abs() + (xd.detach().abs().amax(dim=dim, keepdim=True) if log else 0)).detach()
        assert_terms_close(y.detach(), yr.detach(), dtype, terms=8 + 2 * n, scale=sc, what=what)
        gsc = xd.grad.abs() + dy.double().abs().amax(dim=dim, keepdim=True) * (
            1 if log else yr.detach().abs())
        ref = xd.grad
        if dtype in ("bfloat16", "float16"):
            # the backward reads the saved output, rounded to the half type (as torch's does):
            # its exact float64 gradient from that y is the reference for the kernel's sums
            yo, g = y.detach().double(), dy.double()
            ref = (g - yo.exp() * g.sum(dim, keepdim=True)) if log else \
                yo * (g - (yo * g).sum(dim, keepdim=True))
        assert_terms_close(x.grad, ref, dtype, terms=8 + 2 * n, scale=gsc.detach(),
                           what=f"{what} dx")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_matches_torch(dtype, reduction):
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(2)
    for n, c, smooth, weighted in ((64, 1000, 0.0, False), (37, 129, 0.1, True),
                                   (8, 32000, 0.0, False)):
        logits = randn(torch, (n, c), dtype, gen, 2.0).requires_grad_(True)
        target = torch.randint(0, c, (n,), generator=gen, device="cuda")
        target[1] = -100                                        # ignored
        w = (torch.rand((c,), generator=gen, device="cuda", dtype=torch.float64) + 0.5).to(
            logits.dtype) if weighted else None
        ld = logits.detach().double().requires_grad_(True)
        loss = bt.cross_entropy(logits, target, w, -100, reduction, smooth)
        ref = F.cross_entropy(ld, target, None if w is None else w.double(), ignore_index=-100,
                              reduction=reduction, label_smoothing=smooth)
        g = randn(torch, tuple(ref.shape), dtype, gen) if reduction == "none" else None
        (loss * (g if g is not None else 1)).sum().backward()
        (ref * (g.double() if g is not None else 1)).sum().backward()
        what = f"ce {dtype} {reduction} n{n} c{c}"
        assert loss.shape == ref.shape, what
        lsc = ref.detach().abs() + 4 * float(ld.detach().abs().max())
        assert_terms_close(loss.detach(), ref.detach(), dtype, terms=16 + 2 * c + 2 * n,
                           scale=lsc, what=what)
        gmax = float(g.double().abs().max()) if g is not None else 1.0
        assert_terms_close(logits.grad, ld.grad, dtype, terms=16 + 2 * c,
                           scale=(ld.grad.abs() + gmax / n).detach(), what=f"{what} dlogits")


def test_gradcheck_and_opcheck():
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    gen = torch.Generator(device="cuda").manual_seed(3)
    x = randn(torch, (3, 11), "float64", gen).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a: bt.softmax(a, -1), (x,))
    assert torch.autograd.gradcheck(lambda a: bt.log_softmax(a, 0), (x,))
    t = torch.tensor([1, 4, 10], device="cuda")
    assert torch.autograd.gradcheck(lambda a: bt.cross_entropy(a, t, label_smoothing=0.1), (x,))
    for dtype in ("float32", "bfloat16"):
        a = randn(torch, (6, 40), dtype, gen).requires_grad_(True)
        torch.library.opcheck(torch.ops.baracuda.softmax.default, (a, False))
        torch.library.opcheck(torch.ops.baracuda.softmax.default, (a, True))
        tt = torch.randint(0, 40, (6,), generator=gen, device="cuda")
        for red in ("mean", "none"):
            torch.library.opcheck(torch.ops.baracuda.cross_entropy.default,
                                  (a, tt, None, red, -100, 0.0))


def test_loss_module_under_compile():
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    torch.manual_seed(0)
    head = torch.nn.Linear(64, 500).cuda()
    x = torch.randn(32, 64, device="cuda")
    t = torch.randint(0, 500, (32,), device="cuda")

    def step(loss_fn):
        head.zero_grad()
        loss = loss_fn(head(x), t)
        loss.backward()
        return loss.detach(), head.weight.grad.clone()

    l1, g1 = step(torch.compile(bt.CrossEntropyLoss(), fullgraph=True))
    l2, g2 = step(torch.nn.CrossEntropyLoss())
    assert torch.allclose(l1, l2, rtol=1e-5, atol=1e-5), (l1.item(), l2.item())
    assert torch.allclose(g1, g2, rtol=1e-4, atol=1e-6)
