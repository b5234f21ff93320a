"""array_api on the GPU: creation, host round trips, views, DLPack with torch / cupy, repeat and
tile vs numpy, array_api_compat recognition, norm extensions vs float64 numpy."""

import numpy as np
import pytest

import array_api as xp
from _gpu_helpers import assert_close, assert_terms_close
from tests._checks import bounds

pytestmark = pytest.mark.gpu

NP_DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.uint64, np.float16, np.float32,
             np.float64, np.complex64, np.complex128]


@pytest.mark.parametrize("npd", NP_DTYPES)
def test_roundtrip_slicing_copies(npd):
    rng = np.random.default_rng(0)
    for shape in [(1,), (7,), (33, 5), (4, 1000, 3), (0, 4), ()]:
        a = (rng.standard_normal(shape) * 50).astype(npd)
        x = xp.asarray(a)
        np.testing.assert_array_equal(x.to_numpy(), a)
        if a.ndim >= 2:
            for key in [(slice(None, None, -1),), (Ellipsis, slice(1, None, 3)), (0,),
                        (slice(None), slice(None, None, -2))]:
                try:
                    expect = a[key]
                except IndexError:  # e.g. x[0] of an empty axis: we must raise the same
                    with pytest.raises(IndexError):
                        x[key]
                    continue
                np.testing.assert_array_equal(xp.ascontiguousarray(x[key]).to_numpy(), expect)
            np.testing.assert_array_equal(xp.reshape(x.mT, (-1,)).to_numpy(),
                                          a.swapaxes(-1, -2).reshape(-1))
        for reps, axis in [(3, None), (2, 0), (0, -1)]:
            if a.ndim == 0 and axis is not None:
                continue
            np.testing.assert_array_equal(xp.repeat(x, reps, axis=axis).to_numpy(),
                                          np.repeat(a, reps, axis=axis))
        if a.ndim >= 1 and a.shape[-1] > 0:
            counts = rng.integers(0, 3, a.shape[-1])
            np.testing.assert_array_equal(
                xp.repeat(x, xp.asarray(counts), axis=-1).to_numpy(), np.repeat(a, counts, -1))
        np.testing.assert_array_equal(xp.tile(x, (2, 1)).to_numpy(), np.tile(a, (2, 1)))


def test_creation_bf16_and_setitem():
    for dt in (xp.float32, xp.bfloat16, xp.int16, xp.complex128, xp.bool, xp.uint8):
        np.testing.assert_array_equal(xp.zeros((3, 5), dtype=dt).to_numpy(),
                                      np.zeros((3, 5), np.float32 if dt == xp.bfloat16 else dt.numpy))
        np.testing.assert_array_equal(xp.ones((1001,), dtype=dt).to_numpy(),
                                      np.ones(1001, np.float32 if dt == xp.bfloat16 else dt.numpy))
    np.testing.assert_array_equal(xp.full((7,), 1 + 2j, dtype=xp.complex64).to_numpy(),
                                  np.full(7, 1 + 2j, np.complex64))
    np.testing.assert_array_equal(xp.full((9,), -3.25, dtype=xp.float64).to_numpy(),
                                  np.full(9, -3.25))
    x = xp.asarray(np.arange(20, dtype=np.float32).reshape(4, 5))
    ref = np.arange(20, dtype=np.float32).reshape(4, 5)
    x[1:3] = 5.0
    ref[1:3] = 5.0
    x[0] = x[3, ::-1]
    ref[0] = ref[3, ::-1]
    np.testing.assert_array_equal(x.to_numpy(), ref)
    b = xp.asarray([0.1, 1.5, -2.75], dtype=xp.bfloat16)
    # rounded on the host through float32 (a double rounding: half a bf16 ulp + eps(float32))
    assert_close(b.to_numpy().astype(np.float32), np.array([0.1, 1.5, -2.75]),
                 *bounds("bfloat16", compute="float32", terms=1), what="bf16 asarray")


def test_dlpack_torch_zero_copy():
    torch = pytest.importorskip("torch")
    t = torch.arange(12, device="cuda", dtype=torch.float32).reshape(3, 4)
    x = xp.from_dlpack(t)
    assert x.shape == (3, 4) and x._ptr == t.data_ptr()
    t.add_(1)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(x.to_numpy(), (np.arange(12) + 1).reshape(3, 4))
    for dt in (torch.bfloat16, torch.bool, torch.int8, torch.complex64):
        u = torch.ones(5, device="cuda", dtype=dt)
        y = xp.from_dlpack(u)
        back = torch.from_dlpack(y)
        assert back.data_ptr() == u.data_ptr() and back.dtype == dt
    z = xp.asarray(np.arange(6, dtype=np.int64).reshape(2, 3))
    tz = torch.from_dlpack(z.mT)
    assert tz.data_ptr() == z._ptr and tuple(tz.stride()) == (1, 3)
    assert torch.equal(tz.cpu(), torch.arange(6).reshape(2, 3).t())
    del z
    import gc

    gc.collect()
    assert torch.equal(tz.cpu(), torch.arange(6).reshape(2, 3).t())  # export keeps memory alive
    s = torch.cuda.Stream()
    w = xp.ones((1 << 20,), dtype=xp.float32)
    tw = torch.from_dlpack(w)  # torch passes its current stream; ordering is handled
    with torch.cuda.stream(s):
        assert tw.sum().item() == float(1 << 20)
    c = xp.from_dlpack(torch.zeros(3, device="cuda"), copy=True)
    assert c.to_numpy().tolist() == [0, 0, 0]


def test_dlpack_cupy():
    cp = pytest.importorskip("cupy")
    a = cp.arange(10, dtype=cp.float32)[::2]
    x = xp.from_dlpack(a)
    assert x._ptr == a.data.ptr and x.strides == (2,)
    np.testing.assert_array_equal(x.to_numpy(), np.arange(10, dtype=np.float32)[::2])
    y = xp.asarray(np.arange(6, dtype=np.int32))
    b = cp.from_dlpack(y)
    assert b.data.ptr == y._ptr and cp.asnumpy(b).tolist() == list(range(6))


def test_array_api_compat():
    compat = pytest.importorskip("array_api_compat")
    x = xp.zeros((2,))
    assert compat.array_namespace(x) is xp
    assert x.__array_namespace__() is xp and x.device == xp.Device(0)


@pytest.mark.parametrize("dt", [xp.float32, xp.bfloat16, xp.float16])
def test_norm_extensions(dt):
    """rms_norm / layer_norm of rows of n: the statistics sum n terms in float32 (n roundings,
    no sqrt(n) optimism), a few more steps per element, half an ulp of the output dtype.
    rms_norm is relatively accurate (a sum of squares); layer_norm's x − mean cancels, so its
    error is relative to (|x| + |mean|)·rstd·|w| + |b|."""
    rng = np.random.default_rng(1)
    for shape in [(4, 33), (3, 7, 1000), (1, 4097)]:
        a = rng.standard_normal(shape).astype(np.float32)
        w = rng.standard_normal(shape[-1]).astype(np.float32)
        bb = rng.standard_normal(shape[-1]).astype(np.float32)
        x, xw, xb = (xp.asarray(v, dtype=dt) for v in (a, w, bb))
        a64, w64, b64 = (v.to_numpy().astype(np.float64) for v in (x, xw, xb))
        n = shape[-1]
        y = xp.rms_norm(x, (shape[-1],), xw, eps=1e-6).to_numpy().astype(np.float64)
        ref = a64 / np.sqrt((a64 ** 2).mean(-1, keepdims=True) + 1e-6) * w64
        assert_terms_close(y, ref, dt.name, terms=n + 4, what=f"rms_norm {dt.name} {shape}")
        y = xp.layer_norm(x[..., ::-1], shape[-1], xw, xb).to_numpy().astype(np.float64)
        a2 = a64[..., ::-1]
        mu = a2.mean(-1, keepdims=True)
        rstd = 1.0 / np.sqrt(a2.var(-1, keepdims=True) + 1e-5)
        ref = (a2 - mu) * rstd * w64 + b64
        mag = (np.abs(a2) + np.abs(mu)) * rstd * np.abs(w64) + np.abs(b64)
        assert_terms_close(y, ref, dt.name, terms=n + 6, scale=mag,
                           what=f"layer_norm {dt.name} {shape}")


def test_group_and_batch_norm():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 6, 5, 7)).astype(np.float32)
    x = xp.asarray(a)
    y = xp.group_norm(x, 3).to_numpy().astype(np.float64)
    g = a.astype(np.float64).reshape(2, 3, -1)
    mu, rstd = g.mean(-1, keepdims=True), 1.0 / np.sqrt(g.var(-1, keepdims=True) + 1e-5)
    ref = ((g - mu) * rstd).reshape(a.shape)
    mag = ((np.abs(g) + np.abs(mu)) * rstd).reshape(a.shape)   # x − mean cancels
    assert_terms_close(y, ref, "float32", terms=g.shape[-1] + 6, scale=mag, what="group_norm")
    rm, rv = xp.zeros((6,)), xp.ones((6,))
    y = xp.batch_norm(x, rm, rv, training=True).to_numpy().astype(np.float64)
    a64 = a.astype(np.float64)
    mu = a64.mean((0, 2, 3), keepdims=True)
    rstd = 1.0 / np.sqrt(a64.var((0, 2, 3), keepdims=True) + 1e-5)
    ref = (a64 - mu) * rstd
    n = a.size // a.shape[1]
    assert_terms_close(y, ref, "float32", terms=n + 6, scale=(np.abs(a64) + np.abs(mu)) * rstd,
                       what="batch_norm")
    # running mean = 0.9·0 + 0.1·mean: the mean's n roundings relative to mean(|x|)
    assert_terms_close(rm.to_numpy(), 0.1 * mu.reshape(-1), "float32", terms=n + 2,
                       scale=0.1 * np.abs(a64).mean((0, 2, 3)), what="running mean")
