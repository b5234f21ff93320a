"""Type promotion of the array API standard (2024.12), with float16 / bfloat16 extensions.

Rules (the standard's lattice; array-api-strict is the reference behaviour):

* same kind promotes to the wider type: int8 < int16 < int32 < int64, uint8 < … < uint64,
  float32 < float64, complex64 < complex128;
* signed × unsigned: the smallest signed type holding both (uint64 × any signed: no promotion →
  TypeError, as the standard leaves it undefined);
* real float × complex: complex with the float's precision or wider;
* bool only with bool; integer × float and any kind × bool are not promoted (TypeError);
* extensions: float16 and bfloat16 promote to float32 with each other and with float32, to
  float64 with float64, to complex64 / complex128 with complex types.

Python scalars (``bool int float complex``) take the array's dtype where the kinds are
compatible: bool only with bool arrays, int with integer and floating arrays, float with floating
(and complex) arrays, complex with complex (and, as in array-api-strict, real floating arrays
promote to the matching complex type).  Anything else is a TypeError.
"""

from __future__ import annotations

import builtins
from typing import Optional

from baracuda_dsl import dtypes as _d
from baracuda_dsl.dtypes import DType

_SIGNED = (_d.int8, _d.int16, _d.int32, _d.int64)
_UNSIGNED = (_d.uint8, _d.uint16, _d.uint32, _d.uint64)
_FLOAT_RANK = {_d.float16: 0, _d.bfloat16: 0, _d.float32: 1, _d.float64: 2}
_COMPLEX_OF = {1: _d.complex64, 2: _d.complex128}
_COMPLEX_RANK = {_d.complex64: 1, _d.complex128: 2}


def _promote(a: DType, b: DType) -> Optional[DType]:
    if a == b:
        return a
    ka, kb = a.kind, b.kind
    if ka == "b" or kb == "b":
        return None
    if ka in "iu" and kb in "iu":
        if ka == kb:
            return a if a.itemsize >= b.itemsize else b
        s, u = (a, b) if ka == "i" else (b, a)
        if u.itemsize < s.itemsize:
            return s
        need = u.itemsize * 2
        return next((t for t in _SIGNED if t.itemsize >= need), None)
    if ka in "fc" and kb in "fc":
        if a not in _FLOAT_RANK and a not in _COMPLEX_RANK:
            return None  # fp8 and other storage-only types do not promote
        if b not in _FLOAT_RANK and b not in _COMPLEX_RANK:
            return None
        ra = _FLOAT_RANK.get(a, _COMPLEX_RANK.get(a))
        rb = _FLOAT_RANK.get(b, _COMPLEX_RANK.get(b))
        r = max(ra, rb, 1)
        if ka == "c" or kb == "c":
            return _COMPLEX_OF[r]
        return _d.float64 if r == 2 else _d.float32
    return None


def promote_types(a: DType, b: DType) -> DType:
    """The promoted dtype of two dtypes per the standard's table; TypeError where it is
    undefined (mixed kinds, uint64 × signed, bool × number)."""
    r = _promote(a, b)
    if r is None:
        raise TypeError(f"{a.name} and {b.name} cannot be promoted together (the array API "
                        f"standard defines no promotion between them)")
    return r


def is_python_scalar(x) -> builtins.bool:
    return isinstance(x, (builtins.bool, builtins.int, builtins.float, builtins.complex))


def scalar_dtype(value, dt: DType) -> DType:
    """The dtype a Python scalar takes next to an array of dtype ``dt`` (TypeError when the
    kinds do not mix: e.g. a float with an integer array, a number with a bool array)."""
    k = dt.kind
    if isinstance(value, builtins.bool):
        if k == "b":
            return dt
    elif isinstance(value, builtins.int):
        if k in "iufc":
            return dt
    elif isinstance(value, builtins.float):
        if k in "fc":
            return dt
    elif isinstance(value, builtins.complex):
        if k == "c":
            return dt
        if dt in _FLOAT_RANK:
            return _d.complex128 if dt == _d.float64 else _d.complex64
    else:
        raise TypeError(f"expected an array or a Python scalar, got {type(value).__name__}")
    raise TypeError(f"Python {type(value).__name__} scalar {value!r} cannot be combined with a "
                    f"{dt.name} array (the standard leaves mixed-kind scalars undefined)")


def check_scalar_range(value, dt: DType) -> None:
    """OverflowError when a Python int does not fit the integer dtype it is converted to."""
    if dt.kind in "iu" and isinstance(value, builtins.int) and not isinstance(value,
                                                                            builtins.bool):
        bits = dt.itemsize * 8
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dt.kind == "i" else (0,
                                                                                    (1 << bits) - 1)
        if not lo <= value <= hi:
            raise OverflowError(f"Python int {value} is out of bounds for {dt.name}")


def result_type(*arrays_and_dtypes) -> DType:
    """``result_type`` of the standard (2024.12: Python scalars allowed after at least one array
    or dtype)."""
    dts, scalars = [], []
    for a in arrays_and_dtypes:
        if isinstance(a, DType):
            dts.append(a)
        elif is_python_scalar(a):
            scalars.append(a)
        elif hasattr(a, "dtype") and isinstance(a.dtype, DType):
            dts.append(a.dtype)
        else:
            raise TypeError(f"result_type: expected arrays, dtypes or Python scalars, got "
                            f"{type(a).__name__}")
    if not dts:
        raise ValueError("result_type: at least one array or dtype is required")
    r = dts[0]
    for t in dts[1:]:
        r = promote_types(r, t)
    for s in scalars:
        r = promote_types(r, scalar_dtype(s, r))
    return r


def can_cast(from_: DType, to: DType) -> builtins.bool:
    """True when ``from_`` promotes to ``to`` without loss per the standard's rules (same-kind
    widening, bool → nothing else, ints never to floats)."""
    if from_ == to:
        return True
    r = _promote(from_, to)
    return r is not None and r == to
