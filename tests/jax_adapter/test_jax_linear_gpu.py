"""baracuda_dsl.jax's linear and matmul (GemmPlan) on the GPU: values and ``jax.grad``
gradients, under ``jax.jit``, against float64 products on the CPU backend; bounds from the
output dtype with the Σ|a||b| scale of each dot product; odd, folded and empty shapes."""

import numpy as np
import pytest

from _gpu_helpers import assert_terms_close, exact_values

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "bfloat16", "float16", "float64"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", [False, True])
def test_linear_forward_and_grad(jx, dtype, bias):
    jax, gpu, cpu = jx
    jnp = jax.numpy
    import baracuda_dsl.jax as bj

    rng = np.random.default_rng(5)
    for xs, n_out in [((2, 5, 64), 48), ((17, 40), 24), ((3, 1, 128), 256), ((0, 32), 16),
                      ((4, 8), 0)]:
        n_in = xs[-1]
        x64, x = exact_values(rng, xs, dtype)
        w64, w = exact_values(rng, (n_out, n_in), dtype, 0.2)
        b64, b = exact_values(rng, (n_out,), dtype)
        dy64, dy = exact_values(rng, xs[:-1] + (n_out,), dtype)
        dyg = jax.device_put(dy, gpu)
        ins = [jax.device_put(a, gpu) for a in ((x, w, b) if bias else (x, w))]
        refs = [jax.device_put(a, cpu) for a in ((x64, w64, b64) if bias else (x64, w64))]
        dyr = jax.device_put(dy64, cpu)

        def ref(x, w, b=None):
            y = x @ w.T
            return y + b if b is not None else y

        argn = tuple(range(len(ins)))
        y = jax.jit(bj.linear)(*ins)
        gr = jax.jit(jax.grad(lambda *a: jnp.sum(bj.linear(*a).astype(dyg.dtype) * dyg),
                              argnums=argn))(*ins)
        yr = np.asarray(ref(*refs))
        rg = jax.grad(lambda *a: jnp.sum(ref(*a) * dyr), argnums=argn)(*refs)
        what = f"linear {dtype} {xs}->{n_out} bias={bias}"
        assert y.dtype == x.dtype and y.shape == xs[:-1] + (n_out,), what
        ysc = np.abs(x64) @ np.abs(w64).T + (np.abs(b64) if bias else 0.0)
        assert_terms_close(np.asarray(y), yr, dtype, terms=2 * n_in + 2, scale=ysc, what=what)
        m = int(np.prod(xs[:-1]))
        dy2, x2 = np.abs(dy64).reshape(m, n_out), np.abs(x64).reshape(m, n_in)
        scales = [(dy2 @ np.abs(w64)).reshape(xs), dy2.T @ x2, dy2.sum(0)]
        terms = [2 * n_out + 2, 2 * m + 2, 2 * m + 2]
        for got, r, sc, t, name in zip(gr, rg, scales, terms, ("x", "weight", "bias")):
            assert got.dtype == x.dtype, f"{what} d{name} dtype"
            assert_terms_close(np.asarray(got), np.asarray(r), dtype, terms=t, scale=sc,
                               what=f"{what} d{name}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_forward_and_grad(jx, dtype):
    jax, gpu, cpu = jx
    jnp = jax.numpy
    import baracuda_dsl.jax as bj

    rng = np.random.default_rng(6)
    for m, k, n in [(7, 33, 5), (128, 256, 64), (1, 1000, 3), (5, 0, 4)]:
        a64, a = exact_values(rng, (m, k), dtype)
        b64, b = exact_values(rng, (k, n), dtype)
        g64, g = exact_values(rng, (m, n), dtype)
        gg = jax.device_put(g, gpu)
        ag, bg = jax.device_put(a, gpu), jax.device_put(b, gpu)
        c = jax.jit(bj.matmul)(ag, bg)
        da, db = jax.jit(jax.grad(lambda a, b: jnp.sum(bj.matmul(a, b).astype(gg.dtype) * gg),
                                  argnums=(0, 1)))(ag, bg)
        what = f"matmul {dtype} ({m}, {k}) @ ({k}, {n})"
        assert_terms_close(np.asarray(c), a64 @ b64, dtype, terms=2 * k + 2,
                           scale=np.abs(a64) @ np.abs(b64), what=what)
        assert_terms_close(np.asarray(da), g64 @ b64.T, dtype, terms=2 * n + 2,
                           scale=np.abs(g64) @ np.abs(b64).T, what=what + " da")
        assert_terms_close(np.asarray(db), a64.T @ g64, dtype, terms=2 * m + 2,
                           scale=np.abs(a64).T @ np.abs(g64), what=what + " db")
