"""InterpolatePlan / InterpolateBackwardPlan and the namespace functions on the GPU, against
torch.nn.functional.interpolate in float64 on the GPU (forward) and float64 torch.autograd
(backward): every mode × the spatial ranks torch supports (bicubic / antialias 2-D only), up and
down scaling, odd sizes, align_corners both ways, size vs scale_factor (with and without
recompute_scale_factor), strided and channels-last inputs, NHWC outputs, empty batch,
NaN-poisoned outputs and bit-identical backward reruns."""

import pytest

from _gpu_helpers import (assert_terms_close, bytes_equal, rand, image_out as _out,
                          image_inputs as _inputs)

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float16", "bfloat16", "float64"]
_NO_ALIGN = ("nearest", "nearest-exact", "area")
# (shape, mode, size, scale_factor, recompute, antialias)
CASES = [
    ((2, 3, 17), "nearest", (40,), None, None, False),
    ((2, 3, 17), "nearest", None, (0.6,), None, False),
    ((1, 2, 9, 11), "nearest", (20, 5), None, None, False),
    ((1, 2, 9, 11), "nearest", None, (1.7, 2.0), True, False),
    ((1, 2, 5, 6, 7), "nearest", (9, 4, 13), None, None, False),
    ((2, 3, 17), "nearest-exact", (7,), None, None, False),
    ((1, 2, 9, 11), "nearest-exact", None, (2.5, 0.5), None, False),
    ((1, 2, 5, 6, 7), "nearest-exact", (3, 11, 7), None, None, False),
    ((2, 3, 13), "linear", (29,), None, None, False),
    ((2, 3, 13), "linear", None, (0.45,), None, False),
    ((2, 3, 13), "linear", None, (2.3,), True, False),
    ((1, 2, 9, 11), "bilinear", (20, 7), None, None, False),
    ((1, 2, 9, 11), "bilinear", None, (1.5, 0.7), None, False),
    ((1, 2, 1, 11), "bilinear", (3, 1), None, None, False),
    ((1, 2, 5, 6, 7), "trilinear", (9, 4, 13), None, None, False),
    ((1, 2, 5, 6, 7), "trilinear", None, (1.3, 2.0, 0.6), None, False),
    ((1, 2, 9, 11), "bicubic", (20, 7), None, None, False),
    ((1, 2, 9, 11), "bicubic", None, (2.0, 3.0), None, False),
    ((1, 2, 2, 11), "bicubic", (5, 4), None, None, False),
    ((2, 3, 17), "area", (5,), None, None, False),
    ((2, 3, 5), "area", (12,), None, None, False),
    ((1, 2, 9, 11), "area", None, (0.5, 0.34), None, False),
    ((1, 2, 5, 6, 7), "area", (3, 4, 2), None, None, False),
    ((1, 2, 19, 23), "bilinear", (6, 9), None, None, True),
    ((1, 2, 19, 23), "bilinear", None, (0.3, 1.6), None, True),
    ((1, 2, 19, 23), "bicubic", (6, 9), None, None, True),
    ((1, 2, 9, 11), "bicubic", (20, 31), None, None, True),
    ((1, 2, 9, 11), "bilinear", None, (1.05, 1.05), None, False),    # equal sizes: a copy
    ((1, 2, 9, 11), "nearest", None, (1.05, 1.05), None, False),
]


def _tdt(torch, dtype):
    return getattr(torch, dtype)


def _descs(dtype, layout="NCHW"):
    from baracuda_dsl.ops.image.interpolate import InterpolateDescriptor

    for shape, mode, size, sf, rc, aa in CASES:
        for ac in ((None,) if mode in _NO_ALIGN else (False, True)):
            yield InterpolateDescriptor(shape, size, sf, mode, ac, rc, aa, dtype, layout)


def _torch_interp(torch, desc, xd):
    """torch's forward of ``desc`` on the float64 tensor ``xd``."""
    return torch.nn.functional.interpolate(
        xd, size=desc.size, scale_factor=desc.scale_factor, mode=desc.mode,
        align_corners=None if desc.mode in _NO_ALIGN else desc.align_corners,
        recompute_scale_factor=True if desc.recompute_scale_factor else None,
        antialias=desc.antialias)


def _terms(desc):
    """An upper bound on the taps one output reads (and, roughly, on an input's fan-out)."""
    import math

    per = []
    for n, m in zip(desc.shape[2:], desc.out_spatial):
        r = max(n / m, m / n)
        per.append(4 * math.ceil(r) + 4)
    return math.prod(per)


def _coord_terms(desc):
    """The coordinate map runs in float32 for float32 / half inputs (torch's CUDA accscalar):
    a source coordinate up to max extent E is off by up to E·eps, so each weight is, and an
    output by up to 2·E·eps of its scale — E·2 more terms."""
    return 2 * max(max(desc.shape[2:]), max(desc.out_spatial))


def _abs_gain(desc):
    """Σ|w| / Σw of the mode's weights (cubic kernels have negative lobes)."""
    return 2.0 if desc.mode == "bicubic" else 1.0


def _check_forward(torch, desc, x, y, what):
    xd = x.double()
    yr = _torch_interp(torch, desc, xd)
    sc = _torch_interp(torch, desc, xd.abs()).abs() * _abs_gain(desc)
    if desc.mode == "bicubic":
        sc = sc + xd.abs().max() * 0.5
    torch.cuda.synchronize()
    assert_terms_close(y, yr, desc.dtype.name, terms=_terms(desc) + 2 + _coord_terms(desc),
                       scale=sc, what=what)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_interpolate_forward_matches_torch(dtype, layout):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.image.interpolate import InterpolateArgs, InterpolatePlan

    gen = torch.Generator(device="cuda").manual_seed(1)
    for desc in _descs(dtype, layout):
        plan = InterpolatePlan.select(desc)
        for name, x in _inputs(torch, desc.shape, dtype, gen):
            y = _out(torch, desc.out_shape, dtype, layout)
            plan.run(InterpolateArgs(x, y))
            _check_forward(torch, desc, x, y, f"{desc} {name}")


def test_nearest_is_exact_copy():
    """nearest / nearest-exact copy elements: bit-exact against torch (same float32 map)."""
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.image.interpolate import InterpolateArgs, InterpolatePlan

    gen = torch.Generator(device="cuda").manual_seed(2)
    for dtype in ("float32", "bfloat16"):
        for desc in _descs(dtype):
            if desc.group != "nearest":
                continue
            x = rand(torch, desc.shape, dtype, gen)
            y = _out(torch, desc.out_shape, dtype)
            InterpolatePlan.select(desc).run(InterpolateArgs(x, y))
            yr = _torch_interp(torch, desc, x)          # native dtype: a pure gather
            torch.cuda.synchronize()
            assert torch.equal(y, yr), str(desc)


def _nearest_adjoint(torch, desc, dy):
    """The exact adjoint of torch's nearest forward: dy scattered to the source index of each
    output (found by interpolating a tensor of flat spatial indices)."""
    import math

    n, c = desc.shape[:2]
    sp = desc.shape[2:]
    idx = torch.arange(math.prod(sp), dtype=torch.float64, device="cuda").reshape((1, 1) + sp)
    src = _torch_interp(torch, desc, idx).reshape(-1).long()
    flat = dy.double().reshape(n, c, -1)
    dx = torch.zeros((n, c, math.prod(sp)), dtype=torch.float64, device="cuda")
    dx.index_add_(2, src, flat)
    sc = torch.zeros_like(dx).index_add_(2, src, flat.abs())
    return dx.reshape(desc.shape), sc.reshape(desc.shape)


def _autograd(torch, desc, x, g):
    xd = x.double().detach().requires_grad_(True)
    _torch_interp(torch, desc, xd).backward(g)
    return xd.grad


def _check_backward(torch, desc, layout, gen, what, deterministic=True):
    from baracuda_dsl import PlanPreference
    from baracuda_dsl.ops.image.interpolate import (InterpolateBackwardArgs,
                                                    InterpolateBackwardPlan, InterpolateTuning)

    dtype = desc.dtype.name
    x = rand(torch, desc.shape, dtype, gen)
    base = rand(torch, tuple(desc.out_shape[:-1]) + (2 * desc.out_shape[-1],), dtype, gen)
    dy = base[..., ::2]                                                # strided gradient
    plan = InterpolateBackwardPlan.select(desc, PlanPreference(
        tuning=InterpolateTuning(deterministic=deterministic)))
    ws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8, device="cuda")
    outs = []
    for _ in range(2):
        dx = _out(torch, desc.shape, dtype, layout)
        plan.run(InterpolateBackwardArgs(dy, dx), workspace=ws)
        outs.append(dx)
    torch.cuda.synchronize()
    if deterministic:
        assert bytes_equal(torch, outs[0], outs[1]), f"{what}: backward reruns differ"
    else:
        assert plan.sku().template == "interp_bw_scatter" or desc.group not in ("nearest",
                                                                               "linear")
        assert_terms_close(outs[1], outs[0].double(), dtype, terms=4 * _terms(desc),
                           scale=outs[0].double().abs() + dy.double().abs().max(),
                           what=f"{what}: rerun")
    terms = 2 * _terms(desc) + 2 + _terms(desc) * _coord_terms(desc)
    if desc.group == "nearest":
        dxr, sc = _nearest_adjoint(torch, desc, dy)
        assert_terms_close(outs[0], dxr, dtype, terms=terms, scale=sc, what=what)
        ag = _autograd(torch, desc, x, dy.double())
        if torch.allclose(ag, dxr, rtol=1e-12, atol=1e-12):      # torch's own bw map agrees
            assert_terms_close(outs[0], ag, dtype, terms=terms, scale=sc,
                               what=f"{what} (autograd)")
        return
    dxr = _autograd(torch, desc, x, dy.double())
    sc = _autograd(torch, desc, x, dy.double().abs()).abs() * _abs_gain(desc)
    if desc.mode == "bicubic":
        sc = sc + dy.double().abs().max() * terms * 0.1
    if dtype == "float32":
        # against torch's own float32 backward (the same float32 coordinate map): only the
        # arithmetic of the sums differs, so the bound has no coordinate term
        xs = x.detach().requires_grad_(True)
        _torch_interp(torch, desc, xs).backward(dy)
        assert_terms_close(outs[0], xs.grad.double(), dtype, terms=2 * terms, scale=sc,
                           what=f"{what} (torch float32)")
    if dtype != "float64":
        # against float64: each weight may move by the float32 coordinate error, whatever
        # its size, so that part of the bound scales with max |dy|, not with the weights
        sc = sc + dy.double().abs().max() * 2
    assert_terms_close(outs[0], dxr, dtype, terms=terms, scale=sc, what=f"{what} (autograd)")


@pytest.mark.parametrize("dtype", DTYPES)
def test_interpolate_backward_matches_autograd(dtype):
    torch = pytest.importorskip("torch")

    gen = torch.Generator(device="cuda").manual_seed(3)
    for layout in ("NCHW", "NHWC"):
        for desc in _descs(dtype, layout):
            _check_backward(torch, desc, layout, gen, str(desc))


@pytest.mark.parametrize("dtype", DTYPES)
def test_interpolate_backward_scatter(dtype):
    """InterpolateTuning(deterministic=False): the atomic scatter of nearest / linear / bicubic
    against the same references as the gather (any order of the atomic adds within bounds)."""
    torch = pytest.importorskip("torch")

    gen = torch.Generator(device="cuda").manual_seed(7)
    for layout in ("NCHW", "NHWC"):
        for desc in _descs(dtype, layout):
            if desc.group in ("nearest", "linear"):
                _check_backward(torch, desc, layout, gen, f"{desc} scatter", deterministic=False)


def test_large_upsample_and_downsample():
    """Bigger images (many outputs per input and the reverse) in float32."""
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.image.interpolate import InterpolateDescriptor

    gen = torch.Generator(device="cuda").manual_seed(4)
    for mode, aa in (("bilinear", False), ("bicubic", False), ("nearest", False),
                     ("area", False), ("bilinear", True), ("bicubic", True)):
        for shape, size in (((2, 3, 37, 41), (300, 257)), ((2, 3, 300, 257), (37, 41))):
            ac = None if mode in _NO_ALIGN else False
            desc = InterpolateDescriptor(shape, size, None, mode, ac, None, aa, "float32")
            _check_backward(torch, desc, "NCHW", gen, str(desc))


def test_empty_batch():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.image.interpolate import (InterpolateArgs, InterpolateBackwardArgs,
                                                    InterpolateBackwardPlan,
                                                    InterpolateDescriptor, InterpolatePlan)

    desc = InterpolateDescriptor((0, 3, 8, 8), (5, 12), mode="bilinear")
    x = torch.empty(desc.shape, device="cuda")
    y = torch.empty(desc.out_shape, device="cuda")
    InterpolatePlan.select(desc).run(InterpolateArgs(x, y))
    InterpolateBackwardPlan.select(desc).run(InterpolateBackwardArgs(y, x))
    torch.cuda.synchronize()
    assert y.shape == (0, 3, 5, 12)


def test_namespace_functions():
    torch = pytest.importorskip("torch")
    import array_api as xp
    from array_api import _interpolate_extensions as P

    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(6)
    t = rand(torch, (2, 3, 11, 12), "float32", gen)
    x = xp.from_dlpack(t)
    for kw in (dict(size=(17, 5), mode="bilinear", align_corners=True),
               dict(scale_factor=1.5, mode="bicubic"),
               dict(size=(4, 5), mode="bicubic", antialias=True),
               dict(scale_factor=(0.5, 2.0), mode="nearest-exact"),
               dict(size=(5, 5), mode="area")):
        y = P.interpolate(x, **kw)
        yr = F.interpolate(t.double(), **kw)
        coord = 2 * max(t.shape[2:] + yr.shape[2:])          # float32 coordinate map
        assert_terms_close(torch.from_dlpack(y), yr, "float32", terms=64 + coord,
                           scale=F.interpolate(t.double().abs(), **kw) * 2, what=str(kw))
        g = rand(torch, tuple(yr.shape), "float32", gen)
        dx = P.interpolate_backward(xp.from_dlpack(g), t.shape, **kw)
        td = t.double().requires_grad_(True)
        F.interpolate(td, **kw).backward(g.double())
        assert_terms_close(torch.from_dlpack(dx), td.grad, "float32", terms=128 + 16 * coord,
                           scale=td.grad.abs() + g.abs().max(), what=str(kw))
    with pytest.raises(TypeError):
        P.interpolate(xp.from_dlpack(torch.zeros((1, 1, 4, 4), dtype=torch.int32,
                                                 device="cuda")), size=2)
    with pytest.raises(ValueError):
        P.interpolate(xp.from_dlpack(torch.zeros((4, 4), device="cuda")), size=2)
