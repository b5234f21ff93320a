"""baracuda_dsl.jax without a GPU: import hygiene, tracing (shapes / dtypes of values and
gradients, the buffer_callback operations and their workspaces), jit lowering, vmap, typed
errors at trace time, the kernel-free empty-input paths, and host operands refused eagerly.
Plans are selected for sm90a through ``use_preference``; skips cleanly without jax."""

import subprocess
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("jax.experimental.buffer_callback")
jnp = jax.numpy

import baracuda_dsl.jax as bj                                   # noqa: E402
from baracuda_dsl.errors import (DeviceMismatchError, InvalidProblemError,  # noqa: E402
                                 UnsupportedError)
from baracuda_dsl.vocabulary import PlanPreference              # noqa: E402

SDS = jax.ShapeDtypeStruct


@pytest.fixture(autouse=True)
def _sm90a():
    with bj.use_preference(PlanPreference(arch="sm90a")):
        yield


def _callbacks(jaxpr):
    """The buffer_callback equations of a (closed) jaxpr, nested ones included."""
    found = []

    def walk(jp):
        for eqn in jp.eqns:
            if eqn.primitive.name == "buffer_callback":
                found.append(eqn)
            for v in eqn.params.values():
                sub = getattr(v, "jaxpr", None)
                if sub is not None:
                    walk(getattr(sub, "jaxpr", sub))
    walk(jaxpr.jaxpr)
    return found


def test_imports_stay_apart():
    code = ("import sys, baracuda_dsl, baracuda_dsl.ops; assert 'jax' not in sys.modules; "
            "import baracuda_dsl.jax; assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_rms_norm_traces_forward_and_grad(dtype):
    x = SDS((4, 7, 64), dtype)
    w = SDS((64,), dtype)
    assert jax.eval_shape(lambda x, w: bj.rms_norm(x, 64, w), x, w) == SDS((4, 7, 64), dtype)
    f = jax.grad(lambda x, w: bj.rms_norm(x, (64,), w, 1e-6).astype(jnp.float32).sum(),
                 argnums=(0, 1))
    assert jax.eval_shape(f, x, w) == (x, w)
    cbs = _callbacks(jax.make_jaxpr(f)(x, w))
    assert len(cbs) == 2
    fw, bw = cbs
    assert [tuple(a.shape) for a in fw.params["result_avals"]] == [(4, 7, 64), (28,)]
    assert fw.params["result_avals"][1].dtype == np.float32            # rstd
    bw_avals = bw.params["result_avals"]
    assert [tuple(a.shape) for a in bw_avals[:2]] == [(4, 7, 64), (64,)]
    assert bw_avals[-1].dtype == np.uint8 and bw_avals[-1].shape[0] > 0   # dweight workspace


def test_rms_norm_without_weight_and_two_dims():
    x = SDS((3, 5, 2, 48), "float32")
    f = jax.grad(lambda x: bj.rms_norm(x, (2, 48)).sum())
    assert jax.eval_shape(f, x) == x


def test_layer_norm_grads_for_present_parameters():
    x, w, b = SDS((3, 5, 48), "bfloat16"), SDS((48,), "bfloat16"), SDS((48,), "bfloat16")
    f = jax.grad(lambda x, w, b: bj.layer_norm(x, 48, w, b).astype(jnp.float32).sum(),
                 argnums=(0, 1, 2))
    assert jax.eval_shape(f, x, w, b) == (x, w, b)
    g = jax.grad(lambda x, b: bj.layer_norm(x, 48, None, b).sum(), argnums=(0, 1))
    assert jax.eval_shape(g, SDS((6, 48), "float32"), SDS((48,), "float32")) == (
        SDS((6, 48), "float32"), SDS((48,), "float32"))


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_traces_any_axis(fn, axis):
    x = SDS((3, 5, 11), "float16")
    op = getattr(bj, fn)
    assert jax.eval_shape(lambda x: op(x, axis), x) == x
    assert jax.eval_shape(jax.grad(lambda x: op(x, axis).astype(jnp.float32).sum()), x) == x


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_traces(reduction):
    lg, t, w = SDS((9, 33), "float32"), SDS((9,), "int32"), SDS((33,), "float32")
    out = jax.eval_shape(lambda lg, t, w: bj.cross_entropy(lg, t, w, reduction=reduction,
                                                            label_smoothing=0.1), lg, t, w)
    assert out == SDS((9,) if reduction == "none" else (), "float32")
    f = jax.grad(lambda lg, t, w: bj.cross_entropy(lg, t, w, reduction=reduction).sum())
    assert jax.eval_shape(f, lg, t, w) == lg
    # the class weight is a constant: its gradient is zero by definition (stop_gradient)
    dw = jax.make_jaxpr(jax.grad(lambda w, lg, t: bj.cross_entropy(lg, t, w).sum()))(w, lg, t)
    assert len(_callbacks(dw)) == 1          # the forward only: nothing flows back to weight


@pytest.mark.parametrize("bias", [False, True])
def test_linear_traces_three_gemms(bias):
    x, w, b = SDS((2, 5, 48), "bfloat16"), SDS((24, 48), "bfloat16"), SDS((24,), "bfloat16")
    args = (x, w, b) if bias else (x, w)
    f = jax.grad(lambda *a: bj.linear(*a).astype(jnp.float32).sum(),
                 argnums=tuple(range(len(args))))
    assert jax.eval_shape(lambda *a: bj.linear(*a), *args) == SDS((2, 5, 24), "bfloat16")
    assert jax.eval_shape(f, *args) == args
    shapes = [tuple(e.params["result_avals"][0].shape) for e in _callbacks(jax.make_jaxpr(f)(*args))]
    assert shapes == [(10, 24), (10, 48), (24, 48)]         # y, dx, dweight


def test_matmul_traces():
    a, b = SDS((7, 33), "float32"), SDS((33, 5), "float32")
    assert jax.eval_shape(bj.matmul, a, b) == SDS((7, 5), "float32")
    assert jax.eval_shape(jax.grad(lambda a, b: bj.matmul(a, b).sum(), argnums=(0, 1)), a, b) \
        == (a, b)
    with pytest.raises(ValueError):
        jax.eval_shape(bj.matmul, a, SDS((5, 33), "float32"))
    with pytest.raises(UnsupportedError):
        jax.eval_shape(bj.matmul, SDS((4, 4), "int32"), SDS((4, 4), "int32"))
    z = bj.matmul(jnp.zeros((3, 0)), jnp.zeros((0, 4)))    # K = 0: no kernel, zeros
    assert z.shape == (3, 4) and not np.any(np.asarray(z))


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_traces_gqa(causal):
    q, k = SDS((2, 65, 8, 128), "bfloat16"), SDS((2, 65, 2, 128), "bfloat16")
    assert jax.eval_shape(lambda q, k, v: bj.flash_attention(q, k, v, causal), q, k, k) == q
    f = jax.grad(lambda q, k, v: bj.flash_attention(q, k, v, causal).astype(jnp.float32).sum(),
                 argnums=(0, 1, 2))
    assert jax.eval_shape(f, q, k, k) == (q, k, k)
    fw = _callbacks(jax.make_jaxpr(f)(q, k, k))[0]
    assert tuple(fw.params["result_avals"][1].shape) == (2, 8, 65)            # lse (B, Hq, Sq)
    with pytest.raises(UnsupportedError):                                    # f32: not flash
        jax.eval_shape(bj.flash_attention, *(SDS((1, 8, 2, 64), "float32"),) * 3)
    with pytest.raises(InvalidProblemError):                                 # Hk ∤ Hq
        jax.eval_shape(bj.flash_attention, SDS((1, 8, 3, 64), "float16"),
                       SDS((1, 8, 2, 64), "float16"), SDS((1, 8, 2, 64), "float16"))


def test_jit_lowers_to_one_custom_call_per_plan():
    f = jax.jit(jax.value_and_grad(lambda x: bj.log_softmax(x).sum()))
    text = f.lower(SDS((4, 100), "float32")).as_text()
    assert text.count("stablehlo.custom_call") == 2
    assert "xla_buffer_python" in text


def test_vmap_traces():
    x = SDS((3, 5, 64), "float32")
    f = jax.vmap(jax.grad(lambda x: bj.rms_norm(x, 64)[0, 0]))
    assert jax.eval_shape(f, x) == x


def test_typed_errors_at_trace_time():
    with pytest.raises(UnsupportedError):
        jax.eval_shape(bj.softmax, SDS((3, 5), "int32"))
    with pytest.raises(UnsupportedError):
        jax.jit(lambda x: bj.rms_norm(x, 5)).lower(SDS((3, 5), "int16"))
    with pytest.raises((InvalidProblemError, UnsupportedError)):
        jax.eval_shape(lambda lg, t: bj.cross_entropy(lg, t, reduction="avg"),
                       SDS((3, 5), "float32"), SDS((3,), "int32"))


def test_preference_is_scoped():
    with bj.use_preference(None):
        assert bj.preference() is None
    assert bj.preference() == PlanPreference(arch="sm90a")


def test_host_operands_are_refused_eagerly():
    x = jax.device_put(np.ones((3, 5), np.float32), jax.devices("cpu")[0])
    with pytest.raises(DeviceMismatchError):
        bj.softmax(x)


def test_empty_inputs_need_no_kernel():
    # these run for real on the CPU backend: no buffer_callback is emitted for empty problems
    x = jnp.zeros((0, 32), jnp.float32)
    w = jnp.ones((32,), jnp.float32)
    y = bj.rms_norm(x, 32, w)
    assert y.shape == (0, 32)
    dx, dw = jax.grad(lambda x, w: bj.rms_norm(x, 32, w).sum(), argnums=(0, 1))(x, w)
    assert dx.shape == (0, 32) and np.all(np.asarray(dw) == 0)
    assert jax.grad(lambda x: bj.softmax(x).sum())(jnp.zeros((4, 0))).shape == (4, 0)
    lg, t = jnp.zeros((0, 7)), jnp.zeros((0,), jnp.int32)
    assert np.isnan(float(bj.cross_entropy(lg, t)))
    assert float(bj.cross_entropy(lg, t, reduction="sum")) == 0.0
    assert bj.cross_entropy(lg, t, reduction="none").shape == (0,)
    assert jax.grad(lambda lg: bj.cross_entropy(lg, t, reduction="sum"))(lg).shape == (0, 7)
