"""BatchNorm / GroupNorm / InstanceNorm FW + BW on the GPU against float64 torch references
(torch.nn.functional and autograd), with running-stat updates, odd and empty shapes, poisoned
outputs, the element-wise (misaligned) path and bit-identical reruns."""

"""BatchNorm / GroupNorm / InstanceNorm FW + BW on the GPU against float64 torch references
(torch.nn.functional and autograd), with running-stat updates, odd and empty shapes, poisoned
outputs, the element-wise (misaligned) path and bit-identical reruns.

Every element is checked (tests/_checks.py); the bounds (:func:`check_forward`,
:func:`check_backward`) follow the plans' pipeline (ops/normalization/channel_norm.py): Welford
/ Chan partials per chunk, merged in order, then an element-wise apply; :func:`_cdepth` bounds
the rounded steps on any path of a unit's statistics."""

import pytest

from tests._checks import assert_within, bounds, eps, rel_err

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float16", "bfloat16", "float64"]
BN_SHAPES = [(1, 3, 7), (2, 3), (7, 5), (4, 16, 5, 5), (8, 64, 33), (3, 5, 2, 3, 4),
             (16, 8, 1000), (2, 4, 4097), (32, 3)]


def _torch():
    return pytest.importorskip("torch")


def _cn():
    from baracuda_dsl.ops.normalization import channel_norm as cn

    return cn


_check = assert_within   # rel per element + the op's own error bound abs_err


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


def _cdepth(unit_elems, units):
    """Rounded steps on any path of one unit's statistics: ``chunking`` splits a unit into K
    chunks (>= 4096 elements) of one 256-thread CTA each — a thread's sequential Welford updates
    (<= ceil(chunk/256)), 5 shuffle and 8 warp Chan merges — and the finalize merges the K
    partials in order.  Returns that depth d: the mean (one rounding per update or merge) errs
    by d·u·mean|x|, M2 (<= 4 roundings per step) by 4d·u relative, a plain sum by d·u·Σ|terms|."""
    from baracuda_dsl.ops.normalization.channel_norm import chunking

    chunk, k = chunking(unit_elems, units)
    return -(-chunk // 256) + 13 + max(k, 1)


def _depth(mode, per, units):
    """Statistics depth of a unit of ``per`` elements: BatchNorm (and every backward) reduces
    through the channel_norm partial / finalize pipeline (:func:`_cdepth`); Group / InstanceNorm
    forward rows run the row-norm LayerNorm kernel (row engine: <= 64 register elements or every
    256-th element a thread, 5 shuffle levels, <= 32 warp and 8 cluster partials) — the larger of
    the two, never more than ``per``."""
    d = _cdepth(per, units)
    if mode != "bn":
        d = max(d, min(per, max(64, -(-per // 256)) + 45))
    return max(1, d)


def _unit_stats(x, mode, groups=1):
    """Per-element float64 broadcasts of the statistics of x's reduction unit — BatchNorm: a
    channel over (N, *S); GroupNorm: (n, group); InstanceNorm: (n, c) — as
    (mean, biased var, mean|x|, elements per unit, units), plus a ``reduce`` function that
    turns an element tensor into the per-unit values (the saved stats' layout)."""
    xd = x.double()
    n, c = xd.shape[:2]
    if mode == "bn":
        dims = [0] + list(range(2, xd.dim()))

        def unit(t, op):
            return getattr(t, op)(dims, keepdim=True).expand_as(xd)

        def reduce(t):
            return t.mean(dims)

        per, units = xd.numel() // max(c, 1), c
    else:
        g = c if mode == "in" else groups

        def unit(t, op):
            return getattr(t.reshape(n, g, -1), op)(2, keepdim=True).expand(
                n, g, xd[0].numel() // g).reshape(xd.shape)

        def reduce(t):
            return t.reshape(n, g, -1).mean(2)

        per, units = xd[0].numel() // g, n * g
    mean = unit(xd, "mean")
    var = unit((xd - mean) ** 2, "mean")
    return mean, var, unit(xd.abs(), "mean"), per, units, reduce


def _chan(t, x):
    """A per-channel (C,) tensor broadcast against x (N, C, *S)."""
    return t.double().reshape(1, -1, *([1] * (x.dim() - 2)))


def check_forward(y, x, w, b, mode, dt, eps_, groups=1, running=None, sm=None, sr=None,
                  ref=None, what=""):
    """y of a channel norm vs float64, per element, and the saved mean / rstd.  With d =
    :func:`_cdepth` (0 for BatchNorm inference: ``running`` = (mean, var)) and u = eps(compute):

    * the unit mean errs by d·u·mean|x|; Welford's var by (4d + 4)·u relative plus 4u·|mean|/σ
      (each update's x − mean carries the running mean's rounding); rstd half of that + 2u;
    * y = x·a + c with a = w·rstd, c = b − mean·a (per-entry coefficients): relative to |x̂·w|
      the rstd error and 6 roundings, absolutely rstd·|w|·(d·u·mean|x| + 3u·(|x| + |mean|))
      (the mean's error, the fused apply) and 3u·|b|."""
    torch = _torch()
    u = eps(_sdt(dt))
    xd = x.double()
    if running is None:
        mean, var, amean, per, units, reduce = _unit_stats(x, mode, groups)
        d = _depth(mode, per, units)
    else:
        mean, var = _chan(running[0], x).expand_as(xd), _chan(running[1], x).expand_as(xd)
        amean, d, reduce = xd.abs(), 0, None
    rstd = torch.rsqrt(var + eps_)
    xh = (xd - mean) * rstd
    wc = _chan(w, x).abs() if w is not None else 1.0
    bc = _chan(b, x).abs() if b is not None else 0.0
    drift = 4 * mean.abs() * rstd
    err = u * ((2 * d + 8 + drift / 2) * (xh * wc).abs()
               + (d * amean + 3 * (xd.abs() + mean.abs())) * rstd * wc + 3 * bc)
    yr = xh * (_chan(w, x) if w is not None else 1.0) + (_chan(b, x) if b is not None else 0.0)
    if ref is not None:     # torch's own float64 result: the same value, independently formed
        assert torch.allclose(ref, yr, rtol=1e-9, atol=1e-12), (what, "reference mismatch")
        yr = ref
    _check(y, yr, dt, bounds(dt)[0], err, (what, "y"))
    sdt = _sdt(dt)
    if sm is not None:
        _check(sm, reduce(mean), sdt, bounds(sdt)[0], d * u * reduce(amean), (what, "mean"))
    if sr is not None:
        _check(sr, reduce(rstd), sdt, bounds(sdt)[0],
               u * (2 * d + 4 + reduce(drift) / 2) * reduce(rstd), (what, "rstd"))
    return mean, var, amean, d, reduce


def check_running(rm, rv, rm0, rv0, x, mom, pdt, dt, what=""):
    """Running stats after a training step, (1 − mom)·old + mom·(batch mean / unbiased var),
    stored in ``pdt``: 2 roundings on each product and the sum, plus the batch statistics'
    errors (check_forward) times mom."""
    torch = _torch()
    mean, var, amean, per, units, reduce = _unit_stats(x, "bn")
    d = _cdepth(per, units)
    u = eps(_sdt(dt))
    rstd = torch.rsqrt(var + 1e-5)
    bm, bv = reduce(mean), reduce(var) * per / max(per - 1, 1)
    rm_ref = (1 - mom) * rm0.double() + mom * bm
    rv_ref = (1 - mom) * rv0.double() + mom * bv
    _check(rm, rm_ref, pdt, bounds(pdt)[0],
           u * (3 * (1 - mom) * rm0.double().abs() + 3 * mom * bm.abs() + mom * d * reduce(amean)),
           (what, "running_mean"))
    _check(rv, rv_ref, pdt, bounds(pdt)[0],
           u * (3 * (1 - mom) * rv0.double().abs()
                + mom * bv * (4 * d + 8 + 4 * reduce(mean.abs() * rstd))), (what, "running_var"))


def check_backward(dx, dw, db, x, dy, w, mode, dt, groups=1, stats_rel=None, what=""):
    """dx / dweight / dbias of a training-mode channel norm from the saved (rounded) stats vs
    the float64 gradient of the exact normalisation: dx = w·rstd·(dy − mean(dy) − x̂·mean(dy·x̂))
    over the unit cancels, so its error is relative to
    m_i = |w|·rstd·(|dy_i| + mean|dy| + (|x̂_i| + 1)·mean|dy·x̂|): ((2d + 8)·u + eps(stats))·m_i
    (the partial sums Σdy, Σdy·(x − mean) of depth d, 2 roundings a step, the coefficients, x̂
    from the rounded stats; +1: the rounded mean's absolute error of x̂); dweight = Σ dy·x̂ and
    dbias = Σ dy per channel (over the batch too for Group / InstanceNorm: + N):
    (2d + N + 3)·u + eps(stats) relative to Σ|dy·x̂|, Σ|dy|."""
    torch = _torch()
    F = torch.nn.functional
    xd = x.double().requires_grad_(True)
    c = x.shape[1]
    wd = (w.double() if w is not None else torch.ones(c, device="cuda", dtype=torch.float64)
          ).requires_grad_(True)
    bd_ = torch.zeros(c, device="cuda", dtype=torch.float64, requires_grad=True)
    if mode == "bn":
        yd = F.batch_norm(xd, None, None, wd, bd_, True, 0.1, 1e-5)
    elif mode == "gn":
        yd = F.group_norm(xd, groups, wd, bd_, 1e-5)
    else:
        yd = F.instance_norm(xd, weight=wd, bias=bd_, eps=1e-5)
    grads = torch.autograd.grad(yd, (xd, wd, bd_), dy.double())
    mean, var, _, per, units, _ = _unit_stats(x, mode, groups)
    d = _depth(mode, per, units)
    u = eps(_sdt(dt))
    es = eps(_sdt(dt)) if stats_rel is None else stats_rel
    rstd = torch.rsqrt(var + 1e-5)
    xh = (x.double() - mean) * rstd
    dyd = dy.double()
    wc = _chan(wd.detach(), x).abs()
    if mode == "bn":
        dims = [0] + list(range(2, x.dim()))

        def um(t):
            return t.mean(dims, keepdim=True)
    else:
        g = c if mode == "in" else groups

        def um(t):
            return t.reshape(x.shape[0], g, -1).mean(2, keepdim=True).expand(
                x.shape[0], g, x[0].numel() // g).reshape(x.shape)
    mag = wc * rstd * (dyd.abs() + um(dyd.abs()) + (xh.abs() + 1) * um((dyd * xh).abs()))
    _check(dx, grads[0], dt, bounds(dt)[0], ((2 * d + 8) * u + es) * mag, (what, "dx"))
    cdims = [0] + list(range(2, x.dim()))
    dd = 2 * d + (0 if mode == "bn" else x.shape[0]) + 3
    if dw is not None:
        _check(dw, grads[1], dt, bounds(dt)[0], (dd * u + es) * (dyd * xh).abs().sum(cdims),
               (what, "dweight"))
    if db is not None:
        _check(db, grads[2], dt, bounds(dt)[0], dd * u * dyd.abs().sum(cdims), (what, "dbias"))


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
    rm0, rv0 = rm.clone(), rv.clone()
    rm_ref, rv_ref = rm.double().clone(), rv.double().clone()
    y = _nan(shape, dt)
    sm, sr = _nan((c,), _sdt(dt)), _nan((c,), _sdt(dt))
    plan = cn.BatchNormPlan.select(cn.BatchNormDescriptor(shape, dt, eps, mom, True, affine,
                                                          affine, True))
    plan.run(cn.BatchNormArgs(x, y, w, b, rm, rv, sm, sr), workspace=_ws(plan))
    torch.cuda.synchronize()
    yr = F.batch_norm(x.double(), rm_ref, rv_ref, w.double() if affine else None,
                      b.double() if affine else None, True, mom, eps)
    *_, red = check_forward(y, x, w, b, "bn", dt, eps, sm=sm, sr=sr, ref=yr, what=(dt, shape))
    # the reference's running-stat update (F.batch_norm above) agrees with check_running's
    assert torch.allclose(rm_ref, (1 - mom) * rm0.double() + mom * red(x.double()), rtol=1e-12)
    check_running(rm, rv, rm0, rv0, x, mom, dt, dt, (dt, shape))


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_batch_norm_f32_params_with_half_input(dt):
    torch = _torch()
    F = torch.nn.functional
    cn = _cn()
    shape = (6, 12, 9, 9)
    x = _rand(shape, dt, 6)
    w, b = _rand((12,), "float32", 7), _rand((12,), "float32", 8)
    rm, rv = torch.zeros(12, device="cuda"), torch.ones(12, device="cuda")
    rm0, rv0 = rm.clone(), rv.clone()
    y = _nan(shape, dt)
    plan = cn.BatchNormPlan.select(cn.BatchNormDescriptor(shape, dt, param_dtype="float32"))
    plan.run(cn.BatchNormArgs(x, y, w, b, rm, rv), workspace=_ws(plan))
    torch.cuda.synchronize()
    check_forward(y, x, w, b, "bn", dt, 1e-5, what=dt,
                  ref=F.batch_norm(x.double(), None, None, w.double(), b.double(), True))
    check_running(rm, rv, rm0, rv0, x, 0.1, "float32", dt, dt)


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
    check_forward(y, x, w, b, "bn", dt, 1e-3, running=(rm, rv), ref=yr, what=(dt, shape))
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
    check_forward(y, x, None, None, "bn", "float32", 1e-5, what="batch stats",
                  ref=F.batch_norm(x.double(), None, None, None, None, True, 0.1, 1e-5))


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
    # per element: the worst-case bounds of check_forward (a stable algorithm's: the drift term
    # u·|mean|/σ is what a naive E[x²] − E[x]² squares into u·mean²/σ² ~ 12, every digit lost)
    check_forward(y, x, None, None, "bn", "float32", 1e-5, sr=sr, what="mean 1e4")
    # and, far tighter than those worst cases, the whole-tensor errors a stable f32 algorithm
    # reaches (the f32 mean is only good to half an ulp of 1e4, ~5e-4, so y can be no better)
    assert rel_err(sr, torch.rsqrt(xd.var((0, 2), unbiased=False) + 1e-5)) < 1e-4
    assert rel_err(y, F.batch_norm(xd, None, None, None, None, True, 0.1, 1e-5)) < 2e-3


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
    check_forward(y, x, None, None, "gn", "float32", 1e-5, groups=3, what="misaligned",
                  ref=F.group_norm(x.double(), 3, eps=1e-5))
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
    # y, and the saved (n, group) mean / rstd, element by element
    yr = F.group_norm(x.double(), groups, w.double() if affine else None,
                      b.double() if affine else None, 1e-5)
    check_forward(y, x, w, b, "gn", dt, 1e-5, groups, sm=mean, sr=rstd, ref=yr,
                  what=(dt, shape))


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
        check_forward(y, x, w, b, "gn", dt, 1e-5, groups, sm=mean, sr=rstd,
                      ref=F.group_norm(x.double(), groups, w.double(), b.double(), 1e-5),
                      what=(dt, shape, offset))
        assert yb[:offset].isnan().all()


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
    check_forward(y, x, w, b, "in", dt, 1e-5, what=(dt, shape),
                  ref=F.instance_norm(x.double(), weight=w.double(), bias=b.double(), eps=1e-5))


# ==================================================================================== backward
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", BN_SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_backward_training(dt, shape, affine):
    torch = _torch()
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
    check_backward(dx, dw, db, x, dy, w, "bn", dt, what=(dt, shape, affine))
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
    bn_eps = 1e-3  # not `eps`: that name is the imported machine-epsilon function
    x, dy = _rand(shape, dt, 33), _rand(shape, dt, 34)
    w = _rand((c,), dt, 35)
    rm = _rand((c,), dt, 36, 0.5, 0.0)
    rv = _rand((c,), dt, 37, 0.2, 1.0).abs()
    dx = _nan(shape, dt)
    dw, db = _nan((c,), dt), _nan((c,), dt)
    plan = cn.BatchNormBackwardPlan.select(cn.BatchNormBackwardDescriptor(shape, dt, bn_eps, False))
    plan.run(cn.BatchNormBackwardArgs(dy, x, dx, w, running_mean=rm, running_var=rv, dweight=dw,
                                      dbias=db), workspace=_ws(plan))
    torch.cuda.synchronize()
    xd = x.double().requires_grad_(True)
    wd = w.double().requires_grad_(True)
    bd_ = torch.zeros(c, device="cuda", dtype=torch.float64, requires_grad=True)
    yd = F.batch_norm(xd, rm.double(), rv.double(), wd, bd_, False, 0.1, bn_eps)
    grads = torch.autograd.grad(yd, (xd, wd, bd_), dy.double())
    # running stats: dx = dy·w·rsqrt(rv + eps) (4 roundings, relative); dweight = Σ dy·x̂ and
    # dbias = Σ dy over (N, *S): depth d (+4: x − rm, × rstd, × dy) relative to the terms
    # Σ|dy|·(|x| + |rm|)·rstd and Σ|dy|
    ct = _sdt(dt)
    u = eps(ct)
    d = _cdepth(x.numel() // c, c)
    rstd = _chan(torch.rsqrt(rv.double() + bn_eps), x)
    cdims = [0] + list(range(2, len(shape)))
    dyd = dy.double()
    _check(dx, grads[0], dt, bounds(dt, compute=ct, terms=4)[0], 0.0, (dt, shape, "dx"))
    _check(dw, grads[1], dt, bounds(dt)[0],
           (d + 4) * u * (dyd.abs() * (x.double().abs() + _chan(rm, x).abs()) * rstd).sum(cdims),
           (dt, shape, "dweight"))
    _check(db, grads[2], dt, bounds(dt)[0], d * u * dyd.abs().sum(cdims), (dt, shape, "dbias"))


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
    check_backward(dx, dw, db, x, dy, w, "gn", dt, groups=groups, what=(dt, shape, affine))
    dx1, dw1 = dx.clone(), dw.clone()
    plan.run(args, workspace=ws)
    torch.cuda.synchronize()
    assert torch.equal(dx, dx1) and torch.equal(dw, dw1)


@pytest.mark.parametrize("dt", ["float32", "bfloat16", "float64"])
def test_instance_norm_backward(dt):
    torch = _torch()
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
    check_backward(dx, dw, db, x, dy, w, "in", dt, what=dt)


def test_forward_backward_roundtrip_saved_stats():
    """Saved mean / rstd from our forward feed our backward (the usual training step)."""
    torch = _torch()
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
    mean, _, _, d, _ = check_forward(y, x, w, b, "bn", "float32", 1e-5, sm=sm, sr=sr,
                                     what="roundtrip")
    # the backward reads our saved stats: rstd within (2d + 4 + 2|mean|/σ)·u relative, the mean
    # within d·u·mean|x| (check_forward), instead of one rounding
    var = x.double().var((0, 2, 3), unbiased=False)
    drift = float((mean[0, :, 0, 0].abs() * torch.rsqrt(var + 1e-5)).max())
    stats = eps("float32") * (3 * d + 8 + 2 * drift)
    check_backward(dx, dw, db, x, dy, w, "bn", "float32", stats_rel=stats, what="roundtrip")
