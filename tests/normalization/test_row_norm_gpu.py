"""RMSNorm / LayerNorm FW + BW on the GPU against float64 torch references (autograd for BW).

Every element is checked (tests/_checks.py) against NaN-poisoned outputs — a norm-only check
passes a row of 4097 with one zeroed element; see :func:`check_forward` / :func:`check_backward`
for the bounds (the output dtype's rounding relative to each result, the f32 / f64 math's
rounding relative to the magnitude of the terms, row sums of depth :func:`row_depth`)."""

import pytest

from tests._checks import assert_within, bounds, eps

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float16", "bfloat16", "float64"]
#: math dtype; saved statistics are stored in it too
CT = {"float32": "float32", "float16": "float32", "bfloat16": "float32", "float64": "float64"}
SHAPES = [((1, 1), 1), ((7, 33), 1), ((5, 256), 1), ((3, 1000), 1), ((4, 4097), 1),
          ((2, 3, 8, 16), 2), ((2, 4096), 1), ((3, 40000), 1), ((2, 100000), 1),
          ((2, 300001), 1), ((0, 64), 1), ((6, 0), 1)]


def _torch():
    return pytest.importorskip("torch")


def row_depth(n):
    """Most rounded adds on a path of a row reduction of the row engine (common/rows.py,
    blocks/reduction_base.py): a thread folds its register vectors (<= 64 elements) or, in loop
    mode, every tpr-th element (tpr >= 256: <= ceil(n/256)), then 5 shuffle levels, up to 32 warp
    partials and 8 cluster partials in order.  Never more than n.  A sum of depth d errs by
    <= d·u·Σ|terms|."""
    return max(1, min(n, max(64, -(-n // 256)) + 45))


_check = assert_within   # rel per element + the op's own error bound abs_err


def _rand(shape, dt, seed=0):
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(shape, generator=g, device="cuda", dtype=torch.float64) * 1.5 + 0.3).to(
        getattr(torch, dt))


def _ref_norm(op, x, k, w, b, eps):
    torch = _torch()
    dims = tuple(range(x.dim() - k, x.dim()))
    xd = x.double()
    if op == "rms":
        rstd = torch.rsqrt(xd.pow(2).mean(dim=dims, keepdim=True) + eps)
        y = xd * rstd
        mean = None
    else:
        mean = xd.mean(dim=dims, keepdim=True)
        var = (xd - mean).pow(2).mean(dim=dims, keepdim=True)
        rstd = torch.rsqrt(var + eps)
        y = (xd - mean) * rstd
    if w is not None:
        y = y * w.double()
    if b is not None:
        y = y + b.double()
    return y, mean, rstd


def check_forward(op, y, x, k, w, b, eps_, dt, rstd=None, mean=None, what=""):
    """y (and the saved rstd / mean) of ``op`` vs float64, per element.  d = row_depth(N),
    u = eps(compute):

    * the row statistics: Σx² (RMS) or Σ(x − mean)² (LN, two passes) are sums of positive terms
      (d·u relative), then / N, + eps and rsqrt: rstd is (d/2 + 3)·u relative; LN's mean errs by
      d·u·mean|x| (absolute);
    * RMS: y = x·rstd·w has no cancellation: (d/2 + 5)·u relative beyond the output rounding;
    * LN: y = (x − mean)·rstd·w + b: (d/2 + 7)·u relative to |x̂·w|, the mean's error times
      rstd·|w| (and the subtraction's rounding: (d + 2)·u·rstd·|w|·mean|x|), 2u·|b|."""
    xd = x.double()
    n = 1
    for s_ in x.shape[x.dim() - k:]:
        n *= s_
    d = row_depth(n)
    u = eps(CT[dt])
    yr, mr, rr = _ref_norm(op, x, k, w, b, eps_)
    dims = tuple(range(x.dim() - k, x.dim()))
    wd = w.double() if w is not None else 1.0
    if op == "rms":
        _check(y, yr, dt, bounds(dt, compute=CT[dt], terms=d / 2 + 5)[0], 0.0, what)
    else:
        xh = (xd - mr) * rr
        amean = xd.abs().mean(dim=dims, keepdim=True)
        bd_ = b.double().abs() if b is not None else 0.0
        err = u * ((d / 2 + 7) * (xh * wd).abs() + (d + 2) * rr * abs(wd) * amean + 2 * bd_)
        _check(y, yr, dt, bounds(dt)[0], err, what)
    if rstd is not None:
        _check(rstd, rr.reshape(-1), CT[dt], bounds(CT[dt], compute=CT[dt], terms=d / 2 + 3)[0],
               0.0, (what, "rstd"))
    if mean is not None:
        amean = xd.abs().mean(dim=dims)
        _check(mean, mr.reshape(-1), CT[dt], bounds(CT[dt])[0], d * u * amean.reshape(-1),
               (what, "mean"))


@pytest.mark.parametrize("op", ["rms", "ln"])
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape,k", SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_forward(op, dt, shape, k, affine):
    torch = _torch()
    import baracuda_dsl as bd

    eps = 1e-5
    x = _rand(shape, dt, 1)
    pshape = shape[len(shape) - k:]
    w = _rand(pshape, dt, 2) if affine else None
    b = _rand(pshape, dt, 3) if (affine and op == "ln") else None
    y = torch.full(shape, float("nan"), device="cuda", dtype=getattr(torch, dt))
    sdt = torch.float64 if dt == "float64" else torch.float32
    m = 1
    for s in shape[:len(shape) - k]:
        m *= s
    rstd = torch.full((m,), float("nan"), device="cuda", dtype=sdt)
    mean = torch.full((m,), float("nan"), device="cuda", dtype=sdt)
    if op == "rms":
        plan = bd.RMSNormPlan.select(bd.RMSNormDescriptor(shape, k, dt, eps, affine))
        plan.run(bd.RMSNormArgs(x, y, w, rstd))
    else:
        plan = bd.LayerNormPlan.select(bd.LayerNormDescriptor(shape, k, dt, eps, affine, affine))
        plan.run(bd.LayerNormArgs(x, y, w, b, mean, rstd))
    torch.cuda.synchronize()
    if x.numel() == 0:
        return
    check_forward(op, y, x, k, w, b, eps, dt, rstd, mean if op == "ln" else None,
                  (op, dt, shape, affine))


@pytest.mark.parametrize("op", ["rms", "ln"])
@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
def test_forward_strided_views(op, dt):
    """Batch dims with arbitrary strides (slices, transposes) and a misaligned (generic) path."""
    torch = _torch()
    import baracuda_dsl as bd

    base = _rand((6, 10, 512), dt, 4)
    x = base[::2].transpose(0, 1)  # (10, 3, 512), non-collapsible batch strides
    y_base = torch.full((3, 10, 512), float("nan"), device="cuda", dtype=getattr(torch, dt))
    y = y_base.transpose(0, 1)
    w = _rand((512,), dt, 5)
    if op == "rms":
        bd.RMSNormPlan.select(bd.RMSNormDescriptor(tuple(x.shape), 1, dt, 1e-6, True)).run(
            bd.RMSNormArgs(x, y, w))
    else:
        bd.LayerNormPlan.select(bd.LayerNormDescriptor(tuple(x.shape), 1, dt, 1e-6, True, False)
                                ).run(bd.LayerNormArgs(x, y, w))
    check_forward(op, y, x, 1, w, None, 1e-6, dt, what="strided")
    # misaligned: rows start at an odd element offset -> generic SKU
    flat = _rand((4 * 301 + 1,), dt, 6)
    xm = flat[1:].view(4, 301)
    ym = torch.full((4, 301), float("nan"), device="cuda", dtype=getattr(torch, dt))
    desc = bd.RMSNormDescriptor((4, 301), 1, dt, 1e-6, False)
    if op == "rms":
        bd.RMSNormPlan.select(desc).run(bd.RMSNormArgs(xm, ym))
    else:
        bd.LayerNormPlan.select(bd.LayerNormDescriptor((4, 301), 1, dt, 1e-6, False, False)).run(
            bd.LayerNormArgs(xm, ym))
    check_forward(op, ym, xm, 1, None, None, 1e-6, dt, what="misaligned")


BW_SHAPES = [((1, 1), 1), ((7, 33), 1), ((3, 1000), 1), ((64, 4096), 1), ((2, 3, 8, 16), 2),
             ((3, 9000), 1), ((5, 40000), 1), ((300, 20000), 1), ((2, 70000), 1), ((1000, 256), 1),
             ((0, 64), 1)]


def check_backward(op, dx, dw, db, grads, x, dy, w, k, mr, rr, dt, what=""):
    """dx / dw / db vs float64 autograd from the same inputs; the kernel reads the saved rstd
    (and mean) rounded to the stats dtype (es = eps(stats)).  With g = dy·w, x̂ = the normalised
    x, d = row_depth(N), M rows, u = eps(compute):

    * x̂ itself: the kernel forms fl(fl(x − mean_s)·rstd_s) from the saved mean_s = mean·(1 ± es/2)
      and rstd_s = rstd·(1 ± es/2): the subtraction and the product round (u/2 each, relative to
      |x − mean| <= |x| + |mean|), the rstd rounding adds es/2 of the same, and the mean's
      rounding es/2·|mean|·rstd — which is NOT relative to |x̂| (x next to the mean gives a tiny
      x̂ with the same absolute error).  So |Δx̂_i| <= (u + es)·a_i, a_i = rstd·(|x_i| + |mean|)
      (RMS: mean = 0, a = |x̂|, relative as usual).
    * dx = rstd·(g − [LN: mean(g)] − x̂·mean(g·x̂)) cancels: relative to
      m_i = rstd·(|g_i| + [LN: mean|g|] + |x̂_i|·mean|g·x̂|) — the row means (d·u), the products
      and differences, the final rstd_s: ((d + 8)·u + es)·m_i; plus x̂'s own error carried through
      x̂_i·mean(g·x̂): (u + es)·rstd·(a_i·mean|g·x̂| + |x̂_i|·mean(|g|·a)).
      (A row of N = 1 cancels completely.)
    * dw = Σ_rows dy·x̂ (M rows: a sum over few rows cancels, so x̂'s absolute error matters):
      (M + 3)·u relative to Σ|dy·x̂| (products, partial rows, column sum) plus
      (u + es)·Σ|dy|·a (x̂'s error); db = Σ_rows dy: M·u relative to Σ|dy| (no x̂)."""
    xd, dyd = x.double(), dy.double()
    n = 1
    for s_ in x.shape[x.dim() - k:]:
        n *= s_
    m = x.numel() // n
    d = row_depth(n)
    u, es = eps(CT[dt]), eps(CT[dt])
    dims = tuple(range(x.dim() - k, x.dim()))
    xh = xd * rr if op == "rms" else (xd - mr) * rr
    # a: the magnitude x̂'s own error (u + es)·a is relative to (see the docstring)
    a = rr * (xd.abs() if op == "rms" else xd.abs() + mr.abs())
    g = dyd * (w.double() if w is not None else 1.0)
    gxh = (g * xh).abs().mean(dim=dims, keepdim=True)
    mag = g.abs() + xh.abs() * gxh
    if op == "ln":
        mag = mag + g.abs().mean(dim=dims, keepdim=True)
    xh_err = (u + es) * rr * (a * gxh + xh.abs() * (g.abs() * a).mean(dim=dims, keepdim=True))
    _check(dx, grads[0], dt, bounds(dt)[0], ((d + 8) * u + es) * rr * mag + xh_err,
           (what, "dx"))
    if w is not None:
        rows = tuple(range(x.dim() - k))
        _check(dw, grads[1], dt, bounds(dt)[0],
               (m + 3) * u * (dyd * xh).abs().sum(dim=rows)
               + (u + es) * (dyd.abs() * a).sum(dim=rows), (what, "dw"))
        if op == "ln":
            _check(db, grads[2], dt, bounds(dt)[0], m * u * dyd.abs().sum(dim=rows),
                   (what, "db"))


@pytest.mark.parametrize("op", ["rms", "ln"])
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape,k", BW_SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_backward(op, dt, shape, k, affine):
    torch = _torch()
    import baracuda_dsl as bd

    eps = 1e-5
    tdt = getattr(torch, dt)
    x = _rand(shape, dt, 7)
    dy = _rand(shape, dt, 8)
    pshape = shape[len(shape) - k:]
    w = _rand(pshape, dt, 9) if affine else None
    m = 1
    for s in shape[:len(shape) - k]:
        m *= s
    # saved statistics from a float64 reference (isolates the backward kernel)
    _, mr, rr = _ref_norm(op, x, k, None, None, eps)
    sdt = torch.float64 if dt == "float64" else torch.float32
    rstd = rr.reshape(-1).to(sdt).contiguous() if m else torch.empty(0, device="cuda", dtype=sdt)
    mean = (mr.reshape(-1).to(sdt).contiguous() if (op == "ln" and m) else
            torch.empty(m, device="cuda", dtype=sdt))
    dx = torch.full(shape, float("nan"), device="cuda", dtype=tdt)
    dw = torch.full(pshape, float("nan"), device="cuda", dtype=tdt) if affine else None
    db = torch.full(pshape, float("nan"), device="cuda", dtype=tdt) if (affine and op == "ln") else None
    if op == "rms":
        plan = bd.RMSNormBackwardPlan.select(bd.RMSNormBackwardDescriptor(shape, k, dt, affine))
        args = bd.RMSNormBackwardArgs(dy, x, rstd, dx, w, dw)
    else:
        plan = bd.LayerNormBackwardPlan.select(
            bd.LayerNormBackwardDescriptor(shape, k, dt, affine, affine))
        args = bd.LayerNormBackwardArgs(dy, x, mean, rstd, dx, w, dw, db)
    ws = torch.empty(max(plan.workspace_size(), 1), device="cuda", dtype=torch.uint8)
    plan.run(args, workspace=bd.Workspace(ws.data_ptr(), ws.numel()))
    torch.cuda.synchronize()
    # float64 autograd reference
    xd = x.detach().double().clone().requires_grad_(True)
    wd = w.detach().double().clone().requires_grad_(True) if affine else None
    bd_ = torch.zeros(pshape, dtype=torch.float64, device="cuda", requires_grad=True) if (
        affine and op == "ln") else None
    yd, _, _ = _ref_norm(op, xd, k, wd, bd_, eps)
    if x.numel():
        grads = torch.autograd.grad(yd, [t for t in (xd, wd, bd_) if t is not None], dy.double())
        check_backward(op, dx, dw, db, grads, x, dy, w, k, mr, rr, dt, (op, dt, shape, affine))
    elif affine:
        assert (dw.double() == 0).all()
    # deterministic: a rerun is bit-identical
    if affine and x.numel():
        dw1 = dw.clone()
        dx1 = dx.clone()
        plan.run(args, workspace=bd.Workspace(ws.data_ptr(), ws.numel()))
        torch.cuda.synchronize()
        assert torch.equal(dw1, dw) and torch.equal(dx1, dx)


def test_forward_bit_identical_reruns():
    torch = _torch()
    import baracuda_dsl as bd

    x = _rand((257, 3000), "bfloat16", 11)
    w = _rand((3000,), "bfloat16", 12)
    plan = bd.RMSNormPlan.select(bd.RMSNormDescriptor((257, 3000), 1, "bf16", 1e-6, True))
    ys = []
    for _ in range(3):
        y = torch.full_like(x, float("nan"))
        plan.run(bd.RMSNormArgs(x, y, w))
        ys.append(y)
    torch.cuda.synchronize()
    assert torch.equal(ys[0], ys[1]) and torch.equal(ys[1], ys[2])


def test_errors_before_launch():
    torch = _torch()
    import baracuda_dsl as bd

    plan = bd.RMSNormPlan.select(bd.RMSNormDescriptor((4, 64), 1, "f32", 1e-6, True))
    x = torch.randn(4, 64, device="cuda")
    y = torch.empty(4, 64, device="cuda")
    with pytest.raises(bd.InvalidProblemError):
        plan.run(bd.RMSNormArgs(x, torch.empty(4, 63, device="cuda"), torch.ones(64, device="cuda")))
    with pytest.raises(bd.UnsupportedError):
        plan.run(bd.RMSNormArgs(x.half(), y, torch.ones(64, device="cuda")))
    with pytest.raises(bd.DeviceMismatchError):
        plan.run(bd.RMSNormArgs(x.cpu(), y, torch.ones(64, device="cuda")))
    with pytest.raises(bd.InvalidProblemError):
        plan.run(bd.RMSNormArgs(x, y))  # weight missing
    bw = bd.RMSNormBackwardPlan.select(bd.RMSNormBackwardDescriptor((4, 64), 1, "f32", True))
    args = bd.RMSNormBackwardArgs(x, x, torch.ones(4, device="cuda"), y, torch.ones(64, device="cuda"),
                                  torch.empty(64, device="cuda"))
    with pytest.raises(bd.WorkspaceTooSmallError):
        bw.run(args, workspace=None)


def test_user_streams_and_events():
    """A plan runs on a torch side stream and on a cuda.core stream (handle interop), ordered by
    the stream, and our events time it."""
    torch = _torch()
    import baracuda_dsl as bd
    from baracuda_dsl import runtime

    x = _rand((512, 4096), "float32", 40)
    y = torch.full_like(x, float("nan"))
    plan = bd.RMSNormPlan.select(bd.RMSNormDescriptor((512, 4096), 1, "f32", 1e-6, False))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        start = runtime.record(side, timing=True)
        plan.run(bd.RMSNormArgs(x, y), stream=side)
        stop = runtime.record(side, timing=True)
    assert runtime.elapsed_ms(start, stop) > 0
    side.synchronize()
    check_forward("rms", y, x, 1, None, None, 1e-6, "float32", what="side stream")
    core_stream = runtime.new_stream()  # non-blocking: not ordered after torch's stream
    y2 = torch.full_like(x, float("nan"))
    torch.cuda.synchronize()  # the fill above must finish before the kernel on core_stream
    plan.run(bd.RMSNormArgs(x, y2), stream=core_stream)
    core_stream.sync()
    assert torch.equal(y, y2)
