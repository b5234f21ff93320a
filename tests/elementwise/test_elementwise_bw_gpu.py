"""Elementwise backward plans on the GPU against float64 torch autograd (CPU) of the equivalent
torch function on the same (rounded) inputs and dy.

Every op with a backward (``OPS[op].grad``) in f32 and f64, a subset also in bf16 / f16; same-shape
operands, broadcast operands (gradients summed over the broadcast dims: (M,N)&(N,), (M,1,K)&(M,N,K),
(M,N)&(M,1)...), Python-scalar operands (no gradient), gradients not requested (None),
non-contiguous dy, and empty broadcasts (gradients of non-empty inputs are zeros).  Gradient
buffers are NaN-poisoned first.  Every gradient element is checked against its own bound
(:func:`_bound`): half an ulp of the value dtype, plus the derivative formula's roundings
(BW_TERMS) relative to |dy|·D (DERIV_SCALE: the magnitude of the formula's terms where it
cancels), plus the float64 reference's own roundings (BW_REF_TERMS, eps(float64)) relative to
|dy|·D_ref (BW_REF_SCALE: the magnitude of the terms of torch's formula, which cancels in places
where the kernel's does not: expm1, gelu, gelu_tanh, tanhshrink, softsign), plus, for gradients
summed over broadcast dims, the sum's roundings relative to the sum of the contributions'
magnitudes.  Where torch's float64 formula is not accurate to a few eps the reference is the exact
derivative instead (BW_EXACT: digamma).  Kinks follow torch (relu'(0) = 0, hardtanh / clip
bounds, ...), except the kinks in BW_KINKS, where random inputs are moved off the kink; maximum /
minimum split ties 0.5 / 0.5 as torch does; floor_divide and the rounding ops have zero gradients.
"""

from __future__ import annotations

import math
import zlib
from typing import NamedTuple

import numpy as np
import pytest

import _elementwise_refs as R
from baracuda_dsl.ops.elementwise.specs.elementwise import OPS
from _gpu_helpers import assert_close
from tests._checks import eps

pytestmark = pytest.mark.gpu

BW_OPS = [op for op, s in OPS.items() if s.grad is not None]
HALF_SUBSET = ["exp", "tanh", "sqrt", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "mish",
               "softplus", "hardswish", "elu", "leaky_relu", "erfinv", "add", "multiply",
               "divide", "maximum", "pow", "logaddexp", "glu", "reglu", "swiglu", "geglu",
               "prelu", "where", "clip", "lerp", "addcmul", "addcdiv", "fma"]
CASES = ([(op, dt) for op in BW_OPS for dt in ("f32", "f64")] +
         [(op, dt) for op in HALF_SUBSET for dt in ("bf16", "f16")])
ZERO_GRAD = frozenset(("ceil", "floor", "trunc", "round", "sign", "floor_divide"))

#: forward input shapes per case (None: a Python scalar operand)
SHAPES = {
    1: [[(37, 65)], [(5, 7, 9)]],
    2: [[(37, 65), (37, 65)], [(37, 65), (65,)], [(7, 1, 9), (7, 11, 9)], [(37, 1), (1, 65)],
        [None, (37, 65)], [(37, 65), None]],
    3: [[(37, 65)] * 3, [(37, 65), (65,), (37, 1)], [(7, 1, 9), (7, 11, 9), (9,)],
        [(37, 65), None, (37, 65)], [None, (37, 65), None]],
}
WHERE_SHAPES = [[(37, 65)] * 3, [(37, 1), (65,), (37, 65)], [(37, 65), (37, 65), None],
                [None, (37, 65), (37, 65)]]
#: backward-specific domains (away from singular derivatives)
BW_DOMAIN = {"sqrt": (0.05, 20.0)}
#: kinks of the derivative where the kernel's convention is not the reference's, so a random
#: input landing exactly on one (bf16 holds ±3 exactly: about one element in a thousand of
#: U(−8, 8)) is moved one ulp toward 0.  hardswish at ±3: the kernel (elementwise_bw.py) takes
#: the inner one-sided derivative x/3 + ½ on the closed [−3, 3] (−½ at −3, 3/2 at 3), torch the
#: outer one (0 at −3, 1 at 3); hardsigmoid at ±3: the kernel 0 (open interval, as
#: F.hardsigmoid), the clamp formula used as its reference here 1/6 (clamp's closed bounds).
BW_KINKS = {"hardswish": (-3.0, 3.0), "hardsigmoid": (-3.0, 3.0)}


def _torch():
    return pytest.importorskip("torch")


def _seed(*parts) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def _inputs(op, dt, shapes, rng):
    """Host inputs (rounded to dt) of the forward op for ``shapes`` (scalars as 0-d arrays)."""
    real = [s for s in shapes if s is not None]
    if real and all(s == real[0] for s in real):
        full = R.make_inputs(op, dt, real[0], rng)
        xs = [full[k] if s is not None else R.make_inputs(op, dt, (), rng)[k]
              for k, s in enumerate(shapes)]
    else:
        xs = [R.make_inputs(op, dt, () if s is None else s, rng)[k] for k, s in enumerate(shapes)]
    if op in ("floor_divide", "remainder") and shapes[0] is not None:
        # a = b·(k + f), f in [0.1, 0.9], so floor(a / b) is unambiguous (where a has the
        # broadcast shape; otherwise a / b is merely random)
        full = np.broadcast_shapes(tuple(shapes[0]), np.shape(xs[1]))
        if full == tuple(shapes[0]):
            q = rng.integers(-12, 13, full) + rng.uniform(0.1, 0.9, full)
            xs[0] = R.round_to(np.broadcast_to(xs[1], full) * q, dt)
    if op in BW_DOMAIN:
        lo, hi = BW_DOMAIN[op]
        xs = [R.round_to(np.clip(x, lo, hi), dt) for x in xs]
    for kink in BW_KINKS.get(op, ()):
        x = np.asarray(xs[0], np.float64)
        xs[0] = np.where(x == kink, R.nextafter(x, 0.0, dt), x)
    return xs


def _torch_forward(op, params):
    """The torch function equal to forward op ``op`` (float64 autograd reference)."""
    torch = _torch()
    F = torch.nn.functional
    p = params
    unary = {
        "abs": torch.abs, "negative": torch.neg, "square": torch.square, "sign": torch.sign,
        "reciprocal": torch.reciprocal, "relu": F.relu, "gelu": F.gelu,
        "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu, "mish": F.mish,
        "sigmoid": torch.sigmoid, "hardswish": F.hardswish,
        # not F.hardsigmoid: its backward multiplies by the float32 constant 1.0f / 6.0f even
        # in float64 (a reference off by 6e-9 relative)
        "hardsigmoid": lambda x: torch.clamp(x + 3.0, 0.0, 6.0) / 6.0,
        "selu": F.selu, "relu6": F.relu6, "erf": torch.erf, "erfc": torch.erfc,
        "erfinv": torch.erfinv, "lgamma": torch.lgamma, "digamma": torch.digamma,
        "softsign": F.softsign, "tanhshrink": F.tanhshrink,
        "softplus": lambda x: F.softplus(x, beta=p[0], threshold=p[1]),
        "hardtanh": lambda x: F.hardtanh(x, p[0], p[1]), "elu": lambda x: F.elu(x, p[0]),
        "leaky_relu": lambda x: F.leaky_relu(x, p[0]),
        "logit": lambda x: torch.logit(x, None if p[0] < 0 else p[0]),
        "hardshrink": lambda x: F.hardshrink(x, p[0]),
        "softshrink": lambda x: F.softshrink(x, p[0]),
        "threshold": lambda x: F.threshold(x, p[0], p[1]),
        "affine": lambda x: p[0] * x + p[1],
    }
    binary = {
        "add": torch.add, "subtract": torch.sub, "multiply": torch.mul, "divide": torch.div,
        "pow": torch.pow, "atan2": torch.atan2, "hypot": torch.hypot,
        "logaddexp": torch.logaddexp, "copysign": torch.copysign, "maximum": torch.maximum,
        "minimum": torch.minimum, "remainder": torch.remainder,
        "prelu": lambda x, w: torch.where(x > 0, x, w * x),
        "glu": lambda a, b: a * torch.sigmoid(b), "reglu": lambda a, b: F.relu(a) * b,
        "swiglu": lambda a, b: F.silu(a) * b, "geglu": lambda a, b: F.gelu(a) * b,
    }
    ternary = {
        # torch.clamp keeps x's shape: expand x to the broadcast first (clip broadcasts all)
        "clip": lambda x, lo, hi: torch.clamp(
            x.expand(torch.broadcast_shapes(x.shape, lo.shape, hi.shape)), lo, hi),
        "where": lambda c, a, b: torch.where(c, a, b),
        "lerp": torch.lerp,
        "addcmul": lambda x, a, b: torch.addcmul(x, a, b, value=p[0]),
        "addcdiv": lambda x, a, b: torch.addcdiv(x, a, b, value=p[0]),
        "fma": lambda a, b, c: a * b + c,
    }
    for table in (unary, binary, ternary):
        if op in table:
            return table[op]
    if op in ("ceil", "floor", "trunc", "round") or hasattr(torch, op):
        return getattr(torch, op)
    raise KeyError(op)


def _sum_to(a, shape):
    """``a`` summed over the dims where ``shape`` broadcasts (leading extra dims and 1s)."""
    shape = tuple(shape)
    lead = a.ndim - len(shape)
    a = a.sum(axis=tuple(range(lead))) if lead else a
    dims = tuple(i for i, n in enumerate(shape) if n == 1 and a.shape[i] != 1)
    return a.sum(axis=dims, keepdims=True) if dims else a


class Grad(NamedTuple):
    """The float64 gradient of one input, the magnitude the kernel's rounding errors are
    relative to (``scale``: Σ over the summed broadcast positions of |dy|·D, D the magnitude of
    the derivative's terms), the number of terms summed into each element (``terms``) and the
    magnitude the reference's own rounding errors are relative to (``ref_scale``: Σ |dy|·D_ref,
    D_ref the magnitude of the terms of the reference's formula)."""

    ref: np.ndarray
    scale: np.ndarray
    terms: int
    ref_scale: np.ndarray


def _terms_mag(fn, k, full_x, p, gf, dy, default):
    """max(|gf|, |dy|·fn(k, x, p)): the magnitude of the terms of a derivative formula at each
    output position (``default`` where there is no ``fn``: the formula does not cancel)."""
    if fn is None:
        return default
    with np.errstate(all="ignore"):
        d = np.nan_to_num(np.broadcast_to(fn(k, full_x, p), np.shape(gf)), nan=0.0)
    return np.maximum(np.abs(gf), np.abs(dy) * d)


def _reference_grads(op, dt, host, dy, params, shapes):
    """float64 gradients (a :class:`Grad` per input; None for scalars and where's condition):
    torch autograd, or dy·∂f/∂x from :data:`BW_EXACT`.  Each input is expanded to the output
    shape before autograd, so the per-element contributions dy·∂f/∂x are known before they are
    summed over the broadcast dims: their magnitudes are the error scale of the sum."""
    torch = _torch()
    out_shape = np.shape(dy)
    ts, want = [], []
    for k, (h, s) in enumerate(zip(host, shapes)):
        if op == "where" and k == 0:
            ts.append(torch.from_numpy(np.array(h, bool, order="C")))
            want.append(False)
            continue
        full = s is not None
        arr = np.broadcast_to(np.asarray(h, np.float64), out_shape) if full else h
        ts.append(torch.from_numpy(np.array(arr, np.float64, order="C")))
        want.append(full)
    if op == "floor_divide":  # not differentiable in torch; zero by definition here
        return [Grad(np.zeros(np.shape(h)), np.zeros(np.shape(h)), 1, np.zeros(np.shape(h)))
                if w else None for h, w in zip(host, want)]
    for t, w in zip(ts, want):
        if w:
            t.requires_grad_(True)
    inputs = [t for t, w in zip(ts, want) if w]
    y = _torch_forward(op, params)(*ts)
    g = torch.autograd.grad(y, inputs, torch.from_numpy(np.array(dy, np.float64, order="C")),
                            allow_unused=True)
    full_x = [np.broadcast_to(np.asarray(h, np.float64), out_shape) if not (
        op == "where" and k == 0) else None for k, h in enumerate(host)]
    p = R.to_dt_params(params, dt)
    it = iter(g)
    out = []
    for k, (h, w) in enumerate(zip(host, want)):
        if not w:
            out.append(None)
            continue
        gk = next(it)
        gf = np.zeros(out_shape) if gk is None else gk.detach().numpy()
        if op in BW_EXACT:
            with np.errstate(all="ignore"):
                gf = np.asarray(dy, np.float64) * np.broadcast_to(BW_EXACT[op](k, full_x, p),
                                                                  out_shape)
        mag = _terms_mag(DERIV_SCALE.get(op), k, full_x, p, gf, dy, np.abs(gf))
        ref_mag = _terms_mag(BW_REF_SCALE.get(op), k, full_x, p, gf, dy, mag)
        shape = np.shape(h)
        n = int(np.prod(out_shape, dtype=np.int64)) // max(int(np.prod(shape, dtype=np.int64)), 1)
        out.append(Grad(_sum_to(gf, shape), _sum_to(mag, shape), max(n, 1),
                        _sum_to(ref_mag, shape)))
    return out


def _bw_cond(fp, x2):
    """|f'|·(1 + x²/|1 − x²|): 1 − x·x (or x·x − 1) cancels near |x| = 1."""
    return np.abs(fp) * (1.0 + x2 / np.abs(1.0 - x2))


def _erfinv_d(y):
    """√π/2·e^(x²), x = erfinv y: x's relative error (erfinv's condition number) becomes
    2x²·that in e^(x²)."""
    sp = R._sps()
    x = sp.erfinv(y)
    fp = math.sqrt(math.pi) / 2 * np.exp(x * x)
    return fp * (1.0 + 2.0 * x * x * R._erfinv_scale(y, x) / np.maximum(np.abs(x), 1e-300))


def _gelu_d(x):
    """Φ(x) + x·φ(x) (cancels at the root −0.75; Φ from erfc(−x/√2), amplified as in the
    forward; e^(−x²/2)'s argument rounding ∝ x²)."""
    sp = R._sps()
    u = -x / math.sqrt(2.0)
    cdf = 0.5 * sp.erfc(u)
    cond = 2.0 * np.abs(u) * np.exp(-u * u) / (math.sqrt(math.pi) * sp.erfc(u))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return cdf * (1.0 + cond) + np.abs(x) * pdf * (1.0 + x * x)


def _gelu_tanh_d(x):
    v = 2.0 * math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)
    s = R.sigmoid(v)
    dz = math.sqrt(2.0 / math.pi) * (1.0 + 3 * 0.044715 * x * x)
    return (s + 2.0 * np.abs(x) * s * dz) * (1.0 + 2.0 * np.abs(v))


def _silu_d(x):
    """σ(x)(1 + x(1 − σ(x))): cancels at the root −1.28; 1 − σ's absolute error times x."""
    return R.sigmoid(x) * (1.0 + 2.0 * np.abs(x))


def _mish_d(x):
    return np.abs(np.tanh(R.softplus(x))) + 2.0 * np.abs(x) * R.sigmoid(x)


#: D(k, inputs broadcast to the output shape, params): the magnitude of the terms of ∂f/∂x_k
#: as the backward kernel evaluates it, where that is not |∂f/∂x_k| itself (cancellation, an
#: amplified argument rounding); the others use |∂f/∂x_k|
DERIV_SCALE = {
    "tanh": lambda k, x, p: np.ones_like(x[0]),                 # 1 − tanh²
    "sigmoid": lambda k, x, p: R.sigmoid(x[0]),                 # σ(1 − σ)
    "gelu": lambda k, x, p: _gelu_d(x[0]),
    "gelu_tanh": lambda k, x, p: _gelu_tanh_d(x[0]),
    "silu": lambda k, x, p: _silu_d(x[0]),
    "mish": lambda k, x, p: _mish_d(x[0]),
    "lgamma": lambda k, x, p: R._digamma_scale(x[0], R._sps().psi(x[0])),
    "digamma": lambda k, x, p: R._trigamma_scale(x[0], R._sps().polygamma(1, x[0])),
    "erfinv": lambda k, x, p: _erfinv_d(x[0]),
    # 2/√π·e^(−x·x): the rounding of x·x is an error of x²·eps relative in the exponential
    "erf": lambda k, x, p: 2.0 / math.sqrt(math.pi) * np.exp(-x[0] ** 2) * (1.0 + x[0] ** 2),
    "erfc": lambda k, x, p: 2.0 / math.sqrt(math.pi) * np.exp(-x[0] ** 2) * (1.0 + x[0] ** 2),
    "asin": lambda k, x, p: _bw_cond(1.0 / np.sqrt(1.0 - x[0] ** 2), x[0] ** 2),
    "acos": lambda k, x, p: _bw_cond(1.0 / np.sqrt(1.0 - x[0] ** 2), x[0] ** 2),
    "atanh": lambda k, x, p: _bw_cond(1.0 / (1.0 - x[0] ** 2), x[0] ** 2),
    "acosh": lambda k, x, p: _bw_cond(1.0 / np.sqrt(x[0] ** 2 - 1.0), x[0] ** 2),
    # b·a^(b−1) (b − 1 rounded: a relative error |b·log a|·eps), a^b·log a
    "pow": lambda k, x, p: (np.abs(x[1] * x[0] ** (x[1] - 1.0)) if k == 0 else
                            np.abs(x[0] ** x[1] * np.log(x[0]))) * (
                                1.0 + np.abs(x[1] * np.log(x[0]))),
    # σ(±(a − b)): a − b's rounding, relative to |a − b|
    "logaddexp": lambda k, x, p: R.sigmoid((x[0] - x[1]) * (1 if k == 0 else -1)) * (
        1.0 + np.abs(x[0] - x[1])),
    "glu": lambda k, x, p: (R.sigmoid(x[1]) if k == 0 else np.abs(x[0]) * R.sigmoid(x[1])),
    "swiglu": lambda k, x, p: (np.abs(x[1]) * _silu_d(x[0]) if k == 0 else
                               np.abs(R.silu(x[0]))),
    "geglu": lambda k, x, p: (np.abs(x[1]) * _gelu_d(x[0]) if k == 0 else
                              R._gelu_scale(x[0])),
    # x/3 + ½ on [−3, 3]: x/3's rounding is relative to |x|/3, and the sum cancels at x = −1.5
    "hardswish": lambda k, x, p: np.where(np.abs(x[0]) <= 3.0, np.abs(x[0]) / 3.0 + 0.5, 0.0),
}
#: rounded steps / library ulps of each backward formula, the final · dy included (every op not
#: listed: 5); e.g. tan: 1 + tan·tan with tan's 4 ulps twice; mish: tanh(softplus) squared
BW_TERMS = {"tan": 10, "tanh": 6, "sigmoid": 7, "tanhshrink": 6, "hypot": 6, "logaddexp": 6,
            "erf": 6, "erfc": 8, "glu": 7, "gelu": 8, "gelu_tanh": 8, "silu": 8, "swiglu": 9,
            "geglu": 9, "erfinv": 8, "pow": 8, "mish": 12, "lgamma": 10, "digamma": 10}


# ---------------------------------------------------------------- the float64 reference's error
def _gelu_ref_d(x):
    """torch's float64 gelu backward 0.5·(1 + erf(x/√2)) + x·φ(x): 1 + erf cancels for x ≪ 0
    (an absolute error ∝ 1, where the derivative is ≈ −|x|φ(x)); e^(−x²/2)'s argument is
    rounded (a relative error ∝ x² in φ)."""
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return 1.0 + np.abs(x) * pdf * (1.0 + x * x)


def _gelu_tanh_ref_d(x):
    """torch's float64 tanh-gelu backward 0.5·(1 + tanh u) + 0.5·x·(1 − tanh²u)·u',
    u = √(2/π)(x + 0.044715x³): 1 + tanh u cancels for x ≪ 0 (absolute error ∝ 1) and so does
    1 − tanh²u (∝ 1 + tanh²u ≤ 2, times 0.5|x|·u'); u's rounding (relative) reaches 1 − tanh²u
    amplified by 2|u|."""
    u = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)
    t = np.tanh(u)
    du = math.sqrt(2.0 / math.pi) * (1.0 + 3 * 0.044715 * x * x)
    return 1.0 + np.abs(x) * du * (1.0 + np.abs(u) * (1.0 - t * t))


#: D_ref(k, inputs broadcast to the output shape, params): the magnitude of the terms of the
#: REFERENCE's derivative formula where it differs from the kernel's (torch's float64 autograd
#: formulas, torch/csrc/autograd/FunctionsManual.cpp / derivatives.yaml and ATen's activation
#: backward kernels); every other op: D (torch evaluates the same formula as the kernel)
BW_REF_SCALE = {
    # grad·(y + 1), y = expm1(x): y + 1 cancels where y ≈ −1 (an absolute error ∝ 1 + |y|)
    "expm1": lambda k, x, p: 1.0 + np.abs(np.expm1(x[0])),
    "gelu": lambda k, x, p: _gelu_ref_d(x[0]),
    "gelu_tanh": lambda k, x, p: _gelu_tanh_ref_d(x[0]),
    # F.gelu(a)·b: da = dy·b·gelu'(a) (torch's gelu backward), db = dy·0.5a(1 + erf(a/√2)),
    # torch's gelu forward, whose 1 + erf cancels for a ≪ 0
    "geglu": lambda k, x, p: (np.abs(x[1]) * _gelu_ref_d(x[0]) if k == 0 else
                              0.5 * np.abs(x[0]) * (1.0 + np.abs(R._erf(x[0] / math.sqrt(2.0))))),
    # F.tanhshrink = x − tanh x: autograd adds dy·1 and −dy·(1 − tanh²x) (1 − tanh²x: terms 1
    # and tanh²x), which cancel to dy·tanh²x for small x
    "tanhshrink": lambda k, x, p: np.full(np.shape(x[0]), 2.0),
    # F.softsign = x / (1 + |x|): autograd adds dy/(1 + |x|) and −dy·|x|/(1 + |x|)², which
    # cancel to dy/(1 + |x|)² for large |x|
    "softsign": lambda k, x, p: (1.0 / (1.0 + np.abs(x[0]))
                                 + np.abs(x[0]) / (1.0 + np.abs(x[0])) ** 2),
}
#: the references computed here instead of by torch: torch's float64 trigamma (ATen Math.h
#: calc_trigamma, the derivative of digamma) shifts x only to x + 6 and stops its asymptotic
#: series at the x⁻⁷ term, a truncation error 1/(30(x + 6)⁹) — up to 1.6e-9 on this domain,
#: 10⁶ eps — so the reference is dy·ψ'(x) from scipy (polygamma(1, ·), the forward tests'
#: trigamma reference)
BW_EXACT = {"digamma": lambda k, x, p: R._sps().polygamma(1, x[0])}
#: rounded steps / library ulps of the reference's derivative formula (eps(float64)), the · dy
#: included (every op not listed: BW_TERMS', the same formula); e.g. expm1: expm1 (2 ulp), + 1,
#: · dy; gelu: erf, exp (2 each) and seven products / sums; lgamma: torch's digamma (the forward
#: REF_TERMS of psi) · dy; digamma: scipy's polygamma(1) (REF_TERMS["trigamma"]) · dy
BW_REF_TERMS = {"expm1": 4, "gelu": 11, "gelu_tanh": 14, "geglu": 12, "tanhshrink": 6,
                "softsign": 7, "lgamma": 1 + R.REF_TERMS["digamma"],
                "digamma": 1 + R.REF_TERMS["trigamma"]}


def _bound(op, dt, grad):
    """Per-element bound of one gradient: its final rounding into dt, the derivative formula's
    BW_TERMS steps relative to |dy|·D, and — for a gradient summed over broadcast dims — the
    full-shape gradient's rounding into dt (the plan stores it in the value dtype before
    ReduceToPlan sums it in f32 / f64) plus the sum's ``terms`` roundings, relative to the
    sum of the magnitudes (Σ|dy·D|); plus the float64 reference's own error: its formula's
    BW_REF_TERMS roundings relative to Σ|dy·D_ref| and, summed over broadcast dims, the float64
    sum's ``terms`` roundings (eps(float64) each)."""
    ct = R.compute_dt(dt)
    summed = grad.terms if grad.terms > 1 else 0
    terms = BW_TERMS.get(op, 5) + summed
    if grad.terms > 1:
        terms += 0.5 * eps(R.TORCH_NAME[dt]) / eps(R.TORCH_NAME[ct])
    ref_terms = BW_REF_TERMS.get(op, BW_TERMS.get(op, 5)) + summed
    return R.make_bound(dt, ct, terms, grad.ref, grad.scale, ref_terms, grad.ref_scale)


def _run_bw(op, dt, shapes, host, dy_view, params, want=None):
    """Run the backward plan; returns host gradients (None where none was requested)."""
    torch = _torch()
    from baracuda_dsl.ops.elementwise.families import (ElementwiseBackwardArgs,
                                                       ElementwiseBackwardDescriptor,
                                                       ElementwiseBackwardPlan)

    in_dts = OPS[op].in_dtypes(dt)
    dev = []
    for h, s, d in zip(host, shapes, in_dts):
        dev.append(R.python_scalar(h, d) if s is None else R.to_device(h, d))
    grads = []
    for k, s in enumerate(shapes):
        no_grad = s is None or (op == "where" and k == 0) or (want is not None and not want[k])
        grads.append(None if no_grad else torch.full(tuple(s), float("nan"),
                                                     dtype=R.torch_dtype(dt), device="cuda"))
    plan = ElementwiseBackwardPlan.select(ElementwiseBackwardDescriptor(op, tuple(shapes), dt,
                                                                        tuple(params)))
    plan.run(ElementwiseBackwardArgs(dy_view, dev, grads))
    torch.cuda.synchronize()
    return [None if g is None else R.to_host(g, dt) for g in grads]


def _compare(op, dt, got, ref, what):
    for k, (g, r) in enumerate(zip(got, ref)):
        if g is None:
            continue
        assert r is not None, f"{what}: gradient {k} returned for an input without one"
        assert g.shape == r.ref.shape, f"{what}: grad {k} shape {g.shape} != {r.ref.shape}"
        assert not np.isnan(g).any(), f"{what}: grad {k} has NaN (unwritten or wrong)"
        if op in ZERO_GRAD:
            assert not np.any(g), f"{what}: grad {k} must be zero"
            continue
        b = _bound(op, dt, r)
        assert_close(g, r.ref, b.rtol, b.atol, scale=b.scale, what=f"{what}: grad {k}")


@pytest.mark.parametrize("op,dt", CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_backward_vs_torch_autograd(op, dt):
    _torch()
    nin = OPS[op].nin
    rng = np.random.default_rng(_seed("bw", op, dt))
    cases = WHERE_SHAPES if op == "where" else SHAPES[nin]
    for params in R.params_for(op):
        for i, shapes in enumerate(cases):
            host = _inputs(op, dt, shapes, rng)
            out_shape = np.broadcast_shapes(*(np.shape(h) for h in host))
            dy = R.round_to(rng.standard_normal(out_shape), dt)
            layout = "dense" if i == 0 or len(out_shape) < 2 else ("T" if i % 2 else "step2")
            dy_view, _keep = R.device_view(dy, dt, layout)
            ref = _reference_grads(op, dt, host, dy, params, shapes)
            got = _run_bw(op, dt, shapes, host, dy_view, params)
            _compare(op, dt, got, ref, f"{op}[{dt}] shapes={shapes} dy={layout} p={params}")


@pytest.mark.parametrize("op", ["multiply", "divide", "pow", "lerp", "clip", "where", "glu"])
def test_backward_some_gradients_not_requested(op):
    """Passing None for a gradient computes the others unchanged."""
    _torch()
    dt = "f32"
    nin = OPS[op].nin
    rng = np.random.default_rng(_seed("partial", op))
    shapes = [(33, 40)] * nin
    host = _inputs(op, dt, shapes, rng)
    dy = R.round_to(rng.standard_normal((33, 40)), dt)
    ref = _reference_grads(op, dt, host, dy, (), shapes)
    first = 1 if op == "where" else 0
    for skip in range(first, nin):
        want = [k != skip for k in range(nin)]
        got = _run_bw(op, dt, shapes, host, R.to_device(dy, dt), (), want)
        assert got[skip] is None
        _compare(op, dt, got, ref, f"{op} without grad {skip}")


@pytest.mark.parametrize("dt", ["f32", "bf16"])
def test_backward_empty_broadcast_gives_zero_gradients(dt):
    torch = _torch()
    from baracuda_dsl.ops.elementwise.families import (ElementwiseBackwardArgs,
                                                       ElementwiseBackwardDescriptor,
                                                       ElementwiseBackwardPlan)

    a = torch.empty((0, 65), dtype=R.torch_dtype(dt), device="cuda")
    b = R.to_device(np.ones(65), dt)
    dy = torch.empty((0, 65), dtype=R.torch_dtype(dt), device="cuda")
    ga = torch.empty((0, 65), dtype=R.torch_dtype(dt), device="cuda")
    gb = torch.full((65,), float("nan"), dtype=R.torch_dtype(dt), device="cuda")
    plan = ElementwiseBackwardPlan.select(ElementwiseBackwardDescriptor(
        "multiply", ((0, 65), (65,)), dt))
    plan.run(ElementwiseBackwardArgs(dy, [a, b], [ga, gb]))
    torch.cuda.synchronize()
    assert not np.any(R.to_host(gb, dt)), "gradient of a broadcast over an empty dim must be 0"


def test_backward_family_plans_route_their_ops():
    """The family backward plans accept their ops and run like the generic plan."""
    torch = _torch()
    from baracuda_dsl.errors import UnsupportedError
    from baracuda_dsl.ops.elementwise import families as fam

    rng = np.random.default_rng(3)
    for cls, op, params in [(fam.UnaryBackwardPlan, "gelu", ()),
                            (fam.UnaryParamBackwardPlan, "softplus", (2.0, 1.5)),
                            (fam.BinaryBackwardPlan, "atan2", ()),
                            (fam.TernaryBackwardPlan, "lerp", ()),
                            (fam.WhereBackwardPlan, "where", ()),
                            (fam.GatedActivationBackwardPlan, "swiglu", ()),
                            (fam.PReluBackwardPlan, "prelu", ()),
                            (fam.AffineBackwardPlan, "affine", (1.5, -0.25))]:
        nin = OPS[op].nin
        shapes = [(16, 24)] * nin
        host = _inputs(op, "f32", shapes, rng)
        dy = R.round_to(rng.standard_normal((16, 24)), "f32")
        ref = _reference_grads(op, "f32", host, dy, params, shapes)
        in_dts = OPS[op].in_dtypes("f32")
        dev = [R.to_device(h, d) for h, d in zip(host, in_dts)]
        grads = [None if (op == "where" and k == 0) else torch.full(
            (16, 24), float("nan"), device="cuda") for k in range(nin)]
        plan = cls.select(fam.ElementwiseBackwardDescriptor(op, tuple(shapes), "f32", params))
        plan.run(fam.ElementwiseBackwardArgs(R.to_device(dy, "f32"), dev, grads))
        torch.cuda.synchronize()
        _compare(op, "f32", [None if g is None else R.to_host(g, "f32") for g in grads], ref,
                 f"{cls.__name__}({op})")
        other = "exp" if cls is fam.BinaryBackwardPlan else "add"
        with pytest.raises(UnsupportedError):
            cls.select(fam.ElementwiseBackwardDescriptor(other, ((4,),) * OPS[other].nin,
                                                         "f32"))
