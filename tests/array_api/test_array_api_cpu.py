"""array_api without a GPU: dtype objects, namespace inspection, views, DLPack export and the
creation / manipulation / repeat logic end to end on a *host-memory fake device*: allocation,
memset and memcpy are redirected to host memory and the strided-copy / repeat-backward kernels
are replaced by numpy emulations of their index math (driven by the real plan geometry)."""

import ctypes
import itertools

import numpy as np
import pytest

import array_api as xp
import baracuda_dsl as bd
from array_api import _device as _dev


def test_namespace_and_dtypes():
    assert xp.__array_api_version__ == "2024.12"
    assert xp.float32 is bd.float32 and xp.bool is bd.bool_ and xp.bfloat16 is bd.bfloat16
    assert xp.isdtype(xp.int8, "signed integer") and not xp.isdtype(xp.uint8, "signed integer")
    assert xp.isdtype(xp.complex64, ("complex floating", "bool"))
    assert xp.isdtype(xp.float16, "real floating") and not xp.isdtype(xp.float16, "integral")
    with pytest.raises(ValueError):
        xp.isdtype(xp.float32, "floaty")
    assert xp.finfo(xp.float32).eps == np.finfo(np.float32).eps
    assert xp.finfo(xp.bfloat16).eps == 2.0**-7 and xp.iinfo(xp.int16).max == 32767
    info = xp.__array_namespace_info__()
    assert info.default_dtypes()["real floating"] == xp.float32
    assert set(info.dtypes(kind="bool")) == {"bool"}
    assert hasattr(xp, "matmul") and hasattr(xp, "linalg") and hasattr(xp, "fft")
    assert info.extensions() == ["fft", "linalg"]
    assert callable(xp.take) and callable(xp.concat) and callable(xp.segment_sum)
    assert callable(xp.sum) and callable(xp.unique_all) and callable(xp.cumulative_sum)


def test_bf16_host_conversion():
    from array_api._dtypes import bf16_bits_to_f32, f32_to_bf16_bits

    vals = np.array([0.0, -0.0, 1.0, 1.00390625, 1.01171875, 3.0e38, -1e-40, np.inf, np.nan],
                    np.float32)
    back = bf16_bits_to_f32(f32_to_bf16_bits(vals))
    np.testing.assert_array_equal(back[:2], [0.0, -0.0])
    assert back[2] == 1.0 and back[3] == 1.0  # tie → even
    assert back[4] == 1.015625  # tie → even (up)
    assert np.isinf(back[7]) and np.isnan(back[8])
    r = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    assert np.max(np.abs(bf16_bits_to_f32(f32_to_bf16_bits(r)) - r) / np.abs(r)) <= 2**-8


def _fake(shape, strides, dtype=xp.float32, ptr=1 << 20):
    return xp.Array._new(ptr, shape, strides, dtype, xp.Device(0), None)


def test_views_without_memory():
    x = _fake((4, 5, 6), (30, 6, 1))
    v = x[1, ::-2, 2:]
    assert v.shape == (3, 4) and v.strides == (-12, 1)
    assert v._ptr == x._ptr + (30 + 4 * 6 + 2) * 4
    assert x[..., None, 0].shape == (4, 5, 1) and x[-1].shape == (5, 6)
    assert x[1:1].shape == (0, 5, 6)
    with pytest.raises(IndexError):
        x[4]
    with pytest.raises(IndexError):
        x[0, 0, 0, 0]
    with pytest.raises(IndexError):
        x[1.5]
    assert xp.permute_dims(x, (2, 0, 1)).strides == (1, 30, 6)
    assert x.mT.shape == (4, 6, 5) and x[0].T.strides == (1, 6)
    f = xp.flip(x, axis=1)
    assert f.strides == (30, -6, 1) and f._ptr == x._ptr + 4 * 6 * 4
    assert xp.expand_dims(x, axis=-1).shape == (4, 5, 6, 1)
    assert xp.squeeze(x[:, :1], 1).shape == (4, 6)
    b = xp.broadcast_to(x[:, :1, :], (2, 4, 5, 6))
    assert b.strides == (0, 30, 0, 1)
    assert xp.reshape(x, (-1, 6)).shape == (20, 6)
    with pytest.raises(ValueError):
        xp.reshape(x[:, ::2], (-1,), copy=False)
    assert x.__dlpack_device__() == (2, 0)
    import array_api_compat

    assert array_api_compat.array_namespace(x) is xp
    tv = bd.as_view(v)
    assert tv.shape == (3, 4) and tv.strides == (-12, 1) and tv.dtype == bd.float32


class _HostCAI:
    """numpy's ``__array_interface__`` (same fields as CAI v3 but ``stream``) over a CAI dict:
    reading host-backed fake arrays through it checks the dict's meaning without a GPU."""

    def __init__(self, cai):
        self.__array_interface__ = {k: v for k, v in cai.items() if k != "stream"}


def test_cuda_array_interface_dict():
    host = np.arange(48, dtype=np.float32)
    x = _fake((6, 8), (8, 1), ptr=host.ctypes.data)
    cai = x.__cuda_array_interface__
    assert cai == {"shape": (6, 8), "typestr": "<f4", "data": (host.ctypes.data, False),
                   "strides": None, "version": 3, "stream": 1}
    assert isinstance(cai["data"][0], int) and cai["stream"] not in (0, None)
    ref = host.reshape(6, 8)
    for view, want in [(x[:, ::2], ref[:, ::2]), (x.T, ref.T), (x[2:, 3:], ref[2:, 3:]),
                       (x[::-1, 1], ref[::-1, 1]), (x[1:2, :], ref[1:2, :]), (x[3, 4], ref[3, 4]),
                       (xp.broadcast_to(x[:1], (3, 6, 8)), np.broadcast_to(ref[:1], (3, 6, 8)))]:
        c = view.__cuda_array_interface__
        assert c["data"][0] == view._ptr and c["shape"] == view.shape
        assert c["strides"] == (None if view.is_contiguous() else
                                tuple(4 * s for s in view.strides))
        np.testing.assert_array_equal(np.asarray(_HostCAI(c)), want)
    assert x[2:, 3:].__cuda_array_interface__["data"][0] == host.ctypes.data + (2 * 8 + 3) * 4
    assert x[:, ::2].__cuda_array_interface__["strides"] == (32, 8)
    assert x.T.__cuda_array_interface__["strides"] == (4, 32)
    assert x[1:2, :].__cuda_array_interface__["strides"] is None    # extent-1 dims: still dense
    e = x[3:3]
    assert e.__cuda_array_interface__ == {"shape": (0, 8), "typestr": "<f4", "data": (0, False),
                                          "strides": None, "version": 3, "stream": 1}
    want = {xp.bool: "|b1", xp.int8: "|i1", xp.uint8: "|u1", xp.int16: "<i2", xp.uint16: "<u2",
            xp.int32: "<i4", xp.uint32: "<u4", xp.int64: "<i8", xp.uint64: "<u8",
            xp.float16: "<f2", xp.float32: "<f4", xp.float64: "<f8", xp.complex64: "<c8",
            xp.complex128: "<c16"}
    for dt, ts in want.items():
        c = _fake((2, 3), (3, 1), dt).__cuda_array_interface__
        assert c["typestr"] == ts and bd.dtypes.from_typestr(ts) is dt
        assert np.dtype(ts).itemsize == dt.itemsize
    for dt in (xp.bfloat16, bd.float8_e4m3, bd.float8_e5m2):
        y = _fake((2, 3), (3, 1), dt)
        assert not hasattr(y, "__cuda_array_interface__")
        with pytest.raises(AttributeError, match="DLPack"):
            y.__cuda_array_interface__
        assert bd.dtypes.to_typestr(dt) is None


def test_cuda_array_interface_bool_int_values():
    for npd, dt in ((np.bool_, xp.bool), (np.int16, xp.int16), (np.uint64, xp.uint64)):
        host = (np.arange(12) % 3).astype(npd)
        x = _fake((3, 4), (4, 1), dt, ptr=host.ctypes.data)
        for v, want in ((x, host.reshape(3, 4)), (x[:, 1::2], host.reshape(3, 4)[:, 1::2])):
            got = np.asarray(_HostCAI(v.__cuda_array_interface__))
            assert got.dtype == npd
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_dlpack_export_capsule(max_version):
    from array_api._dlpack import _LIVE
    from baracuda_dsl.tensor import _view_from_capsule

    x = _fake((3, 4), (1, 3), xp.bfloat16)
    n0 = len(_LIVE)
    cap = x.__dlpack__(max_version=max_version)
    v = _view_from_capsule(cap, None)
    assert (v.ptr, v.shape, v.strides, v.dtype, v.device) == (x._ptr, (3, 4), (1, 3),
                                                                bd.bfloat16, 0)
    assert len(_LIVE) == n0 + 1
    del cap, v
    import gc

    gc.collect()
    assert len(_LIVE) == n0  # unconsumed capsule released the export
    with pytest.raises(BufferError):
        x.__dlpack__(dl_device=(4, 0))  # OpenCL: neither ours nor a host copy


# ------------------------------------------------------------------------- fake device
def _host_words(ptr, nwords, w):
    buf = (ctypes.c_char * (nwords * w)).from_address(ptr)
    return np.frombuffer(buf, dtype=np.dtype(f"V{w}") if w not in (1, 2, 4, 8) else
                         np.dtype(f"u{w}"))


class _FakeKernel:
    def __init__(self, template, knobs):
        from baracuda_dsl.jit import freeze_knobs

        self.name, self.knobs = template.name, dict(freeze_knobs(knobs))

    def launch(self, grid, args, stream=0):
        if self.name == "strided_copy":
            self._copy(args)
        else:
            self._bw(args)

    def _copy(self, args):
        src, dst, n = args[0], args[1], args[2]
        o, e, s, ds = args[3:11], args[11:19], args[19:27], args[27:35]
        r, w = self.knobs["rank"], self.knobs["itemsize"]
        assert all(v == 1 for v in o[:8 - r])
        assert grid_ok(n)
        coords = np.unravel_index(np.arange(n), o[8 - r:])
        off = np.zeros(n, np.int64)
        doff = np.zeros(n, np.int64)
        for d in range(r):
            c = coords[d] % e[8 - r + d] if r == 8 else coords[d]
            off += c * s[8 - r + d]
            doff += coords[d] * ds[8 - r + d]
        assert src % w == 0 and dst % w == 0  # word alignment the kernel assumes
        lo, hi = int(off.min()), int(off.max())
        words = _host_words(src + lo * w, hi - lo + 1, w)
        dlo, dhi = int(doff.min()), int(doff.max())
        _host_words(dst + dlo * w, dhi - dlo + 1, w)[doff - dlo] = words[off - lo]

    def _bw(self, args):
        dy, dx, n = args[0], args[1], args[2]
        k, ks, r, rs = args[3:11], args[11:19], args[19:27], args[27:35]
        rank = self.knobs["rank"]
        npd = {"f32": np.float32, "f16": np.float16, "f64": np.float64}[self.knobs["dtype"]]
        coords = np.unravel_index(np.arange(n), k[8 - rank:])
        off = np.zeros(n, np.int64)
        for d in range(rank):
            off += coords[d] * ks[8 - rank + d]
        acc = np.zeros(n, np.float64 if npd == np.float64 else np.float32)
        isz = np.dtype(npd).itemsize
        for t in itertools.product(*[range(x) for x in r]):
            o2 = off + sum(a * b for a, b in zip(t, rs))
            lo, hi = int(o2.min()), int(o2.max())
            acc += _host_words(dy + lo * isz, hi - lo + 1, isz).view(npd)[o2 - lo]
        _host_words(dx, n, isz).view(npd)[:] = acc.astype(npd)


def grid_ok(n):
    return n >= 1


@pytest.fixture
def fake_device(monkeypatch):
    import baracuda_dsl.ops.shape.repeat as rp

    keep = []

    def allocate(nbytes, device):
        a = np.empty(int(nbytes) + 512, np.uint8)
        keep.append(a)
        ptr = (a.ctypes.data + 255) // 256 * 256
        return ptr, a

    def htod(ptr, host):
        ctypes.memmove(ptr, host.ctypes.data, host.nbytes)

    def dtoh(host, ptr):
        ctypes.memmove(host.ctypes.data, ptr, host.nbytes)

    def memset(ptr, pattern, count, stream=0):
        _host_words(ptr, count * len(pattern), 1)[:] = np.tile(
            np.frombuffer(pattern, np.uint8), count)
        return True

    monkeypatch.setattr(_dev, "allocate", allocate)
    monkeypatch.setattr(_dev, "htod", htod)
    monkeypatch.setattr(_dev, "dtoh", dtoh)
    monkeypatch.setattr(_dev, "memset", memset)
    import baracuda_dsl.plan as planmod

    # plans select for sm90a (no device here) and launch the stand-in kernels
    monkeypatch.setattr(planmod, "plan_arch", lambda pref: bd.ArchSku.SM90A)
    monkeypatch.setattr(planmod.Plan, "_kernel", lambda self, t, knobs, dev: _FakeKernel(t, knobs))
    import baracuda_dsl.ops.shape.layout as lp

    # the dense-copy path: strided copy only (the transpose kernel is exercised on the GPU)
    monkeypatch.setattr(lp, "transpose_geometry", lambda *a: None)
    import array_api._manipulation_functions as mf

    def clear():
        mf._repeat_plan.cache_clear()
        rp.strided_copy_plan.cache_clear()
        lp._contiguize_plan.cache_clear()
        lp._copy_kernel_for.cache_clear()
        lp._LAUNCH_MEMO.clear()

    clear()
    yield
    clear()


DTYPES = [np.bool_, np.int8, np.uint16, np.float16, np.float32, np.int64, np.complex64,
          np.complex128]


@pytest.mark.parametrize("npd", DTYPES)
def test_fake_roundtrip_views_and_copies(fake_device, npd):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((5, 7, 3)) * 10).astype(npd)
    x = xp.asarray(a)
    assert x.dtype == bd.dtypes.dtype(np.dtype(npd)) and x.shape == a.shape
    np.testing.assert_array_equal(x.to_numpy(), a)
    for key in [(slice(None, None, -1), 2), (Ellipsis, slice(1, None, 2)), (1, slice(6, 0, -3)),
                (None, slice(None), 0, slice(None, None, -1))]:
        np.testing.assert_array_equal(x[key].to_numpy(), a[key])
        np.testing.assert_array_equal(xp.ascontiguousarray(x[key]).to_numpy(), a[key])
    np.testing.assert_array_equal(xp.reshape(x[:, ::-2], (-1,)).to_numpy(), a[:, ::-2].reshape(-1))
    np.testing.assert_array_equal(np.asarray(xp.permute_dims(x, (2, 0, 1))), a.transpose(2, 0, 1))
    for reps in [2, 0, [1, 0, 3, 1, 2, 0, 1]]:
        for axis in [None, 1, -2]:
            if isinstance(reps, list) and axis is None:
                continue
            np.testing.assert_array_equal(xp.repeat(x, reps, axis=axis).to_numpy(),
                                          np.repeat(a, reps, axis=axis))
    np.testing.assert_array_equal(xp.repeat(x[:, ::-1], xp.asarray([2]), axis=1).to_numpy(),
                                  np.repeat(a[:, ::-1], 2, axis=1))
    for reps in [(2,), (2, 1, 3), (1, 2, 1, 2), (0, 1)]:
        np.testing.assert_array_equal(xp.tile(x.mT, reps).to_numpy(), np.tile(a.swapaxes(-1, -2), reps))


def test_fake_creation_and_setitem(fake_device):
    z = xp.zeros((3, 4))
    assert z.dtype == xp.float32 and (z.to_numpy() == 0).all()
    assert (xp.ones((2, 3), dtype=xp.int16).to_numpy() == 1).all()
    f = xp.full((5,), 1.5, dtype=xp.bfloat16)
    np.testing.assert_array_equal(f.to_numpy(), np.full(5, 1.5, np.float32))
    assert xp.full((2,), True).dtype == xp.bool and xp.full((2,), 3).dtype == xp.int64
    c = xp.full((4,), 1 + 2j, dtype=xp.complex128)
    np.testing.assert_array_equal(c.to_numpy(), np.full(4, 1 + 2j))
    assert xp.asarray([1.0, 2.0]).dtype == xp.float32 and xp.asarray([1, 2]).dtype == xp.int64
    assert xp.asarray(np.array([1.0])).dtype == xp.float64
    x = xp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    x[1] = 7.0
    x[2] = xp.asarray(np.array([9, 8, 7, 6], np.float32))
    x[0, :] = x[2, ::-1]
    ref = np.arange(12, dtype=np.float32).reshape(3, 4)
    ref[1] = 7
    ref[2] = [9, 8, 7, 6]
    ref[0, :] = ref[2, ::-1]
    np.testing.assert_array_equal(x.to_numpy(), ref)
    assert float(x[1, 1]) == 7.0 and int(xp.asarray(np.int32(5))) == 5
    assert xp.zeros_like(x).shape == (3, 4) and xp.full_like(x, 2.0).to_numpy()[0, 0] == 2.0
    assert "Array(" in repr(x)
    e = xp.empty((0, 3))
    assert e.to_numpy().shape == (0, 3) and xp.repeat(e, 2, axis=1).shape == (0, 6)


def test_fake_repeat_backward(fake_device):
    from baracuda_dsl.ops.shape.repeat import (RepeatBackwardArgs, RepeatBackwardDescriptor,
                                               RepeatBackwardPlan)

    rng = np.random.default_rng(3)
    for shape, reps in [((4, 6), (2, 3)), ((5,), (3, 2)), ((2, 3), (0, 2))]:
        from baracuda_dsl.ops.shape.repeat import repeat_out_shape

        out_shape = repeat_out_shape(shape, reps)
        g = rng.standard_normal(out_shape)
        dy = xp.asarray(g)
        dx = xp.empty(shape, dtype=xp.float64)
        plan = RepeatBackwardPlan.select(RepeatBackwardDescriptor(shape, reps, "f64"))
        plan.run(RepeatBackwardArgs(dy, dx))
        pad = (1,) * (len(reps) - len(shape)) + tuple(shape)
        ref = np.zeros(pad)
        for t in itertools.product(*[range(r) for r in reps]):
            ref += g[tuple(slice(a * n, (a + 1) * n) for a, n in zip(t, pad))]
        np.testing.assert_allclose(dx.to_numpy(), ref.reshape(shape), rtol=1e-12, atol=1e-12)
