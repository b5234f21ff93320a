"""The op table of the pointwise-loss template: per loss, the per-element term (forward) and its
local derivatives (backward), traced into :mod:`.loss_pointwise`.

Every formula is a plain Python function evaluated at trace time on compute-typed scalars
(Float32 for f32/f16/bf16, Float64 for f64); data-dependent choices use ``sel`` (no dynamic
Python control flow).  ``v`` is the list of the loss's inputs in torch.nn.functional order,
``w`` the weight (1 when absent), ``pw`` the pos_weight (1 when absent), ``p0``/``p1`` the float
parameters.  Semantics follow torch.nn.functional (the module docstring of
:mod:`baracuda_dsl.ops.losses.loss_pointwise` lists them); stable forms: softplus(z) =
max(z, 0) + log1p(exp(−|z|)) for the logistic losses.
"""

from __future__ import annotations

import math

from ....blocks.scalar_math import M, maximum, sel, sigmoid

NAN = float("nan")
HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
BCE_EPS = 9.999999960041972e-13  # torch's EPSILON = 1e-12 as a float32 (bce backward)


def softplus(z):
    """log(1 + exp(z)) without overflow or cancellation."""
    t = type(z)
    return sel(z > t(0.0), z, t(0.0)) + M.log1p(M.exp(-M.absf(z)))


def _sign(d):
    t = type(d)
    return sel(d > t(0.0), t(1.0), sel(d < t(0.0), t(-1.0), t(0.0)))


def _clamp_min0(z):
    """max(z, 0) with NaN propagation (torch clamp_min)."""
    return maximum(z, type(z)(0.0))


def _xlogy_self(y):
    """xlogy(y, y): 0 where y == 0, y·log y otherwise (NaN stays NaN)."""
    t = type(y)
    return sel(y == t(0.0), t(0.0), y * M.log(y))


def _stirling(y):
    """y·log y − y + ½·log(2πy) for y > 1, else 0 (poisson_nll_loss(full=True))."""
    t = type(y)
    term = y * M.log(y) - y + t(0.5) * M.log(t(2.0 * math.pi) * y)
    return sel(y > t(1.0), term, t(0.0))


# ------------------------------------------------------------------------------- forward
def fw_mse(v, w, pw, p0, p1):
    d = v[0] - v[1]
    return d * d


def fw_l1(v, w, pw, p0, p1):
    return M.absf(v[0] - v[1])


def fw_huber(v, w, pw, p0, p1):
    d = v[0] - v[1]
    a = M.absf(d)
    t = type(d)
    return sel(a < p0, t(0.5) * d * d, p0 * (a - t(0.5) * p0))


def fw_smooth_l1(v, w, pw, p0, p1):
    d = v[0] - v[1]
    a = M.absf(d)
    t = type(d)
    return sel(a < p0, t(0.5) * d * d / p0, a - t(0.5) * p0)


def fw_soft_margin(v, w, pw, p0, p1):
    return softplus(-(v[1] * v[0]))


def fw_bce(v, w, pw, p0, p1):
    x, y = v[0], v[1]
    t = type(x)
    lo = t(-100.0)
    lx = maximum(M.log(x), lo)
    l1x = maximum(M.log1p(-x), lo)
    return w * ((y - t(1.0)) * l1x - y * lx)


def fw_bce_logits(v, w, pw, p0, p1):
    x, y = v[0], v[1]
    t = type(x)
    lw = (pw - t(1.0)) * y + t(1.0)
    return w * ((t(1.0) - y) * x + lw * softplus(-x))


def fw_kl_div(v, w, pw, p0, p1):
    x, y = v[0], v[1]
    return _xlogy_self(y) - y * x


def fw_kl_div_log(v, w, pw, p0, p1):
    x, y = v[0], v[1]
    return M.exp(y) * (y - x)


def _full(p1, y, term):
    t = type(y)
    return sel(p1 != t(0.0), term, t(0.0))


def fw_poisson_nll(v, w, pw, p0, p1):
    x, y = v[0], v[1]
    return x - y * M.log(x + p0) + _full(p1, y, _stirling(y))


def fw_poisson_nll_log(v, w, pw, p0, p1):
    x, y = v[0], v[1]
    return M.exp(x) - y * x + _full(p1, y, _stirling(y))


def _var(v2, p0):
    """var clamped to ≥ eps (torch clamps a no-grad copy: the gradient passes through)."""
    return maximum(v2, p0)


def fw_gaussian_nll(v, w, pw, p0, p1):
    x, y = v[0], v[1]
    var = _var(v[2], p0)
    d = x - y
    t = type(x)
    return t(0.5) * (M.log(var) + d * d / var) + sel(p1 != t(0.0), t(HALF_LOG_2PI), t(0.0))


def fw_hinge_embedding(v, w, pw, p0, p1):
    x, y = v[0], v[1]
    t = type(x)
    m = sel(y != t(1.0), _clamp_min0(p0 - x), t(0.0))
    s = sel(y != t(-1.0), x, t(0.0))
    return m + s


def fw_margin_ranking(v, w, pw, p0, p1):
    x1, x2, y = v[0], v[1], v[2]
    return _clamp_min0(-y * (x1 - x2) + p0)


def fw_multilabel_soft_margin(v, w, pw, p0, p1):
    x, y = v[0], v[1]
    t = type(x)
    return w * (y * softplus(-x) + (t(1.0) - y) * softplus(x))


# ------------------------------------------------------------------------------ backward
# each returns the local derivatives of the loss term w.r.t. the op's ``grads`` operands
def bw_mse(v, w, pw, p0, p1):
    d = v[0] - v[1]
    g = type(d)(2.0) * d
    return (g, -g)


def bw_l1(v, w, pw, p0, p1):
    g = _sign(v[0] - v[1])
    return (g, -g)


def bw_huber(v, w, pw, p0, p1):
    d = v[0] - v[1]
    g = sel(d <= -p0, -p0, sel(d >= p0, p0, d))
    return (g, -g)


def bw_smooth_l1(v, w, pw, p0, p1):
    d = v[0] - v[1]
    t = type(d)
    g = sel(d <= -p0, t(-1.0), sel(d >= p0, t(1.0), d / p0))
    return (g, -g)


def bw_soft_margin(v, w, pw, p0, p1):
    x, y = v[0], v[1]
    return (-y * sigmoid(-(y * x)),)


def bw_bce(v, w, pw, p0, p1):
    x, y = v[0], v[1]
    t = type(x)
    den = maximum((t(1.0) - x) * x, t(BCE_EPS))
    return (w * (x - y) / den,)


def bw_bce_logits(v, w, pw, p0, p1):
    x, y = v[0], v[1]
    t = type(x)
    py = pw * y
    return (w * ((py + t(1.0) - y) * sigmoid(x) - py),)


def bw_kl_div(v, w, pw, p0, p1):
    x, y = v[0], v[1]
    t = type(x)
    # torch (xlogy autograd): ∂/∂y = log y + 1 − x for y ≠ 0, NaN (0/0) at y == 0
    gy = sel(y == t(0.0), t(NAN), M.log(y) + t(1.0) - x)
    return (-y, gy)


def bw_kl_div_log(v, w, pw, p0, p1):
    x, y = v[0], v[1]
    e = M.exp(y)
    return (-e, e * (y - x + type(x)(1.0)))


def bw_poisson_nll(v, w, pw, p0, p1):
    x, y = v[0], v[1]
    return (type(x)(1.0) - y / (x + p0),)


def bw_poisson_nll_log(v, w, pw, p0, p1):
    x, y = v[0], v[1]
    return (M.exp(x) - y,)


def bw_gaussian_nll(v, w, pw, p0, p1):
    x, y = v[0], v[1]
    var = _var(v[2], p0)
    d = x - y
    t = type(x)
    r = d / var
    return (r, -r, t(0.5) * (t(1.0) / var - r * r))


def bw_hinge_embedding(v, w, pw, p0, p1):
    x, y = v[0], v[1]
    t = type(x)
    gm = sel(y != t(1.0), sel(p0 - x >= t(0.0), t(-1.0), t(0.0)), t(0.0))
    gs = sel(y != t(-1.0), t(1.0), t(0.0))
    return (gm + gs,)


def bw_margin_ranking(v, w, pw, p0, p1):
    x1, x2, y = v[0], v[1], v[2]
    t = type(x1)
    act = -y * (x1 - x2) + p0 >= t(0.0)
    return (sel(act, -y, t(0.0)), sel(act, y, t(0.0)))


def bw_multilabel_soft_margin(v, w, pw, p0, p1):
    x, y = v[0], v[1]
    return (w * (sigmoid(x) - y),)


FORWARD = {k[3:]: f for k, f in globals().items() if k.startswith("fw_")}
BACKWARD = {k[3:]: f for k, f in globals().items() if k.startswith("bw_")}
