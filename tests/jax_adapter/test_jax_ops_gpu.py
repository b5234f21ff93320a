"""baracuda_dsl.jax on the GPU: RMSNorm, LayerNorm, softmax / log_softmax and class-index
cross-entropy — values and ``jax.grad`` gradients, eager and under ``jax.jit``, against the same
formulas in plain jax.numpy evaluated in float64 on the CPU backend; odd, multi-dim and empty
shapes; vmap.  (XLA allocates the results, so there is no output to poison: a result the kernel
did not write shows up as a mismatch against the reference.)"""


import numpy as np
import pytest

from _gpu_helpers import assert_terms_close, exact_values

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "bfloat16", "float16", "float64"]


def _dev(jax, a, dev):
    return jax.device_put(a, dev)


def _ref_rms(jnp, x, w, k, eps):
    ax = tuple(range(x.ndim - k, x.ndim))
    y = x / jnp.sqrt(jnp.mean(x * x, axis=ax, keepdims=True) + eps)
    return y * w if w is not None else y


def _ref_ln(jnp, x, w, b, k, eps):
    ax = tuple(range(x.ndim - k, x.ndim))
    m = jnp.mean(x, axis=ax, keepdims=True)
    v = jnp.mean((x - m) ** 2, axis=ax, keepdims=True)
    y = (x - m) / jnp.sqrt(v + eps)
    if w is not None:
        y = y * w
    return y + b if b is not None else y


NORM_SHAPES = [((4, 7, 64), 1), ((3, 5, 2, 48), 2), ((1, 1000), 1), ((5, 129), 1), ((0, 32), 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["rms", "layer"])
@pytest.mark.parametrize("jit", [False, True])
def test_norms_forward_and_grad(jx, dtype, kind, jit):
    jax, gpu, cpu = jx
    jnp = jax.numpy
    import baracuda_dsl.jax as bj

    rng = np.random.default_rng(1)
    for shape, k in NORM_SHAPES:
        ns = shape[len(shape) - k:]
        x64, x = exact_values(rng, shape, dtype)
        w64, w = exact_values(rng, ns, dtype, 0.1, 1.0)
        b64, b = exact_values(rng, ns, dtype)
        dy64, dy = exact_values(rng, shape, dtype)
        if kind == "rms":
            def f(x, w, b):
                return bj.rms_norm(x, ns, w, 1e-6)

            def fr(x, w, b):
                return _ref_rms(jnp, x, w, k, 1e-6)
        else:
            def f(x, w, b):
                return bj.layer_norm(x, ns, w, b, 1e-5)

            def fr(x, w, b):
                return _ref_ln(jnp, x, w, b, k, 1e-5)

        def loss(fn, dyv):
            return lambda x, w, b: jnp.sum(fn(x, w, b).astype(dyv.dtype) * dyv)

        fwd = jax.jit(f) if jit else f
        grad = jax.grad(loss(f, _dev(jax, dy, gpu)), argnums=(0, 1, 2))
        grad = jax.jit(grad) if jit else grad
        ins = [_dev(jax, a, gpu) for a in (x, w, b)]
        y = fwd(*ins)
        gx, gw, gb = grad(*ins)
        refs = [_dev(jax, a, cpu) for a in (x64, w64, b64)]
        yr = fr(*refs)
        rx, rw, rb = jax.grad(loss(fr, _dev(jax, dy64, cpu)), argnums=(0, 1, 2))(*refs)
        n = int(np.prod(ns))
        what = f"{kind} {dtype} {shape} jit={jit}"
        assert y.dtype == x.dtype and y.shape == shape, what
        yr = np.asarray(yr)
        ysc = (np.abs(yr - b64) + np.abs(b64)) if kind == "layer" else np.abs(yr)
        assert_terms_close(np.asarray(y), yr, dtype, terms=8 + 2 * n, scale=ysc, what=what)
        dymax = float(np.abs(dy64).max()) if dy64.size else 0.0
        pairs = [(gx, rx, "x"), (gw, rw, "weight")] + ([(gb, rb, "bias")] if kind == "layer"
                                                         else [])
        for got, ref, name in pairs:
            ref = np.asarray(ref)
            terms = 8 + (2 * x64.size // max(n, 1) if name != "x" else 2 * n)
            assert got.dtype == x.dtype, f"{what} d{name} dtype"
            assert_terms_close(np.asarray(got), ref, dtype, terms=terms,
                               scale=np.abs(ref) + dymax, what=f"{what} d{name}")
        if kind == "rms":     # RMSNorm has no bias: its gradient is exactly zero
            assert not np.any(np.asarray(gb, dtype=np.float64)), what


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_forward_and_grad(jx, dtype, log, axis):
    jax, gpu, cpu = jx
    jnp = jax.numpy
    import baracuda_dsl.jax as bj

    rng = np.random.default_rng(2)
    op = bj.log_softmax if log else bj.softmax
    ref = jax.nn.log_softmax if log else jax.nn.softmax
    for shape in [(4, 100), (3, 5, 1000), (1, 4097), (6, 1), (2, 0)]:
        x64, x = exact_values(rng, shape, dtype, 3.0)
        dy64, dy = exact_values(rng, shape, dtype)
        dyg = _dev(jax, dy, gpu)
        f = jax.jit(lambda x: op(x, axis))
        g = jax.jit(jax.grad(lambda x: jnp.sum(op(x, axis).astype(dyg.dtype) * dyg)))
        xg = _dev(jax, x, gpu)
        y, gx = f(xg), g(xg)
        xr, dyr = _dev(jax, x64, cpu), _dev(jax, dy64, cpu)
        yr = np.asarray(ref(xr, axis=axis))
        rx = np.asarray(jax.grad(lambda x: jnp.sum(ref(x, axis=axis) * dyr))(xr))
        c = shape[axis]
        what = f"{'log_' if log else ''}softmax {dtype} {shape} axis={axis}"
        # log_softmax y = x − lse: rounding relative to |x| + |lse|, not to |y|; and lse =
        # max + log(Σ e^(x − max)) with Σ >= 1 carries an absolute error of a few eps (the
        # relative error of Σ), however small log(Σ) is: the + 1
        ysc = (np.abs(x64) + np.abs(x64 - yr) + 1) if log else np.abs(yr)
        assert_terms_close(np.asarray(y), yr, dtype, terms=8 + 2 * c, scale=ysc, what=what)
        gsc = np.abs(rx) + np.abs(dy64) * (1 + (np.exp(yr) if log else np.abs(yr)) * c)
        terms, comp = 8 + 2 * c, None
        if dtype in ("bfloat16", "float16"):
            # the backward reads the forward's y rounded to the input dtype (half an ulp of y,
            # or of |x| + |lse| for log_softmax): that error, scaled by what multiplies y,
            # dominates the float32 arithmetic
            s_dot = np.sum(np.abs(dy64 * (np.exp(yr) if log else yr)), axis=axis,
                           keepdims=True)
            if log:
                gsc = gsc + np.exp(yr) * np.sum(np.abs(dy64), axis=axis, keepdims=True) * ysc
            else:
                gsc = gsc + np.abs(yr) * (np.abs(dy64) + s_dot)
            terms, comp = 4, dtype
        assert_terms_close(np.asarray(gx), rx, dtype, compute=comp, terms=terms, scale=gsc,
                           what=what + " dx")


def _ref_ce(jnp, logits, target, weight, reduction, ignore_index, ls):
    n, c = logits.shape
    lsm = logits - jnp.max(logits, axis=1, keepdims=True)
    lsm = lsm - jnp.log(jnp.sum(jnp.exp(lsm), axis=1, keepdims=True))
    w = jnp.ones((c,), logits.dtype) if weight is None else weight
    valid = target != ignore_index
    t = jnp.where(valid, target, 0)
    nll = -jnp.take_along_axis(lsm, t[:, None], axis=1)[:, 0] * w[t]
    smooth = -jnp.sum(lsm * w[None, :], axis=1) / c
    per = jnp.where(valid, (1 - ls) * nll + ls * smooth, 0.0)
    if reduction == "none":
        return per
    if reduction == "sum":
        return jnp.sum(per)
    return jnp.sum(per) / jnp.sum(jnp.where(valid, w[t], 0.0))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("variant", ["plain", "weight_ignore", "smooth"])
def test_cross_entropy_forward_and_grad(jx, dtype, reduction, variant):
    jax, gpu, cpu = jx
    jnp = jax.numpy
    import baracuda_dsl.jax as bj

    rng = np.random.default_rng(3)
    ls = 0.1 if variant == "smooth" else 0.0
    for n, c, tdt in [(7, 33, np.int32), (64, 1000, np.int64), (3, 50257, np.int32)]:
        x64, x = exact_values(rng, (n, c), dtype, 2.0)
        t = rng.integers(0, c, n).astype(tdt)
        w64 = w = None
        if variant == "weight_ignore":
            t[::3] = -100
            w64, w = exact_values(rng, (c,), dtype, 0.2, 1.0)
        gshape = (n,) if reduction == "none" else ()
        g64, gv = exact_values(rng, gshape, dtype)
        gg = _dev(jax, gv, gpu)
        wg = None if w is None else _dev(jax, w, gpu)
        tg = _dev(jax, t, gpu)

        def f(lg):
            return bj.cross_entropy(lg, tg, wg, reduction=reduction, label_smoothing=ls)

        xg = _dev(jax, x, gpu)
        loss = jax.jit(f)(xg)
        dx = jax.jit(jax.grad(lambda lg: jnp.sum(f(lg).astype(gg.dtype) * gg)))(xg)
        xr, tr = _dev(jax, x64, cpu), _dev(jax, t, cpu)
        wr = None if w64 is None else _dev(jax, w64, cpu)
        gr = _dev(jax, g64, cpu)

        def fr(lg):
            return _ref_ce(jnp, lg, tr, wr, reduction, -100, ls)

        lr = np.asarray(fr(xr))
        rdx = np.asarray(jax.grad(lambda lg: jnp.sum(fr(lg) * gr))(xr))
        what = f"ce {variant} {dtype} {reduction} ({n}, {c})"
        assert loss.dtype == x.dtype and loss.shape == gshape, what
        wmax = 1.0 if w64 is None else float(np.abs(w64).max())
        lmax = wmax * (2 * float(np.abs(x64).max()) + np.log(c))   # bound on one row's term
        terms = 8 + 2 * c + (2 * n if reduction != "none" else 0)
        lsc = np.full(lr.shape, lmax * (n if reduction == "sum" else 1))
        assert_terms_close(np.asarray(loss), lr, dtype, terms=terms, scale=lsc, what=what)
        gmax = float(np.abs(g64).max())
        assert_terms_close(np.asarray(dx), rdx, dtype, terms=8 + 2 * c + 2 * n,
                           scale=np.abs(rdx) + gmax * wmax,
                           what=what + " dlogits")


def test_vmap_and_eager_match_jit(jx):
    jax, gpu, cpu = jx
    import baracuda_dsl.jax as bj

    rng = np.random.default_rng(4)
    x = _dev(jax, rng.standard_normal((3, 4, 96)).astype(np.float32), gpu)
    w = _dev(jax, (1 + 0.1 * rng.standard_normal(96)).astype(np.float32), gpu)
    whole = np.asarray(jax.jit(lambda x: bj.rms_norm(x, 96, w))(x))
    mapped = np.asarray(jax.vmap(lambda x: bj.rms_norm(x, 96, w))(x))
    eager = np.asarray(bj.rms_norm(x, 96, w))
    assert np.array_equal(whole, eager)           # the same Plan, the same kernel
    assert np.allclose(whole, mapped, rtol=1e-6, atol=1e-7)   # per element: maybe another SKU
    g1 = np.asarray(jax.grad(lambda x: bj.softmax(x)[..., 0].sum())(x))
    g2 = np.asarray(jax.vmap(jax.grad(lambda x: bj.softmax(x)[..., 0].sum()))(x))
    assert np.allclose(g1, g2, rtol=1e-6, atol=1e-7)


def test_typed_error_at_trace_time_on_gpu(jx):
    jax, gpu, cpu = jx
    import baracuda_dsl.jax as bj
    from baracuda_dsl.errors import UnsupportedError

    with pytest.raises(UnsupportedError):
        jax.jit(bj.softmax)(_dev(jax, np.ones((3, 5), np.int32), gpu))
