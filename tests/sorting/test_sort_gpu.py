"""Sorting plans on the GPU against numpy / torch references: sort / argsort (== numpy
argsort(kind='stable'); descending == the stable descending order), values bit-exact, NaN / ±0 /
±inf placement, every dtype, axis variants, row lengths 0…4097, the small-row bucket edges,
long rows (3·2^20+1), many rows (4096×4096), strided inputs; msort; top-k and kthvalue vs torch
(values exact, indices valid); searchsorted vs numpy (both sides, sorter, batched); backward
plans vs torch.autograd."""

import numpy as np
import pytest

from _gpu_helpers import poisoned_like
from baracuda_dsl.ops.sorting.searchsorted import (SearchsortedArgs, SearchsortedDescriptor,
                                                   SearchsortedPlan)
from baracuda_dsl.ops.sorting.sort import (ArgsortArgs, ArgsortDescriptor, ArgsortPlan,
                                           KthvalueArgs, KthvalueDescriptor, KthvaluePlan,
                                           MsortArgs, MsortDescriptor, MsortPlan, SortArgs,
                                           SortDescriptor, SortPlan, TopkArgs, TopkDescriptor,
                                           TopkPlan)
from baracuda_dsl.ops.sorting.sort_bw import (KthvalueBackwardArgs, KthvalueBackwardDescriptor,
                                              KthvalueBackwardPlan, SortBackwardArgs,
                                              SortBackwardDescriptor, SortBackwardPlan,
                                              TopkBackwardArgs, TopkBackwardDescriptor,
                                              TopkBackwardPlan)

pytestmark = pytest.mark.gpu
torch = None  # set per test by _need_torch


@pytest.fixture(autouse=True)
def _need_torch():
    """Every test here uses torch: skip per test (not the whole module at import), so a GPU host
    without torch fails (tests/conftest.py) and a CPU machine without it skips cleanly."""
    global torch
    torch = pytest.importorskip("torch")

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64"]
NPD = {"bool": np.bool_, "int8": np.int8, "int16": np.int16, "int32": np.int32,
       "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
       "uint64": np.uint64, "float16": np.float16, "bfloat16": np.float32,
       "float32": np.float32, "float64": np.float64}
BITS = {np.dtype(np.bool_): np.uint8, 1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _host(dtype, shape, rng, special=True):
    """Random host data with ties; floats get NaN / ±0 / ±inf sprinkled in."""
    npd = NPD[dtype]
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dtype.startswith(("float", "bfloat")):
        a = (rng.integers(-40, 40, shape) * 0.25).astype(npd)
        if special and a.size:
            sp = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], npd)
            m = rng.random(shape) < 0.05
            a[m] = sp[rng.integers(0, 5, int(m.sum()))]
        return a
    info = np.iinfo(npd)
    lo, hi = max(info.min, -100), min(info.max, 100)
    a = rng.integers(lo, hi, shape, dtype=np.int64).astype(npd)
    if a.size:
        a.reshape(-1)[0] = info.max
        a.reshape(-1)[-1] = info.min
    return a


def _dev(a, dtype):
    # reshape back: np.ascontiguousarray makes a 0-d array (kthvalue of a 1-d row without
    # keepdims) 1-d, and a plan rejects an output of shape (1,) where () is due
    t = torch.from_numpy(np.ascontiguousarray(a).reshape(np.shape(a))).cuda()
    return t.to(torch.bfloat16) if dtype == "bfloat16" else t


def _np(t):
    """Host numpy of a device tensor; bf16 as float32 (exact)."""
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.cpu().numpy()


def _ref_host(a, dtype):
    """The values the device tensor holds, on the host (bf16 rounded)."""
    return _np(_dev(a, dtype)) if dtype == "bfloat16" else a


def _stable_argsort(a, axis, descending):
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    n = a.shape[axis]
    return n - 1 - np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(BITS[a.itemsize] if a.dtype != np.bool_ else np.uint8)


def _poison_vals(shape, tdt):
    v = torch.empty(shape, dtype=tdt, device="cuda")
    if v.numel():   # reshape(-1) first: a 0-d tensor cannot be viewed as a narrower dtype
        v.reshape(-1).view(torch.uint8).fill_(0xFF)
    return v


def _poison_idx(shape):
    return torch.full(shape, -7, dtype=torch.int64, device="cuda")


def _against(ref_host, dtype):
    """An output whose every byte differs from the expected result (the host array
    ``ref_host`` of ``dtype``): an element left unwritten fails the bit-exact comparison
    whatever its expected value (a fixed poison can equal a sorted key: ints hold -1, min, max)."""
    out = poisoned_like(torch, _dev(ref_host, dtype))
    assert tuple(out.shape) == np.shape(ref_host), (tuple(out.shape), np.shape(ref_host))
    return out


def _check_sort(x_t, host, axis, descending):
    dtype = str(x_t.dtype).replace("torch.", "")
    desc = SortDescriptor(tuple(x_t.shape), axis, dtype, descending)
    plan = SortPlan.select(desc)
    ref_i = _stable_argsort(host, axis, descending)
    ref_v = np.take_along_axis(host, ref_i, axis)
    vals, idx = _against(ref_v, dtype), _against(ref_i, "int64")
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
    plan.run(SortArgs(x_t, vals, idx), workspace=ws)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(_np(idx), ref_i)
    got_v = _np(vals)
    np.testing.assert_array_equal(_bits(got_v), _bits(ref_v))
    # argsort alone
    ap = ArgsortPlan.select(ArgsortDescriptor(tuple(x_t.shape), axis, dtype, descending))
    idx2 = _against(ref_i, "int64")
    ap.run(ArgsortArgs(x_t, idx2), workspace=ws)
    torch.cuda.synchronize()
    assert torch.equal(idx, idx2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_every_dtype(dtype, descending):
    rng = np.random.default_rng(3)
    for shape in [(1000,), (5, 33), (3, 4097), (2, 7, 65)]:
        a = _host(dtype, shape, rng)
        x = _dev(a, dtype)
        _check_sort(x, _ref_host(a, dtype), -1, descending)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 33, 63, 64, 65, 255, 256, 257, 1000, 1023, 1024, 1025,
                               4095, 4096, 4097, 10000])
def test_sort_row_lengths(n):
    rng = np.random.default_rng(n)
    for dtype in ("float32", "int64"):
        for rows in (1, 3):
            a = _host(dtype, (rows, n), rng)
            _check_sort(_dev(a, dtype), a, 1, n % 2 == 1)


def test_sort_nan_zero_inf_placement():
    a = np.array([np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0, -np.nan, -0.0, 0.0, np.nan, -1.0],
                 np.float32)
    for descending in (False, True):
        for dtype in ("float32", "float16", "float64", "bfloat16"):
            h = _ref_host(a.astype(NPD[dtype]), dtype)
            _check_sort(_dev(a.astype(NPD[dtype]), dtype), h, 0, descending)
    x = torch.from_numpy(a).cuda()
    vals = torch.empty_like(x)
    SortPlan.select(SortDescriptor((11,), 0, "float32")).run(SortArgs(x, vals))
    v = vals.cpu().numpy()
    assert np.isnan(v[-3:]).all() and v[0] == -np.inf and v[-4] == np.inf
    assert [np.signbit(t) for t in v[2:6]] == [False, True, True, False]   # ±0 in input order
    SortPlan.select(SortDescriptor((11,), 0, "float32", True)).run(SortArgs(x, vals))
    v = vals.cpu().numpy()
    assert np.isnan(v[:3]).all() and v[3] == np.inf and v[-1] == -np.inf


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2])
def test_sort_axes_and_strided(axis):
    rng = np.random.default_rng(5)
    a = _host("float32", (6, 70, 9), rng)
    base = _dev(a, "float32")
    _check_sort(base, a, axis, False)
    t = base.transpose(0, 2)                                         # non-contiguous
    _check_sort(t, np.ascontiguousarray(a.transpose(2, 1, 0)), axis, True)
    s = base[:, ::3, 1::2]                                           # step slices
    _check_sort(s, a[:, ::3, 1::2], axis, False)
    big = _dev(_host("int32", (5000, 4), rng), "int32")
    _check_sort(big.t(), _np(big).T.copy(), 1, False)                # long strided rows (radix)


def test_sort_rank0_and_rank8():
    x = torch.tensor(3.5, device="cuda")
    vals, idx = torch.empty_like(x), torch.empty((), dtype=torch.int64, device="cuda")
    SortPlan.select(SortDescriptor((), 0, "float32")).run(SortArgs(x, vals, idx))
    assert vals.item() == 3.5 and idx.item() == 0
    rng = np.random.default_rng(8)
    a = _host("int16", (2, 1, 3, 2, 1, 2, 3, 5), rng)
    for axis in (0, 3, 7):
        _check_sort(_dev(a, "int16"), a, axis, axis == 3)


def test_sort_long_rows():
    rng = np.random.default_rng(11)
    n = 3 * 2**20 + 1
    a = rng.standard_normal(n).astype(np.float32)
    a[::1000] = 0.5                                                  # ties
    a[7::5000] = np.nan
    _check_sort(_dev(a, "float32"), a, 0, False)
    b = rng.integers(-2**40, 2**40, (2, n // 3)).astype(np.int64)
    _check_sort(_dev(b, "int64"), b, 1, True)


@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8", "float16", "bfloat16"])
@pytest.mark.parametrize("kind", ["equal", "two", "zeros"])
def test_sort_long_rows_skewed(dtype, kind):
    """Radix path with degenerate digit histograms: every key equal (one bin per pass), two
    values, ±0 mixed (equal keys, values kept bit-exact in input order); odd lengths spanning
    several tiles."""
    rng = np.random.default_rng(17)
    for rows, n in [(1, 65537), (2, 20001)]:
        a = _select_data(dtype, (rows, n), rng, "equal" if kind == "zeros" else kind)
        if kind == "zeros" and dtype.startswith(("float", "bfloat")):
            a = np.where(rng.random((rows, n)) < 0.5, 0.0, -0.0).astype(a.dtype)
        _check_sort(_dev(a, dtype), _ref_host(a, dtype), 1, rows == 2)


def test_sort_many_rows():
    rng = np.random.default_rng(12)
    a = rng.standard_normal((4096, 4096)).astype(np.float32)
    x = _dev(a, "float32")
    _check_sort(x, a, 1, False)
    ref = torch.sort(x, dim=1, stable=True)
    vals = torch.empty_like(x)
    SortPlan.select(SortDescriptor(a.shape, 1, "float32")).run(SortArgs(x, vals))
    assert torch.equal(vals, ref.values)


def test_deterministic():
    rng = np.random.default_rng(13)
    a = rng.integers(0, 5, (3, 9000)).astype(np.float32)
    x = _dev(a, "float32")
    p = SortPlan.select(SortDescriptor(a.shape, 1, "float32", True))
    ws = torch.empty(p.workspace_size(), dtype=torch.uint8, device="cuda")
    outs = []
    for _ in range(3):
        i = _poison_idx(a.shape)
        p.run(SortArgs(x, None, i), workspace=ws)
        outs.append(i.clone())
    assert torch.equal(outs[0], outs[1]) and torch.equal(outs[1], outs[2])


def test_msort():
    rng = np.random.default_rng(14)
    a = _host("float64", (300, 5), rng)
    x = _dev(a, "float64")
    v = _poison_vals(a.shape, torch.float64)
    MsortPlan.select(MsortDescriptor(a.shape, "float64")).run(MsortArgs(x, v))
    np.testing.assert_array_equal(_bits(_np(v)), _bits(np.sort(a, axis=0, kind="stable")))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int32",
                                   "int64", "uint8", "int8"])
@pytest.mark.parametrize("shape,k,axis", [((1000,), 10, 0), ((7, 33), 33, 1), ((4097, 3), 5, 0),
                                          ((5, 6000), 100, -1), ((4, 5), 0, 1), ((2, 3, 65), 1, 2)])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_vs_torch(dtype, shape, k, axis, largest):
    rng = np.random.default_rng(15)
    a = _host(dtype, shape, rng, special=False)
    x = _dev(a, dtype)
    plan = TopkPlan.select(TopkDescriptor(shape, k, axis, dtype, largest))
    out_shape = TopkDescriptor(shape, k, axis, dtype, largest).out_shape
    v, i = _poison_vals(out_shape, x.dtype), _poison_idx(out_shape)
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
    plan.run(TopkArgs(x, v, i), workspace=ws)
    xr = x.float() if dtype in ("uint8", "int8") else x
    ref = torch.topk(xr, k, dim=axis, largest=largest, sorted=True)
    assert torch.equal(v.to(ref.values.dtype), ref.values)
    assert torch.equal(torch.gather(x, axis % len(shape), i), v)           # indices valid
    if k:
        assert int(i.min()) >= 0 and int(i.max()) < shape[axis]


def _select_data(dtype, shape, rng, kind):
    """Host data for the radix-select paths: random with ties / NaN / ±0, all keys equal, two
    values, or (mostly) distinct values (exercises the skipped position passes)."""
    a = _host(dtype, shape, rng, special=True)
    if kind == "distinct":
        a = rng.permutation(a.size).reshape(shape).astype(a.dtype)
    elif kind == "equal":
        a = np.full(shape, a.reshape(-1)[1], a.dtype)
    elif kind == "two":
        f = a.reshape(-1)
        a = np.where(rng.random(shape) < 0.5, f[1], f[2]).astype(a.dtype)
    return a


def _check_select(x, host, k, axis, largest, kth=False, keepdims=False, template=None):
    """top-k (or kthvalue) == columns [0, k) (column k-1) of the stable sort: values bit-exact,
    indices exact (ties: lowest positions first)."""
    dtype = str(x.dtype).replace("torch.", "")
    shape = tuple(x.shape)
    if kth:
        d = KthvalueDescriptor(shape, k, axis, dtype, keepdims)
        plan, out_shape = KthvaluePlan.select(d), d.out_shape
    else:
        d = TopkDescriptor(shape, k, axis, dtype, largest)
        plan, out_shape = TopkPlan.select(d), d.out_shape
    if template is not None:
        assert plan.sku().template == template
    ax = axis % len(shape)
    order = _stable_argsort(host, ax, largest and not kth)
    sl = [slice(None)] * len(shape)
    sl[ax] = slice(k - 1, k) if kth else slice(0, k)
    ref_i = order[tuple(sl)]
    ref_v = np.take_along_axis(host, ref_i, ax)
    if kth and not keepdims:
        ref_i, ref_v = np.squeeze(ref_i, ax), np.squeeze(ref_v, ax)
    assert tuple(ref_v.shape) == tuple(out_shape)
    v, i = _against(ref_v, dtype), _against(ref_i, "int64")
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
    plan.run((KthvalueArgs if kth else TopkArgs)(x, v, i), workspace=ws)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(_np(i), ref_i)
    np.testing.assert_array_equal(_bits(_np(v)), _bits(ref_v))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int32",
                                   "int64", "uint8", "bool"])
@pytest.mark.parametrize("kind", ["random", "equal", "two", "distinct"])
def test_topk_select_path_exact(dtype, kind):
    """sort_select top-k (rows ≤ 4096, k ≤ 1024 in a smaller bucket): k = 1, digit / bucket
    edges, k = n, many ties, NaNs, both directions."""
    rng = np.random.default_rng(21)
    for rows, n, ks in [(3, 4096, (1, 64, 65, 256, 257, 1000, 1024)), (5, 1000, (1, 63, 256)),
                        (2, 2049, (2, 255, 1024)), (4, 65, (1, 7)), (2, 257, (64, 257))]:
        a = _select_data(dtype, (rows, n), rng, kind)
        x = _dev(a, dtype)
        host = _ref_host(a, dtype)
        for k in ks:
            for largest in (True, False):
                tmpl = "sort_select" if k < n and k <= 256 else None
                _check_select(x, host, k, 1, largest, template=tmpl)


def test_topk_select_strided_and_axes():
    rng = np.random.default_rng(22)
    a = _host("float32", (3000, 6), rng)
    x = _dev(a, "float32")
    _check_select(x, a, 100, 0, True, template="sort_select")              # axis 0 (stride 6)
    _check_select(x.t(), np.ascontiguousarray(a.T), 64, 1, False, template="sort_select")
    b = _host("int16", (4, 5, 1500), rng)
    # torch has no negative strides: a reversed strided copy here (the namespace tests cover
    # negative-stride views)
    xb = _dev(b, "int16")[:, ::2].flip(-1)
    _check_select(xb, np.ascontiguousarray(b[:, ::2, ::-1]), 33, -1, True,
                  template="sort_select")
    big = _host("float32", (4096, 4096), rng)                              # the benchmark shape
    _check_select(_dev(big, "float32"), big, 64, 1, True, template="sort_select")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64", "int16", "uint8", "bool"])
@pytest.mark.parametrize("kind", ["random", "equal", "two", "distinct"])
def test_kthvalue_select_path_exact(dtype, kind):
    rng = np.random.default_rng(23)
    for shape, axis in [((1000,), 0), ((3, 4096), 1), ((2049, 3), 0), ((2, 300, 2), 1)]:
        a = _select_data(dtype, shape, rng, kind)
        x = _dev(a, dtype)
        host = _ref_host(a, dtype)
        n = shape[axis]
        for k in (1, 2, 256, 257, n // 2 + 1, n - 1, n):
            if 1 <= k <= n:
                for keep in (False, True):
                    _check_select(x, host, k, axis, False, kth=True, keepdims=keep,
                                  template="sort_select")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64", "int16"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_kthvalue_vs_torch(dtype, keepdims):
    rng = np.random.default_rng(16)
    for shape, axis in [((1000,), 0), ((7, 33), 1), ((5000, 3), 0), ((3, 4, 5), 1)]:
        a = _host(dtype, shape, rng, special=False)
        x = _dev(a, dtype)
        for k in (1, shape[axis] // 2 + 1, shape[axis]):
            d = KthvalueDescriptor(shape, k, axis, dtype, keepdims)
            plan = KthvaluePlan.select(d)
            v, i = _poison_vals(d.out_shape, x.dtype), _poison_idx(d.out_shape)
            ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
            plan.run(KthvalueArgs(x, v, i), workspace=ws)
            xr = x if dtype in ("float32", "float64") else x.float()
            ref = torch.kthvalue(xr, k, dim=axis, keepdim=keepdims)
            assert torch.equal(v.to(ref.values.dtype), ref.values)
            ik = i if keepdims else i.unsqueeze(axis)
            assert torch.equal(torch.gather(x, axis, ik), v if keepdims else v.unsqueeze(axis))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "bfloat16",
                                   "float16", "int64"])
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_vs_numpy(dtype, side):
    rng = np.random.default_rng(17)
    for n in (0, 1, 2, 7, 33, 1000, 4097):
        b = np.sort(_host(dtype, (n,), rng), kind="stable")
        bh = _ref_host(b, dtype)
        order = np.argsort(bh, kind="stable")
        bh = bh[order]
        bd_ = _dev(bh, dtype) if dtype != "bfloat16" else _dev(bh, dtype)
        q = _host(dtype, (5, 13), rng)
        qd = _dev(q, dtype)
        qh = _ref_host(q, dtype)
        for out_dt, tdt in (("int64", torch.int64), ("int32", torch.int32)):
            plan = SearchsortedPlan.select(SearchsortedDescriptor((n,), q.shape, dtype, side,
                                                                  out_dt))
            out = torch.full(q.shape, -5, dtype=tdt, device="cuda")
            plan.run(SearchsortedArgs(bd_, qd, out))
            np.testing.assert_array_equal(out.cpu().numpy(), np.searchsorted(bh, qh, side=side))
        # strided queries (transposed) and a sorter over an unsorted copy
        perm = rng.permutation(n)
        unsorted = _dev(bh[perm], dtype)
        sorter = torch.from_numpy(np.argsort(bh[perm], kind="stable")).cuda()
        plan = SearchsortedPlan.select(SearchsortedDescriptor((n,), (13, 5), dtype, side,
                                                              has_sorter=True))
        out = torch.full((13, 5), -5, dtype=torch.int64, device="cuda")
        plan.run(SearchsortedArgs(unsorted, qd.t(), out, sorter))
        np.testing.assert_array_equal(out.cpu().numpy(),
                                      np.searchsorted(bh[perm], qh.T, side=side,
                                                      sorter=np.argsort(bh[perm], kind="stable")))


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_batched_vs_torch(side):
    g = torch.Generator(device="cuda").manual_seed(0)
    b = torch.sort(torch.randint(0, 50, (3, 4, 100), device="cuda", generator=g).float(), -1).values
    q = torch.randint(-5, 55, (3, 4, 17), device="cuda", generator=g).float()
    ref = torch.searchsorted(b, q, side=side)
    for bb in (b, b.permute(1, 0, 2).contiguous().permute(1, 0, 2)):          # copy path
        plan = SearchsortedPlan.select(SearchsortedDescriptor(tuple(b.shape), tuple(q.shape),
                                                              "float32", side))
        ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
        out = torch.full(q.shape, -1, dtype=torch.int64, device="cuda")
        plan.run(SearchsortedArgs(bb, q, out), workspace=ws)
        assert torch.equal(out, ref)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_backward_vs_autograd(dtype):
    tdt = getattr(torch, dtype)
    g = torch.Generator(device="cuda").manual_seed(1)
    for shape, axis in [((7, 33), 1), ((5000,), 0), ((4, 9, 3), 1), ((3, 4097), -1)]:
        x = torch.randn(shape, device="cuda", generator=g).to(tdt).requires_grad_(True)
        dy = torch.randn(shape, device="cuda", generator=g).to(tdt)
        v, i = torch.sort(x, dim=axis, stable=True)
        (ref,) = torch.autograd.grad(v, x, dy)
        dx = _poison_vals(shape, tdt)
        SortBackwardPlan.select(SortBackwardDescriptor(shape, axis, dtype)).run(
            SortBackwardArgs(dy, i, dx))
        assert torch.equal(dx, ref)
        n = shape[axis]
        k = min(5, n)
        v, i = torch.topk(x, k, dim=axis)
        dyk = torch.randn(v.shape, device="cuda", generator=g).to(tdt)
        (ref,) = torch.autograd.grad(v, x, dyk)
        dx = _poison_vals(shape, tdt)
        TopkBackwardPlan.select(TopkBackwardDescriptor(shape, k, axis, dtype)).run(
            TopkBackwardArgs(dyk.transpose(0, -1).contiguous().transpose(0, -1) if
                             len(shape) > 1 else dyk, i, dx))
        assert torch.equal(dx, ref)
        for keep in (False, True):
            v, i = torch.kthvalue(x, 2, dim=axis, keepdim=keep)
            dyk = torch.randn(v.shape, device="cuda", generator=g).to(tdt)
            (ref,) = torch.autograd.grad(v, x, dyk)
            dx = _poison_vals(shape, tdt)
            KthvalueBackwardPlan.select(KthvalueBackwardDescriptor(shape, axis, dtype, keep)).run(
                KthvalueBackwardArgs(dyk, i, dx))
            assert torch.equal(dx, ref)


def test_in_place_rejected():
    from baracuda_dsl.errors import UnsupportedError

    x = torch.randn(5, 7, device="cuda")
    with pytest.raises(UnsupportedError):
        SortPlan.select(SortDescriptor((5, 7), 1, "float32")).run(SortArgs(x, x))
