"""Cross-entropy / NLL (FW + BW) and the fused linear cross-entropy on the GPU against float64
torch references (torch.nn.functional + autograd).

Every element is checked (tests/_checks.py via _loss_gpu_checks) against NaN-poisoned outputs;
the bounds are derived in :func:`_ce_bounds` (the loss as Σ_j q_j·(m − x_j) + (Σq)·log S, the
saved lse, the gradient Σq·p − q) and :func:`check_linear_ce`."""

import dataclasses
import itertools
import math

import pytest

from _loss_gpu_checks import CT, check, eps, row_depth

pytestmark = pytest.mark.gpu


def _torch():
    return pytest.importorskip("torch")


def _ce():
    import baracuda_dsl.ops.losses.cross_entropy as ce

    return ce


def _q(x, t, target, ii, ls, w):
    """The (n, c) float64 target weights q of torch's cross-entropy, loss_r = Σ_j q_rj·(lse_r −
    x_rj): index targets (1 − ε)·w_t·onehot(t) + ε·w/c (0 for an ignored row), probability
    targets w·((1 − ε)·p + ε/c)."""
    torch = _torch()
    n, c = x.shape
    wd = (w.double() if w is not None else torch.ones(c, dtype=torch.float64, device=x.device))
    if target == "prob":
        return wd * ((1 - ls) * t.double() + ls / c)
    tl = t.long()
    ok = (tl != ii) & (tl >= 0) & (tl < c)
    q = torch.zeros(n, c, dtype=torch.float64, device=x.device)
    rows = torch.nonzero(ok).flatten()
    q[rows, tl[rows]] = (1 - ls) * wd[tl[rows]]
    q[rows] += ls * wd / c
    return q


def _den(x, t, target, ii, w):
    """torch's mean denominator: Σ of the target classes' weights over the rows not ignored
    (index targets), n (probability targets)."""
    n, c = x.shape
    if target == "prob":
        return n
    tl = t.long().cpu()
    ok = (tl != ii) & (tl >= 0) & (tl < c)
    if w is None:
        return float(ok.sum())
    return float(w.double().cpu()[tl[ok]].sum())


def _ce_bounds(x, t, target, reduction, ii, ls, w, dt, ref):
    """Error bounds of our cross-entropy for logits x (the kernel's dtype, exact in float64):
    (loss bound, lse bound, per-row relative error of p = exp(x − lse)).  With m the row max,
    S = Σ exp(x − m) ∈ [1, c], d = row_depth(c), u = eps(compute):

    * log S errs by the sum's relative error, (d + 2·ln c + 3)·u (exp's rounded arguments: the
      weighted spread Σ p_j·(m − x_j) <= ln c);
    * loss_r = Σ_j q_j·(m − x_j) + (Σq)·log S: u·(2·Σ_j |q_j|·|m − x_j| + |Σq|·(d + 2·ln c + 8)
      + |ℓ|) — no |lse| term: the kernel subtracts the max first (huge logits stay exact);
    * lse = m + log S: u·(|lse| + d + 2·ln c + 6);
    * the backward reads the saved (rounded) lse: p_j = exp(x_j − lse) is off by
      u·(|x_j − lse| + |lse| + d + 2·ln c + 8) relative;
    * mean divides by Σ_r q_r (index targets) or n: the final sums have depth row_depth(n)."""
    torch = _torch()
    xd = x.double()
    n, c = xd.shape
    u = eps(CT[dt])
    d = row_depth(c)
    lc = math.log(max(c, 1))
    q = _q(x, t, target, ii, ls, w)
    m = xd.amax(1, keepdim=True)
    gap = torch.nan_to_num((m - xd).abs() * (q != 0), nan=0.0, posinf=0.0)
    lse = torch.logsumexp(xd, 1)
    qs = q.sum(1)
    ell = (q * (lse[:, None] - xd)).nan_to_num(0.0).sum(1)
    e_row = u * (2 * (q.abs() * gap).sum(1) + qs.abs() * (d + 2 * lc + 8) + ell.abs())
    if reduction == "none":
        e_loss = e_row
    else:
        nd = row_depth(n)
        e_loss = e_row.sum() + nd * u * ell.abs().sum()
        if reduction == "mean":
            e_loss = (e_loss / _den(x, t, target, ii, w)
                      + (nd + 2) * u * ref.double().abs().reshape(()))
    e_lse = u * (lse.abs() + d + 2 * lc + 6)
    e_p = u * ((xd - lse[:, None]).abs() + lse.abs()[:, None] + d + 2 * lc + 8)
    return e_loss, e_lse, e_p, q


def check_nll(loss, x, t, w, reduction, dt, what=""):
    """NLL loss = −w_t·x_t per row (one product), summed (depth row_depth(n)) and for mean
    divided by Σ w_t (a sum of the same depth): vs F.nll_loss in float64."""
    torch = _torch()
    F = torch.nn.functional
    wd = None if w is None else w.double()
    ref = F.nll_loss(x.double(), t, weight=wd, reduction=reduction)
    per = F.nll_loss(x.double(), t, weight=wd, reduction="none")
    n, u = x.shape[0], eps(CT[dt])
    err = 2 * u * per.abs()
    if reduction != "none":
        nd = row_depth(n)
        err = err.sum() + nd * u * per.abs().sum()
        if reduction == "mean":
            err = err / _den(x, t, "index", -100, w) + (nd + 2) * u * ref.abs()
    check(loss.reshape(ref.shape), ref, dt, err, what=what)


def check_linear_ce(loss, lse, dx, dW, x, W, t, reduction, g, dt, chunk, what=""):
    """Fused linear + CE (ops/losses/linear_cross_entropy.py) vs float64: the f32 (f64) chunk
    logits z = x @ Wᵀ err by <= k·u·(|x| @ |W|ᵀ) (accumulation over k); the loss and lse add the
    row-statistics bounds of :func:`_ce_bounds` (depth: a chunk's row reduction plus one merge
    per chunk) and the logits' error (lse and z_t are 1-Lipschitz in max|Δz|).  Backward:
    dz = g·(p − onehot) is rounded to the dtype (eps/2) with p off by the exponent errors; then
    dx = dz @ W and dW = dzᵀ @ x accumulate (f32) over v and n: |Δdz| @ |W| + v·u·(|dz| @ |W|)
    and |Δdz|ᵀ @ |x| + n·u·(|dz|ᵀ @ |x|)."""
    torch = _torch()
    F = torch.nn.functional
    xd, Wd = x.double(), W.double()
    n, k = xd.shape
    v = Wd.shape[0]
    u = eps(CT[dt])
    z = xd @ Wd.T
    a = xd.abs() @ Wd.abs().T
    dz_max = k * u * a.amax(1)
    d = row_depth(chunk) + -(-v // chunk) + 2
    lv = math.log(v)
    ref = F.cross_entropy(z, t, reduction=reduction)
    per = F.cross_entropy(z, t, reduction="none")
    lse_ref = torch.logsumexp(z, 1)
    ok = (t != -100)
    tl = torch.where(ok, t, torch.zeros_like(t))
    m = z.amax(1)
    zt = z.gather(1, tl[:, None]).squeeze(1)
    e_row = ok.double() * (u * (2 * (m - zt).abs() + d + 2 * lv + 8 + per.abs()) + 2 * dz_max)
    if reduction == "none":
        e_loss = e_row
    else:
        nd = row_depth(n)
        e_loss = e_row.sum() + nd * u * per.abs().sum()
        if reduction == "mean":
            e_loss = e_loss / float(ok.sum()) + (nd + 2) * u * ref.abs()
    check(loss.reshape(ref.shape), ref, dt, e_loss, what=(what, "loss"))
    if lse is not None:
        check(lse, lse_ref, CT[dt], u * (lse_ref.abs() + d + 2 * lv + 6) + dz_max,
              what=(what, "lse"))
    if dx is None:
        return
    gd = g.double().reshape(-1)
    gr = (gd.expand(n) if gd.numel() == 1 else gd) * ok.double()
    if reduction == "mean":
        gr = gr / float(ok.sum())
    p = torch.softmax(z, 1)
    oh = torch.zeros_like(p).scatter_(1, tl[:, None], 1.0) * ok.double()[:, None]
    e_p = u * ((z - lse_ref[:, None]).abs() + lse_ref.abs()[:, None] + d + 2 * lv + 8) \
        + 2 * dz_max[:, None] + u * (lse_ref.abs()[:, None] + d + 2 * lv + 6)
    mag = gr.abs()[:, None] * (p + oh)
    ddz = gr.abs()[:, None] * p * e_p + (eps(dt) / 2 + 2 * u) * mag
    xref = torch.autograd.grad(F.cross_entropy(xd.requires_grad_(True) @ Wd.T, t,
                                               reduction=reduction), xd,
                               g.double().reshape(ref.shape))[0]
    Wg = Wd.clone().requires_grad_(True)
    wref = torch.autograd.grad(F.cross_entropy(xd.detach() @ Wg.T, t, reduction=reduction), Wg,
                               g.double().reshape(ref.shape))[0]
    check(dx, xref, dt, ddz @ Wd.abs() + v * u * (mag @ Wd.abs()), what=(what, "dx"))
    check(dW, wref, dt, ddz.T @ xd.detach().abs() + n * u * (mag.T @ xd.detach().abs()),
          what=(what, "dW"))


def check_ce(loss, lse, dx, x, t, target, reduction, ii, ls, w, g, dt, rows=None, what=""):
    """Check our loss (vs F.cross_entropy in float64), the saved lse (vs logsumexp) and, with
    ``dx``, the gradient for upstream ``g``: dx = g_r·((Σq)·p − q) cancels, so its error is
    relative to |g_r|·((Σq)·p + |q|): the p error of :func:`_ce_bounds` on the first term, 2u on
    both.  ``rows``: the rows whose dx is checked (default all)."""
    torch = _torch()
    ref = ref_loss(x, t, reduction, ii, ls, w)
    e_loss, e_lse, e_p, q = _ce_bounds(x, t, target, reduction, ii, ls, w, dt, ref)
    check(loss.reshape(ref.shape), ref, dt, e_loss, what=(what, "loss"))
    if lse is not None:
        check(lse, torch.logsumexp(x.double(), 1), CT[dt], e_lse, what=(what, "lse"))
    if dx is None:
        return
    gref = ref_grad(x, t, reduction, ii, ls, w, g)
    n = x.shape[0]
    gd = g.double().reshape(-1)
    gr = gd.expand(n) if gd.numel() == 1 else gd
    if reduction == "mean":
        gr = gr / _den(x, t, target, ii, w)
    p = torch.softmax(x.double(), 1)
    qs = q.sum(1, keepdim=True)
    a = (gr.abs()[:, None] * qs.abs() * p)
    err = torch.nan_to_num(a * e_p, nan=0.0) + 2 * eps(CT[dt]) * (a + gr.abs()[:, None] * q.abs())
    sel = slice(None) if rows is None else rows
    check(dx[sel], gref[sel], dt, err[sel], what=(what, "dx"))


def _gen(seed):
    torch = _torch()
    return torch.Generator(device="cuda").manual_seed(seed)


def _logits(n, c, dt, seed=0, pad=0):
    """(n, c) logits of dtype ``dt``; with ``pad`` a strided view of an (n, c + pad) buffer."""
    torch = _torch()
    base = torch.randn((n, c + pad), generator=_gen(seed), device="cuda",
                       dtype=torch.float64) * 2.0 + 0.5
    base = base.to(getattr(torch, dt))
    return base[:, :c] if pad else base


def _targets(n, c, idt, ignore_index, seed=1, ignore_frac=0.2):
    torch = _torch()
    t = torch.randint(0, c, (n,), generator=_gen(seed), device="cuda", dtype=torch.int64)
    if n and ignore_frac:
        m = torch.rand((n,), generator=_gen(seed + 7), device="cuda") < ignore_frac
        t[m] = ignore_index
    return t.to(getattr(torch, idt))


def _probs(n, c, dt, seed=2):
    torch = _torch()
    p = torch.rand((n, c), generator=_gen(seed), device="cuda", dtype=torch.float64)
    return (p / p.sum(1, keepdim=True)).to(getattr(torch, dt))


def _weights(c, dt, seed=3):
    torch = _torch()
    return (torch.rand((c,), generator=_gen(seed), device="cuda", dtype=torch.float64)
            + 0.25).to(getattr(torch, dt))


def _ws(plan):
    torch = _torch()
    n = plan.workspace_size()
    return torch.empty(n, dtype=torch.uint8, device="cuda") if n else None


def _nan(shape, dt):
    torch = _torch()
    return torch.full(shape, float("nan"), dtype=getattr(torch, dt), device="cuda")


def run_fw(x, t, target="index", reduction="mean", ii=-100, ls=0.0, w=None, knobs=None):
    """Our forward: (loss, lse, total_weight, status); ``knobs`` forces a SKU geometry."""
    torch = _torch()
    ce = _ce()
    dt = str(x.dtype).split(".")[-1]
    n, c = x.shape
    idt = "int64" if target == "prob" else str(t.dtype).split(".")[-1]
    plan = ce.CrossEntropyPlan.select(ce.CrossEntropyDescriptor(
        n, c, dt, target, reduction, ii, ls, w is not None, idt))
    if knobs is not None:  # a RowGeometry
        plan._knobs = dataclasses.replace(plan._knobs, **dataclasses.asdict(knobs))
    loss = _nan((n,) if reduction == "none" else (1,), dt)
    lse = _nan((n,), CT[dt])
    tw = None if reduction == "none" else _nan((1,), CT[dt])
    st = torch.zeros((1,), dtype=torch.int32, device="cuda")
    plan.run(ce.CrossEntropyArgs(x, t, loss, w, lse, tw, st), workspace=_ws(plan))
    return loss, lse, tw, st


def ref_loss(x, t, reduction, ii, ls, w):
    torch = _torch()
    F = torch.nn.functional
    xd = x.double()
    td = t.double() if t.is_floating_point() else t.long()
    wd = None if w is None else w.double()
    return F.cross_entropy(xd, td, weight=wd, ignore_index=ii, reduction=reduction,
                           label_smoothing=ls)


def run_bw(x, t, lse, g, tw, target="index", reduction="mean", ii=-100, ls=0.0, w=None, pad=0):
    torch = _torch()
    ce = _ce()
    dt = str(x.dtype).split(".")[-1]
    n, c = x.shape
    idt = "int64" if target == "prob" else str(t.dtype).split(".")[-1]
    plan = ce.CrossEntropyBackwardPlan.select(ce.CrossEntropyBackwardDescriptor(
        n, c, dt, target, reduction, ii, ls, w is not None, idt))
    dxb = _nan((n, c + pad), dt)
    dx = dxb[:, :c] if pad else dxb
    st = torch.zeros((1,), dtype=torch.int32, device="cuda")
    plan.run(ce.CrossEntropyBackwardArgs(x, t, lse, g, dx, w, tw, st), workspace=_ws(plan))
    if pad:
        assert torch.isnan(dxb[:, c:]).all(), "dx written outside the view"
    return dx, st


def ref_grad(x, t, reduction, ii, ls, w, g):
    xd = x.double().detach().requires_grad_(True)
    loss = ref_loss(xd, t, reduction, ii, ls, w)
    loss.backward(g.double().reshape(loss.shape))
    return xd.grad


def _grad_like(reduction, n, dt, seed=5):
    torch = _torch()
    shape = (n,) if reduction == "none" else (1,)
    return (torch.rand(shape, generator=_gen(seed), device="cuda", dtype=torch.float64)
            + 0.5).to(getattr(torch, dt))


# ------------------------------------------------------------------ plain CE over row lengths
@pytest.mark.parametrize("dt", ["float32", "bfloat16", "float16", "float64"])
@pytest.mark.parametrize("c", [1, 7, 1000, 4097, 70000, 131072])
def test_ce_row_lengths(dt, c):
    _torch()
    n = 5 if c > 10000 else 37
    x = _logits(n, c, dt)
    t = _targets(n, c, "int64", -100)
    loss, lse, tw, st = run_fw(x, t)
    assert int(st.item()) == 0
    g = _grad_like("mean", n, dt)
    dx, _ = run_bw(x, t, lse, g, tw)
    check_ce(loss, lse, dx, x, t, "index", "mean", -100, 0.0, None, g, dt, what=(dt, c))


# ------------------------------------------- every forward geometry kind (sweep candidates)
def _fw_geos(dt, c):
    """Knob overrides for the register SKUs that serve rows of ``c``: the default bucket, the
    wide f16/bf16 variants and (sm90a) both cluster ladders."""
    from baracuda_dsl.ops.losses.specs import cross_entropy as spec

    short = {"bfloat16": "bf16", "float16": "f16", "float32": "f32"}[dt]
    rows, wide = spec.FW_ROWS, spec.FW_ROWS.wide
    out = []
    for cap in wide.buckets:
        if cap >= c and short in wide.dtypes:
            out.append(rows.wide_bucket(short, cap))
            break
    if short in wide.dtypes:
        out += [rows.wide_cluster(short, k) for k in wide.clusters
                if rows.wide_cluster(short, k).capacity >= c]
    out += [rows.cluster(short, k, h) for k, h in rows.clusters
            if rows.cluster(short, k, h).capacity >= c][:2]
    return out


@pytest.mark.parametrize("dt", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("c", [4096, 24576, 131072])
@pytest.mark.parametrize("target, ls, weighted", [("index", 0.0, False), ("index", 0.1, True),
                                                  ("prob", 0.0, True)])
def test_fw_geometries(dt, c, target, ls, weighted):
    torch = _torch()
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("capability: cluster SKUs need sm90a")
    n = 6
    x = _logits(n, c, dt, seed=21)
    t = _probs(n, c, dt) if target == "prob" else _targets(n, c, "int64", -100)
    w = _weights(c, dt) if weighted else None
    for k in _fw_geos(dt, c):
        loss, lse, _, st = run_fw(x, t, target, "none", -100, ls, w, knobs=k)
        check_ce(loss, lse, None, x, t, target, "none", -100, ls, w, None, dt, what=k)


# ---------------------------------------------------------------------- option combinations
COMBOS = list(itertools.product(["none", "mean", "sum"], [False, True], [0.0, 0.2],
                                ["index", "prob"]))


@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
@pytest.mark.parametrize("c", [7, 4097])
@pytest.mark.parametrize("reduction, weighted, ls, target", COMBOS)
def test_ce_options(dt, c, reduction, weighted, ls, target):
    n = 29
    x = _logits(n, c, dt, seed=11)
    t = _probs(n, c, dt) if target == "prob" else _targets(n, c, "int32", 3 if c > 3 else -100)
    # torch accepts only a negative ignore_index with probability targets (and ignores it)
    ii = (3 if c > 3 else -100) if target == "index" else -7
    w = _weights(c, dt) if weighted else None
    loss, lse, tw, st = run_fw(x, t, target, reduction, ii, ls, w)
    g = _grad_like(reduction, n, dt)
    dx, _ = run_bw(x, t, lse, g, tw, target, reduction, ii, ls, w)
    check_ce(loss, lse, dx, x, t, target, reduction, ii, ls, w, g, dt,
             what=(dt, c, reduction, weighted, ls, target))


@pytest.mark.parametrize("dt", ["float64", "float16"])
def test_ce_options_other_dtypes(dt):
    n, c = 17, 1000
    x = _logits(n, c, dt, seed=4)
    for target, ls, weighted in (("index", 0.1, True), ("prob", 0.05, True), ("index", 0.0, True)):
        t = _probs(n, c, dt) if target == "prob" else _targets(n, c, "int64", -100)
        w = _weights(c, dt) if weighted else None
        loss, lse, tw, st = run_fw(x, t, target, "mean", -100, ls, w)
        g = _grad_like("mean", n, dt)
        dx, _ = run_bw(x, t, lse, g, tw, target, "mean", -100, ls, w)
        check_ce(loss, lse, dx, x, t, target, "mean", -100, ls, w, g, dt,
                 what=(dt, target, ls))


@pytest.mark.parametrize("dt", ["float32", "bfloat16", "float64"])
@pytest.mark.parametrize("c", [33, 4096, 70000, 300000])
def test_extreme_logits(dt, c):
    """Huge logits (max subtracted exactly: no overflow, no cancellation NaN) and −inf logits
    (exact zero probability) in every geometry (register, cluster, loop); FW and BW vs float64."""
    torch = _torch()
    big = {"float32": 1e38, "bfloat16": 1e38, "float64": 1e300}[dt]
    x = _logits(4, c, dt, seed=21)
    x[0, ::3] = big
    x[1, ::2] = float("-inf")
    x[3, 5] = -big
    t = torch.tensor([0, 1, 2, 3], device="cuda")
    loss, lse, tw, st = run_fw(x, t, reduction="none")
    assert st.item() == 0 and torch.isfinite(loss).all()
    g = torch.ones((4,), device="cuda", dtype=x.dtype)
    dx, _ = run_bw(x, t, lse, g, None, reduction="none")
    # the backward reads the saved lse = max + log Σ: for row 0 (max 1e38) the log-sum is below
    # the lse's rounding (documented limit), so only rows 1-3 (−inf / −huge entries) of dx are
    # checked; every loss and lse is
    check_ce(loss, lse, dx, x, t, "index", "none", -100, 0.0, None, g, dt, rows=slice(1, None),
             what=(dt, c))


# --------------------------------------------------------------------- layouts / edge cases
@pytest.mark.parametrize("pad", [8, 3])
def test_strided_rows(pad):
    dt = "bfloat16"
    n, c = 19, 1000
    x = _logits(n, c, dt, pad=pad)
    t = _targets(n, c, "int64", -100)
    loss, lse, tw, st = run_fw(x, t, reduction="none")
    g = _grad_like("none", n, dt)
    dx, _ = run_bw(x, t, lse, g, None, reduction="none", pad=pad)
    check_ce(loss, lse, dx, x, t, "index", "none", -100, 0.0, None, g, dt, what=("pad", pad))


def test_empty_n():
    torch = _torch()
    x = _logits(0, 10, "float32")
    t = torch.zeros((0,), dtype=torch.int64, device="cuda")
    loss, *_ = run_fw(x, t, reduction="mean")
    assert torch.isnan(loss).all()  # torch: mean over nothing is nan
    loss, *_ = run_fw(x, t, reduction="sum")
    assert loss.item() == 0.0
    loss, *_ = run_fw(x, t, reduction="none")
    assert loss.numel() == 0


def test_all_ignored_mean_is_nan():
    torch = _torch()
    x = _logits(4, 10, "float32")
    t = torch.full((4,), -100, dtype=torch.int64, device="cuda")
    loss, *_ = run_fw(x, t)
    assert torch.isnan(loss).all()


@pytest.mark.parametrize("c", [7, 4097, 70000])
def test_bad_targets_set_status(c):
    torch = _torch()
    dt = "float32"
    n = 9
    x = _logits(n, c, dt)
    t = _targets(n, c, "int64", -100, ignore_frac=0.0)
    t[1] = c + 5
    t[4] = -3
    t[6] = 2**40  # beyond int32: the high word matters
    loss, lse, tw, st = run_fw(x, t, reduction="none")
    assert int(st.item()) == 1
    ok = t.clone()
    ok[torch.tensor([1, 4, 6], device="cuda")] = -100
    # bad targets are treated as ignored: loss 0
    check_ce(loss, lse, None, x, ok, "index", "none", -100, 0.0, None, None, dt, what="bad")
    loss2, _, _, st2 = run_fw(x, ok, reduction="none")
    assert int(st2.item()) == 0
    g = _grad_like("none", n, dt)
    dx, st3 = run_bw(x, t, lse, g, None, reduction="none")
    assert int(st3.item()) == 1
    assert (dx[[1, 4, 6]] == 0).all()


# ------------------------------------------------------------------------------------- NLL
@pytest.mark.parametrize("dt", ["float32", "bfloat16", "float64"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll(dt, reduction, weighted):
    torch = _torch()
    F = torch.nn.functional
    ce = _ce()
    n, c = 33, 1001
    x = torch.log_softmax(_logits(n, c, "float64"), 1).to(getattr(torch, dt))
    t = _targets(n, c, "int64", -100)
    t[0] = c  # bad
    w = _weights(c, dt) if weighted else None
    plan = ce.NLLLossPlan.select(ce.NLLLossDescriptor(n, c, dt, reduction, -100, weighted))
    loss = _nan((n,) if reduction == "none" else (1,), dt)
    tw = None if reduction == "none" else _nan((1,), CT[dt])
    st = torch.zeros((1,), dtype=torch.int32, device="cuda")
    plan.run(ce.NLLLossArgs(x, t, loss, w, tw, st), workspace=_ws(plan))
    assert int(st.item()) == 1
    t[0] = -100
    ref = F.nll_loss(x.double(), t, weight=None if w is None else w.double(), reduction=reduction)
    check_nll(loss, x, t, w, reduction, dt, "nll")
    # backward
    g = _grad_like(reduction, n, dt)
    xd = x.double().requires_grad_(True)
    F.nll_loss(xd, t, weight=None if w is None else w.double(),
               reduction=reduction).backward(g.double().reshape(ref.shape))
    bp = ce.NLLLossBackwardPlan.select(ce.NLLLossBackwardDescriptor(n, c, dt, reduction, -100,
                                                                    weighted))
    dx = _nan((n, c), dt)
    bp.run(ce.NLLLossBackwardArgs(t, g, dx, w, tw))
    # dx = −g·w_t / Σw at the target, 0 elsewhere: the total weight (a sum over n rows) and a
    # product and a division: (row_depth(n) + 2) roundings relative
    check(dx, xd.grad, dt, (row_depth(n) + 2) * eps(CT[dt]) * xd.grad.abs(), what="nll dx")


# ------------------------------------------------------------------------------- namespace
def test_namespace_kdim_and_unbatched():
    torch = _torch()
    F = torch.nn.functional
    import array_api as xp
    import array_api.losses._cross_entropy as L
    x = (torch.randn((3, 11, 4, 5), generator=_gen(0), device="cuda", dtype=torch.float64)
         ).float()
    t = torch.randint(0, 11, (3, 4, 5), generator=_gen(1), device="cuda")
    t[0, 0, 0] = -100
    X, T = xp.from_dlpack(x), xp.from_dlpack(t)
    # the (N, C, d1, d2) problem is the rows (n, d1, d2) of x moved class-last
    x2, t2 = x.movedim(1, -1).reshape(-1, 11), t.reshape(-1)
    lsx = torch.log_softmax(x, 1)
    for red in ("none", "mean", "sum"):
        out = torch.from_dlpack(L.cross_entropy(X, T, reduction=red, label_smoothing=0.1))
        ref = F.cross_entropy(x.double(), t, reduction=red, label_smoothing=0.1)
        assert tuple(out.shape) == tuple(ref.shape)
        check_ce(out.reshape(-1) if red == "none" else out, None, None, x2, t2, "index", red,
                 -100, 0.1, None, None, "float32", what=("xp", red))
        out = torch.from_dlpack(L.nll_loss(xp.from_dlpack(lsx), T, reduction=red))
        # the same (f32) log-probabilities as ours, in float64
        check_nll(out.reshape(-1) if red == "none" else out, lsx.movedim(1, -1).reshape(-1, 11),
                  t2, None, red, "float32", ("xp nll", red))
    p = torch.softmax(torch.randn_like(x), 1)
    out = torch.from_dlpack(L.cross_entropy(X, xp.from_dlpack(p)))
    check_ce(out, None, None, x2, p.movedim(1, -1).reshape(-1, 11), "prob", "mean", -100, 0.0,
             None, None, "float32", what="xp prob")
    out = torch.from_dlpack(L.cross_entropy(xp.from_dlpack(x[0, :, 0, 0].contiguous()),
                                            xp.from_dlpack(t[1, 0, 0])))
    check_ce(out.reshape(1), None, None, x[0, :, 0, 0].reshape(1, 11), t[1, 0, 0].reshape(1),
             "index", "mean", -100, 0.0, None, None, "float32", what="xp unbatched")
    bad = t.clone()
    bad[1, 1, 1] = 11
    with pytest.raises(IndexError):
        L.cross_entropy(X, xp.from_dlpack(bad))


# ----------------------------------------------------------------------- fused linear + CE
@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_linear_cross_entropy(dt, reduction):
    torch = _torch()
    import baracuda_dsl.ops.losses.linear_cross_entropy as lce
    n, k, v, chunk = 64, 96, 1000, 256
    x = (torch.randn((n, k), generator=_gen(0), device="cuda", dtype=torch.float64) * 0.5
         ).to(getattr(torch, dt))
    W = (torch.randn((v, k), generator=_gen(1), device="cuda", dtype=torch.float64) * 0.5
         ).to(getattr(torch, dt))
    t = _targets(n, v, "int64", -100)
    plan = lce.LinearCrossEntropyPlan.select(lce.LinearCrossEntropyDescriptor(
        n, k, v, dt, reduction, -100, "int64", chunk))
    loss = _nan((n,) if reduction == "none" else (1,), dt)
    lse = _nan((n,), "float32")
    tw = None if reduction == "none" else _nan((1,), "float32")
    st = torch.zeros((1,), dtype=torch.int32, device="cuda")
    plan.run(lce.LinearCrossEntropyArgs(x, W, t, loss, lse, tw, st), workspace=_ws(plan))
    assert int(st.item()) == 0
    g = _grad_like(reduction, n, dt)
    bp = lce.LinearCrossEntropyBackwardPlan.select(lce.LinearCrossEntropyBackwardDescriptor(
        n, k, v, dt, reduction, -100, "int64", chunk))
    dx = _nan((n, k), dt)
    dW = _nan((v, k), dt)
    bp.run(lce.LinearCrossEntropyBackwardArgs(x, W, t, lse, g, dx, dW, tw),
           workspace=_ws(bp))
    check_linear_ce(loss, lse, dx, dW, x, W, t, reduction, g, dt, chunk, (dt, reduction))


def test_linear_cross_entropy_namespace_and_bad_target():
    torch = _torch()
    import array_api as xp
    import array_api.losses._cross_entropy as L
    x = torch.randn((16, 32), generator=_gen(0), device="cuda")
    W = torch.randn((300, 32), generator=_gen(1), device="cuda")
    t = torch.randint(0, 300, (16,), generator=_gen(2), device="cuda")
    out = torch.from_dlpack(L.linear_cross_entropy(xp.from_dlpack(x), xp.from_dlpack(W),
                                                   xp.from_dlpack(t), chunk=128))
    check_linear_ce(out, None, None, None, x, W, t, "mean", None, "float32", 128, "xp")
    t[3] = 300
    with pytest.raises(IndexError):
        L.linear_cross_entropy(xp.from_dlpack(x), xp.from_dlpack(W), xp.from_dlpack(t))
