"""array_api sorting namespace on the GPU: sort / argsort (stable, descending, NaN, axes,
negative-stride and transposed views), searchsorted (both sides, sorter, dtype promotion),
topk / kthvalue / msort against numpy / torch references."""

import numpy as np
import pytest

import array_api as xp

pytestmark = pytest.mark.gpu

NPD = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
       np.uint64, np.float16, np.float32, np.float64]


def _data(npd, shape, rng):
    if npd is np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    a = rng.integers(-20, 20, shape)
    if np.issubdtype(npd, np.unsignedinteger):
        a = np.abs(a)
    a = a.astype(npd)
    if np.issubdtype(npd, np.floating) and a.size:
        a.reshape(-1)[:: 7] = np.nan
        a.reshape(-1)[1:: 11] = -0.0
    return a


def _desc_ref(a, axis):
    n = a.shape[axis]
    return n - 1 - np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])


@pytest.mark.parametrize("npd", NPD)
def test_sort_argsort(npd):
    rng = np.random.default_rng(0)
    for shape in [(0,), (1,), (7,), (33, 5), (4, 1000), (3, 4097), ()]:
        a = _data(npd, shape, rng)
        x = xp.asarray(a)
        for axis in ([-1] if a.ndim < 2 else [0, 1, -1]) if a.ndim else [-1]:
            for descending in (False, True):
                i = xp.argsort(x, axis=axis, descending=descending)
                v = xp.sort(x, axis=axis, descending=descending)
                assert i.dtype == xp.int64 and v.dtype == x.dtype and v.shape == x.shape
                if not a.ndim:
                    assert xp.asnumpy(i) == 0
                    np.testing.assert_array_equal(xp.asnumpy(v), a)      # NaN-aware
                    continue
                ref = _desc_ref(a, axis) if descending else np.argsort(a, axis=axis, kind="stable")
                np.testing.assert_array_equal(xp.asnumpy(i), ref)
                np.testing.assert_array_equal(_bits(xp.asnumpy(v)),
                                              _bits(np.take_along_axis(a, ref, axis)))


def test_strided_views():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((40, 50)).astype(np.float32)
    x = xp.asarray(a)
    for view, host in [(x[::-1], a[::-1]), (x.T, a.T), (x[3:, ::-2], a[3:, ::-2]),
                       (x[:, 7], a[:, 7])]:
        np.testing.assert_array_equal(xp.asnumpy(xp.argsort(view, axis=0)),
                                      np.argsort(host, axis=0, kind="stable"))
        np.testing.assert_array_equal(xp.asnumpy(xp.sort(view, axis=-1)), np.sort(host, axis=-1))


def test_searchsorted():
    rng = np.random.default_rng(2)
    b = np.sort(rng.integers(0, 30, 100).astype(np.float64))
    b[-3:] = np.nan
    q = rng.integers(-2, 33, (4, 9)).astype(np.float64)
    q[0, 0] = np.nan
    q[1, 1] = -0.0
    for side in ("left", "right"):
        got = xp.searchsorted(xp.asarray(b), xp.asarray(q), side=side)
        assert got.dtype == xp.int64
        np.testing.assert_array_equal(xp.asnumpy(got), np.searchsorted(b, q, side=side))
    perm = rng.permutation(100)
    u = b[perm]
    srt = np.argsort(u, kind="stable")
    got = xp.searchsorted(xp.asarray(u), xp.asarray(q), sorter=xp.asarray(srt.astype(np.int32)))
    np.testing.assert_array_equal(xp.asnumpy(got), np.searchsorted(u, q, sorter=srt))
    bi = np.arange(0, 50, 5, dtype=np.int32)
    qi = np.arange(-3, 60, dtype=np.int64)
    np.testing.assert_array_equal(xp.asnumpy(xp.searchsorted(xp.asarray(bi), xp.asarray(qi))),
                                  np.searchsorted(bi.astype(np.int64), qi))
    with pytest.raises(ValueError):
        xp.searchsorted(xp.asarray(np.zeros((2, 3))), xp.asarray(q))
    with pytest.raises(ValueError):
        xp.searchsorted(xp.asarray(b), xp.asarray(q), side="middle")


def test_topk_kthvalue_msort():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((6, 300)).astype(np.float32)
    x = xp.asarray(a)
    t = torch.from_numpy(a)
    for largest in (True, False):
        v, i = xp.topk(x, 7, axis=1, largest=largest)
        rv, ri = torch.topk(t, 7, dim=1, largest=largest)
        np.testing.assert_array_equal(xp.asnumpy(v), rv.numpy())
        np.testing.assert_array_equal(np.take_along_axis(a, xp.asnumpy(i), 1), rv.numpy())
    v, i = xp.topk(x, 2, axis=0)
    np.testing.assert_array_equal(xp.asnumpy(v), torch.topk(t, 2, dim=0).values.numpy())
    for keepdims in (False, True):
        v, i = xp.kthvalue(x, 17, axis=1, keepdims=keepdims)
        rv, ri = torch.kthvalue(t, 17, dim=1, keepdim=keepdims)
        np.testing.assert_array_equal(xp.asnumpy(v), rv.numpy())
        assert xp.asnumpy(i).shape == tuple(ri.shape)
    np.testing.assert_array_equal(xp.asnumpy(xp.msort(x)), np.sort(a, axis=0))


def test_errors():
    x = xp.asarray(np.zeros((3, 4), np.float32))
    with pytest.raises(Exception):
        xp.sort(x, axis=2)
    with pytest.raises(TypeError):
        xp.sort(x, descending=1)
    with pytest.raises(Exception):
        xp.topk(x, 5)
    with pytest.raises(TypeError):
        xp.sort(np.zeros(3))


def test_searchsorted_scalar_query():
    b = np.array([1.0, 2.0, 2.0, 5.0])
    x1 = xp.asarray(b)
    for v in (2, 2.0, 0.5, 9.0):
        for side in ("left", "right"):
            got = xp.searchsorted(x1, v, side=side)
            assert got.shape == () and int(xp.asnumpy(got)) == np.searchsorted(b, v, side=side)
