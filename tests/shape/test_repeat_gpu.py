"""RepeatPlan / StridedCopyPlan / RepeatBackwardPlan on the GPU against torch references."""

import pytest

from _gpu_helpers import bytes_equal as _bytes_equal, poisoned_like as _poisoned_like
from _gpu_helpers import assert_terms_close, rand as _rand

pytestmark = pytest.mark.gpu

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64", "complex64", "complex128"]
CASES = [((7,), (3,)), ((4, 6), (2, 3)), ((33, 1), (1, 5)), ((3, 5), (2, 1, 1)), ((1,), (1,)),
         ((1000,), (4,)), ((2, 3, 4), (1, 2, 1)), ((2,) * 8, (2,) * 8), ((0, 4), (2, 3)),
         ((4, 0), (1, 1)), ((5, 4097), (1, 2)), ((), (3, 2))]


@pytest.mark.parametrize("dtype", DTYPES)
def test_repeat_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.shape.repeat import RepeatArgs, RepeatDescriptor, RepeatPlan

    gen = torch.Generator(device="cuda").manual_seed(0)
    for shape, reps in CASES:
        base = _rand(torch, tuple(2 * s + 1 for s in shape), dtype, gen)
        views = {"dense": _rand(torch, shape, dtype, gen),
                 "strided": base[tuple(slice(1, 1 + 2 * s, 2) for s in shape)]}
        if len(shape) >= 2:
            views["transposed"] = _rand(torch, shape[::-1], dtype, gen).permute(
                *reversed(range(len(shape))))
        for name, x in views.items():
            if tuple(x.shape) != tuple(shape):
                continue
            ref = x.repeat(*reps)
            out = _poisoned_like(torch, ref)
            plan = RepeatPlan.select(RepeatDescriptor(shape, reps, dtype))
            plan.run(RepeatArgs(x, out))
            torch.cuda.synchronize()
            assert _bytes_equal(torch, out, ref), (dtype, shape, reps, name, plan.sku())


@pytest.mark.parametrize("dtype", ["int8", "bfloat16", "float32", "complex128"])
def test_repeat_negative_and_broadcast_strides(dtype):
    torch = pytest.importorskip("torch")
    import array_api as xp
    from baracuda_dsl.ops.shape.repeat import RepeatArgs, RepeatDescriptor, RepeatPlan

    gen = torch.Generator(device="cuda").manual_seed(1)
    t = _rand(torch, (9, 17), dtype, gen)
    x = xp.flip(xp.from_dlpack(t), axis=1)[::2]  # negative inner stride, strided rows
    xt = torch.flip(t, dims=(1,))[::2]
    b = xp.broadcast_to(xp.from_dlpack(t)[:1], (3, 17))  # zero stride
    for arr, ref_in in ((x, xt), (b, t[:1].expand(3, 17))):
        ref = ref_in.repeat(2, 3)
        out = _poisoned_like(torch, ref)
        RepeatPlan.select(RepeatDescriptor(arr.shape, (2, 3), dtype)).run(RepeatArgs(arr, out))
        torch.cuda.synchronize()
        assert _bytes_equal(torch, out, ref)


def test_strided_copy_and_misaligned():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.shape.repeat import strided_copy

    gen = torch.Generator(device="cuda").manual_seed(2)
    base = torch.randn(4097 * 3 + 1, generator=gen, device="cuda").to(torch.bfloat16)
    for src in (base[1:4097 * 3 + 1].view(3, 4097), base[1:].view(3, 4097)[:, ::3],
                base[:4096 * 3].view(3, 4096).t(), base[:12].view(3, 4)[:, 1:3]):
        out = _poisoned_like(torch, src.contiguous())
        strided_copy(src, out)
        torch.cuda.synchronize()
        assert torch.equal(out, src.contiguous())


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_repeat_backward_vs_float64(dtype):
    """dx = dy summed over the repeats: prod(reps) terms accumulated in f32 / f64, one rounding
    into dtype — every element within count·eps(compute) of Σ|dy| plus half an ulp."""
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.shape.repeat import (RepeatBackwardArgs, RepeatBackwardDescriptor,
                                               RepeatBackwardPlan, repeat_out_shape)

    gen = torch.Generator(device="cuda").manual_seed(3)
    for shape, reps in [((7,), (3,)), ((33, 5), (2, 3)), ((4, 1000), (5, 1, 1)), ((1,), (1,)),
                        ((3, 4), (0, 2)), ((2, 3, 4), (1, 7, 2)), ((0, 3), (2, 2)),
                        ((4097,), (2,))]:
        oshape = repeat_out_shape(shape, reps)
        big = torch.randn(tuple(2 * s for s in oshape), generator=gen, device="cuda")
        dy = big[tuple(slice(None, None, 2) for _ in oshape)].to(getattr(torch, dtype))
        pad = (1,) * (len(reps) - len(shape)) + tuple(shape)
        inter = []
        for r, n in zip(reps, pad):
            inter += [r, n]
        dims = tuple(range(0, 2 * len(reps), 2))
        ref = dy.double().reshape(inter).sum(dim=dims).reshape(shape)
        mag = dy.double().abs().reshape(inter).sum(dim=dims).reshape(shape)
        count = 1
        for r in reps:
            count *= r
        dx = torch.full(shape, float("nan"), device="cuda", dtype=getattr(torch, dtype))
        plan = RepeatBackwardPlan.select(RepeatBackwardDescriptor(shape, reps, dtype))
        plan.run(RepeatBackwardArgs(dy, dx))
        torch.cuda.synchronize()
        if dx.numel() == 0:
            continue
        assert_terms_close(dx, ref, dtype, terms=1, scale=count * mag, what=f"{shape} x {reps}")
        dx2 = torch.empty_like(dx)
        plan.run(RepeatBackwardArgs(dy, dx2))
        torch.cuda.synchronize()
        assert torch.equal(dx.view(-1).view(torch.uint8), dx2.view(-1).view(torch.uint8))
