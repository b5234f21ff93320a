"""FFTPlan on the GPU (cuFFT) against numpy.fft in float64/complex128 on the same (rounded)
input: c2c / r2c / c2r, 1-D to 4-D over arbitrary axes, odd and prime sizes, every norm,
batched, empty, strided / transposed / negative-stride inputs, NaN-poisoned outputs, and round
trips.  Bounds: per element ``C·log2(N)·eps(dtype)`` relative to max(|ref|, rms(ref)) (FFT
errors are norm-wise, so small outputs get the data's scale)."""


import numpy as np
import pytest

from tests._checks import assert_close, poison, to_numpy
from tests.fft._bounds import bound

pytestmark = pytest.mark.gpu


def _torch():
    return pytest.importorskip("torch")


def _bound(desc):
    return bound(desc.lengths, desc.dtype.name)


def _check(out, ref, desc, what=""):
    r = np.asarray(ref)
    scale = float(np.sqrt(np.mean(np.abs(r) ** 2))) if r.size else 0.0
    return assert_close(out, r, _bound(desc), 0.0, scale=np.full(r.shape, scale), what=what)


def _np_input(rng, desc):
    """Random input of desc (c2r: the rfftn of a real array, so the input is Hermitian)."""
    if desc.kind == "c2r":
        s = [desc.shape[a] for a in desc.axes[:-1]] + [desc.out_last]
        full = list(desc.shape)
        for a, n in zip(desc.axes, s):
            full[a] = n
        return np.fft.rfftn(rng.standard_normal(full), axes=list(desc.axes)).astype(
            desc.dtype.name)
    if desc.dtype.kind == "c":
        return (rng.standard_normal(desc.shape)
                + 1j * rng.standard_normal(desc.shape)).astype(desc.dtype.name)
    return rng.standard_normal(desc.shape).astype(desc.dtype.name)


def _reference(a, desc):
    x = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    axes = list(desc.axes)
    if desc.kind == "c2c":
        return (np.fft.ifftn if desc.inverse else np.fft.fftn)(x, axes=axes, norm=desc.norm)
    if desc.kind == "r2c":
        return np.fft.rfftn(x, axes=axes, norm=desc.norm)
    s = [desc.shape[ax] for ax in axes[:-1]] + [desc.out_last]
    return np.fft.irfftn(x, s=s, axes=axes, norm=desc.norm)


def _layout(torch, t, how):
    """t (dense) re-laid out: 'dense', 'transposed' (a permuted copy viewed back), 'gapped'
    (every other element of a 2x larger last dim), 'negative' (flipped storage, last dim
    walking backwards)."""
    if how == "dense" or t.ndim == 0:
        return t
    if how == "transposed":
        perm = list(range(t.ndim))[::-1]
        return t.permute(perm).contiguous().permute(perm)
    if how == "gapped":
        big = torch.zeros(t.shape[:-1] + (2 * t.shape[-1],), dtype=t.dtype, device=t.device)
        big[..., ::2] = t
        return big[..., ::2]
    raise ValueError(how)


def _run(torch, desc, x, *, poison_out=True):
    from baracuda_dsl.ops.fft import FFTArgs, FFTPlan

    plan = FFTPlan.select(desc)
    tdt = getattr(torch, desc.out_dtype.name)
    out = poison(torch, desc.out_shape, tdt) if poison_out else \
        torch.empty(desc.out_shape, dtype=tdt, device="cuda")
    n = plan.workspace_size()
    ws = torch.empty(max(n, 1), dtype=torch.uint8, device="cuda")
    plan.run(FFTArgs(x, out), workspace=ws)
    torch.cuda.synchronize()
    return out, plan


def _case(torch, desc, how="dense", seed=0):
    rng = np.random.default_rng(seed)
    a = _np_input(rng, desc)
    x = _layout(torch, torch.from_numpy(a).cuda(), how)
    x_before = x.clone()
    out, plan = _run(torch, desc, x)
    _check(out, _reference(a, desc), desc, what=f"{desc} {how}")
    assert torch.equal(x, x_before), "the input was modified"
    return out


# ------------------------------------------------------------------------------------ c2c
@pytest.mark.parametrize("n", [1, 2, 7, 16, 97, 1000, 1024, 4096, 65536 + 3])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("inverse", [False, True])
def test_c2c_1d_sizes(n, dtype, inverse):
    torch = _torch()
    from baracuda_dsl.ops.fft import FFTDescriptor

    _case(torch, FFTDescriptor((3, n), (-1,), "c2c", dtype, inverse))


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
@pytest.mark.parametrize("inverse", [False, True])
def test_c2c_norms(norm, inverse):
    torch = _torch()
    from baracuda_dsl.ops.fft import FFTDescriptor

    _case(torch, FFTDescriptor((5, 96), (1,), "c2c", "complex64", inverse, norm))


@pytest.mark.parametrize("shape,axes", [
    ((64, 48), (0, 1)), ((16, 17, 18), (0, 1, 2)), ((8, 9, 10), (2, 0)),
    ((4, 5, 6, 7), (0, 2)), ((3, 4, 5, 6), (0, 1, 2, 3)), ((3, 4, 5, 6), (3, 1, 2, 0)),
    ((2, 3, 4, 5, 6), (1, 3)), ((100, 7), (0,)), ((2, 1, 5), (0, 1, 2)),
])
@pytest.mark.parametrize("how", ["dense", "transposed", "gapped"])
def test_c2c_nd_any_axes(shape, axes, how):
    torch = _torch()
    from baracuda_dsl.ops.fft import FFTDescriptor

    _case(torch, FFTDescriptor(shape, axes, "c2c", "complex128", False, "ortho"), how)
    _case(torch, FFTDescriptor(shape, axes, "c2c", "complex64", True, "backward"), how)


def test_c2c_negative_strides():
    torch = _torch()
    from baracuda_dsl.ops.fft import FFTArgs, FFTDescriptor, FFTPlan

    rng = np.random.default_rng(5)
    desc = FFTDescriptor((6, 40), (1,), "c2c", "complex64")
    a = _np_input(rng, desc)
    base = torch.from_numpy(np.ascontiguousarray(a[:, ::-1])).cuda()
    # a view whose last dim walks backwards over base: equals a
    from baracuda_dsl.tensor import TensorView
    from baracuda_dsl import dtypes as D

    v = TensorView(base.data_ptr() + (a.shape[1] - 1) * 8, a.shape, (a.shape[1], -1),
                   D.complex64, base.device.index, owner=base)
    plan = FFTPlan.select(desc)
    out = poison(torch, desc.out_shape, torch.complex64)
    ws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8, device="cuda")
    plan.run(FFTArgs(v, out), workspace=ws)
    _check(out, _reference(a, desc), desc)


# ------------------------------------------------------------------------------------ r2c
@pytest.mark.parametrize("n", [1, 2, 7, 97, 1000, 4096, 12345])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_r2c_1d(n, dtype, norm):
    torch = _torch()
    from baracuda_dsl.ops.fft import FFTDescriptor

    _case(torch, FFTDescriptor((4, n), (-1,), "r2c", dtype, norm=norm))


@pytest.mark.parametrize("shape,axes", [
    ((32, 64), (0, 1)), ((9, 10, 11), (0, 1, 2)), ((9, 10, 11), (2, 0)),
    ((4, 5, 6, 7), (0, 2)), ((3, 4, 5, 6), (0, 1, 2, 3)), ((6, 5), (1, 0)), ((7, 1), (0, 1)),
])
@pytest.mark.parametrize("how", ["dense", "transposed", "gapped"])
def test_r2c_nd(shape, axes, how):
    torch = _torch()
    from baracuda_dsl.ops.fft import FFTDescriptor

    _case(torch, FFTDescriptor(shape, axes, "r2c", "float64", norm="ortho"), how)
    _case(torch, FFTDescriptor(shape, axes, "r2c", "float32"), how)


# ------------------------------------------------------------------------------------ c2r
@pytest.mark.parametrize("n", [1, 2, 7, 16, 97, 1000, 4097])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_c2r_1d(n, dtype, norm):
    torch = _torch()
    from baracuda_dsl.ops.fft import FFTDescriptor

    _case(torch, FFTDescriptor((3, n // 2 + 1), (-1,), "c2r", dtype, norm=norm, out_last=n))


@pytest.mark.parametrize("shape,axes,out_last", [
    ((32, 33), (0, 1), 64), ((9, 10, 6), (0, 1, 2), 11), ((6, 10, 11), (2, 0), 10),
    ((4, 5, 6, 4), (0, 2, 3), 7), ((3, 4, 5, 4), (0, 1, 2, 3), 6), ((7, 1), (0, 1), 1),
])
@pytest.mark.parametrize("how", ["dense", "transposed", "gapped"])
def test_c2r_nd(shape, axes, out_last, how):
    torch = _torch()
    from baracuda_dsl.ops.fft import FFTDescriptor

    _case(torch, FFTDescriptor(shape, axes, "c2r", "complex128", norm="ortho",
                               out_last=out_last), how)
    _case(torch, FFTDescriptor(shape, axes, "c2r", "complex64", out_last=out_last), how)


# ------------------------------------------------------------------------------ round trips
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_c2c_round_trip(dtype):
    torch = _torch()
    from baracuda_dsl.ops.fft import FFTDescriptor

    rng = np.random.default_rng(7)
    shape = (5, 12, 97)
    d = FFTDescriptor(shape, (0, 2), "c2c", dtype)
    a = _np_input(rng, d)
    y, _ = _run(torch, d, torch.from_numpy(a).cuda())
    z, _ = _run(torch, FFTDescriptor(shape, (0, 2), "c2c", dtype, True), y)
    _check(z, a.astype(np.complex128), d)


@pytest.mark.parametrize("n", [10, 11])
def test_real_round_trip(n):
    torch = _torch()
    from baracuda_dsl.ops.fft import FFTDescriptor

    rng = np.random.default_rng(8)
    a = rng.standard_normal((6, n))
    d = FFTDescriptor((6, n), (1,), "r2c", "float64", norm="ortho")
    y, _ = _run(torch, d, torch.from_numpy(a).cuda())
    z, _ = _run(torch, FFTDescriptor(y.shape, (1,), "c2r", "complex128", norm="ortho",
                                     out_last=n), y)
    _check(z, a, d)


# ------------------------------------------------------------------------ empty and reuse
def test_empty_batch_launches_nothing():
    torch = _torch()
    from baracuda_dsl.ops.fft import FFTArgs, FFTDescriptor, FFTPlan

    for kind, dt in (("c2c", torch.complex64), ("r2c", torch.float32)):
        d = FFTDescriptor((0, 16), (1,), kind, "complex64" if kind == "c2c" else "float32")
        plan = FFTPlan.select(d)
        assert plan.workspace_size() == 0
        x = torch.empty((0, 16), dtype=dt, device="cuda")
        out = torch.empty(d.out_shape, dtype=getattr(torch, d.out_dtype.name), device="cuda")
        plan.run(FFTArgs(x, out))


def test_plan_reuse_and_cached_handles():
    torch = _torch()
    from baracuda_dsl.ops.fft import FFTDescriptor

    d = FFTDescriptor((8, 256), (1,), "c2c", "complex64", norm="ortho")
    for seed in range(3):
        _case(torch, d, seed=seed)
    from baracuda_dsl.ops.fft import fft as F

    assert any(k[0][1] == (256,) for k in F._HANDLES.handles)


def test_workspace_too_small_and_overlap():
    torch = _torch()
    import baracuda_dsl as bd
    from baracuda_dsl.ops.fft import FFTArgs, FFTDescriptor, FFTPlan

    d = FFTDescriptor((8, 64), (0,), "c2c", "complex64")
    plan = FFTPlan.select(d)
    x = torch.randn((8, 64), dtype=torch.complex64, device="cuda")
    out = torch.empty_like(x)
    n = plan.workspace_size()
    assert n >= plan.copy_workspace_size() > 0
    with pytest.raises(bd.WorkspaceTooSmallError):
        plan.run(FFTArgs(x, out), workspace=torch.empty(n - 1, dtype=torch.uint8,
                                                        device="cuda"))
    with pytest.raises(bd.InvalidProblemError):
        plan.run(FFTArgs(x, x), workspace=torch.empty(n, dtype=torch.uint8, device="cuda"))
    with pytest.raises(bd.UnsupportedError):
        plan.run(FFTArgs(x, torch.empty((64, 8), dtype=torch.complex64, device="cuda").t()),
                 workspace=torch.empty(n, dtype=torch.uint8, device="cuda"))


def test_large_batched_c2c_matches_torch():
    """A 2^22-element batched transform against torch.fft (same cuFFT underneath: close to
    each other and both within the bound of numpy's)."""
    torch = _torch()
    from baracuda_dsl.ops.fft import FFTDescriptor

    g = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randn((1024, 4096), dtype=torch.complex64, device="cuda", generator=g)
    d = FFTDescriptor(tuple(x.shape), (1,), "c2c", "complex64")
    out, _ = _run(torch, d, x)
    ref = np.fft.fft(to_numpy(x), axis=1)
    _check(out, ref, d)
    _check(torch.fft.fft(x, dim=1), ref, d, what="torch (sanity)")


@pytest.mark.parametrize("kind,shape,axes,dtype", [("c2c", (8, 1000), (1,), "complex64"),
                                                   ("r2c", (6, 96), (1,), "float64"),
                                                   ("c2r", (4, 33), (1,), "complex64"),
                                                   ("c2c", (6, 10, 12), (1, 2), "complex128")])
def test_dense_input_promise(kind, shape, axes, dtype):
    """``dense_input=True``: no copy buffer where cuFFT can read x itself, the same results as
    without the promise, and a strided x is refused before any launch."""
    torch = _torch()
    import baracuda_dsl as bd
    from baracuda_dsl.ops.fft import FFTArgs, FFTDescriptor, FFTPlan

    d = FFTDescriptor(shape, axes, kind, dtype, dense_input=True)
    _case(torch, d)
    if kind != "c2r":
        assert FFTPlan.select(d).copy_workspace_size() == 0
    plan = FFTPlan.select(d)
    x = torch.zeros(shape[::-1], dtype=getattr(torch, dtype), device="cuda").permute(
        *reversed(range(len(shape))))
    out = torch.empty(d.out_shape, dtype=getattr(torch, d.out_dtype.name), device="cuda")
    ws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8, device="cuda")
    with pytest.raises(bd.InvalidProblemError):
        plan.run(FFTArgs(x, out), workspace=ws)
