"""LPPoolPlan / LPPoolBackwardPlan and xp.lp_pool / lp_pool_backward on the GPU against
torch.nn.functional.lp_pool1d / 2d / 3d in float64 on the GPU (forward) and float64
torch.autograd (backward): 1-/2-/3-D, odd sizes, ceil_mode, p = 1, 1.5, 2, 3 (signed inputs for
p = 1 and 2, positive ones otherwise), strided and channels-last inputs, NHWC outputs,
NaN-poisoned outputs, bit-identical backward reruns, empty batch."""

import math

import pytest

from _gpu_helpers import (assert_terms_close, bytes_equal, rand, image_out as _out)

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float16", "bfloat16", "float64"]
# (spatial, shape, kernel, stride, ceil_mode)
CASES = [(1, (2, 3, 17), 3, 2, False),
         (1, (1, 2, 10), 4, 3, True),
         (2, (2, 3, 15, 13), 3, 2, True),
         (2, (1, 4, 9, 11), (2, 3), (1, 2), False),
         (2, (3, 2, 32, 33), 2, None, False),
         (3, (2, 2, 7, 8, 9), 3, 2, True),
         (3, (1, 3, 5, 6, 7), (1, 2, 3), (1, 2, 2), False)]
NORMS = [1.0, 2.0, 1.5, 3.0]


def _x(torch, shape, dtype, p, gen, kind):
    """Signed normals for p = 1, 2; |normal| + 0.1 otherwise (a real p-th root)."""
    full = {"dense": shape, "strided": tuple(shape[:-1]) + (2 * shape[-1] + 1,),
            "channels_last": (shape[0],) + tuple(shape[2:]) + (shape[1],)}[kind]
    t = rand(torch, full, "float64", gen)
    if p not in (1.0, 2.0):
        t = t.abs() + 0.1
    t = t.to(getattr(torch, dtype))
    if kind == "strided":
        return t[..., 1::2]
    if kind == "channels_last":
        return t.movedim(-1, 1)
    return t


def _torch_lp(torch, desc, xd):
    F = torch.nn.functional
    fn = getattr(F, f"lp_pool{desc.spatial}d")
    k = desc.kernel_size[0] if desc.spatial == 1 else desc.kernel_size
    s = desc.stride[0] if desc.spatial == 1 else desc.stride
    return fn(xd, desc.norm_type, k, s, desc.ceil_mode)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", NORMS)
def test_forward_matches_torch(dtype, p):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.pooling import LPPoolArgs, LPPoolDescriptor, LPPoolPlan

    gen = torch.Generator(device="cuda").manual_seed(1)
    for sp, shape, k, s, ceil in CASES:
        for layout in ("NCHW", "NHWC"):
            desc = LPPoolDescriptor(sp, shape, p, k, s, ceil, dtype, layout)
            for kind in ("dense", "strided", "channels_last"):
                x = _x(torch, shape, dtype, p, gen, kind)
                y = _out(torch, desc.out_shape, dtype, layout)
                LPPoolPlan.select(desc).run(LPPoolArgs(x, y))
                yr = _torch_lp(torch, desc, x.double())
                sc = _torch_lp(torch, desc, x.double().abs())
                torch.cuda.synchronize()
                terms = math.prod(desc.kernel_size) + 16
                assert_terms_close(y, yr, dtype, terms=terms, scale=sc, what=f"{desc} {kind}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", NORMS)
def test_backward_matches_autograd(dtype, p):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.pooling import (LPPoolBackwardArgs, LPPoolBackwardPlan,
                                          LPPoolDescriptor)

    gen = torch.Generator(device="cuda").manual_seed(2)
    for sp, shape, k, s, ceil in CASES:
        for layout, kind in (("NCHW", "strided"), ("NHWC", "channels_last")):
            desc = LPPoolDescriptor(sp, shape, p, k, s, ceil, dtype, layout)
            x = _x(torch, shape, dtype, p, gen, kind)
            base = rand(torch, tuple(desc.out_shape[:-1]) + (2 * desc.out_shape[-1],), dtype,
                        gen)
            dy = base[..., ::2]
            plan = LPPoolBackwardPlan.select(desc)
            ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
            outs = []
            for _ in range(2):
                dx = _out(torch, desc.shape, dtype, layout)
                plan.run(LPPoolBackwardArgs(x, dy, dx), workspace=ws)
                outs.append(dx)
            torch.cuda.synchronize()
            assert bytes_equal(torch, outs[0], outs[1]), f"{desc}: reruns differ"
            grads = []
            for xin, g in ((x.double(), dy.double()), (x.double().abs(), dy.double().abs())):
                xd = xin.detach().requires_grad_(True)
                _torch_lp(torch, desc, xd).backward(g)
                grads.append(xd.grad)
            terms = 2 * math.prod(desc.kernel_size) + 32
            assert_terms_close(outs[0], grads[0], dtype, terms=terms, scale=grads[1].abs(),
                               what=str(desc))


def test_empty_batch_and_namespace():
    torch = pytest.importorskip("torch")
    import array_api as xp
    from array_api import _pooling_more_extensions as P
    from baracuda_dsl.ops.pooling import LPPoolArgs, LPPoolDescriptor, LPPoolPlan

    desc = LPPoolDescriptor(2, (0, 3, 8, 8), 2, 2)
    LPPoolPlan.select(desc).run(LPPoolArgs(torch.empty(desc.shape, device="cuda"),
                                           torch.empty(desc.out_shape, device="cuda")))
    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(3)
    t = rand(torch, (2, 3, 11, 12), "float32", gen)
    y = P.lp_pool(xp.from_dlpack(t), 2, 3, 2, ceil_mode=True)
    yr = F.lp_pool2d(t.double(), 2, 3, 2, True)
    assert_terms_close(torch.from_dlpack(y), yr, "float32", terms=25)
    g = rand(torch, tuple(yr.shape), "float32", gen)
    dx = P.lp_pool_backward(xp.from_dlpack(g), xp.from_dlpack(t), 2, 3, 2, ceil_mode=True)
    td = t.double().requires_grad_(True)
    F.lp_pool2d(td, 2, 3, 2, True).backward(g.double())
    assert_terms_close(torch.from_dlpack(dx), td.grad, "float32", terms=60,
                       scale=td.grad.abs().max())
    t1 = rand(torch, (2, 3, 11), "float64", gen).abs()
    y1 = P.lp_pool(xp.from_dlpack(t1), 3, 4)
    assert_terms_close(torch.from_dlpack(y1), F.lp_pool1d(t1, 3, 4), "float64", terms=25)
    with pytest.raises(ValueError):
        P.lp_pool(xp.from_dlpack(t), 0, 2)
