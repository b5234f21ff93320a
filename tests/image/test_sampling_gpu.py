"""GridSamplePlan / GridSampleBackwardPlan / AffineGridPlan / AffineGridBackwardPlan and the
namespace functions on the GPU, against torch.nn.functional.grid_sample / affine_grid in float64
on the GPU (forward) and float64 torch.autograd (backward): 2-D and 3-D, every mode and padding
mode, both align_corners, grid points outside the image and exactly on its borders / corners,
odd sizes, strided (non-contiguous) operands, empty batch, NaN-poisoned outputs, output_mask,
bit-identical grad_grid / affine backward reruns."""

import itertools

import pytest

from _gpu_helpers import assert_terms_close, bytes_equal, rand
from tests._checks import poison_

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float16", "bfloat16", "float64"]
PADS = ["zeros", "border", "reflection"]
# (input shape, grid point shape) per spatial rank
SHAPES = {2: [((2, 3, 7, 9), (5, 6)), ((1, 2, 1, 5), (3, 4))],
          3: [((2, 3, 4, 5, 6), (3, 4, 5)), ((1, 2, 3, 1, 4), (2, 3, 2))]}
CASES = [(m, k) for m in ("bilinear", "nearest", "bicubic") for k in (2, 3)
         if not (m == "bicubic" and k == 3)]


def _poisoned(torch, shape, dtype):
    return poison_(torch, torch.empty(shape, dtype=getattr(torch, dtype), device="cuda"))


def _strided(torch, t):
    """A non-contiguous copy of ``t``: every other element of a twice-as-wide last dim."""
    base = torch.empty(tuple(t.shape[:-1]) + (2 * t.shape[-1],), dtype=t.dtype, device="cuda")
    v = base[..., ::2]
    v.copy_(t)
    return v


def _grid(torch, n, pts, k, dtype, gen):
    """Random points in [-1.3, 1.3] (some outside the image) with a few exact ones: the corners
    ±1, the centre 0.  Multiples of 1/64: exact in every dtype, so the kernel's compute type and
    the float64 reference see the same source coordinates (ties of nearest's round-half-to-even
    and the corners of bilinear's piecewise-linear weights included)."""
    g = (torch.rand((n,) + pts + (k,), generator=gen, device="cuda", dtype=torch.float64)
         * 2.6 - 1.3)
    g = torch.round(g * 64) / 64
    flat = g.view(-1, k)
    special = torch.tensor(list(itertools.product((-1.0, 0.0, 1.0), repeat=k)),
                           dtype=torch.float64, device="cuda")
    m = min(flat.shape[0], special.shape[0])
    flat[:m] = special[:m]
    return g.to(getattr(torch, dtype))


def _ref(torch, x, g, mode, pad, al):
    return torch.nn.functional.grid_sample(x.double(), g.double(), mode=mode, padding_mode=pad,
                                           align_corners=al)


def _terms(mode, x):
    """Rounded operations behind one output (coordinate error × extent included)."""
    return (64 if mode == "bicubic" else 16) + 4 * max(x.shape[2:])


def _theta_scale(theta, ref):
    """Per grid value the bound Σ_j |θ_ij| of |θ_i · (x, y[, z], 1)| (base coordinates lie in
    [-1, 1]): the scale of affine_grid's rounding, free of the cancellation a signed sum has."""
    rows = theta.double().abs().sum(-1)                         # (N, 2) or (N, 3)
    shape = (rows.shape[0],) + (1,) * (ref.dim() - 2) + (rows.shape[1],)
    return rows.reshape(shape).expand_as(ref)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode,k", CASES)
def test_grid_sample_forward_matches_torch(dtype, mode, k):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.image.sampling import (GridSampleArgs, GridSampleDescriptor,
                                                 GridSamplePlan)

    gen = torch.Generator(device="cuda").manual_seed(1)
    for (xs, pts), pad, al in itertools.product(SHAPES[k], PADS, (False, True)):
        x0 = rand(torch, xs, dtype, gen)
        g0 = _grid(torch, xs[0], pts, k, dtype, gen)
        desc = GridSampleDescriptor(xs, tuple(g0.shape), mode, pad, al, dtype)
        plan = GridSamplePlan.select(desc)
        for name, x, g in (("dense", x0, g0), ("strided", _strided(torch, x0), g0),
                           ("strided grid", x0, g0.transpose(1, 2).contiguous()
                            .transpose(1, 2))):
            y = _poisoned(torch, desc.out_shape, dtype)
            plan.run(GridSampleArgs(x, g, y))
            yr = _ref(torch, x0, g0, mode, pad, al)
            sc = _ref(torch, x0.double().abs(), g0, "bilinear" if mode == "bilinear" else mode,
                      pad, al).abs()
            if mode == "bicubic":
                sc = sc + 2 * x0.double().abs().max()
            torch.cuda.synchronize()
            what = f"{desc} {name}"
            if mode == "nearest":
                assert_terms_close(y, yr, dtype, what=what)            # a copy: exact
            else:
                assert_terms_close(y, yr, dtype, terms=_terms(mode, x0), scale=sc, what=what)


def _autograd(torch, x, g, dy, mode, pad, al):
    xd = x.double().detach().requires_grad_(True)
    gd = g.double().detach().requires_grad_(True)
    torch.nn.functional.grid_sample(xd, gd, mode=mode, padding_mode=pad,
                                    align_corners=al).backward(dy.double())
    return xd.grad, gd.grad


def _run_backward(torch, desc, x, g, dy, want_dx=True, want_dg=True):
    from baracuda_dsl.ops.image.sampling import GridSampleBackwardArgs, GridSampleBackwardPlan

    plan = GridSampleBackwardPlan.select(desc)
    dtype = desc.dtype.name
    dx = _poisoned(torch, desc.input_shape, dtype) if want_dx else None
    dg = _poisoned(torch, desc.grid_shape, dtype) if want_dg else None
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda") \
        if plan.workspace_size() else None
    plan.run(GridSampleBackwardArgs(dy, x, g, dx, dg), workspace=ws)
    return dx, dg


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode,k", CASES)
def test_grid_sample_backward_matches_autograd(dtype, mode, k):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.image.sampling import GridSampleDescriptor

    gen = torch.Generator(device="cuda").manual_seed(2)
    for (xs, pts), pad, al in itertools.product(SHAPES[k], PADS, (False, True)):
        x = rand(torch, xs, dtype, gen)
        g = _grid(torch, xs[0], pts, k, dtype, gen)
        desc = GridSampleDescriptor(xs, tuple(g.shape), mode, pad, al, dtype)
        dy = _strided(torch, rand(torch, desc.out_shape, dtype, gen))     # strided gradient
        dx, dg = _run_backward(torch, desc, _strided(torch, x), g, dy)
        dxr, dgr = _autograd(torch, x, g, dy, mode, pad, al)
        # scales: the gradient of |x|, |dy| (an upper bound of the summed magnitudes)
        sx, _ = _autograd(torch, x.abs(), g, dy.abs(), "bilinear" if mode == "bilinear"
                          else mode, pad, al)
        sx = sx.abs() + dy.double().abs().max() * (4 if mode == "bicubic" else 1)
        big = max(xs[2:])
        sg = torch.full_like(dgr, float(x.double().abs().max() * dy.double().abs().max()
                                        * xs[1] * big * (16 if mode == "bicubic" else 4)))
        torch.cuda.synchronize()
        what = str(desc)
        assert_terms_close(dx, dxr, dtype, terms=_terms(mode, x) + 2 * pts[0] * pts[1],
                           scale=sx, what=f"{what} grad_input")
        if mode == "nearest":
            assert not dg.double().abs().max().item(), f"{what}: nearest grad_grid must be 0"
        else:
            assert_terms_close(dg, dgr, dtype, terms=_terms(mode, x) + 4 * xs[1], scale=sg,
                               what=f"{what} grad_grid")


def test_grid_sample_backward_output_mask_and_determinism():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.image.sampling import GridSampleDescriptor

    gen = torch.Generator(device="cuda").manual_seed(3)
    for dtype, mode in (("float32", "bilinear"), ("bfloat16", "bicubic"), ("float64", "bilinear")):
        x = rand(torch, (2, 3, 9, 8), dtype, gen)
        g = _grid(torch, 2, (7, 5), 2, dtype, gen)
        dy = rand(torch, (2, 3, 7, 5), dtype, gen)
        base = dict(input_shape=tuple(x.shape), grid_shape=tuple(g.shape), mode=mode,
                    padding_mode="border", align_corners=False, dtype=dtype)
        full = GridSampleDescriptor(**base)
        dx0, dg0 = _run_backward(torch, full, x, g, dy)
        _, dg1 = _run_backward(torch, full, x, g, dy)
        only_g = GridSampleDescriptor(**base, input_requires_grad=False)
        none_x, dg2 = _run_backward(torch, only_g, x, g, dy, want_dx=False)
        only_x = GridSampleDescriptor(**base, grid_requires_grad=False)
        dx3, none_g = _run_backward(torch, only_x, x, g, dy, want_dg=False)
        torch.cuda.synchronize()
        assert none_x is None and none_g is None
        assert bytes_equal(torch, dg0, dg1) and bytes_equal(torch, dg0, dg2), \
            f"{dtype} {mode}: grad_grid reruns differ"
        dxr, _ = _autograd(torch, x, g, dy, mode, "border", False)
        sc = dxr.abs() + dy.double().abs().max() * 4
        assert_terms_close(dx3, dxr, dtype, terms=200, scale=sc, what=f"{dtype} {mode} mask")
        assert_terms_close(dx0, dxr, dtype, terms=200, scale=sc, what=f"{dtype} {mode}")


def test_grid_sample_empty_and_degenerate():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.image.sampling import (GridSampleArgs, GridSampleDescriptor,
                                                 GridSamplePlan)

    # empty batch: forward and backward launch nothing and succeed
    desc = GridSampleDescriptor((0, 3, 5, 6), (0, 4, 7, 2))
    x = torch.empty(desc.input_shape, device="cuda")
    g = torch.empty(desc.grid_shape, device="cuda")
    y = torch.empty(desc.out_shape, device="cuda")
    GridSamplePlan.select(desc).run(GridSampleArgs(x, g, y))
    _run_backward(torch, desc, x, g, y)
    # no grid points: grad_input is zeros; no channels: grad_grid is zeros
    gen = torch.Generator(device="cuda").manual_seed(4)
    for dtype in ("float32", "bfloat16"):
        desc = GridSampleDescriptor((2, 3, 5, 6), (2, 0, 7, 2), dtype=dtype)
        x = rand(torch, desc.input_shape, dtype, gen)
        g = torch.empty(desc.grid_shape, dtype=x.dtype, device="cuda")
        dx, _ = _run_backward(torch, desc, x, g, torch.empty(desc.out_shape, dtype=x.dtype,
                                                             device="cuda"))
        desc0 = GridSampleDescriptor((2, 0, 5, 6), (2, 4, 7, 2), dtype=dtype)
        _, dg = _run_backward(torch, desc0, torch.empty(desc0.input_shape, dtype=x.dtype,
                                                        device="cuda"),
                              _grid(torch, 2, (4, 7), 2, dtype, gen),
                              torch.empty(desc0.out_shape, dtype=x.dtype, device="cuda"))
        torch.cuda.synchronize()
        assert torch.equal(dx, torch.zeros_like(dx)) and torch.equal(dg, torch.zeros_like(dg))
    # a 1-pixel image with reflection + align_corners (degenerate reflection range)
    x = rand(torch, (1, 2, 1, 1), "float32", gen)
    g = _grid(torch, 1, (3, 3), 2, "float32", gen)
    desc = GridSampleDescriptor((1, 2, 1, 1), (1, 3, 3, 2), "bilinear", "reflection", True)
    y = _poisoned(torch, desc.out_shape, "float32")
    GridSamplePlan.select(desc).run(GridSampleArgs(x, g, y))
    torch.cuda.synchronize()
    assert_terms_close(y, _ref(torch, x, g, "bilinear", "reflection", True), "float32", terms=4)


@pytest.mark.parametrize("dtype", DTYPES)
def test_affine_grid_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.image.sampling import (AffineGridArgs, AffineGridBackwardArgs,
                                                 AffineGridBackwardPlan, AffineGridDescriptor,
                                                 AffineGridPlan)

    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(5)
    for size, al in itertools.product([(3, 2, 7, 9), (1, 1, 1, 5), (2, 1, 3, 4, 5),
                                       (1, 3, 1, 1, 6)], (False, True)):
        desc = AffineGridDescriptor(size, al, dtype)
        theta = _strided(torch, rand(torch, desc.theta_shape, dtype, gen))
        grid = _poisoned(torch, desc.grid_shape, dtype)
        AffineGridPlan.select(desc).run(AffineGridArgs(theta, grid))
        ref = F.affine_grid(theta.double(), size, align_corners=al)
        sc = _theta_scale(theta, ref)
        dgrid = _strided(torch, rand(torch, desc.grid_shape, dtype, gen))
        outs = []
        for _ in range(2):
            dth = _poisoned(torch, desc.theta_shape, dtype)
            AffineGridBackwardPlan.select(desc).run(AffineGridBackwardArgs(dgrid, dth))
            outs.append(dth)
        td = theta.double().detach().requires_grad_(True)
        F.affine_grid(td, size, align_corners=al).backward(dgrid.double())
        npts = desc.grid_shape[1] * desc.grid_shape[2] * (desc.grid_shape[3] if len(size) == 5
                                                          else 1)
        tsc = torch.full_like(td.grad, float(dgrid.double().abs().sum()))
        torch.cuda.synchronize()
        assert_terms_close(grid, ref, dtype, terms=8, scale=sc, what=str(desc))
        assert bytes_equal(torch, outs[0], outs[1]), f"{desc}: affine backward reruns differ"
        assert_terms_close(outs[0], td.grad, dtype, terms=npts + 8, scale=tsc,
                           what=f"{desc} backward")
    desc = AffineGridDescriptor((0, 3, 4, 5), dtype=dtype)                  # empty batch
    AffineGridPlan.select(desc).run(AffineGridArgs(
        torch.empty(desc.theta_shape, dtype=getattr(torch, dtype), device="cuda"),
        torch.empty(desc.grid_shape, dtype=getattr(torch, dtype), device="cuda")))


def test_namespace_functions():
    torch = pytest.importorskip("torch")
    import array_api as xp
    from array_api import _sampling_extensions as S

    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(6)
    theta = rand(torch, (2, 2, 3), "float32", gen)
    grid = S.affine_grid(xp.from_dlpack(theta), (2, 3, 6, 7), align_corners=False)
    gr = F.affine_grid(theta.double(), (2, 3, 6, 7), align_corners=False)
    assert_terms_close(torch.from_dlpack(grid), gr, "float32", terms=8,
                       scale=_theta_scale(theta, gr))
    t = rand(torch, (2, 3, 5, 8), "float32", gen)
    y = S.grid_sample(xp.from_dlpack(t), grid, "bilinear", "border", False)
    yr = F.grid_sample(t.double(), gr, "bilinear", "border", False)
    assert_terms_close(torch.from_dlpack(y), yr, "float32", terms=64,
                       scale=F.grid_sample(t.double().abs(), gr, "bilinear", "border", False))
    g = rand(torch, tuple(y.shape), "float32", gen)
    gi, gg = S.grid_sample_backward(xp.from_dlpack(g), xp.from_dlpack(t), grid, "bilinear",
                                    "border", False)
    td = t.double().requires_grad_(True)
    gd = torch.from_dlpack(grid).double().requires_grad_(True)
    F.grid_sample(td, gd, "bilinear", "border", False).backward(g.double())
    assert_terms_close(torch.from_dlpack(gi), td.grad, "float32", terms=200,
                       scale=td.grad.abs() + g.abs().max().double())
    assert_terms_close(torch.from_dlpack(gg), gd.grad, "float32", terms=200,
                       scale=torch.full_like(gd.grad, float(t.abs().max() * g.abs().max()
                                                            * 3 * 8 * 4)))
    none, gg2 = S.grid_sample_backward(xp.from_dlpack(g), xp.from_dlpack(t), grid, "bilinear",
                                       "border", False, input_requires_grad=False)
    assert none is None and bytes_equal(torch, torch.from_dlpack(gg), torch.from_dlpack(gg2))
    dth = S.affine_grid_backward(gg, (2, 3, 6, 7), align_corners=False)
    thd = theta.double().requires_grad_(True)
    F.affine_grid(thd, (2, 3, 6, 7), align_corners=False).backward(
        torch.from_dlpack(gg).double())
    assert_terms_close(torch.from_dlpack(dth), thd.grad, "float32", terms=64,
                       scale=torch.full_like(thd.grad,
                                             float(torch.from_dlpack(gg).abs().sum())))
    with pytest.raises(TypeError):
        S.grid_sample(xp.from_dlpack(t), xp.from_dlpack(torch.zeros((2, 4, 4, 2),
                                                                   device="cuda",
                                                                   dtype=torch.float64)))
    with pytest.raises(ValueError):
        S.affine_grid(xp.from_dlpack(theta), (2, 3, 4, 5, 6))
