"""cosine_embedding / multi_margin / multilabel_margin / triplet_margin losses (FW + BW) on the
GPU against float64 torch references (autograd for the backward).

Every element is checked (tests/_checks.py via _loss_gpu_checks) against NaN-poisoned outputs.
Bounds: the output dtype's rounding relative to each result, plus k·u·(the magnitude of the
terms the result is formed from) — the row sums of depth row_depth(row length), the per-term
roundings (see each ``_*_err``) — and for sum / mean the final fixed-order sum over the rows."""

import math

import numpy as np
import pytest

from _loss_gpu_checks import CT, check, eps, reduce_error, row_depth, run_with_workspace
from baracuda_dsl.ops.losses import loss_row as L

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float64", "bfloat16", "float16"]
SHORT = {"float32": "f32", "float64": "f64", "bfloat16": "bf16", "float16": "f16"}
REDS = ["none", "mean", "sum"]
SHAPES = [(1, 1), (7, 33), (5, 256), (3, 1000), (2, 4099)]


def _torch():
    return pytest.importorskip("torch")


def _gen(seed):
    torch = _torch()
    return torch.Generator(device="cuda").manual_seed(seed)


def _rand(shape, dt, seed, scale=1.0):
    torch = _torch()
    return (torch.randn(shape, generator=_gen(seed), device="cuda", dtype=torch.float64)
            * scale).to(getattr(torch, dt))


def _poison(shape, dt):
    torch = _torch()
    return torch.full(shape, float("nan"), device="cuda", dtype=getattr(torch, dt))


def _out_shape(n, red):
    return (n,) if red == "none" else ()


def _check_empty_batch(out, red):
    """An empty batch: mean → NaN, sum → 0, none → empty (torch returns uninitialised memory
    for multi_margin / multilabel_margin here; ours follows the other losses)."""
    torch = _torch()
    if red == "mean":
        assert torch.isnan(out).all()
    elif red == "sum":
        assert (out == 0).all()


def _dloss(n, red, dt, seed):
    return _rand(_out_shape(n, red), dt, seed)


def _leaf(x):
    return x.detach().double().cpu().requires_grad_(True)


def _gscale(g, n, red):
    """Per-row factor of the upstream gradient: g (none), g for every row (sum), g/n (mean)."""
    gd = g.double().cpu()
    if red == "none":
        return gd.reshape(n)
    return gd.reshape(()).expand(n) / (n if red == "mean" else 1)


def _cos_bounds(a, b, y, margin, red, dt, g=None):
    """Forward / gradient error bounds of cosine_embedding (a, b: float64 leaves).  The dot
    product and the squared norms are row sums of depth d = row_depth(D) (the dot's error
    d·u·Σ|a_i·b_i| <= d·u·|a||b|, the norms d·u relative), then the root and the division: cos
    errs by <= (2d + 6)·u absolute; the loss adds one rounding.  ∂cos/∂a_i = b_i/(|a||b|) −
    cos·a_i/|a|² cancels: (2d + 10)·u relative to |b_i|/(|a||b|) + |a_i|/|a|² (times the row's
    |g|, 0 for a row whose hinge is inactive)."""
    torch = _torch()
    n, dd = a.shape[0], row_depth(a.shape[1])
    u = eps(CT[dt])
    per = torch.nn.functional.cosine_embedding_loss(a.detach(), b.detach(), y.double().cpu(),
                                                    margin=margin, reduction="none")
    ref, err = reduce_error(per, (2 * dd + 7) * u + u * per.abs(), red, u)
    if g is None:
        return ref, err
    na = torch.sqrt((a.detach() ** 2).sum(1, keepdim=True) + 1e-12)
    nb = torch.sqrt((b.detach() ** 2).sum(1, keepdim=True) + 1e-12)
    cos = ((a.detach() * b.detach()).sum(1, keepdim=True) / (na * nb))
    yc = y.double().cpu().reshape(-1, 1)
    act = ((yc == 1) | ((yc == -1) & (cos > margin))).double()
    gs = (_gscale(g, n, red).reshape(-1, 1).abs() * act)
    ga = gs * (2 * dd + 10) * u * (b.detach().abs() / (na * nb) + a.detach().abs() / na ** 2)
    gb = gs * (2 * dd + 10) * u * (a.detach().abs() / (na * nb) + b.detach().abs() / nb ** 2)
    return ref, err, ga, gb


def _mm_bounds(x, t, p, margin, w, red, dt, g):
    """multi_margin: terms t_i = margin − x_y + x_i (2 roundings each: an absolute error
    2u·(|m| + |x_y| + |x_i|) — near the hinge a term may fall either side), ^p, × w_y/c, summed
    over the c classes (depth d = row_depth(c)): per row <= (d + 2p + 2)·u·(|w_y|/c)·
    Σ_{i≠y}(|m| + |x_y| + |x_i|)^p + u·|ℓ|.  ∂/∂x_i = p·t_i^(p−1)·w_y/c (i ≠ y), ∂/∂x_y = −Σ:
    (d + 2p + 4)·u relative to p·(|m| + |x_y| + |x_i|)^(p−1)·|w_y|/c (their sum for y)."""
    torch = _torch()
    n, c = x.shape
    dd, u = row_depth(c), eps(CT[dt])
    xd = x.detach()
    tt = t.cpu()
    wd = w.double().cpu() if w is not None else None
    per = torch.nn.functional.multi_margin_loss(xd, tt, p=p, margin=margin, weight=wd,
                                                reduction="none")
    xy = xd.gather(1, tt[:, None])
    mask = torch.ones_like(xd).scatter_(1, tt[:, None], 0.0)
    wy = (wd[tt] if wd is not None else torch.ones(n, dtype=torch.float64)).abs()[:, None] / c
    m = abs(margin) + xy.abs() + xd.abs()
    row = (wy * (m ** p * mask)).sum(1)
    ref, err = reduce_error(per, (dd + 2 * p + 2) * u * row + u * per.abs(), red, u)
    gm = p * m ** (p - 1) * wy * mask
    gm = gm + (1 - mask) * gm.sum(1, keepdim=True)
    gerr = (dd + 2 * p + 4) * u * gm * _gscale(g, n, red).abs()[:, None]
    return ref, err, gerr


def _mm_target_grad_exact(grad, t):
    """The float64 autograd gradient of multi_margin with each row's target entry re-formed as
    the correctly rounded (math.fsum) ``−Σ_{i≠y} ∂ℓ/∂x_i`` of the row's other entries.

    torch's CPU backward (multi_margin_loss_backward_cpu_kernel) accumulates that entry one class
    at a time (``grad_input_target -= h``): with p = 1 every active class adds the same h, so all
    roundings go the same way and a row of c = 4099 (~4000 active classes) errs by ~330 float64
    ulps (≈ c/4·u relative) — 7e-14, more than the kernel's own bound (depth row_depth(c), a
    tree) and not an error of the kernel.  The re-formed entry differs from the exact one by the
    products h·grad_output torch rounds per entry (u/2 each, relative to the same terms), inside
    :func:`_mm_bounds`' (d + 2p + 4)·u·Σ."""
    gr = grad.detach().clone()
    rows = gr.tolist()
    for r, y in enumerate(t.cpu().tolist()):
        gr[r, y] = -math.fsum(v for j, v in enumerate(rows[r]) if j != y)
    return gr


def _mlm_bounds(x, tn, red, dt, g):
    """multilabel_margin: Σ_j Σ_{i ∉ T} max(0, 1 − (x_{y_j} − x_i)) / c over the k listed
    targets: each term rounds twice (2u·(1 + |x_{y_j}| + |x_i|)), the double sum has depth
    <= d·(k + 1) (d = row_depth(c)): per row (d·(k + 1) + 6)·u·(1/c)·Σ_j Σ_{i∉T}(1 + |x_{y_j}|
    + |x_i|) + u·|ℓ|.  The gradients are counts / c of active pairs: (d·(k + 1) + 6)·u relative
    to k/c (i ∉ T) and (c − |T|)/c per listing (targets)."""
    torch = _torch()
    n, c = x.shape
    dd, u = row_depth(c), eps(CT[dt])
    xd = x.detach()
    per = torch.nn.functional.multilabel_margin_loss(xd, torch.tensor(tn), reduction="none")
    errs = torch.zeros(n, dtype=torch.float64)
    gm = torch.zeros(n, c, dtype=torch.float64)
    for r in range(n):
        lst = []
        for v in tn[r]:
            if v < 0:
                break
            lst.append(int(v))
        k = len(lst)
        tset = sorted(set(lst))
        others = [i for i in range(c) if i not in tset]
        kk = dd * (k + 1) + 6
        mag = sum(float((1 + xd[r, j].abs() + xd[r, others].abs()).sum()) for j in lst) / c
        errs[r] = kk * u * mag
        gm[r, others] = kk * k / c
        for j in lst:
            gm[r, j] += kk * len(others) / c
    ref, err = reduce_error(per, errs + u * per.abs(), red, u)
    return ref, err, u * gm * _gscale(g, n, red).abs()[:, None]


def _trip_bounds(ta, tb, tc, p, swap, red, dt, g):
    """triplet_margin: a distance ‖a − b + eps‖_p takes v_i = a_i − b_i + eps (absolute error
    2u·m_i, m_i = |a_i| + |b_i| + eps), |v_i|^p, a row sum of depth d = row_depth(D) and the
    root (p >= 1: ‖Δv‖_p <= 2u·‖m‖_p): <= (d + 6 + 4p)·u·‖m‖_p; the loss margin + d_ap − d_an
    (swap: the min of two) errs by the sum of two such bounds + u·|ℓ|.  Gradients
    ±sign(v_i)|v_i|^(p−1)/dist^(p−1) per distance: (d + 8 + 8p)·u relative to
    Σ_dist (m_i^(p−1) + |v_i|^(p−1))/dist^(p−1) (times the row's |g|, 0 for an inactive
    hinge)."""
    torch = _torch()
    n, D = ta.shape
    dd, u = row_depth(D), eps(CT[dt])
    a, b, c = ta.detach(), tb.detach(), tc.detach()
    per = torch.nn.functional.triplet_margin_loss(a, b, c, margin=1.0, p=p, eps=1e-6, swap=swap,
                                                  reduction="none")

    def mnorm(x, y):
        return ((x.abs() + y.abs() + 1e-6) ** p).sum(1) ** (1 / p)

    k = dd + 6 + 4 * p
    e_neg = torch.maximum(mnorm(a, c), mnorm(b, c)) if swap else mnorm(a, c)
    ref, err = reduce_error(per, k * u * (mnorm(a, b) + e_neg) + u * per.abs(), red, u)

    def gterm(x, y):
        v = x - y + 1e-6
        dist = (v.abs() ** p).sum(1, keepdim=True) ** (1 / p)
        m = x.abs() + y.abs() + 1e-6
        return (m ** (p - 1) + v.abs() ** (p - 1)) / dist ** (p - 1)

    gs = (_gscale(g, n, red).abs() * (per > 0).double())[:, None] * (dd + 8 + 8 * p) * u
    gab, gac, gbc = gterm(a, b), gterm(a, c), gterm(b, c)
    ga = gs * (gab + gac)
    gb = gs * (gab + (gbc if swap else 0))
    gc = gs * (gac + (gbc if swap else 0))
    return ref, err, (ga, gb, gc)


# ------------------------------------------------------------------------------ cosine
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("red", REDS)
def test_cosine_embedding(dt, red):
    torch = _torch()
    F = torch.nn.functional
    for (n, d), margin in zip(SHAPES + [(0, 5)], (0.0, 0.3, -0.2, 0.5, 0.1, 0.0)):
        x1, x2 = _rand((n, d), dt, 1), _rand((n, d), dt, 2)
        if n > 1:
            x2[0] = x1[0]  # cos = 1
        y = (torch.randint(0, 2, (n,), generator=_gen(3), device="cuda") * 2 - 1).to(x1.dtype)
        out = _poison(_out_shape(n, red), dt)
        desc = L.CosineEmbeddingLossDescriptor(n, d, SHORT[dt], margin, red)
        run_with_workspace(L.CosineEmbeddingLossPlan.select(desc), L.CosineEmbeddingLossArgs(x1, x2, y, out))
        a, b = _leaf(x1), _leaf(x2)
        ref = F.cosine_embedding_loss(a, b, y.double().cpu(), margin=margin, reduction=red)
        if n == 0:
            _check_empty_batch(out, red)
            continue
        g = _dloss(n, red, dt, 4)
        _, err, ea, eb = _cos_bounds(a, b, y, margin, red, dt, g)
        check(out, ref.detach(), dt, err, what=f"cos fw {n}x{d}")
        ref.backward(g.double().cpu())
        dx1, dx2 = _poison((n, d), dt), _poison((n, d), dt)
        bdesc = L.CosineEmbeddingLossBackwardDescriptor(n, d, SHORT[dt], margin, red)
        run_with_workspace(L.CosineEmbeddingLossBackwardPlan.select(bdesc),
             L.CosineEmbeddingLossBackwardArgs(g, x1, x2, y, dx1, dx2))
        check(dx1, a.grad, dt, ea, what="cos dx1")
        check(dx2, b.grad, dt, eb, what="cos dx2")


# ------------------------------------------------------------------------- multi_margin
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_multi_margin(dt, p, weighted):
    torch = _torch()
    F = torch.nn.functional
    for (n, c), red in zip(SHAPES + [(0, 3)], REDS * 2):
        x = _rand((n, c), dt, 5)
        t = torch.randint(0, c, (n,), generator=_gen(6), device="cuda")
        w = (torch.rand(c, generator=_gen(7), device="cuda") + 0.5).to(x.dtype) if weighted \
            else None
        out = _poison(_out_shape(n, red), dt)
        st = torch.zeros(1, dtype=torch.int32, device="cuda")
        desc = L.MultiMarginLossDescriptor(n, c, SHORT[dt], p, 0.8, weighted, red)
        run_with_workspace(L.MultiMarginLossPlan.select(desc), L.MultiMarginLossArgs(x, t, out, w, st))
        assert st.item() == 0
        if n == 0:
            _check_empty_batch(out, red)
            continue
        a = _leaf(x)
        ref = F.multi_margin_loss(a, t.cpu(), p=p, margin=0.8,
                                  weight=None if w is None else w.double().cpu(), reduction=red)
        g = _dloss(n, red, dt, 8)
        _, err, gerr = _mm_bounds(a, t, p, 0.8, w, red, dt, g)
        check(out, ref.detach(), dt, err, what=f"mm fw {n}x{c}")
        ref.backward(g.double().cpu())
        dx = _poison((n, c), dt)
        bdesc = L.MultiMarginLossBackwardDescriptor(n, c, SHORT[dt], p, 0.8, weighted, red)
        run_with_workspace(L.MultiMarginLossBackwardPlan.select(bdesc),
             L.MultiMarginLossBackwardArgs(g, x, t, dx, w))
        check(dx, _mm_target_grad_exact(a.grad, t), dt, gerr, what="mm dx")


def test_multi_margin_bad_and_negative_targets():
    torch = _torch()
    F = torch.nn.functional
    x = _rand((4, 6), "float64", 9)
    t = torch.tensor([1, -1, 6, 2], device="cuda")  # -1 wraps to 5; 6 is out of range
    out = _poison((4,), "float64")
    st = torch.zeros(1, dtype=torch.int32, device="cuda")
    desc = L.MultiMarginLossDescriptor(4, 6, "f64", reduction="none")
    run_with_workspace(L.MultiMarginLossPlan.select(desc), L.MultiMarginLossArgs(x, t, out, None, st))
    assert st.item() == 1
    ref = F.multi_margin_loss(x.cpu(), torch.tensor([1, 5, 0, 2]), reduction="none")
    assert out[2].item() == 0.0
    keep = [0, 1, 3]
    _, err, _ = _mm_bounds(x.cpu()[keep], torch.tensor([1, 5, 2]), 1, 1.0, None, "none",
                           "float64", torch.ones(3))
    check(out[keep], ref[keep], "float64", err, what="wrapped targets")


# -------------------------------------------------------------------- multilabel_margin
def _ml_targets(n, c, seed):
    rng = np.random.default_rng(seed)
    t = np.full((n, c), -1, dtype=np.int64)
    for r in range(n):
        k = int(rng.integers(0, min(c, 6) + 1))
        t[r, :k] = rng.integers(0, c, k)  # duplicates allowed
    if n and c > 3:
        t[0, :4] = [c - 1, c - 1, -1, 0]  # a duplicate, then entries after -1 are ignored
    return t


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("red", REDS)
def test_multilabel_margin(dt, red):
    torch = _torch()
    F = torch.nn.functional
    for n, c in [(1, 1), (7, 33), (3, 300), (2, 1200), (0, 4)]:
        x = _rand((n, c), dt, 10)
        tn = _ml_targets(n, c, 11)
        t = torch.tensor(tn, device="cuda")
        out = _poison(_out_shape(n, red), dt)
        st = torch.zeros(1, dtype=torch.int32, device="cuda")
        desc = L.MultilabelMarginLossDescriptor(n, c, SHORT[dt], red)
        run_with_workspace(L.MultilabelMarginLossPlan.select(desc), L.MultilabelMarginLossArgs(x, t, out, st))
        assert st.item() == 0
        if n == 0:
            _check_empty_batch(out, red)
            continue
        a = _leaf(x)
        ref = F.multilabel_margin_loss(a, torch.tensor(tn), reduction=red)
        g = _dloss(n, red, dt, 12)
        _, err, gerr = _mlm_bounds(a, tn, red, dt, g)
        check(out, ref.detach(), dt, err, what=f"mlm fw {n}x{c}")
        ref.backward(g.double().cpu())
        dx = _poison((n, c), dt)
        bdesc = L.MultilabelMarginLossBackwardDescriptor(n, c, SHORT[dt], red)
        run_with_workspace(L.MultilabelMarginLossBackwardPlan.select(bdesc),
             L.MultilabelMarginLossBackwardArgs(g, x, t, dx))
        check(dx, a.grad, dt, gerr, what="mlm dx")


def test_multilabel_bad_target_sets_status():
    torch = _torch()
    x = _rand((2, 5), "float32", 13)
    t = torch.tensor([[1, 7, 2, -1, -1], [0, -1, -1, -1, -1]], device="cuda")
    out = _poison((2,), "float32")
    st = torch.zeros(1, dtype=torch.int32, device="cuda")
    desc = L.MultilabelMarginLossDescriptor(2, 5, "f32", "none")
    run_with_workspace(L.MultilabelMarginLossPlan.select(desc), L.MultilabelMarginLossArgs(x, t, out, st))
    assert st.item() == 1 and not torch.isnan(out).any()


# ------------------------------------------------------------------------------ triplet
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("p,swap", [(2.0, False), (2.0, True), (1.0, False), (3.0, True),
                                    (1.5, False)])
def test_triplet_margin(dt, p, swap):
    torch = _torch()
    F = torch.nn.functional
    for (n, d), red in zip(SHAPES + [(0, 3)], REDS * 2):
        a, b, c = (_rand((n, d), dt, s) for s in (14, 15, 16))
        out = _poison(_out_shape(n, red), dt)
        desc = L.TripletMarginLossDescriptor(n, d, SHORT[dt], 1.0, p, 1e-6, swap, red)
        run_with_workspace(L.TripletMarginLossPlan.select(desc), L.TripletMarginLossArgs(a, b, c, out))
        ta, tb, tc = _leaf(a), _leaf(b), _leaf(c)
        ref = F.triplet_margin_loss(ta, tb, tc, margin=1.0, p=p, eps=1e-6, swap=swap,
                                    reduction=red)
        if n == 0:
            _check_empty_batch(out, red)
            continue
        g = _dloss(n, red, dt, 17)
        _, err, gerrs = _trip_bounds(ta, tb, tc, p, swap, red, dt, g)
        check(out, ref.detach(), dt, err, what=f"trip fw {n}x{d}")
        ref.backward(g.double().cpu())
        da, db, dc = (_poison((n, d), dt) for _ in range(3))
        bdesc = L.TripletMarginLossBackwardDescriptor(n, d, SHORT[dt], 1.0, p, 1e-6, swap, red)
        run_with_workspace(L.TripletMarginLossBackwardPlan.select(bdesc),
             L.TripletMarginLossBackwardArgs(g, a, b, c, da, db, dc))
        for mine, ref_t, e_, nm in ((da, ta, gerrs[0], "da"), (db, tb, gerrs[1], "dp"),
                                    (dc, tc, gerrs[2], "dn")):
            check(mine, ref_t.grad, dt, e_, what=f"trip {nm} {n}x{d}")


# ------------------------------------------------------------------ strided / misc / xp
def test_strided_inputs_and_outputs():
    torch = _torch()
    F = torch.nn.functional
    base = _rand((40, 90), "float32", 18)
    x1 = base[::3, ::2]          # (14, 45), both strides non-unit
    x2 = _rand((45, 14), "float32", 19).t()   # transposed
    y = torch.ones(28, device="cuda")[::2]
    y[3:6] = -1
    outb = _poison((28,), "float32")
    out = outb[::2]
    desc = L.CosineEmbeddingLossDescriptor(14, 45, "f32", 0.1, "none")
    run_with_workspace(L.CosineEmbeddingLossPlan.select(desc), L.CosineEmbeddingLossArgs(x1, x2, y, out))
    ref, err = _cos_bounds(x1.double().cpu(), x2.double().cpu(), y, 0.1, "none", "float32")
    check(out, ref, "float32", err, what="strided cosine")
    assert torch.isnan(outb[1::2]).all()  # gaps untouched
    a = base[::3, 1::2]
    dxb = _poison((14, 90), "float32")
    dx = dxb[:, ::2]
    t = torch.randint(0, 45, (14,), generator=_gen(20), device="cuda")
    g = _rand((14,), "float32", 21)
    la = _leaf(a)
    F.multi_margin_loss(la, t.cpu(), reduction="none").backward(g.double().cpu())
    bdesc = L.MultiMarginLossBackwardDescriptor(14, 45, "f32", reduction="none")
    run_with_workspace(L.MultiMarginLossBackwardPlan.select(bdesc), L.MultiMarginLossBackwardArgs(g, a, t, dx))
    _, _, gerr = _mm_bounds(la, t, 1, 1.0, None, "none", "float32", g)
    check(dx, la.grad, "float32", gerr, what="strided multi_margin dx")
    assert torch.isnan(dxb[:, 1::2]).all()


def test_reductions_bit_identical_reruns():
    torch = _torch()
    x = _rand((3000, 64), "float32", 22)
    t = torch.randint(0, 64, (3000,), generator=_gen(23), device="cuda")
    plan = L.MultiMarginLossPlan.select(L.MultiMarginLossDescriptor(3000, 64, "f32",
                                                                    reduction="sum"))
    outs = []
    for _ in range(3):
        out = _poison((), "float32")
        run_with_workspace(plan, L.MultiMarginLossArgs(x, t, out))
        outs.append(out.item())
    assert outs[0] == outs[1] == outs[2] and math.isfinite(outs[0])


def test_namespace_functions():
    torch = _torch()
    import array_api as xp
    from array_api.losses import _row as R

    rng = np.random.default_rng(24)
    x1, x2 = rng.standard_normal((5, 9)), rng.standard_normal((5, 9))
    y = np.array([1, -1, 1, -1, -1])
    got = R.cosine_embedding_loss(xp.asarray(x1), xp.asarray(x2), xp.asarray(y), margin=0.2)
    ref, err = _cos_bounds(torch.tensor(x1), torch.tensor(x2), torch.tensor(y), 0.2, "mean",
                           "float64")
    check(torch.tensor(got.to_numpy()), ref, "float64", err, what="xp cosine")
    got = R.cosine_embedding_loss(xp.asarray(x1[0]), xp.asarray(x2[0]), xp.asarray(y[0]),
                                  reduction="none")
    assert got.shape == ()
    x = rng.standard_normal((4, 7))
    t = np.array([0, 6, 3, 3], dtype=np.int32)
    got = R.multi_margin_loss(xp.asarray(x), xp.asarray(t), p=2, reduction="none")
    ref, err, _ = _mm_bounds(torch.tensor(x), torch.tensor(t).long(), 2, 1.0, None, "none",
                             "float64", torch.ones(4))
    check(torch.tensor(got.to_numpy()), ref, "float64", err, what="xp multi_margin")
    with pytest.raises(IndexError):
        R.multi_margin_loss(xp.asarray(x), xp.asarray(np.array([0, 7, 1, 1])))
    tn = _ml_targets(4, 7, 25)
    got = R.multilabel_margin_loss(xp.asarray(x), xp.asarray(tn), reduction="sum")
    ref, err, _ = _mlm_bounds(torch.tensor(x), tn, "sum", "float64", torch.ones(()))
    check(torch.tensor(got.to_numpy()), ref, "float64", err, what="xp multilabel")
    a, b, c = (rng.standard_normal((6, 5)) for _ in range(3))
    got = R.triplet_margin_loss(xp.asarray(a), xp.asarray(b), xp.asarray(c), swap=True)
    ref, err, _ = _trip_bounds(torch.tensor(a), torch.tensor(b), torch.tensor(c), 2.0, True,
                               "mean", "float64", torch.ones(()))
    check(torch.tensor(got.to_numpy()), ref, "float64", err, what="xp triplet")
    with pytest.raises(ValueError):
        R.triplet_margin_loss(xp.asarray(a), xp.asarray(b), xp.asarray(c), reduction="avg")
