"""Elementwise ML extensions (torch.nn.functional semantics, not in the standard): activations
(``relu gelu silu ...``), gated units (``glu reglu swiglu geglu``), special functions (``erf
erfinv lgamma digamma ...``), ``lerp addcmul addcdiv fma prelu``, one GPU kernel each through
``_dispatch.elementwise``; and ``masked_fill`` (one elementwise ``where``).

Dtypes: real floating only — float16, bfloat16, float32, float64 (half types compute in float32,
float64 in float64); bool / integer / complex inputs are a ``TypeError``, fp8 inputs an
``UnsupportedError`` (``masked_fill``: every dtype).  Operands of the binary / ternary functions
may be Arrays or Python ``int``/``float`` scalars (at least one Array); they promote by the
standard's rules and broadcast.  Float parameters are passed to the kernel as its compute type
(float32 for every dtype but float64).  Results are new dense arrays.
"""

from __future__ import annotations

import builtins

from . import _dtypes as _dt
from . import _elementwise_functions as _ef
from . import _plans
from ._array_object import Array
from ._data_type_functions import astype
from ._manipulation_functions import broadcast_to
from ._searching_functions import where

_CAT = "real floating-point"


def _unary(op: str, x, params=(), name=None) -> Array:
    name = name or op
    _ef.check_array(x, name)
    _ef.check_dtype(x.dtype, _CAT, name)
    return _ef.run(op, name, [x], x.dtype, x.dtype, params=tuple(builtins.float(p)
                                                                  for p in params))


def _nary(op: str, args, params=()) -> Array:
    ops, dt = _ef.operands(op, args, _CAT)
    return _ef.run(op, op, ops, dt, dt, params=tuple(builtins.float(p) for p in params))


# --------------------------------------------------------------------------- activations
def relu(x, /) -> Array:
    """max(x, 0) (NaN propagates)."""
    return _unary("relu", x)


def relu6(x, /) -> Array:
    """min(max(x, 0), 6)."""
    return _unary("relu6", x)


def gelu(x, /, approximate: str = "none") -> Array:
    """``approximate='none'``: x·Φ(x) = x·(1 + erf(x/√2))/2; ``'tanh'``:
    x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))/2 (= :func:`gelu_tanh`)."""
    if approximate == "none":
        return _unary("gelu", x)
    if approximate == "tanh":
        return _unary("gelu_tanh", x, name="gelu")
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def gelu_tanh(x, /) -> Array:
    """x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))/2."""
    return _unary("gelu_tanh", x)


def silu(x, /) -> Array:
    """x·sigmoid(x) (swish)."""
    return _unary("silu", x)


def mish(x, /) -> Array:
    """x·tanh(softplus(x))."""
    return _unary("mish", x)


def sigmoid(x, /) -> Array:
    """1 / (1 + e⁻ˣ)."""
    return _unary("sigmoid", x)


def softplus(x, /, beta: float = 1.0, threshold: float = 20.0) -> Array:
    """log(1 + e^(β·x))/β, and x itself where β·x > threshold."""
    return _unary("softplus", x, (beta, threshold))


def hardswish(x, /) -> Array:
    """x·relu6(x + 3)/6."""
    return _unary("hardswish", x)


def hardsigmoid(x, /) -> Array:
    """relu6(x + 3)/6."""
    return _unary("hardsigmoid", x)


def hardtanh(x, /, min_val: float = -1.0, max_val: float = 1.0) -> Array:
    """min(max(x, min_val), max_val); ValueError when min_val > max_val."""
    if builtins.float(min_val) > builtins.float(max_val):
        raise ValueError(f"hardtanh: min_val ({min_val}) must not exceed max_val ({max_val})")
    return _unary("hardtanh", x, (min_val, max_val))


def elu(x, /, alpha: float = 1.0) -> Array:
    """x where x > 0, else α·(eˣ − 1)."""
    return _unary("elu", x, (alpha,))


def selu(x, /) -> Array:
    """scale·elu(x, α) with α ≈ 1.6732632, scale ≈ 1.0507010 (Klambauer et al.)."""
    return _unary("selu", x)


def leaky_relu(x, /, negative_slope: float = 0.01) -> Array:
    """x where x ≥ 0, else negative_slope·x."""
    return _unary("leaky_relu", x, (negative_slope,))


def logit(x, /, eps=None) -> Array:
    """log(z / (1 − z)) with z = clamp(x, eps, 1 − eps) when ``eps`` is given, else z = x."""
    e = -1.0 if eps is None else builtins.float(eps)
    if eps is not None and not e >= 0.0:
        raise ValueError(f"logit: eps must be None or >= 0, got {eps!r}")
    return _unary("logit", x, (e,))


def erf(x, /) -> Array:
    """Error function 2/√π·∫₀ˣ e^(−t²) dt."""
    return _unary("erf", x)


def erfc(x, /) -> Array:
    """Complementary error function 1 − erf(x) (accurate for large x)."""
    return _unary("erfc", x)


def erfinv(x, /) -> Array:
    """Inverse error function on (−1, 1) (±inf at ±1, NaN outside)."""
    return _unary("erfinv", x)


def lgamma(x, /) -> Array:
    """log|Γ(x)|."""
    return _unary("lgamma", x)


def digamma(x, /) -> Array:
    """ψ(x) = Γ′(x)/Γ(x) (torch: −inf at 0, NaN at negative integers)."""
    return _unary("digamma", x)


def softsign(x, /) -> Array:
    """x / (1 + |x|)."""
    return _unary("softsign", x)


def tanhshrink(x, /) -> Array:
    """x − tanh(x)."""
    return _unary("tanhshrink", x)


def hardshrink(x, /, lambd: float = 0.5) -> Array:
    """x where |x| > λ, else 0."""
    return _unary("hardshrink", x, (lambd,))


def softshrink(x, /, lambd: float = 0.5) -> Array:
    """x − λ where x > λ, x + λ where x < −λ, else 0; ValueError for λ < 0 (as torch)."""
    if not builtins.float(lambd) >= 0.0:
        raise ValueError(f"softshrink: lambd must be >= 0, got {lambd!r}")
    return _unary("softshrink", x, (lambd,))


def threshold(x, /, threshold: float, value: float) -> Array:  # noqa: A002
    """x where x > threshold, else value."""
    return _unary("threshold", x, (threshold, value))


# --------------------------------------------------------------------------- n-ary
def prelu(x, weight, /) -> Array:
    """x where x > 0, else weight·x, with ``weight`` (shape (C,) or (1,), C = x.shape[1]; or a
    Python scalar) applied over channel dim 1 as torch (inputs of rank < 2 have one channel: the
    weight must have one element).  The weight is viewed as (C, 1, …, 1), not copied."""
    _ef.check_array(x, "prelu")
    if x.ndim == 0:
        raise ValueError("prelu: x must have at least one dimension")
    if isinstance(weight, Array):
        if weight.ndim > 1:
            raise ValueError(f"prelu: weight must be 1-D, got shape {weight.shape}")
        n = weight.size
        channels = x.shape[1] if x.ndim >= 2 else 1
        if n == 1:
            weight = weight._view(0, (), ())
        elif n == channels:
            weight = weight._view(0, (n,) + (1,) * (x.ndim - 2),
                                  (weight.strides[0],) + (0,) * (x.ndim - 2))
        else:
            raise ValueError(f"prelu: weight has {n} elements; expected 1 or the number of "
                             f"channels {channels} (x.shape[1])")
    return _nary("prelu", (x, weight))


def lerp(start, end, weight, /) -> Array:
    """start + weight·(end − start) (torch.lerp: computed as end − (end − start)·(1 − weight)
    where weight ≥ 0.5); ``weight`` a Python scalar or an Array."""
    return _nary("lerp", (start, end, weight))


def addcmul(x, tensor1, tensor2, /, *, value: float = 1.0) -> Array:
    """x + value·tensor1·tensor2."""
    return _nary("addcmul", (x, tensor1, tensor2), (value,))


def addcdiv(x, tensor1, tensor2, /, *, value: float = 1.0) -> Array:
    """x + value·tensor1 / tensor2."""
    return _nary("addcdiv", (x, tensor1, tensor2), (value,))


def fma(a, b, c, /) -> Array:
    """a·b + c (one rounding of the product and the sum in the compute type)."""
    return _nary("fma", (a, b, c))


def _gated(op: str, x, axis: int) -> Array:
    _ef.check_array(x, op)
    _ef.check_dtype(x.dtype, _CAT, op)
    if x.ndim == 0:
        raise ValueError(f"{op}: x must have at least one dimension")
    if not isinstance(axis, builtins.int) or isinstance(axis, builtins.bool):
        raise TypeError(f"{op}: axis must be an int, got {type(axis).__name__}")
    if not -x.ndim <= axis < x.ndim:
        raise IndexError(f"{op}: axis {axis} is out of range for a {x.ndim}-D array")
    axis %= x.ndim
    n = x.shape[axis]
    if n % 2:
        raise ValueError(f"{op}: the length of axis {axis} ({n}) must be even")
    h = n // 2
    shape = x.shape[:axis] + (h,) + x.shape[axis + 1:]
    a = x._view(0, shape, x.strides)
    b = x._view(h * x.strides[axis], shape, x.strides)
    return _ef.run(op, op, [a, b], x.dtype, x.dtype)


def glu(x, /, axis: int = -1) -> Array:
    """a·sigmoid(b), where a, b are the first and second halves of x along ``axis`` (even
    length, else ValueError); the result has half that length."""
    return _gated("glu", x, axis)


def reglu(x, /, axis: int = -1) -> Array:
    """relu(a)·b with a, b the halves of x along ``axis`` (see :func:`glu`)."""
    return _gated("reglu", x, axis)


def swiglu(x, /, axis: int = -1) -> Array:
    """silu(a)·b with a, b the halves of x along ``axis`` (see :func:`glu`)."""
    return _gated("swiglu", x, axis)


def geglu(x, /, axis: int = -1) -> Array:
    """gelu(a)·b (erf form) with a, b the halves of x along ``axis`` (see :func:`glu`)."""
    return _gated("geglu", x, axis)


# --------------------------------------------------------------------------- masks
def masked_fill(x: Array, mask: Array, value) -> Array:
    """torch.masked_fill (functional): ``where(mask, value, x)`` with ``mask`` (bool) broadcast
    to x's shape; ``value`` a scalar or 0-D array converted to x's dtype."""
    _plans.check_array(x, "x")
    _plans.check_array(mask, "mask")
    if mask.dtype != _dt.bool:
        raise TypeError(f"masked_fill: mask must be bool, got {mask.dtype.name}")
    if isinstance(value, Array):
        value = astype(value, x.dtype)
    if _ef.is_scalar(value):
        value = _ef.convert_scalar(value, x.dtype)
    return where(broadcast_to(mask, x.shape), value, x)  # value has x's dtype: so has the result


__all__ = [
    "relu", "relu6", "gelu", "gelu_tanh", "silu", "mish", "sigmoid", "softplus", "hardswish",
    "hardsigmoid", "hardtanh", "elu", "selu", "leaky_relu", "logit", "erf", "erfc", "erfinv",
    "lgamma", "digamma", "softsign", "tanhshrink", "hardshrink", "softshrink", "threshold",
    "prelu", "lerp", "addcmul", "addcdiv", "fma", "glu", "reglu", "swiglu", "geglu",
    "masked_fill",
]
