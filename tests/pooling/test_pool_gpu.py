"""PoolPlan / PoolBackwardPlan / AdaptivePoolPlan / AdaptivePoolBackwardPlan and the namespace
functions on the GPU, against torch.nn.functional's pooling in float64 on the GPU (forward) and
float64 torch.autograd (backward): 1-/2-/3-D, odd sizes, stride / padding / dilation / ceil_mode,
count_include_pad, divisor_override, NHWC outputs, strided inputs, empty batch, NaN-poisoned
outputs, torch's indices, NaN propagation and bit-identical backward reruns."""

import math

import pytest

from _gpu_helpers import (assert_terms_close, bytes_equal, rand, image_out as _out,
                          image_inputs as _inputs)

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float16", "bfloat16", "float64"]
# (spatial, shape, kernel, stride, padding, dilation, ceil_mode)
CASES = [
    (1, (2, 3, 17), 3, 2, 1, 1, False),
    (1, (1, 2, 10), 4, 3, 2, 2, True),
    (2, (2, 3, 15, 13), 3, 2, 1, 1, True),
    (2, (1, 4, 9, 11), (2, 3), (1, 2), (1, 1), (2, 1), False),
    (2, (3, 2, 32, 33), 2, 2, 0, 1, False),
    (2, (1, 1, 6, 7), 3, 2, 0, 1, True),
    (3, (2, 2, 7, 8, 9), 3, 2, 1, 1, True),
    (3, (1, 3, 5, 6, 7), (1, 2, 3), (1, 2, 2), (0, 1, 1), (1, 2, 1), False),
]
ADAPTIVE = [(1, (2, 3, 17), (5,)), (1, (1, 2, 4), (7,)), (2, (2, 3, 15, 13), (4, 5)),
            (2, (1, 2, 9, 9), (9, 1)), (3, (2, 2, 7, 8, 9), (3, 4, 2)), (3, (1, 1, 3, 5, 4), (5, 2, 4))]


def _tdt(torch, dtype):
    return getattr(torch, dtype)


def _torch_pool(torch, desc, xd):
    """torch's forward of ``desc`` on the float64 tensor ``xd``: (y, indices or None)."""
    F = torch.nn.functional
    k = desc.spatial
    if desc.op == "max":
        return getattr(F, f"max_pool{k}d")(xd, desc.kernel_size, desc.stride, desc.padding,
                                           desc.dilation, desc.ceil_mode, return_indices=True)
    if k == 1:        # avg_pool1d has no divisor_override: the 2-D form with a 1-high window
        y = F.avg_pool2d(xd.unsqueeze(-2), (1,) + desc.kernel_size, (1,) + desc.stride,
                         (0,) + desc.padding, desc.ceil_mode, desc.count_include_pad,
                         desc.divisor_override)
        return y.squeeze(-2), None
    return getattr(F, f"avg_pool{k}d")(xd, desc.kernel_size, desc.stride, desc.padding,
                                       desc.ceil_mode, desc.count_include_pad,
                                       desc.divisor_override), None


def _torch_adaptive(torch, desc, xd):
    F = torch.nn.functional
    k = desc.spatial
    if desc.op == "max":
        return getattr(F, f"adaptive_max_pool{k}d")(xd, desc.output_size, return_indices=True)
    return getattr(F, f"adaptive_avg_pool{k}d")(xd, desc.output_size), None


def _window_terms(desc):
    """An upper bound on the elements one output sums (and on the outputs one input gets)."""
    if hasattr(desc, "kernel_size"):
        return math.prod(desc.kernel_size)
    return math.prod(max(-(-i // o), -(-o // i)) + 1
                     for i, o in zip(desc.shape[2:], desc.output_size) if o)


def _check_forward(torch, desc, x, y, idx, ref_fn, what):
    xd = x.double()
    yr, ir = ref_fn(torch, desc, xd)
    torch.cuda.synchronize()
    if desc.op == "max":
        assert_terms_close(y, yr, desc.dtype.name, what=what)          # an element: exact
        if desc.dtype.name in ("float32", "float64"):                  # random: no ties
            assert torch.equal(idx, ir), what
        # the value at every index is the output (ties in half types may pick another element)
        flat = x.contiguous().reshape(x.shape[0], x.shape[1], -1)
        got = flat.gather(2, idx.reshape(idx.shape[0], idx.shape[1], -1).contiguous())
        assert torch.equal(got.double(), y.reshape(got.shape).double()), what
    else:
        sc, _ = ref_fn(torch, desc, xd.abs())
        assert_terms_close(y, yr, desc.dtype.name, terms=_window_terms(desc) + 1, scale=sc,
                           what=what)


def _run_fw(torch, plan_cls, desc, x, layout):
    from baracuda_dsl.ops.pooling.pool import PoolArgs

    y = _out(torch, desc.out_shape, desc.dtype.name, layout)
    idx = _out(torch, desc.out_shape, torch.int64, layout) if desc.op == "max" else None
    plan_cls.select(desc).run(PoolArgs(x, y, idx))
    return y, idx


def _descs(op, dtype, layout):
    from baracuda_dsl.ops.pooling.pool import PoolDescriptor

    for sp, shape, k, s, p, d, ceil in CASES:
        if op == "max":
            yield PoolDescriptor(sp, shape, k, s, p, d, ceil, "max", dtype=dtype, layout=layout)
            continue
        for cip, dv in ((True, None), (False, None), (True, 3)):
            yield PoolDescriptor(sp, shape, k, s, p, 1, ceil, "avg", cip, dv, dtype, layout)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["max", "avg"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_pool_forward_matches_torch(dtype, op, layout):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.pooling.pool import PoolPlan

    gen = torch.Generator(device="cuda").manual_seed(1)
    for desc in _descs(op, dtype, layout):
        for name, x in _inputs(torch, desc.shape, dtype, gen):
            y, idx = _run_fw(torch, PoolPlan, desc, x, layout)
            _check_forward(torch, desc, x, y, idx, _torch_pool, f"{desc} {name}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["max", "avg"])
def test_adaptive_forward_matches_torch(dtype, op):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.pooling.pool import AdaptivePoolDescriptor, AdaptivePoolPlan

    gen = torch.Generator(device="cuda").manual_seed(2)
    for sp, shape, out in ADAPTIVE:
        for layout in ("NCHW", "NHWC"):
            desc = AdaptivePoolDescriptor(sp, shape, out, op, dtype, layout)
            for name, x in _inputs(torch, shape, dtype, gen):
                y, idx = _run_fw(torch, AdaptivePoolPlan, desc, x, layout)
                _check_forward(torch, desc, x, y, idx, _torch_adaptive, f"{desc} {name}")


def _backward_ref(torch, desc, x, dy, idx, ref_fn):
    """(dx reference in float64, scale): max — dy scattered to the saved indices (and, without
    ties, torch.autograd); avg — torch.autograd of the float64 forward."""
    n, c = desc.shape[:2]
    if desc.op == "max":
        flat_i = idx.reshape(n, c, -1).contiguous()
        dxr = torch.zeros((n, c, math.prod(desc.shape[2:])), dtype=torch.float64, device="cuda")
        dxr.scatter_add_(2, flat_i, dy.double().reshape(n, c, -1))
        sc = torch.zeros_like(dxr).scatter_add_(2, flat_i, dy.double().abs().reshape(n, c, -1))
        return dxr.reshape(desc.shape), sc.reshape(desc.shape)
    out = []
    for g in (dy.double(), dy.double().abs()):
        xd = x.double().detach().requires_grad_(True)
        yr, _ = ref_fn(torch, desc, xd)
        yr.backward(g)
        out.append(xd.grad)
    return out[0], out[1].abs()


def _check_backward(torch, plan_cls, fw_cls, desc, layout, gen, ref_fn, what):
    from baracuda_dsl.ops.pooling.pool import PoolBackwardArgs

    dtype = desc.dtype.name
    x = rand(torch, desc.shape, dtype, gen)
    _, idx = _run_fw(torch, fw_cls, desc, x, layout)
    base = rand(torch, tuple(desc.out_shape[:-1]) + (2 * desc.out_shape[-1],), dtype, gen)
    dy = base[..., ::2]                                                # strided gradient
    plan = plan_cls.select(desc)
    outs = []
    for _ in range(2):
        dx = _out(torch, desc.shape, dtype, layout)
        plan.run(PoolBackwardArgs(dy, dx, idx))
        outs.append(dx)
    torch.cuda.synchronize()
    assert bytes_equal(torch, outs[0], outs[1]), f"{what}: backward reruns differ"
    dxr, sc = _backward_ref(torch, desc, x, dy, idx, ref_fn)
    assert_terms_close(outs[0], dxr, dtype, terms=2 * _window_terms(desc) + 2, scale=sc, what=what)
    if desc.op == "max" and dtype in ("float32", "float64"):
        xd = x.double().detach().requires_grad_(True)
        yr, _ = ref_fn(torch, desc, xd)
        yr.backward(dy.double())
        assert_terms_close(outs[0], xd.grad, dtype, terms=2 * _window_terms(desc) + 2, scale=sc,
                           what=f"{what} (autograd)")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["max", "avg"])
def test_pool_backward_matches_autograd(dtype, op):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.pooling.pool import PoolBackwardPlan, PoolPlan

    gen = torch.Generator(device="cuda").manual_seed(3)
    for layout in ("NCHW", "NHWC"):
        for desc in _descs(op, dtype, layout):
            _check_backward(torch, PoolBackwardPlan, PoolPlan, desc, layout, gen, _torch_pool,
                            str(desc))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["max", "avg"])
def test_adaptive_backward_matches_autograd(dtype, op):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.pooling.pool import (AdaptivePoolBackwardPlan, AdaptivePoolDescriptor,
                                               AdaptivePoolPlan)

    gen = torch.Generator(device="cuda").manual_seed(4)
    for sp, shape, out in ADAPTIVE:
        for layout in ("NCHW", "NHWC"):
            desc = AdaptivePoolDescriptor(sp, shape, out, op, dtype, layout)
            _check_backward(torch, AdaptivePoolBackwardPlan, AdaptivePoolPlan, desc, layout, gen,
                            _torch_adaptive, str(desc))


def test_nan_wins_like_torch():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.pooling.pool import (AdaptivePoolDescriptor, AdaptivePoolPlan,
                                               PoolDescriptor, PoolPlan)

    gen = torch.Generator(device="cuda").manual_seed(5)
    for dtype in ("float32", "bfloat16"):
        x = rand(torch, (2, 3, 9, 10), dtype, gen)
        x[0, 1, 4, 5] = float("nan")
        x[1, 2, 0, 0] = float("nan")
        x[1, 2, 0, 1] = float("nan")
        for desc, cls, ref in [(PoolDescriptor(2, x.shape, 3, 2, 1, dtype=dtype), PoolPlan,
                                _torch_pool),
                               (AdaptivePoolDescriptor(2, x.shape, (4, 3), "max", dtype),
                                AdaptivePoolPlan, _torch_adaptive)]:
            y, idx = _run_fw(torch, cls, desc, x, "NCHW")
            yr, ir = ref(torch, desc, x.double())
            torch.cuda.synchronize()
            assert_terms_close(y, yr, dtype, what=str(desc))
            assert torch.equal(torch.isnan(y), torch.isnan(yr))
            nan = torch.isnan(yr)
            assert torch.equal(idx[nan], ir[nan]), str(desc)      # the same NaN wins


def test_empty_batch():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.pooling.pool import (PoolBackwardArgs, PoolBackwardPlan,
                                               PoolDescriptor, PoolPlan)

    desc = PoolDescriptor(2, (0, 3, 8, 8), 2, dtype="float32")
    x = torch.empty(desc.shape, device="cuda")
    y, idx = _run_fw(torch, PoolPlan, desc, x, "NCHW")
    assert y.shape == (0, 3, 4, 4) and idx.shape == (0, 3, 4, 4)
    dx = torch.empty(desc.shape, device="cuda")
    PoolBackwardPlan.select(desc).run(PoolBackwardArgs(y, dx, idx))


def test_namespace_functions():
    torch = pytest.importorskip("torch")
    import array_api as xp
    from array_api import _pooling_extensions as P

    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(6)
    t = rand(torch, (2, 3, 11, 12), "float32", gen)
    x = xp.from_dlpack(t)
    y, idx = P.max_pool(x, 3, 2, 1, ceil_mode=True, return_indices=True)
    yr, ir = F.max_pool2d(t.double(), 3, 2, 1, ceil_mode=True, return_indices=True)
    assert_terms_close(torch.from_dlpack(y), yr, "float32")
    assert torch.equal(torch.from_dlpack(idx), ir)
    g = rand(torch, tuple(yr.shape), "float32", gen)
    dx = P.max_pool_backward(xp.from_dlpack(g), t.shape, idx, 3, 2, 1, ceil_mode=True)
    td = t.double().requires_grad_(True)
    F.max_pool2d(td, 3, 2, 1, ceil_mode=True).backward(g.double())
    assert_terms_close(torch.from_dlpack(dx), td.grad, "float32", terms=20, scale=td.grad.abs())
    a = P.avg_pool(x, (2, 3), 2, (1, 1), False, False, None)
    assert_terms_close(torch.from_dlpack(a), F.avg_pool2d(t.double(), (2, 3), 2, (1, 1), False,
                                                          False), "float32", terms=7,
                       scale=F.avg_pool2d(t.double().abs(), (2, 3), 2, (1, 1), False, False))
    ga = rand(torch, tuple(a.shape), "float32", gen)
    dxa = P.avg_pool_backward(xp.from_dlpack(ga), t.shape, (2, 3), 2, (1, 1), False, False)
    td = t.double().requires_grad_(True)
    F.avg_pool2d(td, (2, 3), 2, (1, 1), False, False).backward(ga.double())
    assert_terms_close(torch.from_dlpack(dxa), td.grad, "float32", terms=20)
    am, ai = P.adaptive_max_pool(x, (4, 5), return_indices=True)
    amr, air = F.adaptive_max_pool2d(t.double(), (4, 5), return_indices=True)
    assert_terms_close(torch.from_dlpack(am), amr, "float32")
    assert torch.equal(torch.from_dlpack(ai), air)
    aa = P.adaptive_avg_pool(x, (4, None))
    assert_terms_close(torch.from_dlpack(aa), F.adaptive_avg_pool2d(t.double(), (4, None)),
                       "float32", terms=13,
                       scale=F.adaptive_avg_pool2d(t.double().abs(), (4, None)))
    ga = rand(torch, tuple(aa.shape), "float32", gen)
    dxa = P.adaptive_avg_pool_backward(xp.from_dlpack(ga), t.shape)
    td = t.double().requires_grad_(True)
    F.adaptive_avg_pool2d(td, (4, None)).backward(ga.double())
    assert_terms_close(torch.from_dlpack(dxa), td.grad, "float32", terms=20)
    gm = rand(torch, tuple(am.shape), "float32", gen)
    dxm = P.adaptive_max_pool_backward(xp.from_dlpack(gm), t.shape, ai)
    td = t.double().requires_grad_(True)
    F.adaptive_max_pool2d(td, (4, 5)).backward(gm.double())
    assert_terms_close(torch.from_dlpack(dxm), td.grad, "float32", terms=20, scale=td.grad.abs())
    with pytest.raises(TypeError):
        P.max_pool(xp.from_dlpack(torch.zeros((1, 1, 4, 4), dtype=torch.int32, device="cuda")), 2)
    with pytest.raises(ValueError):
        P.avg_pool(xp.from_dlpack(torch.zeros((4, 4), device="cuda")), 2)
