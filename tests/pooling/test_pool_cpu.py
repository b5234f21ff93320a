"""Pooling plans without a GPU: descriptor validation and torch's output-size formulas (ceil_mode
edge cases included), the SKU space, the exact launch arguments (recorded), the kernels' window
and gather index math emulated in numpy against brute-force references (forward and the
scatter-add form of the backward), and a cross-compile sample of both templates for sm80 / sm89 /
sm90a."""

import itertools

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.ops.pooling.pool import (AdaptivePoolBackwardPlan, AdaptivePoolDescriptor,
                                           AdaptivePoolPlan, PoolArgs, PoolBackwardArgs,
                                           PoolBackwardPlan, PoolDescriptor, PoolPlan,
                                           adaptive_pool_windows, pool_dense_strides,
                                           pool_output_size)
from baracuda_dsl.common.spatial import fast_divisor
from baracuda_dsl.ops.pooling.specs import pool as spec
from baracuda_dsl.dtypes import dtype as as_dtype
from baracuda_dsl.tensor import TensorView

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


# --------------------------------------------------------------------------- output sizes
@pytest.mark.parametrize("n,k,s,p,d,ceil,want", [
    (5, 2, 2, 0, 1, False, 2), (5, 2, 2, 0, 1, True, 3),       # ceil keeps a partial window
    (5, 3, 3, 1, 1, True, 2),      # the 3rd window would start in the right padding: dropped
    (6, 3, 2, 0, 1, True, 3), (6, 3, 2, 0, 1, False, 2),
    (7, 3, 2, 1, 1, True, 4), (9, 3, 2, 1, 1, True, 5), (4, 2, 2, 1, 1, True, 3),
    (10, 3, 1, 1, 2, False, 8), (10, 3, 3, 0, 3, True, 2), (1, 1, 1, 0, 1, False, 1),
    (1, 3, 1, 1, 1, True, 1), (3, 3, 5, 1, 1, True, 1),
])
def test_output_size(n, k, s, p, d, ceil, want):
    assert pool_output_size(n, k, s, p, d, ceil) == want


def test_output_size_matches_window_rule():
    """Brute force of torch's rules: windows start every s from -p; without ceil_mode the whole
    dilated window fits in the padded input; with ceil_mode a window may run up to s − 1 past
    it, but must start inside the input or the left padding (start < n)."""
    for n, k, s, d in itertools.product(range(1, 9), range(1, 5), range(1, 4), range(1, 3)):
        for p in range(0, k // 2 + 1):
            span = d * (k - 1) + 1
            floor_cnt = sum(1 for o in range(100) if o * s - p + span <= n + p)
            ceil_cnt = sum(1 for o in range(100)
                           if o * s - p + span <= n + p + s - 1 and o * s - p < n)
            if floor_cnt >= 1:
                assert pool_output_size(n, k, s, p, d, False) == floor_cnt, (n, k, s, p, d)
                assert pool_output_size(n, k, s, p, d, True) == ceil_cnt, (n, k, s, p, d)
            else:
                assert pool_output_size(n, k, s, p, d, False) <= 0


# --------------------------------------------------------------------------- validation
def test_descriptor_validation():
    d = PoolDescriptor(2, (2, 3, 7, 9), 3, 2, 1, ceil_mode=True)
    assert d.out_shape == (2, 3, 4, 5) and d.kernel_size == (3, 3) and d.stride == (2, 2)
    assert PoolDescriptor(1, (2, 3, 8), 2).stride == (2,)                  # stride None = kernel
    assert PoolDescriptor(1, (2, 3, 8), 2, []).stride == (2,)              # torch's empty stride
    assert PoolDescriptor(3, (1, 1, 4, 5, 6), (1, 2, 3), 1).out_shape == (1, 1, 4, 4, 4)
    assert PoolDescriptor(2, (0, 3, 4, 4), 2).out_shape == (0, 3, 2, 2)     # empty batch
    bad = [dict(spatial=4, shape=(1, 1, 2, 2, 2, 2), kernel_size=1),
           dict(spatial=2, shape=(1, 1, 4), kernel_size=1),                 # rank mismatch
           dict(spatial=2, shape=(1, 1, 0, 4), kernel_size=1),              # empty spatial dim
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=0),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2, stride=0),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2, stride=2.0),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2, padding=2),   # > kernel // 2
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2, padding=-1),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2, dilation=0),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=(2, 2, 2)),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2.0),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=True),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=5),              # output too small
           dict(spatial=1, shape=(1, 1, 4), kernel_size=3, dilation=2),     # 4 - 5 + 1 = 0
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2, op="sum"),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2, op="avg", dilation=2),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2, op="avg", divisor_override=0),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2, op="avg", divisor_override=1.5),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2, op="max", divisor_override=2),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2, layout="NCWH")]
    for kw in bad:
        with pytest.raises(bd.InvalidProblemError):
            PoolDescriptor(**kw)
    for dt in ("int32", "complex64", "float8_e4m3"):
        with pytest.raises(bd.UnsupportedError):
            PoolDescriptor(2, (1, 1, 4, 4), 2, dtype=dt)
    a = AdaptivePoolDescriptor(3, (2, 3, 7, 9, 4), (3, None, 2), "max", layout="NHWC")
    assert a.out_shape == (2, 3, 3, 9, 2)
    assert AdaptivePoolDescriptor(2, (1, 2, 5, 5), 1).out_shape == (1, 2, 1, 1)
    assert AdaptivePoolDescriptor(1, (1, 2, 5), [7]).out_shape == (1, 2, 7)
    assert AdaptivePoolDescriptor(2, (1, 2, 5, 5), (0, 3)).out_shape == (1, 2, 0, 3)
    for kw in [dict(output_size=-1), dict(output_size=(1, 2, 3)), dict(output_size="a"),
               dict(output_size=2, op="min"), dict(output_size=2, shape=(1, 1, 0, 3))]:
        args = dict(spatial=2, shape=(1, 2, 5, 5))
        args.update(kw)
        with pytest.raises(bd.InvalidProblemError):
            AdaptivePoolDescriptor(**args)
    with pytest.raises(bd.InvalidProblemError):
        PoolPlan.select(AdaptivePoolDescriptor(2, (1, 2, 5, 5), 2), PREF)
    with pytest.raises(bd.InvalidProblemError):
        AdaptivePoolPlan.select(PoolDescriptor(2, (1, 2, 5, 5), 2), PREF)


def test_plan_skus():
    for plan, desc, name, tmpl in [
            (PoolPlan, PoolDescriptor(2, (2, 3, 7, 9), 3, dtype="bf16"), "max_pool", "pool_fw"),
            (PoolBackwardPlan, PoolDescriptor(1, (2, 3, 7), 3, op="avg", dtype="f64"),
             "avg_pool_backward", "pool_bw"),
            (AdaptivePoolPlan, AdaptivePoolDescriptor(3, (1, 2, 3, 4, 5), 2, "max"),
             "adaptive_max_pool", "pool_fw"),
            (AdaptivePoolBackwardPlan, AdaptivePoolDescriptor(2, (1, 2, 3, 4), 2, "avg",
                                                              dtype="f16", layout="NHWC"),
             "adaptive_avg_pool_backward", "pool_bw")]:
        p = plan.select(desc, PREF)
        sku = p.sku()
        assert sku.category is bd.OpCategory.POOLING and sku.op == name and sku.template == tmpl
        assert dict(sku.knobs) == {"dtype": desc.dtype.short, "op": desc.op}
        pg = p.precision_guarantee()
        assert pg.deterministic and pg.bit_stable_on_same_hardware
        assert pg.accumulator == (bd.float64 if desc.dtype is bd.float64 else bd.float32)
        assert p.workspace_size() == 0
        assert sku.layout == desc.layout
    assert PoolPlan.select(PoolDescriptor(2, (0, 3, 4, 4), 2), PREF).is_empty()
    assert PoolBackwardPlan.select(PoolDescriptor(2, (0, 3, 4, 4), 2), PREF).is_empty()
    assert AdaptivePoolPlan.select(AdaptivePoolDescriptor(2, (1, 3, 4, 4), (0, 2)), PREF).is_empty()
    # the backward of an empty adaptive output still writes dx (zeros)
    assert not AdaptivePoolBackwardPlan.select(AdaptivePoolDescriptor(2, (1, 3, 4, 4), (0, 2)),
                                               PREF).is_empty()


def test_sku_space():
    runs = list(spec.POOL_FW_RUNS.space())
    assert len(runs) == 8 and all(not k.wide and k.runs == spec.OUTPUTS_PER_THREAD for k in runs)
    for t in (spec.POOL_FW, spec.POOL_BW):
        ks = list(t.space())
        assert len(ks) == len(set(ks)) == 16
        assert {k.dtype for k in ks} == {"f32", "f16", "bf16", "f64"}
        assert {k.op for k in ks} == {"max", "avg"}
        assert {k.wide for k in ks} == {False, True}
    assert sum(1 for _ in spec.POOL_FW.params) == 4 + sum(spec.FW_GROUPS)
    assert sum(1 for _ in spec.POOL_BW.params) == 4 + sum(spec.BW_GROUPS)


def _magic(*ds):
    return tuple(v for d in ds for v in fast_divisor(d))


@pytest.mark.parametrize("d", [1, 2, 3, 7, 56, 112, 255, 1000, 65537, 2**20 + 3, 2**31 - 1])
def test_fast_divisor_exact(d):
    m, s = fast_divisor(d)
    assert m < 2**32 + 1
    rng = np.random.default_rng(d)
    nums = np.concatenate([rng.integers(0, 2**31, 4000), [0, 1, d - 1, d, d + 1, 2 * d - 1,
                                                          2**31 - 1, 2**31 - 2]])
    for a in nums.tolist():
        if a < 2**31:
            assert a * m < 2**63 and (a * m) >> s == a // d, (a, d)
    with pytest.raises(ValueError):
        fast_divisor(0)


def test_runs_template_for_long_rows(launches):
    """pool_fw_runs when the last output extent holds a run, else one output per thread."""
    x = _tv(0x10000, (2, 3, 9, 9), (243, 81, 9, 1), "f32")
    for size, name, n in ((2, "pool_fw_runs", 2 * 3 * 4 * 1), (3, "pool_fw", 2 * 3 * 3 * 3)):
        d = PoolDescriptor(2, (2, 3, 9, 9), size, op="avg", dtype="f32")
        out = d.out_shape
        y = _tv(0x80000, out, pool_dense_strides(out, "NCHW"), "f32")
        PoolPlan.select(d, PREF).run(PoolArgs(x, y))
        assert launches[-1][0] == name and launches[-1][3][3] == n
    ad = AdaptivePoolDescriptor(2, (2, 3, 9, 9), 1, "avg")
    y = _tv(0x80000, ad.out_shape, pool_dense_strides(ad.out_shape, "NCHW"), "f32")
    AdaptivePoolPlan.select(ad, PREF).run(PoolArgs(x, y))
    assert launches[-1][0] == "pool_fw" and launches[-1][3][3] == 6


def test_wide_sku_for_large_problems(launches):
    big = PoolDescriptor(2, (1, 1, 2**16, 2**15 + 2), 2, op="max", dtype="f32")
    assert dict(PoolPlan.select(big, PREF).sku().knobs)["wide"] is True
    small = PoolDescriptor(2, (1, 1, 8, 8), 2, op="max", dtype="f32")
    plan = PoolPlan.select(small, PREF)
    assert dict(plan.sku().knobs).get("wide", False) is False
    # a strided view reaching past 2^31 elements runs the wide SKU of the same template
    x = _tv(0x10000, small.shape, (64, 64, 2**29, 1), "f32")
    y = _tv(0x80000, small.out_shape, pool_dense_strides(small.out_shape, "NCHW"), "f32")
    plan.run(PoolArgs(x, y))
    assert launches[-1][1].get("wide") is True
    plan.run(PoolArgs(_tv(0x10000, small.shape, (64, 64, 8, 1), "f32"), y))
    assert launches[-1][1].get("wide", False) is False


def test_dense_strides():
    assert pool_dense_strides((2, 3, 4, 5), "NCHW") == (60, 20, 5, 1)
    assert pool_dense_strides((2, 3, 4, 5), "NHWC") == (60, 1, 15, 3)
    assert pool_dense_strides((2, 3, 4, 5, 6), "NHWC") == (360, 1, 90, 18, 3)
    assert pool_dense_strides((2, 3, 7), "NHWC") == (21, 1, 3)
    assert adaptive_pool_windows(5, 3) == [(0, 2), (1, 4), (3, 5)]
    assert adaptive_pool_windows(3, 5) == [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)]


# ----------------------------------------------------------------------- recorded launches
def _tv(ptr, shape, strides, dt):
    return TensorView(ptr, shape, strides, as_dtype(dt), device=0)


def test_launch_arguments(launches):
    d = PoolDescriptor(2, (2, 3, 7, 9), (3, 2), (2, 1), (1, 0), (1, 2), True, "max", dtype="f32")
    out = d.out_shape
    x = _tv(0x10000, d.shape, (500, 100, 10, 1), "f32")             # strided input
    y = _tv(0x80000, out, pool_dense_strides(out, "NCHW"), "f32")
    idx = _tv(0x90000, out, pool_dense_strides(out, "NCHW"), "int64")
    PoolPlan.select(d, PREF).run(PoolArgs(x, y, idx))
    name, knobs, grid, args, _ = launches[-1]
    # the last output extent (5) holds a run: pool_fw_runs (wide=False is the default)
    assert name == "pool_fw_runs" and knobs == {"dtype": "f32", "op": "max",
                                                "runs": spec.OUTPUTS_PER_THREAD}
    v = spec.OUTPUTS_PER_THREAD                      # outputs per thread along the last dim
    og = -(-out[3] // v)
    n = int(np.prod(out[:3])) * og
    assert grid == ((n + 255) // 256, 1, 1)
    assert len(args) == 4 + sum(spec.FW_GROUPS)
    assert args[:4] == [0x10000, 0x80000, 0x90000, n]
    assert args[4:12] == [2, 3, 1, 7, 9, 1, *out[2:]]
    assert args[12:24] == [1, 3, 2, 1, 2, 1, 0, 1, 0, 1, 1, 2]
    assert args[24:29] == [500, 100, 0, 10, 1]
    assert args[29:34] == [out[1] * out[2] * out[3], out[2] * out[3], 0, out[3], 1]
    assert args[34:39] == [0, 1, 0, 0, 1]
    # magic pairs: C, Od, Oh, the runs along Ow; then per dim dilation, output, stride, input
    assert args[39:47] == list(_magic(3, 1, out[2], og))
    assert args[47:] == list(_magic(1, 1, 1, 1, 1, out[2], 2, 7, 2, out[3], 1, 9))
    # no indices: want_idx 0; avg flags; NHWC output
    d2 = PoolDescriptor(1, (2, 3, 8), 3, 2, 1, op="avg", count_include_pad=False,
                        divisor_override=-5, dtype="bf16", layout="NHWC")
    y2 = _tv(0x80000, d2.out_shape, pool_dense_strides(d2.out_shape, "NHWC"), "bf16")
    PoolPlan.select(d2, PREF).run(PoolArgs(_tv(0x10000, d2.shape, (24, 8, 1), "bf16"), y2))
    args = launches[-1][3]
    assert args[34:39] == [0, 0, -5, 1, 0]
    with pytest.raises(bd.UnsupportedError):              # y not dense in the layout
        PoolPlan.select(d2, PREF).run(PoolArgs(_tv(0x10000, d2.shape, (24, 8, 1), "bf16"),
                                               _tv(0x80000, d2.out_shape, (12, 4, 1), "bf16")))
    with pytest.raises(bd.InvalidProblemError):           # avg writes no indices
        PoolPlan.select(d2, PREF).run(PoolArgs(_tv(0x10000, d2.shape, (24, 8, 1), "bf16"), y2,
                                               _tv(0x90000, d2.out_shape, y2.strides, "int64")))
    # backward: dy any strides, indices any strides, dx dense; max needs indices
    a = AdaptivePoolDescriptor(2, (2, 3, 5, 6), (2, 4), "max")
    dy = _tv(0x20000, a.out_shape, (1, 2, 100, 10), "f32")
    dx = _tv(0x30000, a.shape, pool_dense_strides(a.shape, "NCHW"), "f32")
    ix = _tv(0x40000, a.out_shape, (24, 8, 4, 1), "int64")
    plan = AdaptivePoolBackwardPlan.select(a, PREF)
    with pytest.raises(bd.InvalidProblemError):
        plan.run(PoolBackwardArgs(dy, dx))
    plan.run(PoolBackwardArgs(dy, dx, ix))
    name, knobs, grid, args, _ = launches[-1]
    assert name == "pool_bw" and len(args) == 4 + sum(spec.BW_GROUPS)
    assert args[:4] == [0x20000, 0x30000, 0x40000, 180]
    assert args[4:12] == [2, 3, 1, 5, 6, 1, 2, 4]
    assert args[12:24] == [1] * 6 + [0] * 3 + [1] * 3
    assert args[24:29] == [1, 2, 0, 100, 10] and args[29:34] == [24, 8, 0, 4, 1]
    assert args[34:39] == [90, 30, 0, 6, 1] and args[39:43] == [1, 1, 0, 0]


def test_host_arrays_rejected_before_launch():
    p = PoolPlan.select(PoolDescriptor(1, (1, 1, 4), 2), PREF)
    with pytest.raises(bd.DeviceMismatchError):
        p.run(PoolArgs(np.zeros((1, 1, 4), np.float32), np.zeros((1, 1, 2), np.float32)))
    with pytest.raises(bd.InvalidProblemError):
        p.run(PoolArgs(np.zeros((1, 1, 4), np.float32), np.zeros((1, 1, 3), np.float32)))


# ---------------------------------------------------------- kernel index math, emulated
def _fw_window(o, I, O, K, S, P, D, adaptive):
    """pool_common.fw_window on Python ints."""
    if adaptive:
        st, en = (o * I) // O, ((o + 1) * I + O - 1) // O
        return st, en - st, 1, en - st
    st0 = o * S - P
    en_full = st0 + (K - 1) * D + 1
    pool = min(en_full, I + P) - st0
    en = min(en_full, I)
    st = st0 + ((-st0 + D - 1) // D) * D if st0 < 0 else st0
    return st, ((en - st + D - 1) // D if en > st else 0), D, pool


def _bw_range(i, I, O, K, S, P, D, adaptive):
    """pool_common.bw_range on Python ints."""
    if adaptive:
        lo, hi = (i * O) // I, min(((i + 1) * O + I - 1) // I, O)
    else:
        a, span = i + P, (K - 1) * D + 1
        lo = 0 if a < span else (a - span) // S + 1
        hi = min(a // S + 1, O)
    return lo, max(hi - lo, 0)


def _avg_sizes(o, I, O, K, S, P, adaptive):
    if adaptive:
        st, en = (o * I) // O, ((o + 1) * I + O - 1) // O
        return en - st, en - st
    st0 = o * S - P
    en = min(st0 + K, I + P)
    return en - st0, min(en, I) - max(st0, 0)


def _geo(desc, adaptive):
    k = desc.spatial
    pad3 = lambda v, f: (f,) * (3 - k) + tuple(v)  # noqa: E731
    I, O = pad3(desc.shape[2:], 1), pad3(desc.out_spatial, 1)
    if adaptive:
        return I, O, (1,) * 3, (1,) * 3, (0,) * 3, (1,) * 3, 1, 0
    return (I, O, pad3(desc.kernel_size, 1), pad3(desc.stride, 1), pad3(desc.padding, 0),
            pad3(desc.dilation, 1), int(desc.count_include_pad), desc.divisor_override or 0)


def _emulate_fw(desc, x, adaptive):
    """The pool_fw kernel's loops on a (N, C, *sp) float64 array: (y, indices)."""
    I, O, K, S, P, D, cip, div = _geo(desc, adaptive)
    N, C = x.shape[:2]
    x3 = x.reshape(N, C, *I)
    y = np.zeros((N, C) + O)
    ix = np.zeros((N, C) + O, np.int64)
    for b, c, od, oh, ow in itertools.product(range(N), range(C), *(range(o) for o in O)):
        wins = [_fw_window(o, I[j], O[j], K[j], S[j], P[j], D[j], adaptive)
                for j, o in enumerate((od, oh, ow))]
        (fd, cd, td, qd), (fh, ch, th, qh), (fw, cw, tw, qw) = wins
        if desc.op == "max":
            m, mi = -np.inf, (fd * I[1] + fh) * I[2] + fw
            for a, bb, cc in itertools.product(range(cd), range(ch), range(cw)):
                zd, zh, zw = fd + a * td, fh + bb * th, fw + cc * tw
                v = x3[b, c, zd, zh, zw]
                if v > m or v != v:
                    m, mi = v, (zd * I[1] + zh) * I[2] + zw
            y[b, c, od, oh, ow], ix[b, c, od, oh, ow] = m, mi
        else:
            acc = sum(x3[b, c, fd + a, fh + bb, fw + cc] for a, bb, cc in
                      itertools.product(range(cd), range(ch), range(cw)))
            cnt = cd * ch * cw
            dv = div if div else (qd * qh * qw if cip else cnt)
            y[b, c, od, oh, ow] = 0.0 if cnt == 0 else acc / dv
    return y.reshape((N, C) + tuple(desc.out_spatial)), ix.reshape((N, C) + tuple(desc.out_spatial))


def _emulate_bw(desc, dy, ix, adaptive):
    """The pool_bw kernel's gather loops: dx."""
    I, O, K, S, P, D, cip, div = _geo(desc, adaptive)
    N, C = dy.shape[:2]
    dy3 = dy.reshape(N, C, *O)
    ix3 = ix.reshape(N, C, *O) if ix is not None else None
    dx = np.zeros((N, C) + I)
    for b, c, zd, zh, zw in itertools.product(range(N), range(C), *(range(i) for i in I)):
        rng = [_bw_range(z, I[j], O[j], K[j], S[j], P[j], D[j], adaptive)
               for j, z in enumerate((zd, zh, zw))]
        me = (zd * I[1] + zh) * I[2] + zw
        acc = 0.0
        for a, bb, cc in itertools.product(*(range(cn) for _, cn in rng)):
            o = (rng[0][0] + a, rng[1][0] + bb, rng[2][0] + cc)
            if desc.op == "max":
                if ix3[(b, c) + o] == me:
                    acc += dy3[(b, c) + o]
            else:
                q = [_avg_sizes(o[j], I[j], O[j], K[j], S[j], P[j], adaptive) for j in range(3)]
                dv = div if div else (np.prod([t[0] for t in q]) if cip else
                                      np.prod([t[1] for t in q]))
                acc += dy3[(b, c) + o] / dv
        dx[b, c, zd, zh, zw] = acc
    return dx.reshape(desc.shape)


def _windows(desc, adaptive):
    """Brute force: per output (spatial tuple), the in-input taps (spatial tuples, row-major
    order) and the avg divisor, straight from torch's definitions."""
    sp, out = desc.shape[2:], desc.out_spatial
    res = {}
    for o in itertools.product(*(range(m) for m in out)):
        taps, pool = [], 1
        for j, oj in enumerate(o):
            if adaptive:
                st, en = adaptive_pool_windows(sp[j], out[j])[oj]
                taps.append(list(range(st, en)))
                pool *= en - st
                continue
            k, s, p, d = desc.kernel_size[j], desc.stride[j], desc.padding[j], desc.dilation[j]
            st = oj * s - p
            taps.append([st + t * d for t in range(k) if 0 <= st + t * d < sp[j]])
            pool *= min(st + k, sp[j] + p) - st
        cells = list(itertools.product(*taps))
        if adaptive or desc.op == "max":
            dv = len(cells)
        elif desc.divisor_override:
            dv = desc.divisor_override
        else:
            dv = pool if desc.count_include_pad else len(cells)
        res[o] = (cells, dv)
    return res


def _reference(desc, x, dy, adaptive):
    """(y, indices, dx) by brute force; dx as a scatter-add over the windows."""
    sp = desc.shape[2:]
    flat = lambda t: int(np.ravel_multi_index(t, sp))  # noqa: E731
    N, C = desc.shape[:2]
    y = np.zeros(desc.out_shape)
    ix = np.zeros(desc.out_shape, np.int64)
    dx = np.zeros(desc.shape)
    for o, (cells, dv) in _windows(desc, adaptive).items():
        for b, c in itertools.product(range(N), range(C)):
            vals = [x[(b, c) + t] for t in cells]
            if desc.op == "max":
                nan = [j for j, v in enumerate(vals) if v != v]
                j = nan[-1] if nan else int(np.argmax(vals))     # first maximum; last NaN
                y[(b, c) + o], ix[(b, c) + o] = vals[j], flat(cells[j])
                dx[(b, c) + np.unravel_index(ix[(b, c) + o], sp)] += dy[(b, c) + o]
            else:
                y[(b, c) + o] = sum(vals) / dv if cells else 0.0
                for t in cells:
                    dx[(b, c) + t] += dy[(b, c) + o] / dv
    return y, ix, dx


def _random_desc(rng, op):
    k = int(rng.integers(1, 4))
    sp = tuple(int(v) for v in rng.integers(1, 9, k))
    for _ in range(50):
        ks = tuple(int(v) for v in rng.integers(1, 5, k))
        st = tuple(int(v) for v in rng.integers(1, 4, k))
        pd = tuple(int(rng.integers(0, kk // 2 + 1)) for kk in ks)
        dl = tuple(int(v) for v in rng.integers(1, 3, k)) if op == "max" else (1,) * k
        ceil = bool(rng.integers(0, 2))
        cip = bool(rng.integers(0, 2))
        dv = None if op == "max" or rng.integers(0, 3) else int(rng.choice([-3, 2, 7]))
        try:
            d = PoolDescriptor(k, (2, 2) + sp, ks, st, pd, dl, ceil, op, cip, dv, "f64")
        except bd.InvalidProblemError:
            continue
        # dilated windows may hold no input element (see test_empty_dilated_window)
        if all(cells for cells, _ in _windows(d, False).values()):
            return d
    return PoolDescriptor(k, (2, 2) + sp, 1, op=op, dtype="f64")


@pytest.mark.parametrize("op", ["max", "avg"])
@pytest.mark.parametrize("adaptive", [False, True])
def test_kernel_math_emulated(op, adaptive):
    rng = np.random.default_rng(7 + adaptive * 2 + (op == "avg"))
    for trial in range(40):
        if adaptive:
            k = int(rng.integers(1, 4))
            sp = tuple(int(v) for v in rng.integers(1, 9, k))
            out = tuple(int(v) for v in rng.integers(1, 10, k))
            desc = AdaptivePoolDescriptor(k, (2, 2) + sp, out, op, "f64")
        else:
            desc = _random_desc(rng, op)
        x = rng.standard_normal(desc.shape)
        if op == "max" and trial % 4 == 0:
            x.reshape(-1)[rng.integers(0, x.size, 3)] = np.nan
        dy = rng.standard_normal(desc.out_shape)
        y_e, ix_e = _emulate_fw(desc, x, adaptive)
        y_r, ix_r, dx_r = _reference(desc, x, dy, adaptive)
        np.testing.assert_allclose(y_e, y_r, rtol=1e-13, atol=1e-13, err_msg=str(desc))
        if op == "max":
            np.testing.assert_array_equal(ix_e, ix_r, err_msg=str(desc))
        dx_e = _emulate_bw(desc, dy, ix_e if op == "max" else None, adaptive)
        np.testing.assert_allclose(dx_e, dx_r, rtol=1e-12, atol=1e-12, err_msg=str(desc))


def test_empty_dilated_window():
    """A dilated window whose taps all fall in the padding (torch accepts it): -inf, and the
    index torch starts from (the first tap at or after 0, here past the input); the gather
    backward gives that input nothing."""
    d = PoolDescriptor(1, (1, 1, 1), 2, 1, 1, 2, dtype="f64")     # taps -1 and +1 of a 1-long dim
    assert d.out_shape == (1, 1, 1)
    y, ix = _emulate_fw(d, np.array([[[3.0]]]), False)
    assert y.tolist() == [[[-np.inf]]] and ix.tolist() == [[[1]]]
    assert _emulate_bw(d, np.ones((1, 1, 1)), ix, False).tolist() == [[[0.0]]]


def test_known_torch_values():
    x = np.array([[[1.0, 3.0, 2.0, 5.0, 4.0]]])
    d = PoolDescriptor(1, (1, 1, 5), 2, ceil_mode=True, dtype="f64")
    y, ix = _emulate_fw(d, x, False)
    assert y.tolist() == [[[3.0, 5.0, 4.0]]] and ix.tolist() == [[[1, 3, 4]]]
    x = np.array([[[1.0, 2.0, 3.0, 4.0, 5.0]]])
    d = PoolDescriptor(1, (1, 1, 5), 3, 2, 1, op="avg", dtype="f64")
    assert _emulate_fw(d, x, False)[0].tolist() == [[[1.0, 3.0, 3.0]]]
    d = PoolDescriptor(1, (1, 1, 5), 3, 2, 1, op="avg", count_include_pad=False, dtype="f64")
    assert _emulate_fw(d, x, False)[0].tolist() == [[[1.5, 3.0, 4.5]]]
    # ceil_mode: the last window runs past the padded input; its divisor is clipped to n + p
    x = np.arange(1.0, 7.0).reshape(1, 1, 6)
    d = PoolDescriptor(1, (1, 1, 6), 3, 2, op="avg", ceil_mode=True, dtype="f64")
    assert _emulate_fw(d, x, False)[0].tolist() == [[[2.0, 4.0, 5.5]]]
    a = AdaptivePoolDescriptor(1, (1, 1, 5), 3, "avg", "f64")
    assert _emulate_fw(a, x[..., :5], True)[0].tolist() == [[[1.5, 3.0, 4.5]]]


# ------------------------------------------------------------------------------- compile
@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for name, knobs in [("pool_fw", dict(dtype="bf16", op="max")),
                        ("pool_bw", dict(dtype="f32", op="avg"))]:
        cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=300)
        assert len(cubin) > 1000 and meta["threads"] == spec.THREADS
