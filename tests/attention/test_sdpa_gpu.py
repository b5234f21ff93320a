"""SdpaPlan / SdpaBackwardPlan on the GPU against the float64 references of
tests/_attention_ref.py (attention, attention_backward), and against torch's own float64
scaled_dot_product_attention + autograd: f16 / bf16 / f32 / f64, head dims 1, 7, 40, 64, 160
and Dv != D (feature blocks past 128), bool and additive masks (full, broadcast (1, 1, Sq, Sk),
(B, 1, 1, Sk), 2-d, stride-0 expanded, transposed views, f32 masks for half inputs) with fully
masked rows, causal in both alignments, GQA 1 / 4 / 8, Sq != Sk, S = 1 / 17 / 1023, empty
batches and no-key / no-query problems, strided q / k / v from one packed (B, S, 3, H, D)
tensor, strided outputs.  Outputs are NaN-poisoned; bounds come from tests/_checks.py: the
output dtype's rounding plus the rounded operations of the compute type (f32, f64 for f64)
relative to the sums of absolute terms each output is made of."""

from __future__ import annotations

import numpy as np
import pytest

from tests import _attention_ref as ref
from tests import _attention_ref_sdpa as sref
from tests._checks import assert_close, bounds

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")

from baracuda_dsl.ops.attention.sdpa import (  # noqa: E402
    SdpaArgs, SdpaBackwardArgs, SdpaBackwardDescriptor, SdpaBackwardPlan, SdpaDescriptor,
    SdpaPlan)

DT = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}
SHORT = {v: k for k, v in DT.items()}
NAME = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64"}


def _rand(shape, dt, seed, scale=1.0):
    """Uniform(-scale, scale) values, none near 0, rounded to ``dt``, on the GPU."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * scale
    x = torch.where(x.abs() < 1e-3, torch.full_like(x, 0.25), x)
    return x.to(dt).cuda()


def make_qkv(b, sq, sk, hq, hk, d, dv=None, dt="f32", seed=0):
    t = DT[dt]
    dv = d if dv is None else dv
    return (_rand((b, sq, hq, d), t, seed), _rand((b, sk, hk, d), t, seed + 1),
            _rand((b, sk, hk, dv), t, seed + 2))


def _np(t):
    if t is None:
        return None
    if t.dtype == torch.bool:
        return t.cpu().numpy()
    return t.detach().double().cpu().numpy()


def _desc(cls, q, k, v, mask, **kw):
    b, sq, hq, d = q.shape
    _, sk, hk, dv = v.shape
    mk = {}
    if mask is not None:
        mk = dict(mask_dtype="bool" if mask.dtype == torch.bool else SHORT[mask.dtype],
                  mask_shape=tuple(mask.shape))
    return cls(b, sq, sk, hq, hk, d, dv, dtype=SHORT[q.dtype], **mk, **kw)


def _lse_dtype(dt):
    return torch.float64 if dt == torch.float64 else torch.float32


def run_fwd(q, k, v, mask=None, *, lse_out=True, out=None, lse=None, **kw):
    """Run SdpaPlan; (out, lse) NaN-poisoned before (``out`` / ``lse``: caller views)."""
    desc = _desc(SdpaDescriptor, q, k, v, mask, **kw)
    plan = SdpaPlan.select(desc)
    assert plan.workspace_size() == 0
    if out is None:
        out = torch.full(desc.out_shape(), float("nan"), dtype=q.dtype, device="cuda")
    if lse is None and lse_out:
        lse = torch.full(desc.lse_shape(), float("nan"), dtype=_lse_dtype(q.dtype),
                         device="cuda")
    plan.run(SdpaArgs(q, k, v, out, lse if lse_out else None, mask))
    torch.cuda.synchronize()
    return out, (lse if lse_out else None)


def check_fwd(q, k, v, mask, out, lse, *, scale=None, causal=False, softcap=0.0,
              align="bottom_right"):
    kw = dict(scale=scale, causal=causal, softcap=softcap, align=align)
    m = _np(mask)
    r_out, r_lse = ref.attention(_np(q), _np(k), _np(v), attn_mask=m, **kw)
    dt = NAME[SHORT[q.dtype]]
    ct = "float64" if dt == "float64" else "float32"
    d, sk = q.shape[-1], k.shape[1]
    # out = Σ_j p_j v_j: the score's D-term dot, the Sk-term sums; relative to max |v|
    vmax = float(np.abs(_np(v)).max()) if v.numel() else 1.0
    rtol, atol = bounds(dt, compute=ct, terms=d + sk + 16)
    assert_close(out, r_out, rtol, atol, scale=np.full(r_out.shape, vmax), what="out")
    if lse is not None:
        smax = sref.score_scale(_np(q), _np(k), scale=scale, softcap=softcap, attn_mask=m)
        lr, la = bounds(ct, compute=ct, terms=d + sk + 16)
        assert_close(lse, r_lse, lr, la, scale=np.full(r_lse.shape, smax + np.log(max(sk, 2))
                                                      + 1.0), what="lse")


def fwd_case(q, k, v, mask=None, **kw):
    out, lse = run_fwd(q, k, v, mask, **kw)
    check_fwd(q, k, v, mask, out, lse, **kw)
    return out, lse


# ------------------------------------------------------------------------------- forward
@pytest.mark.parametrize("dt", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("d,dv", [(1, 1), (7, 7), (40, 40), (64, 64), (40, 24), (160, 130)])
def test_fwd_dtypes_head_dims(dt, d, dv):
    q, k, v = make_qkv(2, 37, 45, 4, 2, d, dv, dt, seed=d + dv)
    fwd_case(q, k, v)


@pytest.mark.parametrize("align", ["bottom_right", "top_left"])
@pytest.mark.parametrize("sq,sk", [(17, 40), (40, 17), (17, 17), (1, 30), (30, 1)])
def test_fwd_causal(align, sq, sk):
    q, k, v = make_qkv(2, sq, sk, 2, 2, 40, 24, "f32", seed=sq + sk)
    fwd_case(q, k, v, causal=True, align=align)


def _masked_row(shape) -> bool:
    """Whether the test masks of ``shape`` mask query row 3 entirely."""
    return len(shape) >= 2 and shape[-2] > 3


def _bool_mask(shape, seed, masked_row=True):
    g = torch.Generator(device="cpu").manual_seed(seed)
    m = torch.rand(shape, generator=g) < 0.7
    if masked_row and _masked_row(shape):
        m[..., 3, :] = False                                   # a fully masked row
    return m.cuda()


def _add_mask(shape, dt, seed, masked_row=True):
    g = torch.Generator(device="cpu").manual_seed(seed)
    m = torch.randn(shape, generator=g, dtype=torch.float64)
    m = m.masked_fill(torch.rand(shape, generator=g) < 0.2, float("-inf"))
    if masked_row and _masked_row(shape):
        m[..., 3, :] = float("-inf")
    return m.to(dt).cuda()


MASKS = [
    # (kind, shape: B = 2, Hq = 4, Sq = 19, Sk = 23)
    ("bool", (2, 4, 19, 23)),
    ("bool", (1, 1, 19, 23)),
    ("bool", (2, 1, 1, 23)),
    ("bool", (19, 23)),
    ("add", (2, 4, 19, 23)),
    ("add", (1, 1, 19, 23)),
    ("add", (2, 1, 1, 23)),
    ("add32", (1, 4, 19, 23)),
    ("add32", (23,)),
]


def _mask(kind, shape, dt, seed):
    if kind == "bool":
        return _bool_mask(shape, seed)
    return _add_mask(shape, torch.float32 if kind == "add32" else DT[dt], seed)


@pytest.mark.parametrize("dt", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("kind,shape", MASKS)
def test_fwd_masks(dt, kind, shape):
    q, k, v = make_qkv(2, 19, 23, 4, 2, 40, 40, dt, seed=len(shape))
    out, lse = fwd_case(q, k, v, _mask(kind, shape, dt, 3))
    if _masked_row(shape):                                   # the fully masked row: 0, -inf
        assert torch.all(out[:, 3] == 0) and torch.all(lse[:, :, 3] == float("-inf"))


def test_fwd_mask_views_and_causal():
    """An expanded (stride-0) mask, a transposed mask view, a mask with causal, softcap."""
    q, k, v = make_qkv(2, 19, 23, 4, 4, 64, 32, "bf16", seed=5)
    base = _bool_mask((19, 23), 6)
    fwd_case(q, k, v, base.expand(2, 4, 19, 23))
    t = _add_mask((23, 19), torch.float32, 7, masked_row=False).t()     # (19, 23), strides (1, 19)
    fwd_case(q, k, v, t, causal=True, align="top_left")
    fwd_case(q, k, v, _bool_mask((2, 1, 19, 23), 8), causal=True, softcap=2.5, scale=0.3)


@pytest.mark.parametrize("ratio", [1, 4, 8])
def test_fwd_gqa(ratio):
    q, k, v = make_qkv(2, 33, 29, 8, 8 // ratio, 64, 64, "f16", seed=ratio)
    fwd_case(q, k, v, _bool_mask((1, 8, 33, 29), ratio), causal=True)


@pytest.mark.parametrize("s", [1, 17, 1023])
def test_fwd_lengths(s):
    q, k, v = make_qkv(1, s, s, 2, 1, 64, 64, "bf16", seed=s)
    fwd_case(q, k, v, causal=True)
    q, k, v = make_qkv(1, s, s, 2, 2, 7, 9, "f32", seed=s + 1)
    fwd_case(q, k, v)


def test_fwd_packed_qkv_strided_and_misaligned():
    """q / k / v views of one packed (B, S, 3, H, D) tensor; then views at an odd element
    offset (pointers not 16-byte aligned, the flash kernels' requirement) with D = 7."""
    g = torch.Generator(device="cpu").manual_seed(9)
    qkv = (torch.rand((2, 50, 3, 4, 40), generator=g, dtype=torch.float64) - 0.5).half().cuda()
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    fwd_case(q, k, v, causal=True)
    flat = (torch.rand(2 * 50 * 3 * 4 * 8 + 1, generator=g, dtype=torch.float64) - 0.5)
    odd = flat.float().cuda()[1:].view(2, 50, 3, 4, 8)[..., :7]
    fwd_case(odd[:, :, 0], odd[:, :, 1], odd[:, :, 2])


def test_fwd_strided_outputs_and_optional_lse():
    q, k, v = make_qkv(2, 21, 18, 4, 2, 40, 24, "f32", seed=11)
    big = torch.full((2, 21, 4, 64), float("nan"), dtype=torch.float32, device="cuda")
    out = big[..., 8:32]                                      # strided rows
    lse_t = torch.full((21, 4, 2), float("nan"), dtype=torch.float32, device="cuda")
    lse = lse_t.permute(2, 1, 0)                              # (B, Hq, Sq) transposed
    run_fwd(q, k, v, out=out, lse=lse)
    check_fwd(q, k, v, None, out, lse)
    assert torch.isnan(big[..., :8]).all() and torch.isnan(big[..., 32:]).all()
    out2, none = run_fwd(q, k, v, lse_out=False)
    assert none is None
    assert torch.equal(out2, out)                             # deterministic, lse or not


def test_fwd_empty_and_no_keys():
    for shape in ((0, 16, 16, 2, 2), (2, 0, 16, 2, 2), (2, 16, 16, 0, 0)):
        q, k, v = make_qkv(*shape, 8)
        out, lse = run_fwd(q, k, v)
        assert out.numel() == 0 or torch.isnan(out).all()     # nothing launched
    q, k, v = make_qkv(2, 16, 0, 4, 2, 8, 5, "bf16")
    out, lse = run_fwd(q, k, v, causal=True)
    assert torch.all(out == 0) and torch.all(lse == float("-inf"))
    q, k, v = make_qkv(1, 6, 3, 2, 2, 8, 8, "f32", seed=2)   # bottom-right causal, Sq > Sk:
    out, lse = fwd_case(q, k, v, causal=True)                 # the first rows see no key
    assert torch.all(out[:, :3] == 0) and torch.all(lse[:, :, :3] == float("-inf"))


# ------------------------------------------------------------------------------ backward
def run_bwd(q, k, v, do, mask=None, **kw):
    """Forward (for out and lse), then SdpaBackwardPlan into NaN-poisoned gradients."""
    out, lse = run_fwd(q, k, v, mask, **kw)
    desc = _desc(SdpaBackwardDescriptor, q, k, v, mask, **kw)
    plan = SdpaBackwardPlan.select(desc)
    grads = [torch.full(t.shape, float("nan"), dtype=t.dtype, device="cuda") for t in (q, k, v)]
    ws = torch.full((max(plan.workspace_size(), 1),), 255, dtype=torch.uint8, device="cuda")
    plan.run(SdpaBackwardArgs(q, k, v, out, do, lse, *grads, mask), workspace=ws)
    torch.cuda.synchronize()
    return out, grads


def check_bwd(q, k, v, do, mask, grads, *, scale=None, causal=False, softcap=0.0,
              align="bottom_right"):
    """Each gradient against the float64 reference, relative to the sums of absolute terms it
    is made of (delta uses the output rounded to the input dtype: ``inputs``)."""
    kw = dict(scale=scale, causal=causal, softcap=softcap, align=align)
    m = _np(mask)
    qn, kn, vn, dn = _np(q), _np(k), _np(v), _np(do)
    rq, rk, rv = ref.attention_backward(qn, kn, vn, dn, attn_mask=m, **kw)
    sq_, sk_, sv_ = sref.grad_scales(qn, kn, vn, dn, attn_mask=m, **kw)
    dt = NAME[SHORT[q.dtype]]
    ct = "float64" if dt == "float64" else "float32"
    d, dv = q.shape[-1], v.shape[-1]
    n = max(k.shape[1], q.shape[1] * (q.shape[2] // max(k.shape[2], 1)))
    rtol, atol = bounds(dt, compute=ct, terms=d + dv + n + 16, inputs=dt)
    rtol *= 2
    assert_close(grads[2], rv, rtol, atol, scale=sv_, what="dv")
    assert_close(grads[0], rq, rtol, atol, scale=sq_, what="dq")
    assert_close(grads[1], rk, rtol, atol, scale=sk_, what="dk")


def bwd_case(q, k, v, mask=None, seed=20, **kw):
    do = _rand(q.shape[:3] + (v.shape[-1],), q.dtype, seed)
    out, grads = run_bwd(q, k, v, do, mask, **kw)
    check_bwd(q, k, v, do, mask, grads, **kw)
    return grads


@pytest.mark.parametrize("dt", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("d,dv", [(1, 1), (7, 5), (40, 40), (64, 64), (160, 130)])
def test_bwd_dtypes_head_dims(dt, d, dv):
    q, k, v = make_qkv(1, 19, 23, 4, 2, d, dv, dt, seed=d)
    bwd_case(q, k, v)


@pytest.mark.parametrize("align", ["bottom_right", "top_left"])
@pytest.mark.parametrize("sq,sk", [(17, 33), (33, 17), (1, 20), (20, 1)])
def test_bwd_causal(align, sq, sk):
    q, k, v = make_qkv(2, sq, sk, 2, 2, 40, 24, "f32", seed=sq)
    bwd_case(q, k, v, causal=True, align=align)


@pytest.mark.parametrize("dt", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("kind,shape", [("bool", (1, 1, 19, 23)), ("bool", (2, 4, 19, 23)),
                                        ("add", (2, 1, 1, 23)), ("add32", (19, 23))])
def test_bwd_masks(dt, kind, shape):
    q, k, v = make_qkv(2, 19, 23, 4, 2, 40, 24, dt, seed=3)
    grads = bwd_case(q, k, v, _mask(kind, shape, dt, 4))
    if _masked_row(shape):                                   # the fully masked row: dq = 0
        assert torch.all(grads[0][:, 3] == 0)


def test_bwd_softcap_scale_mask_causal():
    q, k, v = make_qkv(2, 21, 26, 4, 2, 32, 48, "f32", seed=7)
    q = q * 3
    bwd_case(q, k, v, _bool_mask((2, 1, 21, 26), 9), causal=True, softcap=2.0, scale=0.4)


@pytest.mark.parametrize("ratio", [1, 4, 8])
def test_bwd_gqa(ratio):
    q, k, v = make_qkv(1, 30, 30, 8, 8 // ratio, 64, 64, "bf16", seed=ratio)
    bwd_case(q, k, v, causal=True)


@pytest.mark.parametrize("s", [1, 17, 1023])
def test_bwd_lengths(s):
    q, k, v = make_qkv(1, s, s, 2, 1, 32, 32, "f32", seed=s)
    bwd_case(q, k, v, causal=True, align="top_left")


def test_bwd_packed_qkv_strided_and_deterministic():
    g = torch.Generator(device="cpu").manual_seed(12)
    qkv = (torch.rand((2, 40, 3, 4, 40), generator=g, dtype=torch.float64) - 0.5).half().cuda()
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    do = _rand((2, 40, 4, 40), torch.float16, 13)
    _, g1 = run_bwd(q, k, v, do, causal=True)
    check_bwd(q, k, v, do, None, g1, causal=True)
    _, g2 = run_bwd(q, k, v, do, causal=True)
    for a, b in zip(g1, g2):
        assert torch.equal(a.view(torch.int16), b.view(torch.int16))


def test_bwd_empty_no_queries_no_keys():
    # no query rows: dk = dv = 0 (still written); dq empty
    q, k, v = make_qkv(2, 0, 9, 4, 2, 8, 6, "f32")
    do = torch.empty((2, 0, 4, 6), device="cuda")
    _, grads = run_bwd(q, k, v, do)
    assert torch.all(grads[1] == 0) and torch.all(grads[2] == 0)
    # no keys: dq = 0
    q, k, v = make_qkv(2, 9, 0, 4, 2, 8, 6, "f32")
    do = _rand((2, 9, 4, 6), torch.float32, 1)
    _, grads = run_bwd(q, k, v, do)
    assert torch.all(grads[0] == 0)
    # empty batch: nothing launched
    q, k, v = make_qkv(0, 9, 9, 4, 2, 8, 6, "f32")
    run_bwd(q, k, v, torch.empty((0, 9, 4, 6), device="cuda"))


# ------------------------------------------------------------------------ against torch
def _bhsd(t):
    return t.permute(0, 2, 1, 3)


@pytest.mark.parametrize("case", ["mask", "causal"])
def test_against_torch_sdpa_float64(case):
    """Forward and gradients against torch.nn.functional.scaled_dot_product_attention in
    float64 with autograd (torch's is_causal is the top-left alignment; its bool mask keeps
    True; no fully masked rows here: torch gives NaN there, we give 0)."""
    F = torch.nn.functional
    q, k, v = make_qkv(2, 13, 17, 3, 3, 24, 24, "f64", seed=30)
    do = _rand((2, 13, 3, 24), torch.float64, 31)
    kw, tkw, mask = {}, {}, None
    if case == "mask":
        mask = _bool_mask((2, 1, 13, 17), 32, masked_row=False)
        mask[..., 0] = True                                   # every row sees a key
        tkw = dict(attn_mask=mask)
    else:
        kw = dict(causal=True, align="top_left")
        tkw = dict(is_causal=True)
    out, grads = run_bwd(q, k, v, do, mask, **kw)
    qt, kt, vt = (_bhsd(t).detach().clone().requires_grad_(True) for t in (q, k, v))
    ot = F.scaled_dot_product_attention(qt, kt, vt, **tkw)
    ot.backward(_bhsd(do))
    assert torch.allclose(out, _bhsd(ot.detach()), rtol=1e-10, atol=1e-12)
    for got, want, n in zip(grads, (qt.grad, kt.grad, vt.grad), "qkv"):
        assert torch.allclose(got, _bhsd(want), rtol=1e-9, atol=1e-11), n


def test_against_torch_autograd_reference():
    """dq / dk / dv of bf16 inputs with an additive f32 mask and GQA against torch autograd of
    a float64 torch reference (not only numpy)."""
    q, k, v = make_qkv(1, 23, 31, 4, 2, 40, 40, "bf16", seed=41)
    mask = _add_mask((1, 1, 23, 31), torch.float32, 42, masked_row=False)
    mask[..., 0] = 0.0
    do = _rand((1, 23, 4, 40), torch.bfloat16, 43)
    _, grads = run_bwd(q, k, v, do, mask, causal=True)
    qd, kd, vd = (t.double().requires_grad_(True) for t in (q, k, v))
    ke, ve = kd.repeat_interleave(2, dim=2), vd.repeat_interleave(2, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", qd, ke) / np.sqrt(40) + mask.double()
    sq, sk = 23, 31
    keep = torch.arange(sk, device="cuda")[None, :] <= torch.arange(sq, device="cuda")[:, None] \
        + (sk - sq)
    s = s.masked_fill(~keep, float("-inf"))
    o = torch.einsum("bhqk,bkhd->bqhd", torch.softmax(s, -1), ve)
    o.backward(do.double())
    for got, want, n in zip(grads, (qd.grad, kd.grad, vd.grad), "qkv"):
        err = (got.double() - want).norm() / want.norm()
        assert err <= 8 * 2.0 ** -8, (n, float(err))
