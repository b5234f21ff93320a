"""Fractional max pooling without a GPU: descriptor validation (output_size / output_ratio,
torch's size rule), the window starts of both modes against independent references (torch's
interval generator in f32 / f64, the seed's documented formula), the kernels' window, candidate
range and gather / scatter math emulated in numpy, the SKU spaces, the exact launch arguments
(recorded; gather and atomic backward) and a cross-compile sample for sm80 / sm89 / sm90a."""

import itertools

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.dtypes import dtype as as_dtype
from baracuda_dsl.ops.pooling import (FractionalMaxPoolArgs, FractionalMaxPoolBackwardArgs,
                                      FractionalMaxPoolBackwardPlan, FractionalMaxPoolDescriptor,
                                      FractionalMaxPoolPlan, fractional_starts, pool_dense_strides)
from baracuda_dsl.ops.pooling.specs import fractional as spec
from baracuda_dsl.tensor import TensorView

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


def _tv(ptr, shape, strides, dt):
    return TensorView(ptr, shape, strides, as_dtype(dt), device=0)


# --------------------------------------------------------------------------- validation
def test_descriptor_sizes_and_validation():
    d = FractionalMaxPoolDescriptor(2, (2, 3, 10, 11), 3, output_ratio=0.5)
    assert d.out_shape == (2, 3, 5, 5) and d.kernel_size == (3, 3)       # int(n · ratio)
    assert d.samples_shape == (2, 3, 2) and d.mode == "torch" and d.deterministic
    d = FractionalMaxPoolDescriptor(3, (1, 2, 7, 8, 9), (2, 1, 3), output_size=(4, 5, 6))
    assert d.out_shape == (1, 2, 4, 5, 6) and d.samples_shape == (1, 2, 3)
    # output_size wins over output_ratio (torch)
    assert FractionalMaxPoolDescriptor(2, (1, 1, 9, 9), 2, 4, 0.9).output_size == (4, 4)
    assert FractionalMaxPoolDescriptor(2, (0, 3, 9, 9), 2, 4).out_shape == (0, 3, 4, 4)
    bad = [dict(spatial=1, shape=(1, 1, 9), kernel_size=2, output_size=3),
           dict(spatial=2, shape=(1, 1, 9), kernel_size=2, output_size=3),
           dict(spatial=2, shape=(1, 1, 9, 9), kernel_size=2),               # no output size
           dict(spatial=2, shape=(1, 1, 9, 9), kernel_size=0, output_size=3),
           dict(spatial=2, shape=(1, 1, 9, 9), kernel_size=2, output_size=0),
           dict(spatial=2, shape=(1, 1, 9, 9), kernel_size=3, output_size=8),  # 8 + 3 − 1 > 9
           dict(spatial=2, shape=(1, 1, 9, 9), kernel_size=2, output_ratio=0.0),
           dict(spatial=2, shape=(1, 1, 9, 9), kernel_size=2, output_ratio=1.5),
           dict(spatial=2, shape=(1, 1, 9, 9), kernel_size=2, output_ratio=(0.5, 0.5, 0.5)),
           dict(spatial=2, shape=(1, 1, 9, 9), kernel_size=2, output_ratio=0.1),  # int(0.9) = 0
           dict(spatial=2, shape=(1, 1, 9, 9), kernel_size=2.0, output_size=3),
           dict(spatial=2, shape=(1, 1, 9, 9), kernel_size=2, output_size=3, mode="numpy"),
           dict(spatial=2, shape=(1, 1, 9, 9), kernel_size=2, output_size=3, layout="NDHWC"),
           dict(spatial=2, shape=(1, 1, 0, 9), kernel_size=1, output_size=1)]
    for kw in bad:
        with pytest.raises(bd.InvalidProblemError):
            FractionalMaxPoolDescriptor(**kw)
    with pytest.raises(bd.UnsupportedError):
        FractionalMaxPoolDescriptor(2, (1, 1, 9, 9), 2, 3, dtype="int32")


# --------------------------------------------------------------------------- window starts
def _torch_intervals(n, k, o, u, ct):
    """torch's CUDA get_interval, transcribed with numpy scalars of the accumulate type."""
    alpha = ct(n - k) / ct(o - 1) if o > 1 else None
    out = []
    for i in range(o):
        if i == o - 1:
            out.append(n - k)
        else:
            out.append(int(ct(ct(i) + ct(u)) * alpha) - int(ct(u) * alpha))
    return out


def _seed_reference(n, k, o, u):
    """The seed's documented formula in exact rationals: base = i·(n − k)/(o − 1),
    start = clamp(floor(base + u), 0, n − k); o == 1: floor(u·(n − k))."""
    from fractions import Fraction

    u = Fraction(float(np.float32(u)))
    if o == 1:
        return [int(u * (n - k))]
    return [min(max(int(Fraction(i * (n - k), o - 1) + u), 0), n - k) for i in range(o)]


def test_torch_starts_known_values():
    # alpha = 8 / 4 = 2, u = 0.5: int((i + .5)·2) − int(1) = 2i
    assert fractional_starts(10, 2, 5, 0.5, "torch") == [0, 2, 4, 6, 8]
    assert fractional_starts(7, 3, 1, 0.9, "torch") == [4]               # o == 1: n − k
    assert fractional_starts(5, 5, 1, 0.3, "seed") == [0]


@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16"])
def test_torch_starts_match_torch_generator(dtype):
    rng = np.random.default_rng(0)
    ct = np.float64 if dtype == "f64" else np.float32
    for n, k in itertools.product(range(1, 40, 3), range(1, 6)):
        for o in range(1, n - k + 2):
            u = float(np.float32(rng.random()))
            got = fractional_starts(n, k, o, u, "torch", dtype)
            assert got == _torch_intervals(n, k, o, u, ct), (n, k, o, u)
            assert got[-1] == n - k and all(0 <= s <= n - k for s in got)
            assert all(b > a for a, b in zip(got, got[1:])), (n, k, o, u, got)


def test_seed_starts_match_the_seed_formula():
    rng = np.random.default_rng(1)
    mism = 0
    for n, k in itertools.product(range(1, 40, 3), range(1, 6)):
        for o in range(1, n - k + 2):
            u = float(np.float32(rng.random()))
            got = fractional_starts(n, k, o, u, "seed")
            ref = _seed_reference(n, k, o, u)
            mism += got != ref
            assert all(abs(a - b) <= 1 for a, b in zip(got, ref)), (n, k, o, u)
            assert all(0 <= s <= n - k for s in got)
            assert all(b > a for a, b in zip(got, got[1:])) or o == 1
    assert mism == 0        # f32 rounding never moved a floor in this sweep


# --------------------------------------------------------------- kernel math, emulated
def _candidates(z, n, o, k):
    """pool_extra.frac_candidates, transcribed (Python ints; numerators non-negative)."""
    den = max(n - k, 1)
    a = (z - k) * (o - 1)
    lo = 0 if a < 0 else a // den
    hi = min((z + 1) * (o - 1) // den + 2, o)
    if o == 1:
        lo, hi = 0, 1
    return lo, max(hi - lo, 0)


@pytest.mark.parametrize("mode", ["torch", "seed"])
def test_candidate_range_covers_every_window(mode):
    rng = np.random.default_rng(2)
    for n, k in itertools.product(range(1, 30, 2), range(1, 6)):
        for o in range(1, n - k + 2):
            u = float(np.float32(rng.random()))
            st = fractional_starts(n, k, o, u, mode)
            for oo, s in enumerate(st):
                for z in range(s, s + k):
                    lo, cnt = _candidates(z, n, o, k)
                    assert lo <= oo < lo + cnt, (n, k, o, u, oo, z)
            assert max(_candidates(z, n, o, k)[1] for z in range(n)) <= k + 4


def _emulate_fw(desc, x, u):
    """The forward kernel on the host: windows from fractional_starts, torch's max rule."""
    N, C = desc.shape[:2]
    sp, out, ks = desc.shape[2:], desc.output_size, desc.kernel_size
    cols = ((0, 1, 2) if desc.spatial == 3 else (1, 0)) if desc.mode == "torch" else \
        tuple(range(desc.spatial))
    y = np.zeros(desc.out_shape)
    idx = np.zeros(desc.out_shape, np.int64)
    for b, c in itertools.product(range(N), range(C)):
        starts = [fractional_starts(n, k, o, u[b, c, col], desc.mode, desc.dtype)
                  for n, k, o, col in zip(sp, ks, out, cols)]
        for opos in itertools.product(*[range(o) for o in out]):
            lo = [starts[d][opos[d]] for d in range(desc.spatial)]
            m, mi = -np.inf, np.ravel_multi_index(tuple(lo), sp)
            for off in itertools.product(*[range(k) for k in ks]):
                z = tuple(a + b_ for a, b_ in zip(lo, off))
                v = x[(b, c) + z]
                if v > m or v != v:
                    m, mi = v, np.ravel_multi_index(z, sp)
            y[(b, c) + opos], idx[(b, c) + opos] = m, mi
    return y, idx


def _emulate_gather(desc, dy, idx):
    N, C = desc.shape[:2]
    sp, out, ks = desc.shape[2:], desc.output_size, desc.kernel_size
    dx = np.zeros(desc.shape)
    for b, c in itertools.product(range(N), range(C)):
        for z in itertools.product(*[range(n) for n in sp]):
            me = np.ravel_multi_index(z, sp)
            rng_ = [_candidates(z[d], sp[d], out[d], ks[d]) for d in range(desc.spatial)]
            acc = 0.0
            for o in itertools.product(*[range(lo, lo + cnt) for lo, cnt in rng_]):
                if idx[(b, c) + o] == me:
                    acc += dy[(b, c) + o]
            dx[(b, c) + z] = acc
    return dx


@pytest.mark.parametrize("mode", ["torch", "seed"])
@pytest.mark.parametrize("case", [(2, (2, 2, 9, 11), (2, 3), (5, 4)),
                                  (2, (1, 2, 7, 7), 3, (5, 5)),        # k > stride: overlaps
                                  (2, (1, 1, 6, 5), 1, (6, 5)),
                                  (3, (1, 2, 5, 6, 7), (2, 2, 3), (3, 4, 3))])
def test_kernel_math_emulated(mode, case):
    sp, shape, k, out = case
    rng = np.random.default_rng(3)
    desc = FractionalMaxPoolDescriptor(sp, shape, k, out, mode=mode, dtype="f64")
    x = rng.standard_normal(shape)
    u = rng.random(desc.samples_shape).astype(np.float32)
    y, idx = _emulate_fw(desc, x, u)
    flat = x.reshape(shape[:2] + (-1,))
    assert np.array_equal(np.take_along_axis(flat, idx.reshape(shape[:2] + (-1,)), 2),
                          y.reshape(shape[:2] + (-1,)))
    dy = rng.standard_normal(desc.out_shape)
    ref = np.zeros(flat.shape)
    for b, c in itertools.product(range(shape[0]), range(shape[1])):
        np.add.at(ref[b, c], idx[b, c].ravel(), dy[b, c].ravel())
    assert np.allclose(_emulate_gather(desc, dy, idx), ref.reshape(shape), rtol=0, atol=1e-12)


def test_nan_wins_in_emulation():
    desc = FractionalMaxPoolDescriptor(2, (1, 1, 4, 4), 2, 2, dtype="f64")
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    x[0, 0, 0, 0] = np.nan
    y, idx = _emulate_fw(desc, x, np.full((1, 1, 2), 0.5, np.float32))
    assert np.isnan(y[0, 0, 0, 0]) and idx[0, 0, 0, 0] == 0


# ------------------------------------------------------------------- SKUs and launches
def test_sku_space():
    fw = list(spec.FRACTIONAL_FW.space())
    bw = list(spec.FRACTIONAL_BW.space())
    assert len(fw) == 4 and len(set(fw)) == 4
    assert len(bw) == 8 and {k.method for k in bw} == {"gather", "atomic"}
    p = FractionalMaxPoolPlan.select(FractionalMaxPoolDescriptor(2, (1, 1, 9, 9), 2, 4,
                                                                 dtype="bf16"), PREF)
    assert p.sku().template == "fractional_fw" and p.workspace_size() == 0
    b = FractionalMaxPoolBackwardPlan.select(FractionalMaxPoolDescriptor(
        2, (1, 1, 9, 9), 2, 4, dtype="f16", deterministic=False), PREF)
    assert b.workspace_size() >= 4 * 81 and not b.precision_guarantee().deterministic
    g = FractionalMaxPoolBackwardPlan.select(FractionalMaxPoolDescriptor(2, (1, 1, 9, 9), 2, 4),
                                             PREF)
    assert g.workspace_size() == 0 and g.precision_guarantee().deterministic


def test_launch_arguments(launches):
    d = FractionalMaxPoolDescriptor(2, (2, 3, 9, 10), (2, 3), (5, 4), dtype="f32")
    out = d.out_shape
    x = _tv(0x10000, d.shape, (400, 100, 11, 1), "f32")
    u = _tv(0x20000, (2, 3, 2), (1, 2, 6), "f32")
    y = _tv(0x80000, out, pool_dense_strides(out, "NCHW"), "f32")
    idx = _tv(0x90000, out, pool_dense_strides(out, "NCHW"), "int64")
    FractionalMaxPoolPlan.select(d, PREF).run(FractionalMaxPoolArgs(x, u, y, idx))
    name, knobs, grid, args, _ = launches[-1]
    n = int(np.prod(out))
    assert name == "fractional_fw" and knobs == {"dtype": "f32"} and grid == ((n + 255) // 256,
                                                                              1, 1)
    assert len(args) == 5 + sum(spec.FW_GROUPS)
    assert args[:5] == [0x10000, 0x80000, 0x90000, 0x20000, n]
    assert args[5:13] == [2, 3, 1, 9, 10, 1, 5, 4] and args[13:16] == [1, 2, 3]
    assert args[16:21] == [400, 100, 0, 11, 1] and args[21:26] == [60, 20, 0, 4, 1]
    assert args[26:29] == [1, 2, 6]
    assert args[29:35] == [1, 0, 1, 0, 1, 0]              # torch, NCHW, want, cols (d, h, w)
    assert args[35:] == [0.0, float(np.float32(7) / np.float32(4)),
                         float(np.float32(7) / np.float32(3))]
    # seed mode, 3-D, NHWC, no indices
    d3 = FractionalMaxPoolDescriptor(3, (1, 2, 5, 6, 7), 2, (2, 3, 4), mode="seed", dtype="f64",
                                     layout="NHWC")
    y3 = _tv(0x80000, d3.out_shape, pool_dense_strides(d3.out_shape, "NHWC"), "f64")
    FractionalMaxPoolPlan.select(d3, PREF).run(FractionalMaxPoolArgs(
        _tv(0x10000, d3.shape, (420, 210, 42, 7, 1), "f64"), _tv(0x20000, (1, 2, 3), (6, 3, 1),
                                                                   "f32"), y3))
    args = launches[-1][3]
    assert args[29:35] == [0, 1, 0, 0, 1, 2] and args[35:] == [3.0, 2.0, 5.0 / 3.0]
    with pytest.raises(bd.UnsupportedError):               # samples must be f32
        FractionalMaxPoolPlan.select(d, PREF).run(FractionalMaxPoolArgs(
            x, _tv(0x20000, (2, 3, 2), (4, 2, 1), "f64"), y))
    with pytest.raises(bd.InvalidProblemError):            # samples shape
        FractionalMaxPoolPlan.select(d, PREF).run(FractionalMaxPoolArgs(
            x, _tv(0x20000, (2, 3, 3), (9, 3, 1), "f32"), y))
    with pytest.raises(bd.UnsupportedError):               # y not dense
        FractionalMaxPoolPlan.select(d, PREF).run(FractionalMaxPoolArgs(
            x, u, _tv(0x80000, out, (60, 20, 1, 5), "f32")))


def test_backward_launches(launches):
    d = FractionalMaxPoolDescriptor(2, (2, 3, 9, 10), (2, 3), (5, 4), dtype="f16")
    dy = _tv(0x20000, d.out_shape, (1, 2, 100, 10), "f16")
    ix = _tv(0x40000, d.out_shape, (60, 20, 4, 1), "int64")
    dx = _tv(0x30000, d.shape, pool_dense_strides(d.shape, "NCHW"), "f16")
    FractionalMaxPoolBackwardPlan.select(d, PREF).run(FractionalMaxPoolBackwardArgs(dy, ix, dx))
    name, knobs, grid, args, _ = launches[-1]
    assert len(launches) == 1 and name == "fractional_bw"
    assert knobs == {"dtype": "f16"} and args[:5] == [0x20000, 0x30000, 0x40000, 0x30000, 540]
    assert len(args) == 5 + sum(spec.BW_GROUPS) and args[-2:] == [0, 0]
    assert args[16:21] == [1, 2, 0, 100, 10] and args[21:26] == [60, 20, 0, 4, 1]
    # atomic, half: f32 workspace, three stages
    da = FractionalMaxPoolDescriptor(2, (2, 3, 9, 10), (2, 3), (5, 4), dtype="f16",
                                     deterministic=False)
    plan = FractionalMaxPoolBackwardPlan.select(da, PREF)
    with pytest.raises(bd.WorkspaceTooSmallError):
        plan.run(FractionalMaxPoolBackwardArgs(dy, ix, dx))
    del launches[:]
    plan.run(FractionalMaxPoolBackwardArgs(dy, ix, dx), workspace=bd.Workspace(0x700000, 1 << 20))
    assert [(a[1]["method"], a[3][4], a[3][-1]) for a in launches] == \
        [("atomic", 540, 0), ("atomic", 120, 1), ("atomic", 540, 2)]
    assert all(a[3][3] == 0x700000 for a in launches)
    assert launches[0][3][31:36] == [270, 90, 0, 10, 1]     # workspace strides (dense NCHW)
    # atomic, f32: straight into dx, two stages
    d32 = FractionalMaxPoolDescriptor(2, (2, 3, 9, 10), (2, 3), (5, 4), dtype="f32",
                                      deterministic=False)
    del launches[:]
    FractionalMaxPoolBackwardPlan.select(d32, PREF).run(FractionalMaxPoolBackwardArgs(
        _tv(0x20000, d.out_shape, (1, 2, 100, 10), "f32"), ix,
        _tv(0x30000, d.shape, pool_dense_strides(d.shape, "NCHW"), "f32")))
    assert [(a[3][3], a[3][-1]) for a in launches] == [(0x30000, 0), (0x30000, 1)]


def test_empty_batch_launches_nothing(launches):
    d = FractionalMaxPoolDescriptor(2, (0, 3, 9, 9), 2, 4)
    FractionalMaxPoolPlan.select(d, PREF).run(FractionalMaxPoolArgs(
        _tv(0x1000, d.shape, (243, 81, 9, 1), "f32"), _tv(0x2000, (0, 3, 2), (6, 2, 1), "f32"),
        _tv(0x3000, d.out_shape, (48, 16, 4, 1), "f32")))
    FractionalMaxPoolBackwardPlan.select(d, PREF).run(FractionalMaxPoolBackwardArgs(
        _tv(0x3000, d.out_shape, (48, 16, 4, 1), "f32"),
        _tv(0x4000, d.out_shape, (48, 16, 4, 1), "int64"),
        _tv(0x1000, d.shape, (243, 81, 9, 1), "f32")))
    assert launches == []


# ------------------------------------------------------------------------------- compile
@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for name, knobs in [("fractional_fw", dict(dtype="bf16")),
                        ("fractional_bw", dict(dtype="f16", method="atomic"))]:
        cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=300)
        assert len(cubin) > 1000 and meta["threads"] == 256
