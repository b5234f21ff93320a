"""MaxUnpoolPlan / MaxUnpoolBackwardPlan and xp.max_unpool / max_unpool_backward on the GPU
against torch.nn.functional.max_unpool1d / 2d / 3d (bit-exact: a copy) with indices from
torch's max_pool, and torch.autograd of it in float64 (backward, a gather: bit-exact);
output_size, strided values and indices, NHWC outputs, NaN-poisoned outputs (the zero fill must
cover them), out-of-range indices (skipped, status word / IndexError), empty batch."""

import pytest

from _gpu_helpers import (rand, image_out as _out)

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float16", "bfloat16", "float64"]
# (spatial, pooled-input shape, kernel, stride, padding, output_size or None)
CASES = [(1, (2, 3, 17), 2, 2, 0, None),
         (1, (1, 2, 10), 3, 3, 1, (1, 2, 29)),
         (2, (2, 3, 15, 13), 2, 2, 0, None),
         (2, (1, 4, 9, 11), (2, 3), (2, 3), (1, 1), (17, 32)),
         (2, (3, 2, 32, 33), 3, 3, 0, None),
         (3, (2, 2, 7, 8, 9), 2, 2, 0, None),
         (3, (1, 3, 5, 6, 7), (1, 2, 3), (1, 2, 3), (0, 1, 1), None)]


def _pooled(torch, sp, shape, k, s, p, out, dtype, gen):
    """(values, indices) from torch's max_pool of a random input sized so that pooling it
    gives ``shape`` (the indices then point inside the unpooled plane)."""
    from baracuda_dsl.ops.pooling import MaxUnpoolDescriptor

    desc = MaxUnpoolDescriptor(sp, shape, k, s, p, out, dtype)
    big = rand(torch, desc.out_shape, "float64", gen)
    F = torch.nn.functional
    v, i = getattr(F, f"max_pool{sp}d")(big, desc.kernel_size, desc.stride, desc.padding,
                                         return_indices=True)
    assert tuple(v.shape) == shape, (v.shape, shape)
    return desc, v.to(getattr(torch, dtype)), i


def _torch_unpool(torch, desc, x, idx):
    F = torch.nn.functional
    return getattr(F, f"max_unpool{desc.spatial}d")(x, idx, desc.kernel_size, desc.stride,
                                                    desc.padding, desc.output_size)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_forward_and_backward_match_torch(dtype, layout):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.pooling import (MaxUnpoolArgs, MaxUnpoolBackwardArgs,
                                          MaxUnpoolBackwardPlan, MaxUnpoolDescriptor,
                                          MaxUnpoolPlan)

    gen = torch.Generator(device="cuda").manual_seed(1)
    for sp, shape, k, s, p, out in CASES:
        d0, v, idx = _pooled(torch, sp, shape, k, s, p, out, dtype, gen)
        desc = MaxUnpoolDescriptor(sp, shape, k, s, p, out, dtype, layout)
        # strided values and indices
        vs = torch.empty(shape[:-1] + (2 * shape[-1],), dtype=v.dtype, device="cuda")
        vs[..., ::2] = v
        ist = torch.empty(shape[:-1] + (2 * shape[-1],), dtype=torch.int64, device="cuda")
        ist[..., 1::2] = idx
        status = torch.zeros(1, dtype=torch.int32, device="cuda")
        y = _out(torch, desc.out_shape, dtype, layout)
        MaxUnpoolPlan.select(desc).run(MaxUnpoolArgs(vs[..., ::2], ist[..., 1::2], y, status))
        yr = _torch_unpool(torch, desc, v, idx)
        torch.cuda.synchronize()
        assert torch.equal(y, yr), str(desc)
        assert int(status) == 0
        dy = rand(torch, desc.out_shape, dtype, gen)
        dx = _out(torch, desc.shape, dtype, layout)
        MaxUnpoolBackwardPlan.select(desc).run(MaxUnpoolBackwardArgs(dy, ist[..., 1::2], dx,
                                                                     status))
        vd = v.double().requires_grad_(True)
        _torch_unpool(torch, desc, vd, idx).backward(dy.double())
        torch.cuda.synchronize()
        assert torch.equal(dx.double(), vd.grad), str(desc)
        assert int(status) == 0


def test_out_of_range_indices():
    torch = pytest.importorskip("torch")
    import array_api as xp
    from array_api import _pooling_more_extensions as P
    from baracuda_dsl.ops.pooling import (MaxUnpoolArgs, MaxUnpoolBackwardArgs,
                                          MaxUnpoolBackwardPlan, MaxUnpoolDescriptor,
                                          MaxUnpoolPlan)

    desc = MaxUnpoolDescriptor(2, (1, 2, 2, 2), 2)
    x = torch.arange(1.0, 9.0, device="cuda").reshape(1, 2, 2, 2)
    idx = torch.tensor([0, 2, 8, 10, 0, 5, 16, -1], device="cuda").reshape(1, 2, 2, 2)
    status = torch.zeros(1, dtype=torch.int32, device="cuda")
    y = _out(torch, desc.out_shape, "float32")
    MaxUnpoolPlan.select(desc).run(MaxUnpoolArgs(x, idx, y, status))
    torch.cuda.synchronize()
    assert int(status) == 1
    assert y[0, 1].reshape(-1).tolist() == [5.0, 0, 0, 0, 0, 6.0] + [0.0] * 10
    dx = _out(torch, desc.shape, "float32")
    status.zero_()
    MaxUnpoolBackwardPlan.select(desc).run(MaxUnpoolBackwardArgs(
        torch.arange(32.0, device="cuda").reshape(1, 2, 4, 4), idx, dx, status))
    torch.cuda.synchronize()
    assert int(status) == 1 and dx[0, 1].reshape(-1).tolist() == [16.0, 21.0, 0.0, 0.0]
    with pytest.raises(IndexError):
        P.max_unpool(xp.from_dlpack(x), xp.from_dlpack(idx), 2)


def test_empty_batch_and_namespace():
    torch = pytest.importorskip("torch")
    import array_api as xp
    from array_api import _pooling_more_extensions as P
    from baracuda_dsl.ops.pooling import MaxUnpoolArgs, MaxUnpoolDescriptor, MaxUnpoolPlan

    desc = MaxUnpoolDescriptor(2, (0, 3, 4, 4), 2)
    MaxUnpoolPlan.select(desc).run(MaxUnpoolArgs(
        torch.empty(desc.shape, device="cuda"),
        torch.empty(desc.shape, device="cuda", dtype=torch.int64),
        torch.empty(desc.out_shape, device="cuda")))
    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(2)
    t = rand(torch, (2, 3, 12, 10), "float32", gen)
    v, i = F.max_pool2d(t, 2, return_indices=True)
    y = P.max_unpool(xp.from_dlpack(v), xp.from_dlpack(i), 2, output_size=(13, 11))
    assert torch.equal(torch.from_dlpack(y), F.max_unpool2d(v, i, 2, output_size=(13, 11)))
    g = rand(torch, (2, 3, 13, 11), "float32", gen)
    dx = P.max_unpool_backward(xp.from_dlpack(g), xp.from_dlpack(i), 2)
    vd = v.clone().requires_grad_(True)
    F.max_unpool2d(vd, i, 2, output_size=(13, 11)).backward(g)
    assert torch.equal(torch.from_dlpack(dx), vd.grad)
