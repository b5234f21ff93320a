"""softmax / log_softmax / sparsemax FW + BW on the GPU against float64 torch references
(autograd for BW); every register bucket, cluster and loop SKU; strided and misaligned views;
−inf / huge rows; the array_api functions.

Every element is checked (tests/_checks.py) against NaN-poisoned outputs; the bounds (see
:func:`check_softmax`, :func:`check_sparsemax`, :func:`check_backward`) are the output dtype's
rounding relative to each result plus the f32 / f64 math's rounding, with the number of rounded
adds in a row sum bounded by :func:`row_depth`; softmax rows must sum to 1 within the same
analysis (not n times a tolerance)."""

import pytest

from tests._checks import assert_within, TINY, assert_close, bounds, eps, poison

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float16", "bfloat16", "float64"]
#: math / accumulation dtype (softmax.compute_dtype)
CT = {"float32": "float32", "float16": "float32", "bfloat16": "float32", "float64": "float64"}
# row lengths spanning every bucket (512 .. 32768), the clusters (2/4/8 CTAs on sm90a: 40000,
# 70000, 262144 for two-byte / f32), the vectorised loop (300000) and the generic loop (odd N)
SHAPES = [(1, 1), (7, 33), (5, 7), (3, 1000), (4, 4097), (2, 3, 512), (3, 2048), (2, 8192),
          (2, 16384), (2, 32768), (2, 40000), (2, 70000), (1, 262144), (1, 300000), (0, 64),
          (6, 0)]


def _torch():
    return pytest.importorskip("torch")


def _rand(shape, dt, seed=0, scale=3.0):
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(shape, generator=g, device="cuda", dtype=torch.float64) * scale
            + 0.3).to(getattr(torch, dt))


def _poison(torch, shape, dt):
    return poison(torch, tuple(shape), getattr(torch, dt))


def row_depth(n):
    """Most rounded adds on a path of a row reduction of the row engine (common/rows.py,
    blocks/reduction_base.py): a thread folds its register vectors (<= 64 elements) or, in loop
    mode, every tpr-th element (tpr >= 256: <= ceil(n/256)), then 5 shuffle levels, up to 32 warp
    partials in order and up to 8 cluster partials in rank order.  Never more than n.  A sum of
    depth d errs by <= d·u·Σ|terms|."""
    return max(1, min(n, max(64, -(-n // 256)) + 45))


_check = assert_within   # rel per element + the op's own error bound abs_err


def _finite0(t):
    torch = _torch()
    return torch.where(torch.isfinite(t), t, torch.zeros_like(t))


def check_softmax(y, x, log, dt, what=""):
    """``y`` = (log_)softmax(x) along the last axis, vs float64 torch.  Per element, with
    g_i = |x_i − m| (m the row max), W = Σ_j p_j·g_j, d = :func:`row_depth` and u the compute
    epsilon: exp(x_i − m) errs by u·(2g_i + 3) relative (the rounded argument and its log2 e
    scaling, the exp), the row sum by (d + 2W + 3)·u relative (positive terms), the
    normalisation by 2u; softmax: p_i·u·(2g_i + 2W + d + 8) beyond the output rounding;
    log_softmax (x_i − m − log S, absolute): u·(g_i + |y_i| + 2W + d + 6).  Softmax rows must
    sum to 1 within eps(dt)/2 + u·(4W + d + 8) (+ n half subnormal spacings)."""
    torch = _torch()
    xd = x.double()
    n = xd.shape[-1]
    u = eps(CT[dt])
    d = row_depth(n)
    p = torch.softmax(xd, -1)
    g = _finite0((xd - xd.amax(-1, keepdim=True)).abs())
    w = torch.nan_to_num(p * g, nan=0.0).sum(-1, keepdim=True)
    if log:
        ref = torch.log_softmax(xd, -1)
        err = u * (g + _finite0(ref).abs() + 2 * w + d + 6)
    else:
        ref = p
        err = u * (2 * g + 2 * w + d + 8) * _finite0(p)
    _check(y, ref, dt, bounds(dt)[0], err, what)
    if not log:
        rows = torch.isfinite(p).all(-1)
        if rows.any():
            dev = (y.double().sum(-1) - 1).abs()[rows]
            lim = (bounds(dt)[0] + u * (4 * w.squeeze(-1) + d + 8)
                   + n * TINY[dt] * eps(dt) / 2)[rows]
            assert (dev <= lim).all(), (what, "row sums", dev.max().item(), lim.min().item())


def check_sparsemax(y, x, dt, what=""):
    """``y`` = sparsemax(x) vs the float64 sort-based reference: y = max(x − τ, 0) with
    τ = (Σ_S x − 1)/k over the support S (k elements).  τ errs by u·(d_S·Σ_S|x|/k + |τ| + 2)
    (the support sum, d_S = min(k, :func:`row_depth`); the −1 and the division), x_i − τ by one
    more rounding: abs u·(d_S·Σ_S|x|/k + |τ| + 4) per row and one relative rounding.  An
    element at the threshold may fall either side (|y| below that bound).  Rows sum to 1 within
    eps(dt)/2 + k·(that bound) (+ n half subnormal spacings); the supports agree on > 99.9 %."""
    torch = _torch()
    xd = x.double()
    n = xd.shape[-1]
    u = eps(CT[dt])
    ref = _sparsemax_ref(xd)
    sup = ref > 0
    k = sup.sum(-1, keepdim=True).clamp_min(1).double()
    xs = torch.where(sup, xd, torch.zeros_like(xd))
    tau = (xs.sum(-1, keepdim=True) - 1) / k
    mag = xs.abs().sum(-1, keepdim=True) / k
    err = u * (torch.clamp(k, max=row_depth(n)) * mag + tau.abs() + 4)
    _check(y, ref, dt, bounds(dt, compute=CT[dt], terms=1)[0], err.expand_as(ref), what)
    assert ((y.double() > 0) == sup).double().mean().item() > 0.999, what
    dev = (y.double().sum(-1) - 1).abs()
    lim = bounds(dt)[0] + (k * err).squeeze(-1) + n * TINY[dt] * eps(dt) / 2
    assert (dev <= lim).all(), (what, "row sums", dev.max().item())


def _sparsemax_ref(x, dim=-1):
    """Sort-based sparsemax in torch (differentiable through autograd)."""
    torch = _torch()
    if x.numel() == 0:
        return x * 1.0  # empty rows (or no rows): nothing to gather, keep the graph
    z, _ = torch.sort(x, dim=dim, descending=True)
    cs = z.cumsum(dim)
    n = x.shape[dim]
    shape = [1] * x.dim()
    shape[dim] = n
    ks = torch.arange(1, n + 1, device=x.device, dtype=x.dtype).view(shape)
    k = ((1 + ks * z) > cs).to(x.dtype).sum(dim=dim, keepdim=True)
    tau = (cs.gather(dim, k.long() - 1) - 1) / k
    return torch.clamp(x - tau, min=0)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_forward(dt, shape, log):
    torch = _torch()
    from baracuda_dsl.ops.softmax.softmax import SoftmaxArgs, SoftmaxDescriptor, SoftmaxPlan

    x = _rand(shape, dt, seed=len(shape) + shape[-1])
    y = _poison(torch, shape, dt)
    plan = SoftmaxPlan.select(SoftmaxDescriptor(shape, dt, -1, log))
    plan.run(SoftmaxArgs(x, y))
    if not x.numel():
        return
    check_softmax(y, x, log, dt, plan.sku())


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (7, 33), (3, 1000), (4, 4097), (2, 8192),
                                   (2, 32768), (2, 40000), (1, 100000), (0, 8), (3, 0)])
def test_sparsemax_forward(dt, shape):
    torch = _torch()
    from baracuda_dsl.ops.softmax.softmax import SparsemaxArgs, SparsemaxDescriptor, SparsemaxPlan

    x = _rand(shape, dt, seed=shape[-1], scale=2.0)
    y = _poison(torch, shape, dt)
    plan = SparsemaxPlan.select(SparsemaxDescriptor(shape, dt))
    plan.run(SparsemaxArgs(x, y))
    if not x.numel():
        return
    check_sparsemax(y, x, dt, plan.sku())


def check_backward(dx, y, dy, ref, op, dt, what=""):
    """dx of ``op`` from y rounded to ``dt`` (the kernel's input; ``y`` here: exact float64) and
    the rounded dy, vs float64 autograd on the exact y.  With d = :func:`row_depth`, u the
    compute epsilon and e = eps(dt)/2 (y's rounding, relative):

    * softmax: dx_i = y_i·(dy_i − D), D = Σ_j dy_j·y_j: relative to y_i·(|dy_i| + Σ|dy_j|·y_j)
      (cancellation in dy_i − D): (e + (d + 2)·u);
    * log_softmax: dx_i = dy_i − exp(y_i)·Σ dy: the difference rounds (2u·|dy_i|); the second
      term, relative to exp(y_i)·Σ|dy|, carries y's rounding through exp (e·|y_i|, plus e) and
      exp's rounded argument (u·(2|y_i| + 3)), the sum (d·u) and the product;
    * sparsemax: dx_i = [i ∈ S]·(dy_i − Σ_S dy/|S|): (d + 2)·u relative to |dy_i| + Σ_S|dy|/|S|,
      exact zeros off the support."""
    torch = _torch()
    u = eps(CT[dt])
    e = eps(dt) / 2
    d = row_depth(y.shape[-1])
    if op == "softmax":
        mag = y * (dy.abs() + (dy.abs() * y).sum(-1, keepdim=True))
        err = (e + (d + 2) * u) * mag
    elif op == "log_softmax":
        ey = torch.exp(y)
        err = (2 * u * dy.abs() + ey * dy.abs().sum(-1, keepdim=True)
               * (e * (y.abs() + 1) + u * (d + 2 * y.abs() + 6)))
    else:
        sup = (y > 0).double()
        k = sup.sum(-1, keepdim=True).clamp_min(1)
        err = sup * (d + 2) * u * (dy.abs() + (sup * dy.abs()).sum(-1, keepdim=True) / k)
    _check(dx, ref, dt, bounds(dt)[0], err, what)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (7, 33), (3, 1000), (4, 4097), (2, 16384),
                                   (2, 40000), (1, 262144), (1, 300000), (0, 4), (2, 0)])
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "sparsemax"])
def test_backward(dt, shape, op):
    torch = _torch()
    from baracuda_dsl.ops.softmax import softmax as P

    x = _rand(shape, "float64", seed=7, scale=2.0)
    dy = _rand(shape, dt, seed=8, scale=1.0).double()    # the reference sees the rounded dy
    xg = x.clone().requires_grad_(True)
    fn = {"softmax": lambda t: torch.softmax(t, -1), "log_softmax":
          lambda t: torch.log_softmax(t, -1), "sparsemax": _sparsemax_ref}[op]
    y64 = fn(xg)
    if x.numel() and op == "sparsemax" and shape[-1] > 100000:
        # huge rows: the closed form instead of autograd through the sort, on the support S
        # (y > 0): dx = [i in S] (dy_i - sum_S dy / |S|)
        s = (y64.detach() > 0).double()
        xg.grad = s * (dy - (s * dy).sum(-1, keepdim=True) / s.sum(-1, keepdim=True))
    elif x.numel():
        y64.backward(dy)
    y = y64.detach().to(getattr(torch, dt))
    dyt = dy.to(getattr(torch, dt))
    dx = _poison(torch, shape, dt)
    if op == "sparsemax":
        plan = P.SparsemaxBackwardPlan.select(P.SparsemaxBackwardDescriptor(shape, dt))
        plan.run(P.SparsemaxBackwardArgs(dyt, y, dx))
    else:
        plan = P.SoftmaxBackwardPlan.select(P.SoftmaxBackwardDescriptor(shape, dt, -1,
                                                                        op == "log_softmax"))
        plan.run(P.SoftmaxBackwardArgs(dyt, y, dx))
    if not x.numel():
        return
    check_backward(dx, y64.detach(), dy, xg.grad, op, dt, plan.sku())


@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
def test_strided_and_misaligned_views(dt):
    torch = _torch()
    from baracuda_dsl.ops.softmax.softmax import SoftmaxArgs, SoftmaxDescriptor, SoftmaxPlan

    base = _rand((6, 5, 4, 1024), dt, seed=3)
    # non-unit outer strides (every other row group, permuted batch dims)
    for view in (base[::2], base.permute(1, 0, 2, 3), base[:, 1:4, ::3]):
        y = _poison(torch, view.shape, dt)
        SoftmaxPlan.select(SoftmaxDescriptor(tuple(view.shape), dt)).run(SoftmaxArgs(view, y))
        check_softmax(y, view, False, dt, tuple(view.shape))
    # a unit-stride middle axis (the transpose of a dense tensor)
    t = base[0, 0].t()  # (1024, 4): axis 0 has unit stride
    y = _poison(torch, (4, 1024), dt).t()
    SoftmaxPlan.select(SoftmaxDescriptor((1024, 4), dt, 0)).run(SoftmaxArgs(t, y))
    check_softmax(y.t(), t.t(), False, dt, "axis 0")
    # misaligned rows (offset by one element): generic loop SKU, same results
    flat = _rand((3 * 1000 + 1,), dt, seed=4)
    xm = flat[1:].view(3, 1000)
    y = _poison(torch, (3, 1000), dt)
    SoftmaxPlan.select(SoftmaxDescriptor((3, 1000), dt, -1, True)).run(SoftmaxArgs(xm, y))
    check_softmax(y, xm, True, dt, "misaligned")


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("n", [33, 4096, 70000, 300000])
def test_extreme_rows(dt, n):
    """Huge values (no overflow: max subtracted), −inf entries (exact 0 / −inf), an all −inf
    row (NaN, as PyTorch)."""
    torch = _torch()
    from baracuda_dsl.ops.softmax.softmax import SoftmaxArgs, SoftmaxDescriptor, SoftmaxPlan

    big = {"float16": 6e4, "bfloat16": 1e38, "float32": 1e38, "float64": 1e300}[dt]
    x = _rand((4, n), dt, seed=11)
    x[0, ::3] = big
    x[1, ::2] = float("-inf")
    x[2] = float("-inf")
    x[3, 5] = -big
    for log in (False, True):
        y = _poison(torch, (4, n), dt)
        SoftmaxPlan.select(SoftmaxDescriptor((4, n), dt, -1, log)).run(SoftmaxArgs(x, y))
        # every row: NaN (row 2), −inf / 0 and the finite values within check_softmax's bounds
        check_softmax(y, x, log, dt, (n, log))
        assert torch.isnan(y[2]).all()
        if not log:
            assert (y[1, ::2] == 0).all()
        else:
            assert torch.isneginf(y[1, ::2]).all()


def test_sparsemax_extremes():
    torch = _torch()
    from baracuda_dsl.ops.softmax.softmax import SparsemaxArgs, SparsemaxDescriptor, SparsemaxPlan

    x = torch.tensor([[0.0] * 8, [5.0] + [0.0] * 7, [1e6, -1e6] + [0.0] * 6,
                      [1.0, 1.0, 0.5, float("-inf"), 0, 0, 0, 0]], device="cuda")
    y = _poison(torch, tuple(x.shape), "float32")
    SparsemaxPlan.select(SparsemaxDescriptor(tuple(x.shape), "float32")).run(SparsemaxArgs(x, y))
    ref = _sparsemax_ref(torch.nan_to_num(x.double(), neginf=-1e300))
    # every τ and y here is a short sum of dyadic numbers (1/8, 1, 1/2 ...): exact in f32, so
    # only a few relative roundings are allowed, none absolute beyond the smallest normal
    assert_close(y, ref, *bounds("float32", compute="float32", terms=4), what="extremes")


def test_namespace_functions():
    torch = _torch()
    import array_api as xp
    from array_api._softmax_extensions import log_softmax, softmax, sparsemax

    t = _rand((5, 6, 300), "float32", seed=5)
    x = xp.from_dlpack(t)
    for axis in (-1, 0, 1, 2, -2):
        for f, log in ((softmax, False), (log_softmax, True)):
            y = torch.from_dlpack(f(x, axis=axis))
            check_softmax(y.movedim(axis, -1), t.movedim(axis, -1), log, "float32", (axis, log))
        y = torch.from_dlpack(sparsemax(x, axis=axis))
        check_sparsemax(y.movedim(axis, -1), t.movedim(axis, -1), "float32", (axis, "sparse"))
    # a transposed input (the axis has no unit stride) and a 1-d / empty input
    y = torch.from_dlpack(softmax(x.mT, axis=-1))
    check_softmax(y, t.mT, False, "float32", "mT")
    v = xp.from_dlpack(t[0, 0])
    check_softmax(torch.from_dlpack(softmax(v)), t[0, 0], False, "float32", "1-d")
    e = xp.from_dlpack(torch.empty((0, 4), device="cuda"))
    assert softmax(e).shape == (0, 4)
    with pytest.raises(TypeError):
        softmax(xp.from_dlpack(torch.ones((3, 4), device="cuda", dtype=torch.int32)))
    with pytest.raises(ValueError):
        softmax(x, axis=3)


@pytest.mark.parametrize("dt", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("n", [32768, 40000, 131072, 262144])
def test_forward_every_wide_sku(dt, n):
    """Every register / cluster SKU of the arch that holds a row of ``n`` (single CTA, half and
    full cluster slices, as benchmarks/sweep_softmax.py times them), forced through the plan:
    random rows, a NaN row (all NaN, as PyTorch), huge values and −inf entries."""
    torch = _torch()
    from baracuda_dsl.ops.softmax.softmax import SoftmaxArgs, SoftmaxDescriptor, SoftmaxPlan

    big = {"float16": 6e4, "bfloat16": 1e38, "float32": 1e38}[dt]
    x = _rand((4, n), dt, seed=n)
    x[1, 3] = float("nan")
    x[2, ::3] = big
    x[3, ::2] = float("-inf")
    for log in (False, True):
        plan = SoftmaxPlan.select(SoftmaxDescriptor((4, n), dt, -1, log))
        ks = [plan._template.thaw(k) for k in plan._template.skus(plan._arch.value)]
        ks = [k for k in ks if k.dtype == plan._knobs.dtype and k.chunks > 0
              and n <= k.capacity < 4 * n]
        for k in ks:
            plan._knobs, plan._records = k, {}
            y = _poison(torch, (4, n), dt)
            plan.run(SoftmaxArgs(x, y))
            assert torch.isnan(y[1]).all(), k
            # rows 0 (random), 2 (huge), 3 (−inf entries: exact 0 / −inf) element by element
            check_softmax(y, x, log, dt, (k, log))
