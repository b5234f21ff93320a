"""FlashAttentionBackwardPlan on the GPU against the float64 references of
tests/_attention_ref.py (and torch autograd of a float64 torch reference): every head dim and
dtype, causal in both alignments, window + softcap + ALiBi + GQA together, GQA 4 / 8,
variable-length batches with empty sequences, a packed qkv tensor's strided views, and
bit-identical reruns (the backward has no atomics).  Gradients are NaN-poisoned; bounds come
from the input dtype relative to the sums of absolute terms each gradient element is made of."""

from __future__ import annotations

import numpy as np
import pytest

from tests import _attention_ref as ref
from tests._checks import assert_close, bounds, eps

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")

from baracuda_dsl.ops.attention.flash import (  # noqa: E402
    FlashAttentionBackwardArgs, FlashAttentionBackwardDescriptor, FlashAttentionBackwardPlan)
from tests.attention.test_flash_gpu import (  # noqa: E402
    DT, DT_CUR, _expand, _np, _rand, _short, make_qkv, run_fwd)


#: the backward path the current test runs: "fast" (sm90a wgmma + dQ atomics at head dims
#: 64 / 128; the deterministic kernels elsewhere) or "deterministic"
PATH = ["fast"]


@pytest.fixture(autouse=True, params=["fast", "deterministic"])
def bwd_path(request):
    """Run each backward test on both paths."""
    PATH[0] = request.param
    yield
    PATH[0] = "fast"


def run_bwd(q, k, v, do, *, cu_q=None, cu_k=None, slopes=None, deterministic=None, **kw):
    det = PATH[0] == "deterministic" if deterministic is None else deterministic
    out, lse = run_fwd(q, k, v, cu_q=cu_q, cu_k=cu_k, slopes=slopes, **kw)
    varlen = cu_q is not None
    if varlen:
        b = len(cu_q) - 1
        lq = [cu_q[i + 1] - cu_q[i] for i in range(b)]
        lk = [cu_k[i + 1] - cu_k[i] for i in range(b)]
        desc = FlashAttentionBackwardDescriptor(
            b, max(lq), max(lk), q.shape[1], k.shape[1], q.shape[2], dtype=_short(q.dtype),
            varlen=True, total_q=q.shape[0], total_k=k.shape[0], deterministic=det, **kw)
    else:
        b, sq, hq, d = q.shape
        desc = FlashAttentionBackwardDescriptor(b, sq, k.shape[1], hq, k.shape[2], d,
                                                dtype=_short(q.dtype), deterministic=det, **kw)
    plan = FlashAttentionBackwardPlan.select(desc)
    grads = [torch.full(t.shape, float("nan"), dtype=t.dtype, device="cuda") for t in (q, k, v)]
    ws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8, device="cuda")
    cq = torch.tensor(cu_q, dtype=torch.int32, device="cuda") if varlen else None
    ck = torch.tensor(cu_k, dtype=torch.int32, device="cuda") if varlen else None
    sl = None if slopes is None else torch.as_tensor(slopes, dtype=torch.float32).cuda()
    plan.run(FlashAttentionBackwardArgs(q, k, v, out, do, lse, *grads, cq, ck, sl),
             workspace=ws)
    torch.cuda.synchronize()
    return out, grads


def _grad_scales(q, k, v, do, *, scale=None, slopes=None, causal=False, window=(-1, -1),
                 softcap=0.0, align="bottom_right"):
    """Float64 sums of absolute terms of each gradient element (batch layout): dv ← Σ_i P|dO|,
    dq ← scale·Σ_j A|k|, dk ← scale·Σ_i A|q| with A = P·(Σ_d|dO||V| + Σ_d|dO||O|) >= |dS|."""
    qn, kn, vn, dn = (np.asarray(t, np.float64) for t in (q, k, v, do))
    hq, hk = qn.shape[2], kn.shape[2]
    sc = 1.0 / np.sqrt(qn.shape[-1]) if scale is None else scale
    _raw, s, keep = ref._scores(qn, kn, sc, softcap, slopes, align, None, causal, window)
    o, lse = ref.attention(qn, kn, vn, scale=sc, causal=causal, window=window, softcap=softcap,
                           alibi_slopes=slopes, align=align)
    fin = np.isfinite(lse)[..., None]
    p = np.where(keep & fin, np.exp(np.where(keep, s, 0.0) - np.where(fin, lse[..., None], 0)),
                 0.0)
    ve, ke = _expand(vn, hq), _expand(kn, hq)
    a = p * (np.einsum("bqhd,bkhd->bhqk", np.abs(dn), np.abs(ve))
             + np.einsum("bqhd,bqhd->bhq", np.abs(dn), np.abs(o))[..., None])
    g = hq // hk
    sv = np.einsum("bhqk,bqhd->bkhd", p, np.abs(dn))
    sq_ = sc * np.einsum("bhqk,bkhd->bqhd", a, np.abs(ke))
    sk_ = sc * np.einsum("bhqk,bqhd->bkhd", a, np.abs(qn))
    b, n = kn.shape[:2]
    return (sq_, sk_.reshape(b, n, hk, g, -1).sum(3), sv.reshape(b, n, hk, g, -1).sum(3))


def check_bwd(q, k, v, do, out, grads, *, cu_q=None, cu_k=None, slopes=None, scale=None,
              **kw):
    """Each gradient against the float64 reference, relative to the sums of absolute terms it
    is made of (P and dS are rounded to the input dtype before their GEMMs; delta uses the
    rounded output)."""
    rq, rk, rv = ref.attention_backward(_np(q), _np(k), _np(v), _np(do), scale=scale,
                                        alibi_slopes=slopes, cu_seqlens_q=cu_q,
                                        cu_seqlens_k=cu_k, **kw)
    dt = str(q.dtype).replace("torch.", "")
    d = q.shape[-1]
    rtol, atol = bounds(dt, compute="float32", terms=d + 16, inputs=dt)
    rtol = 2 * rtol
    qn, kn, vn, dn = _np(q), _np(k), _np(v), _np(do)
    if cu_q is None:
        sq_, sk_, sv_ = _grad_scales(qn, kn, vn, dn, scale=scale, slopes=slopes, **kw)
    else:
        sq_, sk_, sv_ = np.zeros(qn.shape), np.zeros(kn.shape), np.zeros(vn.shape)
        for i in range(len(cu_q) - 1):
            a, b = cu_q[i], cu_q[i + 1]
            c, e = cu_k[i], cu_k[i + 1]
            if b == a or e == c:
                continue
            r = _grad_scales(qn[None, a:b], kn[None, c:e], vn[None, c:e], dn[None, a:b],
                             scale=scale, slopes=slopes, **kw)
            sq_[a:b], sk_[c:e], sv_[c:e] = r[0][0], r[1][0], r[2][0]
    assert_close(grads[2], rv, rtol, atol, scale=sv_, what="dv")
    assert_close(grads[0], rq, rtol, atol, scale=sq_, what="dq")
    assert_close(grads[1], rk, rtol, atol, scale=sk_, what="dk")


@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("d", [64, 96, 128, 192, 256])
def test_bwd_dtypes_head_dims(dt, d):
    q, k, v = make_qkv(2, 97, 131, 4, 4, d, dt, seed=d)
    do = _rand(q.shape, DT[dt], 11)
    out, grads = run_bwd(q, k, v, do)
    check_bwd(q, k, v, do, out, grads)


@pytest.mark.parametrize("align", ["bottom_right", "top_left"])
@pytest.mark.parametrize("sq,sk", [(65, 200), (200, 65), (1, 300)])
def test_bwd_causal(align, sq, sk):
    q, k, v = make_qkv(2, sq, sk, 2, 2, 128, "bf16", seed=sq)
    do = _rand(q.shape, torch.bfloat16, 12)
    out, grads = run_bwd(q, k, v, do, causal=True, align=align)
    check_bwd(q, k, v, do, out, grads, causal=True, align=align)


def test_bwd_window_softcap_alibi_gqa():
    q, k, v = make_qkv(2, 150, 170, 8, 2, 64, "f16", seed=21)
    do = _rand(q.shape, torch.float16, 13)
    sl = np.linspace(0.05, 0.4, 8).astype(np.float32)
    kw = dict(window=(40, 8), softcap=8.0)
    out, grads = run_bwd(q, k, v, do, alibi="heads", slopes=sl, **kw)
    check_bwd(q, k, v, do, out, grads, slopes=sl, **kw)


@pytest.mark.parametrize("ratio", [4, 8])
def test_bwd_gqa(ratio):
    q, k, v = make_qkv(1, 130, 130, 8, 8 // ratio, 128, "bf16", seed=ratio)
    do = _rand(q.shape, torch.bfloat16, 14)
    out, grads = run_bwd(q, k, v, do, causal=True)
    check_bwd(q, k, v, do, out, grads, causal=True)


def test_bwd_varlen_with_empty_sequences():
    cu_q = [0, 5, 5, 135, 135, 300]
    cu_k = [0, 7, 40, 40, 90, 260]
    DT_CUR[0] = torch.bfloat16
    q = _rand((cu_q[-1], 4, 64), torch.bfloat16, 1)
    k = _rand((cu_k[-1], 2, 64), torch.bfloat16, 2)
    v = _rand((cu_k[-1], 2, 64), torch.bfloat16, 3)
    do = _rand(q.shape, torch.bfloat16, 4)
    out, grads = run_bwd(q, k, v, do, cu_q=cu_q, cu_k=cu_k, causal=True)
    check_bwd(q, k, v, do, out, grads, cu_q=cu_q, cu_k=cu_k, causal=True)


def test_bwd_packed_qkv_strided_and_deterministic():
    """Strided views of one packed qkv tensor; on the deterministic path, bit-identical
    reruns."""
    DT_CUR[0] = torch.float16
    qkv = _rand((2, 140, 3, 4, 128), torch.float16, 9)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    do = _rand(q.shape, torch.float16, 10)
    out, g1 = run_bwd(q, k, v, do, causal=True)
    check_bwd(q, k, v, do, out, g1, causal=True)
    if PATH[0] == "deterministic":          # bit-identical reruns (no atomics)
        _, g2 = run_bwd(q, k, v, do, causal=True)
        for a, b in zip(g1, g2):
            assert torch.equal(a.view(torch.int16), b.view(torch.int16))


def test_bwd_against_torch_autograd():
    """One case against torch autograd of a float64 torch reference (not only numpy)."""
    q, k, v = make_qkv(1, 33, 47, 2, 2, 64, "bf16", seed=31)
    do = _rand(q.shape, torch.bfloat16, 15)
    out, grads = run_bwd(q, k, v, do, causal=True)
    qd, kd, vd = (t.double().requires_grad_(True) for t in (q, k, v))
    s = torch.einsum("bqhd,bkhd->bhqk", qd, kd) / 8.0
    sq, sk = q.shape[1], k.shape[1]
    keep = torch.arange(sk, device="cuda")[None, :] <= torch.arange(sq, device="cuda")[:, None] \
        + (sk - sq)
    s = s.masked_fill(~keep, float("-inf"))
    o = torch.einsum("bhqk,bkhd->bqhd", torch.softmax(s, -1), vd)
    o.backward(do.double())
    for got, want, n in zip(grads, (qd.grad, kd.grad, vd.grad), "qkv"):
        rtol = 8 * eps("bfloat16")
        err = (got.double() - want).norm() / want.norm()
        assert err <= rtol, (n, float(err))


@pytest.mark.parametrize("d", [64, 128])
def test_bwd_dropout(d):
    """Gradients with attention dropout (the forward's Philox mask regenerated) against the
    float64 reference, on both backward paths."""
    from baracuda_dsl.ops.attention.flash import (FlashAttentionArgs, FlashAttentionDescriptor,
                                                  FlashAttentionPlan)
    q, k, v = make_qkv(1, 90, 130, 4, 2, d, "bf16", seed=43)
    do = _rand(q.shape, torch.bfloat16, 44)
    seed, off, p = 99, 5, 0.3
    kw = dict(causal=True, dropout_p=p)
    fw = FlashAttentionPlan.select(FlashAttentionDescriptor(1, 90, 130, 4, 2, d, "bf16", **kw))
    out = torch.empty_like(q)
    lse = torch.empty((1, 4, 90), dtype=torch.float32, device="cuda")
    fw.run(FlashAttentionArgs(q, k, v, out, lse, dropout_seed=seed, dropout_offset=off))
    plan = FlashAttentionBackwardPlan.select(FlashAttentionBackwardDescriptor(
        1, 90, 130, 4, 2, d, "bf16", deterministic=PATH[0] == "deterministic", **kw))
    grads = [torch.full(t.shape, float("nan"), dtype=t.dtype, device="cuda") for t in (q, k, v)]
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
    plan.run(FlashAttentionBackwardArgs(q, k, v, out, do, lse, *grads, dropout_seed=seed,
                                        dropout_offset=off), workspace=ws)
    torch.cuda.synchronize()
    z = ref.dropout_factors(seed, off, p, 1, 4, 90, 130)
    want = ref.attention_dropout_backward(_np(q), _np(k), _np(v), _np(do), z, causal=True)
    rtol, atol = bounds("bfloat16", compute="float32", terms=d + 16, inputs="bfloat16")
    for got, w, n in zip(grads, want, ("dq", "dk", "dv")):
        # every term is rounded to bf16 once (P·Z, dS) and scaled by up to 1 / (1 − p): bound
        # relative to the largest gradient magnitude of the tensor
        assert_close(got, w, 4 * rtol / (1 - p), atol, scale=np.full(w.shape, np.abs(w).max()),
                     what=n)
