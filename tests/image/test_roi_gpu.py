"""RoIAlign / RoIPool plans (forward and backward) and the namespace functions on the GPU,
against the float64 references of test_roi_cpu.py (torchvision's algorithms; torchvision is not
needed) evaluated on the operands as rounded to the test dtype: boxes partly or wholly outside the
image, zero-size boxes, an out-of-range batch index, sampling_ratio adaptive and fixed, aligned
both ways, strided inputs and boxes, strided gradients, empty problems, NaN-poisoned outputs."""

import numpy as np
import pytest

from _gpu_helpers import assert_terms_close, rand
from tests._checks import poison_, to_numpy
from tests.image.test_roi_cpu import (roi_align_backward_ref, roi_align_ref,
                                      roi_pool_backward_ref, roi_pool_ref)

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float16", "bfloat16", "float64"]
# (x shape, output_size, spatial_scale, sampling_ratio, aligned)
ALIGN_CASES = [((2, 3, 13, 17), (3, 4), 0.5, -1, False), ((2, 3, 13, 17), 2, 1.0, 2, True),
               ((1, 5, 9, 8), (5, 3), 0.25, -1, True), ((3, 2, 16, 11), (2, 2), 1.0, 3, False)]
POOL_CASES = [((2, 3, 13, 17), (3, 4), 0.5), ((2, 3, 13, 17), 2, 1.0), ((1, 5, 9, 8), (5, 3), 0.25)]


def _boxes(torch, n, H, W, scale, dtype, k=11, seed=0):
    """(K, 5) boxes in image coordinates / scale: random ones (some past the border), one wholly
    outside, one zero-size, one with batch index N (reads nothing); strided (every other column
    of a (K, 10) tensor)."""
    rng = np.random.default_rng(seed)
    ext = np.array([W, H]) / scale
    xy = rng.uniform(-0.3, 1.0, (k, 2)) * ext
    wh = rng.uniform(0.0, 0.8, (k, 2)) * ext
    b = np.concatenate([rng.integers(0, n, (k, 1)), xy, xy + wh], axis=1)
    b[0, 1:] = [-9 / scale, -8 / scale, -3 / scale, -2 / scale]         # wholly outside
    b[1, 1:] = [2 / scale, 3 / scale, 2 / scale, 3 / scale]             # zero-size
    b[2, 0] = n                                                         # bad batch index
    base = torch.zeros((k, 10), dtype=getattr(torch, dtype), device="cuda")
    base[:, ::2] = torch.from_numpy(b).to(base.dtype).cuda()
    return base[:, ::2]


def _out(torch, shape, dtype):
    return poison_(torch, torch.empty(shape, dtype=dtype if not isinstance(dtype, str) else
                                      getattr(torch, dtype), device="cuda"))


def _x(torch, shape, dtype, gen, strided):
    if not strided:
        return rand(torch, shape, dtype, gen)
    return rand(torch, tuple(shape[:-1]) + (2 * shape[-1],), dtype, gen)[..., 1::2]


def _grid_terms(desc):
    """An error budget in f32 units: the samples of a bin (4 taps each) plus the coordinate
    magnitude (sample positions are rounded in f32; an error δ there moves a sample by δ)."""
    H, W = desc.shape[2:]
    return 64 + 8 * (H + W)


@pytest.mark.parametrize("dtype", DTYPES)
def test_roi_align_forward(dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.image.roi import RoIAlignArgs, RoIAlignDescriptor, RoIAlignPlan

    gen = torch.Generator(device="cuda").manual_seed(1)
    for shape, out, scale, sr, al in ALIGN_CASES:
        for strided in (False, True):
            x = _x(torch, shape, dtype, gen, strided)
            boxes = _boxes(torch, shape[0], shape[2], shape[3], scale, dtype)
            desc = RoIAlignDescriptor(shape, boxes.shape[0], out, scale, sr, al, dtype)
            y = _out(torch, desc.out_shape, dtype)
            RoIAlignPlan.select(desc).run(RoIAlignArgs(x, boxes, y))
            torch.cuda.synchronize()
            xn, bn = to_numpy(x), to_numpy(boxes)
            ref = roi_align_ref(xn, bn, desc.output_size, scale, sr, al)
            sc = roi_align_ref(np.abs(xn), bn, desc.output_size, scale, sr, al)
            assert_terms_close(y, ref, dtype, terms=_grid_terms(desc), scale=sc,
                               what=f"{desc} strided={strided}")
            assert not torch.any(y[2] != 0), "bad batch index must give 0"


@pytest.mark.parametrize("dtype", DTYPES)
def test_roi_align_backward(dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.image.roi import (RoIAlignBackwardArgs, RoIAlignBackwardPlan,
                                            RoIAlignDescriptor)

    gen = torch.Generator(device="cuda").manual_seed(2)
    for shape, out, scale, sr, al in ALIGN_CASES:
        boxes = _boxes(torch, shape[0], shape[2], shape[3], scale, dtype, seed=3)
        desc = RoIAlignDescriptor(shape, boxes.shape[0], out, scale, sr, al, dtype)
        dy = _x(torch, desc.out_shape, dtype, gen, True)                # strided gradient
        plan = RoIAlignBackwardPlan.select(desc)
        ws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8, device="cuda")
        outs = []
        for _ in range(2):
            dx = _out(torch, shape, dtype)
            plan.run(RoIAlignBackwardArgs(dy, boxes, dx), workspace=ws)
            outs.append(dx)
        torch.cuda.synchronize()
        bn = to_numpy(boxes)
        ref = roi_align_backward_ref(to_numpy(dy), bn, shape, scale, sr, al)
        sc = roi_align_backward_ref(np.abs(to_numpy(dy)), bn, shape, scale, sr, al)
        # sample points are computed in the input precision (torchvision does the same): each
        # bilinear weight may move by eps·extent, whatever its size, so part of the bound
        # scales with the gradient's magnitude rather than with the weights
        terms = _grid_terms(desc) + 4 * np.prod(desc.out_shape)
        sc = sc + np.abs(to_numpy(dy)).max() * 0.05 * max(shape[2:])
        for dx in outs:                       # atomics: each rerun within the bound
            assert_terms_close(dx, ref, dtype, terms=terms, scale=sc, what=str(desc))


@pytest.mark.parametrize("dtype", DTYPES)
def test_roi_pool_forward_backward(dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.image.roi import (RoIPoolArgs, RoIPoolBackwardArgs,
                                            RoIPoolBackwardPlan, RoIPoolDescriptor, RoIPoolPlan)

    gen = torch.Generator(device="cuda").manual_seed(4)
    ct = np.float64 if dtype == "float64" else np.float32
    for shape, out, scale in POOL_CASES:
        for strided in (False, True):
            x = _x(torch, shape, dtype, gen, strided)
            boxes = _boxes(torch, shape[0], shape[2], shape[3], scale, dtype, seed=5)
            desc = RoIPoolDescriptor(shape, boxes.shape[0], out, scale, dtype)
            y = _out(torch, desc.out_shape, dtype)
            arg = _out(torch, desc.out_shape, torch.int64)
            RoIPoolPlan.select(desc).run(RoIPoolArgs(x, boxes, y, arg))
            torch.cuda.synchronize()
            bn = to_numpy(boxes)
            yr, ar = roi_pool_ref(to_numpy(x), bn, desc.output_size, scale, ct)
            assert np.array_equal(to_numpy(arg), ar), f"{desc} argmax"
            assert_terms_close(y, yr, dtype, what=str(desc))              # an element: exact
            dy = _x(torch, desc.out_shape, dtype, gen, True)
            plan = RoIPoolBackwardPlan.select(desc)
            ws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8, device="cuda")
            dx = _out(torch, shape, dtype)
            plan.run(RoIPoolBackwardArgs(dy, boxes, arg, dx), workspace=ws)
            torch.cuda.synchronize()
            dref = roi_pool_backward_ref(to_numpy(dy), bn, ar, shape)
            dsc = roi_pool_backward_ref(np.abs(to_numpy(dy)), bn, ar, shape)
            assert_terms_close(dx, dref, dtype, terms=np.prod(desc.out_shape), scale=dsc,
                               what=f"{desc} backward")


def test_empty_problems():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.image.roi import (RoIAlignArgs, RoIAlignBackwardArgs,
                                            RoIAlignBackwardPlan, RoIAlignDescriptor,
                                            RoIAlignPlan)

    x = torch.randn((2, 3, 5, 6), device="cuda")
    b = torch.zeros((0, 5), device="cuda")
    d = RoIAlignDescriptor((2, 3, 5, 6), 0, 2)
    y = torch.empty(d.out_shape, device="cuda")
    RoIAlignPlan.select(d).run(RoIAlignArgs(x, b, y))
    dx = _out(torch, (2, 3, 5, 6), "float32")
    RoIAlignBackwardPlan.select(d).run(RoIAlignBackwardArgs(y, b, dx))   # no boxes: dx = 0
    torch.cuda.synchronize()
    assert torch.equal(dx, torch.zeros_like(dx))
    d0 = RoIAlignDescriptor((0, 3, 5, 6), 0, 2)
    RoIAlignBackwardPlan.select(d0).run(RoIAlignBackwardArgs(
        y, b, torch.empty((0, 3, 5, 6), device="cuda")))


def test_namespace_functions():
    torch = pytest.importorskip("torch")
    import array_api as xp
    from array_api import _roi_extensions as R

    gen = torch.Generator(device="cuda").manual_seed(6)
    t = rand(torch, (2, 3, 11, 12), "float32", gen)
    bt = _boxes(torch, 2, 11, 12, 0.5, "float32", seed=7)
    x, b = xp.from_dlpack(t), xp.from_dlpack(bt.contiguous())
    bn = to_numpy(bt)
    y = R.roi_align(x, b, (3, 2), 0.5, 2, True)
    ref = roi_align_ref(to_numpy(t), bn, (3, 2), 0.5, 2, True)
    sc = roi_align_ref(np.abs(to_numpy(t)), bn, (3, 2), 0.5, 2, True)
    assert_terms_close(torch.from_dlpack(y), ref, "float32", terms=300, scale=sc)
    g = rand(torch, tuple(y.shape), "float32", gen)
    dx = R.roi_align_backward(xp.from_dlpack(g), b, t.shape, 0.5, 2, True)
    dref = roi_align_backward_ref(to_numpy(g), bn, t.shape, 0.5, 2, True)
    dsc = roi_align_backward_ref(np.abs(to_numpy(g)), bn, t.shape, 0.5, 2, True)
    assert_terms_close(torch.from_dlpack(dx), dref, "float32", terms=1000, scale=dsc)
    yp, arg = R.roi_pool(x, b, 2, 0.5, return_argmax=True)
    yr, ar = roi_pool_ref(to_numpy(t), bn, (2, 2), 0.5, np.float32)
    assert np.array_equal(to_numpy(torch.from_dlpack(arg)), ar)
    assert_terms_close(torch.from_dlpack(yp), yr, "float32")
    gp = rand(torch, tuple(yp.shape), "float32", gen)
    dxp = R.roi_pool_backward(xp.from_dlpack(gp), b, arg, t.shape, 0.5)
    assert_terms_close(torch.from_dlpack(dxp), roi_pool_backward_ref(to_numpy(gp), bn, ar,
                                                                     t.shape),
                       "float32", terms=100,
                       scale=roi_pool_backward_ref(np.abs(to_numpy(gp)), bn, ar, t.shape))
    with pytest.raises(TypeError):
        R.roi_align(xp.from_dlpack(torch.zeros((1, 1, 4, 4), dtype=torch.int32,
                                               device="cuda")), b, 2)
    with pytest.raises(ValueError):
        R.roi_align(x, xp.from_dlpack(torch.zeros((3, 4), device="cuda")), 2)
