"""Channel norms (BatchNorm / GroupNorm / InstanceNorm): validation, SKU space, workspace, a numpy
emulation of the kernels' partial / finalize / apply math, and cross-compiles (no GPU needed)."""

import math

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.ops.normalization import channel_norm as cn

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


def test_sku_space():
    from baracuda_dsl.ops import get_template

    part, fin, app = (get_template(n) for n in ("channel_norm_partial", "channel_norm_finalize",
                                                 "channel_norm_apply"))
    assert len(part.skus()) == 16 and len(app.skus()) == 16  # 4 dtypes x fw/bw x vec {16B, 1}
    assert len(fin.skus()) == 12  # (f32,f32) (f16,f16) (f16,f32) (bf16,bf16) (bf16,f32) (f64,f64)
    assert all(t.family == "normalization" for t in (part, fin, app))
    vecs = {dict(k)["dtype"]: dict(k)["vec"] for k in part.skus() if dict(k)["vec"] > 1}
    assert vecs == {"f32": 4, "f16": 8, "bf16": 8, "f64": 2}


def test_forward_select_and_workspace():
    p = cn.BatchNormPlan.select(cn.BatchNormDescriptor((32, 64, 56, 56), "bf16"), PREF)
    assert p.sku().arch is bd.ArchSku.SM90A and p.precision_guarantee().deterministic
    ws = p.workspace_size()
    assert ws > 0 and ws % 256 == 0
    # workspace depends only on the descriptor
    assert ws == cn.BatchNormPlan.select(cn.BatchNormDescriptor((32, 64, 56, 56), "bf16"),
                                         PREF).workspace_size()
    # C=64 units of 32*3136 elements -> split into 16 chunks (~1024 CTAs)
    assert p._k == 16 and p._k * p._chunk >= 32 * 56 * 56
    g = cn.GroupNormPlan.select(cn.GroupNormDescriptor((8, 64, 7, 7), 8, "f32"), PREF)
    assert g._units_p == 64 and g._count == 8 * 49 and g._e == 8 * 64
    i = cn.InstanceNormPlan.select(cn.InstanceNormDescriptor((8, 64, 7, 7)), PREF)
    assert i._g == 64 and i._units_p == 8 * 64
    # f64 partials in f64
    p64 = cn.BatchNormPlan.select(cn.BatchNormDescriptor((4, 3, 5), "f64"), PREF)
    assert p64._ct == bd.float64


def test_validation_errors():
    with pytest.raises(bd.UnsupportedError):
        cn.BatchNormDescriptor((4, 3), "int32")
    with pytest.raises(bd.InvalidProblemError):
        cn.BatchNormPlan.select(cn.BatchNormDescriptor((4,), "f32"), PREF)  # rank 1
    with pytest.raises(bd.InvalidProblemError):
        cn.BatchNormPlan.select(cn.BatchNormDescriptor((1,) * 9, "f32"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        cn.BatchNormPlan.select(cn.BatchNormDescriptor((4, -1, 3), "f32"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        cn.BatchNormPlan.select(cn.BatchNormDescriptor((4, 3), "f32", eps=float("nan")), PREF)
    with pytest.raises(bd.InvalidProblemError):
        cn.BatchNormPlan.select(cn.BatchNormDescriptor((4, 3), "f32", momentum=float("inf")),
                                PREF)
    with pytest.raises(bd.InvalidProblemError):  # one value per channel in training (as torch)
        cn.BatchNormPlan.select(cn.BatchNormDescriptor((1, 3), "f32"), PREF)
    cn.BatchNormPlan.select(cn.BatchNormDescriptor((1, 3), "f32", training=False), PREF)
    with pytest.raises(bd.InvalidProblemError):
        cn.GroupNormPlan.select(cn.GroupNormDescriptor((2, 6, 4), 4, "f32"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        cn.GroupNormPlan.select(cn.GroupNormDescriptor((2, 6, 4), 0, "f32"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        cn.GroupNormBackwardPlan.select(cn.GroupNormBackwardDescriptor((2, 6, 4), 5), PREF)
    with pytest.raises(bd.UnsupportedError):
        cn.InstanceNormPlan.select(cn.InstanceNormDescriptor((2, 3, 4), use_input_stats=False),
                                   PREF)
    with pytest.raises(bd.UnsupportedError):  # f16 input with bf16 params is not wired
        cn.BatchNormPlan.select(cn.BatchNormDescriptor((2, 3, 4), "f16", param_dtype="bf16"),
                                PREF)
    with pytest.raises(bd.UnsupportedError):
        cn.BatchNormPlan.select(cn.BatchNormDescriptor((2, 3, 4), "f32", param_dtype="f16"), PREF)
    cn.BatchNormPlan.select(cn.BatchNormDescriptor((2, 3, 4), "bf16", param_dtype="f32"), PREF)
    with pytest.raises(bd.UnsupportedError):  # N*C >= 2^31
        cn.GroupNormPlan.select(cn.GroupNormDescriptor((2**16, 2**15, 1), 1), PREF)


def _v(ptr, shape, dt=bd.float32, strides=None):
    from baracuda_dsl.tensor import contiguous_strides

    return bd.TensorView(ptr, tuple(shape), strides or contiguous_strides(shape), dt)


def test_args_validation_without_gpu():
    p = cn.BatchNormPlan.select(cn.BatchNormDescriptor((4, 3, 8), "f32"), PREF)
    x = np.ones((4, 3, 8), np.float32)
    with pytest.raises(bd.DeviceMismatchError):
        p.run(cn.BatchNormArgs(x, x))
    x, y = _v(0x10000, (4, 3, 8)), _v(0x20000, (4, 3, 8))
    w, b, rm, rv = (_v(0x30000 + 0x100 * i, (3,)) for i in range(4))
    with pytest.raises(bd.WorkspaceTooSmallError):
        p.run(cn.BatchNormArgs(x, y, w, b, rm, rv))
    with pytest.raises(bd.InvalidProblemError):  # running stats missing
        p.can_implement(cn.BatchNormArgs(x, y, w, b))
    with pytest.raises(bd.InvalidProblemError):  # bias missing
        p.can_implement(cn.BatchNormArgs(x, y, w, None, rm, rv))
    with pytest.raises(bd.UnsupportedError):  # non-contiguous x
        p.can_implement(cn.BatchNormArgs(_v(0x10000, (4, 3, 8), strides=(48, 8, 1)), y, w, b,
                                         rm, rv))
    with pytest.raises(bd.InvalidProblemError):  # wrong weight length
        p.can_implement(cn.BatchNormArgs(x, y, _v(0x30000, (4,)), b, rm, rv))
    with pytest.raises(bd.UnsupportedError):  # wrong running-stat dtype
        p.can_implement(cn.BatchNormArgs(x, y, w, b, rm, _v(0x30300, (3,), bd.float16)))
    p.can_implement(cn.BatchNormArgs(x, y, w, b, rm, rv))
    g = cn.GroupNormBackwardPlan.select(cn.GroupNormBackwardDescriptor((4, 6, 5), 3), PREF)
    args = cn.GroupNormBackwardArgs(_v(0x1000, (4, 6, 5)), _v(0x2000, (4, 6, 5)),
                                    _v(0x3000, (4, 3)), _v(0x4000, (4, 3)), _v(0x5000, (4, 6, 5)),
                                    _v(0x6000, (6,)), _v(0x7000, (6,)), _v(0x8000, (6,)))
    g.can_implement(args)
    args.mean = _v(0x3000, (4, 2))
    with pytest.raises(bd.InvalidProblemError):
        g.can_implement(args)


# ---------------------------------------------------------------- numpy emulation of the kernels
def _emulate_forward(plan, x, w, b):
    """Mirror of partial(fw) -> finalize(fw) -> apply(fw) with the plan's unit/chunk geometry
    (scalar path), in float64; returns y, mean, rstd."""
    n, c, s = plan._n, plan._c, plan._s
    flat = x.reshape(-1)
    parts = np.zeros((plan._units_p, plan._k, 3))
    for u in range(plan._units_p):
        for k in range(plan._k):
            j = np.arange(k * plan._chunk, min((k + 1) * plan._chunk, plan._segs * plan._L))
            off = u * plan._ubase + (j // plan._L) * (c * s) + j % plan._L
            v = flat[off]
            parts[u, k] = (len(v), v.mean() if len(v) else 0, ((v - v.mean()) ** 2).sum()
                           if len(v) else 0)
    ent = np.zeros((plan._e, 3))
    mean = np.zeros(plan._us)
    rstd = np.zeros(plan._us)
    cpg = plan._cpg if plan._kind == "gn" else 1
    g = plan._g if plan._kind == "gn" else 1
    for e in range(plan._e):
        ch = e % c
        us = (e // c) * g + ch // cpg
        nn = m = q = 0.0
        for k in range(plan._k):
            nb, mb, qb = parts[us, k]
            tot = nn + nb
            d = mb - m
            r = nb / max(tot, 1)
            m, q, nn = m + d * r, q + qb + d * d * nn * r, tot
        mean[us] = m
        rstd[us] = 1 / math.sqrt(q / nn + plan.desc.eps)
        ent[e] = (m, rstd[us] * (w[ch] if w is not None else 1), b[ch] if b is not None else 0)
    r = np.arange(n * c * s) // s
    e = r % plan._e
    y = (flat - ent[e, 0]) * ent[e, 1] + ent[e, 2]
    return y.reshape(x.shape), mean, rstd


def _emulate_backward(plan, x, dy, w, mean, rstd):
    n, c, s = plan._n, plan._c, plan._s
    fx, fd = x.reshape(-1), dy.reshape(-1)
    cpg = plan._cpg if plan._kind == "gn" else 1
    g = plan._g if plan._kind == "gn" else 1
    parts = np.zeros((plan._units_p, plan._k, 2))
    for u in range(plan._units_p):
        mu = mean[(u // c) * g + (u % c) // cpg]
        for k in range(plan._k):
            j = np.arange(k * plan._chunk, min((k + 1) * plan._chunk, plan._segs * plan._L))
            off = u * plan._ubase + (j // plan._L) * (c * s) + j % plan._L
            parts[u, k] = (fd[off].sum(), (fd[off] * (fx[off] - mu)).sum())
    ent = np.zeros((plan._e, 4))
    ww = w if w is not None else np.ones(c)
    for t in range(plan._e):
        ch = t % c
        us = (t // c) * g + ch // cpg
        g0 = ch // cpg * cpg
        rows = (t // c) * c + g0 + np.arange(cpg)
        s1 = (ww[g0:g0 + cpg] * parts[rows, :, 0].sum(1)).sum()
        s2 = (ww[g0:g0 + cpg] * parts[rows, :, 1].sum(1)).sum()
        r = rstd[us]
        ent[t] = (mean[us], ww[ch] * r, r ** 3 * s2 / plan._count, r * s1 / plan._count)
    nn = n if plan._kind == "gn" else 1
    db = np.zeros(c)
    dw = np.zeros(c)
    for t in range(c):
        for i in range(nn):
            row = i * c + t
            db[t] += parts[row, :, 0].sum()
            dw[t] += rstd[i * g + t // cpg] * parts[row, :, 1].sum()
    e = (np.arange(n * c * s) // s) % plan._e
    dx = ent[e, 1] * fd - ent[e, 2] * (fx - ent[e, 0]) - ent[e, 3]
    return dx.reshape(x.shape), dw, db


def _ref_forward(x, groups, w, b, eps, per_channel):
    n, c = x.shape[:2]
    if per_channel:  # batch norm
        xt = np.moveaxis(x.reshape(n, c, -1), 1, 0).reshape(c, -1)
        m, v = xt.mean(1), xt.var(1)
        shape = (1, c, 1)
        y = (x.reshape(n, c, -1) - m.reshape(shape)) / np.sqrt(v.reshape(shape) + eps)
    else:
        xg = x.reshape(n, groups, -1)
        m, v = xg.mean(2), xg.var(2)
        y = ((xg - m[..., None]) / np.sqrt(v[..., None] + eps)).reshape(n, c, -1)
        m, v = m.reshape(-1), v.reshape(-1)
    if w is not None:
        y = y * w.reshape(1, c, 1)
    if b is not None:
        y = y + b.reshape(1, c, 1)
    return y.reshape(x.shape), m, 1 / np.sqrt(v + eps)


def _ref_backward(x, dy, groups, w, eps, per_channel):
    """Closed-form backward (float64) of the reference forward."""
    n, c = x.shape[:2]
    ww = (w if w is not None else np.ones(c)).reshape(1, c, 1)
    x3, d3 = x.reshape(n, c, -1), dy.reshape(n, c, -1)
    if per_channel:
        axes = (0, 2)
        m = x3.mean(axes, keepdims=True)
        r = 1 / np.sqrt(x3.var(axes, keepdims=True) + eps)
        xh = (x3 - m) * r
        gg = d3 * ww
        dx = r * (gg - gg.mean(axes, keepdims=True) - xh * (gg * xh).mean(axes, keepdims=True))
    else:
        xg = x3.reshape(n, groups, -1)
        m = xg.mean(2, keepdims=True)
        r = 1 / np.sqrt(xg.var(2, keepdims=True) + eps)
        xh = ((xg - m) * r).reshape(n, c, -1)
        gg = (d3 * ww).reshape(n, groups, -1)
        xhg = xh.reshape(n, groups, -1)
        dx = (r * (gg - gg.mean(2, keepdims=True) - xhg * (gg * xhg).mean(2, keepdims=True)))
        dx = dx.reshape(n, c, -1)
    return dx.reshape(x.shape), (d3 * xh).sum((0, 2)), d3.sum((0, 2))


@pytest.mark.parametrize("kind,shape,groups", [
    ("bn", (3, 5, 7), None), ("bn", (2, 3), None), ("bn", (4, 2, 3000), None),
    ("gn", (3, 6, 7), 3), ("gn", (2, 4, 1, 5), 1), ("in", (2, 3, 9), None),
    ("gn", (1, 4, 5000), 2),
])
def test_emulated_kernels_match_reference(kind, shape, groups):
    """The kernels' index math / Chan merges / coefficient formulas, replayed in numpy with the
    plan's geometry (small min_chunk so that units split into several chunks)."""
    PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A, tuning=cn.ChannelNormTuning(min_chunk=64))
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape) * 2 + 50.0
    dy = rng.standard_normal(shape)
    c = shape[1]
    w, b = rng.standard_normal(c), rng.standard_normal(c)
    eps = 1e-5
    if kind == "bn":
        fp = cn.BatchNormPlan.select(cn.BatchNormDescriptor(shape, "f64", eps), PREF)
        bp = cn.BatchNormBackwardPlan.select(cn.BatchNormBackwardDescriptor(shape, "f64", eps),
                                             PREF)
        G = c
    elif kind == "gn":
        fp = cn.GroupNormPlan.select(cn.GroupNormDescriptor(shape, groups, "f64", eps), PREF)
        bp = cn.GroupNormBackwardPlan.select(cn.GroupNormBackwardDescriptor(shape, groups, "f64"),
                                             PREF)
        G = groups
    else:
        fp = cn.InstanceNormPlan.select(cn.InstanceNormDescriptor(shape, "f64", eps, True, True),
                                        PREF)
        bp = cn.InstanceNormBackwardPlan.select(cn.InstanceNormBackwardDescriptor(shape, "f64",
                                                                                  True), PREF)
        G = c
    y, m, r = _emulate_forward(fp, x, w, b)
    yr, mr, rr = _ref_forward(x, G, w, b, eps, kind == "bn")
    assert np.abs(y - yr).max() < 1e-9 and np.abs(m - mr).max() < 1e-9
    assert np.abs(r - rr).max() / np.abs(rr).max() < 1e-9
    dx, dw, db = _emulate_backward(bp, x, dy, w, mr, rr)
    dxr, dwr, dbr = _ref_backward(x, dy, G, w, eps, kind == "bn")
    assert np.linalg.norm(dx - dxr) / np.linalg.norm(dxr) < 1e-9
    assert np.abs(dw - dwr).max() < 1e-8 and np.abs(db - dbr).max() < 1e-9


def test_chunking_covers_units():
    for elems, units in ((1, 1), (7, 3), (4096, 1), (10**6, 3), (2**31 - 1, 1), (5, 10**6)):
        chunk, k = cn.chunking(elems, units)
        assert chunk % 64 == 0 and 1 <= k <= cn.MAX_K and (k - 1) * chunk < elems <= k * chunk
    assert cn.chunking(0, 5)[1] == 0


def _compile(name, knobs, arch):
    from baracuda_dsl.jit.compiler import compile_sku

    cubin, meta = compile_sku(name, knobs, arch)
    assert len(cubin) > 0 and meta["threads"] > 0


@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile_one_sku_per_template(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.ops import get_template

    picks = {
        "channel_norm_partial": [dict(dtype="bf16", mode="fw", vec=8),
                                 dict(dtype="f32", mode="bw", vec=1)],
        "channel_norm_finalize": [dict(dtype="bf16", pdtype="f32", mode="fw"),
                                  dict(dtype="f64", pdtype="f64", mode="bw")],
        "channel_norm_apply": [dict(dtype="f16", mode="bw", vec=8),
                               dict(dtype="f64", mode="fw", vec=2)],
    }
    for name, ks in picks.items():
        t = get_template(name)
        for k in ks:
            fk = freeze_knobs(k)
            assert fk in t.skus()
            _compile(name, fk, arch)
