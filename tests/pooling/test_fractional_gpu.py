"""FractionalMaxPoolPlan / FractionalMaxPoolBackwardPlan and the namespace functions on the GPU:
``mode="torch"`` against torch.nn.functional.fractional_max_pool2d / 3d with the same samples
(values and indices exactly; torch run in the input's dtype, whose accumulate type decides the
windows), ``mode="seed"`` against a host reference of the documented windows (float64 maxima);
backward against a float64 scatter-add of dy at the saved indices and torch.autograd (gather:
bit-identical reruns; atomic: within rounding), odd sizes, strided and channels-last inputs,
NHWC outputs, NaN-poisoned outputs, NaN propagation, empty batch."""

import itertools
import math

import pytest

from _gpu_helpers import (assert_terms_close, bytes_equal, rand, image_out as _out,
                          image_inputs as _inputs)

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float16", "bfloat16", "float64"]
# (spatial, shape, kernel, output_size)
CASES = [(2, (2, 3, 15, 13), 3, (7, 6)),
         (2, (1, 4, 9, 11), (2, 3), (5, 4)),
         (2, (3, 2, 32, 33), 2, (16, 16)),
         (2, (1, 1, 6, 7), 2, (1, 6)),
         (3, (2, 2, 9, 8, 7), 2, (4, 4, 3)),
         (3, (1, 3, 8, 6, 9), (3, 2, 2), (5, 3, 7))]


def _samples(torch, desc, dtype, gen):
    """(samples in x's dtype for torch, the same values as float32 for us, strided)."""
    u = torch.rand(desc.samples_shape, generator=gen, device="cuda") * 0.99
    ux = u.to(getattr(torch, dtype))
    base = torch.empty(desc.samples_shape[:2] + (2 * desc.spatial,), device="cuda")
    base[..., ::2] = ux.float()
    return ux, base[..., ::2]


def _host_reference(torch, desc, x, u32):
    """(y float64, indices) of the windows of desc.mode for samples ``u32``, on the host."""
    from baracuda_dsl.ops.pooling import fractional_starts

    N, C = desc.shape[:2]
    sp, out, ks = desc.shape[2:], desc.output_size, desc.kernel_size
    if desc.mode == "torch":
        cols = (0, 1, 2) if desc.spatial == 3 else (1, 0)
    else:
        cols = tuple(range(desc.spatial))
    xd = x.double().cpu()
    uc = u32.cpu()
    y = torch.empty(desc.out_shape, dtype=torch.float64)
    idx = torch.empty(desc.out_shape, dtype=torch.int64)
    for b, c in itertools.product(range(N), range(C)):
        starts = [fractional_starts(n, k, o, float(uc[b, c, col]), desc.mode, desc.dtype)
                  for n, k, o, col in zip(sp, ks, out, cols)]
        plane = xd[b, c]
        for opos in itertools.product(*[range(o) for o in out]):
            sl = tuple(slice(starts[d][opos[d]], starts[d][opos[d]] + ks[d])
                       for d in range(desc.spatial))
            win = plane[sl]
            nan = torch.isnan(win.reshape(-1))
            a = int(nan.nonzero()[-1]) if nan.any() else int(torch.argmax(win.reshape(-1)))
            z = []
            for d in reversed(range(desc.spatial)):
                z.append(a % ks[d] + sl[d].start)
                a //= ks[d]
            z = z[::-1]
            y[(b, c) + opos] = plane[tuple(z)]
            idx[(b, c) + opos] = int(sum(zz * math.prod(sp[d + 1:]) for d, zz in enumerate(z)))
    return y.cuda(), idx.cuda()


def _torch_fw(torch, desc, x, ux):
    F = torch.nn.functional
    fn = F.fractional_max_pool2d if desc.spatial == 2 else F.fractional_max_pool3d
    return fn(x, desc.kernel_size, output_size=desc.output_size, return_indices=True,
              _random_samples=ux)


def _run_fw(torch, desc, x, u32, layout):
    from baracuda_dsl.ops.pooling import FractionalMaxPoolArgs, FractionalMaxPoolPlan

    y = _out(torch, desc.out_shape, desc.dtype.name, layout)
    idx = _out(torch, desc.out_shape, torch.int64, layout)
    FractionalMaxPoolPlan.select(desc).run(FractionalMaxPoolArgs(x, u32, y, idx))
    return y, idx


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_torch_mode_matches_torch_exactly(dtype, layout):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.pooling import FractionalMaxPoolDescriptor

    gen = torch.Generator(device="cuda").manual_seed(1)
    for sp, shape, k, out in CASES:
        desc = FractionalMaxPoolDescriptor(sp, shape, k, out, dtype=dtype, layout=layout)
        for name, x in _inputs(torch, shape, dtype, gen):
            ux, u32 = _samples(torch, desc, dtype, gen)
            y, idx = _run_fw(torch, desc, x, u32, layout)
            yr, ir = _torch_fw(torch, desc, x, ux)
            torch.cuda.synchronize()
            what = f"{desc} {name}"
            assert torch.equal(idx, ir), what
            assert torch.equal(y, yr), what
            yh, ih = _host_reference(torch, desc, x, u32)
            assert torch.equal(idx, ih), what
            assert torch.equal(y.double(), yh), what


@pytest.mark.parametrize("dtype", DTYPES)
def test_seed_mode_matches_reference(dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.pooling import FractionalMaxPoolDescriptor

    gen = torch.Generator(device="cuda").manual_seed(2)
    for sp, shape, k, out in CASES:
        for layout in ("NCHW", "NHWC"):
            desc = FractionalMaxPoolDescriptor(sp, shape, k, out, mode="seed", dtype=dtype,
                                               layout=layout)
            x = rand(torch, shape, dtype, gen)
            _, u32 = _samples(torch, desc, dtype, gen)
            y, idx = _run_fw(torch, desc, x, u32, layout)
            yh, ih = _host_reference(torch, desc, x, u32)
            torch.cuda.synchronize()
            if dtype in ("float32", "float64"):          # random values: no ties
                assert torch.equal(idx, ih), str(desc)
            assert torch.equal(y.double(), yh), str(desc)
            flat = x.reshape(shape[0], shape[1], -1)
            got = flat.gather(2, idx.reshape(shape[0], shape[1], -1).contiguous())
            assert torch.equal(got, y.reshape(got.shape)), str(desc)


def test_nan_wins_like_torch():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.pooling import FractionalMaxPoolDescriptor

    gen = torch.Generator(device="cuda").manual_seed(3)
    for dtype in ("float32", "bfloat16"):
        x = rand(torch, (2, 3, 11, 10), dtype, gen)
        x[0, 1, 4, 5] = float("nan")
        x[1, 2, 0, 0] = float("nan")
        x[1, 2, 0, 1] = float("nan")
        desc = FractionalMaxPoolDescriptor(2, x.shape, 3, (5, 6), dtype=dtype)
        ux, u32 = _samples(torch, desc, dtype, gen)
        y, idx = _run_fw(torch, desc, x, u32, "NCHW")
        yr, ir = _torch_fw(torch, desc, x, ux)
        torch.cuda.synchronize()
        assert torch.equal(torch.isnan(y), torch.isnan(yr)) and torch.isnan(y).any()
        assert torch.equal(idx, ir)


def _dx_reference(torch, desc, dy, idx):
    n, c = desc.shape[:2]
    flat_i = idx.reshape(n, c, -1).contiguous()
    ref = torch.zeros((n, c, math.prod(desc.shape[2:])), dtype=torch.float64, device="cuda")
    ref.scatter_add_(2, flat_i, dy.double().reshape(n, c, -1))
    sc = torch.zeros_like(ref).scatter_add_(2, flat_i, dy.double().abs().reshape(n, c, -1))
    return ref.reshape(desc.shape), sc.reshape(desc.shape)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("deterministic", [True, False])
def test_backward(dtype, deterministic):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.pooling import (FractionalMaxPoolBackwardArgs,
                                          FractionalMaxPoolBackwardPlan,
                                          FractionalMaxPoolDescriptor)

    gen = torch.Generator(device="cuda").manual_seed(4)
    for (sp, shape, k, out), layout, mode in itertools.product(CASES, ("NCHW", "NHWC"),
                                                               ("torch", "seed")):
        desc = FractionalMaxPoolDescriptor(sp, shape, k, out, mode=mode, dtype=dtype,
                                           layout=layout, deterministic=deterministic)
        x = rand(torch, shape, dtype, gen)
        ux, u32 = _samples(torch, desc, dtype, gen)
        _, idx = _run_fw(torch, desc, x, u32, layout)
        base = rand(torch, tuple(desc.out_shape[:-1]) + (2 * desc.out_shape[-1],), dtype, gen)
        dy = base[..., ::2]
        plan = FractionalMaxPoolBackwardPlan.select(desc)
        ws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8, device="cuda")
        outs = []
        for _ in range(2):
            dx = _out(torch, desc.shape, dtype, layout)
            plan.run(FractionalMaxPoolBackwardArgs(dy, idx, dx),
                     workspace=ws if plan.workspace_size() else None)
            outs.append(dx)
        torch.cuda.synchronize()
        what = str(desc)
        if deterministic:
            assert bytes_equal(torch, outs[0], outs[1]), f"{what}: reruns differ"
        ref, sc = _dx_reference(torch, desc, dy, idx)
        terms = math.prod(desc.kernel_size) + 2
        assert_terms_close(outs[0], ref, dtype, terms=terms, scale=sc, what=what)
        if mode == "torch" and dtype in ("float32", "float64"):
            xd = x.detach().clone().requires_grad_(True)
            yr, _ = _torch_fw(torch, desc, xd, ux)
            yr.backward(dy)
            assert_terms_close(outs[0], xd.grad.double(), dtype, terms=terms, scale=sc,
                               what=f"{what} (autograd)")


def test_empty_batch():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.pooling import (FractionalMaxPoolArgs, FractionalMaxPoolBackwardArgs,
                                          FractionalMaxPoolBackwardPlan,
                                          FractionalMaxPoolDescriptor, FractionalMaxPoolPlan)

    for det in (True, False):
        desc = FractionalMaxPoolDescriptor(2, (0, 3, 9, 9), 2, 4, dtype="float16",
                                           deterministic=det)
        x = torch.empty(desc.shape, device="cuda", dtype=torch.float16)
        u = torch.empty(desc.samples_shape, device="cuda")
        y = torch.empty(desc.out_shape, device="cuda", dtype=torch.float16)
        idx = torch.empty(desc.out_shape, device="cuda", dtype=torch.int64)
        FractionalMaxPoolPlan.select(desc).run(FractionalMaxPoolArgs(x, u, y, idx))
        plan = FractionalMaxPoolBackwardPlan.select(desc)
        assert plan.workspace_size() == 0
        plan.run(FractionalMaxPoolBackwardArgs(y, idx, torch.empty_like(x)))


def test_namespace_functions():
    torch = pytest.importorskip("torch")
    import array_api as xp
    from array_api import _pooling_more_extensions as P

    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(6)
    t = rand(torch, (2, 3, 13, 12), "float32", gen)
    u = torch.rand((2, 3, 2), generator=gen, device="cuda") * 0.99
    x = xp.from_dlpack(t)
    y, idx = P.fractional_max_pool2d(x, 3, output_ratio=0.5, return_indices=True,
                                     _random_samples=xp.from_dlpack(u))
    yr, ir = F.fractional_max_pool2d(t, 3, output_ratio=(0.5, 0.5), return_indices=True,
                                     _random_samples=u)
    assert torch.equal(torch.from_dlpack(y), yr) and torch.equal(torch.from_dlpack(idx), ir)
    g = rand(torch, tuple(yr.shape), "float32", gen)
    dx = P.fractional_max_pool_backward(xp.from_dlpack(g), t.shape, idx, 3)
    td = t.clone().requires_grad_(True)
    F.fractional_max_pool2d(td, 3, output_ratio=(0.5, 0.5), _random_samples=u).backward(g)
    assert_terms_close(torch.from_dlpack(dx), td.grad.double(), "float32", terms=12)
    dxa = P.fractional_max_pool_backward(xp.from_dlpack(g), t.shape, idx, 3, deterministic=False)
    assert_terms_close(torch.from_dlpack(dxa), td.grad.double(), "float32", terms=12)
    t3 = rand(torch, (1, 2, 7, 8, 9), "float64", gen)
    u3 = torch.rand((1, 2, 3), generator=gen, device="cuda", dtype=torch.float64) * 0.99
    y3 = P.fractional_max_pool3d(xp.from_dlpack(t3), 2, (4, 5, 6),
                                 _random_samples=xp.from_dlpack(u3.float()))
    assert torch.equal(torch.from_dlpack(y3), F.fractional_max_pool3d(
        t3, 2, (4, 5, 6), _random_samples=u3.float().double()))
    # drawn samples: valid indices whose values are the outputs
    y4, i4 = P.fractional_max_pool2d(x, (2, 3), (6, 5), return_indices=True)
    gy = t.reshape(2, 3, -1).gather(2, torch.from_dlpack(i4).reshape(2, 3, -1))
    assert torch.equal(gy, torch.from_dlpack(y4).reshape(2, 3, -1))
    with pytest.raises(TypeError):
        P.fractional_max_pool2d(xp.from_dlpack(torch.zeros((1, 1, 4, 4), dtype=torch.int32,
                                                           device="cuda")), 2, 2)
    with pytest.raises(ValueError):
        P.fractional_max_pool3d(x, 2, 2)
