"""baracuda_dsl.torch's flash attention custom op on the GPU: output and q / k / v gradients
against a float64 reference (softmax(q·kᵀ·scale + mask)·v with the k / v heads repeated for GQA,
autograd), torch.library.opcheck, and the op under torch.compile(fullgraph=True)."""

import math

import pytest

from _gpu_helpers import assert_terms_close

pytestmark = pytest.mark.gpu


def _ref(torch, q, k, v, causal, scale):
    """float64 attention of (B, S, H, D) tensors, GQA by repeating k / v heads."""
    qd, kd, vd = (t.double().transpose(1, 2) for t in (q, k, v))     # (B, H, S, D)
    rep = qd.shape[1] // kd.shape[1]
    kd, vd = kd.repeat_interleave(rep, 1), vd.repeat_interleave(rep, 1)
    s = (qd @ kd.transpose(-1, -2)) * scale
    if causal:
        sq, sk = s.shape[-2:]
        mask = torch.ones(sq, sk, dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(~mask, float("-inf"))
    return (torch.softmax(s, -1) @ vd).transpose(1, 2)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_matches_reference(dtype, causal):
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    gen = torch.Generator(device="cuda").manual_seed(1)
    tdt = getattr(torch, dtype)
    for b, s, hq, hk, d in ((2, 128, 8, 8, 64), (1, 200, 8, 2, 128), (2, 64, 4, 1, 128)):
        q, k, v = (torch.randn((b, s, h, d), generator=gen, device="cuda").to(tdt)
                   .requires_grad_(True) for h in (hq, hk, hk))
        dout = torch.randn((b, s, hq, d), generator=gen, device="cuda").to(tdt)
        refs = [t.detach().double().requires_grad_(True) for t in (q, k, v)]
        scale = 1 / math.sqrt(d)
        out = bt.flash_attention(q, k, v, causal)
        ref = _ref(torch, *refs, causal, scale)
        out.backward(dout)
        ref.backward(dout.double())
        what = f"flash {dtype} causal={causal} B{b} S{s} Hq{hq} Hk{hk} D{d}"
        # the kernels round the probabilities P to the input dtype for the P·V product (as
        # every flash kernel does): the bound is in that dtype's epsilon, relative to Σ P·|v|
        vmax = float(v.detach().double().abs().max())
        pv = _ref(torch, *(t.detach() for t in refs[:2]), refs[2].detach().abs(), causal, scale)
        assert_terms_close(out.detach(), ref.detach(), dtype, compute=dtype, terms=2, scale=pv,
                           what=what)
        gmax = float(dout.double().abs().max())
        for t, r, name in zip((q, k, v), refs, "qkv"):
            sc = r.grad.abs() + gmax * vmax * (1 + float(r.detach().abs().max()))
            assert_terms_close(t.grad, r.grad, dtype, compute=dtype, terms=8, scale=sc,
                               what=f"{what} d{name}")


def test_opcheck_and_compile():
    torch = pytest.importorskip("torch")
    import baracuda_dsl.torch as bt

    gen = torch.Generator(device="cuda").manual_seed(2)
    q, k, v = (torch.randn((2, 64, h, 64), generator=gen, device="cuda").bfloat16()
               .requires_grad_(True) for h in (4, 2, 2))
    torch.library.opcheck(torch.ops.baracuda.flash_attention.default, (q, k, v, True, None))
    compiled = torch.compile(lambda a, b_, c: bt.flash_attention(a, b_, c, True).float().sum(),
                             fullgraph=True)
    loss = compiled(q, k, v)
    loss.backward()
    ref = _ref(torch, q.detach(), k.detach(), v.detach(), True, 1 / 8).sum()
    assert abs(loss.item() - ref.item()) <= 1e-2 * max(1.0, abs(ref.item()))
    assert q.grad is not None and k.grad is not None and v.grad is not None
