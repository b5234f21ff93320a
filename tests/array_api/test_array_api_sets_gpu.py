"""Set functions and counting extensions of the namespace on the GPU against numpy
(np.unique with equal_nan=False: every NaN distinct; np.bincount; np.histogram)."""

import numpy as np
import pytest

from _gpu_helpers import assert_terms_close

pytestmark = pytest.mark.gpu


def _xp():
    import array_api as xp

    return xp


def _data(dtype, shape, rng, nan=False):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith(("int", "uint")):
        return rng.integers(0, 20, shape).astype(dtype)
    a = np.round(rng.standard_normal(shape) * 3).astype(np.float64)  # many duplicates
    if nan and a.size > 4:
        a.reshape(-1)[[1, 3]] = np.nan
        a.reshape(-1)[2] = -0.0
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int8", "int64", "uint16",
                                   "bool"])
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (33, 5), (4097,), (3, 0, 2)])
def test_unique_family(dtype, shape):
    xp = _xp()
    rng = np.random.default_rng(5)
    a = _data(dtype, shape, rng, nan=True)
    x = xp.asarray(a)
    vals, idx, inv, cnt = np.unique(a.reshape(-1), return_index=True, return_inverse=True,
                                    return_counts=True, equal_nan=False)
    r = xp.unique_all(x)
    np.testing.assert_array_equal(r.values.to_numpy(), vals)
    np.testing.assert_array_equal(r.indices.to_numpy(), idx)
    np.testing.assert_array_equal(r.inverse_indices.to_numpy(), inv.reshape(shape))
    np.testing.assert_array_equal(r.counts.to_numpy(), cnt)
    assert r.indices.dtype == xp.int64 and r.inverse_indices.shape == shape
    c = xp.unique_counts(x)
    np.testing.assert_array_equal(c.values.to_numpy(), vals)
    np.testing.assert_array_equal(c.counts.to_numpy(), cnt)
    i = xp.unique_inverse(x)
    np.testing.assert_array_equal(i.inverse_indices.to_numpy(), inv.reshape(shape))
    np.testing.assert_array_equal(xp.unique_values(x).to_numpy(), vals)


def test_unique_strided_and_consecutive():
    xp = _xp()
    rng = np.random.default_rng(6)
    a = rng.integers(0, 5, (40, 30)).astype(np.int32)
    x = xp.asarray(a)[::3, 1::2]
    ref = a[::3, 1::2]
    np.testing.assert_array_equal(xp.unique_values(x).to_numpy(), np.unique(ref))
    b = np.array([1, 1, 2, 2, 2, 1, 3, 3, np.nan, np.nan], np.float32)
    v, inv, cnt = xp.unique_consecutive(xp.asarray(b), return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(v.to_numpy(), [1, 2, 1, 3, np.nan, np.nan])
    np.testing.assert_array_equal(inv.to_numpy(), [0, 0, 1, 1, 1, 2, 3, 3, 4, 5])
    np.testing.assert_array_equal(cnt.to_numpy(), [2, 3, 1, 2, 1, 1])
    with pytest.raises(xp.UnsupportedError):
        xp.unique_values(xp.asarray(np.ones(3, np.complex64)))


def test_bincount_histogram():
    xp = _xp()
    rng = np.random.default_rng(7)
    a = rng.integers(0, 300, 10001)
    w = rng.random(10001)
    np.testing.assert_array_equal(xp.bincount(xp.asarray(a)).to_numpy(), np.bincount(a))
    np.testing.assert_array_equal(xp.bincount(xp.asarray(a), minlength=500).to_numpy(),
                                  np.bincount(a, minlength=500))
    # float64 sums of positive weights: count roundings per bin, relative to the bin's sum
    ref = np.bincount(a, w)
    assert_terms_close(xp.bincount(xp.asarray(a), xp.asarray(w)).to_numpy(), ref, "float64",
                       terms=1, scale=np.bincount(a) * ref, what="weighted bincount")
    assert xp.bincount(xp.asarray(np.zeros(0, np.int64))).shape == (0,)
    with pytest.raises(ValueError):
        xp.bincount(xp.asarray(np.array([1, -1])))
    f = rng.standard_normal(50001).astype(np.float32)
    h, e = xp.histogram(xp.asarray(f), bins=17)
    rh, re = np.histogram(f, bins=17)
    # ours float64; numpy's edges are float32 (linspace in the data's dtype): the reference's
    # own few float32 roundings, relative to the range's ends
    ends = abs(float(f.min())) + abs(float(f.max()))
    assert_terms_close(e.to_numpy(), re.astype(np.float64), "float64", compute="float32",
                       terms=4, scale=np.full(re.shape, ends), what="histogram edges")
    # edges agree to rounding; counts may move by one element at an edge computed differently
    assert np.abs(h.to_numpy() - rh).sum() <= 2
    h, e = xp.histogram(xp.asarray(f), bins=[-2.0, -1.0, 0.0, 0.5, 3.0], weights=xp.asarray(
        rng.random(50001)))
    assert h.dtype == xp.float64 and h.shape == (4,)
    hd, _ = xp.histogram(xp.asarray(f), bins=10, range=(-3, 3), density=True)
    rd, _ = np.histogram(f, bins=10, range=(-3, 3), density=True)
    # density = count / (n·width): numpy's widths are differences of float32 edges (up to 3
    # in magnitude, 0.6 apart: their roundings are relative to 3 / 0.6 times the width)
    assert_terms_close(hd.to_numpy(), rd, "float64", compute="float32", terms=4,
                       scale=np.abs(rd) * 3.0 / 0.6, what="histogram density")
    hc = xp.histc(xp.asarray(f), bins=20, min=-2, max=2)
    assert hc.dtype == xp.float32 and float(xp.sum(hc)) == np.sum((f >= -2) & (f <= 2))
