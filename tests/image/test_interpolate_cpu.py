"""Interpolation plans without a GPU: descriptor validation and torch's size / scale rules, the
SKU space, the exact launch arguments (recorded), the kernels' per-dim coordinate maps mirrored
in numpy against values torch gives, the backward's candidate output ranges (every output that
reaches an input must be a candidate), the gather backward as the exact adjoint of the forward,
and a cross-compile sample of both templates for sm80 / sm89 / sm90a."""

import itertools
import math

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.common.spatial import magic_pairs
from baracuda_dsl.dtypes import dtype as as_dtype
from baracuda_dsl.ops.image.interpolate import (InterpolateArgs, InterpolateBackwardArgs,
                                                InterpolateBackwardPlan, InterpolateDescriptor,
                                                InterpolatePlan, interpolate_dense_strides,
                                                interpolate_output_size)
from baracuda_dsl.ops.image.specs import interpolate as spec
from baracuda_dsl.tensor import TensorView

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)
MODE_RANK = {"nearest": (1, 2, 3), "nearest-exact": (1, 2, 3), "area": (1, 2, 3), "linear": (1,),
             "bilinear": (2,), "bicubic": (2,), "trilinear": (3,)}


# --------------------------------------------------------------- numpy mirror of the kernels
def _dim_taps(desc, k, o):
    """[(input index, weight)] of output ``o`` along spatial dim ``k`` — the kernels' per-dim
    math (interp_common) in their precision: float32 (float64 for f64; nearest's map always
    float32)."""
    n, m = desc.shape[2 + k], desc.out_spatial[k]
    F = np.float64 if desc.dtype is bd.float64 else np.float32
    s = F(desc.kernel_scales()[k])
    g, mode = desc.group, desc.mode
    if g == "nearest":
        s32 = np.float32(s)
        p = (np.float32(o) + np.float32(0.5)) * s32 if mode == "nearest-exact" \
            else np.float32(o) * s32
        return [(min(int(p), n - 1), 1.0)]
    if g == "area":
        st, en = (o * n) // m, -(-((o + 1) * n) // m)
        return [(z, 1.0 / (en - st)) for z in range(st, en)]
    if g == "linear":
        raw = s * F(o) if desc.align_corners else s * (F(o) + F(0.5)) - F(0.5)
        if mode != "bicubic":
            src = max(raw, F(0.0))
            x0 = int(math.floor(src))
            t = src - F(x0)
            return [(x0, F(1.0) - t), (x0 + 1, t)] if x0 < n - 1 else [(x0, 1.0)]
        if n == 1:
            return [(0, 1.0)]
        x0 = int(math.floor(raw))
        t = raw - F(x0)
        a = F(-0.75)
        cc1 = lambda x: ((a + 2) * x - (a + 3)) * x * x + 1           # noqa: E731
        cc2 = lambda x: ((a * x - 5 * a) * x + 8 * a) * x - 4 * a     # noqa: E731
        ws = [cc2(t + 1), cc1(t), cc1(1 - t), cc2(2 - t)]
        return [(min(max(x0 - 1 + j, 0), n - 1), ws[j]) for j in range(4)]
    size = F(4.0) if mode == "bicubic" else F(2.0)
    support = size * F(0.5) * s if s >= 1 else size * F(0.5)
    center = s * (F(o) + F(0.5))
    xmin = max(int(center - support + F(0.5)), 0)
    xsize = min(int(center + support + F(0.5)), n) - xmin
    inv = F(1.0) / s if s >= 1 else F(1.0)

    def filt(x):
        x = abs(x)
        if mode == "bilinear":
            return F(1) - x if x < 1 else F(0.0)
        a = F(-0.5)
        if x < 1:
            return ((a + F(2)) * x - (a + F(3))) * x * x + F(1)
        return (((x - F(5)) * x + F(8)) * x - F(4)) * a if x < 2 else F(0.0)

    ws = [filt((F(j) + (F(xmin) - center) + F(0.5)) * inv) for j in range(xsize)]
    tot = F(0.0)
    for w in ws:
        tot = tot + w
    return [(xmin + j, w / tot if tot != 0 else w) for j, w in enumerate(ws)]


def _matrix(desc, k):
    """The (O, I) weight matrix of spatial dim ``k``."""
    n, m = desc.shape[2 + k], desc.out_spatial[k]
    a = np.zeros((m, n))
    for o in range(m):
        for z, w in _dim_taps(desc, k, o):
            a[o, z] += w
    return a


def _forward(desc, x):
    y = x
    for k in range(desc.spatial):
        y = np.moveaxis(np.tensordot(_matrix(desc, k), np.moveaxis(y, 2 + k, 0), axes=1), 0, 2 + k)
    return y


def _candidates(desc, k, i):
    """The backward kernel's candidate outputs of input ``i`` along dim ``k`` (out_range)."""
    rs, lo, hi, mg = desc.backward_ranges()[k]
    m = desc.out_spatial[k]
    a = min(max((i + lo) * rs, -1.0), m + 1.0)
    b = min(max((i + hi) * rs, -1.0), m + 1.0)
    first = max(math.floor(a) - mg, 0)
    last = min(math.floor(b) + 1 + mg, m)
    return range(first, max(last, first))


def _backward(desc, dy):
    """The gather backward: per dim, dx gets W(o, i) of every candidate o."""
    dx = dy
    for k in range(desc.spatial):
        a = _matrix(desc, k)
        g = np.zeros(a.T.shape)
        for i in range(desc.shape[2 + k]):
            for o in _candidates(desc, k, i):
                g[i, o] = a[o, i]
        dx = np.moveaxis(np.tensordot(g, np.moveaxis(dx, 2 + k, 0), axes=1), 0, 2 + k)
    return dx


def _desc(shape, mode, **kw):
    return InterpolateDescriptor(shape, mode=mode, dtype=kw.pop("dtype", "f64"), **kw)


# --------------------------------------------------------------------------- torch values
def test_known_torch_values():
    x = np.array([[[1.0, 2.0]]])
    f = lambda **kw: _forward(_desc((1, 1, 2), **kw), x)[0, 0].tolist()  # noqa: E731
    assert f(mode="linear", scale_factor=2) == [1.0, 1.25, 1.75, 2.0]
    np.testing.assert_allclose(f(mode="linear", scale_factor=2, align_corners=True),
                               [1.0, 4 / 3, 5 / 3, 2.0])
    assert f(mode="nearest", size=3) == [1.0, 1.0, 2.0]
    x3 = np.array([[[1.0, 2.0, 3.0]]])
    assert _forward(_desc((1, 1, 3), "nearest", size=5), x3)[0, 0].tolist() == [1, 1, 2, 2, 3]
    assert _forward(_desc((1, 1, 3), "nearest-exact", size=5), x3)[0, 0].tolist() == \
        [1, 1, 2, 3, 3]
    x5 = np.arange(1.0, 6.0).reshape(1, 1, 5)
    assert _forward(_desc((1, 1, 5), "area", size=3), x5)[0, 0].tolist() == [1.5, 3.0, 4.5]
    assert _forward(_desc((1, 1, 5), "nearest", scale_factor=0.5), x5)[0, 0].tolist() == [1, 3]
    # bicubic, 2x upsampling of a ramp 0..3 (align_corners=False), worked by hand from torch's
    # formula: output 0 has src -0.25, taps (-2, -1, 0, 1) clamped to (0, 0, 0, 1), t = 0.75, so
    # y0 = cc2(1.25) = ((-0.75·1.25 + 3.75)·1.25 − 6)·1.25 + 3 = −0.10546875; odd symmetry
    r = np.arange(4.0).reshape(1, 1, 1, 4)
    y = _forward(_desc((1, 1, 1, 4), "bicubic", scale_factor=(1, 2)), r)[0, 0, 0]
    assert y[0] == -0.10546875
    np.testing.assert_allclose(y + y[::-1], 3.0, atol=1e-12)
    np.testing.assert_allclose(y[2:6], [0.66796875, 1.296875, 1.703125, 2.33203125], atol=1e-12)
    # antialias: a 2x bilinear downsample is the [1/4, 1/2, 1/4]-ish triangle over 4 taps,
    # normalised; an integer ramp stays a ramp in the interior
    r = np.arange(8.0).reshape(1, 1, 1, 8)
    y = _forward(_desc((1, 1, 1, 8), "bilinear", size=(1, 4), antialias=True), r)[0, 0, 0]
    np.testing.assert_allclose(y[1:3], [2.5, 4.5], atol=1e-12)
    t = _dim_taps(_desc((1, 1, 1, 8), "bilinear", size=(1, 4), antialias=True), 1, 1)
    np.testing.assert_allclose([w for _, w in t], [1 / 8, 3 / 8, 3 / 8, 1 / 8])
    assert [z for z, _ in t] == [1, 2, 3, 4]


def test_weights_partition_unity():
    rng = np.random.default_rng(1)
    for mode, ranks in MODE_RANK.items():
        for aa in ([False, True] if mode in ("bilinear", "bicubic") else [False]):
            for _ in range(30):
                k = int(rng.choice(ranks))
                sp = tuple(int(v) for v in rng.integers(1, 12, k))
                out = tuple(int(v) for v in rng.integers(1, 14, k))
                ac = None if mode in ("nearest", "nearest-exact", "area") else bool(
                    rng.integers(0, 2))
                d = _desc((1, 1) + sp, mode, size=out, align_corners=ac, antialias=aa)
                for j in range(k):
                    np.testing.assert_allclose(_matrix(d, j).sum(1), 1.0, rtol=1e-12,
                                               err_msg=str(d))


def _random_descs(rng, count):
    for _ in range(count):
        mode = str(rng.choice(list(MODE_RANK)))
        k = int(rng.choice(MODE_RANK[mode]))
        aa = mode in ("bilinear", "bicubic") and bool(rng.integers(0, 2))
        sp = tuple(int(v) for v in rng.integers(1, 13, k))
        ac = None if mode in ("nearest", "nearest-exact", "area") else bool(rng.integers(0, 2))
        if rng.integers(0, 2):
            kw = dict(size=tuple(int(v) for v in rng.integers(1, 17, k)))
        else:
            sf = tuple(float(rng.choice([0.3, 0.5, 0.7, 1.0, 1.3, 1.7, 2.0, 2.5, 3.0, 4.0]))
                       for _ in range(k))
            if any(math.floor(n * f) < 1 for n, f in zip(sp, sf)):
                continue
            kw = dict(scale_factor=sf, recompute_scale_factor=bool(rng.integers(0, 2)))
        for dt in ("f64", "f32"):
            yield _desc((2, 1) + sp, mode, align_corners=ac, antialias=aa, dtype=dt, **kw)


def test_backward_candidates_cover_every_tap():
    rng = np.random.default_rng(2)
    for d in _random_descs(rng, 300):
        for k in range(d.spatial):
            a = _matrix(d, k)
            for i in range(d.shape[2 + k]):
                cand = set(_candidates(d, k, i))
                reach = {o for o in range(a.shape[0]) if a[o, i] != 0}
                assert reach <= cand, (str(d), k, i, sorted(reach - cand))


def test_backward_is_adjoint():
    rng = np.random.default_rng(3)
    for d in _random_descs(rng, 60):
        x = rng.standard_normal(d.shape)
        dy = rng.standard_normal(d.out_shape)
        dx = _backward(d, dy)
        np.testing.assert_allclose(np.vdot(_forward(d, x), dy), np.vdot(x, dx), rtol=1e-10,
                                   atol=1e-10, err_msg=str(d))


def test_large_extents_ranges():
    """Rounding margins: big extents and extreme ratios still cover every tap."""
    for n, m, mode in [(5000, 7919, "nearest"), (7919, 5000, "nearest-exact"),
                       (3, 4001, "linear"), (4001, 3, "linear"), (1, 999, "linear"),
                       (999, 1, "area"), (1000, 37, "area")]:
        for ac in ((None,) if mode in ("nearest", "nearest-exact", "area") else (False, True)):
            for dt in ("f32", "f64"):
                d = _desc((1, 1, n), mode, size=m, align_corners=ac, dtype=dt)
                a = _matrix(d, 0)
                for i in sorted({0, 1, n // 2, n - 2, n - 1} & set(range(n))):
                    cand = set(_candidates(d, 0, i))
                    assert {o for o in range(m) if a[o, i] != 0} <= cand, (str(d), i)


# --------------------------------------------------------------------------- validation
def test_output_size_and_scales():
    assert interpolate_output_size((5, 7), None, 1.5) == (7, 10)
    assert interpolate_output_size((5, 7), (3, 4)) == (3, 4)
    assert interpolate_output_size((10,), None, (0.29,)) == (2,)
    d = InterpolateDescriptor((2, 3, 5, 7), scale_factor=1.5, mode="bilinear")
    assert d.out_shape == (2, 3, 7, 10) and d.coord_scales == (1.5, 1.5)
    assert d.kernel_scales() == (float(np.float32(1 / 1.5)),) * 2          # f32 accscalar
    d = InterpolateDescriptor((2, 3, 5, 7), scale_factor=1.5, mode="bilinear", dtype="f64")
    assert d.kernel_scales() == (1 / 1.5, 1 / 1.5)
    d = InterpolateDescriptor((2, 3, 5, 7), scale_factor=1.5, mode="bilinear",
                              recompute_scale_factor=True, dtype="f64")
    assert d.coord_scales == (None, None) and d.kernel_scales() == (5 / 7, 7 / 10)
    d = InterpolateDescriptor((2, 3, 5, 7), size=(1, 8), mode="bilinear", align_corners=True,
                              dtype="f64")
    assert d.kernel_scales() == (0.0, 6 / 7) and d.align_corners is True
    d = InterpolateDescriptor((1, 1, 4), size=6, mode="nearest", dtype="f64")
    assert d.kernel_scales() == (float(np.float32(4) / np.float32(6)),)   # float32 always
    assert InterpolateDescriptor((1, 1, 4), size=6).align_corners is False
    assert InterpolateDescriptor((1, 1, 4, 4), size=2, mode="area").group == "area"
    assert InterpolateDescriptor((1, 1, 4, 4), size=2, mode="bicubic", antialias=True).group \
        == "aa"
    assert InterpolateDescriptor((0, 3, 4), size=2).out_shape == (0, 3, 2)
    # equal sizes: torch's CUDA kernels copy, whatever the scale factor
    x = np.random.default_rng(0).standard_normal((1, 2, 9, 11))
    for mode, aa in (("nearest", False), ("bilinear", False), ("bicubic", False),
                     ("bicubic", True), ("nearest-exact", False)):
        d = InterpolateDescriptor(x.shape, scale_factor=1.05, mode=mode, antialias=aa,
                                  dtype="f64")
        assert d.out_shape == x.shape and d.kernel_scales() == (1.0, 1.0)
        np.testing.assert_allclose(_forward(d, x), x, rtol=0, atol=1e-15, err_msg=mode)


@pytest.mark.parametrize("kw, err", [
    (dict(shape=(1, 1, 4)), bd.InvalidProblemError),                         # neither
    (dict(shape=(1, 1, 4), size=2, scale_factor=2.0), bd.InvalidProblemError),   # both
    (dict(shape=(1, 1, 4), size=(2, 2)), bd.InvalidProblemError),            # rank
    (dict(shape=(1, 1, 4), size=0), bd.InvalidProblemError),
    (dict(shape=(1, 1, 4), size=2.5), bd.InvalidProblemError),
    (dict(shape=(1, 1, 4), scale_factor=0.1), bd.InvalidProblemError),        # output 0
    (dict(shape=(1, 1, 4), scale_factor=-2.0), bd.InvalidProblemError),
    (dict(shape=(1, 1, 4), scale_factor=float("inf")), bd.InvalidProblemError),
    (dict(shape=(1, 1, 4), size=2, recompute_scale_factor=True), bd.InvalidProblemError),
    (dict(shape=(1, 1, 4), size=2, align_corners=True), bd.InvalidProblemError),  # nearest
    (dict(shape=(1, 1, 4), size=2, mode="area", align_corners=False), bd.InvalidProblemError),
    (dict(shape=(1, 1, 4), size=2, mode="cubic"), bd.InvalidProblemError),
    (dict(shape=(1, 1, 4), size=2, mode="bilinear"), bd.UnsupportedError),
    (dict(shape=(1, 1, 4, 4), size=2, mode="trilinear"), bd.UnsupportedError),
    (dict(shape=(1, 1, 4, 4, 4), size=2, mode="bicubic"), bd.UnsupportedError),
    (dict(shape=(1, 1, 4, 4), size=2, mode="nearest", antialias=True), bd.UnsupportedError),
    (dict(shape=(1, 1, 4), size=2, mode="linear", antialias=True), bd.UnsupportedError),
    (dict(shape=(1, 1), size=2), bd.InvalidProblemError),
    (dict(shape=(1, 1, 0), size=2), bd.InvalidProblemError),
    (dict(shape=(1, 1, 2, 2, 2, 2), size=2), bd.InvalidProblemError),
    (dict(shape=(1, 1, 4), size=2, dtype="int32"), bd.UnsupportedError),
    (dict(shape=(1, 1, 4), size=2, layout="NDHWC"), bd.InvalidProblemError),
])
def test_descriptor_errors(kw, err):
    with pytest.raises(err):
        InterpolateDescriptor(**kw)


# --------------------------------------------------------------------------- plans / SKUs
def test_plan_skus():
    for plan, desc, name, tmpl, group in [
            (InterpolatePlan, _desc((2, 3, 7, 9), "bilinear", size=4, dtype="bf16"),
             "interpolate_bilinear", "interp_fw_runs", "linear"),        # 4 outputs: runs
            (InterpolatePlan, _desc((2, 3, 7, 9), "bilinear", size=3, dtype="bf16"),
             "interpolate_bilinear", "interp_fw", "linear"),             # 3: one per thread
            (InterpolatePlan, _desc((2, 3, 7, 9), "bicubic", size=5),
             "interpolate_bicubic", "interp_fw_runs", "cubic"),
            (InterpolatePlan, _desc((2, 3, 7, 9), "nearest-exact", size=(2, 9)),
             "interpolate_nearest_exact", "interp_fw_runs", "nearest"),
            (InterpolateBackwardPlan, _desc((2, 3, 7), "nearest-exact", scale_factor=2.0),
             "interpolate_nearest_exact_backward", "interp_bw", "nearest"),
            (InterpolatePlan, _desc((2, 3, 7, 9), "bicubic", size=3, antialias=True,
                                    dtype="f16", layout="NHWC"),
             "interpolate_bicubic_aa", "interp_fw", "aa"),
            (InterpolateBackwardPlan, _desc((1, 2, 3, 4, 5), "area", size=2, dtype="f32"),
             "interpolate_area_backward", "pool_bw", None)]:           # adaptive avg pooling
        p = plan.select(desc, PREF)
        sku = p.sku()
        assert sku.category is bd.OpCategory.IMAGE and sku.op == name and sku.template == tmpl
        if group is None:
            assert dict(sku.knobs) == {"dtype": desc.dtype.short, "op": "avg"}
        else:
            assert dict(sku.knobs) == {"dtype": desc.dtype.short, "group": group}
        pg = p.precision_guarantee()
        assert pg.deterministic and pg.bit_stable_on_same_hardware
        assert pg.accumulator == (bd.float64 if desc.dtype is bd.float64 else bd.float32)
        assert p.workspace_size() == 0 and sku.layout == desc.layout
    assert InterpolatePlan.select(_desc((0, 3, 4), "linear", size=9), PREF).is_empty()
    assert InterpolateBackwardPlan.select(_desc((2, 0, 4), "linear", size=9), PREF).is_empty()


def test_scatter_backward_launches(launches):
    """InterpolateTuning(deterministic=False): zero the accumulator, scatter, cast (half types,
    through an f32 workspace); area / antialias keep the gather."""
    from baracuda_dsl import PlanPreference
    from baracuda_dsl.ops.image.interpolate import InterpolateTuning
    from baracuda_dsl.ops.image.specs import sampling as sspec

    pref = PlanPreference(arch=PREF.arch, tuning=InterpolateTuning(deterministic=False))
    for dt, n_launch in (("bf16", 3), ("f32", 2)):
        d = _desc((2, 3, 7, 9), "bilinear", size=(14, 18), dtype=dt)
        plan = InterpolateBackwardPlan.select(d, pref)
        pg = plan.precision_guarantee()
        assert plan.sku().template == "interp_bw_scatter" and not pg.deterministic
        numel = int(np.prod(d.shape))
        assert plan.workspace_size() == (0 if dt == "f32" else -(-4 * numel // 256) * 256)
        dy = _tv(0x20000, d.out_shape, interpolate_dense_strides(d.out_shape, "NCHW"), dt)
        dx = _tv(0x30000, d.shape, interpolate_dense_strides(d.shape, "NCHW"), dt)
        ws = bd.Workspace(0x900000, plan.workspace_size()) if plan.workspace_size() else None
        before = len(launches)
        plan.run(InterpolateBackwardArgs(dy, dx), workspace=ws)
        got = launches[before:]
        assert [g[0] for g in got] == ([sspec.GRID_SAMPLE_ACC.name, "interp_bw_scatter"]
                                       + ([sspec.GRID_SAMPLE_ACC.name] if dt == "bf16" else []))
        assert len(got) == n_launch
        acc = 0x900000 if dt == "bf16" else 0x30000
        assert got[0][3][0] == acc and got[0][3][-1] == 0           # zero the accumulator
        assert got[1][3][:2] == [0x20000, acc]
        assert got[1][3][2] == 2 * 3 * 14 * -(-18 // spec.RUN)       # runs along the last dim
        if dt == "bf16":
            assert got[2][3][:2] == [0x900000, 0x30000] and got[2][3][-1] == 1      # cast
    area = _desc((2, 3, 8, 8), "area", size=4)            # adaptive avg pooling's gather
    assert InterpolateBackwardPlan.select(area, pref).sku().template == "pool_bw"


def test_area_runs_adaptive_avg_pooling(launches):
    """mode="area" is adaptive average pooling: the pooling family's kernels run it."""
    d = _desc((2, 3, 9, 12), "area", size=(4, 8), dtype="bf16", layout="NHWC")
    y = _tv(0x80000, d.out_shape, interpolate_dense_strides(d.out_shape, "NHWC"), "bf16")
    x = _tv(0x10000, d.shape, (324, 1, 36, 3), "bf16")
    InterpolatePlan.select(d, PREF).run(InterpolateArgs(x, y))
    name, knobs, _, args, _ = launches[-1]
    assert name == "pool_fw_runs" and knobs["op"] == "avg"
    assert args[:2] == [0x10000, 0x80000] and args[4:12] == [2, 3, 1, 9, 12, 1, 4, 8]
    InterpolateBackwardPlan.select(d, PREF).run(InterpolateBackwardArgs(y, _tv(
        0x10000, d.shape, interpolate_dense_strides(d.shape, "NHWC"), "bf16")))
    assert launches[-1][0] == "pool_bw"


def test_runs_fall_back_for_wide_operands(launches):
    """interp_fw_runs needs Int32 offsets: a view reaching 2^31 elements runs interp_fw."""
    d = _desc((2, 3, 7, 9), "bilinear", size=(5, 8), dtype="f32")
    plan = InterpolatePlan.select(d, PREF)
    y = _tv(0x80000, d.out_shape, interpolate_dense_strides(d.out_shape, "NCHW"), "f32")
    plan.run(InterpolateArgs(_tv(0x10000, d.shape, (189, 63, 9, 1), "f32"), y))
    assert launches[-1][0] == "interp_fw_runs"
    plan.run(InterpolateArgs(_tv(0x10000, d.shape, (2**31, 63, 9, 1), "f32"), y))
    name, _, _, args, _ = launches[-1]
    assert name == "interp_fw" and args[2] == int(np.prod(d.out_shape))


def test_sku_space():
    for t in (spec.INTERP_FW_RUNS, spec.INTERP_BW_SCATTER):
        runs = list(t.space())
        assert len(runs) == 12 and {k.group for k in runs} == set(spec.RUNS_TAPS)
    for t in (spec.INTERP_FW, spec.INTERP_BW):
        ks = list(t.space())
        assert len(ks) == len(set(ks)) == 12           # area runs adaptive average pooling
        assert {k.dtype for k in ks} == {"f32", "f16", "bf16", "f64"}
        assert {k.group for k in ks} == set(spec.GROUPS)
    assert len(spec.INTERP_FW.params) == 3 + sum(s for _, s in spec.FW_GROUPS)
    assert len(spec.INTERP_BW.params) == 3 + sum(s for _, s in spec.BW_GROUPS)


def test_dense_strides():
    assert interpolate_dense_strides((2, 3, 4, 5), "NCHW") == (60, 20, 5, 1)
    assert interpolate_dense_strides((2, 3, 4, 5), "NHWC") == (60, 1, 15, 3)
    assert interpolate_dense_strides((2, 3, 7), "NHWC") == (21, 1, 3)


def _tv(ptr, shape, strides, dt):
    return TensorView(ptr, shape, strides, as_dtype(dt), device=0)


def test_launch_arguments(launches):
    d = _desc((2, 3, 7, 9), "bicubic", size=(5, 13), align_corners=True, dtype="f32")
    out = d.out_shape
    x = _tv(0x10000, d.shape, (500, 100, 10, 1), "f32")                 # strided input
    y = _tv(0x80000, out, interpolate_dense_strides(out, "NCHW"), "f32")
    InterpolatePlan.select(d, PREF).run(InterpolateArgs(x, y))
    name, knobs, grid, args, _ = launches[-1]
    og = -(-out[3] // spec.RUN)                      # runs of RUN outputs along the last dim
    n = int(np.prod(out[:3])) * og
    assert name == "interp_fw_runs" and knobs == {"dtype": "f32", "group": "cubic"}
    assert grid == ((n + 255) // 256, 1, 1)
    assert len(args) == 3 + sum(s for _, s in spec.FW_GROUPS)
    assert args[:3] == [0x10000, 0x80000, n]
    assert args[3:11] == [2, 3, 1, 7, 9, 1, 5, 13]
    assert args[11:16] == [500, 100, 0, 10, 1]
    assert args[16:21] == [195, 65, 0, 13, 1]
    assert args[21:24] == [1.0, float(np.float32(6) / np.float32(4)),
                           float(np.float32(8) / np.float32(12))]
    assert args[24:27] == [1, 1, 0]                                      # bicubic, align, NCHW
    # dv: magic pairs of C and the decomposed extents (the runs along w), narrow flag
    assert args[27:] == list(magic_pairs(3, 1, 5, og)) + [1]
    # backward, 1-D nearest-exact, NHWC dx: the range tail (rs, lo, hi, margins)
    b = _desc((2, 3, 8), "nearest-exact", scale_factor=2.0, layout="NHWC", dtype="bf16")
    dy = _tv(0x20000, b.out_shape, (1, 2, 100), "bf16")
    dx = _tv(0x30000, b.shape, interpolate_dense_strides(b.shape, "NHWC"), "bf16")
    InterpolateBackwardPlan.select(b, PREF).run(InterpolateBackwardArgs(dy, dx))
    name, knobs, grid, args, _ = launches[-1]
    assert name == "interp_bw" and knobs == {"dtype": "bf16", "group": "nearest"}
    assert len(args) == 3 + sum(s for _, s in spec.BW_GROUPS)
    assert args[:3] == [0x20000, 0x30000, 48] and args[3:11] == [2, 3, 1, 1, 8, 1, 1, 16]
    assert args[11:16] == [1, 2, 0, 0, 100] and args[16:21] == [24, 1, 0, 0, 3]
    assert args[21:24] == [1.0, 1.0, 0.5] and args[24:27] == [1, 0, 1]
    rs, lo, hi, mg = args[27:30], args[30:33], args[33:36], args[36:39]
    assert rs == [0.0, 0.0, 2.0] and lo == [0.0, 0.0, -0.25] and hi == [1.0, 1.0, 0.75]
    assert mg == [0, 0, 2]                                 # 1 + a rounding cover of 1
    assert args[39:] == list(magic_pairs(3, 1, 1, 8)) + [1]     # dv over the input extents
    # operand errors
    plan = InterpolatePlan.select(d, PREF)
    with pytest.raises(bd.UnsupportedError):                   # y not dense
        plan.run(InterpolateArgs(x, _tv(0x80000, out, (500, 100, 20, 1), "f32")))
    with pytest.raises(bd.InvalidProblemError):                # wrong y shape
        plan.run(InterpolateArgs(x, _tv(0x80000, d.shape, (189, 63, 9, 1), "f32")))
    with pytest.raises(bd.UnsupportedError):                   # wrong dtype
        plan.run(InterpolateArgs(_tv(0x10000, d.shape, (500, 100, 10, 1), "f16"), y))
    # empty batch: nothing launched
    before = len(launches)
    e = _desc((0, 3, 4, 4), "bilinear", size=8)
    InterpolatePlan.select(e, PREF).run(InterpolateArgs(
        _tv(0x10000, e.shape, (48, 16, 4, 1), "f64"),
        _tv(0x80000, e.out_shape, interpolate_dense_strides(e.out_shape, "NCHW"), "f64")))
    assert len(launches) == before


# ------------------------------------------------------------------------------- compile
@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for name, knobs in [("interp_fw", dict(dtype="bf16", group="aa")),
                        ("interp_bw", dict(dtype="f32", group="linear"))]:
        cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=300)
        assert len(cubin) > 1000 and meta["threads"] == spec.THREADS


def test_every_torch_mode_rank_accepted():
    """Every (mode, spatial rank, align_corners) torch supports is accepted."""
    for mode, ranks in MODE_RANK.items():
        for k, ac in itertools.product(ranks, (None, True)):
            if ac and mode in ("nearest", "nearest-exact", "area"):
                continue
            InterpolateDescriptor((1, 1) + (3,) * k, size=2, mode=mode, align_corners=ac)
