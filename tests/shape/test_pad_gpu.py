"""PadPlan / RollPlan / TriuPlan / TrilPlan and their backward plans on the GPU, against
numpy.pad / torch.nn.functional.pad / torch.roll / torch.triu / torch.tril (bit-exact) and float64
torch.autograd (backward)."""

import numpy as np
import pytest

import baracuda_dsl as bd
from _gpu_helpers import assert_terms_close, bytes_equal as _bytes_equal
from _gpu_helpers import poisoned as _poisoned, rand

pytestmark = pytest.mark.gpu

DTYPES = ["bool", "int8", "int32", "bfloat16", "float32", "float64", "complex64"]
VALUE = {"bool": True, "int8": -3, "int32": 123456, "bfloat16": 2.5, "float32": -1.25,
         "float64": 7.0, "complex64": 1 + 2j}
PAD_CASES = [((7,), ((2, 3),)), ((4, 6), ((1, 2), (0, 3))), ((3, 5, 9), ((0, 0), (1, 1), (2, 2))),
             ((2, 3, 10, 33), ((0, 0), (0, 0), (3, 1), (1, 3))), ((2, 16), ((1, 1), (0, 0))),
             ((5, 1), ((2, 2), (0, 0))), ((1, 1000), ((0, 0), (1, 0))), ((3, 4097), ((1, 0), (0, 2))),
             ((2,) * 8, ((1, 0),) * 8), ((0, 4), ((1, 1), (0, 0))), ((4, 0), ((1, 1), (0, 0))),
             ((3, 64), ((0, 0), (8, 16))), ((3, 64), ((1, 0), (-8, 32)))]   # padded by whole words
MODES = ["constant", "reflect", "replicate", "circular"]


def _rand(torch, shape, dtype, gen):
    return rand(torch, shape, dtype, gen, low=-100)


def _pad_ref(torch, x, pads, mode, value):
    """Reference by gathering with the host index map (pad_source_index, checked against
    numpy.pad on the CPU tests); every dtype."""
    from baracuda_dsl.ops.shape.pad import pad_source_index

    xc = x.cpu()
    idx, ok = [], None
    for n, (lo, hi) in zip(xc.shape, pads):
        q, v = pad_source_index(np.arange(n + lo + hi), n, lo, mode)
        idx.append(torch.from_numpy(np.clip(q, 0, max(n - 1, 0))))
        ok = torch.from_numpy(v) if ok is None else ok[..., None] & torch.from_numpy(v)
    out_shape = tuple(len(i) for i in idx)
    if xc.numel() == 0:
        ref = torch.zeros(out_shape, dtype=xc.dtype)
    else:
        ref = xc[tuple(torch.meshgrid(*idx, indexing="ij"))] if idx else xc.clone()
    if mode == "constant" and ref.numel():
        ref[~ok.reshape(out_shape)] = value
    return ref


def _views(torch, xp, shape, dtype, gen):
    base = _rand(torch, tuple(2 * s + 1 for s in shape), dtype, gen)
    v = {"dense": _rand(torch, shape, dtype, gen),
         "strided": base[tuple(slice(1, 1 + 2 * s, 2) for s in shape)]}
    if len(shape) >= 2:
        v["transposed"] = _rand(torch, shape[::-1], dtype, gen).permute(*reversed(range(len(shape))))
    if shape and shape[-1] > 1 and dtype != "bool":
        t = _rand(torch, shape, dtype, gen)
        v["flipped"] = (xp.flip(xp.from_dlpack(t), axis=len(shape) - 1), torch.flip(t, (-1,)))
    return v


def _shaped_views(torch, xp, shape, dtype, gen):
    """(name, operand for the plan, torch twin) of each ``_views`` operand that has ``shape``."""
    for name, x in _views(torch, xp, shape, dtype, gen).items():
        arr, xt = x if isinstance(x, tuple) else (x, x)
        if tuple(xt.shape) == tuple(shape):
            yield name, arr, xt


@pytest.mark.parametrize("dtype", DTYPES)
def test_pad_matches_reference(dtype):
    torch = pytest.importorskip("torch")
    import array_api as xp
    from baracuda_dsl.ops.shape.pad import PadArgs, PadDescriptor, PadPlan

    gen = torch.Generator(device="cuda").manual_seed(0)
    for shape, pads in PAD_CASES:
        for mode in MODES:
            try:
                desc = PadDescriptor(shape, pads, mode, VALUE[dtype], dtype)
            except bd.InvalidProblemError:
                continue   # e.g. reflect pad >= n, replicate of an empty dim
            plan = PadPlan.select(desc)
            for name, arr, xt in _shaped_views(torch, xp, shape, dtype, gen):
                out = _poisoned(torch, desc.out_shape, dtype)
                plan.run(PadArgs(arr, out))
                torch.cuda.synchronize()
                ref = _pad_ref(torch, xt, pads, mode, VALUE[dtype])
                assert _bytes_equal(torch, out.cpu(), ref), (dtype, shape, pads, mode, name,
                                                             plan.sku())


@pytest.mark.parametrize("mode", MODES)
def test_pad_vs_numpy_and_torch(mode):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.shape.pad import PadArgs, PadDescriptor, PadPlan

    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(1)
    np_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
               "circular": "wrap"}[mode]
    for dtype in ("float32", "float64"):
        for shape, pads in [((2, 3, 17, 31), ((0, 0), (0, 0), (2, 3), (3, 2))),
                            ((4, 9, 200), ((0, 0), (0, 0), (5, 7))),
                            ((2, 64, 56, 56), ((0, 0), (0, 0), (1, 1), (1, 1)))]:
            x = _rand(torch, shape, dtype, gen)
            desc = PadDescriptor(shape, pads, mode, 0, dtype)
            out = _poisoned(torch, desc.out_shape, dtype)
            PadPlan.select(desc).run(PadArgs(x, out))
            torch.cuda.synchronize()
            ref = np.pad(x.cpu().numpy(), pads, mode=np_mode)
            np.testing.assert_array_equal(out.cpu().numpy(), ref)
            flat = []
            for lo, hi in reversed(pads[2:]):
                flat += [lo, hi]
            assert torch.equal(out, F.pad(x, flat, mode=mode))
    # bf16 4-D image, the benchmark shape family
    x = _rand(torch, (2, 8, 224, 224), "bfloat16", gen)
    desc = PadDescriptor(x.shape, ((0, 0), (0, 0), (1, 1), (1, 1)), mode, 0, "bfloat16")
    out = _poisoned(torch, desc.out_shape, "bfloat16")
    PadPlan.select(desc).run(PadArgs(x, out))
    assert torch.equal(out, F.pad(x, [1, 1, 1, 1], mode=mode))


def test_pad_negative_and_large_pads():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.shape.pad import PadArgs, PadDescriptor, PadPlan

    gen = torch.Generator(device="cuda").manual_seed(2)
    for shape, pads, mode in [((9, 12), ((-2, 3), (1, -4)), "constant"),
                              ((5, 7), ((11, 13), (0, 0)), "circular"),
                              ((5, 7), ((-2, 9), (3, -1)), "circular"),
                              ((3, 4), ((-3, 0), (0, 0)), "constant")]:
        x = _rand(torch, shape, "float32", gen)
        desc = PadDescriptor(shape, pads, mode, 5.0, "float32")
        out = _poisoned(torch, desc.out_shape, "float32")
        PadPlan.select(desc).run(PadArgs(x, out))
        torch.cuda.synchronize()
        assert _bytes_equal(torch, out.cpu(), _pad_ref(torch, x, pads, mode, 5.0))
        if mode == "constant":
            flat = [pads[1][0], pads[1][1], pads[0][0], pads[0][1]]
            assert torch.equal(out, torch.nn.functional.pad(x, flat, value=5.0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_roll_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    import array_api as xp
    from baracuda_dsl.ops.shape.pad import RollArgs, RollDescriptor, RollPlan

    gen = torch.Generator(device="cuda").manual_seed(3)
    for shape, shifts in [((10,), (3,)), ((1000,), (-1013,)), ((4, 6), (1, -2)), ((5, 64), (0, 8)),
                          ((5, 64), (3, 0)), ((3, 4, 33), (0, 7, 1)), ((2,) * 8, (1,) * 8),
                          ((0, 5), (1, 2)), ((1, 7), (4, 4)), ((7, 4097), (2, -5))]:
        plan = RollPlan.select(RollDescriptor(shape, shifts, dtype))
        for name, arr, xt in _shaped_views(torch, xp, shape, dtype, gen):
            out = _poisoned(torch, shape, dtype)
            plan.run(RollArgs(arr, out))
            torch.cuda.synchronize()
            ref = torch.roll(xt, shifts, tuple(range(len(shape))))
            assert _bytes_equal(torch, out, ref), (dtype, shape, shifts, name, plan.sku())


@pytest.mark.parametrize("dtype", DTYPES)
def test_tri_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    import array_api as xp
    from baracuda_dsl.ops.shape.pad import TriArgs, TriDescriptor, TrilPlan, TriuPlan

    gen = torch.Generator(device="cuda").manual_seed(4)
    for shape in [(5, 7), (7, 5), (1, 9), (3, 4, 6), (2, 1, 3, 3), (2, 3, 40, 33), (0, 3),
                  (2, 0, 4), (33, 1000)]:
        for k in (0, 1, -2, 100, -100):
            for upper in (True, False):
                plan = (TriuPlan if upper else TrilPlan).select(TriDescriptor(shape, k, upper, dtype))
                for name, arr, xt in _shaped_views(torch, xp, shape, dtype, gen):
                    out = _poisoned(torch, shape, dtype)
                    plan.run(TriArgs(arr, out))
                    torch.cuda.synchronize()
                    ref = torch.triu(xt, k) if upper else torch.tril(xt, k)
                    assert _bytes_equal(torch, out, ref), (dtype, shape, k, upper, name)


# ---------------------------------------------------------------------------------- backward
def _check_grad(dx, grad_of, dy, dtype, what):
    """dx against the float64 gradient ``grad_of(dy)`` of the (linear) pad map, element by
    element: each dx element sums ``count`` dy values in f32 / f64 (pad_bw, pad_bw2d: one
    rounding into dtype at the end), so its error is bounded by count·eps(compute) relative
    to Σ|dy| (grad_of(|dy|); count = grad_of(ones)) plus half an ulp of dtype."""
    ref = grad_of(dy)
    mag = grad_of(dy.abs())
    count = grad_of(dy.new_ones(dy.shape))
    assert_terms_close(dx.double().cpu().numpy(), ref, dtype, terms=1, scale=count * mag,
                       what=what)


def _scatter_ref(shape, pads, mode, dy64):
    from baracuda_dsl.ops.shape.pad import pad_source_index

    ref = np.zeros(shape)
    grids = np.meshgrid(*[np.arange(n + lo + hi) for n, (lo, hi) in zip(shape, pads)], indexing="ij")
    srcs, ok = [], np.ones(dy64.shape, bool)
    for g, n, (lo, _) in zip(grids, shape, pads):
        q, v = pad_source_index(g, n, lo, mode)
        srcs.append(np.where(v, q, 0))
        ok &= v
    np.add.at(ref, tuple(sc[ok] for sc in srcs), dy64[ok])
    return ref


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
@pytest.mark.parametrize("mode", MODES)
def test_pad_backward(dtype, mode):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.shape.pad import PadBackwardArgs, PadBackwardPlan, PadDescriptor

    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(5)
    cases = [((2, 3, 17, 31), ((0, 0), (0, 0), (2, 3), (3, 2))), ((4, 9, 200), ((0, 0), (0, 0), (5, 7))),
             ((2, 3, 5, 6), ((0, 0), (0, 0), (4, 4), (1, 5)))]
    if mode == "circular":
        cases.append(((3, 5, 7), ((0, 0), (11, 13), (-2, 9))))    # beyond torch: numpy reference
    if mode == "constant":
        cases.append(((3, 5, 7), ((0, 0), (-1, 2), (3, -2))))
    for shape, pads in cases:
        try:
            desc = PadDescriptor(shape, pads, mode, 0, dtype)
        except bd.InvalidProblemError:
            continue
        dy_big = _rand(torch, tuple(2 * n for n in desc.out_shape), dtype, gen)
        dy = dy_big[tuple(slice(None, None, 2) for _ in desc.out_shape)]   # strided dy
        dx = _poisoned(torch, shape, dtype)
        PadBackwardPlan.select(desc).run(PadBackwardArgs(dy, dx))
        torch.cuda.synchronize()
        torch_ok = all(lo <= n and hi <= n for n, (lo, hi) in zip(shape, pads)) or mode == "constant"

        def grad_of(d, shape=shape, pads=pads, torch_ok=torch_ok):
            if not torch_ok:
                return _scatter_ref(shape, pads, mode, d.double().cpu().numpy())
            x64 = torch.zeros(shape, device="cuda", dtype=torch.float64, requires_grad=True)
            flat = []
            for lo, hi in reversed(pads[len(shape) - (3 if len(shape) == 5 else 2):]):
                flat += [lo, hi]
            while len(flat) > 2 and flat[-2:] == [0, 0]:
                flat = flat[:-2]
            F.pad(x64, flat, mode=mode).backward(d.double())
            return x64.grad.cpu().numpy()

        _check_grad(dx, grad_of, dy, dtype, (dtype, mode, shape, pads))
        # deterministic: a second run is bit-identical
        dx2 = _poisoned(torch, shape, dtype)
        PadBackwardPlan.select(desc).run(PadBackwardArgs(dy, dx2))
        assert _bytes_equal(torch, dx, dx2)


def test_roll_and_tri_backward():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.shape.pad import (RollBackwardArgs, RollBackwardPlan, RollDescriptor,
                                            TriBackwardArgs, TriBackwardPlan, TriDescriptor)

    gen = torch.Generator(device="cuda").manual_seed(6)
    for dtype in ("float32", "bfloat16"):
        dy = _rand(torch, (6, 2 * 33), dtype, gen)[:, ::2]
        dx = _poisoned(torch, (6, 33), dtype)
        RollBackwardPlan.select(RollDescriptor((6, 33), (2, -40), dtype)).run(RollBackwardArgs(dy, dx))
        assert _bytes_equal(torch, dx, torch.roll(dy, (-2, 40), (0, 1)))
        x = torch.randn(6, 33, device="cuda", dtype=torch.float64, requires_grad=True)
        torch.tril(x, 3).backward(dy.double())
        dx = _poisoned(torch, (6, 33), dtype)
        TriBackwardPlan.select(TriDescriptor((6, 33), 3, False, dtype)).run(TriBackwardArgs(dy, dx))
        assert torch.equal(dx.double(), x.grad)


def _torch_pad_grad(torch, shape, pads, mode, dy):
    """float64 torch autograd gradient of F.pad over the last two dims (rank 3 / 4 inputs)."""
    F = torch.nn.functional
    x64 = torch.zeros(shape, device="cuda", dtype=torch.float64, requires_grad=True)
    flat = [pads[-1][0], pads[-1][1], pads[-2][0], pads[-2][1]]
    F.pad(x64, flat, mode=mode).backward(dy.double())
    return x64.grad.cpu().numpy()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_backward_2d_fast_path(dtype, mode):
    """pad_bw2d (only the last two dims padded): float64 autograd / scatter reference, and the
    general pad_bw kernel (same summation order: bit-identical)."""
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.shape.pad import (PadBackwardArgs, PadBackwardPlan, PadDescriptor,
                                            PadTuning)

    gen = torch.Generator(device="cuda").manual_seed(7)
    cases = []
    for h, w in [(1, 1), (2, 7), (7, 33), (33, 2), (224, 224), (3, 300)]:
        for p in (0, 1, 3):
            ph = (p, max(p - 1, 0)) if h > p and w > p else (0, 0)
            pw = (max(p - 1, 0), p) if h > p and w > p else (0, 0)
            cases.append(((2 if h == 224 else 5, h, w), ((0, 0), ph, pw)))
    cases.append(((1, 3, 4), ((0, 0), (2, 2), (3, 3))))
    cases.append(((2, 3, 7, 9), ((0, 0), (0, 0), (1, 3), (2, 0))))
    if mode == "circular":
        cases.append(((2, 3, 4), ((0, 0), (7, 5), (9, -1))))     # pads > n and a crop
    for shape, pads in cases:
        try:
            desc = PadDescriptor(shape, pads, mode, 0, dtype)
        except bd.InvalidProblemError:
            continue
        plan = PadBackwardPlan.select(desc)
        assert plan.sku().template == "pad_bw2d", (shape, pads, mode)
        for layout in ("dense", "strided"):
            if layout == "dense":
                dy = _rand(torch, desc.out_shape, dtype, gen)
            else:   # last two dims stepped, batch dense-collapsible
                big = _rand(torch, desc.out_shape[:-2] + tuple(2 * n for n in desc.out_shape[-2:]),
                            dtype, gen)
                dy = big[..., ::2, ::2]
            dx = _poisoned(torch, shape, dtype)
            plan.run(PadBackwardArgs(dy, dx))
            torch.cuda.synchronize()
            torch_ok = all(0 <= lo <= n and 0 <= hi <= n for n, (lo, hi) in zip(shape, pads))

            def grad_of(d, shape=shape, pads=pads, torch_ok=torch_ok):
                if torch_ok:
                    return _torch_pad_grad(torch, shape, pads, mode, d)
                return _scatter_ref(shape, pads, mode, d.double().cpu().numpy())

            _check_grad(dx, grad_of, dy, dtype, (dtype, mode, shape, pads, layout))
            # the general kernel sums in the same order: the same bits
            old = PadBackwardPlan.select(desc, bd.PlanPreference(tuning=PadTuning(fast_2d=False)))
            assert old.sku().template == "pad_bw"
            dx_old = _poisoned(torch, shape, dtype)
            old.run(PadBackwardArgs(dy, dx_old))
            assert _bytes_equal(torch, dx, dx_old), (dtype, mode, shape, pads, layout)


def test_pad_backward_2d_fallbacks():
    """Problems the fast path does not serve still run (general kernel) and stay correct."""
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.shape.pad import PadBackwardArgs, PadBackwardPlan, PadDescriptor

    gen = torch.Generator(device="cuda").manual_seed(8)
    # a leading dim padded: chosen at select time
    desc = PadDescriptor((4, 5, 6), ((1, 1), (1, 0), (2, 2)), "replicate", 0, "float32")
    plan = PadBackwardPlan.select(desc)
    assert plan.sku().template == "pad_bw"
    dy = _rand(torch, desc.out_shape, "float32", gen)
    dx = _poisoned(torch, desc.shape, "float32")
    plan.run(PadBackwardArgs(dy, dx))
    _check_grad(dx, lambda d: _scatter_ref(desc.shape, desc.pads, "replicate",
                                           d.double().cpu().numpy()), dy, "float32", "replicate")
    # dy whose batch dims do not collapse (transposed batch): decided at run time
    desc = PadDescriptor((3, 4, 7, 9), ((0, 0), (0, 0), (2, 1), (1, 2)), "reflect", 0, "float32")
    plan = PadBackwardPlan.select(desc)
    assert plan.sku().template == "pad_bw2d"
    dyt = _rand(torch, (4, 3) + desc.out_shape[2:], "float32", gen).transpose(0, 1)
    dx = _poisoned(torch, desc.shape, "float32")
    plan.run(PadBackwardArgs(dyt, dx))
    _check_grad(dx, lambda d: _torch_pad_grad(torch, desc.shape, desc.pads, "reflect", d), dyt,
                "float32", "reflect, transposed batch")


def test_pad_backward_2d_benchmark_shape():
    """The benchmark problem (reflect (3, 3) on 32×64×224×224 f32, scaled down in batch)."""
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.shape.pad import PadBackwardArgs, PadBackwardPlan, PadDescriptor

    gen = torch.Generator(device="cuda").manual_seed(9)
    shape, pads = (4, 8, 224, 224), ((0, 0), (0, 0), (3, 3), (3, 3))
    desc = PadDescriptor(shape, pads, "reflect", 0, "float32")
    plan = PadBackwardPlan.select(desc)
    assert plan.sku().template == "pad_bw2d"
    dy = _rand(torch, desc.out_shape, "float32", gen)
    dx = _poisoned(torch, shape, "float32")
    plan.run(PadBackwardArgs(dy, dx))
    _check_grad(dx, lambda d: _torch_pad_grad(torch, shape, pads, "reflect", d), dy, "float32",
                "benchmark shape")
