"""Pointwise losses on the GPU (torch CUDA operands) against torch.nn.functional in float64:
every loss × reduction × a couple of parameter values, forward and backward (vs float64
autograd), odd and empty sizes, broadcast / strided operands, poisoned outputs, deterministic
sums, and the ``array_api.losses`` namespace functions.

Every element is checked (tests/_checks.py via _loss_gpu_checks) against NaN-poisoned outputs.
Bounds (:func:`_magnitude`, :func:`check_loss`): a loss term is a short chain of f32 (f64)
operations on its operands — at most ``K_TERM`` roundings, each relative to the magnitude of
the quantities in the chain; a sum / mean adds the fixed-order reduction (:func:`_pw_depth`);
a gradient is dloss·scale·∂ℓ/∂operand with the same chain."""

import math

import pytest

from _loss_gpu_checks import CT, check, eps, row_depth

pytestmark = pytest.mark.gpu

#: roundings in one loss term or its derivative (loss_pointwise kernels: a difference, a
#: square / abs / min / max, a log or exp (a few ulps), products with the weights, the scale)
K_TERM = 16

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


def _pw_depth(n):
    """Rounded adds on a path of a sum / mean (loss_pointwise ``reduce`` + ``fin``): a thread
    folds <= ILP·vec = 32 elements, 5 shuffle levels and 8 warp partials per CTA; the one ``fin``
    CTA folds ceil(CTAs/256) partials a thread, 13 levels more (CTAs = ceil(n/2048) at most)."""
    return min(max(n, 1), 32 + 13 + -(-(-(-n // 2048)) // 256) + 13)


def _magnitude(torch, loss, ops, kw, w, pw):
    """Per element (the loss's broadcast shape), a bound on the magnitude of every quantity in
    the chain that forms the loss term and its derivatives, so that K_TERM·u·(this) bounds the
    compute error of either: with s = 1 + Σ|operands|, s² for the polynomial / piecewise losses
    (d², δ|d| ...; the derivatives 2|d| <= s²), times e^{|operand|} where an operand is
    exponentiated (kl_div log_target, poisson log_input), times (1 + 1/v)² for gaussian_nll
    (d²/v and its derivative in v, d²/v²), (1 + 1/(x(1 − x))) for binary_cross_entropy (the
    derivative w·(x − y)/(x(1 − x))); times |weight| and (1 + |pos_weight|)."""
    ops = [o.double() for o in ops]
    if loss == "gaussian_nll_loss" and ops[2].dim() == ops[0].dim() - 1:
        ops[2] = ops[2].unsqueeze(-1)          # var (N,) for input (N, D): torch's broadcast
    ops = torch.broadcast_tensors(*ops)
    s = 1.0
    for o in ops:
        s = s + o.abs()
    mag = s * s
    if loss == "kl_div" and kw.get("log_target"):
        mag = mag * torch.exp(ops[1].abs())
    if loss == "poisson_nll_loss" and kw.get("log_input", True):
        mag = mag * torch.exp(ops[0].abs())
    if loss == "poisson_nll_loss" and not kw.get("log_input", True):
        mag = mag * (1 + 1 / (ops[0].abs() + kw.get("eps", 1e-8)))
    if loss == "gaussian_nll_loss":
        v = ops[2].abs().clamp_min(kw.get("eps", 1e-6))
        mag = mag * (1 + 1 / v) ** 2
    if loss == "binary_cross_entropy":
        x = ops[0]
        mag = mag * (1 + 1 / (x * (1 - x)).abs().clamp_min(1e-12))
    if w is not None:
        mag = mag * w.double().abs()
    if pw is not None:
        mag = mag * (1 + pw.double().abs())
    return mag


def grad_error(torch, loss, ops, kw, w, pw, reduction, dl, opshape, dtype):
    """Bound on the compute error of dloss·scale·∂ℓ/∂operand per element (K_TERM·u·
    :func:`_magnitude`·|dloss|·scale; multilabel_soft_margin: / C), summed back to the operand's
    shape when it was broadcast (each summed element's bound plus count·u·Σ|terms|)."""
    u = eps(CT[dtype])
    mag = _magnitude(torch, loss, ops, kw, w, pw)
    g = dl.double().abs()
    if loss == "multilabel_soft_margin_loss":
        c = mag.shape[-1]
        g = (g.unsqueeze(-1) if reduction == "none" else g) / c
        nterms = mag.numel() // max(c, 1)
    else:
        nterms = mag.numel()
    if reduction == "mean":
        g = g / max(nterms, 1)
    elif reduction == "batchmean":
        g = g / ops[0].shape[0]
    m = mag * g
    err = K_TERM * u * m
    opshape = tuple(opshape)
    if tuple(err.shape) != opshape:
        count = err.numel() // max(math.prod(opshape), 1)
        if opshape == tuple(err.shape[:-1]):       # gaussian var (N,) for an (N, D) input
            err, m = err.sum(-1), m.sum(-1)
            return err + count * u * m
        err = err.sum_to_size(opshape) + count * u * m.sum_to_size(opshape)
    return err


def check_loss(torch, got, loss, ops, kw, w, pw, reduction, dtype, what=""):
    """Our forward loss vs torch.nn.functional in float64 from the same (rounded) operands: per
    element K_TERM·u·:func:`_magnitude` (+ the output rounding); multilabel_soft_margin first
    averages each row over its C classes (depth row_depth(C)); sum / mean add
    _pw_depth(n)·u·Σ|ℓ| and the mean's division."""
    u = eps(CT[dtype])
    ops64 = [o.double() for o in ops]
    w64 = None if w is None else w.double()
    pw64 = None if pw is None else pw.double()
    ref = _ref(torch, loss, ops64, kw, w64, pw64, reduction)
    if ref.numel() == 0:
        assert got.numel() == 0 and tuple(got.shape) == tuple(ref.shape), what
        return
    terms = _ref(torch, loss, ops64, kw, w64, pw64, "none")
    mag = _magnitude(torch, loss, ops, kw, w, pw)
    err = K_TERM * u * mag
    if loss == "multilabel_soft_margin_loss":
        c = mag.shape[-1]
        err = err.mean(-1) + row_depth(c) * u * mag.mean(-1)
    if reduction != "none":
        n = terms.numel()
        err = err.sum() + _pw_depth(n) * u * terms.abs().sum()
        if reduction == "mean":
            err = err / n + u * ref.abs()
        elif reduction == "batchmean":
            err = err / ops[0].shape[0] + u * ref.abs()
    check(got.reshape(ref.shape), ref, dtype, err, what=what)


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
                check_loss(torch, out, loss, ops, kw, w, pw, red, dtype,
                           (loss, kw, dtype, shape, red))
    if loss == "kl_div":
        out, ref, (ops, w, pw, _) = _forward(torch, loss, kw, (6, 5), "float32", "batchmean",
                                             gen)
        check_loss(torch, out, loss, ops, kw, w, pw, "batchmean", "float32", "batchmean")


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
                    err = grad_error(torch, loss, ops, kw, w, pw, red, dl, refg.shape, dtype)
                    check(gv, refg, dtype, err, what=(loss, kw, dtype, shape, red, n))


def test_half_types_and_odd_sizes():
    torch = pytest.importorskip("torch")
    gen = torch.Generator(device="cuda").manual_seed(3)
    for dtype in ("float16", "bfloat16"):
        for n in (1, 7, 1000, 100003):
            for loss, kw in (("mse_loss", {}), ("binary_cross_entropy_with_logits", {}),
                             ("gaussian_nll_loss", {})):
                for red in ("none", "mean"):
                    out, ref, (ops, w, pw, _) = _forward(torch, loss, kw, (n,), dtype, red, gen)
                    check_loss(torch, out, loss, ops, kw, w, pw, red, dtype, (loss, dtype, n, red))


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
                elif loss == "multilabel_soft_margin_loss" and shape[-1] == 0:
                    # 'none' drops the class dim: a 1-d input is ONE sample of C classes, so
                    # (0,) -> () and (3, 0) -> (3,), each the mean over 0 classes = 0/0 = NaN
                    # (torch: loss.sum(class_dim) / C) — not an empty result
                    assert tuple(out.shape) == shape[:-1], (loss, shape, tuple(out.shape))
                    assert bool(torch.isnan(out).all()), (loss, shape, out)
                    check(out, ref, "float32", what=(loss, shape))
                else:
                    # no sample: (0,) / (0, 5) -> an empty result ((0, 5) multilabel -> (0,))
                    assert out.numel() == 0 and ref.numel() == 0, (loss, shape)


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
        gx, gy = torch.full_like(x, float("nan")), torch.full_like(y, float("nan"))
        plan.run(PointwiseLossBackwardArgs(dl, [x, y], [gx, gy]), workspace=_ws(torch, plan))
        for gv, lf, nm in ((gx, xl, "grad x"), (gy, yl, "grad y (broadcast)")):
            err = grad_error(torch, "mse_loss", [x, y], {}, None, None, red, dl, lf.shape,
                             "float32")
            check(gv, lf.grad, "float32", err, what=(nm, red))
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
        grads = [torch.full_like(a, float("nan")) for a in (x, t, var)]
        one = torch.ones((), device="cuda")
        plan.run(PointwiseLossBackwardArgs(one, [x, t, var], grads), workspace=_ws(torch, plan))
        for gv, lf, n in zip(grads, leaves, ("x", "t", "var")):
            err = grad_error(torch, "gaussian_nll_loss", [x, t, var], {}, None, None, "sum",
                             one, lf.shape, "float32")
            check(gv, lf.grad, "float32", err, what=("gaussian", vshape, n))
    w = 0.5 + torch.rand((24,), generator=gen, device="cuda")
    pw = 0.5 + torch.rand((24,), generator=gen, device="cuda")
    yb = torch.rand((50, 24), generator=gen, device="cuda")
    for red in ("none", "mean"):
        _fw_check(torch, "binary_cross_entropy_with_logits", [x, yb], {}, red, w=w, pw=pw)
        _fw_check(torch, "binary_cross_entropy_with_logits", [x, yb], {}, red,
                  pw=pw[None, :].expand(50, 24))


def _fw_check(torch, loss, ops, kw, red, w=None, pw=None, out=None):
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
    check_loss(torch, out, loss, ops, kw, w, pw, red, str(ops[0].dtype).split(".")[-1],
               (loss, red))
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

    gen = torch.Generator(device="cuda").manual_seed(8)
    a = torch.randn((20, 9), generator=gen, device="cuda")
    b = torch.rand((20, 9), generator=gen, device="cuda")
    v = 0.2 + torch.rand((20,), generator=gen, device="cuda")
    A, B, V = xp.from_dlpack(a), xp.from_dlpack(b), xp.from_dlpack(v)

    def chk(got, loss, ops, red, **kw):
        check_loss(torch, torch.from_dlpack(got), loss, ops, kw, None, None, red, "float32",
                   ("namespace", loss, red))

    chk(L.mse_loss(A, B), "mse_loss", [a, b], "mean")
    chk(L.l1_loss(A, B, reduction="none"), "l1_loss", [a, b], "none")
    chk(L.huber_loss(A, B, reduction="sum", delta=0.5), "huber_loss", [a, b], "sum", delta=0.5)
    chk(L.smooth_l1_loss(A, B, beta=0.2), "smooth_l1_loss", [a, b], "mean", beta=0.2)
    chk(L.mse_loss(A, B, size_average=False), "mse_loss", [a, b], "sum")
    chk(L.binary_cross_entropy_with_logits(A, B), "binary_cross_entropy_with_logits", [a, b],
        "mean")
    chk(L.kl_div(A, B, reduction="batchmean"), "kl_div", [a, b], "batchmean")
    chk(L.gaussian_nll_loss(A, B, V), "gaussian_nll_loss", [a, b, v], "mean")
    chk(L.multilabel_soft_margin_loss(A, B, reduction="none"), "multilabel_soft_margin_loss",
        [a, b], "none")
    with pytest.raises(TypeError):
        L.mse_loss(A, xp.from_dlpack(b.double()))
    with pytest.raises(ValueError):
        L.mse_loss(A, B, reduction="avg")
    with pytest.raises(ValueError):
        L.huber_loss(A, B, delta=-1.0)
