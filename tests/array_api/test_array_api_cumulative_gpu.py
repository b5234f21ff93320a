"""array_api cumulative functions and nonzero on the GPU: cumulative_sum / cumulative_prod (axis
rules, dtype= rules, include_initial), the cumsum / cumprod / cummax / cummin / logcumsumexp
extensions (reverse, strided views), nonzero / flatnonzero, against numpy / torch references."""

import numpy as np
import pytest

import array_api as xp
from _gpu_helpers import assert_close, assert_equal, assert_terms_close

pytestmark = pytest.mark.gpu

NPD = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
       np.uint64, np.float16, np.float32, np.float64]


def _data(npd, shape, rng):
    if npd is np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    a = rng.integers(-5, 6, shape)
    if np.issubdtype(npd, np.unsignedinteger):
        a = np.abs(a)
    return a.astype(npd)


def _acc(npd):
    if np.issubdtype(npd, np.floating):
        return npd
    return np.uint64 if np.issubdtype(npd, np.unsignedinteger) else np.int64


def _close(got, ref, npd):
    """Exact, floats included: the data are small integers (sums: |partial| < 2048, exact in
    float16 up; products of 0 / ±1), so every partial result of any summation order is
    representable and a correct scan returns the exact value (rtol = atol = 0; the sign of a
    zero is left free: a scan's identity may be −0)."""
    if np.issubdtype(np.dtype(npd), np.floating):
        assert_close(got, ref, 0.0, 0.0)
    else:
        assert_equal(got, ref)


@pytest.mark.parametrize("npd", NPD)
def test_cumulative_sum_prod(npd):
    rng = np.random.default_rng(0)
    for shape in [(0,), (1,), (7,), (33, 5), (4, 1000), (3, 4097), (2, 3, 65)]:
        a = _data(npd, shape, rng)
        x = xp.asarray(a)
        axes = [None] if a.ndim == 1 else list(range(-a.ndim, a.ndim))
        for axis in axes:
            ax = 0 if axis is None else axis
            for name, fn, ident in (("sum", np.cumsum, 0), ("prod", np.cumprod, 1)):
                f = getattr(xp, f"cumulative_{name}")
                if name == "prod" and np.issubdtype(npd, np.floating):
                    a = rng.choice([-1, 0, 1, 1, 1, -1], shape).astype(npd)  # exact products
                    x = xp.asarray(a)
                for inc in (False, True):
                    got = f(x, axis=axis, include_initial=inc)
                    with np.errstate(over="ignore"):
                        ref = fn(a, axis=ax, dtype=_acc(npd))
                    if inc:
                        pad = np.full([1 if i == ax % a.ndim else n for i, n in enumerate(shape)],
                                      ident, ref.dtype)
                        ref = np.concatenate([pad, ref], axis=ax)
                    assert got.dtype == getattr(xp, ref.dtype.name), (name, got.dtype)
                    assert got.shape == ref.shape
                    _close(xp.asnumpy(got), ref, npd if npd is not np.bool_ else np.int64)


def test_axis_and_dtype_rules():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    x = xp.asarray(a)
    with pytest.raises(ValueError):
        xp.cumulative_sum(x)                         # axis required for ndim > 1
    got = xp.cumulative_sum(x, axis=1, dtype=xp.int32)
    assert got.dtype == xp.int32
    np.testing.assert_array_equal(xp.asnumpy(got), np.cumsum(a, axis=1, dtype=np.int32))
    got = xp.cumulative_sum(x, axis=0, dtype=xp.float32)
    assert got.dtype == xp.float32
    assert_close(xp.asnumpy(got), np.cumsum(a.astype(np.float32), axis=0), 0.0)  # integers
    b = np.full(20, 100, np.int8)
    got = xp.cumulative_sum(xp.asarray(b), dtype=xp.int8)      # wraps like numpy
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(xp.asnumpy(got), np.cumsum(b, dtype=np.int8))
    assert xp.cumulative_sum(xp.asarray(np.ones(3, np.uint8))).dtype == xp.uint64
    assert xp.cumulative_prod(xp.asarray(np.ones(3, np.bool_))).dtype == xp.int64


def test_extensions():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a = rng.integers(-20, 20, (40, 50)).astype(np.float32)
    x = xp.asarray(a)
    for view, host in [(x, a), (x[::-1], a[::-1]), (x.T, a.T), (x[3:, ::-2], a[3:, ::-2])]:
        t = torch.from_numpy(np.ascontiguousarray(host)).double()
        for axis in (0, 1, -1):
            n = host.shape[axis]
            # integers in [-20, 20): every partial sum is exact in float32
            assert_close(xp.asnumpy(xp.cumsum(view, axis)), torch.cumsum(t, axis).numpy(), 0.0)
            assert_close(xp.asnumpy(xp.cumsum(view, axis, reverse=True)),
                         torch.cumsum(t.flip(axis), axis).flip(axis).numpy(), 0.0)
            # k/16 factors (exact): a product of ≤ n factors rounds ≤ n times, relative to itself
            assert_terms_close(xp.asnumpy(xp.cumprod(view / 16, axis)),
                               torch.cumprod(t / 16, axis).numpy(), "float32", terms=n,
                               what=f"cumprod axis {axis}")
            # log Σ e^x: the running sum's n roundings become an absolute error of the log,
            # relative to 1 + the running max |x| (the shift by the max)
            ref = torch.logcumsumexp(t, axis).numpy()
            shift = 1.0 + torch.cummax(t.abs(), axis).values.numpy()
            assert_terms_close(xp.asnumpy(xp.logcumsumexp(view, axis)), ref, "float32",
                               terms=n + 4, scale=shift, what=f"logcumsumexp axis {axis}")
            for name in ("cummax", "cummin"):
                v, i = getattr(xp, name)(view, axis)
                rv, ri = getattr(torch, name)(t, axis)
                np.testing.assert_array_equal(xp.asnumpy(v), rv.numpy())
                np.testing.assert_array_equal(xp.asnumpy(i), ri.numpy())
                assert i.dtype == xp.int64


@pytest.mark.parametrize("npd", NPD)
def test_nonzero(npd):
    rng = np.random.default_rng(2)
    for shape in [(1,), (7,), (33, 5), (3, 4097), (2, 3, 4, 5), (0, 4)]:
        a = _data(npd, shape, rng)
        if np.issubdtype(npd, np.floating) and a.size:
            a.reshape(-1)[::5] = -0.0
            a.reshape(-1)[1::7] = np.nan
        x = xp.asarray(a)
        got = xp.nonzero(x)
        ref = np.nonzero(a)
        assert isinstance(got, tuple) and len(got) == a.ndim
        for g, r in zip(got, ref):
            assert g.dtype == xp.int64
            np.testing.assert_array_equal(xp.asnumpy(g), r)
        np.testing.assert_array_equal(xp.asnumpy(xp.flatnonzero(x)), np.flatnonzero(a))
        if a.ndim == 2 and a.size:
            got = xp.nonzero(x.T)
            for g, r in zip(got, np.nonzero(a.T)):
                np.testing.assert_array_equal(xp.asnumpy(g), r)
    with pytest.raises(ValueError):
        xp.nonzero(xp.asarray(np.float32(1.0)))
