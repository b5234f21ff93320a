"""FlashAttentionPlan on the GPU — each test with both forward kernels (sm90a wgmma and
mma.sync) — against the float64 references of tests/_attention_ref.py: every feature (causal in both alignments, windows, softcap, ALiBi,
GQA 1 / 4 / 8, variable-length batches with empty sequences), odd lengths, Sq != Sk, empty
problems, strided views of one packed qkv tensor, both dtypes and every head dim.  Outputs are
NaN-poisoned; bounds come from the output dtype (tests/_checks.py) relative to the sums of
absolute terms each output is made of."""

from __future__ import annotations

import numpy as np
import pytest

from tests import _attention_ref as ref
from tests._checks import assert_close, bounds

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")

from baracuda_dsl import PlanPreference  # noqa: E402
from baracuda_dsl.ops.attention.flash import (  # noqa: E402
    FlashAttentionArgs, FlashAttentionDescriptor, FlashAttentionPlan, FlashTuning)

#: the forward kernel the current test runs (every forward test runs with each)
KERNEL = ["auto"]


@pytest.fixture(autouse=True, params=["wgmma", "mma"])
def fwd_kernel(request):
    """Run each test with the sm90a wgmma forward and with the mma.sync forward."""
    from baracuda_dsl.runtime import resolve_arch
    if request.param == "wgmma" and resolve_arch().value != "sm90a":
        pytest.skip("capability: the wgmma forward needs sm90a")
    KERNEL[0] = request.param
    yield
    KERNEL[0] = "auto"

DT = {"f16": torch.float16, "bf16": torch.bfloat16}


def _rand(shape, dt, seed, scale=1.0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * scale
    x = torch.where(x.abs() < 1e-3, torch.full_like(x, 0.25), x)   # non-zero
    return x.to(DT_CUR[0]).cuda()


DT_CUR = [torch.bfloat16]


def _np(t):
    return t.detach().double().cpu().numpy()


def _expand(x, hq):
    return np.repeat(x, hq // x.shape[2], axis=2)


def run_fwd(q, k, v, *, lse_out=True, cu_q=None, cu_k=None, slopes=None, **kw):
    """Run the forward plan; returns (out, lse) torch tensors (poisoned before)."""
    varlen = cu_q is not None
    if varlen:
        tq, hq, d = q.shape
        tk, hk, _ = k.shape
        b = len(cu_q) - 1
        lq = [cu_q[i + 1] - cu_q[i] for i in range(b)]
        lk = [cu_k[i + 1] - cu_k[i] for i in range(b)]
        desc = FlashAttentionDescriptor(b, max(lq, default=0), max(lk, default=0), hq, hk, d,
                                        dtype=_short(q.dtype), varlen=True, total_q=tq,
                                        total_k=tk, **kw)
    else:
        b, sq, hq, d = q.shape
        _, sk, hk, _ = k.shape
        desc = FlashAttentionDescriptor(b, sq, sk, hq, hk, d, dtype=_short(q.dtype), **kw)
    plan = FlashAttentionPlan.select(
        desc, PlanPreference(tuning=(FlashTuning(kernel=KERNEL[0]),)))
    out = torch.full(q.shape, float("nan"), dtype=q.dtype, device="cuda")
    lse = torch.full(desc.lse_shape(), float("nan"), dtype=torch.float32, device="cuda")
    cq = torch.tensor(cu_q, dtype=torch.int32, device="cuda") if varlen else None
    ck = torch.tensor(cu_k, dtype=torch.int32, device="cuda") if varlen else None
    sl = None if slopes is None else torch.as_tensor(slopes, dtype=torch.float32).cuda()
    if lse_out:
        plan.run(FlashAttentionArgs(q, k, v, out, lse, cq, ck, sl))
    else:
        ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
        plan.run(FlashAttentionArgs(q, k, v, out, None, cq, ck, sl), workspace=ws)
        lse = None
    torch.cuda.synchronize()
    return out, lse


def _short(dt):
    return {torch.float16: "f16", torch.bfloat16: "bf16"}[dt]


def check_fwd(q, k, v, out, lse, *, cu_q=None, cu_k=None, slopes=None, scale=None, **kw):
    d = q.shape[-1]
    sc = 1.0 / np.sqrt(d) if scale is None else scale
    r_out, r_lse = ref.attention(_np(q), _np(k), _np(v), scale=scale, alibi_slopes=slopes,
                                 cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, **kw)
    dt = str(q.dtype).replace("torch.", "")
    # out = Σ p·v with p rounded to the input dtype: error relative to Σ p·|v| (<= max |v|)
    vmax = float(_np(v).__abs__().max()) if v.numel() else 1.0
    rtol, atol = bounds(dt, compute="float32", terms=d + 16, inputs=dt)
    assert_close(out, r_out, rtol, atol, scale=np.full(r_out.shape, vmax), what="out")
    if lse is not None:
        # lse moves with the score error: (D + 16)·eps32·scale·Σ|q||k| plus log rounding
        qa = float(np.abs(_np(q)).max()) if q.numel() else 1.0
        ka = float(np.abs(_np(k)).max()) if k.numel() else 1.0
        smax = sc * d * qa * ka + 1.0
        cap = kw.get("softcap", 0.0)
        if cap:
            smax = cap + 1.0
        lr, la = bounds("float32", compute="float32", terms=d + 16)
        assert_close(lse, r_lse, lr * 4, la, scale=np.full(r_lse.shape, smax + np.log(
            max(k.shape[0] * k.shape[1], 2))), what="lse")


def make_qkv(b, sq, sk, hq, hk, d, dt="bf16", seed=0):
    DT_CUR[0] = DT[dt]
    return (_rand((b, sq, hq, d), DT[dt], seed), _rand((b, sk, hk, d), DT[dt], seed + 1),
            _rand((b, sk, hk, d), DT[dt], seed + 2))


# ------------------------------------------------------------------------------- forward
@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("d", [64, 96, 128, 192, 256])
def test_fwd_dtypes_head_dims(dt, d):
    q, k, v = make_qkv(2, 97, 131, 4, 4, d, dt, seed=d)
    out, lse = run_fwd(q, k, v)
    check_fwd(q, k, v, out, lse)


@pytest.mark.parametrize("align", ["bottom_right", "top_left"])
@pytest.mark.parametrize("sq,sk", [(65, 200), (200, 65), (129, 129), (1, 300), (300, 1)])
def test_fwd_causal(align, sq, sk):
    q, k, v = make_qkv(2, sq, sk, 2, 2, 128, "bf16", seed=sq + sk)
    out, lse = run_fwd(q, k, v, causal=True, align=align)
    check_fwd(q, k, v, out, lse, causal=True, align=align)


@pytest.mark.parametrize("window", [(32, 0), (16, 16), (0, 0), (-1, 40), (100, -1)])
@pytest.mark.parametrize("d", [64, 128])
def test_fwd_window(window, d):
    q, k, v = make_qkv(1, 257, 300, 2, 2, d, "f16", seed=7)
    out, lse = run_fwd(q, k, v, window=window)
    check_fwd(q, k, v, out, lse, window=window)


def test_fwd_softcap_scale():
    q, k, v = make_qkv(2, 130, 190, 4, 2, 128, "bf16", seed=3)
    q = (q.float() * 4).to(q.dtype)
    out, lse = run_fwd(q, k, v, softcap=5.0, scale=0.3, causal=True)
    check_fwd(q, k, v, out, lse, softcap=5.0, scale=0.3, causal=True)


@pytest.mark.parametrize("mode", ["heads", "batch_heads"])
def test_fwd_alibi(mode):
    q, k, v = make_qkv(2, 100, 150, 4, 4, 64, "bf16", seed=5)
    sl = np.array([0.5, 0.25, 0.125, 0.0625], np.float32)
    if mode == "batch_heads":
        sl = np.stack([sl, sl[::-1] * 2])
    out, lse = run_fwd(q, k, v, alibi=mode, slopes=sl, causal=True)
    check_fwd(q, k, v, out, lse, slopes=sl, causal=True)


@pytest.mark.parametrize("ratio", [1, 4, 8])
def test_fwd_gqa(ratio):
    q, k, v = make_qkv(2, 77, 99, 8, 8 // ratio, 128, "f16", seed=ratio)
    out, lse = run_fwd(q, k, v, causal=True)
    check_fwd(q, k, v, out, lse, causal=True)


@pytest.mark.parametrize("s", [1, 17, 1023])
def test_fwd_odd_lengths(s):
    q, k, v = make_qkv(1, s, s, 2, 1, 64, "bf16", seed=s)
    out, lse = run_fwd(q, k, v, causal=True)
    check_fwd(q, k, v, out, lse, causal=True)


def test_fwd_varlen_with_empty_sequences():
    cu_q = [0, 5, 5, 135, 135, 400]
    cu_k = [0, 7, 40, 40, 90, 500]
    DT_CUR[0] = torch.bfloat16
    q = _rand((cu_q[-1], 4, 128), torch.bfloat16, 1)
    k = _rand((cu_k[-1], 2, 128), torch.bfloat16, 2)
    v = _rand((cu_k[-1], 2, 128), torch.bfloat16, 3)
    for causal in (False, True):
        out, lse = run_fwd(q, k, v, cu_q=cu_q, cu_k=cu_k, causal=causal)
        check_fwd(q, k, v, out, lse, cu_q=cu_q, cu_k=cu_k, causal=causal)


def test_fwd_packed_qkv_strided():
    DT_CUR[0] = torch.float16
    qkv = _rand((2, 150, 3, 4, 128), torch.float16, 9)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    out, lse = run_fwd(q, k, v, causal=True)
    check_fwd(q, k, v, out, lse, causal=True)


def test_fwd_empty_and_no_keys():
    q, k, v = make_qkv(0, 16, 16, 2, 2, 64)
    out, lse = run_fwd(q, k, v)
    assert out.shape == (0, 16, 2, 64)
    q, k, v = make_qkv(2, 16, 0, 2, 2, 64)
    out, lse = run_fwd(q, k, v)
    assert torch.all(out == 0)
    assert torch.all(lse == -float("inf"))


def test_fwd_lse_in_workspace():
    q, k, v = make_qkv(1, 64, 64, 2, 2, 64)
    out, _ = run_fwd(q, k, v, lse_out=False)
    check_fwd(q, k, v, out, None)


@pytest.mark.parametrize("d,causal", [(64, True), (128, False)])
def test_fwd_dropout(d, causal):
    """Attention dropout against the float64 reference with the same Philox mask (the lse is
    the undropped one); the same (seed, offset) reproduces the output bit for bit, another
    offset changes it."""
    q, k, v = make_qkv(2, 70, 150, 4, 2, d, "bf16", seed=41)
    seed, off, p = 2 ** 63 + 12345, 777, 0.2
    desc = FlashAttentionDescriptor(2, 70, 150, 4, 2, d, "bf16", causal=causal, dropout_p=p)
    plan = FlashAttentionPlan.select(
        desc, PlanPreference(tuning=(FlashTuning(kernel=KERNEL[0]),)))
    assert dict(plan.sku().knobs)["dropout"] is True

    def run(offset):
        out = torch.full(q.shape, float("nan"), dtype=q.dtype, device="cuda")
        lse = torch.full(desc.lse_shape(), float("nan"), dtype=torch.float32, device="cuda")
        plan.run(FlashAttentionArgs(q, k, v, out, lse, dropout_seed=seed, dropout_offset=offset))
        torch.cuda.synchronize()
        return out, lse
    out, lse = run(off)
    z = ref.dropout_factors(seed, off, p, 2, 4, 70, 150)
    r_out, r_lse = ref.attention_dropout(_np(q), _np(k), _np(v), z, causal=causal)
    rtol, atol = bounds("bfloat16", compute="float32", terms=d + 16, inputs="bfloat16")
    vmax = float(np.abs(_np(v)).max()) / (1 - p)
    assert_close(out, r_out, rtol, atol, scale=np.full(r_out.shape, vmax), what="out")
    lr, la = bounds("float32", compute="float32", terms=d + 16)
    assert_close(lse, r_lse, lr * 4, la, scale=np.full(r_lse.shape, 10.0), what="lse")
    again, _ = run(off)
    assert torch.equal(out.view(torch.int16), again.view(torch.int16))
    other, _ = run(off + 1)
    assert not torch.equal(out, other)
