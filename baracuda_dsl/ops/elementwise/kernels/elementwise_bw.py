"""Backward formulas of the elementwise op table (floating dtypes; half types in f32).

Unary ``f_bw(cx, dy, x) -> (dx,)`` with ``dx = dy · f'(x)`` (recomputed from x, never from a saved
output).  Binary ``f_bw(cx, dy, a, b) -> (da, db)`` and ternary ``f_bw(cx, dy, a, b, c) -> (da,
db, dc)`` give full-shape gradients; the plan reduces them over broadcast dimensions.  Conventions
follow torch autograd: subgradient 0 at kinks (relu, abs, clip bounds inclusive for x), maximum /
minimum split ties evenly, floor_divide / rounding have zero gradient.
"""

from __future__ import annotations

import math

from ....blocks import scalar_math as sm
from . import elementwise_ops as ew
from ....blocks.scalar_math import M, and_, gelu, relu, sel, sigmoid, silu

_SQRT1_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _d(deriv):
    """A unary backward from a derivative ``deriv(cx, x)``."""
    return lambda cx, dy, x: (dy * deriv(cx, x),)


def _gelu_d(x):
    t = type(x)
    cdf = t(0.5) * M.erfc(x * t(-1.0 / math.sqrt(2.0)))
    return cdf + x * M.exp(t(-0.5) * x * x) * t(_SQRT1_2PI)


def _gelu_tanh_d(x):
    """d/dx x·σ(2z) = σ(2z) + x·2σ(2z)(1 − σ(2z))·z'   (z' = √(2/π)(1 + 3·0.044715x²))."""
    t = type(x)
    s = sigmoid(t(2.0) * sm.gelu_tanh_z(x))
    dz = t(math.sqrt(2.0 / math.pi)) * (t(1.0) + t(3.0 * 0.044715) * x * x)
    return s + x * t(2.0) * s * (t(1.0) - s) * dz


def _silu_d(x):
    s = sigmoid(x)
    return s * (type(x)(1.0) + x * (type(x)(1.0) - s))


def _mish_d(x):
    t = type(x)
    sp = sm.softplus(x, t(1.0), t(20.0))
    th = M.tanh(sp)
    return th + x * (t(1.0) - th * th) * sigmoid(x)


def _softplus_d(cx, x):
    bx = x * cx.p[0]
    return sel(bx > cx.p[1], cx.c(1.0), sigmoid(bx))


def _inside(x, lo, hi):
    """1 where lo ≤ x ≤ hi, else 0 (compute type of x)."""
    t = type(x)
    return sel(and_(x >= lo, x <= hi), t(1.0), t(0.0))


def _step(cond, t):
    return sel(cond, t(1.0), t(0.0))


def _logit_d(cx, x):
    eps = cx.p[0]
    g = cx.c(1.0) / (x * (cx.c(1.0) - x))
    out = and_(eps >= cx.c(0.0), sm.or_(x < eps, x > cx.c(1.0) - eps))
    return sel(out, cx.c(0.0), g)


BACKWARD = {
    "abs_bw": _d(lambda cx, x: sm.fsign(x) * _step(x == x, cx.ct)),
    "negative_bw": lambda cx, dy, x: (-dy,),
    "square_bw": _d(lambda cx, x: cx.c(2.0) * x),
    "sign_bw": _d(lambda cx, x: cx.c(0.0)),
    "reciprocal_bw": _d(lambda cx, x: -cx.c(1.0) / (x * x)),
    "exp_bw": _d(lambda cx, x: M.exp(x)),
    "expm1_bw": _d(lambda cx, x: M.exp(x)),
    "log_bw": _d(lambda cx, x: cx.c(1.0) / x),
    "log1p_bw": _d(lambda cx, x: cx.c(1.0) / (cx.c(1.0) + x)),
    "log2_bw": _d(lambda cx, x: cx.c(1.0 / math.log(2.0)) / x),
    "log10_bw": _d(lambda cx, x: cx.c(1.0 / math.log(10.0)) / x),
    "sqrt_bw": _d(lambda cx, x: cx.c(0.5) / M.sqrt(x)),
    "sin_bw": _d(lambda cx, x: M.cos(x)),
    "cos_bw": _d(lambda cx, x: -M.sin(x)),
    "tan_bw": _d(lambda cx, x: cx.c(1.0) + M.tan(x) * M.tan(x)),
    "sinh_bw": _d(lambda cx, x: M.cosh(x)),
    "cosh_bw": _d(lambda cx, x: M.sinh(x)),
    "tanh_bw": _d(lambda cx, x: cx.c(1.0) - M.tanh(x) * M.tanh(x)),
    "asin_bw": _d(lambda cx, x: cx.c(1.0) / M.sqrt(cx.c(1.0) - x * x)),
    "acos_bw": _d(lambda cx, x: -cx.c(1.0) / M.sqrt(cx.c(1.0) - x * x)),
    "atan_bw": _d(lambda cx, x: cx.c(1.0) / (cx.c(1.0) + x * x)),
    "asinh_bw": _d(lambda cx, x: cx.c(1.0) / M.sqrt(x * x + cx.c(1.0))),
    "acosh_bw": _d(lambda cx, x: cx.c(1.0) / M.sqrt(x * x - cx.c(1.0))),
    "atanh_bw": _d(lambda cx, x: cx.c(1.0) / (cx.c(1.0) - x * x)),
    "ceil_bw": _d(lambda cx, x: cx.c(0.0)),
    "floor_bw": _d(lambda cx, x: cx.c(0.0)),
    "trunc_bw": _d(lambda cx, x: cx.c(0.0)),
    "round_bw": _d(lambda cx, x: cx.c(0.0)),
    # ML extensions
    "relu_bw": _d(lambda cx, x: _step(x > cx.c(0.0), cx.ct)),
    "gelu_bw": _d(lambda cx, x: _gelu_d(x)),
    "gelu_tanh_bw": _d(lambda cx, x: _gelu_tanh_d(x)),
    "silu_bw": _d(lambda cx, x: _silu_d(x)),
    "mish_bw": _d(lambda cx, x: _mish_d(x)),
    "sigmoid_bw": _d(lambda cx, x: sigmoid(x) * (cx.c(1.0) - sigmoid(x))),
    "softplus_bw": _d(_softplus_d),
    "hardswish_bw": _d(lambda cx, x: sel(x < cx.c(-3.0), cx.c(0.0), sel(
        x > cx.c(3.0), cx.c(1.0), x / cx.c(3.0) + cx.c(0.5)))),
    "hardsigmoid_bw": _d(lambda cx, x: sel(and_(x > cx.c(-3.0), x < cx.c(3.0)),
                                           cx.c(1.0 / 6.0), cx.c(0.0))),
    "hardtanh_bw": _d(lambda cx, x: sel(and_(x > cx.p[0], x < cx.p[1]), cx.c(1.0),
                                        cx.c(0.0))),
    "relu6_bw": _d(lambda cx, x: sel(and_(x > cx.c(0.0), x < cx.c(6.0)), cx.c(1.0),
                                     cx.c(0.0))),
    "elu_bw": _d(lambda cx, x: sel(x > cx.c(0.0), cx.c(1.0), cx.p[0] * M.exp(x))),
    "selu_bw": _d(lambda cx, x: cx.c(ew.SELU_SCALE) * sel(
        x > cx.c(0.0), cx.c(1.0), cx.c(ew.SELU_ALPHA) * M.exp(x))),
    "leaky_relu_bw": _d(lambda cx, x: sel(x > cx.c(0.0), cx.c(1.0), cx.p[0])),
    "logit_bw": _d(_logit_d),
    "erf_bw": _d(lambda cx, x: cx.c(2.0 / math.sqrt(math.pi)) * M.exp(-x * x)),
    "erfc_bw": _d(lambda cx, x: cx.c(-2.0 / math.sqrt(math.pi)) * M.exp(-x * x)),
    "erfinv_bw": _d(lambda cx, x: cx.c(math.sqrt(math.pi) / 2.0) * M.exp(
        sm.erfinv(x) * sm.erfinv(x))),
    "lgamma_bw": _d(lambda cx, x: sm.digamma(x)),
    "digamma_bw": _d(lambda cx, x: sm.trigamma(x)),
    "softsign_bw": _d(lambda cx, x: cx.c(1.0) / ((cx.c(1.0) + M.absf(x)) *
                                                 (cx.c(1.0) + M.absf(x)))),
    "tanhshrink_bw": _d(lambda cx, x: M.tanh(x) * M.tanh(x)),
    "hardshrink_bw": _d(lambda cx, x: _step(M.absf(x) > cx.p[0], cx.ct)),
    "softshrink_bw": _d(lambda cx, x: _step(M.absf(x) > cx.p[0], cx.ct)),
    "threshold_bw": _d(lambda cx, x: _step(x > cx.p[0], cx.ct)),
    "affine_bw": lambda cx, dy, x: (dy * cx.p[0],),
    # binary: (dy, a, b) -> (da, db)
    "add_bw": lambda cx, dy, a, b: (dy, dy),
    "subtract_bw": lambda cx, dy, a, b: (dy, -dy),
    "multiply_bw": lambda cx, dy, a, b: (dy * b, dy * a),
    "divide_bw": lambda cx, dy, a, b: (dy / b, -dy * a / (b * b)),
    "pow_bw": lambda cx, dy, a, b: (
        sel(b == cx.c(0.0), cx.c(0.0), dy * b * M.pow(a, b - cx.c(1.0))),
        sel(a == cx.c(0.0), sel(b >= cx.c(0.0), cx.c(0.0), dy * M.pow(a, b) * M.log(a)),
            dy * M.pow(a, b) * M.log(a))),
    "atan2_bw": lambda cx, dy, a, b: (dy * b / (a * a + b * b), -dy * a / (a * a + b * b)),
    "hypot_bw": lambda cx, dy, a, b: (dy * a / sm.hypot(a, b), dy * b / sm.hypot(a, b)),
    "logaddexp_bw": lambda cx, dy, a, b: (dy * sigmoid(a - b), dy * sigmoid(b - a)),
    "copysign_bw": lambda cx, dy, a, b: (
        sel(a == cx.c(0.0), cx.c(0.0), dy * sm.fsign(a) * M.copysign(cx.c(1.0), b)),
        cx.c(0.0) * dy),
    "maximum_bw": lambda cx, dy, a, b: (
        dy * sel(a > b, cx.c(1.0), sel(a == b, cx.c(0.5), cx.c(0.0))),
        dy * sel(b > a, cx.c(1.0), sel(a == b, cx.c(0.5), cx.c(0.0)))),
    "minimum_bw": lambda cx, dy, a, b: (
        dy * sel(a < b, cx.c(1.0), sel(a == b, cx.c(0.5), cx.c(0.0))),
        dy * sel(b < a, cx.c(1.0), sel(a == b, cx.c(0.5), cx.c(0.0)))),
    "floor_divide_bw": lambda cx, dy, a, b: (cx.c(0.0) * dy, cx.c(0.0) * dy),
    "remainder_bw": lambda cx, dy, a, b: (dy, -dy * sm.fdivmod(a, b)[0]),
    "prelu_bw": lambda cx, dy, x, w: (sel(x > cx.c(0.0), dy, w * dy),
                                      sel(x > cx.c(0.0), cx.c(0.0), dy * x)),
    "glu_bw": lambda cx, dy, a, b: (dy * sigmoid(b),
                                    dy * a * sigmoid(b) * (cx.c(1.0) - sigmoid(b))),
    "reglu_bw": lambda cx, dy, a, b: (dy * b * _step(a > cx.c(0.0), cx.ct), dy * relu(a)),
    "swiglu_bw": lambda cx, dy, a, b: (dy * b * _silu_d(a), dy * silu(a)),
    "geglu_bw": lambda cx, dy, a, b: (dy * b * _gelu_d(a), dy * gelu(a)),
    # ternary: (dy, a, b, c) -> (da, db, dc)
    "clip_bw": lambda cx, dy, x, lo, hi: (dy * _inside(x, lo, hi), dy * _step(x < lo, cx.ct),
                                          dy * _step(x > hi, cx.ct)),
    "lerp_bw": lambda cx, dy, a, b, w: (dy * (cx.c(1.0) - w), dy * w, dy * (b - a)),
    "addcmul_bw": lambda cx, dy, x, a, b: (dy, dy * cx.p[0] * b, dy * cx.p[0] * a),
    "addcdiv_bw": lambda cx, dy, x, a, b: (dy, dy * cx.p[0] / b,
                                           -dy * cx.p[0] * a / (b * b)),
    "fma_bw": lambda cx, dy, a, b, c: (dy * b, dy * a, dy),
    # where: (dy, cond) -> (dx1, dx2)
    "where_bw": lambda cx, dy, c: (sel(c, dy, cx.c(0.0)), sel(c, cx.c(0.0), dy)),
}
