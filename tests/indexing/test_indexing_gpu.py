"""Indexing family on the GPU against torch / float64 references: index_select (+ embedding,
strided operands, bad indices with status and poisoned guard regions), gather / scatter along an
axis, scatter_add, backward plans vs torch.autograd, masked_fill and one_hot."""

import pytest

import baracuda_dsl as bd
from _gpu_helpers import (assert_terms_close, bytes_equal as _bytes_equal, poisoned, rand,
                          snapshot, untouched)
from baracuda_dsl.ops.indexing.indexing import (GatherAxisArgs, GatherAxisBackwardArgs,
                                                GatherAxisBackwardPlan, GatherAxisDescriptor,
                                                GatherAxisPlan, IndexSelectArgs,
                                                IndexSelectDescriptor, IndexSelectPlan,
                                                MaskedFillArgs, MaskedFillBackwardArgs,
                                                MaskedFillBackwardPlan, MaskedFillDescriptor,
                                                MaskedFillPlan, OneHotArgs, OneHotDescriptor,
                                                OneHotPlan, ScatterAddPlan, ScatterAxisArgs,
                                                ScatterAxisBackwardArgs, ScatterAxisBackwardPlan,
                                                ScatterAxisDescriptor, ScatterAxisPlan)

pytestmark = pytest.mark.gpu

COPY_DTYPES = ["bool", "int8", "int64", "bfloat16", "float32", "float64", "complex64"]


@pytest.fixture(scope="module")
def torch():
    t = pytest.importorskip("torch")
    if not t.cuda.is_available():
        pytest.skip("no CUDA")
    return t


def _rand(torch, shape, dtype, gen):
    return rand(torch, shape, dtype, gen, low=1)


def _guarded(torch, shape, dtype, guard=64):
    """(buffer poisoned everywhere (_gpu_helpers.poisoned: NaN / iinfo.max / a 0x7F bool
    byte), the view of ``shape`` inside it past ``guard`` leading elements, a function telling
    whether the ``guard`` elements on either side still hold their poison bytes)."""
    n = 1
    for s in shape:
        n *= s
    buf = poisoned(torch, (n + 2 * guard,), dtype)
    head, tail = snapshot(torch, buf[:guard]), snapshot(torch, buf[guard + n:])

    def guards_intact():
        return untouched(torch, buf[:guard], head) and untouched(torch, buf[guard + n:], tail)

    return buf, buf[guard:guard + n].view(shape), guards_intact


def _status(torch):
    return torch.zeros(1, device="cuda", dtype=torch.int32)


def _zero_bad(torch, ref, good, axis):
    """ref with the slices of bad indices zeroed (all bytes)."""
    r = ref.clone()
    sl = [slice(None)] * r.dim()
    sl[axis] = ~good
    z = r[tuple(sl)]
    r[tuple(sl)] = torch.zeros_like(z)
    return r


# =========================================================================== index_select
@pytest.mark.parametrize("dtype", COPY_DTYPES)
@pytest.mark.parametrize("shape,axis", [((33, 16), 0), ((7, 1000, 3), 1), ((5, 9), 1),
                                        ((4, 6, 8, 2), 2), ((1,), 0)])
def test_index_select(torch, dtype, shape, axis):
    g = torch.Generator(device="cuda").manual_seed(0)
    x = _rand(torch, shape, dtype, g)
    m = shape[axis]
    for ix in (torch.int32, torch.int64):
        idx = torch.randint(-m, m, (11,), generator=g, device="cuda").to(ix)
        d = IndexSelectDescriptor(shape, axis, 11, dtype, "int32" if ix == torch.int32 else
                                  "int64")
        p = IndexSelectPlan.select(d)
        _, out, guards_intact = _guarded(torch, d.out_shape, dtype)
        st = _status(torch)
        p.run(IndexSelectArgs(x, idx, out, st))
        ref = torch.index_select(x, axis, (idx.long() % m))
        assert _bytes_equal(torch, out, ref)
        assert int(st.item()) == 0
        assert guards_intact()


def test_index_select_bad_indices(torch):
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(10, 24, device="cuda", generator=g).to(torch.bfloat16)
    idx = torch.tensor([3, -1, 10, -11, 3, 9, 1000], device="cuda")
    good = (idx >= -10) & (idx < 10)
    p = IndexSelectPlan.select(IndexSelectDescriptor((10, 24), 0, 7, "bfloat16"))
    _, out, guards_intact = _guarded(torch, (7, 24), "bfloat16")
    st = _status(torch)
    p.run(IndexSelectArgs(x, idx, out, st))
    ref = _zero_bad(torch, x[torch.where(good, idx % 10, 0)], good, 0)
    assert _bytes_equal(torch, out, ref)
    assert int(st.item()) == 1
    assert guards_intact()
    # without status: same output, no error
    out2 = poisoned(torch, (7, 24), "bfloat16")
    p.run(IndexSelectArgs(x, idx, out2))
    assert _bytes_equal(torch, out2, ref)


def test_index_select_strided(torch):
    g = torch.Generator(device="cuda").manual_seed(2)
    base = torch.randn(6, 8, 10, device="cuda", generator=g)
    x = base.permute(2, 0, 1)                                        # (10, 6, 8) strided
    idx_full = torch.randint(-6, 6, (14,), generator=g, device="cuda")
    idx = idx_full[::2]                                              # strided index
    p = IndexSelectPlan.select(IndexSelectDescriptor(tuple(x.shape), 1, 7, "float32"))
    outb = torch.full((8, 7, 10), float("nan"), device="cuda")
    out = outb.permute(2, 1, 0)                                      # strided out (10, 7, 8)
    p.run(IndexSelectArgs(x, idx, out))
    ref = torch.index_select(x, 1, idx % 6)
    assert torch.equal(out, ref)
    # negative-stride x via flip (torch has no negative strides: use a TensorView)
    from baracuda_dsl.tensor import TensorView

    y = torch.randn(9, 5, device="cuda", generator=g)
    rev = TensorView(y.data_ptr() + 8 * 5 * 4, (9, 5), (-5, 1), bd.float32, 0)
    p2 = IndexSelectPlan.select(IndexSelectDescriptor((9, 5), 0, 4, "float32"))
    idx2 = torch.tensor([0, 8, -1, 4], device="cuda")
    out2 = poisoned(torch, (4, 5), "float32")
    p2.run(IndexSelectArgs(rev, idx2, out2))
    assert torch.equal(out2, torch.flip(y, (0,))[idx2 % 9])


def test_index_select_empty_and_embedding(torch):
    p = IndexSelectPlan.select(IndexSelectDescriptor((5, 4), 0, 0, "float32"))
    p.run(IndexSelectArgs(torch.zeros(5, 4, device="cuda"), torch.zeros(0, dtype=torch.long,
                                                                          device="cuda"),
                          torch.zeros(0, 4, device="cuda")))
    g = torch.Generator(device="cuda").manual_seed(3)
    w = torch.randn(1000, 4096, device="cuda", generator=g).to(torch.bfloat16)
    tok = torch.randint(0, 1000, (333,), device="cuda", generator=g)
    out = poisoned(torch, (333, 4096), "bfloat16")
    p = IndexSelectPlan.select(IndexSelectDescriptor((1000, 4096), 0, 333, "bfloat16"))
    assert dict(p.sku().knobs)["itemsize"] == 16
    p.run(IndexSelectArgs(w, tok, out))
    assert torch.equal(out, torch.nn.functional.embedding(tok, w))


# ============================================================================ gather_axis
@pytest.mark.parametrize("dtype", COPY_DTYPES)
@pytest.mark.parametrize("shape,ishape,axis", [((4, 9), (3, 5), 1), ((7, 3, 5), (9, 2, 5), 0),
                                               ((2, 3, 4, 5, 6), (2, 3, 4, 5, 7), 4),
                                               ((1001,), (77,), 0), ((3, 0), (3, 0), 1)])
def test_gather_axis(torch, dtype, shape, ishape, axis):
    g = torch.Generator(device="cuda").manual_seed(4)
    x = _rand(torch, shape, dtype, g)
    m = shape[axis]
    idx = torch.randint(-m, max(m, 1), ishape, generator=g, device="cuda") if m else \
        torch.zeros(ishape, dtype=torch.long, device="cuda")
    p = GatherAxisPlan.select(GatherAxisDescriptor(shape, ishape, axis, dtype))
    _, out, guards_intact = _guarded(torch, ishape, dtype)
    st = _status(torch)
    p.run(GatherAxisArgs(x, idx, out, st))
    if out.numel():
        ref = torch.gather(x, axis, idx % m)
        assert _bytes_equal(torch, out, ref)
    assert int(st.item()) == 0
    assert guards_intact()


def test_gather_axis_bad_and_strided(torch):
    g = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randn(8, 6, device="cuda", generator=g).t()           # (6, 8) transposed
    idx = torch.randint(-8, 8, (5, 12), generator=g, device="cuda")[:, ::2]   # (5, 6) strided
    idx[0, 0] = 8
    idx[4, 5] = -9
    p = GatherAxisPlan.select(GatherAxisDescriptor((6, 8), (5, 6), 1, "float32"))
    out = torch.full((5, 6), float("nan"), device="cuda")
    st = _status(torch)
    p.run(GatherAxisArgs(x, idx, out, st))
    good = (idx >= -8) & (idx < 8)
    ref = torch.gather(x[:5], 1, torch.where(good, idx % 8, 0))
    ref[~good] = 0
    assert torch.equal(out, ref) and int(st.item()) == 1


# ========================================================================= scatter_axis
def test_scatter_assign_distinct(torch):
    g = torch.Generator(device="cuda").manual_seed(6)
    for dtype in COPY_DTYPES:
        self_ = _rand(torch, (4, 10), dtype, g)
        src = _rand(torch, (4, 6), dtype, g)
        idx = torch.stack([torch.randperm(10, generator=g, device="cuda")[:6] for _ in range(4)])
        idx[1] -= 10                                                  # negative, same rows
        out = self_.clone()
        p = ScatterAxisPlan.select(ScatterAxisDescriptor((4, 10), (4, 6), 1, dtype))
        p.run(ScatterAxisArgs(idx, src, out))
        ref = self_.clone().scatter_(1, idx % 10, src)
        assert _bytes_equal(torch, out, ref)


def test_scatter_bad_indices_skipped(torch):
    self_ = torch.arange(20, device="cuda", dtype=torch.float32).view(4, 5)
    idx = torch.tensor([[0, 5], [-6, 1], [2, 2], [100, -1]], device="cuda")
    src = torch.full((4, 2), -1.0, device="cuda")
    out = self_.clone()
    st = _status(torch)
    ScatterAxisPlan.select(ScatterAxisDescriptor((4, 5), (4, 2), 1, "float32")).run(
        ScatterAxisArgs(idx, src, out, st))
    ref = self_.clone()
    ref[0, 0] = ref[1, 1] = ref[2, 2] = ref[3, 4] = -1
    assert torch.equal(out, ref) and int(st.item()) == 1


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int32",
                                   "int64"])
def test_scatter_add(torch, dtype):
    g = torch.Generator(device="cuda").manual_seed(7)
    dt = getattr(torch, dtype)
    self_ = _rand(torch, (33, 50), dtype, g)
    src = _rand(torch, (33, 200), dtype, g)
    idx = torch.randint(-50, 50, (33, 200), generator=g, device="cuda")   # many duplicates
    out = self_.clone()
    p = ScatterAddPlan.select(ScatterAxisDescriptor((33, 50), (33, 200), 1, dtype, reduce="add"))
    p.run(ScatterAxisArgs(idx, src, out))
    ref = self_.double().scatter_add(1, idx % 50, src.double())
    if dt.is_floating_point:
        # atomic adds in the element dtype (red.global.add): each of the 1 + count adds into an
        # element rounds to the dtype, relative to the running sum ≤ |self| + Σ|src|
        count = torch.zeros_like(ref).scatter_add(1, idx % 50, torch.ones_like(src.double()))
        mag = self_.double().abs().scatter_add(1, idx % 50, src.double().abs())
        assert_terms_close(out, ref, dtype, compute=dtype, terms=1, scale=(1 + count) * mag,
                           what=f"scatter_add {dtype}")
    else:
        assert torch.equal(out, ref.to(dt))


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("dtype", ["int32", "int64", "float32"])
def test_scatter_reduce_minmax(torch, reduce, dtype):
    g = torch.Generator(device="cuda").manual_seed(8)
    self_ = _rand(torch, (6, 20), dtype, g)
    src = _rand(torch, (6, 40), dtype, g)
    idx = torch.randint(0, 20, (6, 40), generator=g, device="cuda")
    out = self_.clone()
    ScatterAxisPlan.select(ScatterAxisDescriptor((6, 20), (6, 40), 1, dtype, reduce=reduce)).run(
        ScatterAxisArgs(idx, src, out))
    ref = self_.clone().scatter_reduce(1, idx, src, reduce, include_self=True)
    assert torch.equal(out, ref)


# ============================================================================== backward
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_gather_axis_backward(torch, dtype):
    g = torch.Generator(device="cuda").manual_seed(9)
    dt = getattr(torch, dtype)
    x = torch.randn(7, 30, device="cuda", generator=g, dtype=torch.float64, requires_grad=True)
    idx = torch.randint(0, 30, (7, 45), generator=g, device="cuda")
    dy = torch.randn(7, 45, device="cuda", generator=g, dtype=torch.float64).to(dt)
    torch.gather(x, 1, idx).backward(dy.double())        # the reference on the rounded dy
    dx = poisoned(torch, (7, 30), dtype)
    GatherAxisBackwardPlan.select(GatherAxisDescriptor((7, 30), (7, 45), 1, dtype)).run(
        GatherAxisBackwardArgs(dy, idx, dx))
    # zeroed, then atomic adds in the element dtype: count roundings per element relative to
    # the running sums ≤ Σ|dy| (elements no index hits stay exactly 0)
    count = torch.zeros(7, 30, device="cuda", dtype=torch.float64).scatter_add(
        1, idx, torch.ones(7, 45, device="cuda", dtype=torch.float64))
    mag = torch.zeros_like(count).scatter_add(1, idx, dy.double().abs())
    assert_terms_close(dx, x.grad, dtype, compute=dtype, terms=1, scale=count * mag,
                       what=f"gather_axis backward {dtype}")


@pytest.mark.parametrize("reduce", ["assign", "add"])
def test_scatter_backward(torch, reduce):
    g = torch.Generator(device="cuda").manual_seed(10)
    self_ = torch.randn(5, 12, device="cuda", generator=g, dtype=torch.float64,
                        requires_grad=True)
    src = torch.randn(5, 4, device="cuda", generator=g, dtype=torch.float64, requires_grad=True)
    idx = torch.stack([torch.randperm(12, generator=g, device="cuda")[:4] for _ in range(5)])
    y = self_.scatter(1, idx, src) if reduce == "assign" else self_.scatter_add(1, idx, src)
    dy = torch.randn(5, 12, device="cuda", generator=g, dtype=torch.float64)
    y.backward(dy)
    d_self = torch.full((5, 12), float("nan"), device="cuda", dtype=torch.float64)
    d_src = torch.full((5, 4), float("nan"), device="cuda", dtype=torch.float64)
    p = ScatterAxisBackwardPlan.select(ScatterAxisDescriptor((5, 12), (5, 4), 1, "float64",
                                                             reduce=reduce))
    p.run(ScatterAxisBackwardArgs(dy, idx, d_src=d_src, d_self=d_self))
    assert torch.equal(d_src, src.grad) and torch.equal(d_self, self_.grad)


# =========================================================================== masked_fill
@pytest.mark.parametrize("dtype,value", [("float32", -1.5), ("bfloat16", float("-inf")),
                                         ("int64", 7), ("bool", True), ("complex64", 2 + 1j)])
def test_masked_fill(torch, dtype, value):
    g = torch.Generator(device="cuda").manual_seed(11)
    x = _rand(torch, (9, 33), dtype, g)
    mask = torch.rand(33, generator=g, device="cuda") > 0.5
    out = poisoned(torch, tuple(x.shape), dtype)
    MaskedFillPlan.select(MaskedFillDescriptor((9, 33), (33,), dtype, value)).run(
        MaskedFillArgs(x, mask, out))
    assert _bytes_equal(torch, out, x.masked_fill(mask, value))


def test_masked_fill_backward(torch):
    g = torch.Generator(device="cuda").manual_seed(12)
    x = torch.randn(4, 7, device="cuda", generator=g, dtype=torch.float64, requires_grad=True)
    mask = (torch.rand(4, 1, generator=g, device="cuda") > 0.5)
    dy = torch.randn(4, 7, device="cuda", generator=g, dtype=torch.float64)
    x.masked_fill(mask, 3.0).backward(dy)
    dx = poisoned(torch, (4, 7), "float64")
    MaskedFillBackwardPlan.select(MaskedFillDescriptor((4, 7), (4, 1), "float64")).run(
        MaskedFillBackwardArgs(dy, mask, dx))
    assert torch.equal(dx, x.grad)


# =============================================================================== one_hot
@pytest.mark.parametrize("dtype", ["int64", "float32", "bfloat16", "bool", "int8"])
def test_one_hot(torch, dtype):
    g = torch.Generator(device="cuda").manual_seed(13)
    idx = torch.randint(-5, 5, (6, 14), generator=g, device="cuda")[:, ::2]   # strided
    d = OneHotDescriptor((6, 7), 5, dtype=dtype)
    out = torch.full((6, 7, 5), 3, device="cuda").to(getattr(torch, dtype))
    st = _status(torch)
    OneHotPlan.select(d).run(OneHotArgs(idx, out, st))
    ref = torch.nn.functional.one_hot(idx % 5, 5).to(getattr(torch, dtype))
    assert torch.equal(out, ref) and int(st.item()) == 0
    bad = torch.tensor([0, 5, -6, 2], device="cuda", dtype=torch.int32)
    out = torch.full((4, 5), 9, device="cuda", dtype=torch.int64)
    st = _status(torch)
    OneHotPlan.select(OneHotDescriptor((4,), 5, index="int32")).run(OneHotArgs(bad, out, st))
    ref = torch.nn.functional.one_hot(torch.tensor([0, 0, 0, 2], device="cuda"), 5)
    ref[1:3] = 0
    assert torch.equal(out, ref) and int(st.item()) == 1
