"""The conv plans on the GPU (cuDNN) against torch's convolutions in float64 on the GPU, on the
same (rounded) operands: forward / backward-data / backward-filter, convolution and transposed
convolution, 1-D / 2-D / 3-D, f16 / bf16 / f32 (strict and TF32) / f64, NCHW and NHWC, groups
and depthwise, stride / padding / dilation, odd sizes, empty batches, bias + ReLU, NaN-poisoned
outputs; and the namespace's ``conv`` / ``conv_transpose`` / ``conv_backward``.

Bounds per element (tests/_checks.py): half an ulp of the output dtype plus R·eps(compute)
relative to Σ|a|·|b| (the same convolution of |operands| in float64), R the reduction length of
one output element — C/groups·Πkernel (forward), K/groups·Πkernel (data gradient), N·Πout
(filter gradient), with the roles of x and y swapped for a transposed convolution; compute is
float32 (float64 for f64, TF32's 2^-10 when allowed)."""

import numpy as np
import pytest

from tests._checks import assert_close, bounds, poison

pytestmark = pytest.mark.gpu


def _torch():
    return pytest.importorskip("torch")


def _relayout(torch, t, layout):
    if layout == "NCHW" or t.ndim < 3:
        return t.contiguous()
    perm = (0,) + tuple(range(2, t.ndim)) + (1,)
    inv = tuple(int(i) for i in np.argsort(perm))
    return t.permute(perm).contiguous().permute(inv)


def _rand(torch, shape, dt, layout, gen):
    t = torch.randn(shape, generator=gen, device="cuda", dtype=torch.float64).to(dt)
    return _relayout(torch, t, layout)


def _poisoned(torch, shape, dt, layout):
    return _relayout(torch, poison(torch, shape, dt), layout)


def _ref(torch, desc, kind, a, b, bias=None, absval=False):
    """torch's result in float64: kind "fwd" (a=x, b=w), "dgrad" (a=dy, b=w), "wgrad"
    (a=x, b=dy)."""
    f = (lambda t: t.double().abs()) if absval else (lambda t: t.double())
    conv = torch.ops.aten.convolution
    args = (list(desc.stride), list(desc.padding), list(desc.dilation), desc.transposed,
            list(desc.output_padding), desc.groups)
    if kind == "fwd":
        y = conv(f(a), f(b), None if bias is None or absval else f(bias), *args)
        if bias is not None and absval:
            y = y + f(bias).reshape((1, -1) + (1,) * desc.spatial)
        return y
    x = torch.zeros(desc.x_shape, dtype=torch.float64, device="cuda")
    w = torch.zeros(desc.w_shape, dtype=torch.float64, device="cuda")
    if kind == "dgrad":
        gx, _, _ = torch.ops.aten.convolution_backward(f(a), x, f(b), None, *args,
                                                       [True, False, False])
        return gx
    _, gw, _ = torch.ops.aten.convolution_backward(f(b), f(a), w, None, *args,
                                                   [False, True, False])
    return gw


def _reduction(desc, kind):
    kern = int(np.prod(desc.kernel_size))
    ci, co = desc.conv_input_shape, desc.conv_output_shape
    if kind == "wgrad":
        return max(desc.n * int(np.prod(co[2:])), 1)
    fwd_like = (kind == "fwd") != desc.transposed       # the convolution's own forward
    return (ci[1] if fwd_like else co[1]) // desc.groups * kern


def _check(torch, out, ref, scale, desc, kind, tf32=False, what=""):
    compute = "float64" if desc.dtype.name == "float64" else ("tf32" if tf32 else "float32")
    rtol, atol = bounds(desc.dtype.name, compute=compute, terms=_reduction(desc, kind))
    assert_close(out, ref, rtol, atol, scale=scale, what=f"{desc} {kind} {what}")


def _run(torch, plan, args):
    n = plan.workspace_size()
    ws = torch.empty(max(n, 1), dtype=torch.uint8, device="cuda")
    plan.run(args, workspace=ws)
    torch.cuda.synchronize()


def _case(desc, kinds=("fwd", "dgrad", "wgrad"), pref=None, seed=0):
    torch = _torch()
    import baracuda_dsl as bd
    from baracuda_dsl.ops.conv import (ConvArgs, ConvBackwardDataArgs, ConvBackwardDataPlan,
                                       ConvBackwardFilterArgs, ConvBackwardFilterPlan, ConvPlan)

    tf32 = pref is not None and any(getattr(t, "allow_tf32", False) for t in pref.tuning)
    dt = getattr(torch, desc.dtype.name)
    gen = torch.Generator(device="cuda").manual_seed(seed)
    L = desc.layout
    x = _rand(torch, desc.x_shape, dt, L, gen)
    w = _rand(torch, desc.w_shape, dt, L, gen)
    dy = _rand(torch, desc.y_shape, dt, L, gen)
    b = _rand(torch, (desc.k,), dt, "NCHW", gen) if desc.bias else None
    try:
        if "fwd" in kinds:
            y = _poisoned(torch, desc.y_shape, dt, L)
            plan = ConvPlan.select(desc, pref)
            _run(torch, plan, ConvArgs(x, w, y, b))
            ref = _ref(torch, desc, "fwd", x, w, b)
            scale = _ref(torch, desc, "fwd", x, w, b, absval=True)
            if desc.activation == "relu":
                ref = ref.clamp_min(0)
            _check(torch, y, ref, scale, desc, "fwd", tf32)
        if "dgrad" in kinds:
            dx = _poisoned(torch, desc.x_shape, dt, L)
            _run(torch, ConvBackwardDataPlan.select(desc, pref), ConvBackwardDataArgs(dy, w, dx))
            _check(torch, dx, _ref(torch, desc, "dgrad", dy, w),
                   _ref(torch, desc, "dgrad", dy, w, absval=True), desc, "dgrad", tf32)
        if "wgrad" in kinds:
            dw = _poisoned(torch, desc.w_shape, dt, L)
            _run(torch, ConvBackwardFilterPlan.select(desc, pref),
                 ConvBackwardFilterArgs(x, dy, dw))
            _check(torch, dw, _ref(torch, desc, "wgrad", x, dy),
                   _ref(torch, desc, "wgrad", x, dy, absval=True), desc, "wgrad", tf32)
    except bd.UnsupportedError as e:
        if desc.dtype.name == "float64":
            pytest.skip(f"cuDNN has no float64 engine here: {e}")
        raise


def _desc(**kw):
    from baracuda_dsl.ops.conv import ConvDescriptor

    base = dict(spatial=2, n=2, c=8, k=16, in_size=(12, 13), kernel_size=3, padding=1)
    base.update(kw)
    return ConvDescriptor(**base)


# ------------------------------------------------------------------------------ the matrix
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_conv2d_basic(dtype, layout):
    _case(_desc(dtype=dtype, layout=layout))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("kw", [
    dict(stride=2), dict(stride=(2, 3), padding=(0, 2)), dict(dilation=2, padding=2),
    dict(groups=4), dict(c=16, k=16, groups=16),                        # depthwise
    dict(kernel_size=1, padding=0), dict(kernel_size=(5, 3), padding=(2, 0), in_size=(7, 9)),
    dict(n=1, c=3, k=5, in_size=(17, 11), kernel_size=(7, 5), stride=2, padding=3)])
def test_conv2d_geometry(dtype, layout, kw):
    _case(_desc(dtype=dtype, layout=layout, **kw))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("spatial,in_size,kw", [
    (1, (37,), dict(kernel_size=5, padding=2, stride=2)), (1, (64,), dict(groups=8, c=8, k=8)),
    (3, (6, 7, 5), dict(kernel_size=3, padding=1)), (3, (8, 8, 8), dict(stride=2, dilation=1))])
def test_conv_1d_3d(dtype, layout, spatial, in_size, kw):
    _case(_desc(spatial=spatial, in_size=in_size, dtype=dtype, layout=layout, **kw))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("kw", [
    dict(), dict(stride=2, output_padding=1), dict(stride=3, padding=2, output_padding=2),
    dict(groups=4, stride=2), dict(dilation=2, padding=1),
    dict(spatial=1, in_size=(19,), stride=2, output_padding=1),
    dict(spatial=3, in_size=(4, 5, 6), stride=2)])
def test_conv_transpose(dtype, layout, kw):
    _case(_desc(transposed=True, dtype=dtype, layout=layout, **kw))


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("transposed", [False, True])
def test_float64(layout, transposed):
    _case(_desc(dtype="float64", layout=layout, transposed=transposed))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("act", [None, "relu"])
@pytest.mark.parametrize("transposed", [False, True])
def test_bias_relu(dtype, layout, act, transposed):
    _case(_desc(dtype=dtype, layout=layout, bias=True, activation=act, transposed=transposed),
          kinds=("fwd",))


def test_relu_without_bias():
    _case(_desc(dtype="bfloat16", layout="NHWC", activation="relu"), kinds=("fwd",))


def test_tf32_and_deterministic():
    import baracuda_dsl as bd
    from baracuda_dsl.ops.conv import ConvTuning

    _case(_desc(dtype="float32", layout="NHWC", c=32, k=32),
          pref=bd.PlanPreference(tuning=ConvTuning(allow_tf32=True)))
    _case(_desc(dtype="bfloat16", layout="NHWC"),
          pref=bd.PlanPreference(tuning=ConvTuning(deterministic=True)))


def test_empty_batch():
    torch = _torch()
    from baracuda_dsl.ops.conv import ConvBackwardFilterArgs, ConvBackwardFilterPlan

    d = _desc(n=0, dtype="float16")
    _case(d, kinds=("fwd", "dgrad"))
    dw = _poisoned(torch, d.w_shape, torch.float16, "NCHW")
    x = torch.empty(d.x_shape, dtype=torch.float16, device="cuda")
    dy = torch.empty(d.y_shape, dtype=torch.float16, device="cuda")
    _run(torch, ConvBackwardFilterPlan.select(d), ConvBackwardFilterArgs(x, dy, dw))
    assert bool((dw == 0).all()), "an empty batch must give a zero filter gradient"


def test_workspace_too_small_and_stream():
    torch = _torch()
    import baracuda_dsl as bd
    from baracuda_dsl.ops.conv import ConvArgs, ConvPlan

    d = _desc(dtype="float16", layout="NHWC", c=64, k=64, in_size=(28, 28))
    plan = ConvPlan.select(d)
    x = _rand(torch, d.x_shape, torch.float16, "NHWC", None)
    w = _rand(torch, d.w_shape, torch.float16, "NHWC", None)
    y = _poisoned(torch, d.y_shape, torch.float16, "NHWC")
    n = plan.workspace_size()
    if n:
        with pytest.raises(bd.WorkspaceTooSmallError):
            plan.run(ConvArgs(x, w, y), workspace=torch.empty(n - 1, dtype=torch.uint8,
                                                              device="cuda"))
    s = torch.cuda.Stream()
    ws = torch.empty(max(n, 1), dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        plan.run(ConvArgs(x, w, y), stream=s.cuda_stream, workspace=ws)
    s.synchronize()
    assert bool(torch.isfinite(y.float()).all())


# ------------------------------------------------------------------------------ namespace
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("channels_last", [False, True])
def test_namespace(dtype, channels_last):
    torch = _torch()
    import array_api as xp
    from array_api import _conv_extensions as X
    import torch.nn.functional as F

    dt = getattr(torch, dtype)
    g = torch.Generator(device="cuda").manual_seed(1)
    layout = "NHWC" if channels_last else "NCHW"
    x = _rand(torch, (2, 6, 11, 10), dt, layout, g)
    w = _rand(torch, (8, 3, 4, 3), dt, "NCHW", g)        # K = 8: divisible by groups = 2
    b = _rand(torch, (8,), dt, "NCHW", g)
    X_, W_, B_ = (xp.from_dlpack(t) for t in (x, w, b))
    try:
        y = X.conv(X_, W_, B_, padding="same", groups=2)
    except Exception as e:            # noqa: BLE001
        import baracuda_dsl as bd

        if dtype == "float64" and isinstance(e, bd.UnsupportedError):
            pytest.skip(f"cuDNN has no float64 engine here: {e}")
        raise
    ref = F.conv2d(x.double(), w.double(), b.double(), padding="same", groups=2)
    sc = F.conv2d(x.double().abs(), w.double().abs(), b.double().abs(), padding="same",
                  groups=2)
    comp = "float64" if dtype == "float64" else "float32"
    rtol, atol = bounds(dtype, compute=comp, terms=3 * 12 + 1)
    assert_close(torch.from_dlpack(y), ref, rtol, atol, scale=sc, what="conv")
    # transposed
    wt = _rand(torch, (6, 4, 3, 3), dt, "NCHW", g)
    yt = X.conv_transpose(X_, xp.from_dlpack(wt), None, stride=2, padding=1, output_padding=1)
    rt = F.conv_transpose2d(x.double(), wt.double(), stride=2, padding=1, output_padding=1)
    st = F.conv_transpose2d(x.double().abs(), wt.double().abs(), stride=2, padding=1,
                            output_padding=1)
    rtol, atol = bounds(dtype, compute=comp, terms=6 * 9)
    assert_close(torch.from_dlpack(yt), rt, rtol, atol, scale=st, what="conv_transpose")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("transposed", [False, True])
def test_namespace_backward(dtype, transposed):
    torch = _torch()
    import array_api as xp
    from array_api import _conv_extensions as X
    import torch.nn.functional as F

    dt = getattr(torch, dtype)
    g = torch.Generator(device="cuda").manual_seed(2)
    x = _rand(torch, (3, 4, 9, 8), dt, "NHWC", g)
    wshape = (4, 3, 3, 3) if transposed else (6, 2, 3, 3)
    w = _rand(torch, wshape, dt, "NCHW", g)
    xr = x.double().requires_grad_()
    wr = w.double().requires_grad_()
    if transposed:
        y = F.conv_transpose2d(xr, wr, stride=2, padding=1, output_padding=1)
    else:
        y = F.conv2d(xr, wr, stride=2, padding=1, groups=2)
    gy = _rand(torch, tuple(y.shape), dt, "NHWC", g)
    y.backward(gy.double())
    kw = dict(stride=2, padding=1)
    if transposed:
        kw.update(transposed=True, output_padding=1)
    else:
        kw.update(groups=2)
    gx, gw, gb = X.conv_backward(xp.from_dlpack(gy), xp.from_dlpack(x), xp.from_dlpack(w), **kw)
    ref_b = gy.double().sum(dim=(0, 2, 3))
    # >= every reduction length here (data gradients: <= 6·9; filter gradients: N·Π(spatial)
    # <= 3·72)
    rtol, atol = bounds(dtype, compute="float32", terms=3 * 81)
    # scales: the same products on |operands|
    xa = x.double().abs().requires_grad_()
    wa = w.double().abs().requires_grad_()
    ya = (F.conv_transpose2d(xa, wa, stride=2, padding=1, output_padding=1) if transposed
          else F.conv2d(xa, wa, stride=2, padding=1, groups=2))
    ya.backward(gy.double().abs())
    assert_close(torch.from_dlpack(gx), xr.grad, rtol, atol, scale=xa.grad, what="grad_x")
    assert_close(torch.from_dlpack(gw), wr.grad, rtol, atol, scale=wa.grad, what="grad_w")
    nb = int(np.prod(gy.shape)) // gy.shape[1]
    rb, ab = bounds(dtype, compute="float32", terms=nb)
    assert_close(torch.from_dlpack(gb), ref_b, rb, ab,
                 scale=gy.double().abs().sum(dim=(0, 2, 3)), what="grad_b")
