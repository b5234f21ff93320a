"""FFTPlan without a GPU: descriptor validation (typed errors), the split into cuFFT calls, SKU
names, the copy-buffer sizes, operand checks before any launch — and the whole launch sequence
(permutations, dense copies, buffer juggling, cuFFT geometry, c2r input destruction, norm
scaling) run against a simulated device: a host byte array stands for device memory, numpy
stands for cuFFT (unnormalised, as cuFFT), the strided copy and the elementwise plans."""

import itertools

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl import dtypes as D
from baracuda_dsl.ops.fft import FFTArgs, FFTDescriptor, FFTPlan, fft as F
from baracuda_dsl.plan import align_up
from baracuda_dsl.tensor import TensorView, contiguous_strides
from baracuda_dsl.vocabulary import BackendKind, OpCategory, Workspace

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


# ------------------------------------------------------------------------------ validation
def test_descriptor_defaults_and_shapes():
    d = FFTDescriptor((8, 1000), (-1,))
    assert d.axes == (1,) and d.kind == "c2c" and d.dtype == D.complex64
    assert d.inverse is False and d.out_shape == (8, 1000) and d.out_dtype == D.complex64
    r = FFTDescriptor((4, 5, 9), (0, 2), "r2c", "f64")
    assert r.out_shape == (4, 5, 5) and r.out_dtype == D.complex128 and r.inverse is False
    c = FFTDescriptor((4, 5, 5), (0, 2), "c2r", "c128")
    assert c.inverse is True and c.out_last == 8 and c.out_shape == (4, 5, 8)
    assert c.out_dtype == D.float64 and c.lengths == (4, 8)
    c9 = FFTDescriptor((4, 5, 5), (0, 2), "c2r", "c64", out_last=9)
    assert c9.out_shape == (4, 5, 9) and c9.out_dtype == D.float32
    # axes keep their order; negative axes resolve
    assert FFTDescriptor((2, 3, 4), (-1, 0)).axes == (2, 0)


@pytest.mark.parametrize("norm,inverse,scale", [
    ("backward", False, 1.0), ("backward", True, 1 / 60), ("ortho", False, 60 ** -0.5),
    ("ortho", True, 60 ** -0.5), ("forward", False, 1 / 60), ("forward", True, 1.0)])
def test_norm_scale(norm, inverse, scale):
    d = FFTDescriptor((3, 4, 5), (0, 1, 2), "c2c", "c64", inverse, norm)
    assert d.scale == pytest.approx(scale, rel=1e-15)


def test_c2r_scale_uses_output_length():
    d = FFTDescriptor((2, 5), (1,), "c2r", "c64", norm="backward", out_last=9)
    assert d.scale == pytest.approx(1 / 9)


@pytest.mark.parametrize("kw,err", [
    (dict(shape=(4, 4), axes=(2,)), bd.InvalidProblemError),              # axis out of range
    (dict(shape=(4, 4), axes=(-3,)), bd.InvalidProblemError),
    (dict(shape=(4, 4), axes=(0, 0)), bd.InvalidProblemError),            # duplicate axes
    (dict(shape=(4, 4), axes=(1, -1)), bd.InvalidProblemError),
    (dict(shape=(4, 4), axes=()), bd.InvalidProblemError),                # no axis
    (dict(shape=(4, 4), axes=(1.0,)), bd.InvalidProblemError),
    (dict(shape=(4, 4), axes=(True,)), bd.InvalidProblemError),
    (dict(shape=(), axes=(0,)), bd.InvalidProblemError),                  # rank 0
    (dict(shape=(1,) * 9, axes=(0,)), bd.InvalidProblemError),            # rank > 8
    (dict(shape=(4, -1), axes=(0,)), bd.InvalidProblemError),             # negative extent
    (dict(shape=(4, 0), axes=(1,)), bd.InvalidProblemError),              # n < 1
    (dict(shape=(4, 4), axes=(1,), kind="dft"), bd.InvalidProblemError),
    (dict(shape=(4, 4), axes=(1,), norm="none"), bd.InvalidProblemError),
    (dict(shape=(4, 4), axes=(1,), norm=None), bd.InvalidProblemError),
    (dict(shape=(4, 4), axes=(1,), dtype="f32"), bd.UnsupportedError),    # c2c of real
    (dict(shape=(4, 4), axes=(1,), dtype="f16"), bd.UnsupportedError),
    (dict(shape=(4, 4), axes=(1,), dtype="int32"), bd.UnsupportedError),
    (dict(shape=(4, 4), axes=(1,), kind="r2c", dtype="c64"), bd.UnsupportedError),
    (dict(shape=(4, 4), axes=(1,), kind="r2c", dtype="bf16"), bd.UnsupportedError),
    (dict(shape=(4, 4), axes=(1,), kind="c2r", dtype="f32"), bd.UnsupportedError),
    (dict(shape=(4, 4), axes=(1,), kind="r2c", dtype="f32", inverse=True),
     bd.InvalidProblemError),
    (dict(shape=(4, 4), axes=(1,), kind="c2r", dtype="c64", inverse=False),
     bd.InvalidProblemError),
    (dict(shape=(4, 3), axes=(1,), kind="c2r", dtype="c64", out_last=7),  # 7//2+1 != 3
     bd.InvalidProblemError),
    (dict(shape=(4, 1), axes=(1,), kind="c2r", dtype="c64"), bd.InvalidProblemError),  # n=0
    (dict(shape=(4, 1), axes=(1,), kind="c2r", dtype="c64", out_last=0),
     bd.InvalidProblemError),
    (dict(shape=(4, 4), axes=(1,), out_last=6), bd.InvalidProblemError),  # c2r only
    (dict(shape=(4, 4), axes=(1,), inverse=1), bd.InvalidProblemError),
])
def test_descriptor_errors(kw, err):
    with pytest.raises(err):
        FFTDescriptor(**kw)


def test_unsupported_dtype_message_names_wired():
    with pytest.raises(bd.UnsupportedError, match="complex64, complex128"):
        FFTDescriptor((4,), (0,), "c2c", "f32")
    with pytest.raises(bd.UnsupportedError, match="float32, float64"):
        FFTDescriptor((4,), (0,), "r2c", "c64")


def test_select_needs_an_fft_descriptor():
    with pytest.raises(bd.InvalidProblemError):
        FFTPlan.select(bd.StridedCopyDescriptor((3,), "f32"), PREF)


# ------------------------------------------------------------------------------ the calls
def _ops(desc):
    return [(c.op, c.axes, c.n, c.direction) for c in F.plan_calls(desc)]


def test_calls_c2c():
    assert _ops(FFTDescriptor((8, 1000), (-1,))) == [("c2c", (1,), (1000,), -1)]
    assert _ops(FFTDescriptor((8, 10), (1, 0), inverse=True)) == [("c2c", (0, 1), (8, 10), 1)]
    # four axes: two calls, the trailing three last (no permutation there)
    assert _ops(FFTDescriptor((2, 3, 4, 5), (3, 1, 0, 2))) == [
        ("c2c", (0,), (2,), -1), ("c2c", (1, 2, 3), (3, 4, 5), -1)]
    # length-1 axes are skipped; all of them: no call at all
    assert _ops(FFTDescriptor((1, 6, 1), (0, 1, 2))) == [("c2c", (1,), (6,), -1)]
    assert _ops(FFTDescriptor((1, 1), (0, 1))) == []


def test_calls_real():
    assert _ops(FFTDescriptor((4, 9), (1,), "r2c", "f32")) == [("r2c", (1,), (9,), -1)]
    # r2c first (its axis with up to two more), complex calls after
    assert _ops(FFTDescriptor((2, 3, 4, 5, 6), (0, 1, 2, 3, 4), "r2c", "f32")) == [
        ("r2c", (2, 3, 4), (4, 5, 6), -1), ("c2c", (0, 1), (2, 3), -1)]
    # c2r: complex calls first, c2r last
    assert _ops(FFTDescriptor((2, 3, 4, 5, 4), (0, 1, 2, 3, 4), "c2r", "c64")) == [
        ("c2c", (0, 1), (2, 3), 1), ("c2r", (2, 3, 4), (4, 5, 6), 1)]
    # the real axis is the last of axes, whatever its position
    assert _ops(FFTDescriptor((6, 5), (1, 0), "r2c", "f64")) == [("r2c", (1, 0), (5, 6), -1)]
    # a real axis of length 1: a cast / a real part instead of the real transform
    assert _ops(FFTDescriptor((4, 1), (0, 1), "r2c", "f32")) == [
        ("cast", (), (), -1), ("c2c", (0,), (4,), -1)]
    assert _ops(FFTDescriptor((4, 1), (0, 1), "c2r", "c64", out_last=1)) == [
        ("c2c", (0,), (4,), 1), ("real", (), (), -1)]


def test_sku_names():
    p = FFTPlan.select(FFTDescriptor((8, 64), (1,)), PREF)
    s = p.sku()
    assert s.backend is BackendKind.VENDOR and s.category is OpCategory.FFT
    assert s.template == "cufft.C2C" and s.op == "fft" and s.element == D.complex64
    assert s.arch is bd.ArchSku.SM90A
    assert p.precision_guarantee().math_precision == D.float32
    assert not FFTPlan.recordable
    assert FFTPlan.select(FFTDescriptor((8, 64), (1,), dtype="c128", inverse=True),
                          PREF).sku().template == "cufft.Z2Z"
    assert FFTPlan.select(FFTDescriptor((8, 64), (1,), "r2c", "f32"), PREF).sku().template \
        == "cufft.R2C"
    assert FFTPlan.select(FFTDescriptor((8, 64), (1,), "r2c", "f64"), PREF).sku().template \
        == "cufft.D2Z"
    s = FFTPlan.select(FFTDescriptor((2, 3, 4, 5, 4), (0, 1, 2, 3, 4), "c2r", "c64"),
                       PREF).sku()
    assert s.template == "cufft.C2C+C2R" and s.op == "irfft" and s.aux_element == D.float32
    assert FFTPlan.select(FFTDescriptor((8, 33), (1,), "c2r", "c128"), PREF).sku().template \
        == "cufft.Z2D"
    assert FFTPlan.select(FFTDescriptor((8, 64), (1,), norm="ortho"), PREF).sku().epilogue \
        == "norm=ortho"


def test_copy_buffers():
    # one call over the trailing axis: one dense input buffer (used for strided inputs)
    p = FFTPlan.select(FFTDescriptor((8, 1000), (-1,)), PREF)
    assert p.copy_workspace_size() == align_up(8 * 1000 * 8)
    # a permuted call: an input and an output buffer
    p = FFTPlan.select(FFTDescriptor((8, 1000), (0,), dtype="c128"), PREF)
    assert p.copy_workspace_size() == 2 * align_up(8 * 1000 * 16)
    # r2c: the buffers hold the largest of the real input and the complex output
    p = FFTPlan.select(FFTDescriptor((3, 4, 6), (0, 2), "r2c", "f32"), PREF)
    assert p.copy_workspace_size() == 2 * align_up(3 * 4 * 4 * 8)
    # empty batch: nothing, and no GPU query
    p = FFTPlan.select(FFTDescriptor((0, 16), (1,)), PREF)
    assert p.is_empty() and p.workspace_size() == 0
    # a promised dense input over the trailing axis: cuFFT reads x itself, no buffer; c2r still
    # copies (cuFFT overwrites its input), a permuted call still needs its two buffers
    p = FFTPlan.select(FFTDescriptor((8, 1000), (-1,), dense_input=True), PREF)
    assert p.copy_workspace_size() == 0
    p = FFTPlan.select(FFTDescriptor((8, 33), (1,), "c2r", dense_input=True), PREF)
    assert p.copy_workspace_size() == align_up(8 * 33 * 8)
    p = FFTPlan.select(FFTDescriptor((8, 1000), (0,), dense_input=True), PREF)
    assert p.copy_workspace_size() == 2 * align_up(8 * 1000 * 8)
    with pytest.raises(bd.InvalidProblemError):
        FFTDescriptor((8, 1000), (-1,), dense_input=1)


def test_host_arrays_rejected_before_launch():
    p = FFTPlan.select(FFTDescriptor((4, 8), (1,)), PREF)
    with pytest.raises(bd.DeviceMismatchError):
        p.run(FFTArgs(np.zeros((4, 8), np.complex64), np.zeros((4, 8), np.complex64)))


# ------------------------------------------------------------------- a simulated device
class FakeDevice:
    """Device memory as a host byte array (addresses from BASE), cuFFT as numpy."""

    BASE = 1 << 20

    def __init__(self, nbytes=1 << 22):
        self.mem = np.zeros(nbytes, np.uint8)
        self.top = 0
        self.handles = {}
        self.work_areas = {}
        self.streams = {}
        self.execs = []
        self.copies = 0

    def alloc(self, nbytes):
        off = self.top
        self.top = -(-(off + max(nbytes, 1)) // 256) * 256
        assert self.top <= self.mem.size
        return self.BASE + off

    def array(self, ptr, shape, strides, dtype):
        np_dt = np.dtype(dtype.name if dtype.name != "bool" else "bool")
        isz = np_dt.itemsize
        if 0 in shape:
            return np.zeros(shape, np_dt)
        return np.ndarray(shape, np_dt, buffer=self.mem, offset=ptr - self.BASE,
                          strides=tuple(s * isz for s in strides))

    def view_array(self, v):
        return self.array(v.ptr, v.shape, v.strides, v.dtype)

    def put(self, a, strides=None, offset_elems=0):
        """a copied into new fake memory (strides in elements: a strided layout inside a
        bigger allocation), returned as a TensorView."""
        dt = D.dtype(a.dtype.name)
        shape = a.shape
        strides = contiguous_strides(shape) if strides is None else strides
        span = sum((n - 1) * abs(s) for n, s in zip(shape, strides)) + 1 + offset_elems
        base = self.alloc((span + 1) * a.itemsize)
        lo = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
        ptr = base + (offset_elems - lo) * a.itemsize
        v = TensorView(ptr, shape, strides, dt, 0)
        self.view_array(v)[...] = a
        return v

    def empty(self, shape, dtype, poison=True):
        dt = D.dtype(dtype)
        n = int(np.prod(shape)) if shape else 1
        ptr = self.alloc(n * dt.itemsize)
        v = TensorView(ptr, shape, contiguous_strides(shape), dt, 0)
        if poison and n:
            self.view_array(v)[...] = np.nan
        return v

    # -- the vendor library -------------------------------------------------------------
    def call(self, lib, fn, *args):
        assert lib == "cufft"
        if fn == "set_stream":
            self.streams[args[0]] = args[1]
            return None
        if fn == "set_work_area":
            self.work_areas[args[0]] = args[1]
            return None
        h = args[0]
        geo = self.handles[h]
        if fn in ("exec_c2c", "exec_z2z"):
            src, dst, direction = args[1], args[2], args[3]
            op = "c2c"
        else:
            src, dst, direction = args[1], args[2], None
            op = {"exec_r2c": "r2c", "exec_d2z": "r2c", "exec_c2r": "c2r",
                  "exec_z2d": "c2r"}[fn]
        rank, n, ie, istr, idist, oe, ostr, odist, typ, batch = geo
        assert istr == 1 and ostr == 1 and idist == int(np.prod(ie)) and \
            odist == int(np.prod(oe))
        cplx = {0x29: "complex64", 0x69: "complex128", 0x2A: "complex64", 0x6A: "complex128",
                0x2C: "complex64", 0x6C: "complex128"}[typ]
        real = {"complex64": "float32", "complex128": "float64"}[cplx]
        tdt = {0x29: "c2c", 0x69: "c2c", 0x2A: "r2c", 0x6A: "r2c", 0x2C: "c2r", 0x6C: "c2r"}[typ]
        assert tdt == op, (fn, typ)
        din = D.dtype(real if op == "r2c" else cplx)
        dout = D.dtype(real if op == "c2r" else cplx)
        a = self.array(src, (batch,) + tuple(ie), contiguous_strides((batch,) + tuple(ie)), din)
        o = self.array(dst, (batch,) + tuple(oe), contiguous_strides((batch,) + tuple(oe)), dout)
        ax = tuple(range(1, rank + 1))
        x = a.astype(np.complex128 if op != "r2c" else np.float64)
        if op == "c2c":
            r = np.fft.fftn(x, axes=ax) if direction == -1 else \
                np.fft.ifftn(x, axes=ax, norm="forward")
        elif op == "r2c":
            r = np.fft.rfftn(x, axes=ax)
        else:
            r = np.fft.irfftn(x, s=n, axes=ax, norm="forward")
        assert h in self.streams
        if self.work_sizes.get(h):
            assert self.work_areas.get(h) is not None
        o[...] = r
        if op == "c2r":
            a[...] = np.nan                      # cuFFT's c2r overwrites its input
        self.execs.append((op, n, batch))
        return None

    def make_handle(self, geometry, ordinal):
        for h, g in self.handles.items():
            if g == geometry:
                return h, self.work_sizes[h]
        h = len(self.handles) + 1
        self.handles[h] = geometry
        self.work_sizes[h] = 512 * h
        return h, self.work_sizes[h]

    work_sizes: dict


class _Vendor:
    def __init__(self, dev):
        self.dev = dev

    def call(self, lib, fn, *args):
        return self.dev.call(lib, fn, *args)


@pytest.fixture
def dev(monkeypatch):
    d = FakeDevice()
    d.work_sizes = {}

    def copy(src, dst, stream):
        assert dst.is_contiguous() and src.shape == dst.shape and src.dtype == dst.dtype
        d.copies += 1
        d.view_array(dst)[...] = d.view_array(src)

    def elementwise(op, inputs, out, stream, out_dt=None):
        x = d.view_array(inputs[0])
        o = d.view_array(out)
        if op == "multiply":
            o[...] = x * np.asarray(inputs[1], dtype=x.dtype)
        elif op == "cast":
            assert out_dt == out.dtype
            o[...] = x.astype(o.dtype)
        elif op == "real":
            o[...] = x.real
        else:
            raise AssertionError(op)

    monkeypatch.setattr(F, "_copy", copy)
    monkeypatch.setattr(F, "_elementwise", elementwise)
    monkeypatch.setattr(F, "cufft_handle", d.make_handle)
    monkeypatch.setattr(F, "vendor", _Vendor(d))
    return d


def _reference(a, desc):
    x = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    axes = list(desc.axes)
    if desc.kind == "c2c":
        f = np.fft.ifftn if desc.inverse else np.fft.fftn
        return f(x, axes=axes, norm=desc.norm)
    if desc.kind == "r2c":
        return np.fft.rfftn(x, axes=axes, norm=desc.norm)
    s = [desc.shape[ax] for ax in axes[:-1]] + [desc.out_last]
    return np.fft.irfftn(x, s=s, axes=axes, norm=desc.norm)


def _hermitian_input(rng, desc):
    """A c2r input that is the rfftn of a real array (so every method agrees on it)."""
    s = [desc.shape[ax] for ax in desc.axes[:-1]] + [desc.out_last]
    full = list(desc.shape)
    for ax, n in zip(desc.axes, s):
        full[ax] = n
    r = rng.standard_normal(full)
    return np.fft.rfftn(r, axes=list(desc.axes)).astype(desc.dtype.name)


def _input(rng, desc):
    if desc.kind == "c2r":
        return _hermitian_input(rng, desc)
    if desc.dtype.kind == "c":
        z = rng.standard_normal(desc.shape) + 1j * rng.standard_normal(desc.shape)
        return z.astype(desc.dtype.name)
    return rng.standard_normal(desc.shape).astype(desc.dtype.name)


def _strided(rng, a, how):
    """(strides, offset) of a non-dense layout of a's shape: 'dense', 'transposed' (reversed
    dim order), 'gapped' (every stride doubled), 'negative' (the last dim walking backwards)."""
    shape = a.shape
    if how == "dense":
        return None, 0
    if how == "gapped":
        return tuple(2 * s for s in contiguous_strides(shape)), 3
    if how == "transposed":
        rev = contiguous_strides(shape[::-1])[::-1]
        return tuple(rev), 0
    st = list(contiguous_strides(shape))
    st[-1] = -st[-1]
    return tuple(st), 0


CASES = [
    dict(shape=(8, 16), axes=(1,)),
    dict(shape=(8, 7), axes=(0,), inverse=True, norm="ortho"),
    dict(shape=(3, 5, 7), axes=(0, 1, 2), norm="forward"),
    dict(shape=(3, 4, 5, 6), axes=(0, 2)),
    dict(shape=(2, 3, 4, 5), axes=(3, 0, 2, 1), inverse=True),
    dict(shape=(2, 1, 3, 2, 5), axes=(0, 1, 2, 3, 4), dtype="c128"),
    dict(shape=(1, 1, 4), axes=(0, 1)),
    dict(shape=(6, 9), axes=(1,), kind="r2c", dtype="f32"),
    dict(shape=(6, 9), axes=(0,), kind="r2c", dtype="f64", norm="ortho"),
    dict(shape=(3, 4, 5, 6), axes=(0, 1, 2, 3), kind="r2c", dtype="f64"),
    dict(shape=(3, 4, 5, 6), axes=(3, 1), kind="r2c", dtype="f32", norm="forward"),
    dict(shape=(4, 1), axes=(0, 1), kind="r2c", dtype="f64"),
    dict(shape=(5, 1), axes=(1,), kind="r2c", dtype="f32", norm="ortho"),
    dict(shape=(6, 5), axes=(1,), kind="c2r", dtype="c64"),
    dict(shape=(6, 5), axes=(1,), kind="c2r", dtype="c128", out_last=9, norm="ortho"),
    dict(shape=(3, 6, 3), axes=(1, 0), kind="c2r", dtype="c128", out_last=4),
    dict(shape=(3, 4, 5, 4), axes=(0, 1, 2, 3), kind="c2r", dtype="c128", norm="forward"),
    dict(shape=(4, 1), axes=(0, 1), kind="c2r", dtype="c128", out_last=1),
    dict(shape=(3, 1), axes=(1,), kind="c2r", dtype="c64", out_last=1, norm="forward"),
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("how", ["dense", "transposed", "gapped", "negative"])
def test_simulated_launch_matches_numpy(dev, case, how):
    kw = dict(CASES[case])
    desc = FFTDescriptor(**kw)
    plan = FFTPlan.select(desc, PREF)
    rng = np.random.default_rng(case)
    a = _input(rng, desc)
    strides, off = _strided(rng, a, how)
    x = dev.put(a, strides, off)
    before = dev.view_array(x).copy()
    out = dev.empty(desc.out_shape, desc.out_dtype.name)
    ws_n = plan.workspace_size()
    ws = Workspace(dev.alloc(ws_n), ws_n) if ws_n else None
    plan.run(FFTArgs(x, out), stream=7, workspace=ws)
    got = dev.view_array(out)
    ref = _reference(a, desc)
    tol = 1e-5 if desc.dtype in (D.complex64, D.float32) else 1e-12
    assert got.dtype == np.dtype(desc.out_dtype.name)
    assert np.all(np.isfinite(got))
    err = np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1.0)
    assert err < tol, err
    np.testing.assert_array_equal(dev.view_array(x), before)      # input untouched
    assert all(s == 7 for s in dev.streams.values())


def test_simulated_dense_trailing_call_copies_nothing(dev):
    desc = FFTDescriptor((8, 32), (1,))
    plan = FFTPlan.select(desc, PREF)
    a = _input(np.random.default_rng(0), desc)
    x = dev.put(a)
    out = dev.empty(desc.out_shape, "complex64")
    n = plan.workspace_size()
    plan.run(FFTArgs(x, out), stream=0, workspace=Workspace(dev.alloc(n), n))
    assert dev.copies == 0 and dev.execs == [("c2c", (32,), 8)]


def test_simulated_c2r_never_destroys_the_input(dev):
    desc = FFTDescriptor((4, 9), (1,), "c2r", "c64")
    plan = FFTPlan.select(desc, PREF)
    a = _input(np.random.default_rng(1), desc)
    x = dev.put(a)
    out = dev.empty(desc.out_shape, "float32")
    n = plan.workspace_size()
    plan.run(FFTArgs(x, out), stream=0, workspace=Workspace(dev.alloc(n), n))
    assert dev.copies == 1
    np.testing.assert_array_equal(dev.view_array(x), a)


def test_simulated_operand_errors(dev):
    desc = FFTDescriptor((4, 8), (1,))
    plan = FFTPlan.select(desc, PREF)
    x = dev.put(np.ones((4, 8), np.complex64))
    n = plan.workspace_size()
    ws = Workspace(dev.alloc(n), n)
    with pytest.raises(bd.InvalidProblemError):             # wrong shape
        plan.run(FFTArgs(x, dev.empty((4, 9), "complex64")), workspace=ws)
    with pytest.raises(bd.UnsupportedError):                # wrong dtype
        plan.run(FFTArgs(x, dev.empty((4, 8), "complex128")), workspace=ws)
    with pytest.raises(bd.InvalidProblemError):             # out overlaps x
        plan.run(FFTArgs(x, x), workspace=ws)
    with pytest.raises(bd.UnsupportedError):                # strided out
        big = dev.empty((4, 16), "complex64")
        plan.run(FFTArgs(x, TensorView(big.ptr, (4, 8), (16, 2), D.complex64, 0)),
                 workspace=ws)
    with pytest.raises(bd.DeviceMismatchError):             # out on another device
        o = dev.empty((4, 8), "complex64")
        plan.run(FFTArgs(x, TensorView(o.ptr, (4, 8), (8, 1), D.complex64, 1)), workspace=ws)
    with pytest.raises(bd.WorkspaceTooSmallError):
        plan.run(FFTArgs(x, dev.empty((4, 8), "complex64")),
                 workspace=Workspace(ws.ptr, n - 1))
    with pytest.raises(bd.WorkspaceTooSmallError):
        plan.run(FFTArgs(x, dev.empty((4, 8), "complex64")))
    with pytest.raises(bd.MisalignedOperandError):
        plan.run(FFTArgs(TensorView(x.ptr + 4, (4, 8), (8, 1), D.complex64, 0),
                         dev.empty((4, 8), "complex64")), workspace=ws)
    assert dev.execs == []


def test_simulated_empty_batch_launches_nothing(dev):
    desc = FFTDescriptor((0, 8), (1,))
    plan = FFTPlan.select(desc, PREF)
    x = TensorView(dev.alloc(8), (0, 8), (8, 1), D.complex64, 0)
    out = TensorView(dev.alloc(8), (0, 8), (8, 1), D.complex64, 0)
    plan.run(FFTArgs(x, out))
    assert dev.execs == [] and dev.handles == {}


def test_handle_cache_is_per_geometry(dev):
    # two plans of the same call geometry share a handle (plan caching per shape)
    d1 = FFTPlan.select(FFTDescriptor((8, 32), (1,)), PREF)
    d2 = FFTPlan.select(FFTDescriptor((8, 32), (1,), norm="ortho"), PREF)
    assert d1.workspace_size() == d2.workspace_size()
    assert len(dev.handles) == 1


@pytest.mark.parametrize("shape,axes", list(itertools.product([(2, 3, 4, 5)], [
    (0,), (1,), (2,), (3,), (0, 1), (1, 3), (3, 0), (0, 1, 2, 3), (2, 0, 3)])))
def test_simulated_c2c_any_axes_c128(dev, shape, axes):
    desc = FFTDescriptor(shape, axes, "c2c", "c128", norm="ortho")
    plan = FFTPlan.select(desc, PREF)
    a = _input(np.random.default_rng(3), desc)
    x = dev.put(a, *_strided(None, a, "transposed"))
    out = dev.empty(shape, "complex128")
    n = plan.workspace_size()
    plan.run(FFTArgs(x, out), stream=0, workspace=Workspace(dev.alloc(n), n))
    np.testing.assert_allclose(dev.view_array(out), _reference(a, desc), atol=1e-12)
