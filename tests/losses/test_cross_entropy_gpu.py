"""Cross-entropy / NLL (FW + BW) and the fused linear cross-entropy on the GPU against float64
torch references (torch.nn.functional + autograd)."""

import dataclasses
import itertools

import pytest

pytestmark = pytest.mark.gpu

TOL = {"float32": 3e-5, "float16": 2e-3, "bfloat16": 1.2e-2, "float64": 1e-11}
CT = {"float32": "float32", "float16": "float32", "bfloat16": "float32", "float64": "float64"}


def _torch():
    return pytest.importorskip("torch")


def _ce():
    import baracuda_dsl.ops.losses.cross_entropy as ce

    return ce


def relerr(out, ref):
    torch = _torch()
    out = out.double().reshape(ref.shape)
    ref = ref.double()
    assert not torch.isnan(out).any(), "NaN in output (unwritten poisoned element?)"
    den = ref.norm().item()
    return (out - ref).norm().item() / (den if den > 0 else 1.0)


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
    torch = _torch()
    n = 5 if c > 10000 else 37
    x = _logits(n, c, dt)
    t = _targets(n, c, "int64", -100)
    loss, lse, tw, st = run_fw(x, t)
    ref = ref_loss(x, t, "mean", -100, 0.0, None)
    assert relerr(loss, ref) < TOL[dt]
    assert relerr(lse, torch.logsumexp(x.double(), 1)) < (1e-12 if dt == "float64" else 2e-6)
    assert int(st.item()) == 0
    g = _grad_like("mean", n, dt)
    dx, _ = run_bw(x, t, lse, g, tw)
    assert relerr(dx, ref_grad(x, t, "mean", -100, 0.0, None, g)) < TOL[dt] * 2


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
    ref = ref_loss(x, t, "none", -100, ls, w)
    for k in _fw_geos(dt, c):
        loss, lse, _, st = run_fw(x, t, target, "none", -100, ls, w, knobs=k)
        assert relerr(loss, ref) < TOL[dt] * 2, k
        assert relerr(lse, torch.logsumexp(x.double(), 1)) < 2e-6, k


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
    ref = ref_loss(x, t, reduction, ii, ls, w)
    assert relerr(loss, ref) < TOL[dt] * 2
    g = _grad_like(reduction, n, dt)
    dx, _ = run_bw(x, t, lse, g, tw, target, reduction, ii, ls, w)
    assert relerr(dx, ref_grad(x, t, reduction, ii, ls, w, g)) < TOL[dt] * 3


@pytest.mark.parametrize("dt", ["float64", "float16"])
def test_ce_options_other_dtypes(dt):
    n, c = 17, 1000
    x = _logits(n, c, dt, seed=4)
    for target, ls, weighted in (("index", 0.1, True), ("prob", 0.05, True), ("index", 0.0, True)):
        t = _probs(n, c, dt) if target == "prob" else _targets(n, c, "int64", -100)
        w = _weights(c, dt) if weighted else None
        loss, lse, tw, st = run_fw(x, t, target, "mean", -100, ls, w)
        assert relerr(loss, ref_loss(x, t, "mean", -100, ls, w)) < TOL[dt] * 2
        g = _grad_like("mean", n, dt)
        dx, _ = run_bw(x, t, lse, g, tw, target, "mean", -100, ls, w)
        assert relerr(dx, ref_grad(x, t, "mean", -100, ls, w, g)) < TOL[dt] * 3


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
    ref = ref_loss(x, t, "none", -100, 0.0, None)
    assert st.item() == 0 and torch.isfinite(loss).all()
    assert relerr(loss, ref) <= TOL[dt]
    g = torch.ones((4,), device="cuda", dtype=x.dtype)
    dx, _ = run_bw(x, t, lse, g, None, reduction="none")
    gref = ref_grad(x, t, "none", -100, 0.0, None, g)
    # the backward reads the saved lse = max + log Σ: for row 0 (max 1e38) the log-sum is below
    # the lse's rounding (documented limit), so only rows 1-3 (−inf / −huge entries) are checked
    assert torch.isfinite(dx[1:]).all() and relerr(dx[1:], gref[1:]) <= 4 * TOL[dt]


# --------------------------------------------------------------------- layouts / edge cases
@pytest.mark.parametrize("pad", [8, 3])
def test_strided_rows(pad):
    dt = "bfloat16"
    n, c = 19, 1000
    x = _logits(n, c, dt, pad=pad)
    t = _targets(n, c, "int64", -100)
    loss, lse, tw, st = run_fw(x, t, reduction="none")
    assert relerr(loss, ref_loss(x, t, "none", -100, 0.0, None)) < TOL[dt]
    g = _grad_like("none", n, dt)
    dx, _ = run_bw(x, t, lse, g, None, reduction="none", pad=pad)
    assert relerr(dx, ref_grad(x, t, "none", -100, 0.0, None, g)) < TOL[dt] * 2


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
    assert relerr(loss, ref_loss(x, ok, "none", -100, 0.0, None)) < TOL[dt]
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
    assert relerr(loss, ref) < TOL[dt]
    # backward
    g = _grad_like(reduction, n, dt)
    xd = x.double().requires_grad_(True)
    F.nll_loss(xd, t, weight=None if w is None else w.double(),
               reduction=reduction).backward(g.double().reshape(ref.shape))
    bp = ce.NLLLossBackwardPlan.select(ce.NLLLossBackwardDescriptor(n, c, dt, reduction, -100,
                                                                    weighted))
    dx = _nan((n, c), dt)
    bp.run(ce.NLLLossBackwardArgs(t, g, dx, w, tw))
    assert relerr(dx, xd.grad) < TOL[dt]


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
    for red in ("none", "mean", "sum"):
        out = torch.from_dlpack(L.cross_entropy(X, T, reduction=red, label_smoothing=0.1))
        ref = F.cross_entropy(x.double(), t, reduction=red, label_smoothing=0.1)
        assert tuple(out.shape) == tuple(ref.shape) and relerr(out, ref) < 1e-5
        out = torch.from_dlpack(L.nll_loss(xp.from_dlpack(torch.log_softmax(x, 1)), T,
                                           reduction=red))
        ref = F.nll_loss(torch.log_softmax(x.double(), 1), t, reduction=red)
        assert relerr(out, ref) < 1e-5
    p = torch.softmax(torch.randn_like(x), 1)
    out = torch.from_dlpack(L.cross_entropy(X, xp.from_dlpack(p)))
    assert relerr(out, F.cross_entropy(x.double(), p.double())) < 1e-5
    out = torch.from_dlpack(L.cross_entropy(xp.from_dlpack(x[0, :, 0, 0].contiguous()),
                                            xp.from_dlpack(t[1, 0, 0])))
    assert relerr(out, F.cross_entropy(x[0, :, 0, 0].double(), t[1, 0, 0])) < 1e-5
    bad = t.clone()
    bad[1, 1, 1] = 11
    with pytest.raises(IndexError):
        L.cross_entropy(X, xp.from_dlpack(bad))


# ----------------------------------------------------------------------- fused linear + CE
@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_linear_cross_entropy(dt, reduction):
    torch = _torch()
    F = torch.nn.functional
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
    xd = x.double().requires_grad_(True)
    Wd = W.double().requires_grad_(True)
    logits = xd @ Wd.T
    ref = F.cross_entropy(logits, t, reduction=reduction)
    tol = 5e-5 if dt == "float32" else 1.5e-2
    assert relerr(loss, ref) < tol
    assert relerr(lse, torch.logsumexp(logits.detach(), 1)) < tol
    assert int(st.item()) == 0
    g = _grad_like(reduction, n, dt)
    ref.backward(g.double().reshape(ref.shape))
    bp = lce.LinearCrossEntropyBackwardPlan.select(lce.LinearCrossEntropyBackwardDescriptor(
        n, k, v, dt, reduction, -100, "int64", chunk))
    dx = _nan((n, k), dt)
    dW = _nan((v, k), dt)
    bp.run(lce.LinearCrossEntropyBackwardArgs(x, W, t, lse, g, dx, dW, tw),
           workspace=_ws(bp))
    assert relerr(dx, xd.grad) < tol * 3
    assert relerr(dW, Wd.grad) < tol * 3


def test_linear_cross_entropy_namespace_and_bad_target():
    torch = _torch()
    F = torch.nn.functional
    import array_api as xp
    import array_api.losses._cross_entropy as L
    x = torch.randn((16, 32), generator=_gen(0), device="cuda")
    W = torch.randn((300, 32), generator=_gen(1), device="cuda")
    t = torch.randint(0, 300, (16,), generator=_gen(2), device="cuda")
    out = torch.from_dlpack(L.linear_cross_entropy(xp.from_dlpack(x), xp.from_dlpack(W),
                                                   xp.from_dlpack(t), chunk=128))
    assert relerr(out, F.cross_entropy(x.double() @ W.double().T, t)) < 5e-5
    t[3] = 300
    with pytest.raises(IndexError):
        L.linear_cross_entropy(xp.from_dlpack(x), xp.from_dlpack(W), xp.from_dlpack(t))
