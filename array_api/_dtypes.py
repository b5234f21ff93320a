"""Data types of the namespace (the baracuda_dsl DType objects), their kinds and the standard's
argument categories, ``isdtype``, ``finfo`` / ``iinfo`` and the host (numpy) conversions used by
host copies."""

from __future__ import annotations

import builtins
from dataclasses import dataclass

import numpy as np

from baracuda_dsl import dtypes as _d
from baracuda_dsl.dtypes import DType
from baracuda_dsl.errors import UnsupportedError

bool = _d.bool_  # noqa: A001  (array-API spelling, as array-api-strict)
int8, int16, int32, int64 = _d.int8, _d.int16, _d.int32, _d.int64
uint8, uint16, uint32, uint64 = _d.uint8, _d.uint16, _d.uint32, _d.uint64
float16, bfloat16, float32, float64 = _d.float16, _d.bfloat16, _d.float32, _d.float64
complex64, complex128 = _d.complex64, _d.complex128
float8_e4m3, float8_e5m2 = _d.float8_e4m3, _d.float8_e5m2

BOOLEAN_DTYPES = (bool,)
SIGNED_INTEGER_DTYPES = (int8, int16, int32, int64)
UNSIGNED_INTEGER_DTYPES = (uint8, uint16, uint32, uint64)
INTEGER_DTYPES = SIGNED_INTEGER_DTYPES + UNSIGNED_INTEGER_DTYPES
#: the standard's real floating dtypes plus the float16 / bfloat16 extensions
REAL_FLOATING_DTYPES = (float32, float64, float16, bfloat16)
COMPLEX_FLOATING_DTYPES = (complex64, complex128)
NUMERIC_DTYPES = INTEGER_DTYPES + REAL_FLOATING_DTYPES + COMPLEX_FLOATING_DTYPES
#: storage-only floating types (no promotion, few functions take them)
FP8_DTYPES = (float8_e4m3, float8_e5m2)

_KINDS = {
    "bool": BOOLEAN_DTYPES,
    "signed integer": SIGNED_INTEGER_DTYPES,
    "unsigned integer": UNSIGNED_INTEGER_DTYPES,
    "integral": INTEGER_DTYPES,
    "real floating": REAL_FLOATING_DTYPES + FP8_DTYPES,
    "complex floating": COMPLEX_FLOATING_DTYPES,
    "numeric": NUMERIC_DTYPES + FP8_DTYPES,
}

#: the standard's dtype categories of function arguments (float16 / bfloat16 count as real
#: floating extensions; fp8 belongs to none)
CATEGORIES = {
    "all": frozenset(BOOLEAN_DTYPES + NUMERIC_DTYPES),
    "numeric": frozenset(NUMERIC_DTYPES),
    "real numeric": frozenset(INTEGER_DTYPES + REAL_FLOATING_DTYPES),
    "integer": frozenset(INTEGER_DTYPES),
    "integer or boolean": frozenset(INTEGER_DTYPES + BOOLEAN_DTYPES),
    "boolean": frozenset(BOOLEAN_DTYPES),
    "real floating-point": frozenset(REAL_FLOATING_DTYPES),
    "complex floating-point": frozenset(COMPLEX_FLOATING_DTYPES),
    "floating-point": frozenset(REAL_FLOATING_DTYPES + COMPLEX_FLOATING_DTYPES),
}


def as_dtype(dt) -> DType:
    """Resolve a dtype spec (a DType; also a name or a numpy dtype, as extensions) to a DType:
    TypeError for None or for objects that are no dtype at all, UnsupportedError for unknown
    names."""
    if isinstance(dt, DType):
        return dt
    if dt is None:
        raise TypeError("dtype is None")
    if isinstance(dt, (builtins.bool, builtins.int, builtins.float, builtins.complex)):
        raise TypeError(f"expected a dtype, got the value {dt!r}")
    return _d.dtype(dt)


def isdtype(dtype, kind) -> "builtins.bool":  # noqa: F821
    """True if ``dtype`` is ``kind`` (a dtype, a kind name such as ``'real floating'``, or a tuple
    of those), as the array API 2022.12+ ``isdtype``."""
    if not isinstance(dtype, DType):
        raise TypeError(f"isdtype: expected a dtype, got {dtype!r}")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, DType):
        return dtype == kind
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}; known: {sorted(_KINDS)}")
        return dtype in _KINDS[kind]
    raise TypeError(f"isdtype: kind must be a dtype, a string or a tuple, got {kind!r}")


@dataclass(frozen=True)
class finfo_object:
    """Machine limits of a floating dtype (array API ``finfo``)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType


@dataclass(frozen=True)
class iinfo_object:
    """Machine limits of an integer dtype (array API ``iinfo``)."""

    bits: int
    max: int
    min: int
    dtype: DType


# (bits, eps, max, smallest_normal) of the floating types numpy has no finfo for
_FINFO_EXTRA = {
    "bfloat16": (16, 2.0**-7, (2.0 - 2.0**-7) * 2.0**127, 2.0**-126),
    "float8_e4m3": (8, 2.0**-3, 448.0, 2.0**-6),
    "float8_e5m2": (8, 2.0**-2, 57344.0, 2.0**-14),
}
_REAL_OF = {"complex64": float32, "complex128": float64}


def finfo(type, /) -> finfo_object:  # noqa: A002
    """Limits of a floating dtype (or of an array's dtype): ``bits eps max min smallest_normal
    dtype``.  A complex dtype reports its real component (complex64 → float32 values and
    ``dtype=float32``), as the standard says.  TypeError for non-floating dtypes."""
    dt = as_dtype(type.dtype if hasattr(type, "dtype") and not isinstance(type, DType)
                   else type)
    if dt.kind not in "fc":
        raise TypeError(f"finfo: {dt.name} is not a floating-point dtype")
    dt = _REAL_OF.get(dt.name, dt)
    if dt.name in _FINFO_EXTRA:
        bits, eps, mx, tiny = _FINFO_EXTRA[dt.name]
        return finfo_object(bits, eps, mx, -mx, tiny, dt)
    fi = np.finfo(np.dtype(dt.numpy))
    return finfo_object(int(fi.bits), float(fi.eps), float(fi.max), float(fi.min),
                        float(fi.smallest_normal), dt)


def iinfo(type, /) -> iinfo_object:  # noqa: A002
    """Limits of an integer dtype (or of an array's dtype): ``bits max min dtype``; TypeError
    for non-integer dtypes."""
    dt = as_dtype(type.dtype if hasattr(type, "dtype") and not isinstance(type, DType)
                   else type)
    if dt.kind not in "iu":
        raise TypeError(f"iinfo: {dt.name} is not an integer dtype")
    ii = np.iinfo(np.dtype(dt.numpy))
    return iinfo_object(int(ii.bits), int(ii.max), int(ii.min), dt)


# ------------------------------------------------------------------------- host conversions
def f32_to_bf16_bits(a: np.ndarray) -> np.ndarray:
    """float → bfloat16 bit patterns (uint16), round to nearest even; NaN stays NaN."""
    f = np.ascontiguousarray(a, dtype=np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(f)
    if nan.any():
        rounded = np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)
    return rounded


def bf16_bits_to_f32(b: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) → float32 (exact)."""
    return (np.ascontiguousarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def host_encode(a: np.ndarray, dt: DType) -> np.ndarray:
    """A C-contiguous numpy array holding the device bytes of ``a`` converted to ``dt``."""
    if dt == bfloat16:
        if getattr(a.dtype, "name", "") == "bfloat16":  # ml_dtypes input: already bf16 bits
            return np.ascontiguousarray(a).view(np.uint16)
        if a.dtype.kind == "c":
            raise TypeError("cannot convert complex values to bfloat16")
        return f32_to_bf16_bits(a.astype(np.float32))
    if dt.numpy is None:
        try:
            import ml_dtypes  # noqa: F401

            npd = np.dtype({"float8_e4m3": "float8_e4m3fn", "float8_e5m2": "float8_e5m2"}[dt.name])
            return np.ascontiguousarray(a.astype(npd)).view(np.uint8)
        except ImportError:
            raise UnsupportedError(f"host conversion to {dt.name} needs ml_dtypes; wired: every "
                                   f"dtype numpy has, plus bfloat16") from None
    return np.ascontiguousarray(a, dtype=np.dtype(dt.numpy))


def host_decode(raw: np.ndarray, dt: DType) -> np.ndarray:
    """Device bytes (as numpy raw storage of ``dt.to_numpy()``) → a host array: bfloat16 becomes
    float32 (exact) unless ml_dtypes is installed; fp8 needs ml_dtypes."""
    if dt == bfloat16:
        try:
            import ml_dtypes

            return raw.view(ml_dtypes.bfloat16)
        except ImportError:
            return bf16_bits_to_f32(raw).reshape(raw.shape)
    if dt.numpy is None:
        try:
            import ml_dtypes

            return raw.view({"float8_e4m3": ml_dtypes.float8_e4m3fn,
                             "float8_e5m2": ml_dtypes.float8_e5m2}[dt.name])
        except ImportError:
            raise UnsupportedError(f"host decoding of {dt.name} needs ml_dtypes "
                                   f"(x.to_numpy(raw=True) gives the raw bytes)") from None
    return raw
