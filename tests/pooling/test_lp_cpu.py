"""LP pooling without a GPU: descriptor validation (norm_type, sizes, ceil_mode), torch's formula
re-derived in numpy (avg_pool of x^p times the window size, to the 1/p) against the kernels'
formulas (forward, and the backward's coefficient + gather form against finite differences of
the numpy forward), the SKU spaces, the exact launch arguments and workspace (recorded), and a
cross-compile sample for sm80 / sm89 / sm90a."""

import itertools

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.dtypes import dtype as as_dtype
from baracuda_dsl.ops.pooling import (LPPoolArgs, LPPoolBackwardArgs, LPPoolBackwardPlan,
                                      LPPoolDescriptor, LPPoolPlan, pool_dense_strides)
from baracuda_dsl.ops.pooling.specs import lp as spec
from baracuda_dsl.tensor import TensorView

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


def _tv(ptr, shape, strides, dt):
    return TensorView(ptr, shape, strides, as_dtype(dt), device=0)


def test_descriptor_validation():
    d = LPPoolDescriptor(2, (2, 3, 7, 9), 2, 3, 2, ceil_mode=True)
    assert d.out_shape == (2, 3, 3, 4) and d.norm_type == 2.0 and d.stride == (2, 2)
    assert LPPoolDescriptor(1, (1, 1, 8), 1.5, 3).out_shape == (1, 1, 2)      # stride = kernel
    assert LPPoolDescriptor(1, (1, 1, 8), 1.5, 3, ceil_mode=True).out_shape == (1, 1, 3)
    assert LPPoolDescriptor(3, (0, 2, 4, 4, 4), 3, 2).out_shape == (0, 2, 2, 2, 2)
    for p in (0, -1.0, float("inf"), float("nan"), True, "2"):
        with pytest.raises(bd.InvalidProblemError):
            LPPoolDescriptor(2, (1, 1, 4, 4), p, 2)
    bad = [dict(spatial=4, shape=(1, 1, 2, 2, 2, 2), norm_type=2, kernel_size=1),
           dict(spatial=2, shape=(1, 1, 4, 4), norm_type=2, kernel_size=5),
           dict(spatial=2, shape=(1, 1, 4, 4), norm_type=2, kernel_size=2, stride=0),
           dict(spatial=2, shape=(1, 1, 4, 4), norm_type=2, kernel_size=(2, 2, 2))]
    for kw in bad:
        with pytest.raises(bd.InvalidProblemError):
            LPPoolDescriptor(**kw)


# --------------------------------------------------------------------------- formulas
def _windows(desc):
    for o in itertools.product(*[range(n) for n in desc.out_spatial]):
        yield o, tuple(slice(oo * s, min(oo * s + k, n)) for oo, s, k, n in
                       zip(o, desc.stride, desc.kernel_size, desc.shape[2:]))


def _torch_lp(desc, x):
    """torch: (sign(a)·relu(|a|))·K then ^(1/p), a = avg_pool(x^p) (divisor: clipped count)."""
    p, K = desc.norm_type, np.prod(desc.kernel_size)
    y = np.zeros(desc.out_shape)
    with np.errstate(invalid="ignore"):
        xp_ = np.power(x, p)
        for o, w in _windows(desc):
            blk = xp_[(slice(None), slice(None)) + w]
            a = blk.reshape(blk.shape[:2] + (-1,)).mean(-1)
            y[(slice(None), slice(None)) + o] = np.power(np.sign(a) * np.maximum(np.abs(a), 0)
                                                         * K, 1.0 / p)
    return y


def _kernel_fw(desc, x):
    """lp_fw stage out, transcribed."""
    p, K = desc.norm_type, np.prod(desc.kernel_size)
    y = np.zeros(desc.out_shape)
    with np.errstate(invalid="ignore"):
        for o, w in _windows(desc):
            blk = np.power(x[(slice(None), slice(None)) + w], p)
            cnt = np.prod(blk.shape[2:])
            s = blk.reshape(blk.shape[:2] + (-1,)).sum(-1)
            y[(slice(None), slice(None)) + o] = np.power(s / cnt * K, 1.0 / p)
    return y


def _kernel_bw(desc, x, dy):
    """lp_fw stage coef then lp_bw, transcribed."""
    p, K = desc.norm_type, np.prod(desc.kernel_size)
    r = 1.0 / p
    g = np.zeros(desc.shape)
    for o, w in _windows(desc):
        blk = np.power(x[(slice(None), slice(None)) + w], p)
        cnt = np.prod(blk.shape[2:])
        avg = blk.reshape(blk.shape[:2] + (-1,)).sum(-1) / cnt
        z = avg * K
        coef = np.where(avg == 0, 0.0, dy[(slice(None), slice(None)) + o] * r
                        * np.power(z, r - 1) * K / cnt)
        g[(slice(None), slice(None)) + w] += coef.reshape(coef.shape + (1,) * desc.spatial)
    return g * (p * np.power(x, p - 1))


@pytest.mark.parametrize("case", [(1, (2, 3, 11), 3, 2, True, 2.0),
                                  (2, (1, 2, 7, 9), (2, 3), (2, 2), True, 3.0),
                                  (2, (2, 1, 6, 6), 2, None, False, 1.5),
                                  (3, (1, 2, 5, 4, 6), (2, 2, 3), (1, 2, 2), True, 2.5),
                                  (1, (1, 2, 9), 4, 3, False, 1.0)])
def test_formulas_match_torch_and_finite_differences(case):
    sp, shape, k, s, ceil, p = case
    rng = np.random.default_rng(0)
    desc = LPPoolDescriptor(sp, shape, p, k, s, ceil, dtype="f64")
    x = rng.random(shape) + 0.25                   # positive: every power is real
    y = _kernel_fw(desc, x)
    assert np.allclose(y, _torch_lp(desc, x), rtol=1e-13, atol=0)
    dy = rng.standard_normal(desc.out_shape)
    g = _kernel_bw(desc, x, dy)
    h = 1e-6
    for i in list(np.ndindex(*shape))[::3]:
        xp_, xm = x.copy(), x.copy()
        xp_[i] += h
        xm[i] -= h
        fd = np.sum((_kernel_fw(desc, xp_) - _kernel_fw(desc, xm)) * dy) / (2 * h)
        assert abs(fd - g[i]) <= 1e-6 * (1 + abs(fd)), (i, fd, g[i])


def test_signed_inputs_follow_pow():
    desc = LPPoolDescriptor(1, (1, 1, 4), 2, 2, dtype="f64")
    x = np.array([[[-3.0, 4.0, -1.0, 0.0]]])
    assert np.allclose(_kernel_fw(desc, x), [[[5.0, 1.0]]])      # p = 2: sqrt of squares
    d3 = LPPoolDescriptor(1, (1, 1, 2), 3, 2, dtype="f64")
    assert np.isnan(_kernel_fw(d3, np.array([[[-2.0, 1.0]]]))).all()   # (−7)^(1/3): NaN
    assert np.isnan(_torch_lp(d3, np.array([[[-2.0, 1.0]]]))).all()


# ------------------------------------------------------------------- SKUs and launches
def test_sku_space():
    assert len(list(spec.LP_FW.space())) == 8 and len(list(spec.LP_BW.space())) == 4


def test_launch_arguments(launches):
    d = LPPoolDescriptor(2, (2, 3, 7, 9), 2.5, (2, 3), (2, 2), True, dtype="bf16")
    out = d.out_shape
    x = _tv(0x10000, d.shape, (300, 100, 10, 1), "bf16")
    y = _tv(0x80000, out, pool_dense_strides(out, "NCHW"), "bf16")
    plan = LPPoolPlan.select(d, PREF)
    assert plan.workspace_size() == 0
    plan.run(LPPoolArgs(x, y))
    name, knobs, grid, args, _ = launches[-1]
    n = int(np.prod(out))
    assert name == "lp_fw" and knobs == {"dtype": "bf16"} and len(args) == 5 + sum(spec.FW_GROUPS)
    assert args[:5] == [0x10000, 0x80000, 0x80000, 0x80000, n]
    assert args[5:13] == [2, 3, 1, 7, 9, 1, *out[2:]] and args[13:19] == [1, 2, 3, 1, 2, 2]
    assert args[19:24] == [300, 100, 0, 10, 1] and args[-2:] == [0, 2.5]
    bp = LPPoolBackwardPlan.select(d, PREF)
    assert bp.workspace_size() >= 4 * n
    dy = _tv(0x20000, out, (1, 2, 100, 10), "bf16")
    dx = _tv(0x30000, d.shape, pool_dense_strides(d.shape, "NCHW"), "bf16")
    with pytest.raises(bd.WorkspaceTooSmallError):
        bp.run(LPPoolBackwardArgs(x, dy, dx))
    del launches[:]
    bp.run(LPPoolBackwardArgs(x, dy, dx), workspace=bd.Workspace(0x700000, 1 << 16))
    (n1, k1, _, a1, _), (n2, k2, _, a2, _) = launches
    assert n1 == "lp_fw" and k1 == {"dtype": "bf16", "stage": "coef"} and n2 == "lp_bw"
    assert a1[:5] == [0x10000, 0x20000, 0x20000, 0x700000, n] and a1[-2:] == [0, 2.5]
    assert a1[29:34] == [1, 2, 0, 100, 10]
    assert a2[:5] == [0x10000, 0x30000, 0x700000, 0x700000, 2 * 3 * 7 * 9]
    assert len(a2) == 5 + sum(spec.BW_GROUPS) and a2[-2:] == [0, 2.5]


# ------------------------------------------------------------------------------- compile
@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for name, knobs in [("lp_fw", dict(dtype="f16", stage="coef")), ("lp_bw", dict(dtype="f64"))]:
        cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=300)
        assert len(cubin) > 1000 and meta["threads"] == 256


def test_fixed_range_formula():
    """pool_extra.fixed_range, transcribed: exactly the outputs whose window covers i (ceil_mode
    sizes included)."""
    from baracuda_dsl.ops.pooling import pool_output_size

    for n, k, s, ceil in itertools.product(range(1, 15), range(1, 5), range(1, 4), (False, True)):
        o = pool_output_size(n, k, s, 0, 1, ceil)
        if o < 1:
            continue
        for i in range(n):
            lo = 0 if i < k else (i - k) // s + 1
            hi = min(i // s + 1, o)
            assert set(range(lo, max(hi, lo))) == {a for a in range(o) if a * s <= i < a * s + k}
