"""The array API standard's special-value tables, row by row, through the namespace on the GPU
(the kernels implement them: no host fix-ups): complex exp / expm1 / log1p / sinh / cosh / tanh /
asinh / acosh / atanh / acos in complex64 and complex128 (and the conjugate of every row), real
floor_divide with infinities and signed zeros, sign of ±0.  Rows: tests/elementwise/_special_values.py."""

import math

import numpy as np
import pytest

import array_api as xp
from tests.elementwise._special_values import COMPLEX, FLOOR_DIVIDE, NAN, SIGN, Any

pytestmark = pytest.mark.gpu

CDTYPES = {"complex64": (np.complex64, np.float32), "complex128": (np.complex128, np.float64)}
FDTYPES = {"float16": np.float16, "float32": np.float32, "float64": np.float64}


def _f(v):
    return math.nan if v is NAN else v


def _rows(fn):
    """The table's rows plus, where the imaginary part is a number, the conjugate row."""
    out = []
    for re, im, (wr, wi) in COMPLEX[fn]:
        out.append((re, im, wr, wi))
        if im is not NAN:
            neg = wi if (wi is NAN or isinstance(wi, Any)) else -wi
            out.append((re, -im, wr, neg))
    return out


def _matches(got: float, want, rtol: float) -> bool:
    if want is NAN:
        return math.isnan(got)
    if isinstance(want, Any):
        return _matches(abs(got), abs(want.value), rtol)
    if math.isnan(got) or math.copysign(1.0, got) != math.copysign(1.0, want):
        return False
    if math.isinf(want) or want == 0.0:
        return got == want
    return abs(got - want) <= rtol * abs(want)


@pytest.mark.parametrize("dtype", sorted(CDTYPES))
@pytest.mark.parametrize("fn", sorted(COMPLEX))
def test_complex_table(fn, dtype):
    cdt, rdt = CDTYPES[dtype]
    rows = _rows(fn)
    z = np.empty(len(rows), dtype=cdt)
    z.real = [_f(r[0]) for r in rows]
    z.imag = [_f(r[1]) for r in rows]
    out = getattr(xp, fn)(xp.asarray(z)).to_numpy()
    assert out.dtype == cdt
    rtol = 4 * float(np.finfo(rdt).eps)   # π multiples: a few ulps of the component type
    bad = []
    for k, (re, im, wr, wi) in enumerate(rows):
        g = out[k]
        if not (_matches(float(g.real), wr, rtol) and _matches(float(g.imag), wi, rtol)):
            bad.append(f"{fn}({re!r} + {im!r}j) = {g!r}, standard: {wr!r} + {wi!r}j")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("dtype", sorted(FDTYPES))
@pytest.mark.parametrize("spelling", ["floor_divide", "__floordiv__", "__ifloordiv__"])
def test_floor_divide_table(spelling, dtype):
    nd = FDTYPES[dtype]
    a = np.array([_f(r[0]) for r in FLOOR_DIVIDE], dtype=nd)
    b = np.array([_f(r[1]) for r in FLOOR_DIVIDE], dtype=nd)
    x1, x2 = xp.asarray(a), xp.asarray(b)
    if spelling == "floor_divide":
        out = xp.floor_divide(x1, x2)
    elif spelling == "__floordiv__":
        out = x1 // x2
    else:
        out = x1
        out //= x2
    got = out.to_numpy()
    bad = [f"floor_divide({r[0]!r}, {r[1]!r}) = {got[k]!r}, standard: {r[2]!r}"
           for k, r in enumerate(FLOOR_DIVIDE) if not _matches(float(got[k]), r[2], 0.0)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("dtype", sorted(FDTYPES))
def test_sign_of_signed_zeros(dtype):
    nd = FDTYPES[dtype]
    got = xp.sign(xp.asarray(np.array([_f(r[0]) for r in SIGN], dtype=nd))).to_numpy()
    bad = [f"sign({r[0]!r}) = {got[k]!r}, standard: {r[1]!r}"
           for k, r in enumerate(SIGN) if not _matches(float(got[k]), r[1], 0.0)]
    assert not bad, "\n".join(bad)
