"""Pointwise losses on the GPU (torch CUDA operands) against torch.nn.functional in float64:
every loss × reduction × a couple of parameter values, forward and backward (vs float64
autograd), odd and empty sizes, broadcast / strided operands, poisoned outputs, deterministic
sums, and the ``array_api.losses`` namespace functions."""

import math

import pytest

pytestmark = pytest.mark.gpu

LOSS_CASES = [
    ("mse_loss", {}), ("l1_loss", {}), ("huber_loss", dict(delta=1.0)),
    ("huber_loss", dict(delta=0.3)), ("smooth_l1_loss", dict(beta=1.0)),
    ("smooth_l1_loss", dict(beta=0.0)), ("soft_margin_loss", {}),
    ("binary_cross_entropy", {}), ("binary_cross_entropy", dict(weight=True)),
    ("binary_cross_entropy_with_logits", {}),
    ("binary_cross_entropy_with_logits", dict(weight=True, pos_weight=True)),
    ("kl_div", dict(log_target=False)), ("kl_div", dict(log_target=True)),
    ("poisson_nll_loss", dict(log_input=True)),
    ("poisson_nll_loss", dict(log_input=False, full=True, eps=1e-3)),
    ("gaussian_nll_loss", dict(full=False)), ("gaussian_nll_loss", dict(full=True, eps=1e-3)),
    ("hinge_embedding_loss", dict(margin=1.0)), ("hinge_embedding_loss", dict(margin=0.4)),
    ("margin_ranking_loss", dict(margin=0.0)), ("margin_ranking_loss", dict(margin=0.7)),
    ("multilabel_soft_margin_loss", {}), ("multilabel_soft_margin_loss", dict(weight=True)),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(LOSS_CASES)]
TOL = {"float32": 2e-5, "bfloat16": 2e-2, "float16": 4e-3, "float64": 1e-11}


def _ws(torch, plan):
    n = plan.workspace_size()
    return torch.empty(n, dtype=torch.uint8, device="cuda") if n else None


def _operands(torch, loss, shape, gen):
    """float64 CUDA operands in each loss's domain (names of LOSSES[loss] order)."""
    def rn(s=shape):
        return torch.randn(s, generator=gen, device="cuda", dtype=torch.float64)

    def ru(lo, hi, s=shape):
        return lo + (hi - lo) * torch.rand(s, generator=gen, device="cuda", dtype=torch.float64)

    def sign(vals, s=shape):
        v = torch.tensor(vals, device="cuda", dtype=torch.float64)
        return v[torch.randint(0, len(vals), s, generator=gen, device="cuda")]

    if loss == "binary_cross_entropy":
        return [ru(0.02, 0.98), ru(0.0, 1.0)]
    if loss in ("binary_cross_entropy_with_logits", "multilabel_soft_margin_loss"):
        return [rn() * 4, ru(0.0, 1.0)]
    if loss == "kl_div":
        return [rn(), ru(0.05, 2.0)]
    if loss == "poisson_nll_loss":
        return [ru(0.05, 3.0), ru(0.0, 4.0)]
    if loss == "gaussian_nll_loss":
        return [rn(), rn(), ru(0.1, 3.0)]
    if loss == "hinge_embedding_loss":
        return [rn() * 2, sign([-1.0, 1.0])]
    if loss == "margin_ranking_loss":
        return [rn(), rn(), sign([-1.0, 1.0])]
    if loss == "soft_margin_loss":
        return [rn() * 3, sign([-1.0, 1.0])]
    return [rn() * 2, rn() * 2]


def _desc_kw(kw):
    return {k: v for k, v in kw.items() if k not in ("weight", "pos_weight")}


def _extras(torch, kw, shape, gen):
    c = shape[-1] if shape else 1
    w = (0.2 + 2 * torch.rand((c,), generator=gen, device="cuda", dtype=torch.float64)
         if kw.get("weight") else None)
    pw = (0.2 + 3 * torch.rand((c,), generator=gen, device="cuda", dtype=torch.float64)
          if kw.get("pos_weight") else None)
    return w, pw


def _ref(torch, loss, ops, kw, w, pw, reduction):
    F = torch.nn.functional
    k = _desc_kw(kw)
    if w is not None:
        k["weight"] = w
    if pw is not None:
        k["pos_weight"] = pw
    return getattr(F, loss)(*ops, reduction=reduction, **k)


def _close(torch, got, ref, tol, what, mag=None):
    """got ≈ ref: scalars relative to max(|ref|, mag) (mag: the same reduction of |terms|, the
    scale of a sum's rounding error), tensors elementwise with atol = tol·max|ref|; NaN == NaN."""
    got = got.double()
    if ref.numel() == 0:
        assert got.numel() == 0 and tuple(got.shape) == tuple(ref.shape), what
        return
    if ref.dim() == 0:
        r, g = float(ref), float(got)
        if math.isnan(r):
            assert math.isnan(g), (what, g)
            return
        den = max(abs(r), 1e-30 if mag is None else float(mag))
        err = abs(g - r) / den
        assert err <= tol, (what, g, r, err)
        return
    big = float(torch.nan_to_num(ref.abs(), nan=0.0).max())
    torch.testing.assert_close(got, ref, rtol=tol, atol=tol * max(big, 1.0), equal_nan=True,
                               msg=lambda m: f"{what}: {m}")


def _forward(torch, loss, kw, shape, dtype, reduction, gen, ops64=None):
    from baracuda_dsl.ops.losses.loss_pointwise import (PointwiseLossArgs, PointwiseLossDescriptor,
                                                        PointwiseLossPlan)

    tdt = getattr(torch, dtype)
    ops64 = ops64 or _operands(torch, loss, shape, gen)
    w64, pw64 = _extras(torch, kw, shape, gen)
    ops = [o.to(tdt) for o in ops64]
    w = None if w64 is None else w64.to(tdt)
    pw = None if pw64 is None else pw64.to(tdt)
    desc = PointwiseLossDescriptor(loss, tuple(tuple(o.shape) for o in ops), dtype, reduction,
                                   None if w is None else tuple(w.shape),
                                   None if pw is None else tuple(pw.shape), **_desc_kw(kw))
    plan = PointwiseLossPlan.select(desc)
    out = torch.full(desc.out_shape, float("nan"), device="cuda", dtype=tdt)  # poisoned
    plan.run(PointwiseLossArgs(ops, out, w, pw), workspace=_ws(torch, plan))
    ref = _ref(torch, loss, [o.double() for o in ops], kw,
               None if w is None else w.double(), None if pw is None else pw.double(),
               reduction)
    return out, ref, (ops, w, pw, plan)


@pytest.mark.parametrize("loss,kw", LOSS_CASES, ids=IDS)
def test_forward_vs_torch(loss, kw):
    torch = pytest.importorskip("torch")
    gen = torch.Generator(device="cuda").manual_seed(1)
    for dtype in ("float32", "float64", "bfloat16"):
        for shape in ((7,), (33, 31), (100003,)):
            if loss == "multilabel_soft_margin_loss" and len(shape) == 1:
                shape = (shape[0] // 7 + 1, 7)
            for red in ("none", "mean", "sum"):
                out, ref, (ops, w, pw, _) = _forward(torch, loss, kw, shape, dtype, red, gen)
                tol = TOL[dtype] * (4 if red == "none" else 1)
                mag = None
                if red != "none":
                    terms = _ref(torch, loss, [o.double() for o in ops], kw,
                                 None if w is None else w.double(),
                                 None if pw is None else pw.double(), "none").abs()
                    mag = terms.sum() if red == "sum" else terms.mean()
                _close(torch, out, ref, tol, (loss, kw, dtype, shape, red), mag)
    if loss == "kl_div":
        out, ref, _ = _forward(torch, loss, kw, (6, 5), "float32", "batchmean", gen)
        _close(torch, out, ref, TOL["float32"], "batchmean")


@pytest.mark.parametrize("loss,kw", LOSS_CASES, ids=IDS)
def test_backward_vs_autograd(loss, kw):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.losses.loss_pointwise import (LOSSES, PointwiseLossBackwardArgs,
                                                        PointwiseLossBackwardDescriptor,
                                                        PointwiseLossBackwardPlan, grad_names)

    gen = torch.Generator(device="cuda").manual_seed(2)
    names = LOSSES[loss]
    gn = grad_names(loss)
    for dtype in ("float32", "float64"):
        tdt = getattr(torch, dtype)
        for shape in ((1,), (37, 29), (1000,)):
            if loss == "multilabel_soft_margin_loss" and len(shape) == 1:
                shape = (max(shape[0] // 10, 1), 10)
            for red in ("none", "mean", "sum"):
                ops = [o.to(tdt) for o in _operands(torch, loss, shape, gen)]
                w64, pw64 = _extras(torch, kw, shape, gen)
                w = None if w64 is None else w64.to(tdt)
                pw = None if pw64 is None else pw64.to(tdt)
                leaves = [o.detach().double().clone().requires_grad_(n in gn)
                          for o, n in zip(ops, names)]
                ref = _ref(torch, loss, leaves, kw, None if w is None else w.double(),
                           None if pw is None else pw.double(), red)
                dl64 = torch.randn(ref.shape, generator=gen, device="cuda",
                                   dtype=torch.float64)
                dl = dl64.to(tdt)
                ref.backward(dl.double())
                desc = PointwiseLossBackwardDescriptor(
                    loss, tuple(tuple(o.shape) for o in ops), dtype, red,
                    None if w is None else tuple(w.shape),
                    None if pw is None else tuple(pw.shape), **_desc_kw(kw))
                plan = PointwiseLossBackwardPlan.select(desc)
                grads = [torch.full(ops[names.index(n)].shape, float("nan"), device="cuda",
                                    dtype=tdt) for n in gn]
                plan.run(PointwiseLossBackwardArgs(dl, ops, grads, w, pw),
                         workspace=_ws(torch, plan))
                for n, gv in zip(gn, grads):
                    refg = leaves[names.index(n)].grad
                    _close(torch, gv, refg, TOL[dtype] * 4, (loss, kw, dtype, shape, red, n))


def test_half_types_and_odd_sizes():
    torch = pytest.importorskip("torch")
    gen = torch.Generator(device="cuda").manual_seed(3)
    for dtype in ("float16", "bfloat16"):
        for n in (1, 7, 1000, 100003):
            for loss, kw in (("mse_loss", {}), ("binary_cross_entropy_with_logits", {}),
                             ("gaussian_nll_loss", {})):
                for red in ("none", "mean"):
                    out, ref, _ = _forward(torch, loss, kw, (n,), dtype, red, gen)
                    _close(torch, out, ref, TOL[dtype] * (4 if red == "none" else 1),
                           (loss, dtype, n, red))


def test_empty_inputs():
    torch = pytest.importorskip("torch")
    gen = torch.Generator(device="cuda").manual_seed(4)
    for loss, kw in (("mse_loss", {}), ("huber_loss", {}), ("multilabel_soft_margin_loss", {})):
        for shape in ((0,), (0, 5), (3, 0)):
            if loss != "multilabel_soft_margin_loss" and shape == (3, 0):
                continue
            for red in ("none", "mean", "sum"):
                out, ref, _ = _forward(torch, loss, kw, shape, "float32", red, gen)
                assert out.shape == ref.shape, (loss, shape, red)
                if red != "none":
                    r, g = float(ref), float(out)
                    assert (math.isnan(r) and math.isnan(g)) or r == g, (loss, shape, red, g, r)
                else:
                    _close(torch, out, ref, 1e-6, (loss, shape))


def test_broadcast_operands_and_grads():
    """Broadcast targets (grad summed back to the target's shape), gaussian var (N,) / (N, 1),
    bce_with_logits per-class weight and pos_weight."""
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.losses.loss_pointwise import (PointwiseLossBackwardArgs,
                                                        PointwiseLossBackwardDescriptor,
                                                        PointwiseLossBackwardPlan)

    gen = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randn((50, 24), generator=gen, device="cuda")
    y = torch.randn((24,), generator=gen, device="cuda")
    for red in ("none", "mean", "sum"):
        _fw_check(torch, "mse_loss", [x, y], {}, red)
        xl, yl = x.double().requires_grad_(), y.double().requires_grad_()
        ref = torch.nn.functional.mse_loss(xl, yl, reduction=red)
        dl = torch.randn(ref.shape, generator=gen, device="cuda")
        ref.backward(dl.double())
        plan = PointwiseLossBackwardPlan.select(PointwiseLossBackwardDescriptor(
            "mse_loss", ((50, 24), (24,)), "float32", red))
        gx, gy = torch.empty_like(x), torch.full_like(y, float("nan"))
        plan.run(PointwiseLossBackwardArgs(dl, [x, y], [gx, gy]), workspace=_ws(torch, plan))
        _close(torch, gx, xl.grad, 1e-5, "grad x")
        _close(torch, gy, yl.grad, 1e-5, "grad y (broadcast)")
    for vshape in ((50,), (50, 1)):
        var = 0.1 + torch.rand(vshape, generator=gen, device="cuda")
        t = torch.randn((50, 24), generator=gen, device="cuda")
        for red in ("none", "mean"):
            _fw_check(torch, "gaussian_nll_loss", [x, t, var], {}, red)
        leaves = [a.double().requires_grad_() for a in (x, t, var)]
        ref = torch.nn.functional.gaussian_nll_loss(*leaves, reduction="sum")
        ref.backward()
        plan = PointwiseLossBackwardPlan.select(PointwiseLossBackwardDescriptor(
            "gaussian_nll_loss", ((50, 24), (50, 24), vshape), "float32", "sum"))
        grads = [torch.empty_like(a) for a in (x, t, var)]
        one = torch.ones((), device="cuda")
        plan.run(PointwiseLossBackwardArgs(one, [x, t, var], grads), workspace=_ws(torch, plan))
        for gv, lf, n in zip(grads, leaves, ("x", "t", "var")):
            _close(torch, gv, lf.grad, 1e-5, ("gaussian", vshape, n))
    w = 0.5 + torch.rand((24,), generator=gen, device="cuda")
    pw = 0.5 + torch.rand((24,), generator=gen, device="cuda")
    yb = torch.rand((50, 24), generator=gen, device="cuda")
    for red in ("none", "mean"):
        _fw_check(torch, "binary_cross_entropy_with_logits", [x, yb], {}, red, w=w, pw=pw)
        _fw_check(torch, "binary_cross_entropy_with_logits", [x, yb], {}, red,
                  pw=pw[None, :].expand(50, 24))


def _fw_check(torch, loss, ops, kw, red, w=None, pw=None, out=None, tol=2e-5):
    from baracuda_dsl.ops.losses.loss_pointwise import (PointwiseLossArgs, PointwiseLossDescriptor,
                                                        PointwiseLossPlan)

    desc = PointwiseLossDescriptor(loss, tuple(tuple(o.shape) for o in ops),
                                   str(ops[0].dtype).split(".")[-1], red,
                                   None if w is None else tuple(w.shape),
                                   None if pw is None else tuple(pw.shape), **kw)
    plan = PointwiseLossPlan.select(desc)
    if out is None:
        out = torch.full(desc.out_shape, float("nan"), device="cuda", dtype=ops[0].dtype)
    plan.run(PointwiseLossArgs(ops, out, w, pw), workspace=_ws(torch, plan))
    ref = _ref(torch, loss, [o.double() for o in ops], kw, None if w is None else w.double(),
               None if pw is None else pw.double(), red)
    _close(torch, out, ref, tol, (loss, red))
    return out


def test_strided_operands_and_outputs():
    torch = pytest.importorskip("torch")
    gen = torch.Generator(device="cuda").manual_seed(6)
    base = torch.randn((64, 130), generator=gen, device="cuda")
    x = base.t()                       # transposed (130, 64)
    y = torch.randn((64, 260), generator=gen, device="cuda")[:, ::2].t()  # strided
    z = torch.randn((130 * 64 + 1,), generator=gen, device="cuda")[1:].view(130, 64)  # ptr % 16 = 4
    for loss in ("mse_loss", "smooth_l1_loss", "soft_margin_loss"):
        for red in ("none", "sum"):
            _fw_check(torch, loss, [x, y], {}, red)
            _fw_check(torch, loss, [z, x], {}, red)
    out = torch.full((64, 260), float("nan"), device="cuda")[:, ::2].t()   # strided out
    _fw_check(torch, "l1_loss", [x, y], {}, "none", out=out)
    xm = torch.randn((40, 12), generator=gen, device="cuda")
    ym = torch.rand((12, 40), generator=gen, device="cuda").t()
    outm = torch.full((80,), float("nan"), device="cuda")[::2]
    _fw_check(torch, "multilabel_soft_margin_loss", [xm, ym], {}, "none", out=outm)


def test_sum_mean_deterministic():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.losses.loss_pointwise import (PointwiseLossArgs, PointwiseLossDescriptor,
                                                        PointwiseLossPlan)

    gen = torch.Generator(device="cuda").manual_seed(7)
    n = 1_000_003
    x = torch.randn((n,), generator=gen, device="cuda")
    y = torch.randn((n,), generator=gen, device="cuda")
    for red in ("sum", "mean"):
        plan = PointwiseLossPlan.select(PointwiseLossDescriptor("huber_loss", ((n,), (n,)),
                                                                "float32", red))
        ws = _ws(torch, plan)
        outs = []
        for _ in range(3):
            o = torch.full((), float("nan"), device="cuda")
            plan.run(PointwiseLossArgs([x, y], o), workspace=ws)
            outs.append(o.view(torch.int32).item())
        assert outs[0] == outs[1] == outs[2]


def test_namespace_functions():
    torch = pytest.importorskip("torch")
    import array_api as xp
    from array_api.losses import _pointwise as L

    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(8)
    a = torch.randn((20, 9), generator=gen, device="cuda")
    b = torch.rand((20, 9), generator=gen, device="cuda")
    v = 0.2 + torch.rand((20,), generator=gen, device="cuda")
    A, B, V = xp.from_dlpack(a), xp.from_dlpack(b), xp.from_dlpack(v)

    def chk(got, ref, tol=2e-5):
        _close(torch, torch.from_dlpack(got), ref.double(), tol, "namespace")

    ad, bd_ = a.double(), b.double()
    chk(L.mse_loss(A, B), F.mse_loss(ad, bd_))
    chk(L.l1_loss(A, B, reduction="none"), F.l1_loss(ad, bd_, reduction="none"))
    chk(L.huber_loss(A, B, reduction="sum", delta=0.5), F.huber_loss(ad, bd_, reduction="sum",
                                                                     delta=0.5))
    chk(L.smooth_l1_loss(A, B, beta=0.2), F.smooth_l1_loss(ad, bd_, beta=0.2))
    chk(L.mse_loss(A, B, size_average=False), F.mse_loss(ad, bd_, reduction="sum"))
    chk(L.binary_cross_entropy_with_logits(A, B), F.binary_cross_entropy_with_logits(ad, bd_))
    chk(L.kl_div(A, B, reduction="batchmean"), F.kl_div(ad, bd_, reduction="batchmean"))
    chk(L.gaussian_nll_loss(A, B, V), F.gaussian_nll_loss(ad, bd_, v.double()))
    chk(L.multilabel_soft_margin_loss(A, B, reduction="none"),
        F.multilabel_soft_margin_loss(ad, bd_, reduction="none"))
    with pytest.raises(TypeError):
        L.mse_loss(A, xp.from_dlpack(b.double()))
    with pytest.raises(ValueError):
        L.mse_loss(A, B, reduction="avg")
    with pytest.raises(ValueError):
        L.huber_loss(A, B, delta=-1.0)
