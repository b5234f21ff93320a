"""Pad / roll / triu / tril (+ backward) without a GPU: descriptor validation, out_shape, fill
encoding, SKU space, the host geometry checked by emulating the kernels' index math in numpy
(against numpy.pad / np.roll / np.triu and a scatter-add reference for the backward), and
cross-compiling samples of every template for sm80 / sm89 / sm90a."""

import itertools
import math

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.ops.shape.pad import (PadBackwardPlan, PadDescriptor, PadPlan, RollBackwardPlan,
                                        RollDescriptor, RollPlan, TriBackwardPlan, TriDescriptor,
                                        TrilPlan, TriuPlan, _bw_geometry, _fill_bits,
                                        _remap_geometry, pad_out_shape, pad_source_index,
                                        pads_from_torch)
from baracuda_dsl.dtypes import dtype as as_dtype
from baracuda_dsl.ops.shape.specs import remap as spec
from baracuda_dsl.ops.shape.specs import pad_bw2d as bw2d

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)
NP_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


# --------------------------------------------------------------------------- validation
def test_validation_and_out_shape():
    d = PadDescriptor((4, 6), ((1, 2), (0, 3)), dtype="bf16")
    assert d.out_shape == (7, 9) and d.pads == ((1, 2), (0, 3))
    assert PadDescriptor((4, 6), ((-1, -2), (0, 3))).out_shape == (1, 9)
    assert PadDescriptor((5,), ((7, 9),), "circular").out_shape == (21,)
    assert PadDescriptor((5,), ((-2, -1),), "circular").out_shape == (2,)
    bad = [((4, 6), ((1, 2),), "constant"),               # one pair per dim
           ((4, 6), ((1, 2), (0, "a")), "constant"),
           ((4,), ((-3, -2),), "constant"),               # negative out extent
           ((4,), ((4, 0),), "reflect"),                  # reflect pad must be < n
           ((4,), ((0, 4),), "reflect"),
           ((4,), ((-1, 0),), "replicate"),
           ((0, 3), ((1, 0), (0, 0)), "replicate"),        # empty padded dim
           ((0, 3), ((1, 0), (0, 0)), "circular"),
           ((4,), ((1, 1),), "wrap")]
    for shape, pads, mode in bad:
        with pytest.raises(bd.InvalidProblemError):
            PadDescriptor(shape, pads, mode)
    PadDescriptor((0, 3), ((1, 0), (0, 0)), "constant")   # pads an empty dim with the value
    PadDescriptor((0, 3), ((0, 0), (1, 1)), "reflect")    # padded dim is non-empty
    with pytest.raises(bd.InvalidProblemError):
        PadDescriptor((4,), ((1, 1),), value=300, dtype="int8")
    with pytest.raises(bd.InvalidProblemError):
        PadDescriptor((4,), ((1, 1),), value=1.5, dtype="int32")
    with pytest.raises(bd.InvalidProblemError):
        PadDescriptor((4,), ((1, 1),), value=2, dtype="bool")
    with pytest.raises(bd.InvalidProblemError):
        PadDescriptor((4,), ((1, 1),), value=1e6, dtype="float16")
    with pytest.raises(bd.InvalidProblemError):
        PadDescriptor((4,), ((1, 1),), value=1e39, dtype="bf16")
    with pytest.raises(bd.InvalidProblemError):
        PadDescriptor((4,), ((1, 1),), value=1j, dtype="float32")
    PadDescriptor((4,), ((1, 1),), value=1 + 2j, dtype="complex64")
    PadDescriptor((4,), ((1, 1),), value=float("nan"), dtype="bf16")
    PadDescriptor((4,), ((1, 1),), "reflect", value="ignored")   # value unused
    with pytest.raises(bd.UnsupportedError):
        PadBackwardPlan.select(PadDescriptor((4,), ((1, 1),), dtype="int32"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        PadPlan.select(RollDescriptor((4,), (1,)), PREF)
    for dt in ("bool", "int8", "uint64", "complex64", "complex128", "float8_e4m3", "bf16"):
        PadPlan.select(PadDescriptor((3, 5), ((1, 0), (2, 2)), dtype=dt), PREF)
        RollPlan.select(RollDescriptor((3, 5), (1, -7), dt), PREF)
        TriuPlan.select(TriDescriptor((3, 5), 1, True, dt), PREF)
    with pytest.raises(bd.InvalidProblemError):
        RollDescriptor((3, 5), (1,))
    with pytest.raises(bd.InvalidProblemError):
        RollDescriptor((3, 5), (1, 2.5))
    with pytest.raises(bd.InvalidProblemError):
        TriDescriptor((5,))
    with pytest.raises(bd.InvalidProblemError):
        TriuPlan.select(TriDescriptor((3, 5), upper=False), PREF)
    with pytest.raises(bd.InvalidProblemError):
        TrilPlan.select(TriDescriptor((3, 5), upper=True), PREF)
    with pytest.raises(bd.UnsupportedError):
        TriBackwardPlan.select(TriDescriptor((3, 5), dtype="int32"), PREF)
    with pytest.raises(bd.UnsupportedError):
        RollBackwardPlan.select(RollDescriptor((3, 5), (1, 1), "int32"), PREF)
    p = PadPlan.select(PadDescriptor((0, 3), ((0, 0), (1, 1))), PREF)
    assert p.is_empty() and p.workspace_size() == 0
    assert not PadPlan.select(PadDescriptor((0, 3), ((1, 0), (1, 1))), PREF).is_empty()
    q = PadBackwardPlan.select(PadDescriptor((4, 6), ((1, 1), (2, 2)), "reflect", dtype="f16"), PREF)
    assert q.precision_guarantee().accumulator == bd.float32 and q.precision_guarantee().deterministic


def test_pads_from_torch():
    assert pads_from_torch([1, 2], 3) == ((0, 0), (0, 0), (1, 2))
    assert pads_from_torch([1, 2, 3, 4], 2) == ((3, 4), (1, 2))
    assert pads_from_torch([], 2) == ((0, 0), (0, 0))
    for bad in ([1], [1, 2, 3, 4, 5, 6]):
        with pytest.raises(bd.InvalidProblemError):
            pads_from_torch(bad, 2)


def test_host_arrays_rejected_before_launch():
    from baracuda_dsl.ops.shape.pad import PadArgs

    p = PadPlan.select(PadDescriptor((4,), ((1, 1),)), PREF)
    with pytest.raises(bd.DeviceMismatchError):
        p.run(PadArgs(np.zeros(4, np.float32), np.zeros(6, np.float32)))
    with pytest.raises(bd.InvalidProblemError):
        p.run(PadArgs(np.zeros(4, np.float32), np.zeros(7, np.float32)))


def test_fill_bits():
    assert _fill_bits(0, bd.float32) == 0
    assert _fill_bits(1.0, bd.float32) == 0x3F800000
    assert _fill_bits(1.0, bd.bfloat16) == 0x3F80
    assert _fill_bits(-2.0, bd.float16) == 0xC000
    assert _fill_bits(-1, bd.int8) == 0xFF
    assert _fill_bits(True, bd.bool_) == 1
    assert _fill_bits(1 + 2j, bd.complex64) == (0x40000000 << 32) | 0x3F800000
    assert _fill_bits(1.0, bd.complex128) == 0x3FF0000000000000
    assert _fill_bits(1.00390625, bd.bfloat16) == 0x3F80        # ties to even
    assert _fill_bits(1.01171875, bd.bfloat16) == 0x3F82


# (value, bits) per format, derived by hand: sign | exponent (bias 127 / 7 / 15) | mantissa
_MINIFLOAT_BITS = {
    "bfloat16": [(1.0, 0x3F80), (-2.5, 0xC020), (448.0, 0x43E0), (0.0, 0x0000),
                 (-0.0, 0x8000), (1 + 2 ** -8, 0x3F80), (1 + 3 * 2 ** -8, 0x3F82),
                 (1 + 2 ** -8 + 2 ** -30, 0x3F81),  # just above a tie: through f32 it'd be 0x3F80
                 (2.0 ** -133, 0x0001), (math.inf, 0x7F80), (-math.inf, 0xFF80)],
    "float8_e4m3": [(1.0, 0x38), (-2.5, 0xC2), (448.0, 0x7E), (-448.0, 0xFE), (464.0, 0x7E),
                    (0.0, 0x00), (-0.0, 0x80), (1.0625, 0x38), (1.1875, 0x3A), (2.0 ** -9, 0x01),
                    (2.0 ** -10, 0x00), (0.01, 0x05)],
    "float8_e5m2": [(1.0, 0x3C), (-2.5, 0xC1), (448.0, 0x5F), (57344.0, 0x7B), (0.0, 0x00),
                    (-0.0, 0x80), (1.125, 0x3C), (1.375, 0x3E), (2.0 ** -16, 0x01),
                    (math.inf, 0x7C), (-math.inf, 0xFC)],
}
_MINIFLOAT_OVERFLOW = {"bfloat16": [1e39, -1e39, 2.0 ** 128, 10 ** 400],
                       "float8_e4m3": [1e6, 464.001, -480.0, 10 ** 400],
                       "float8_e5m2": [1e6, 61440.0, -65536.0, 10 ** 400]}


@pytest.mark.parametrize("name", sorted(_MINIFLOAT_BITS))
def test_fill_bits_minifloats(name):
    """bf16 / fp8 pad values: round to nearest even exactly from float64 (no torch, no float32
    step); a finite value that overflows raises; NaN and ±inf are kept (inf becomes NaN in
    e4m3, which has none)."""
    dt = getattr(bd, name)
    for v, bits in _MINIFLOAT_BITS[name]:
        assert _fill_bits(v, dt) == bits, (name, v, hex(_fill_bits(v, dt)), hex(bits))
    for v in _MINIFLOAT_OVERFLOW[name]:
        with pytest.raises(bd.InvalidProblemError):
            _fill_bits(v, dt)
    nan = _fill_bits(math.nan, dt)
    assert nan == {"bfloat16": 0x7FC0, "float8_e4m3": 0x7F, "float8_e5m2": 0x7E}[name]
    if name == "float8_e4m3":
        assert _fill_bits(math.inf, dt) == 0x7F and _fill_bits(-math.inf, dt) == 0xFF
    assert _fill_bits(np.float32(1.0), dt) == _fill_bits(1, dt) == _fill_bits(True, dt)
    with pytest.raises(bd.InvalidProblemError):
        _fill_bits(1 + 1j, dt)
    assert PadDescriptor((4,), ((1, 1),), dtype=dt, value=-2.5).value == -2.5
    with pytest.raises(bd.InvalidProblemError):
        PadDescriptor((4,), ((1, 1),), dtype=dt, value=1e300)


def test_fill_bits_minifloats_match_ml_dtypes():
    """Cross-check against ml_dtypes on float32-exact values (ml_dtypes converts float64
    through float32, so only values with one rounding compare)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    vals = [1.0, -2.5, 448.0, 464.0, 0.0, -0.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 1.0625, 1.1875,
            1.125, 1.375, 0.01, 3.3e-3, -7.77, 240.5, 2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -10,
            2.0 ** -17, 1000.0, -57344.0, 2.0 ** -133]
    rng = np.random.default_rng(3)
    vals += [float(np.float32(v)) for v in rng.standard_normal(200) * 40]
    for name, mt in (("bfloat16", ml_dtypes.bfloat16), ("float8_e4m3", ml_dtypes.float8_e4m3fn),
                     ("float8_e5m2", ml_dtypes.float8_e5m2)):
        dt = getattr(bd, name)
        ref = np.array(vals, np.float32).astype(mt)
        for v, r, b in zip(vals, ref.astype(np.float64).tolist(),
                           ref.view(f"u{dt.itemsize}").tolist()):
            if math.isfinite(r):
                assert _fill_bits(v, dt) == b, (name, v, hex(_fill_bits(v, dt)), hex(b))
            else:
                with pytest.raises(bd.InvalidProblemError):
                    _fill_bits(v, dt)


def test_sku_space():
    from baracuda_dsl.ops import get_template

    pad = get_template("pad_remap").skus("sm90a")
    tri = get_template("tri_mask").skus("sm90a")
    bw = get_template("pad_bw").skus("sm90a")
    assert len(pad) == 5 * 5 * 3 * 2 * 2 and len(tri) == 5 * 2 * 3 * 2 * 2
    assert len(bw) == 4 * 4 * 3
    cases = [PadPlan.select(PadDescriptor((32, 64, 224, 224), ((0, 0), (0, 0), (1, 1), (2, 2)),
                                          dtype="bf16"), PREF),
             PadPlan.select(PadDescriptor((2,) * 8, ((1, 1),) * 8, "reflect"), PREF),
             RollPlan.select(RollDescriptor((2**28,), (3,), "f32"), PREF),
             TriuPlan.select(TriDescriptor((8192, 8192)), PREF),
             TrilPlan.select(TriDescriptor((3, 1, 4, 5), -1, False, "bool"), PREF)]
    for p in cases:
        assert p.sku().knobs in (pad + tri)
    k = dict(cases[0].sku().knobs)
    assert k == dict(itemsize=4, mode="constant", rank=3, wide=0, tile="block")   # 2-elem words
    assert dict(cases[2].sku().knobs)["tile"] == "row"
    b = PadBackwardPlan.select(PadDescriptor((4, 6, 5), ((1, 0), (1, 1), (2, 0)), "circular"), PREF)
    assert b.sku().knobs in bw
    b = PadBackwardPlan.select(PadDescriptor((4, 6, 5), ((0, 0), (1, 1), (2, 0)), "circular"), PREF)
    assert b.sku().knobs in get_template("pad_bw2d").skus("sm90a")


# ------------------------------------------------------------------ kernel emulation in numpy
def _emulate_remap(geo, words, base, fill_bytes_ok=True):
    """The pad_remap / tri_mask kernel, thread by thread (vectorised): returns the output words
    (rows·cols × width bytes) and checks that every output word is written exactly once."""
    o, e, ll, s = (np.array(geo.dims[i * 8:(i + 1) * 8], np.int64) for i in range(4))
    kn = geo.knobs
    R, mode, isz = kn.rank, kn.mode, kn.itemsize
    assert all(o[:8 - R] == 1) and all(s[:8 - R] == 0)
    ilp = spec.ilp_for(isz)
    tct = 256 if kn.tile == "row" else 32
    trt = 256 // tct
    rj, cj = (1, ilp) if kn.tile == "row" else (ilp, 1)
    tr_, tc_ = trt * rj, tct * cj
    assert spec.tile_dims(kn.tile, isz) == (tr_, tc_)
    nrows, wcols = geo.nrows, int(o[7])
    assert geo.grid == -(-nrows // tr_) * geo.ncb
    t = np.arange(geo.grid)[:, None, None, None]
    tid = np.arange(256)[None, :, None, None]
    a = np.arange(rj)[None, None, :, None]
    b = np.arange(cj)[None, None, None, :]
    rg, cb = t // geo.ncb, t % geo.ncb
    row = rg * tr_ + (tid // tct) * rj + a
    col = cb * tc_ + tid % tct + b * tct
    live = (row < nrows) & (col < wcols)
    flat = np.broadcast_to(row * wcols + col, live.shape)[live]
    assert np.array_equal(np.sort(flat), np.arange(nrows * wcols)), "tiles must cover once"
    if geo.knobs.wide == 0:
        assert nrows * wcols < 2**31
    # values (per row / col, the same remap as the kernel)
    rows = np.arange(nrows)
    coords = np.unravel_index(rows, o[8 - R:7]) if nrows else [rows] * (R - 1)
    roff = np.zeros(nrows, np.int64)
    rok = np.ones(nrows, bool)
    for j, d in enumerate(range(8 - R, 7)):
        q, ok = _kernel_remap(coords[j], e[d], ll[d], mode)
        roff += q * s[d]
        rok &= ok
    cols = np.arange(wcols)
    qc, okc = _kernel_remap(cols, e[7], ll[7], mode)
    valid = rok[:, None] & okc[None, :]
    if mode in ("triu", "tril"):
        i = coords[-1][:, None]
        valid = valid & ((cols[None, :] - i >= geo.kd) if mode == "triu"
                         else (cols[None, :] - i <= geo.kd))
        qc = cols
    off = base + roff[:, None] + qc[None, :] * s[7]
    fill = (geo.f0 & (2**64 - 1)) | ((geo.f1 & (2**64 - 1)) << 64)
    fw = np.frombuffer(fill.to_bytes(16, "little")[:geo.width], np.uint8)
    out = np.empty((nrows, wcols, geo.width), np.uint8)
    out[...] = fw
    if valid.any():
        assert off[valid].min() >= 0 and off[valid].max() < words.shape[0]
        out[valid] = words[off[valid]]
    return out


def _kernel_remap(c, e, lo, mode):
    q = np.asarray(c, np.int64) - lo
    ok = np.ones(q.shape, bool)
    if mode == "constant":
        ok = (q >= 0) & (q < e)
    elif mode == "replicate":
        q = np.where(q < 0, 0, q)
        q = np.where(q >= e, e - 1, q)
    elif mode == "reflect":
        q = np.where(q < 0, -q, q)
        q = np.where(q >= e, 2 * (e - 1) - q, q)
    elif mode == "circular":
        r = np.fmod(q, e) if e else q          # C remainder, as on the GPU
        q = np.where(r < 0, r + e, r)
    elif mode == "circular1":
        assert ((q >= -e) & (q < 2 * e)).all()
        q = np.where(q < 0, q + e, q)
        q = np.where(q >= e, q - e, q)
    return q, ok


def _strided_input(rng, dtype, shape, signs, misalign):
    """A strided view of a 16-byte-aligned host buffer; returns (buf, x, element offset)."""
    isz = np.dtype(dtype).itemsize
    big = tuple(max(n, 1) * abs(st) + 2 for n, st in zip(shape, signs))
    nel = 16 // isz + int(np.prod(big)) + 64
    nel += (-nel) % max(1, 16 // isz)
    raw = rng.integers(0, 250, nel * isz).astype(np.uint8)
    buf = raw.view(dtype)
    start = 16 // isz + misalign
    base = buf[start:start + int(np.prod(big))].reshape(big)
    sl = tuple(slice(None, None, st) if st > 0 else slice(max(n, 1) * -st - 1, None, st)
               for n, st in zip(shape, signs))
    x = base[sl][tuple(slice(0, n) for n in shape)]
    assert x.shape == tuple(shape)
    off_el = (x.__array_interface__["data"][0] - buf.__array_interface__["data"][0]) // isz
    return buf, x, off_el


def _run_emulated(mode, out_shape, x, buf, off_el, los, fill=0, kd=0):
    isz = x.itemsize
    strides = tuple(st // isz for st in x.strides)
    geo = _remap_geometry(mode, tuple(out_shape), tuple(x.shape), tuple(los), strides, isz,
                          (off_el * isz) % 16, 0, fill, kd)
    w = geo.width
    assert (off_el * isz) % w == 0
    words = buf.view(np.uint8).reshape(-1, w)
    got = _emulate_remap(geo, words, off_el * isz // w)
    return np.frombuffer(got.tobytes(), x.dtype).reshape(out_shape), geo


def _np_pad_ref(x, pads, mode, value):
    """numpy.pad, with negative pads (crop) done as slicing first (constant / circular)."""
    if mode == "circular" and any(lo < 0 or hi < 0 for lo, hi in pads):
        idx = [np.mod(np.arange(n + lo + hi) - lo, n) for n, (lo, hi) in zip(x.shape, pads)]
        return x[np.ix_(*idx)]
    crop = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, (lo, hi) in zip(x.shape, pads))
    xc = x[crop]
    pp = [(max(lo, 0), max(hi, 0)) for lo, hi in pads]
    if mode == "constant":
        return np.pad(xc, pp, mode="constant", constant_values=value)
    return np.pad(xc, pp, mode=NP_MODE[mode])


PAD_CASES = [((7,), ((2, 3),)), ((4, 6), ((1, 2), (0, 3))), ((3, 5, 9), ((0, 0), (1, 1), (2, 2))),
             ((2, 3, 10, 12), ((0, 0), (0, 0), (3, 1), (1, 3))), ((6, 8), ((0, 0), (0, 0))),
             ((2, 16), ((1, 1), (0, 0))), ((1, 5), ((0, 0), (2, 2))), ((5, 1), ((2, 2), (0, 0))),
             ((2,) * 8, ((1, 0),) * 8), ((40, 33), ((2, 1), (1, 2))), ((3, 2100), ((0, 0), (1, 1))),
             ((4, 64), ((1, 1), (0, 0))), ((3, 64), ((0, 0), (8, 16))), ((3, 64), ((1, 0), (-8, 32))),
             ((2, 3, 32), ((0, 0), (1, 1), (16, 0)))]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.complex128])
def test_pad_emulated_vs_numpy(mode, dtype):
    rng = np.random.default_rng(0)
    for shape, pads in PAD_CASES:
        for signs in itertools.islice(itertools.product((1, -1, 2), repeat=len(shape)), 4):
            for mis in (0, 1):
                buf, x, off = _strided_input(rng, dtype, shape, signs, mis)
                value = 3 if mode == "constant" else 0
                try:
                    desc = PadDescriptor(shape, pads, mode, value, as_dtype(np.dtype(dtype)))
                except bd.InvalidProblemError:
                    assert mode in ("reflect", "replicate") and min(min(p) for p in pads) < 0
                    continue
                fill = _fill_bits(value, desc.dtype) if mode == "constant" else 0
                got, geo = _run_emulated(mode, desc.out_shape, x, buf, off,
                                         [lo for lo, _ in pads], fill)
                np.testing.assert_array_equal(got, _np_pad_ref(x, pads, mode, value),
                                              err_msg=str((shape, pads, signs, geo.knobs)))


def test_pad_random_shapes_negative_and_large_pads():
    rng = np.random.default_rng(5)
    seen = set()
    for it in range(150):
        r = int(rng.integers(1, 5))
        shape = tuple(int(v) for v in rng.integers(1, 7, r))
        mode = ["constant", "reflect", "replicate", "circular"][it % 4]
        pads = []
        for n in shape:
            if mode == "reflect":
                pads.append(tuple(int(v) for v in rng.integers(0, n, 2)))
            elif mode == "replicate":
                pads.append(tuple(int(v) for v in rng.integers(0, 5, 2)))
            else:   # negative (crop) and pads larger than n
                lo, hi = (int(v) for v in rng.integers(-n, 2 * n + 2, 2))
                if n + lo + hi < 0:
                    lo, hi = 0, 0
                pads.append((lo, hi))
        pads = tuple(pads)
        buf, x, off = _strided_input(rng, np.int16, shape, (1,) * r, 0)
        desc = PadDescriptor(shape, pads, mode, -7, "int16")
        fill = _fill_bits(-7, desc.dtype) if mode == "constant" else 0
        got, geo = _run_emulated(mode, desc.out_shape, x, buf, off, [lo for lo, _ in pads], fill)
        seen.add(geo.knobs.mode)
        np.testing.assert_array_equal(got, _np_pad_ref(x, pads, mode, -7), err_msg=str((shape, pads, mode)))
        # the public host reference agrees with numpy too
        for d, (n, (lo, hi)) in enumerate(zip(shape, pads)):
            q, ok = pad_source_index(np.arange(n + lo + hi), n, lo, mode)
            assert ((q >= 0) & (q < n))[ok].all()
    assert {"circular", "circular1", "constant", "reflect", "replicate"} <= seen


def test_reflect_matches_torch_semantics():
    torch = pytest.importorskip("torch")
    for n, lo, hi in [(5, 4, 4), (3, 2, 1), (7, 0, 6), (2, 1, 1)]:
        x = torch.arange(n, dtype=torch.float64).reshape(1, 1, n)
        ref = torch.nn.functional.pad(x, (lo, hi), mode="reflect").reshape(-1).numpy()
        q, _ = pad_source_index(np.arange(n + lo + hi), n, lo, "reflect")
        np.testing.assert_array_equal(q.astype(np.float64), ref)
        ref = torch.nn.functional.pad(x, (lo, hi), mode="circular").reshape(-1).numpy()
        q, _ = pad_source_index(np.arange(n + lo + hi), n, lo, "circular")
        np.testing.assert_array_equal(q.astype(np.float64), ref)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.complex64])
def test_roll_emulated(dtype):
    rng = np.random.default_rng(2)
    for shape, shifts in [((10,), (3,)), ((10,), (-13,)), ((4, 6), (1, -2)), ((4, 64), (0, 8)),
                          ((4, 64), (5, 0)), ((3, 4, 5), (0, 7, 0)), ((2,) * 8, (1,) * 8),
                          ((0, 5), (1, 2)), ((1, 7), (4, 4))]:
        for signs in itertools.islice(itertools.product((1, -1), repeat=len(shape)), 3):
            buf, x, off = _strided_input(rng, dtype, shape, signs, 0)
            plan = RollPlan.select(RollDescriptor(shape, shifts, as_dtype(np.dtype(dtype))), PREF)
            if plan.is_empty():
                continue
            got, _ = _run_emulated("circular", shape, x, buf, off, plan._los)
            np.testing.assert_array_equal(got, np.roll(x, shifts, axis=tuple(range(len(shape)))))
            back = RollBackwardPlan.select(RollDescriptor(shape, shifts, "f32"), PREF)
            assert all((a + b) % n == 0 for a, b, n in zip(plan._los, back._los, shape) if n)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.float64, np.complex128])
def test_tri_emulated(dtype):
    rng = np.random.default_rng(3)
    for shape in [(5, 7), (7, 5), (1, 9), (3, 4, 6), (2, 1, 3, 3), (2, 3, 40, 33), (1, 1)]:
        for k in (0, 1, -2, 100, -100):
            for upper in (True, False):
                for signs in itertools.islice(itertools.product((1, -1), repeat=len(shape)), 2):
                    buf, x, off = _strided_input(rng, dtype, shape, signs, 0)
                    plan = (TriuPlan if upper else TrilPlan).select(
                        TriDescriptor(shape, k, upper, as_dtype(np.dtype(dtype))), PREF)
                    got, geo = _run_emulated(plan._mode, shape, x, buf, off, plan._los,
                                             kd=plan._kd)
                    ref = np.triu(x, k) if upper else np.tril(x, k)
                    np.testing.assert_array_equal(got, ref, err_msg=str((shape, k, upper)))


def test_widening_and_wide():
    g = _remap_geometry("constant", (32, 64, 224, 224), (32, 64, 224, 224), (0,) * 4,
                        (64 * 224 * 224, 224 * 224, 224, 1), 2, 0, 0)
    assert g.width == 16 and g.knobs.rank == 2
    g = _remap_geometry("circular", (8, 64), (8, 64), (3, 0), (64, 1), 2, 0, 0)
    assert g.width == 16 and g.dims[22] == 3          # roll along rows: rows stay remapped
    assert _remap_geometry("circular", (8, 64), (8, 64), (3, 0), (64, 1), 2, 2, 0).width == 2
    assert _remap_geometry("circular", (8, 64), (8, 64), (0, 3), (64, 1), 2, 0, 0).width == 2
    g = _remap_geometry("constant", (8, 66), (8, 64), (0, 1), (64, 1), 4, 0, 0, 0x3F800000)
    assert g.width == 4 and g.f0 == 0x3F800000
    g = _remap_geometry("constant", (10, 64), (8, 64), (1, 0), (64, 1), 4, 0, 0, 0x3F800000)
    assert g.width == 16 and g.f0 == 0x3F8000003F800000 and g.f1 == g.f0
    g = _remap_geometry("constant", (8, 80), (8, 64), (0, 8), (64, 1), 2, 0, 0, 0x3F80)
    assert g.width == 16 and g.dims[23] == 1 and g.f0 == 0x3F803F803F803F80   # padded by words
    assert _remap_geometry("reflect", (8, 80), (8, 64), (0, 8), (64, 1), 2, 0, 0).width == 2
    g = _remap_geometry("circular", (2**20,), (2**20,), (2**19 + 64,), (1,), 4, 0, 0)
    assert g.width == 16 and g.knobs.mode == "circular1"                      # roll by words
    g = _remap_geometry("constant", (2**16 + 2, 2**15), (2**16, 2**15), (1, 0), (2**15, 1), 1, 1, 1)
    assert g.knobs.wide == 1


def _emulate_bw(mode, shape, out_shape, los, dy, dy_off, words):
    rank, dims = _bw_geometry(mode, tuple(shape), tuple(out_shape), tuple(los),
                              tuple(st // dy.itemsize for st in dy.strides))
    x, p, ll, s = (dims[i * 8:(i + 1) * 8] for i in range(4))
    n = int(np.prod(shape))
    out = np.zeros(n)
    for i in range(n):
        rem, coord = i, [0] * 8
        for d in range(7, 8 - rank, -1):
            rem, coord[d] = divmod(rem, x[d])
        coord[8 - rank] = rem
        lists = []
        for d in range(8):
            c, nn, pe, lo = coord[d], x[d], p[d], ll[d]
            if mode == "constant":
                lst = [c + lo] if 0 <= c + lo < pe else []
            elif mode == "replicate":
                st = 0 if c == 0 else lo + c
                en = pe - 1 if c == nn - 1 else lo + c
                lst = list(range(st, en + 1))
            elif mode == "circular":
                p0 = c + lo - (nn if c + lo >= nn else 0)
                lst = list(range(p0, pe, nn))
            else:
                lst = ([lo - c] if c >= 1 and lo - c >= 0 else []) + [lo + c] + (
                    [lo + 2 * (nn - 1) - c] if c <= nn - 2 and lo + 2 * (nn - 1) - c < pe else [])
            assert lst == sorted(lst)
            lists.append(lst)
        acc = 0.0
        for t in itertools.product(*lists):
            acc += words[dy_off + sum(a * b for a, b in zip(t, s))]
        out[i] = acc
    return out.reshape(shape)


def _scatter_ref(mode, shape, pads, dy):
    ref = np.zeros(shape)
    grids = np.meshgrid(*[np.arange(n + lo + hi) for n, (lo, hi) in zip(shape, pads)],
                        indexing="ij")
    srcs, ok = [], np.ones(dy.shape, bool)
    for g, n, (lo, _) in zip(grids, shape, pads):
        q, v = pad_source_index(g, n, lo, mode)
        srcs.append(np.where(v, q, 0))
        ok &= v
    np.add.at(ref, tuple(sc[ok] for sc in srcs), dy[ok])
    return ref


def test_pad_bw_emulated():
    rng = np.random.default_rng(4)
    cases = [((7,), ((2, 3),), "reflect"), ((7,), ((2, 3),), "replicate"), ((4,), ((9, 6),), "circular"),
             ((4,), ((-1, 6),), "circular"), ((6,), ((-2, 1),), "constant"), ((1,), ((3, 2),), "replicate"),
             ((3, 5, 4), ((0, 0), (2, 1), (3, 3)), "reflect"), ((3, 5, 4), ((1, 0), (2, 1), (3, 3)), "replicate"),
             ((3, 5, 4), ((0, 0), (7, 1), (3, 9)), "circular"), ((2, 3, 4), ((0, 0), (0, 0), (1, 1)), "reflect"),
             ((2, 3, 4), ((1, 0), (-1, 2), (0, -2)), "constant"), ((2,) * 5, ((1, 1),) * 5, "replicate")]
    for shape, pads, mode in cases:
        out_shape = pad_out_shape(shape, pads)
        big = rng.standard_normal([n * 2 + 1 for n in out_shape])
        dy = big[tuple(slice(None, None, -2) for _ in out_shape)][tuple(slice(0, n) for n in out_shape)]
        assert dy.shape == out_shape
        off = (dy.__array_interface__["data"][0] - big.__array_interface__["data"][0]) // 8
        got = _emulate_bw(mode, shape, out_shape, [lo for lo, _ in pads], dy, off, big.reshape(-1))
        np.testing.assert_allclose(got, _scatter_ref(mode, shape, pads, dy), rtol=1e-12, atol=1e-12,
                                   err_msg=str((shape, pads, mode)))


# ------------------------------------------------------------------------------- compile
@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for name, knobs in [("pad_remap", dict(itemsize=2, mode="constant", rank=3, wide=0, tile="block")),
                        ("pad_remap", dict(itemsize=16, mode="reflect", rank=8, wide=1, tile="row")),
                        ("tri_mask", dict(itemsize=4, mode="triu", rank=2, wide=0, tile="row")),
                        ("pad_bw", dict(dtype="bf16", mode="circular", rank=4))]:
        cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=300)
        assert len(cubin) > 1000 and meta["threads"] == 256


# ------------------------------------------------------------------- pad_bw2d (fast path)
def _cands2d(mode, i, n, pe, lo):
    """The kernel's per-dim candidate list (pad_bw2d.cands + pick), Python ints."""
    if mode == "replicate":
        st = 0 if i == 0 else lo + i
        en = pe - 1 if i == n - 1 else lo + i
        return [st + a for a in range(en - st + 1)]
    if mode == "circular":
        p0 = i + lo
        p0 = p0 - n if p0 >= n else p0
        cnt = (pe - p0 + n - 1) // n if p0 < pe else 0
        return [p0 + a * n for a in range(cnt)]
    c1, c2, c3 = lo - i, lo + i, lo + 2 * (n - 1) - i
    v1 = i >= 1 and c1 >= 0
    v3 = i <= n - 2 and c3 < pe
    first, second = (c1, c2) if v1 else (c2, c3)
    cnt = 1 + int(v1) + int(v3)
    return [first, second, c3][:cnt]


def _emulate_bw2d(mode, grid, scalars, words, dy_off, itemsize=8):
    """pad_bw2d's thread decomposition and summation order in numpy (every CTA, warp, lane and
    unrolled column); asserts coverage (each dx element written once) and Int32 offsets."""
    nrows, ncb, h, w, ph, pw, lh, lw, sb, sh, sw = scalars
    warps, u_cols = bw2d.BW2D_WARPS, bw2d.BW2D_COLS // 32
    out = np.full(nrows * w, np.nan)
    hits = np.zeros(nrows * w, np.int64)
    lim = 2**31
    for bid in range(grid):
        rg, cy = divmod(bid, ncb)
        for warp in range(warps):
            r = rg * warps + warp
            if r >= nrows:
                continue
            b, i = divmod(r, h)
            rows = _cands2d(mode, i, h, ph, lh)
            base = b * sb
            for lane in range(32):
                for u in range(u_cols):
                    j = cy * bw2d.BW2D_COLS + u * 32 + lane
                    if j >= w:
                        continue
                    cols = _cands2d(mode, j, w, pw, lw)
                    acc = 0.0
                    for p in rows:
                        for q in cols:
                            off = base + p * sh + q * sw
                            assert -lim <= off < lim and 0 <= p < ph and 0 <= q < pw
                            acc += words[dy_off + off]
                    assert r * w + j < lim
                    out[r * w + j] = acc
                    hits[r * w + j] += 1
    assert (hits == 1).all()
    return out


def _bw2d_dys(rng, out_shape):
    """dy variants the fast path must serve: dense, last two dims reversed + stepped, batch
    reversed.  Yields (dy, flat words, element offset of dy[0,...,0] in words)."""
    r = len(out_shape)
    lead, tail = out_shape[:max(r - 2, 0)], out_shape[max(r - 2, 0):]
    big = rng.standard_normal(list(lead) + [2 * n + 1 for n in tail])
    dense = rng.standard_normal(out_shape)
    variants = [(dense, dense)]
    sl = tuple(slice(None) for _ in lead) + tuple(slice(None, None, -2) for _ in tail)
    cut = tuple(slice(None) for _ in lead) + tuple(slice(0, n) for n in tail)
    variants.append((big[sl][cut], big))
    if lead:
        variants.append((dense[(slice(None, None, -1),) * len(lead) + (slice(None),) * 2], dense))
    for dy, owner in variants:
        off = (dy.__array_interface__["data"][0] - owner.__array_interface__["data"][0]) // 8
        yield dy, owner.reshape(-1), off


def test_pad_bw2d_emulated():
    from baracuda_dsl.ops.shape.pad import _bw2d_geometry

    rng = np.random.default_rng(11)
    cases = [((7,), ((2, 3),), "reflect"), ((1,), ((3, 2),), "replicate"),
             ((4,), ((9, 6),), "circular"), ((4,), ((-1, 6),), "circular"),
             ((3, 1, 1), ((0, 0), (0, 0), (0, 0)), "reflect"),
             ((2, 7, 33), ((0, 0), (3, 3), (3, 3)), "reflect"),
             ((2, 2, 7), ((0, 0), (1, 0), (1, 1)), "reflect"),
             ((3, 2, 7), ((0, 0), (1, 1), (3, 2)), "replicate"),
             ((2, 1, 1), ((0, 0), (3, 3), (2, 0)), "replicate"),
             ((1, 3, 33), ((0, 0), (2, 3), (0, 3)), "circular"),
             ((2, 2, 3), ((0, 0), (7, 5), (8, -1)), "circular"),        # pads > n, crop
             ((2, 3, 2), ((0, 0), (-2, 0), (1, 1)), "circular"),        # empty row lists
             ((2, 2, 3, 5), ((0, 0), (0, 0), (1, 2), (3, 1)), "replicate"),
             ((1, 2, 300), ((0, 0), (1, 1), (3, 3)), "reflect"),        # two column chunks
             ((2, 3, 2, 5), ((0, 0), (0, 0), (1, 1), (0, 0)), "circular")]
    for shape, pads, mode in cases:
        out_shape = pad_out_shape(shape, pads)
        los = tuple(lo for lo, _ in pads)
        for dy, words, off in _bw2d_dys(rng, out_shape):
            strides = tuple(s // 8 for s in dy.strides)
            g = _bw2d_geometry(mode, shape, out_shape, los, strides)
            assert g is not None, (shape, pads, mode, strides)
            got = _emulate_bw2d(mode, g[0], g[1], words, off).reshape(shape)
            ref = _scatter_ref(mode, shape, pads, dy)
            np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12,
                                       err_msg=str((shape, pads, mode, strides)))
            # same summation order as the general kernel: bit-identical sums
            old = _emulate_bw(mode, shape, out_shape, list(los), dy, off, words)
            assert np.array_equal(got, old), (shape, pads, mode, strides)


def test_pad_bw2d_selection():
    from baracuda_dsl.ops.shape.pad import _bw2d_geometry
    from baracuda_dsl.tensor import contiguous_strides

    def geo(shape, pads, mode, strides=None):
        out = pad_out_shape(shape, pads)
        return _bw2d_geometry(mode, shape, out, tuple(lo for lo, _ in pads),
                              strides or contiguous_strides(out))

    shape, pads = (32, 64, 224, 224), ((0, 0), (0, 0), (3, 3), (3, 3))
    grid, sc = geo(shape, pads, "reflect")
    assert sc == (32 * 64 * 224, 1, 224, 224, 230, 230, 3, 3, 230 * 230, 230, 1)
    assert grid == 32 * 64 * 224 // 8
    for mode in ("reflect", "replicate", "circular"):
        p = PadBackwardPlan.select(PadDescriptor(shape, pads, mode, dtype="bf16"), PREF)
        assert p.sku().template == "pad_bw2d"
        assert dict(p.sku().knobs) == dict(dtype="bf16", mode=mode)
        assert p.sku().knobs in get_template_skus("pad_bw2d")
    assert geo(shape, pads, "constant") is None
    assert geo((4, 5, 6), ((1, 0), (0, 0), (1, 1)), "reflect") is None      # leading dim padded
    assert geo((0, 5, 6), ((0, 0), (1, 1), (1, 1)), "reflect") is None      # empty
    assert geo((3, 2, 2), ((0, 0), (-2, 0), (0, 0)), "circular") is None    # empty dy
    assert geo((4, 5, 6), ((0, 0), (1, 1), (1, 1)), "reflect", (200, 8, 1))[1][8] == 200  # any sb
    assert geo((2, 3, 5, 6), ((0, 0),) * 2 + ((1, 1),) * 2, "reflect",
               (3 * 56, 56, 8, 1)) is not None                              # collapsible batch
    assert geo((2, 3, 5, 6), ((0, 0),) * 2 + ((1, 1),) * 2, "reflect",
               (200, 56, 8, 1)) is None                                     # not collapsible
    assert geo((2**16, 2**8, 2**8), ((0, 0), (1, 1), (1, 1)), "replicate") is None   # > Int32
    b = PadBackwardPlan.select(PadDescriptor((4, 6, 5), ((1, 0), (1, 1), (2, 0)), "circular"), PREF)
    assert b.sku().template == "pad_bw" and b.sku().knobs in get_template_skus("pad_bw")
    c = PadBackwardPlan.select(PadDescriptor((4, 6), ((1, 1), (2, 2)), "constant"), PREF)
    assert c.sku().template != "pad_bw2d"


def get_template_skus(name):
    from baracuda_dsl.ops import get_template

    return get_template(name).skus("sm90a")


def test_pad_bw2d_sku_space():
    sk = get_template_skus("pad_bw2d")
    assert len(sk) == 4 * 3
    assert {dict(k)["mode"] for k in sk} == {"reflect", "replicate", "circular"}


@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile_bw2d(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for knobs in [dict(dtype="f32", mode="reflect"), dict(dtype="bf16", mode="circular"),
                  dict(dtype="f64", mode="replicate")]:
        cubin, meta = compile_sku("pad_bw2d", freeze_knobs(knobs), arch, timeout=300)
        assert len(cubin) > 1000 and meta["threads"] == 256
