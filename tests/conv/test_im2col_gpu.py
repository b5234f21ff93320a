"""Im2ColPlan / Col2ImPlan / Im2ColBackwardPlan / Col2ImBackwardPlan and the namespace's
unfold / fold on the GPU: 2-D against torch.nn.functional.unfold / fold in float64 on the GPU
(and torch.autograd for the backward), 1-D / 3-D against an index-map reference (the definition,
evaluated with torch in float64); odd sizes, stride / padding / dilation, strided and
channels-last inputs, channels-last fold outputs, empty batch, NaN-poisoned outputs and
bit-identical fold reruns."""

import itertools
import math

import numpy as np
import pytest

from _gpu_helpers import (assert_terms_close, bytes_equal, image_inputs as _inputs, image_out,
                          rand)

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float16", "bfloat16", "float64"]
# (spatial, image shape, kernel_size, dilation, padding, stride)
CASES = [
    (2, (2, 3, 9, 11), 3, 1, 1, 1),
    (2, (1, 4, 10, 7), (2, 3), (2, 1), (1, 2), (2, 3)),
    (2, (2, 2, 8, 8), 2, 1, 0, 2),
    (2, (1, 3, 5, 6), 3, 2, 0, 1),
    (2, (3, 1, 33, 17), 4, 1, 2, 3),
    (1, (2, 3, 17), 3, 2, 1, 2),
    (1, (1, 2, 10), 4, 1, 3, 1),
    (3, (2, 2, 5, 6, 7), (2, 3, 2), (1, 1, 2), (1, 0, 1), (1, 2, 1)),
    (3, (1, 3, 4, 4, 4), 2, 1, 0, 2),
]


def _descs(dtype):
    from baracuda_dsl.ops.conv.im2col import Im2ColDescriptor

    for sp, shape, k, d, p, s in CASES:
        yield Im2ColDescriptor(sp, shape, k, d, p, s, dtype)


def _index_map(desc):
    """(idx, mask): per (kernel offset κ, block λ) the flattened spatial image index the
    definition reads, and whether it lies inside the image (numpy, shape (KK, LL))."""
    sp = desc.shape[2:]
    KK, LL = math.prod(desc.kernel_size), math.prod(desc.blocks)
    idx = np.zeros((KK, LL), np.int64)
    mask = np.zeros((KK, LL), bool)
    for ki, kap in enumerate(itertools.product(*(range(k) for k in desc.kernel_size))):
        for li, lam in enumerate(itertools.product(*(range(b) for b in desc.blocks))):
            z = [lm * s - p + k * d for lm, s, p, k, d in
                 zip(lam, desc.stride, desc.padding, kap, desc.dilation)]
            if all(0 <= zz < n for zz, n in zip(z, sp)):
                mask[ki, li] = True
                idx[ki, li] = int(np.ravel_multi_index(tuple(z), sp))
    return idx, mask


def _ref_unfold(torch, desc, x):
    """unfold of ``x`` in float64: torch's for 2-D, the index map otherwise."""
    xd = x.double()
    if desc.spatial == 2:
        return torch.nn.functional.unfold(xd, desc.kernel_size, desc.dilation, desc.padding,
                                          desc.stride)
    idx, mask = _index_map(desc)
    N, C = desc.shape[:2]
    it = torch.from_numpy(idx).cuda().reshape(-1)
    mt = torch.from_numpy(mask).cuda().reshape(-1)
    g = xd.reshape(N, C, -1)[:, :, it] * mt
    return g.reshape(desc.out_shape)


def _ref_fold(torch, desc, cols):
    """fold of ``cols`` (image geometry of ``desc``, an Im2ColDescriptor) in float64."""
    cd = cols.double()
    if desc.spatial == 2:
        return torch.nn.functional.fold(cd, desc.shape[2:], desc.kernel_size, desc.dilation,
                                        desc.padding, desc.stride)
    idx, mask = _index_map(desc)
    N, C = desc.shape[:2]
    it = torch.from_numpy(np.where(mask, idx, 0)).cuda().reshape(-1)
    mt = torch.from_numpy(mask).cuda().reshape(-1)
    src = cd.reshape(N, C, -1) * mt
    y = torch.zeros((N, C, math.prod(desc.shape[2:])), dtype=torch.float64, device="cuda")
    y.index_add_(2, it, src)
    return y.reshape(desc.shape)



def _out(torch, shape, dtype, channels_last=False):
    return image_out(torch, shape, dtype, "NHWC" if channels_last else "NCHW")


@pytest.mark.parametrize("dtype", DTYPES)
def test_unfold_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.conv.im2col import Col2ImBackwardArgs, Col2ImBackwardPlan
    from baracuda_dsl.ops.conv.im2col import Im2ColArgs, Im2ColPlan

    gen = torch.Generator(device="cuda").manual_seed(1)
    for desc in _descs(dtype):
        plan = Im2ColPlan.select(desc)
        back = Col2ImBackwardPlan.select(desc.to_col2im())
        for name, x in _inputs(torch, desc.shape, dtype, gen):
            cols = _out(torch, desc.out_shape, dtype)
            plan.run(Im2ColArgs(x, cols))
            ref = _ref_unfold(torch, desc, x)
            dcols = _out(torch, desc.out_shape, dtype)
            back.run(Col2ImBackwardArgs(x, dcols))           # fold's backward = unfold
            torch.cuda.synchronize()
            assert torch.equal(cols.double(), ref), f"{desc} {name}"          # an exact copy
            assert torch.equal(dcols.double(), ref), f"{desc} {name} (backward)"


@pytest.mark.parametrize("dtype", DTYPES)
def test_fold_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.conv.im2col import Col2ImArgs, Col2ImPlan

    gen = torch.Generator(device="cuda").manual_seed(2)
    for desc in _descs(dtype):
        f = desc.to_col2im()
        plan = Col2ImPlan.select(f)
        terms = math.prod(desc.kernel_size) + 1
        for name, cols in _inputs(torch, f.shape, dtype, gen):
            for cl in (False, True):
                outs = []
                for _ in range(2):
                    y = _out(torch, f.out_shape, dtype, channels_last=cl)
                    plan.run(Col2ImArgs(cols, y))
                    outs.append(y)
                ref = _ref_fold(torch, desc, cols)
                sc = _ref_fold(torch, desc, cols.double().abs())
                torch.cuda.synchronize()
                what = f"{f} {name} channels_last={cl}"
                assert bytes_equal(torch, outs[0], outs[1]), f"{what}: reruns differ"
                assert_terms_close(outs[0], ref, dtype, terms=terms, scale=sc, what=what)


@pytest.mark.parametrize("dtype", DTYPES)
def test_unfold_backward_matches_autograd(dtype):
    """Im2ColBackwardPlan (dx = fold(dcols)) against torch.autograd of float64 unfold (2-D) or
    the index-map fold (1-D / 3-D); deterministic reruns."""
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.conv.im2col import Im2ColBackwardArgs, Im2ColBackwardPlan

    gen = torch.Generator(device="cuda").manual_seed(3)
    for desc in _descs(dtype):
        plan = Im2ColBackwardPlan.select(desc)
        base = rand(torch, tuple(desc.out_shape[:-1]) + (2 * desc.out_shape[-1],), dtype, gen)
        dcols = base[..., ::2]                                       # strided gradient
        outs = []
        for _ in range(2):
            dx = _out(torch, desc.shape, dtype)
            plan.run(Im2ColBackwardArgs(dcols, dx))
            outs.append(dx)
        if desc.spatial == 2:
            xd = torch.zeros(desc.shape, dtype=torch.float64, device="cuda", requires_grad=True)
            torch.nn.functional.unfold(xd, desc.kernel_size, desc.dilation, desc.padding,
                                       desc.stride).backward(dcols.double())
            ref = xd.grad
        else:
            ref = _ref_fold(torch, desc, dcols)
        sc = _ref_fold(torch, desc, dcols.double().abs())
        torch.cuda.synchronize()
        assert bytes_equal(torch, outs[0], outs[1]), f"{desc}: backward reruns differ"
        assert_terms_close(outs[0], ref, dtype, terms=math.prod(desc.kernel_size) + 1, scale=sc,
                           what=str(desc))


def test_empty_batch():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.conv.im2col import (Col2ImArgs, Col2ImPlan, Im2ColArgs,
                                              Im2ColDescriptor, Im2ColPlan)

    d = Im2ColDescriptor(2, (0, 3, 8, 8), 3, padding=1, dtype="float32")
    x = torch.empty(d.shape, device="cuda")
    cols = torch.empty(d.out_shape, device="cuda")
    Im2ColPlan.select(d).run(Im2ColArgs(x, cols))
    Col2ImPlan.select(d.to_col2im()).run(Col2ImArgs(cols, x))
    torch.cuda.synchronize()
    assert cols.shape == (0, 27, 64)


def test_namespace_functions():
    torch = pytest.importorskip("torch")
    import array_api as xp
    from array_api import _unfold_extensions as U

    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(4)
    t = rand(torch, (2, 3, 11, 12), "float32", gen)
    c = U.unfold(xp.from_dlpack(t), (2, 3), 1, (1, 0), 2)
    cr = F.unfold(t.double(), (2, 3), 1, (1, 0), 2)
    assert torch.equal(torch.from_dlpack(c).double(), cr)
    y = U.fold(c, (11, 12), (2, 3), 1, (1, 0), 2)
    yr = F.fold(cr, (11, 12), (2, 3), 1, (1, 0), 2)
    assert_terms_close(torch.from_dlpack(y), yr, "float32", terms=7,
                       scale=F.fold(cr.abs(), (11, 12), (2, 3), 1, (1, 0), 2))
    # 1-D / 3-D from the ranks
    t1 = rand(torch, (2, 3, 13), "bfloat16", gen)
    c1 = U.unfold(xp.from_dlpack(t1), 3, padding=1)
    assert tuple(c1.shape) == (2, 9, 13)
    y1 = U.fold(c1, (13,), 3, padding=1)
    def fold_unfold_1d(v):
        return F.fold(F.unfold(v.unsqueeze(-2), (1, 3), padding=(0, 1)), (1, 13), (1, 3),
                      padding=(0, 1)).squeeze(-2)

    ref1 = fold_unfold_1d(t1.double())
    assert_terms_close(torch.from_dlpack(y1), ref1, "bfloat16", terms=4,
                       scale=fold_unfold_1d(t1.double().abs()))
    t3 = rand(torch, (1, 2, 4, 5, 6), "float64", gen)
    c3 = U.unfold(xp.from_dlpack(t3), 2, stride=2)
    assert tuple(c3.shape) == (1, 16, 2 * 2 * 3)
    y3 = U.fold(c3, (4, 5, 6), 2, stride=2)
    crop = t3.clone()
    crop[:, :, :, 4:, :] = 0                                     # the 5th row is in no block
    assert torch.equal(torch.from_dlpack(y3), crop)
    with pytest.raises(TypeError):
        U.unfold(xp.from_dlpack(torch.zeros((1, 1, 4, 4), dtype=torch.int32, device="cuda")), 2)
    with pytest.raises(ValueError):
        U.unfold(xp.from_dlpack(torch.zeros((4, 4), device="cuda")), 2)
    with pytest.raises(ValueError):
        U.fold(c, (11, 12), (2, 2), 1, (1, 0), 2)                  # 18 rows not divisible by 4
