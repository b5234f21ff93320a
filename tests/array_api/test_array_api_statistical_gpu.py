"""Reductions of the namespace on the GPU against float64 numpy references: every op × dtype,
axis sets (none, all, one, several non-adjacent, negative), keepdims, empty axes, NaN, strided
and transposed views, the split (long-row / full) path, exact integer results, determinism."""

import numpy as np
import pytest

from _gpu_helpers import assert_close, assert_terms_close

pytestmark = pytest.mark.gpu

FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
SHAPES_AXES = [((7,), None), ((33, 5), 0), ((33, 5), 1), ((4, 5, 6), (0, 2)), ((4, 5, 6), -1),
               ((3, 4, 5, 6), (1, 3)), ((2, 3, 4, 5, 6), (0, 2, 4)), ((1000, 3), None),
               ((5, 0), 1), ((0, 4), 1), ((), None), ((4097,), 0)]


def _xp():
    import array_api as xp

    return xp


def _host(dtype, shape, rng):
    if dtype == "bool":
        return rng.random(shape) > 0.3
    if dtype in INTS:
        lo = 0 if dtype.startswith("u") else -5
        return rng.integers(lo, 6, shape).astype(dtype)
    a = rng.standard_normal(shape)
    if dtype == "bfloat16":
        return a.astype(np.float32)
    return a.astype(dtype)


def _dev(xp, a, dtype):
    x = xp.asarray(a)
    return xp.astype(x, xp.bfloat16) if dtype == "bfloat16" else x


def _np(x):
    import array_api as xp

    if x.dtype == xp.bfloat16:
        x = xp.astype(x, xp.float64)
    return np.asarray(x.to_numpy())


def _ref_input(a, dtype):
    if dtype == "bfloat16":  # the device holds a rounded copy: reference on the same values
        import ml_dtypes  # (float32 → bfloat16, round to nearest even)

        return np.asarray(a).astype(ml_dtypes.bfloat16).astype(np.float64)
    return a


def _close(got, fn, r, axis, keep, dtype, what):
    """Every element of reduction ``fn`` of ``r`` (float64, the device's values) over ``axis``
    within its bound: K = the reduced count, float32 accumulation (float64 for float64), the
    classical worst-case K roundings; half an ulp of ``dtype`` for the final rounding.

    sum / mean: relative to Σ|x| (cancellation); prod: relative to itself (K roundings);
    max / min: exact (one of the values); var / std: relative to mean(x²) (x − mean cancels;
    std = √var: var's error over 2·std); logsumexp: absolute, relative to 1 + max|x| (the shift
    by the max, the log of a sum relatively accurate to K roundings)."""
    red = dict(axis=axis, keepdims=keep)
    with np.errstate(all="ignore"):
        ref = getattr(np, fn)(r, **red) if fn != "logsumexp" else np.log(np.sum(np.exp(r), **red))
        n = max(r.size, 1) // max(np.size(ref), 1) if r.size else 0
        if fn in ("max", "min"):
            assert_close(got, ref, 0.0, what=what)
            return
        scale = None
        if fn == "sum":
            scale = np.sum(np.abs(r), **red)
        elif fn == "mean":
            scale = np.mean(np.abs(r), **red)
        elif fn in ("var", "std"):
            scale = np.mean(r * r, **red)
            if fn == "std":
                scale = np.where(ref > 0, scale / (2 * ref), np.sqrt(scale))
        elif fn == "logsumexp":
            scale = 1.0 + np.max(np.abs(r), **red) if r.size else None
    assert_terms_close(np.asarray(got, np.float64), np.asarray(ref, np.float64), dtype,
                       terms=n + 4, scale=scale, what=what)


@pytest.mark.parametrize("dtype", FLOATS)
def test_float_reductions(dtype):
    xp = _xp()
    rng = np.random.default_rng(0)
    for shape, axis in SHAPES_AXES:
        a = _host(dtype, shape, rng)
        x = _dev(xp, a, dtype)
        r = _ref_input(a, dtype).astype(np.float64)
        for keep in (False, True):
            for fn in ("sum", "prod", "mean", "max", "min", "var", "std"):
                empty = any(shape[d] == 0 for d in (range(len(shape)) if axis is None else
                                                     np.atleast_1d(axis) % max(len(shape), 1)))
                if fn in ("max", "min") and (empty or not shape and False):
                    if empty:
                        with pytest.raises(ValueError):
                            getattr(xp, fn)(x, axis=axis, keepdims=keep)
                        continue
                got = getattr(xp, fn)(x, axis=axis, keepdims=keep)
                assert got.dtype == x.dtype, (fn, got.dtype)
                # (half-precision products of many normals reach the subnormal range: the
                # bound's absolute floor, the dtype's smallest normal, covers them)
                _close(_np(got), fn, r, axis, keep, dtype, (fn, shape, axis, keep))
            if dtype != "bfloat16":
                _close(_np(xp.logsumexp(x, axis=axis, keepdims=keep)), "logsumexp", r, axis,
                       keep, dtype, ("logsumexp", shape, axis))


@pytest.mark.parametrize("dtype", INTS + ["bool"])
def test_integer_reductions_exact(dtype):
    xp = _xp()
    rng = np.random.default_rng(1)
    for shape, axis in SHAPES_AXES:
        a = _host(dtype, shape, rng)
        x = xp.asarray(a)
        for fn in ("sum", "prod", "max", "min"):
            if fn == "prod" and dtype == "bool":
                continue
            empty = a.size == 0 or any(
                shape[d] == 0 for d in (range(len(shape)) if axis is None else
                                        np.atleast_1d(axis) % max(len(shape), 1)))
            if fn in ("max", "min") and empty:
                continue
            got = getattr(xp, fn)(x, axis=axis)
            ref = getattr(np, fn)(a, axis=axis)
            assert np.array_equal(got.to_numpy(), ref), (fn, dtype, shape, axis)
            if fn in ("sum", "prod"):
                want = "uint64" if dtype.startswith("u") else "int64"
                assert str(got.dtype) == want or got.dtype.name == want
        assert np.array_equal(xp.count_nonzero(x, axis=axis).to_numpy(),
                              np.count_nonzero(a, axis=axis))
        assert np.array_equal(xp.all(x, axis=axis).to_numpy(), np.all(a, axis=axis))
        assert np.array_equal(xp.any(x, axis=axis).to_numpy(), np.any(a, axis=axis))
        kept = xp.sum(x, axis=axis, dtype=x.dtype)
        assert kept.dtype == x.dtype or dtype == "bool"


@pytest.mark.parametrize("dtype", FLOATS + ["int32", "uint8", "int64"])
def test_argmax_argmin(dtype):
    xp = _xp()
    rng = np.random.default_rng(2)
    for shape in [(7,), (33, 5), (4, 5, 6), (1, 4097), (3, 100003)]:
        a = _host(dtype, shape, rng)
        if dtype in FLOATS and a.size > 10:
            a.reshape(-1)[[4, 9]] = a.reshape(-1)[3]  # ties: the first occurrence wins
        x = _dev(xp, a, dtype)
        r = _ref_input(a, dtype)
        for axis in [None] + list(range(len(shape))) + [-1]:
            for fn in ("argmax", "argmin"):
                got = getattr(xp, fn)(x, axis=axis)
                assert got.dtype == xp.int64
                assert np.array_equal(got.to_numpy(), getattr(np, fn)(r, axis=axis)), (fn, shape,
                                                                                       axis)
            k = xp.argmax(x, axis=axis, keepdims=True)
            assert k.ndim == len(shape)
    if dtype in FLOATS:
        a = np.array([1.0, np.nan, 3.0, np.nan], dtype=np.float32 if dtype == "bfloat16" else dtype)
        x = _dev(xp, a, dtype)
        assert int(xp.argmax(x)) == 1 and int(xp.argmin(x)) == 1
        assert np.isnan(float(xp.max(x))) and np.isnan(float(xp.min(x)))
    with pytest.raises(ValueError):
        xp.argmax(xp.asarray(np.zeros((0,), np.float32)))


def test_strided_views_split_paths_and_determinism():
    xp = _xp()
    rng = np.random.default_rng(3)
    a = rng.standard_normal((300, 200)).astype(np.float32)
    base = xp.asarray(a)
    for view, ref in ((base.T, a.T), (base[::3, 1::2], a[::3, 1::2]), (base[::-1], a[::-1]),
                      (base[:, ::-2].T, a[:, ::-2].T)):
        for axis in (None, 0, 1, (0, 1)):
            _close(xp.sum(view, axis=axis).to_numpy(), "sum", ref.astype(np.float64), axis, False,
                   "float32", ("strided", axis))
            assert np.array_equal(xp.argmax(view, axis=axis if not isinstance(axis, tuple)
                                            else None).to_numpy(),
                                  np.argmax(ref, axis=axis if not isinstance(axis, tuple)
                                            else None))
    big = rng.standard_normal(3 * 2**20 + 7).astype(np.float32)   # full reduction, split pass
    x = xp.asarray(big)
    s1, s2 = xp.sum(x), xp.sum(x)
    assert s1.to_numpy().tobytes() == s2.to_numpy().tobytes()     # a fixed combine order
    assert int(xp.argmax(x)) == int(np.argmax(big))
    # the values of the split pass: with 3M terms a worst-case bound (3M roundings) says
    # nothing, so the sum's value is checked on integers in [-3, 3], whose partial sums
    # (|·| < 2^24) are all exact in float32 — any correct order gives the exact sum, and a
    # lost or doubled element shows
    ints = rng.integers(-3, 4, big.size).astype(np.float32)
    xi = xp.asarray(ints)
    total = ints.astype(np.float64).sum()
    assert_close(xp.sum(xi).to_numpy(), total, 0.0, what="full sum (exact)")
    # mean: the exact sum times 1/N (two roundings)
    assert_terms_close(xp.mean(xi).to_numpy(), total / big.size, "float32", terms=2,
                       what="full mean")
    col = rng.standard_normal((4096, 33)).astype(np.float64)      # column, split pass
    _close(xp.sum(xp.asarray(col), axis=0).to_numpy(), "sum", col, 0, False, "float64",
           "column")
    rows = rng.standard_normal((3, 200001)).astype(np.float32)    # few long rows
    _close(xp.max(xp.asarray(rows), axis=1).to_numpy(), "max", rows.astype(np.float64), 1,
           False, "float32", "rows")
    f16 = np.ones(100000, np.float16)                             # mean scales before the cast
    assert float(xp.mean(xp.asarray(f16))) == 1.0


def test_complex_diff_trace_and_dtype_arguments():
    xp = _xp()
    rng = np.random.default_rng(4)
    c = (rng.standard_normal((5, 6)) + 1j * rng.standard_normal((5, 6))).astype(np.complex64)
    x = xp.asarray(c)
    c64 = c.astype(np.complex128)
    # complex64 sums (component-wise float32 sums) relative to Σ|re|, Σ|im| per component;
    # the modulus Σ|z| bounds both
    assert_terms_close(xp.sum(x, axis=1).to_numpy(), c64.sum(1), "complex64", terms=6 + 4,
                       scale=np.abs(c64).sum(1), what="complex sum")
    assert_terms_close(xp.mean(x).to_numpy(), c64.mean(), "complex64", terms=30 + 4,
                       scale=np.abs(c64).mean(), what="complex mean")
    a = rng.integers(-9, 9, (4, 7, 5)).astype(np.int32)
    y = xp.asarray(a)
    for n in (1, 2):
        for axis in (0, -1):
            assert np.array_equal(xp.diff(y, axis=axis, n=n).to_numpy(), np.diff(a, n, axis))
    p = np.ones((4, 1, 5), np.int32)
    assert np.array_equal(xp.diff(y, axis=1, prepend=xp.asarray(p), append=xp.asarray(p)).to_numpy(),
                          np.diff(a, axis=1, prepend=p, append=p))
    m = rng.standard_normal((3, 5, 6))
    for off in (-2, 0, 1, 7):
        ref = np.trace(m, offset=off, axis1=-2, axis2=-1)
        mag = np.trace(np.abs(m), offset=off, axis1=-2, axis2=-1)
        assert_terms_close(xp.trace(xp.asarray(m), offset=off).to_numpy(), ref, "float64",
                           terms=5 + 4, scale=mag, what=f"trace offset {off}")
    f = rng.standard_normal(100).astype(np.float32)
    assert xp.sum(xp.asarray(f), dtype=xp.float64).dtype == xp.float64
    assert xp.sum(xp.asarray(a), dtype=xp.int32).dtype == xp.int32
    f64 = f.astype(np.float64)
    assert_terms_close(float(xp.var(xp.asarray(f), correction=1)), np.var(f64, ddof=1),
                       "float32", terms=100 + 4, scale=np.mean(f64 * f64) * 100 / 99,
                       what="var correction=1")
    assert np.isnan(float(xp.var(xp.asarray(f[:1]), correction=1)))
