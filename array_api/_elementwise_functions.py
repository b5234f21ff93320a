"""Elementwise functions of the array API standard (2024.12).

Every function validates its operands the way the standard and array-api-strict do, then hands
the work to ``_dispatch.elementwise`` (one GPU kernel per call; the dispatcher broadcasts array
operands, casts them to the computation dtype and converts Python scalars):

* dtype categories per function (``sin`` needs a floating dtype, bitwise ops integer or bool,
  ``maximum``/``atan2``/``floor_divide``/... real-valued, ``<``-style comparisons no complex);
  a dtype outside the category is a ``TypeError``;
* binary functions take one Python scalar (``bool int float complex``, exact types) for either
  operand; the scalar takes the array's dtype where the kinds mix (``int`` with integer and
  floating arrays, ``float`` with floating, ``complex`` with floating — a real array then
  promotes to complex, ``bool`` with bool); anything else is a ``TypeError``, an int outside the
  array's integer range an ``OverflowError``; two scalars are a ``TypeError``;
* result dtypes: the promoted dtype; ``bool`` for comparisons and ``isnan``/``isinf``/
  ``isfinite``/``signbit``; the real component type for ``abs``/``real``/``imag`` of complex;
* valid dtypes the kernels are not wired for (complex ``sin``, ``round``, ... — see
  ``baracuda_dsl.ops.elementwise.specs.elementwise.OPS``) and fp8 inputs raise ``UnsupportedError``
  (a ``NotImplementedError``) naming what is wired.

Functions never return their input: ``positive``, ``real``/``conj`` of real arrays and
``ceil``/``floor``/``trunc``/``round`` of integer arrays return a new array (a device copy).
"""

from __future__ import annotations

import builtins
import math

from baracuda_dsl import dtypes as _d
from baracuda_dsl.dtypes import DType
from baracuda_dsl.errors import UnsupportedError
from baracuda_dsl.ops.elementwise.elementwise import broadcast_shapes
from baracuda_dsl.ops.elementwise.specs.elementwise import OPS

from . import _dispatch
from . import _promotion
from ._array_object import Array
from ._dtypes import (CATEGORIES, COMPLEX_FLOATING_DTYPES, FP8_DTYPES, INTEGER_DTYPES,
                      REAL_FLOATING_DTYPES)
from ._records import recorded

# --------------------------------------------------------------------------- scalars
_REAL_OF = {_d.complex64: _d.float32, _d.complex128: _d.float64}
_PY_SCALARS = (builtins.bool, builtins.int, builtins.float, builtins.complex)


def is_scalar(x) -> builtins.bool:
    """A Python scalar operand: exactly ``bool int float complex`` (no numpy scalars)."""
    return type(x) in _PY_SCALARS


# --------------------------------------------------------------------------- validation
def check_array(x, name: str, what: str = "x") -> Array:
    if not isinstance(x, Array):
        raise TypeError(f"{name}: {what} must be an array_api Array, got {type(x).__name__}")
    return x


def check_dtype(dt: DType, category: str, name: str) -> None:
    """UnsupportedError for fp8 (storage-only here), TypeError outside ``category``."""
    if dt in FP8_DTYPES:
        raise UnsupportedError(f"{name}: {dt.name} arrays are storage-only in this namespace "
                               f"(astype them to float16/bfloat16/float32 first)")
    if dt not in CATEGORIES[category]:
        raise TypeError(f"{name}: only {category} dtypes are allowed, got {dt.name}")


def check_wired(op: str, dt: DType, name: str) -> None:
    """UnsupportedError when the kernel of ``op`` is not wired for value dtype ``dt``."""
    spec = OPS.get(op)
    if spec is None:
        raise UnsupportedError(f"{name}: elementwise op {op!r} is not wired")
    if dt.short not in spec.dtypes:
        wired = ", ".join(_d.dtype(s).name for s in spec.dtypes)
        raise UnsupportedError(f"{name}: {dt.name} is not wired; wired dtypes: {wired}")


def convert_scalar(value, dt: DType):
    """A Python scalar as the Python type of ``dt``'s kind (bool / int / float / complex);
    OverflowError when an int does not fit an integer ``dt`` (or a float at all)."""
    _promotion.check_scalar_range(value, dt)
    if dt.kind == "b":
        return builtins.bool(value)
    if dt.kind in "iu":
        return builtins.int(value)
    if dt.kind == "f":
        return builtins.float(value)  # OverflowError for ints beyond float range
    if isinstance(value, builtins.int):
        builtins.float(value)
    return builtins.complex(value)


def operands(name: str, args, category: str):
    """Validate the operands of an n-ary function (Arrays or Python scalars, at least one
    Array) against ``category`` and promote them.  Returns ``(operands, dtype)``: scalars
    converted to the promoted dtype's Python type, Arrays unchanged."""
    arrays = [a for a in args if isinstance(a, Array)]
    for k, a in enumerate(args):
        if not isinstance(a, Array) and not is_scalar(a):
            raise TypeError(f"{name}: operand {k} must be an array_api Array or a Python scalar "
                            f"(bool, int, float, complex), got {type(a).__name__}")
    if not arrays:
        raise TypeError(f"{name}: at least one operand must be an array_api Array (got only "
                        f"Python scalars)")
    for a in arrays:
        check_dtype(a.dtype, category, name)
    dt = _promotion.result_type(*args)
    if dt not in CATEGORIES[category]:
        raise TypeError(f"{name}: the operands promote to {dt.name}, which is not a {category} "
                        f"dtype")
    return [convert_scalar(a, dt) if is_scalar(a) else a for a in args], dt


def _shape_of(x):
    return x.shape if isinstance(x, Array) else ()


def run(op: str, name: str, ops, dt: DType, out_dt: DType, params=(), out=None) -> Array:
    check_wired(op, dt, name)
    return _dispatch.elementwise(op, list(ops), dt, out_dt, params=tuple(params), out=out)


def copy(x: Array) -> Array:
    """A new dense array equal to ``x`` (same dtype)."""
    return _dispatch.elementwise("copy", [x], x.dtype, x.dtype)


# --------------------------------------------------------------------------- unary / binary
_OUT_RULES = {"same": lambda dt: dt, "bool": lambda dt: _d.bool_,
              "real": lambda dt: _REAL_OF.get(dt, dt)}


@recorded
def unary(op: str, x, category: str, out: str = "same", *, name=None) -> Array:
    name = name or op
    check_array(x, name)
    check_dtype(x.dtype, category, name)
    return run(op, name, [x], x.dtype, _OUT_RULES[out](x.dtype))


_SHIFTS = ("bitwise_left_shift", "bitwise_right_shift")


#: binary functions: name → (dtype category, output rule)
BINARY = {
    "add": ("numeric", "same"),
    "atan2": ("real floating-point", "same"),
    "bitwise_and": ("integer or boolean", "same"),
    "bitwise_left_shift": ("integer", "same"),
    "bitwise_or": ("integer or boolean", "same"),
    "bitwise_right_shift": ("integer", "same"),
    "bitwise_xor": ("integer or boolean", "same"),
    "copysign": ("real floating-point", "same"),
    "divide": ("floating-point", "same"),
    "equal": ("all", "bool"),
    "not_equal": ("all", "bool"),
    "floor_divide": ("real numeric", "same"),
    "greater": ("real numeric", "bool"),
    "greater_equal": ("real numeric", "bool"),
    "less": ("real numeric", "bool"),
    "less_equal": ("real numeric", "bool"),
    "hypot": ("real floating-point", "same"),
    "logaddexp": ("real floating-point", "same"),
    "logical_and": ("boolean", "same"),
    "logical_or": ("boolean", "same"),
    "logical_xor": ("boolean", "same"),
    "maximum": ("real numeric", "same"),
    "minimum": ("real numeric", "same"),
    "multiply": ("numeric", "same"),
    "nextafter": ("real floating-point", "same"),
    "pow": ("numeric", "same"),
    "remainder": ("real numeric", "same"),
    "subtract": ("numeric", "same"),
}


@recorded
def binary(op: str, x1, x2, *, inplace=False) -> Array:
    """``op(x1, x2)`` (category and output rule from :data:`BINARY`); with ``inplace=True`` the
    result is written into ``x1`` (an Array): the promoted dtype must be x1's (TypeError) and the
    broadcast shape x1's shape (ValueError)."""
    category, out = BINARY[op]
    (a, b), dt = operands(op, (x1, x2), category)
    if dt.kind in "iu" and is_scalar(b) and b < 0:
        if op in _SHIFTS:
            raise ValueError(f"{op}: the shift amount must be >= 0, got {b}")
        if op == "pow" and isinstance(a, Array):
            raise ValueError("pow: integers to negative integer powers are not allowed")
    dst = None
    if inplace:
        if not isinstance(x1, Array):
            raise TypeError(f"in-place {op}: the target must be an array_api Array")
        if dt != x1.dtype:
            raise TypeError(f"in-place {op}: the result dtype {dt.name} differs from the "
                            f"target's {x1.dtype.name}")
        shape = broadcast_shapes(x1.shape, _shape_of(x2))
        if shape != x1.shape:
            raise ValueError(f"in-place {op}: the broadcast shape {shape} differs from the "
                             f"target's shape {x1.shape}")
        dst = x1
    return run(op, op, [a, b], dt, _OUT_RULES[out](dt), out=dst)


# --------------------------------------------------------------------------- unary functions
def abs(x, /) -> Array:  # noqa: A001
    """|x|; numeric dtypes; complex → its real component type (hypot of the parts)."""
    return unary("abs", x, "numeric", "real")


def acos(x, /) -> Array:
    """Inverse cosine; floating dtypes."""
    return unary("acos", x, "floating-point")


def acosh(x, /) -> Array:
    """Inverse hyperbolic cosine; floating dtypes."""
    return unary("acosh", x, "floating-point")


def asin(x, /) -> Array:
    """Inverse sine; floating dtypes."""
    return unary("asin", x, "floating-point")


def asinh(x, /) -> Array:
    """Inverse hyperbolic sine; floating dtypes."""
    return unary("asinh", x, "floating-point")


def atan(x, /) -> Array:
    """Inverse tangent; floating dtypes."""
    return unary("atan", x, "floating-point")


def atanh(x, /) -> Array:
    """Inverse hyperbolic tangent; floating dtypes."""
    return unary("atanh", x, "floating-point")


def bitwise_invert(x, /) -> Array:
    """~x (two's complement; logical not for bool); integer or bool dtypes."""
    return unary("bitwise_invert", x, "integer or boolean")


def _int_identity(op: str, x) -> Array:
    check_array(x, op)
    check_dtype(x.dtype, "numeric" if op == "round" else "real numeric", op)
    if x.dtype in INTEGER_DTYPES:
        return copy(x)  # integers are already integral: a new array with the same values
    return run(op, op, [x], x.dtype, x.dtype)


def ceil(x, /) -> Array:
    """Smallest integral value ≥ x; real numeric dtypes (integers: a copy)."""
    return _int_identity("ceil", x)


def floor(x, /) -> Array:
    """Largest integral value ≤ x; real numeric dtypes (integers: a copy)."""
    return _int_identity("floor", x)


def trunc(x, /) -> Array:
    """x rounded toward zero; real numeric dtypes (integers: a copy)."""
    return _int_identity("trunc", x)


def round(x, /) -> Array:  # noqa: A001
    """x rounded to the nearest integral value, halves to even; numeric dtypes (integers: a
    copy; complex is not wired)."""
    return _int_identity("round", x)


def conj(x, /) -> Array:
    """Complex conjugate; numeric dtypes (real dtypes: a copy)."""
    check_array(x, "conj")
    check_dtype(x.dtype, "numeric", "conj")
    if x.dtype in COMPLEX_FLOATING_DTYPES:
        return run("conj", "conj", [x], x.dtype, x.dtype)
    return copy(x)


def real(x, /) -> Array:
    """Real component; numeric dtypes (2024.12); complex → its real component type, real
    dtypes: a copy."""
    check_array(x, "real")
    check_dtype(x.dtype, "numeric", "real")
    if x.dtype in COMPLEX_FLOATING_DTYPES:
        return run("real", "real", [x], x.dtype, _REAL_OF[x.dtype])
    return copy(x)


def imag(x, /) -> Array:
    """Imaginary component; complex dtypes → the real component type."""
    return unary("imag", x, "complex floating-point", "real")


def cos(x, /) -> Array:
    """Cosine; floating dtypes."""
    return unary("cos", x, "floating-point")


def cosh(x, /) -> Array:
    """Hyperbolic cosine; floating dtypes."""
    return unary("cosh", x, "floating-point")


def exp(x, /) -> Array:
    """eˣ; floating dtypes."""
    return unary("exp", x, "floating-point")


def expm1(x, /) -> Array:
    """eˣ − 1 (accurate near 0); floating dtypes."""
    return unary("expm1", x, "floating-point")


def isfinite(x, /) -> Array:
    """True where x is finite (complex: both parts); numeric dtypes → bool."""
    return unary("isfinite", x, "numeric", "bool")


def isinf(x, /) -> Array:
    """True where x is ±inf (complex: either part); numeric dtypes → bool."""
    return unary("isinf", x, "numeric", "bool")


def isnan(x, /) -> Array:
    """True where x is NaN (complex: either part); numeric dtypes → bool."""
    return unary("isnan", x, "numeric", "bool")


def log(x, /) -> Array:
    """Natural logarithm; floating dtypes."""
    return unary("log", x, "floating-point")


def log1p(x, /) -> Array:
    """log(1 + x) (accurate near 0); floating dtypes."""
    return unary("log1p", x, "floating-point")


def log2(x, /) -> Array:
    """Base-2 logarithm; floating dtypes."""
    return unary("log2", x, "floating-point")


def log10(x, /) -> Array:
    """Base-10 logarithm; floating dtypes."""
    return unary("log10", x, "floating-point")


def logical_not(x, /) -> Array:
    """not x; bool dtype."""
    return unary("logical_not", x, "boolean")


def negative(x, /) -> Array:
    """−x (integers wrap); numeric dtypes."""
    return unary("negative", x, "numeric")


def positive(x, /) -> Array:
    """+x: a new array equal to x; numeric dtypes."""
    check_array(x, "positive")
    check_dtype(x.dtype, "numeric", "positive")
    return copy(x)


def reciprocal(x, /) -> Array:
    """1 / x; floating dtypes."""
    return unary("reciprocal", x, "floating-point")


def sign(x, /) -> Array:
    """−1, 0 or 1 (NaN stays NaN); complex: x / |x| (0 at 0); numeric dtypes."""
    return unary("sign", x, "numeric")


def signbit(x, /) -> Array:
    """True where the sign bit is set (−0.0 and negative NaNs included); real floating → bool."""
    return unary("signbit", x, "real floating-point", "bool")


def sin(x, /) -> Array:
    """Sine; floating dtypes."""
    return unary("sin", x, "floating-point")


def sinh(x, /) -> Array:
    """Hyperbolic sine; floating dtypes."""
    return unary("sinh", x, "floating-point")


def square(x, /) -> Array:
    """x·x; numeric dtypes."""
    return unary("square", x, "numeric")


def sqrt(x, /) -> Array:
    """Principal square root; floating dtypes."""
    return unary("sqrt", x, "floating-point")


def tan(x, /) -> Array:
    """Tangent; floating dtypes."""
    return unary("tan", x, "floating-point")


def tanh(x, /) -> Array:
    """Hyperbolic tangent; floating dtypes."""
    return unary("tanh", x, "floating-point")


# --------------------------------------------------------------------------- binary functions
def add(x1, x2, /) -> Array:
    """x1 + x2; numeric dtypes; one operand may be a Python scalar."""
    return binary("add", x1, x2)


def atan2(x1, x2, /) -> Array:
    """Angle of the point (x2, x1) in radians; real floating dtypes."""
    return binary("atan2", x1, x2)


def bitwise_and(x1, x2, /) -> Array:
    """x1 & x2; integer or bool dtypes."""
    return binary("bitwise_and", x1, x2)


def bitwise_left_shift(x1, x2, /) -> Array:
    """x1 << x2 (shifts ≥ the bit width give 0); integer dtypes; a negative scalar shift is a
    ValueError (negative array shifts are implementation-defined)."""
    return binary("bitwise_left_shift", x1, x2)


def bitwise_or(x1, x2, /) -> Array:
    """x1 | x2; integer or bool dtypes."""
    return binary("bitwise_or", x1, x2)


def bitwise_right_shift(x1, x2, /) -> Array:
    """x1 >> x2 (arithmetic for signed types); integer dtypes; a negative scalar shift is a
    ValueError."""
    return binary("bitwise_right_shift", x1, x2)


def bitwise_xor(x1, x2, /) -> Array:
    """x1 ^ x2; integer or bool dtypes."""
    return binary("bitwise_xor", x1, x2)


def copysign(x1, x2, /) -> Array:
    """|x1| with the sign of x2; real floating dtypes."""
    return binary("copysign", x1, x2)


def divide(x1, x2, /) -> Array:
    """x1 / x2 (true division); floating dtypes (an int scalar may join a floating array)."""
    return binary("divide", x1, x2)


def equal(x1, x2, /) -> Array:
    """x1 == x2 → bool; every dtype (the operands must promote)."""
    return binary("equal", x1, x2)


def not_equal(x1, x2, /) -> Array:
    """x1 != x2 → bool; every dtype (the operands must promote)."""
    return binary("not_equal", x1, x2)


def floor_divide(x1, x2, /) -> Array:
    """⌊x1 / x2⌋ (numpy semantics; integer division by zero gives 0); real numeric dtypes."""
    return binary("floor_divide", x1, x2)


def greater(x1, x2, /) -> Array:
    """x1 > x2 → bool; real numeric dtypes."""
    return binary("greater", x1, x2)


def greater_equal(x1, x2, /) -> Array:
    """x1 >= x2 → bool; real numeric dtypes."""
    return binary("greater_equal", x1, x2)


def less(x1, x2, /) -> Array:
    """x1 < x2 → bool; real numeric dtypes."""
    return binary("less", x1, x2)


def less_equal(x1, x2, /) -> Array:
    """x1 <= x2 → bool; real numeric dtypes."""
    return binary("less_equal", x1, x2)


def hypot(x1, x2, /) -> Array:
    """√(x1² + x2²) without undue overflow; real floating dtypes."""
    return binary("hypot", x1, x2)


def logaddexp(x1, x2, /) -> Array:
    """log(eˣ¹ + eˣ²); real floating dtypes."""
    return binary("logaddexp", x1, x2)


def logical_and(x1, x2, /) -> Array:
    """x1 and x2; bool dtype."""
    return binary("logical_and", x1, x2)


def logical_or(x1, x2, /) -> Array:
    """x1 or x2; bool dtype."""
    return binary("logical_or", x1, x2)


def logical_xor(x1, x2, /) -> Array:
    """x1 xor x2; bool dtype."""
    return binary("logical_xor", x1, x2)


def maximum(x1, x2, /) -> Array:
    """Elementwise maximum (NaN propagates); real numeric dtypes."""
    return binary("maximum", x1, x2)


def minimum(x1, x2, /) -> Array:
    """Elementwise minimum (NaN propagates); real numeric dtypes."""
    return binary("minimum", x1, x2)


def multiply(x1, x2, /) -> Array:
    """x1 · x2; numeric dtypes."""
    return binary("multiply", x1, x2)


def nextafter(x1, x2, /) -> Array:
    """The next representable value after x1 toward x2; real floating dtypes."""
    return binary("nextafter", x1, x2)


def pow(x1, x2, /) -> Array:  # noqa: A001
    """x1 ** x2; numeric dtypes.  Integer arrays with a negative Python int exponent are a
    ValueError (as array-api-strict); negative exponents inside integer arrays give what the
    kernel's integer power gives (the standard leaves them unspecified)."""
    return binary("pow", x1, x2)


def remainder(x1, x2, /) -> Array:
    """x1 − floor_divide(x1, x2)·x2 (the sign of x2, as numpy); real numeric dtypes."""
    return binary("remainder", x1, x2)


def subtract(x1, x2, /) -> Array:
    """x1 − x2; numeric dtypes."""
    return binary("subtract", x1, x2)


# --------------------------------------------------------------------------- clip
def _bound(x: Array, v, which: str):
    """One clip bound as a kernel operand: an Array (validated), or a Python scalar in x's
    dtype (ints saturated to x's integer range; None → the dtype's extreme)."""
    dt = x.dtype
    if isinstance(v, Array):
        if dt in INTEGER_DTYPES and v.dtype in REAL_FLOATING_DTYPES:
            raise TypeError(f"clip: {which} must be integral when x is integral")
        if dt in REAL_FLOATING_DTYPES and v.dtype in INTEGER_DTYPES:
            raise TypeError(f"clip: {which} must be floating-point when x is floating-point")
        return v
    if v is not None and type(v) not in (builtins.int, builtins.float):
        raise TypeError(f"clip: {which} must be None, int, float or an Array; got "
                        f"{type(v).__name__}")
    if dt in INTEGER_DTYPES:
        if isinstance(v, builtins.float):
            raise TypeError(f"clip: {which} must be integral when x is integral")
        lo, hi = _int_range(dt)
        if v is None:
            return lo if which == "min" else hi
        return builtins.min(builtins.max(v, lo), hi)
    if v is None:
        return -math.inf if which == "min" else math.inf
    return builtins.float(v)


def _int_range(dt: DType):
    bits = dt.itemsize * 8
    if dt.kind == "u":
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


@recorded
def clip(x, /, min=None, max=None) -> Array:  # noqa: A002
    """x clamped to [min, max] (2024.12); real numeric dtypes.  ``min``/``max``: None (no bound),
    a Python int/float, or an Array (broadcast with x; cast to x's dtype).  The result has x's
    dtype and the broadcast shape; both None → a copy of x.  Kinds must match (integer x takes
    integral bounds, floating x no integer Array bounds: TypeError).  Python int bounds outside
    x's integer range saturate to it.  min > max is implementation-defined: for two scalars a
    ValueError (as array-api-strict), for arrays the kernel's min(max(x, min), max) gives max."""
    check_array(x, "clip")
    check_dtype(x.dtype, "real numeric", "clip")
    for which, v in (("min", min), ("max", max)):
        if isinstance(v, Array):
            check_dtype(v.dtype, "real numeric", "clip")
    if min is None and max is None:
        return copy(x)
    lo, hi = _bound(x, min, "min"), _bound(x, max, "max")
    if is_scalar(lo) and is_scalar(hi) and lo > hi:
        raise ValueError(f"clip: min ({min}) must be less than or equal to max ({max})")
    return run("clip", "clip", [x, lo, hi], x.dtype, x.dtype)


#: every elementwise function of the 2024.12 standard
__all__ = [
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
    "bitwise_invert", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
    "ceil", "clip", "conj", "copysign", "cos", "cosh", "divide", "equal", "exp", "expm1", "floor",
    "floor_divide", "greater", "greater_equal", "hypot", "imag", "isfinite", "isinf", "isnan",
    "less", "less_equal", "log", "log1p", "log2", "log10", "logaddexp", "logical_and",
    "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative",
    "nextafter", "not_equal", "positive", "pow", "real", "reciprocal", "remainder", "round",
    "sign", "signbit", "sin", "sinh", "square", "sqrt", "subtract", "tan", "tanh", "trunc",
]
