"""softmax / log_softmax / sparsemax FW + BW on the GPU against float64 torch references
(autograd for BW); every register bucket, cluster and loop SKU; strided and misaligned views;
−inf / huge rows; the array_api functions."""

import pytest

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float16", "bfloat16", "float64"]
TOL = {"float32": 2e-5, "float16": 2e-3, "bfloat16": 1.5e-2, "float64": 1e-12}
# row lengths spanning every bucket (512 .. 32768), the clusters (2/4/8 CTAs on sm90a: 40000,
# 70000, 262144 for two-byte / f32), the vectorised loop (300000) and the generic loop (odd N)
SHAPES = [(1, 1), (7, 33), (5, 7), (3, 1000), (4, 4097), (2, 3, 512), (3, 2048), (2, 8192),
          (2, 16384), (2, 32768), (2, 40000), (2, 70000), (1, 262144), (1, 300000), (0, 64),
          (6, 0)]


def _torch():
    return pytest.importorskip("torch")


def relerr(out, ref):
    torch = _torch()
    out = out.double()
    ref = ref.double()
    assert not torch.isnan(out).any(), "NaN in output (unwritten poisoned element?)"
    den = ref.norm().item()
    return (out - ref).norm().item() / (den if den > 0 else 1.0)


def _rand(shape, dt, seed=0, scale=3.0):
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(shape, generator=g, device="cuda", dtype=torch.float64) * scale
            + 0.3).to(getattr(torch, dt))


def _poison(torch, shape, dt):
    out = torch.empty(shape, device="cuda", dtype=getattr(torch, dt))
    if out.numel():
        out.view(-1).view(torch.uint8).fill_(0x7F)
    return out


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


#: outputs below the smallest normal are subnormals spaced 2^-24 (f16) / 2^-133 (bf16) apart,
#: so their relative error is not bounded by the dtype's epsilon; f32 / f64 math may flush
#: subnormals (ftz): allow the smallest normal there
SUBNORMAL_STEP = {"float16": 2.0 ** -24, "bfloat16": 2.0 ** -133, "float32": 2.0 ** -126,
                  "float64": 2.0 ** -1022}


def close_rows(out, ref, dt, rtol):
    """Element-wise |out − ref| <= rtol·|ref| + 4 subnormal steps of ``dt`` (float64 compare)."""
    torch = _torch()
    out = out.double()
    ref = ref.double()
    assert not torch.isnan(out).any(), "NaN in output (unwritten poisoned element?)"
    bad = (out - ref).abs() > rtol * ref.abs() + 4 * SUBNORMAL_STEP[dt]
    return int(bad.sum().item())


def _tol(dt, n):
    # f32 sums over long rows accumulate ~sqrt(n) rounding steps
    return TOL[dt] * (4 if dt == "float32" and n > 50000 else 1)


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
    f = torch.log_softmax if log else torch.softmax
    ref = f(x.double(), -1)
    assert relerr(y, ref) < _tol(dt, shape[-1]), plan.sku()
    if not log:
        assert (y.double().sum(-1) - 1).abs().max().item() < max(10 * TOL[dt], 1e-10)


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
    ref = _sparsemax_ref(x.double())
    assert relerr(y, ref) < 2 * TOL[dt], plan.sku()
    assert ((y.double() > 0) == (ref > 0)).float().mean().item() > 0.999
    assert (y.double().sum(-1) - 1).abs().max().item() < max(50 * TOL[dt], 1e-10)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (7, 33), (3, 1000), (4, 4097), (2, 16384),
                                   (2, 40000), (1, 262144), (1, 300000), (0, 4), (2, 0)])
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "sparsemax"])
def test_backward(dt, shape, op):
    torch = _torch()
    from baracuda_dsl.ops.softmax import softmax as P

    x = _rand(shape, "float64", seed=7, scale=2.0)
    dy = _rand(shape, "float64", seed=8, scale=1.0)
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
    # the reference uses the f64 y; ours sees y rounded to dt (one more rounding step)
    assert relerr(dx, xg.grad) < 3 * _tol(dt, shape[-1]), plan.sku()


@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
def test_strided_and_misaligned_views(dt):
    torch = _torch()
    from baracuda_dsl.ops.softmax.softmax import SoftmaxArgs, SoftmaxDescriptor, SoftmaxPlan

    base = _rand((6, 5, 4, 1024), dt, seed=3)
    # non-unit outer strides (every other row group, permuted batch dims)
    for view in (base[::2], base.permute(1, 0, 2, 3), base[:, 1:4, ::3]):
        y = _poison(torch, view.shape, dt)
        SoftmaxPlan.select(SoftmaxDescriptor(tuple(view.shape), dt)).run(SoftmaxArgs(view, y))
        assert relerr(y, torch.softmax(view.double(), -1)) < TOL[dt]
    # a unit-stride middle axis (the transpose of a dense tensor)
    t = base[0, 0].t()  # (1024, 4): axis 0 has unit stride
    y = _poison(torch, (4, 1024), dt).t()
    SoftmaxPlan.select(SoftmaxDescriptor((1024, 4), dt, 0)).run(SoftmaxArgs(t, y))
    assert relerr(y, torch.softmax(t.double(), 0)) < TOL[dt]
    # misaligned rows (offset by one element): generic loop SKU, same results
    flat = _rand((3 * 1000 + 1,), dt, seed=4)
    xm = flat[1:].view(3, 1000)
    y = _poison(torch, (3, 1000), dt)
    SoftmaxPlan.select(SoftmaxDescriptor((3, 1000), dt, -1, True)).run(SoftmaxArgs(xm, y))
    assert relerr(y, torch.log_softmax(xm.double(), -1)) < TOL[dt]


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
        f = torch.log_softmax if log else torch.softmax
        ref = f(x.double(), -1)
        assert torch.isnan(y[2]).all()
        for r in (0, 1, 3):
            fin = torch.isfinite(ref[r])
            assert torch.equal(torch.isfinite(y[r]), fin), (r, log)
            if log:
                assert relerr(y[r][fin], ref[r][fin]) < _tol(dt, n) * 2, (r, log)
            else:
                # huge rows give tiny probabilities (f16: 1e-5 is subnormal): element-wise
                assert close_rows(y[r][fin], ref[r][fin], dt, _tol(dt, n) * 2) == 0, (r, log)
            if not log:
                assert (y[r][~fin] == 0).all() if (~fin).any() else True
        if not log:
            assert (y[1, ::2] == 0).all()
        else:
            assert torch.isneginf(y[1, ::2]).all()


def test_sparsemax_extremes():
    torch = _torch()
    from baracuda_dsl.ops.softmax.softmax import SparsemaxArgs, SparsemaxDescriptor, SparsemaxPlan

    x = torch.tensor([[0.0] * 8, [5.0] + [0.0] * 7, [1e6, -1e6] + [0.0] * 6,
                      [1.0, 1.0, 0.5, float("-inf"), 0, 0, 0, 0]], device="cuda")
    y = torch.full_like(x, float("nan"))
    SparsemaxPlan.select(SparsemaxDescriptor(tuple(x.shape), "float32")).run(SparsemaxArgs(x, y))
    ref = _sparsemax_ref(torch.nan_to_num(x.double(), neginf=-1e300))
    assert torch.allclose(y.double(), ref, atol=1e-6)


def test_namespace_functions():
    torch = _torch()
    import array_api as xp
    from array_api._softmax_extensions import log_softmax, softmax, sparsemax

    t = _rand((5, 6, 300), "float32", seed=5)
    x = xp.from_dlpack(t)
    for axis in (-1, 0, 1, 2, -2):
        for f, ref in ((softmax, torch.softmax), (log_softmax, torch.log_softmax)):
            y = torch.from_dlpack(f(x, axis=axis))
            assert relerr(y, ref(t.double(), axis)) < TOL["float32"]
        y = torch.from_dlpack(sparsemax(x, axis=axis))
        assert relerr(y, _sparsemax_ref(t.double(), axis)) < 2 * TOL["float32"]
    # a transposed input (the axis has no unit stride) and a 1-d / empty input
    y = torch.from_dlpack(softmax(x.mT, axis=-1))
    assert relerr(y, torch.softmax(t.double().mT, -1)) < TOL["float32"]
    v = xp.from_dlpack(t[0, 0])
    assert relerr(torch.from_dlpack(softmax(v)), torch.softmax(t[0, 0].double(), 0)) < 1e-5
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
        ref = (torch.log_softmax if log else torch.softmax)(x.double(), -1)
        for k in ks:
            plan._knobs, plan._records = k, {}
            y = _poison(torch, (4, n), dt)
            plan.run(SoftmaxArgs(x, y))
            assert torch.isnan(y[1]).all(), k
            assert relerr(y[0], ref[0]) < _tol(dt, n), (k, log)
            for r in (2, 3):
                fin = torch.isfinite(ref[r])
                assert torch.equal(torch.isfinite(y[r]), fin), (k, r, log)
                if log:
                    assert relerr(y[r][fin], ref[r][fin]) < _tol(dt, n) * 2, (k, r, log)
                else:
                    assert close_rows(y[r][fin], ref[r][fin], dt, _tol(dt, n) * 2) == 0, (k, r)
                    assert (y[r][~fin] == 0).all(), (k, r)
