"""The namespace's attention functions on the GPU — ``xp.flash_attention`` (+ backward),
``xp.scaled_dot_product_attention`` (torch's layout and semantics: the flash path and the
general path with masks, f32 / f64, odd head dims), ``xp.rope`` / ``xp.rope_backward`` /
``xp.rope_cos_sin`` — against the float64 references of tests/_attention_ref.py.  The kernels
are tested element by element in tests/attention/; here the wiring (layouts, transposes,
options, dtypes) is checked with every element against a bound from the input dtype."""

import numpy as np
import pytest

from tests import _attention_ref as ref
from tests._checks import assert_close, eps

pytestmark = pytest.mark.gpu


def _xp():
    import array_api as xp
    return xp


def _data(shape, seed, dtype):
    xp = _xp()
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, shape)
    x = xp.asarray(a, dtype=getattr(xp, dtype))
    return x, np.asarray(xp.astype(x, xp.float64).to_numpy())      # the rounded values


def _np(x):
    xp = _xp()
    return np.asarray(xp.astype(x, xp.float64).to_numpy())


def _check(out, want, dtype, scale, what):
    # the kernels' own tests bound every element tightly; the wiring check: a few ulps of the
    # input dtype relative to the output magnitude
    assert_close(_np(out), want, 8 * eps(dtype), 0.0, scale=np.full(want.shape, scale), what=what)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_flash_attention_and_backward(dtype):
    xp = _xp()
    q, qn = _data((2, 70, 8, 64), 1, dtype)
    k, kn = _data((2, 90, 2, 64), 2, dtype)
    v, vn = _data((2, 90, 2, 64), 3, dtype)
    do, don = _data((2, 70, 8, 64), 4, dtype)
    out, lse = xp.flash_attention(q, k, v, causal=True, window=(40, 0), return_lse=True)
    r_out, r_lse = ref.attention(qn, kn, vn, causal=True, window=(40, 0))
    _check(out, r_out, dtype, 1.0, "out")
    assert_close(_np(lse), r_lse, 1e-5, 0.0, scale=np.full(r_lse.shape, 10.0), what="lse")
    dq, dk, dv = xp.flash_attention_backward(do, q, k, v, out, lse, causal=True,
                                             window=(40, 0))
    rq, rk, rv = ref.attention_backward(qn, kn, vn, don, causal=True, window=(40, 0))
    for got, want, n in ((dq, rq, "dq"), (dk, rk, "dk"), (dv, rv, "dv")):
        _check(got, want, dtype, float(np.abs(want).max()) + 1.0, n)


def test_flash_attention_varlen():
    xp = _xp()
    cu_q, cu_k = [0, 3, 3, 80], [0, 10, 11, 120]
    q, qn = _data((80, 4, 128), 5, "bfloat16")
    k, kn = _data((120, 4, 128), 6, "bfloat16")
    v, vn = _data((120, 4, 128), 7, "bfloat16")
    cq = xp.asarray(np.array(cu_q, np.int32))
    ck = xp.asarray(np.array(cu_k, np.int32))
    out = xp.flash_attention(q, k, v, cu_seqlens_q=cq, cu_seqlens_k=ck, max_seqlen_q=77,
                             max_seqlen_k=109, causal=True)
    r_out, _ = ref.attention(qn, kn, vn, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, causal=True)
    _check(out, r_out, "bfloat16", 1.0, "out")


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_flash_path_torch_layout(causal):
    xp = _xp()
    q, qn = _data((2, 8, 65, 128), 8, "float16")        # (N, H, L, E)
    k, kn = _data((2, 2, 100, 128), 9, "float16")
    v, vn = _data((2, 2, 100, 128), 10, "float16")
    out = xp.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    assert out.shape == (2, 8, 65, 128)
    t = (0, 2, 1, 3)
    r_out, _ = ref.attention(qn.transpose(t), kn.transpose(t), vn.transpose(t), causal=causal,
                             align="top_left")
    _check(out, r_out.transpose(t), "float16", 1.0, "out")
    with pytest.raises(ValueError):
        xp.scaled_dot_product_attention(q, k, v)          # GQA without enable_gqa


@pytest.mark.parametrize("dtype,e", [("float32", 40), ("float64", 7), ("bfloat16", 64)])
def test_sdpa_general_path_masks(dtype, e):
    xp = _xp()
    q, qn = _data((2, 3, 33, e), 11, dtype)
    k, kn = _data((2, 3, 47, e), 12, dtype)
    v, vn = _data((2, 3, 47, e + 3), 13, dtype)
    rng = np.random.default_rng(14)
    keep = rng.uniform(size=(2, 1, 33, 47)) > 0.3
    keep[0, 0, 5] = False                                  # a fully masked row: 0 (torch: NaN)
    mask = xp.asarray(keep)
    out = xp.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    t = (0, 2, 1, 3)
    r_out, _ = ref.attention(qn.transpose(t), kn.transpose(t), vn.transpose(t),
                             attn_mask=keep, align="top_left")
    _check(out, r_out.transpose(t), dtype, 1.0, "out (bool mask)")
    add, addn = _data((1, 1, 33, 47), 15, dtype)
    out = xp.scaled_dot_product_attention(q, k, v, attn_mask=add, scale=0.3)
    r_out, _ = ref.attention(qn.transpose(t), kn.transpose(t), vn.transpose(t), attn_mask=addn,
                             scale=0.3, align="top_left")
    _check(out, r_out.transpose(t), dtype, 1.0, "out (additive mask)")


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_rope_and_backward(layout):
    xp = _xp()
    x, xn = _data((2, 37, 4, 64), 16, "bfloat16")
    cos, sin = xp.rope_cos_sin(64, 32)
    cn, sn = _np(cos), _np(sin)
    y = xp.rope(x, cos, sin, rotary_dim=32, layout=layout, seqlen_offset=5)
    pos = np.arange(37) + 5
    want = ref.rope(xn, cn, sn, rotary_dim=32, layout=layout,
                    position_ids=np.broadcast_to(pos, (2, 37)))
    _check(y, want, "bfloat16", 2.0, "rope")
    dx = xp.rope_backward(x, cos, sin, rotary_dim=32, layout=layout, seqlen_offset=5)
    want = ref.rope_backward(xn, cn, sn, rotary_dim=32, layout=layout,
                             position_ids=np.broadcast_to(pos, (2, 37)))
    _check(dx, want, "bfloat16", 2.0, "rope_backward")
    with pytest.raises(ValueError):                             # checked on the host
        xp.rope(x, cos, sin, rotary_dim=32, seqlen_offset=60)
    bad = np.broadcast_to(np.arange(37) + 40, (2, 37)).astype(np.int32)
    with pytest.raises(IndexError):                             # found by the kernel
        xp.rope(x, cos, sin, rotary_dim=32, position_ids=xp.asarray(bad))


def test_flash_attention_dropout_and_backward():
    """xp.flash_attention with dropout draws (seed, offset) from the generator, returns it with
    the lse, and xp.flash_attention_backward regenerates the same mask from it."""
    xp = _xp()
    q, qn = _data((1, 40, 4, 64), 21, "bfloat16")
    k, kn = _data((1, 60, 4, 64), 22, "bfloat16")
    v, vn = _data((1, 60, 4, 64), 23, "bfloat16")
    do, don = _data((1, 40, 4, 64), 24, "bfloat16")
    g = xp.random.Generator(5, offset=10)
    out, lse, state = xp.flash_attention(q, k, v, causal=True, return_lse=True, dropout_p=0.25,
                                         generator=g)
    assert state == (5, 10) and g.offset == 10 + (40 * 60 * 4 + 3) // 4
    z = ref.dropout_factors(5, 10, 0.25, 1, 4, 40, 60)
    r_out, _ = ref.attention_dropout(qn, kn, vn, z, causal=True)
    _check(out, r_out, "bfloat16", 1.0 / 0.75, "out (dropout)")
    grads = xp.flash_attention_backward(do, q, k, v, out, lse, causal=True, dropout_p=0.25,
                                        dropout_state=state)
    want = ref.attention_dropout_backward(qn, kn, vn, don, z, causal=True)
    for got, w, n in zip(grads, want, ("dq", "dk", "dv")):
        _check(got, w, "bfloat16", float(np.abs(w).max()) / 0.75, n)
    with pytest.raises(ValueError):
        xp.flash_attention_backward(do, q, k, v, out, lse, causal=True, dropout_p=0.25)
