"""baracuda_dsl.torch's fused linear cross-entropy on the GPU: loss and the x / weight gradients
against F.cross_entropy(F.linear(x, w)) in float64 (reductions mean / sum / none, ignored rows,
vocabularies not a multiple of the chunk, leading batch dims), gradcheck in float64, opcheck, the
LinearCrossEntropyLoss module under torch.compile(fullgraph=True), and the peak-memory saving over
the unfused logits."""

import pytest

from _gpu_helpers import assert_terms_close, randn

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_linear_ce_matches_torch(dtype, reduction):
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(1)
    for lead, k, v, chunk in (((37,), 64, 200, 64), ((2, 9), 128, 1000, 256),
                              ((5,), 32, 17, 4096)):
        x = randn(torch, lead + (k,), dtype, gen, 0.5).requires_grad_(True)
        w = randn(torch, (v, k), dtype, gen, 0.5).requires_grad_(True)
        t = torch.randint(0, v, lead, generator=gen, device="cuda")
        t.view(-1)[::4] = -100                                       # ignored rows
        xd, wd = (a.detach().double().requires_grad_(True) for a in (x, w))
        loss = bt.linear_cross_entropy(x, w, t, reduction=reduction, chunk=chunk)
        ref = F.cross_entropy(F.linear(xd, wd).reshape(-1, v), t.reshape(-1),
                              reduction=reduction)
        if reduction == "none":
            ref = ref.reshape(lead)
        what = f"lce {dtype} {reduction} {lead} k{k} v{v} chunk{chunk}"
        assert loss.dtype == x.dtype and loss.shape == ref.shape, what
        g = randn(torch, ref.shape, dtype, gen) if reduction == "none" else None
        # error scales from the magnitudes the kernels combine (float64, no rounding): the
        # logits are k-term GEMMs, dlogits = (softmax − onehot)·g rounded to the operand dtype,
        # dx = dlogits @ w and dw = dlogitsᵀ @ x
        with torch.no_grad():
            x2, t1 = xd.reshape(-1, k), t.reshape(-1)
            live = (t1 != -100).double()
            zs = (x2.abs() @ wd.abs().t()).amax(-1) + 1
            if reduction == "none":
                lsc, rowg = zs.reshape(lead), g.double().abs().reshape(-1)
            elif reduction == "sum":
                lsc, rowg = (zs * live).sum(), live
            else:
                lsc, rowg = (zs * live).amax(), live / live.sum()
            prob = torch.softmax(x2 @ wd.t(), -1)
            onehot = torch.nn.functional.one_hot(t1.clamp(min=0), v).double()
            dzabs = (prob + onehot) * (rowg * live)[:, None]
            sdx = (dzabs @ wd.abs()).reshape(lead + (k,))
            sdw = dzabs.t() @ x2.abs()
        assert_terms_close(loss.detach(), ref.detach(), dtype, compute="float64"
                           if dtype == "float64" else "float32", terms=k + 16, scale=lsc,
                           what=what)
        loss.backward(g)
        ref.backward(None if g is None else g.double())
        half = dtype in ("bfloat16", "float16")
        for got, r, sc, name in ((x.grad, xd.grad, sdx, "dx"), (w.grad, wd.grad, sdw, "dweight")):
            assert_terms_close(got, r, dtype, compute=dtype if half else None,
                               terms=8 if half else k + v + 16, scale=sc, what=f"{what} {name}")


def test_linear_ce_gradcheck_opcheck_compile_memory():
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(2)
    x = randn(torch, (6, 8), "float64", gen).requires_grad_(True)
    w = randn(torch, (11, 8), "float64", gen).requires_grad_(True)
    t = torch.randint(0, 11, (6,), generator=gen, device="cuda")
    assert torch.autograd.gradcheck(lambda a, b: bt.linear_cross_entropy(a, b, t, chunk=4),
                                    (x, w))
    xb = randn(torch, (64, 128), "bfloat16", gen).requires_grad_(True)
    wb = randn(torch, (300, 128), "bfloat16", gen).requires_grad_(True)
    tb = torch.randint(0, 300, (64,), generator=gen, device="cuda")
    for red in ("mean", "none"):
        torch.library.opcheck(torch.ops.baracuda.linear_cross_entropy.default,
                              (xb, wb, tb, red, -100, 128))
    m = bt.LinearCrossEntropyLoss(chunk=128)
    f = torch.compile(lambda a, b: m(a, b, tb), fullgraph=True)
    loss = f(xb, wb)
    loss.backward()
    ref = F.cross_entropy(F.linear(xb.double(), wb.double()), tb)
    assert abs(loss.item() - ref.item()) <= 2e-2 * abs(ref.item())
    assert xb.grad is not None and wb.grad is not None
    # peak memory of forward + backward: fused vs the unfused bf16 logits (n = 8192, v = 32000)
    n, k, v = 8192, 1024, 32000
    xm = randn(torch, (n, k), "bfloat16", gen).requires_grad_(True)
    wm = randn(torch, (v, k), "bfloat16", gen, 0.02).requires_grad_(True)
    tm = torch.randint(0, v, (n,), generator=gen, device="cuda")
    peaks = {}
    for name, fn in (("fused", lambda: bt.linear_cross_entropy(xm, wm, tm)),
                     ("unfused", lambda: F.cross_entropy(F.linear(xm, wm), tm))):
        xm.grad = wm.grad = None
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        fn().backward()
        torch.cuda.synchronize()
        peaks[name] = torch.cuda.max_memory_allocated() - base
    assert peaks["fused"] * 2 < peaks["unfused"], peaks
