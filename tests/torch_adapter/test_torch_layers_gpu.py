"""baracuda_dsl.torch's embedding and SwiGLU custom ops on the GPU: values and gradients against
torch's own ops in float64 (autograd), gradcheck in float64, torch.library.opcheck, an
out-of-range id, and Embedding + SwiGLU modules under torch.compile(fullgraph=True)."""

import pytest

from _gpu_helpers import assert_terms_close, randn

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "bfloat16", "float16", "float64"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(1)
    for v, d, ids_shape, pad in ((100, 64, (4, 33), None), (7, 24, (50,), 3),
                                 (1000, 128, (2, 3, 5), -1), (10, 8, (0,), None)):
        w = randn(torch, (v, d), dtype, gen).requires_grad_(True)
        ids = torch.randint(0, v, ids_shape, generator=gen, device="cuda")
        if ids.numel() > 2:
            ids.view(-1)[:2] = ids.view(-1)[2]                     # repeated ids
        dy = randn(torch, ids_shape + (d,), dtype, gen)
        wd = w.detach().double().requires_grad_(True)
        y = bt.embedding(ids, w, pad)
        yr = F.embedding(ids, wd, pad)
        y.backward(dy)
        yr.backward(dy.double())
        what = f"embedding {dtype} V{v} D{d} {ids_shape} pad={pad}"
        assert torch.equal(y.detach().double(), yr.detach()), what       # a gather: exact
        cnt = int(torch.bincount(ids.reshape(-1), minlength=v).max()) if ids.numel() else 1
        assert_terms_close(w.grad, wd.grad, dtype, terms=2 * cnt + 2,
                           scale=torch.zeros_like(wd).index_add_(
                               0, ids.reshape(-1), dy.double().abs().reshape(-1, d)),
                           what=f"{what} dweight")
        if pad is not None:
            assert not w.grad[pad % v].any(), f"{what}: padding row got a gradient"


def test_embedding_bad_id_raises():
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    w = torch.randn(10, 4, device="cuda")
    with pytest.raises(IndexError):
        bt.embedding(torch.tensor([1, 10], device="cuda"), w)


@pytest.mark.parametrize("dtype", DTYPES)
def test_swiglu_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(2)
    for shape in ((4, 7, 96), (1000,), (0, 8)):
        g = randn(torch, shape, dtype, gen, 2.0).requires_grad_(True)
        u = randn(torch, shape, dtype, gen).requires_grad_(True)
        dy = randn(torch, shape, dtype, gen)
        gd, ud = (t.detach().double().requires_grad_(True) for t in (g, u))
        y = bt.swiglu(g, u)
        yr = F.silu(gd) * ud
        y.backward(dy)
        yr.backward(dy.double())
        what = f"swiglu {dtype} {shape}"
        assert_terms_close(y.detach(), yr.detach(), dtype, terms=8, what=what)
        sc = dy.double().abs() * (ud.detach().abs() + 1) * (gd.detach().abs() + 1)
        assert_terms_close(g.grad, gd.grad, dtype, terms=16, scale=sc, what=f"{what} dgate")
        assert_terms_close(u.grad, ud.grad, dtype, terms=8, what=f"{what} dup")


def test_gradcheck_and_opcheck():
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    gen = torch.Generator(device="cuda").manual_seed(3)
    w = randn(torch, (6, 5), "float64", gen).requires_grad_(True)
    ids = torch.tensor([[0, 5, 5], [2, 0, 1]], device="cuda")
    # (no padding_idx here: its row is read but gets no gradient by definition, so the numerical
    # and analytic Jacobians differ there for torch's embedding too)
    assert torch.autograd.gradcheck(lambda t: bt.embedding(ids, t), (w,))
    g = randn(torch, (3, 7), "float64", gen).requires_grad_(True)
    u = randn(torch, (3, 7), "float64", gen).requires_grad_(True)
    assert torch.autograd.gradcheck(bt.swiglu, (g, u))
    for dtype in ("float32", "bfloat16"):
        wt = randn(torch, (50, 32), dtype, gen).requires_grad_(True)
        it = torch.randint(0, 50, (4, 9), generator=gen, device="cuda")
        torch.library.opcheck(torch.ops.baracuda.embedding.default, (wt, it, None))
        a = randn(torch, (5, 64), dtype, gen).requires_grad_(True)
        b = randn(torch, (5, 64), dtype, gen).requires_grad_(True)
        torch.library.opcheck(torch.ops.baracuda.swiglu.default, (a, b))


def test_modules_under_compile():
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    torch.manual_seed(0)
    emb = bt.Embedding(300, 64).cuda()
    mlp = bt.SwiGLU(64, 172).cuda()
    emb_r = torch.nn.Embedding(300, 64).cuda()
    emb_r.load_state_dict(emb.state_dict())
    F = torch.nn.functional
    ids = torch.randint(0, 300, (4, 16), device="cuda")

    def ours(i):
        return mlp(emb(i)).float().pow(2).mean()

    def ref(i):
        h = emb_r(i)
        return F.linear(F.silu(F.linear(h, mlp.gate.weight)) * F.linear(h, mlp.up.weight),
                        mlp.down.weight).pow(2).mean()

    lo = torch.compile(ours, fullgraph=True)(ids)
    lr = ref(ids)
    assert torch.allclose(lo, lr, rtol=1e-5, atol=1e-6), (lo.item(), lr.item())
    lo.backward()
    gate_grad = mlp.gate.weight.grad.clone()
    mlp.zero_grad()
    lr.backward()
    assert torch.allclose(emb.weight.grad, emb_r.weight.grad, rtol=1e-4, atol=1e-6)
    assert torch.allclose(gate_grad, mlp.gate.weight.grad, rtol=1e-4, atol=1e-6)
