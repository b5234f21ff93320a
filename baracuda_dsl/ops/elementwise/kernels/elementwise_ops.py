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
import cutlass.cute as cute
from cutlass import Boolean, Float64

M = cute.math
INF = float("inf")
NAN = float("nan")


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


def sel(cond, a, b):
    """Elementwise ``a if cond else b`` of two values of the same DSL type (or complex pairs)."""
    if isinstance(a, tuple):
        return (sel(cond, a[0], b[0]), sel(cond, a[1], b[1]))
    t = type(a)
    return t(cutlass.select_(cond, a, t(b)))


def isnan(x):
    return x != x


def isinf(x):
    return M.absf(x) == type(x)(INF)


def isfinite(x):
    return M.absf(x) < type(x)(INF)


def nan_of(x):
    return type(x)(NAN)


def and_(a, b):
    """Boolean ``a and b`` of two DSL booleans (no Python short-circuit)."""
    return Boolean(cutlass.select_(a, b, Boolean(False)))


def or_(a, b):
    """Boolean ``a or b`` of two DSL booleans."""
    return Boolean(cutlass.select_(a, Boolean(True), b))


def not_(a):
    """Boolean ``not a`` of a DSL boolean."""
    return Boolean(cutlass.select_(a, Boolean(False), Boolean(True)))


# --------------------------------------------------------------------------- real helpers
def sigmoid(x):
    one = type(x)(1.0)
    return one / (one + M.exp(-x))


def relu(x):
    return sel(x < type(x)(0.0), type(x)(0.0), x)  # NaN stays NaN


def gelu(x, half: bool = False):
    """x·Φ(x) with Φ(x) = erfc(−x/√2)/2 (no cancellation for negative x).  For half-precision
    storage (``half``) the cheaper 1 + erf(x/√2) form is used: its absolute error (~1e-7) is far
    below a half ulp of the result, and the op stays memory-bound."""
    t = type(x)
    if half:
        return t(0.5) * x * (t(1.0) + M.erf(x * t(1.0 / math.sqrt(2.0))))
    return t(0.5) * x * M.erfc(x * t(-1.0 / math.sqrt(2.0)))


def gelu_tanh_z(x):
    t = type(x)
    return t(math.sqrt(2.0 / math.pi)) * (x + t(0.044715) * x * x * x)


def gelu_tanh(x):
    """x·(1 + tanh z)/2 = x·σ(2z), z = √(2/π)(x + 0.044715x³) (σ form: no cancellation)."""
    return x * sigmoid(type(x)(2.0) * gelu_tanh_z(x))


def softplus(x, beta, threshold):
    bx = x * beta
    return sel(bx > threshold, x, M.log1p(M.exp(bx)) / beta)


def silu(x):
    return x * sigmoid(x)


def maximum(a, b):
    r = sel(a > b, a, b)
    return sel(isnan(a), a, sel(isnan(b), b, r))


def minimum(a, b):
    r = sel(a < b, a, b)
    return sel(isnan(a), a, sel(isnan(b), b, r))


def clamp(x, lo, hi):
    """min(max(x, lo), hi) with NaN propagation."""
    return minimum(maximum(x, lo), hi)


def hypot(a, b):
    t = type(a)
    x, y = M.absf(a), M.absf(b)
    hi = sel(x > y, x, y)
    lo = sel(x > y, y, x)
    r = lo / sel(hi == t(0.0), t(1.0), hi)
    h = hi * M.sqrt(t(1.0) + r * r)
    h = sel(hi == t(0.0), t(0.0), h)
    h = sel(or_(isnan(a), isnan(b)), nan_of(a), h)
    return sel(or_(isinf(a), isinf(b)), t(INF), h)


def fdivmod(a, b):
    """numpy-compatible float (floor_divide, remainder)."""
    t = type(a)
    mod = M.rem(a, b)  # C fmod
    div = (a - mod) / b
    fix = and_(mod != t(0.0), (b < t(0.0)) != (mod < t(0.0)))
    mod = sel(fix, mod + b, mod)
    div = sel(fix, div - t(1.0), div)
    fl = M.floor(div)
    fl = sel(div - fl > t(0.5), fl + t(1.0), fl)
    fl = sel(div == t(0.0), M.copysign(t(0.0), a / b), fl)
    mod = sel(mod == t(0.0), M.copysign(t(0.0), b), mod)
    bz = b == t(0.0)
    return sel(bz, a / b, fl), sel(bz, M.rem(a, b), mod)


def idivmod(cx, a, b):
    """Integer (floor_divide, remainder) with floor semantics; division by zero gives 0 (as
    numpy), MIN // -1 wraps."""
    t = cx.ct
    zero = t(0)
    bz = b == zero
    safe_b = sel(bz, t(1), b)
    if cx.kind == "i":
        neg1 = safe_b == t(-1)
        safe_b = sel(neg1, t(1), safe_b)
        q = a // safe_b  # floordivsi: floor semantics
        q = sel(neg1, zero - a, q)
        r = a - q * sel(neg1, t(-1), safe_b)
    else:
        q = a // safe_b
        r = a - q * safe_b
    return sel(bz, zero, q), sel(bz, zero, r)


def ipow(cx, a, b):
    """Integer power by squaring over the exponent's bits; negative exponents give the
    truncated value (1, ±1 for bases ±1, else 0)."""
    t = cx.ct
    r = t(1)
    base = a
    for i in range(cx.bits):
        bit = ((b >> t(i)) & t(1)) != t(0)
        r = sel(bit, r * base, r)
        base = base * base
    if cx.kind == "i":
        neg = b < t(0)
        odd = (b & t(1)) != t(0)
        small = sel(a == t(1), t(1), sel(a == t(-1), sel(odd, t(-1), t(1)), t(0)))
        r = sel(neg, small, r)
    return r


def isign(cx, x):
    t = cx.ct
    if cx.kind == "u":
        return sel(x > t(0), t(1), t(0))
    return sel(x > t(0), t(1), sel(x < t(0), t(-1), t(0)))


def fsign(x):
    t = type(x)
    return sel(x > t(0.0), t(1.0), sel(x < t(0.0), t(-1.0), x))


def nextafter(x, y, st):
    """The next value of the storage type ``st`` after x toward y (steps the bit pattern of
    the storage type, so f16 / bf16 step by their own ulp)."""
    t = type(x)
    it = {16: cutlass.Int16, 32: cutlass.Int32, 64: cutlass.Int64}[st.width]
    bits = st(x).bitcast(it)
    up = or_(and_(x < y, x >= t(0.0)), and_(x > y, x < t(0.0)))
    nb = sel(up, bits + it(1), bits - it(1))
    r = t(nb.bitcast(st))
    tiny = t(it(1).bitcast(st))
    r = sel(x == t(0.0), M.copysign(tiny, y), r)  # 0 steps to the smallest subnormal toward y
    r = sel(x == y, y, r)
    return sel(or_(isnan(x), isnan(y)), nan_of(x), r)


def logaddexp(a, b):
    m = maximum(a, b)
    d = M.absf(a - b)
    r = m + M.log1p(M.exp(-d))
    same_inf = and_(isinf(a), a == b)
    return sel(same_inf, a, sel(isnan(d), m, r))  # NaN inputs: m is NaN


def erfinv(y):
    """Inverse error function: Winitzki's closed form, then Newton steps on erf (erfc in the
    tails, where 1 − |y| carries the information)."""
    t = type(y)
    ay = M.absf(y)
    a = t(0.147)
    ln = M.log((t(1.0) - ay) * (t(1.0) + ay))
    c = t(2.0 / (math.pi * 0.147)) + ln * t(0.5)
    x = M.sqrt(M.sqrt(c * c - ln / a) - c)
    k = t(2.0 / math.sqrt(math.pi))
    steps = 3 if t is Float64 else 2
    for _ in range(steps):
        e = M.exp(-x * x) * k
        f_mid = M.erf(x) - ay
        f_tail = (t(1.0) - ay) - M.erfc(x)  # = erf(x) − |y|, exact where erf(x) ≈ 1
        f = sel(ay < t(0.9), f_mid, f_tail)
        x = x - f / e
    x = M.copysign(x, y)
    x = sel(ay == t(1.0), M.copysign(t(INF), y), x)
    return sel(or_(ay > t(1.0), isnan(y)), nan_of(y), x)


_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)


def _lgamma_pos(z):
    """lgamma(z) for z ≥ 0.5 (Lanczos, g = 7)."""
    t = type(z)
    zz = z - t(1.0)
    s = t(_LANCZOS[0])
    for i in range(1, 9):
        s = s + t(_LANCZOS[i]) / (zz + t(float(i)))
    w = zz + t(7.5)
    return t(0.5 * math.log(2 * math.pi)) + (zz + t(0.5)) * M.log(w) - w + M.log(s)


def lgamma(x):
    t = type(x)
    pos = _lgamma_pos(sel(x < t(0.5), t(1.0) - x, x))
    s = M.absf(M.sin(t(math.pi) * x))
    refl = t(math.log(math.pi)) - M.log(s) - pos
    r = sel(x < t(0.5), refl, pos)
    pole = and_(x <= t(0.0), M.floor(x) == x)
    r = sel(pole, t(INF), r)
    r = sel(x == t(1.0), t(0.0), sel(x == t(2.0), t(0.0), r))
    return sel(isinf(x), t(INF), sel(isnan(x), x, r))


def _psi_shift(x, order: int):
    """(x shifted up to ≥ 10, the recurrence sum) for digamma (order 0) / trigamma (order 1)."""
    t = type(x)
    acc = t(0.0)
    for _ in range(10):
        small = x < t(10.0)
        term = sel(small, t(1.0) / x if order == 0 else t(1.0) / (x * x), t(0.0))
        acc = acc + term
        x = sel(small, x + t(1.0), x)
    return x, acc


def digamma(x):
    t = type(x)
    neg = x < t(0.5)
    y = sel(neg, t(1.0) - x, x)
    z, acc = _psi_shift(y, 0)
    r2 = t(1.0) / (z * z)
    series = M.log(z) - t(0.5) / z - r2 * (t(1.0 / 12) - r2 * (t(1.0 / 120) - r2 * (
        t(1.0 / 252) - r2 * (t(1.0 / 240) - r2 * t(1.0 / 132)))))
    psi = series - acc
    refl = psi - t(math.pi) / M.tan(t(math.pi) * x)
    r = sel(neg, refl, psi)
    r = sel(x == t(0.0), M.copysign(t(INF), -x), r)
    pole = and_(x < t(0.0), M.floor(x) == x)
    r = sel(pole, nan_of(x), r)
    return sel(x == t(INF), x, r)


def trigamma(x):
    t = type(x)
    neg = x < t(0.5)
    y = sel(neg, t(1.0) - x, x)
    z, acc = _psi_shift(y, 1)
    iz = t(1.0) / z
    r2 = iz * iz
    series = iz + t(0.5) * r2 + iz * r2 * (t(1.0 / 6) - r2 * (t(1.0 / 30) - r2 * (
        t(1.0 / 42) - r2 * t(1.0 / 30))))
    psi1 = series + acc
    s = M.sin(t(math.pi) * x)
    refl = t(math.pi * math.pi) / (s * s) - psi1
    return sel(neg, refl, psi1)


# --------------------------------------------------------------------------- complex helpers
def cmul(a, b):
    return (a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0])


def cdiv(a, b):
    """Smith's algorithm."""
    t = type(a[0])
    big = M.absf(b[0]) >= M.absf(b[1])
    r1 = b[1] / sel(b[0] == t(0.0), t(1.0), b[0])
    d1 = b[0] + b[1] * r1
    x1 = ((a[0] + a[1] * r1) / d1, (a[1] - a[0] * r1) / d1)
    r2 = b[0] / sel(b[1] == t(0.0), t(1.0), b[1])
    d2 = b[0] * r2 + b[1]
    x2 = ((a[0] * r2 + a[1]) / d2, (a[1] * r2 - a[0]) / d2)
    both_zero = and_(b[0] == t(0.0), b[1] == t(0.0))
    x0 = (a[0] / b[0], a[1] / b[0])  # 0 divisor: IEEE inf/nan per component
    return sel(both_zero, x0, sel(big, x1, x2))


def cabs(a):
    return hypot(a[0], a[1])


def cexp(a):
    t = type(a[0])
    e = M.exp(a[0])
    im_zero = a[1] == t(0.0)
    re = sel(im_zero, e, e * M.cos(a[1]))
    im = sel(im_zero, a[1], e * M.sin(a[1]))
    return (re, im)


def clog(a):
    return (M.log(cabs(a)), M.atan2(a[1], a[0]))


def csqrt(a):
    t = type(a[0])
    r = cabs(a)
    s = M.sqrt((r + M.absf(a[0])) * t(0.5))
    d = sel(s == t(0.0), t(1.0), s * t(2.0))
    pos = (s, a[1] / d)
    neg = (M.absf(a[1]) / d, M.copysign(s, a[1]))
    out = sel(a[0] >= t(0.0), pos, neg)
    out = sel(isinf(a[1]), (t(INF), a[1]), out)
    return out


def csign(a):
    t = type(a[0])
    r = cabs(a)
    z = r == t(0.0)
    d = sel(z, t(1.0), r)
    return sel(z, (t(0.0), t(0.0)), (a[0] / d, a[1] / d))


def cadd(a, b):
    return (a[0] + b[0], a[1] + b[1])


def csub(a, b):
    return (a[0] - b[0], a[1] - b[1])


def cscale(a, k):
    return (a[0] * k, a[1] * k)


def times_i(a):
    return (-a[1], a[0])


def times_minus_i(a):
    return (a[1], -a[0])


def csinh(a):
    return (M.sinh(a[0]) * M.cos(a[1]), M.cosh(a[0]) * M.sin(a[1]))


def ccosh(a):
    return (M.cosh(a[0]) * M.cos(a[1]), M.sinh(a[0]) * M.sin(a[1]))


def ctanh(a):
    """tanh(x + iy) = (sinh 2x + i sin 2y) / (cosh 2x + cos 2y); |x| > 20 → ±1 + 0i·sin 2y."""
    t = type(a[0])
    x2, y2 = a[0] * t(2.0), a[1] * t(2.0)
    d = M.cosh(x2) + M.cos(y2)
    big = M.absf(a[0]) > t(20.0)
    return (sel(big, M.copysign(t(1.0), a[0]), M.sinh(x2) / d),
            sel(big, M.copysign(t(0.0), M.sin(y2)), M.sin(y2) / d))


def csin(a):
    return times_minus_i(csinh(times_i(a)))


def ccos(a):
    return ccosh(times_i(a))


def ctan(a):
    return times_minus_i(ctanh(times_i(a)))


def clog1p(a):
    t = type(a[0])
    x, y = a
    re = t(0.5) * M.log1p(x * (t(2.0) + x) + y * y)
    return (re, M.atan2(y, t(1.0) + x))


def cexpm1(a):
    t = type(a[0])
    s = M.sin(a[1] * t(0.5))
    return (M.expm1(a[0]) * M.cos(a[1]) - t(2.0) * s * s, M.exp(a[0]) * M.sin(a[1]))


def casinh(a):
    """log(z + sqrt(z² + 1)), with the sign symmetry asinh(−z) = −asinh(z) for Re z < 0."""
    t = type(a[0])
    neg = a[0] < t(0.0)
    z = sel(neg, (-a[0], -a[1]), a)
    w = clog(cadd(z, csqrt(cadd(cmul(z, z), (t(1.0), t(0.0))))))
    return sel(neg, (-w[0], -w[1]), w)


def cacosh(a):
    """log(z + sqrt(z + 1)·sqrt(z − 1))."""
    t = type(a[0])
    one = (t(1.0), t(0.0))
    return clog(cadd(a, cmul(csqrt(cadd(a, one)), csqrt(csub(a, one)))))


def catanh(a):
    """(log1p(z) − log1p(−z)) / 2."""
    t = type(a[0])
    return cscale(csub(clog1p(a), clog1p((-a[0], -a[1]))), t(0.5))


def casin(a):
    return times_minus_i(casinh(times_i(a)))


def cacos(a):
    t = type(a[0])
    s = casin(a)
    return (t(math.pi / 2) - s[0], -s[1])


def catan(a):
    return times_minus_i(catanh(times_i(a)))


def cpow(a, b):
    t = type(a[0])
    l = clog(a)
    r = cexp(cmul(b, l))
    a0 = and_(a[0] == t(0.0), a[1] == t(0.0))
    b0 = and_(b[0] == t(0.0), b[1] == t(0.0))
    r = sel(and_(a0, b[0] > t(0.0)), (t(0.0), t(0.0)), r)
    return sel(b0, (t(1.0), t(0.0)), r)


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
    "relu": _unary_float(relu), "gelu": lambda cx, x: (gelu(x, cx.st.width == 16),), "gelu_tanh": _unary_float(gelu_tanh),
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
    "geglu": lambda cx, a, b: (gelu(a, cx.st.width == 16) * b,),
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
