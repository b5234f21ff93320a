"""The op table of the elementwise template: one formula per op, traced into the kernel.

Each formula is a plain Python function ``f(cx, *values) -> tuple of outputs`` evaluated at trace
time (no dynamic Python control flow: data-dependent choices use :func:`sel`).  Values are

* floats: a ``Float32`` (f16/bf16/fp8/f32 storage) or ``Float64`` scalar,
* complex: a ``(re, im)`` tuple of those,
* integers: the storage integer type itself (arithmetic wraps as in C / numpy),
* bool: a ``Boolean``.

``cx`` (:class:`Ctx`) carries the kind and compute type of the op's value dtype and its float
parameters ``p0..p2`` already converted to the compute type.  Special values follow the array API
standard's tables where it gives them (NaN propagation in maximum/minimum, signed zeros in sign,
round half to even, floor semantics of floor_divide / remainder, ...).
"""

from __future__ import annotations

import math

import cutlass
from cutlass import Boolean, Float64

from ....blocks.scalar_math import (M, and_, cabs, cacos, cacosh, casin, casinh, catan, catanh,
                                    ccos, ccosh, cdiv, cexp, cexpm1, clamp, clog, clog1p, cmul,
                                    cpow, cscale, csign, csin, csinh, csqrt, ctan, ctanh, digamma,
                                    erfinv, fdivmod, fsign, gelu, gelu_tanh, hypot, idivmod, ipow,
                                    isfinite, isign, isinf, isnan, lgamma, logaddexp, maximum,
                                    minimum, nextafter, not_, or_, relu, sel, sigmoid, silu,
                                    softplus, trigamma)

class Ctx:
    """Trace-time facts of one SKU: ``kind`` ('b' 'i' 'u' 'f' 'c') and ``ct`` (compute type:
    the integer type, Float32 / Float64, or the component type of complex), ``bits`` of integer
    types, the op's parameters ``p`` (compute-typed) and the output kinds / types for casts."""

    def __init__(self, kind, ct, bits, p, out_kind=None, out_ct=None, st=None, out_st=None):
        self.kind, self.ct, self.bits, self.p = kind, ct, bits, p
        self.out_kind, self.out_ct = out_kind, out_ct
        self.st, self.out_st = st, out_st  # storage types of the value / output dtypes

    def c(self, v):
        """A constant in the compute type."""
        return self.ct(v)



# --------------------------------------------------------------------------- forward table
def _unary_float(fn):
    return lambda cx, x: (fn(x),)


def _f(name):
    return lambda cx, x: (getattr(M, name)(x),)


def _abs(cx, x):
    if cx.kind == "c":
        return (cabs(x),)
    if cx.kind == "f":
        return (M.absf(x),)
    if cx.kind == "u":
        return (x,)
    return (sel(x < cx.ct(0), cx.ct(0) - x, x),)


def _negative(cx, x):
    if cx.kind == "c":
        return ((-x[0], -x[1]),)
    if cx.kind == "f":
        return (-x,)
    return (cx.ct(0) - x,)


def _square(cx, x):
    return (cmul(x, x),) if cx.kind == "c" else (x * x,)


def _sign(cx, x):
    if cx.kind == "c":
        return (csign(x),)
    if cx.kind == "f":
        return (fsign(x),)
    return (isign(cx, x),)


def _reciprocal(cx, x):
    if cx.kind == "c":
        return (cdiv((cx.c(1.0), cx.c(0.0)), x),)
    return (cx.c(1.0) / x,)


def _cplx_or_real(real_fn, cplx_fn):
    return lambda cx, x: (cplx_fn(x),) if cx.kind == "c" else (real_fn(x),)


def _classify(test, every: bool):
    """A classification op (isnan, isinf: ``every`` False; isfinite: True): ``test`` on floats;
    on complex ``test`` of both parts, combined with and_ (``every``) or or_; integers and bool
    are finite, never NaN or infinite (the constant ``every``)."""
    def f(cx, x):
        if cx.kind == "c":
            return ((and_ if every else or_)(test(x[0]), test(x[1])),)
        if cx.kind == "f":
            return (test(x),)
        return (Boolean(every),)
    return f


def _bitwise_invert(cx, x):
    if cx.kind == "b":
        return (not_(x),)
    return (x ^ cx.ct(-1 if cx.kind == "i" else (1 << cx.bits) - 1),)


def _add(cx, a, b):
    if cx.kind == "c":
        return ((a[0] + b[0], a[1] + b[1]),)
    return (a + b,)


def _sub(cx, a, b):
    if cx.kind == "c":
        return ((a[0] - b[0], a[1] - b[1]),)
    return (a - b,)


def _mul(cx, a, b):
    if cx.kind == "c":
        return (cmul(a, b),)
    return (a * b,)


def _div(cx, a, b):
    if cx.kind == "c":
        return (cdiv(a, b),)
    return (a / b,)


def _pow(cx, a, b):
    if cx.kind == "c":
        return (cpow(a, b),)
    if cx.kind == "f":
        return (M.pow(a, b),)
    return (ipow(cx, a, b),)


def _floor_divide(cx, a, b):
    if cx.kind == "f":
        return (fdivmod(a, b)[0],)
    return (idivmod(cx, a, b)[0],)


def _remainder(cx, a, b):
    if cx.kind == "f":
        return (fdivmod(a, b)[1],)
    return (idivmod(cx, a, b)[1],)


def _maximum(cx, a, b):
    return (maximum(a, b) if cx.kind == "f" else sel(a > b, a, b),)


def _minimum(cx, a, b):
    return (minimum(a, b) if cx.kind == "f" else sel(a < b, a, b),)


def _bitwise(opname):
    def f(cx, a, b):
        if cx.kind == "b":
            if opname == "and":
                return (and_(a, b),)
            if opname == "or":
                return (or_(a, b),)
            return (a != b,)
        if opname == "and":
            return (a & b,)
        if opname == "or":
            return (a | b,)
        return (a ^ b,)
    return f


def _shift(left: bool):
    def f(cx, a, b):
        t = cx.ct
        big = b >= t(cx.bits)
        if cx.kind == "i":
            big = or_(big, b < t(0))
        sb = sel(big, t(0), b)
        if left:
            return (sel(big, t(0), a << sb),)
        r = a >> sb
        if cx.kind == "i":
            return (sel(big, sel(a < t(0), t(-1), t(0)), r),)
        return (sel(big, t(0), r),)
    return f


def _eq(cx, a, b):
    if cx.kind == "c":
        return (and_(a[0] == b[0], a[1] == b[1]),)
    return (a == b,)


def _ne(cx, a, b):
    if cx.kind == "c":
        return (or_(a[0] != b[0], a[1] != b[1]),)
    return (a != b,)


def _clip(cx, x, lo, hi):
    if cx.kind == "f":
        return (clamp(x, lo, hi),)
    m = sel(x > lo, x, lo)
    return (sel(m < hi, m, hi),)


def _where(cx, c, a, b):
    return (sel(c, a, b),)


def _copy(cx, x):
    return (x,)


def _lerp(cx, a, b, w):
    one = cx.c(1.0)
    d = b - a
    return (sel(w < cx.c(0.5), a + w * d, b - d * (one - w)),)  # torch.lerp's two forms


def _logit(cx, x):
    eps = cx.p[0]
    xc = sel(eps >= cx.c(0.0), clamp(x, eps, cx.c(1.0) - eps), x)
    return (M.log(xc / (cx.c(1.0) - xc)),)


SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946

FORWARD = {
    "abs": _abs, "negative": _negative, "square": _square, "sign": _sign,
    "reciprocal": _reciprocal,
    "exp": _cplx_or_real(M.exp, cexp), "log": _cplx_or_real(M.log, clog),
    "sqrt": _cplx_or_real(M.sqrt, csqrt),
    "conj": lambda cx, x: ((x[0], -x[1]),),
    "real": lambda cx, x: (x[0],), "imag": lambda cx, x: (x[1],),
    "isnan": _classify(isnan, False), "isinf": _classify(isinf, False),
    "isfinite": _classify(isfinite, True),
    "signbit": lambda cx, x: (M.copysign(cx.c(1.0), x) < cx.c(0.0),),
    "round": _f("roundeven"),
    "bitwise_invert": _bitwise_invert, "logical_not": lambda cx, x: (not_(x),),
    "copy": _copy,
    "add": _add, "subtract": _sub, "multiply": _mul, "divide": _div, "pow": _pow,
    "atan2": lambda cx, a, b: (M.atan2(a, b),),
    "hypot": lambda cx, a, b: (hypot(a, b),),
    "logaddexp": lambda cx, a, b: (logaddexp(a, b),),
    "copysign": lambda cx, a, b: (M.copysign(a, b),),
    "nextafter": lambda cx, a, b: (nextafter(a, b, cx.st),),
    "maximum": _maximum, "minimum": _minimum,
    "floor_divide": _floor_divide, "remainder": _remainder,
    "bitwise_and": _bitwise("and"), "bitwise_or": _bitwise("or"),
    "bitwise_xor": _bitwise("xor"),
    "bitwise_left_shift": _shift(True), "bitwise_right_shift": _shift(False),
    "equal": _eq, "not_equal": _ne,
    "greater": lambda cx, a, b: (a > b,), "greater_equal": lambda cx, a, b: (a >= b,),
    "less": lambda cx, a, b: (a < b,), "less_equal": lambda cx, a, b: (a <= b,),
    "logical_and": lambda cx, a, b: (and_(a, b),), "logical_or": lambda cx, a, b: (or_(a, b),),
    "logical_xor": lambda cx, a, b: (a != b,),
    "clip": _clip, "where": _where,
    # ML extensions (floating only)
    "relu": _unary_float(relu), "gelu": _unary_float(gelu), "gelu_tanh": _unary_float(gelu_tanh),
    "silu": _unary_float(silu), "sigmoid": _unary_float(sigmoid),
    "mish": lambda cx, x: (x * M.tanh(softplus(x, cx.c(1.0), cx.c(20.0))),),
    "softplus": lambda cx, x: (softplus(x, cx.p[0], cx.p[1]),),
    "hardswish": lambda cx, x: (x * clamp(x + cx.c(3.0), cx.c(0.0), cx.c(6.0)) / cx.c(6.0),),
    "hardsigmoid": lambda cx, x: (clamp(x + cx.c(3.0), cx.c(0.0), cx.c(6.0)) / cx.c(6.0),),
    "hardtanh": lambda cx, x: (clamp(x, cx.p[0], cx.p[1]),),
    "relu6": lambda cx, x: (clamp(x, cx.c(0.0), cx.c(6.0)),),
    "elu": lambda cx, x: (sel(x > cx.c(0.0), x, cx.p[0] * M.expm1(x)),),
    "selu": lambda cx, x: (cx.c(SELU_SCALE) * sel(x > cx.c(0.0), x,
                                                 cx.c(SELU_ALPHA) * M.expm1(x)),),
    "leaky_relu": lambda cx, x: (sel(x > cx.c(0.0), x, cx.p[0] * x),),
    "logit": _logit,
    "erf": _f("erf"), "erfc": _f("erfc"), "erfinv": _unary_float(erfinv),
    "lgamma": _unary_float(lgamma), "digamma": _unary_float(digamma),
    "trigamma": _unary_float(trigamma),
    "softsign": lambda cx, x: (x / (cx.c(1.0) + M.absf(x)),),
    "tanhshrink": lambda cx, x: (x - M.tanh(x),),
    "hardshrink": lambda cx, x: (sel(M.absf(x) > cx.p[0], x, cx.c(0.0)),),
    "softshrink": lambda cx, x: (sel(x > cx.p[0], x - cx.p[0],
                                     sel(x < -cx.p[0], x + cx.p[0], cx.c(0.0))),),
    "threshold": lambda cx, x: (sel(x > cx.p[0], x, cx.p[1]),),
    "prelu": lambda cx, x, w: (sel(x > cx.c(0.0), x, w * x),),
    "glu": lambda cx, a, b: (a * sigmoid(b),),
    "reglu": lambda cx, a, b: (relu(a) * b,),
    "swiglu": lambda cx, a, b: (silu(a) * b,),
    "geglu": lambda cx, a, b: (gelu(a) * b,),
    "lerp": _lerp,
    "addcmul": lambda cx, x, a, b: (x + cx.p[0] * a * b,),
    "addcdiv": lambda cx, x, a, b: (x + cx.p[0] * a / b,),
    "fma": lambda cx, a, b, c: (M.fma(a, b, c),),
    "affine": lambda cx, x: (cx.p[0] * x + cx.p[1],),
}
for _n in ("acos acosh asin asinh atan atanh cos cosh expm1 log1p log2 log10 sin sinh tan tanh "
           "ceil floor").split():
    FORWARD[_n] = _f(_n)
_COMPLEX_FORMS = {"acos": cacos, "acosh": cacosh, "asin": casin, "asinh": casinh, "atan": catan,
                  "atanh": catanh, "cos": ccos, "cosh": ccosh, "sin": csin, "sinh": csinh,
                  "tan": ctan, "tanh": ctanh, "expm1": cexpm1, "log1p": clog1p,
                  "log2": lambda z: cscale(clog(z), type(z[0])(1.0 / math.log(2.0))),
                  "log10": lambda z: cscale(clog(z), type(z[0])(1.0 / math.log(10.0)))}
for _n, _cf in _COMPLEX_FORMS.items():
    FORWARD[_n] = _cplx_or_real(getattr(M, _n), _cf)


def trunc(x):
    """Round toward zero: copysign(floor(|x|), x) (keeps −0, ±inf and NaN)."""
    return M.copysign(M.floor(M.absf(x)), x)


FORWARD["trunc"] = _unary_float(trunc)


_SIGNED = {8: cutlass.Int8, 16: cutlass.Int16, 32: cutlass.Int32, 64: cutlass.Int64}


def cast(cx, x):
    """Convert a value of kind ``cx.kind`` to kind ``cx.out_kind`` / type ``cx.out_ct``
    (complex → real takes the real part; → bool is ``!= 0``; bool → number is 0 / 1)."""
    src, dst, ot = cx.kind, cx.out_kind, cx.out_ct
    if src == "c":
        if dst == "c":
            return ((ot(x[0]), ot(x[1])),)
        if dst == "b":
            return (or_(x[0] != cx.c(0.0), x[1] != cx.c(0.0)),)
        x = x[0]
        src = "f"
    if dst == "b":
        if src == "b":
            return (x,)
        return (x != cx.ct(0),)
    if src == "b":
        v = sel(x, ot(1), ot(0))
        return ((v, ot(0.0)),) if dst == "c" else (v,)
    if src == "i" and dst == "u" and ot.width > cx.bits:
        # sign-extend to the wider width first (numpy / C: int8 −1 → uint16 65535)
        x = _SIGNED[ot.width](x)
    if dst == "f" and cx.out_st is not None and cx.out_st.width < 32 and (
            cx.ct is Float64 or (src in "iu" and cx.bits > 16)):
        # one rounding into a narrow float: f64 (and wide integers, exactly via f64) convert
        # straight to the storage type instead of through f32
        return (Float64(x) + Float64(0.0) if src in "iu" else x,)
    v = ot(x)
    if src in "iu" and dst in "fc":
        # a real f32/f64 value before the store's narrowing (fp8 stores of a converted integer
        # were otherwise lowered as one invalid int → fp8 sitofp)
        v = v + ot(0.0)
    return ((v, ot(0.0)),) if dst == "c" else (v,)


FORWARD["cast"] = cast
