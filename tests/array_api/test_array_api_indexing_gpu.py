"""array_api manipulation / indexing namespace on the GPU against numpy: concat, stack, unstack,
moveaxis, roll, take, take_along_axis, integer-array and boolean-mask __getitem__ /
__setitem__, pad, pixel_(un)shuffle, and the torch-style extensions (gather, scatter,
scatter_add, index_select, index_add, masked_fill, one_hot, embedding, embedding_bag, segment_*),
including out-of-range indices (IndexError) and strided / transposed inputs."""

import numpy as np
import pytest

import array_api as xp
from _gpu_helpers import assert_close, assert_terms_close

pytestmark = pytest.mark.gpu

NPD = [np.bool_, np.int8, np.int32, np.int64, np.float16, np.float32, np.float64, np.complex64]


def _data(npd, shape, rng):
    if npd is np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    a = rng.standard_normal(shape) * 10 + 1
    if np.issubdtype(npd, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(npd)


def _eq(x, ref):
    got = x.to_numpy()
    assert got.shape == ref.shape, (got.shape, ref.shape)
    assert got.dtype == ref.dtype or ref.dtype.kind == "V", (got.dtype, ref.dtype)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("npd", NPD)
def test_concat_stack_unstack(npd):
    rng = np.random.default_rng(1)
    a, b, c = (_data(npd, s, rng) for s in [(3, 5, 7), (3, 2, 7), (3, 0, 7)])
    xa, xb, xc = xp.asarray(a), xp.asarray(b), xp.asarray(c)
    _eq(xp.concat([xa, xb, xc], axis=1), np.concatenate([a, b, c], axis=1))
    _eq(xp.concat((xa, xa), axis=-1), np.concatenate([a, a], axis=-1))
    _eq(xp.concat([xa, xb], axis=None), np.concatenate([a.ravel(), b.ravel()]))
    # strided / transposed inputs
    t = xp.permute_dims(xa, (2, 1, 0))
    _eq(xp.concat([t, t[:, ::-1]], axis=0), np.concatenate([a.transpose(2, 1, 0),
                                                             a.transpose(2, 1, 0)[:, ::-1]]))
    _eq(xp.stack([xa, xa[::-1]], axis=1), np.stack([a, a[::-1]], axis=1))
    _eq(xp.stack([xa, xa], axis=-1), np.stack([a, a], axis=-1))
    parts = xp.unstack(xa, axis=1)
    assert len(parts) == 5
    for i, p in enumerate(parts):
        _eq(p, a[:, i])


def test_concat_promotes_and_validates():
    a = xp.asarray(np.arange(6, dtype=np.int8).reshape(2, 3))
    b = xp.asarray(np.ones((1, 3), np.int16))
    r = xp.concat([a, b])
    assert r.dtype == xp.int16
    np.testing.assert_array_equal(r.to_numpy(), np.concatenate([np.arange(6).reshape(2, 3),
                                                                np.ones((1, 3))]))
    with pytest.raises(ValueError):
        xp.concat([a, xp.asarray(np.ones((2, 4), np.int8))], axis=0)
    with pytest.raises(ValueError):
        xp.stack([a, b])
    with pytest.raises(ValueError):
        xp.concat([])


def test_moveaxis_roll():
    rng = np.random.default_rng(2)
    a = _data(np.float32, (2, 3, 4, 5), rng)
    x = xp.asarray(a)
    _eq(xp.moveaxis(x, 0, -1), np.moveaxis(a, 0, -1))
    _eq(xp.moveaxis(x, (0, 1), (3, 0)), np.moveaxis(a, (0, 1), (3, 0)))
    for shift, axis in [(1, None), (-7, None), (2, 1), ((1, -2), (0, 3)), (3, (1, 2)),
                        ((1, 1), (2, 2)), (0, 0), (123, 3)]:
        _eq(xp.roll(x, shift, axis=axis), np.roll(a, shift, axis=axis))
    _eq(xp.roll(xp.permute_dims(x, (3, 1, 2, 0)), 2, axis=0),
        np.roll(a.transpose(3, 1, 2, 0), 2, axis=0))
    e = xp.asarray(np.zeros((0, 3), np.float32))
    assert xp.roll(e, 1, axis=1).shape == (0, 3)


@pytest.mark.parametrize("npd", [np.bool_, np.int8, np.float32, np.float64, np.complex64])
def test_take_and_take_along_axis(npd):
    rng = np.random.default_rng(3)
    a = _data(npd, (6, 7, 9), rng)
    x = xp.asarray(a)
    for axis in (0, 1, 2, -1):
        n = a.shape[axis]
        idx = rng.integers(-n, n, 11)
        _eq(xp.take(x, xp.asarray(idx), axis=axis), np.take(a, idx, axis=axis))
    i32 = xp.asarray(np.array([0, 5, 5, -1], np.int32))
    _eq(xp.take(x[:, ::2], i32, axis=0), np.take(a[:, ::2], [0, 5, 5, -1], axis=0))
    _eq(xp.take(x, xp.asarray(np.zeros(0, np.int64)), axis=1), a[:, :0])
    v = xp.asarray(a[0, 0])
    _eq(xp.take(v, xp.asarray(np.array([3, 0]))), a[0, 0][[3, 0]])
    with pytest.raises(IndexError):
        xp.take(x, xp.asarray(np.array([0, 7])), axis=1)
    with pytest.raises(IndexError):
        xp.take(x, xp.asarray(np.array([-8])), axis=1)
    for axis in (0, 1, -1):
        n = a.shape[axis]
        ishape = list(a.shape)
        ishape[axis] = 4
        idx = rng.integers(-n, n, ishape)
        _eq(xp.take_along_axis(x, xp.asarray(idx), axis=axis),
            np.take_along_axis(a, idx, axis=axis))
    # broadcasting of the non-axis dims
    idx = rng.integers(0, 9, (1, 7, 3))
    _eq(xp.take_along_axis(x, xp.asarray(idx), axis=2), np.take_along_axis(a, idx, axis=2))
    with pytest.raises(IndexError):
        xp.take_along_axis(x, xp.asarray(np.full((6, 7, 1), 9)), axis=2)


@pytest.mark.parametrize("npd", [np.bool_, np.int16, np.float32, np.complex64])
def test_getitem_integer_arrays(npd):
    rng = np.random.default_rng(4)
    a = _data(npd, (5, 6, 7), rng)
    x = xp.asarray(a)
    i = rng.integers(-5, 5, (3, 4))
    j = rng.integers(0, 6, (4,))
    k = rng.integers(-7, 7, (3, 1))
    for key_np, key_xp in [
        ((i,), (xp.asarray(i),)),
        ((slice(None), j), (slice(None), xp.asarray(j))),
        ((i, j), (xp.asarray(i), xp.asarray(j))),
        ((i, j, k), (xp.asarray(i), xp.asarray(j), xp.asarray(k))),
        ((i, slice(1, 5), k), (xp.asarray(i), slice(1, 5), xp.asarray(k))),   # non-adjacent
        ((2, j), (2, xp.asarray(j))),
        ((Ellipsis, k), (Ellipsis, xp.asarray(k))),
        ((None, j % 5, slice(None, None, -2)), (None, xp.asarray(j % 5), slice(None, None, -2))),
    ]:
        _eq(x[key_xp], a[key_np])
    t = xp.permute_dims(x, (2, 0, 1))  # non-collapsible indexed dims read via a copy
    _eq(t[xp.asarray(k), xp.asarray(i)], a.transpose(2, 0, 1)[k, i])
    with pytest.raises(IndexError):
        x[xp.asarray(np.array([5]))]
    with pytest.raises(IndexError):
        x[xp.asarray(np.array([0])), xp.asarray(np.array([6]))]
    with pytest.raises(IndexError):
        x[xp.asarray(np.array([1.0]))]


@pytest.mark.parametrize("npd", [np.bool_, np.int32, np.float32, np.float64])
def test_getitem_boolean_masks(npd):
    rng = np.random.default_rng(5)
    a = _data(npd, (4, 5, 6), rng)
    x = xp.asarray(a)
    m3 = rng.integers(0, 2, a.shape).astype(bool)
    m2 = rng.integers(0, 2, (4, 5)).astype(bool)
    m1 = rng.integers(0, 2, (5,)).astype(bool)
    _eq(x[xp.asarray(m3)], a[m3])
    _eq(x[xp.asarray(m2)], a[m2])
    _eq(x[:, xp.asarray(m1)], a[:, m1])
    _eq(x[xp.asarray(np.zeros((4, 5), bool))], a[np.zeros((4, 5), bool)])
    _eq(x[True], a[True])
    _eq(x[False], a[False])
    _eq(x[xp.asarray(np.bool_(True))], a[np.bool_(True)])
    with pytest.raises(IndexError):
        x[xp.asarray(np.ones((5, 4), bool))]


@pytest.mark.parametrize("npd", [np.int8, np.float32, np.complex64])
def test_setitem_arrays_and_masks(npd):
    rng = np.random.default_rng(6)
    a = _data(npd, (6, 5, 4), rng)
    x = xp.asarray(a)
    ref = a.copy()
    i = np.array([0, 3, -1, 2])
    v = _data(npd, (4, 5, 4), rng)
    x[xp.asarray(i)] = xp.asarray(v)
    ref[i] = v
    _eq(x, ref)
    j = np.array([1, 4])
    x[:, xp.asarray(j)] = 3
    ref[:, j] = 3
    _eq(x, ref)
    m = rng.integers(0, 2, (6, 5)).astype(bool)
    x[xp.asarray(m)] = 7
    ref[m] = 7
    _eq(x, ref)
    vv = _data(npd, (int(m.sum()), 4), rng)
    x[xp.asarray(m)] = xp.asarray(vv)
    ref[m] = vv
    _eq(x, ref)
    row = _data(npd, (4,), rng)
    x[xp.asarray(m)] = xp.asarray(row)            # broadcast value
    ref[m] = row
    _eq(x, ref)
    ii, jj = np.array([0, 5]), np.array([4, 0])
    x[xp.asarray(ii), xp.asarray(jj)] = 9
    ref[ii, jj] = 9
    _eq(x, ref)
    with pytest.raises(IndexError):
        x[xp.asarray(np.array([6]))] = 1


@pytest.mark.parametrize("mode,np_mode", [("constant", "constant"), ("reflect", "reflect"),
                                          ("replicate", "edge"), ("circular", "wrap")])
@pytest.mark.parametrize("npd", [np.bool_, np.int32, np.float32, np.complex64])
def test_pad(mode, np_mode, npd):
    rng = np.random.default_rng(7)
    a = _data(npd, (2, 3, 5, 6), rng)
    x = xp.asarray(a)
    pairs = ((0, 0), (0, 0), (2, 1), (3, 4))
    kw = dict(constant_values=0) if np_mode == "constant" else {}
    _eq(xp.pad(x, (3, 4, 2, 1), mode=mode), np.pad(a, pairs, mode=np_mode, **kw))
    _eq(xp.pad(x, pairs, mode=mode), np.pad(a, pairs, mode=np_mode, **kw))
    t = xp.permute_dims(x, (0, 1, 3, 2))
    _eq(xp.pad(t, (1, 1), mode=mode), np.pad(a.transpose(0, 1, 3, 2),
                                              ((0, 0),) * 3 + ((1, 1),), mode=np_mode, **kw))
    if mode == "constant" and npd is not np.bool_:
        _eq(xp.pad(x, (1, -2), value=5), np.pad(a, ((0, 0),) * 3 + ((1, 0),),
                                                 constant_values=5)[..., :-2])


def test_pixel_shuffle_roundtrip():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    a = rng.standard_normal((2, 12, 5, 7)).astype(np.float32)
    ref = torch.nn.functional.pixel_shuffle(torch.from_numpy(a), 2).numpy()
    y = xp.pixel_shuffle(xp.asarray(a), 2)
    _eq(y, ref)
    _eq(xp.pixel_unshuffle(y, 2), a)


def test_torch_style_extensions():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    a = rng.standard_normal((5, 8)).astype(np.float32)
    ta = torch.from_numpy(a)
    x = xp.asarray(a)
    idx = rng.integers(0, 8, (5, 3))
    _eq(xp.gather(x, 1, xp.asarray(idx)), torch.gather(ta, 1, torch.from_numpy(idx)).numpy())
    src = rng.standard_normal((5, 3)).astype(np.float32)
    perm = np.stack([rng.permutation(8)[:3] for _ in range(5)])
    _eq(xp.scatter(x, 1, xp.asarray(perm), xp.asarray(src)),
        ta.scatter(1, torch.from_numpy(perm), torch.from_numpy(src)).numpy())
    got = xp.scatter_add(x, 1, xp.asarray(idx), xp.asarray(src)).to_numpy()
    ti = torch.from_numpy(idx)
    ref = ta.double().scatter_add(1, ti, torch.from_numpy(src).double()).numpy()
    # float32 atomic adds: 1 + count roundings per element, relative to |x| + Σ|src|
    count = torch.zeros(5, 8, dtype=torch.float64).scatter_add(1, ti, torch.ones(5, 3,
                                                                              dtype=torch.float64))
    mag = ta.double().abs().scatter_add(1, ti, torch.from_numpy(src).double().abs())
    assert_terms_close(got, ref, "float32", terms=1, scale=((1 + count) * mag).numpy(),
                       what="scatter_add")
    sel = np.array([4, 0, 0, -1])
    _eq(xp.index_select(x, 0, xp.asarray(sel)), a[sel])
    ia = np.array([1, 1, 3, 0, 1])
    srcr = rng.standard_normal((5, 8)).astype(np.float32)
    got = xp.index_add(x, 0, xp.asarray(ia), xp.asarray(srcr), alpha=2).to_numpy()
    tia = torch.from_numpy(ia)
    ref = ta.double().index_add(0, tia, torch.from_numpy(srcr).double(), alpha=2).numpy()
    # each added row rounds twice (alpha·src, the add) relative to |x| + 2·Σ|src|
    count = np.bincount(ia, minlength=5)[:, None]
    mag = ta.double().abs().index_add(0, tia, torch.from_numpy(srcr).double().abs(),
                                      alpha=2).numpy()
    assert_terms_close(got, ref, "float32", terms=2, scale=(1 + count) * mag, what="index_add")
    m = rng.integers(0, 2, (1, 8)).astype(bool)
    _eq(xp.masked_fill(x, xp.asarray(m), -1.5), np.where(m, np.float32(-1.5), a))
    lab = rng.integers(0, 6, (3, 4))
    _eq(xp.one_hot(xp.asarray(lab), 6), np.eye(6, dtype=np.int64)[lab])
    _eq(xp.one_hot(xp.asarray(lab)), np.eye(lab.max() + 1, dtype=np.int64)[lab])
    with pytest.raises(IndexError):
        xp.one_hot(xp.asarray(np.array([0, 6])), 6)
    with pytest.raises(IndexError):
        xp.gather(x, 1, xp.asarray(np.full((5, 1), 8)))


def test_embedding_and_segments():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10)
    w = rng.standard_normal((50, 16)).astype(np.float32)
    ids = rng.integers(0, 50, (4, 7))
    _eq(xp.embedding(xp.asarray(ids), xp.asarray(w)), w[ids])
    flat = rng.integers(0, 50, 20)
    offs = np.array([0, 3, 3, 10])
    sizes = np.diff(np.append(offs, len(flat)))                  # bags of 3, 0, 7, 10 rows
    for mode in ("sum", "mean", "max"):
        bag = torch.nn.functional.embedding_bag
        ref = bag(torch.from_numpy(flat), torch.from_numpy(w).double(), torch.from_numpy(offs),
                  mode=mode).numpy()
        got = xp.embedding_bag(xp.asarray(flat), xp.asarray(w), xp.asarray(offs),
                               mode=mode).to_numpy()
        if mode == "max":   # one of the rows: exact (an empty bag gives 0)
            assert_close(got, ref, 0.0, what="embedding_bag max")
            continue
        # a float32 sum of the bag's rows (+ the division for mean), relative to Σ|w|
        mag = bag(torch.from_numpy(flat), torch.from_numpy(np.abs(w)).double(),
                  torch.from_numpy(offs), mode=mode).numpy()
        assert_terms_close(got, ref, "float32", terms=1, scale=(sizes[:, None] + 1) * mag,
                           what=f"embedding_bag {mode}")
    data = rng.standard_normal((30, 5)).astype(np.float32)
    seg = rng.integers(0, 6, 30)
    cnt = np.bincount(seg, minlength=7)
    mag = np.zeros((7, 5))
    np.add.at(mag, seg, np.abs(data.astype(np.float64)))
    for op, ufunc, init in [("sum", np.add, 0.0), ("max", np.maximum, -np.inf),
                            ("min", np.minimum, np.inf), ("prod", np.multiply, 1.0)]:
        ref = np.full((7, 5), init)
        ufunc.at(ref, seg, data.astype(np.float64))
        for sorted_ in (False, True):
            order = np.argsort(seg, kind="stable") if sorted_ else np.arange(30)
            got = getattr(xp, f"segment_{op}")(xp.asarray(data[order]), xp.asarray(seg[order]), 7,
                                              indices_are_sorted=sorted_).to_numpy()
            what = f"segment_{op} sorted={sorted_}"
            if op in ("max", "min"):      # one of the values (±inf for the empty segment)
                assert_close(got, ref, 0.0, what=what)
            elif op == "sum":             # count roundings relative to Σ|data|
                assert_terms_close(got, ref, "float32", terms=1, scale=cnt[:, None] * mag,
                                   what=what)
            else:                         # a product: count roundings relative to itself
                assert_terms_close(got, ref, "float32", terms=int(cnt.max()), what=what)
    s = np.zeros((7, 5))
    np.add.at(s, seg, data.astype(np.float64))
    got = xp.segment_mean(xp.asarray(data), xp.asarray(seg), 7).to_numpy()
    den = np.maximum(cnt, 1)[:, None]
    assert_terms_close(got, s / den, "float32", terms=1, scale=(cnt[:, None] + 1) * mag / den,
                       what="segment_mean")
    with pytest.raises(IndexError):
        xp.segment_sum(xp.asarray(data), xp.asarray(np.full(30, 7)), 7)


# ------------------------------------------------------------------ property tests (hypothesis)
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_PROP = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
_PROP_DT = [np.bool_, np.int8, np.int64, np.float16, np.float32, np.complex64]


@st.composite
def _arrays(draw, min_dims=1, max_dims=4, min_side=0):
    shape = tuple(draw(st.lists(st.integers(min_side, 6), min_size=min_dims, max_size=max_dims)))
    npd = draw(st.sampled_from(_PROP_DT))
    seed = draw(st.integers(0, 2**31 - 1))
    a = _data(npd, shape, np.random.default_rng(seed))
    # a strided / reversed view half the time
    view = draw(st.sampled_from(["dense", "flip", "transpose"]))
    x = xp.asarray(a)
    if view == "flip" and a.ndim:
        return xp.flip(x, axis=0), np.flip(a, 0), seed
    if view == "transpose" and a.ndim >= 2:
        rev = tuple(range(a.ndim))[::-1]
        return xp.permute_dims(xp.asarray(np.ascontiguousarray(a.transpose(rev))), rev), a, seed
    return x, a, seed


@_PROP
@given(_arrays(), st.data())
def test_prop_take_take_along_axis(arr, data):
    x, a, seed = arr
    rng = np.random.default_rng(seed + 1)
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    n = a.shape[axis]
    k = data.draw(st.integers(0, 7))
    if n == 0:
        k = 0
    idx = rng.integers(-n, max(n, 1), k) if n else np.zeros(0, np.int64)
    _eq(xp.take(x, xp.asarray(idx), axis=axis), np.take(a, idx, axis=axis))
    ishape = list(a.shape)
    ishape[axis] = k
    ti = rng.integers(-n, max(n, 1), ishape) if n else np.zeros(ishape, np.int64)
    _eq(xp.take_along_axis(x, xp.asarray(ti), axis=axis), np.take_along_axis(a, ti, axis=axis))


@_PROP
@given(_arrays(), st.data())
def test_prop_concat_roll_pad(arr, data):
    x, a, seed = arr
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    _eq(xp.concat([x, x, x[:0] if a.shape and axis % a.ndim == 0 else x], axis=axis),
        np.concatenate([a, a, a[:0] if a.shape and axis % a.ndim == 0 else a], axis=axis))
    shift = data.draw(st.integers(-20, 20))
    _eq(xp.roll(x, shift, axis=axis), np.roll(a, shift, axis=axis))
    _eq(xp.roll(x, shift), np.roll(a, shift))
    lo, hi = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))
    pairs = [(0, 0)] * a.ndim
    pairs[axis] = (lo, hi)
    _eq(xp.pad(x, tuple(pairs)), np.pad(a, pairs))
    if a.shape[axis] > max(lo, hi):
        _eq(xp.pad(x, tuple(pairs), mode="reflect"), np.pad(a, pairs, mode="reflect"))
    if a.shape[axis]:
        _eq(xp.pad(x, tuple(pairs), mode="circular"), np.pad(a, pairs, mode="wrap"))
        _eq(xp.pad(x, tuple(pairs), mode="replicate"), np.pad(a, pairs, mode="edge"))


@_PROP
@given(_arrays(min_dims=1, max_dims=3), st.data())
def test_prop_getitem_setitem(arr, data):
    x, a, seed = arr
    rng = np.random.default_rng(seed + 2)
    m = rng.integers(0, 2, a.shape[:data.draw(st.integers(1, a.ndim))]).astype(bool)
    _eq(x[xp.asarray(m)], a[m])
    if all(a.shape):
        keys = tuple(rng.integers(-n, n, (3,)) for n in a.shape)
        _eq(x[tuple(xp.asarray(k) for k in keys)], a[keys])
        _eq(x[(slice(None),) + tuple(xp.asarray(k) for k in keys[1:])],
            a[(slice(None),) + keys[1:]])
    y = xp.asarray(a)            # a dense, writable copy
    ref = a.copy()
    v = _data(a.dtype.type, (), rng)
    y[xp.asarray(m)] = v.item()
    ref[m] = v
    _eq(y, ref)


@_PROP
@given(st.integers(0, 40), st.integers(1, 9), st.integers(1, 5), st.booleans(), st.integers(0, 99))
def test_prop_segment_sum_max(n, nseg, cols, sort_ids, seed):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((n, cols)).astype(np.float32)
    ids = rng.integers(0, nseg, n)
    if sort_ids:
        ids = np.sort(ids)
    ref = np.zeros((nseg, cols))
    np.add.at(ref, ids, data.astype(np.float64))
    got = xp.segment_sum(xp.asarray(data), xp.asarray(ids), nseg,
                         indices_are_sorted=sort_ids).to_numpy()
    mag = np.zeros((nseg, cols))
    np.add.at(mag, ids, np.abs(data.astype(np.float64)))
    cnt = np.bincount(ids, minlength=nseg)[:, None]
    assert_terms_close(got, ref, "float32", terms=1, scale=cnt * mag, what="segment_sum")
    mx = np.full((nseg, cols), -np.inf)
    np.maximum.at(mx, ids, data.astype(np.float64))
    got = xp.segment_max(xp.asarray(data), xp.asarray(ids), nseg,
                         indices_are_sorted=sort_ids).to_numpy()
    np.testing.assert_array_equal(got, mx.astype(np.float32))
