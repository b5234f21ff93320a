"""BatchNorm / GroupNorm / InstanceNorm FW + BW on the GPU against float64 torch references
(torch.nn.functional and autograd), with running-stat updates, odd and empty shapes, poisoned
outputs, the element-wise (misaligned) path and bit-identical reruns."""

import pytest

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float16", "bfloat16", "float64"]
TOL = {"float32": 2e-5, "float16": 4e-3, "bfloat16": 2.5e-2, "float64": 1e-12}
BN_SHAPES = [(1, 3, 7), (2, 3), (7, 5), (4, 16, 5, 5), (8, 64, 33), (3, 5, 2, 3, 4),
             (16, 8, 1000), (2, 4, 4097), (32, 3)]


def _torch():
    return pytest.importorskip("torch")


def _cn():
    from baracuda_dsl.ops.normalization import channel_norm as cn

    return cn


def relerr(out, ref, floor=0.0):
    """‖out − ref‖ / max(‖ref‖, floor): ``floor`` guards references that vanish analytically
    (e.g. dx of BatchNorm with two values per channel is exactly zero)."""
    torch = _torch()
    out, ref = out.double(), ref.double()
    assert not torch.isnan(out).any(), "NaN in output (unwritten poisoned element?)"
    den = max(ref.norm().item(), floor)
    return (out - ref).norm().item() / (den if den > 0 else 1.0)


def _rand(shape, dt, seed, scale=1.5, shift=0.3):
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(shape, generator=g, device="cuda", dtype=torch.float64) * scale + shift).to(
        getattr(torch, dt))


def _nan(shape, dt):
    torch = _torch()
    return torch.full(shape, float("nan"), device="cuda", dtype=getattr(torch, dt))


def _ws(plan):
    torch = _torch()
    import baracuda_dsl as bd

    buf = torch.empty(max(plan.workspace_size(), 1), device="cuda", dtype=torch.uint8)
    return bd.Workspace(buf.data_ptr(), buf.numel(), buf)


def _sdt(dt):
    return "float64" if dt == "float64" else "float32"


# ==================================================================================== BatchNorm
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", BN_SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training(dt, shape, affine):
    torch = _torch()
    F = torch.nn.functional
    cn = _cn()
    c = shape[1]
    eps, mom = 1e-5, 0.1
    x = _rand(shape, dt, 1)
    w = _rand((c,), dt, 2) if affine else None
    b = _rand((c,), dt, 3) if affine else None
    rm = _rand((c,), dt, 4, 0.5, 0.0)
    rv = _rand((c,), dt, 5, 0.2, 1.0).abs()
    rm_ref, rv_ref = rm.double().clone(), rv.double().clone()
    y = _nan(shape, dt)
    sm, sr = _nan((c,), _sdt(dt)), _nan((c,), _sdt(dt))
    plan = cn.BatchNormPlan.select(cn.BatchNormDescriptor(shape, dt, eps, mom, True, affine,
                                                          affine, True))
    plan.run(cn.BatchNormArgs(x, y, w, b, rm, rv, sm, sr), workspace=_ws(plan))
    torch.cuda.synchronize()
    yr = F.batch_norm(x.double(), rm_ref, rv_ref, w.double() if affine else None,
                      b.double() if affine else None, True, mom, eps)
    assert relerr(y, yr) < TOL[dt]
    dims = [0] + list(range(2, len(shape)))
    xd = x.double()
    stat_tol = 1e-12 if dt == "float64" else 1e-5
    assert relerr(sm, xd.mean(dims)) < stat_tol
    assert relerr(sr, torch.rsqrt(xd.var(dims, unbiased=False) + eps)) < stat_tol
    rtol = 1e-12 if dt == "float64" else (1e-5 if dt == "float32" else 1e-2)
    assert relerr(rm, rm_ref) < rtol and relerr(rv, rv_ref) < rtol


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_batch_norm_f32_params_with_half_input(dt):
    torch = _torch()
    F = torch.nn.functional
    cn = _cn()
    shape = (6, 12, 9, 9)
    x = _rand(shape, dt, 6)
    w, b = _rand((12,), "float32", 7), _rand((12,), "float32", 8)
    rm, rv = torch.zeros(12, device="cuda"), torch.ones(12, device="cuda")
    rm_ref, rv_ref = rm.double().clone(), rv.double().clone()
    y = _nan(shape, dt)
    plan = cn.BatchNormPlan.select(cn.BatchNormDescriptor(shape, dt, param_dtype="float32"))
    plan.run(cn.BatchNormArgs(x, y, w, b, rm, rv), workspace=_ws(plan))
    torch.cuda.synchronize()
    yr = F.batch_norm(x.double(), rm_ref, rv_ref, w.double(), b.double(), True, 0.1, 1e-5)
    assert relerr(y, yr) < TOL[dt]
    assert relerr(rm, rm_ref) < 1e-5 and relerr(rv, rv_ref) < 1e-5


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3), (4, 16, 5, 5), (1, 3, 7)])
def test_batch_norm_inference(dt, shape):
    torch = _torch()
    F = torch.nn.functional
    cn = _cn()
    c = shape[1]
    x = _rand(shape, dt, 9)
    w, b = _rand((c,), dt, 10), _rand((c,), dt, 11)
    rm = _rand((c,), dt, 12, 0.5, 0.0)
    rv = _rand((c,), dt, 13, 0.2, 1.0).abs()
    rm0, rv0 = rm.clone(), rv.clone()
    y = _nan(shape, dt)
    plan = cn.BatchNormPlan.select(cn.BatchNormDescriptor(shape, dt, 1e-3, 0.1, False))
    plan.run(cn.BatchNormArgs(x, y, w, b, rm, rv), workspace=_ws(plan))
    torch.cuda.synchronize()
    yr = F.batch_norm(x.double(), rm.double(), rv.double(), w.double(), b.double(), False,
                      0.1, 1e-3)
    assert relerr(y, yr) < TOL[dt]
    assert torch.equal(rm, rm0) and torch.equal(rv, rv0)  # inference leaves running stats alone


def test_batch_norm_no_running_stats_uses_batch_stats():
    torch = _torch()
    F = torch.nn.functional
    cn = _cn()
    shape = (5, 4, 6)
    x = _rand(shape, "float32", 14)
    y = _nan(shape, "float32")
    plan = cn.BatchNormPlan.select(cn.BatchNormDescriptor(shape, "f32", training=False,
                                                          has_weight=False, has_bias=False,
                                                          track_running_stats=False))
    plan.run(cn.BatchNormArgs(x, y), workspace=_ws(plan))
    torch.cuda.synchronize()
    assert relerr(y, F.batch_norm(x.double(), None, None, None, None, True, 0.1, 1e-5)) < 2e-5


def test_batch_norm_large_mean_is_stable():
    """Data with mean 1e4 and std 1: a naive E[x²]−E[x]² in f32 would lose every digit."""
    torch = _torch()
    F = torch.nn.functional
    cn = _cn()
    shape = (64, 8, 257)
    x = _rand(shape, "float32", 15, 1.0, 1.0e4)
    y = _nan(shape, "float32")
    sr = _nan((8,), "float32")
    plan = cn.BatchNormPlan.select(cn.BatchNormDescriptor(shape, "f32", has_weight=False,
                                                          has_bias=False,
                                                          track_running_stats=False))
    plan.run(cn.BatchNormArgs(x, y, save_rstd=sr), workspace=_ws(plan))
    torch.cuda.synchronize()
    xd = x.double()
    assert relerr(sr, torch.rsqrt(xd.var((0, 2), unbiased=False) + 1e-5)) < 1e-4
    # the f32 mean itself is only good to half an ulp of 1e4 (~5e-4): y can be no better
    assert relerr(y, F.batch_norm(xd, None, None, None, None, True, 0.1, 1e-5)) < 2e-3


def test_batch_norm_empty_batch_and_reruns():
    torch = _torch()
    cn = _cn()
    plan = cn.BatchNormPlan.select(cn.BatchNormDescriptor((0, 3, 4), "f32"))
    rm, rv = torch.zeros(3, device="cuda"), torch.ones(3, device="cuda")
    x = torch.empty((0, 3, 4), device="cuda")
    plan.run(cn.BatchNormArgs(x, torch.empty_like(x), torch.ones(3, device="cuda"),
                              torch.zeros(3, device="cuda"), rm, rv), workspace=_ws(plan))
    torch.cuda.synchronize()
    assert (rm == 0).all() and (rv == 1).all()
    # bit-identical reruns (same workspace / fresh outputs)
    shape = (33, 16, 129)
    x = _rand(shape, "bfloat16", 16)
    plan = cn.BatchNormPlan.select(cn.BatchNormDescriptor(shape, "bf16", has_weight=False,
                                                          has_bias=False,
                                                          track_running_stats=False))
    ws = _ws(plan)
    outs = []
    for _ in range(3):
        y = torch.empty_like(x)
        plan.run(cn.BatchNormArgs(x, y), workspace=ws)
        outs.append(y)
    torch.cuda.synchronize()
    assert torch.equal(outs[0], outs[1]) and torch.equal(outs[1], outs[2])


def test_misaligned_and_errors():
    torch = _torch()
    F = torch.nn.functional
    cn = _cn()
    import baracuda_dsl as bd

    # x starting at an odd element offset: the element-wise path
    flat = _rand((4 * 6 * 16 + 1,), "float32", 17)
    x = flat[1:].view(4, 6, 16)
    y = _nan((4, 6, 16), "float32")
    plan = cn.GroupNormPlan.select(cn.GroupNormDescriptor((4, 6, 16), 3, "f32",
                                                          has_weight=False, has_bias=False))
    plan.run(cn.GroupNormArgs(x, y), workspace=_ws(plan))
    torch.cuda.synchronize()
    assert relerr(y, F.group_norm(x.double(), 3, eps=1e-5)) < 2e-5
    with pytest.raises(bd.UnsupportedError):  # non-contiguous x
        xt = _rand((4, 16, 6), "float32", 18).transpose(1, 2)
        plan.run(cn.GroupNormArgs(xt, y), workspace=_ws(plan))
    with pytest.raises(bd.WorkspaceTooSmallError):
        plan.run(cn.GroupNormArgs(x, y))
    with pytest.raises(bd.DeviceMismatchError):
        plan.run(cn.GroupNormArgs(x.cpu(), y), workspace=_ws(plan))


# ========================================================================= Group / InstanceNorm
GN_CASES = [((1, 3, 7), 3), ((2, 6, 5, 5), 2), ((4, 32, 33), 8), ((3, 8, 1), 4), ((2, 4, 4097), 1),
            ((5, 16, 3, 3, 3), 16), ((0, 4, 5), 2), ((8, 64, 16, 16), 32)]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape,groups", GN_CASES)
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_forward(dt, shape, groups, affine):
    torch = _torch()
    F = torch.nn.functional
    cn = _cn()
    n, c = shape[:2]
    x = _rand(shape, dt, 20)
    w = _rand((c,), dt, 21) if affine else None
    b = _rand((c,), dt, 22) if affine else None
    y = _nan(shape, dt)
    mean, rstd = _nan((n, groups), _sdt(dt)), _nan((n, groups), _sdt(dt))
    plan = cn.GroupNormPlan.select(cn.GroupNormDescriptor(shape, groups, dt, 1e-5, affine, affine))
    plan.run(cn.GroupNormArgs(x, y, w, b, mean, rstd), workspace=_ws(plan))
    torch.cuda.synchronize()
    if x.numel() == 0:
        return
    xd = x.double()
    yr = F.group_norm(xd, groups, w.double() if affine else None, b.double() if affine else None,
                      1e-5)
    assert relerr(y, yr) < TOL[dt]
    xg = xd.reshape(n, groups, -1)
    stat_tol = 1e-12 if dt == "float64" else 1e-5
    assert relerr(mean, xg.mean(2)) < stat_tol
    assert relerr(rstd, torch.rsqrt(xg.var(2, unbiased=False) + 1e-5)) < stat_tol


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape,groups", [((2, 8, 9, 9), 4), ((2, 64, 64, 64), 2),
                                          ((3, 6, 16, 16), 3)])
def test_group_norm_forward_f32_params_and_long_rows(dt, shape, groups):
    """Half inputs with f32 weight/bias (param_dtype), odd and long rows ((C/G)·S = 131072 takes
    the cluster SKU on sm90a), and an unaligned input view (generic SKU)."""
    torch = _torch()
    F = torch.nn.functional
    cn = _cn()
    n, c = shape[:2]
    w = _rand((c,), "float32", 31)
    b = _rand((c,), "float32", 32)
    plan = cn.GroupNormPlan.select(cn.GroupNormDescriptor(shape, groups, dt, 1e-5, True, True,
                                                          param_dtype="float32"))
    numel = 1
    for d in shape:
        numel *= d
    for offset in (0, 1):  # offset 1: x and y start off a 16-byte boundary
        xb = _rand((numel + offset,), dt, 30)
        x = xb[offset:].view(shape)
        yb = _nan((numel + offset,), dt)
        y = yb[offset:].view(shape)
        mean, rstd = _nan((n, groups), "float32"), _nan((n, groups), "float32")
        plan.run(cn.GroupNormArgs(x, y, w, b, mean, rstd), workspace=_ws(plan))
        torch.cuda.synchronize()
        xd = x.double()
        yr = F.group_norm(xd, groups, w.double(), b.double(), 1e-5)
        assert relerr(y, yr) < TOL[dt]
        xg = xd.reshape(n, groups, -1)
        assert relerr(rstd, torch.rsqrt(xg.var(2, unbiased=False) + 1e-5)) < 1e-5
        assert relerr(mean, xg.mean(2)) < 1e-5


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(1, 3, 7), (4, 8, 5, 5), (2, 16, 4097)])
def test_instance_norm_forward(dt, shape):
    torch = _torch()
    F = torch.nn.functional
    cn = _cn()
    c = shape[1]
    x = _rand(shape, dt, 23)
    w, b = _rand((c,), dt, 24), _rand((c,), dt, 25)
    y = _nan(shape, dt)
    plan = cn.InstanceNormPlan.select(cn.InstanceNormDescriptor(shape, dt, 1e-5, True, True))
    plan.run(cn.InstanceNormArgs(x, y, w, b), workspace=_ws(plan))
    torch.cuda.synchronize()
    yr = F.instance_norm(x.double(), weight=w.double(), bias=b.double(), eps=1e-5)
    assert relerr(y, yr) < TOL[dt]


# ==================================================================================== backward
def _bw_tol(dt):
    return 1e-9 if dt == "float64" else TOL[dt] * 2


def _check_grads(dx, dw, db, grads, dt, affine, scale=0.0):
    """``scale``: magnitude of the terms dx is formed from (‖dy·w‖·max rstd); dx is compared
    relative to max(‖dx_ref‖, 0.1·scale)."""
    tol = _bw_tol(dt)
    assert relerr(dx, grads[0], 0.1 * scale) < tol
    if affine:
        assert relerr(dw, grads[1]) < tol
        assert relerr(db, grads[2]) < tol


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", BN_SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_backward_training(dt, shape, affine):
    torch = _torch()
    F = torch.nn.functional
    cn = _cn()
    c = shape[1]
    eps = 1e-5
    x = _rand(shape, dt, 30)
    dy = _rand(shape, dt, 31)
    w = _rand((c,), dt, 32) if affine else None
    dims = [0] + list(range(2, len(shape)))
    xd0 = x.double()
    sdt = getattr(torch, _sdt(dt))
    sm = xd0.mean(dims).to(sdt)
    sr = torch.rsqrt(xd0.var(dims, unbiased=False) + eps).to(sdt)
    dx = _nan(shape, dt)
    dw, db = _nan((c,), dt), _nan((c,), dt)
    plan = cn.BatchNormBackwardPlan.select(cn.BatchNormBackwardDescriptor(shape, dt, eps, True,
                                                                          affine))
    args = cn.BatchNormBackwardArgs(dy, x, dx, w, sm, sr, dweight=dw, dbias=db)
    ws = _ws(plan)
    plan.run(args, workspace=ws)
    torch.cuda.synchronize()
    xd = x.double().requires_grad_(True)
    wd = (w.double() if affine else torch.ones(c, device="cuda", dtype=torch.float64)
          ).requires_grad_(True)
    bd_ = torch.zeros(c, device="cuda", dtype=torch.float64, requires_grad=True)
    yd = F.batch_norm(xd, None, None, wd, bd_, True, 0.1, eps)
    grads = torch.autograd.grad(yd, (xd, wd, bd_), dy.double())
    scale = (dy.double() * wd.detach().reshape(1, c, *([1] * (len(shape) - 2)))).norm().item() * \
        sr.double().max().item()
    _check_grads(dx, dw, db, grads, dt, True, scale)
    dx1, dw1, db1 = dx.clone(), dw.clone(), db.clone()
    plan.run(args, workspace=ws)
    torch.cuda.synchronize()
    assert torch.equal(dx, dx1) and torch.equal(dw, dw1) and torch.equal(db, db1)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3), (4, 16, 5, 5), (1, 3, 7)])
def test_batch_norm_backward_inference(dt, shape):
    torch = _torch()
    F = torch.nn.functional
    cn = _cn()
    c = shape[1]
    eps = 1e-3
    x, dy = _rand(shape, dt, 33), _rand(shape, dt, 34)
    w = _rand((c,), dt, 35)
    rm = _rand((c,), dt, 36, 0.5, 0.0)
    rv = _rand((c,), dt, 37, 0.2, 1.0).abs()
    dx = _nan(shape, dt)
    dw, db = _nan((c,), dt), _nan((c,), dt)
    plan = cn.BatchNormBackwardPlan.select(cn.BatchNormBackwardDescriptor(shape, dt, eps, False))
    plan.run(cn.BatchNormBackwardArgs(dy, x, dx, w, running_mean=rm, running_var=rv, dweight=dw,
                                      dbias=db), workspace=_ws(plan))
    torch.cuda.synchronize()
    xd = x.double().requires_grad_(True)
    wd = w.double().requires_grad_(True)
    bd_ = torch.zeros(c, device="cuda", dtype=torch.float64, requires_grad=True)
    yd = F.batch_norm(xd, rm.double(), rv.double(), wd, bd_, False, 0.1, eps)
    grads = torch.autograd.grad(yd, (xd, wd, bd_), dy.double())
    _check_grads(dx, dw, db, grads, dt, True)


def test_batch_norm_backward_empty_writes_zero_grads():
    torch = _torch()
    cn = _cn()
    plan = cn.BatchNormBackwardPlan.select(cn.BatchNormBackwardDescriptor((0, 3, 4), "f32"))
    e = torch.empty((0, 3, 4), device="cuda")
    dw, db = _nan((3,), "float32"), _nan((3,), "float32")
    plan.run(cn.BatchNormBackwardArgs(e, e, torch.empty_like(e), torch.ones(3, device="cuda"),
                                      _nan((3,), "float32"), _nan((3,), "float32"), dweight=dw,
                                      dbias=db), workspace=_ws(plan))
    torch.cuda.synchronize()
    assert (dw == 0).all() and (db == 0).all()


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape,groups", GN_CASES)
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_backward(dt, shape, groups, affine):
    torch = _torch()
    F = torch.nn.functional
    cn = _cn()
    n, c = shape[:2]
    eps = 1e-5
    x, dy = _rand(shape, dt, 40), _rand(shape, dt, 41)
    w = _rand((c,), dt, 42) if affine else None
    sdt = getattr(torch, _sdt(dt))
    if x.numel():
        xg = x.double().reshape(n, groups, -1)
        mean = xg.mean(2).to(sdt)
        rstd = torch.rsqrt(xg.var(2, unbiased=False) + eps).to(sdt)
    else:
        mean, rstd = _nan((n, groups), _sdt(dt)), _nan((n, groups), _sdt(dt))
    dx = _nan(shape, dt)
    dw, db = _nan((c,), dt), _nan((c,), dt)
    plan = cn.GroupNormBackwardPlan.select(cn.GroupNormBackwardDescriptor(shape, groups, dt,
                                                                          affine))
    args = cn.GroupNormBackwardArgs(dy, x, mean, rstd, dx, w, dw, db)
    ws = _ws(plan)
    plan.run(args, workspace=ws)
    torch.cuda.synchronize()
    if x.numel() == 0:
        assert (dw == 0).all() and (db == 0).all()
        return
    xd = x.double().requires_grad_(True)
    wd = (w.double() if affine else torch.ones(c, device="cuda", dtype=torch.float64)
          ).requires_grad_(True)
    bd_ = torch.zeros(c, device="cuda", dtype=torch.float64, requires_grad=True)
    yd = F.group_norm(xd, groups, wd, bd_, eps)
    grads = torch.autograd.grad(yd, (xd, wd, bd_), dy.double())
    scale = (dy.double() * wd.detach().reshape(1, c, *([1] * (len(shape) - 2)))).norm().item() * \
        rstd.double().max().item()
    _check_grads(dx, dw, db, grads, dt, True, scale)
    dx1, dw1 = dx.clone(), dw.clone()
    plan.run(args, workspace=ws)
    torch.cuda.synchronize()
    assert torch.equal(dx, dx1) and torch.equal(dw, dw1)


@pytest.mark.parametrize("dt", ["float32", "bfloat16", "float64"])
def test_instance_norm_backward(dt):
    torch = _torch()
    F = torch.nn.functional
    cn = _cn()
    shape = (3, 8, 5, 7)
    n, c = shape[:2]
    eps = 1e-5
    x, dy = _rand(shape, dt, 50), _rand(shape, dt, 51)
    w = _rand((c,), dt, 52)
    sdt = getattr(torch, _sdt(dt))
    xr = x.double().reshape(n, c, -1)
    mean = xr.mean(2).to(sdt)
    rstd = torch.rsqrt(xr.var(2, unbiased=False) + eps).to(sdt)
    dx = _nan(shape, dt)
    dw, db = _nan((c,), dt), _nan((c,), dt)
    plan = cn.InstanceNormBackwardPlan.select(cn.InstanceNormBackwardDescriptor(shape, dt, True))
    plan.run(cn.InstanceNormBackwardArgs(dy, x, mean, rstd, dx, w, dw, db), workspace=_ws(plan))
    torch.cuda.synchronize()
    xd = x.double().requires_grad_(True)
    wd = w.double().requires_grad_(True)
    bd_ = torch.zeros(c, device="cuda", dtype=torch.float64, requires_grad=True)
    yd = F.instance_norm(xd, weight=wd, bias=bd_, eps=eps)
    grads = torch.autograd.grad(yd, (xd, wd, bd_), dy.double())
    _check_grads(dx, dw, db, grads, dt, True)


def test_forward_backward_roundtrip_saved_stats():
    """Saved mean / rstd from our forward feed our backward (the usual training step)."""
    torch = _torch()
    F = torch.nn.functional
    cn = _cn()
    shape = (8, 32, 14, 14)
    x, dy = _rand(shape, "float32", 60), _rand(shape, "float32", 61)
    w, b = _rand((32,), "float32", 62), _rand((32,), "float32", 63)
    y = _nan(shape, "float32")
    sm, sr = _nan((32,), "float32"), _nan((32,), "float32")
    rm, rv = torch.zeros(32, device="cuda"), torch.ones(32, device="cuda")
    fp = cn.BatchNormPlan.select(cn.BatchNormDescriptor(shape, "f32"))
    fp.run(cn.BatchNormArgs(x, y, w, b, rm, rv, sm, sr), workspace=_ws(fp))
    dx = _nan(shape, "float32")
    dw, db = _nan((32,), "float32"), _nan((32,), "float32")
    bp = cn.BatchNormBackwardPlan.select(cn.BatchNormBackwardDescriptor(shape, "f32"))
    bp.run(cn.BatchNormBackwardArgs(dy, x, dx, w, sm, sr, dweight=dw, dbias=db),
           workspace=_ws(bp))
    torch.cuda.synchronize()
    xd = x.double().requires_grad_(True)
    wd = w.double().requires_grad_(True)
    bd_ = b.double().requires_grad_(True)
    yd = F.batch_norm(xd, None, None, wd, bd_, True, 0.1, 1e-5)
    grads = torch.autograd.grad(yd, (xd, wd, bd_), dy.double())
    assert relerr(y, yd.detach()) < 2e-5
    _check_grads(dx, dw, db, grads, "float32", True)
