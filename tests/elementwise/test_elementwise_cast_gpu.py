"""Elementwise casts on the GPU: every (in, out) pair of the 17 cast dtypes (CastPlan) against
C / numpy / torch conversion semantics on a representative value set per source dtype.

Semantics checked (bit for bit, incl. NaN and the sign of zeros):

* integer → integer: modular (two's complement wrap / sign extension, as C and numpy);
* float → integer: truncation toward zero; values whose truncation is out of the target's range,
  NaN and ±inf are undefined in C (torch gives platform-dependent values) and are skipped, as is
  every negative value → unsigned;
* → float: round to nearest even; overflow → ±inf for f16 / bf16 / f32 targets; a float64 source
  value that is not exactly a float32 value is only checked against f64 / f32 / integer / bool
  targets (a conversion to f16 / bf16 / fp8 through float32 would round twice);
  integer sources are checked against f16 only within its range, against bf16 / fp8 only for
  values exact in float32;
* → fp8 (e4m3fn, e5m2): torch's conversion on values within the finite range and NaN (the
  kernel's behaviour above the range — saturation or NaN/inf — is not asserted);
* → bool: ``!= 0`` (NaN → True; complex: either component non-zero); bool → number: 0 / 1;
* complex → real / integer keeps the real part (the imaginary part is discarded, as torch does
  with a warning and numpy with ComplexWarning); real → complex has a +0 imaginary part.

Each pair runs on the flat path (dense) and on the s4 path (step-2 input, misaligned output).
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

import _elementwise_refs as R
from baracuda_dsl.ops.elementwise.specs import elementwise as spec

pytestmark = pytest.mark.gpu

PAIRS = list(spec.cast_pairs())
SKIP = object()


def _torch():
    return pytest.importorskip("torch")


def _seed(*parts) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def _info(dt):
    return np.iinfo(R.NP_DTYPE[dt])


# ------------------------------------------------------------------------------- value sets
_INT_CANDIDATES = [0, 1, 2, 3, 7, 100, 127, 128, 200, 255, 256, 1000, 12345, 32767, 32768,
                   65504, 65535, 65536, 2 ** 24, 2 ** 24 + 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1,
                   2 ** 40 + 2 ** 20, 2 ** 53 + 1, 2 ** 62, 3 * 2 ** 61, 2 ** 63 - 1, 2 ** 63,
                   2 ** 64 - 1]
_FLOAT_CANDIDATES = [
    0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.7, -3.7, 0.1, -0.1, 0.99, -0.99,
    100.25, -100.25, 127.0, -128.0, 127.9, -128.9, 128.0, 255.0, 255.5, 256.0, 300.0, -300.0,
    1000.5, -1000.5, 32767.0, -32768.0, 65504.0, 65520.0, 1e5, -1e5, 2.0 ** 24 + 2, 2147483520.0,
    -2147483648.0, 4294967040.0, 1e10, -1e10, 2.0 ** 62, 2.0 ** 63, -2.0 ** 63, 1.8e19, 3e38,
    -3e38, 1e-3, 1e-5, 6e-8, 1e-30, 1e-40, -1e-40,
    # ties of the narrow formats (float32-exact): bf16 / f16 midpoints and just above
    1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20, -(1 + 2 ** -8), 1 + 2 ** -11,
    1 + 3 * 2 ** -11, 448.0, 464.0, 240.0, 57344.0, 0.0625, 2 ** -9, 2 ** -16, 3 * 2 ** -10,
    # float64-only values: float32 ties and beyond the float32 range
    1 + 2 ** -24, 1 + 3 * 2 ** -24, 1 + 2 ** -30, 1e300, -1e300, 1e-310,
    math.nan, math.inf, -math.inf,
]
_COMPLEX_CANDIDATES = [(1.5, -2.5), (0.0, 0.0), (0.0, 1.0), (-0.0, 0.0), (-3.7, 4.0),
                       (100.25, -1.0), (math.nan, 0.0), (math.inf, 1.0), (1.0, math.nan),
                       (2.0 ** 24 + 2, 0.5), (-0.5, -0.0), (1 + 2 ** -8, 3.0), (1e300, 1.0),
                       (255.5, 2.0), (-1e5, 7.0)]


def source_values(s: str) -> np.ndarray:
    """Host values of source dtype ``s`` (candidates rounded to / filtered for ``s``)."""
    k = R.kind(s)
    if k == "b":
        return np.array([False, True, True, False, True])
    if k in "iu":
        info = _info(s)
        vals = _INT_CANDIDATES + ([-v for v in _INT_CANDIDATES] if k == "i" else [])
        vals += [int(info.min), int(info.min) + 1, int(info.max), int(info.max) - 1]
        keep = sorted({v for v in vals if int(info.min) <= v <= int(info.max)})
        return np.array(keep, dtype=R.NP_DTYPE[s])
    if k == "c":
        c = R.COMPONENT[s]
        re = R.round_to([v[0] for v in _COMPLEX_CANDIDATES], c)
        im = R.round_to([v[1] for v in _COMPLEX_CANDIDATES], c)
        return R._cplx(re, im)
    v = R.round_to(_FLOAT_CANDIDATES, s)
    # keep the first of equal values (rounding merges candidates), NaN once, ±0 both
    out, seen = [], set()
    for x in v.tolist():
        key = ("nan",) if math.isnan(x) else (x, math.copysign(1.0, x))
        if key not in seen:
            seen.add(key)
            out.append(x)
    return np.array(out)


def _f32_exact(x: float) -> bool:
    return math.isnan(x) or math.isinf(x) or float(np.float32(x)) == x


def _to_float(v: float, d: str):
    """A real float value → float dtype ``d`` (round to nearest even), or SKIP."""
    if d == "f64":
        return v
    if d == "f32":
        with np.errstate(over="ignore"):
            return float(np.float32(v))
    if d in R.FP8:
        if math.isinf(v) or (not math.isnan(v) and abs(v) > R.FP8_MAX[d]):
            return SKIP
        return float(R.round_fp8([v], d)[0])
    if not _f32_exact(v):
        return SKIP  # a through-float32 conversion would round twice
    return float(R.round_to([v], d)[0])


def _to_int(v, d: str, exact_int: bool):
    info = _info(d)
    if exact_int:  # integer / bool source: modular
        m = 1 << R.bits(d)
        r = int(v) % m
        return r - m if R.kind(d) == "i" and r >= m // 2 else r
    if math.isnan(v) or math.isinf(v):
        return SKIP
    t = math.trunc(v)
    if not int(info.min) <= t <= int(info.max):
        return SKIP  # undefined in C
    return t


def expected(v, s: str, d: str):
    """The conversion of host value ``v`` of dtype ``s`` to dtype ``d`` (host representation),
    or SKIP where it is undefined / not asserted (see the module docstring)."""
    ks, kd = R.kind(s), R.kind(d)
    if kd == "b":
        if ks == "c":
            return bool(v.real != 0 or v.imag != 0 or math.isnan(v.real) or math.isnan(v.imag))
        return bool(v != 0 or (ks == "f" and math.isnan(v)))
    if ks == "c":
        if kd == "c":
            c = R.COMPONENT[d]
            re, im = _to_float(v.real, c), _to_float(v.imag, c)
            return SKIP if SKIP in (re, im) else complex(re, im)
        v, ks = float(v.real), "f"  # complex → real keeps the real part
    if ks == "b":
        v, ks = int(bool(v)), "i"
    if ks in "iu":
        v = int(v)
        if kd in "iu":
            return _to_int(v, d, True)
        comp = R.COMPONENT.get(d, d)
        f = float(v)
        if comp != "f64" and int(f) != v:
            return SKIP  # not exact in float64: the reference would round twice
        if comp in ("f16",) and abs(f) > 65504:
            return SKIP
        if comp in ("bf16",) + R.FP8 and not _f32_exact(f):
            return SKIP
        r = _to_float(f, comp)
        return r if kd != "c" or r is SKIP else complex(r, 0.0)
    v = float(v)
    if kd in "iu":
        return _to_int(v, d, False)
    if s == "f64" and not _f32_exact(v) and R.COMPONENT.get(d, d) not in ("f64", "f32"):
        return SKIP
    r = _to_float(v, R.COMPONENT.get(d, d))
    return r if kd != "c" or r is SKIP else complex(r, 0.0)


def _expected_array(vals, s, d):
    exp = [expected(v, s, d) for v in vals.tolist()]
    mask = np.array([e is not SKIP for e in exp])
    kd = R.kind(d)
    fill = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}[kd]
    arr = [fill if e is SKIP else e for e in exp]
    if kd == "c":
        out = R._cplx(np.array([complex(a).real for a in arr]),
                      np.array([complex(a).imag for a in arr]))
    elif kd == "f":
        out = np.array(arr, np.float64)
    elif kd == "b":
        out = np.array(arr, bool)
    else:
        out = np.array(arr, dtype=R.NP_DTYPE[d])
    return out, mask


def _cast(s, d, x_view, out_view):
    torch = _torch()
    from baracuda_dsl.ops.elementwise.elementwise import ElementwiseArgs, ElementwiseDescriptor
    from baracuda_dsl.ops.elementwise.families import CastPlan

    plan = CastPlan.select(ElementwiseDescriptor("cast", (tuple(x_view.shape),), s, d))
    plan.run(ElementwiseArgs([x_view], [out_view]))
    torch.cuda.synchronize()


@pytest.mark.parametrize("s,d", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_cast_pair(s, d):
    _torch()
    vals = source_values(s)
    exp, mask = _expected_array(vals, s, d)
    assert mask.any(), "no value of the set is checked for this pair"
    for in_layout, out_layout in (("dense", "dense"), ("step2", "offset1")):
        x, _xb = R.device_view(vals, s, in_layout)
        if out_layout == "dense":
            out = R.poisoned(exp, d, exp.shape)
        else:
            flat = np.concatenate([exp[:1], exp])
            ob = R.poisoned(flat, d, flat.shape)
            out = ob[1:]
        _cast(s, d, x, out)
        got = R.to_host(out, d)
        R.check(got[mask], exp[mask], d, 0.0, f"cast {s}->{d} ({in_layout}/{out_layout}) "
                f"inputs {vals[mask][:6]}")


@pytest.mark.parametrize("s", ["f32", "f64"])
def test_cast_to_bf16_rounds_to_nearest_even(s):
    """Random float32 bit patterns (all exponents) → bf16 vs the RNE reference; f64 sources
    holding float32 values."""
    _torch()
    rng = np.random.default_rng(_seed("bf16", s))
    bits = rng.integers(0, 2 ** 32, 200_000, dtype=np.uint64).astype(np.uint32)
    v = bits.view(np.float32).astype(np.float64)
    v = v[np.isfinite(v)]
    # force exact ties on a slice: low 16 bits = 0x8000
    ties = ((bits[:20000] & 0xFFFF0000) | 0x8000).view(np.float32).astype(np.float64)
    v = np.concatenate([v, ties[np.isfinite(ties)]])
    out = R.poisoned(v, "bf16", v.shape)
    _cast(s, "bf16", R.to_device(v, s), out)
    R.check(R.to_host(out, "bf16"), R.round_bf16(v), "bf16", 0.0, f"{s}->bf16 RNE")


def test_cast_f64_to_f32_and_f16_round_to_nearest_even():
    _torch()
    rng = np.random.default_rng(11)
    v = rng.standard_normal(100_000) * np.exp2(rng.integers(-30, 30, 100_000))
    v[:1000] = 1 + (2 * rng.integers(0, 2 ** 20, 1000) + 1) * 2.0 ** -24  # float32 ties
    out = R.poisoned(v, "f32", v.shape)
    _cast("f64", "f32", R.to_device(v, "f64"), out)
    R.check(R.to_host(out, "f32"), v.astype(np.float32).astype(np.float64), "f32", 0.0,
            "f64->f32")
    w = v.astype(np.float32).astype(np.float64)  # float32 values: one rounding to f16
    out = R.poisoned(w, "f16", w.shape)
    _cast("f32", "f16", R.to_device(w, "f32"), out)
    with np.errstate(over="ignore"):
        R.check(R.to_host(out, "f16"), w.astype(np.float16).astype(np.float64), "f16", 0.0,
                "f32->f16")


@pytest.mark.parametrize("f8", ["fp8e4m3", "fp8e5m2"])
def test_fp8_decode_all_and_encode_in_range(f8):
    """Every fp8 bit pattern → f32 / bf16 / f16 (exact) vs torch's decoding; random in-range
    f32 values → fp8 (round to nearest even) vs torch's encoding."""
    torch = _torch()
    raw = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(R.torch_dtype(f8))
    ref = raw.to(torch.float32).numpy().astype(np.float64)
    x = raw.cuda()
    for d in ("f32", "bf16", "f16", "f64"):
        out = R.poisoned(ref, d, ref.shape)
        _cast(f8, d, x, out)
        R.check(R.to_host(out, d), ref, d, 0.0, f"{f8}->{d} decode")
    rng = np.random.default_rng(_seed("fp8", f8))
    m = R.FP8_MAX[f8]
    v = R.round_to(rng.uniform(-m, m, 50_000) * np.exp2(rng.integers(-20, 1, 50_000)), "f32")
    out = R.poisoned(R.round_fp8(v, f8), f8, v.shape)
    _cast("f32", f8, R.to_device(v, "f32"), out)
    R.check(R.to_host(out, f8), R.round_fp8(v, f8), f8, 0.0, f"f32->{f8} encode")


def test_cast_backward_converts_back():
    """cast_backward(dy, dx): dx = dy converted to dx's dtype."""
    torch = _torch()
    from baracuda_dsl.ops.elementwise.families import cast_backward

    rng = np.random.default_rng(5)
    v = R.round_to(rng.standard_normal((31, 17)), "bf16")
    dy = R.to_device(v, "bf16")
    dx = torch.full((31, 17), float("nan"), device="cuda")
    cast_backward(dy, dx)
    torch.cuda.synchronize()
    R.check(R.to_host(dx, "f32"), v, "f32", 0.0, "cast_backward bf16->f32")
