"""The numpy-less float formats (bfloat16, float8 e4m3 / e5m2): bit-exact encode / decode."""

import math

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.dtypes import decode_minifloat, encode_minifloat

FORMATS = [bd.bfloat16, bd.float8_e4m3, bd.float8_e5m2]


@pytest.mark.parametrize("dt", FORMATS, ids=lambda d: d.name)
def test_every_pattern_round_trips(dt):
    for bits in range(1 << (8 * dt.itemsize)):
        v = decode_minifloat(bits, dt)
        if math.isnan(v):
            assert math.isnan(decode_minifloat(encode_minifloat(v, dt), dt))
        else:
            assert encode_minifloat(v, dt) == bits, (dt.name, hex(bits), v)


@pytest.mark.parametrize("dt", FORMATS, ids=lambda d: d.name)
def test_rounding_is_nearest_even_between_neighbours(dt):
    rng = np.random.default_rng(0)
    finite = [b for b in range(1 << (8 * dt.itemsize) - 1)
              if math.isfinite(decode_minifloat(b, dt))]
    for b in rng.choice(finite, 400):
        lo, hi = decode_minifloat(int(b), dt), decode_minifloat(int(b) + 1, dt)
        if not (math.isfinite(hi) and 0 <= lo < hi):
            continue
        mid = (lo + hi) / 2
        assert encode_minifloat(lo + (hi - lo) * 0.25, dt) == b
        assert encode_minifloat(lo + (hi - lo) * 0.75, dt) == b + 1
        assert encode_minifloat(mid, dt) == (b if b % 2 == 0 else b + 1)


def test_overflow_and_special_values():
    assert encode_minifloat(448.0, bd.float8_e4m3) == 0x7E
    # 464 = 448 + half an ulp: the tie rounds to even, i.e. down to 448 (S.1111.110; CUDA, torch
    # and ml_dtypes agree); anything above it is NaN (e4m3 has no inf)
    assert encode_minifloat(464.0, bd.float8_e4m3) == 0x7E
    assert encode_minifloat(-464.0, bd.float8_e4m3) == 0xFE
    assert math.isnan(decode_minifloat(encode_minifloat(464.0 + 2 ** -40, bd.float8_e4m3),
                                       bd.float8_e4m3))
    assert encode_minifloat(61440.0, bd.float8_e5m2) == 0x7C             # tie from an odd max
    assert encode_minifloat(float.fromhex("0x1.ffp127"), bd.bfloat16) == 0x7F80
    assert encode_minifloat(1e6, bd.float8_e5m2) == 0x7C                 # +inf
    assert encode_minifloat(-math.inf, bd.bfloat16) == 0xFF80
    assert encode_minifloat(-0.0, bd.bfloat16) == 0x8000
    assert encode_minifloat(1.0, bd.bfloat16) == 0x3F80
    assert decode_minifloat(0x0001, bd.float8_e5m2) == 2.0 ** -16       # smallest subnormal


def test_matches_torch_where_available():
    torch = pytest.importorskip("torch")
    for dt, tdt in ((bd.bfloat16, torch.bfloat16), (bd.float8_e4m3, torch.float8_e4m3fn),
                    (bd.float8_e5m2, torch.float8_e5m2)):
        vals = torch.tensor(np.random.default_rng(1).normal(0, 30, 2000), dtype=torch.float32)
        ref = vals.to(tdt).view(torch.uint8 if dt.itemsize == 1 else torch.int16)
        ours = [encode_minifloat(float(v), dt) for v in vals]
        assert [int(r) & ((1 << 8 * dt.itemsize) - 1) for r in ref] == ours


@pytest.mark.parametrize("dt", FORMATS, ids=lambda d: d.name)
def test_matches_ml_dtypes(dt):
    """Every finite pattern, the midpoints and quarter points between neighbours and past the
    largest value (all float32-exact, so ml_dtypes' float32 conversion rounds them once)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    mt = {"bfloat16": ml_dtypes.bfloat16, "float8_e4m3": ml_dtypes.float8_e4m3fn,
          "float8_e5m2": ml_dtypes.float8_e5m2}[dt.name]
    n = 1 << (8 * dt.itemsize)
    step = 1 if n <= 256 else 61                     # bf16: a sample of the positive patterns
    vals = []
    for b in list(range(0, n // 2, step)) + [n // 2 - 1 - (0 if dt.name == "float8_e4m3" else 1)]:
        v = decode_minifloat(b, dt)
        if not math.isfinite(v):
            continue
        nxt = decode_minifloat(b + 1, dt)
        gap = (nxt - v) if math.isfinite(nxt) else v - decode_minifloat(b - 1, dt)
        vals += [v, v + gap / 4, v + gap / 2, v + 3 * gap / 4]
    vals = np.array(vals + [-v for v in vals])
    assert (vals.astype(np.float32) == vals).all()
    ref = vals.astype(np.float32).astype(mt).view(f"u{dt.itemsize}")
    ours = [encode_minifloat(float(v), dt) for v in vals]
    for v, r, o in zip(vals, ref.tolist(), ours):
        if math.isnan(decode_minifloat(r, dt)):
            assert math.isnan(decode_minifloat(o, dt)), (dt.name, v)
        else:
            assert o == r, (dt.name, v, hex(o), hex(r))
