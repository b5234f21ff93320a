"""GPU tests: xp.all / xp.any (interim host reductions), xp.broadcast_arrays, xp.where with
scalars, and special values of trunc (±0, ±inf, NaN) through the namespace."""

import numpy as np
import pytest

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", ["bool", "int32", "float32", "bfloat16", "complex64"])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1), -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_all_any_match_numpy(dtype, axis, keepdims):
    import array_api as xp

    rng = np.random.default_rng(0)
    host = (rng.random((5, 7)) < 0.7).astype(np.float32)
    host[2] = 1.0
    x = xp.astype(xp.asarray(host), getattr(xp, dtype))
    ref = host != 0
    for f, nf in ((xp.all, np.all), (xp.any, np.any)):
        got = f(x, axis=axis, keepdims=keepdims)
        assert got.dtype == xp.bool
        np.testing.assert_array_equal(got.to_numpy(), nf(ref, axis=axis, keepdims=keepdims))
    neg0 = xp.asarray(np.array([-0.0, 0.0], np.float32))
    assert not bool(xp.any(xp.astype(neg0, xp.bfloat16)))


def test_broadcast_arrays_are_views():
    import array_api as xp

    a = xp.asarray(np.arange(3, dtype=np.float32))
    b = xp.asarray(np.ones((4, 1), np.float32))
    ba, bb = xp.broadcast_arrays(a, b)
    assert ba.shape == bb.shape == (4, 3) and ba.strides == (0, 1)
    np.testing.assert_array_equal((ba + bb).to_numpy(), np.arange(3) + np.ones((4, 1)))
    with pytest.raises(ValueError):
        xp.broadcast_arrays(a, xp.asarray(np.ones(4, np.float32)))


def test_where_with_scalars_and_trunc_specials():
    import array_api as xp

    c = xp.asarray(np.array([True, False, True]))
    x = xp.asarray(np.array([1.5, -2.5, 3.5], np.float64))
    np.testing.assert_array_equal(xp.where(c, x, 0.0).to_numpy(), [1.5, 0.0, 3.5])
    np.testing.assert_array_equal(xp.where(c, -1.0, x).to_numpy(), [-1.0, -2.5, -1.0])
    sp = np.array([-0.5, 0.5, -0.0, 0.0, np.inf, -np.inf, np.nan, -2.7, 2.7], np.float64)
    for dt in (np.float32, np.float64):
        got = xp.trunc(xp.asarray(sp.astype(dt))).to_numpy()
        ref = np.trunc(sp.astype(dt))
        np.testing.assert_array_equal(got, ref)
        assert np.array_equal(np.signbit(got), np.signbit(ref))
