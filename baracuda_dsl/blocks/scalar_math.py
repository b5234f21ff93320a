"""Scalar math on CuTe DSL values, traced into kernels: the building blocks of the elementwise
op formulas (and of the scan, loss and other kernels that need the same functions).

Values are DSL scalars — ``Float32`` / ``Float64`` floats, integers of the storage type,
``Boolean`` — or ``(re, im)`` tuples of floats for complex numbers.  Everything is branch-free
at run time (data-dependent choices go through :func:`sel`); special values follow the array API
standard's tables where it gives them (NaN propagation in maximum / minimum, signed zeros, floor
semantics of fdivmod, ...).  Functions taking ``cx`` read the value's compute type and integer
width from the caller's context object (``ct``, ``bits``).
"""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute
from cutlass import Boolean, Float64

M = cute.math
INF = float("inf")
NAN = float("nan")


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
