"""Shared float64 references, input generators and host <-> device helpers of the elementwise
GPU tests (``test_elementwise_gpu.py``, ``test_elementwise_bw_gpu.py``,
``test_elementwise_cast_gpu.py``).

Host representation of values ("host arrays"): real floating dtypes (f16 bf16 f32 f64 fp8) are
float64 arrays holding values *exactly representable in the dtype* (inputs are rounded on the host
first, so the kernel and the reference see the same numbers); complex dtypes are complex128 arrays
(components representable in the component type); integers and bool are numpy arrays of their own
dtype.  References are computed from those rounded inputs: floats in float64 (numpy / scipy),
integers in numpy's own (wrapping) arithmetic or with Python integers, complex in complex128.

The formulas follow baracuda_dsl/ops/elementwise/kernels/elementwise_ops.py (float floor_divide:
the array API standard's table — numpy's values except ±inf // finite = ±inf and finite // ±inf =
a signed zero, :func:`floor_divide`; remainder: numpy; integer division by zero gives 0, shifts >=
the bit width give 0 / sign fill, maximum / minimum propagate NaN, sign(±0) = +0, round is half to
even, gelu the erfc form, gelu_tanh the σ form, ...).  Float parameters are
rounded to the kernel's compute type (f32 for every dtype but f64) before use, as the kernel does.
Nothing here needs a GPU; fp8 rounding uses ml_dtypes, torch is imported lazily for the transfers
(``pytest.importorskip``: a test that needs it skips without it).

Comparisons (:func:`check` with :func:`tolerance`): integers, bool and the exact float ops bit for
bit; every other floating result element by element (tests/_checks.py) within a bound derived
from the OUTPUT dtype and the op's formula — see "error model" below.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from baracuda_dsl.ops.elementwise.specs.elementwise import (CPLX, FLOAT, FP8, INT, ITEMSIZE, SINT,  # noqa: F401
                                                            UINT)
from tests._checks import assert_close, bounds
from tests._checks import eps as _eps

NP_DTYPE = {"bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
            "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
            "f16": np.float16, "f32": np.float32, "f64": np.float64, "c64": np.complex64,
            "c128": np.complex128}
TORCH_NAME = {"bool": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
              "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
              "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
              "c64": "complex64", "c128": "complex128", "fp8e4m3": "float8_e4m3fn",
              "fp8e5m2": "float8_e5m2"}
COMPONENT = {"c64": "f32", "c128": "f64"}
FP8_MAX = {"fp8e4m3": 448.0, "fp8e5m2": 57344.0}

#: Per-element error model of the floating results (see "error model" below): the number T of
#: rounded operations / library-function ulps the kernel's formula chains, in its compute
#: precision (every op not listed: 4).  CUDA's libdevice bounds (programming guide, appendix
#: "Mathematical Functions"): exp / log / sin / cos / erf 1-2 ulp, tan / acosh / erfc / pow 4,
#: sinh / asinh / atanh / atan2 / hypot 3; a formula adds one per rounded step (and half an ulp
#: per constant rounded to the compute type: SELU's, 1/√2, √(2/π), π).
TERMS = {
    **dict.fromkeys(("add", "subtract", "multiply", "divide", "square", "reciprocal", "sqrt",
                     "floor_divide", "remainder", "leaky_relu", "prelu", "reglu", "softshrink",
                     "fma"), 1),
    **dict.fromkeys(("hardsigmoid", "softsign", "affine"), 2),
    **dict.fromkeys(("exp", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tanh",
                     "asin", "acos", "atan", "erf", "hardswish", "elu", "logit", "tanhshrink",
                     "lerp", "addcmul", "addcdiv"), 3),
    **dict.fromkeys(("sinh", "cosh", "asinh", "atanh", "atan2", "sigmoid", "softplus", "selu",
                     "logaddexp"), 4),
    **dict.fromkeys(("tan", "acosh", "hypot", "erfc", "silu", "glu"), 5),
    **dict.fromkeys(("pow", "swiglu", "erfinv", "gelu_tanh"), 6),
    "gelu": 7, "geglu": 8, "mish": 8, "lgamma": 10, "digamma": 10, "trigamma": 10,
}
#: the same for complex values (component precision; every op not listed — the trigonometric,
#: hyperbolic and inverse functions, expm1, log1p, chains of a dozen rounded steps: 12)
CTERMS = {"add": 1, "subtract": 1, "multiply": 3, "square": 3, "abs": 5, "divide": 6,
          "reciprocal": 6, "sign": 6, "exp": 6, "log": 6, "sqrt": 6, "log2": 7, "log10": 7,
          "pow": 10}
#: The float64 reference's own error (see "error model" below): R_T rounded operations / library
#: ulps of the REFERENCE formula, in units of eps(float64), relative to the magnitude of that
#: formula's terms (:data:`REF_SCALE`; else the kernel's S where the reference evaluates the same
#: formula — :data:`SCALE` —; else |ref|).  Every op not listed: 2, one numpy float64 library
#: function (numpy validates its float64 transcendentals, SIMD / SVML, to ≤ 2 ulp against MPFR —
#: numpy/_core/tests/test_umath_accuracy.py —; glibc's documented maxima for these are ≤ 2 ulp;
#: measured against mpmath at 40 digits on this file's domains: ≤ 1.0·eps).  Correctly rounded
#: single operations: 1.  scipy (Cephes) functions, from their documented peak errors and
#: measured against mpmath on these domains: erf 2 (Cephes: 3.7e-16 = 1.7 eps; measured 1.65),
#: erfc 3 — exp(−x²), the rational P(x)/Q(x), their product — relative to
#: :func:`_erfc_ref_scale` (Cephes erfc rounds −x² before exp: a relative error ∝ x², 10.6 eps
#: at x ≈ 4.3 where CUDA's erfc is within 1; measured ≤ 1.8·eps·S_ref on (−5, 5)), erfinv 2
#: relative to S (measured ≤ 0.8), gammaln / psi 4 relative to S (measured ≤ 0.09 / 1.1),
#: polygamma(1) = Hurwitz ζ(2, x) by Euler–Maclaurin over ~10 positive rounded terms: 10
#: (measured ≤ 4.9 relative).
REF_TERMS = {
    **dict.fromkeys(("add", "subtract", "multiply", "divide", "square", "reciprocal", "sqrt",
                     "floor_divide", "remainder", "leaky_relu", "prelu", "reglu", "softshrink"),
                    1),
    # fma: the compensated a·b + c (:func:`fma`, REF_SCALE): one rounding
    "fma": 1,
    **dict.fromkeys(("hardsigmoid", "softsign", "affine", "erf", "erfinv"), 2),
    **dict.fromkeys(("hardswish", "elu", "tanhshrink", "lerp", "addcmul", "addcdiv", "erfc"), 3),
    # 1/(1 + e^−x) (exp 2, +, /) and log(x/(1 − x)) (−, /, log 2)
    **dict.fromkeys(("sigmoid", "selu", "logit", "lgamma", "digamma"), 4),
    # x·σ(x); log1p(e^(βx))/β; x·σ(y); 0.5·x·erfc(−x/√2) (erfc 2, ·1/√2, two products);
    # m + log1p(e^−d)
    **dict.fromkeys(("silu", "softplus", "glu", "gelu", "logaddexp"), 5),
    "swiglu": 6, "geglu": 6,
    # x / (1 + e^(−2z)), z = √(2/π)(x + 0.044715·x³): x³ (2), two products and a sum, ·2, exp (2),
    # 1 +, the division
    "gelu_tanh": 9, "mish": 9, "trigamma": 10,
}
#: the same for complex128 references (numpy's complex functions, relative to the kernel's S):
#: componentwise add / subtract 1, a product / square 2 (one component may cancel: S is the
#: modulus), every other op 4 (numpy's npymath complex functions, a few ulps of the modulus)
REF_CTERMS = {"add": 1, "subtract": 1, "multiply": 2, "square": 2}
#: ops whose float result is one of the inputs / parameters or an exactly representable function
#: of them: compared bit for bit (value and the sign of zeros) instead of with a tolerance
EXACT = frozenset(("abs", "negative", "ceil", "floor", "trunc", "round", "sign", "copysign",
                   "nextafter", "maximum", "minimum", "clip", "where", "copy", "real", "imag",
                   "conj", "relu", "relu6", "hardtanh", "hardshrink", "threshold"))
#: exact ops where the sign of a zero result is not pinned down (ties of ±0)
ZERO_SIGN_FREE = frozenset(("maximum", "minimum", "clip", "relu", "relu6", "hardtanh"))
#: float parameters used by the forward tests (several sets where branches differ)
PARAMS = {
    "softplus": [(1.0, 20.0), (2.0, 1.5)], "hardtanh": [(-1.0, 1.0), (-0.5, 1.25)],
    "elu": [(1.0,), (0.75,)], "leaky_relu": [(0.01,), (0.125,)], "logit": [(-1.0,), (0.125,)],
    "hardshrink": [(0.5,)], "softshrink": [(0.5,)], "threshold": [(0.25, -1.5)],
    "addcmul": [(1.0,), (-0.5,)], "addcdiv": [(0.5,)], "affine": [(1.5, -0.25)],
}
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def kind(dt: str) -> str:
    """'b' bool, 'i' signed, 'u' unsigned, 'f' real float (incl. fp8), 'c' complex."""
    if dt == "bool":
        return "b"
    if dt in SINT:
        return "i"
    if dt in UINT:
        return "u"
    if dt in CPLX:
        return "c"
    return "f"


def bits(dt: str) -> int:
    return 8 * ITEMSIZE[dt]


def compute_dt(dt: str) -> str:
    """The kernel's compute type of a value dtype (half types and fp8 compute in f32)."""
    return "f64" if dt in ("f64", "c128") else "f32"


def params_for(op: str):
    """Parameter sets of ``op`` (``[()]`` for parameter-free ops)."""
    return PARAMS.get(op, [()])


def _sps():
    from scipy import special

    return special


def _torch():
    import pytest

    return pytest.importorskip("torch")


# ----------------------------------------------------------------------------------- rounding
def round_bf16(x) -> np.ndarray:
    """float64 → the nearest bfloat16 (ties to even, through float32), as float64."""
    x = np.asarray(x, np.float64)
    f = x.astype(np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    out = (r & 0xFFFFFFFF).astype(np.uint32).view(np.float32).astype(np.float64)
    return np.where(np.isnan(x), x, out)


def round_fp8(x, dt: str) -> np.ndarray:
    """float64 → the nearest fp8 value of the float32 value (round to nearest even, overflow to
    NaN / inf: what torch's CPU conversion gives), as float64."""
    import ml_dtypes

    mt = {"fp8e4m3": ml_dtypes.float8_e4m3fn, "fp8e5m2": ml_dtypes.float8_e5m2}[dt]
    return np.asarray(x, np.float64).astype(np.float32).astype(mt).astype(np.float64)


def round_to(x, dt: str) -> np.ndarray:
    """float64 values rounded to the real floating dtype ``dt`` (returned as float64)."""
    x = np.asarray(x, np.float64)
    if dt == "f64":
        return x.copy()
    if dt == "f32":
        return x.astype(np.float32).astype(np.float64)
    if dt == "f16":
        return x.astype(np.float16).astype(np.float64)
    if dt == "bf16":
        return round_bf16(x)
    if dt in FP8:
        return round_fp8(x, dt)
    raise ValueError(dt)


def round_host(x, dt: str) -> np.ndarray:
    """Any host values → the host representation of dtype ``dt``."""
    k = kind(dt)
    if k == "c":
        c = COMPONENT[dt]
        x = np.asarray(x, np.complex128)
        return _cplx(round_to(x.real, c), round_to(x.imag, c))
    if k == "f":
        return round_to(x, dt)
    return np.asarray(x).astype(NP_DTYPE[dt])


def to_dt_params(params, dt: str):
    """The parameters as the kernel sees them (rounded to the compute type)."""
    if compute_dt(dt) == "f64":
        return tuple(float(p) for p in params)
    return tuple(float(np.float32(p)) for p in params)


# --------------------------------------------------------------------------- input generation
def _U(lo, hi):
    return lambda rng, n: rng.uniform(lo, hi, n)


def _S(lo, hi):
    """Random sign, magnitude uniform in [lo, hi]."""
    return lambda rng, n: rng.uniform(lo, hi, n) * rng.choice([-1.0, 1.0], n)


def _N(scale=1.0):
    return lambda rng, n: rng.standard_normal(n) * scale


def _mix(*gens):
    """Each element from one of ``gens`` at random."""
    def f(rng, n):
        parts = np.stack([g(rng, n) for g in gens])
        return parts[rng.integers(0, len(gens), n), np.arange(n)]
    return f


def _zeros(g, frac=0.1):
    """``g`` with a fraction of the elements replaced by +0.0 / -0.0."""
    def f(rng, n):
        x = g(rng, n)
        m = rng.random(n) < frac
        x[m] = rng.choice([0.0, -0.0], int(m.sum()))
        return x
    return f


def _specials(g, frac=0.15):
    """``g`` with a fraction replaced by NaN / ±inf / ±0."""
    def f(rng, n):
        x = g(rng, n)
        m = rng.random(n) < frac
        x[m] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0], int(m.sum()))
        return x
    return f


def _halves(lim):
    """Half of the elements exact halves k/2 (round-half-even ties), the rest uniform."""
    def f(rng, n):
        x = rng.uniform(-lim, lim, n)
        m = rng.random(n) < 0.5
        x[m] = rng.integers(-2 * lim, 2 * lim + 1, int(m.sum())) / 2.0
        return x
    return f


def _gamma_domain(rng, n):
    """lgamma / digamma / trigamma: mostly (0.1, 8), a quarter on (-4, 0) at least 0.15 from the
    poles."""
    x = rng.uniform(0.1, 8.0, n)
    m = rng.random(n) < 0.25
    k = int(m.sum())
    x[m] = -(rng.integers(0, 4, k) + rng.uniform(0.15, 0.85, k))
    return x


_FLOAT_DOMAIN = {
    "acos": (_U(-0.95, 0.95),), "asin": (_U(-0.95, 0.95),), "atanh": (_U(-0.95, 0.95),),
    # |y| >= 0.9 exercises erfinv's tail branch
    "erfinv": (_mix(_U(-0.9, 0.9), _S(0.9, 0.99)),),
    "acosh": (_U(1.05, 6.0),),
    "log": (_U(0.05, 20.0),), "log2": (_U(0.05, 20.0),), "log10": (_U(0.05, 20.0),),
    "sqrt": (_U(0.0, 20.0),), "log1p": (_U(-0.9, 10.0),), "reciprocal": (_S(0.1, 8.0),),
    "exp": (_U(-6.0, 6.0),), "expm1": (_U(-5.0, 5.0),), "sinh": (_U(-5.0, 5.0),),
    "cosh": (_U(-5.0, 5.0),), "tan": (_U(-1.4, 1.4),), "sin": (_U(-10.0, 10.0),),
    "cos": (_U(-10.0, 10.0),),
    "ceil": (_halves(20),), "floor": (_halves(20),), "trunc": (_halves(20),),
    "round": (_halves(20),),
    "signbit": (_zeros(_N(3.0)),), "sign": (_zeros(_N(3.0)),), "abs": (_zeros(_N(3.0)),),
    "negative": (_zeros(_N(3.0)),), "copy": (_zeros(_N(3.0)),),
    "isfinite": (_specials(_N(3.0)),), "isinf": (_specials(_N(3.0)),),
    "isnan": (_specials(_N(3.0)),),
    "lgamma": (_gamma_domain,), "digamma": (_gamma_domain,), "trigamma": (_gamma_domain,),
    "logit": (_U(0.02, 0.98),),
    "relu": (_U(-8.0, 8.0),), "relu6": (_U(-8.0, 8.0),), "hardswish": (_U(-8.0, 8.0),),
    "hardsigmoid": (_U(-8.0, 8.0),), "hardtanh": (_U(-3.0, 3.0),),
    "threshold": (_U(-2.0, 2.0),), "hardshrink": (_U(-2.0, 2.0),),
    "softshrink": (_U(-2.0, 2.0),), "leaky_relu": (_U(-5.0, 5.0),), "elu": (_U(-5.0, 5.0),),
    "selu": (_U(-5.0, 5.0),),
    "divide": (_N(3.0), _S(0.25, 4.0)), "pow": (_U(0.25, 3.0), _U(-3.0, 3.0)),
    "atan2": (_N(2.0), _N(2.0)), "hypot": (_N(3.0), _N(3.0)),
    "logaddexp": (_U(-10.0, 10.0), _U(-10.0, 10.0)),
    "copysign": (_N(3.0), _zeros(_N(3.0))), "nextafter": (_zeros(_N(3.0)), _N(3.0)),
    "prelu": (_N(3.0), _U(0.05, 0.5)),
    "clip": (_N(3.0), _U(-2.0, -0.1), _U(0.1, 2.0)),
    "lerp": (_N(2.0), _N(2.0), _U(-0.5, 1.5)),
    "addcdiv": (_N(2.0), _N(2.0), _S(0.25, 4.0)),
}
#: binary ops whose random inputs get 25 % exact ties (b = a)
TIES = frozenset(("maximum", "minimum", "equal", "not_equal", "greater", "greater_equal", "less",
                  "less_equal", "nextafter"))


def _float_inputs(op, nin, n, rng):
    gens = _FLOAT_DOMAIN.get(op)
    if op in ("floor_divide", "remainder"):
        # a = b·(k + f), f in [0.1, 0.9]: the floor of a / b is unambiguous even after rounding
        b = _S(0.5, 4.0)(rng, n)
        a = b * (rng.integers(-12, 13, n) + rng.uniform(0.1, 0.9, n))
        return [a, b]
    if gens is None:
        gens = {1: (_U(-5.0, 5.0),), 2: (_N(3.0), _N(3.0)),
                3: (_N(2.0), _N(2.0), _N(2.0))}[nin]
    return [g(rng, n) for g in gens]


def _cpolar(lo, hi):
    def f(rng, n):
        return rng.uniform(lo, hi, n) * np.exp(1j * rng.uniform(-np.pi, np.pi, n))
    return f


def _complex_inputs(op, nin, n, rng):
    c = lambda r, m: r.standard_normal(m) * 2 + 1j * r.standard_normal(m) * 2  # noqa: E731
    if op in ("reciprocal", "sign", "log"):
        return [_cpolar(0.25, 4.0)(rng, n)]
    if op == "divide":
        return [c(rng, n), _cpolar(0.25, 4.0)(rng, n)]
    if op == "exp":
        return [rng.uniform(-4, 4, n) + 1j * rng.uniform(-6, 6, n)]
    if op == "pow":
        return [_cpolar(0.5, 2.0)(rng, n), rng.uniform(-2, 2, n) + 1j * rng.uniform(-1, 1, n)]
    if op in ("isfinite", "isinf", "isnan"):
        z = c(rng, n)
        re, im = z.real.copy(), z.imag.copy()
        for part in (re, im):
            m = rng.random(n) < 0.15
            part[m] = rng.choice([np.nan, np.inf, -np.inf], int(m.sum()))
        return [_cplx(re, im)]
    return [c(rng, n) for _ in range(nin)]


def _cplx(re, im):
    """complex128 array from components (keeps inf / nan components apart: re + 1j·im would turn
    an infinite imaginary part into a NaN real part)."""
    out = np.empty(np.shape(re), np.complex128)
    out.real, out.imag = re, im
    return out


def _full_ints(dt, rng, n):
    info = np.iinfo(NP_DTYPE[dt])
    return rng.integers(int(info.min), int(info.max), n, dtype=NP_DTYPE[dt], endpoint=True)


def _int_inputs(op, dt, nin, n, rng):
    npd = NP_DTYPE[dt]
    info = np.iinfo(npd)
    signed = kind(dt) == "i"
    if op == "pow":
        base = rng.integers(-4 if signed else 0, 7, n).astype(npd)
        exp = rng.integers(-3 if signed else 0, 2 * bits(dt) + 1, n).astype(npd)
        return [base, exp]
    if op in ("bitwise_left_shift", "bitwise_right_shift"):
        return [_full_ints(dt, rng, n), rng.integers(0, bits(dt), n).astype(npd)]
    if op == "clip":
        x, a, b = (_full_ints(dt, rng, n) for _ in range(3))
        return [x, np.minimum(a, b), np.maximum(a, b)]
    if op in ("floor_divide", "remainder"):
        a, b = _full_ints(dt, rng, n), _full_ints(dt, rng, n)
        small = rng.integers(-20 if signed else 0, 21, n).astype(npd)
        m = rng.random(n) < 0.3
        b[m] = small[m]  # small divisors incl. 0 (→ 0) and -1
        if signed:
            a[rng.random(n) < 0.05] = info.min  # MIN // -1 wraps
        return [a, b]
    return [_full_ints(dt, rng, n) for _ in range(nin)]


def make_inputs(op: str, dt: str, shape, rng, nin: int = None):
    """Host arrays of the inputs of forward op ``op`` (value dtype ``dt``) of ``shape``, in the
    op's domain and rounded to ``dt``.  ``where``'s condition is bool."""
    from baracuda_dsl.ops.elementwise.specs.elementwise import OPS

    spec = OPS[op]
    nin = spec.nin if nin is None else nin
    shape = tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    k = kind(dt)
    vals = nin - 1 if op == "where" else nin
    if k == "b":
        xs = [rng.random(n) < 0.5 for _ in range(vals)]
    elif k in "iu":
        xs = _int_inputs(op, dt, vals, n, rng)
    elif k == "c":
        xs = [round_host(x, dt) for x in _complex_inputs(op, vals, n, rng)]
    else:
        xs = [round_to(x, dt) for x in _float_inputs(op, vals, n, rng)]
    if op in TIES and n:
        m = rng.random(n) < 0.25
        xs[1] = xs[1].copy()
        xs[1][m] = xs[0][m]
    if op == "where":
        xs = [rng.random(n) < 0.5] + xs
    return [np.asarray(x).reshape(shape) for x in xs]


def python_scalar(host_value, dt: str):
    """The Python scalar (bool / int / float / complex) holding a host value of dtype ``dt``."""
    k = kind(dt)
    v = np.asarray(host_value).reshape(-1)[0]
    if k == "b":
        return bool(v)
    if k in "iu":
        return int(v)
    if k == "c":
        return complex(v)
    return float(v)


# ---------------------------------------------------------------------------- float formulas
def _erf(x):
    return _sps().erf(x)


def gelu(x):
    # x·Φ(x) through erfc: 1 + erf(x/√2) cancels for negative x even in float64
    return 0.5 * x * _sps().erfc(-x / math.sqrt(2.0))


def gelu_tanh(x):
    """0.5·x·(1 + tanh z) as x·σ(2z) = x / (1 + e^(−2z)), z = √(2/π)(x + 0.044715x³): the same
    value without the cancellation of 1 + tanh z for x < 0 (the tanh form loses up to 6e5 eps
    at x ≈ −4.8 even in float64)."""
    z = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)
    return x * sigmoid(2.0 * z)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def silu(x):
    return x * sigmoid(x)


def softplus(x, beta=1.0, threshold=20.0):
    bx = x * beta
    return np.where(bx > threshold, x, np.log1p(np.exp(np.minimum(bx, 700.0))) / beta)


def relu(x):
    return np.where(x < 0, 0.0, x)


def floor_divide(a, b, npd=np.float64):
    """Float floor_divide per the array API standard's special cases, in numpy dtype ``npd``:
    numpy's value (NaN operands, inf // inf, 0 // 0: NaN; x // ±0: ±inf; finite operands: the
    floor of the exact quotient, signed zeros kept) except where the standard's table prefers
    floor(x1 / x2) to numpy's (Python's) answer: ±inf // finite nonzero = ±inf (numpy: NaN) and
    finite // ±inf = the signed zero of x1 / x2 (numpy: −1 for opposite signs).  Returned as
    float64."""
    a = np.asarray(a, np.float64).astype(npd)
    b = np.asarray(b, np.float64).astype(npd)
    with np.errstate(all="ignore"):
        r = np.floor_divide(a, b)
        neg = np.signbit(a) != np.signbit(b)
        inf_fin = np.isinf(a) & np.isfinite(b) & (b != 0)
        fin_inf = np.isfinite(a) & np.isinf(b)
        r = np.where(inf_fin, np.where(neg, -np.inf, np.inf), r)
        r = np.where(fin_inf, np.where(neg, -0.0, 0.0), r)
    return np.asarray(r).astype(np.float64)


def nextafter(x, y, dt: str):
    """The next value of dtype ``dt`` after ``x`` toward ``y`` (IEEE nextafter in ``dt``)."""
    x, y = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(y, np.float64))
    if dt == "f64":
        return np.nextafter(x, y)
    if dt in ("f32", "f16"):
        t = NP_DTYPE[dt]
        return np.nextafter(x.astype(t), y.astype(t)).astype(np.float64)
    if dt != "bf16":
        raise ValueError(dt)
    xb = (np.where(np.isnan(x), 0.0, x).astype(np.float32).view(np.uint32) >> 16).astype(np.int64)
    up = ((x < y) & (x >= 0)) | ((x > y) & (x < 0))
    nb = np.where(up, xb + 1, xb - 1) & 0xFFFF
    r = (nb.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    r = np.where(x == 0, np.copysign(2.0 ** -133, y), r)  # smallest bf16 subnormal
    r = np.where(x == y, y, r)
    return np.where(np.isnan(x) | np.isnan(y), np.nan, r)


def fma(a, b, c):
    """a·b + c to about half an ulp of float64 (the kernel's fma rounds once; a·b + c in float64
    rounds the product first, an error relative to |a·b| that cancellation leaves standing):
    Dekker's exact product a·b = p + e (Veltkamp splitting), Knuth's exact sum p + c = s + t,
    then s + (t + e) — within eps/2·|result| + eps²·(|a·b| + |c|).  Where that is not finite
    (infinite / NaN operands, overflow of the splitting) the plain a·b + c."""
    a, b, c = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, c)))
    with np.errstate(all="ignore"):
        plain = a * b + c

        def split(v):
            t = 134217729.0 * v  # 2^27 + 1
            hi = t - (t - v)
            return hi, v - hi

        (ah, al), (bh, bl) = split(a), split(b)
        p = a * b
        e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
        s = p + c
        bb = s - p
        t = (p - (s - bb)) + (c - bb)
        r = s + (t + e)
    return np.where(np.isfinite(r), r, plain)


def _logit(x, eps):
    if eps >= 0:
        x = np.minimum(np.maximum(x, eps), 1.0 - eps)
    return np.log(x / (1.0 - x))


def _float_unary(op, x, p):
    s = _sps
    table = {
        "abs": np.abs, "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin,
        "asinh": np.arcsinh, "atan": np.arctan, "atanh": np.arctanh, "cos": np.cos,
        "cosh": np.cosh, "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p,
        "log2": np.log2, "log10": np.log10, "sin": np.sin, "sinh": np.sinh, "sqrt": np.sqrt,
        "tan": np.tan, "tanh": np.tanh, "ceil": np.ceil, "floor": np.floor, "trunc": np.trunc,
        "round": np.rint, "signbit": np.signbit, "negative": np.negative, "square": np.square,
        "sign": lambda v: np.where(v == 0, 0.0, np.sign(v)), "reciprocal": lambda v: 1.0 / v,
        "isfinite": np.isfinite, "isinf": np.isinf, "isnan": np.isnan,
        "copy": lambda v: v.copy(), "relu": relu, "gelu": gelu, "gelu_tanh": gelu_tanh,
        "silu": silu, "sigmoid": sigmoid, "mish": lambda v: v * np.tanh(softplus(v, 1.0, 20.0)),
        "softplus": lambda v: softplus(v, p[0], p[1]),
        "hardswish": lambda v: v * np.clip(v + 3.0, 0.0, 6.0) / 6.0,
        "hardsigmoid": lambda v: np.clip(v + 3.0, 0.0, 6.0) / 6.0,
        "hardtanh": lambda v: np.minimum(np.maximum(v, p[0]), p[1]),
        "relu6": lambda v: np.minimum(np.maximum(v, 0.0), 6.0),
        "elu": lambda v: np.where(v > 0, v, p[0] * np.expm1(v)),
        "selu": lambda v: SELU_SCALE * np.where(v > 0, v, SELU_ALPHA * np.expm1(v)),
        "leaky_relu": lambda v: np.where(v > 0, v, p[0] * v),
        "logit": lambda v: _logit(v, p[0]),
        "erf": lambda v: s().erf(v), "erfc": lambda v: s().erfc(v),
        "erfinv": lambda v: s().erfinv(v),
        "lgamma": lambda v: np.where(np.isinf(v), np.inf, s().gammaln(v)),  # C: lgamma(-inf)=inf
        "digamma": lambda v: s().psi(v), "trigamma": lambda v: s().polygamma(1, v),
        "softsign": lambda v: v / (1.0 + np.abs(v)), "tanhshrink": lambda v: v - np.tanh(v),
        "hardshrink": lambda v: np.where(np.abs(v) > p[0], v, 0.0),
        "softshrink": lambda v: np.where(v > p[0], v - p[0], np.where(v < -p[0], v + p[0], 0.0)),
        "threshold": lambda v: np.where(v > p[0], v, p[1]),
        "affine": lambda v: p[0] * v + p[1],
    }
    return table[op](x)


_CMP = {"equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
        "greater_equal": np.greater_equal, "less": np.less, "less_equal": np.less_equal}


def _float_binary(op, a, b, dt):
    if op in _CMP:
        return _CMP[op](a, b)
    table = {
        "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
        "pow": np.power, "atan2": np.arctan2, "hypot": np.hypot, "logaddexp": np.logaddexp,
        "copysign": np.copysign, "maximum": np.maximum, "minimum": np.minimum,
        "floor_divide": floor_divide, "remainder": np.remainder,
        "nextafter": lambda x, y: nextafter(x, y, dt),
        "prelu": lambda x, w: np.where(x > 0, x, w * x),
        "glu": lambda x, y: x * sigmoid(y), "reglu": lambda x, y: relu(x) * y,
        "swiglu": lambda x, y: silu(x) * y, "geglu": lambda x, y: gelu(x) * y,
    }
    return table[op](a, b)


def _float_ternary(op, a, b, c, p):
    table = {
        "clip": lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
        "where": lambda cond, x, y: np.where(cond, x, y),
        "lerp": lambda x, y, w: x + w * (y - x),
        "addcmul": lambda x, u, v: x + p[0] * u * v,
        "addcdiv": lambda x, u, v: x + p[0] * u / v,
        "fma": fma,
    }
    return table[op](a, b, c)


# --------------------------------------------------------------------------- integer formulas
def int_pow(a, b, dt: str) -> np.ndarray:
    """a ** b in the wrapping integer type ``dt`` (negative exponents: 1 for a = 1, ±1 for
    a = −1, else 0 — the truncated value, as the kernel defines it)."""
    a, b = np.broadcast_arrays(a, b)
    nb = bits(dt)
    mod = 1 << nb
    out = []
    for x, e in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist()):
        if e < 0:
            r = 1 if x == 1 else ((-1 if e % 2 else 1) if x == -1 else 0)
        else:
            r = pow(x % mod, e, mod)
        out.append(r)
    arr = np.array(out, dtype=object) % mod
    if kind(dt) == "i":
        arr = np.array([v - mod if v >= mod // 2 else v for v in arr.tolist()], dtype=object)
    return np.array(arr.tolist(), dtype=NP_DTYPE[dt]).reshape(a.shape)


def _int_ref(op, dt, ins):
    npd = NP_DTYPE[dt]
    x = [np.asarray(v, npd) if op != "where" or i else np.asarray(v, bool)
         for i, v in enumerate(ins)]
    if op in _CMP:
        return _CMP[op](*x)
    if op == "pow":
        return int_pow(x[0], x[1], dt)
    if op == "clip":
        return np.minimum(np.maximum(x[0], x[1]), x[2])
    if op == "where":
        return np.where(x[0], x[1], x[2])
    table = {
        "abs": np.abs, "negative": np.negative, "square": np.square, "sign": np.sign,
        "isfinite": np.isfinite, "isinf": np.isinf, "isnan": np.isnan,
        "bitwise_invert": np.invert, "copy": np.copy,
        "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
        "maximum": np.maximum, "minimum": np.minimum, "floor_divide": np.floor_divide,
        "remainder": np.remainder, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
        "bitwise_xor": np.bitwise_xor, "bitwise_left_shift": np.left_shift,
        "bitwise_right_shift": np.right_shift,
    }
    r = table[op](*x)
    return r.astype(npd) if r.dtype.kind in "iu" else r


def _bool_ref(op, ins):
    x = [np.asarray(v, bool) for v in ins]
    table = {
        "equal": np.equal, "not_equal": np.not_equal, "bitwise_and": np.logical_and,
        "bitwise_or": np.logical_or, "bitwise_xor": np.logical_xor,
        "bitwise_invert": np.logical_not, "logical_not": np.logical_not,
        "logical_and": np.logical_and, "logical_or": np.logical_or,
        "logical_xor": np.logical_xor, "copy": np.copy,
        "where": lambda c, a, b: np.where(c, a, b),
    }
    return table[op](*x)


def _complex_ref(op, ins):
    x = [np.asarray(v) for v in ins]
    if op == "where":
        return np.where(x[0].astype(bool), x[1].astype(np.complex128), x[2].astype(np.complex128))
    x = [v.astype(np.complex128) for v in x]
    if op == "sign":
        a = np.abs(x[0])
        return np.where(a == 0, 0.0, x[0] / np.where(a == 0, 1.0, a))
    table = {
        "abs": np.abs, "negative": np.negative, "square": lambda v: v * v,
        "reciprocal": lambda v: 1.0 / v, "conj": np.conj, "real": np.real, "imag": np.imag,
        "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "isfinite": np.isfinite,
        "isinf": np.isinf, "isnan": np.isnan, "copy": np.copy, "add": np.add,
        "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
        "pow": np.power, "equal": np.equal, "not_equal": np.not_equal,
        "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh,
        "atan": np.arctan, "atanh": np.arctanh, "cos": np.cos, "cosh": np.cosh, "sin": np.sin,
        "sinh": np.sinh, "tan": np.tan, "tanh": np.tanh, "expm1": np.expm1, "log1p": np.log1p,
        "log2": np.log2, "log10": np.log10,
    }
    return table[op](*x)


def reference(op: str, dt: str, ins, params=()):
    """The expected output of forward op ``op`` with value dtype ``dt`` on host inputs ``ins``
    (arrays or 0-d values for scalar operands): float64 / complex128 for floating outputs,
    numpy integers / bool otherwise; broadcast to the inputs' common shape."""
    k = kind(dt)
    shape = np.broadcast_shapes(*(np.shape(v) for v in ins))
    with np.errstate(all="ignore"):
        if k == "b":
            r = _bool_ref(op, ins)
        elif k in "iu":
            r = _int_ref(op, dt, ins)
        elif k == "c":
            r = _complex_ref(op, ins)
        else:
            p = to_dt_params(params, dt)
            if op == "where":
                r = np.where(np.asarray(ins[0], bool), np.asarray(ins[1], np.float64),
                             np.asarray(ins[2], np.float64))
            else:
                xs = [np.asarray(v, np.float64) for v in ins]
                if len(xs) == 1:
                    r = _float_unary(op, xs[0], p)
                elif len(xs) == 2:
                    r = _float_binary(op, xs[0], xs[1], dt)
                else:
                    r = _float_ternary(op, xs[0], xs[1], xs[2], p)
    return np.broadcast_to(np.asarray(r), shape).copy()


# ------------------------------------------------------------------------------- error model
# Every floating result is checked element by element (tests/_checks.py assert_close) against
# the float64 / complex128 reference computed from the same rounded inputs:
#
#     |got − ref| ≤ TINY(out) + eps(out)/2 · |ref| + T · eps(compute) · S + R_T · eps(f64) · S_ref
#
# * eps(out)/2 · |ref|: the final rounding into the OUTPUT dtype (half an ulp; TINY, its
#   smallest normal, for results in the subnormal range);
# * T · eps(compute) · S: the kernel's formula, evaluated in its compute precision (f32 for
#   f16 / bf16 / f32 / c64, f64 for f64 / c128), chains T rounded steps or library-function ulps
#   (TERMS / CTERMS).  S is |ref| for a formula that is relatively accurate, and the magnitude of
#   the terms where it is not (:data:`SCALE` / :data:`CSCALE`): where the formula cancels
#   (x − tanh x, the half types' 1 + erf(x/√2) for negative x, a + w(b − a), m + log1p(e^−d)),
#   or where an argument rounded in compute precision is amplified by the function's condition
#   number (erfc(−x/√2), e^−2z in gelu_tanh, erfinv near ±1, the reflection formulas of the
#   gamma functions, complex functions near their branch points).  Complex results: S ≥ |ref|,
#   the modulus (one component of a·b may cancel), except add / subtract (componentwise
#   correctly rounded).
# * R_T · eps(f64) · S_ref: the reference is itself computed in float64 and carries its own
#   rounding error (REF_TERMS / REF_CTERMS), relative to the magnitude of the REFERENCE formula's
#   terms (REF_SCALE: scipy's erfc, the compensated fma; else the kernel's S where the
#   reference evaluates the same formula; else |ref|).  Negligible below f64 outputs; for f64
#   results it is of the kernel's order, so neither side's roundings may be charged to the other.
#   References that cancel where the kernel does not are replaced by accurate forms (gelu_tanh:
#   x·σ(2z), not 0.5·x·(1 + tanh z); fma: a compensated a·b + c, not a·b + c rounded twice)
#   rather than covered by a looser bound.
#
# The bound is passed to assert_close as rtol = eps(out)/2 and scale = |ref| + (T·eps(compute)
# / rtol)·S + (R_T·eps(f64) / rtol)·S_ref, which is exactly the sum above (assert_close bounds
# |got − ref| by atol + rtol·max(|ref|, scale)).  An element off by one ulp of the output passes;
# an element off by more than the two formulas can explain fails, wherever it is.


class Bound(NamedTuple):
    """The per-element bound of one comparison (see the error model above)."""

    rtol: float
    atol: float
    scale: object = None  # None (relative to |ref|) or a float64 array broadcastable to ref


def make_bound(out_dt: str, compute: str, terms: float, ref=None, scale=None,
               ref_terms: float = 0.0, ref_scale=None) -> Bound:
    """:class:`Bound` for a result stored in ``out_dt``, computed in ``compute`` through
    ``terms`` rounded steps, the compute error relative to ``scale`` (None: to |ref|), compared
    with a float64 reference whose own ``ref_terms`` roundings are relative to ``ref_scale``
    (None: to |ref|).  A scale below |ref| counts as |ref|; NaN as 0."""
    out, comp = TORCH_NAME[out_dt], TORCH_NAME[compute]
    e64 = _eps("float64")
    if scale is None and ref_scale is None:
        rtol, atol = bounds(out, compute=comp, terms=terms)
        return Bound(rtol + ref_terms * e64, atol)
    rtol, atol = bounds(out)
    mag = np.abs(np.asarray(ref)).astype(np.float64)  # complex: the modulus
    fmag = np.where(np.isfinite(mag), mag, 0.0)

    def at_least_ref(v):
        if v is None:
            return fmag
        return np.maximum(np.nan_to_num(np.asarray(v, np.float64), nan=0.0), fmag)

    with np.errstate(all="ignore"):
        eff = (mag + (terms * _eps(comp) / rtol) * at_least_ref(scale)
               + (ref_terms * e64 / rtol) * at_least_ref(ref_scale))
    return Bound(rtol, atol, np.where(np.isfinite(eff), eff, 0.0))


def _a(v):
    return np.abs(np.asarray(v, np.float64))


def _gelu_scale(x):
    """S of x·Φ(x) = 0.5·x·erfc(−x/√2) (every dtype) — erfc's argument is rounded (with the
    constant 1/√2) and erfc amplifies that by its condition number 2|u|e^(−u²)/(√π·erfc u)
    (≈ 2u² for x ≪ 0)."""
    sp = _sps()
    x = np.asarray(x, np.float64)
    u = -x / math.sqrt(2.0)
    with np.errstate(all="ignore"):
        cond = 2.0 * np.abs(u) * np.exp(-u * u) / (math.sqrt(math.pi) * sp.erfc(u))
        return _a(0.5 * x * sp.erfc(u)) * (1.0 + np.nan_to_num(cond))


def _gelu_tanh_scale(x):
    """x·σ(v), v = 2√(2/π)(x + 0.044715x³) rounded in a few steps; σ amplifies v's relative
    error by |v|(1 − σ(v)) (≈ |v| for x ≪ 0)."""
    x = np.asarray(x, np.float64)
    v = 2.0 * math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)
    s = sigmoid(v)
    return _a(x * s) * (1.0 + 2.0 * np.abs(v) * (1.0 - s))


def _erfinv_scale(y, r):
    """erfinv's condition number |y|·√π·e^(x²)/(2|x|) (x = erfinv y; → 1 at 0, large near ±1)
    times |x|: the Newton steps' residual erf(x) − |y| is as accurate as |y| is."""
    y, r = np.asarray(y, np.float64), np.asarray(r, np.float64)
    with np.errstate(all="ignore"):
        cond = np.where(r != 0, np.abs(y) * math.sqrt(math.pi) * np.exp(r * r) / (2 * _a(r)), 1.0)
    return _a(r) * (1.0 + np.nan_to_num(cond))


_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)


def _reflect_arg_scale(x):
    """π|x|·|cot πx|: the absolute error of log|sin πx| from rounding πx (|x| up to a few)."""
    with np.errstate(all="ignore"):
        return math.pi * np.abs(x) / np.abs(np.tan(math.pi * x))


def _lgamma_scale(x, r):
    """lgamma as the kernel evaluates it: Lanczos (g = 7) for z ≥ 0.5 — the terms
    (z − 0.5)·log(z + 6.5), z + 6.5, log A(z) and the alternating sum A(z) itself (relative
    error Σ|terms|/|A|) — and the reflection log π − log|sin πx| − lgamma(1 − x) below 0.5
    (plus the rounding of 1 − x and of πx).  Absolute error ∝ these magnitudes: lgamma has
    roots at 1 and 2 (special-cased exactly) and the reflection cancels."""
    x = np.asarray(x, np.float64)
    sp = _sps()
    with np.errstate(all="ignore"):
        z = np.where(x < 0.5, 1.0 - x, x)
        zz = z - 1.0
        w = zz + 7.5
        terms = [np.full_like(zz, _LANCZOS[0])] + [_LANCZOS[i] / (zz + i) for i in range(1, 9)]
        big_a = sum(terms)
        sum_abs = sum(np.abs(t) for t in terms)
        pos_s = (1.0 + _a(zz + 0.5) * (np.abs(np.log(w)) + 1.0) + _a(w) + _a(np.log(_a(big_a)))
                 + sum_abs / _a(big_a))
        pos = sp.gammaln(z)
        refl = (pos_s + math.log(math.pi) + _a(np.log(_a(np.sin(math.pi * x)))) + _a(pos)
                + _reflect_arg_scale(x) + _a(sp.psi(z) * z))
        return np.where(x < 0.5, refl, pos_s) + _a(r)


def _shift10(y, order):
    """(y shifted up to ≥ 10 as the kernel does, Σ of the recurrence terms 1/y^(order+1))."""
    acc = np.zeros_like(y)
    z = y.copy()
    for _ in range(10):
        small = z < 10.0
        acc = acc + np.where(small, 1.0 / (z if order == 0 else z * z), 0.0)
        z = np.where(small, z + 1.0, z)
    return z, acc


def _digamma_scale(x, r):
    """digamma: the asymptotic series at z ≥ 10 minus the recurrence sum (they cancel near the
    root 1.4616) and, below 0.5, the reflection term π/tan(πx) (with πx's rounding: π²|x|/sin²)
    and 1 − x's rounding (trigamma(1 − x)·|1 − x|)."""
    x = np.asarray(x, np.float64)
    sp = _sps()
    with np.errstate(all="ignore"):
        y = np.where(x < 0.5, 1.0 - x, x)
        z, acc = _shift10(y, 0)
        s = _a(np.log(z)) + 0.5 / z + acc
        sn = np.sin(math.pi * x)
        refl = (s + math.pi / _a(np.tan(math.pi * x)) + math.pi ** 2 * _a(x) / (sn * sn)
                + _a(sp.polygamma(1, y) * y))
        return np.where(x < 0.5, refl, s) + _a(r)


def _trigamma_scale(x, r):
    """trigamma: a sum of positive terms for x ≥ 0.5; below, π²/sin²(πx) − trigamma(1 − x)
    (πx's rounding amplified by 2|πx·cot πx|, 1 − x's by |ψ''(1 − x)|·|1 − x|)."""
    x = np.asarray(x, np.float64)
    sp = _sps()
    with np.errstate(all="ignore"):
        y = np.where(x < 0.5, 1.0 - x, x)
        sn = np.sin(math.pi * x)
        refl = (math.pi ** 2 / (sn * sn) * (1.0 + 2.0 * _reflect_arg_scale(x))
                + _a(sp.polygamma(1, y)) + _a(sp.polygamma(2, y) * y))
        return np.where(x < 0.5, refl, 0.0) + _a(r)


#: S of the real ops whose kernel formula is not relatively accurate: f(xs, params, ref, dt)
SCALE = {
    "gelu": lambda xs, p, r, dt: _gelu_scale(xs[0]),
    "geglu": lambda xs, p, r, dt: _gelu_scale(xs[0]) * _a(xs[1]),
    "gelu_tanh": lambda xs, p, r, dt: _gelu_tanh_scale(xs[0]),
    "erfinv": lambda xs, p, r, dt: _erfinv_scale(xs[0], r),
    "lgamma": lambda xs, p, r, dt: _lgamma_scale(xs[0], r),
    "digamma": lambda xs, p, r, dt: _digamma_scale(xs[0], r),
    "trigamma": lambda xs, p, r, dt: _trigamma_scale(xs[0], r),
    # log(x / (1 − x)) near x = ½: the ratio's relative error becomes an absolute one
    "logit": lambda xs, p, r, dt: _a(r) + 1.0,
    # m + log1p(e^−d), m = max(a, b): cancels for m ≈ −log1p(e^−d); d's rounding adds ≤ 0.3
    "logaddexp": lambda xs, p, r, dt: np.maximum(_a(xs[0]), _a(xs[1])) + 1.0,
    "tanhshrink": lambda xs, p, r, dt: _a(xs[0]) + _a(np.tanh(xs[0])),
    "affine": lambda xs, p, r, dt: _a(p[0] * np.asarray(xs[0], np.float64)) + abs(p[1]),
    "lerp": lambda xs, p, r, dt: (_a(xs[0]) + _a(xs[1]) + (_a(xs[2]) + _a(1.0 - np.asarray(
        xs[2], np.float64))) * _a(np.asarray(xs[1], np.float64) - xs[0])),
    "addcmul": lambda xs, p, r, dt: _a(xs[0]) + abs(p[0]) * _a(xs[1]) * _a(xs[2]),
    "addcdiv": lambda xs, p, r, dt: _a(xs[0]) + abs(p[0]) * _a(xs[1]) / _a(xs[2]),
}


def _erfc_ref_scale(x, r):
    """S_ref of scipy's (Cephes) erfc: for x ≥ 1 it is exp(−x²)·P(x)/Q(x) with −x² rounded
    first — exp turns that into a relative error x²·eps/2 — so |erfc x|·(1 + x²); on [0, 1) it
    is 1 − erf(x): an absolute error ∝ 1 + erf x, large relative to the result near x = 1; for
    x < 0, 2 − erfc(−x) (relative to |ref| ∈ (1, 2))."""
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        return _a(r) * (1.0 + x * x) + np.where((x >= 0.0) & (x < 1.0), 1.0 + _erf(x), 0.0)


#: S_ref of the references that do not evaluate the kernel's formula (:data:`REF_TERMS`);
#: f(xs, params, ref, dt)
REF_SCALE = {
    # :func:`fma`'s compensated a·b + c: eps/2·|ref| + eps²·(|a·b| + |c|) (R_T = 1)
    "fma": lambda xs, p, r, dt: _a(r) + _eps("float64") * (
        _a(np.asarray(xs[0], np.float64) * xs[1]) + _a(xs[2])),
    "erfc": lambda xs, p, r, dt: _erfc_ref_scale(xs[0], r),
}


def _log1p_terms(z):
    """Absolute error scale of the kernel's log1p(z) real part: ½·log1p(x(2 + x) + y²) rounds
    x(2 + x) + y² with absolute error ∝ |x(2 + x)| + y², divided by |1 + z|² (log|1 + z| in
    the other branch: ∝ 1)."""
    x, y = z.real, z.imag
    with np.errstate(all="ignore"):
        return 1.0 + (np.abs(x * (2.0 + x)) + y * y) / np.abs(1.0 + z) ** 2


def _asinh_terms(w):
    """Absolute error scale of the kernel's asinh(w) = log1p(w + w²/(1 + s)), s = √(1 + w²),
    evaluated for Re w ≥ 0 (odd symmetry): 1 + w² cancels near the branch points ±i and
    s's error (∝ (1 + |w|²)/|s|) reaches the log through w²/(1 + s); 1 + u = w + s."""
    w = np.where(w.real < 0, -w, w)
    with np.errstate(all="ignore"):
        s = np.sqrt(1.0 + w * w)
        aw2 = np.abs(w) ** 2
        num = aw2 * (1.0 + aw2) / (np.abs(s) * np.abs(1.0 + s) ** 2) + aw2 / np.abs(1.0 + s) \
            + np.abs(w)
        return 1.0 + num / np.abs(w + s)


def _atanh_terms(z):
    """(log1p(z) − log1p(−z))/2: the two logs cancel for small z; each carries its own error."""
    with np.errstate(all="ignore"):
        return 1.0 + 0.5 * (np.abs(np.log1p(z)) + np.abs(np.log1p(-z)) + _log1p_terms(z)
                            + _log1p_terms(-z))


def _tanh_terms(x, y, r):
    """(sinh 2x + i sin 2y)/(cosh 2x + cos 2y): the denominator cancels near the poles."""
    with np.errstate(all="ignore"):
        c = np.cosh(np.minimum(np.abs(2.0 * x), 700.0))
        return np.abs(r) * (c + 1.0) / np.abs(c + np.cos(2.0 * y))


def _cz(xs, k=0):
    return np.asarray(xs[k], np.complex128)


#: S of complex ops (default: |ref|, the modulus); f(xs, params, ref, dt)
CSCALE = {
    "log": lambda xs, p, r, dt: np.abs(r) + 1.0,
    "log2": lambda xs, p, r, dt: np.abs(r) + 1.0,
    "log10": lambda xs, p, r, dt: np.abs(r) + 1.0,
    # exp(b·log a): the exponent's absolute error is a relative error of the result
    "pow": lambda xs, p, r, dt: np.abs(r) * (1.0 + np.abs(_cz(xs, 1) * np.log(_cz(xs, 0)))),
    "tanh": lambda xs, p, r, dt: _tanh_terms(_cz(xs).real, _cz(xs).imag, r),
    "tan": lambda xs, p, r, dt: _tanh_terms(-_cz(xs).imag, _cz(xs).real, r),
    # expm1(x)·cos y − 2 sin²(y/2) cancels near the zeros of e^z − 1
    "expm1": lambda xs, p, r, dt: (np.abs(r) + np.abs(np.expm1(_cz(xs).real))
                                   + 2.0 * np.sin(_cz(xs).imag / 2.0) ** 2),
    "log1p": lambda xs, p, r, dt: np.abs(r) + _log1p_terms(_cz(xs)),
    "asinh": lambda xs, p, r, dt: np.abs(r) + _asinh_terms(_cz(xs)),
    "asin": lambda xs, p, r, dt: np.abs(r) + _asinh_terms(1j * _cz(xs)),
    # π/2 − asin(z): cancels where asin(z) ≈ π/2 (acosh is built from acos)
    "acos": lambda xs, p, r, dt: np.abs(r) + _asinh_terms(1j * _cz(xs)) + math.pi / 2,
    "acosh": lambda xs, p, r, dt: np.abs(r) + _asinh_terms(1j * _cz(xs)) + math.pi / 2,
    "atanh": lambda xs, p, r, dt: np.abs(r) + _atanh_terms(_cz(xs)),
    "atan": lambda xs, p, r, dt: np.abs(r) + _atanh_terms(1j * _cz(xs)),
}


def tolerance(op: str, dt: str, ins=None, params=(), ref=None):
    """The comparison of forward op ``op`` with value dtype ``dt``: ``0.0`` for exact ones
    (integer / bool outputs, the exact float ops, fp8 copies), else a :class:`Bound` from the
    OUTPUT dtype and the error model above.  ``ins`` (host inputs as passed to
    :func:`reference`), ``params`` and ``ref`` are needed for ops with an S or S_ref
    (:data:`SCALE`, :data:`REF_SCALE`, complex results)."""
    from baracuda_dsl.ops.elementwise.specs.elementwise import OPS

    odt = OPS[op].out_dtypes(dt)[0]
    k = kind(dt)
    if kind(odt) in "biu":
        return 0.0
    if op in EXACT and (k == "f" or op in ("conj", "real", "imag", "negative", "copy", "where")):
        return 0.0
    if COMPONENT.get(dt, dt) in FP8:
        return 0.0
    ct = compute_dt(dt)
    if k == "c":
        terms, ref_terms = CTERMS.get(op, 12), REF_CTERMS.get(op, 4)
        fn = None if op in ("add", "subtract") or kind(odt) != "c" else CSCALE.get(
            op, lambda xs, p, r, d: np.abs(r))
        ref_fn = fn
    else:
        terms, fn = TERMS.get(op, 4), SCALE.get(op)
        ref_terms, ref_fn = REF_TERMS.get(op, 2), REF_SCALE.get(op, fn)
    if fn is None and ref_fn is None:
        return make_bound(odt, ct, terms, ref_terms=ref_terms)
    if ref is None or (ins is None and (k != "c" or op in CSCALE)):
        raise ValueError(f"tolerance({op!r}, {dt!r}): this bound needs the inputs and the "
                         "reference")
    xs = None if ins is None else [np.asarray(v) for v in ins]
    p, r = to_dt_params(params, dt), np.asarray(ref)

    def scale_of(f):
        return None if f is None else np.broadcast_to(f(xs, p, r, dt), r.shape)

    with np.errstate(all="ignore"):
        s, s_ref = scale_of(fn), scale_of(ref_fn)
    return make_bound(odt, ct, terms, ref, s, ref_terms, s_ref)


# ------------------------------------------------------------------------------- comparisons
def relerr(got, ref) -> float:
    """‖got − ref‖ / ‖ref‖ in float64 / complex128 (absolute when ref is 0): for messages."""
    got = np.asarray(got)
    ref = np.asarray(ref)
    den = float(np.linalg.norm(ref.reshape(-1)))
    num = float(np.linalg.norm((got - ref).reshape(-1)))
    return num / den if den > 0 else num


def _check_special(got, ref, what):
    """NaN positions equal, infinities equal (value and sign)."""
    gn, rn = np.isnan(got), np.isnan(ref)
    bad = np.nonzero(gn != rn)[0] if got.ndim == 1 else np.argwhere(gn != rn)
    assert not len(bad), (f"{what}: NaN mismatch at {bad[:5].tolist()} got "
                          f"{got[gn != rn][:5]} expected {ref[gn != rn][:5]}")
    gi, ri = np.isinf(got), np.isinf(ref)
    assert np.array_equal(gi, ri) and np.array_equal(got[gi], ref[ri]), (
        f"{what}: inf mismatch got {got[gi != ri][:5]} expected {ref[gi != ri][:5]}")


def _check_real(got, ref, tol, what, zero_sign=True):
    got = np.asarray(got, np.float64)
    ref = np.asarray(ref, np.float64)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    _check_special(got, ref, what)
    fin = np.isfinite(ref)
    if not isinstance(tol, Bound):
        assert tol == 0, f"{what}: a tolerance is a Bound (tolerance()), or 0 for exact"
        diff = fin & (got != ref)
        assert not diff.any(), (f"{what}: {int(diff.sum())} values differ, e.g. got "
                                f"{got[diff][:5]} expected {ref[diff][:5]}")
        if zero_sign:
            z = fin & (ref == 0) & (np.signbit(got) != np.signbit(ref))
            assert not z.any(), f"{what}: sign of zero differs at {int(z.sum())} places"
        return
    assert_close(got, ref, tol.rtol, tol.atol, scale=tol.scale, what=what)


def check(got, ref, out_dt: str, tol, what: str = "", zero_sign: bool = True) -> None:
    """Assert host result ``got`` (from :func:`to_host`) matches reference ``ref`` for output
    dtype ``out_dt``: bool / integers exactly (bool as raw bytes 0 / 1, so unwritten poison
    shows); floats with NaN / inf positions equal and, over the finite rest, every element
    within the :class:`Bound` ``tol`` (from :func:`tolerance`; ``0``: bit-exact incl. the sign
    of zeros); complex per component (NaN / inf / exact) and against the bound."""
    k = kind(out_dt)
    ref = np.asarray(ref)
    got = np.asarray(got)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    if k == "b":
        exp = ref.astype(bool).astype(np.uint8)
        diff = got.astype(np.uint8) != exp
        assert not diff.any(), (f"{what}: {int(diff.sum())} bool bytes differ, e.g. got "
                                f"{got[diff][:8]} expected {exp[diff][:8]}")
        return
    if k in "iu":
        exp = ref.astype(NP_DTYPE[out_dt])
        diff = got != exp
        assert not diff.any(), (f"{what}: {int(diff.sum())} integers differ, e.g. got "
                                f"{got[diff][:8]} expected {exp[diff][:8]}")
        return
    if k == "c":
        ref = ref.astype(np.complex128)
        got = got.astype(np.complex128)
        exact = not isinstance(tol, Bound)
        for part in ("real", "imag"):
            gp, rp = getattr(got, part).copy(), getattr(ref, part).copy()
            if exact:
                _check_real(gp, rp, 0.0, f"{what} ({part})", zero_sign)
            else:
                _check_special(gp, rp, f"{what} ({part})")
        if not exact:
            assert_close(got, ref, tol.rtol, tol.atol, scale=tol.scale, what=what)
        return
    _check_real(got, ref, tol, what, zero_sign)


# ------------------------------------------------------------------- host <-> device (torch)
def torch_dtype(dt: str):
    torch = _torch()
    return getattr(torch, TORCH_NAME[dt])


def to_device(host, dt: str):
    """A CUDA torch tensor of dtype ``dt`` holding the host array (conversions happen on the
    host / CPU, exactly: the values are representable)."""
    torch = _torch()
    host = np.array(host, order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
    k = kind(dt)
    if k == "f" and dt not in ("f16", "f32", "f64"):
        t = torch.from_numpy(host.astype(np.float32)).to(torch_dtype(dt))
    elif k in "fc":
        t = torch.from_numpy(host.astype(NP_DTYPE[dt]))
    elif k == "b":
        t = torch.from_numpy(host.astype(np.bool_))
    else:
        t = torch.from_numpy(host.astype(NP_DTYPE[dt]))
    return t.cuda()


def to_host(t, dt: str) -> np.ndarray:
    """The host representation of a CUDA tensor of dtype ``dt`` (bool as raw bytes)."""
    torch = _torch()
    k = kind(dt)
    t = t.detach()
    if dt in ("u16", "u32", "u64") or dt in FP8:
        # move the raw bits (torch's CUDA kernels for strided copies of these types are thin)
        raw = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[ITEMSIZE[dt]]
        c = t.view(raw).cpu()
        if dt in FP8:
            return c.view(torch_dtype(dt)).to(torch.float64).numpy().copy()
        return c.numpy().copy().view(NP_DTYPE[dt])
    c = t.cpu()
    if k == "b":
        return c.contiguous().view(torch.uint8).numpy().copy()
    if k == "f":
        return c.to(torch.float64).numpy().copy()
    if k == "c":
        return c.to(torch.complex128).numpy().copy()
    return c.numpy().copy()


def poison_host(ref, dt: str, shape) -> np.ndarray:
    """A host array of ``shape`` whose every element differs from ``ref`` (NaN for floats; the
    bitwise complement of the expected bytes for integers and bool)."""
    k = kind(dt)
    if k == "f":
        return np.full(shape, np.nan)
    if k == "c":
        return _cplx(np.full(shape, np.nan), np.full(shape, np.nan))
    npd = NP_DTYPE[dt] if k != "b" else np.uint8
    exp = np.array(np.broadcast_to(np.asarray(ref).astype(npd), tuple(shape)), order="C")
    return np.invert(exp)


def poisoned(ref, dt: str, shape):
    """A CUDA tensor of ``shape`` / ``dt`` poisoned as :func:`poison_host` says."""
    torch = _torch()
    h = poison_host(ref, dt, shape)
    if kind(dt) == "b":
        return torch.from_numpy(np.array(h, order="C")).cuda().view(torch.bool)
    return to_device(h, dt)


def device_view(host, dt: str, layout: str = "dense"):
    """A CUDA view of dtype ``dt`` whose values are ``host``, with ``layout``:
    ``dense``; ``T`` (a transposed view of the last two dims); ``step2`` (every other element of
    the first dim of a twice larger buffer); ``offset1`` (a dense view starting one element into
    its buffer: misaligned for vector loads).  Returns ``(view, base)``."""
    host = np.asarray(host)
    shape = host.shape
    if layout == "dense" or host.size == 0 or host.ndim == 0:
        t = to_device(host, dt)
        return t, t
    if layout == "T":
        base = to_device(np.ascontiguousarray(np.swapaxes(host, -1, -2)), dt)
        return base.transpose(-1, -2), base
    if layout == "step2":
        big = np.concatenate([host, host], axis=0)
        big[0::2], big[1::2] = host, host[::-1]
        base = to_device(big, dt)
        return base[0::2], base
    if layout == "offset1":
        flat = np.concatenate([host.reshape(-1)[:1], host.reshape(-1)])
        base = to_device(flat, dt)
        return base[1:].view(shape), base
    raise ValueError(layout)
