"""baracuda_dsl.jax's flash attention on the GPU: output and ``jax.grad`` (dq, dk, dv) under
``jax.jit`` against float64 attention on the CPU backend (softmax(q·kᵀ·scale + top-left causal
mask)·v, GQA by repeating the k / v heads); MHA, GQA and MQA, head dims 64 / 128, odd lengths."""

import math

import numpy as np
import pytest

from _gpu_helpers import assert_terms_close

pytestmark = pytest.mark.gpu


def _ref(jnp, q, k, v, causal, scale):
    """float64 attention of (B, S, H, D) arrays, GQA by repeating k / v heads."""
    rep = q.shape[2] // k.shape[2]
    k, v = jnp.repeat(k, rep, axis=2), jnp.repeat(v, rep, axis=2)
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) * scale
    if causal:
        sq, sk = s.shape[-2:]
        s = jnp.where(jnp.tril(jnp.ones((sq, sk), bool)), s, -jnp.inf)
    p = jnp.exp(s - jnp.max(s, axis=-1, keepdims=True))
    p = p / jnp.sum(p, axis=-1, keepdims=True)
    return jnp.einsum("bhqk,bkhd->bqhd", p, v)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_forward_and_grad(jx, dtype, causal):
    jax, gpu, cpu = jx
    jnp = jax.numpy
    import ml_dtypes

    import baracuda_dsl.jax as bj

    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    rng = np.random.default_rng(7)
    for b, s, hq, hk, d in ((2, 128, 8, 8, 64), (1, 200, 8, 2, 128), (2, 65, 4, 1, 128)):
        q, k, v = (rng.standard_normal((b, s, h, d)).astype(dt) for h in (hq, hk, hk))
        dout = rng.standard_normal((b, s, hq, d)).astype(dt)
        scale = 1 / math.sqrt(d)
        qg, kg, vg, dg = (jax.device_put(a, gpu) for a in (q, k, v, dout))
        out = jax.jit(lambda q, k, v: bj.flash_attention(q, k, v, causal))(qg, kg, vg)
        grads = jax.jit(jax.grad(
            lambda q, k, v: jnp.sum(bj.flash_attention(q, k, v, causal).astype(jnp.float32)
                                    * dg.astype(jnp.float32)), argnums=(0, 1, 2)))(qg, kg, vg)
        refs = [jax.device_put(a.astype(np.float64), cpu) for a in (q, k, v)]
        dr = jax.device_put(dout.astype(np.float64), cpu)
        ref = np.asarray(_ref(jnp, *refs, causal, scale))
        rgrads = jax.grad(lambda q, k, v: jnp.sum(_ref(jnp, q, k, v, causal, scale) * dr),
                          argnums=(0, 1, 2))(*refs)
        what = f"flash {dtype} causal={causal} B{b} S{s} Hq{hq} Hk{hk} D{d}"
        assert out.dtype == q.dtype and out.shape == q.shape, what
        # P is rounded to the input dtype for the P·V product (as in every flash kernel): the
        # bound is in that dtype's epsilon, relative to Σ P·|v|
        pv = np.asarray(_ref(jnp, refs[0], refs[1], jnp.abs(refs[2]), causal, scale))
        assert_terms_close(np.asarray(out), ref, dtype, compute=dtype, terms=2, scale=pv,
                           what=what)
        vmax = float(np.abs(v.astype(np.float64)).max())
        gmax = float(np.abs(dout.astype(np.float64)).max())
        for got, r, x, name in zip(grads, rgrads, (q, k, v), "qkv"):
            r = np.asarray(r)
            assert got.dtype == x.dtype and got.shape == x.shape, f"{what} d{name}"
            sc = np.abs(r) + gmax * vmax * (1 + float(np.abs(x.astype(np.float64)).max()))
            assert_terms_close(np.asarray(got), r, dtype, compute=dtype, terms=8, scale=sc,
                               what=f"{what} d{name}")
