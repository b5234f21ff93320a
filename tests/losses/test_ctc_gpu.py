"""CTC loss FW + BW on the GPU against torch CPU float64 ctc_loss (autograd for the BW).

Every element is checked (tests/_checks.py via _loss_gpu_checks) against NaN-poisoned outputs;
the bounds follow the log-space alpha / beta recursions (:func:`check_ctc`)."""

import numpy as np
import pytest

from _loss_gpu_checks import CT, check, eps, run_with_workspace
from baracuda_dsl.ops.losses import ctc as C

pytestmark = pytest.mark.gpu

SHORT = {"float32": "f32", "float64": "f64", "bfloat16": "bf16", "float16": "f16"}


def _torch():
    return pytest.importorskip("torch")


def check_ctc(out, grad, lp, tg, il, tl, blank, red, zi, g, dt, what=""):
    """Forward loss (and with ``grad`` the gradient for upstream ``g``) vs float64 torch.

    The alpha recursion takes T steps, each a log-sum-exp of <= 3 states (hi + log1p(exp(lo −
    hi)): u·(|α| + 3) absolute) plus the log-prob (u·(|α| + |lp|)); |α| <= the sample's nll, so
    the nll errs by <= T·u·(2·nll + max|lp| + 3) absolute (then / target length and the batch
    reduction for mean / sum, each a rounding, the sum over N of depth N).  The gradient
    exp(lp) − exp(log Σ αβ + nll − lp) takes the exponent from two such recursions and the nll:
    the posterior term is off by a factor exp(3·that) − 1; the difference cancels, so the error
    is relative to |g|·(exp(lp) + posterior).  Infinite losses (impossible alignments) must be
    exactly inf (or 0 with zero_infinity)."""
    torch = _torch()
    T = lp.shape[0]
    u = eps(CT[dt])
    ref, rgrad = _ref(lp, tg, il, tl, blank, red, zi, g)
    per, _ = _ref(lp, tg, il, tl, blank, "none", False)
    lpd = lp.detach().double().cpu()
    lmax = float(lpd[torch.isfinite(lpd)].abs().max()) if lpd.numel() else 0.0
    nll = torch.where(torch.isfinite(per), per.abs(), torch.zeros_like(per))
    e_row = T * u * (2 * nll + lmax + 3)
    if red == "none":
        err = e_row
    else:
        w = 1.0 / tl.double().clamp_min(1) if red == "mean" else torch.ones_like(nll)
        n = max(nll.numel(), 1)
        err = (e_row * w).sum() + (n + 2) * u * (nll * w).sum()
        if red == "mean":
            err = err / n
    check(out, ref, dt, err, what=(what, "loss"))
    if grad is None:
        return
    gd = g.double().cpu()
    gb = gd if gd.dim() == 0 else gd.reshape(1, -1, 1)
    if red == "mean":
        gb = gb / tl.double().clamp_min(1).reshape(1, -1, 1) / max(nll.numel(), 1)
    ex = lpd.exp() * gb.abs()
    mag = ex + (ex * torch.sign(gb) - rgrad).abs()
    rel = torch.expm1(3 * e_row.reshape(1, -1, 1)) + 8 * u
    check(grad, rgrad, dt, rel * mag, what=(what, "grad"))


def _case(T, N, Cn, S, seed, blank=0, dt="float32"):
    """log_probs (T, N, C) on the GPU (dtype dt), padded targets (N, S), lengths, with repeated
    labels, an empty target and a too-long target when N allows."""
    torch = _torch()
    rng = np.random.default_rng(seed)
    x = torch.tensor(rng.standard_normal((T, N, Cn)) * 2).log_softmax(-1)
    labels = [c for c in range(Cn) if c != blank]
    tg = rng.choice(labels, (N, S)).astype(np.int64)
    tl = rng.integers(0, S + 1, N)
    il = rng.integers(max(T // 2, 0), T + 1, N)
    if N > 2 and S >= 3:
        tg[0, 1] = tg[0, 0]      # repeated label
        tl[0], il[0] = S, T
        tl[1] = 0                # empty target
        il[2], tl[2] = 1, 3      # impossible alignment: loss = inf
    lp = x.to(getattr(torch, dt)).cuda()
    return lp, torch.tensor(tg), torch.tensor(il), torch.tensor(tl)


def _ref(lp, tg, il, tl, blank, red, zi, g=None):
    torch = _torch()
    x = lp.detach().double().cpu().requires_grad_(True)
    loss = torch.nn.functional.ctc_loss(x, tg, il, tl, blank=blank, reduction=red,
                                        zero_infinity=zi)
    if g is not None:
        loss.backward(g.double().cpu())
    return loss.detach(), x.grad


@pytest.mark.parametrize("dt", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("red", ["none", "mean", "sum"])
@pytest.mark.parametrize("zi", [False, True])
def test_ctc_forward_backward(dt, red, zi):
    torch = _torch()
    for (T, N, Cn, S, blank) in [(12, 5, 6, 4, 0), (50, 3, 20, 10, 19), (1, 2, 3, 1, 1),
                                 (130, 4, 40, 45, 0)]:
        lp, tg, il, tl = _case(T, N, Cn, S, T + N, blank, dt)
        shape = (N,) if red == "none" else ()
        out = torch.full(shape, float("nan"), device="cuda", dtype=lp.dtype)      # poisoned
        desc = C.CTCLossDescriptor(T, N, Cn, SHORT[dt], S, blank=blank, reduction=red,
                                   zero_infinity=zi)
        st = torch.zeros(1, dtype=torch.int32, device="cuda")
        run_with_workspace(C.CTCLossPlan.select(desc),
             C.CTCLossArgs(lp, tg.cuda(), il.cuda(), tl.cuda(), out, st))
        assert st.item() == 0
        g = torch.randn(shape, device="cuda", dtype=torch.float64).to(lp.dtype)
        grad = torch.full((T, N, Cn), float("nan"), device="cuda", dtype=lp.dtype)
        bdesc = C.CTCLossBackwardDescriptor(T, N, Cn, SHORT[dt], S, blank=blank, reduction=red,
                                            zero_infinity=zi)
        run_with_workspace(C.CTCLossBackwardPlan.select(bdesc),
             C.CTCLossBackwardArgs(g, lp, tg.cuda(), il.cuda(), tl.cuda(), grad))
        check_ctc(out, grad, lp, tg, il, tl, blank, red, zi, g, dt, f"ctc T={T} {red} {zi}")


def test_ctc_concatenated_targets_and_strided_log_probs():
    torch = _torch()
    T, N, Cn, S = 40, 6, 12, 8
    lp, tg, il, tl = _case(T, N, Cn, S, 7, dt="float64")
    flat = torch.cat([tg[i, :tl[i]] for i in range(N)])
    big = torch.full((T, N, 2 * Cn), float("nan"), device="cuda", dtype=torch.float64)
    big[:, :, ::2] = lp
    lps = big[:, :, ::2]          # class stride 2
    out = torch.full((N,), float("nan"), device="cuda", dtype=torch.float64)
    desc = C.CTCLossDescriptor(T, N, Cn, "f64", int(tl.max()), concatenated=True,
                               total=flat.numel(), reduction="none")
    run_with_workspace(C.CTCLossPlan.select(desc), C.CTCLossArgs(lps, flat.cuda(), il.cuda(), tl.cuda(), out))
    g = torch.ones((N,), device="cuda", dtype=torch.float64)
    gbig = torch.full((T, N, 2 * Cn), 7.0, device="cuda", dtype=torch.float64)
    bdesc = C.CTCLossBackwardDescriptor(T, N, Cn, "f64", int(tl.max()), concatenated=True,
                                        total=flat.numel(), reduction="none")
    run_with_workspace(C.CTCLossBackwardPlan.select(bdesc),
         C.CTCLossBackwardArgs(g, lps, flat.cuda(), il.cuda(), tl.cuda(), gbig[:, :, 1::2]))
    check_ctc(out, gbig[:, :, 1::2], lp, tg, il, tl, 0, "none", False, g, "float64", "concat")
    assert (gbig[:, :, ::2] == 7.0).all()


def test_ctc_bad_label_sets_status_and_empty_batch():
    torch = _torch()
    lp, tg, il, tl = _case(10, 3, 5, 3, 11)
    tg[1, 0] = 9  # outside [0, C)
    tl[1] = 3
    out = torch.full((3,), 7.0, device="cuda")   # poison: no loss here is 7 (and 1 is NaN)
    st = torch.zeros(1, dtype=torch.int32, device="cuda")
    desc = C.CTCLossDescriptor(10, 3, 5, "f32", 3, reduction="none")
    run_with_workspace(C.CTCLossPlan.select(desc), C.CTCLossArgs(lp, tg.cuda(), il.cuda(), tl.cuda(), out, st))
    assert st.item() == 1 and torch.isnan(out[1]) and not torch.isnan(out[0])
    ok = [0, 2]
    check_ctc(out[ok], None, lp[:, ok], tg[ok], il[ok], tl[ok], 0, "none", False, None, "float32",
              "bad label: the other samples")
    for red, want in (("mean", float("nan")), ("sum", 0.0)):
        out = torch.full((), 5.0, device="cuda")
        e = torch.zeros((0,), dtype=torch.int64, device="cuda")
        d0 = C.CTCLossDescriptor(10, 0, 5, "f32", 3, reduction=red)
        run_with_workspace(C.CTCLossPlan.select(d0), C.CTCLossArgs(torch.zeros((10, 0, 5), device="cuda"),
                                                     torch.zeros((0, 3), dtype=torch.int64,
                                                                 device="cuda"), e, e, out))
        assert (np.isnan(out.item()) if want != want else out.item() == want)


def test_ctc_namespace():
    torch = _torch()
    import array_api as xp
    from array_api.losses import _row as R

    lp, tg, il, tl = _case(20, 4, 7, 5, 13, dt="float64")
    lpn = lp.cpu().numpy()
    got = R.ctc_loss(xp.asarray(lpn), xp.asarray(tg.numpy()), il.tolist(), tl.tolist(),
                     reduction="none")
    check_ctc(torch.tensor(got.to_numpy()), None, lp, tg, il, tl, 0, "none", False, None,
              "float64", "xp")
    flat = np.concatenate([tg[i, :tl[i]].numpy() for i in range(4)])
    got = R.ctc_loss(xp.asarray(lpn), xp.asarray(flat.astype(np.int32)),
                     xp.asarray(il.numpy()), xp.asarray(tl.numpy()), zero_infinity=True)
    check_ctc(torch.tensor(got.to_numpy()), None, lp, tg, il, tl, 0, "mean", True, None,
              "float64", "xp mean")
    got = R.ctc_loss(xp.asarray(lpn[:, 0]), xp.asarray(tg[0].numpy()), int(il[0]), int(tl[0]),
                     reduction="sum")
    check_ctc(torch.tensor(got.to_numpy()), None, lp[:, :1], tg[:1], il[:1], tl[:1], 0, "sum",
              False, None, "float64", "xp sum")
    with pytest.raises(ValueError):
        R.ctc_loss(xp.asarray(lpn), xp.asarray(tg.numpy()), [21] * 4, tl.tolist())
    bad = tg.numpy().copy()
    bad[0, 0] = 50
    with pytest.raises(ValueError):
        R.ctc_loss(xp.asarray(lpn), xp.asarray(bad), [20] * 4, [5] * 4)
