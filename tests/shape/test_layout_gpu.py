"""Layout plans on the GPU against torch, bit-exact: permute (+ backward), contiguize, concat
(+ backward), flip (+ backward), fill, write-slice; odd / empty shapes, strided, transposed and
negative-stride inputs, poisoned outputs."""

import pytest

import baracuda_dsl as bd
from _gpu_helpers import bytes_equal, poisoned_like as _poisoned_like, rand as _rand

pytestmark = pytest.mark.gpu

DTYPES = ["bool", "int8", "bfloat16", "float32", "float64", "complex64"]
ALL = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
       "float64", "complex64", "complex128"]


def _eq(torch, a, b):
    return tuple(a.shape) == tuple(b.shape) and bytes_equal(torch, a, b)


def _neg(torch, t, dim):
    """A TensorView of ``t`` reversed along ``dim`` without a copy (negative stride; torch has
    none) and the torch tensor holding the same values (``torch.flip``)."""
    from baracuda_dsl.tensor import TensorView, as_view

    v = as_view(t)
    n, s = v.shape[dim], v.strides[dim]
    st = list(v.strides)
    st[dim] = -s
    ptr = v.ptr + max(n - 1, 0) * s * v.itemsize
    return TensorView(ptr, v.shape, st, v.dtype, v.device, owner=t), torch.flip(t, dims=(dim,))


def _views(torch, shape, dtype, gen):
    """name → (argument, torch tensor with the same values): dense, strided (step 2),
    transposed (permuted dense), negative-stride views of ``shape``."""
    d = _rand(torch, shape, dtype, gen)
    v = {"dense": (d, d)}
    if shape:
        base = _rand(torch, tuple(2 * s + 1 for s in shape), dtype, gen)
        t = base[tuple(slice(1, 1 + 2 * s, 2) for s in shape)]
        v["strided"] = (t, t)
        v["flipped"] = _neg(torch, _rand(torch, shape, dtype, gen), 0)
    if len(shape) >= 2:
        t = _rand(torch, shape[::-1], dtype, gen).permute(*reversed(range(len(shape))))
        v["transposed"] = (t, t)
        v["transposed-flipped"] = _neg(torch, t, len(shape) - 1)
    return v


PERM_CASES = [((7, 33), (1, 0)), ((1000, 65), (1, 0)), ((1, 7), (1, 0)), ((130, 257), (1, 0)),
              ((3, 40, 70), (0, 2, 1)), ((2, 33, 9, 17), (0, 2, 3, 1)), ((2, 9, 17, 33), (0, 3, 1, 2)),
              ((4, 5, 6), (2, 0, 1)), ((8, 16, 32), (1, 0, 2)), ((0, 5), (1, 0)), ((), ()),
              ((2, 3, 2, 3, 2, 40, 33), (0, 1, 2, 3, 4, 6, 5)), ((2,) * 8, (7, 6, 5, 4, 3, 2, 1, 0))]


@pytest.mark.parametrize("dtype", DTYPES)
def test_permute(dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.shape.layout import (PermuteArgs, PermuteBackwardArgs,
                                               PermuteBackwardPlan, PermuteDescriptor, PermutePlan)

    gen = torch.Generator(device="cuda").manual_seed(0)
    for shape, perm in PERM_CASES:
        d = PermuteDescriptor(shape, perm, dtype)
        plan = PermutePlan.select(d)
        bw = PermuteBackwardPlan.select(d)
        for name, (x, xt) in _views(torch, shape, dtype, gen).items():
            ref = xt.permute(*perm).contiguous() if perm else xt.clone()
            out = _poisoned_like(torch, ref)
            plan.run(PermuteArgs(x, out))
            torch.cuda.synchronize()
            assert _eq(torch, out, ref), (shape, perm, name, dtype)
            dx = _poisoned_like(torch, xt.contiguous())
            bw.run(PermuteBackwardArgs(out, dx))
            torch.cuda.synchronize()
            assert _eq(torch, dx, xt), ("bw", shape, perm, name, dtype)


def test_permute_all_dtypes_big():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.shape.layout import PermuteArgs, PermuteDescriptor, PermutePlan

    gen = torch.Generator(device="cuda").manual_seed(1)
    for dtype in ALL:
        for shape, perm in [((515, 1031), (1, 0)), ((3, 100, 129), (0, 2, 1)),
                            ((2, 64, 7, 9), (0, 2, 3, 1))]:
            x = _rand(torch, shape, dtype, gen)
            ref = x.permute(*perm).contiguous()
            out = _poisoned_like(torch, ref)
            plan = PermutePlan.select(PermuteDescriptor(shape, perm, dtype))
            plan.run(PermuteArgs(x, out))
            torch.cuda.synchronize()
            assert _eq(torch, out, ref), (shape, perm, dtype)
            # offset (misaligned) source
            big = _rand(torch, (x.numel() + 1,), dtype, gen)
            xo = big[1:].view(shape)
            plan.run(PermuteArgs(xo, out))
            torch.cuda.synchronize()
            assert _eq(torch, out, xo.permute(*perm)), ("offset", shape, perm, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_contiguize(dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.shape.layout import contiguize

    gen = torch.Generator(device="cuda").manual_seed(2)
    for shape in [(7,), (33, 65), (3, 40, 70), (2, 9, 17, 33), (1000, 3), (0, 4), ()]:
        for name, (x, xt) in _views(torch, shape, dtype, gen).items():
            ref = xt.contiguous()
            out = _poisoned_like(torch, ref)
            contiguize(x, out)
            torch.cuda.synchronize()
            assert _eq(torch, out, ref), (shape, name, dtype)
    # broadcast source
    x = _rand(torch, (1, 70), dtype, gen).expand(40, 70)
    out = _poisoned_like(torch, x.contiguous())
    contiguize(x, out)
    torch.cuda.synchronize()
    assert _eq(torch, out, x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_concat(dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.shape.layout import (ConcatArgs, ConcatBackwardArgs, ConcatBackwardPlan,
                                               ConcatDescriptor, ConcatPlan)

    gen = torch.Generator(device="cuda").manual_seed(3)
    for shapes, axis in [(((7, 33), (5, 33), (1, 33)), 0), (((7, 3), (7, 65), (7, 0), (7, 1)), 1),
                         (((2, 3, 4), (2, 5, 4)), -2), (((0, 4), (0, 4)), 0), (((1000,), (17,)), 0),
                         (((33, 40), (33, 24)), 1)]:
        xs, xts = [], []
        for i, s in enumerate(shapes):
            v = list(_views(torch, s, dtype, gen).values())
            xs.append(v[i % len(v)][0])
            xts.append(v[i % len(v)][1])
        ref = torch.cat(xts, dim=axis)
        d = ConcatDescriptor(shapes, axis, dtype)
        out = _poisoned_like(torch, ref)
        ConcatPlan.select(d).run(ConcatArgs(xs, out))
        torch.cuda.synchronize()
        assert _eq(torch, out, ref), (shapes, axis, dtype)
        # strided output: a column slice of a wider buffer
        wide = _poisoned_like(torch, torch.cat([ref, ref], dim=-1))
        outv = wide[..., : ref.shape[-1]] if ref.dim() else wide
        ConcatPlan.select(d).run(ConcatArgs(xs, outv))
        torch.cuda.synchronize()
        assert _eq(torch, outv, ref), ("strided out", shapes, axis, dtype)
        dxs = [_poisoned_like(torch, x.contiguous()) for x in xts]
        ConcatBackwardPlan.select(d).run(ConcatBackwardArgs(outv, dxs))
        torch.cuda.synchronize()
        for dx, x in zip(dxs, xts):
            assert _eq(torch, dx, x), ("bw", shapes, axis, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_flip(dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.shape.layout import (FlipArgs, FlipBackwardArgs, FlipBackwardPlan,
                                               FlipDescriptor, FlipPlan)

    gen = torch.Generator(device="cuda").manual_seed(4)
    for shape, axes in [((7,), (0,)), ((33, 65), (1,)), ((33, 65), (0,)), ((3, 40, 70), None),
                        ((2, 9, 17, 33), (1, 3)), ((0, 3), (0,)), ((1000, 5), (-1,))]:
        d = FlipDescriptor(shape, axes, dtype)
        dims = tuple(range(len(shape))) if axes is None else axes
        for name, (x, xt) in _views(torch, shape, dtype, gen).items():
            ref = torch.flip(xt, dims=dims)
            out = _poisoned_like(torch, ref)
            FlipPlan.select(d).run(FlipArgs(x, out))
            torch.cuda.synchronize()
            assert _eq(torch, out, ref), (shape, axes, name, dtype)
            dx = _poisoned_like(torch, ref)
            FlipBackwardPlan.select(d).run(FlipBackwardArgs(out, dx))
            torch.cuda.synchronize()
            assert _eq(torch, dx, xt), ("bw", shape, axes, name, dtype)


FILL_CASES = [("bool", True), ("bool", False), ("int8", -7), ("uint8", 255), ("int16", -2),
              ("int32", 123456), ("int64", -(2**40) - 3), ("float16", 0.5), ("bfloat16", -1.25),
              ("float32", 3.5), ("float32", 0.0), ("float64", -0.1), ("complex64", 1 - 2j),
              ("complex128", 0.5 + 0.25j), ("float32", float("inf"))]


@pytest.mark.parametrize("dtype,value", FILL_CASES)
def test_fill(dtype, value):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.shape.layout import FillArgs, FillDescriptor, FillPlan

    gen = torch.Generator(device="cuda").manual_seed(5)
    for shape in [(7,), (33, 65), (1000, 3), (0,), (), (4097,)]:
        out = _rand(torch, shape, dtype, gen)
        plan = FillPlan.select(FillDescriptor(shape, dtype, value))
        plan.run(FillArgs(out))
        torch.cuda.synchronize()
        assert _eq(torch, out, torch.full(shape, value, dtype=out.dtype, device="cuda")), \
            (shape, dtype, value)
    big = _rand(torch, (20, 30), dtype, gen)
    keep = big.clone()
    view, _ = _neg(torch, big[2:17:3, 1::2], 1)     # negative column stride
    FillPlan.select(FillDescriptor(tuple(view.shape), dtype, value)).run(FillArgs(view))
    torch.cuda.synchronize()
    keep[2:17:3, 1::2] = value
    assert _eq(torch, big, keep)
    # odd byte offset for 2/4-byte memsets → kernel path
    if out.element_size() > 1:
        b2 = _rand(torch, (65,), dtype, gen)
        v2 = b2[1:]
        FillPlan.select(FillDescriptor((64,), dtype, value)).run(FillArgs(v2))
        torch.cuda.synchronize()
        assert _eq(torch, v2, torch.full((64,), value, dtype=b2.dtype, device="cuda"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_write_slice(dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.shape.layout import WriteSliceArgs, WriteSliceDescriptor, WriteSlicePlan

    gen = torch.Generator(device="cuda").manual_seed(6)
    for ysh, sl in [((10, 12), (slice(2, 5), slice(None, None, 2))),
                    ((70, 80), (slice(3, 68), slice(5, 77))),
                    ((70, 80), (slice(None), slice(1, 80, 3))),
                    ((4, 50, 60), (slice(1, 3), slice(None), slice(7, 47))),
                    ((5, 6), (slice(0, 0), slice(None)))]:
        y = _rand(torch, ysh, dtype, gen)
        view = y[sl]
        for name, (x, xt) in _views(torch, tuple(view.shape), dtype, gen).items():
            for neg in (False, True):
                y2 = y.clone()
                ref = y.clone()
                if neg and view.dim():          # dst reversed along dim 0
                    v2, _ = _neg(torch, y2[sl], 0)
                    ref[sl] = torch.flip(xt, dims=(0,))
                else:
                    v2 = y2[sl]
                    ref[sl] = xt
                WriteSlicePlan.select(WriteSliceDescriptor(tuple(view.shape), dtype)).run(
                    WriteSliceArgs(x, v2))
                torch.cuda.synchronize()
                assert _eq(torch, y2, ref), (ysh, sl, name, neg, dtype)
    # broadcast source; transposed source into a slice (transpose kernel, strided dst)
    y = _rand(torch, (70, 80), dtype, gen)
    ref = y.clone()
    x = _rand(torch, (1, 60), dtype, gen).expand(50, 60)
    ref[10:60, 5:65] = x
    WriteSlicePlan.select(WriteSliceDescriptor((50, 60), dtype)).run(
        WriteSliceArgs(x, y[10:60, 5:65]))
    xt = _rand(torch, (60, 50), dtype, gen).t()
    ref[0:50, 0:60] = xt
    WriteSlicePlan.select(WriteSliceDescriptor((50, 60), dtype)).run(
        WriteSliceArgs(xt, y[0:50, 0:60]))
    torch.cuda.synchronize()
    assert _eq(torch, y, ref)


def test_write_slice_rejects_overlap():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.shape.layout import WriteSliceArgs, WriteSliceDescriptor, WriteSlicePlan

    y = torch.zeros(10, 10, device="cuda")
    p = WriteSlicePlan.select(WriteSliceDescriptor((5, 10), "float32"))
    with pytest.raises(bd.InvalidProblemError):
        p.run(WriteSliceArgs(y[2:7], y[0:5]))
    with pytest.raises(bd.InvalidProblemError):
        p.run(WriteSliceArgs(y[5:], y[0:1].expand(5, 10)))


def test_transpose_large_and_kernel_choice():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.shape.layout import PermuteArgs, PermuteDescriptor, PermutePlan

    x = torch.randn(4099, 2051, device="cuda").to(torch.bfloat16)
    plan = PermutePlan.select(PermuteDescriptor(tuple(x.shape), (1, 0), "bfloat16"))
    out = _poisoned_like(torch, x.t().contiguous())
    assert plan.kernels_for(PermuteArgs(x, out)) == ("transpose",)
    plan.run(PermuteArgs(x, out))
    torch.cuda.synchronize()
    assert _eq(torch, out, x.t())
