"""Row-structured losses and CTC without a GPU: validation, SKU choice and space, cross-compile,
and numpy float64 emulations of the kernels' forward / backward formulas checked against torch
CPU float64 autograd (so the GPU kernels implement proven math)."""

import math

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.ops.losses import ctc as C
from baracuda_dsl.ops.losses import loss_row as L
from baracuda_dsl.plan import align_up

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


# ------------------------------------------------------------------ validation / SKU choice
def test_descriptors_validate():
    with pytest.raises(bd.InvalidProblemError):
        L.CosineEmbeddingLossDescriptor(4, 8, "f32", reduction="avg")
    with pytest.raises(bd.InvalidProblemError):
        L.CosineEmbeddingLossDescriptor(-1, 8, "f32")
    with pytest.raises(bd.InvalidProblemError):
        L.CosineEmbeddingLossDescriptor(4, 8, "f32", margin=math.inf)
    with pytest.raises(bd.UnsupportedError):
        L.CosineEmbeddingLossDescriptor(4, 8, "int32")
    with pytest.raises(bd.UnsupportedError):
        L.MultiMarginLossDescriptor(4, 8, "f32", p=3)
    with pytest.raises(bd.InvalidProblemError):
        L.MultiMarginLossDescriptor(4, 0, "f32")
    with pytest.raises(bd.InvalidProblemError):
        L.MultilabelMarginLossDescriptor(4, 0, "f32")
    with pytest.raises(bd.InvalidProblemError):
        L.TripletMarginLossDescriptor(4, 8, "f32", p=0.0)
    with pytest.raises(bd.InvalidProblemError):
        C.CTCLossDescriptor(5, 2, 4, "f32", 3, blank=4)
    with pytest.raises(bd.InvalidProblemError):
        C.CTCLossDescriptor(5, 2, 0, "f32", 3)
    with pytest.raises(bd.InvalidProblemError):
        C.CTCLossDescriptor(5, 2, 4, "f32", 3, total=6)
    with pytest.raises(bd.InvalidProblemError):
        C.CTCLossDescriptor(5, 2, 4, "f32", 3, reduction="batchmean")
    # a backward plan needs its own descriptor type
    with pytest.raises(bd.InvalidProblemError):
        L.CosineEmbeddingLossBackwardPlan.select(L.CosineEmbeddingLossDescriptor(2, 3, "f32"),
                                                 PREF)
    with pytest.raises(bd.InvalidProblemError):
        C.CTCLossPlan.select(C.CTCLossBackwardDescriptor(5, 2, 4, "f32", 3), PREF)


def test_select_knobs_and_workspace():
    p = L.CosineEmbeddingLossPlan.select(L.CosineEmbeddingLossDescriptor(10, 256, "bf16"), PREF)
    assert dict(p.sku().knobs) == dict(dtype="bf16", op="cos", tpr=32)
    assert p.workspace_size() == 256  # 10 f32 partials, 256-byte aligned
    p = L.MultiMarginLossPlan.select(L.MultiMarginLossDescriptor(3, 1000, "f64", p=2), PREF)
    assert dict(p.sku().knobs) == dict(dtype="f64", op="mm2", tpr=256)
    p = L.TripletMarginLossPlan.select(
        L.TripletMarginLossDescriptor(3, 7, "f16", reduction="none"), PREF)
    assert p.workspace_size() == 0 and dict(p.sku().knobs)["op"] == "trip"
    p = L.MultilabelMarginLossBackwardPlan.select(
        L.MultilabelMarginLossBackwardDescriptor(3, 300, "f32"), PREF)
    assert p.workspace_size() == 1024 and p.sku().template == "loss_row_bw"
    assert L.MultilabelMarginLossPlan.select(
        L.MultilabelMarginLossDescriptor(0, 3, "f32", "none"), PREF).is_empty()
    assert not L.MultilabelMarginLossPlan.select(
        L.MultilabelMarginLossDescriptor(0, 3, "f32", "mean"), PREF).is_empty()
    c = C.CTCLossPlan.select(C.CTCLossDescriptor(50, 4, 20, "f32", 10), PREF)
    assert dict(c.sku().knobs) == dict(dtype="f32")
    assert c.workspace_size() == align_up(4 * 50 * 21 * 4) + 256 * 2
    cb = C.CTCLossBackwardPlan.select(C.CTCLossBackwardDescriptor(50, 4, 20, "f32", 10), PREF)
    assert cb.workspace_size() == 2 * align_up(4 * 50 * 21 * 4) + 256 * 2


def test_sku_space():
    import importlib

    from baracuda_dsl.ops import get_template

    importlib.import_module("baracuda_dsl.ops.losses.specs.ctc")
    importlib.import_module("baracuda_dsl.ops.losses.specs.loss_row")

    for arch in ("sm80", "sm89", "sm90a"):
        assert len(get_template("loss_row_fw").skus(arch)) == 40
        assert len(get_template("loss_row_bw").skus(arch)) == 40
        assert len(get_template("loss_finalize").skus(arch)) == 4
        assert len(get_template("ctc_fw").skus(arch)) == 4
        assert len(get_template("ctc_bw").skus(arch)) == 4


@pytest.mark.parametrize("arch", ["sm80", "sm89", "sm90a"])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku
    from baracuda_dsl.ops.losses.specs.ctc import CTCKnobs
    from baracuda_dsl.ops.losses.specs.loss_row import LossFinalizeKnobs, LossRowKnobs

    a = bd.ArchSku(arch)
    for name, knobs in (("loss_row_fw", LossRowKnobs(dtype="bf16", op="trip", tpr=256)),
                        ("loss_row_bw", LossRowKnobs(dtype="f32", op="mlm", tpr=32)),
                        ("loss_finalize", LossFinalizeKnobs(dtype="f16")),
                        ("ctc_fw", CTCKnobs(dtype="f64")),
                        ("ctc_bw", CTCKnobs(dtype="bf16"))):
        cubin, _ = compile_sku(name, freeze_knobs(knobs), a, timeout=600)
        assert len(cubin) > 0


# ----------------------------------------------- numpy emulation of the row kernels' formulas
def _cos_fw_bw(x1, x2, y, margin, g):
    A = (x1 * x1).sum(1) + 1e-12
    B = (x2 * x2).sum(1) + 1e-12
    d = (x1 * x2).sum(1)
    den = np.sqrt(A * B)
    c = d / den
    loss = np.where(y == 1, 1 - c, np.where(y == -1, np.maximum(c - margin, 0), 0))
    dc = np.where(y == 1, -1.0, np.where(y == -1, (c >= margin).astype(float), 0.0)) * g
    dx1 = dc[:, None] * (x2 / den[:, None] - (c / A)[:, None] * x1)
    dx2 = dc[:, None] * (x1 / den[:, None] - (c / B)[:, None] * x2)
    return loss, dx1, dx2


def _mm_fw_bw(x, y, p, margin, w, g):
    n, c = x.shape
    loss = np.zeros(n)
    dx = np.zeros_like(x)
    for r in range(n):
        wy = 1.0 if w is None else w[y[r]]
        for j in range(c):
            if j == y[r]:
                continue
            z = margin - x[r, y[r]] + x[r, j]
            if z > 0:
                loss[r] += (z if p == 1 else z * z)
                gj = g[r] * wy / c * (1 if p == 1 else 2 * z)
                dx[r, j] += gj
                dx[r, y[r]] -= gj
        loss[r] *= wy / c
    return loss, dx


def _mlm_fw_bw(x, t, g):
    n, c = x.shape
    loss = np.zeros(n)
    dx = np.zeros_like(x)
    for r in range(n):
        tg = []
        for v in t[r]:
            if v < 0:
                break
            tg.append(v)
        ist = set(tg)
        for i in range(c):
            if i in ist:
                continue
            for yj in tg:
                z = 1 - x[r, yj] + x[r, i]
                if z > 0:
                    loss[r] += z
                    dx[r, i] += g[r] / c
        for yj in tg:  # the kernel's second pass: one all-reduced count per target entry
            cnt = sum(1 for i in range(c) if i not in ist and 1 - x[r, yj] + x[r, i] > 0)
            dx[r, yj] -= g[r] / c * cnt
        loss[r] /= c
    return loss, dx


def _trip_fw_bw(a, b, c, margin, p, eps, swap, g):
    def dist(u):
        return (np.abs(u) ** p).sum(1) ** (1 / p)

    def grad(u, d):
        f = np.where(d > 0, 1 / np.where(d > 0, d, 1) ** (p - 1), 0)
        return np.sign(u) * np.abs(u) ** (p - 1) * f[:, None]

    vp, vn, vs = a - b + eps, a - c + eps, b - c + eps
    dp, dn, ds = dist(vp), dist(vn), dist(vs)
    wn = np.ones_like(dn)
    if swap:
        wn = np.where(dn < ds, 1.0, np.where(dn == ds, 0.5, 0.0))
    dneg = np.minimum(dn, ds) if swap else dn
    v = margin + dp - dneg
    loss = np.maximum(v, 0)
    s = np.where(v >= 0, g, 0.0)[:, None]
    gp = grad(vp, dp) * s
    gn = grad(vn, dn) * s * wn[:, None]
    gs = grad(vs, ds) * s * (1 - wn)[:, None] if swap else 0 * gp
    return loss, gp - gn, -gp - gs, gn + gs


def _torch():
    return pytest.importorskip("torch")


def test_row_loss_formulas_match_torch():
    torch = _torch()
    F = torch.nn.functional
    rng = np.random.default_rng(1)
    n, d = 9, 13
    x1, x2 = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    y = rng.choice([1.0, -1.0, 0.5], n)
    g = rng.standard_normal(n)
    for margin in (0.0, 0.3, -0.2):
        t1, t2 = (torch.tensor(v, requires_grad=True) for v in (x1, x2))
        lt = F.cosine_embedding_loss(t1, t2, torch.tensor(y), margin=margin, reduction="none")
        lt.backward(torch.tensor(g))
        loss, dx1, dx2 = _cos_fw_bw(x1, x2, y, margin, g)
        np.testing.assert_allclose(loss, lt.detach().numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(dx1, t1.grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(dx2, t2.grad.numpy(), rtol=1e-10, atol=1e-12)
    c = 7
    x = rng.standard_normal((n, c))
    tg = rng.integers(0, c, n)
    w = rng.random(c) + 0.5
    for p in (1, 2):
        for ww in (None, w):
            tx = torch.tensor(x, requires_grad=True)
            lt = F.multi_margin_loss(tx, torch.tensor(tg), p=p, margin=0.7,
                                     weight=None if ww is None else torch.tensor(ww),
                                     reduction="none")
            lt.backward(torch.tensor(g))
            loss, dx = _mm_fw_bw(x, tg, p, 0.7, ww, g)
            np.testing.assert_allclose(loss, lt.detach().numpy(), rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    t = np.full((n, c), -1)
    for r in range(n):
        k = r % (c + 1)
        t[r, :k] = rng.integers(0, c, k)  # duplicates allowed
    t[0, 2:4] = [5, -1]
    t[0, 4:] = 3  # entries after the first -1 are ignored
    tx = torch.tensor(x, requires_grad=True)
    lt = F.multilabel_margin_loss(tx, torch.tensor(t), reduction="none")
    lt.backward(torch.tensor(g))
    loss, dx = _mlm_fw_bw(x, t, g)
    np.testing.assert_allclose(loss, lt.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    a, b, cc = (rng.standard_normal((n, d)) for _ in range(3))
    b[1] = cc[1]  # a swap tie
    for p in (2.0, 1.0, 3.0, 1.5):
        for swap in (False, True):
            ta, tb, tc = (torch.tensor(v, requires_grad=True) for v in (a, b, cc))
            lt = F.triplet_margin_loss(ta, tb, tc, margin=1.1, p=p, eps=1e-6, swap=swap,
                                       reduction="none")
            lt.backward(torch.tensor(g))
            loss, da, db, dc = _trip_fw_bw(a, b, cc, 1.1, p, 1e-6, swap, g)
            np.testing.assert_allclose(loss, lt.detach().numpy(), rtol=1e-10, atol=1e-12)
            for mine, ref in ((da, ta), (db, tb), (dc, tc)):
                np.testing.assert_allclose(mine, ref.grad.numpy(), rtol=1e-8, atol=1e-12)


# ---------------------------------------------------------------- numpy CTC reference (f64)
NEG = -np.inf


def _lse(vals):
    m = max(vals)
    if m == NEG:
        return NEG
    return m + math.log(sum(math.exp(v - m) for v in vals))


def ctc_reference(lp, targets, il, tl, blank=0):
    """Per-sample nll and torch's gradient formula (upstream gradient 1) by the alpha / beta
    recursions the kernels run: lp (T, N, C) float64, targets a list of label lists."""
    T, N, Cn = lp.shape
    nll = np.zeros(N)
    grad = np.zeros_like(lp)
    for n in range(N):
        Tn, Ln = il[n], tl[n]
        ext = [blank if s % 2 == 0 else targets[n][s // 2] for s in range(2 * Ln + 1)]
        Sp = len(ext)
        if Tn == 0:
            nll[n] = 0.0 if Ln == 0 else np.inf
            continue
        a = np.full((Tn, Sp), NEG)
        b = np.full((Tn, Sp), NEG)
        a[0, 0] = lp[0, n, blank]
        if Ln:
            a[0, 1] = lp[0, n, ext[1]]
        for t in range(1, Tn):
            for s in range(Sp):
                v = [a[t - 1, s]] + ([a[t - 1, s - 1]] if s >= 1 else [])
                if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                    v.append(a[t - 1, s - 2])
                a[t, s] = lp[t, n, ext[s]] + _lse(v)
        nll[n] = -_lse([a[Tn - 1, Sp - 1]] + ([a[Tn - 1, Sp - 2]] if Ln else []))
        b[Tn - 1, Sp - 1] = lp[Tn - 1, n, blank]
        if Ln:
            b[Tn - 1, Sp - 2] = lp[Tn - 1, n, ext[Sp - 2]]
        for t in range(Tn - 2, -1, -1):
            for s in range(Sp):
                v = [b[t + 1, s]] + ([b[t + 1, s + 1]] if s + 1 < Sp else [])
                if s + 2 < Sp and ext[s] != blank and ext[s] != ext[s + 2]:
                    v.append(b[t + 1, s + 2])
                b[t, s] = lp[t, n, ext[s]] + _lse(v)
        with np.errstate(invalid="ignore"):
            for t in range(Tn):
                for c in range(Cn):
                    terms = [a[t, s] + b[t, s] for s in range(Sp) if ext[s] == c]
                    lc = _lse(terms) if terms else NEG
                    grad[t, n, c] = math.exp(lp[t, n, c]) - np.exp(lc + nll[n] - lp[t, n, c])
    return nll, grad


def ctc_case(rng, T=12, N=6, Cn=6, S=5):
    lp = rng.standard_normal((T, N, Cn))
    lp = lp - np.log(np.exp(lp).sum(-1, keepdims=True))
    tl = [3, 0, 5, 2, 4, 5][:N]
    il = [12, 7, 10, 1, 12, 5][:N]
    tg = [list(rng.integers(1, Cn, S)) for _ in range(N)]
    tg[0] = [2, 2, 3, 1, 1]   # repeated labels
    tg[4] = [1, 1, 1, 1, 1]
    return lp, tg, il, tl


def test_ctc_reference_matches_torch():
    torch = _torch()
    rng = np.random.default_rng(0)
    lp, tg, il, tl = ctc_case(rng)
    x = torch.tensor(lp, requires_grad=True)
    loss = torch.nn.functional.ctc_loss(x, torch.tensor(tg), torch.tensor(il), torch.tensor(tl),
                                        reduction="none")
    loss.sum().backward()
    nll, grad = ctc_reference(lp, tg, il, tl)
    np.testing.assert_allclose(nll, loss.detach().numpy(), rtol=1e-12)
    assert np.isinf(nll[3])  # target longer than the input allows
    tgrad = x.grad.numpy()
    assert np.array_equal(np.isnan(grad), np.isnan(tgrad))
    ok = ~np.isnan(grad)
    np.testing.assert_allclose(grad[ok], tgrad[ok], rtol=1e-9, atol=1e-12)
    # the kernel's split: columns carrying no label get exp(lp) (times g); label columns the
    # α·β term; t >= input length gets 0
    assert np.all(grad[il[1]:, 1] == 0)


def test_ctc_reductions_and_zero_infinity_semantics():
    torch = _torch()
    rng = np.random.default_rng(3)
    lp, tg, il, tl = ctc_case(rng)
    nll, grad = ctc_reference(lp, tg, il, tl)
    F = torch.nn.functional
    targs = (torch.tensor(tg), torch.tensor(il), torch.tensor(tl))
    x = torch.tensor(lp, requires_grad=True)
    m = F.ctc_loss(x, *targs, reduction="mean", zero_infinity=True)
    m.backward()
    zl = np.where(np.isinf(nll), 0.0, nll)
    scale = 1.0 / np.maximum(np.array(tl), 1) / len(tl)
    np.testing.assert_allclose(m.item(), (zl * scale).sum(), rtol=1e-12)
    want = np.where(np.isinf(nll)[None, :, None], 0.0, grad * scale[None, :, None])
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-9, atol=1e-12)
    # concatenated targets give the same losses
    flat = torch.tensor([v for r, k in zip(tg, tl) for v in r[:k]])
    s = F.ctc_loss(torch.tensor(lp), flat, targs[1], targs[2], reduction="none")
    np.testing.assert_allclose(s.numpy(), nll, rtol=1e-12)


# ------------------------------------------- launch argument lists vs the declared kernel ABI
class _FakeKernel:
    def __init__(self, template, log):
        self.t, self.log = template, log

    def launch(self, grid, args, stream):
        assert len(args) == len(self.t.params), (self.t.name, len(args), len(self.t.params))
        for a, p in zip(args, self.t.params):
            want = float if p.kind in ("f32", "f64") else int
            assert isinstance(a, (want, int) if want is float else int), (self.t.name, p, a)
        self.log.append((self.t.name, grid, list(args)))


def _fake(monkeypatch):
    log = []
    monkeypatch.setattr("baracuda_dsl.plan.Plan._kernel",
                        lambda self, t, k, o: _FakeKernel(t, log))
    return log


def _ws(plan):
    from baracuda_dsl.vocabulary import Workspace

    return Workspace(1 << 20, plan.workspace_size()) if plan.workspace_size() else None


class _Fake:
    """Stand-ins for device arrays: fake TensorViews with contiguous strides (never read)."""

    def __init__(self, dt):
        self.dt = dt

    def zeros(self, shape, dt=None):
        from baracuda_dsl.tensor import TensorView, contiguous_strides

        shape = tuple(shape) if isinstance(shape, tuple) else (shape,)
        return TensorView(1 << 16, shape, contiguous_strides(shape), dt or self.dt, 0)


def test_launch_arguments_match_abi(monkeypatch):
    log = _fake(monkeypatch)
    fk = _Fake("float32")
    f32, i64, i32 = "float32", "int64", "int32"

    class np:  # noqa: N801  (the fakes mimic the numpy calls used below)
        @staticmethod
        def zeros(shape, dt=None):
            return fk.zeros(shape, dt)

        ones = zeros

        @staticmethod
        def zeros_like(v):
            return fk.zeros(v.shape, v.dtype)
    n, d = 3, 5
    x = np.zeros((n, d), f32)
    for red in ("none", "sum"):
        out = np.zeros((n,) if red == "none" else (), f32)
        g = np.zeros_like(out)
        cases = [
            (L.CosineEmbeddingLossPlan, L.CosineEmbeddingLossDescriptor(n, d, "f32", 0.1, red),
             L.CosineEmbeddingLossArgs(x, x, np.ones(n, f32), out)),
            (L.MultiMarginLossPlan, L.MultiMarginLossDescriptor(n, d, "f32", 2, 1.0, True, red),
             L.MultiMarginLossArgs(x, np.zeros(n, i64), out, np.ones(d, f32),
                                   np.zeros(1, i32))),
            (L.MultilabelMarginLossPlan, L.MultilabelMarginLossDescriptor(n, d, "f32", red),
             L.MultilabelMarginLossArgs(x, np.zeros((n, d), i64), out)),
            (L.TripletMarginLossPlan, L.TripletMarginLossDescriptor(n, d, "f32", reduction=red),
             L.TripletMarginLossArgs(x, x, x, out)),
            (L.CosineEmbeddingLossBackwardPlan,
             L.CosineEmbeddingLossBackwardDescriptor(n, d, "f32", 0.1, red),
             L.CosineEmbeddingLossBackwardArgs(g, x, x, np.ones(n, f32), np.zeros_like(x), None)),
            (L.MultiMarginLossBackwardPlan, L.MultiMarginLossBackwardDescriptor(n, d, "f32",
                                                                               reduction=red),
             L.MultiMarginLossBackwardArgs(g, x, np.zeros(n, i64), np.zeros_like(x))),
            (L.MultilabelMarginLossBackwardPlan,
             L.MultilabelMarginLossBackwardDescriptor(n, d, "f32", red),
             L.MultilabelMarginLossBackwardArgs(g, x, np.zeros((n, d), i64), np.zeros_like(x))),
            (L.TripletMarginLossBackwardPlan,
             L.TripletMarginLossBackwardDescriptor(n, d, "f32", reduction=red),
             L.TripletMarginLossBackwardArgs(g, x, x, x, np.zeros_like(x), np.zeros_like(x), np.zeros_like(x))),
        ]
        for cls, desc, args in cases:
            plan = cls.select(desc, PREF)
            log.clear()
            plan.run(args, 0, _ws(plan))
            names = [e[0] for e in log]
            if cls.__name__.endswith("BackwardPlan"):
                assert names == ["loss_row_bw"]
                assert log[0][2][-1] & (1 << 6)  # WANT_A
            else:
                assert names == (["loss_row_fw"] if red == "none"
                                 else ["loss_row_fw", "loss_finalize"])
            assert log[0][1] == (n, 1, 1)
    T, N, Cn, S = 6, 2, 4, 3
    lp = np.zeros((T, N, Cn), f32)
    lens = np.zeros(N, i64)
    for red in ("none", "mean"):
        out = np.zeros((N,) if red == "none" else (), f32)
        plan = C.CTCLossPlan.select(C.CTCLossDescriptor(T, N, Cn, "f32", S, reduction=red),
                                    PREF)
        log.clear()
        plan.run(C.CTCLossArgs(lp, np.zeros((N, S), i64), lens, lens, out), 0, _ws(plan))
        assert [e[0] for e in log] == (["ctc_fw"] if red == "none"
                                       else ["ctc_fw", "loss_finalize"])
        bplan = C.CTCLossBackwardPlan.select(
            C.CTCLossBackwardDescriptor(T, N, Cn, "f32", S, concatenated=True, total=5,
                                        reduction=red), PREF)
        log.clear()
        bplan.run(C.CTCLossBackwardArgs(out, lp, np.zeros(5, i64), lens, lens, np.zeros_like(lp)),
                  0, _ws(bplan))
        assert [e[0] for e in log] == ["ctc_fw", "ctc_bw"]
        assert log[1][2][-1] & 1  # CONCAT
