"""Element types shared by the Plans, the kernels and the array-API namespace.

A :class:`DType` is a small immutable record: its canonical (array-API) name,
short alias (``f32``), size, kind, the numpy dtype used for host copies, the
DLPack (code, bits) pair and the CuTe DSL numeric type name used when a
kernel template is instantiated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .errors import UnsupportedError

# DLPack type codes (dlpack.h: kDLInt=0, kDLUInt=1, kDLFloat=2, kDLBfloat=4, kDLComplex=5, kDLBool=6,
# kDLFloat8_e4m3fn=10, kDLFloat8_e5m2=12)
_DL_INT, _DL_UINT, _DL_FLOAT, _DL_BFLOAT, _DL_COMPLEX, _DL_BOOL = 0, 1, 2, 4, 5, 6
_DL_F8E4M3FN, _DL_F8E5M2 = 10, 12


@dataclass(frozen=True, eq=False)
class DType:
    """An element type: ``name`` (array-API spelling), ``short`` (f32, bf16, ...), ``itemsize``
    in bytes, ``kind`` ('b' bool, 'i' signed, 'u' unsigned, 'f' real float, 'c' complex),
    ``numpy`` (host dtype string or None where numpy has none), ``dlpack`` (code, bits) and
    ``cute`` (CuTe DSL numeric class name, or None if kernels cannot use it)."""

    name: str
    short: str
    itemsize: int
    kind: str
    numpy: Optional[str]
    dlpack: tuple
    cute: Optional[str]

    # DTypes are module singletons: equality and hashing are by identity (C-level, fast on the
    # dispatch hot path); pickling and copying return the singleton of the same name.
    def __reduce__(self):
        return (dtype, (self.name,))

    def __repr__(self) -> str:  # pragma: no cover - trivial
        return f"baracuda_dsl.{self.name}"

    def __str__(self) -> str:
        return self.name

    @property
    def is_floating(self) -> bool:
        return self.kind == "f"

    @property
    def is_complex(self) -> bool:
        return self.kind == "c"

    @property
    def is_integer(self) -> bool:
        return self.kind in "iu"

    @property
    def bits(self) -> int:
        return self.itemsize * 8

    def to_numpy(self) -> np.dtype:
        """Host numpy dtype with the same bytes (bf16/fp8 map to raw integer storage)."""
        if self.numpy is None:
            return np.dtype(f"u{self.itemsize}")
        return np.dtype(self.numpy)


bool_ = DType("bool", "bool", 1, "b", "bool", (_DL_BOOL, 8), "Boolean")
int8 = DType("int8", "i8", 1, "i", "int8", (_DL_INT, 8), "Int8")
int16 = DType("int16", "i16", 2, "i", "int16", (_DL_INT, 16), "Int16")
int32 = DType("int32", "i32", 4, "i", "int32", (_DL_INT, 32), "Int32")
int64 = DType("int64", "i64", 8, "i", "int64", (_DL_INT, 64), "Int64")
uint8 = DType("uint8", "u8", 1, "u", "uint8", (_DL_UINT, 8), "Uint8")
uint16 = DType("uint16", "u16", 2, "u", "uint16", (_DL_UINT, 16), "Uint16")
uint32 = DType("uint32", "u32", 4, "u", "uint32", (_DL_UINT, 32), "Uint32")
uint64 = DType("uint64", "u64", 8, "u", "uint64", (_DL_UINT, 64), "Uint64")
float16 = DType("float16", "f16", 2, "f", "float16", (_DL_FLOAT, 16), "Float16")
bfloat16 = DType("bfloat16", "bf16", 2, "f", None, (_DL_BFLOAT, 16), "BFloat16")
float32 = DType("float32", "f32", 4, "f", "float32", (_DL_FLOAT, 32), "Float32")
float64 = DType("float64", "f64", 8, "f", "float64", (_DL_FLOAT, 64), "Float64")
float8_e4m3 = DType("float8_e4m3", "fp8e4m3", 1, "f", None, (_DL_F8E4M3FN, 8), "Float8E4M3FN")
float8_e5m2 = DType("float8_e5m2", "fp8e5m2", 1, "f", None, (_DL_F8E5M2, 8), "Float8E5M2")
complex64 = DType("complex64", "c64", 8, "c", "complex64", (_DL_COMPLEX, 64), None)
complex128 = DType("complex128", "c128", 16, "c", "complex128", (_DL_COMPLEX, 128), None)

ALL_DTYPES = (
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float16, bfloat16, float32, float64, float8_e4m3, float8_e5m2, complex64, complex128,
)
#: The four floating types most families are wired for ("FP4" in the Rust crate's docs).
FP4 = (float32, float16, bfloat16, float64)

_BY_NAME = {}
for _d in ALL_DTYPES:
    _BY_NAME[_d.name] = _d
    _BY_NAME[_d.short] = _d
_BY_NAME["bool_"] = bool_
_BY_DLPACK = {d.dlpack: d for d in ALL_DTYPES}
_BY_NUMPY = {np.dtype(d.numpy): d for d in ALL_DTYPES if d.numpy is not None}


def dtype(spec) -> DType:
    """Resolve ``spec`` (a DType, a name such as ``"bf16"``/``"bfloat16"``, a numpy dtype,
    a torch dtype or anything with a ``.name``) to a :class:`DType`."""
    if isinstance(spec, DType):
        return spec
    if isinstance(spec, str):
        key = spec.lower().replace("torch.", "")
        if key in _BY_NAME:
            return _BY_NAME[key]
        raise UnsupportedError(f"unknown dtype {spec!r}; known: {sorted(d.name for d in ALL_DTYPES)}")
    try:
        npd = np.dtype(spec)
        if npd in _BY_NUMPY:
            return _BY_NUMPY[npd]
    except TypeError:
        pass
    name = getattr(spec, "name", None) or str(spec)
    return dtype(str(name))


def from_dlpack_code(code: int, bits: int, lanes: int = 1) -> DType:
    """DType for a DLPack (code, bits); raises UnsupportedError for vector lanes or unknown codes."""
    if lanes != 1:
        raise UnsupportedError(f"DLPack vector dtypes (lanes={lanes}) are not supported")
    try:
        return _BY_DLPACK[(code, bits)]
    except KeyError:
        raise UnsupportedError(f"DLPack dtype code={code} bits={bits} is not supported") from None


_TYPESTR = {d: np.dtype(d.numpy).str for d in ALL_DTYPES if d.numpy is not None}


def to_typestr(dt: DType) -> Optional[str]:
    """The numpy / ``__cuda_array_interface__`` typestr of ``dt`` (``'<f4'``, ``'|b1'``, ...), or
    None where numpy has no such type (bfloat16, float8_*: those go through DLPack)."""
    return _TYPESTR.get(dt)


def from_typestr(typestr: str) -> DType:
    """DType from a ``__cuda_array_interface__`` typestr such as ``'<f4'`` (bf16 shows up as ``'<V2'``
    from some producers and cannot be told apart from f16: those go through DLPack instead)."""
    npd = np.dtype(typestr)
    if npd in _BY_NUMPY:
        return _BY_NUMPY[npd]
    raise UnsupportedError(f"__cuda_array_interface__ typestr {typestr!r} is not supported")


# ------------------------------------------------------------------- numpy-less float formats
#: (exponent bits, mantissa bits, has infinities) of the floating formats numpy lacks;
#: e4m3 is the "fn" variant: no infinities, only S.1111.111 is NaN, so its largest value is 448
_MINIFLOAT = {"bfloat16": (8, 7, True), "float8_e4m3": (4, 3, False),
              "float8_e5m2": (5, 2, True)}


def encode_minifloat(value: float, dt: DType) -> int:
    """The bit pattern of ``value`` rounded to ``dt`` (bfloat16, float8_e4m3, float8_e5m2) with
    round-to-nearest-even, exactly from the float64 value (no intermediate float32 rounding).
    Magnitudes past the largest finite value plus half an ulp become inf (bf16, e5m2) or NaN
    (e4m3, which has no inf), as CUDA's and torch's saturating-free conversions do; the tie itself
    rounds to even: to inf for bf16 / e5m2 (odd largest mantissa), to 448 for e4m3."""
    ebits, mbits, has_inf = _MINIFLOAT[dt.name]
    bias = 2 ** (ebits - 1) - 1
    nbits = 1 + ebits + mbits
    sign = 1 << (nbits - 1) if math.copysign(1.0, value) < 0 else 0
    exp_all = (1 << ebits) - 1
    inf_bits = exp_all << mbits
    nan_bits = (exp_all << mbits) | ((1 << mbits) - 1) if not has_inf else inf_bits | (1 << (mbits - 1))
    if math.isnan(value):
        return sign | nan_bits
    a = abs(value)
    max_bits = (inf_bits - 1) if has_inf else nan_bits - 1
    max_e = (max_bits >> mbits) - bias
    max_val = (1 + (max_bits & ((1 << mbits) - 1)) / 2 ** mbits) * 2.0 ** max_e
    limit = max_val + 2.0 ** (max_e - mbits - 1)      # the rounding boundary past the max
    if a > limit or (a == limit and max_bits & 1):    # a tie goes up only from an odd max
        return sign | (inf_bits if has_inf else nan_bits)
    min_normal_e = 1 - bias
    if a < 2.0 ** min_normal_e:                         # subnormal (or zero)
        q = a / 2.0 ** (min_normal_e - mbits)
        return sign | _round_half_even(q)
    _, ex = math.frexp(a)                               # a = f·2^ex, f in [0.5, 1)
    e = ex - 1
    m = _round_half_even(a / 2.0 ** (e - mbits))       # in [2^mbits, 2^(mbits+1)]
    return sign | (((e + bias) << mbits) + m - (1 << mbits))


def decode_minifloat(bits: int, dt: DType) -> float:
    """The value of a ``dt`` bit pattern (inverse of :func:`encode_minifloat`)."""
    ebits, mbits, has_inf = _MINIFLOAT[dt.name]
    bias = 2 ** (ebits - 1) - 1
    sign = -1.0 if bits >> (ebits + mbits) & 1 else 1.0
    e = (bits >> mbits) & ((1 << ebits) - 1)
    m = bits & ((1 << mbits) - 1)
    if e == (1 << ebits) - 1 and (has_inf or m == (1 << mbits) - 1):
        return sign * math.inf if has_inf and m == 0 else math.nan
    if e == 0:
        return sign * m * 2.0 ** (1 - bias - mbits)
    return sign * (1 + m / 2 ** mbits) * 2.0 ** (e - bias)


def _round_half_even(q: float) -> int:
    """``q`` (exact in float64 here: a scaled value with few significant bits) to the nearest
    integer, ties to even."""
    lo = math.floor(q)
    d = q - lo
    return int(lo + (1 if d > 0.5 or (d == 0.5 and lo % 2 == 1) else 0))
