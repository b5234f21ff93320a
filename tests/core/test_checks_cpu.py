"""The shared result checks (tests/_checks.py) catch what a whole-tensor norm hides: a
deliberately broken kernel output (one wrong element per row of a 4 x 4097 bfloat16 RMSNorm), an
unwritten NaN-poisoned element, a lost infinity or signed zero; a correctly rounded output
passes.  numpy (+ ml_dtypes for bfloat16 rounding) only: runs everywhere."""

import ml_dtypes
import numpy as np
import pytest

from tests._checks import assert_close, assert_equal, bounds, check_close, rel_err


def _rmsnorm_bf16(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((4, 4097))
    w = rng.standard_normal(4097)
    ref = x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + 1e-6) * w
    out = ref.astype(ml_dtypes.bfloat16).astype(np.float64)  # what a correct kernel stores
    return out, ref


def test_correct_bf16_output_passes():
    out, ref = _rmsnorm_bf16()
    rtol, atol = bounds("bfloat16", compute="float32", terms=8)
    assert_close(out, ref, rtol, atol)


def test_one_wrong_element_per_row_is_caught_although_the_norm_passes():
    out, ref = _rmsnorm_bf16()
    broken = out.copy()
    cols = np.argmin(np.abs(np.abs(ref) - 0.5), axis=1)   # a typical-size element per row
    broken[np.arange(4), cols] = 0.0                       # the broken kernel: one per row
    rtol, atol = bounds("bfloat16", compute="float32", terms=8)
    # the old whole-tensor check (rel_err <= bf16 tolerance 1e-2) would have passed it
    assert rel_err(broken, ref) < 1e-2
    msg = check_close(broken, ref, rtol, atol, what="rmsnorm")
    assert msg is not None and "4 of 16388 elements out of bounds" in msg, msg
    with pytest.raises(AssertionError):
        assert_close(broken, ref, rtol, atol)


def test_unwritten_poison_and_special_values_are_caught():
    ref = np.array([1.0, -2.0, np.inf, -0.0, np.nan])
    good = ref.copy()
    assert check_close(good, ref, 1e-6) is None
    for k, bad_value in [(0, np.nan), (2, 1e308), (4, 0.0)]:
        bad = good.copy()
        bad[k] = bad_value
        assert check_close(bad, ref, 1e-6) is not None, (k, bad_value)
    bad = good.copy()
    bad[3] = 0.0
    with pytest.raises(AssertionError):
        assert_equal(bad, ref)                 # +0 for -0
    assert_equal(good, ref)


def test_scale_bounds_cancellation_error():
    # a dot product whose result cancels: the error is relative to sum |a||b|, not |ref|
    ref = np.array([1e-9, 3.0])
    out = ref + np.array([1e-7, 0.0])
    rtol, _ = bounds("float32", compute="float32", terms=64)
    assert check_close(out, ref, rtol) is not None
    assert check_close(out, ref, rtol, scale=np.array([10.0, 3.0])) is None


def test_bounds_follow_the_output_dtype():
    assert bounds("int32") == (0.0, 0.0)
    r16, _ = bounds("bfloat16")
    r32, _ = bounds("float32", compute="float32", terms=4096)
    assert r16 == 2.0 ** -8 and r32 < 5e-4
    # bf16 inputs, f32 output: the bound comes from f32 (and the inputs' rounding when given)
    r_in, _ = bounds("float32", compute="float32", terms=1024, inputs="bfloat16")
    assert r_in < 2.0 ** -8 + 1e-3
